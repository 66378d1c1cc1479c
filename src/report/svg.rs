//! A small deterministic SVG writer and the plots of a report.
//!
//! Every plot is a [`Plot`]: two axes (linear, or log10 with values already
//! in exponents), polylines, legend keys and vertical markers, drawn in a
//! fixed 960×400 frame with the legend outside the data area on the right.
//! Numbers are printed with one decimal, so the same result always gives the
//! same bytes. No fonts, scripts or external references: `font-family:
//! sans-serif` and whatever the viewer has.

use super::{histogram_of, loads_of, machine_of, merged, primary, what_of, Loaded};
use crate::result::{RunResult, ThreadResult};
use crate::stats::histogram::{representative, upper_bound};
use crate::stats::Histogram;
use crate::units::{human_duration, us};
use std::collections::BTreeMap;
use std::fmt::Write;

pub const WIDTH: f64 = 960.0;
pub const HEIGHT: f64 = 400.0;
const LEFT: f64 = 80.0;
const TOP: f64 = 78.0;
const PLOT_RIGHT: f64 = 760.0;
const PLOT_BOTTOM: f64 = HEIGHT - 52.0;
const LEGEND_X: f64 = 776.0;
/// Series drawn per plot; the rest are named in the legend as not drawn.
pub const MAX_SERIES: usize = 8;
/// Points per polyline in the over-time plot; neighbours merge beyond.
const MAX_POINTS: usize = 1000;

const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#bcbd22",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dash {
    Solid,
    Dashed,
    Dotted,
}

impl Dash {
    fn attr(self) -> &'static str {
        match self {
            Dash::Solid => "",
            Dash::Dashed => " stroke-dasharray=\"6 3\"",
            Dash::Dotted => " stroke-dasharray=\"1.5 3\"",
        }
    }
}

/// An axis. For a log axis, `min`, `max`, tick positions and plotted values are log10 of the data.
#[derive(Debug, Clone)]
pub struct Axis {
    pub label: String,
    pub min: f64,
    pub max: f64,
    pub ticks: Vec<(f64, String)>,
}

/// A polyline in axis coordinates; `None` breaks it.
#[derive(Debug, Clone)]
pub struct Line {
    pub color: usize,
    pub dash: Dash,
    pub width: f64,
    pub points: Vec<Option<(f64, f64)>>,
}

/// One legend entry; `color: None` is drawn in grey (a style key or a remark).
#[derive(Debug, Clone)]
pub struct Key {
    pub text: String,
    /// A second, smaller line (e.g. the series' maximum).
    pub detail: Option<String>,
    pub color: Option<usize>,
    pub dash: Dash,
    /// Remarks have no line sample.
    pub line: bool,
}

/// A vertical line at `x` (axis coordinates) with a label.
#[derive(Debug, Clone)]
pub struct Marker {
    pub x: f64,
    pub text: String,
}

#[derive(Debug, Clone)]
pub struct Plot {
    pub title: String,
    pub subtitle: String,
    pub x: Axis,
    pub y: Axis,
    pub lines: Vec<Line>,
    pub keys: Vec<Key>,
    pub markers: Vec<Marker>,
    /// Shown in the middle when there is nothing to draw.
    pub empty: Option<String>,
}

/// Escape text for XML and HTML; `://` is broken up so no URL scheme appears in the output.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out.replace("://", ":&#47;&#47;")
}

/// One decimal, never `-0.0`.
fn n(v: f64) -> String {
    let s = format!("{v:.1}");
    if s == "-0.0" {
        "0.0".into()
    } else {
        s
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        s.chars().take(max.saturating_sub(1)).collect::<String>() + "…"
    }
}

/// The smallest of 1, 2, 5 × 10^k that is ≥ `v` (v > 0).
pub fn nice_up(v: f64) -> f64 {
    if v.is_nan() || v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let mut p = 10f64.powf(v.log10().floor());
    while p < v * (1.0 - 1e-12) {
        p = if p * 2.0 >= v * (1.0 - 1e-12) {
            p * 2.0
        } else if p * 5.0 >= v * (1.0 - 1e-12) {
            p * 5.0
        } else {
            p * 10.0
        };
    }
    p
}

/// Format a value with as many decimals as its step needs.
fn tick_label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    let s = format!("{v:.decimals$}");
    if s.starts_with('-')
        && s.trim_start_matches('-')
            .chars()
            .all(|c| c == '0' || c == '.')
    {
        s[1..].to_string()
    } else {
        s
    }
}

/// A linear axis covering `[lo, hi]` with about six ticks at round values.
pub fn linear_axis(label: &str, lo: f64, hi: f64) -> Axis {
    let (lo, mut hi) = if lo.is_finite() && hi.is_finite() {
        (lo, hi)
    } else {
        (0.0, 1.0)
    };
    if hi <= lo {
        hi = lo + if lo.abs() > 0.0 { lo.abs() * 0.1 } else { 1.0 };
    }
    let step = nice_up((hi - lo) / 6.0);
    let min = (lo / step).floor() * step;
    let max = (hi / step).ceil() * step;
    let count = (((max - min) / step).round() as usize).min(40);
    let ticks = (0..=count)
        .map(|k| {
            let v = min + k as f64 * step;
            (v, tick_label(v, step))
        })
        .collect();
    Axis {
        label: label.into(),
        min,
        max,
        ticks,
    }
}

/// A log axis over decades `[floor(lo), ceil(hi)]` (exponents), ticks at every decade.
pub fn log_axis(label: &str, lo_exp: f64, hi_exp: f64, fmt: fn(i32) -> String) -> Axis {
    let lo = if lo_exp.is_finite() {
        lo_exp.floor()
    } else {
        0.0
    };
    let mut hi = if hi_exp.is_finite() {
        hi_exp.ceil()
    } else {
        1.0
    };
    if hi <= lo {
        hi = lo + 1.0;
    }
    let ticks = (lo as i32..=hi as i32)
        .take(64)
        .map(|k| (k as f64, fmt(k)))
        .collect();
    Axis {
        label: label.into(),
        min: lo,
        max: hi,
        ticks,
    }
}

/// `10^k` as a plain decimal number (`0.01`, `1`, `1000`), or `1e9` beyond a million.
pub fn decade(k: i32) -> String {
    match k {
        k if !(-6..=6).contains(&k) => format!("1e{k}"),
        k if k < 0 => format!("{:.*}", (-k) as usize, 10f64.powi(k)),
        k => format!("{}", 10u64.pow(k as u32)),
    }
}

impl Plot {
    fn px(&self, x: f64) -> f64 {
        let span = self.x.max - self.x.min;
        let f = if span > 0.0 {
            (x - self.x.min) / span
        } else {
            0.0
        };
        LEFT + f.clamp(0.0, 1.0) * (PLOT_RIGHT - LEFT)
    }

    fn py(&self, y: f64) -> f64 {
        let span = self.y.max - self.y.min;
        let f = if span > 0.0 {
            (y - self.y.min) / span
        } else {
            0.0
        };
        PLOT_BOTTOM - f.clamp(0.0, 1.0) * (PLOT_BOTTOM - TOP)
    }

    /// The plot's elements in a 960×400 frame at the origin.
    fn body(&self, o: &mut String) {
        let _ = writeln!(
            o,
            "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>",
            n(WIDTH),
            n(HEIGHT)
        );
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"24.0\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\" fill=\"#222222\">{}</text>",
            n(WIDTH / 2.0),
            escape(&truncate(&self.title, 100))
        );
        for (i, line) in self.subtitle.lines().take(2).enumerate() {
            let _ = writeln!(
                o,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\" fill=\"#444444\">{}</text>",
                n(WIDTH / 2.0),
                n(42.0 + 14.0 * i as f64),
                escape(&truncate(line, 150))
            );
        }
        // Grid and ticks.
        for (v, label) in &self.x.ticks {
            let x = n(self.px(*v));
            let _ = writeln!(
                o,
                "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"#e6e6e6\"/>",
                n(TOP),
                n(PLOT_BOTTOM)
            );
            let _ = writeln!(
                o,
                "<text x=\"{x}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\" fill=\"#333333\">{}</text>",
                n(PLOT_BOTTOM + 16.0),
                escape(label)
            );
        }
        for (v, label) in &self.y.ticks {
            let y = n(self.py(*v));
            let _ = writeln!(
                o,
                "<line x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#e6e6e6\"/>",
                n(LEFT),
                n(PLOT_RIGHT)
            );
            let _ = writeln!(
                o,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"11\" fill=\"#333333\">{}</text>",
                n(LEFT - 6.0),
                n(self.py(*v) + 4.0),
                escape(label)
            );
        }
        let _ = writeln!(
            o,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333333\"/>",
            n(LEFT),
            n(TOP),
            n(PLOT_RIGHT - LEFT),
            n(PLOT_BOTTOM - TOP)
        );
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"12\" fill=\"#222222\">{}</text>",
            n((LEFT + PLOT_RIGHT) / 2.0),
            n(HEIGHT - 14.0),
            escape(&self.x.label)
        );
        let yc = n((TOP + PLOT_BOTTOM) / 2.0);
        let _ = writeln!(
            o,
            "<text x=\"18.0\" y=\"{yc}\" text-anchor=\"middle\" font-size=\"12\" fill=\"#222222\" transform=\"rotate(-90 18.0 {yc})\">{}</text>",
            escape(&self.y.label)
        );
        for m in &self.markers {
            let x = self.px(m.x);
            let _ = writeln!(
                o,
                "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#555555\" stroke-dasharray=\"4 4\"/>",
                n(x),
                n(TOP),
                n(x),
                n(PLOT_BOTTOM)
            );
            let _ = writeln!(
                o,
                "<text x=\"{}\" y=\"{}\" font-size=\"10\" fill=\"#555555\">{}</text>",
                n(x + 3.0),
                n(TOP + 12.0),
                escape(&truncate(&m.text, 40))
            );
        }
        for line in &self.lines {
            let d = self.path(line);
            if d.is_empty() {
                continue;
            }
            let _ = writeln!(
                o,
                "<path d=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" stroke-linejoin=\"round\"{}/>",
                PALETTE[line.color % PALETTE.len()],
                n(line.width),
                line.dash.attr()
            );
        }
        if let Some(msg) = &self.empty {
            let _ = writeln!(
                o,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"14\" fill=\"#777777\">{}</text>",
                n((LEFT + PLOT_RIGHT) / 2.0),
                n((TOP + PLOT_BOTTOM) / 2.0),
                escape(msg)
            );
        }
        // Legend, outside the data area.
        let mut y = TOP + 10.0;
        for k in &self.keys {
            let color = k
                .color
                .map(|c| PALETTE[c % PALETTE.len()])
                .unwrap_or("#555555");
            let text_x = if k.line {
                let _ = writeln!(
                    o,
                    "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{color}\" stroke-width=\"2.0\"{}/>",
                    n(LEGEND_X),
                    n(y),
                    n(LEGEND_X + 22.0),
                    n(y),
                    k.dash.attr()
                );
                LEGEND_X + 28.0
            } else {
                LEGEND_X
            };
            let _ = writeln!(
                o,
                "<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#222222\">{}</text>",
                n(text_x),
                n(y + 4.0),
                escape(&truncate(&k.text, 24))
            );
            if let Some(d) = &k.detail {
                let _ = writeln!(
                    o,
                    "<text x=\"{}\" y=\"{}\" font-size=\"10\" fill=\"#555555\">{}</text>",
                    n(text_x),
                    n(y + 16.0),
                    escape(&truncate(d, 26))
                );
                y += 12.0;
            }
            y += 18.0;
        }
    }

    /// SVG path data of a polyline, consecutive duplicate points dropped.
    fn path(&self, line: &Line) -> String {
        let mut d = String::new();
        let mut pen_down = false;
        let mut last: Option<(String, String)> = None;
        for p in &line.points {
            match p {
                None => {
                    pen_down = false;
                    last = None;
                }
                Some((x, y)) => {
                    if !x.is_finite() || !y.is_finite() {
                        pen_down = false;
                        last = None;
                        continue;
                    }
                    let xy = (n(self.px(*x)), n(self.py(*y)));
                    if last.as_ref() == Some(&xy) {
                        continue;
                    }
                    if !d.is_empty() {
                        d.push(' ');
                    }
                    d.push(if pen_down { 'L' } else { 'M' });
                    let _ = write!(d, "{},{}", xy.0, xy.1);
                    pen_down = true;
                    last = Some(xy);
                }
            }
        }
        d
    }

    /// An inline `<svg>` for HTML5 (no namespace declaration needed there).
    pub fn inline(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "<svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{}\" font-family=\"sans-serif\">",
            escape(&self.title),
            w = WIDTH as u32,
            h = HEIGHT as u32
        );
        self.body(&mut o);
        o.push_str("</svg>\n");
        o
    }
}

/// A standalone SVG document with the plots stacked vertically.
pub fn document(plots: &[Plot]) -> String {
    let count = plots.len().max(1);
    let h = HEIGHT as usize * count;
    let mut o = String::new();
    let _ = writeln!(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let _ = writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\">",
        w = WIDTH as u32
    );
    let title = plots
        .first()
        .map(|p| p.title.clone())
        .unwrap_or_else(|| "rtlat: no plots".into());
    let _ = writeln!(o, "<title>{}</title>", escape(&title));
    if plots.is_empty() {
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"200.0\" text-anchor=\"middle\" font-size=\"14\">no results</text>",
            n(WIDTH / 2.0)
        );
    }
    for (i, p) in plots.iter().enumerate() {
        let _ = writeln!(o, "<g transform=\"translate(0,{})\">", HEIGHT as usize * i);
        p.body(&mut o);
        o.push_str("</g>\n");
    }
    o.push_str("</svg>\n");
    o
}

// ---------------------------------------------------------------------------
// The plots of a result.

/// The threads a plot draws (at most [`MAX_SERIES`], those with the largest
/// maxima, in their original order) and how many were left out.
fn drawn(threads: &[ThreadResult]) -> (Vec<&ThreadResult>, usize) {
    let with: Vec<&ThreadResult> = threads.iter().filter(|t| t.summary.samples > 0).collect();
    if with.len() <= MAX_SERIES {
        return (with, 0);
    }
    let mut order: Vec<usize> = (0..with.len()).collect();
    order.sort_by(|&a, &b| {
        with[b]
            .summary
            .max_ns
            .cmp(&with[a].summary.max_ns)
            .then(a.cmp(&b))
    });
    let mut keep: Vec<usize> = order.into_iter().take(MAX_SERIES).collect();
    keep.sort_unstable();
    let left = with.len() - keep.len();
    (keep.into_iter().map(|i| with[i]).collect(), left)
}

/// `SCHED_FIFO 80, period 1ms, 20000 samples in 20.000s`.
fn settings_of(r: &RunResult) -> String {
    let t = &r.tuning;
    let mut parts = Vec::new();
    if !t.policy.is_empty() {
        parts.push(match t.policy.as_str() {
            "fifo" | "rr" => format!("SCHED_{} {}", t.policy.to_uppercase(), t.priority),
            other => format!("SCHED_{}", other.to_uppercase()),
        });
    }
    if let Some(p) = r.config.get("period_ns").and_then(|v| v.as_u64()) {
        parts.push(format!("period {}", human_duration(p)));
    }
    parts.push(format!(
        "{} samples in {}",
        r.total.samples,
        crate::output::text::secs(r.duration_ns)
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

fn us_f(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// Display-bin width (ns) for values from `lo` to `hi` ns: 1 µs bins as OSADL
/// draws them; wider beyond a 2 ms range, finer below a 20 µs range (never
/// finer than the histogram's own buckets at `hi`).
pub fn bin_width_ns(lo: u64, hi: u64) -> u64 {
    let range = hi.saturating_sub(lo);
    if range > 2_000_000 {
        nice_up(range as f64 / 2000.0) as u64
    } else if range >= 20_000 {
        1000
    } else {
        (nice_up((range as f64 / 100.0).max(hi as f64 / 128.0).max(1.0)) as u64).min(1000)
    }
}

/// Counts per display bin. A bucket goes to the first bin boundary it
/// contains (so a tool's exact 1 µs values land in their own bin), else to
/// the bin that holds it.
pub fn display_bins(h: &Histogram, w: u64) -> BTreeMap<u64, u64> {
    let mut bins = BTreeMap::new();
    let w = w.max(1);
    for (i, c) in h.nonzero() {
        let lo = crate::stats::histogram::lower_bound(i).max(if h.samples > 0 { h.min } else { 0 });
        let hi = upper_bound(i).min(h.max.max(lo));
        let first = lo.div_ceil(w);
        let bin = if first.saturating_mul(w) <= hi {
            first
        } else {
            lo / w
        };
        *bins.entry(bin).or_insert(0u64) += c;
    }
    bins
}

/// Display bins of a histogram plot.
#[derive(Debug, Clone, Copy)]
enum Bins {
    /// `w` ns wide from `from` ns, on a linear axis (1 µs as OSADL draws them).
    Linear { w: u64, from: u64 },
    /// [`LOG_BINS_PER_OCTAVE`] per power of two, on a log axis.
    Log,
}

/// Bins per power of two on a log latency axis (each about 4.4 % wide).
const LOG_BINS_PER_OCTAVE: f64 = 16.0;

impl Bins {
    /// Counts per bin.
    fn count(&self, h: &Histogram) -> BTreeMap<u64, u64> {
        match *self {
            Bins::Linear { w, .. } => display_bins(h, w),
            Bins::Log => {
                let mut bins = BTreeMap::new();
                for (i, c) in h.nonzero() {
                    let v = representative(i).clamp(h.min, h.max).max(1);
                    let bin = ((v as f64).log2() * LOG_BINS_PER_OCTAVE).floor() as u64;
                    *bins.entry(bin).or_insert(0u64) += c;
                }
                bins
            }
        }
    }

    /// A bin's edges in axis coordinates.
    fn edges(&self, bin: u64) -> (f64, f64) {
        match *self {
            Bins::Linear { w, .. } => (
                us_f(bin.saturating_mul(w)),
                us_f(bin.saturating_add(1).saturating_mul(w)),
            ),
            Bins::Log => {
                let at = |b: u64| (b as f64 / LOG_BINS_PER_OCTAVE) * 2f64.log10() - 3.0;
                (at(bin), at(bin.saturating_add(1)))
            }
        }
    }

    fn axis(&self, quantity: &str, lo: u64, hi: u64) -> Axis {
        match *self {
            Bins::Linear { w, from } => {
                let to = (hi / w).saturating_add(1).saturating_mul(w);
                linear_axis(
                    &format!("{quantity} in µs ({} bins)", human_bin(w)),
                    us_f(from),
                    us_f(to),
                )
            }
            Bins::Log => log_axis(
                &format!("{quantity} in µs (log scale; bins 1/16 octave, 4.4 % wide)"),
                us_f(lo.max(1)).log10(),
                us_f(hi.max(1)).log10() + 0.01,
                decade,
            ),
        }
    }
}

/// The latency histogram: one step line per series, log count axis.
pub fn histogram_plot(
    title: String,
    subtitle: String,
    quantity: &str,
    series: &[(String, Histogram)],
    left_out: usize,
) -> Plot {
    let filled: Vec<&(String, Histogram)> = series.iter().filter(|(_, h)| h.samples > 0).collect();
    let lo = filled.iter().map(|(_, h)| h.min).min().unwrap_or(0);
    let hi = filled.iter().map(|(_, h)| h.max).max().unwrap_or(1000);
    let p50 = filled
        .iter()
        .filter_map(|(_, h)| h.percentile(50.0))
        .max()
        .unwrap_or(0);
    // A tail a hundred times beyond the bulk would squeeze the bulk into a pixel: log x axis.
    let bins = if hi as f64 > 100.0 * p50.max(1000) as f64 {
        Bins::Log
    } else {
        let x_lo = if lo > hi / 2 { lo } else { 0 };
        let w = bin_width_ns(x_lo, hi);
        Bins::Linear {
            w,
            from: x_lo / w * w,
        }
    };
    let mut max_count = 1u64;
    let mut all_bins = Vec::new();
    for (_, h) in &filled {
        let b = bins.count(h);
        max_count = max_count.max(b.values().copied().max().unwrap_or(1));
        all_bins.push(b);
    }
    let x = bins.axis(quantity, lo, hi);
    let base = (0.5f64).log10();
    let top = (max_count as f64).log10().ceil().max(1.0);
    let mut y = log_axis("samples per bin (log scale)", 0.0, top, decade);
    y.min = base;
    let mut lines = Vec::new();
    let mut keys = Vec::new();
    for (i, ((name, h), counts)) in filled.iter().zip(&all_bins).enumerate() {
        let mut pts = Vec::new();
        let mut prev_end: Option<u64> = None;
        for (&bin, &c) in counts {
            let (x0, x1) = bins.edges(bin);
            let yv = (c as f64).log10();
            if prev_end != Some(bin) {
                if let Some(e) = prev_end {
                    pts.push(Some((bins.edges(e).0, base)));
                }
                pts.push(Some((x0, base)));
            }
            pts.push(Some((x0, yv)));
            pts.push(Some((x1, yv)));
            prev_end = Some(bin.saturating_add(1));
        }
        if let Some(e) = prev_end {
            pts.push(Some((bins.edges(e).0, base)));
        }
        lines.push(Line {
            color: i,
            dash: Dash::Solid,
            width: 1.3,
            points: pts,
        });
        keys.push(Key {
            text: name.clone(),
            detail: Some(format!("max {} µs", short_us(h.max))),
            color: Some(i),
            dash: Dash::Solid,
            line: true,
        });
    }
    keys.extend(no_samples(series));
    if left_out > 0 {
        keys.push(Key {
            text: format!("{left_out} more not drawn"),
            detail: None,
            color: None,
            dash: Dash::Solid,
            line: false,
        });
    }
    Plot {
        title,
        subtitle,
        x,
        y,
        lines,
        keys,
        markers: Vec::new(),
        empty: filled.is_empty().then(|| "no samples".to_string()),
    }
}

fn human_bin(w: u64) -> String {
    if w % 1000 == 0 {
        format!("{} µs", w / 1000)
    } else {
        format!("{w} ns")
    }
}

/// µs with at most three decimals, trailing zeros kept short: `110.003`, `2.5`.
fn short_us(ns: u64) -> String {
    let s = us(ns);
    let s = s.trim_end_matches('0');
    s.trim_end_matches('.').to_string()
}

/// Whether latencies spread over `hi / reference` need a log axis.
fn wants_log(reference_ns: u64, hi_ns: u64) -> bool {
    hi_ns as f64 > 20.0 * (reference_ns.max(1000) as f64)
}

/// What the values of a benchmark are: `latency`, or `computation time` for cruncher.
pub fn quantity_of(benchmark: &str) -> &'static str {
    if benchmark == "cruncher" {
        "computation time"
    } else {
        "latency"
    }
}

/// A value axis in µs: log when asked; linear from 0, or from near the
/// minimum when every value is above half the maximum.
fn latency_axis(quantity: &str, lo_ns: u64, hi_ns: u64, log: bool) -> Axis {
    if log {
        let lo = (us_f(lo_ns).max(0.1)).log10();
        let hi = us_f(hi_ns).max(0.1).log10();
        log_axis(&format!("{quantity} in µs (log scale)"), lo, hi, decade)
    } else {
        let from = if lo_ns > hi_ns / 2 { us_f(lo_ns) } else { 0.0 };
        let mut a = linear_axis(&format!("{quantity} in µs"), from, us_f(hi_ns).max(0.001));
        a.min = a.min.max(0.0);
        a
    }
}

fn latency_value(ns: u64, log: bool) -> f64 {
    if log {
        us_f(ns).max(0.1).log10()
    } else {
        us_f(ns)
    }
}

/// A point of the over-time plot: time in s, then min, avg and max in ns.
type TimePoint = (f64, u64, u64, u64);

/// Series points merged so that at most `MAX_POINTS` remain (min of mins, max of maxima, weighted mean).
fn decimated(t: &ThreadResult) -> Vec<TimePoint> {
    let pts: Vec<_> = t.series.points.iter().filter(|p| p.samples > 0).collect();
    let group = pts.len().div_ceil(MAX_POINTS).max(1);
    let half = t.series.interval_ns / 2;
    pts.chunks(group)
        .map(|c| {
            let samples: u128 = c.iter().map(|p| p.samples as u128).sum();
            let weighted = c.iter().fold(0u128, |a, p| {
                a.saturating_add(p.avg_ns as u128 * p.samples as u128)
            });
            let avg = (weighted / samples.max(1)) as u64;
            let min = c.iter().map(|p| p.min_ns).min().unwrap_or(0);
            let max = c.iter().map(|p| p.max_ns).max().unwrap_or(0);
            let first = c.first().map(|p| p.t_ns).unwrap_or(0);
            let last = c.last().map(|p| p.t_ns).unwrap_or(0);
            let mid = (first / 2 + last / 2).saturating_add(half);
            (mid as f64 / 1e9, min, avg, max)
        })
        .collect()
}

/// Latency over time: per-interval max (solid), average (dashed) and minimum (dotted) per thread.
pub fn timeline_plot(r: &RunResult, title: String, subtitle: String) -> Plot {
    let (threads, left_out) = drawn(&r.threads);
    let series: Vec<(&ThreadResult, Vec<TimePoint>)> = threads
        .iter()
        .map(|t| (*t, decimated(t)))
        .filter(|(_, p)| !p.is_empty())
        .collect();
    let hi = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.3))
        .max()
        .unwrap_or(1000);
    let lo = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.1))
        .min()
        .unwrap_or(0);
    let log = wants_log(r.total.avg_ns, hi);
    let t_end = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.0))
        .fold(r.duration_ns as f64 / 1e9, f64::max);
    let x = linear_axis("time since start in s", 0.0, t_end.max(0.001));
    let y = latency_axis(quantity_of(&r.benchmark), lo, hi, log);
    let mut lines = Vec::new();
    let mut keys = Vec::new();
    for (i, (t, pts)) in series.iter().enumerate() {
        for (dash, pick, width) in [
            (Dash::Solid, 3usize, 1.3),
            (Dash::Dashed, 2, 1.0),
            (Dash::Dotted, 1, 1.0),
        ] {
            lines.push(Line {
                color: i,
                dash,
                width,
                points: pts
                    .iter()
                    .map(|q| {
                        let v = match pick {
                            1 => q.1,
                            2 => q.2,
                            _ => q.3,
                        };
                        Some((q.0, latency_value(v, log)))
                    })
                    .collect(),
            });
        }
        keys.push(Key {
            text: t.name.clone(),
            detail: None,
            color: Some(i),
            dash: Dash::Solid,
            line: true,
        });
    }
    if !series.is_empty() {
        for (text, dash) in [
            ("max", Dash::Solid),
            ("average", Dash::Dashed),
            ("min", Dash::Dotted),
        ] {
            keys.push(Key {
                text: text.into(),
                detail: None,
                color: None,
                dash,
                line: true,
            });
        }
    }
    if left_out > 0 {
        keys.push(Key {
            text: format!("{left_out} more not drawn"),
            detail: None,
            color: None,
            dash: Dash::Solid,
            line: false,
        });
    }
    let interval = r
        .threads
        .iter()
        .map(|t| t.series.interval_ns)
        .find(|&i| i > 0)
        .unwrap_or(0);
    let mut x = x;
    if interval > 0 {
        x.label = format!(
            "time since start in s (points: {} intervals)",
            human_duration(interval)
        );
    }
    let markers = r
        .phases
        .iter()
        .skip(1)
        .map(|p| Marker {
            x: p.start_ns as f64 / 1e9,
            text: format!("{} starts", p.name),
        })
        .collect();
    Plot {
        title,
        subtitle,
        x,
        y,
        lines,
        keys,
        markers,
        empty: series
            .is_empty()
            .then(|| "no per-interval series in this result".to_string()),
    }
}

/// Step points of latency against −log10(1 − p), from a histogram.
fn percentile_points(h: &Histogram, x_max: f64, log: bool) -> Vec<Option<(f64, f64)>> {
    let n = h.samples;
    let mut pts = Vec::new();
    if n == 0 {
        return pts;
    }
    let end = (n as f64).log10().min(x_max);
    let x_of = |seen: u64| -> f64 {
        if seen >= n {
            end
        } else {
            (-(1.0 - seen as f64 / n as f64).log10()).min(end)
        }
    };
    let mut seen = 0u64;
    for (i, c) in h.nonzero() {
        let x0 = x_of(seen);
        seen = seen.saturating_add(c);
        let x1 = x_of(seen);
        let v = if seen >= n {
            h.max
        } else {
            representative(i).clamp(h.min, h.max)
        };
        let y = latency_value(v, log);
        pts.push(Some((x0, y)));
        pts.push(Some((x1, y)));
    }
    pts
}

/// Legend remarks for series that have nothing to draw.
fn no_samples(series: &[(String, Histogram)]) -> Vec<Key> {
    series
        .iter()
        .filter(|(_, h)| h.samples == 0)
        .map(|(name, _)| Key {
            text: name.clone(),
            detail: Some("no samples".into()),
            color: None,
            dash: Dash::Solid,
            line: false,
        })
        .collect()
}

/// `0 → 0%`, `1 → 90%`, `2 → 99%`, `3 → 99.9%` …
fn nines(k: i32) -> String {
    match k {
        k if k <= 0 => "0%".into(),
        1 => "90%".into(),
        2 => "99%".into(),
        k => format!("99.{}%", "9".repeat((k - 2) as usize)),
    }
}

/// Latency by percentile: latency against 1 − p on a log axis, so the tail has room.
pub fn percentile_plot(
    title: String,
    subtitle: String,
    quantity: &str,
    series: &[(String, Histogram)],
    left_out: usize,
) -> Plot {
    let filled: Vec<&(String, Histogram)> = series.iter().filter(|(_, h)| h.samples > 0).collect();
    let n_max = filled.iter().map(|(_, h)| h.samples).max().unwrap_or(10);
    let x_max = (n_max as f64).log10().ceil().clamp(1.0, 12.0);
    let hi = filled.iter().map(|(_, h)| h.max).max().unwrap_or(1000);
    let lo = filled.iter().map(|(_, h)| h.min).min().unwrap_or(0);
    let p50 = filled
        .iter()
        .filter_map(|(_, h)| h.percentile(50.0))
        .max()
        .unwrap_or(1000);
    let log = wants_log(p50, hi);
    let mut x = log_axis("percentile (axis: 1 − p on a log scale)", 0.0, x_max, nines);
    x.ticks.retain(|(v, _)| *v <= x_max);
    let y = latency_axis(quantity, lo, hi, log);
    let mut lines = Vec::new();
    let mut keys = Vec::new();
    for (i, (name, h)) in filled.iter().enumerate() {
        let merged_series = name == "all";
        lines.push(Line {
            color: if merged_series { 8 } else { i },
            dash: Dash::Solid,
            width: if merged_series { 2.0 } else { 1.3 },
            points: percentile_points(h, x_max, log),
        });
        let p99 = h
            .percentile(99.0)
            .map(short_us)
            .unwrap_or_else(|| "-".into());
        keys.push(Key {
            text: name.to_string(),
            detail: Some(format!("p99 {p99} µs")),
            color: Some(if merged_series { 8 } else { i }),
            dash: Dash::Solid,
            line: true,
        });
    }
    keys.extend(no_samples(series));
    if left_out > 0 {
        keys.push(Key {
            text: format!("{left_out} more not drawn"),
            detail: None,
            color: None,
            dash: Dash::Solid,
            line: false,
        });
    }
    Plot {
        title,
        subtitle,
        x,
        y,
        lines,
        keys,
        markers: Vec::new(),
        empty: filled.is_empty().then(|| "no samples".to_string()),
    }
}

/// The plots of one result: histogram, latency over time, latency by
/// percentile, and, when the run had phases, a histogram per phase.
pub fn report_plots(l: &Loaded) -> Vec<Plot> {
    let r = &l.result;
    let what = what_of(&r.benchmark);
    let quantity = quantity_of(&r.benchmark);
    let sub = subtitle_of(r);
    let (threads, left_out) = drawn(&r.threads);
    let series: Vec<(String, Histogram)> = threads
        .iter()
        .map(|t| (t.name.clone(), histogram_of(t)))
        .collect();
    let mut plots = vec![
        histogram_plot(
            format!("{what} histogram — {}", l.label),
            sub.clone(),
            quantity,
            &series,
            left_out,
        ),
        timeline_plot(r, format!("{what} over time — {}", l.label), sub.clone()),
    ];
    let mut pseries = series;
    let (_, prim, _) = primary(r);
    if prim.len() > 1 {
        pseries.push(("all".into(), merged(&prim)));
    }
    plots.push(percentile_plot(
        format!("{what} by percentile — {}", l.label),
        sub.clone(),
        quantity,
        &pseries,
        left_out,
    ));
    if !r.phases.is_empty() {
        let phase_series: Vec<(String, Histogram)> = r
            .phases
            .iter()
            .map(|p| {
                let ts: Vec<&ThreadResult> = p.threads.iter().collect();
                (p.name.clone(), merged(&ts))
            })
            .collect();
        plots.push(histogram_plot(
            format!("{what} by phase — {}", l.label),
            sub,
            quantity,
            &phase_series,
            0,
        ));
    }
    plots
}

/// Overlaid histograms and percentile curves of several results, one pair of
/// plots per benchmark; each result contributes its main figure ([`primary`]).
pub fn compare_plots(results: &[&Loaded]) -> Vec<Plot> {
    let mut benches: Vec<&str> = Vec::new();
    for l in results {
        if !benches.contains(&l.result.benchmark.as_str()) {
            benches.push(&l.result.benchmark);
        }
    }
    let mut plots = Vec::new();
    for b in benches {
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
        let what = what_of(b);
        let quantity = quantity_of(b);
        plots.push(histogram_plot(
            format!("{what} histogram — {count} compared"),
            sub.clone(),
            quantity,
            &series,
            left_out,
        ));
        plots.push(percentile_plot(
            format!("{what} by percentile — {count} compared"),
            sub,
            quantity,
            &series,
            left_out,
        ));
    }
    plots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_numbers() {
        assert_eq!(nice_up(0.7), 1.0);
        assert_eq!(nice_up(1.0), 1.0);
        assert_eq!(nice_up(1.2), 2.0);
        assert_eq!(nice_up(3.0), 5.0);
        assert_eq!(nice_up(7.0), 10.0);
        assert_eq!(nice_up(420.0), 500.0);
        assert_eq!(nice_up(0.013), 0.02);
        assert_eq!(nice_up(f64::NAN), 1.0);
    }

    #[test]
    fn axes_cover_their_range_with_round_ticks() {
        let a = linear_axis("x", 0.0, 110.0);
        assert_eq!(a.min, 0.0);
        assert!(a.max >= 110.0);
        assert_eq!(a.ticks[1].1, "20");
        let b = linear_axis("x", 5.0, 5.0);
        assert!(b.max > b.min);
        let c = linear_axis("x", 0.0, 0.03);
        assert_eq!(c.ticks[1].1, "0.005");
        let l = log_axis("y", -0.3, 3.2, decade);
        assert_eq!((l.min, l.max), (-1.0, 4.0));
        assert_eq!(l.ticks[0].1, "0.1");
        assert_eq!(l.ticks.last().unwrap().1, "10000");
        assert_eq!(decade(9), "1e9");
    }

    #[test]
    fn escaping_leaves_no_markup_or_url_scheme() {
        assert_eq!(
            escape("a<b & \"c\" http://x"),
            "a&lt;b &amp; &quot;c&quot; http:&#47;&#47;x"
        );
    }

    #[test]
    fn whole_microsecond_values_land_in_their_own_bin() {
        let mut h = Histogram::new();
        for v in [7u64, 8, 199, 200, 201, 1000, 2000] {
            h.record(v * 1000);
        }
        let bins = display_bins(&h, 1000);
        let got: Vec<u64> = bins.keys().copied().collect();
        assert_eq!(got, vec![7, 8, 199, 200, 201, 1000, 1999]);
        // 2000 µs shares an 8 µs wide bucket: with 2 µs bins it is exact again.
        let bins = display_bins(&h, 2000);
        assert!(bins.contains_key(&1000));
        assert_eq!(bins.values().sum::<u64>(), 7);
    }

    #[test]
    fn bin_width_follows_the_range() {
        assert_eq!(bin_width_ns(0, 110_000), 1000);
        assert_eq!(bin_width_ns(0, 6_000_000), 5000);
        assert_eq!(bin_width_ns(2000, 7000), 100);
        assert!(bin_width_ns(0, u64::MAX) > 0);
    }

    #[test]
    fn a_far_tail_switches_the_histogram_to_a_log_axis() {
        let mut h = Histogram::new();
        for v in 0..10_000u64 {
            h.record(20_000 + v % 5_000);
        }
        let near = histogram_plot(
            "t".into(),
            "s".into(),
            "latency",
            &[("a".into(), h.clone())],
            0,
        );
        assert!(near.x.label.contains("200 ns bins"), "{}", near.x.label);
        h.record(25_000_000);
        let far = histogram_plot("t".into(), "s".into(), "latency", &[("a".into(), h)], 0);
        assert!(far.x.label.contains("log scale"), "{}", far.x.label);
        assert_eq!((far.x.min, far.x.max), (1.0, 5.0));
        let xs: Vec<f64> = far.lines[0].points.iter().flatten().map(|p| p.0).collect();
        assert!(xs.windows(2).all(|w| w[0] <= w[1]));
        assert!(xs[0] > 1.2 && *xs.last().unwrap() < 4.5);
    }

    #[test]
    fn paths_skip_duplicates_and_break_on_none() {
        let p = Plot {
            title: "t".into(),
            subtitle: "s".into(),
            x: linear_axis("x", 0.0, 10.0),
            y: linear_axis("y", 0.0, 10.0),
            lines: Vec::new(),
            keys: Vec::new(),
            markers: Vec::new(),
            empty: None,
        };
        let line = Line {
            color: 0,
            dash: Dash::Solid,
            width: 1.0,
            points: vec![
                Some((0.0, 0.0)),
                Some((0.0, 0.0)),
                Some((10.0, 10.0)),
                None,
                Some((5.0, f64::NAN)),
                Some((5.0, 5.0)),
            ],
        };
        assert_eq!(p.path(&line), "M80.0,348.0 L760.0,78.0 M420.0,213.0");
    }

    #[test]
    fn percentile_curve_ends_at_the_maximum() {
        let mut h = Histogram::new();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let pts = percentile_points(&h, 3.0, false);
        let last = pts.last().unwrap().unwrap();
        assert!((last.0 - 3.0).abs() < 1e-9);
        assert!((last.1 - 1000.0).abs() < 1e-9);
        let xs: Vec<f64> = pts.iter().map(|p| p.unwrap().0).collect();
        assert!(xs.windows(2).all(|w| w[0] <= w[1]));
    }
}
