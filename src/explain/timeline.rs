//! One CPU's recent past: a bounded ring of its last events, and the state
//! the CPU was in before the oldest of them (which task ran, whether it was
//! idle, which handlers were nested), so that any moment the ring covers can
//! be rebuilt exactly however long a task ran without an event.

use super::events::Ev;
use std::collections::VecDeque;

/// A handler context nested over the running task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nest {
    Irq(i32),
    Softirq(u32),
    Vector(u16),
}

/// The deepest nesting kept (hard IRQ over softirq over vector …).
const DEPTH: usize = 8;

/// What a CPU was doing at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuState {
    /// The running task and its kernel priority (lower is more urgent);
    /// task 0 is the idle task.
    pub task: i32,
    pub prio: i32,
    /// In an idle state (between `cpu_idle` N and its exit).
    pub idle: bool,
    stack: [Option<Nest>; DEPTH],
    depth: usize,
    /// Whether the task is known (a switch was seen).
    pub known: bool,
}

impl Default for CpuState {
    fn default() -> Self {
        CpuState {
            task: 0,
            prio: 120,
            idle: false,
            stack: [None; DEPTH],
            depth: 0,
            known: false,
        }
    }
}

impl CpuState {
    /// The innermost handler running, if any.
    pub fn top(&self) -> Option<Nest> {
        self.depth.checked_sub(1).and_then(|i| self.stack[i])
    }

    fn push(&mut self, c: Nest) {
        if self.depth < DEPTH {
            self.stack[self.depth] = Some(c);
            self.depth += 1;
        }
    }

    /// Leave `c` and whatever its exit event was lost for above it.
    fn pop(&mut self, c: Nest) {
        if let Some(i) = self.stack[..self.depth].iter().rposition(|&x| x == Some(c)) {
            self.depth = i;
        }
    }

    pub fn apply(&mut self, ev: Ev) {
        match ev {
            Ev::IrqEntry(n) => self.push(Nest::Irq(n)),
            Ev::IrqExit(n) => self.pop(Nest::Irq(n)),
            Ev::SoftirqEntry(v) => self.push(Nest::Softirq(v)),
            Ev::SoftirqExit(v) => self.pop(Nest::Softirq(v)),
            Ev::VectorEntry(v) => self.push(Nest::Vector(v)),
            Ev::VectorExit(v) => self.pop(Nest::Vector(v)),
            Ev::Switch {
                next, next_prio, ..
            } => {
                self.task = next;
                self.prio = next_prio;
                self.known = true;
                // A switch happens in task context.
                self.depth = 0;
            }
            Ev::Idle(s) => self.idle = s != u32::MAX,
            Ev::Lost(_) => self.depth = 0,
            Ev::Wakeup { .. } | Ev::Nmi(_) | Ev::Runtime { .. } | Ev::Stack(_) => {}
        }
    }
}

/// Kernel stacks kept per CPU, at most.
const STACKS: usize = 1024;

/// A kernel stack recorded on a CPU: when, of which task, its return
/// addresses innermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stack {
    pub ts: u64,
    pub pid: i32,
    pub frames: Box<[u64]>,
}

/// The last events of one CPU, at most `cap`, and the state before them.
#[derive(Debug)]
pub struct Ring {
    pub base: CpuState,
    /// The state after the newest event.
    now: CpuState,
    events: VecDeque<(u64, Ev)>,
    /// The kernel stacks recorded since the oldest event, at most
    /// [`STACKS`] (the newest).
    stacks: VecDeque<Stack>,
    cap: usize,
    /// A fault put in on purpose ([`FAULT`]): every other event of a kind
    /// dropped.
    fault: Fault,
    seen: u64,
    /// Every event since the run's start went through (none skipped): the
    /// base state is the CPU's from its first event on.
    pub whole: bool,
    /// The newest event pushed out because the ring was full: an interval
    /// that began before it lost its events (its reader fell behind).
    pub full_to: Option<u64>,
    /// Until when every event of the CPU is in the ring: the time of the
    /// last read that emptied its kernel buffer. Past both this and the
    /// newest event nothing is known (the reader is behind), not silence.
    pub read_to: u64,
    /// Switches the trace did not record, put in from the task that
    /// recorded the next event ([`Ring::push_by`]).
    pub inferred: u64,
}

/// `RTLAT_FAULT=drop-switches` (or `drop-softirqs`) makes every ring drop
/// every other `sched_switch` (softirq entry) it is given: a broken
/// decoder's look, so that the attribution tests can be seen to fail
/// (tests/it/evidence.rs).
pub const FAULT: &str = "RTLAT_FAULT";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    DropSwitches,
    DropSoftirqs,
}

impl Fault {
    fn from_env() -> Fault {
        Fault::named(std::env::var(FAULT).as_deref().unwrap_or(""))
    }

    fn named(name: &str) -> Fault {
        match name {
            "drop-switches" => Fault::DropSwitches,
            "drop-softirqs" => Fault::DropSoftirqs,
            _ => Fault::None,
        }
    }

    fn hits(self, ev: &Ev) -> bool {
        match self {
            Fault::None => false,
            Fault::DropSwitches => matches!(ev, Ev::Switch { .. }),
            Fault::DropSoftirqs => matches!(ev, Ev::SoftirqEntry(_)),
        }
    }
}

impl Ring {
    /// All memory allocated here, and the events' buffer written once: it
    /// is resident from the start, so that a long run's memory does not
    /// grow as the ring fills, and the reader never faults on it.
    pub fn new(cap: usize) -> Ring {
        let mut buffer = Vec::new();
        crate::sys::mem::room_written(&mut buffer, cap.max(1), (u64::MAX, Ev::Idle(u32::MAX)));
        Ring {
            base: CpuState::default(),
            now: CpuState::default(),
            events: VecDeque::from(buffer),
            stacks: VecDeque::new(),
            cap: cap.max(1),
            fault: Fault::from_env(),
            seen: 0,
            whole: true,
            full_to: None,
            read_to: 0,
            inferred: 0,
        }
    }

    /// A ring with `fault` put in.
    #[cfg(test)]
    fn with_fault(cap: usize, fault: Fault) -> Ring {
        Ring {
            fault,
            ..Ring::new(cap)
        }
    }

    /// Forget everything: the events that come next follow a stretch that
    /// was not read, so the CPU's state before them is unknown until the
    /// next switch.
    pub fn forget(&mut self) {
        self.events.clear();
        self.stacks.clear();
        self.base = CpuState::default();
        self.now = CpuState::default();
        self.whole = false;
    }

    /// `ev`, recorded at `ts` while `task` ran (the event's own record of
    /// the running task). Where the state says another task runs, a switch
    /// went unrecorded (some kernels leave out the switches of tasks they
    /// hide, and a lost event loses one): it is put in, with the task's
    /// priority from `prio_of`, at the newest event, since any event after
    /// that switch would carry the new task — the moment a woken task of
    /// higher priority takes the CPU, which is how such a switch mostly
    /// comes. A ring with its switches dropped on purpose ([`FAULT`])
    /// stays broken.
    pub fn push_by(&mut self, ts: u64, task: i32, ev: Ev, prio_of: impl FnOnce(i32) -> i32) {
        let missed = self.now.known
            && task != self.now.task
            && self.fault != Fault::DropSwitches
            && !matches!(ev, Ev::Lost(_));
        if missed {
            let at = self.events.back().map_or(ts, |&(t, _)| t);
            let (prev, prev_prio) = (self.now.task, self.now.prio);
            self.push(
                at,
                Ev::Switch {
                    prev,
                    prev_prio,
                    next: task,
                    next_prio: prio_of(task),
                },
            );
            self.inferred += 1;
        }
        self.push(ts, ev);
    }

    pub fn push(&mut self, ts: u64, ev: Ev) {
        if self.fault.hits(&ev) {
            self.seen += 1;
            if self.seen % 2 == 0 {
                return;
            }
        }
        if self.events.len() == self.cap {
            if let Some(&(t, _)) = self.events.front() {
                self.full_to = Some(t);
            }
            self.drop_front();
        }
        self.now.apply(ev);
        self.events.push_back((ts, ev));
    }

    fn drop_front(&mut self) {
        if let Some((_, e)) = self.events.pop_front() {
            self.base.apply(e);
        }
        let from = self.events.front().map_or(u64::MAX, |e| e.0);
        while self.stacks.front().is_some_and(|s| s.ts < from) {
            self.stacks.pop_front();
        }
    }

    /// Keep the stack of task `pid` recorded at `ts` (`frames`, innermost
    /// first).
    pub fn push_stack(&mut self, ts: u64, pid: i32, frames: &[u64]) {
        if frames.is_empty() {
            return;
        }
        if self.stacks.len() == STACKS {
            self.stacks.pop_front();
        }
        self.stacks.push_back(Stack {
            ts,
            pid,
            frames: frames.into(),
        });
    }

    /// The first stack recorded in (`from`, `to`] of a task other than
    /// the idle task and `not`.
    pub fn stack_in(&self, from: u64, to: u64, not: i32) -> Option<&Stack> {
        let at = self.stacks.partition_point(|s| s.ts <= from);
        self.stacks
            .range(at..)
            .take_while(|s| s.ts <= to)
            .find(|s| s.pid != 0 && s.pid != not)
    }

    /// Whether the kernel lost events (overwritten before they were read)
    /// that may fall in (`from`, `to`): a loss recorded at or after the
    /// last event before `from` (a loss is recorded at the newest event
    /// read before it), and before `to`.
    pub fn lost_in(&self, from: u64, to: u64) -> bool {
        let at = self
            .events
            .partition_point(|e| e.0 < from)
            .saturating_sub(1);
        self.events
            .range(at..)
            .take_while(|e| e.0 < to)
            .any(|e| matches!(e.1, Ev::Lost(_)))
    }

    /// Forget the events before `t` (folded into the base state), but the
    /// newest of them: it tells since when nothing was recorded.
    pub fn trim_before(&mut self, t: u64) {
        while self.events.get(1).is_some_and(|&(ts, _)| ts < t) {
            self.drop_front();
        }
    }

    /// Until when the CPU's trace is known: its newest event, or the last
    /// read that emptied its buffer if later.
    pub fn known_to(&self) -> u64 {
        self.span().map_or(0, |s| s.1).max(self.read_to)
    }

    /// The time of the oldest and the newest event held.
    pub fn span(&self) -> Option<(u64, u64)> {
        Some((self.events.front()?.0, self.events.back()?.0))
    }

    pub fn events(&self) -> impl Iterator<Item = &(u64, Ev)> {
        self.events.iter()
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_and_switches_rebuild_the_state() {
        let mut s = CpuState::default();
        s.apply(Ev::Switch {
            prev: 0,
            prev_prio: 120,
            next: 42,
            next_prio: 9,
        });
        s.apply(Ev::IrqEntry(11));
        s.apply(Ev::SoftirqEntry(3));
        assert_eq!(s.top(), Some(Nest::Softirq(3)));
        // The softirq's exit was lost: leaving the IRQ leaves both.
        s.apply(Ev::IrqExit(11));
        assert_eq!(s.top(), None);
        assert_eq!((s.task, s.prio, s.known), (42, 9, true));
    }

    #[test]
    fn a_ring_is_resident_from_the_start() {
        // 8 MiB of events: resident before the first push (other tests'
        // memory may add to the figure, never take from it).
        let before = crate::sys::mem::rss_anon_kb();
        let r = Ring::new(1 << 18);
        let grown = crate::sys::mem::rss_anon_kb().saturating_sub(before);
        assert!(grown >= 7 * 1024, "{grown} kB resident");
        assert_eq!(r.events().count(), 0);
    }

    #[test]
    fn a_full_ring_folds_its_oldest_events_into_the_base() {
        let mut r = Ring::new(2);
        r.push(1, Ev::Idle(1));
        r.push(2, Ev::IrqEntry(5));
        r.push(3, Ev::Idle(u32::MAX));
        assert!(r.base.idle);
        assert_eq!(r.span(), Some((2, 3)));
        r.trim_before(3);
        assert_eq!(r.span(), Some((2, 3)), "the newest before 3 stays");
        r.trim_before(4);
        assert_eq!(r.base.top(), Some(Nest::Irq(5)));
        assert_eq!(r.span(), Some((3, 3)));
    }

    #[test]
    fn a_switch_the_trace_left_out_is_put_in_from_the_next_events_task() {
        let sw = |prev, next, next_prio| Ev::Switch {
            prev,
            prev_prio: 120,
            next,
            next_prio,
        };
        let prio = |p| if p == 77 { 9 } else { 120 };
        let mut r = Ring::new(16);
        // Before any switch the running task is unknown: nothing is put in.
        r.push_by(1, 5, Ev::IrqEntry(3), prio);
        r.push_by(2, 5, Ev::IrqExit(3), prio);
        r.push_by(10, 0, sw(0, 105, 110), prio);
        // 105's own events (and its switch out) are not recorded; the hog
        // it woke records a timer tick.
        r.push_by(12, 105, Ev::Wakeup { pid: 77, prio: 9 }, prio);
        r.push_by(30, 77, Ev::VectorEntry(236), prio);
        r.push_by(40, 77, sw(77, 0, 120), prio);
        assert_eq!(r.inferred, 1);
        let switches: Vec<(u64, i32, i32)> = r
            .events()
            .filter_map(|&(t, e)| match e {
                Ev::Switch {
                    next, next_prio, ..
                } => Some((t, next, next_prio)),
                _ => None,
            })
            .collect();
        // At the newest event before the hog's first: the wake-up.
        assert_eq!(switches, [(10, 105, 110), (12, 77, 9), (40, 0, 120)]);
        // Lost events carry no task; a ring broken on purpose stays so.
        r.push_by(50, 3, Ev::Lost(4), prio);
        assert_eq!(r.inferred, 1);
        let mut broken = Ring::with_fault(16, Fault::DropSwitches);
        broken.push_by(10, 0, sw(0, 105, 110), prio);
        broken.push_by(30, 77, Ev::VectorEntry(236), prio);
        assert_eq!(broken.inferred, 0);
    }

    #[test]
    fn a_fault_drops_every_other_event_of_its_kind_and_nothing_else() {
        assert_eq!(Fault::named("drop-switches"), Fault::DropSwitches);
        assert_eq!(Fault::named("drop-softirqs"), Fault::DropSoftirqs);
        assert_eq!(Fault::named(""), Fault::None);
        assert_eq!(Fault::named("anything"), Fault::None);
        let sw = |next| Ev::Switch {
            prev: 0,
            prev_prio: 120,
            next,
            next_prio: 120,
        };
        let mut r = Ring::with_fault(16, Fault::DropSwitches);
        assert!(r.is_empty());
        for (t, e) in [
            (1, sw(1)),
            (2, Ev::SoftirqEntry(3)),
            (3, sw(2)),
            (4, sw(3)),
            (5, sw(4)),
        ] {
            r.push(t, e);
        }
        assert!(!r.is_empty());
        let kept: Vec<u64> = r.events().map(|e| e.0).collect();
        assert_eq!(kept, [1, 2, 4]);
        let mut r = Ring::with_fault(16, Fault::DropSoftirqs);
        for t in 0..4 {
            r.push(t, Ev::SoftirqEntry(3));
        }
        r.push(9, sw(1));
        assert_eq!(r.len(), 3);
        let mut r = Ring::with_fault(16, Fault::None);
        for t in 0..4 {
            r.push(t, sw(1));
        }
        assert_eq!(r.len(), 4);
    }
}
