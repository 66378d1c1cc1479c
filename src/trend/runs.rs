//! Each result reduced to what a trend needs, one [`RunPoint`] per series:
//! its board, start, kernel and the figures drawn and tested (maximum,
//! p50/p99/p99.9). The result itself, histograms and all, is dropped once
//! read: thousands of results take a few hundred bytes each.

use super::walk::TrendFile;
use crate::render::describe::{level_summary, levels, primary};
use crate::result::{Benchmark, RunResult};
use crate::stats::Summary;
use std::collections::{BTreeMap, HashMap};
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

/// What a series follows: a board's benchmark, and which of its figures
/// (the main one, or a kernel-context level of it).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SeriesKey {
    pub board: String,
    pub benchmark: Benchmark,
    pub series: String,
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
    /// Read `files` one at a time; what is not a result is counted.
    pub fn read(files: &[TrendFile]) -> Runs {
        let mut runs = Runs::default();
        let mut boards = Boards::default();
        for f in files {
            match crate::render::load(&f.path) {
                Ok(l) => runs.add(&f.path, &l.result, &mut boards),
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
    pub fn add(&mut self, path: &Path, r: &RunResult, boards: &mut Boards) {
        let Some(at) = crate::import::dates::parse_rfc3339_utc(&r.start_time_utc) else {
            self.undated += 1;
            return;
        };
        let board = boards.of(path, r);
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

/// The board a result was measured on: the board its suite directory names
/// (`suite.json`, as `compare --by-board` shows it), else the hostname it
/// records, else its label.
#[derive(Debug, Default)]
pub struct Boards {
    suites: HashMap<PathBuf, Option<String>>,
}

impl Boards {
    pub fn of(&mut self, path: &Path, r: &RunResult) -> String {
        let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let suite = self
            .suites
            .entry(dir)
            .or_insert_with_key(|d| {
                d.join(crate::suite::manifest::FILE)
                    .is_file()
                    .then(|| crate::suite::manifest::Manifest::read(d).ok())
                    .flatten()
                    .map(|m| m.board)
            })
            .clone();
        let named = |s: &Option<String>| {
            s.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
        };
        let board = suite
            .or_else(|| named(&r.system.hostname))
            .or_else(|| named(&r.label))
            .unwrap_or_else(|| "unknown board".into());
        crate::render::printable::printable_string(&board)
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
