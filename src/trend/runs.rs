//! Each result reduced to what a trend needs, one [`RunPoint`] per series:
//! its board, load, start, kernel and the figures drawn and tested (maximum,
//! p50/p99/p99.9). The result itself, histograms and all, is dropped once
//! read: thousands of results take a few hundred bytes each.

use super::walk::TrendFile;
use crate::render::describe::{level_summary, levels, loads_of, primary};
use crate::result::{Benchmark, RunResult};
use crate::stats::Summary;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The figures of a run that a trend follows, in ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunFigure {
    Max,
    P999,
    P99,
    P50,
}

impl RunFigure {
    pub const ALL: [RunFigure; 4] = [
        RunFigure::Max,
        RunFigure::P999,
        RunFigure::P99,
        RunFigure::P50,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RunFigure::Max => "max",
            RunFigure::P999 => "p99.9",
            RunFigure::P99 => "p99",
            RunFigure::P50 => "p50",
        }
    }
}

/// One run of one series.
#[derive(Debug, Clone)]
pub struct RunPoint {
    pub file: PathBuf,
    /// RFC 3339 UTC, as the result records it.
    pub start: String,
    /// Seconds since the Unix epoch.
    pub at: i64,
    pub kernel: String,
    pub max_ns: u64,
    pub p999_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub p50_ns: Option<u64>,
    /// The tail forecast the result holds for the series (the highest of its
    /// threads'); `None` when it holds none.
    pub forecast: Option<RunForecast>,
}

/// A run's forecast: the latency at its exceedance, or withheld.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunForecast {
    Made(u64),
    Withheld,
}

impl RunPoint {
    pub fn get(&self, f: RunFigure) -> Option<u64> {
        match f {
            RunFigure::Max => Some(self.max_ns),
            RunFigure::P999 => self.p999_ns,
            RunFigure::P99 => self.p99_ns,
            RunFigure::P50 => self.p50_ns,
        }
    }
}

/// What a series follows: a board's benchmark under one load (or idle),
/// and which of its figures (the main one, or a kernel-context level of it).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SeriesKey {
    pub board: String,
    pub benchmark: Benchmark,
    /// [`IDLE`], or the loads that ran beside the measurement.
    pub load: String,
    pub series: String,
}

/// The load of a series whose runs had none.
pub const IDLE: &str = "idle";

impl SeriesKey {
    /// `timer all CPUs`, and ` under LOAD` when the runs had one.
    pub fn name(&self) -> String {
        let load = if self.load == IDLE {
            String::new()
        } else {
            format!(" under {}", self.load)
        };
        format!("{} {}{load}", self.benchmark, self.series)
    }
}

/// The runs of every series, each in start order.
#[derive(Debug, Default)]
pub struct Runs {
    pub series: BTreeMap<SeriesKey, Vec<RunPoint>>,
    /// Files that are not rtlat results (or fail their checks): how many, and the first with why.
    pub skipped: usize,
    pub first_skipped: Option<String>,
    /// Results without a start time (they cannot be placed in time).
    pub undated: usize,
}

impl Runs {
    /// Read `files` one at a time, each run on the board `board` names;
    /// what is not a result is counted.
    pub fn read(files: &[TrendFile], board: &BoardFrom) -> Runs {
        let mut runs = Runs::default();
        for f in files {
            match crate::render::load(&f.path) {
                Ok(l) => runs.add(&f.path, &l.result, board),
                Err(e) => {
                    runs.skipped += 1;
                    if runs.first_skipped.is_none() {
                        runs.first_skipped = Some(e.message().to_string());
                    }
                }
            }
        }
        for points in runs.series.values_mut() {
            points.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.file.cmp(&b.file)));
        }
        runs
    }

    /// Add a result's series.
    pub fn add(&mut self, path: &Path, r: &RunResult, board: &BoardFrom) {
        let Some(at) = crate::import::dates::parse_rfc3339_utc(&r.start_time_utc) else {
            self.undated += 1;
            return;
        };
        let board = board.of(r);
        let load = if r.loads.is_empty() {
            IDLE.to_string()
        } else {
            crate::render::printable::printable_string(&loads_of(r, false))
        };
        let kernel = r.system.kernel_release.as_deref().unwrap_or("-");
        let kernel = crate::render::printable::printable_string(kernel);
        let point = |s: &Summary, forecast| RunPoint {
            file: path.to_path_buf(),
            start: r.start_time_utc.clone(),
            at,
            kernel: kernel.clone(),
            max_ns: s.max_ns.max(0) as u64,
            p999_ns: s.percentile(99.9),
            p99_ns: s.percentile(99.0),
            p50_ns: s.percentile(50.0),
            forecast,
        };
        let (name, threads, main) = primary(r);
        let forecast = forecast_of(&threads);
        let mut add = |series: String, s: &Summary, forecast| {
            if s.samples == 0 {
                return;
            }
            let key = SeriesKey {
                board: board.clone(),
                benchmark: r.benchmark,
                load: load.clone(),
                series,
            };
            self.series.entry(key).or_default().push(point(s, forecast));
        };
        add(name.clone(), &main, forecast);
        for level in levels(r) {
            if level != name {
                if let Some(s) = level_summary(r, level) {
                    add(level.to_string(), &s, None);
                }
            }
        }
    }
}

/// The forecast the threads of a series hold: withheld if one was, else
/// the highest latency; `None` when none holds one.
fn forecast_of(threads: &[&crate::result::ThreadResult]) -> Option<RunForecast> {
    let all: Vec<_> = threads.iter().filter_map(|t| t.forecast.as_ref()).collect();
    if all.iter().any(|f| f.withheld.is_some()) {
        return Some(RunForecast::Withheld);
    }
    all.iter()
        .filter_map(|f| f.per_sample)
        .map(|v| v.value_ns)
        .max()
        .map(RunForecast::Made)
}

/// Which board a result was measured on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum BoardFrom {
    /// Its label when it has one, else the host name it records (boards
    /// often share a host name; `--label` tells them apart).
    #[default]
    LabelElseHost,
    Label,
    Host,
    /// A field of the result file, as a dotted path (`system.device_tree_model`).
    Field(String),
}

impl BoardFrom {
    /// `label`, `host`, or a dotted path into the result file.
    pub fn parse(s: &str) -> Result<BoardFrom, String> {
        match s {
            "label" => Ok(BoardFrom::Label),
            "host" => Ok(BoardFrom::Host),
            f if !f.is_empty() && f.split('.').all(|p| !p.is_empty()) => {
                Ok(BoardFrom::Field(f.into()))
            }
            _ => Err(format!(
                "'{s}' names no board: give label, host, or a field of the result file as a dotted path (system.device_tree_model)"
            )),
        }
    }

    /// The board's name (control characters as escapes); a result without
    /// what is asked for goes under `no label`, `no host name`, `no FIELD`.
    pub fn of(&self, r: &RunResult) -> String {
        let named = |s: Option<&str>| s.map(str::trim).filter(|s| !s.is_empty()).map(String::from);
        let label = || named(r.label.as_deref());
        let host = || named(r.system.hostname.as_deref());
        let board = match self {
            BoardFrom::LabelElseHost => label()
                .or_else(host)
                .unwrap_or_else(|| "unknown board".into()),
            BoardFrom::Label => label().unwrap_or_else(|| "no label".into()),
            BoardFrom::Host => host().unwrap_or_else(|| "no host name".into()),
            BoardFrom::Field(f) => field(r, f).unwrap_or_else(|| format!("no {f}")),
        };
        crate::render::printable::printable_string(&board)
    }
}

/// The value at a dotted path of the result file: a string as it is, a
/// number or a boolean as JSON writes it; `None` when absent, null or an
/// object or array.
fn field(r: &RunResult, path: &str) -> Option<String> {
    let v = serde_json::to_value(r).ok()?;
    let v = path.split('.').try_fold(&v, |v, part| v.get(part))?;
    match v {
        serde_json::Value::String(s) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
        serde_json::Value::Number(_) | serde_json::Value::Bool(_) => Some(v.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value_ns: Option<u64>, withheld: bool) -> crate::result::ThreadResult {
        let mut t = crate::render::testdata::empty().threads.remove(0);
        t.forecast = Some(super::super::tests::forecast(value_ns, withheld));
        t
    }

    #[test]
    fn a_series_forecast_is_its_highest_or_withheld_if_one_was() {
        let (a, b) = (with(Some(50_000), false), with(Some(70_000), false));
        assert_eq!(forecast_of(&[&a, &b]), Some(RunForecast::Made(70_000)));
        let c = with(None, true);
        assert_eq!(forecast_of(&[&a, &c]), Some(RunForecast::Withheld));
        let mut none = with(None, false);
        none.forecast = None;
        assert_eq!(forecast_of(&[&none]), None);
    }
}
