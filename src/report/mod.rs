//! `rtlat report`, `rtlat compare` and `rtlat import`: what people read and
//! compare after a run.
//!
//! - [`text`]: the text report of a result (system, load, per-thread table);
//! - [`svg`]: a small deterministic SVG writer and the plots (histogram with a
//!   log count axis, latency over time, latency by percentile);
//! - [`html`]: one self-contained HTML report (inline SVG, embedded data);
//! - [`compare`]: one row per result, as text, Markdown or CSV, and the
//!   regression check against a baseline;
//!
//! Everything here reads files that may come from anywhere: every reader
//! checks what it uses and fails with one line (exit 2), never a panic.

pub mod compare;
pub mod html;
pub mod svg;
pub mod text;

#[cfg(test)]
mod testdata;
#[cfg(test)]
mod tests;

use crate::error::{Error, Outcome, Result};
use crate::result::{RunResult, ThreadResult};
use crate::stats::{Histogram, Summary};
use std::path::{Path, PathBuf};

/// Result files above this size are refused before reading (a result holds
/// histograms of at most 7424 buckets and 4096 series points per thread).
pub const MAX_RESULT_BYTES: u64 = 256 << 20;

const REPORT_EXAMPLES: &str = "\
Examples:
  rtlat report r.json                               the text summary
  rtlat report r.json --svg r.svg                   histogram, latency over time, percentiles
  rtlat report idle.json load.json --html report.html
                                                    one self-contained HTML page (no network)";

const COMPARE_EXAMPLES: &str = "\
One row per result; the label is the run's --label, else hostname + kernel release.
Columns follow the benchmark: timer min/avg/max/p99/p99.99/overruns/duration;
switch min/avg/max/lost; net rtt/tx/rx; irq irq/user/round trip; cruncher
ideal/max/stretch. Latencies in us.

Examples:
  rtlat compare a.json b.json c.json
  rtlat compare *.json --format markdown > table.md
  rtlat compare new.json --baseline old.json --fail-if-worse 10%        exit 1 if max got >10% worse
  rtlat compare new.json --baseline old.json --fail-if-worse 5% --metric p99.99
  rtlat compare a.json b.json --svg overlay.svg                         histograms overlaid";

#[derive(Debug, clap::Args)]
#[command(after_help = REPORT_EXAMPLES)]
pub struct ReportArgs {
    /// Result files (from --json of a benchmark, or from rtlat import)
    #[arg(required = true, value_name = "RESULT.json")]
    pub results: Vec<PathBuf>,
    /// Write the plots as one SVG file: latency histogram (log count axis), latency over time, latency by percentile
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write one self-contained HTML report: system, config, loads, summaries, every plot and the result data
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Do not print the text summary
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, clap::Args)]
#[command(after_help = COMPARE_EXAMPLES)]
pub struct CompareArgs {
    /// Result files, one row each
    #[arg(required = true, value_name = "RESULT.json")]
    pub results: Vec<PathBuf>,
    /// Table format
    #[arg(long, value_enum, default_value = "text")]
    pub format: compare::TableFormat,
    /// A reference result: shown first, and the others are checked against it
    #[arg(long, value_name = "RESULT.json")]
    pub baseline: Option<PathBuf>,
    /// Exit 1 if --metric of any result is worse than the baseline's by more than PERCENT (e.g. 10%)
    #[arg(long, value_name = "PERCENT", requires = "baseline", value_parser = compare::parse_margin)]
    pub fail_if_worse: Option<f64>,
    /// The metric --baseline compares: min, avg, max, stddev, p50 … p99.9999, overruns, lost, stretch
    #[arg(long, default_value = "max", value_parser = compare::Metric::parse)]
    pub metric: compare::Metric,
    /// Write the results' histograms overlaid (and their percentile curves) as SVG
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

/// A result read from a file, checked, with the label readers show.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub path: PathBuf,
    pub result: RunResult,
    pub label: String,
}

/// Read and check a result file; every failure is one line with exit code 2.
pub fn load(path: &Path) -> Result<Loaded> {
    let meta = std::fs::metadata(path)
        .map_err(|e| Error::usage(format!("cannot read {}: {e}", path.display())))?;
    if meta.is_dir() {
        return Err(Error::usage(format!(
            "{} is a directory; give a result file written with --json",
            path.display()
        )));
    }
    if meta.len() > MAX_RESULT_BYTES {
        return Err(Error::usage(format!(
            "{}: {} bytes is too large for an rtlat result (results stay below {} MiB); give a file written with --json",
            path.display(),
            meta.len(),
            MAX_RESULT_BYTES >> 20
        )));
    }
    let result = RunResult::load(path).map_err(|e| Error::usage(one_line(&e)))?;
    check(&result).map_err(|e| Error::usage(format!("{}: {e}", path.display())))?;
    let label = label_of(&result, path);
    Ok(Loaded {
        path: path.to_path_buf(),
        result,
        label,
    })
}

/// Load several files, failing on the first bad one.
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Loaded>> {
    paths.iter().map(|p| load(p)).collect()
}

/// Keep a message on one line and short (serde errors may quote input).
pub(crate) fn one_line(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if out.chars().count() > 300 {
        out.chars().take(300).collect::<String>() + "…"
    } else {
        out
    }
}

/// The checks a reader needs beyond the schema: decodable histograms, sane
/// extremes and percentiles, counts that cannot overflow when merged.
pub fn check(r: &RunResult) -> std::result::Result<(), String> {
    if r.benchmark.trim().is_empty() {
        return Err("the benchmark name is empty".into());
    }
    let mut grand_total: u64 = 0;
    let groups = std::iter::once(("", &r.threads, &r.total)).chain(
        r.phases
            .iter()
            .map(|p| (p.name.as_str(), &p.threads, &p.total)),
    );
    for (phase, threads, total) in groups {
        let at = |name: &str| {
            if phase.is_empty() {
                format!("thread '{name}'")
            } else {
                format!("phase '{phase}', thread '{name}'")
            }
        };
        check_summary(total).map_err(|e| format!("{}: {e}", at("total")))?;
        for t in threads.iter() {
            check_summary(&t.summary).map_err(|e| format!("{}: {e}", at(&t.name)))?;
            let mut sum: u64 = 0;
            let mut prev: Option<u64> = None;
            for b in &t.histogram.buckets {
                if b.high_ns < b.low_ns || prev.is_some_and(|p| b.low_ns <= p) {
                    return Err(format!(
                        "{}: histogram buckets are not increasing and disjoint",
                        at(&t.name)
                    ));
                }
                prev = Some(b.high_ns);
                sum = sum
                    .checked_add(b.count)
                    .ok_or_else(|| format!("{}: histogram counts overflow", at(&t.name)))?;
            }
            grand_total = grand_total
                .checked_add(sum)
                .ok_or_else(|| format!("{}: histogram counts overflow", at(&t.name)))?;
            Histogram::from_record(&t.histogram, t.summary.min_ns, t.summary.max_ns)
                .map_err(|e| format!("{}: {e}", at(&t.name)))?;
            if t.series.points.len() > 1 << 20 {
                return Err(format!("{}: more than 2^20 series points", at(&t.name)));
            }
        }
    }
    Ok(())
}

fn check_summary(s: &Summary) -> std::result::Result<(), String> {
    if s.samples > 0 && s.min_ns > s.max_ns {
        return Err(format!("min {} ns is above max {} ns", s.min_ns, s.max_ns));
    }
    for p in &s.percentiles {
        if !(p.p > 0.0 && p.p <= 100.0) {
            return Err(format!("percentile {} is outside (0, 100]", p.p));
        }
    }
    Ok(())
}

/// The label readers show: `--label`, else hostname + kernel release, else the file name.
pub fn label_of(r: &RunResult, path: &Path) -> String {
    if let Some(l) = r.label.as_deref().filter(|l| !l.trim().is_empty()) {
        return l.trim().to_string();
    }
    let parts: Vec<&str> = [
        r.system.hostname.as_deref(),
        r.system.kernel_release.as_deref(),
    ]
    .into_iter()
    .flatten()
    .filter(|s| !s.trim().is_empty())
    .collect();
    if !parts.is_empty() {
        return parts.join(" ");
    }
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "result".into())
}

/// What a benchmark measures, for titles.
pub fn what_of(benchmark: &str) -> String {
    match benchmark {
        "timer" => "Timer wake-up latency".into(),
        "switch" => "Context-switch latency".into(),
        "cruncher" => "Computation time (cruncher)".into(),
        "net" => "UDP latency".into(),
        "irq" => "Interrupt latency".into(),
        other => format!("{other} latency"),
    }
}

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
                Some(rate) => format!("{} ({})", load_name(l), human_rate(rate, unit)),
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

/// `1.5 GB/s`, `812.4 ops/s`.
pub fn human_rate(rate: f64, unit: &str) -> String {
    if unit == "B/s" {
        let mut v = rate;
        for prefix in ["B/s", "KB/s", "MB/s", "GB/s"] {
            if v < 1000.0 || prefix == "GB/s" {
                return format!("{v:.1} {prefix}");
            }
            v /= 1000.0;
        }
    }
    format!("{rate:.1} {unit}")
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

/// A thread's histogram rebuilt from its record (checked by [`check`]).
pub fn histogram_of(t: &ThreadResult) -> Histogram {
    Histogram::from_record(&t.histogram, t.summary.min_ns, t.summary.max_ns).unwrap_or_default()
}

/// The threads that make up a benchmark's main figure, that figure's name and summary.
/// timer: the `cpu*` threads (rtla imports keep IRQ latencies apart), switch: all pairs,
/// cruncher: `run`, net: `rtt`, irq: `roundtrip`, else `wake`, else `irq`.
pub fn primary(r: &RunResult) -> (String, Vec<&ThreadResult>, Summary) {
    let by_name = |n: &str| r.threads.iter().find(|t| t.name == n);
    let single = match r.benchmark.as_str() {
        "cruncher" => by_name("run"),
        "net" => by_name("rtt"),
        "irq" => by_name("roundtrip")
            .or_else(|| by_name("wake"))
            .or_else(|| by_name("irq")),
        _ => None,
    };
    if let Some(t) = single {
        return (t.name.clone(), vec![t], t.summary.clone());
    }
    let cpu: Vec<&ThreadResult> = r
        .threads
        .iter()
        .filter(|t| t.name.starts_with("cpu"))
        .collect();
    if r.benchmark == "timer" && !cpu.is_empty() {
        return ("all CPUs".into(), cpu, r.total.clone());
    }
    (
        "all threads".into(),
        r.threads.iter().collect(),
        r.total.clone(),
    )
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

/// Write an output file atomically; failures exit 4.
pub(crate) fn write_output(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::result::write_atomically(path, bytes)
        .map_err(|e| Error::io(format!("cannot write {}: {e}", path.display())))
}

pub fn run_report(args: &ReportArgs) -> Result<Outcome> {
    let loaded = load_all(&args.results)?;
    if let Some(path) = &args.svg {
        let plots: Vec<svg::Plot> = loaded.iter().flat_map(svg::report_plots).collect();
        write_output(path, svg::document(&plots).as_bytes())?;
    }
    if let Some(path) = &args.html {
        write_output(path, html::report(&loaded).as_bytes())?;
    }
    if !args.quiet {
        let texts: Vec<String> = loaded.iter().map(text::report).collect();
        print!("{}", texts.join("\n"));
    }
    Ok(Outcome::Success)
}

pub fn run_compare(args: &CompareArgs) -> Result<Outcome> {
    compare::run(args)
}
