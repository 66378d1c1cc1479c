//! `rtlat cruncher`: how much a fixed computation is stretched by interference.
//!
//! First the computation is calibrated on the measuring CPU at the run's
//! policy and priority, with nothing else of rtlat running: its iteration count
//! is sized to `--work`, then it is timed `--calibration-runs` times and the
//! minimum is the *ideal*. Then it runs once per `--period` (absolute timer)
//! and every run's duration is one sample. The stretch is max / ideal; runs
//! longer than ideal × (1 + tolerance) are counted.

use crate::bench::threads::{writing, Threads};
use crate::engine::Setup;
use crate::engine::StopFlag;
use crate::engine::{self, Finisher, RunControl, RunSpec};
use crate::error::{Error, Outcome, Result};
use crate::result::details::{cruncher::CruncherDetails, Details};
use crate::result::Benchmark;
use crate::result::RunResult;
use crate::stats::recorder::Recorder;
use crate::stats::tap::Tap;
use crate::sys;
use crate::units::us;
use serde::Serialize;
use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// Validated settings of a cruncher run.
#[derive(Debug, Clone, Serialize)]
pub struct CruncherConfig {
    pub cpu: usize,
    pub work_ns: u64,
    pub period_ns: u64,
    /// As a fraction (0.05 = 5 %).
    pub tolerance: f64,
    pub calibration_runs: u32,
    /// The worst runs explained (`--explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<usize>,
    #[serde(flatten)]
    pub control: RunControl,
    #[serde(skip)]
    pub setup: Setup,
}

/// The fixed computation: `iterations` steps of a xorshift chain folded into a
/// 16-word table on the stack. Each step needs the previous one (nothing to
/// parallelise or skip), it allocates nothing, and `black_box` on its inputs
/// and result keeps the optimiser from computing it ahead of time.
#[inline(never)]
pub fn crunch(iterations: u64) -> u64 {
    let mut table = [0u64; 16];
    let mut x = black_box(0x2545_F491_4F6C_DD1Du64);
    let n = black_box(iterations);
    let mut i = 0u64;
    while i < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let slot = &mut table[(x >> 60) as usize];
        *slot = slot.rotate_left(7) ^ x.wrapping_add(i);
        i += 1;
    }
    black_box(table.iter().fold(x, |a, &t| a.rotate_left(1) ^ t))
}

const CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;

/// Sleeps longer than this are sliced to see a stop request in time.
const SLICED_ABOVE_NS: u64 = 400_000_000;

/// Duration of one computation of `iterations` steps, in ns.
#[inline(always)]
fn timed(iterations: u64) -> u64 {
    let t0 = sys::clock::now_ns(CLOCK);
    black_box(crunch(iterations));
    sys::clock::now_ns(CLOCK).saturating_sub(t0)
}

/// The sized computation and its ideal duration.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Calibration {
    pub iterations: u64,
    /// Fastest calibration run: the ideal.
    pub ideal_ns: u64,
    /// Slowest calibration run (how quiet calibration was).
    pub slowest_ns: u64,
    pub runs: u32,
}

/// Size the computation to `work_ns`, then time it `runs` times, one run per
/// `period` as in the measurement (a CPU's speed depends on its duty cycle:
/// turbo budgets, thermal limits, idle states).
pub fn calibrate(work_ns: u64, runs: u32, period: u64) -> Calibration {
    calibrate_until(work_ns, runs, period, &StopFlag::default())
}

/// [`calibrate`], cut short when `stop` is set: the sleeps between runs are
/// sliced so a stop is seen within a fraction of a second, and `runs` counts
/// the timed runs done (0 when stopped before the first; the ideal is then
/// the sizing's estimate).
pub fn calibrate_until(work_ns: u64, runs: u32, period: u64, stop: &StopFlag) -> Calibration {
    black_box(crunch(10_000)); // warm caches and branch predictors
    let mut n: u64 = 1 << 12;
    let goal = (work_ns / 4).clamp(1, 20_000_000);
    while timed(n) < goal && n < 1 << 40 && !stop.is_set() {
        n *= 2;
    }
    let t = (0..3).map(|_| timed(n)).min().unwrap_or(1).max(1);
    let iterations = ((n as u128 * work_ns as u128) / t as u128).clamp(1, u64::MAX as u128) as u64;
    let (mut ideal, mut slowest) = (u64::MAX, 0);
    let mut next = sys::clock::now_ns(CLOCK) + period;
    let mut done = 0;
    while done < runs.max(1) && !stop.is_set() {
        if !super::switch::pause(CLOCK, next, stop, period > SLICED_ABOVE_NS) {
            break;
        }
        let d = timed(iterations);
        ideal = ideal.min(d);
        slowest = slowest.max(d);
        next += period;
        done += 1;
    }
    if done == 0 {
        ideal = work_ns;
    }
    Calibration {
        iterations,
        ideal_ns: ideal.max(1),
        slowest_ns: slowest,
        runs: done,
    }
}

/// Calibrate on the measuring CPU at the run's policy and priority, with the
/// run's memory locking and DMA latency request held, on a thread of its own,
/// before the measurement starts.
fn calibrate_on_cpu(cfg: &CruncherConfig, stop: &StopFlag) -> Result<Calibration> {
    // The run's own setup (later) sizes the reporter's heap.
    let _held = engine::rt::Runtime::setup(&cfg.setup.rt, 0)?;
    let (rt, cpu, work, runs, period) = (
        cfg.setup.rt.clone(),
        cfg.cpu,
        cfg.work_ns,
        cfg.calibration_runs,
        cfg.period_ns,
    );
    let stop = stop.clone();
    let h = std::thread::Builder::new()
        .name("rtlat-calibrate".into())
        .spawn(move || -> Result<Calibration> {
            engine::rt::enter_rt_thread(&rt, Some(cpu))?;
            Ok(calibrate_until(work, runs, period, &stop))
        })
        .map_err(|e| Error::env(format!("cannot start the calibration thread: {e}")).because(e))?;
    h.join()
        .map_err(|_| Error::env("the calibration thread panicked"))?
}

/// Calibrate with SIGINT/SIGTERM/SIGHUP watched: one of them cuts the
/// calibration short and is returned, and sent again to this process, where
/// it stays pending (blocked) until the run's own signal watch takes it: the
/// run then ends at once as interrupted and still writes its result.
fn calibrate_watched(cfg: &CruncherConfig) -> Result<(Calibration, Option<i32>)> {
    let stop = StopFlag::default();
    let watch = sys::signals::SignalWatch::start(stop.clone()).map_err(|e| {
        Error::env(format!(
            "cannot block signals or start the signal thread: {e}"
        ))
        .because(e)
    })?;
    let cal = calibrate_on_cpu(cfg, &stop);
    let caught = watch.caught();
    drop(watch);
    if let Some(sig) = caught {
        sys::signals::raise_to_process(sig);
    }
    Ok((cal?, caught))
}

/// What the measuring thread is told to do.
struct Plan {
    iterations: u64,
    period: u64,
    /// Runs longer than this are beyond tolerance.
    limit: u64,
    duration: Option<u64>,
    loops: Option<u64>,
}

/// The measuring loop: one computation per period, each handed to `tap`
/// (`--explain`) as (start, time taken); returns the runs beyond tolerance.
fn measure(rec: &mut Recorder, plan: &Plan, start: u64, stop: &StopFlag, tap: Option<&Tap>) -> u64 {
    let mut next = start;
    let end = plan.duration.map_or(u64::MAX, |d| start + d);
    let loops = plan.loops.unwrap_or(u64::MAX);
    let sliced = plan.period > SLICED_ABOVE_NS;
    let (mut n, mut beyond) = (0u64, 0u64);
    while n < loops && next < end && !stop.is_set() {
        if !super::switch::pause(CLOCK, next, stop, sliced) {
            break;
        }
        let t0 = sys::clock::now_ns(CLOCK);
        black_box(crunch(plan.iterations));
        let t1 = sys::clock::now_ns(CLOCK);
        let took = t1.saturating_sub(t0);
        let missed = t1.saturating_sub(next) / plan.period;
        rec.record(took, t0.saturating_sub(start), missed);
        if let Some(t) = tap {
            t.push(t0, took);
        }
        beyond += u64::from(took > plan.limit);
        next += plan.period * (1 + missed);
        n += 1;
    }
    beyond
}

/// The limit a run must stay within: ideal × (1 + tolerance).
fn limit(ideal_ns: u64, tolerance: f64) -> u64 {
    ideal_ns + (ideal_ns as f64 * tolerance).round() as u64
}

/// Run the cruncher end to end.
pub fn run(cfg: &CruncherConfig, argv: Vec<String>) -> Result<Outcome> {
    let (cal, interrupted) = calibrate_watched(cfg)?;
    let (mut spec, calibrated) = spec(cfg, &cal, interrupted, argv)?;
    let (cpu, interval) = (Some(cfg.cpu), cfg.control.interval_ns);
    let mut threads =
        Threads::begin_on(cpu, (cfg.explain, false), "own computation", None, interval)?;
    let beyond = Arc::new(AtomicU32::new(0));
    // A signal during calibration: nothing is measured.
    let measuring = interrupted.is_none();
    measuring_thread(cfg, &cal, measuring, Arc::clone(&beyond), &mut threads);
    let said = Arc::new(Mutex::new(None));
    spec.finish = Some(finisher(calibrated, beyond, Arc::clone(&said)));
    let outcome = threads.execute(spec, CLOCK)?;
    // The calibration and the stretch: as `report` says it.
    if let Some(line) = said.lock().ok().and_then(|mut s| s.take()) {
        crate::outln!("{line}");
    }
    Ok(outcome.outcome)
}

/// The run as calibrated (`interrupted`: by this signal), and the details
/// known before it.
fn spec(
    cfg: &CruncherConfig,
    cal: &Calibration,
    interrupted: Option<i32>,
    argv: Vec<String>,
) -> Result<(RunSpec, CruncherDetails)> {
    let mut spec = RunSpec::new(Benchmark::Cruncher, cfg, &cfg.setup, &cfg.control, argv)?
        .threads(vec![Some(cfg.cpu)], vec![0]);
    if let Some(sig) = interrupted {
        spec.notes.push(format!(
            "{} came during calibration: nothing was measured",
            sys::signals::name(sig)
        ));
    }
    let calibrated = CruncherDetails {
        ideal_ns: cal.ideal_ns,
        work_ns: cfg.work_ns,
        iterations: cal.iterations,
        calibration_runs: cal.runs,
        calibration_slowest_ns: cal.slowest_ns,
        tolerance: cfg.tolerance,
        beyond_tolerance: None,
        stretch: None,
    };
    spec.details.extend(calibrated.to_map());
    Ok((spec, calibrated))
}

/// The measuring thread: its series `run` (explained with `--explain`),
/// one computation per period unless not `measuring`, the runs beyond
/// tolerance counted into `beyond`.
fn measuring_thread(
    cfg: &CruncherConfig,
    cal: &Calibration,
    measuring: bool,
    beyond: Arc<AtomicU32>,
    threads: &mut Threads,
) {
    let plan = Plan {
        iterations: cal.iterations,
        period: cfg.period_ns,
        limit: limit(cal.ideal_ns, cfg.tolerance),
        duration: cfg.control.duration_ns,
        loops: cfg.control.loops,
    };
    let mut rec = threads.series("run", Some(cfg.cpu));
    let tap = threads.watch("run", Some(cfg.cpu), Some(cfg.period_ns));
    threads.worker(
        "rtlat-cruncher".into(),
        Some(cfg.cpu),
        move |start, stop| {
            let n = writing(tap.as_deref(), || {
                if measuring {
                    measure(&mut rec, &plan, start, stop, tap.as_deref())
                } else {
                    0
                }
            });
            rec.finish();
            beyond.store(n.min(u32::MAX as u64) as u32, Ordering::Release);
        },
    );
}

/// The run's finisher: the stretch and the runs beyond tolerance into the
/// details, and a note when a run beat the calibrated ideal.
/// `said`: the details line, for the live run to print.
fn finisher(
    calibrated: CruncherDetails,
    beyond: Arc<AtomicU32>,
    said: Arc<Mutex<Option<String>>>,
) -> Finisher {
    let (ideal, tol) = (calibrated.ideal_ns, calibrated.tolerance);
    Box::new(move |r: &mut RunResult| {
        let ended = CruncherDetails {
            beyond_tolerance: Some(beyond.load(Ordering::Acquire).into()),
            stretch: Some(stretch(r.total.max_ns.max(0) as u64, ideal)),
            ..calibrated
        };
        r.details.extend(ended.to_map());
        if let Ok(mut s) = said.lock() {
            *s = Some(crate::render::describe::cruncher_line(&ended, r));
        }
        let floor = ideal.saturating_sub((ideal as f64 * tol).round() as u64);
        if r.total.samples > 0 && r.total.min_ns < crate::stats::summary::signed(floor) {
            r.notes.push(format!(
                "the fastest run ({} us) beat the calibrated ideal ({} us) by more than the tolerance: this CPU's speed varies (frequency scaling, an SMT sibling, a hypervisor); fix the CPU frequency or raise --calibration-runs",
                us(r.total.min_ns.max(0) as u64),
                us(ideal)
            ));
        }
    })
}

/// Longest run over the ideal (0 without runs).
fn stretch(max_ns: u64, ideal_ns: u64) -> f64 {
    if max_ns == 0 || ideal_ns == 0 {
        0.0
    } else {
        max_ns as f64 / ideal_ns as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::recorder;

    #[test]
    fn the_computation_is_deterministic_and_scales_with_iterations() {
        assert_eq!(crunch(1000), crunch(1000));
        assert_ne!(crunch(1000), crunch(1001));
        // Ten times the iterations take clearly longer (not optimised away).
        let small = (0..5).map(|_| timed(20_000)).min().unwrap_or(0);
        let large = (0..5).map(|_| timed(200_000)).min().unwrap_or(0);
        assert!(large > 4 * small, "small {small} ns, large {large} ns");
    }

    #[test]
    fn calibration_sizes_the_work() {
        let c = calibrate(2_000_000, 5, 4_000_000);
        assert!(c.ideal_ns > 0 && c.ideal_ns <= c.slowest_ns);
        assert_eq!(c.runs, 5);
        // Sized to 2 ms: within a generous factor on a shared machine.
        assert!(
            (500_000..8_000_000).contains(&c.ideal_ns),
            "ideal {} ns",
            c.ideal_ns
        );
    }

    #[test]
    fn the_limit_is_the_ideal_plus_the_tolerance() {
        assert_eq!(limit(1000, 0.05), 1050);
        assert_eq!(limit(1000, 0.0), 1000);
    }

    #[test]
    fn measure_counts_runs_beyond_tolerance() {
        let (mut rec, _col) = recorder::pair(1_000_000_000);
        let plan = Plan {
            iterations: 1000,
            period: 1_000_000,
            limit: 0, // every run is beyond
            duration: None,
            loops: Some(5),
        };
        let start = sys::clock::now_ns(CLOCK);
        let beyond = measure(&mut rec, &plan, start, &StopFlag::default(), None);
        assert_eq!(beyond, 5);
        assert_eq!(rec.totals().samples, 5);
        assert!(rec.totals().min > 0);
    }

    #[test]
    fn stretch_is_max_over_ideal() {
        assert_eq!(stretch(1500, 1000), 1.5);
        assert_eq!(stretch(0, 1000), 0.0);
    }
}
