//! The generalized Pareto tail: its maximum-likelihood fit to the
//! exceedances of a threshold, and profile-likelihood intervals of what it
//! predicts (a quantile far in the tail, the probability beyond a bound).
//!
//! The exceedances come from the histogram: each bucket above the threshold
//! is one size (its midpoint minus the threshold) with its count as weight.
//! A bucket is at most 1/128 of its value wide, so the midpoints move the fit
//! far less than its own uncertainty.
//!
//! The fit is Grimshaw's (1993): for θ = ξ/σ the likelihood maximised over
//! the rest has a closed form, so the fit is a one-dimensional search.

use super::special::{exp_m1, ln, ln_1p};

/// The exceedances of one threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Tail {
    /// The threshold (ns): every sample at or above it is an exceedance.
    pub threshold: f64,
    /// Samples in the whole histogram.
    pub samples: f64,
    /// The buckets above the threshold: (low, high) edges of the size above
    /// the threshold (ns) and the count.
    pub buckets: Vec<(f64, f64, f64)>,
}

impl Tail {
    /// The number of exceedances.
    pub fn count(&self) -> f64 {
        self.buckets.iter().map(|b| b.2).sum()
    }

    /// The share of all samples that exceed the threshold (ζ).
    pub fn rate(&self) -> f64 {
        self.count() / self.samples
    }

    fn largest(&self) -> f64 {
        self.buckets.iter().map(mid).fold(0.0, f64::max)
    }
}

fn mid(b: &(f64, f64, f64)) -> f64 {
    0.5 * (b.0 + b.1)
}

/// A generalized Pareto distribution of sizes above a threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gpd {
    /// ξ: above 0 a heavy tail, 0 exponential, below 0 a tail with an end.
    pub shape: f64,
    /// σ, in ns.
    pub scale: f64,
}

/// |ξ| below this is the exponential limit.
const NEAR_ZERO: f64 = 1e-9;

impl Gpd {
    /// P(Y > y).
    pub fn sf(&self, y: f64) -> f64 {
        if y <= 0.0 {
            return 1.0;
        }
        let z = y / self.scale;
        if self.shape.abs() < NEAR_ZERO {
            return super::special::exp(-z);
        }
        let t = 1.0 + self.shape * z;
        if t <= 0.0 {
            return 0.0;
        }
        super::special::exp(-ln_1p(self.shape * z) / self.shape)
    }

    /// The size exceeded with probability q (0 < q ≤ 1).
    pub fn size_at(&self, q: f64) -> f64 {
        self.scale * growth(self.shape, -ln(q))
    }

    /// The log-likelihood of the tail's exceedances.
    pub fn loglik(&self, tail: &Tail) -> f64 {
        if self.scale <= 0.0 || !self.scale.is_finite() {
            return f64::NEG_INFINITY;
        }
        let k = tail.count();
        if self.shape.abs() < NEAR_ZERO {
            let s: f64 = tail.buckets.iter().map(|b| b.2 * mid(b)).sum();
            return -k * ln(self.scale) - s / self.scale;
        }
        let mut s = 0.0;
        for b in &tail.buckets {
            let z = self.shape * mid(b) / self.scale;
            if z <= -1.0 {
                return f64::NEG_INFINITY;
            }
            s += b.2 * ln_1p(z);
        }
        -k * ln(self.scale) - (1.0 + 1.0 / self.shape) * s
    }
}

/// (e^{ξL} − 1)/ξ, and L in the limit ξ → 0: the size at tail probability
/// e^{−L} in units of σ.
fn growth(shape: f64, l: f64) -> f64 {
    if shape.abs() < NEAR_ZERO {
        l
    } else {
        exp_m1(shape * l) / shape
    }
}

/// A fitted tail: the distribution and its maximised log-likelihood.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    pub gpd: Gpd,
    pub loglik: f64,
}

/// Shapes below −1 are excluded: there the likelihood has no maximum.
const MIN_SHAPE: f64 = -1.0;
/// Shapes above this are excluded from the profiles (no latency tail is
/// that heavy; the bound keeps the searches finite).
const MAX_SHAPE: f64 = 3.0;

/// The maximum-likelihood fit, `None` without exceedances.
pub fn fit(tail: &Tail) -> Option<Fit> {
    let k = tail.count();
    let top = tail.largest();
    if k < 2.0 || top <= 0.0 {
        return None;
    }
    // Grimshaw's profile l*(θ) = −k (ln(ξ(θ)/θ) + ξ(θ) + 1), ξ(θ) = mean ln(1 + θy),
    // searched over v = ln(1 + θ·ymax): θ from just above −1/ymax to large.
    let shape_of = |theta: f64| {
        tail.buckets
            .iter()
            .map(|b| b.2 * ln_1p(theta * mid(b)))
            .sum::<f64>()
            / k
    };
    let mean = tail.buckets.iter().map(|b| b.2 * mid(b)).sum::<f64>() / k;
    let theta_of = |v: f64| exp_m1(v) / top;
    let profile = |v: f64| {
        let theta = theta_of(v);
        if (theta * top).abs() < 1e-9 {
            return -k * (ln(mean) + 1.0);
        }
        let xi = shape_of(theta);
        if !(MIN_SHAPE..=MAX_SHAPE).contains(&xi) {
            return f64::NEG_INFINITY;
        }
        -k * (ln(xi / theta) + xi + 1.0)
    };
    let v = maximize(profile, -9.0, 12.0, 48);
    let theta = theta_of(v);
    let gpd = if (theta * top).abs() < 1e-9 {
        Gpd {
            shape: 0.0,
            scale: mean,
        }
    } else {
        let xi = shape_of(theta);
        Gpd {
            shape: xi,
            scale: xi / theta,
        }
    };
    let loglik = gpd.loglik(tail);
    loglik.is_finite().then_some(Fit { gpd, loglik })
}

/// The argument in [lo, hi] where `f` is largest: the best of `grid` evenly
/// spaced points, then golden-section search between its neighbours.
pub(crate) fn maximize(f: impl Fn(f64) -> f64, lo: f64, hi: f64, grid: usize) -> f64 {
    let step = (hi - lo) / grid as f64;
    let (mut best, mut best_f) = (lo, f64::NEG_INFINITY);
    for i in 0..=grid {
        let x = lo + step * i as f64;
        let fx = f(x);
        if fx > best_f {
            (best, best_f) = (x, fx);
        }
    }
    let (mut a, mut b) = ((best - step).max(lo), (best + step).min(hi));
    const G: f64 = 0.618_033_988_749_894_9;
    let mut c = b - G * (b - a);
    let mut d = a + G * (b - a);
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..40 {
        if fc >= fd {
            (b, d, fd) = (d, c, fc);
            c = b - G * (b - a);
            fc = f(c);
        } else {
            (a, c, fc) = (c, d, fd);
            d = a + G * (b - a);
            fd = f(d);
        }
        if b - a < 1e-6 * (1.0 + a.abs()) {
            break;
        }
    }
    let x = 0.5 * (a + b);
    if f(x) >= best_f {
        x
    } else {
        best
    }
}

/// The log-likelihood maximised under the constraint that size `y` above
/// the threshold is exceeded with tail probability e^{−l}: σ follows from ξ
/// (σ = y / growth(ξ, l)), and ξ is searched near `near`.
fn constrained(tail: &Tail, y: f64, l: f64, near: f64) -> (f64, f64) {
    let at = |xi: f64| {
        Gpd {
            shape: xi,
            scale: y / growth(xi, l),
        }
        .loglik(tail)
    };
    let lo = (near - 0.3).max(MIN_SHAPE);
    let hi = (near + 0.3).min(MAX_SHAPE);
    let mut xi = maximize(at, lo, hi, 6);
    // At an edge of the window, search the whole range.
    if (xi - lo).abs() < 1e-6 && lo > MIN_SHAPE || (xi - hi).abs() < 1e-6 && hi < MAX_SHAPE {
        xi = maximize(at, MIN_SHAPE, MAX_SHAPE, 32);
    }
    (at(xi), xi)
}

/// A two-sided profile-likelihood interval: the values of a quantity whose
/// constrained log-likelihood is within `cut` (χ²₁ quantile / 2) of the maximum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub low: f64,
    pub high: f64,
}

/// The interval of the size above the threshold exceeded with tail
/// probability e^{−l} (l = ln(ζ/p) for a per-sample probability p).
pub fn size_interval(tail: &Tail, fit: &Fit, l: f64, cut: f64) -> Span {
    let best = fit.gpd.scale * growth(fit.gpd.shape, l);
    let level = fit.loglik - cut;
    let near = fit.gpd.shape;
    // Search in ln(size): the interval is far from symmetric.
    let g = |t: f64| constrained(tail, super::special::exp(t), l, near).0 - level;
    let t0 = ln(best);
    let high = edge(&g, t0, 1.0, 60.0);
    let low = edge(&g, t0, -1.0, 60.0);
    Span {
        low: super::special::exp(low),
        high: super::special::exp(high),
    }
}

/// The interval of l = −ln(tail probability) of size `y` above the threshold;
/// the low end of l is the high end of the probability.
pub fn tail_interval(tail: &Tail, fit: &Fit, y: f64, cut: f64) -> Span {
    let level = fit.loglik - cut;
    let near = fit.gpd.shape;
    let g = |l: f64| constrained(tail, y, l, near).0 - level;
    let q = fit.gpd.sf(y);
    // Beyond the fitted end (q = 0) start from a probability far below any asked.
    let l0 = if q > 0.0 { -ln(q) } else { 700.0 };
    let low = edge(&g, l0.min(700.0), -1.0, l0.min(700.0) - 1e-9);
    let high = if q > 0.0 {
        edge(&g, l0, 1.0, 700.0 - l0)
    } else {
        700.0
    };
    Span {
        low: low.max(0.0),
        high,
    }
}

/// Where `g` (≥ 0 at `start`) crosses 0 going in direction `dir` (±1), at
/// most `reach` away: steps that double until g < 0, then bisection.
fn edge(g: &impl Fn(f64) -> f64, start: f64, dir: f64, reach: f64) -> f64 {
    if reach <= 0.0 {
        return start;
    }
    let mut inside = start;
    let mut step = (reach / 1024.0).max(1e-3).min(reach);
    let outside = loop {
        let x = start + dir * step;
        if g(x) < 0.0 {
            break x;
        }
        inside = x;
        if step >= reach {
            return x;
        }
        step = (step * 2.0).min(reach);
    };
    let (mut a, mut b) = (inside, outside);
    for _ in 0..40 {
        let m = 0.5 * (a + b);
        if g(m) >= 0.0 {
            a = m;
        } else {
            b = m;
        }
        if (b - a).abs() < 1e-5 * (1.0 + a.abs()) {
            break;
        }
    }
    0.5 * (a + b)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::stats::xorshift;

    /// A uniform number in (0, 1).
    pub(crate) fn uniform(state: &mut u64) -> f64 {
        ((xorshift(state) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Raw sizes as a tail of one-sample buckets of zero width.
    pub(crate) fn raw(ys: &[f64]) -> Tail {
        Tail {
            threshold: 0.0,
            samples: ys.len() as f64,
            buckets: ys.iter().map(|&y| (y, y, 1.0)).collect(),
        }
    }

    pub(crate) fn draws(gpd: Gpd, n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n).map(|_| gpd.size_at(uniform(&mut s))).collect()
    }

    #[test]
    fn the_fit_recovers_the_shape_and_scale_of_large_samples() {
        for shape in [-0.3, 0.0, 0.25] {
            let gpd = Gpd {
                shape,
                scale: 1000.0,
            };
            let f = fit(&raw(&draws(gpd, 5000, 7))).unwrap();
            assert!((f.gpd.shape - shape).abs() < 0.05, "{shape}: {f:?}");
            assert!((f.gpd.scale / 1000.0 - 1.0).abs() < 0.06, "{shape}: {f:?}");
            // The fit is a maximum: moving either parameter lowers the likelihood.
            for (ds, dx) in [(0.02, 0.0), (-0.02, 0.0), (0.0, 20.0), (0.0, -20.0)] {
                let moved = Gpd {
                    shape: f.gpd.shape + ds,
                    scale: f.gpd.scale + dx,
                };
                assert!(moved.loglik(&raw(&draws(gpd, 5000, 7))) < f.loglik);
            }
        }
    }

    #[test]
    fn quantiles_and_tail_probabilities_invert_each_other() {
        for shape in [-0.4, 0.0, 0.3] {
            let g = Gpd { shape, scale: 50.0 };
            for q in [0.5, 1e-3, 1e-9] {
                let y = g.size_at(q);
                assert!((g.sf(y) / q - 1.0).abs() < 1e-9, "{shape} {q}");
            }
        }
        let bounded = Gpd {
            shape: -0.5,
            scale: 10.0,
        };
        assert_eq!(bounded.sf(25.0), 0.0, "beyond the end at σ/|ξ| = 20");
    }

    #[test]
    fn the_intervals_hold_the_estimate_and_narrow_with_more_data() {
        let gpd = Gpd {
            shape: 0.1,
            scale: 100.0,
        };
        let cut = super::super::special::chi2_1_quantile(0.95) / 2.0;
        let width = |n: usize| {
            let t = raw(&draws(gpd, n, 3));
            let f = fit(&t).unwrap();
            let l = ln(1e6);
            let i = size_interval(&t, &f, l, cut);
            let best = f.gpd.scale * growth(f.gpd.shape, l);
            assert!(i.low < best && best < i.high, "{i:?} {best}");
            let p = tail_interval(&t, &f, best, cut);
            assert!(p.low < l && l < p.high, "{p:?} {l}");
            i.high / i.low
        };
        assert!(width(4000) < width(500));
    }
}
