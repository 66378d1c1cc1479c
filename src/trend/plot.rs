//! The trend drawn: one plot per figure (max, p99.9, p99, p50), one line
//! per board, load and series, a dot per run over a time axis that fits the
//! span (or by run index), the kernel changes and the first worse runs
//! marked; as an SVG document or inside an HTML page. The max plot draws
//! beside each series' maxima the tail forecast its runs hold (dashed; a
//! gap where a run's was withheld or is absent).

use super::runs::{RunFigure, RunForecast, RunPoint, SeriesKey};
use super::{tables, Trend};
use crate::render::html::STYLE;
use crate::render::svg::plots::{latency_axis, latency_value, wants_log};
use crate::render::svg::writer::{linear_axis, Axis, Dash, Key, Marker, Polyline};
use crate::render::svg::{document, escape, Plot, MAX_SERIES};
use std::fmt::Write;

const MINUTE: f64 = 60.0;
const HOUR: f64 = 3_600.0;
const DAY: f64 = 86_400.0;
/// A month of the Gregorian calendar's average length.
const MONTH: f64 = 30.436_875 * DAY;

/// Where runs stand on the x axis: time since the first run in the unit
/// that fits the span (a few runs within the hour spread over minutes,
/// nightly runs over days), or each series' runs by index.
#[derive(Debug, Clone, Copy)]
pub struct XScale {
    t0: i64,
    unit: Option<(f64, &'static str)>,
}

impl XScale {
    /// The scale of runs from `t0` to `t1` (seconds), or by run index.
    pub fn new(t0: i64, t1: i64, by_run: bool) -> XScale {
        let span = (t1 - t0) as f64;
        let unit = if by_run {
            None
        } else if span <= 3.0 * HOUR {
            Some((MINUTE, "minutes"))
        } else if span <= 3.0 * DAY {
            Some((HOUR, "hours"))
        } else if span <= 180.0 * DAY {
            Some((DAY, "days"))
        } else {
            Some((MONTH, "months"))
        };
        XScale { t0, unit }
    }

    /// The x of a series' `i`th run (0-based).
    pub fn x(&self, i: usize, p: &RunPoint) -> f64 {
        match self.unit {
            Some((unit, _)) => (p.at - self.t0) as f64 / unit,
            None => (i + 1) as f64,
        }
    }

    /// The axis for runs up to `t1`, of series up to `runs` long; `since`
    /// is the first run's start (RFC 3339), to the second on a minute axis.
    fn axis(&self, t1: i64, runs: usize, since: &str) -> Axis {
        match self.unit {
            Some((unit, name)) => {
                let since = match (unit == MINUTE, since.get(..19)) {
                    (true, Some(s)) => s.replacen('T', " ", 1),
                    _ => tables::date(since),
                };
                linear_axis(
                    &format!("{name} since {since}"),
                    0.0,
                    (t1 - self.t0) as f64 / unit,
                )
            }
            None => linear_axis("run of the series, in start order", 1.0, runs as f64),
        }
    }
}

/// The forecast a run holds, if it holds one that was made.
fn forecast_ns(p: &RunPoint) -> Option<u64> {
    match p.forecast {
        Some(RunForecast::Made(ns)) => Some(ns),
        _ => None,
    }
}

/// The plot of one figure over time.
fn figure_plot(t: &Trend, f: RunFigure, t0: i64, t1: i64) -> Plot {
    let drawn: Vec<(&SeriesKey, &[RunPoint])> = t
        .iter()
        .map(|(k, r, _)| (k, r))
        .filter(|(_, r)| r.iter().any(|p| p.get(f).is_some()))
        .collect();
    let left_out = drawn.len().saturating_sub(MAX_SERIES);
    let drawn = &drawn[..drawn.len().min(MAX_SERIES)];
    // A forecast is of the tail beyond the run: it goes beside the maximum.
    let forecast = |p: &RunPoint| (f == RunFigure::Max).then(|| forecast_ns(p)).flatten();
    let values = || {
        drawn
            .iter()
            .flat_map(|(_, r)| r.iter().flat_map(|p| [p.get(f), forecast(p)]).flatten())
    };
    let hi = values().max().unwrap_or(1000);
    let lo = values().min().unwrap_or(0);
    let log = wants_log(lo, hi);
    let quantity = drawn
        .first()
        .map(|(k, _)| k.benchmark.quantity())
        .unwrap_or("latency");
    let scale = XScale::new(t0, t1, t.by_run);
    let longest = drawn.iter().map(|(_, r)| r.len()).max().unwrap_or(1);
    let x = scale.axis(t1, longest, &first_start(t));
    let y = latency_axis(
        &format!("{} {quantity}", f.name()),
        lo as i64,
        hi as i64,
        log,
    );
    let mut lines = Vec::new();
    let mut keys = Vec::new();
    let mut markers = Vec::new();
    for (i, (k, runs)) in drawn.iter().enumerate() {
        lines.push(Polyline {
            color: i,
            dash: Dash::Solid,
            width: 1.3,
            points: runs
                .iter()
                .enumerate()
                .map(|(n, p)| {
                    p.get(f)
                        .map(|v| (scale.x(n, p), latency_value(v as i64, log)))
                })
                .collect(),
            dots: true,
        });
        let worst = runs.iter().filter_map(|p| p.get(f)).max().unwrap_or(0);
        // Whole µs from 1 ms up: the legend has room for 26 characters.
        let worst = if worst >= 1_000_000 {
            ((worst + 500) / 1000).to_string()
        } else {
            crate::units::us(worst)
        };
        keys.push(Key::series(
            format!("{} {}", k.board, k.series),
            Some(format!(
                "{} {}\n{} runs, worst {worst} µs",
                k.benchmark,
                k.load,
                runs.len()
            )),
            i,
        ));
        if f == RunFigure::Max {
            lines.extend(forecast_line(i, runs, &scale, log));
        }
        for (n, w) in runs.windows(2).enumerate() {
            if w[0].kernel != w[1].kernel {
                markers.push(Marker {
                    x: scale.x(n + 1, &w[1]),
                    text: w[1].kernel.clone(),
                });
            }
        }
    }
    markers.extend(worse_markers(t, f, &scale));
    markers.sort_by(|a, b| a.x.total_cmp(&b.x));
    // One marker for the same event of several series, a pixel or so apart.
    let near = (x.max - x.min) / 500.0;
    markers.dedup_by(|a, b| a.text == b.text && (a.x - b.x).abs() <= near);
    keys.extend(Key::not_drawn(left_out));
    if f == RunFigure::Max {
        keys.extend(forecast_keys(drawn.iter().flat_map(|(_, r)| r.iter())));
    }
    if !markers.is_empty() {
        keys.push(Key::remark(
            "| first run on a kernel,".into(),
            Some("or the first worse run".into()),
        ));
    }
    let runs: usize = drawn.iter().map(|(_, r)| r.len()).sum();
    Plot {
        title: format!("{} per run over time", f.name()),
        subtitle: format!(
            "{} series, {} boards; {runs} runs drawn, a dot each",
            t.runs.series.len(),
            t.boards().len()
        ),
        x,
        y,
        lines,
        keys,
        markers,
        bands: Vec::new(),
        empty: drawn
            .is_empty()
            .then(|| format!("no run has a {}", f.name())),
    }
}

/// The forecasts a series' runs hold, dashed in its colour `color`, with a
/// gap where a run's was withheld or is absent; `None` when no run holds one.
fn forecast_line(color: usize, runs: &[RunPoint], scale: &XScale, log: bool) -> Option<Polyline> {
    runs.iter()
        .any(|p| forecast_ns(p).is_some())
        .then(|| Polyline {
            color,
            dash: Dash::Dashed,
            width: 1.0,
            points: runs
                .iter()
                .enumerate()
                .map(|(n, p)| forecast_ns(p).map(|v| (scale.x(n, p), latency_value(v as i64, log))))
                .collect(),
            dots: false,
        })
}

/// The first run of each change to worse in figure `f`, marked on the x axis.
fn worse_markers(t: &Trend, f: RunFigure, scale: &XScale) -> Vec<Marker> {
    t.iter()
        .flat_map(|(k, runs, cs)| {
            cs.iter()
                .filter(|c| c.worse && c.shifts.iter().any(|s| s.figure == f))
                .map(move |c| Marker {
                    x: scale.x(c.at, &runs[c.at]),
                    text: format!("{} worse", k.board),
                })
        })
        .collect()
}

/// The legend of the forecasts of the runs drawn: their line, and how many
/// were withheld; nothing when no run holds a forecast that was made.
fn forecast_keys<'a>(runs: impl Iterator<Item = &'a RunPoint> + Clone) -> Vec<Key> {
    let mut keys = Vec::new();
    if runs.clone().any(|p| forecast_ns(p).is_some()) {
        keys.push(Key::style("tail forecast per sample", Dash::Dashed));
        let withheld = runs
            .filter(|p| p.forecast == Some(RunForecast::Withheld))
            .count();
        if withheld > 0 {
            keys.push(Key::remark(format!("{withheld} forecasts withheld"), None));
        }
    }
    keys
}

fn first_start(t: &Trend) -> String {
    t.iter()
        .filter_map(|(_, r, _)| r.first())
        .min_by_key(|p| p.at)
        .map(|p| p.start.clone())
        .unwrap_or_default()
}

/// The plots: max, p99.9, p99, p50 (those some run has).
pub fn plots(t: &Trend) -> Vec<Plot> {
    let all = || t.iter().flat_map(|(_, r, _)| r.iter().map(|p| p.at));
    let (t0, t1) = (all().min().unwrap_or(0), all().max().unwrap_or(0));
    RunFigure::ALL
        .into_iter()
        .map(|f| figure_plot(t, f, t0, t1))
        .filter(|p| p.empty.is_none())
        .collect()
}

/// The plots as one SVG document.
pub fn svg(t: &Trend) -> String {
    document(&plots(t))
}

/// One self-contained page: the tables first (read at a glance), then
/// the changes and the plots.
pub fn html(t: &Trend) -> String {
    let mut o = String::new();
    let title = format!(
        "rtlat trend: {} boards, {} series",
        t.boards().len(),
        t.runs.series.len()
    );
    let _ = writeln!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">"
    );
    let _ = writeln!(
        o,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    );
    let _ = writeln!(
        o,
        "<title>{}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>",
        escape(&title)
    );
    let _ = writeln!(o, "<h1>{}</h1>", escape(&title));
    let _ = writeln!(
        o,
        "<p>Made by rtlat {}. Latencies in µs.</p>",
        env!("CARGO_PKG_VERSION")
    );
    for board in t.boards() {
        let _ = writeln!(o, "<h2>{}</h2>\n<table>", escape(&board));
        for (i, row) in tables::board_rows(t, &board).iter().enumerate() {
            let cell = if i == 0 { "th" } else { "td" };
            o.push_str("<tr>");
            for (c, v) in row.iter().enumerate() {
                let class = if tables::left(c) { " class=\"k\"" } else { "" };
                let _ = write!(o, "<{cell}{class}>{}</{cell}>", escape(v));
            }
            o.push_str("</tr>\n");
        }
        let _ = writeln!(o, "</table>");
    }
    let _ = writeln!(o, "<h2>Changes</h2>");
    let lines = tables::change_lines(t);
    if lines.is_empty() {
        let _ = writeln!(o, "<p>No change beyond run-to-run noise.</p>");
    } else {
        let _ = writeln!(o, "<p>{}</p>\n<ul>", escape(&tables::test_line(t)));
        for l in lines {
            let _ = writeln!(o, "<li class=\"note\">{}</li>", escape(&l));
        }
        let _ = writeln!(o, "</ul>");
    }
    let _ = writeln!(o, "<h2>Over time</h2>");
    for p in plots(t) {
        o.push_str(&p.inline());
    }
    let _ = writeln!(o, "</body>\n</html>");
    o
}
