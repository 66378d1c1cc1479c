//! Summaries: what a thread (or all threads) measured, in integer ns.

use super::histogram::Histogram;
use super::recorder::Totals;
use serde::{Deserialize, Serialize};

/// The percentiles reported, each only when the sample count supports it
/// (p needs at least 1 / (1 − p) samples: p99.99 needs 10 000).
pub const PERCENTILES: [f64; 7] = [50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999];

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Percentile {
    /// The percentile, e.g. 99.9.
    #[schemars(extend("exclusiveMinimum" = 0, "maximum" = 100))]
    pub p: f64,
    pub ns: u64,
}

/// A summary of samples. Latencies in ns; `avg_ns`/`stddev_ns` rounded to whole ns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Summary {
    pub samples: u64,
    pub min_ns: u64,
    pub avg_ns: u64,
    pub max_ns: u64,
    pub stddev_ns: u64,
    pub percentiles: Vec<Percentile>,
    /// Periods that passed without a sample because the thread woke too late.
    pub overruns: u64,
    /// Which sample held the maximum (0-based) ...
    pub max_sample: u64,
    /// ... and when, in ns after the start of the run.
    pub max_at_ns: u64,
}

/// Whether `n` samples support percentile `p`.
pub fn supported(p: f64, n: u64) -> bool {
    n as f64 >= (1.0 / (1.0 - p / 100.0)).round()
}

impl Summary {
    pub fn from_parts(t: &Totals, h: &Histogram) -> Summary {
        if t.samples == 0 {
            return Summary {
                overruns: t.overruns,
                ..Default::default()
            };
        }
        let n = t.samples as f64;
        let mean = t.sum as f64 / n;
        let var = (t.sum_sq as f64 / n - mean * mean).max(0.0);
        Summary {
            samples: t.samples,
            min_ns: t.min,
            avg_ns: mean.round() as u64,
            max_ns: t.max,
            stddev_ns: var.sqrt().round() as u64,
            percentiles: PERCENTILES
                .iter()
                .filter(|&&p| supported(p, h.samples))
                .filter_map(|&p| h.percentile(p).map(|ns| Percentile { p, ns }))
                .collect(),
            overruns: t.overruns,
            max_sample: t.max_index,
            max_at_ns: t.max_time,
        }
    }

    pub fn percentile(&self, p: f64) -> Option<u64> {
        self.percentiles
            .iter()
            .find(|x| (x.p - p).abs() < 1e-9)
            .map(|x| x.ns)
    }
}

/// A short label for a percentile: `p99`, `p99.9`.
pub fn label(p: f64) -> String {
    let s = format!("{p}");
    format!("p{s}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::recorder::pair;

    #[test]
    fn summary_matches_exact_values() {
        let (mut rec, mut col) = pair(1_000_000_000);
        let values: Vec<u64> = (1..=10_000).collect();
        for (i, &v) in values.iter().enumerate() {
            rec.record(v, i as u64, 0);
        }
        rec.finish();
        col.collect(&mut Vec::new());
        let s = Summary::from_parts(col.totals(), col.histogram());
        assert_eq!((s.samples, s.min_ns, s.max_ns), (10_000, 1, 10_000));
        assert_eq!(s.avg_ns, 5001); // 5000.5 rounds half away from zero
                                    // Population stddev of 1..=n is sqrt((n²−1)/12) = 2886.75
        assert_eq!(s.stddev_ns, 2887);
        let p50 = s.percentile(50.0).unwrap() as f64;
        assert!((p50 - 5000.0).abs() / 5000.0 < 0.01);
        // 10 000 samples support p99.99 but not p99.999.
        assert!(s.percentile(99.99).is_some());
        assert!(s.percentile(99.999).is_none());
        assert_eq!(s.max_sample, 9_999);
        let ps: Vec<u64> = s.percentiles.iter().map(|p| p.ns).collect();
        assert!(
            ps.windows(2).all(|w| w[0] <= w[1]),
            "percentiles not monotonic"
        );
        assert!(s.min_ns <= ps[0] && *ps.last().unwrap() <= s.max_ns);
    }

    #[test]
    fn labels() {
        assert_eq!(label(99.0), "p99");
        assert_eq!(label(99.99), "p99.99");
        assert!(supported(99.0, 100) && !supported(99.0, 99));
    }
}
