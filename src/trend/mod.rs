//! `rtlat trend`: latency over months. Result files (named, or found under
//! directories, [`walk`]) are read one at a time and reduced to per-run
//! figures ([`runs`]); each board's series in start order is searched for the
//! runs from which it got worse beyond its own noise ([`change`]); the
//! tables ([`tables`]), an SVG and an HTML page ([`plot`]) show it.

pub mod change;
pub mod plot;
pub mod runs;
pub mod tables;
pub mod walk;

use crate::error::{Outcome, Result};
use crate::render::compare::TableFormat;
use change::{Change, Test};
use runs::{BoardFrom, RunPoint, Runs, SeriesKey};
use std::path::PathBuf;

/// A validated `rtlat trend`.
#[derive(Debug, Clone)]
pub struct TrendConfig {
    pub paths: Vec<PathBuf>,
    pub format: TableFormat,
    pub svg: Option<PathBuf>,
    pub html: Option<PathBuf>,
    pub test: Test,
    pub fail_on_regression: bool,
    /// What names a run's board.
    pub board_from: BoardFrom,
    /// Plot the runs by their index in start order, not over time.
    pub by_run: bool,
}

/// Every series with its runs in start order and its changes.
#[derive(Debug)]
pub struct Trend {
    pub runs: Runs,
    pub changes: Vec<Vec<Change>>,
    pub test: Test,
    /// The plots' x axis: each series' runs by index, not over time.
    pub by_run: bool,
}

impl Trend {
    pub fn new(runs: Runs, test: Test) -> Trend {
        let changes = runs
            .series
            .values()
            .map(|r| change::changes(r, &test))
            .collect();
        Trend {
            runs,
            changes,
            test,
            by_run: false,
        }
    }

    /// Each series: its key, runs and changes, by board, benchmark, series.
    pub fn iter(&self) -> impl Iterator<Item = (&SeriesKey, &[RunPoint], &[Change])> {
        self.runs
            .series
            .iter()
            .zip(&self.changes)
            .map(|((k, r), c)| (k, r.as_slice(), c.as_slice()))
    }

    /// The boards, each once, in name order.
    pub fn boards(&self) -> Vec<String> {
        let mut out: Vec<String> = self.runs.series.keys().map(|k| k.board.clone()).collect();
        out.dedup();
        out
    }

    /// The changes to worse, with their series.
    pub fn regressions(&self) -> impl Iterator<Item = (&SeriesKey, &RunPoint, &Change)> {
        self.iter()
            .flat_map(|(k, r, cs)| cs.iter().filter(|c| c.worse).map(move |c| (k, &r[c.at], c)))
    }
}

/// `rtlat trend`.
pub fn run(cfg: &TrendConfig) -> Result<Outcome> {
    let written = [&cfg.svg, &cfg.html]
        .into_iter()
        .flatten()
        .map(PathBuf::as_path);
    crate::outfile::refuse_inputs(written, cfg.paths.iter().map(PathBuf::as_path))?;
    let outputs: Vec<_> = [&cfg.svg, &cfg.html]
        .into_iter()
        .flatten()
        .map(|p| crate::outfile::checked(p))
        .collect::<Result<_>>()?;
    let files = walk::files(&cfg.paths)?;
    let runs = Runs::read(&files, &cfg.board_from);
    if runs.series.is_empty() {
        let why = runs
            .first_skipped
            .as_deref()
            .map(|w| format!(" (the first: {w})"))
            .unwrap_or_default();
        return Err(crate::error::Error::usage(format!(
            "no rtlat result among {} file(s) found{why}; give result files (--json of a benchmark, rtlat import) or directories holding them",
            files.len()
        )));
    }
    if runs.skipped > 0 {
        eprintln!(
            "rtlat: skipped {} file(s) that are not rtlat results or fail their checks (the first: {})",
            runs.skipped,
            runs.first_skipped.as_deref().unwrap_or("-")
        );
    }
    if runs.undated > 0 {
        eprintln!(
            "rtlat: left out {} result(s) without a start time (they cannot be placed in time)",
            runs.undated
        );
    }
    let trend = Trend {
        by_run: cfg.by_run,
        ..Trend::new(runs, cfg.test)
    };
    if let Some(p) = &cfg.svg {
        crate::render::write_output(p, plot::svg(&trend).as_bytes())?;
    }
    if let Some(p) = &cfg.html {
        crate::render::write_output(p, plot::html(&trend).as_bytes())?;
    }
    drop(outputs);
    crate::outfile::print(&tables::render(&trend, cfg.format));
    let worse = trend.regressions().count();
    Ok(if cfg.fail_on_regression && worse > 0 {
        Outcome::ThresholdExceeded
    } else {
        Outcome::Success
    })
}

#[cfg(test)]
mod tests;
