//! The trend as people read it in a terminal or a Markdown page: a table per
//! board (one row per benchmark and series) and the changes found, through
//! the one table renderer; CSV gives the rows of every board in one table.

use super::change::Change;
use super::runs::{RunFigure, RunForecast, RunPoint, SeriesKey};
use super::Trend;
use crate::render::compare::TableFormat;
use crate::render::describe::UNKNOWN;
use crate::render::table::{self, Align, Col};
use crate::units::us;

const HEAD: [&str; 11] = [
    "series",
    "load",
    "runs",
    "first",
    "last",
    "kernels",
    "worst max",
    "typical p99",
    "last p99",
    "last vs typical",
    "last forecast",
];

/// `2026-01-05 10:00` of an RFC 3339 time.
pub fn date(start: &str) -> String {
    start.get(..16).unwrap_or(start).replacen('T', " ", 1)
}

/// The kernel releases of the runs, each once, in the order they appear.
pub fn kernels(runs: &[RunPoint]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for r in runs {
        if out.last() != Some(&r.kernel.as_str()) && !out.contains(&r.kernel.as_str()) {
            out.push(&r.kernel);
        }
    }
    out
}

/// The median of the runs' p99 (`None` when no run has one).
pub fn typical_p99(runs: &[RunPoint]) -> Option<u64> {
    let v: Vec<u64> = runs.iter().filter_map(|r| r.get(RunFigure::P99)).collect();
    (!v.is_empty()).then(|| super::change::median(&v))
}

/// `+12%`, `-3%` of `last` against `typical`.
fn versus(last: Option<u64>, typical: Option<u64>) -> String {
    match (last, typical) {
        (Some(l), Some(t)) if t > 0 => {
            let pct = (l as f64 / t as f64 - 1.0) * 100.0;
            format!("{pct:+.0}%")
        }
        _ => UNKNOWN.into(),
    }
}

fn row(key: &SeriesKey, runs: &[RunPoint]) -> Vec<String> {
    let (first, last) = (&runs[0], &runs[runs.len() - 1]);
    let worst = runs.iter().map(|r| r.max_ns).max().unwrap_or(0);
    let typical = typical_p99(runs);
    let opt = |v: Option<u64>| v.map(us).unwrap_or_else(|| UNKNOWN.into());
    vec![
        format!("{} {}", key.benchmark, key.series),
        key.load.clone(),
        runs.len().to_string(),
        date(&first.start),
        date(&last.start),
        kernels(runs).join(", "),
        us(worst),
        opt(typical),
        opt(last.get(RunFigure::P99)),
        versus(last.get(RunFigure::P99), typical),
        match last.forecast {
            Some(RunForecast::Made(ns)) => us(ns),
            Some(RunForecast::Withheld) => "withheld".into(),
            None => UNKNOWN.into(),
        },
    ]
}

/// Whether column `c` holds words (series, load, kernels), set left.
pub fn left(c: usize) -> bool {
    matches!(HEAD.get(c), Some(&("series" | "load" | "kernels")))
}

fn aligns() -> Vec<Align> {
    (0..HEAD.len())
        .map(|c| if left(c) { Align::Left } else { Align::Right })
        .collect()
}

/// One change as a line: the series, the run (file, date, kernel) and each
/// figure's medians before and after.
pub fn change_line(key: &SeriesKey, runs: &[RunPoint], c: &Change) -> String {
    let r = &runs[c.at];
    let shifts: Vec<String> = c
        .shifts
        .iter()
        .map(|s| {
            format!(
                "{} {} -> {} us ({:+.0}%, z {:.1})",
                s.figure.name(),
                us(s.before_ns),
                us(s.after_ns),
                s.ratio() * 100.0,
                s.z
            )
        })
        .collect();
    let kernel_changed = c.at > 0 && runs[c.at - 1].kernel != r.kernel;
    let explained = cause_grown(runs, c)
        .map(|g| format!("; explained: {g}"))
        .unwrap_or_default();
    format!(
        "{}: {}: {} from run {} of {}, {} ({}, kernel {}{}): {}{explained}",
        key.board,
        key.name(),
        if c.worse { "worse" } else { "better" },
        c.at + 1,
        runs.len(),
        crate::render::printable::printable_string(&r.file.display().to_string()),
        date(&r.start),
        r.kernel,
        if kernel_changed {
            ", its first run"
        } else {
            ""
        },
        shifts.join("; ")
    )
}

/// Which cause of the explained worst cases grew most from the run before
/// the change to its first run (both with `--explain`), if one did.
fn cause_grown(runs: &[RunPoint], c: &Change) -> Option<String> {
    let before = runs.get(c.at.checked_sub(1)?)?;
    let load = |r: &RunPoint| crate::render::loaded::load(&r.file).ok();
    let (before, after) = (load(before)?, load(&runs[c.at])?);
    crate::render::causes::grew_most(&before.result, &after.result)
}

/// The header and a row per series of `board`.
pub fn board_rows(t: &Trend, board: &str) -> Vec<Vec<String>> {
    let mut rows = vec![HEAD.iter().map(|h| h.to_string()).collect()];
    rows.extend(
        t.iter()
            .filter(|(k, _, _)| k.board == board)
            .map(|(k, r, _)| row(k, r)),
    );
    rows
}

/// Every change as a line, in board and run order.
pub fn change_lines(t: &Trend) -> Vec<String> {
    t.iter()
        .flat_map(|(k, r, cs)| cs.iter().map(move |c| change_line(k, r, c)))
        .collect()
}

/// What the test is, said above the changes.
pub fn test_line(t: &Trend) -> String {
    format!(
        "changes beyond run-to-run noise (Mann-Whitney over the runs before and after, |z| >= {}, medians {:.0}% apart or more):",
        t.test.z,
        t.test.min_change * 100.0
    )
}

/// The tables and the changes in `format`.
pub fn render(t: &Trend, format: TableFormat) -> String {
    let aligns = aligns();
    if format == TableFormat::Csv {
        let head = HEAD.iter().map(|h| h.to_string());
        let mut rows = vec![std::iter::once("board".to_string()).chain(head).collect()];
        for (key, runs, _) in t.iter() {
            rows.push(
                std::iter::once(key.board.clone())
                    .chain(row(key, runs))
                    .collect(),
            );
        }
        return table::csv(&rows);
    }
    let md = format == TableFormat::Markdown;
    let mut o = String::new();
    for board in t.boards() {
        let rows = board_rows(t, &board);
        if md {
            o.push_str(&format!(
                "## {board}\n\n{}\n",
                table::markdown(&aligns, &rows)
            ));
        } else {
            let cols: Vec<Col> = aligns
                .iter()
                .map(|a| match a {
                    Align::Left => Col::left(),
                    Align::Right => Col::right(),
                })
                .collect();
            o.push_str(&format!("{board}\n{}\n", table::text(&cols, &rows)));
        }
    }
    o.push_str("latencies in us\n\n");
    let lines = change_lines(t);
    if lines.is_empty() {
        o.push_str("no change beyond run-to-run noise\n");
    } else {
        o.push_str(&test_line(t));
        o.push('\n');
        for l in lines {
            o.push_str(if md { "- " } else { "  " });
            o.push_str(&l);
            o.push('\n');
        }
    }
    o
}
