//! `rtlat import`: other tools' output turned into rtlat results, so they
//! compare and plot like ours.
//!
//! Each parser reads its format strictly and fails with the line number and
//! what it expected there; nothing panics on hostile input (every input is
//! bounded: lines at 64 KiB, JSON files at 64 MiB). Values the tools print in
//! whole µs become whole-µs ns values in rtlat's log-linear buckets; samples a
//! tool counted beyond its histogram's range are kept (never dropped) at the
//! range's limit, with the exact maximum, and a note says so.

pub mod cyclictest_hist;
pub mod cyclictest_json;
pub mod jitterdebugger;
pub mod json;
pub mod rtla;
pub mod sockperf;
pub mod xenomai;

#[cfg(test)]
mod fuzz;

use super::{load, text, write_output, ImportArgs};
use crate::error::{Error, Result};
use crate::result::{RunResult, Series, SeriesPoint, ThreadResult, Thresholds, Tool, Tuning};
use crate::stats::recorder::Totals;
use crate::stats::{Histogram, Summary};
use crate::sysinfo::SystemInfo;
use std::io::{BufRead, Read};
use std::path::Path;

/// Longest accepted input line.
pub const MAX_LINE: usize = 64 << 10;
/// Largest accepted JSON input.
pub const MAX_JSON: u64 = 64 << 20;
/// Series points kept per thread; neighbours merge beyond (as during a run).
const MAX_SERIES_POINTS: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// cyclictest --json=FILE
    CyclictestJson,
    /// cyclictest -h N output (histogram text)
    CyclictestHist,
    /// Xenomai latency output (RTD/RTS/HSD lines)
    Xenomai,
    /// rtla timerlat hist output
    RtlaTimerlat,
    /// jitterdebugger results.json
    Jitterdebugger,
    /// sockperf ping-pong --full-log CSV
    Sockperf,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::CyclictestJson => "cyclictest-json",
            Format::CyclictestHist => "cyclictest-hist",
            Format::Xenomai => "xenomai",
            Format::RtlaTimerlat => "rtla-timerlat",
            Format::Jitterdebugger => "jitterdebugger",
            Format::Sockperf => "sockperf",
        }
    }

    /// The tool's short name, used in default labels.
    pub fn tool(self) -> &'static str {
        match self {
            Format::CyclictestJson | Format::CyclictestHist => "cyclictest",
            Format::Xenomai => "xenomai-latency",
            Format::RtlaTimerlat => "rtla-timerlat",
            Format::Jitterdebugger => "jitterdebugger",
            Format::Sockperf => "sockperf",
        }
    }

    /// What the input is, in words.
    pub fn describe(self) -> &'static str {
        match self {
            Format::CyclictestJson => "cyclictest --json output",
            Format::CyclictestHist => "cyclictest -h histogram output",
            Format::Xenomai => "Xenomai latency output",
            Format::RtlaTimerlat => "rtla timerlat hist output",
            Format::Jitterdebugger => "jitterdebugger results.json",
            Format::Sockperf => "sockperf --full-log output",
        }
    }
}

/// Where the input is wrong: a 1-based line (0: the input as a whole) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub msg: String,
}

impl ParseError {
    pub fn at(line: usize, msg: impl Into<String>) -> Self {
        ParseError {
            line,
            msg: msg.into(),
        }
    }
}

pub type Parsed<T> = std::result::Result<T, ParseError>;

/// A short, printable quotation of input text.
pub fn found(s: &str) -> String {
    let clean: String = s
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    let t = clean.trim();
    if t.is_empty() {
        "an empty line".into()
    } else if t.chars().count() > 40 {
        format!("'{}…'", t.chars().take(40).collect::<String>())
    } else {
        format!("'{t}'")
    }
}

/// Lines of text with their numbers, bounded in length, ANSI colour codes removed.
pub struct Lines<R> {
    reader: R,
    number: usize,
    buf: Vec<u8>,
}

impl<R: BufRead> Lines<R> {
    pub fn new(reader: R) -> Self {
        Lines {
            reader,
            number: 0,
            buf: Vec::new(),
        }
    }

    /// The next line (without its end), or `None` at the end of the input.
    pub fn next_line(&mut self) -> Parsed<Option<(usize, String)>> {
        self.buf.clear();
        self.number += 1;
        let n = (&mut self.reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| ParseError::at(self.number, format!("cannot read: {e}")))?;
        if n == 0 {
            return Ok(None);
        }
        if self.buf.len() > MAX_LINE && self.buf.last() != Some(&b'\n') {
            return Err(ParseError::at(
                self.number,
                format!(
                    "expected a line of text, found more than {MAX_LINE} bytes without a line end"
                ),
            ));
        }
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        let text = std::str::from_utf8(&self.buf).map_err(|_| {
            ParseError::at(self.number, "expected text, found bytes that are not UTF-8")
        })?;
        Ok(Some((self.number, strip_ansi(text))))
    }
}

/// Remove terminal colour sequences (`ESC [ … m`), which sockperf writes into its logs.
pub fn strip_ansi(s: &str) -> String {
    if !s.contains('\x1b') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            chars.next();
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Read a whole (JSON) input, refusing more than [`MAX_JSON`] bytes and non-UTF-8.
pub fn read_bounded(reader: &mut dyn Read) -> Parsed<String> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_JSON + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ParseError::at(0, format!("cannot read: {e}")))?;
    if bytes.len() as u64 > MAX_JSON {
        return Err(ParseError::at(
            0,
            format!("expected a JSON file of at most {} MiB", MAX_JSON >> 20),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        ParseError::at(line, "expected text, found bytes that are not UTF-8")
    })
}

/// A number of µs as printed by the tools (`12`, `-0.512`, `28.333`) in ns,
/// rounded; negative values are returned as such for the caller to judge.
pub fn parse_us(s: &str) -> Option<i64> {
    let v: f64 = s.trim().parse().ok()?;
    if !v.is_finite() || v.abs() > 9.0e12 {
        return None;
    }
    Some((v * 1000.0).round() as i64)
}

/// A non-negative integer.
pub fn parse_u64(s: &str) -> Option<u64> {
    let t = s.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// One thread being rebuilt from another tool's figures.
#[derive(Debug, Clone)]
pub struct ThreadBuild {
    pub name: String,
    pub cpu: Option<usize>,
    hist: Histogram,
    samples: u64,
    sum: u128,
    sum_sq: u128,
    /// The number of samples the tool reports (≥ the histogram's count).
    pub count: Option<u64>,
    pub min_ns: Option<u64>,
    pub max_ns: Option<u64>,
    pub avg_ns: Option<f64>,
    pub stddev_ns: Option<f64>,
    /// Where samples beyond the tool's histogram are placed: the range's limit.
    pub overflow_at_ns: Option<u64>,
    pub overruns: u64,
    pub series: Series,
    /// Index and time (ns after start) of the maximum, when the tool tells.
    pub max_at: Option<(u64, u64)>,
}

impl ThreadBuild {
    pub fn new(name: impl Into<String>, cpu: Option<usize>) -> Self {
        ThreadBuild {
            name: name.into(),
            cpu,
            hist: Histogram::new(),
            samples: 0,
            sum: 0,
            sum_sq: 0,
            count: None,
            min_ns: None,
            max_ns: None,
            avg_ns: None,
            stddev_ns: None,
            overflow_at_ns: None,
            overruns: 0,
            series: Series {
                interval_ns: 1_000_000_000,
                points: Vec::new(),
            },
            max_at: None,
        }
    }

    /// Add `count` samples of `value_ns`.
    pub fn add(&mut self, value_ns: u64, count: u64) -> Parsed<()> {
        if count == 0 {
            return Ok(());
        }
        self.samples = self
            .samples
            .checked_add(count)
            .ok_or_else(|| ParseError::at(0, "expected sample counts that fit 64 bits"))?;
        self.hist
            .add_to_bucket(crate::stats::histogram::index_of(value_ns), count);
        self.hist.min = self.hist.min.min(value_ns);
        self.hist.max = self.hist.max.max(value_ns);
        self.sum = self.sum.saturating_add(value_ns as u128 * count as u128);
        self.sum_sq = self
            .sum_sq
            .saturating_add((value_ns as u128 * value_ns as u128).saturating_mul(count as u128));
        Ok(())
    }

    /// Samples recorded in the histogram so far.
    pub fn recorded(&self) -> u64 {
        self.samples
    }

    /// The thread as a result entry; overflow samples are placed and explained in `notes`.
    pub fn finish(
        mut self,
        unit: &str,
        notes: &mut Vec<String>,
    ) -> Parsed<(ThreadResult, Totals, Histogram)> {
        let in_hist = self.samples;
        let n = self.count.unwrap_or(in_hist);
        if n < in_hist {
            return Err(ParseError::at(
                0,
                format!(
                    "{}: expected at most {n} samples (the tool's count), but its histogram holds {in_hist}",
                    self.name
                ),
            ));
        }
        let min = self.min_ns.or((in_hist > 0).then_some(self.hist.min));
        let max = self.max_ns.or((in_hist > 0).then_some(self.hist.max));
        if let (Some(lo), Some(hi)) = (min, max) {
            if n > 0 && lo > hi {
                return Err(ParseError::at(
                    0,
                    format!(
                        "{}: expected min ≤ max, found min {lo} ns and max {hi} ns",
                        self.name
                    ),
                ));
            }
        }
        if in_hist > 0 {
            if let Some(hi) = self.max_ns {
                if self.hist.max > hi.saturating_add(999) {
                    return Err(ParseError::at(
                        0,
                        format!(
                            "{}: expected the maximum ({hi} ns) to be at least the histogram's highest value ({} ns)",
                            self.name, self.hist.max
                        ),
                    ));
                }
            }
        }
        let overflow = n - in_hist;
        if in_hist == 0 && n > 0 {
            notes.push(format!(
                "{}: the input has no histogram, only count/min/avg/max: no percentiles or distribution",
                self.name
            ));
        } else if overflow > 0 {
            let hi = max.unwrap_or(self.hist.max);
            let limit = self.overflow_at_ns.unwrap_or(hi).min(hi);
            self.add(hi, 1)?;
            self.add(limit, overflow - 1)?;
            let pct = 100.0 * (1.0 - overflow as f64 / n as f64);
            notes.push(format!(
                "{}: {overflow} of {n} samples were beyond the tool's histogram (≥ {} {unit}): kept at {} {unit}, the maximum at its exact value; percentiles above p{} are lower bounds",
                self.name,
                show(limit, unit),
                show(limit, unit),
                trim_float(pct, 3)
            ));
        }
        let totals = Totals {
            samples: if in_hist == 0 { n } else { self.samples },
            sum: self.sum.min(u64::MAX as u128) as u64,
            sum_sq: self.sum_sq,
            min: min.unwrap_or(0),
            max: max.unwrap_or(0),
            max_index: self.max_at.map(|m| m.0).unwrap_or(0),
            max_time: self.max_at.map(|m| m.1).unwrap_or(0),
            overruns: self.overruns,
            last: 0,
        };
        if self.hist.samples > 0 {
            self.hist.set_extremes(totals.min, totals.max);
        }
        let mut summary = Summary::from_parts(&totals, &self.hist);
        if n > 0 {
            if in_hist == 0 {
                summary.avg_ns = 0;
            }
            if let Some(avg) = self.avg_ns {
                summary.avg_ns = avg.round().clamp(0.0, u64::MAX as f64) as u64;
            }
            if let Some(sd) = self.stddev_ns {
                summary.stddev_ns = sd.round().clamp(0.0, u64::MAX as f64) as u64;
            }
            summary.avg_ns = summary.avg_ns.clamp(summary.min_ns, summary.max_ns);
        }
        let thread = ThreadResult {
            name: self.name,
            cpu: self.cpu,
            summary,
            histogram: self.hist.to_record(),
            series: self.series,
        };
        Ok((thread, totals, self.hist))
    }
}

fn show(ns: u64, unit: &str) -> String {
    match unit {
        "ns" => ns.to_string(),
        _ => trim_float(ns as f64 / 1000.0, 3),
    }
}

/// A float with at most `decimals` decimals and no trailing zeros.
pub fn trim_float(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Per-interval statistics built from timestamped samples, constant in memory.
#[derive(Debug, Clone)]
pub struct SeriesBuilder {
    series: Series,
}

impl SeriesBuilder {
    pub fn new(interval_ns: u64) -> Self {
        SeriesBuilder {
            series: Series {
                interval_ns: interval_ns.max(1),
                points: Vec::new(),
            },
        }
    }

    /// Add one sample at `t_ns` after the start (times never decrease).
    pub fn add(&mut self, t_ns: u64, value_ns: u64) {
        loop {
            let idx = t_ns / self.series.interval_ns;
            let last = self
                .series
                .points
                .last()
                .map(|p| p.t_ns / self.series.interval_ns);
            if last == Some(idx) {
                if let Some(p) = self.series.points.last_mut() {
                    let total = p.avg_ns as u128 * p.samples as u128 + value_ns as u128;
                    p.samples += 1;
                    p.avg_ns = (total / p.samples as u128) as u64;
                    p.min_ns = p.min_ns.min(value_ns);
                    p.max_ns = p.max_ns.max(value_ns);
                }
                return;
            }
            if self.series.points.len() < MAX_SERIES_POINTS {
                self.series.points.push(SeriesPoint {
                    t_ns: idx * self.series.interval_ns,
                    samples: 1,
                    min_ns: value_ns,
                    avg_ns: value_ns,
                    max_ns: value_ns,
                    overruns: 0,
                });
                return;
            }
            self.halve();
        }
    }

    /// Merge neighbouring points and double the interval.
    fn halve(&mut self) {
        let interval = self.series.interval_ns.saturating_mul(2);
        let mut merged: Vec<SeriesPoint> = Vec::with_capacity(self.series.points.len() / 2 + 1);
        for p in self.series.points.drain(..) {
            let idx = p.t_ns / interval;
            match merged.last_mut() {
                Some(m) if m.t_ns / interval == idx => {
                    let total =
                        m.avg_ns as u128 * m.samples as u128 + p.avg_ns as u128 * p.samples as u128;
                    m.samples += p.samples;
                    m.avg_ns = (total / m.samples.max(1) as u128) as u64;
                    m.min_ns = m.min_ns.min(p.min_ns);
                    m.max_ns = m.max_ns.max(p.max_ns);
                    m.overruns += p.overruns;
                }
                _ => merged.push(SeriesPoint {
                    t_ns: idx * interval,
                    ..p
                }),
            }
        }
        self.series.points = merged;
        self.series.interval_ns = interval;
    }

    pub fn finish(self) -> Series {
        self.series
    }
}

/// What a parser found, before it becomes a result.
#[derive(Debug)]
pub struct Imported {
    pub benchmark: &'static str,
    pub threads: Vec<ThreadBuild>,
    /// Names of the threads merged into `total` (empty: all).
    pub total_of: Vec<String>,
    pub system: SystemInfo,
    pub command_line: Vec<String>,
    pub start_time_utc: String,
    pub duration_ns: u64,
    pub end_reason: &'static str,
    /// Tool-specific settings (period_ns, the tool's version …).
    pub config: serde_json::Map<String, serde_json::Value>,
    pub tuning: Tuning,
    pub details: serde_json::Map<String, serde_json::Value>,
    pub notes: Vec<String>,
    /// The resolution of the tool's values.
    pub precision_ns: u64,
    /// The unit the tool printed (`us` or `ns`), for notes.
    pub unit: &'static str,
}

impl Imported {
    pub fn new(benchmark: &'static str) -> Self {
        Imported {
            benchmark,
            threads: Vec::new(),
            total_of: Vec::new(),
            system: SystemInfo::default(),
            command_line: Vec::new(),
            start_time_utc: String::new(),
            duration_ns: 0,
            end_reason: "duration",
            config: serde_json::Map::new(),
            tuning: Tuning {
                policy: crate::result::Policy::Other,
                ..Default::default()
            },
            details: serde_json::Map::new(),
            notes: Vec::new(),
            precision_ns: 1000,
            unit: "us",
        }
    }

    /// The rtlat result; `file` names the source in config and notes.
    pub fn into_result(
        self,
        format: Format,
        file: &str,
        label: Option<String>,
    ) -> Parsed<RunResult> {
        if self.threads.is_empty() {
            return Err(ParseError::at(
                0,
                format!(
                    "expected at least one thread of measurements in the {}",
                    format.describe()
                ),
            ));
        }
        let mut notes = vec![format!(
            "imported by rtlat import from {} '{file}'; the source's precision is {}",
            format.describe(),
            if self.precision_ns >= 1000 && self.precision_ns % 1000 == 0 {
                format!("{} µs", self.precision_ns / 1000)
            } else {
                format!("{} ns", self.precision_ns)
            }
        )];
        let mut thread_notes = Vec::new();
        let mut threads = Vec::new();
        let mut total_totals = Totals::default();
        let mut total_hist = Histogram::new();
        let mut avg_weighted = 0f64;
        let mut avg_samples = 0u64;
        let mut total_has_hist = true;
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
            if in_total {
                total_totals.merge(&totals);
                if totals.samples > 0 && hist.samples == 0 {
                    total_has_hist = false;
                }
                total_hist.merge(&hist);
                avg_weighted += t.summary.avg_ns as f64 * t.summary.samples as f64;
                avg_samples = avg_samples.saturating_add(t.summary.samples);
            }
            threads.push(t);
        }
        if total_totals.samples == 0 {
            total_totals = Totals {
                overruns: total_totals.overruns,
                ..Totals::default()
            };
        }
        if total_hist.samples > 0 {
            total_hist.set_extremes(total_totals.min, total_totals.max);
        }
        let empty = Histogram::new();
        let mut total = Summary::from_parts(
            &total_totals,
            if total_has_hist { &total_hist } else { &empty },
        );
        if avg_samples > 0 {
            total.avg_ns = (avg_weighted / avg_samples as f64).round() as u64;
            total.avg_ns = total.avg_ns.clamp(total.min_ns, total.max_ns);
        }
        if !total_has_hist {
            total.stddev_ns = 0;
        }
        if !self.total_of.is_empty() {
            notes.push(format!("total merges {}", self.total_of.join(", ")));
        }
        notes.extend(self.notes);
        notes.extend(thread_notes);
        let mut config = serde_json::Map::new();
        config.insert("imported_from".into(), format.name().into());
        config.insert("source_file".into(), file.into());
        config.insert("precision_ns".into(), self.precision_ns.into());
        config.extend(self.config);
        let n = threads.len();
        let mut tuning = self.tuning;
        if tuning.affinity.len() != n {
            tuning.affinity = threads.iter().map(|t| t.cpu).collect();
        }
        if tuning.phase_offsets_ns.len() != n {
            tuning.phase_offsets_ns = vec![0; n];
        }
        // The tool's name first, so an import and an rtlat run of the same machine differ.
        let label = label.or_else(|| {
            let machine: Vec<&str> = [
                self.system.hostname.as_deref(),
                self.system.kernel_release.as_deref(),
            ]
            .into_iter()
            .flatten()
            .collect();
            Some(if machine.is_empty() {
                format!("{} {}", format.tool(), file_stem(file))
            } else {
                format!("{} {}", format.tool(), machine.join(" "))
            })
        });
        Ok(RunResult {
            schema: crate::result::SCHEMA_NAME.into(),
            schema_version: crate::result::SCHEMA_VERSION,
            tool: Tool::this(),
            benchmark: crate::result::Benchmark::from_name(self.benchmark)
                .expect("importers name a benchmark"),
            label,
            command_line: self.command_line,
            start_time_utc: self.start_time_utc,
            duration_ns: self.duration_ns,
            complete: true,
            end_reason: crate::result::EndReason::from_name(self.end_reason)
                .expect("importers name an end reason"),
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
        })
    }
}

fn file_stem(file: &str) -> String {
    Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| file.to_string())
}

/// The preemption model named in a `uname -v` string.
pub fn preempt_from_version(version: &str) -> String {
    let tokens: Vec<&str> = version.split_whitespace().collect();
    if tokens.contains(&"PREEMPT_RT") || tokens.windows(2).any(|w| w == ["PREEMPT", "RT"]) {
        "PREEMPT_RT".into()
    } else if tokens.contains(&"PREEMPT_DYNAMIC") {
        "PREEMPT_DYNAMIC".into()
    } else if tokens.contains(&"PREEMPT") {
        "PREEMPT".into()
    } else {
        crate::sysinfo::PREEMPT_UNKNOWN.into()
    }
}

/// Days since 1970-01-01 of a civil date (H. Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `Mon, 30 Nov 2026 09:04:09 +0000` (RFC 2822, as cyclictest writes) in seconds since the epoch.
pub fn parse_rfc2822(s: &str) -> Option<i64> {
    let t = s.trim();
    let t = t.split_once(',').map(|(_, rest)| rest).unwrap_or(t);
    let parts: Vec<&str> = t.split_whitespace().collect();
    if parts.len() < 4 {
        return None;
    }
    let day: u32 = parts[0].parse().ok()?;
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let month = MONTHS
        .iter()
        .position(|m| parts[1].to_ascii_lowercase().starts_with(m))? as u32
        + 1;
    let year: i64 = parts[2].parse().ok()?;
    let hms: Vec<u32> = parts[3]
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    if hms.len() != 3
        || hms[0] > 23
        || hms[1] > 59
        || hms[2] > 60
        || !(1..=31).contains(&day)
        || !(1970..=9999).contains(&year)
    {
        return None;
    }
    let offset = match parts.get(4) {
        Some(z) if z.len() == 5 && (z.starts_with('+') || z.starts_with('-')) => {
            let h: i64 = z[1..3].parse().ok()?;
            let m: i64 = z[3..5].parse().ok()?;
            let v = h * 3600 + m * 60;
            if z.starts_with('-') {
                -v
            } else {
                v
            }
        }
        _ => 0,
    };
    Some(
        days_from_civil(year, month, day) * 86_400
            + hms[0] as i64 * 3600
            + hms[1] as i64 * 60
            + hms[2] as i64
            - offset,
    )
}

/// Parse `input` as `format`. `file` is the name recorded in the result.
pub fn parse(
    format: Format,
    input: &mut dyn BufRead,
    file: &str,
    label: Option<String>,
) -> Parsed<RunResult> {
    let imported = match format {
        Format::CyclictestJson => cyclictest_json::parse(&read_bounded(input)?)?,
        Format::CyclictestHist => cyclictest_hist::parse(input)?,
        Format::Xenomai => xenomai::parse(input)?,
        Format::RtlaTimerlat => rtla::parse(input)?,
        Format::Jitterdebugger => jitterdebugger::parse(&read_bounded(input)?)?,
        Format::Sockperf => sockperf::parse(input)?,
    };
    imported.into_result(format, file, label)
}

pub fn run(args: &ImportArgs) -> Result<crate::error::Outcome> {
    let path = &args.file;
    let meta = std::fs::metadata(path)
        .map_err(|e| Error::usage(format!("cannot read {}: {e}", path.display())))?;
    if meta.is_dir() {
        return Err(Error::usage(format!(
            "{} is a directory; give the {} file",
            path.display(),
            args.from.describe()
        )));
    }
    let file = std::fs::File::open(path)
        .map_err(|e| Error::usage(format!("cannot read {}: {e}", path.display())))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut reader = std::io::BufReader::new(file);
    let result = parse(args.from, &mut reader, &name, args.label.clone()).map_err(|e| {
        let what = args.from.describe();
        if e.line == 0 {
            Error::usage(format!("{}: not valid {what}: {}", path.display(), e.msg))
        } else {
            Error::usage(format!(
                "{}:{}: not valid {what}: {}",
                path.display(),
                e.line,
                e.msg
            ))
        }
    })?;
    let json = serde_json::to_vec_pretty(&result)
        .map_err(|e| Error::io(format!("cannot encode the result: {e}")))?;
    write_output(&args.output, &json)?;
    // What we wrote must read back like any result.
    let loaded = load(&args.output)?;
    if !args.quiet {
        print!("{}", text::report(&loaded));
    }
    Ok(crate::error::Outcome::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(
            parse_rfc2822("Mon, 30 Nov 2026 09:04:09 +0000"),
            Some(1_796_029_449)
        );
        assert_eq!(
            parse_rfc2822("Mon, 30 Nov 2026 10:04:09 +0100"),
            Some(1_796_029_449)
        );
        assert_eq!(parse_rfc2822("yesterday"), None);
        assert_eq!(parse_rfc2822("Mon, 99 Nov 2026 09:04:09 +0000"), None);
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    #[test]
    fn lines_are_bounded_and_numbered() {
        let text = b"a\r\nb\n\x1b[2;35mc\x1b[0m\n";
        let mut l = Lines::new(&text[..]);
        assert_eq!(l.next_line().unwrap(), Some((1, "a".to_string())));
        assert_eq!(l.next_line().unwrap(), Some((2, "b".to_string())));
        assert_eq!(l.next_line().unwrap(), Some((3, "c".to_string())));
        assert_eq!(l.next_line().unwrap(), None);
        let long = vec![b'x'; MAX_LINE + 10];
        let mut l = Lines::new(&long[..]);
        assert_eq!(l.next_line().unwrap_err().line, 1);
        let bad = b"ok\n\xff\xfe\n";
        let mut l = Lines::new(&bad[..]);
        l.next_line().unwrap();
        assert!(l.next_line().unwrap_err().msg.contains("UTF-8"));
    }

    #[test]
    fn overflow_samples_are_kept_at_the_limit_with_the_exact_max() {
        let mut t = ThreadBuild::new("cpu0", Some(0));
        for v in 0..100u64 {
            t.add(v * 1000, 10).unwrap();
        }
        t.count = Some(1010);
        t.min_ns = Some(0);
        t.max_ns = Some(5_000_000);
        t.overflow_at_ns = Some(100_000);
        let mut notes = Vec::new();
        let (r, totals, h) = t.finish("us", &mut notes).unwrap();
        assert_eq!(r.summary.samples, 1010);
        assert_eq!(h.samples, 1010);
        assert_eq!(totals.samples, 1010);
        assert_eq!(r.summary.max_ns, 5_000_000);
        assert_eq!(h.count(crate::stats::histogram::index_of(5_000_000)), 1);
        assert_eq!(h.count(crate::stats::histogram::index_of(100_000)), 9);
        assert!(notes[0].contains("10 of 1010"), "{notes:?}");
        let counted: u64 = r.histogram.buckets.iter().map(|b| b.count).sum();
        assert_eq!(counted, r.summary.samples);
    }

    #[test]
    fn inconsistent_counts_are_refused() {
        let mut t = ThreadBuild::new("cpu0", None);
        t.add(5000, 10).unwrap();
        t.count = Some(5);
        assert!(t.finish("us", &mut Vec::new()).is_err());
        let mut t = ThreadBuild::new("cpu0", None);
        t.add(5000, 10).unwrap();
        t.max_ns = Some(1000);
        assert!(t.finish("us", &mut Vec::new()).is_err());
    }

    #[test]
    fn series_stay_bounded() {
        let mut s = SeriesBuilder::new(1_000_000_000);
        for i in 0..10_000u64 {
            s.add(i * 1_000_000_000, i);
        }
        let s = s.finish();
        assert!(s.points.len() <= MAX_SERIES_POINTS);
        assert_eq!(s.interval_ns, 4_000_000_000);
        assert_eq!(s.points.iter().map(|p| p.samples).sum::<u64>(), 10_000);
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_us("28.333"), Some(28_333));
        assert_eq!(parse_us("-0.512"), Some(-512));
        assert_eq!(parse_us("nan"), None);
        assert_eq!(parse_u64("00042"), Some(42));
        assert_eq!(parse_u64("-1"), None);
        assert_eq!(parse_u64("99999999999999999999999"), None);
        assert_eq!(preempt_from_version("#1 SMP PREEMPT_RT Tue"), "PREEMPT_RT");
        assert_eq!(trim_float(98.80, 3), "98.8");
    }
}
