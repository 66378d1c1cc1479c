//! Each watched thread followed through its events: a wake-up
//! (`sched_waking`) to the switch in is its wake-up latency; the expiry
//! time of its own sleep's timer (`hrtimer_start`'s soft expiry, once
//! `hrtimer_expire_entry` shows it fired) to the switch in is its timer
//! lateness; its time on the CPU from the switch in to the switch out
//! that blocks it (preemptions in between are not its end) is its run
//! time; the time between two wake-ups its activation interval. A sleep
//! that does not block (its time already past, or its timer fired first)
//! is as late as the moment it returns. A wake-up after which the thread
//! is seen running without its switch in is counted, with no figure.
//!
//! Besides the figures: the task that held the CPU when a late thread
//! finally ran (the switch in names it), who preempted a thread in the
//! middle of an activation and for how long, and the overruns: a sleep
//! until a time already past (the next activation came before this one
//! finished), or an activation longer than the declared limit
//! (`--deadline`, else `--period`) from its timer's expiry or wake-up.

use super::events::{comm_text, Happening, Tracked};
use super::select::Selection;
use crate::explain::events::IdMap;
use std::collections::HashMap;

/// What a watched thread's activations give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// `sched_waking` to the switch in.
    Wake,
    /// Its own timer's expiry time to the switch in.
    Timer,
    /// Time on the CPU from the switch in to blocking.
    Run,
    /// From the previous wake-up to this one.
    Interval,
}

/// Where the figures go.
pub trait Figures {
    /// Room for thread `tid` named `comm`: its slot, or `None` (no room).
    fn admit(&mut self, tid: i32, comm: &str) -> Option<usize>;
    /// A figure of the thread in `slot`, at `ts` (the trace's clock).
    fn figure(&mut self, slot: usize, figure: Quantity, ts: u64, ns: u64);
    /// The thread in `slot` ran at `ts` on the `cpu`th CPU read after
    /// waiting `ns` since its wake-up; `by` held the CPU until then (pid 0:
    /// it was idle).
    fn late(&mut self, slot: usize, ts: u64, ns: u64, by: &Tracked, cpu: usize);
    /// The thread in `slot` was preempted by `by` for `ns` mid-activation.
    fn interfered(&mut self, slot: usize, by: &Tracked, ns: u64);
    /// An activation of the thread in `slot` overran, seen at `ts`.
    fn overrun(&mut self, slot: usize, ts: u64);
    /// The thread in `slot` ended at `ts`.
    fn ended(&mut self, slot: usize, ts: u64);
}

/// One watched thread's state between its events.
#[derive(Debug, Default)]
struct Thread {
    slot: usize,
    /// Its first wake-up not yet followed by a switch in.
    woken: Option<u64>,
    /// On the CPU since.
    running: Option<u64>,
    /// Between a switch in after a wake-up and the switch out that blocks.
    active: bool,
    /// CPU time of the activation so far.
    ran: u64,
    last_wake: Option<u64>,
    /// The sleep timer it started: (address, soft expiry).
    armed: Option<(u64, u64)>,
    /// The soft expiry of that timer once it fired.
    due: Option<u64>,
    /// When the current activation was due: its timer's expiry, else its wake-up.
    start: Option<u64>,
    /// Preempted mid-activation at, by.
    preempted: Option<(u64, Tracked)>,
}

/// Every watched thread, and the threads the selection does not take.
pub struct Follow {
    select: Selection,
    /// The sleepers' timer callback; `None`: every timer a thread starts counts.
    callback: Option<u64>,
    threads: IdMap<Thread>,
    /// Tracked ids seen and not taken, at most [`REFUSED`].
    refused: IdMap<Refused>,
    /// Timer address → the thread that armed it.
    armed_by: HashMap<u64, i32>,
    pub lost_events: u64,
    /// Wake-ups after which the thread was seen running without its
    /// switch in (the kernel's trace lacks a few on some machines).
    pub switches_missing: u64,
    /// The longest an activation may take (`--deadline`, else `--period`).
    pub limit: Option<u64>,
    /// The CPU (its index among those read) of the event being followed.
    pub cpu: usize,
}

/// Ids refused kept at most. Every task that ran beside a watched thread
/// is asked once, so a machine that starts processes all day would fill
/// the list: past this, the ids outside the selection are forgotten (asked
/// again if seen again); those of the selection are kept.
const REFUSED: usize = 4096;

/// Why an id is not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refused {
    /// The selection does not want it.
    Outside,
    /// Of the selection, but no series was left for it, or it ended.
    Kept,
}

/// A task's state in `sched_switch`: blocked (any state bit of the low
/// byte), not preempted (0, or the preemption mark above it).
fn blocked(prev_state: u64) -> bool {
    prev_state & 0xff != 0
}

impl Follow {
    pub fn new(select: Selection, callback: Option<u64>) -> Follow {
        Follow {
            select,
            callback,
            threads: IdMap::default(),
            refused: IdMap::default(),
            armed_by: HashMap::new(),
            lost_events: 0,
            switches_missing: 0,
            limit: None,
            cpu: 0,
        }
    }

    /// Follow thread `tid` from the start, in `slot`.
    pub fn watch(&mut self, tid: i32, slot: usize) {
        self.threads.insert(
            tid,
            Thread {
                slot,
                ..Thread::default()
            },
        );
    }

    /// Whether `tid` is followed, taking it when the selection admits a
    /// thread named `comm` of priority `prio` and the sink has room.
    fn followed(&mut self, tid: i32, comm: &[u8; 16], prio: i32, out: &mut impl Figures) -> bool {
        if self.threads.contains_key(&tid) {
            return true;
        }
        if tid <= 0 || self.refused.contains_key(&tid) {
            return false;
        }
        let name = comm_text(comm);
        if !self.select.admits(&name, prio) {
            self.refuse(tid, Refused::Outside);
            return false;
        }
        match out.admit(tid, &name) {
            Some(slot) => {
                self.watch(tid, slot);
                true
            }
            None => {
                self.refuse(tid, Refused::Kept);
                false
            }
        }
    }

    fn refuse(&mut self, tid: i32, why: Refused) {
        if self.refused.len() >= REFUSED {
            self.refused.retain(|_, w| *w == Refused::Kept);
            if self.refused.len() >= REFUSED {
                self.refused.clear();
            }
        }
        self.refused.insert(tid, why);
    }

    /// One event at `ts`, in time order.
    pub fn event(&mut self, ts: u64, ev: Happening, out: &mut impl Figures) {
        match ev {
            Happening::Lost(n) => {
                self.lost_events += n;
                // What was between is unknown: no figure spans the gap.
                for t in self.threads.values_mut() {
                    *t = Thread {
                        slot: t.slot,
                        ..Thread::default()
                    };
                }
                self.armed_by.clear();
            }
            Happening::Waking { pid, prio, comm } => {
                if self.followed(pid, &comm, prio, out) {
                    if let Some(t) = self.threads.get_mut(&pid) {
                        if t.running.is_none() && t.woken.is_none() {
                            t.woken = Some(ts);
                        }
                    }
                }
            }
            Happening::Switch {
                prev,
                prev_state,
                next,
            } => {
                if let Some(t) = self.threads.get_mut(&prev.pid) {
                    switch_out(t, ts, prev_state, &next, self.limit, out);
                }
                if self.followed(next.pid, &next.comm, next.prio, out) {
                    if let Some(t) = self.threads.get_mut(&next.pid) {
                        switch_in(t, ts, &prev, self.cpu, out);
                    }
                }
            }
            Happening::TimerStart {
                pid,
                timer,
                function,
                soft,
            } => {
                if self.callback.is_some_and(|f| f != function) {
                    return;
                }
                let Some(t) = self.threads.get_mut(&pid) else {
                    return;
                };
                // Woken, and seen running only now.
                let mut unseen = false;
                if t.running.is_none() {
                    // The thread runs (it starts its timer) but its switch
                    // in is not in the trace: that activation has no figure.
                    if let Some(w) = t.woken.take() {
                        unseen = true;
                        self.switches_missing += 1;
                        if let Some(last) = t.last_wake.replace(w) {
                            out.figure(t.slot, Quantity::Interval, ts, w.saturating_sub(last));
                        }
                    }
                    t.running = Some(ts);
                    t.active = false;
                    t.due = None;
                }
                if let Some((old, _)) = t.armed.take() {
                    self.armed_by.remove(&old);
                }
                if soft <= ts {
                    // A sleep until a time already past returns at once:
                    // it is as late as when it was asked for.
                    out.figure(t.slot, Quantity::Timer, ts, ts - soft);
                    if t.active || unseen {
                        // The next activation is here before this one ended
                        // (whether or not its start was in the trace).
                        out.overrun(t.slot, ts);
                        t.start = Some(soft);
                    }
                } else {
                    t.armed = Some((timer, soft));
                    self.armed_by.insert(timer, pid);
                }
            }
            Happening::TimerExpire { timer } => {
                let Some(t) = self
                    .armed_by
                    .remove(&timer)
                    .and_then(|pid| self.threads.get_mut(&pid))
                else {
                    return;
                };
                let soft = t.armed.take().map(|(_, soft)| soft);
                match (soft, t.running) {
                    // It fired before the thread blocked: the thread does
                    // not sleep, and goes on from here.
                    (Some(soft), Some(_)) => {
                        out.figure(t.slot, Quantity::Timer, ts, ts.saturating_sub(soft));
                    }
                    (soft, _) => t.due = soft,
                }
            }
            Happening::Exit { pid } => {
                if let Some(t) = self.threads.remove(&pid) {
                    if let Some((timer, _)) = t.armed {
                        self.armed_by.remove(&timer);
                    }
                    out.ended(t.slot, ts);
                    // Its events another CPU's pages bring later are not
                    // a new thread's.
                    self.refuse(pid, Refused::Kept);
                } else {
                    // The id may be given to a thread of the selection.
                    self.refused.remove(&pid);
                }
            }
        }
    }
}

fn switch_out(
    t: &mut Thread,
    ts: u64,
    prev_state: u64,
    next: &Tracked,
    limit: Option<u64>,
    out: &mut impl Figures,
) {
    if let Some(since) = t.running.take() {
        t.ran += ts.saturating_sub(since);
    }
    if blocked(prev_state) {
        if t.active {
            out.figure(t.slot, Quantity::Run, ts, t.ran);
            if let (Some(limit), Some(start)) = (limit, t.start) {
                if ts.saturating_sub(start) > limit {
                    out.overrun(t.slot, ts);
                }
            }
        }
        t.active = false;
        t.ran = 0;
        t.start = None;
    } else if t.active {
        t.preempted = Some((ts, *next));
    }
}

fn switch_in(t: &mut Thread, ts: u64, prev: &Tracked, cpu: usize, out: &mut impl Figures) {
    t.running = Some(ts);
    if let Some((since, by)) = t.preempted.take() {
        out.interfered(t.slot, &by, ts.saturating_sub(since));
    }
    let due = t.due.take();
    let Some(w) = t.woken.take() else {
        return;
    };
    out.figure(t.slot, Quantity::Wake, ts, ts.saturating_sub(w));
    out.late(t.slot, ts, ts.saturating_sub(w), prev, cpu);
    let due = due.filter(|&d| d <= ts);
    if let Some(d) = due {
        out.figure(t.slot, Quantity::Timer, ts, ts - d);
    }
    t.start = Some(due.unwrap_or(w));
    if let Some(last) = t.last_wake.replace(w) {
        out.figure(t.slot, Quantity::Interval, ts, w.saturating_sub(last));
    }
    // A thread seen first while it ran starts its activations here.
    t.active = true;
    t.ran = 0;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Got {
        figures: Vec<(usize, Quantity, u64, u64)>,
        admitted: Vec<(i32, String)>,
        ended: Vec<(usize, u64)>,
        /// (slot, wait, pid that held the CPU)
        late: Vec<(usize, u64, i32)>,
        /// (slot, pid that preempted, ns)
        interfered: Vec<(usize, i32, u64)>,
        overruns: Vec<(usize, u64)>,
        room: usize,
    }

    impl Figures for Got {
        fn admit(&mut self, tid: i32, comm: &str) -> Option<usize> {
            (self.admitted.len() < self.room).then(|| {
                self.admitted.push((tid, comm.into()));
                self.admitted.len()
            })
        }
        fn figure(&mut self, slot: usize, figure: Quantity, ts: u64, ns: u64) {
            self.figures.push((slot, figure, ts, ns));
        }
        fn late(&mut self, slot: usize, _ts: u64, ns: u64, by: &Tracked, _cpu: usize) {
            self.late.push((slot, ns, by.pid));
        }
        fn interfered(&mut self, slot: usize, by: &Tracked, ns: u64) {
            self.interfered.push((slot, by.pid, ns));
        }
        fn overrun(&mut self, slot: usize, ts: u64) {
            self.overruns.push((slot, ts));
        }
        fn ended(&mut self, slot: usize, ts: u64) {
            self.ended.push((slot, ts));
        }
    }

    fn comm(s: &str) -> [u8; 16] {
        let mut c = [0u8; 16];
        c[..s.len()].copy_from_slice(s.as_bytes());
        c
    }

    /// A switch from `prev` (whose name and priority no test reads back
    /// but the culprit's) to `next` named `name`.
    fn switch(prev: i32, prev_state: u64, next: i32, next_prio: i32, name: &str) -> Happening {
        Happening::Switch {
            prev: Tracked {
                pid: prev,
                prio: 9,
                comm: comm("prev"),
            },
            prev_state,
            next: Tracked {
                pid: next,
                prio: next_prio,
                comm: comm(name),
            },
        }
    }

    /// The application `pid` woken (FIFO 80).
    fn waking(pid: i32) -> Happening {
        Happening::Waking {
            pid,
            prio: 19,
            comm: comm("app"),
        }
    }

    const SLEEPER: u64 = 0xf00;

    /// One period of a thread sleeping on its own timer: it arms the timer
    /// (expiry `due`), blocks, the timer fires 3 late, the wake-up follows
    /// 1 later, it runs 4 after 2 more, is preempted for 10, runs 5 more.
    fn period(f: &mut Follow, got: &mut Got, tid: i32, due: u64) {
        f.event(
            due - 500,
            Happening::TimerStart {
                pid: tid,
                timer: 0xa,
                function: SLEEPER,
                soft: due,
            },
            got,
        );
        f.event(due - 499, switch(tid, 1, 0, 120, "swapper/0"), got);
        f.event(due + 3, Happening::TimerExpire { timer: 0xa }, got);
        f.event(due + 4, waking(tid), got);
        f.event(due + 6, switch(0, 0, tid, 19, "app"), got);
        f.event(due + 8, switch(tid, 0x100, 77, 9, "hog"), got);
        f.event(due + 18, switch(77, 1, tid, 19, "app"), got);
        f.event(due + 21, switch(tid, 1, 0, 120, "swapper/0"), got);
    }

    #[test]
    fn a_periodic_sleeper_gives_each_figure_once_per_period() {
        let mut f = Follow::new(Selection::Pids(vec![5]), Some(SLEEPER));
        let mut got = Got::default();
        f.watch(5, 0);
        period(&mut f, &mut got, 5, 1000);
        period(&mut f, &mut got, 5, 2000);
        use Quantity::*;
        assert_eq!(
            got.figures,
            [
                (0, Wake, 1006, 2),
                (0, Timer, 1006, 6),
                // Its first activation: run 2 before and 3 after the preemption.
                (0, Run, 1021, 5),
                (0, Wake, 2006, 2),
                (0, Timer, 2006, 6),
                (0, Interval, 2006, 1000),
                (0, Run, 2021, 5),
            ]
        );
        // The re-armed timer replaced the first: nothing left behind.
        assert!(f.armed_by.is_empty());
    }

    #[test]
    fn timers_of_other_callbacks_and_wake_ups_without_a_timer_give_no_lateness() {
        let mut f = Follow::new(Selection::Pids(vec![5]), Some(SLEEPER));
        let mut got = Got::default();
        f.watch(5, 0);
        // The tick's timer, started in the thread's context: not its sleep.
        f.event(
            10,
            Happening::TimerStart {
                pid: 5,
                timer: 0xb,
                function: 0x1,
                soft: 20,
            },
            &mut got,
        );
        f.event(11, switch(5, 1, 0, 120, "swapper/0"), &mut got);
        f.event(20, Happening::TimerExpire { timer: 0xb }, &mut got);
        // Woken by another thread (a futex): a wake-up, no timer lateness.
        f.event(30, waking(5), &mut got);
        f.event(30, waking(5), &mut got);
        f.event(37, switch(0, 0, 5, 19, "app"), &mut got);
        assert_eq!(got.figures, [(0, Quantity::Wake, 37, 7)]);
    }

    #[test]
    fn the_ids_refused_stay_bounded_and_keep_the_selections() {
        let mut f = Follow::new(Selection::RealTime, None);
        let mut got = Got {
            room: 1,
            ..Got::default()
        };
        f.event(1, switch(0, 0, 9, 49, "irq/9"), &mut got);
        f.event(2, Happening::Exit { pid: 9 }, &mut got);
        // A day of short processes beside the watched thread.
        for pid in 100..100 + 3 * REFUSED as i32 {
            f.event(3, switch(9, 0, pid, 120, "true"), &mut got);
        }
        assert!(f.refused.len() <= REFUSED, "{}", f.refused.len());
        // The ended thread is still refused: its late events take no slot.
        got.room = 2;
        f.event(4, switch(0, 0, 9, 49, "irq/9"), &mut got);
        assert_eq!(got.admitted, [(9, "irq/9".to_string())]);
        // A forgotten id outside the selection is asked again, and refused again.
        f.event(5, switch(0, 0, 100, 120, "true"), &mut got);
        assert_eq!(got.admitted.len(), 1);
    }

    #[test]
    fn threads_are_admitted_by_the_selection_while_there_is_room_and_end() {
        let mut f = Follow::new(Selection::RealTime, None);
        let mut got = Got {
            room: 1,
            ..Got::default()
        };
        // Not real-time: refused, never asked again.
        f.event(
            1,
            Happening::Waking {
                pid: 8,
                prio: 120,
                comm: comm("other"),
            },
            &mut got,
        );
        f.event(
            2,
            Happening::Waking {
                pid: 9,
                prio: 49,
                comm: comm("irq/9"),
            },
            &mut got,
        );
        f.event(
            3,
            Happening::Waking {
                pid: 10,
                prio: 10,
                comm: comm("late"),
            },
            &mut got,
        );
        assert_eq!(got.admitted, [(9, "irq/9".to_string())]);
        f.event(5, switch(0, 0, 9, 49, "irq/9"), &mut got);
        assert_eq!(got.figures, [(1, Quantity::Wake, 5, 3)]);
        f.event(6, Happening::Exit { pid: 9 }, &mut got);
        f.event(7, Happening::Exit { pid: 10 }, &mut got);
        assert_eq!(got.ended, [(1, 6)]);
        // An event of the ended thread read late does not take a new slot.
        got.room = 2;
        f.event(
            8,
            Happening::Waking {
                pid: 9,
                prio: 49,
                comm: comm("irq/9"),
            },
            &mut got,
        );
        assert_eq!(got.admitted.len(), 1);
        // Without a sleeper callback known, any timer the thread starts counts.
        let mut f = Follow::new(Selection::Comm("ap*".into()), None);
        let mut got = Got {
            room: 4,
            ..Got::default()
        };
        f.event(
            1,
            Happening::Waking {
                pid: 3,
                prio: 120,
                comm: comm("app"),
            },
            &mut got,
        );
        f.event(2, switch(0, 0, 3, 120, "app"), &mut got);
        f.event(
            3,
            Happening::TimerStart {
                pid: 3,
                timer: 0xc,
                function: 0x7,
                soft: 10,
            },
            &mut got,
        );
        f.event(4, switch(3, 1, 0, 120, "swapper/0"), &mut got);
        f.event(12, Happening::TimerExpire { timer: 0xc }, &mut got);
        f.event(
            13,
            Happening::Waking {
                pid: 3,
                prio: 120,
                comm: comm("app"),
            },
            &mut got,
        );
        f.event(15, switch(0, 0, 3, 120, "app"), &mut got);
        assert!(
            got.figures.contains(&(1, Quantity::Timer, 15, 5)),
            "{:?}",
            got.figures
        );
    }

    #[test]
    fn a_sleep_that_does_not_block_is_as_late_as_its_timer_at_its_return() {
        let mut f = Follow::new(Selection::Pids(vec![5]), Some(SLEEPER));
        let mut got = Got::default();
        f.watch(5, 0);
        f.event(1, waking(5), &mut got);
        f.event(2, switch(0, 0, 5, 19, "app"), &mut got);
        // Late beyond its next period: it asks for a time already past.
        f.event(
            50,
            Happening::TimerStart {
                pid: 5,
                timer: 0xa,
                function: SLEEPER,
                soft: 40,
            },
            &mut got,
        );
        // Its next sleep fires before it could block.
        f.event(
            60,
            Happening::TimerStart {
                pid: 5,
                timer: 0xa,
                function: SLEEPER,
                soft: 61,
            },
            &mut got,
        );
        f.event(62, Happening::TimerExpire { timer: 0xa }, &mut got);
        f.event(62, waking(5), &mut got);
        assert_eq!(
            got.figures,
            [
                (0, Quantity::Wake, 2, 1),
                (0, Quantity::Timer, 50, 10),
                (0, Quantity::Timer, 62, 1)
            ]
        );
        assert!(f.armed_by.is_empty());
    }

    #[test]
    fn a_switch_in_the_trace_lacks_is_counted_not_guessed() {
        let mut f = Follow::new(Selection::Pids(vec![5]), Some(SLEEPER));
        let mut got = Got::default();
        f.watch(5, 0);
        period(&mut f, &mut got, 5, 1000);
        got.figures.clear();
        // Woken at 2004; no switch in; seen starting its timer at 2010.
        f.event(
            1500,
            Happening::TimerStart {
                pid: 5,
                timer: 0xa,
                function: SLEEPER,
                soft: 2000,
            },
            &mut got,
        );
        f.event(1501, switch(5, 1, 0, 120, "swapper/0"), &mut got);
        f.event(2003, Happening::TimerExpire { timer: 0xa }, &mut got);
        f.event(2004, waking(5), &mut got);
        f.event(
            2010,
            Happening::TimerStart {
                pid: 5,
                timer: 0xa,
                function: SLEEPER,
                soft: 3000,
            },
            &mut got,
        );
        f.event(2011, switch(5, 1, 0, 120, "swapper/0"), &mut got);
        assert_eq!(got.figures, [(0, Quantity::Interval, 2010, 1000)]);
        assert_eq!(f.switches_missing, 1);
        assert!(got.overruns.is_empty());
        // The next period is whole again.
        f.event(3003, Happening::TimerExpire { timer: 0xa }, &mut got);
        f.event(3004, waking(5), &mut got);
        f.event(3006, switch(0, 0, 5, 19, "app"), &mut got);
        assert!(
            got.figures.contains(&(0, Quantity::Timer, 3006, 6)),
            "{:?}",
            got.figures
        );
        f.event(3020, switch(5, 1, 0, 120, "swapper/0"), &mut got);
        // Woken again, its switch in missing, and it asks to sleep until a
        // time already past when it ends: an overrun all the same.
        f.event(4004, waking(5), &mut got);
        f.event(
            5100,
            Happening::TimerStart {
                pid: 5,
                timer: 0xa,
                function: SLEEPER,
                soft: 5000,
            },
            &mut got,
        );
        assert_eq!(f.switches_missing, 2);
        assert_eq!(got.overruns, [(0, 5100)]);
    }

    #[test]
    fn lost_events_break_every_figure_that_spans_them() {
        let mut f = Follow::new(Selection::Pids(vec![5]), None);
        let mut got = Got::default();
        f.watch(5, 0);
        f.event(1, waking(5), &mut got);
        f.event(2, Happening::Lost(3), &mut got);
        f.event(9, switch(0, 0, 5, 19, "app"), &mut got);
        assert!(got.figures.is_empty());
        assert_eq!(f.lost_events, 3);
    }

    #[test]
    fn culprits_preemptions_and_overruns_are_told() {
        let mut f = Follow::new(Selection::Pids(vec![5]), Some(SLEEPER));
        let mut got = Got::default();
        f.watch(5, 0);
        period(&mut f, &mut got, 5, 1000);
        // Woken on an idle CPU; preempted by 77 for 10 mid-activation.
        assert_eq!(got.late, [(0, 2, 0)]);
        assert_eq!(got.interfered, [(0, 77, 10)]);
        assert!(got.overruns.is_empty());
        let start = |soft| Happening::TimerStart {
            pid: 5,
            timer: 0xa,
            function: SLEEPER,
            soft,
        };
        let waking = waking(5);
        // Its next wake-up waits for 88 until 2500; its next sleep, until
        // 2400, is past when it asks: the next activation came first.
        f.event(1500, start(2000), &mut got);
        f.event(1501, switch(5, 1, 0, 120, "swapper/0"), &mut got);
        f.event(2003, Happening::TimerExpire { timer: 0xa }, &mut got);
        f.event(2004, waking, &mut got);
        f.event(2500, switch(88, 0, 5, 19, "app"), &mut got);
        f.event(2600, start(2400), &mut got);
        f.event(2700, start(3000), &mut got);
        f.event(2701, switch(5, 1, 0, 120, "swapper/0"), &mut got);
        assert_eq!(got.late.last(), Some(&(0, 496, 88)));
        assert_eq!(got.overruns, [(0, 2600)]);
        // A declared limit of 300 from the expiry at 3000: passed at 3350.
        f.limit = Some(300);
        f.event(3003, Happening::TimerExpire { timer: 0xa }, &mut got);
        f.event(3004, waking, &mut got);
        f.event(3006, switch(0, 0, 5, 19, "app"), &mut got);
        f.event(3350, switch(5, 1, 0, 120, "swapper/0"), &mut got);
        assert_eq!(got.overruns, [(0, 2600), (0, 3350)]);
    }
}
