//! The plots: histogram (log count axis), latency over time, latency by
//! percentile, for one result's threads or several results' main figures.

use super::math::Logs;
use super::writer::*;
use crate::result::{RunResult, ThreadResult};
use crate::stats::histogram::{representative, upper_bound, Overflow};
use crate::stats::summary::signed;
use crate::stats::Histogram;
use crate::units::{human_duration, us};
use std::collections::BTreeMap;

/// Series drawn per plot; the rest are named in the legend as not drawn.
pub const MAX_SERIES: usize = 8;
/// Points per polyline in the over-time plot; neighbours merge beyond.
const MAX_POINTS: usize = 1000;

/// The threads a plot draws (at most [`MAX_SERIES`], those with the largest
/// maxima, in their original order) and how many were left out.
pub fn drawn(threads: &[ThreadResult]) -> (Vec<&ThreadResult>, usize) {
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
                    let bin = ((v as f64).lb() * LOG_BINS_PER_OCTAVE).floor() as u64;
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
                let at = |b: u64| (b as f64 / LOG_BINS_PER_OCTAVE) * 2f64.lg() - 3.0;
                (at(bin), at(bin.saturating_add(1)))
            }
        }
    }

    /// Where value `ns` stands on the axis.
    fn x_of(&self, ns: u64) -> f64 {
        match *self {
            Bins::Linear { .. } => us_f(ns),
            Bins::Log => us_f(ns.max(1)).lg(),
        }
    }

    /// The end of the bin that holds `ns`.
    fn x_after(&self, ns: u64) -> f64 {
        match *self {
            Bins::Linear { w, .. } => us_f(ns / w * w + w),
            Bins::Log => self.x_of(ns) + 2f64.lg() / LOG_BINS_PER_OCTAVE,
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
                us_f(lo.max(1)).lg(),
                us_f(hi.max(1)).lg() + 0.01,
                decade,
            ),
        }
    }
}

/// A plot of histogram series: its title, what is measured, the series.
pub struct HistogramFigure<'a> {
    pub title: String,
    pub subtitle: String,
    /// What the values are (`latency`, `round trip` …).
    pub quantity: &'a str,
    pub series: &'a [Curve],
    /// Series not drawn (named in the legend).
    pub left_out: usize,
}

/// One series of a histogram or percentile plot.
#[derive(Debug, Clone)]
pub struct Curve {
    pub name: String,
    pub hist: Histogram,
    /// Samples beyond an imported histogram's range (drawn as a labelled band).
    pub overflow: Option<Overflow>,
}

impl Curve {
    pub fn new(name: impl Into<String>, hist: Histogram, overflow: Option<Overflow>) -> Curve {
        Curve {
            name: name.into(),
            hist,
            overflow,
        }
    }

    /// Samples within the tool's range.
    fn in_range(&self) -> u64 {
        let beyond = self.overflow.map_or(0, |o| o.count);
        self.hist.samples.saturating_sub(beyond)
    }

    /// The band's label: `≥ 100 µs: 9 samples beyond the tool's range`
    /// (`1 sample`), after the series' name when several series have one
    /// (`named`).
    fn beyond_text(&self, o: &Overflow, named: bool) -> String {
        format!(
            "{}≥ {} µs: {} {} beyond the tool's range",
            if named {
                format!("{}: ", self.name)
            } else {
                String::new()
            },
            short_us(o.from_ns),
            o.count,
            if o.count == 1 { "sample" } else { "samples" }
        )
    }
}

impl HistogramFigure<'_> {
    /// The series with samples, and the smallest minimum and largest maximum among them.
    fn filled(&self) -> (Vec<&Curve>, u64, u64) {
        let filled: Vec<_> = self.series.iter().filter(|c| c.hist.samples > 0).collect();
        let lo = filled.iter().map(|c| c.hist.min).min().unwrap_or(0);
        let hi = filled.iter().map(|c| c.hist.max).max().unwrap_or(1000);
        (filled, lo, hi)
    }

    /// The plot with these axes and lines: the legend gets the series without
    /// samples and the count of those not drawn; "no samples" when none has any.
    fn plot(&self, (x, y): (Axis, Axis), lines: Vec<Polyline>, mut keys: Vec<Key>) -> Plot {
        let empty = self.series.iter().all(|c| c.hist.samples == 0);
        keys.extend(
            self.series
                .iter()
                .filter(|c| c.hist.samples == 0)
                .map(|c| Key::remark(c.name.clone(), Some("no samples".into()))),
        );
        keys.extend(Key::not_drawn(self.left_out));
        Plot {
            title: self.title.clone(),
            subtitle: self.subtitle.clone(),
            x,
            y,
            lines,
            keys,
            markers: Vec::new(),
            bands: Vec::new(),
            empty: empty.then(|| "no samples".to_string()),
        }
    }
}

/// How many of the series have samples beyond a tool's range.
fn overflowed(filled: &[&Curve]) -> usize {
    filled.iter().filter(|c| c.overflow.is_some()).count()
}

/// The largest median of the series (0 when none has samples).
fn bulk(filled: &[&Curve]) -> u64 {
    filled
        .iter()
        .filter_map(|c| c.hist.percentile(50.0))
        .max()
        .unwrap_or(0)
}

/// The latency histogram: one step line per series, log count axis.
pub fn histogram_plot(f: &HistogramFigure) -> Plot {
    let (filled, lo, hi) = f.filled();
    let p50 = bulk(&filled);
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
    for c in &filled {
        // Samples beyond the tool's range are a band, not part of the line.
        let b = match c.overflow {
            Some(o) => bins.count(&c.hist.without_top(o.count)),
            None => bins.count(&c.hist),
        };
        max_count = max_count.max(b.values().copied().max().unwrap_or(1));
        max_count = max_count.max(c.overflow.map_or(0, |o| o.count));
        all_bins.push(b);
    }
    let x = bins.axis(f.quantity, lo, hi);
    let base = (0.5f64).lg();
    let top = (max_count as f64).lg().ceil().max(1.0);
    let mut y = log_axis("samples per bin (log scale)", 0.0, top, decade);
    y.min = base;
    let mut lines = Vec::new();
    let mut keys = Vec::new();
    let mut bands = Vec::new();
    let named = overflowed(&filled) > 1;
    for (i, (c, counts)) in filled.iter().zip(&all_bins).enumerate() {
        let (name, h) = (&c.name, &c.hist);
        if let Some(o) = c.overflow {
            bands.push(Band {
                x: (bins.x_of(o.from_ns), bins.x_after(h.max.max(o.from_ns))),
                y: (base, (o.count as f64).lg().max(0.0)),
                color: i,
                text: c.beyond_text(&o, named),
            });
        }
        let mut pts = Vec::new();
        let mut prev_end: Option<u64> = None;
        for (&bin, &c) in counts {
            let (x0, x1) = bins.edges(bin);
            let yv = (c as f64).lg();
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
        lines.push(Polyline {
            color: i,
            dash: Dash::Solid,
            width: 1.3,
            points: pts,
            dots: false,
        });
        keys.push(Key::series(
            name.clone(),
            Some(format!("max {} µs", short_us(h.max))),
            i,
        ));
    }
    let mut plot = f.plot((x, y), lines, keys);
    plot.bands = bands;
    plot
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
pub(crate) fn wants_log(reference_ns: u64, hi_ns: u64) -> bool {
    hi_ns as f64 > 20.0 * (reference_ns.max(1000) as f64)
}

/// A value axis in µs: log when asked; linear from 0, or from near the
/// minimum when every value is above half the maximum.
/// minimum when every value is above half the maximum, or from a negative
/// minimum (a tool's anticipation) on a linear axis.
pub(crate) fn latency_axis(quantity: &str, lo_ns: i64, hi_ns: i64, log: bool) -> Axis {
    if log && lo_ns >= 0 {
        let lo = log_us(lo_ns);
        let hi = log_us(hi_ns);
        log_axis(&format!("{quantity} in µs (log scale)"), lo, hi, decade)
    } else {
        let from = if lo_ns < 0 || lo_ns > hi_ns / 2 {
            us_i(lo_ns)
        } else {
            0.0
        };
        let mut a = linear_axis(&format!("{quantity} in µs"), from, us_i(hi_ns).max(0.001));
        if lo_ns >= 0 {
            a.min = a.min.max(0.0);
        }
        a
    }
}

fn us_i(ns: i64) -> f64 {
    ns as f64 / 1000.0
}

/// The log of a latency in µs; nothing is below a nanosecond (a zero sits
/// on the axis floor there), so that the axis reaches every value.
fn log_us(ns: i64) -> f64 {
    us_i(ns.max(1)).lg()
}

pub(crate) fn latency_value(ns: i64, log: bool) -> f64 {
    if log {
        log_us(ns)
    } else {
        us_i(ns)
    }
}

/// A point of the over-time plot: time in s, then min, avg and max in ns.
type TimePoint = (f64, i64, i64, i64);

/// Series points merged so that at most `MAX_POINTS` remain (min of mins,
/// max of maxima, weighted mean), each at the middle of the time it covers:
/// its intervals, the last one cut at the run's end `end_ns` when known (a
/// 5 s run's samples taken just as it ended are not drawn at 5.5 s).
fn decimated(t: &ThreadResult, end_ns: Option<u64>) -> Vec<TimePoint> {
    let pts: Vec<_> = t.series.points.iter().filter(|p| p.samples > 0).collect();
    let group = pts.len().div_ceil(MAX_POINTS).max(1);
    let interval = t.series.interval_ns;
    pts.chunks(group)
        .map(|c| {
            let samples: i128 = c.iter().map(|p| i128::from(p.samples)).sum();
            let weighted = c.iter().fold(0i128, |a, p| {
                a.saturating_add(i128::from(p.avg_ns) * i128::from(p.samples))
            });
            let avg = (weighted / samples.max(1)) as i64;
            let min = c.iter().map(|p| p.min_ns).min().unwrap_or(0);
            let max = c.iter().map(|p| p.max_ns).max().unwrap_or(0);
            let first = c.first().map(|p| p.t_ns).unwrap_or(0);
            let last = c.last().map(|p| p.t_ns).unwrap_or(0);
            let mut end = last.saturating_add(interval);
            if let Some(e) = end_ns {
                end = end.min(e.max(first));
            }
            let mid = first / 2 + end / 2;
            (mid as f64 / 1e9, min, avg, max)
        })
        .collect()
}

/// Latency over time: per-interval max (solid), average (dashed) and minimum (dotted) per thread.
pub fn timeline_plot(r: &RunResult, title: String, subtitle: String) -> Plot {
    let (threads, left_out) = drawn(&r.threads);
    let series: Vec<(&ThreadResult, Vec<TimePoint>)> = threads
        .iter()
        .map(|t| (*t, decimated(t, r.duration_ns)))
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
    let log = lo >= 0 && wants_log(r.total.avg_ns.max(0) as u64, hi.max(0) as u64);
    let t_end = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.0))
        .fold(r.duration_ns.unwrap_or(0) as f64 / 1e9, f64::max);
    let x = linear_axis("time since start in s", 0.0, t_end.max(0.001));
    let y = latency_axis(r.benchmark.quantity(), lo, hi, log);
    let mut lines = Vec::new();
    let mut keys = Vec::new();
    for (i, (t, pts)) in series.iter().enumerate() {
        for (dash, pick, width) in [
            (Dash::Solid, 3usize, 1.3),
            (Dash::Dashed, 2, 1.0),
            (Dash::Dotted, 1, 1.0),
        ] {
            lines.push(Polyline {
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
                dots: false,
            });
        }
        keys.push(Key::series(t.name.clone(), None, i));
    }
    if !series.is_empty() {
        for (text, dash) in [
            ("max", Dash::Solid),
            ("average", Dash::Dashed),
            ("min", Dash::Dotted),
        ] {
            keys.push(Key::style(text, dash));
        }
    }
    keys.extend(Key::not_drawn(left_out));
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
        bands: Vec::new(),
        empty: series
            .is_empty()
            .then(|| "no per-interval series in this result".to_string()),
    }
}

/// Step points of latency against −log10(1 − p), from a histogram, up to
/// the `in_range` lowest samples (those within a tool's range).
fn percentile_points(
    h: &Histogram,
    x_max: f64,
    log: bool,
    in_range: u64,
) -> Vec<Option<(f64, f64)>> {
    let n = h.samples;
    let mut pts = Vec::new();
    if n == 0 {
        return pts;
    }
    let end = (n as f64).lg().min(x_max);
    let x_of = |seen: u64| -> f64 {
        if seen >= n {
            end
        } else {
            (-(1.0 - seen as f64 / n as f64).lg()).min(end)
        }
    };
    let stop = x_of(in_range.min(n));
    let mut seen = 0u64;
    for (i, c) in h.nonzero() {
        if seen >= in_range {
            break;
        }
        let x0 = x_of(seen);
        seen = seen.saturating_add(c);
        let x1 = x_of(seen).min(stop);
        let v = if seen >= n {
            h.max
        } else {
            representative(i).clamp(h.min, h.max)
        };
        let y = latency_value(signed(v), log);
        pts.push(Some((x0, y)));
        pts.push(Some((x1, y)));
    }
    pts
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
pub fn percentile_plot(f: &HistogramFigure) -> Plot {
    let (filled, lo, hi) = f.filled();
    let n_max = filled.iter().map(|c| c.hist.samples).max().unwrap_or(10);
    let x_max = (n_max as f64).lg().ceil().clamp(1.0, 12.0);
    // (No samples: 0, which the log test takes as 1 µs.)
    let log = wants_log(bulk(&filled), hi);
    let mut x = log_axis("percentile (axis: 1 − p on a log scale)", 0.0, x_max, nines);
    x.ticks.retain(|(v, _)| *v <= x_max);
    let y = latency_axis(f.quantity, signed(lo), signed(hi), log);
    let mut lines = Vec::new();
    let mut keys = Vec::new();
    let mut bands = Vec::new();
    let named = overflowed(&filled) > 1;
    for (i, c) in filled.iter().enumerate() {
        let (name, h) = (&c.name, &c.hist);
        let merged_series = name == "all";
        let color = if merged_series { 8 } else { i };
        let in_range = c.in_range();
        lines.push(Polyline {
            color,
            dash: Dash::Solid,
            width: if merged_series { 2.0 } else { 1.3 },
            points: percentile_points(h, x_max, log, in_range),
            dots: false,
        });
        if let Some(o) = c.overflow {
            let from = percentile_points(h, x_max, log, in_range)
                .last()
                .copied()
                .flatten()
                .map_or(0.0, |p| p.0);
            let end = (h.samples as f64).lg().min(x_max);
            bands.push(Band {
                x: (from, end.max(from)),
                y: (
                    latency_value(signed(o.from_ns), log),
                    latency_value(signed(h.max.max(o.from_ns)), log),
                ),
                color,
                text: c.beyond_text(&o, named),
            });
        }
        // p99 among the samples beyond the range is a lower bound.
        let rank99 = (0.99 * h.samples as f64).ceil() as u64;
        let bound = if rank99 > in_range { "≥ " } else { "" };
        let p99 = h
            .percentile(99.0)
            .map(|v| format!("{bound}{}", short_us(v)))
            .unwrap_or_else(|| "-".into());
        keys.push(Key::series(
            name.to_string(),
            Some(format!("p99 {p99} µs")),
            color,
        ));
    }
    let mut plot = f.plot((x, y), lines, keys);
    plot.bands = bands;
    plot
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let series = [Curve::new("a", h.clone(), None)];
        let fig = HistogramFigure {
            title: "t".into(),
            subtitle: "s".into(),
            quantity: "latency",
            series: &series,
            left_out: 0,
        };
        let near = histogram_plot(&fig);
        assert!(near.x.label.contains("200 ns bins"), "{}", near.x.label);
        h.record(25_000_000);
        let series = [Curve::new("a", h, None)];
        let far = histogram_plot(&HistogramFigure {
            series: &series,
            ..fig
        });
        assert!(far.x.label.contains("log scale"), "{}", far.x.label);
        assert_eq!((far.x.min, far.x.max), (1.0, 5.0));
        let xs: Vec<f64> = far.lines[0].points.iter().flatten().map(|p| p.0).collect();
        assert!(xs.windows(2).all(|w| w[0] <= w[1]));
        assert!(xs[0] > 1.2 && *xs.last().unwrap() < 4.5);
    }

    #[test]
    fn no_point_over_time_lies_past_the_runs_end() {
        let p = timeline_plot(
            &crate::render::testdata::over_time(5, 20_000),
            "t".into(),
            "s".into(),
        );
        let xs: Vec<f64> = p.lines[0].points.iter().flatten().map(|q| q.0).collect();
        assert_eq!(xs.len(), 6);
        assert!(xs.iter().all(|x| *x <= 5.0), "{xs:?}");
        assert!(
            (xs[0] - 0.5).abs() < 1e-9 && (xs[5] - 5.0).abs() < 1e-9,
            "{xs:?}"
        );
        assert!(p.x.max <= 5.0 + 1e-9, "{}", p.x.max);
    }

    #[test]
    fn values_below_a_tenth_of_a_microsecond_are_not_clamped() {
        let mut r = crate::render::testdata::over_time(5, 15);
        r.threads[0].series.points[3].max_ns = 2_000_000;
        r.total.avg_ns = 15;
        let p = timeline_plot(&r, "t".into(), "s".into());
        assert!(p.y.label.contains("log"), "{}", p.y.label);
        // 15 ns: lg(0.015 µs), below the old 0.1 µs floor, with the axis under it.
        let ys: Vec<f64> = p.lines[2].points.iter().flatten().map(|q| q.1).collect();
        assert!(
            ys.iter().all(|y| (y - 0.015f64.log10()).abs() < 1e-9),
            "{ys:?}"
        );
        assert!(p.y.min <= 0.015f64.log10(), "{}", p.y.min);
        assert_eq!(latency_value(0, true), 0.001f64.log10());
    }

    #[test]
    fn one_sample_beyond_the_range_is_one_sample() {
        let c = Curve::new("a", Histogram::new(), None);
        let o = |count| Overflow {
            from_ns: 200_000,
            count,
        };
        assert_eq!(
            c.beyond_text(&o(1), true),
            "a: ≥ 200 µs: 1 sample beyond the tool's range"
        );
        assert!(c
            .beyond_text(&o(7), false)
            .starts_with("≥ 200 µs: 7 samples "));
    }

    #[test]
    fn percentile_curve_ends_at_the_maximum() {
        let mut h = Histogram::new();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let pts = percentile_points(&h, 3.0, false, h.samples);
        let last = pts.last().unwrap().unwrap();
        assert!((last.0 - 3.0).abs() < 1e-9);
        assert!((last.1 - 1000.0).abs() < 1e-9);
        let xs: Vec<f64> = pts.iter().map(|p| p.unwrap().0).collect();
        assert!(xs.windows(2).all(|w| w[0] <= w[1]));
    }
}
