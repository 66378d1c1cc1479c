//! `rtlat timer`: wake-up latency of periodic real-time threads, one per CPU.
//!
//! Each thread sleeps with `clock_nanosleep(TIMER_ABSTIME)` until its next
//! intended wake time and records `latency = actual wake − intended wake`.
//! Thread i of n is offset by i·period/n so threads never wake together.
//! A wake-up at or after the following period start is an overrun: the
//! missed periods are counted and skipped, and the next wake stays on the
//! original grid (start + k·period), so the schedule never drifts.
//!
//! `--context` measures the kernel's own levels instead ([`contexts`]).

#[cfg(feature = "kernel-trace")]
pub mod kernel;
pub mod lines;

use crate::bench::explaining::{Ask, Explaining};
use crate::engine::Setup;
use crate::engine::StopFlag;
use crate::engine::{Channel, Finished, Moved, RunControl, RunSpec, Worker, WorkerEnd};
use crate::error::Result;
use crate::result::Benchmark;
use crate::result::BreakEvent;
use crate::stats::recorder::{self, Recorder};
use crate::stats::tap::Tap;
use crate::sys::{self, clock::Clock, trace::TraceMarker};
use serde::Serialize;
use std::sync::{Arc, Mutex};

/// Validated settings of a timer run.
#[derive(Debug, Clone, Serialize)]
pub struct TimerConfig {
    pub cpus: Vec<usize>,
    pub period_ns: u64,
    pub clock: Clock,
    #[serde(flatten)]
    pub control: RunControl,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synthetic_seed: Option<u64>,
    /// Kernel contexts measured by the timerlat tracer instead of rtlat's threads.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub contexts: Vec<lines::Ctx>,
    /// Each sample split into its IRQ and scheduling parts (`--split`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub split: bool,
    /// The worst intervals explained per thread (`--explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<usize>,
    /// `--explain-stacks`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explain_stacks: bool,
    #[serde(skip)]
    pub setup: Setup,
}

/// Where the time comes from: the real clock, or a deterministic simulation.
trait Waker {
    /// Sleep until `target` and return the wake-up time.
    fn wait_until(&mut self, target: u64) -> u64;
    /// Called after each sample; only a simulation uses it to pace itself.
    #[inline(always)]
    fn pace(&mut self, _rec: &Recorder) {}
    /// The CPU the thread woke on (`None`: not known, never checked).
    #[inline(always)]
    fn cpu(&self) -> Option<usize> {
        None
    }
}

struct RealWaker(libc::clockid_t);

impl Waker for RealWaker {
    #[inline(always)]
    fn wait_until(&mut self, target: u64) -> u64 {
        sys::clock::sleep_until(self.0, target);
        sys::clock::now_ns(self.0)
    }
    /// glibc's sched_getcpu: the vDSO or the rseq area, no system call.
    #[inline(always)]
    fn cpu(&self) -> Option<usize> {
        sys::sched::current_cpu()
    }
}

/// Simulated time with reproducible latencies: 2–5 µs, a 50–150 µs spike
/// every ~5000 samples, and an overrun of 2–3 periods every ~200 000.
pub struct SyntheticWaker {
    state: u64,
    t: u64,
    period: u64,
}

impl SyntheticWaker {
    pub fn new(seed: u64, thread: usize, period: u64) -> Self {
        let state = (seed ^ 0x9E37_79B9_7F4A_7C15).wrapping_mul(thread as u64 * 2 + 1) | 1;
        SyntheticWaker {
            state,
            t: 0,
            period,
        }
    }
    fn next(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        x
    }
}

impl Waker for SyntheticWaker {
    fn wait_until(&mut self, target: u64) -> u64 {
        let r = self.next();
        let lat = if r % 200_000 == 7 {
            2 * self.period + r % self.period
        } else if r % 5000 == 3 {
            50_000 + r % 100_000
        } else {
            2_000 + r % 3_000
        };
        self.t = target.max(self.t) + lat;
        self.t
    }
    fn pace(&mut self, rec: &Recorder) {
        // Simulated time runs far ahead of the reporter: let it catch up.
        while rec.backlog() >= recorder::PACE_LIMIT {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

/// What one measuring thread is told to do.
struct Plan {
    index: usize,
    period: u64,
    /// Absolute time of the run's start on the thread's clock.
    start: u64,
    /// Absolute time of this thread's first wake-up.
    first: u64,
    end: Option<u64>,
    loops: Option<u64>,
    break_threshold: Option<u64>,
    /// The CPU the thread is pinned to: a wake-up elsewhere means the CPU
    /// went away (offline, or out of the cpuset).
    cpu: Option<usize>,
}

/// Why a measuring loop ended before its end.
#[derive(Debug)]
enum Early {
    /// A sample above `--break-threshold`.
    Break(BreakEvent),
    /// Woken on another CPU than its own: its CPU went away. That wake-up
    /// is not a sample.
    Moved(Moved),
}

/// The measuring loop. Between the wake-up timestamp and the next sleep it
/// only does arithmetic and the recorder's lock-free publication.
fn measure<W: Waker>(
    w: &mut W,
    rec: &mut Recorder,
    plan: &Plan,
    stop: &StopFlag,
    tap: Option<&Tap>,
) -> Option<Early> {
    let mut next = plan.first;
    let mut n: u64 = 0;
    let threshold = plan.break_threshold.unwrap_or(u64::MAX);
    let end = plan.end.unwrap_or(u64::MAX);
    let loops = plan.loops.unwrap_or(u64::MAX);
    while n < loops && next < end && !stop.is_set() {
        let now = w.wait_until(next);
        // Unpinned threads (SCHED_DEADLINE) are not asked.
        if plan.cpu.is_some() {
            if let Some(m) = Moved::check(plan.cpu, w.cpu(), now.saturating_sub(plan.start)) {
                return Some(Early::Moved(m));
            }
        }
        let latency = now.saturating_sub(next);
        let missed = if latency >= plan.period {
            latency / plan.period
        } else {
            0
        };
        let at = now.saturating_sub(plan.start);
        rec.record(latency, at, missed);
        if let Some(t) = tap {
            t.push(next, latency);
        }
        w.pace(rec);
        if latency > threshold {
            stop.set();
            return Some(Early::Break(BreakEvent {
                thread: plan.index,
                cpu: None,
                sample: n,
                latency_ns: latency,
                at_ns: at,
                trace_marked: false,
            }));
        }
        next += plan.period * (1 + missed);
        n += 1;
    }
    None
}

/// Closes a tap when its measuring thread ends, however it ends.
struct CloseOnDrop(Arc<Tap>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Run the timer benchmark end to end.
pub fn run(cfg: &TimerConfig, command_line: Vec<String>) -> Result<Finished> {
    #[cfg(feature = "kernel-trace")]
    if !cfg.contexts.is_empty() {
        return kernel::contexts::run(cfg, command_line);
    }
    let n = cfg.cpus.len();
    let pin = cfg.setup.rt.can_pin();
    let phases: Vec<u64> = (0..n)
        .map(|i| cfg.period_ns * i as u64 / n as u64)
        .collect();
    let mut notes = Vec::new();
    if !pin {
        notes.push(
            "threads not pinned: SCHED_DEADLINE requires affinity over the whole root domain"
                .into(),
        );
    }
    let marks_break = cfg.control.break_threshold_ns.is_some() && cfg.synthetic_seed.is_none();
    let tracer = Arc::new(Mutex::new(
        marks_break.then(|| break_tracer(&mut notes)).flatten(),
    ));
    // Tracing is set up (and can fail) before anything is measured.
    let mut traced = Explaining::begin(&ask(cfg, pin, &phases)?, &mut notes)?;
    let mut spec = RunSpec::new(
        Benchmark::Timer,
        cfg,
        &cfg.setup,
        &cfg.control,
        command_line,
    )?
    .threads(
        cfg.cpus.iter().map(|&c| pin.then_some(c)).collect(),
        phases.clone(),
    );
    spec.notes = notes;
    spec.synthetic = cfg.synthetic_seed.is_some();
    spec.period_ns = Some(cfg.period_ns);
    // Every buffer exists before memory is locked and before the first sample.
    let (mut channels, mut workers) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for (i, &cpu) in cfg.cpus.iter().enumerate() {
        let (rec, col) = recorder::pair(cfg.control.interval_ns);
        // Unpinned threads (SCHED_DEADLINE) are named by index, not by a CPU they may leave.
        let (name, pinned) = if pin {
            (format!("cpu{cpu}"), Some(cpu))
        } else {
            (format!("thread{i}"), None)
        };
        let interval = cfg.control.interval_ns;
        channels.push(Channel::new(name.clone(), pinned, col, interval));
        let (tap, parts) = traced.thread(&name, pinned, Some(cfg.period_ns), interval);
        channels.extend(parts);
        let mark = BreakMark {
            tracer: Arc::clone(&tracer),
            name,
            pinned,
        };
        workers.push(worker(cfg, i, phases[i], rec, tap, mark));
    }
    traced.execute(spec, channels, workers, cfg.clock.id())
}

/// What `--explain` and `--split` ask of the tracing.
fn ask<'a>(cfg: &'a TimerConfig, pin: bool, phases: &'a [u64]) -> Result<Ask<'a>> {
    if cfg.explain.is_some() && !pin {
        return Err(crate::error::Error::usage(
            "--explain needs each thread pinned to its CPU, which SCHED_DEADLINE does not allow: use --policy fifo or rr",
        ));
    }
    let mut ask = Ask::new(cfg.explain, &cfg.cpus, "own wake-up path");
    ask.threshold = cfg.control.break_threshold_ns;
    ask.stacks = cfg.explain_stacks;
    ask.split = cfg.split.then_some((cfg.period_ns, phases));
    Ok(ask)
}

/// The tracer that marks a break in the kernel's trace (tracefs mounted if
/// need be), or none when tracefs is not writable; the notes say which.
fn break_tracer(notes: &mut Vec<String>) -> Option<TraceMarker> {
    match TraceMarker::open_or_mount() {
        Some((t, mounted)) => {
            if mounted {
                notes.push(format!(
                    "mounted tracefs at {} for --break-threshold",
                    t.dir.display()
                ));
            }
            Some(t)
        }
        None => {
            notes.push(
                "tracefs not writable: a break will not be marked in the kernel trace".into(),
            );
            None
        }
    }
}

/// Where a measuring thread's break is recorded: its thread and the kernel's trace.
struct BreakMark {
    tracer: Arc<Mutex<Option<TraceMarker>>>,
    /// The thread's series name and its CPU (if pinned).
    name: String,
    pinned: Option<usize>,
}

impl BreakMark {
    /// How the thread ended, from how its loop ended.
    fn end(&self, early: Option<Early>) -> WorkerEnd {
        match early {
            None => WorkerEnd::default(),
            Some(Early::Break(mut b)) => {
                self.mark(&mut b);
                WorkerEnd {
                    brk: Some(b),
                    ..WorkerEnd::default()
                }
            }
            Some(Early::Moved(m)) => Some(m.lost(&self.name)).into(),
        }
    }

    /// After the measuring loop: the break's CPU, and the break marked in the
    /// trace (which stops tracing) by the first thread to break.
    fn mark(&self, b: &mut BreakEvent) {
        b.cpu = self.pinned;
        if let Ok(mut guard) = self.tracer.lock() {
            if let Some(t) = guard.as_mut() {
                b.trace_marked = t.mark_and_stop(&format!(
                    "rtlat: break on {}: latency {} ns > threshold at sample {}\n",
                    self.name, b.latency_ns, b.sample
                ));
            }
        }
    }
}

/// Measuring thread `i` (first wake-up `phase` after the start): it measures
/// into `rec` (and `tap`, with --split), then marks a break.
fn worker(
    cfg: &TimerConfig,
    i: usize,
    phase: u64,
    mut rec: Recorder,
    tap: Option<Arc<Tap>>,
    mark: BreakMark,
) -> Worker {
    let clock_id = cfg.clock.id();
    let (period, duration, loops, brk, seed) = (
        cfg.period_ns,
        cfg.control.duration_ns,
        cfg.control.loops,
        cfg.control.break_threshold_ns,
        cfg.synthetic_seed,
    );
    Worker {
        name: format!("rtlat-{}", mark.name),
        cpu: mark.pinned,
        body: Box::new(move |start: u64, stop: &StopFlag| -> WorkerEnd {
            let plan = Plan {
                index: i,
                period,
                start,
                first: start + phase,
                end: duration.map(|d| start + d),
                loops,
                break_threshold: brk,
                cpu: mark.pinned,
            };
            let _closer = tap.map(|t| {
                t.set_writer(sys::sched::gettid());
                CloseOnDrop(t)
            });
            let tap = _closer.as_ref().map(|c| &*c.0);
            let early = match seed {
                Some(s) => measure(
                    &mut SyntheticWaker::new(s, i, period),
                    &mut rec,
                    &plan,
                    stop,
                    tap,
                ),
                None => measure(&mut RealWaker(clock_id), &mut rec, &plan, stop, tap),
            };
            rec.finish();
            mark.end(early)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(loops: u64, period: u64) -> Plan {
        Plan {
            index: 0,
            period,
            start: 0,
            first: 0,
            end: None,
            loops: Some(loops),
            break_threshold: None,
            cpu: None,
        }
    }

    /// A waker that returns scripted latencies.
    struct Scripted(Vec<u64>, usize, Vec<u64>);
    impl Waker for Scripted {
        fn wait_until(&mut self, target: u64) -> u64 {
            self.2.push(target);
            let l = self.0[self.1 % self.0.len()];
            self.1 += 1;
            target + l
        }
    }

    #[test]
    fn overruns_are_counted_and_the_schedule_stays_on_grid() {
        let (mut rec, mut col) = recorder::pair(1_000_000_000);
        // Period 1000: the second wake is 2500 late: 2 periods missed.
        let mut w = Scripted(vec![10, 2500, 20, 30], 0, Vec::new());
        measure(&mut w, &mut rec, &plan(4, 1000), &StopFlag::default(), None);
        rec.finish();
        col.collect(&mut Vec::new());
        assert_eq!(col.totals().overruns, 2);
        assert_eq!(col.totals().samples, 4);
        // Intended wakes: 0, 1000, then 4000 (2000 and 3000 skipped), 5000 — all on the grid.
        assert_eq!(w.2, vec![0, 1000, 4000, 5000]);
    }

    #[test]
    fn break_threshold_stops_at_the_first_sample_above() {
        let (mut rec, _col) = recorder::pair(1_000_000_000);
        let mut w = Scripted(vec![10, 20, 900, 5], 0, Vec::new());
        let mut p = plan(100, 1000);
        p.break_threshold = Some(500);
        let stop = StopFlag::default();
        let Some(Early::Break(b)) = measure(&mut w, &mut rec, &p, &stop, None) else {
            panic!("no break");
        };
        assert_eq!((b.sample, b.latency_ns), (2, 900));
        assert!(stop.is_set());
        assert_eq!(rec.totals().samples, 3);
    }

    /// Wakes on `cpus[k]` at the kth wake-up.
    struct Wandering(Vec<usize>, usize);
    impl Waker for Wandering {
        fn wait_until(&mut self, target: u64) -> u64 {
            self.1 += 1;
            target + 10
        }
        fn cpu(&self) -> Option<usize> {
            self.0.get(self.1 - 1).copied()
        }
    }

    #[test]
    fn a_wake_up_on_another_cpu_ends_the_series_before_its_sample() {
        let (mut rec, _col) = recorder::pair(1_000_000_000);
        let mut p = plan(100, 1000);
        p.cpu = Some(1);
        let mut w = Wandering(vec![1, 1, 1, 0, 1], 0);
        let end = measure(&mut w, &mut rec, &p, &StopFlag::default(), None);
        let Some(Early::Moved(m)) = end else {
            panic!("not noticed: {end:?}");
        };
        // Three samples on CPU 1; the fourth wake-up, on CPU 0, is none.
        assert_eq!((m.from, m.to, m.at_ns), (1, 0, 3010));
        assert_eq!(rec.totals().samples, 3);
        // Unpinned threads are not checked.
        let (mut rec, _col) = recorder::pair(1_000_000_000);
        p.cpu = None;
        p.loops = Some(5);
        let mut w = Wandering(vec![1, 0, 1, 0, 1], 0);
        assert!(measure(&mut w, &mut rec, &p, &StopFlag::default(), None).is_none());
        assert_eq!(rec.totals().samples, 5);
    }

    #[test]
    fn duration_bounds_the_sample_count() {
        let (mut rec, _col) = recorder::pair(1_000_000_000);
        let mut w = Scripted(vec![1], 0, Vec::new());
        let mut p = plan(u64::MAX, 1000);
        p.loops = None;
        p.end = Some(10_000);
        measure(&mut w, &mut rec, &p, &StopFlag::default(), None);
        assert_eq!(rec.totals().samples, 10);
    }

    #[test]
    fn synthetic_waker_is_deterministic() {
        let mut a = SyntheticWaker::new(42, 1, 1000);
        let mut b = SyntheticWaker::new(42, 1, 1000);
        for t in 0..1000 {
            assert_eq!(a.wait_until(t * 1000), b.wait_until(t * 1000));
        }
    }
}
