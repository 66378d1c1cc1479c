//! One thread of measurements rebuilt from another tool's figures: its
//! histogram, the tool's own count/min/avg/max, and the samples the tool
//! counted beyond its histogram (kept at the range's limit, never dropped).

use super::json::Node;
use super::{parse_u64, ParseError, Parsed};
use crate::result::{Series, ThreadResult};
use crate::stats::histogram::Overflow;
use crate::stats::recorder::Totals;
use crate::stats::summary::signed;
use crate::stats::{Histogram, Summary};

/// The largest latency an import takes (9·10¹⁵ ns, 104 days; the 9·10¹² µs
/// [`super::parse_us`] reads): far beyond any measurement, and far inside
/// what a result's ns fields hold, so nothing saturates on the way.
pub const MAX_LATENCY_NS: u64 = 9_000_000_000_000_000;

/// One thread being rebuilt from another tool's figures.
#[derive(Debug, Clone)]
pub struct ThreadBuild {
    pub name: String,
    pub cpu: Option<usize>,
    hist: Histogram,
    samples: u64,
    sum: u128,
    sum_sq: u128,
    /// The number of samples the tool reports (≥ the histogram's count).
    pub count: Option<u64>,
    /// The tool's extremes, signed: a tool may report negative latencies
    /// (Xenomai's anticipation); its histogram then counts |latency|.
    pub min_ns: Option<i64>,
    pub max_ns: Option<i64>,
    pub avg_ns: Option<f64>,
    pub stddev_ns: Option<f64>,
    /// Where samples beyond the tool's histogram are placed: the range's limit.
    pub overflow_at_ns: Option<u64>,
    pub overruns: u64,
    pub series: Series,
    /// Index and time (ns after start) of the maximum, when the tool tells.
    pub max_at: Option<(u64, u64)>,
}

impl ThreadBuild {
    pub fn new(name: impl Into<String>, cpu: Option<usize>) -> Self {
        ThreadBuild {
            name: name.into(),
            cpu,
            hist: Histogram::new(),
            samples: 0,
            sum: 0,
            sum_sq: 0,
            count: None,
            min_ns: None,
            max_ns: None,
            avg_ns: None,
            stddev_ns: None,
            overflow_at_ns: None,
            overruns: 0,
            series: Series {
                interval_ns: 1_000_000_000,
                points: Vec::new(),
            },
            max_at: None,
        }
    }

    /// Add `count` samples of `value_ns`.
    pub fn add(&mut self, value_ns: u64, count: u64) -> Parsed<()> {
        if count == 0 {
            return Ok(());
        }
        self.samples = self
            .samples
            .checked_add(count)
            .ok_or_else(|| ParseError::at(0, "expected sample counts that fit 64 bits"))?;
        self.hist
            .add_to_bucket(crate::stats::histogram::index_of(value_ns), count);
        self.hist.min = self.hist.min.min(value_ns);
        self.hist.max = self.hist.max.max(value_ns);
        self.sum = self.sum.saturating_add(value_ns as u128 * count as u128);
        self.sum_sq = self
            .sum_sq
            .saturating_add((value_ns as u128 * value_ns as u128).saturating_mul(count as u128));
        Ok(())
    }

    /// The tool's figures in the JSON object `t` (`what` names it in errors),
    /// scaled to ns by `scale`: `min`, `max` and `avg` when [`count`](Self::count)
    /// is above zero, and the `histogram` when there is one, a count per bucket
    /// number (`{"12": 216, …}`). Returns the highest bucket with a count.
    /// `bad_key` is the error for a histogram key that is not a number.
    pub fn add_json(
        &mut self,
        t: &Node,
        what: &str,
        scale: u64,
        bad_key: impl Fn(&str) -> String,
    ) -> Parsed<Option<u64>> {
        if self.count.is_some_and(|c| c > 0) {
            let extreme = |key: &str| -> Parsed<i64> {
                Ok(signed(t.field(key, what)?.u64(key)?.saturating_mul(scale)))
            };
            self.min_ns = Some(extreme("min")?);
            self.max_ns = Some(extreme("max")?);
            let avg = t.field("avg", what)?.num("avg")?;
            if avg < 0.0 {
                return Err(ParseError::at(
                    t.line,
                    format!("expected a non-negative avg in {what}"),
                ));
            }
            self.avg_ns = Some(avg * scale as f64);
        }
        let mut highest = None;
        let Some(h) = t.get("histogram") else {
            return Ok(highest);
        };
        for (key, count) in h.members("histogram")? {
            let v = parse_u64(key).ok_or_else(|| ParseError::at(count.line, bad_key(key)))?;
            let c = count.u64("a histogram count")?;
            self.add(v.saturating_mul(scale), c)
                .map_err(|e| ParseError::at(count.line, e.msg))?;
            if c > 0 {
                highest = Some(highest.unwrap_or(0).max(v));
            }
        }
        Ok(highest)
    }

    /// Every latency within [`MAX_LATENCY_NS`]: a figure beyond it is
    /// refused by name, never saturated into the result (a tool's 1e19 µs
    /// does not fit an i64 of ns).
    fn check_range(&self) -> Parsed<()> {
        // What was found is not shown: it may already be the saturated
        // product of the tool's number and its unit.
        let out_of_range = |what: &str| {
            ParseError::at(
                0,
                format!(
                    "{}: expected {what} below {} s, found a value out of range (refused rather than recorded wrong)",
                    self.name,
                    MAX_LATENCY_NS / 1_000_000_000
                ),
            )
        };
        let limit = MAX_LATENCY_NS as f64;
        for (what, v) in [("the min", self.min_ns), ("the max", self.max_ns)] {
            if v.is_some_and(|v| v.unsigned_abs() >= MAX_LATENCY_NS) {
                return Err(out_of_range(what));
            }
        }
        for (what, v) in [("the avg", self.avg_ns), ("the stddev", self.stddev_ns)] {
            if v.is_some_and(|v| !v.is_finite() || v.abs() >= limit) {
                return Err(out_of_range(what));
            }
        }
        if self.samples > 0 && self.hist.max >= MAX_LATENCY_NS {
            return Err(out_of_range("a histogram value"));
        }
        if self.overflow_at_ns.is_some_and(|v| v >= MAX_LATENCY_NS) {
            return Err(out_of_range("the histogram's range"));
        }
        Ok(())
    }

    /// Samples recorded in the histogram so far.
    pub fn recorded(&self) -> u64 {
        self.samples
    }

    /// The minimum and maximum (the tool's, else the histogram's) and the
    /// largest magnitude, checked against each other and the histogram.
    fn extremes(&self, n: u64) -> Parsed<(Option<i64>, Option<i64>, Option<u64>)> {
        let in_hist = self.samples;
        let min = self
            .min_ns
            .or((in_hist > 0).then_some(signed(self.hist.min)));
        let max = self
            .max_ns
            .or((in_hist > 0).then_some(signed(self.hist.max)));
        if let (Some(lo), Some(hi)) = (min, max) {
            if n > 0 && lo > hi {
                return Err(ParseError::at(
                    0,
                    format!(
                        "{}: expected min ≤ max, found min {lo} ns and max {hi} ns",
                        self.name
                    ),
                ));
            }
        }
        // The histogram counts |latency|: its top is the largest magnitude.
        let top = match (min, max) {
            (Some(lo), Some(hi)) if lo < 0 => Some(lo.unsigned_abs().max(hi.unsigned_abs())),
            (_, hi) => hi.map(|h| h.max(0) as u64),
        };
        if in_hist > 0 {
            if let (Some(_), Some(hi)) = (self.max_ns, top) {
                if self.hist.max > hi.saturating_add(999) {
                    return Err(ParseError::at(
                        0,
                        format!(
                            "{}: expected the maximum ({hi} ns) to be at least the histogram's highest value ({} ns)",
                            self.name, self.hist.max
                        ),
                    ));
                }
            }
        }
        Ok((min, max, top))
    }

    /// Samples the tool counted beyond its histogram: placed at its limit
    /// (one at the maximum) and explained in `notes`; a histogram-less
    /// input is noted as such.
    fn place_overflow(
        &mut self,
        n: u64,
        top: Option<u64>,
        unit: &str,
        notes: &mut Vec<String>,
    ) -> Parsed<Option<Overflow>> {
        let in_hist = self.samples;
        let overflow = n - in_hist;
        let mut beyond = None;
        if in_hist == 0 && n > 0 {
            notes.push(format!(
                "{}: the input has no histogram, only count/min/avg/max: no percentiles or distribution",
                self.name
            ));
        } else if overflow > 0 {
            let hi = top.unwrap_or(self.hist.max);
            let limit = self.overflow_at_ns.unwrap_or(hi).min(hi);
            self.add(hi, 1)?;
            self.add(limit, overflow - 1)?;
            let pct = 100.0 * (1.0 - overflow as f64 / n as f64);
            notes.push(format!(
                "{}: {overflow} of {n} samples were beyond the tool's histogram (≥ {} {unit}): kept at {} {unit}, the maximum at its exact value; percentiles above p{} are lower bounds",
                self.name,
                show(limit, unit),
                show(limit, unit),
                trim_float(pct, 3)
            ));
            beyond = Some(Overflow {
                from_ns: limit,
                count: overflow,
            });
        }
        Ok(beyond)
    }

    /// The thread as a result entry; overflow samples are placed and explained
    /// in `notes` and recorded in the histogram's `overflow`; what the tool
    /// does not give (stddev, where the maximum was) stays unknown.
    pub fn finish(
        mut self,
        unit: &str,
        notes: &mut Vec<String>,
    ) -> Parsed<(ThreadResult, Totals, Histogram)> {
        self.check_range()?;
        let in_hist = self.samples;
        let n = self.count.unwrap_or(in_hist);
        if n < in_hist {
            return Err(ParseError::at(
                0,
                format!(
                    "{}: expected at most {n} samples (the tool's count), but its histogram holds {in_hist}",
                    self.name
                ),
            ));
        }
        let (min, max, top) = self.extremes(n)?;
        let beyond = self.place_overflow(n, top, unit, notes)?;
        let (lo, hi) = match (min, max) {
            (Some(lo), Some(_)) if lo < 0 => (0, top.unwrap_or(0)),
            _ => (
                min.unwrap_or(0).max(0) as u64,
                max.unwrap_or(0).max(0) as u64,
            ),
        };
        let totals = Totals {
            samples: if in_hist == 0 { n } else { self.samples },
            sum: self.sum.min(u64::MAX as u128) as u64,
            sum_sq: self.sum_sq,
            min: lo,
            max: hi,
            max_index: self.max_at.map(|m| m.0).unwrap_or(0),
            max_time: self.max_at.map(|m| m.1).unwrap_or(0),
            overruns: self.overruns,
            last: 0,
        };
        if self.hist.samples > 0 {
            self.hist.set_extremes(totals.min, totals.max);
        }
        let mut summary = Summary::from_parts(&totals, &self.hist);
        summary.max_sample = self.max_at.map(|m| m.0);
        summary.max_at_ns = self.max_at.map(|m| m.1);
        if n > 0 {
            summary.min_ns = min.unwrap_or(summary.min_ns);
            summary.max_ns = max.unwrap_or(summary.max_ns);
            if in_hist == 0 {
                summary.avg_ns = 0;
                summary.stddev_ns = None;
            }
            if let Some(b) = beyond {
                summary.stddev_ns = None;
                summary.mark_bounds(b.count);
                for p in summary.percentiles.iter_mut().filter(|p| p.bound) {
                    p.ns = p.ns.max(b.from_ns);
                }
            }
            if let Some(avg) = self.avg_ns {
                summary.avg_ns = avg.round().clamp(i64::MIN as f64, i64::MAX as f64) as i64;
            }
            if let Some(sd) = self.stddev_ns {
                summary.stddev_ns = Some(sd.round().clamp(0.0, u64::MAX as f64) as u64);
            }
            summary.avg_ns = summary.avg_ns.clamp(summary.min_ns, summary.max_ns);
        }
        let mut histogram = self.hist.to_record();
        histogram.overflow = beyond;
        let thread = ThreadResult {
            name: self.name,
            cpu: self.cpu,
            summary,
            histogram,
            series: self.series,
            forecast: None,
        };
        Ok((thread, totals, self.hist))
    }
}

fn show(ns: u64, unit: &str) -> String {
    match unit {
        "ns" => ns.to_string(),
        _ => trim_float(ns as f64 / 1000.0, 3),
    }
}

/// A float with at most `decimals` decimals and no trailing zeros.
pub fn trim_float(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_samples_are_kept_at_the_limit_with_the_exact_max() {
        let mut t = ThreadBuild::new("cpu0", Some(0));
        for v in 0..100u64 {
            t.add(v * 1000, 10).unwrap();
        }
        t.count = Some(1010);
        t.min_ns = Some(0);
        t.max_ns = Some(5_000_000);
        t.overflow_at_ns = Some(100_000);
        let mut notes = Vec::new();
        let (r, totals, h) = t.finish("us", &mut notes).unwrap();
        assert_eq!(r.summary.samples, 1010);
        assert_eq!(h.samples, 1010);
        assert_eq!(totals.samples, 1010);
        assert_eq!(r.summary.max_ns, 5_000_000);
        assert_eq!(
            r.histogram.overflow,
            Some(Overflow {
                from_ns: 100_000,
                count: 10
            })
        );
        // 10 of 1010 beyond: p99 (rank 1000) is in range, p99.9 (rank 1009) a bound.
        let p = |q: f64| r.summary.percentile_of(q).cloned().expect("percentile");
        assert!(!p(99.0).bound && p(99.9).bound);
        assert!(p(99.9).ns >= 100_000);
        assert_eq!(r.summary.stddev_ns, None);
        assert_eq!(r.summary.max_sample, None);
        assert_eq!(h.count(crate::stats::histogram::index_of(5_000_000)), 1);
        assert_eq!(h.count(crate::stats::histogram::index_of(100_000)), 9);
        assert!(notes[0].contains("10 of 1010"), "{notes:?}");
        let counted: u64 = r.histogram.buckets.iter().map(|b| b.count).sum();
        assert_eq!(counted, r.summary.samples);
    }

    #[test]
    fn inconsistent_counts_are_refused() {
        let mut t = ThreadBuild::new("cpu0", None);
        t.add(5000, 10).unwrap();
        t.count = Some(5);
        assert!(t.finish("us", &mut Vec::new()).is_err());
        let mut t = ThreadBuild::new("cpu0", None);
        t.add(5000, 10).unwrap();
        t.max_ns = Some(1000);
        assert!(t.finish("us", &mut Vec::new()).is_err());
    }

    #[test]
    fn floats_lose_trailing_zeros() {
        assert_eq!(trim_float(98.80, 3), "98.8");
        assert_eq!(trim_float(5.0, 3), "5");
    }
}
