//! The phrases and figures every renderer shows the same way: the machine,
//! the loads, the run's settings, a result's main figure.

use super::loaded::one_line;
use crate::result::model::MainSeries;
use crate::result::{RunResult, ThreadResult};
use crate::stats::histogram::Overflow;
use crate::stats::summary::Percentile;
use crate::stats::{Histogram, Summary};
use crate::units::{human_duration, secs, us};

/// The machine in one line: host, kernel (preempt model), CPU model, CPUs, arch, hypervisor.
pub fn machine_of(r: &RunResult) -> String {
    let s = &r.system;
    let mut parts = Vec::new();
    if let Some(h) = s.hostname.as_deref().filter(|h| !h.is_empty()) {
        parts.push(h.to_string());
    }
    if let Some(k) = s.kernel_release.as_deref().filter(|k| !k.is_empty()) {
        let model = if s.preempt_model.is_empty() || s.preempt_model == "unknown" {
            String::new()
        } else {
            format!(" ({})", s.preempt_model)
        };
        parts.push(format!("Linux {k}{model}"));
    }
    if let Some(m) = s
        .cpu_model
        .as_deref()
        .or(s.device_tree_model.as_deref())
        .or(s.hardware.as_deref())
        .filter(|m| !m.is_empty())
    {
        parts.push(m.to_string());
    }
    if s.cpu_count > 0 {
        parts.push(format!("{} CPUs", s.cpu_count));
    }
    if let Some(m) = s.machine.as_deref().filter(|m| !m.is_empty()) {
        parts.push(m.to_string());
    }
    if let Some(v) = s.virtualization.as_deref() {
        parts.push(format!("under {v}"));
    }
    if parts.is_empty() {
        "unknown machine".into()
    } else {
        parts.join(", ")
    }
}

/// The loads in one line: `none (idle)` or `exec:2 (812.4 ops/s), memory:32M (1.5 GB/s)`;
/// `with_rates: false` leaves the rates out.
pub fn loads_of(r: &RunResult, with_rates: bool) -> String {
    if r.loads.is_empty() {
        return "none (idle)".into();
    }
    let names: Vec<String> = r
        .loads
        .iter()
        .map(|l| {
            let rate = l.get("achieved_rate").and_then(|v| v.as_f64());
            let unit = l.get("rate_unit").and_then(|v| v.as_str()).unwrap_or("");
            match rate.filter(|_| with_rates) {
                Some(rate) => format!("{} ({})", load_name(l), crate::load::human_rate(rate, unit)),
                None => load_name(l),
            }
        })
        .collect();
    let mut s = names.join(", ");
    if !r.phases.is_empty() {
        let phases: Vec<&str> = r.phases.iter().map(|p| p.name.as_str()).collect();
        s = format!("{s}; phases {}", phases.join(" → "));
    }
    s
}

/// A load's short name: its `spec`, else `name`, else its JSON.
pub fn load_name(v: &serde_json::Value) -> String {
    for key in ["spec", "name", "kind"] {
        if let Some(s) = v.get(key).and_then(|s| s.as_str()) {
            return s.to_string();
        }
    }
    one_line(&v.to_string())
}

/// A detail value without JSON quotes for strings.
pub fn detail_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => one_line(&other.to_string()),
    }
}

/// The scheduling of a run: `SCHED_FIFO 80`, `SCHED_OTHER`; `None` when the
/// result does not record the policy (an import whose source does not say).
pub fn policy_of(r: &RunResult) -> Option<String> {
    let p = r.tuning.policy?;
    Some(match r.tuning.priority {
        Some(prio) => p.label(prio),
        None => format!("SCHED_{}", p.name().to_uppercase()),
    })
}

/// `on`/`off`, `None` when unknown.
pub fn mlock_of(r: &RunResult) -> Option<&'static str> {
    r.tuning.mlock.map(|m| if m { "on" } else { "off" })
}

/// The value held on /dev/cpu_dma_latency (`0us`, `off`); `None` when unknown.
pub fn dma_of(r: &RunResult) -> Option<String> {
    r.tuning
        .dma_latency_us
        .map(|d| d.map(|v| format!("{v}us")).unwrap_or_else(|| "off".into()))
}

/// How long the run took (`20.000s`), `None` when the result does not say.
pub fn duration_of(r: &RunResult) -> Option<String> {
    let d = r.duration_ns?;
    // An import records how finely its source gave the duration (whole
    // seconds, ms): printed to that, not to ms it does not have.
    let step = r
        .config
        .get("duration_precision_ns")
        .and_then(|v| v.as_u64())
        .unwrap_or(1);
    Some(match step {
        1_000_000_000.. => format!("{}s", d / 1_000_000_000),
        100_000_000.. => format!("{}.{}s", d / 1_000_000_000, d / 100_000_000 % 10),
        10_000_000.. => format!("{}.{:02}s", d / 1_000_000_000, d / 10_000_000 % 100),
        _ => secs(d),
    })
}

/// What the table cells show for what a result does not record.
pub const UNKNOWN: &str = "-";

/// A signed latency in µs with three decimals: `-1.250`, `12.000`.
pub fn us_signed(ns: i64) -> String {
    if ns < 0 {
        format!("-{}", us(ns.unsigned_abs()))
    } else {
        us(ns as u64)
    }
}

/// A summary's min, avg and max in µs; [`UNKNOWN`] without samples.
pub fn extremes_of(s: &Summary) -> [String; 3] {
    if s.samples == 0 {
        return [UNKNOWN, UNKNOWN, UNKNOWN].map(String::from);
    }
    [s.min_ns, s.avg_ns, s.max_ns].map(us_signed)
}

/// An optional value in µs, [`UNKNOWN`] when absent.
pub fn us_or_unknown(ns: Option<u64>) -> String {
    ns.map(us).unwrap_or_else(|| UNKNOWN.into())
}

/// A percentile in µs, `≥ 12.000` when it is a lower bound (it falls among
/// the samples beyond an imported histogram's range).
pub fn percentile_cell(p: &Percentile) -> String {
    if p.bound {
        format!("≥ {}", us(p.ns))
    } else {
        us(p.ns)
    }
}

/// Percentile `p` of a summary as a cell, [`UNKNOWN`] when it has none.
pub fn percentile_of(s: &Summary, p: f64) -> String {
    s.percentile_of(p)
        .map(percentile_cell)
        .unwrap_or_else(|| UNKNOWN.into())
}

/// The period of a run, if its configuration has one: `1ms`.
pub fn period_of(r: &RunResult) -> Option<String> {
    r.config
        .get("period_ns")
        .and_then(|v| v.as_u64())
        .map(human_duration)
}

/// A thread's histogram rebuilt from its record (checked by [`super::check`]).
pub fn histogram_of(t: &ThreadResult) -> Histogram {
    let (lo, hi) = t.summary.histogram_range();
    Histogram::from_record(&t.histogram, lo, hi).unwrap_or_default()
}

/// The samples beyond the imported histograms' range of threads, merged.
pub fn overflow_of(threads: &[&ThreadResult]) -> Option<Overflow> {
    Overflow::merged(threads.iter().filter_map(|t| t.histogram.overflow))
}

/// The first of `names` that the result has a thread of.
pub fn thread_of<'r>(r: &'r RunResult, names: &[&str]) -> Option<&'r ThreadResult> {
    names
        .iter()
        .find_map(|n| r.threads.iter().find(|t| t.name == *n))
}

/// The threads that make up a benchmark's main figure ([`crate::result::Benchmark::main_series`]),
/// that figure's name and summary.
pub fn primary(r: &RunResult) -> (String, Vec<&ThreadResult>, Summary) {
    let all = || {
        (
            "all threads".to_string(),
            r.threads.iter().collect(),
            r.total.clone(),
        )
    };
    match r.benchmark.main_series() {
        MainSeries::FirstOf(names) => match thread_of(r, names) {
            Some(t) => (t.name.clone(), vec![t], t.summary.clone()),
            None => all(),
        },
        MainSeries::Prefixed { prefix, name } => {
            let ts = leveled(r, prefix);
            if ts.is_empty() {
                all()
            } else {
                (name.to_string(), ts, r.total.clone())
            }
        }
        MainSeries::All => all(),
    }
}

/// The level of a thread named `PREFIXn/LEVEL` (`""` for `PREFIXn`).
fn level_of<'n>(prefix: &str, name: &'n str) -> Option<&'n str> {
    let rest = name.strip_prefix(prefix)?;
    let (n, level) = rest.split_once('/').unwrap_or((rest, ""));
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(level)
}

/// The levels of a result of kernel contexts, from the interrupt up.
pub const LEVELS: [&str; 3] = ["irq", "thread", "user"];

/// The kernel-context levels a result has series of, from the interrupt up
/// ([`LEVELS`]); none for a result of one level.
pub fn levels(r: &RunResult) -> Vec<&'static str> {
    let MainSeries::Prefixed { prefix, .. } = r.benchmark.main_series() else {
        return Vec::new();
    };
    let has = |l: &str| {
        r.threads
            .iter()
            .any(|t| level_of(prefix, &t.name) == Some(l))
    };
    if !has("thread") {
        return Vec::new();
    }
    LEVELS.into_iter().filter(|l| has(l)).collect()
}

/// One level's series on every CPU taken together: samples and overruns
/// added, the extremes of all, the mean weighted by samples (no percentiles:
/// they do not add up without the histograms).
pub fn level_summary(r: &RunResult, level: &str) -> Option<Summary> {
    let MainSeries::Prefixed { prefix, .. } = r.benchmark.main_series() else {
        return None;
    };
    let ss: Vec<&Summary> = r
        .threads
        .iter()
        .filter(|t| level_of(prefix, &t.name) == Some(level))
        .map(|t| &t.summary)
        .collect();
    if ss.is_empty() {
        return None;
    }
    let mut out = Summary {
        overruns: ss.iter().map(|s| s.overruns).sum(),
        ..Default::default()
    };
    let measured: Vec<&&Summary> = ss.iter().filter(|s| s.samples > 0).collect();
    if measured.is_empty() {
        return Some(out);
    }
    out.samples = measured.iter().map(|s| s.samples).sum();
    out.min_ns = measured.iter().map(|s| s.min_ns).min().unwrap_or(0);
    out.max_ns = measured.iter().map(|s| s.max_ns).max().unwrap_or(0);
    let weighted: f64 = measured
        .iter()
        .map(|s| s.avg_ns as f64 * s.samples as f64)
        .sum();
    out.avg_ns = (weighted / out.samples as f64).round() as i64;
    Some(out)
}

/// The threads named `PREFIXn` (a plain timer's `cpu0`), or, in a result of
/// kernel contexts (`timer --context`, rtla imports), those of the level
/// closest to user space: `PREFIXn/user`, else `PREFIXn/thread` — never the
/// IRQ-context series beside them.
fn leveled<'r>(r: &'r RunResult, prefix: &str) -> Vec<&'r ThreadResult> {
    ["user", "thread", ""]
        .iter()
        .map(|want| {
            r.threads
                .iter()
                .filter(|t| level_of(prefix, &t.name) == Some(*want))
                .collect::<Vec<_>>()
        })
        .find(|ts| !ts.is_empty())
        .unwrap_or_default()
}

/// Threads merged into one histogram.
pub fn merged(threads: &[&ThreadResult]) -> Histogram {
    let mut h = Histogram::new();
    for t in threads {
        if t.summary.samples > 0 {
            h.merge(&histogram_of(t));
        }
    }
    h
}

/// The line a switch or cruncher run prints after its summary, made from
/// its result, so that `report` says what the live run said:
/// `switch: via futex between threads, same CPU, armed (warm), …`,
/// `cruncher: ideal 10013.772 us (fastest of 20 calibration runs …`.
/// `None` for other benchmarks, or when the details are not the
/// benchmark's record (a result written before it).
pub fn details_line(r: &RunResult) -> Option<String> {
    use crate::result::details::{cruncher::CruncherDetails, switch::SwitchDetails, Details};
    use crate::result::Benchmark;
    match r.benchmark {
        Benchmark::Switch => Some(switch_line(&SwitchDetails::of(r)?, r)),
        Benchmark::Cruncher => Some(cruncher_line(&CruncherDetails::of(r)?, r)),
        _ => None,
    }
}

/// [`details_line`] of a switch run from its record `d` (the live run has
/// it typed: nothing is read back from the result's JSON).
pub fn switch_line(d: &crate::result::details::switch::SwitchDetails, r: &RunResult) -> String {
    let conf = |k: &str| r.config.get(k);
    let mut how = vec![format!(
        "via {} between {}",
        d.via,
        if d.processes {
            "a thread and a process"
        } else {
            "threads"
        }
    )];
    if let Some(p) = conf("placement").and_then(|v| v.as_str()) {
        how.push(format!("{p} CPU"));
    }
    if let Some(warm) = conf("warm").and_then(|v| v.as_bool()) {
        how.push(if warm { "armed (warm)" } else { "cold" }.into());
    }
    let prio = |k: &str| conf(k).and_then(|v| v.as_i64());
    if let (Some(e), Some(w)) = (prio("wakee_priority"), prio("waker_priority")) {
        how.push(format!("wakee priority {e}, waker {w}"));
    }
    let sum = |f: fn(&crate::result::details::switch::PairDetails) -> u64| -> u64 {
        d.pairs.iter().map(f).sum()
    };
    let per_pair: Vec<String> = d
        .pairs
        .iter()
        .map(|p| format!("{} {}", p.name, p.lost))
        .collect();
    format!(
        "switch: {}; lost wakes {} ({}): wakee busy {}, waker late {}",
        how.join(", "),
        sum(|p| p.lost),
        per_pair.join(", "),
        sum(|p| p.wakee_busy),
        sum(|p| p.waker_late),
    )
}

/// [`details_line`] of a cruncher run from its record `d`.
pub fn cruncher_line(
    d: &crate::result::details::cruncher::CruncherDetails,
    r: &RunResult,
) -> String {
    format!(
        "cruncher: ideal {} us (fastest of {} calibration runs of {} iterations, slowest {} us); stretch {:.3}; {} of {} runs beyond +{}%",
        us(d.ideal_ns),
        d.calibration_runs,
        d.iterations,
        us(d.calibration_slowest_ns),
        d.stretch.unwrap_or(0.0),
        d.beyond_tolerance.unwrap_or(0),
        r.total.samples,
        d.tolerance * 100.0
    )
}

/// A noise result's stolen time per CPU, one line each:
/// `noise: cpu1: 145.422 us stolen by 1060 gaps above 5.000 us (0.0485 %), …`.
pub fn noise_lines(r: &RunResult) -> Vec<String> {
    use crate::result::details::{noise::NoiseDetails, Details};
    let Some(d) = NoiseDetails::of(r) else {
        return Vec::new();
    };
    let mut lines: Vec<String> = d
        .osnoise
        .iter()
        .map(|c| {
            format!(
                "osnoise: cpu{}: {} us noise in {} us ({:.5} % available), longest {} us; hw {} nmi {} irq {} softirq {} thread {}",
                c.cpu, c.noise_us, c.runtime_us, c.available_pct, c.max_single_noise_us, c.hw, c.nmi, c.irq, c.softirq, c.thread
            )
        })
        .collect();
    if let Some(h) = &d.hwlat {
        lines.push(format!(
            "hwlat: {} samples above {} us, longest inner {} us, outer {} us, {} NMIs (width {} of window {} us)",
            h.samples, h.threshold_us, h.max_inner_us, h.max_outer_us, h.nmi_count, h.width_us, h.window_us
        ));
    }
    lines.extend(d.cpus
        .iter()
        .map(|c| {
            format!(
                "noise: cpu{}: {} us stolen by {} gaps above {} us ({:.4} %), loop {} ns (clock read {} ns, {}), {} loops",
                c.cpu,
                us(c.stolen_ns),
                c.gaps_above,
                us(d.threshold_ns),
                c.stolen_fraction * 100.0,
                c.floor_ns,
                c.read_cost_ns,
                d.counter,
                c.loops
            )
        }));
    // `--explain`: the gaps above the threshold by cause.
    let totals: Vec<crate::result::totals::CpuTotals> = r
        .details
        .get("explain")
        .and_then(|e| e.get("totals"))
        .and_then(|t| serde_json::from_value(t.clone()).ok())
        .unwrap_or_default();
    lines.extend(
        totals
            .iter()
            .map(|t| format!("noise: cpu{}: by cause, {}", t.cpu, t.line("gaps"))),
    );
    lines
}
