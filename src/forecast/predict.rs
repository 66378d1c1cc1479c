//! What a fitted tail predicts, each with its profile-likelihood interval:
//! the latency exceeded with a given probability per sample, the
//! probability that a bound is exceeded within a number of samples, the
//! maximum of a run of that many samples, and how much longer a run must be
//! to show that a bound holds.

use super::gpd::{size_interval, tail_interval};
use super::special::{chi2_1_quantile, exp, exp_m1, ln, ln_1p};
use super::threshold::Chosen;

/// A value in ns and its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

/// The likelihood cut of a two-sided interval at `level`.
fn cut(level: f64) -> f64 {
    chi2_1_quantile(level) / 2.0
}

/// The latency exceeded with probability `p` per sample, `None` when `p`
/// is not beyond the threshold (the samples themselves answer that).
pub fn latency_at(c: &Chosen, p: f64, level: f64) -> Option<Estimate> {
    let zeta = c.tail.rate();
    if !(p > 0.0 && p < zeta) {
        return None;
    }
    let l = ln(zeta / p);
    let g = &c.fit.gpd;
    let value = g.scale * growth(g.shape, l);
    let i = size_interval(&c.tail, &c.fit, l, cut(level));
    let u = c.tail.threshold;
    Some(Estimate {
        value: u + value,
        low: u + i.low.min(value),
        high: u + i.high.max(value),
    })
}

fn growth(shape: f64, l: f64) -> f64 {
    if shape.abs() < 1e-9 {
        l
    } else {
        exp_m1(shape * l) / shape
    }
}

/// The per-sample probability that makes the maximum of `samples` samples
/// exceed a level with probability `q`: 1 − (1 − q)^{1/samples}.
pub fn per_sample(q: f64, samples: f64) -> f64 {
    -exp_m1(ln_1p(-q) / samples)
}

/// The probability that at least one of `samples` samples exceeds `bound`
/// (ns), with its interval; `None` when the bound is below the threshold.
pub fn exceed_within(c: &Chosen, bound: f64, samples: f64, level: f64) -> Option<Estimate> {
    let y = bound - c.tail.threshold;
    if y <= 0.0 {
        return None;
    }
    let zeta = c.tail.rate();
    let i = tail_interval(&c.tail, &c.fit, y, cut(level));
    let q = c.fit.gpd.sf(y);
    // Any of `samples` beyond: 1 − (1 − ζ·q)^samples.
    let any = |tail_p: f64| -exp_m1(samples * ln_1p(-(zeta * tail_p).min(1.0)));
    let q_low = if i.high >= 700.0 { 0.0 } else { exp(-i.high) };
    Some(Estimate {
        value: any(q),
        low: any(q_low).min(any(q)),
        high: any(exp(-i.low)).max(any(q)),
    })
}

/// The maximum of a run of `samples` samples: its median, and an interval
/// that holds it with probability `level` beyond the fit's own uncertainty
/// (the low end of the fit's interval at the max's low quantile, the high
/// end at its high quantile).
pub fn max_of(c: &Chosen, samples: f64, level: f64) -> Option<Estimate> {
    let a = (1.0 - level) / 2.0;
    let mid = latency_at(c, per_sample(0.5, samples), level)?;
    // P(max ≤ x) = a at the low end: each sample exceeds x with 1 − a^{1/n}.
    let low = latency_at(c, -exp_m1(ln(a) / samples), level)?;
    let high = latency_at(c, -exp_m1(ln(1.0 - a) / samples), level)?;
    Some(Estimate {
        value: mid.value,
        low: low.low,
        high: high.high,
    })
}

/// How a bound can be shown to hold at a probability per sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Claim {
    /// The one-sided upper limit at the confidence is below the bound already.
    Holds,
    /// A run this many times the present one would bring the upper limit
    /// down to the bound, if the tail stays as fitted (an interval narrows
    /// as 1/√n).
    Longer(f64),
    /// The forecast itself is at or beyond the bound: no run shows it.
    Never,
}

/// Whether `bound` (ns) holds at probability `p` per sample with one-sided
/// `confidence`, and if not, how much longer a run would show it.
pub fn claim(c: &Chosen, bound: f64, p: f64, confidence: f64) -> Option<Claim> {
    // A one-sided limit at c is the end of a two-sided interval at 2c − 1.
    let e = latency_at(c, p, 2.0 * confidence - 1.0)?;
    Some(if e.high <= bound {
        Claim::Holds
    } else if e.value >= bound {
        Claim::Never
    } else {
        let r = (e.high - e.value) / (bound - e.value);
        Claim::Longer(r * r)
    })
}
