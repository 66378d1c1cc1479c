//! Spikes: the samples above a threshold, how often they come (MTBF as
//! hwlatdetect gives it) and whether they come at a period.
//!
//! A result keeps no time per sample; its series keeps each interval's
//! maximum. A spike's time is therefore known to the interval of the series
//! (1 s unless `--interval` says otherwise): an interval whose maximum is
//! above the threshold holds at least one spike, placed at its middle.

use crate::result::forecast::{Periodicity, Spikes};
use crate::result::Series;
use crate::stats::histogram::{index_of, Histogram};

/// The spike threshold derived from a series: the median of the interval
/// maxima plus three robust standard deviations (1.4826 × their median
/// absolute deviation), at least 1 ns above the median.
pub fn default_threshold(maxima: &[f64]) -> Option<f64> {
    if maxima.is_empty() {
        return None;
    }
    let med = median(maxima);
    let dev: Vec<f64> = maxima.iter().map(|m| (m - med).abs()).collect();
    let mad = median(&dev);
    Some(med + (3.0 * 1.4826 * mad).max(1.0))
}

pub(crate) fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// The intervals holding a spike: (time of the interval's middle in ns, its maximum).
pub fn events(series: &Series, threshold: f64) -> Vec<(f64, f64)> {
    let half = series.interval_ns as f64 / 2.0;
    series
        .points
        .iter()
        .filter(|p| p.samples > 0 && p.max_ns as f64 > threshold)
        .map(|p| (p.t_ns as f64 + half, p.max_ns as f64))
        .collect()
}

/// Samples above `threshold` in the histogram (a bucket straddling it counts
/// when its lower edge is above).
fn count_above(h: &Histogram, threshold: f64) -> u64 {
    let from = index_of(threshold as u64 + 1);
    h.nonzero()
        .filter(|&(i, _)| {
            i > from || (i == from && crate::stats::histogram::lower_bound(i) as f64 > threshold)
        })
        .map(|(_, c)| c)
        .sum()
}

/// The spikes of a series and its histogram above `threshold`.
pub fn spikes(h: &Histogram, series: &Series, threshold: f64) -> Spikes {
    let ev = events(series, threshold);
    let count = count_above(h, threshold).max(ev.len() as u64);
    let mtbf_ns = match (ev.first(), ev.last()) {
        (Some(a), Some(b)) if count >= 2 && b.0 > a.0 => {
            Some(((b.0 - a.0) / (count - 1) as f64).round() as u64)
        }
        _ => None,
    };
    let times: Vec<f64> = ev.iter().map(|e| e.0).collect();
    Spikes {
        threshold_ns: threshold.round() as u64,
        count,
        intervals: ev.len() as u64,
        mtbf_ns,
        resolution_ns: series.interval_ns,
        period: period(&times, series.interval_ns as f64),
    }
}

/// Spikes on a period's grid at least: this share of them ...
pub const PERIODIC_SHARE: f64 = 0.8;
/// ... and this many.
const PERIODIC_FEWEST: usize = 5;

/// A period in the spike times `t` (ns, ascending) known to `res` ns: the
/// most frequent gap between neighbours, refined by a least-squares fit of
/// the times against their grid numbers; `None` unless at least
/// [`PERIODIC_SHARE`] of the spikes (and [`PERIODIC_FEWEST`]) sit on the
/// grid, and the grid is at least three intervals wide (finer periods
/// cannot be told from the series).
pub fn period(t: &[f64], res: f64) -> Option<Periodicity> {
    if t.len() < PERIODIC_FEWEST {
        return None;
    }
    let gaps: Vec<u64> = t
        .windows(2)
        .map(|w| ((w[1] - w[0]) / res).round() as u64)
        .collect();
    let mut counts: Vec<(u64, usize)> = Vec::new();
    for g in gaps {
        match counts.iter_mut().find(|c| c.0 == g) {
            Some(c) => c.1 += 1,
            None => counts.push((g, 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    // The most frequent gaps in turn; a later one only if it holds more.
    let mut best: Option<Periodicity> = None;
    for c in counts.iter().take(3).filter(|c| c.0 >= 3) {
        if let Some(p) = on_grid(t, c.0 as f64 * res, res) {
            if best.is_none_or(|b| p.share > b.share) {
                best = Some(p);
            }
        }
    }
    best.filter(|p| p.share >= PERIODIC_SHARE)
}

/// How well the times sit on a grid of period `p`: a line through the
/// times within one interval of the grid from the first spike, then the
/// spikes within [`ON_GRID`] of an interval from that line, the line fitted
/// again through them, and their scatter about it.
fn on_grid(t: &[f64], p: f64, res: f64) -> Option<Periodicity> {
    let t0 = t[0];
    let first: Vec<(f64, f64)> = t
        .iter()
        .map(|&x| (((x - t0) / p).round(), x))
        .filter(|&(j, x)| (x - t0 - j * p).abs() <= res)
        .collect();
    let (a, b) = line(&first)?;
    let near: Vec<(f64, f64)> = t
        .iter()
        .map(|&x| (((x - a) / b).round(), x))
        .filter(|&(j, x)| (x - a - j * b).abs() <= ON_GRID * res)
        .collect();
    let (a, b) = line(&near)?;
    let n = near.len() as f64;
    let var = near
        .iter()
        .map(|q| (q.1 - a - b * q.0).powi(2))
        .sum::<f64>()
        / n;
    Some(Periodicity {
        period_ns: b.round() as u64,
        jitter_ns: var.sqrt().round() as u64,
        share: n / t.len() as f64,
    })
}

/// A spike is on the grid within this many intervals: a time known to an
/// interval is at most half of one away from the truth.
const ON_GRID: f64 = 0.6;

/// The least-squares line x = a + b·j through (j, x), `None` with fewer
/// than [`PERIODIC_FEWEST`] points or one j.
fn line(pts: &[(f64, f64)]) -> Option<(f64, f64)> {
    if pts.len() < PERIODIC_FEWEST {
        return None;
    }
    let n = pts.len() as f64;
    let mj = pts.iter().map(|q| q.0).sum::<f64>() / n;
    let mx = pts.iter().map(|q| q.1).sum::<f64>() / n;
    let sjj: f64 = pts.iter().map(|q| (q.0 - mj) * (q.0 - mj)).sum();
    let sjx: f64 = pts.iter().map(|q| (q.0 - mj) * (q.1 - mx)).sum();
    if sjj <= 0.0 {
        return None;
    }
    let b = sjx / sjj;
    (b > 0.0).then_some((mx - b * mj, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spikes_every_tenth_interval_have_that_period() {
        let res = 10e6;
        let t: Vec<f64> = (0..200).map(|i| 5e6 + 100e6 * i as f64).collect();
        let p = period(&t, res).unwrap();
        assert_eq!(p.period_ns, 100_000_000);
        assert_eq!(p.share, 1.0);
        // A few spikes off the grid lower the share but keep the period.
        let mut t2 = t.clone();
        t2.extend([33e6 + 5e6, 1234e6 + 5e6]);
        t2.sort_by(f64::total_cmp);
        let p2 = period(&t2, res).unwrap();
        assert_eq!(p2.period_ns, 100_000_000);
        assert!(p2.share < 1.0 && p2.share > 0.95);
    }

    #[test]
    fn random_spikes_have_no_period() {
        let mut s = 99u64;
        let mut t = 0.0;
        let times: Vec<f64> = (0..100)
            .map(|_| {
                t += 1e9 * (1.0 + (crate::stats::xorshift(&mut s) % 20) as f64);
                t
            })
            .collect();
        assert_eq!(period(&times, 1e9), None);
    }

    #[test]
    fn mtbf_is_the_span_of_the_spikes_over_their_count_less_one() {
        use crate::result::SeriesPoint;
        let mut h = Histogram::new();
        let mut points = Vec::new();
        for i in 0..100u64 {
            let spike = i % 25 == 5;
            let max = if spike { 90_000 } else { 10_000 };
            h.record(max);
            points.push(SeriesPoint {
                t_ns: i * 1_000_000_000,
                samples: 1,
                min_ns: max as i64,
                avg_ns: max as i64,
                max_ns: max as i64,
                overruns: 0,
            });
        }
        let series = Series {
            interval_ns: 1_000_000_000,
            points,
        };
        let maxima: Vec<f64> = series.points.iter().map(|p| p.max_ns as f64).collect();
        let th = default_threshold(&maxima).unwrap();
        assert!(th > 10_000.0 && th < 90_000.0, "{th}");
        let s = spikes(&h, &series, th);
        // Spikes at 5.5 s, 30.5 s, 55.5 s, 80.5 s: 75 s over 3.
        assert_eq!((s.count, s.intervals), (4, 4));
        assert_eq!(s.mtbf_ns, Some(25_000_000_000));
        assert_eq!(s.resolution_ns, 1_000_000_000);
    }
}
