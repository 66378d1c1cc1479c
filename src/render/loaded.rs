//! Result files as readers take them: read, checked, labelled.
//!
//! Everything here reads files that may come from anywhere: every reader
//! checks what it uses and fails with one line (exit 2), never a panic.

use super::consistent::{groups, place};
use crate::error::{Error, Result};
use crate::result::RunResult;
use crate::stats::{Histogram, Summary};
use std::path::{Path, PathBuf};

/// Result files above this size are refused before reading (a result holds
/// histograms of at most 7424 buckets and 4096 series points per thread).
pub const MAX_RESULT_BYTES: u64 = crate::input::MAX_INPUT_BYTES;

/// The mark of a result measured under an emulator, after its label.
pub const EMULATED: &str = " (emulated)";

/// A result read from a file, checked, with the label readers show.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub path: PathBuf,
    pub result: RunResult,
    pub label: String,
}

impl Loaded {
    /// A result with the label [`label_of`] gives it, marked when the run
    /// did not finish (a file saved mid-run, or a killed run) and when it
    /// ran under an emulator (its figures are not the hardware's). The
    /// label's control characters are escapes ([`super::printable`]):
    /// every renderer shows it.
    pub fn new(path: PathBuf, result: RunResult) -> Loaded {
        let label = label_of(&result, &path);
        let mut l = Loaded {
            path,
            result,
            label: String::new(),
        };
        l.set_label(&label);
        l
    }

    fn set_label(&mut self, label: &str) {
        self.label = super::printable::printable_string(label);
        if !self.result.complete {
            self.label.push_str(" (incomplete)");
        }
        if self.result.system.emulation.is_some() {
            self.label.push_str(EMULATED);
        }
    }
}

/// Give results without a `--label` names that tell them apart: host and
/// kernel, and where those collide (boards often share a host name), the
/// architecture, the board model and at last the file name, each only
/// where it differs among the results that collide.
pub fn tell_apart<'a>(all: impl IntoIterator<Item = &'a mut Loaded>) {
    const HOST: usize = 0;
    const KERNEL: usize = 3;
    let parts = |l: &Loaded| {
        let s = &l.result.system;
        let named = |v: Option<&str>| v.map(str::trim).filter(|v| !v.is_empty()).map(String::from);
        let file = l
            .path
            .file_stem()
            .map(|f| format!("[{}]", f.to_string_lossy()));
        vec![
            named(s.hostname.as_deref()),
            named(s.machine.as_deref()),
            s.board_model().map(|m| format!("({m})")),
            named(s.kernel_release.as_deref()),
            file,
        ]
    };
    // Results without host and kernel keep their file's name.
    let mut named: Vec<(&mut Loaded, Vec<Option<String>>)> = all
        .into_iter()
        .filter(|l| {
            l.result
                .label
                .as_deref()
                .is_none_or(|s| s.trim().is_empty())
        })
        .map(|l| {
            let p = parts(l);
            (l, p)
        })
        .filter(|(_, p)| p[HOST].is_some() || p[KERNEL].is_some())
        .collect();
    let items: Vec<Vec<Option<String>>> = named.iter().map(|(_, p)| p.clone()).collect();
    let names = super::names::distinct(&items, &[HOST, KERNEL], &[1, 2, 4]);
    for ((l, _), name) in named.iter_mut().zip(names) {
        l.set_label(&name);
    }
}

/// Read and check a result file; every failure is one line with exit code 2.
pub fn load(path: &Path) -> Result<Loaded> {
    let meta = std::fs::metadata(path)
        .map_err(|e| Error::usage(format!("cannot read {}: {e}", path.display())).because(e))?;
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
    check(&result).map_err(|e| {
        let e = super::printable::printable_string(&e);
        Error::usage(format!("{}: {e}", path.display())).because(e)
    })?;
    Ok(Loaded::new(path.to_path_buf(), result))
}

/// Load several files, failing on the first bad one; their labels tell
/// them apart ([`tell_apart`]).
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Loaded>> {
    let mut all: Vec<Loaded> = paths.iter().map(|p| load(p)).collect::<Result<_>>()?;
    tell_apart(&mut all);
    Ok(all)
}

/// Keep a message on one line and short (serde errors may quote input).
pub fn one_line(s: &str) -> String {
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

/// The checks a reader needs beyond the schema: decodable histograms that
/// hold every sample, sane extremes and ordered percentiles, a total that is
/// its threads merged, counts that cannot overflow when merged; then what
/// [`super::consistent`] checks (names, dates, averages, the end).
pub fn check(r: &RunResult) -> std::result::Result<(), String> {
    // Totals without samples (an import of rtla osnoise top) have per-CPU
    // tracer totals in the details instead of threads.
    let totals = r
        .details
        .get("osnoise")
        .and_then(|o| o.as_array())
        .is_some_and(|o| !o.is_empty());
    if r.complete && r.threads.is_empty() && !totals {
        return Err(
            "a complete result without threads: nothing was measured or the file was cut".into(),
        );
    }
    let mut grand_total: u64 = 0;
    for (phase, threads, total) in groups(r) {
        let at = |name: &str| place(phase, name);
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
            if sum != t.summary.samples && !t.histogram.buckets.is_empty() {
                return Err(format!(
                    "{}: the histogram holds {sum} samples but the summary says {}",
                    at(&t.name),
                    t.summary.samples
                ));
            }
            grand_total = grand_total
                .checked_add(sum)
                .ok_or_else(|| format!("{}: histogram counts overflow", at(&t.name)))?;
            let (lo, hi) = t.summary.histogram_range();
            Histogram::from_record(&t.histogram, lo, hi)
                .map_err(|e| format!("{}: {e}", at(&t.name)))?;
            if let Some(o) = t.histogram.overflow {
                if o.count > sum {
                    return Err(format!(
                        "{}: {} samples beyond the histogram's range, but it holds {sum}",
                        at(&t.name),
                        o.count
                    ));
                }
            }
            if t.series.points.len() > 1 << 20 {
                return Err(format!("{}: more than 2^20 series points", at(&t.name)));
            }
        }
        check_total(threads, total).map_err(|e| format!("{}: {e}", at("total")))?;
    }
    super::consistent::check(r)
}

fn check_summary(s: &Summary) -> std::result::Result<(), String> {
    if s.samples > 0 && s.min_ns > s.max_ns {
        return Err(format!("min {} ns is above max {} ns", s.min_ns, s.max_ns));
    }
    let mut prev: Option<(f64, u64)> = None;
    // Percentiles come from the histogram, which counts |latency| when the
    // source gave negative ones.
    let (lo, hi) = s.histogram_range();
    for p in &s.percentiles {
        if !(p.p > 0.0 && p.p <= 100.0) {
            return Err(format!("percentile {} is outside (0, 100]", p.p));
        }
        if s.samples > 0 && (p.ns > hi || p.ns < lo) {
            return Err(format!(
                "p{} = {} ns is outside min {} .. max {} ns",
                p.p, p.ns, s.min_ns, s.max_ns
            ));
        }
        if let Some((pp, pv)) = prev {
            if p.p <= pp || p.ns < pv {
                return Err(format!(
                    "percentiles are not in order (p{pp} = {pv} ns, then p{} = {} ns)",
                    p.p, p.ns
                ));
            }
        }
        prev = Some((p.p, p.ns));
    }
    Ok(())
}

/// The total merges threads (all of them, or the main ones, as rtla's
/// thread latencies without its IRQ latencies): no more samples than they
/// hold, extremes within theirs.
fn check_total(
    threads: &[crate::result::ThreadResult],
    total: &Summary,
) -> std::result::Result<(), String> {
    if threads.is_empty() || total.samples == 0 {
        return Ok(());
    }
    let samples = threads
        .iter()
        .try_fold(0u64, |n, t| n.checked_add(t.summary.samples))
        .ok_or("sample counts overflow")?;
    if total.samples > samples {
        return Err(format!(
            "{} samples, but its threads hold only {samples}",
            total.samples
        ));
    }
    let measured = threads.iter().filter(|t| t.summary.samples > 0);
    let max = measured.clone().map(|t| t.summary.max_ns).max();
    let min = measured.map(|t| t.summary.min_ns).min();
    if let (Some(max), Some(min)) = (max, min) {
        if total.max_ns > max || total.min_ns < min {
            return Err(format!(
                "min {} / max {} ns, outside its threads' {min} .. {max} ns",
                total.min_ns, total.max_ns
            ));
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
