//! The two sides of a pair: the waker's loop (ring every period, record the
//! previous wake, count what was lost), the wakee's loop (wait, timestamp,
//! acknowledge), and the set-up of a wakee that runs in a forked process.

use super::ledger::{Ledger, WakerStep};
use super::shared::{PairLink, StopOnDrop, STAGE_MLOCK, STAGE_PIN, STAGE_SCHED, STAGE_WAIT};
use crate::engine::rt::PREFAULT_STACK;
use crate::engine::{Moved, StopFlag};
use crate::result::details::switch::PairDetails;
use crate::stats::recorder::Recorder;
use crate::stats::tap::Tap;
use crate::sys::{self, sched::Sched};

/// Sleep until `target`; long sleeps are cut in slices so a stop is seen within 0.2 s.
#[inline(always)]
pub(crate) fn pause(clock: libc::clockid_t, target: u64, stop: &StopFlag, sliced: bool) -> bool {
    const SLICE: u64 = 200_000_000;
    if sliced {
        loop {
            let now = sys::clock::now_ns(clock);
            if target <= now + SLICE {
                break;
            }
            sys::clock::sleep_until(clock, now + SLICE);
            if stop.is_set() {
                return false;
            }
        }
    }
    sys::clock::sleep_until(clock, target);
    true
}

/// What one waker is told to do.
pub struct WakerPlan {
    pub period: u64,
    /// Give the CPU to the wakee right after the wake (same CPU, same priority).
    pub yield_after: bool,
    pub phase: u64,
    pub duration: Option<u64>,
    pub loops: Option<u64>,
    pub sched: Option<Sched>,
    /// The CPUs of the waker and the wakee: a side found elsewhere (its CPU
    /// went away) ends the pair's run.
    pub waker_cpu: usize,
    pub wakee_cpu: usize,
}

/// The clock of every timestamp and sleep of a switch run.
pub const CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;

/// The waker: ring every period, record the previous wake, count what was
/// lost; each sample's wake is handed to `tap` (`--explain`) as (the ring,
/// latency), the interval of the wakee's thread on its CPU. Ends early,
/// with how, when either side is found on another CPU than its own.
pub fn waker(
    link: &PairLink,
    rec: &mut Recorder,
    plan: &WakerPlan,
    (start, stop): (u64, &StopFlag),
    tap: Option<&Tap>,
) -> (PairDetails, Option<Moved>) {
    let _final_ring = StopOnDrop(link);
    if let Some(s) = plan.sched {
        // The harness applied the wakee's priority; the waker runs at its own.
        let _ = sys::sched::set_current(s);
    }
    if let Some(answer) = &link.answer {
        answer.attach_waiter(); // a signal answer is sent to this thread
    }
    let mut answer_token = 0u32;
    // A wakee thread starts with the waker; wait (bounded) until it listens.
    let ready_by = start + 1_000_000_000;
    while link.shared.ready() == 0 && !stop.is_set() && sys::clock::now_ns(CLOCK) < ready_by {
        sys::clock::sleep_until(CLOCK, sys::clock::now_ns(CLOCK) + 100_000);
    }
    if let (Some(t), Some(tid)) = (tap, link.shared.wakee_tid()) {
        t.set_writer(tid);
    }
    let end = plan.duration.map_or(u64::MAX, |d| start + d);
    let mut ledger = Ledger::new(start, end, plan.period);
    let mut due = start + plan.phase;
    let loops = plan.loops.unwrap_or(u64::MAX);
    let sliced = plan.period > 400_000_000;
    let mut moved = None;
    while due < end && ledger.rung < loops && !stop.is_set() {
        if !pause(CLOCK, due, stop, sliced) {
            break;
        }
        let now = sys::clock::now_ns(CLOCK);
        let ack = link.shared.acked(ledger.seq);
        let completed = ack.filter(|_| ledger.pending);
        if let Some((m, wakee_moved)) = elsewhere(plan, link, completed, now.saturating_sub(start))
        {
            // The pending wake counts only if the wakee completed it on its own CPU.
            if wakee_moved || completed.is_none() {
                ledger.forget();
            }
            moved = Some(m);
            break;
        }
        let rung = ledger.rung_at();
        let step = ledger.on_period(due, now, ack, rec);
        hand(tap, rung, ack);
        if step == WakerStep::Ring {
            let seq = ledger.seq.wrapping_add(1);
            if let Some(answer) = &link.answer {
                link.arm(answer, &mut answer_token, seq, now + plan.period / 2);
            }
            link.shared.post(seq);
            let t0 = sys::clock::now_ns(CLOCK);
            link.bell.ring();
            if plan.yield_after {
                std::thread::yield_now();
            }
            ledger.rang(seq, t0);
        }
        due = ledger.next_due(due, now);
    }
    // Give the last wake a moment to complete, then stop the wakee.
    let grace = (2 * plan.period).clamp(10_000_000, 200_000_000);
    let deadline = sys::clock::now_ns(CLOCK) + grace;
    let mut ack = link.shared.acked(ledger.seq);
    while moved.is_none() && ledger.pending && ack.is_none() && sys::clock::now_ns(CLOCK) < deadline
    {
        sys::clock::sleep_until(CLOCK, sys::clock::now_ns(CLOCK) + 100_000);
        ack = link.shared.acked(ledger.seq);
    }
    let rung = ledger.rung_at();
    let unrecorded = ledger.finish(ack, rec);
    hand(tap, rung, ack);
    if let Some(t) = tap {
        t.close();
    }
    rec.finish();
    let tally = PairDetails {
        name: String::new(),
        lost: ledger.lost(),
        wakee_busy: ledger.wakee_busy,
        waker_late: ledger.waker_late,
        unrecorded,
        rung: ledger.rung,
    };
    (tally, moved)
}

/// A side of the pair found on another CPU than its own, `at` ns into the
/// run: the wakee, by the CPU it completed the pending wake on
/// (`completed`: its run time, if it did), or the waker, now (true: the wakee).
#[inline(always)]
fn elsewhere(
    plan: &WakerPlan,
    link: &PairLink,
    completed: Option<u64>,
    at: u64,
) -> Option<(Moved, bool)> {
    let wakee =
        completed.and_then(|_| Moved::check(Some(plan.wakee_cpu), link.shared.acked_on(), at));
    match wakee {
        Some(m) => Some((m, true)),
        None => Moved::here(Some(plan.waker_cpu), at).map(|m| (m, false)),
    }
}

/// A wake rung at `rung` (pending) that the wakee completed at `ack` was
/// recorded: its interval to the tap, if any (a few atomic stores).
#[inline(always)]
fn hand(tap: Option<&Tap>, rung: Option<u64>, ack: Option<u64>) {
    if let (Some(t), Some(t0), Some(t1)) = (tap, rung, ack) {
        t.push(t0, t1.saturating_sub(t0));
    }
}

/// The wakee: wait, timestamp, acknowledge; until the waker's last ring.
pub fn wakee(link: &PairLink) {
    link.bell.attach_waiter();
    link.shared.set_ready(sys::sched::gettid());
    let (mut token, mut last, mut arm) = (0u32, 0u32, 0u32);
    loop {
        if let Some(answer) = &link.answer {
            if !link.await_arm(answer, &mut token, &mut arm) {
                return;
            }
        }
        let (t1, seq) = loop {
            if let Err(e) = link.bell.wait(&mut token) {
                link.shared.fail(STAGE_WAIT, &e);
                return;
            }
            let t1 = sys::clock::now_ns(CLOCK);
            if link.shared.stopped() {
                return;
            }
            let seq = link.shared.seq();
            if seq != last {
                break (t1, seq);
            }
            // A wake with nothing to acknowledge (a stray signal): wait again.
        };
        // Where it ran (read after its timestamp, outside the measured
        // interval): the waker records no sample taken on another CPU.
        let on = sys::sched::current_cpu();
        if link.delay > 0 {
            sys::clock::sleep_until(CLOCK, t1 + link.delay);
        }
        link.shared.ack(seq, t1, on);
        last = seq;
    }
}

/// The forked wakee process: set itself up like a measuring thread, then serve wakes.
pub fn wakee_process(link: &PairLink, cpu: usize, sched: Sched, mlock: bool) -> i32 {
    if let Err(e) = sys::sched::pin_current(cpu) {
        link.shared.fail(STAGE_PIN, &e);
        return 1;
    }
    if let Err(e) = sys::sched::set_current(sched) {
        link.shared.fail(STAGE_SCHED, &e);
        return 1;
    }
    // Memory locks are not inherited across fork.
    if mlock {
        if let Err(e) = sys::mem::lock_all() {
            link.shared.fail(STAGE_MLOCK, &e);
            return 1;
        }
    }
    sys::mem::prefault_stack(PREFAULT_STACK);
    wakee(link);
    0
}
