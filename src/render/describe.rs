//! The phrases and figures every renderer shows the same way: the machine,
//! the loads, the run's settings, a result's main figure.

use super::loaded::one_line;
use crate::result::model::MainSeries;
use crate::result::{RunResult, ThreadResult};
use crate::stats::{Histogram, Summary};
use crate::units::human_duration;

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

/// The scheduling of a run: `SCHED_FIFO 80`, `SCHED_OTHER`.
pub fn policy_of(r: &RunResult) -> String {
    r.tuning.policy.label(r.tuning.priority)
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
    Histogram::from_record(&t.histogram, t.summary.min_ns, t.summary.max_ns).unwrap_or_default()
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
            let ts: Vec<&ThreadResult> = r
                .threads
                .iter()
                .filter(|t| t.name.starts_with(prefix))
                .collect();
            if ts.is_empty() {
                all()
            } else {
                (name.to_string(), ts, r.total.clone())
            }
        }
        MainSeries::All => all(),
    }
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
