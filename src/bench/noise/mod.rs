//! `rtlat noise`: how much of a CPU that never sleeps is taken away, how
//! often and for how long (what oslat and the kernel's osnoise tracer
//! measure). On each measuring CPU a thread at the run's policy and priority
//! reads the clock back to back ([`busy`]); every gap between two reads is a
//! sample of the CPU's main series (`cpuN`), and the gaps above `--threshold`
//! are also a series of their own (`cpuN/noise`): their count, their sum (the
//! stolen time) and their lengths, per interval and in total. The gaps above
//! the threshold are kept with their start and end on CLOCK_MONOTONIC for an
//! attribution after the run.

pub mod busy;
pub mod counter;
#[cfg(feature = "kernel-trace")]
pub mod tracer;

use crate::bench::explaining::{Ask, Explaining};
use crate::engine::{Channel, RunControl, RunSpec, Setup, StopFlag, Worker, WorkerEnd};
use crate::error::{Outcome, Result};
use crate::result::details::noise::{CpuNoise, NoiseDetails};
use crate::result::details::Details;
use crate::result::Benchmark;
use crate::result::RunResult;
use crate::stats::recorder;
use crate::stats::tap::Tap;
use busy::{GapLog, LoopCount, LoopPlan, LoopRecorders};
use counter::{CounterKind, Monotonic, Ticks, Tsc};
use serde::Serialize;
use std::sync::{Arc, Mutex};

/// The kernel tracer that measures instead of the busy loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KernelTracer {
    Osnoise,
    Hwlat,
}

impl KernelTracer {
    pub fn name(self) -> &'static str {
        match self {
            KernelTracer::Osnoise => "osnoise",
            KernelTracer::Hwlat => "hwlat",
        }
    }

    pub fn option(self) -> &'static str {
        match self {
            KernelTracer::Osnoise => "--osnoise",
            KernelTracer::Hwlat => "--hwlat",
        }
    }

    /// The kernel option that builds the tracer in.
    pub fn config(self) -> &'static str {
        match self {
            KernelTracer::Osnoise => "CONFIG_OSNOISE_TRACER",
            KernelTracer::Hwlat => "CONFIG_HWLAT_TRACER",
        }
    }
}

/// Validated settings of a noise run.
#[derive(Debug, Clone, Serialize)]
pub struct NoiseConfig {
    pub cpus: Vec<usize>,
    pub threshold_ns: u64,
    /// The clock asked for; `None`: the time-stamp counter where it is invariant.
    pub counter: Option<CounterKind>,
    /// The kernel tracer that measures instead of the loop (`--osnoise`, `--hwlat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracer: Option<KernelTracer>,
    /// `--explain`: every gap above the threshold attributed and summed by
    /// cause per CPU, and this many of each CPU's longest explained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<usize>,
    #[serde(flatten)]
    pub control: RunControl,
    #[serde(skip)]
    pub setup: Setup,
}

/// Gaps above the threshold kept in order per CPU for an attribution.
const LOG_CAPACITY: usize = 16_384;

const MONO: libc::clockid_t = libc::CLOCK_MONOTONIC;

/// RT throttling as `/proc/sys/kernel` says: (runtime, period) in µs.
pub fn rt_throttling() -> (Option<i64>, Option<i64>) {
    let read = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
    };
    (read("sched_rt_runtime_us"), read("sched_rt_period_us"))
}

/// What RT throttling means for this run, if anything.
fn throttling_note(real_time: bool, runtime: Option<i64>, period: Option<i64>) -> Option<String> {
    match (real_time, runtime, period) {
        (false, ..) => None,
        (true, Some(-1), _) => Some(
            "RT throttling is off (sched_rt_runtime_us = -1): the real-time busy loops keep their CPUs from every other task".into(),
        ),
        (true, Some(r), Some(p)) if r < p => Some(format!(
            "RT throttling is on (sched_rt_runtime_us {r} of {p}): other tasks of a measuring CPU may take up to {} ms of every {} ms from the loop, which counts as noise; to measure without it (as oslat users do) write -1 to /proc/sys/kernel/sched_rt_runtime_us, leaving a CPU free",
            (p - r) / 1000,
            p / 1000
        )),
        _ => None,
    }
}

/// One CPU's loop as it ended, kept for the finish and an attribution.
#[derive(Debug, Clone)]
pub struct CpuEnd {
    pub cpu: usize,
    pub count: LoopCount,
    pub read_cost_ns: f64,
    pub log: GapLog,
}

/// The worker of one CPU: its loop on clock `t`, then the read cost; the
/// gaps above the threshold also go to `tap` (`--explain`).
fn worker<T: Ticks>(
    t: T,
    (cpu, tap): (usize, Option<Arc<Tap>>),
    plan: LoopPlan,
    ends: Arc<Mutex<Vec<CpuEnd>>>,
    interval_ns: u64,
) -> (Worker, Channel, Channel) {
    let plan = LoopPlan {
        cpu: Some(cpu),
        ..plan
    };
    let (mut all, all_col) = recorder::pair(interval_ns);
    let (mut noise, noise_col) = recorder::pair(interval_ns);
    let mut log = GapLog::with_capacity(LOG_CAPACITY);
    let body = Box::new(move |start: u64, stop: &StopFlag| -> WorkerEnd {
        if let Some(t) = &tap {
            t.set_writer(crate::sys::sched::gettid());
        }
        let mut out = LoopRecorders {
            all: &mut all,
            noise: &mut noise,
            log: &mut log,
            tap: tap.as_deref(),
        };
        let count = busy::busy(&t, &plan, start, stop, &mut out);
        if let Some(t) = &tap {
            t.close();
        }
        let lost = count.moved.map(|m| m.lost(&format!("cpu{cpu}")));
        let read_cost_ns = counter::read_cost_ns(&t);
        if let Ok(mut e) = ends.lock() {
            e.push(CpuEnd {
                cpu,
                count,
                read_cost_ns,
                log,
            });
        }
        lost.into()
    });
    let mut noise_channel =
        Channel::new(format!("cpu{cpu}/noise"), Some(cpu), noise_col, interval_ns);
    noise_channel.in_total = false;
    (
        Worker {
            name: format!("rtlat-noise{cpu}"),
            cpu: Some(cpu),
            body,
        },
        Channel::new(format!("cpu{cpu}"), Some(cpu), all_col, interval_ns),
        noise_channel,
    )
}

/// The clock the loops read: the one asked for, else the time-stamp counter
/// where it is invariant, else CLOCK_MONOTONIC.
fn choose_counter(asked: Option<CounterKind>) -> Result<Option<Tsc>> {
    match asked {
        Some(CounterKind::Monotonic) => Ok(None),
        Some(CounterKind::Tsc) => Tsc::calibrate().map(Some).ok_or_else(|| {
            crate::error::Error::env(
                "--counter tsc: this CPU has no invariant time-stamp counter (x86_64 with constant_tsc and nonstop_tsc); use --counter monotonic",
            )
        }),
        None => Ok(Tsc::calibrate()),
    }
}

/// The per-CPU details once the loops have ended.
/// The shortest loop: the shortest gap, but one clock read at least (a
/// gap shorter than a read, down to 0 ns, is the clock standing still
/// between two reads: its steps are coarser than a read there).
fn loop_floor(min_gap_ns: i64, read_cost_ns: f64) -> u64 {
    (min_gap_ns.max(0) as u64).max(read_cost_ns.round() as u64)
}

fn cpu_details(r: &RunResult, ends: &[CpuEnd]) -> Vec<CpuNoise> {
    let mut cpus: Vec<CpuNoise> = ends
        .iter()
        .map(|e| {
            let all = r.threads.iter().find(|t| t.name == format!("cpu{}", e.cpu));
            let floor = loop_floor(all.map_or(0, |t| t.summary.min_ns), e.read_cost_ns);
            let span = e.count.span_ns;
            CpuNoise {
                cpu: e.cpu,
                loops: e.count.loops,
                read_cost_ns: (e.read_cost_ns * 100.0).round() / 100.0,
                floor_ns: floor,
                gaps_above: e.count.above,
                stolen_ns: e.count.stolen_ns,
                stolen_fraction: if span == 0 {
                    0.0
                } else {
                    e.count.stolen_ns as f64 / span as f64
                },
                first_ns: e.count.first_ns,
                last_ns: e.count.last_ns,
                longest: e.log.worst.clone(),
            }
        })
        .collect();
    cpus.sort_by_key(|c| c.cpu);
    cpus
}

/// Confine this thread, and the threads it starts after (the reporter's
/// helpers: signals, metrics, loads), to the CPUs not measured, as oslat
/// keeps its main thread on CPU 0: on a measured CPU they would be noise of
/// rtlat's own. With every CPU measured there is nowhere else to go.
fn keep_off(measured: &[usize], notes: &mut Vec<String>) {
    let others: Vec<usize> = crate::sysinfo::online_cpus()
        .into_iter()
        .filter(|c| !measured.contains(c))
        .collect();
    if others.is_empty() {
        notes.push("every online CPU is measured: rtlat's reporter shares them with the loops, and its work counts as noise".into());
    } else if let Err(e) = crate::sys::sched::confine_current(&others) {
        notes.push(format!(
            "cannot keep rtlat's reporter off the measured CPUs ({e}): its work may count as noise"
        ));
    }
}

/// Run the busy loops end to end.
pub fn run(cfg: &NoiseConfig, argv: Vec<String>) -> Result<Outcome> {
    #[cfg(feature = "kernel-trace")]
    if let Some(t) = cfg.tracer {
        return tracer::run(cfg, t, argv);
    }
    let tsc = choose_counter(cfg.counter)?;
    let mut spec = RunSpec::new(Benchmark::Noise, cfg, &cfg.setup, &cfg.control, argv)?.threads(
        cfg.cpus.iter().map(|&c| Some(c)).collect(),
        vec![0; cfg.cpus.len()],
    );
    let before = details_before(cfg, tsc, &mut spec.notes);
    spec.details.extend(before.to_map());
    let plan = LoopPlan {
        threshold_ns: cfg.threshold_ns,
        duration_ns: cfg.control.duration_ns,
        loops: cfg.control.loops,
        cpu: None,
    };
    let ends = Arc::new(Mutex::new(Vec::new()));
    let mut explain = begin_explain(cfg, &mut spec.notes)?;
    let (mut workers, mut channels, mut noise) = (Vec::new(), Vec::new(), Vec::new());
    for &cpu in &cfg.cpus {
        let e = Arc::clone(&ends);
        let tap = explain.watch(&format!("cpu{cpu}"), cpu, None);
        let (w, a, n) = match tsc {
            Some(t) => worker(t, (cpu, tap), plan, e, cfg.control.interval_ns),
            None => worker(Monotonic, (cpu, tap), plan, e, cfg.control.interval_ns),
        };
        workers.push(w);
        channels.push(a);
        noise.push(n);
    }
    channels.extend(noise);
    let kept = Arc::clone(&ends);
    spec.finish = Some(Box::new(move |r: &mut RunResult| {
        let ends = kept.lock().map(|e| e.clone()).unwrap_or_default();
        let after = NoiseDetails {
            cpus: cpu_details(r, &ends),
            ..before
        };
        r.details.extend(after.to_map());
    }));
    execute(cfg, spec, channels, workers, explain)
}

/// The details known before the loops start (the counter, the RT
/// throttling, which gets its note in `notes`).
fn details_before(cfg: &NoiseConfig, tsc: Option<Tsc>, notes: &mut Vec<String>) -> NoiseDetails {
    let (runtime, period) = rt_throttling();
    let real_time = matches!(
        cfg.setup.rt.sched,
        crate::sys::sched::Sched::Fifo(_) | crate::sys::sched::Sched::Rr(_)
    );
    notes.extend(throttling_note(real_time, runtime, period));
    let counter = match tsc {
        Some(_) => CounterKind::Tsc,
        None => CounterKind::Monotonic,
    };
    NoiseDetails {
        counter: counter.name().into(),
        counter_mhz: tsc.map(|t| (t.mhz() * 1000.0).round() / 1000.0),
        threshold_ns: cfg.threshold_ns,
        rt_runtime_us: runtime,
        rt_period_us: period,
        ..NoiseDetails::default()
    }
}

/// `--explain`'s tracing of the measured CPUs, set up before the loops:
/// every gap above the threshold attributed and summed by cause.
fn begin_explain(cfg: &NoiseConfig, notes: &mut Vec<String>) -> Result<Explaining> {
    let Some(worst) = cfg.explain else {
        return Ok(Explaining::default());
    };
    let mut ask = Ask::new(Some(worst), &cfg.cpus, "own loop");
    ask.every = true;
    let e = Explaining::begin(&ask, notes)?;
    notes.push(format!(
        "--explain: every gap above {} attributed and summed by cause per CPU (the noise lines), the {worst} longest of each CPU explained",
        crate::units::human_duration(cfg.threshold_ns)
    ));
    Ok(e)
}

/// Run `workers` with rtlat's own threads kept off the measured CPUs, then
/// print the stolen-time lines of the summary.
fn execute(
    cfg: &NoiseConfig,
    mut spec: RunSpec,
    channels: Vec<Channel>,
    workers: Vec<Worker>,
    explain: Explaining,
) -> Result<Outcome> {
    keep_off(&cfg.cpus, &mut spec.notes);
    let outcome = explain.execute(spec, channels, workers, MONO)?;
    for line in crate::render::describe::noise_lines(&outcome.result) {
        crate::outln!("{line}");
    }
    Ok(outcome.outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_loop_is_one_clock_read_at_least() {
        assert_eq!(loop_floor(0, 9.46), 9);
        assert_eq!(loop_floor(-3, 9.6), 10);
        assert_eq!(loop_floor(23, 9.46), 23);
    }

    #[test]
    fn throttling_is_explained_only_for_real_time_loops() {
        assert_eq!(throttling_note(false, Some(950_000), Some(1_000_000)), None);
        let on = throttling_note(true, Some(950_000), Some(1_000_000)).unwrap_or_default();
        assert!(on.contains("up to 50 ms of every 1000 ms"), "{on}");
        let off = throttling_note(true, Some(-1), Some(1_000_000)).unwrap_or_default();
        assert!(off.contains("off"), "{off}");
        assert_eq!(throttling_note(true, None, None), None);
    }
}
