//! SVG: a small deterministic writer ([`writer`]) and the plots of a report
//! ([`plots`]); here, which plots a result and a comparison get.

pub mod plots;
pub mod writer;

pub use plots::{histogram_plot, percentile_plot, timeline_plot, Figure, MAX_SERIES};
pub use writer::{document, escape, Plot};

use super::describe::{histogram_of, loads_of, machine_of, merged, period_of, policy_of, primary};
use super::{benchmarks_of, Loaded, Render};
use crate::result::{RunResult, ThreadResult};
use crate::stats::Histogram;
use crate::units::secs;
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

/// `SCHED_FIFO 80, period 1ms, 20000 samples in 20.000s`.
fn settings_of(r: &RunResult) -> String {
    let mut parts = vec![policy_of(r)];
    if let Some(p) = period_of(r) {
        parts.push(format!("period {p}"));
    }
    parts.push(format!(
        "{} samples in {}",
        r.total.samples,
        secs(r.duration_ns)
    ));
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

/// The plots of one result: histogram, latency over time, latency by
/// percentile, and, when the run had phases, a histogram per phase.
pub fn report_plots(l: &Loaded) -> Vec<Plot> {
    let r = &l.result;
    let what = r.benchmark.title();
    let quantity = r.benchmark.quantity();
    let sub = subtitle_of(r);
    let (threads, left_out) = drawn(&r.threads);
    let mut series: Vec<(String, Histogram)> = threads
        .iter()
        .map(|t| (t.name.clone(), histogram_of(t)))
        .collect();
    let per_thread = series.len();
    // The percentile plot adds the threads' merged figure.
    let (_, prim, _) = primary(r);
    if prim.len() > 1 {
        series.push(("all".into(), merged(&prim)));
    }
    let figure = |title: &str, series, left_out| Figure {
        title: format!("{what} {title} — {}", l.label),
        subtitle: sub.clone(),
        quantity,
        series,
        left_out,
    };
    let mut plots = vec![
        histogram_plot(&figure("histogram", &series[..per_thread], left_out)),
        timeline_plot(r, format!("{what} over time — {}", l.label), sub.clone()),
        percentile_plot(&figure("by percentile", &series, left_out)),
    ];
    if !r.phases.is_empty() {
        let phase_series: Vec<(String, Histogram)> = r
            .phases
            .iter()
            .map(|p| {
                let ts: Vec<&ThreadResult> = p.threads.iter().collect();
                (p.name.clone(), merged(&ts))
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
        let series: Vec<(String, Histogram)> = shown
            .iter()
            .map(|l| {
                let (name, threads, _) = primary(&l.result);
                what_series = name;
                (l.label.clone(), merged(&threads))
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
        let histogram = Figure {
            title: format!("{what} histogram — {count} compared"),
            subtitle: sub,
            quantity: b.quantity(),
            series: &series,
            left_out,
        };
        plots.push(histogram_plot(&histogram));
        plots.push(percentile_plot(&Figure {
            title: format!("{what} by percentile — {count} compared"),
            ..histogram
        }));
    }
    plots
}
