//! The exceedance plot of a report: per sample, the probability of a
//! latency above x against x, both on log scales (the observed survival
//! function), the fitted tail of each forecast series continued down to the
//! forecast's probability with its 95 % band, and `--bound`.

use super::math::Logs;
use super::plots::{drawn, Curve};
use super::writer::{decade, log_axis, Dash, Key, Marker, Plot, Polyline};
use crate::forecast::tail_curve;
use crate::result::RunResult;
use crate::stats::histogram::upper_bound;
use crate::stats::Histogram;

/// Points of a fitted tail.
const POINTS: usize = 24;
/// The latency axis ends here at most (10 s): beyond, a tail forecasts
/// nothing a real-time system could use.
const MAX_EXP: f64 = 7.0;

fn lg_us(ns: f64) -> f64 {
    (ns / 1000.0).max(0.001).lg()
}

/// The observed survival: after each bucket, the share of samples above it.
fn observed(h: &Histogram) -> Vec<Option<(f64, f64)>> {
    let n = h.samples as f64;
    let mut seen = 0u64;
    let mut pts = Vec::new();
    for (i, c) in h.nonzero() {
        seen += c;
        let above = n - seen as f64;
        if above <= 0.0 {
            break;
        }
        pts.push(Some((lg_us(upper_bound(i) as f64), (above / n).lg())));
    }
    pts
}

/// The exceedance plot of `r`'s threads (those drawn in the other plots),
/// `None` when no thread has a forecast that was made.
pub fn exceedance_plot(
    r: &RunResult,
    curves: &[Curve],
    title: String,
    sub: String,
) -> Option<Plot> {
    let (threads, _) = drawn(&r.threads);
    let mut lines = Vec::new();
    let mut keys = Vec::new();
    let (mut lo_x, mut hi_x, mut lo_y) = (f64::INFINITY, f64::NEG_INFINITY, -1.0f64);
    let mut any = false;
    for (i, (t, c)) in threads.iter().zip(curves).enumerate() {
        let h = &c.hist;
        if h.samples == 0 {
            continue;
        }
        let obs = observed(h);
        for p in obs.iter().flatten() {
            (lo_x, hi_x, lo_y) = (lo_x.min(p.0), hi_x.max(p.0), lo_y.min(p.1));
        }
        lines.push(Polyline {
            color: i,
            dash: Dash::Solid,
            width: 1.3,
            points: obs,
            dots: false,
        });
        let Some(f) = t.forecast.as_ref().filter(|f| f.withheld.is_none()) else {
            keys.push(Key::series(
                t.name.clone(),
                Some("forecast withheld".into()),
                i,
            ));
            continue;
        };
        let Some(tail) = tail_curve(h, f.exceedance, POINTS) else {
            continue;
        };
        any = true;
        let cap = |ns: f64| lg_us(ns).min(MAX_EXP);
        let line =
            |pick: fn(&crate::forecast::predict::Estimate) -> f64| -> Vec<Option<(f64, f64)>> {
                tail.iter()
                    .map(|(p, e)| Some((cap(pick(e)), p.lg())))
                    .collect()
            };
        for (pts, dash, width) in [
            (line(|e| e.value), Dash::Dashed, 1.6),
            (line(|e| e.low), Dash::Dotted, 1.0),
            (line(|e| e.high), Dash::Dotted, 1.0),
        ] {
            for p in pts.iter().flatten() {
                (hi_x, lo_y) = (hi_x.max(p.0), lo_y.min(p.1));
            }
            lines.push(Polyline {
                color: i,
                dash,
                width,
                points: pts,
                dots: false,
            });
        }
        let detail = f.per_sample.map(|v| {
            format!(
                "{:e} per sample: {:.1} µs",
                f.exceedance,
                v.value_ns as f64 / 1000.0
            )
        });
        keys.push(Key::series(t.name.clone(), detail, i));
    }
    if !any {
        return None;
    }
    keys.push(Key::style("fitted tail", Dash::Dashed));
    keys.push(Key::style("95 % interval", Dash::Dotted));
    let bound = threads
        .iter()
        .find_map(|t| t.forecast.as_ref()?.bound.as_ref().map(|b| b.bound_ns));
    if let Some(b) = bound {
        hi_x = hi_x.max(lg_us(b as f64));
    }
    let mut plot = Plot {
        title,
        subtitle: sub,
        x: log_axis("latency in µs (log scale)", lo_x, hi_x.min(MAX_EXP), decade),
        y: log_axis(
            "probability per sample of a higher latency (log scale)",
            lo_y,
            0.0,
            |k| format!("1e{k}"),
        ),
        lines,
        keys,
        markers: Vec::new(),
        bands: Vec::new(),
        empty: None,
    };
    if let Some(b) = bound {
        plot.markers.push(Marker {
            x: lg_us(b as f64),
            text: format!("bound {:.1} µs", b as f64 / 1000.0),
        });
    }
    Some(plot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forecast::{forecast, ForecastSettings};
    use crate::render::testdata;
    use crate::result::{Series, SeriesPoint};

    #[test]
    fn a_forecast_series_gets_its_tail_band_and_bound_and_a_withheld_one_none() {
        // 300 s at 1 kHz, exponential above 10 µs: a forecast that is made.
        let mut h = Histogram::new();
        let mut s = 5u64;
        let mut points = Vec::new();
        for i in 0..300u64 {
            let mut max = 0;
            for _ in 0..1000 {
                let u = ((crate::stats::xorshift(&mut s) >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
                let v = 10_000 + (-2000.0 * libm::log(u)) as u64;
                h.record(v);
                max = max.max(v);
            }
            points.push(SeriesPoint {
                t_ns: i * 1_000_000_000,
                samples: 1000,
                min_ns: 10_000,
                avg_ns: 12_000,
                max_ns: max as i64,
                overruns: 0,
            });
        }
        let mut r = testdata::empty();
        r.threads[0].summary.samples = h.samples;
        r.threads[0].series = Series {
            interval_ns: 1_000_000_000,
            points,
        };
        let set = ForecastSettings {
            bound_ns: Some(200_000),
            ..Default::default()
        };
        r.threads[0].forecast = Some(forecast(
            &h,
            &r.threads[0].series,
            Some(300_000_000_000),
            &set,
        ));
        let curves = [Curve::new("cpu0", h.clone(), None)];
        let plot = exceedance_plot(&r, &curves, "t".into(), "s".into()).expect("a plot");
        // Observed, fitted, low and high.
        assert_eq!(plot.lines.len(), 4);
        let fitted = &plot.lines[1];
        assert_eq!(fitted.dash, Dash::Dashed);
        let last = fitted.points.last().unwrap().unwrap();
        assert!((last.1 - (-9.0)).abs() < 1e-6, "down to 1e-9: {last:?}");
        assert_eq!(plot.markers.len(), 1);
        assert!(plot.markers[0].text.contains("200.0"));
        // Withheld: no plot.
        r.threads[0].forecast.as_mut().unwrap().withheld = Some("why".into());
        assert!(exceedance_plot(&r, &curves, "t".into(), "s".into()).is_none());
    }
}
