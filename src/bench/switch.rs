//! `rtlat switch`: context-switch (wake-up) latency between real-time threads,
//! or between a thread and a forked process.
//!
//! Each pair has a waker and a wakee. The waker sleeps on an absolute periodic
//! timer; at each period it reads CLOCK_MONOTONIC (t0) and wakes the wakee
//! through the chosen mechanism; the wakee reads CLOCK_MONOTONIC (t1) as soon
//! as it runs and publishes t1 in shared memory. At its next period the waker
//! records `latency = t1 − t0` (outside any measured interval) before it
//! wakes the wakee again. On one CPU (wakee priority >= waker's) each wake
//! is preceded by an arming handshake, a round trip through the same
//! mechanism after which the wakee waits on the line with warm caches
//! (`--cold` skips it; the waker waits at most half a period for it). A wakee that has not completed the
//! previous wake when a period begins is not woken again: that period is lost
//! (counted as an overrun), as is every period the waker itself overslept.
//! So every period of a run is either a sample or a lost wake, and the waker
//! never waits on a lost wakee.

use crate::cli::{positive_duration, LoadOpts, OutputArgs, PolicyArg, RtArgs};
use crate::engine::rt::{PREFAULT_STACK, PRIVILEGE_FIX};
use crate::engine::{self, Channel, RunControl, RunSpec, Worker, WorkerEnd};
use crate::engine::{RtConfig, StopFlag};
use crate::error::{Error, Outcome, Result};
use crate::stats::recorder::{self, Recorder};
use crate::sys::{
    self,
    ipc::{self, Child, Doorbell, Mechanism, SharedWords},
    sched::Sched,
};
use crate::sysinfo;
use serde::Serialize;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

const SWITCH_HELP: &str = "\
Pairs of real-time threads (with --processes: a thread and a forked process)
wake each other. The waker sleeps on an absolute periodic timer (--period);
each period it reads CLOCK_MONOTONIC and wakes the wakee through --via; the
wakee reads CLOCK_MONOTONIC as soon as it runs:
  latency = time the wakee runs - time just before the waker's wake call.
One pair per CPU of --cpus. --placement same puts waker and wakee on that CPU
(a true context switch); cross puts the wakee on the next CPU of the list.
The wakee runs at --priority (default 80), the waker one below it
(--waker-priority), so on one CPU the wake preempts the waker at once (with
equal priorities the waker yields the CPU right after the wake).
On one CPU, with the wakee at a priority at least the waker's, each wake is
preceded by an arming handshake (a round trip through the same mechanism):
the wakee has just run and waits on --via when it is woken, as in rt-tests,
so the latency is the wake and the context switch with warm caches. --cold
wakes it straight from its idle wait instead (a cache-cold wake-up, as an
event after an idle period sees it); cross-CPU wakes are always cold.
Lost wakes: a period without a sample, because the wakee had not completed
the previous wake when the period began (it is never woken twice), or the
waker itself woke a whole period late. They are the summary's overruns.

Examples:
  rtlat switch --duration 10s                        futex, one pair per CPU, same CPU
  rtlat switch --via posix-sem --placement cross --cpus 0,1 --duration 1m
  rtlat switch --via signal --processes --json s.json
  rtlat switch --priority 80 --waker-priority 80     equal priorities, like rt-tests -S";

/// Wake mechanisms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Via {
    /// Atomic increment + FUTEX_WAKE / FUTEX_WAIT (what mutexes and condvars use)
    Futex,
    /// eventfd write / read
    Eventfd,
    /// One byte through a pipe
    Pipe,
    /// POSIX semaphore: sem_post / sem_wait
    PosixSem,
    /// System V semaphore: semop +1 / -1
    SysvSem,
    /// POSIX message queue: mq_send / mq_receive
    Mqueue,
    /// A signal to the wakee thread (tgkill), taken with sigwaitinfo
    Signal,
}

impl Via {
    fn mechanism(self) -> Mechanism {
        match self {
            Via::Futex => Mechanism::Futex,
            Via::Eventfd => Mechanism::Eventfd,
            Via::Pipe => Mechanism::Pipe,
            Via::PosixSem => Mechanism::PosixSem,
            Via::SysvSem => Mechanism::SysvSem,
            Via::Mqueue => Mechanism::Mqueue,
            Via::Signal => Mechanism::Signal,
        }
    }
}

/// Where the two sides of a pair run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Placement {
    /// Waker and wakee on the same CPU: every wake is a context switch
    Same,
    /// The wakee on the next CPU of --cpus: every wake crosses CPUs
    Cross,
}

#[derive(Debug, clap::Args)]
#[command(after_help = SWITCH_HELP)]
pub struct SwitchArgs {
    /// Wake mechanism
    #[arg(long, value_enum, default_value = "futex")]
    pub via: Via,
    /// Run each wakee in a forked process instead of a thread
    #[arg(long)]
    pub processes: bool,
    /// No arming handshake: wake the wakee straight from its idle wait (cache-cold wake-ups)
    #[arg(long)]
    pub cold: bool,
    /// CPUs that host one pair each, e.g. `0,2-3`, or `all`
    #[arg(long, default_value = "all")]
    pub cpus: String,
    /// same: both sides of a pair on its CPU; cross: the wakee on the next CPU of --cpus
    #[arg(long, value_enum, default_value = "same")]
    pub placement: Placement,
    /// Period of every waker (ns, us, ms, s)
    #[arg(long, short, default_value = "1ms", allow_hyphen_values = true, value_parser = positive_duration)]
    pub period: u64,
    /// Stop after this long (e.g. 10s, 5m, 2h) [default: until interrupted]
    #[arg(long, short, allow_hyphen_values = true, value_parser = positive_duration, conflicts_with = "loops")]
    pub duration: Option<u64>,
    /// Stop after N wakes per pair
    #[arg(long, short, value_parser = clap::value_parser!(u64).range(1..))]
    pub loops: Option<u64>,
    /// Priority of the wakers, 1-99 [default: --priority minus 1]
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..=99))]
    pub waker_priority: Option<i32>,
    /// The wakee sleeps this long before acknowledging each wake (tests: forces lost wakes)
    #[arg(long, hide = true, value_name = "DURATION", value_parser = positive_duration)]
    pub wakee_delay: Option<u64>,
    #[command(flatten)]
    pub rt: RtArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub load: LoadOpts,
}

/// One pair: its name, where its sides run, and its offset within the period.
#[derive(Debug, Clone, Serialize)]
pub struct PairPlan {
    pub name: String,
    pub waker_cpu: usize,
    pub wakee_cpu: usize,
    pub phase_ns: u64,
}

/// Validated settings of a switch run.
#[derive(Debug, Clone, Serialize)]
pub struct SwitchConfig {
    pub via: &'static str,
    /// Wakees are forked processes (else threads).
    pub processes: bool,
    /// Each wake is preceded by the arming handshake (same CPU, wakee priority >= waker's, not --cold).
    pub warm: bool,
    pub placement: &'static str,
    pub cpus: Vec<usize>,
    pub pairs: Vec<PairPlan>,
    pub period_ns: u64,
    /// Static priority of the wakees and of the wakers (null under SCHED_OTHER).
    pub wakee_priority: Option<i32>,
    pub waker_priority: Option<i32>,
    #[serde(flatten)]
    pub control: RunControl,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wakee_delay_ns: Option<u64>,
    #[serde(skip)]
    pub mechanism: Mechanism,
    #[serde(skip)]
    pub rt: RtConfig,
    #[serde(skip)]
    pub waker_sched: Sched,
}

impl SwitchConfig {
    pub fn from_args(a: &SwitchArgs) -> Result<Self> {
        if a.rt.policy == PolicyArg::Deadline {
            return Err(Error::usage(
                "--policy deadline does not fit switch (the wakee is woken by events, not a period); use fifo, rr or other",
            ));
        }
        if a.waker_priority.is_some() && a.rt.policy == PolicyArg::Other {
            return Err(Error::usage(
                "--waker-priority applies to --policy fifo or rr only",
            ));
        }
        let online = sysinfo::online_cpus();
        let cpus = crate::units::parse_cpu_list(&a.cpus, &online).map_err(Error::usage)?;
        if cpus.is_empty() {
            return Err(Error::usage("--cpus selects no CPU; give e.g. 0 or all"));
        }
        if a.placement == Placement::Cross && cpus.len() < 2 {
            return Err(Error::usage(
                "--placement cross needs at least two CPUs in --cpus, e.g. --cpus 0,1",
            ));
        }
        let rt = a.rt.to_config(a.period)?;
        let (wakee_priority, waker_priority, waker_sched) = match rt.sched {
            Sched::Fifo(p) | Sched::Rr(p) => {
                let w = a.waker_priority.unwrap_or((p - 1).max(1));
                let s = if matches!(rt.sched, Sched::Fifo(_)) {
                    Sched::Fifo(w)
                } else {
                    Sched::Rr(w)
                };
                (Some(p), Some(w), s)
            }
            other => (None, None, other),
        };
        let n = cpus.len();
        let pairs = cpus
            .iter()
            .enumerate()
            .map(|(i, &cpu)| PairPlan {
                name: format!("pair{i}"),
                waker_cpu: cpu,
                wakee_cpu: match a.placement {
                    Placement::Same => cpu,
                    Placement::Cross => cpus[(i + 1) % n],
                },
                phase_ns: a.period * i as u64 / n as u64,
            })
            .collect();
        Ok(SwitchConfig {
            via: a.via.mechanism().name(),
            processes: a.processes,
            warm: !a.cold
                && a.placement == Placement::Same
                && matches!(rt.sched, Sched::Fifo(_) | Sched::Rr(_))
                && waker_priority <= wakee_priority,
            placement: match a.placement {
                Placement::Same => "same",
                Placement::Cross => "cross",
            },
            cpus,
            pairs,
            period_ns: a.period,
            wakee_priority,
            waker_priority,

            control: a.output.control(a.duration, a.loops, None),
            wakee_delay_ns: a.wakee_delay,
            mechanism: a.via.mechanism(),
            rt,
            waker_sched,
        })
    }
}

/// The words a pair shares (in shared memory, so a forked wakee sees them too).
struct PairShared {
    words: SharedWords,
}

/// Written by the waker: the number of the wake in flight.
const SEQ: usize = 0;
/// Written by the wakee: the number of the last wake it completed ...
const DONE: usize = 1;
/// ... and when it ran (CLOCK_MONOTONIC, two halves: no 64-bit atomics on 32-bit targets).
const T1_LO: usize = 2;
const T1_HI: usize = 3;
/// Written by the waker at the end of the run.
const STOP: usize = 4;
/// Written by the wakee: 1 when it waits for wakes, 2 when it failed.
const READY: usize = 5;
const FAIL_STAGE: usize = 6;
const FAIL_ERRNO: usize = 7;
/// Written by the waker: the number of its latest request to arm (futex word).
const ARM: usize = 8;
/// Written by the wakee: the arm request it answered, just before it waits on the line.
const ARMED: usize = 9;
const WORDS: usize = 10;

const STAGE_PIN: u32 = 1;
const STAGE_SCHED: u32 = 2;
const STAGE_MLOCK: u32 = 3;
const STAGE_WAIT: u32 = 4;

impl PairShared {
    fn new() -> std::io::Result<Self> {
        Ok(PairShared {
            words: SharedWords::new(WORDS)?,
        })
    }
    #[inline(always)]
    fn w(&self, i: usize) -> &std::sync::atomic::AtomicU32 {
        &self.words.words()[i]
    }
    #[inline(always)]
    fn post(&self, seq: u32) {
        self.w(SEQ).store(seq, Ordering::Release);
    }
    #[inline(always)]
    fn seq(&self) -> u32 {
        self.w(SEQ).load(Ordering::Acquire)
    }
    #[inline(always)]
    fn ack(&self, seq: u32, t1: u64) {
        self.w(T1_LO).store(t1 as u32, Ordering::Relaxed);
        self.w(T1_HI).store((t1 >> 32) as u32, Ordering::Relaxed);
        self.w(DONE).store(seq, Ordering::Release);
    }
    /// The wakee's run time for wake `seq`, once it completed it.
    #[inline(always)]
    fn acked(&self, seq: u32) -> Option<u64> {
        if self.w(DONE).load(Ordering::Acquire) != seq {
            return None;
        }
        let lo = self.w(T1_LO).load(Ordering::Relaxed) as u64;
        let hi = self.w(T1_HI).load(Ordering::Relaxed) as u64;
        Some((hi << 32) | lo)
    }
    fn stop(&self) {
        self.w(STOP).store(1, Ordering::Release);
    }
    #[inline(always)]
    fn stopped(&self) -> bool {
        self.w(STOP).load(Ordering::Acquire) != 0
    }
    fn set_ready(&self) {
        self.w(READY).store(1, Ordering::Release);
    }
    fn fail(&self, stage: u32, e: &std::io::Error) {
        self.w(FAIL_STAGE).store(stage, Ordering::Relaxed);
        self.w(FAIL_ERRNO)
            .store(e.raw_os_error().unwrap_or(0) as u32, Ordering::Relaxed);
        self.w(READY).store(2, Ordering::Release);
    }
    fn ready(&self) -> u32 {
        self.w(READY).load(Ordering::Acquire)
    }
    fn failure(&self) -> Option<(u32, std::io::Error)> {
        let stage = self.w(FAIL_STAGE).load(Ordering::Acquire);
        (stage != 0).then(|| {
            let errno = self.w(FAIL_ERRNO).load(Ordering::Relaxed) as i32;
            (stage, std::io::Error::from_raw_os_error(errno))
        })
    }
}

/// Both sides of a pair.
struct PairLink {
    shared: PairShared,
    /// Waker to wakee: the arm requests and the measured wakes.
    bell: Doorbell,
    /// Wakee to waker, the same mechanism: the answers to arm requests (warm mode only).
    answer: Option<Doorbell>,
    /// Test knob: the wakee sleeps this long before acknowledging a wake.
    delay: u64,
}

impl PairLink {
    /// The arming handshake, waker's side: ring the line with an arm request
    /// and wait (at most until `deadline`) for the answer, which the wakee
    /// sends right before it waits on the line for the measured wake. The
    /// round trip goes through the measured mechanism, so its code and data
    /// are warm when the measured wake follows (rt-tests' sync step).
    #[inline(always)]
    fn arm(&self, answer: &Doorbell, token: &mut u32, n: u32, deadline: u64) {
        self.shared.w(ARM).store(n, Ordering::Release);
        self.bell.ring();
        while self.shared.w(ARMED).load(Ordering::Acquire) != n {
            if !matches!(answer.wait_until(token, deadline), Ok(true)) {
                return; // no answer in time: the wake goes ahead anyway
            }
        }
    }

    /// The wakee's side: wait for an arm request (or the stop), answer it.
    /// Returns false at the stop or on an error.
    #[inline(always)]
    fn await_arm(&self, answer: &Doorbell, token: &mut u32, seen: &mut u32) -> bool {
        loop {
            if let Err(e) = self.bell.wait(token) {
                self.shared.fail(STAGE_WAIT, &e);
                return false;
            }
            if self.shared.stopped() {
                return false;
            }
            let v = self.shared.w(ARM).load(Ordering::Acquire);
            if v != *seen {
                *seen = v;
                break;
            }
            // A wake with no new request (a stray signal): wait again.
        }
        self.shared.w(ARMED).store(*seen, Ordering::Release);
        answer.ring();
        true
    }
}

/// Rings the wakee a last time with the stop flag set, even if the waker panics.
struct StopOnDrop<'a>(&'a PairLink);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.shared.stop();
        self.0.bell.ring();
    }
}

/// What the waker decided at a period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Ring,
    /// The previous wake is still pending: this period is lost.
    Skip,
}

/// The waker's accounting of wakes, samples and lost periods (pure logic).
#[derive(Debug, Clone, Default)]
struct Ledger {
    start: u64,
    /// End of the run (u64::MAX without --duration).
    end: u64,
    period: u64,
    /// Number of the last wake rung.
    seq: u32,
    pending: bool,
    /// When the pending wake was rung.
    t0: u64,
    /// Periods lost since the last recorded sample.
    owed: u64,
    /// Periods lost because the wakee had not completed the previous wake.
    wakee_busy: u64,
    /// Periods lost because the waker itself woke a whole period late.
    waker_late: u64,
    rung: u64,
}

impl Ledger {
    fn new(start: u64, end: u64, period: u64) -> Self {
        Ledger {
            start,
            end,
            period,
            ..Default::default()
        }
    }

    /// At the timer wake for the period due at `due`, woken at `now`, given the
    /// wakee's run time for the pending wake if it completed it.
    #[inline(always)]
    fn on_period(&mut self, due: u64, now: u64, ack: Option<u64>, rec: &mut Recorder) -> Step {
        // Periods overslept, counting only those that start before the end of the run.
        let before_end = self.end.saturating_sub(due).saturating_sub(1) / self.period;
        let late = (now.saturating_sub(due) / self.period).min(before_end);
        self.owed += late;
        self.waker_late += late;
        if self.pending {
            match ack {
                Some(t1) => self.settle(t1, rec),
                None => {
                    self.owed += 1;
                    self.wakee_busy += 1;
                    return Step::Skip;
                }
            }
        }
        Step::Ring
    }

    #[inline(always)]
    fn settle(&mut self, t1: u64, rec: &mut Recorder) {
        rec.record(
            t1.saturating_sub(self.t0),
            t1.saturating_sub(self.start),
            self.owed,
        );
        self.owed = 0;
        self.pending = false;
    }

    #[inline(always)]
    fn rang(&mut self, seq: u32, t0: u64) {
        self.seq = seq;
        self.t0 = t0;
        self.pending = true;
        self.rung += 1;
    }

    /// The next period after the one due at `due`, handled at `now`: periods
    /// the waker overslept are skipped (and were counted as lost).
    #[inline(always)]
    fn next_due(&self, due: u64, now: u64) -> u64 {
        due + self.period * (1 + now.saturating_sub(due) / self.period)
    }

    /// At the end of the run, with the pending wake's completion if it came.
    /// Returns the lost periods no sample could carry (not in the summary's overruns).
    fn finish(&mut self, ack: Option<u64>, rec: &mut Recorder) -> u64 {
        if self.pending {
            if let Some(t1) = ack {
                self.settle(t1, rec);
            } else {
                self.wakee_busy += 1;
                self.owed += 1;
                self.pending = false;
            }
        }
        std::mem::take(&mut self.owed)
    }

    fn lost(&self) -> u64 {
        self.wakee_busy + self.waker_late
    }
}

/// What a waker reports at its end.
#[derive(Debug, Clone, Default, Serialize)]
struct PairTally {
    name: String,
    lost: u64,
    wakee_busy: u64,
    waker_late: u64,
    /// Lost periods after the last sample (in `lost`, not in the summary's overruns).
    unrecorded: u64,
    rung: u64,
}

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
struct WakerPlan {
    period: u64,
    /// Give the CPU to the wakee right after the wake (same CPU, same priority).
    yield_after: bool,
    phase: u64,
    duration: Option<u64>,
    loops: Option<u64>,
    sched: Option<Sched>,
}

const CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;

/// The waker: ring every period, record the previous wake, count what was lost.
fn waker(
    link: &PairLink,
    rec: &mut Recorder,
    plan: &WakerPlan,
    start: u64,
    stop: &StopFlag,
) -> PairTally {
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
    let end = plan.duration.map_or(u64::MAX, |d| start + d);
    let mut ledger = Ledger::new(start, end, plan.period);
    let mut due = start + plan.phase;
    let loops = plan.loops.unwrap_or(u64::MAX);
    let sliced = plan.period > 400_000_000;
    while due < end && ledger.rung < loops && !stop.is_set() {
        if !pause(CLOCK, due, stop, sliced) {
            break;
        }
        let now = sys::clock::now_ns(CLOCK);
        let ack = link.shared.acked(ledger.seq);
        if ledger.on_period(due, now, ack, rec) == Step::Ring {
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
    while ledger.pending && ack.is_none() && sys::clock::now_ns(CLOCK) < deadline {
        sys::clock::sleep_until(CLOCK, sys::clock::now_ns(CLOCK) + 100_000);
        ack = link.shared.acked(ledger.seq);
    }
    let unrecorded = ledger.finish(ack, rec);
    rec.finish();
    PairTally {
        name: String::new(),
        lost: ledger.lost(),
        wakee_busy: ledger.wakee_busy,
        waker_late: ledger.waker_late,
        unrecorded,
        rung: ledger.rung,
    }
}

/// The wakee: wait, timestamp, acknowledge; until the waker's last ring.
fn wakee(link: &PairLink) {
    link.bell.attach_waiter();
    link.shared.set_ready();
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
        if link.delay > 0 {
            sys::clock::sleep_until(CLOCK, t1 + link.delay);
        }
        link.shared.ack(seq, t1);
        last = seq;
    }
}

/// The forked wakee process: set itself up like a measuring thread, then serve wakes.
fn wakee_process(link: &PairLink, cpu: usize, sched: Sched, mlock: bool) -> i32 {
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

fn setup_error(stage: u32, e: &std::io::Error, cpu: usize, policy: &str) -> Error {
    match stage {
        STAGE_PIN => Error::env(format!(
            "cannot pin a wakee process to CPU {cpu}: {e}; check --cpus"
        )),
        STAGE_SCHED if e.raw_os_error() == Some(libc::EPERM) => Error::env(format!(
            "not permitted to use SCHED_{policy} in a wakee process ({e}); {PRIVILEGE_FIX}; or use --policy other (unprivileged, not real-time)"
        )),
        STAGE_SCHED => Error::env(format!(
            "cannot set SCHED_{policy} in a wakee process: {e}"
        )),
        STAGE_MLOCK => Error::env(format!(
            "cannot lock memory in a wakee process (mlockall: {e}); {PRIVILEGE_FIX}, or raise 'ulimit -l', or pass --no-mlock"
        )),
        _ => Error::env(format!("a wakee process failed: {e}")),
    }
}

fn line_error(m: Mechanism, e: std::io::Error) -> Error {
    let fix = match m {
        Mechanism::Mqueue => "; check /proc/sys/fs/mqueue/queues_max and 'ulimit -q'",
        Mechanism::SysvSem => "; check /proc/sys/kernel/sem",
        _ => "",
    };
    Error::env(format!("cannot create a {} wake line: {e}{fix}", m.name()))
}

/// Fork the wakee processes and wait until each listens (or report why it could not).
fn fork_wakees(cfg: &SwitchConfig, links: &[Arc<PairLink>]) -> Result<Vec<Child>> {
    // Children inherit these masks: terminal signals stay pending (the parent ends
    // them with a last ring), and the wake signal is only taken by sigwaitinfo.
    sys::signals::block_termination()
        .map_err(|e| Error::env(format!("cannot block signals: {e}")))?;
    let mut children = Vec::with_capacity(links.len());
    for (plan, link) in cfg.pairs.iter().zip(links) {
        let (cpu, sched, mlock) = (plan.wakee_cpu, cfg.rt.sched, cfg.rt.mlock);
        let l = Arc::clone(link);
        let child = ipc::fork_child(move || wakee_process(&l, cpu, sched, mlock))
            .map_err(|e| Error::env(format!("cannot fork a wakee process: {e}")))?;
        children.push(child);
    }
    let policy = cfg.rt.policy_name().to_uppercase();
    let give_up = sys::clock::now_ns(CLOCK) + 5_000_000_000;
    for ((plan, link), child) in cfg.pairs.iter().zip(links).zip(children.iter_mut()) {
        loop {
            match link.shared.ready() {
                1 => break,
                2 => {
                    let (stage, e) = link
                        .shared
                        .failure()
                        .unwrap_or((0, std::io::Error::other("unknown")));
                    return Err(setup_error(stage, &e, plan.wakee_cpu, &policy));
                }
                _ => {}
            }
            if let Some(code) = child.try_reap() {
                return Err(Error::env(format!(
                    "a wakee process exited during setup (code {code})"
                )));
            }
            let now = sys::clock::now_ns(CLOCK);
            if now > give_up {
                return Err(Error::env("a wakee process did not start within 5 s"));
            }
            sys::clock::sleep_until(CLOCK, now + 1_000_000);
        }
    }
    Ok(children)
}

/// Run the switch benchmark end to end; returns the exit code.
pub fn run(args: &SwitchArgs, argv: Vec<String>) -> Result<Outcome> {
    let cfg = SwitchConfig::from_args(args)?;
    let n = cfg.pairs.len();
    if cfg.mechanism == Mechanism::Signal {
        ipc::block_wake_signal()
            .map_err(|e| Error::env(format!("cannot block the wake signal: {e}")))?;
    }
    let mut links = Vec::with_capacity(n);
    for _ in 0..n {
        let shared =
            PairShared::new().map_err(|e| Error::env(format!("cannot map shared memory: {e}")))?;
        let bell = Doorbell::new(cfg.mechanism, cfg.processes)
            .map_err(|e| line_error(cfg.mechanism, e))?;
        let answer = if cfg.warm {
            Some(
                Doorbell::new(cfg.mechanism, cfg.processes)
                    .map_err(|e| line_error(cfg.mechanism, e))?,
            )
        } else {
            None
        };
        links.push(Arc::new(PairLink {
            shared,
            bell,
            answer,
            delay: cfg.wakee_delay_ns.unwrap_or(0),
        }));
    }
    let mut children = if cfg.processes {
        fork_wakees(&cfg, &links)?
    } else {
        Vec::new()
    };

    let mut spec = RunSpec::new(
        "switch",
        args.output.output_config(),
        cfg.control.clone(),
        argv,
        cfg.rt.clone(),
    );
    spec.config = serde_json::to_value(&cfg).unwrap_or_default();
    spec.tuning = cfg.rt.tuning(
        cfg.pairs.iter().map(|p| Some(p.wakee_cpu)).collect(),
        cfg.pairs.iter().map(|p| p.phase_ns).collect(),
    );
    let mut spec = spec.with_loads(args.load.plan()?)?;
    spec.details
        .insert("via".into(), serde_json::Value::from(cfg.via));
    spec.details
        .insert("processes".into(), serde_json::Value::from(cfg.processes));

    let tallies: Arc<Mutex<Vec<PairTally>>> = Arc::new(Mutex::new(Vec::new()));
    let mut channels = Vec::with_capacity(n);
    let mut workers = Vec::with_capacity(2 * n);
    for (plan, link) in cfg.pairs.iter().zip(&links) {
        let (mut rec, col) = recorder::pair(cfg.control.interval_ns);
        channels.push(Channel::new(
            plan.name.clone(),
            Some(plan.wakee_cpu),
            col,
            cfg.control.interval_ns,
        ));
        let wplan = WakerPlan {
            period: cfg.period_ns,
            yield_after: plan.waker_cpu == plan.wakee_cpu
                && cfg.waker_priority.is_some()
                && cfg.waker_priority == cfg.wakee_priority,
            phase: plan.phase_ns,
            duration: cfg.control.duration_ns,
            loops: cfg.control.loops,
            sched: (cfg.waker_sched != cfg.rt.sched).then_some(cfg.waker_sched),
        };
        let (l, t, name) = (Arc::clone(link), Arc::clone(&tallies), plan.name.clone());
        workers.push(Worker {
            name: format!("{}-waker", plan.name),
            cpu: Some(plan.waker_cpu),
            body: Box::new(move |start: u64, stop: &StopFlag| -> WorkerEnd {
                let mut tally = waker(&l, &mut rec, &wplan, start, stop);
                tally.name = name;
                if let Ok(mut v) = t.lock() {
                    v.push(tally);
                }
                WorkerEnd { brk: None }
            }),
        });
        if !cfg.processes {
            let l = Arc::clone(link);
            workers.push(Worker {
                name: format!("{}-wakee", plan.name),
                cpu: Some(plan.wakee_cpu),
                body: Box::new(move |_start: u64, _stop: &StopFlag| -> WorkerEnd {
                    wakee(&l);
                    WorkerEnd { brk: None }
                }),
            });
        }
    }

    let (t, l2) = (Arc::clone(&tallies), links.clone());
    let names: Vec<String> = cfg.pairs.iter().map(|p| p.name.clone()).collect();
    spec.finish = Some(Box::new(move |r: &mut crate::result::RunResult| {
        let mut v = t.lock().map(|v| v.clone()).unwrap_or_default();
        v.sort_by_key(|p| names.iter().position(|n| *n == p.name));
        let lost: u64 = v.iter().map(|p| p.lost).sum();
        let unrecorded: u64 = v.iter().map(|p| p.unrecorded).sum();
        r.details.insert("lost".into(), lost.into());
        r.details
            .insert("pairs".into(), serde_json::to_value(&v).unwrap_or_default());
        if unrecorded > 0 {
            r.notes.push(format!(
                "{unrecorded} lost wake(s) at the end of the run had no later sample to carry them: details.lost counts them, the summary's overruns do not"
            ));
        }
        for (name, link) in names.iter().zip(&l2) {
            if let Some((STAGE_WAIT, e)) = link.shared.failure() {
                r.notes
                    .push(format!("{name}: the wakee stopped waiting: {e}"));
            }
        }
    }));

    let outcome = engine::execute(spec, channels, workers, CLOCK);
    for c in children.iter_mut() {
        if outcome.is_ok() {
            // The waker's last ring told the wakee process to exit; reap it (or kill it).
            c.finish(1_000_000_000);
        } else {
            c.kill(); // no waker ran: nobody will ring it
        }
    }
    let outcome = outcome?;
    print_lost(&cfg, &outcome.result);
    Ok(outcome.outcome)
}

/// One line after the summary: what was measured and what was lost, and why.
fn print_lost(cfg: &SwitchConfig, r: &crate::result::RunResult) {
    let pairs: Vec<serde_json::Value> = r
        .details
        .get("pairs")
        .and_then(|v| v.as_array())
        .cloned()
        .unwrap_or_default();
    let sum = |k: &str| -> u64 { pairs.iter().filter_map(|p| p[k].as_u64()).sum() };
    let per_pair: Vec<String> = pairs
        .iter()
        .map(|p| {
            format!(
                "{} {}",
                p["name"].as_str().unwrap_or("?"),
                p["lost"].as_u64().unwrap_or(0)
            )
        })
        .collect();
    let prio = match (cfg.wakee_priority, cfg.waker_priority) {
        (Some(e), Some(w)) => format!(", wakee priority {e}, waker {w}"),
        _ => String::new(),
    };
    println!(
        "switch: via {} between {}, {} CPU, {}{prio}; lost wakes {} ({}): wakee busy {}, waker late {}",
        cfg.via,
        if cfg.processes {
            "a thread and a process"
        } else {
            "threads"
        },
        cfg.placement,
        if cfg.warm { "armed (warm)" } else { "cold" },
        sum("lost"),
        per_pair.join(", "),
        sum("wakee_busy"),
        sum("waker_late"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use crate::engine::rt::DEFAULT_PRIORITY;
    use clap::Parser;

    fn args(extra: &[&str]) -> SwitchArgs {
        let mut argv = vec!["rtlat", "switch"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).expect("parses").command {
            crate::cli::Command::Switch(a) => a,
            _ => unreachable!(),
        }
    }

    fn collect(col: &mut crate::stats::Collector) -> crate::stats::recorder::Totals {
        col.collect(&mut Vec::new());
        *col.totals()
    }

    #[test]
    fn every_period_is_a_sample_or_a_lost_wake() {
        let (mut rec, mut col) = recorder::pair(1_000_000_000);
        let p = 1000;
        let mut l = Ledger::new(0, u64::MAX, p);
        // Period 0: ring.
        assert_eq!(l.on_period(0, 10, None, &mut rec), Step::Ring);
        l.rang(1, 20);
        // Period 1: the wakee ran at 25 -> sample 5; ring again.
        assert_eq!(l.on_period(1000, 1005, Some(25), &mut rec), Step::Ring);
        l.rang(2, 1010);
        // Periods 2 and 3: the wakee has not completed: two lost periods, no ring.
        assert_eq!(l.on_period(2000, 2001, None, &mut rec), Step::Skip);
        assert_eq!(l.on_period(3000, 3001, None, &mut rec), Step::Skip);
        // Period 4: completed at 3500; the waker itself is 2.5 periods late:
        // periods 5 and 6 are skipped and lost too.
        assert_eq!(l.on_period(4000, 6500, Some(3500), &mut rec), Step::Ring);
        assert_eq!(l.next_due(4000, 6500), 7000);
        l.rang(3, 6510);
        assert_eq!(l.on_period(7000, 7001, Some(6600), &mut rec), Step::Ring);
        l.rang(4, 7002);
        assert_eq!(l.finish(Some(7010), &mut rec), 0);
        rec.finish();
        let t = collect(&mut col);
        assert_eq!(t.samples, 4);
        assert_eq!(t.overruns, 4);
        assert_eq!((l.wakee_busy, l.waker_late, l.lost()), (2, 2, 4));
        // 8 periods (0..=7): 4 samples + 4 lost.
        assert_eq!(t.samples + l.lost(), 8);
        assert_eq!((t.min, t.max), (5, 2490));
    }

    #[test]
    fn periods_overslept_past_the_end_are_not_lost() {
        let (mut rec, _col) = recorder::pair(1_000_000_000);
        // Run of 10 periods; at period 8 the waker wakes 5 periods late:
        // only period 9 was lost, 10..12 are after the end.
        let mut l = Ledger::new(0, 10_000, 1000);
        assert_eq!(l.on_period(8000, 13_100, None, &mut rec), Step::Ring);
        assert_eq!(l.waker_late, 1);
        assert!(l.next_due(8000, 13_100) >= 10_000);
    }

    #[test]
    fn an_unfinished_last_wake_is_lost_but_unrecorded() {
        let (mut rec, mut col) = recorder::pair(1_000_000_000);
        let mut l = Ledger::new(0, u64::MAX, 1000);
        l.on_period(0, 1, None, &mut rec);
        l.rang(1, 2);
        assert_eq!(l.on_period(1000, 1001, None, &mut rec), Step::Skip);
        assert_eq!(l.finish(None, &mut rec), 2);
        assert_eq!(l.lost(), 2);
        rec.finish();
        assert_eq!(collect(&mut col).samples, 0);
    }

    #[test]
    fn defaults_one_same_cpu_pair_per_cpu_waker_one_below() {
        let c = SwitchConfig::from_args(&args(&["--cpus", "0", "--duration", "1s"])).expect("ok");
        assert_eq!(c.via, "futex");
        assert_eq!(c.period_ns, 1_000_000);
        assert_eq!(c.pairs.len(), 1);
        assert_eq!((c.pairs[0].waker_cpu, c.pairs[0].wakee_cpu), (0, 0));
        assert_eq!(c.wakee_priority, Some(DEFAULT_PRIORITY));
        assert_eq!(c.waker_priority, Some(DEFAULT_PRIORITY - 1));
        assert_eq!(c.waker_sched, Sched::Fifo(DEFAULT_PRIORITY - 1));
    }

    #[test]
    fn cross_placement_puts_the_wakee_on_the_next_cpu() {
        if sysinfo::online_cpus().len() < 2 {
            return;
        }
        let c = SwitchConfig::from_args(&args(&[
            "--cpus",
            "0,1",
            "--placement",
            "cross",
            "--waker-priority",
            "80",
        ]))
        .expect("ok");
        let p: Vec<(usize, usize)> = c.pairs.iter().map(|p| (p.waker_cpu, p.wakee_cpu)).collect();
        assert_eq!(p, vec![(0, 1), (1, 0)]);
        assert_eq!(c.pairs[1].phase_ns, 500_000);
        assert_eq!(c.waker_priority, Some(80));
    }

    #[test]
    fn bad_combinations_are_usage_errors() {
        for bad in [
            vec!["--placement", "cross", "--cpus", "0"],
            vec!["--policy", "deadline"],
            vec!["--policy", "other", "--waker-priority", "5"],
        ] {
            let e = SwitchConfig::from_args(&args(&bad)).expect_err("refused");
            assert_eq!(e.exit_code(), 2, "{bad:?}: {e}");
        }
    }

    #[test]
    fn every_mechanism_is_named_on_the_command_line() {
        for m in Mechanism::ALL {
            let a = args(&["--via", m.name()]);
            assert_eq!(a.via.mechanism(), m);
        }
    }
}
