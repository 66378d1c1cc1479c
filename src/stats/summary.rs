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
    /// The value is a lower bound (`≥ ns`): the percentile falls among the
    /// samples a tool counted beyond its histogram's range (see the
    /// histogram's `overflow`). Absent: exact (within the bucket precision).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bound: bool,
}

/// A summary of samples. Latencies in ns; `avg_ns`/`stddev_ns` rounded to whole ns.
/// Latencies are signed: an imported tool may report negative ones (Xenomai's
/// anticipation); an rtlat run never does. `null` means the source does not
/// record the figure (an import), never zero.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Summary {
    pub samples: u64,
    pub min_ns: i64,
    pub avg_ns: i64,
    pub max_ns: i64,
    /// `null`: unknown (no samples, a source that does not give it, or samples
    /// beyond an imported histogram's range).
    pub stddev_ns: Option<u64>,
    pub percentiles: Vec<Percentile>,
    /// Periods that passed without a sample because the thread woke too late.
    pub overruns: u64,
    /// Which sample held the maximum (0-based), `null` when unknown ...
    pub max_sample: Option<u64>,
    /// ... and when, in ns after the start of the run, `null` when unknown.
    pub max_at_ns: Option<u64>,
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
            min_ns: signed(t.min),
            avg_ns: mean.round().min(i64::MAX as f64) as i64,
            max_ns: signed(t.max),
            stddev_ns: Some(var.sqrt().round() as u64),
            percentiles: PERCENTILES
                .iter()
                .filter(|&&p| supported(p, h.samples))
                .filter_map(|&p| {
                    h.percentile(p).map(|ns| Percentile {
                        p,
                        ns,
                        bound: false,
                    })
                })
                .collect(),
            overruns: t.overruns,
            max_sample: Some(t.max_index),
            max_at_ns: Some(t.max_time),
        }
    }

    pub fn percentile(&self, p: f64) -> Option<u64> {
        self.percentile_of(p).map(|x| x.ns)
    }

    /// Percentile `p` with whether it is a lower bound.
    pub fn percentile_of(&self, p: f64) -> Option<&Percentile> {
        self.percentiles.iter().find(|x| (x.p - p).abs() < 1e-9)
    }

    /// Mark the percentiles whose rank falls among the last `overflow` samples
    /// (those beyond a tool's histogram range) as lower bounds.
    pub fn mark_bounds(&mut self, overflow: u64) {
        if overflow == 0 {
            return;
        }
        let in_range = self.samples.saturating_sub(overflow);
        for x in &mut self.percentiles {
            let rank = ((x.p / 100.0) * self.samples as f64).ceil().max(1.0) as u64;
            x.bound = rank > in_range;
        }
    }

    /// The range the histogram of these samples covers: `[min, max]`, or, when
    /// the source gave negative latencies (whose histogram counts |latency|,
    /// as Xenomai's does), `[0, the largest |latency|]`.
    pub fn histogram_range(&self) -> (u64, u64) {
        if self.min_ns >= 0 {
            (self.min_ns as u64, self.max_ns.max(0) as u64)
        } else {
            (
                0,
                self.min_ns.unsigned_abs().max(self.max_ns.unsigned_abs()),
            )
        }
    }
}

/// A measured (unsigned) latency as the summary's signed type, saturating.
pub fn signed(ns: u64) -> i64 {
    i64::try_from(ns).unwrap_or(i64::MAX)
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
        assert_eq!(s.stddev_ns, Some(2887));
        let p50 = s.percentile(50.0).unwrap() as f64;
        assert!((p50 - 5000.0).abs() / 5000.0 < 0.01);
        // 10 000 samples support p99.99 but not p99.999.
        assert!(s.percentile(99.99).is_some());
        assert!(s.percentile(99.999).is_none());
        assert_eq!(s.max_sample, Some(9_999));
        let ps: Vec<u64> = s.percentiles.iter().map(|p| p.ns).collect();
        assert!(
            ps.windows(2).all(|w| w[0] <= w[1]),
            "percentiles not monotonic"
        );
        assert!(s.min_ns <= ps[0] as i64 && *ps.last().unwrap() as i64 <= s.max_ns);
    }

    #[test]
    fn no_samples_keep_their_overruns() {
        let t = Totals {
            overruns: 4,
            ..Totals::default()
        };
        let s = Summary::from_parts(&t, &Histogram::new());
        assert_eq!((s.samples, s.overruns, s.stddev_ns), (0, 4, None));
        assert!(s.percentiles.is_empty());
    }

    /// A summary of `n` samples with percentiles p50, p90 and p99.
    fn with_percentiles(n: u64) -> Summary {
        Summary {
            samples: n,
            percentiles: [50.0, 90.0, 99.0]
                .map(|p| Percentile {
                    p,
                    ns: 1,
                    bound: false,
                })
                .to_vec(),
            ..Summary::default()
        }
    }

    fn bounds(s: &Summary) -> Vec<bool> {
        s.percentiles.iter().map(|x| x.bound).collect()
    }

    #[test]
    fn bounds_are_the_percentiles_ranked_among_the_overflow() {
        // 1000 samples: p90 is rank 900, p99 rank 990.
        let mut s = with_percentiles(1000);
        s.mark_bounds(0);
        assert_eq!(bounds(&s), [false, false, false]);
        // 10 beyond the range: rank 990 is the last one in it.
        s.mark_bounds(10);
        assert_eq!(bounds(&s), [false, false, false]);
        s.mark_bounds(11);
        assert_eq!(bounds(&s), [false, false, true]);
        s.mark_bounds(101);
        assert_eq!(bounds(&s), [false, true, true]);
        s.mark_bounds(5000);
        assert_eq!(bounds(&s), [true, true, true]);
    }

    #[test]
    fn the_histogram_range_covers_the_magnitudes() {
        let range = |min_ns, max_ns| {
            Summary {
                min_ns,
                max_ns,
                ..Summary::default()
            }
            .histogram_range()
        };
        assert_eq!(range(5, 9), (5, 9));
        assert_eq!(range(0, 9), (0, 9));
        assert_eq!(range(-7, 3), (0, 7));
        assert_eq!(range(-2, 10), (0, 10));
    }

    #[test]
    fn signed_saturates() {
        assert_eq!(signed(7), 7);
        assert_eq!(signed(i64::MAX as u64), i64::MAX);
        assert_eq!(signed(u64::MAX), i64::MAX);
    }

    #[test]
    fn labels() {
        assert_eq!(label(99.0), "p99");
        assert_eq!(label(99.99), "p99.99");
        assert!(supported(99.0, 100) && !supported(99.0, 99));
    }
}
