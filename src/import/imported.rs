//! What a parser found, and how it becomes an rtlat result: threads merged
//! into the total, the source named in config and notes, a default label.

use super::{ImportFormat, ParseError, Parsed, ThreadBuild};
use crate::result::{Benchmark, EndReason};
use crate::result::{RunResult, ThreadResult, Thresholds, Tool, Tuning};
use crate::stats::histogram::Overflow;
use crate::stats::recorder::Totals;
use crate::stats::{Histogram, Summary};
use crate::sysinfo::SystemInfo;
use std::path::Path;

/// What a parser found, before it becomes a result.
#[derive(Debug)]
pub struct Imported {
    pub benchmark: Benchmark,
    pub threads: Vec<ThreadBuild>,
    /// Names of the threads merged into `total` (empty: all).
    pub total_of: Vec<String>,
    pub system: SystemInfo,
    pub command_line: Vec<String>,
    pub start_time_utc: String,
    /// `None`: the source does not record how long the run took.
    pub duration_ns: Option<u64>,
    /// How finely the source gives the duration (1 s for `00:00:06`), when coarser than 1 ns.
    pub duration_precision_ns: Option<u64>,
    /// False when the input stops before the tool's closing summary (a killed run, a crashed board).
    pub complete: bool,
    pub end_reason: EndReason,
    /// Tool-specific settings (period_ns, the tool's version …).
    pub config: serde_json::Map<String, serde_json::Value>,
    pub tuning: Tuning,
    pub details: serde_json::Map<String, serde_json::Value>,
    pub notes: Vec<String>,
    /// The resolution of the tool's values.
    pub precision_ns: u64,
    /// The unit the tool printed (`us` or `ns`), for notes.
    pub unit: &'static str,
    /// The tool printed totals and no samples: a result without threads,
    /// its totals in the details.
    pub totals_only: bool,
}

impl Imported {
    pub fn new(benchmark: Benchmark) -> Self {
        Imported {
            benchmark,
            threads: Vec::new(),
            total_of: Vec::new(),
            system: SystemInfo::default(),
            command_line: Vec::new(),
            start_time_utc: String::new(),
            duration_ns: None,
            duration_precision_ns: None,
            complete: true,
            end_reason: EndReason::Duration,
            config: serde_json::Map::new(),
            // Unknown until a parser that knows sets it.
            tuning: Tuning::default(),
            details: serde_json::Map::new(),
            notes: Vec::new(),
            precision_ns: 1000,
            unit: "us",
            totals_only: false,
        }
    }

    /// The rtlat result; `file` names the source in config and notes.
    pub fn into_result(
        self,
        format: &ImportFormat,
        file: &str,
        label: Option<String>,
    ) -> Parsed<RunResult> {
        check_duration(self.duration_ns)?;
        if self.threads.is_empty() && !self.totals_only {
            return Err(ParseError::at(
                0,
                format!(
                    "expected at least one thread of measurements in the {}",
                    format.describe
                ),
            ));
        }
        let mut notes = vec![format!(
            "imported by rtlat import from {} '{file}'; the source's precision is {}",
            format.describe,
            if self.precision_ns >= 1000 && self.precision_ns % 1000 == 0 {
                format!("{} µs", self.precision_ns / 1000)
            } else {
                format!("{} ns", self.precision_ns)
            }
        )];
        let mut thread_notes = Vec::new();
        let mut threads = Vec::new();
        let mut merged = Merged::default();
        let mut seen = std::collections::BTreeSet::new();
        for tb in self.threads {
            if !seen.insert(tb.name.clone()) {
                return Err(ParseError::at(
                    0,
                    format!("expected one entry per thread, found '{}' twice", tb.name),
                ));
            }
            let in_total = self.total_of.is_empty() || self.total_of.contains(&tb.name);
            let (t, totals, hist) = tb.finish(self.unit, &mut thread_notes)?;
            if merged.totals.samples.checked_add(totals.samples).is_none() {
                return Err(ParseError::at(
                    0,
                    "expected sample counts whose sum over the threads fits 64 bits",
                ));
            }
            if in_total {
                merged.add(&t, &totals, &hist);
            }
            threads.push(t);
        }
        let total = merged.total();
        if !self.total_of.is_empty() {
            notes.push(format!("total merges {}", self.total_of.join(", ")));
        }
        notes.extend(self.notes);
        notes.extend(thread_notes);
        let mut config = serde_json::Map::new();
        config.insert("imported_from".into(), format.name.into());
        config.insert("source_file".into(), file.into());
        config.insert("precision_ns".into(), self.precision_ns.into());
        if let Some(p) = self
            .duration_precision_ns
            .filter(|_| self.duration_ns.is_some())
        {
            config.insert("duration_precision_ns".into(), p.into());
        }
        config.extend(self.config);
        let n = threads.len();
        let mut tuning = self.tuning;
        if tuning.affinity.len() != n {
            tuning.affinity = threads.iter().map(|t| t.cpu).collect();
        }
        if tuning.phase_offsets_ns.len() != n {
            tuning.phase_offsets_ns = vec![0; n];
        }
        let label = label.or_else(|| Some(default_label(format, file, &self.system)));
        Ok(RunResult {
            schema: crate::result::SCHEMA_NAME.into(),
            schema_version: crate::result::SCHEMA_VERSION,
            tool: Tool::this(),
            benchmark: self.benchmark,
            label,
            command_line: self.command_line,
            start_time_utc: self.start_time_utc,
            duration_ns: self.duration_ns,
            complete: self.complete,
            end_reason: self.end_reason,
            config: serde_json::Value::Object(config),
            system: self.system,
            tuning,
            threads,
            total,
            thresholds: Thresholds::default(),
            loads: Vec::new(),
            notes,
            measuring_cpu_time_ns: 0,
            phases: Vec::new(),
            details: self.details,
            explained: Vec::new(),
        })
    }
}

/// The threads merged into the total, as they are added.
struct Merged {
    totals: Totals,
    hist: Histogram,
    /// The sum of each thread's average times its samples, and of its samples.
    avg_weighted: f64,
    avg_samples: u64,
    /// Every merged thread with samples has a histogram.
    has_hist: bool,
    /// Signed extremes, overflow and where the maximum was, from the threads' summaries.
    extremes: Option<(i64, i64)>,
    overflows: Vec<Overflow>,
    max_at: Option<(Option<u64>, Option<u64>)>,
}

impl Default for Merged {
    fn default() -> Self {
        Merged {
            totals: Totals::default(),
            hist: Histogram::new(),
            avg_weighted: 0.0,
            avg_samples: 0,
            has_hist: true,
            extremes: None,
            overflows: Vec::new(),
            max_at: None,
        }
    }
}

impl Merged {
    /// Thread `t`, with the totals and histogram it was finished with.
    fn add(&mut self, t: &ThreadResult, totals: &Totals, hist: &Histogram) {
        self.totals.merge(totals);
        if totals.samples > 0 && hist.samples == 0 {
            self.has_hist = false;
        }
        self.hist.merge(hist);
        self.overflows.extend(t.histogram.overflow);
        if t.summary.samples > 0 {
            let s = &t.summary;
            if self.extremes.is_none_or(|(_, hi)| s.max_ns > hi) {
                self.max_at = Some((s.max_sample, s.max_at_ns));
            }
            self.extremes = Some(match self.extremes {
                Some((lo, hi)) => (lo.min(s.min_ns), hi.max(s.max_ns)),
                None => (s.min_ns, s.max_ns),
            });
        }
        self.avg_weighted += t.summary.avg_ns as f64 * t.summary.samples as f64;
        self.avg_samples = self.avg_samples.saturating_add(t.summary.samples);
    }

    /// The total's summary: from the merged histogram where every thread has
    /// one, with the threads' own extremes and weighted average.
    fn total(self) -> Summary {
        let mut totals = self.totals;
        if totals.samples == 0 {
            totals = Totals {
                overruns: totals.overruns,
                ..Totals::default()
            };
        }
        let mut hist = self.hist;
        if hist.samples > 0 {
            hist.set_extremes(totals.min, totals.max);
        }
        let empty = Histogram::new();
        let mut total = Summary::from_parts(&totals, if self.has_hist { &hist } else { &empty });
        if let Some((lo, hi)) = self.extremes {
            (total.min_ns, total.max_ns) = (lo, hi);
        }
        if self.avg_samples > 0 {
            total.avg_ns = (self.avg_weighted / self.avg_samples as f64).round() as i64;
            total.avg_ns = total.avg_ns.clamp(total.min_ns, total.max_ns);
        }
        (total.max_sample, total.max_at_ns) = self.max_at.unwrap_or_default();
        let overflow = Overflow::merged(self.overflows);
        if !self.has_hist || overflow.is_some() {
            total.stddev_ns = None;
        }
        total.mark_bounds(overflow.map_or(0, |o| o.count));
        total
    }
}

/// The label of an import given none: the tool's name first, so an import
/// and an rtlat run of the same machine differ, then the machine (or the file).
fn default_label(format: &ImportFormat, file: &str, system: &SystemInfo) -> String {
    let machine: Vec<&str> = [system.hostname.as_deref(), system.kernel_release.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    if machine.is_empty() {
        format!("{} {}", format.tool, file_stem(file))
    } else {
        format!("{} {}", format.tool, machine.join(" "))
    }
}

fn file_stem(file: &str) -> String {
    Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| file.to_string())
}
/// The longest run an import records: a century. A tool's duration beyond
/// it (seconds that overflow when turned into ns) is refused, not saturated.
const MAX_DURATION_NS: u64 = 100 * 366 * 86_400 * 1_000_000_000;

fn check_duration(duration_ns: Option<u64>) -> Parsed<()> {
    match duration_ns {
        Some(d) if d >= MAX_DURATION_NS => Err(ParseError::at(
            0,
            format!("expected a duration below 100 years, found {d} ns: out of range"),
        )),
        _ => Ok(()),
    }
}
