//! A watch's tracing and its reader: rtlat's own tracefs instance
//! recording the five events (filtered in the kernel to the selection
//! where it can), the reader thread (a [`Tracer`]) that decodes every
//! CPU's pages in time order and follows the threads, their series, and
//! what it writes into the result.

use super::events::{self, comm_text, Happening, Tracked, WatchLayout, EVENTS};
use super::follow::{Figures, Follow, Quantity};
use super::select::Candidate;
use super::{WatchConfig, PARTS, RESERVE};
use crate::engine::channel::{LateName, MaxBy};
use crate::engine::{Channel, RunSpec, StopFlag};
use crate::error::{Error, Outcome, Result};
use crate::explain::attribute::policy_of;
use crate::explain::setup::Explain;
use crate::result::details::watch::{Preemptor, WatchDetails, WatchFigures, WatchedThread};
use crate::result::details::Details;
use crate::result::explained::{Explained, Part};
use crate::result::{Benchmark, BreakEvent, RunResult};
use crate::stats::recorder::{self, Recorder};
use crate::stats::tap::Tap;
use crate::sys::clock::Clock;
use crate::sys::sched::{self, Sched};
use crate::sys::tracefs::Capabilities;
use crate::trace::instance::{self, tracefs_error};
use crate::trace::tracefs::{self, RawPipes, Session};
use crate::trace::{Finish, Round, Tracer, Tracing};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long after the end the reader waits for the last pages.
const GRACE_NS: u64 = 100_000_000;
/// The most it reads after the end, however busy the trace.
const LAST_READS_NS: u64 = 2_000_000_000;
/// The most tasks kept per thread as preempting it mid-activation.
const INTERFERERS: usize = 8;
/// The thread's own time in a wake-up explained.
const OWN: &str = "own wake-up path";
/// Wake-ups handed to explain's reader per CPU between two of its rounds:
/// only those that enter a thread's worst are.
const TAP_ROOM: usize = 1024;

/// Watch the threads `cfg` selects until the run ends.
pub fn run(cfg: &WatchConfig, command_line: Vec<String>) -> Result<Outcome> {
    // A bad --pid is a usage error, whoever runs it.
    let found = cfg.select.scan(Path::new("/proc"))?;
    let caps = Capabilities::probe_or_mount();
    let root = match (&caps.root, caps.hrtimer_events) {
        (None, _) => return Err(Error::env(
            "rtlat watch needs tracefs (/sys/kernel/tracing), which is not mounted or not readable: run as root",
        )),
        (Some(r), false) => return Err(Error::env(format!(
            "rtlat watch needs the timer:hrtimer_start and timer:hrtimer_expire_entry trace events, which {} does not have: use a kernel built with CONFIG_FTRACE (every distribution kernel has them)",
            r.join("events/timer").display()
        ))),
        (Some(r), true) => r.clone(),
    };
    let layout = WatchLayout::load(&root).ok_or_else(|| {
        Error::env(format!(
            "rtlat watch cannot read the layout of the sched and timer events from {}/events: use a kernel with the sched_waking, sched_switch, sched_process_exit and hrtimer events",
            root.display()
        ))
    })?;
    let callback = std::fs::File::open("/proc/kallsyms")
        .ok()
        .and_then(|f| events::sleeper_callback(std::io::BufReader::new(f)));
    let mut notes = Vec::new();
    let (session, inst, pipes, cpus) = trace_setup(cfg, &root, &found, callback, &mut notes)?;
    let interval = cfg.control.interval_ns;
    let reserve = if cfg.select.grows() { RESERVE } else { 0 };
    let mut sink = Slots {
        worst: cfg.explain_worst.unwrap_or(0),
        cpus: cpus.clone(),
        ..Slots::default()
    };
    let mut channels = Vec::new();
    for k in 0..found.len() + reserve {
        channels.extend(sink.slot(found.get(k), interval));
    }
    let mut spec = RunSpec::new(
        Benchmark::Watch,
        cfg,
        &cfg.setup,
        &cfg.control,
        command_line,
    )?;
    spec.notes = notes;
    let mut follow = Follow::new(cfg.select.clone(), callback);
    follow.limit = cfg.deadline_ns.or(cfg.period_ns);
    for (k, c) in found.iter().enumerate() {
        follow.watch(c.tid, k);
    }
    sink.used = found.len();
    let keep_to = readers_off(&found, &cpus);
    if !keep_to.is_empty() {
        spec.notes.push(format!(
            "watch: its readers keep to CPU(s) {}, off those the watched threads are pinned to",
            crate::units::format_cpu_list(&keep_to)
        ));
    }
    let mut tracing = Tracing::default();
    match cfg.explain_worst {
        Some(worst) => {
            let mut e = explained_by(session, &cpus, worst)?;
            if !keep_to.is_empty() {
                e.reader_on(keep_to.clone());
            }
            spec.notes.append(&mut e.notes);
            sink.taps = cpus
                .iter()
                .map(|&c| e.watch_threads(&format!("cpu{c}"), c, TAP_ROOM))
                .collect();
            // Its finisher goes first: the watch's puts its parts on the cases.
            e.add_to(&mut tracing);
        }
        None => tracing.keep(session),
    }
    tracing.add(Box::new(Reader {
        follow,
        sink,
        cpus,
        pipes,
        layout,
        instance: inst,
        end: None,
        duration_ns: cfg.control.duration_ns,
        events: Vec::with_capacity(1 << 14),
        read_error: None,
        selection: cfg.select.describe(),
        keep_to,
    }));
    let finished = tracing.execute(spec, channels, Vec::new(), Clock::Monotonic.id())?;
    if finished.result.threads.is_empty() {
        return Ok(Outcome::EnvironmentFailed(format!(
            "no thread of the selection ({}) ran during the watch; start the application first, or check --pid or --comm",
            cfg.select.describe()
        )));
    }
    Ok(finished.outcome)
}

/// The CPUs of `online` that none of the `found` threads pinned to fewer
/// than all of them may run on: where the readers go, whose kernel time
/// (reading the trace) would otherwise delay those threads. Empty when
/// there is no such CPU, or no thread is pinned.
fn readers_off(found: &[Candidate], online: &[usize]) -> Vec<usize> {
    let busy: Vec<usize> = found
        .iter()
        .filter_map(|c| sched::affinity_of(c.tid))
        .map(|a| {
            a.into_iter()
                .filter(|c| online.contains(c))
                .collect::<Vec<_>>()
        })
        .filter(|a| a.len() < online.len())
        .flatten()
        .collect();
    if busy.is_empty() {
        return Vec::new();
    }
    online
        .iter()
        .copied()
        .filter(|c| !busy.contains(c))
        .collect()
}

/// `--explain`: the events of every CPU in a second instance of the watch's
/// session, read by explain's reader for the worst wake-ups the watch
/// hands over (the `worst` of each thread kept).
fn explained_by(session: Session, cpus: &[usize], worst: usize) -> Result<Explain> {
    let mut e = Explain::beside(session, cpus, worst, None, OWN)?;
    // Its note of how many intervals it explains is about rtlat's own
    // threads; the watch says its own.
    e.notes.retain(|n| !n.starts_with("--explain: the worst"));
    e.notes.push(format!(
        "--explain: each watched thread's worst wake-ups split into their causes on the CPU where it ran, from the scheduling, IRQ, softirq, irq_vectors, idle and NMI events of CPU(s) {} in tracefs instance rtlat-{}-explain; a case whose trace was not read keeps the task that held the CPU",
        crate::units::format_cpu_list(cpus),
        std::process::id()
    ));
    Ok(e)
}

/// rtlat's instance with its filters and events, every CPU's pipe and
/// those CPUs.
fn trace_setup(
    cfg: &WatchConfig,
    root: &Path,
    found: &[Candidate],
    callback: Option<u64>,
    notes: &mut Vec<String>,
) -> Result<(Session, PathBuf, RawPipes, Vec<usize>)> {
    let (mut session, restored) =
        Session::begin(root, tracefs::Uses::Instances).map_err(Error::env)?;
    notes.extend(restored);
    let (inst, name) = instance::open(&mut session, root, &[], notes)?;
    let tids: Vec<i32> = found.iter().map(|c| c.tid).collect();
    for (ev, filter) in cfg.select.filters(&tids, callback) {
        if let Err(e) = tracefs::write(&inst, &format!("events/{ev}/filter"), &filter) {
            notes.push(format!(
                "the kernel refused the filter of {ev} ({e}): its every event is recorded and rtlat selects"
            ));
        }
    }
    for ev in EVENTS {
        tracefs::write(&inst, &format!("events/{ev}/enable"), "1")
            .map_err(|e| tracefs_error(&format!("enable {ev}"), e))?;
    }
    // Every CPU: a thread may run, and its timer fire, anywhere.
    let online = crate::sysinfo::online_cpus();
    let pipes =
        RawPipes::open(&inst, &online).map_err(|e| tracefs_error("open trace_pipe_raw", e))?;
    notes.push(format!(
        "watch: {} from the sched_waking, sched_switch, sched_process_exit, hrtimer_start and hrtimer_expire_entry events in tracefs instance {name}; its reader thread (SCHED_OTHER) is in the CPU time",
        cfg.select.describe()
    ));
    if callback.is_none() {
        notes.push(
            "the kernel hides its symbols' addresses (/proc/kallsyms): every timer a watched thread starts is taken as its sleep's".into(),
        );
    }
    Ok((session, inst, pipes, online))
}

/// One thread's series and what the details say of it.
struct Slot {
    names: [LateName; 4],
    thread: WatchedThread,
    /// Its worst wake-ups: (latency, wake-up after the start, who held the
    /// CPU, the CPU).
    worst: Vec<(u64, u64, Tracked, usize)>,
    /// The least of them once they are as many as kept.
    floor: u64,
    /// Who preempted it mid-activation: (task, times, ns).
    interferers: Vec<(Tracked, u64, u64)>,
    /// Its longest wake-up and who held the CPU through it, for the
    /// metrics' exemplar.
    max_by: MaxBy,
}

/// The series of every watched thread and of the reserve.
#[derive(Default)]
struct Slots {
    slots: Vec<Slot>,
    /// Four recorders per slot, in the order of [`PARTS`].
    recs: Vec<Recorder>,
    /// Slots in use.
    used: usize,
    /// How many worst wake-ups each thread keeps (`--explain`).
    worst: usize,
    /// The run's start on the trace's clock.
    start: u64,
    unwatched: u64,
    /// The CPUs read, by their index.
    cpus: Vec<usize>,
    /// `--explain`: per CPU read, the tap of explain's reader that the
    /// worst wake-ups of the threads that ran there go to.
    taps: Vec<Arc<Tap>>,
}

impl Slots {
    /// A slot for `thread` (`None`: held in reserve) and its channels.
    fn slot(&mut self, thread: Option<&Candidate>, interval: u64) -> Vec<Channel> {
        let names: [LateName; 4] = Default::default();
        let max_by = MaxBy::default();
        let mut channels = Vec::new();
        for (part, late) in PARTS.iter().zip(&names) {
            let (rec, col) = recorder::pair(interval);
            self.recs.push(rec);
            let mut c = match thread {
                Some(t) => Channel::new(format!("{}:{}{part}", t.comm, t.tid), None, col, interval),
                None => Channel::reserved(Arc::clone(late), col, interval),
            };
            c.in_total = part.is_empty();
            if c.in_total {
                // The wake-up series: `late` gives the culprit of each.
                c.max_by = Some(Arc::clone(&max_by));
            }
            channels.push(c);
        }
        let mut s = Slot {
            names,
            thread: WatchedThread::default(),
            worst: Vec::with_capacity(self.worst),
            floor: 0,
            interferers: Vec::with_capacity(INTERFERERS),
            max_by,
        };
        if let Some(t) = thread {
            name_slot(&mut s, t.tid, &t.comm);
        }
        self.slots.push(s);
        channels
    }
}

fn name_slot(s: &mut Slot, tid: i32, comm: &str) {
    let name = format!("{comm}:{tid}");
    for (part, late) in PARTS.iter().zip(&s.names) {
        if let Ok(mut n) = late.lock() {
            *n = Some(format!("{name}{part}"));
        }
    }
    s.thread = WatchedThread {
        name,
        tid,
        comm: comm.to_string(),
        ..WatchedThread::default()
    };
}

impl Figures for Slots {
    fn admit(&mut self, tid: i32, comm: &str) -> Option<usize> {
        let Some(s) = self.slots.get_mut(self.used) else {
            self.unwatched += 1;
            return None;
        };
        name_slot(s, tid, comm);
        self.used += 1;
        Some(self.used - 1)
    }

    fn figure(&mut self, slot: usize, figure: Quantity, ts: u64, ns: u64) {
        let part = match figure {
            Quantity::Wake => 0,
            Quantity::Timer => 1,
            Quantity::Run => 2,
            Quantity::Interval => 3,
        };
        let t = &mut self.slots[slot].thread;
        match figure {
            Quantity::Wake => t.activations += 1,
            Quantity::Timer => t.timer_wakes += 1,
            _ => {}
        }
        let at = ts.saturating_sub(self.start);
        self.recs[4 * slot + part].record(ns, at, 0);
    }

    fn late(&mut self, slot: usize, ts: u64, ns: u64, by: &Tracked, cpu: usize) {
        let woken = ts.saturating_sub(ns);
        let at = woken.saturating_sub(self.start);
        let id = self.cpus.get(cpu).copied().unwrap_or(cpu);
        let (keep, s) = (self.worst, &mut self.slots[slot]);
        if let Ok(mut max) = s.max_by.lock() {
            if max.as_ref().is_none_or(|m| ns > m.0) {
                *max = Some((ns, task_label(by)));
            }
        }
        if s.worst.len() < keep {
            s.worst.push((ns, at, *by, id));
        } else if ns > s.floor {
            // Full: the least of the kept gives way, and the next least
            // is the floor a wake-up must pass.
            if let Some(least) = s.worst.iter_mut().min_by_key(|c| c.0) {
                *least = (ns, at, *by, id);
            }
        } else {
            return;
        }
        if let Some(tap) = self.taps.get(cpu) {
            tap.push_of(woken, ns, s.thread.tid);
        }
        if s.worst.len() == keep {
            s.floor = s.worst.iter().map(|c| c.0).min().unwrap_or(0);
        }
    }

    fn interfered(&mut self, slot: usize, by: &Tracked, ns: u64) {
        let s = &mut self.slots[slot];
        s.thread.preempted_ns += ns;
        let list = &mut s.interferers;
        if let Some(e) = list.iter_mut().find(|e| e.0.pid == by.pid) {
            e.1 += 1;
            e.2 += ns;
        } else if list.len() < INTERFERERS {
            list.push((*by, 1, ns));
        } else if let Some(least) = list.iter_mut().min_by_key(|e| e.2) {
            // Full: the task with the least time gives way to a longer one.
            if ns > least.2 {
                *least = (*by, 1, ns);
            }
        }
    }

    fn overrun(&mut self, slot: usize, _ts: u64) {
        self.slots[slot].thread.overruns += 1;
    }

    fn ended(&mut self, slot: usize, ts: u64) {
        self.slots[slot].thread.ended_at_ns = Some(ts.saturating_sub(self.start));
        for r in &mut self.recs[4 * slot..4 * slot + 4] {
            r.finish();
        }
    }
}

/// The watch's reader thread.
struct Reader {
    follow: Follow,
    sink: Slots,
    pipes: RawPipes,
    layout: WatchLayout,
    cpus: Vec<usize>,
    instance: PathBuf,
    duration_ns: Option<u64>,
    /// The end on the trace's clock: the duration's, or when the run was stopped.
    end: Option<u64>,
    /// A round's events of every CPU (by its index among those read), put
    /// in time order.
    events: Vec<(u64, (usize, Happening))>,
    read_error: Option<String>,
    selection: String,
    /// The CPUs the reader keeps to (empty: any).
    keep_to: Vec<usize>,
}

impl Reader {
    /// Every CPU's waiting pages into `events`, a few per CPU per round.
    fn read_pages(&mut self) {
        self.events.clear();
        let layout = &self.layout;
        let got = crate::trace::read_pages(
            &mut self.pipes,
            &layout.page,
            64,
            |cpu, item| layout.decode(&item).map(|h| (cpu, h)),
            &mut self.events,
        );
        if let Err(e) = got {
            self.read_error = Some(e.to_string());
        }
    }
}

impl Tracer for Reader {
    fn name(&self) -> String {
        "rtlat-watch".into()
    }

    fn begin(&mut self, start: u64) {
        // The reader must not compete with the threads it watches.
        let _ = sched::set_current(Sched::Other);
        if !self.keep_to.is_empty() {
            let _ = sched::confine_current(&self.keep_to);
        }
        self.sink.start = start;
        self.end = self.duration_ns.map(|d| start + d);
    }

    fn round(&mut self, now: u64, stop: &StopFlag) -> Round {
        if stop.is_set() && self.end.is_none_or(|e| e > now) {
            self.end = Some(now);
        }
        self.read_pages();
        let busy = !self.events.is_empty();
        self.events.sort_by_key(|&(ts, _)| ts);
        let (start, end) = (self.sink.start, self.end.unwrap_or(u64::MAX));
        for &(ts, (cpu, ev)) in &self.events {
            let lost = matches!(ev, Happening::Lost(_));
            if lost || (ts >= start && ts < end) {
                self.follow.cpu = cpu;
                self.follow.event(ts, ev, &mut self.sink);
            }
        }
        if self.read_error.is_some() {
            return Round::Done;
        }
        let after = now.saturating_sub(end);
        if now >= end && ((after >= GRACE_NS && !busy) || after >= LAST_READS_NS) {
            return Round::Done;
        }
        if busy {
            Round::More
        } else {
            Round::Pause(Duration::from_millis(50))
        }
    }

    fn end(mut self: Box<Self>) -> (Option<BreakEvent>, Finish) {
        for r in &mut self.sink.recs {
            r.finish();
        }
        // No wake-up follows: explain's reader ends once it has these.
        for t in &self.sink.taps {
            t.close();
        }
        let mut f = WatchFigures {
            selection: std::mem::take(&mut self.selection),
            source: "sched:sched_waking, sched:sched_switch, sched:sched_process_exit, timer:hrtimer_start and timer:hrtimer_expire_entry events, the binary per-CPU trace_pipe_raw buffers of rtlat's tracefs instance".into(),
            threads: self.sink.slots[..self.sink.used]
                .iter()
                .map(thread_figures)
                .collect(),
            unwatched_threads: self.sink.unwatched,
            lost_events: self.follow.lost_events,
            switches_missing: self.follow.switches_missing,
            ..WatchFigures::default()
        };
        for &c in &self.cpus {
            let (o, dropped) = tracefs::cpu_losses(&self.instance, c);
            f.ring_buffer_overruns += o;
            f.dropped_events += dropped;
        }
        if let Some(e) = self.read_error.take() {
            f.restore_problems
                .push(format!("reading trace_pipe_raw failed: {e}"));
        }
        let cases = worst_cases(&self.sink.slots[..self.sink.used]);
        (None, finisher(f, cases))
    }
}

/// `hog 4242 FIFO 90`; the idle task is `idle`.
fn task_label(t: &Tracked) -> String {
    match t.pid {
        0 => "idle".into(),
        pid => format!("{} {pid} {}", comm_text(&t.comm), policy_of(pid, t.prio)),
    }
}

/// A slot's details, its interference named, most time first.
fn thread_figures(s: &Slot) -> WatchedThread {
    let mut t = s.thread.clone();
    let mut by: Vec<&(Tracked, u64, u64)> = s.interferers.iter().collect();
    by.sort_by_key(|e| std::cmp::Reverse(e.2));
    t.interference = by
        .into_iter()
        .map(|&(ref task, times, ns)| Preemptor {
            task: task_label(task),
            times,
            ns,
        })
        .collect();
    t
}

/// Every thread's worst wake-ups as explained cases, worst first: the
/// wait is the part of the task that held the CPU until the thread ran
/// (of the tasks that ran in between, the trace's filter keeps the last).
fn worst_cases(slots: &[Slot]) -> Vec<Explained> {
    let mut cases: Vec<Explained> = slots
        .iter()
        .flat_map(|s| {
            s.worst.iter().map(|&(ns, at, ref by, cpu)| {
                let (kind, name) = match by.pid {
                    0 => ("idle", "idle-state exit".to_string()),
                    _ => ("thread", task_label(by)),
                };
                Explained {
                    thread: s.thread.name.clone(),
                    cpu: Some(cpu),
                    at_ns: at,
                    latency_ns: ns,
                    parts: vec![Part {
                        kind: kind.into(),
                        name,
                        ns,
                        ..Part::default()
                    }],
                }
            })
        })
        .collect();
    cases.sort_by_key(|c| std::cmp::Reverse(c.latency_ns));
    cases
}

/// The watch's `cases` with the parts explain's reader found for the same
/// wake-ups (same CPU, time and latency) in `split`; how many have none.
fn with_causes(mut cases: Vec<Explained>, split: &[Explained]) -> (Vec<Explained>, usize) {
    let mut alone = 0;
    for c in &mut cases {
        let same = split
            .iter()
            .find(|e| (e.cpu, e.at_ns, e.latency_ns) == (c.cpu, c.at_ns, c.latency_ns));
        match same {
            Some(e) => c.parts.clone_from(&e.parts),
            None => alone += 1,
        }
    }
    (cases, alone)
}

/// At the end of the run: each thread's period (the median of its
/// intervals), the notes of threads that ended, and the details.
fn finisher(mut f: WatchFigures, cases: Vec<Explained>) -> Finish {
    Box::new(move |result: &mut RunResult, problems: &[String]| {
        f.restore_problems.extend_from_slice(problems);
        let split = std::mem::take(&mut result.explained);
        let (cases, alone) = with_causes(cases, &split);
        if alone > 0 {
            result.notes.push(format!(
                "--explain: {alone} of the {} worst wake-ups kept have only the task that held the CPU: explain's reader did not split them (their trace was not read in time, or more of them waited than it keeps)",
                cases.len()
            ));
        }
        result.explained = cases;
        for t in &mut f.threads {
            let interval = format!("{}/interval", t.name);
            let summary = result
                .threads
                .iter()
                .find(|r| r.name == interval)
                .map(|r| &r.summary);
            t.period_ns = summary.and_then(|s| s.percentile(50.0));
            t.jitter_ns = summary.zip(t.period_ns).map(|(s, p)| {
                let p = p as i64;
                (s.max_ns - p).max(p - s.min_ns).max(0) as u64
            });
            if let Some(at) = t.ended_at_ns {
                result.notes.push(format!(
                    "{} ended {} after the start: its series close there",
                    t.name,
                    crate::units::human_duration(at)
                ));
            }
        }
        if f.unwatched_threads > 0 {
            result.notes.push(format!(
                "{} more threads matched once the {RESERVE} series kept in reserve were in use: not watched; name them with --pid or --comm",
                f.unwatched_threads
            ));
        }
        if f.switches_missing > 0 {
            result.notes.push(format!(
                "{} wake-ups were followed by their thread running without its switch in the kernel's trace: those activations have no figure",
                f.switches_missing
            ));
        }
        if f.lost_events > 0 {
            result.notes.push(format!(
                "the kernel's trace buffers lost {} events: no figure spans a loss",
                f.lost_events
            ));
        }
        result.details.extend(WatchDetails { watch: f }.to_map());
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(pid: i32, name: &str) -> Tracked {
        let mut comm = [0u8; 16];
        comm[..name.len()].copy_from_slice(name.as_bytes());
        Tracked {
            pid,
            prio: 120,
            comm,
        }
    }

    #[test]
    fn each_thread_keeps_its_worst_wake_ups_and_its_preemptors() {
        let mut sink = Slots {
            worst: 2,
            start: 1_000,
            ..Slots::default()
        };
        sink.slots.push(Slot {
            names: Default::default(),
            thread: WatchedThread {
                name: "app:5".into(),
                ..WatchedThread::default()
            },
            worst: Vec::with_capacity(2),
            floor: 0,
            interferers: Vec::new(),
            max_by: MaxBy::default(),
        });
        sink.used = 1;
        // Three wake-ups: the two longest stay, each with who held the CPU.
        sink.late(0, 2_000, 300, &task(7, "hog"), 1);
        sink.late(0, 3_000, 100, &task(0, "swapper/1"), 1);
        sink.late(0, 4_000, 500, &task(8, "other"), 1);
        // Not above the least kept (300): left out.
        sink.late(0, 4_500, 300, &task(9, "late"), 1);
        // The maximum's culprit, for the metrics.
        let max = sink.slots[0].max_by.lock().unwrap().clone();
        assert_eq!(max, Some((500, "other 8 nice 0".to_string())));
        let cases = worst_cases(&sink.slots);
        let got: Vec<(u64, u64, &str, &str)> = cases
            .iter()
            .map(|c| {
                let p = &c.parts[0];
                (c.latency_ns, c.at_ns, p.kind.as_str(), p.name.as_str())
            })
            .collect();
        assert_eq!(
            got,
            [
                (500, 2_500, "thread", "other 8 nice 0"),
                (300, 700, "thread", "hog 7 nice 0")
            ]
        );
        assert!(cases.iter().all(|c| c.parts[0].ns == c.latency_ns));
        // Preemptions add up per task, most time first.
        sink.interfered(0, &task(7, "hog"), 40);
        sink.interfered(0, &task(9, "irq/9"), 50);
        sink.interfered(0, &task(7, "hog"), 20);
        sink.overrun(0, 5_000);
        let t = thread_figures(&sink.slots[0]);
        assert_eq!((t.preempted_ns, t.overruns), (110, 1));
        let by: Vec<(&str, u64, u64)> = t
            .interference
            .iter()
            .map(|i| (i.task.as_str(), i.times, i.ns))
            .collect();
        assert_eq!(by, [("hog 7 nice 0", 2, 60), ("irq/9 9 nice 0", 1, 50)]);
        assert_eq!(task_label(&task(0, "swapper/0")), "idle");
    }
}
