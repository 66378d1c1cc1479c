//! The attribution of one interval [start, end] of a CPU, for the thread
//! `tid` that was waiting through it: the timeline rebuilt from the CPU's
//! ring, every nanosecond of the interval given to exactly one cause, so the
//! parts add up to `end − start`. Knows no benchmark: a timer's wake-up, a
//! switch's wake-up or a packet's arrival are all an interval and a thread.

use super::events::{softirq_name, Decoder, Ev};
use super::timeline::{CpuState, Nest, Ring};
use super::together::{silent_together, Witness};
use crate::result::Part;
use std::collections::HashMap;

/// What one stretch of the interval is given to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Label {
    Irq(i32),
    Softirq(u32),
    Vector(u16),
    Idle,
    /// The CPU idle while the thread, running when its interval began, was
    /// still runnable: the scheduler held it back (RT throttling).
    Throttled,
    /// The waiting thread's own path: switch-in and return to user space.
    Own,
    /// Before the thread's wake-up, when its cause was still on its way
    /// (a packet through the network stack), no IRQ, softirq or real-time
    /// task running: the interval's `pending`.
    Pending,
    Thread(i32, i32),
    /// A less urgent task kept the CPU after the thread was woken.
    PreemptOff(i32),
    /// A task ran and nothing was recorded before the thread's wake-up.
    IrqsOff(i32),
    Nmi,
    Hypervisor,
    /// Idle far longer than any idle state takes to exit: the CPU did not
    /// run (a virtual CPU the host stopped) or nothing recorded it.
    Silent,
    /// Nothing recorded here nor on the other measuring CPUs, whose own
    /// threads were due: none of them ran.
    Together,
    Unexplained,
}

/// A stretch with nothing recorded shorter than this is not taken for the
/// hypervisor's.
const SILENT_NS: u64 = 20_000;

/// The part of an interval whose events were gone before it was explained.
pub const OVERWRITTEN: &str = "trace overwritten";
/// The part of an interval whose events were not read when it had waited
/// long enough: the reader was behind the kernel's buffer.
pub const NOT_READ: &str = "trace not read in time";

/// One interval to explain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    pub start: u64,
    pub end: u64,
    pub tid: i32,
    /// What the thread's own time in it is (`own wake-up path`).
    pub own: &'static str,
    /// Set when the interval starts before the thread's wake-up is due
    /// (a packet arriving, a wake call being made): what the time before
    /// the wake-up that no IRQ, softirq or task took on the CPU was
    /// (`reply on its way to the socket`): a task running here then did not
    /// hold the wake-up back, unless a real-time one (named), which may
    /// deliver it. Unset (a timer, due at the start), anything before the
    /// wake-up delayed it.
    pub pending: Option<&'static str>,
    /// The thread's wake-up (time, kernel priority) when another CPU than
    /// the interval's did it and recorded it (a remote wake-up is traced
    /// on the waker's CPU).
    pub woken_at: Option<(u64, i32)>,
}

/// An idle stretch too long for an idle-state exit, on a virtual machine:
/// the host did not run the CPU, and the steal clock did not count it.
pub const UNACCOUNTED: &str =
    "hypervisor (unaccounted: idle far longer than an idle-state exit takes)";
/// The same on bare metal: nothing ran that the trace recorded.
pub const NO_EVENT: &str = "unexplained (no event: idle far longer than an idle-state exit takes)";

/// The parts of `iv` from `ring`'s events, given `steal_ns` of hypervisor
/// steal the CPU saw around it; largest first, adding up to its length.
pub fn attribute(ring: &Ring, dec: &Decoder, iv: Interval, steal_ns: u64) -> Vec<Part> {
    attribute_heard(ring, dec, iv, steal_ns, (0, &[]))
}

/// [`attribute`] with the other measuring CPUs' traces heard (`witnesses`)
/// for the interval's CPU `cpu`: what none of them recorded while each had
/// a thread due is no task's or handler's
/// ([`super::together::silent_together`]).
pub fn attribute_heard(
    ring: &Ring,
    dec: &Decoder,
    iv: Interval,
    steal_ns: u64,
    (cpu, witnesses): (usize, &[Witness]),
) -> Vec<Part> {
    // The events of the interval were pushed out before it was read (the
    // state the ring holds is of a later time), or the kernel overwrote
    // some of them before they were read (what ran then is unknown), or
    // they were not read yet: past what was read, a CPU's state and its
    // silence are unknown.
    let lost = if ring.full_to.is_some_and(|t| t >= iv.start) || ring.lost_in(iv.start, iv.end) {
        Some(OVERWRITTEN)
    } else {
        (ring.known_to() < iv.end).then_some(NOT_READ)
    };
    if let Some(name) = lost {
        return vec![Part {
            kind: "unexplained".into(),
            name: name.into(),
            ns: iv.end - iv.start,
            stack: Vec::new(),
        }];
    }
    let mut segs = segments(ring, iv);
    let (quiet, mut cpus) = silent_together(ring, (iv.start, iv.end), witnesses, SILENT_NS);
    for &(a, b) in &quiet {
        carve(&mut segs, a, b, Label::Together);
    }
    cpus.push(cpu);
    cpus.sort_unstable();
    cpus.dedup();
    let together = crate::units::format_cpu_list(&cpus);
    carve_steal(&mut segs, steal_ns);
    // A CPU wakes from an idle state once per wake-up: idle time in one
    // interval beyond what an exit may take, in one stretch or several
    // (an IRQ that woke it for something else between), is not exits.
    if let Some(limit) = dec.idle_limit {
        let idle: u64 = segs
            .iter()
            .filter(|s| s.2 == Label::Idle)
            .map(|s| s.1.saturating_sub(s.0))
            .sum();
        if idle > limit.ns {
            for s in segs.iter_mut().filter(|s| s.2 == Label::Idle) {
                s.2 = Label::Silent;
            }
        }
    }
    let mut sums: HashMap<Label, u64> = HashMap::new();
    for &(a, b, l) in &segs {
        if b > a {
            *sums.entry(l).or_default() += b - a;
        }
    }
    // The kernel stack recorded when the thread was woken goes to the
    // longest part of the task it caught on the CPU.
    let stack = ring.stack_in(iv.start, iv.end, iv.tid);
    let holder = stack.and_then(|st| {
        let of_task = sums.iter().filter(|(l, _)| task_of(**l) == Some(st.pid));
        of_task.max_by_key(|&(l, ns)| (*ns, *l)).map(|(l, _)| *l)
    });
    let mut parts: Vec<Part> = sums
        .into_iter()
        .map(|(l, ns)| {
            let (kind, name) = name_of(l, dec, &iv, &together);
            let stack = match stack {
                Some(st) if holder == Some(l) => {
                    st.frames.iter().map(|a| format!("{a:#x}")).collect()
                }
                _ => Vec::new(),
            };
            Part {
                kind: kind.into(),
                name,
                ns,
                stack,
            }
        })
        .collect();
    parts.sort_by(|a, b| {
        b.ns.cmp(&a.ns)
            .then_with(|| a.kind.cmp(&b.kind))
            .then_with(|| a.name.cmp(&b.name))
    });
    parts
}

/// The task a stretch is given to, if a task's.
fn task_of(l: Label) -> Option<i32> {
    match l {
        Label::Thread(pid, _) | Label::PreemptOff(pid) | Label::IrqsOff(pid) => Some(pid),
        _ => None,
    }
}

/// The interval cut at every event into labelled stretches, NMIs carved
/// out of the stretches they interrupted.
fn segments(ring: &Ring, iv: Interval) -> Vec<(u64, u64, Label)> {
    let mut st = ring.base;
    let mut segs = Vec::new();
    let mut nmis = Vec::new();
    let mut cur = iv.start;
    let mut woken: Option<i32> = None;
    // Runnable since before the start rather than woken in the interval.
    let mut running = false;
    // Events before the start only rebuild the state: known from the
    // run's first event on, or after a stretch that was not read, from the
    // first switch on.
    let seen = (ring.whole && ring.span().is_some_and(|(first, _)| first <= iv.start)) || st.known;
    let mut started = false;
    let mut remote = iv
        .woken_at
        .map(|(t, prio)| (t, Ev::Wakeup { pid: iv.tid, prio }));
    let mut local = ring.events().copied().peekable();
    // The ring's events with the remote wake-up in its place.
    let events = std::iter::from_fn(|| match (local.peek(), remote) {
        (Some(&(t, _)), Some((r, _))) if r < t => remote.take(),
        (None, Some(_)) => remote.take(),
        _ => local.next(),
    });
    for (ts, ev) in events {
        if ts <= iv.start {
            st.apply(ev);
            continue;
        }
        if !started {
            started = true;
            // A thread running at the start (a computation) is runnable
            // throughout: whoever takes the CPU from it is preempting it.
            if st.task == iv.tid {
                (woken, running) = (Some(st.prio), true);
            }
        }
        if ts > iv.end {
            break;
        }
        segs.push((cur, ts, label(&st, (woken, running), &iv, seen)));
        match ev {
            Ev::Wakeup { pid, prio } if pid == iv.tid => (woken, running) = (Some(prio), false),
            Ev::Nmi(d) => nmis.push((ts.saturating_sub(d).max(iv.start), ts)),
            _ => {}
        }
        st.apply(ev);
        cur = ts;
    }
    segs.push((cur, iv.end, label(&st, (woken, running), &iv, seen)));
    for (a, b) in nmis {
        carve(&mut segs, a, b, Label::Nmi);
    }
    segs
}

/// `woken`: the thread's priority once runnable, and whether it was
/// running before the interval began rather than woken in it.
fn label(st: &CpuState, (woken, running): (Option<i32>, bool), iv: &Interval, seen: bool) -> Label {
    if !seen && !st.known {
        return Label::Unexplained;
    }
    match st.top() {
        Some(Nest::Irq(n)) => return Label::Irq(n),
        Some(Nest::Softirq(v)) => return Label::Softirq(v),
        Some(Nest::Vector(v)) => return Label::Vector(v),
        None => {}
    }
    if st.task == iv.tid {
        return Label::Own;
    }
    if woken.is_none() && iv.pending.is_some() {
        // A real-time task may be what delivers the wake-up (a threaded
        // IRQ handler, ksoftirqd on PREEMPT_RT) or hold its deliverer off;
        // any other task did not hold the wake-up back, which comes from
        // an IRQ, a softirq, such a task or another CPU.
        return if st.task != 0 && !st.idle && st.prio < 100 {
            Label::Thread(st.task, st.prio)
        } else {
            Label::Pending
        };
    }
    if running && (st.idle || st.task == 0) {
        return Label::Throttled;
    }
    if st.idle || (st.task == 0 && woken.is_none()) {
        return Label::Idle;
    }
    match woken {
        _ if st.task == 0 => Label::Own,
        // A woken thread should have taken the CPU at once; a running one
        // was put aside (RT throttling, a fault it waited on): that task ran.
        Some(p) if p < st.prio && !running => Label::PreemptOff(st.task),
        Some(_) => Label::Thread(st.task, st.prio),
        None => Label::IrqsOff(st.task),
    }
}

/// Give [a, b) to `to`, taking it from the stretches it overlaps.
fn carve(segs: &mut Vec<(u64, u64, Label)>, a: u64, b: u64, to: Label) {
    let mut out = Vec::with_capacity(segs.len() + 2);
    for &(s, e, l) in segs.iter() {
        let (x, y) = (s.max(a), e.min(b));
        if x >= y {
            out.push((s, e, l));
            continue;
        }
        if s < x {
            out.push((s, x, l));
        }
        out.push((x, y, to));
        if y < e {
            out.push((y, e, l));
        }
    }
    *segs = out;
}

/// The hypervisor's steal in `iv` as the scheduler counted it, when the
/// ring has `sched_stat_runtime`: a task's accounted runtime runs on the
/// task clock, which leaves out what the hypervisor stole, so each
/// accounting window (from the task's switch-in or its previous account to
/// this one) falls short of the time it held the CPU by the steal in it —
/// to the nanosecond, where /proc/stat counts 10 ms ticks. The handlers
/// traced in a window are taken off its shortfall (some kernels leave IRQ
/// time out of the task clock too), and short ones (the accounting's own
/// lag) are ignored. A window's steal counts up to its overlap with `iv`.
/// `None` when no window closed over the interval.
pub fn runtime_steal(ring: &Ring, iv: Interval) -> Option<u64> {
    let mut st = ring.base;
    // The current task's window: where it starts, and the handler time in it.
    let mut window: Option<(u64, u64)> = None;
    let mut last: Option<u64> = None;
    let mut stolen: Option<u64> = None;
    for &(ts, ev) in ring.events() {
        if let (Some(p), Some((_, handlers))) = (last, window.as_mut()) {
            if st.top().is_some() {
                *handlers += ts.saturating_sub(p);
            }
        }
        last = Some(ts);
        match ev {
            Ev::Runtime { pid, ns } if st.known && pid == st.task => {
                if let Some((from, handlers)) = window {
                    let overlap = ts.min(iv.end).saturating_sub(from.max(iv.start));
                    let short = ts.saturating_sub(from).saturating_sub(ns + handlers);
                    if overlap > 0 || ts >= iv.end {
                        let s = stolen.get_or_insert(0);
                        if short >= SILENT_NS {
                            *s += short.min(overlap);
                        }
                    }
                }
                window = Some((ts, 0));
            }
            Ev::Switch { .. } => window = Some((ts, 0)),
            Ev::Lost(_) => window = None,
            _ => {}
        }
        st.apply(ev);
        if ts >= iv.end && matches!(ev, Ev::Runtime { .. } | Ev::Switch { .. }) {
            break;
        }
    }
    stolen.map(|s| s.min(iv.end - iv.start))
}

/// The hypervisor's share: up to `steal_ns` from the longest stretches
/// with nothing recorded (a vCPU that is not running records nothing).
fn carve_steal(segs: &mut Vec<(u64, u64, Label)>, mut steal_ns: u64) {
    let mut silent: Vec<(u64, u64)> = segs
        .iter()
        .filter(|&&(s, e, l)| e - s >= SILENT_NS && l != Label::Nmi)
        .map(|&(s, e, _)| (s, e))
        .collect();
    silent.sort_by_key(|&(s, e)| std::cmp::Reverse(e - s));
    for (s, e) in silent {
        if steal_ns == 0 {
            break;
        }
        let take = (e - s).min(steal_ns);
        steal_ns -= take;
        // The stolen time is the silence's end: before it, the task ran.
        carve(segs, e - take, e, Label::Hypervisor);
    }
}

/// `together`: the CPUs silent together ([`Label::Together`]).
fn name_of(l: Label, dec: &Decoder, iv: &Interval, together: &str) -> (&'static str, String) {
    let task = |pid: i32, prio: Option<i32>| {
        let mut s = format!("{} {pid}", dec.comm_of(pid));
        if let Some(p) = prio {
            s.push(' ');
            s.push_str(&policy_of(pid, p));
        }
        s
    };
    match l {
        Label::Irq(n) => (
            "irq",
            dec.irqs
                .get(&n)
                .cloned()
                .unwrap_or_else(|| format!("irq {n}")),
        ),
        Label::Softirq(v) => ("softirq", softirq_name(v)),
        Label::Vector(v) => (
            "vector",
            dec.vectors.get(v as usize).cloned().unwrap_or_default(),
        ),
        Label::Idle => ("idle", "idle-state exit".into()),
        Label::Throttled => ("throttled", "RT throttling (runnable, its CPU idle)".into()),
        Label::Own => ("self", iv.own.into()),
        Label::Pending => ("self", iv.pending.unwrap_or_default().into()),
        Label::Thread(pid, p) => ("thread", task(pid, Some(p))),
        Label::PreemptOff(pid) => ("preempt-off", task(pid, None)),
        Label::IrqsOff(pid) => ("irqs-off", task(pid, None)),
        Label::Nmi => ("nmi", "NMI".into()),
        Label::Hypervisor => ("hypervisor", "hypervisor".into()),
        Label::Silent => match dec.idle_limit.is_some_and(|l| l.virtualized) {
            true => ("hypervisor", UNACCOUNTED.into()),
            false => ("unexplained", NO_EVENT.into()),
        },
        Label::Together => match dec.idle_limit.is_some_and(|l| l.virtualized) {
            true => (
                "hypervisor",
                format!("hypervisor (unaccounted: CPUs {together} silent together)"),
            ),
            false => (
                "unexplained",
                format!("unexplained (no event: CPUs {together} silent together)"),
            ),
        },
        Label::Unexplained => ("unexplained", "unexplained".into()),
    }
}

/// The scheduling policy in a `/proc/PID/stat` line (its 41st field, after
/// the comm in parentheses, which may hold spaces and parentheses).
fn policy_in_stat(stat: &str) -> Option<u32> {
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    rest.split_whitespace().nth(38)?.parse().ok()
}

/// A real-time policy's name (`RT` when the task is gone).
fn policy_name(policy: Option<u32>) -> &'static str {
    match policy {
        Some(1) => "FIFO",
        Some(2) => "RR",
        _ => "RT",
    }
}

/// `FIFO 90`, `RR 5`, `DEADLINE`, `nice 0` from the kernel priority, the
/// policy from /proc when the task still lives.
pub fn policy_of(pid: i32, prio: i32) -> String {
    if prio < 0 {
        return "DEADLINE".into();
    }
    if prio >= 100 {
        return format!("nice {}", prio - 120);
    }
    let policy = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| policy_in_stat(&s));
    format!("{} {}", policy_name(policy), 99 - prio)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A ring of `evs`, its CPU's trace read to the end of time.
    pub(in crate::explain) fn ring(evs: &[(u64, Ev)]) -> Ring {
        let mut r = Ring::new(256);
        for &(t, e) in evs {
            r.push(t, e);
        }
        r.read_to = u64::MAX;
        r
    }

    /// A switch to `next` at kernel priority `next_prio`.
    pub(in crate::explain) fn sw(next: i32, next_prio: i32) -> Ev {
        Ev::Switch {
            prev: 0,
            prev_prio: 0,
            next,
            next_prio,
        }
    }

    #[test]
    fn a_higher_priority_thread_is_the_culprit_and_parts_add_up() {
        let mut dec = Decoder::default();
        dec.comms.insert(77, "hog".into());
        dec.irqs.insert(9, "virtio0-input".into());
        dec.vectors.push("local_timer".into());
        let r = ring(&[
            (50, sw(77, 9)),
            (1_010, Ev::VectorEntry(0)),
            (1_020, Ev::Wakeup { pid: 5, prio: 19 }),
            (1_030, Ev::VectorExit(0)),
            (1_500, Ev::IrqEntry(9)),
            (1_600, Ev::IrqExit(9)),
            (2_000_000, Ev::Nmi(100)),
            (2_500_000, sw(5, 19)),
        ]);
        let iv = Interval {
            start: 1_000,
            end: 2_500_400,
            tid: 5,
            own: "own wake-up path",
            pending: None,
            woken_at: None,
        };
        let parts = attribute(&r, &dec, iv, 0);
        let sum: u64 = parts.iter().map(|p| p.ns).sum();
        assert_eq!(sum, iv.end - iv.start);
        assert_eq!(parts[0].kind, "thread");
        assert!(parts[0].name.starts_with("hog 77 "), "{:?}", parts[0]);
        let get = |k: &str| parts.iter().find(|p| p.kind == k).map(|p| p.ns);
        assert_eq!(get("irq"), Some(100));
        assert_eq!(get("vector"), Some(20));
        assert_eq!(get("nmi"), Some(100));
        assert_eq!(get("irqs-off"), Some(10));
        assert_eq!(get("self"), Some(400));
    }

    #[test]
    fn a_stack_goes_to_the_part_of_the_task_it_was_recorded_in() {
        let mut dec = Decoder::default();
        dec.comms.insert(88, "python3".into());
        dec.vectors.push("local_timer".into());
        let mut r = ring(&[
            (0, sw(88, 120)),
            (1_000, Ev::VectorEntry(0)),
            (1_010, Ev::Wakeup { pid: 5, prio: 19 }),
            (1_100, Ev::VectorExit(0)),
            (5_000_000, sw(5, 19)),
        ]);
        // Before the interval, in it (the wake-up's, of task 88; one of
        // the measuring thread itself), after it.
        r.push_stack(500, 88, &[0x10]);
        r.push_stack(1_020, 5, &[0x20]);
        r.push_stack(1_030, 88, &[0xffff_ffff_8100_0040, 0x41]);
        r.push_stack(5_000_500, 88, &[0x50]);
        let iv = Interval {
            start: 900,
            end: 5_000_400,
            tid: 5,
            own: "own wake-up path",
            pending: None,
            woken_at: None,
        };
        let parts = attribute(&r, &dec, iv, 0);
        assert_eq!(parts[0].kind, "preempt-off");
        assert_eq!(parts[0].stack, ["0xffffffff81000040", "0x41"]);
        assert!(parts[1..].iter().all(|p| p.stack.is_empty()), "{parts:?}");
        // A stack of a task that has no part in the interval goes nowhere.
        let mut other = ring(&[(0, sw(88, 120)), (5_000_000, sw(5, 19))]);
        other.push_stack(1_030, 77, &[0x10]);
        let parts = attribute(&other, &dec, iv, 0);
        assert!(parts.iter().all(|p| p.stack.is_empty()), "{parts:?}");
    }

    #[test]
    fn steal_takes_the_silence_and_a_less_urgent_task_is_preemption_off() {
        let dec = Decoder::default();
        let r = ring(&[
            (0, sw(88, 120)),
            (1_000, Ev::Wakeup { pid: 5, prio: 19 }),
            (5_000_000, sw(5, 19)),
        ]);
        let iv = Interval {
            start: 900,
            end: 5_000_900,
            tid: 5,
            own: "own wake-up path",
            pending: None,
            woken_at: None,
        };
        let parts = attribute(&r, &dec, iv, 3_000_000);
        assert_eq!(parts[0].kind, "hypervisor");
        assert_eq!(parts[0].ns, 3_000_000);
        assert_eq!(parts[1].kind, "preempt-off");
        assert_eq!(parts.iter().map(|p| p.ns).sum::<u64>(), 5_000_000);
    }

    #[test]
    fn a_running_thread_preempted_by_a_more_urgent_one_names_it() {
        let mut dec = Decoder::default();
        dec.comms.insert(77, "hog".into());
        let r = ring(&[
            (0, sw(5, 19)),
            (1_000, sw(77, 9)),
            (3_000, sw(5, 19)),
            (3_500, sw(88, 120)),
        ]);
        let iv = Interval {
            start: 500,
            end: 5_000,
            tid: 5,
            own: "own wake-up path",
            pending: None,
            woken_at: None,
        };
        dec.comms.insert(88, "make".into());
        let parts = attribute(&r, &dec, iv, 0);
        assert_eq!(parts[0].kind, "thread");
        assert_eq!(parts[0].ns, 2_000);
        // Put aside while running (RT throttling, a fault it waited on), not
        // woken late: the less urgent task that ran is named as a thread.
        assert_eq!(parts[1].kind, "thread");
        assert_eq!(
            (parts[1].name.as_str(), parts[1].ns),
            ("make 88 nice 0", 1_500)
        );
        assert_eq!(parts[2].kind, "self");
        assert_eq!(parts[2].ns, 1_000);
    }

    #[test]
    fn a_running_thread_left_runnable_on_an_idle_cpu_is_throttled() {
        let r = ring(&[(0, sw(5, 19)), (1_000, sw(0, 120)), (3_000, sw(5, 19))]);
        let iv = Interval {
            start: 500,
            end: 4_000,
            tid: 5,
            own: "own loop",
            pending: None,
            woken_at: None,
        };
        let parts = attribute(&r, &Decoder::default(), iv, 0);
        assert_eq!((parts[0].kind.as_str(), parts[0].ns), ("throttled", 2_000));
        assert_eq!((parts[1].kind.as_str(), parts[1].ns), ("self", 1_500));
    }

    #[test]
    fn the_task_clock_shortfall_is_the_steal_to_the_nanosecond() {
        let mut dec = Decoder::default();
        dec.comms.insert(7, "qemu".into());
        dec.vectors.push("local_timer".into());
        // Task 7 holds the CPU from 1 us; the timer due at 2 ms fires at
        // 9 ms, and the tick in it accounts 7's 5 ms of task clock for the
        // 9.009 ms it held the CPU (10 us of it in the handler).
        let r = ring(&[
            (1_000, sw(7, 120)),
            (9_000_000, Ev::VectorEntry(0)),
            (
                9_010_000,
                Ev::Runtime {
                    pid: 7,
                    ns: 4_999_000,
                },
            ),
            (9_020_000, Ev::Wakeup { pid: 5, prio: 19 }),
            (9_030_000, Ev::VectorExit(0)),
            (9_040_000, Ev::Runtime { pid: 7, ns: 10_000 }),
            (9_040_000, sw(5, 19)),
        ]);
        let iv = Interval {
            start: 2_000_000,
            end: 9_050_000,
            tid: 5,
            own: "own wake-up path",
            pending: None,
            woken_at: None,
        };
        assert_eq!(runtime_steal(&r, iv), Some(4_000_000));
        let parts = attribute(&r, &dec, iv, 4_000_000);
        assert_eq!(
            (parts[0].kind.as_str(), parts[0].ns),
            ("hypervisor", 4_000_000)
        );
        assert_eq!(
            (parts[1].kind.as_str(), parts[1].ns),
            ("irqs-off", 3_000_000)
        );
        assert_eq!(parts.iter().map(|p| p.ns).sum::<u64>(), 7_050_000);
        // An accounting lag below 20 us is not steal; an interval after the
        // last account, or a ring without them, says nothing.
        let r = ring(&[
            (1_000, sw(7, 120)),
            (
                4_000_000,
                Ev::Runtime {
                    pid: 7,
                    ns: 3_990_000,
                },
            ),
            (4_000_000, sw(5, 19)),
        ]);
        let at = |start, end| Interval {
            start,
            end,
            tid: 5,
            own: "own wake-up path",
            pending: None,
            woken_at: None,
        };
        assert_eq!(runtime_steal(&r, at(1_000_000, 4_000_500)), Some(0));
        assert_eq!(runtime_steal(&r, at(5_000_000, 6_000_000)), None);
        let r = ring(&[(1_000, sw(7, 120)), (4_000_000, sw(5, 19))]);
        assert_eq!(runtime_steal(&r, at(1_000_000, 4_000_500)), None);
    }

    #[test]
    fn an_interval_before_what_the_ring_saw_is_unexplained() {
        let r = ring(&[(10_000, sw(5, 19))]);
        let parts = attribute(
            &r,
            &Decoder::default(),
            Interval {
                start: 100,
                end: 10_100,
                tid: 5,
                own: "own wake-up path",
                pending: None,
                woken_at: None,
            },
            0,
        );
        assert_eq!(parts[0].kind, "unexplained");
        assert_eq!(parts[0].ns, 9_900);
    }

    #[test]
    fn before_a_pending_wake_up_only_irqs_and_softirqs_are_named() {
        let mut dec = Decoder::default();
        dec.comms.insert(88, "other".into());
        let r = ring(&[
            (0, sw(88, 120)),
            (2_000, Ev::SoftirqEntry(3)),
            (2_500, Ev::Wakeup { pid: 5, prio: 19 }),
            (2_600, Ev::SoftirqExit(3)),
            (3_600, sw(5, 19)),
        ]);
        let iv = Interval {
            start: 1_000,
            end: 4_000,
            tid: 5,
            own: "own receive path",
            pending: Some("reply on its way"),
            woken_at: None,
        };
        let parts = attribute(&r, &dec, iv, 0);
        let get = |n: &str| parts.iter().find(|p| p.name == n).map(|p| p.ns);
        // The (SCHED_OTHER) task that ran before the wake-up did not hold it back.
        assert_eq!(get("reply on its way"), Some(1_000));
        assert_eq!(get("NET_RX"), Some(600));
        assert_eq!(get("other 88"), Some(1_000));
        assert_eq!(get("own receive path"), Some(400));
        assert_eq!(parts.iter().map(|p| p.ns).sum::<u64>(), 3_000);
        // Without `pending`, the same task is an interrupts-off section.
        let strict = attribute(
            &r,
            &dec,
            Interval {
                pending: None,
                woken_at: None,
                ..iv
            },
            0,
        );
        assert!(strict.iter().any(|p| p.kind == "irqs-off" && p.ns == 1_000));
    }

    #[test]
    fn a_wake_up_recorded_on_another_cpu_starts_the_delay() {
        let mut dec = Decoder::default();
        dec.comms.insert(88, "other".into());
        let r = ring(&[(0, sw(88, 120)), (3_000, sw(5, 19))]);
        let iv = Interval {
            start: 500,
            end: 3_200,
            tid: 5,
            own: "own receive path",
            pending: Some("reply on its way"),
            woken_at: Some((1_500, 19)),
        };
        let parts = attribute(&r, &dec, iv, 0);
        let get = |k: &str| {
            parts
                .iter()
                .find(|p| p.kind == k || p.name == k)
                .map(|p| p.ns)
        };
        // Woken at 1 500, the thread waited for a task that kept the CPU.
        assert_eq!(get("preempt-off"), Some(1_500));
        assert_eq!(get("reply on its way"), Some(1_000));
        assert_eq!(get("own receive path"), Some(200));
        // Unseen, the wake-up would leave that time to the reply.
        let blind = attribute(
            &r,
            &dec,
            Interval {
                woken_at: None,
                ..iv
            },
            0,
        );
        assert_eq!(blind[0].name, "reply on its way");
        assert_eq!(blind[0].ns, 2_500);
    }

    #[test]
    fn a_real_time_task_before_a_pending_wake_up_is_named() {
        let mut dec = Decoder::default();
        dec.comms.insert(26, "irq/26-gpio".into());
        // The line's threaded handler runs, then wakes the reader.
        let r = ring(&[
            (0, sw(88, 120)),
            (1_000, sw(26, 49)),
            (2_000, Ev::Wakeup { pid: 5, prio: 79 }),
            (2_100, sw(5, 79)),
        ]);
        let iv = Interval {
            start: 500,
            end: 2_300,
            tid: 5,
            own: "own wake-up path",
            pending: Some("edge on its way"),
            woken_at: None,
        };
        let parts = attribute(&r, &dec, iv, 0);
        let get = |n: &str| parts.iter().find(|p| p.name.starts_with(n)).map(|p| p.ns);
        assert_eq!(get("irq/26-gpio 26"), Some(1_100));
        assert_eq!(get("edge on its way"), Some(500));
        assert_eq!(get("own wake-up path"), Some(200));
    }

    #[test]
    fn after_a_stretch_not_read_the_task_is_unknown_until_a_switch() {
        let dec = Decoder::default();
        let iv = Interval {
            start: 1_000,
            end: 5_000,
            tid: 5,
            own: "own wake-up path",
            pending: None,
            woken_at: None,
        };
        let events = [
            (500, Ev::Wakeup { pid: 5, prio: 19 }),
            (3_000, sw(88, 120)),
            (4_000, sw(5, 19)),
        ];
        // Read from the run's start: the CPU was idle (task 0) before the
        // first switch, and the thread was its own way until it ran.
        let whole = attribute(&ring(&events), &dec, iv, 0);
        assert!(whole.iter().all(|p| p.kind != "unexplained"), "{whole:?}");
        // The same events after pages that were skipped: who ran before
        // the switch at 3 us is not known.
        let mut r = Ring::new(64);
        r.push(10, sw(77, 9));
        r.forget();
        for &(t, e) in &events {
            r.push(t, e);
        }
        r.read_to = u64::MAX;
        let parts = attribute(&r, &dec, iv, 0);
        let unexplained: u64 = parts
            .iter()
            .filter(|p| p.kind == "unexplained")
            .map(|p| p.ns)
            .sum();
        assert_eq!(unexplained, 2_000, "{parts:?}");
        assert!(parts.iter().all(|p| !p.name.contains("77")), "{parts:?}");
        assert_eq!(parts.iter().map(|p| p.ns).sum::<u64>(), 4_000);
    }

    fn iv(start: u64, end: u64) -> Interval {
        Interval {
            start,
            end,
            tid: 5,
            own: "own wake-up path",
            pending: None,
            woken_at: None,
        }
    }

    /// The ns of the parts of `kind`.
    fn of(parts: &[Part], kind: &str) -> u64 {
        parts.iter().filter(|p| p.kind == kind).map(|p| p.ns).sum()
    }

    #[test]
    fn a_wake_up_traced_elsewhere_takes_its_place_among_the_events() {
        let mut dec = Decoder::default();
        dec.irqs.insert(9, "eth0".into());
        let r = ring(&[
            (0, sw(88, 120)),
            (1_500, Ev::IrqEntry(9)),
            (1_600, Ev::IrqExit(9)),
            (3_000, sw(5, 19)),
        ]);
        let iv = Interval {
            pending: Some("the waker's wake call"),
            woken_at: Some((2_000, 19)),
            ..iv(1_000, 3_000)
        };
        let parts = attribute(&r, &dec, iv, 0);
        assert_eq!(of(&parts, "irq"), 100, "{parts:?}");
        assert_eq!(of(&parts, "preempt-off"), 1_000, "{parts:?}");
        assert_eq!(of(&parts, "self"), 900, "{parts:?}");
    }

    #[test]
    fn only_the_threads_own_wake_up_counts() {
        let r = ring(&[
            (0, sw(88, 120)),
            (1_500, Ev::Wakeup { pid: 77, prio: 9 }),
            (2_000, Ev::Wakeup { pid: 5, prio: 19 }),
            (3_000, sw(5, 19)),
        ]);
        let parts = attribute(&r, &Decoder::default(), iv(1_000, 3_000), 0);
        assert_eq!(of(&parts, "irqs-off"), 1_000, "{parts:?}");
        assert_eq!(of(&parts, "preempt-off"), 1_000, "{parts:?}");
    }

    #[test]
    fn a_task_that_ran_throughout_with_nothing_recorded_held_interrupts_off() {
        let r = ring(&[(0, sw(88, 120))]);
        let parts = attribute(&r, &Decoder::default(), iv(1_000, 2_000), 0);
        assert_eq!(of(&parts, "irqs-off"), 1_000, "{parts:?}");
    }

    #[test]
    fn a_task_as_urgent_as_the_woken_thread_ran_in_its_turn() {
        let r = ring(&[
            (0, sw(88, 19)),
            (1_500, Ev::Wakeup { pid: 5, prio: 19 }),
            (2_500, sw(5, 19)),
        ]);
        let parts = attribute(&r, &Decoder::default(), iv(1_000, 2_500), 0);
        assert_eq!(of(&parts, "thread"), 1_000, "{parts:?}");
        assert_eq!(of(&parts, "preempt-off"), 0, "{parts:?}");
    }

    #[test]
    fn an_nmi_inside_a_stretch_leaves_the_rest_of_it() {
        let r = ring(&[(0, sw(88, 120)), (2_000, Ev::Nmi(100)), (3_000, sw(5, 19))]);
        let parts = attribute(&r, &Decoder::default(), iv(1_000, 3_000), 0);
        assert_eq!(of(&parts, "nmi"), 100, "{parts:?}");
        assert_eq!(of(&parts, "irqs-off"), 1_900, "{parts:?}");
        assert_eq!(parts.iter().map(|p| p.ns).sum::<u64>(), 2_000);
    }

    #[test]
    fn steal_is_carved_once_from_the_longest_silences() {
        let mut dec = Decoder::default();
        dec.irqs.insert(9, "eth0".into());
        let r = ring(&[
            (0, sw(88, 120)),
            (1_000, Ev::Wakeup { pid: 5, prio: 19 }),
            (3_000_000, Ev::IrqEntry(9)),
            (3_010_000, Ev::IrqExit(9)),
            (6_000_000, sw(5, 19)),
        ]);
        let parts = attribute(&r, &dec, iv(900, 6_000_000), 1_000_000);
        assert_eq!(of(&parts, "hypervisor"), 1_000_000, "{parts:?}");
        assert_eq!(parts.iter().map(|p| p.ns).sum::<u64>(), 5_999_100);
    }

    #[test]
    fn runtime_accounts_of_other_tasks_or_across_lost_events_say_nothing() {
        // An account of another task than the one running.
        let r = ring(&[
            (1_000, sw(7, 120)),
            (5_000_000, Ev::Runtime { pid: 8, ns: 100 }),
            (5_100_000, sw(5, 19)),
        ]);
        assert_eq!(runtime_steal(&r, iv(2_000, 5_000_000)), None);
        // Events lost inside the window: its start is unknown.
        let r = ring(&[
            (1_000, sw(7, 120)),
            (2_000, Ev::Lost(5)),
            (
                9_000_000,
                Ev::Runtime {
                    pid: 7,
                    ns: 1_000_000,
                },
            ),
        ]);
        assert_eq!(runtime_steal(&r, iv(1_500, 9_000_000)), None);
    }

    #[test]
    fn the_policy_is_read_after_the_comm_whatever_it_holds() {
        let fields: Vec<String> = (0..38).map(|i| i.to_string()).collect();
        let line =
            |comm: &str, policy: u32| format!("42 ({comm}) {} {policy} 0 0", fields.join(" "));
        assert_eq!(policy_in_stat(&line("hog", 1)), Some(1));
        assert_eq!(policy_in_stat(&line("a) (b", 2)), Some(2));
        assert_eq!(policy_in_stat("42 (hog)"), None);
        // No such task: the priority alone.
        assert_eq!(policy_of(-1, 0), "RT 99");
        assert_eq!(policy_of(-1, -1), "DEADLINE");
        assert_eq!(policy_of(-1, 120), "nice 0");
    }

    #[test]
    fn an_interval_whose_events_a_full_ring_pushed_out_is_not_guessed() {
        let mut r = Ring::new(4);
        for (t, e) in [
            (0, sw(88, 120)),
            (1_500, sw(77, 9)),
            (2_500, sw(88, 120)),
            (3_000, Ev::Wakeup { pid: 5, prio: 19 }),
            (4_000, sw(5, 19)),
        ] {
            r.push(t, e);
        }
        // Room for 4: the switch at 0 went, before the interval began.
        let parts = attribute(&r, &Decoder::default(), iv(1_000, 4_000), 0);
        assert!(parts.iter().all(|p| p.kind != "unexplained"), "{parts:?}");
        r.push(5_000, sw(88, 120));
        // The switch at 1.5 us went too: the interval from 1 us lost it.
        let parts = attribute(&r, &Decoder::default(), iv(1_000, 4_000), 0);
        assert_eq!(parts.len(), 1, "{parts:?}");
        assert_eq!((parts[0].name.as_str(), parts[0].ns), (OVERWRITTEN, 3_000));
        // A later interval is whole.
        let parts = attribute(&r, &Decoder::default(), iv(3_500, 4_000), 0);
        assert!(parts.iter().all(|p| p.kind != "unexplained"), "{parts:?}");
    }

    #[test]
    fn an_interval_the_kernel_lost_events_of_is_not_guessed() {
        // The thread itself seen last; the hog's switch in was lost.
        let r = ring(&[
            (0, sw(5, 19)),
            (1_000, Ev::Lost(40)),
            (4_000, Ev::Wakeup { pid: 5, prio: 19 }),
            (5_000, sw(5, 19)),
        ]);
        let parts = attribute(&r, &Decoder::default(), iv(2_000, 5_000), 0);
        assert_eq!(parts.len(), 1, "{parts:?}");
        assert_eq!((parts[0].name.as_str(), parts[0].ns), (OVERWRITTEN, 3_000));
        // Lost before the interval's last event before it: whole.
        let r = ring(&[
            (0, Ev::Lost(40)),
            (1_000, sw(88, 120)),
            (4_000, Ev::Wakeup { pid: 5, prio: 19 }),
            (5_000, sw(5, 19)),
        ]);
        let parts = attribute(&r, &Decoder::default(), iv(2_000, 5_000), 0);
        assert!(parts.iter().all(|p| p.kind != "unexplained"), "{parts:?}");
    }

    #[test]
    fn an_interval_past_what_was_read_is_not_guessed() {
        // A softirq was running at the newest event read; the interval
        // ends after it.
        let mut r = Ring::new(16);
        for (t, e) in [
            (0, sw(88, 120)),
            (1_500, Ev::SoftirqEntry(3)),
            (2_000, Ev::SoftirqExit(3)),
            (2_500, Ev::SoftirqEntry(3)),
        ] {
            r.push(t, e);
        }
        r.read_to = 2_800;
        let dec = Decoder::default();
        let parts = attribute(&r, &dec, iv(1_000, 4_000), 0);
        assert_eq!(parts.len(), 1, "{parts:?}");
        assert_eq!((parts[0].name.as_str(), parts[0].ns), (NOT_READ, 3_000));
        // Read past its end with nothing more recorded: the softirq ran on.
        r.read_to = 4_000;
        let parts = attribute(&r, &dec, iv(1_000, 4_000), 0);
        let net_rx: u64 = parts
            .iter()
            .filter(|p| p.name == "NET_RX")
            .map(|p| p.ns)
            .sum();
        assert_eq!(net_rx, 2_000, "{parts:?}");
    }

    #[test]
    fn a_wake_up_traced_elsewhere_after_the_last_event_still_counts() {
        let r = ring(&[(0, sw(88, 120))]);
        let iv = Interval {
            pending: Some("the waker's wake call"),
            woken_at: Some((1_500, 19)),
            ..iv(1_000, 2_000)
        };
        let parts = attribute(&r, &Decoder::default(), iv, 0);
        assert_eq!(of(&parts, "preempt-off"), 500, "{parts:?}");
        assert_eq!(of(&parts, "self"), 500, "{parts:?}");
    }

    #[test]
    fn events_after_the_interval_do_not_stretch_it() {
        let r = ring(&[(0, sw(88, 120)), (2_500, sw(5, 19)), (5_000, sw(88, 120))]);
        let parts = attribute(&r, &Decoder::default(), iv(1_000, 3_000), 0);
        assert_eq!(parts.iter().map(|p| p.ns).sum::<u64>(), 2_000, "{parts:?}");
        assert_eq!(of(&parts, "irqs-off"), 1_500, "{parts:?}");
    }

    #[test]
    fn the_idle_task_is_idle_until_the_thread_is_woken_then_its_own_way() {
        let r = ring(&[
            (0, sw(0, 120)),
            (1_500, Ev::Wakeup { pid: 5, prio: 19 }),
            (2_500, sw(5, 19)),
        ]);
        let parts = attribute(&r, &Decoder::default(), iv(1_000, 2_500), 0);
        assert_eq!(of(&parts, "idle"), 500, "{parts:?}");
        assert_eq!(of(&parts, "self"), 1_000, "{parts:?}");
        assert_eq!(of(&parts, "preempt-off"), 0, "{parts:?}");
    }

    #[test]
    fn an_idle_exit_longer_than_any_idle_state_takes_is_the_hosts() {
        let r = ring(&[
            (0, sw(0, 120)),
            (12_000_000, Ev::Wakeup { pid: 5, prio: 19 }),
            (12_010_000, sw(5, 19)),
        ]);
        let long = || iv(1_000, 12_010_000);
        let parts = attribute(&r, &Decoder::default(), long(), 0);
        assert_eq!(of(&parts, "idle"), 11_999_000, "no limit known: {parts:?}");
        let mut dec = Decoder::default();
        dec.idle_limit = Some(crate::explain::events::IdleLimit {
            ns: 1_000_000,
            virtualized: true,
        });
        let parts = attribute(&r, &dec, long(), 0);
        assert_eq!(of(&parts, "idle"), 0, "{parts:?}");
        assert_eq!(of(&parts, "hypervisor"), 11_999_000, "{parts:?}");
        assert!(parts.iter().any(|p| p.name == UNACCOUNTED), "{parts:?}");
        dec.idle_limit = dec.idle_limit.map(|l| crate::explain::events::IdleLimit {
            virtualized: false,
            ..l
        });
        let parts = attribute(&r, &dec, long(), 0);
        assert_eq!(
            of(&parts, "unexplained"),
            11_999_000,
            "bare metal: {parts:?}"
        );
        // A short idle exit stays one.
        let short = ring(&[
            (0, sw(0, 120)),
            (1_500, Ev::Wakeup { pid: 5, prio: 19 }),
            (2_500, sw(5, 19)),
        ]);
        let parts = attribute(&short, &dec, iv(1_000, 2_500), 0);
        assert_eq!(of(&parts, "idle"), 500, "{parts:?}");
        // Two idle stretches, each shorter than the limit, longer together,
        // with an IRQ between them.
        let twice = ring(&[
            (0, sw(0, 120)),
            (700_000, Ev::IrqEntry(9)),
            (710_000, Ev::IrqExit(9)),
            (1_300_000, Ev::Wakeup { pid: 5, prio: 19 }),
            (1_310_000, sw(5, 19)),
        ]);
        let parts = attribute(&twice, &dec, iv(100_000, 1_310_000), 0);
        assert_eq!(of(&parts, "idle"), 0, "{parts:?}");
        assert_eq!(of(&parts, "unexplained"), 1_190_000, "{parts:?}");
    }

    #[test]
    fn runtime_accounts_before_any_switch_say_nothing() {
        let r = ring(&[
            (1_000, Ev::Runtime { pid: 7, ns: 100 }),
            (9_000_000, Ev::Runtime { pid: 7, ns: 100 }),
        ]);
        assert_eq!(runtime_steal(&r, iv(2_000, 9_000_000)), None);
    }

    #[test]
    fn steal_goes_to_the_longest_silence_and_no_further_than_silences() {
        let mut dec = Decoder::default();
        dec.irqs.insert(9, "eth0".into());
        // 4 ms before the wake-up (interrupts off), 2 ms after it
        // (preemption off), a 10 us IRQ between: too short to be silent.
        let r = ring(&[
            (0, sw(88, 120)),
            (4_000_000, Ev::IrqEntry(9)),
            (4_010_000, Ev::IrqExit(9)),
            (4_010_000, Ev::Wakeup { pid: 5, prio: 19 }),
            (6_010_000, sw(5, 19)),
        ]);
        let parts = attribute(&r, &dec, iv(0, 6_010_000), 1_000_000);
        assert_eq!(of(&parts, "irqs-off"), 3_000_000, "{parts:?}");
        assert_eq!(of(&parts, "preempt-off"), 2_000_000, "{parts:?}");
        // More steal than silence: the silences only, never the IRQ.
        let parts = attribute(&r, &dec, iv(0, 6_010_000), 9_000_000);
        assert_eq!(of(&parts, "hypervisor"), 6_000_000, "{parts:?}");
        assert_eq!(of(&parts, "irq"), 10_000, "{parts:?}");
    }

    #[test]
    fn real_time_policies_are_named() {
        assert_eq!(policy_name(Some(1)), "FIFO");
        assert_eq!(policy_name(Some(2)), "RR");
        assert_eq!(policy_name(Some(0)), "RT");
        assert_eq!(policy_name(None), "RT");
    }

    #[test]
    fn handlers_nest_eight_deep_and_no_deeper() {
        let mut st = CpuState::default();
        for n in 0..10 {
            st.apply(Ev::IrqEntry(n));
        }
        assert_eq!(st.top(), Some(crate::explain::timeline::Nest::Irq(7)));
        st.apply(Ev::IrqExit(7));
        assert_eq!(st.top(), Some(crate::explain::timeline::Nest::Irq(6)));
    }

    #[test]
    fn events_at_the_same_time_make_no_part_of_no_length() {
        let mut dec = Decoder::default();
        dec.irqs.insert(9, "eth0".into());
        let r = ring(&[
            (0, sw(88, 120)),
            (1_500, Ev::IrqEntry(9)),
            (1_500, Ev::IrqExit(9)),
            (2_000, sw(5, 19)),
        ]);
        let parts = attribute(&r, &dec, iv(1_000, 2_000), 0);
        assert!(parts.iter().all(|p| p.ns > 0), "{parts:?}");
        assert_eq!(of(&parts, "irqs-off"), 1_000, "{parts:?}");
    }

    #[test]
    fn before_a_pending_wake_up_only_a_real_time_task_is_named() {
        let pending = |prio| {
            let r = ring(&[(0, sw(88, prio)), (2_000, sw(5, 19))]);
            let iv = Interval {
                pending: Some("reply on its way to the socket"),
                ..iv(1_000, 2_000)
            };
            attribute(&r, &Decoder::default(), iv, 0)
        };
        // Kernel priority 99 is FIFO 0; 100 is nice -20, not real-time.
        assert_eq!(of(&pending(99), "thread"), 1_000);
        assert_eq!(of(&pending(100), "self"), 1_000);
    }

    #[test]
    fn carving_the_middle_of_a_stretch_keeps_both_ends() {
        let mut segs = vec![(0, 100, Label::Idle), (100, 200, Label::Own)];
        carve(&mut segs, 20, 50, Label::Nmi);
        assert_eq!(
            segs,
            [
                (0, 20, Label::Idle),
                (20, 50, Label::Nmi),
                (50, 100, Label::Idle),
                (100, 200, Label::Own)
            ]
        );
    }
}
