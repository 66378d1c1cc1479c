//! SVG: a small deterministic writer ([`writer`]) and the plots of a report
//! ([`plots`]); here, which plots a result and a comparison get.

pub mod exceedance;
pub(crate) mod math;
pub mod plots;
pub mod strip;
pub mod writer;

pub use plots::{
    histogram_plot, percentile_plot, timeline_plot, Curve, HistogramFigure, MAX_SERIES,
};
pub use writer::{document, escape, Plot};

use super::describe::{
    duration_of, histogram_of, loads_of, machine_of, merged, overflow_of, period_of, policy_of,
    primary,
};
use super::{benchmarks_of, Loaded, Render};
use crate::result::{RunResult, ThreadResult};
use plots::drawn;

/// The plots of results, stacked in one SVG document.
pub struct SvgReport;

impl Render for SvgReport {
    fn render(&self, results: &[&Loaded]) -> String {
        let plots: Vec<Plot> = results.iter().flat_map(|l| report_plots(l)).collect();
        document(&plots)
    }
}

/// Results' histograms overlaid (and their percentile curves), per benchmark.
pub struct CompareSvg;

impl Render for CompareSvg {
    fn render(&self, results: &[&Loaded]) -> String {
        document(&compare_plots(results))
    }
}

/// `SCHED_FIFO 80, period 1ms, 20000 samples in 20.000s`; what the result
/// does not record is left out.
fn settings_of(r: &RunResult) -> String {
    let mut parts: Vec<String> = policy_of(r).into_iter().collect();
    if let Some(p) = period_of(r) {
        parts.push(format!("period {p}"));
    }
    // The main series' count: a series per measure of one event (net's
    // round trip, transmit, receive …) counts each event once.
    let (_, _, main) = primary(r);
    let counted = format!("{} {}", main.samples, r.benchmark.counted());
    parts.push(match duration_of(r) {
        Some(d) => format!("{counted} in {d}"),
        None => counted,
    });
    if let Some(src) = r.config.get("imported_from").and_then(|v| v.as_str()) {
        parts.push(format!("imported from {src}"));
    }
    parts.join(", ")
}

fn subtitle_of(r: &RunResult) -> String {
    format!(
        "{}\nload: {} · {}",
        machine_of(r),
        loads_of(r, true),
        settings_of(r)
    )
}

/// Whether a thread of the result has points over time (imports of
/// histogram-only formats have none).
pub fn has_series(r: &RunResult) -> bool {
    r.threads
        .iter()
        .any(|t| t.series.points.iter().any(|p| p.samples > 0))
}

/// The plots of one result: histogram, latency over time (when the result
/// has a series), latency by percentile, and, when the run had phases, a
/// histogram per phase.
pub fn report_plots(l: &Loaded) -> Vec<Plot> {
    let r = &l.result;
    let what = r.benchmark.title();
    let quantity = r.benchmark.quantity();
    let sub = subtitle_of(r);
    let (threads, left_out) = drawn(&r.threads);
    let mut series: Vec<Curve> = threads
        .iter()
        .map(|t| Curve::new(t.name.clone(), histogram_of(t), t.histogram.overflow))
        .collect();
    let per_thread = series.len();
    // The percentile plot adds the threads' merged figure.
    let (_, prim, _) = primary(r);
    if prim.len() > 1 {
        series.push(Curve::new("all", merged(&prim), overflow_of(&prim)));
    }
    let figure = |title: &str, series, left_out| HistogramFigure {
        title: format!("{what} {title} — {}", l.label),
        subtitle: sub.clone(),
        quantity,
        series,
        left_out,
    };
    let mut plots = vec![histogram_plot(&figure(
        "histogram",
        &series[..per_thread],
        left_out,
    ))];
    if has_series(r) {
        plots.push(timeline_plot(
            r,
            format!("{what} over time — {}", l.label),
            sub.clone(),
        ));
    }
    plots.push(percentile_plot(&figure("by percentile", &series, left_out)));
    plots.extend(exceedance::exceedance_plot(
        r,
        &series[..per_thread],
        format!("{what} tail forecast — {}", l.label),
        sub.clone(),
    ));
    if !r.phases.is_empty() {
        let phase_series: Vec<Curve> = r
            .phases
            .iter()
            .map(|p| {
                let ts: Vec<&ThreadResult> = p.threads.iter().collect();
                Curve::new(p.name.clone(), merged(&ts), overflow_of(&ts))
            })
            .collect();
        plots.push(histogram_plot(&figure("by phase", &phase_series, 0)));
    }
    plots
}

/// Overlaid histograms and percentile curves of several results, one pair of
/// plots per benchmark; each result contributes its main figure ([`primary`]).
pub fn compare_plots(results: &[&Loaded]) -> Vec<Plot> {
    let mut plots = Vec::new();
    for b in benchmarks_of(results) {
        let group: Vec<&&Loaded> = results.iter().filter(|l| l.result.benchmark == b).collect();
        let (shown, left_out) = if group.len() > MAX_SERIES {
            (&group[..MAX_SERIES], group.len() - MAX_SERIES)
        } else {
            (&group[..], 0)
        };
        let mut what_series = String::new();
        let series: Vec<Curve> = shown
            .iter()
            .map(|l| {
                let (name, threads, _) = primary(&l.result);
                what_series = name;
                Curve::new(l.label.clone(), merged(&threads), overflow_of(&threads))
            })
            .collect();
        let loads: Vec<String> = shown
            .iter()
            .map(|l| format!("{}: {}", l.label, loads_of(&l.result, false)))
            .collect();
        let count = match group.len() {
            1 => "1 result".to_string(),
            n => format!("{n} results"),
        };
        let sub = format!("{count}, each: {what_series}\nloads — {}", loads.join("; "));
        let what = b.title();
        let histogram = HistogramFigure {
            title: format!("{what} histogram — {count} compared"),
            subtitle: sub,
            quantity: b.quantity(),
            series: &series,
            left_out,
        };
        plots.push(histogram_plot(&histogram));
        plots.push(percentile_plot(&HistogramFigure {
            title: format!("{what} by percentile — {count} compared"),
            ..histogram
        }));
    }
    plots
}
