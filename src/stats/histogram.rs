//! A log-linear (HDR-style) histogram of nanosecond values with no range loss.
//!
//! Values below 256 ns have a bucket each. Above, every power of two is split
//! into 128 equal buckets, so a bucket is at most 1/128 of its lower bound wide:
//! reporting a bucket's midpoint is within 0.4 % of any value in it. Buckets
//! cover the whole `u64` range (7424 buckets), so nothing is ever clamped.

use serde::{Deserialize, Serialize};

/// Values below this are counted exactly.
const LINEAR: u64 = 256;
/// Buckets per power of two above `LINEAR`.
const PER_OCTAVE: usize = 128;
const OCTAVE_BITS: u32 = 7;
/// Total number of buckets: 256 exact + 56 octaves (2^8 .. 2^64) × 128.
pub const BUCKETS: usize = LINEAR as usize + 56 * PER_OCTAVE;

/// The bucket index of value `v`.
#[inline(always)]
pub fn index_of(v: u64) -> usize {
    if v < LINEAR {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // 8..=63
    let shift = e - OCTAVE_BITS;
    let sub = (v >> shift) as usize - PER_OCTAVE; // 0..128
    LINEAR as usize + (e as usize - 8) * PER_OCTAVE + sub
}

/// The lowest value that falls into bucket `i`.
pub fn lower_bound(i: usize) -> u64 {
    if i < LINEAR as usize {
        return i as u64;
    }
    let k = i - LINEAR as usize;
    let e = (k / PER_OCTAVE) as u32 + 8;
    let sub = (k % PER_OCTAVE + PER_OCTAVE) as u64;
    sub << (e - OCTAVE_BITS)
}

/// The highest value that falls into bucket `i`.
pub fn upper_bound(i: usize) -> u64 {
    if i + 1 >= BUCKETS {
        u64::MAX
    } else {
        lower_bound(i + 1) - 1
    }
}

/// The value reported for bucket `i`: its midpoint.
pub fn representative(i: usize) -> u64 {
    let lo = lower_bound(i);
    lo + (upper_bound(i) - lo) / 2
}

/// Counts per bucket plus the exact extremes, sum and sum of squares.
///
/// The counts are kept up to the highest bucket that ever held a sample,
/// grown when a higher one does: latencies up to a millisecond need about
/// 1800 of the 7424 buckets (14 KiB instead of 58 KiB, held resident under
/// mlockall by every series of a run). Only the reporter's side keeps
/// histograms; a measuring thread counts into its recorder's fixed deltas.
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    pub samples: u64,
    pub min: u64,
    pub max: u64,
}

impl PartialEq for Histogram {
    /// The same counts in every bucket (however far each kept them), samples and extremes.
    fn eq(&self, o: &Histogram) -> bool {
        let (short, long) = if self.counts.len() <= o.counts.len() {
            (&self.counts, &o.counts)
        } else {
            (&o.counts, &self.counts)
        };
        (self.samples, self.min, self.max) == (o.samples, o.min, o.max)
            && long[..short.len()] == short[..]
            && long[short.len()..].iter().all(|&c| c == 0)
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    pub fn new() -> Self {
        Histogram {
            counts: Vec::new(),
            samples: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, v: u64) {
        self.add_to_bucket(index_of(v), 1);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Add `n` samples to bucket `i` without touching the exact min/max.
    pub fn add_to_bucket(&mut self, i: usize, n: u64) {
        self.reach(i);
        self.counts[i] += n;
        self.samples += n;
    }

    /// Counts kept up to bucket `i` at least.
    fn reach(&mut self, i: usize) {
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
    }

    /// Set the exact extremes (known to the recorder, finer than buckets).
    pub fn set_extremes(&mut self, min: u64, max: u64) {
        self.min = min;
        self.max = max;
    }

    pub fn merge(&mut self, other: &Histogram) {
        if let Some(top) = other.counts.len().checked_sub(1) {
            self.reach(top);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.samples += other.samples;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub fn count(&self, i: usize) -> u64 {
        self.counts.get(i).copied().unwrap_or(0)
    }

    /// The value at percentile `p` (0 < p ≤ 100): the smallest bucket whose
    /// cumulative count reaches ⌈p/100 · n⌉, reported as its midpoint clamped
    /// to the exact [min, max]. `None` when empty.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        if self.samples == 0 {
            return None;
        }
        if p >= 100.0 {
            return Some(self.max);
        }
        let rank = ((p / 100.0) * self.samples as f64).ceil().max(1.0) as u64;
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(representative(i).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    /// Mean computed from bucket midpoints (used only where the exact sum is unknown, e.g. imports).
    pub fn approx_mean(&self) -> Option<f64> {
        if self.samples == 0 {
            return None;
        }
        let sum: f64 = self
            .nonzero()
            .map(|(i, c)| representative(i) as f64 * c as f64)
            .sum();
        Some(sum / self.samples as f64)
    }

    /// Non-empty buckets as (index, count).
    pub fn nonzero(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (i, c))
    }

    /// The histogram without its `n` highest samples (taken from the top
    /// bucket down): what lies in a tool's range when `n` were beyond it.
    pub fn without_top(&self, n: u64) -> Histogram {
        let mut h = self.clone();
        let mut left = n.min(h.samples);
        for i in (0..h.counts.len()).rev() {
            if left == 0 {
                break;
            }
            let take = h.counts[i].min(left);
            h.counts[i] -= take;
            h.samples -= take;
            left -= take;
        }
        if let Some((i, _)) = h.nonzero().last() {
            h.max = h.max.min(upper_bound(i));
        }
        h
    }

    /// The serialisable form: non-empty buckets only.
    pub fn to_record(&self) -> HistogramRecord {
        HistogramRecord {
            scheme: SCHEME.to_string(),
            buckets: self
                .nonzero()
                .map(|(i, c)| Bucket {
                    low_ns: lower_bound(i),
                    high_ns: upper_bound(i),
                    count: c,
                })
                .collect(),
            overflow: None,
        }
    }

    /// Rebuild from a record; `min`/`max` come from the summary beside it.
    pub fn from_record(rec: &HistogramRecord, min: u64, max: u64) -> Result<Self, String> {
        if rec.scheme != SCHEME {
            return Err(format!(
                "unknown histogram scheme '{}', expected '{SCHEME}'",
                rec.scheme
            ));
        }
        let mut h = Histogram::new();
        for b in &rec.buckets {
            let i = index_of(b.low_ns);
            if lower_bound(i) != b.low_ns {
                return Err(format!(
                    "bucket low bound {} is not a bucket boundary",
                    b.low_ns
                ));
            }
            h.add_to_bucket(i, b.count);
        }
        if h.samples > 0 {
            h.set_extremes(min, max);
        }
        Ok(h)
    }
}

/// The name of this bucket layout in result files.
pub const SCHEME: &str = "log-linear-ns-v1";

/// A histogram as stored in a result: non-empty buckets with their bounds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HistogramRecord {
    /// Bucket layout: `log-linear-ns-v1` (exact below 256 ns, 128 buckets per power of two above).
    #[schemars(extend("const" = "log-linear-ns-v1"))]
    pub scheme: String,
    pub buckets: Vec<Bucket>,
    /// Samples an imported tool counted beyond its own histogram's range:
    /// they are in `buckets` at the range's limit (the maximum at its exact
    /// value), so statistics that rest on them are bounds. Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overflow: Option<Overflow>,
}

/// Samples beyond an imported histogram's range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Overflow {
    /// The range's limit: every one of these samples is at least this.
    pub from_ns: u64,
    #[schemars(range(min = 1))]
    pub count: u64,
}

impl Overflow {
    /// Overflows merged: their counts added, from the lowest limit.
    pub fn merged(all: impl IntoIterator<Item = Overflow>) -> Option<Overflow> {
        all.into_iter().reduce(|a, b| Overflow {
            from_ns: a.from_ns.min(b.from_ns),
            count: a.count.saturating_add(b.count),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Bucket {
    pub low_ns: u64,
    pub high_ns: u64,
    #[schemars(range(min = 1))]
    pub count: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::xorshift;

    #[test]
    fn buckets_are_contiguous_and_cover_u64() {
        assert_eq!(lower_bound(0), 0);
        for i in 0..BUCKETS - 1 {
            assert_eq!(
                upper_bound(i) + 1,
                lower_bound(i + 1),
                "gap after bucket {i}"
            );
            assert_eq!(index_of(lower_bound(i)), i);
            assert_eq!(index_of(upper_bound(i)), i);
        }
        assert_eq!(index_of(u64::MAX), BUCKETS - 1);
        assert_eq!(upper_bound(BUCKETS - 1), u64::MAX);
    }

    #[test]
    fn bucket_width_is_within_one_percent() {
        for i in LINEAR as usize..BUCKETS {
            let lo = lower_bound(i) as f64;
            let width = (upper_bound(i) - lower_bound(i)) as f64;
            assert!(width / lo <= 1.0 / 128.0 + 1e-12, "bucket {i} too wide");
        }
    }

    #[test]
    fn percentiles_are_within_one_percent_of_exact() {
        let mut s = 0x9E3779B97F4A7C15u64;
        // Log-uniform values from 1 ns to ~30 s: the whole range a latency can take.
        let mut values: Vec<u64> = (0..200_000)
            .map(|_| {
                let r = xorshift(&mut s);
                let exp = (r % 35) as u32;
                let mant = xorshift(&mut s) % (1u64 << exp).max(1);
                (1u64 << exp) + mant
            })
            .collect();
        let mut h = Histogram::new();
        for &v in &values {
            h.record(v);
        }
        values.sort_unstable();
        for p in [1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 99.99, 99.999] {
            let rank = ((p / 100.0) * values.len() as f64).ceil() as usize;
            let exact = values[rank - 1] as f64;
            let got = h.percentile(p).unwrap() as f64;
            let err = (got - exact).abs() / exact;
            assert!(err <= 0.01, "p{p}: exact {exact} got {got} err {err}");
        }
        assert_eq!(h.percentile(100.0), Some(*values.last().unwrap()));
        assert_eq!(h.min, values[0]);
        assert_eq!(h.samples, 200_000);
    }

    #[test]
    fn extremes_are_exact_and_huge_values_are_kept() {
        let mut h = Histogram::new();
        let mut raw = [3, u64::MAX - 5, 20_000_000_000]; // 20 s in the middle
        for v in raw {
            h.record(v);
        }
        assert_eq!(h.min, 3);
        assert_eq!(h.max, u64::MAX - 5);
        assert_eq!(h.samples, 3);
        // The exact median of the raw samples (rank ceil(0.5 * 3) = 2), which
        // the histogram gives within its resolution of 1/128.
        raw.sort_unstable();
        let exact = raw[1] as f64;
        let got = h.percentile(50.0).expect("p50") as f64;
        assert!(
            (got - exact).abs() <= exact / 128.0,
            "p50 {got}, exact {exact}"
        );
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        let mut all = Histogram::new();
        for v in 0..10_000u64 {
            let x = v * v % 1_000_003;
            if v % 3 == 0 {
                a.record(x)
            } else {
                b.record(x)
            }
            all.record(x);
        }
        a.merge(&b);
        assert_eq!(a, all);
    }

    #[test]
    fn record_round_trip() {
        let mut h = Histogram::new();
        for v in [1u64, 1, 500, 70_000, 70_001, 9_000_000_000] {
            h.record(v);
        }
        let rec = h.to_record();
        assert_eq!(rec.buckets.len(), 4);
        let back = Histogram::from_record(&rec, h.min, h.max).unwrap();
        assert_eq!(back, h);
        let mut bad = rec.clone();
        bad.buckets[0].low_ns = 258; // above 256 buckets are 2 ns wide: 258 is a boundary
        assert!(Histogram::from_record(&bad, 1, 2).is_ok());
        bad.buckets[0].low_ns = 70_001;
        assert!(Histogram::from_record(&bad, 1, 2).is_err());
    }

    #[test]
    fn without_top_leaves_the_range_below() {
        let mut h = Histogram::new();
        for v in [1000u64, 2000, 3000, 100_000, 100_000, 5_000_000] {
            h.record(v);
        }
        let low = h.without_top(3);
        assert_eq!(low.samples, 3);
        assert_eq!(low.count(index_of(100_000)), 0);
        assert!(low.max < 100_000);
        assert_eq!(h.without_top(10).samples, 0);
        let o = Overflow::merged([
            Overflow {
                from_ns: 9,
                count: 2,
            },
            Overflow {
                from_ns: 5,
                count: 1,
            },
        ]);
        assert_eq!(
            o,
            Some(Overflow {
                from_ns: 5,
                count: 3
            })
        );
    }

    #[test]
    fn counts_grow_to_the_highest_bucket_and_compare_whatever_their_reach() {
        let mut h = Histogram::new();
        h.record(1_000);
        assert_eq!(h.counts.len(), index_of(1_000) + 1);
        h.record(3);
        assert_eq!(
            h.counts.len(),
            index_of(1_000) + 1,
            "a lower bucket grows nothing"
        );
        // A histogram that reaches further with zeros above is the same histogram.
        let mut far = Histogram::new();
        far.record(u64::MAX);
        let mut same = far.without_top(1);
        assert_eq!(same.counts.len(), BUCKETS);
        same.record(1_000);
        same.record(3);
        same.max = h.max;
        assert_eq!(same, h);
        assert_eq!(h, same);
        assert_eq!(h.count(BUCKETS - 1), 0);
        // Merged into a shorter one, the longer one's top bucket is kept.
        let mut merged = h.clone();
        merged.merge(&far);
        assert_eq!(merged.count(BUCKETS - 1), 1);
        assert_eq!(merged.percentile(100.0), Some(u64::MAX));
        same.record(5_000);
        assert_ne!(same, h);
    }

    #[test]
    fn empty_has_no_percentiles() {
        assert_eq!(Histogram::new().percentile(50.0), None);
    }

    #[test]
    fn the_representative_is_the_midpoint_rounded_down() {
        for i in 0..BUCKETS {
            let (lo, hi) = (lower_bound(i) as u128, upper_bound(i) as u128);
            let r = representative(i) as u128;
            assert_eq!(r, (lo + hi) / 2, "bucket {i} [{lo}, {hi}]");
        }
        // Above 256 ns a bucket is several ns wide: 1000 lies in [1000, 1003].
        assert_eq!(representative(index_of(1000)), 1001);
    }

    #[test]
    fn counts_and_the_approximate_mean_follow_the_samples() {
        let mut h = Histogram::new();
        assert_eq!(h.approx_mean(), None);
        for v in [10u64, 10, 40] {
            h.record(v);
        }
        assert_eq!((h.count(index_of(10)), h.count(index_of(40))), (2, 1));
        assert_eq!(h.count(index_of(20)), 0);
        // Below 256 ns every value has its own bucket: the mean is exact.
        assert_eq!(h.approx_mean(), Some(20.0));
    }

    #[test]
    fn without_top_removes_exactly_the_highest_samples() {
        let values = [1000u64, 2000, 3000, 100_000, 100_000, 5_000_000];
        let mut h = Histogram::new();
        for v in values {
            h.record(v);
        }
        assert_eq!(h.without_top(0), h);
        for n in 1..=values.len() as u64 + 1 {
            let low = h.without_top(n);
            let kept = values.len() as u64 - n.min(values.len() as u64);
            assert_eq!(low.samples, kept, "without the top {n}");
            assert_eq!(low.nonzero().map(|(_, c)| c).sum::<u64>(), kept);
            for &v in &values[..kept as usize] {
                assert!(low.count(index_of(v)) > 0, "{v} lost without the top {n}");
            }
        }
    }

    #[test]
    fn an_empty_record_gives_an_empty_histogram() {
        let empty = Histogram::new().to_record();
        assert!(empty.buckets.is_empty());
        // The summary's extremes beside an empty record are meaningless.
        assert_eq!(Histogram::from_record(&empty, 5, 9), Ok(Histogram::new()));
        let mut other = empty.clone();
        other.scheme = "linear-us".into();
        assert!(Histogram::from_record(&other, 0, 0).is_err());
    }
}
