//! Where the tail begins: the threshold rule and the Anderson–Darling test
//! of each candidate's fit.
//!
//! The rule (Choulakian and Stephens, 2001): candidate thresholds leave
//! 1 % of the samples (at most [`MOST`]) above them, then a quarter fewer
//! at each step, down to [`FEWEST`] exceedances. From the lowest up, the
//! first candidate whose generalized Pareto fit the Anderson–Darling test
//! does not reject at [`ACCEPT`] is the threshold. A low threshold gives
//! many exceedances (a narrow interval) but may not yet be in the tail; the
//! test says when it is not.

use super::gpd::{fit, Fit, Gpd, Tail};
use super::special::{exp, exp_m1, ln, ln_1p};
use crate::stats::histogram::{lower_bound, upper_bound, Histogram};

/// Exceedances of the lowest candidate, at most.
pub const MOST: u64 = 10_000;
/// Exceedances of the highest candidate, at least: below this the fit
/// and its test have too little to stand on.
pub const FEWEST: u64 = 50;
/// A fit whose Anderson–Darling p-value is at least this is accepted.
pub const ACCEPT: f64 = 0.10;

/// The threshold chosen, its fit and its test.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    pub tail: Tail,
    pub fit: Fit,
    /// The Anderson–Darling statistic A² and its p-value.
    pub a2: f64,
    pub p_value: f64,
    /// Candidates tested (this one included).
    pub tried: usize,
}

/// Why no threshold was chosen.
#[derive(Debug, Clone, PartialEq)]
pub enum NoThreshold {
    /// Fewer than [`FEWEST`] samples in the top hundredth.
    TooFew { samples: u64 },
    /// Every candidate's fit was rejected; the best p-value and its threshold.
    Rejected {
        tried: usize,
        best_p: f64,
        a2: f64,
        threshold_ns: u64,
    },
}

/// The tail of `h` above the bucket `from` on.
pub fn tail_from(h: &Histogram, from: usize) -> Tail {
    let u = lower_bound(from) as f64;
    Tail {
        threshold: u,
        samples: h.samples as f64,
        buckets: h
            .nonzero()
            .filter(|&(i, _)| i >= from)
            .map(|(i, c)| {
                (
                    lower_bound(i) as f64 - u,
                    upper_bound(i) as f64 + 1.0 - u,
                    c as f64,
                )
            })
            .collect(),
    }
}

/// The candidate thresholds as first buckets, lowest threshold first.
fn candidates(h: &Histogram) -> Vec<usize> {
    let mut want = (h.samples / 100).min(MOST);
    let mut targets = Vec::new();
    while want >= FEWEST {
        targets.push(want);
        want = want * 3 / 4;
    }
    // The lowest bucket whose count from the top stays within each target.
    let buckets: Vec<(usize, u64)> = h.nonzero().collect();
    let mut out: Vec<usize> = Vec::new();
    for t in targets {
        let mut above = 0u64;
        let mut first = None;
        for &(i, c) in buckets.iter().rev() {
            if above + c > t {
                break;
            }
            above += c;
            first = Some(i);
        }
        if let Some(i) = first {
            if above >= FEWEST && out.last() != Some(&i) {
                out.push(i);
            }
        }
    }
    out
}

/// The threshold by the rule above.
pub fn choose(h: &Histogram) -> Result<Chosen, NoThreshold> {
    let list = candidates(h);
    if list.is_empty() {
        return Err(NoThreshold::TooFew { samples: h.samples });
    }
    let mut best: Option<(f64, f64, u64)> = None;
    for (n, &from) in list.iter().enumerate() {
        let tail = tail_from(h, from);
        let Some(f) = fit(&tail) else { continue };
        let a2 = anderson_darling(&tail, &f.gpd);
        let p = ad_p_value(a2, f.gpd.shape);
        if p >= ACCEPT {
            return Ok(Chosen {
                tail,
                fit: f,
                a2,
                p_value: p,
                tried: n + 1,
            });
        }
        if best.is_none_or(|b| p > b.0) {
            best = Some((p, a2, tail.threshold as u64));
        }
    }
    let (best_p, a2, threshold_ns) = best.unwrap_or((0.0, f64::INFINITY, 0));
    Err(NoThreshold::Rejected {
        tried: list.len(),
        best_p,
        a2,
        threshold_ns,
    })
}

/// The Anderson–Darling statistic A² of the exceedances against `gpd`. The
/// samples of a bucket are taken as spread evenly across it, since the
/// histogram keeps no finer place.
pub fn anderson_darling(tail: &Tail, gpd: &Gpd) -> f64 {
    let k = tail.count();
    let mut i = 0.0;
    let mut sum = 0.0;
    for &(lo, hi, c) in &tail.buckets {
        let c = c as u64;
        for j in 0..c {
            i += 1.0;
            let y = lo + (hi - lo) * (j as f64 + 0.5) / c as f64;
            let ln_sf = log_sf(gpd, y).max(-700.0);
            // ln F = ln(1 − e^{ln S}), kept away from ln 0.
            let ln_cdf = ln((-exp_m1(ln_sf)).clamp(1e-300, 1.0));
            sum += (2.0 * i - 1.0) * ln_cdf + (2.0 * (k - i) + 1.0) * ln_sf;
        }
    }
    -k - sum / k
}

fn log_sf(gpd: &Gpd, y: f64) -> f64 {
    let z = y / gpd.scale;
    if gpd.shape.abs() < 1e-9 {
        return -z;
    }
    let t = gpd.shape * z;
    if t <= -1.0 {
        return f64::NEG_INFINITY;
    }
    -ln_1p(t) / gpd.shape
}

/// Upper-tail probabilities of the table below.
const AD_P: [f64; 7] = [0.5, 0.25, 0.15, 0.10, 0.05, 0.025, 0.01];
/// Shapes of the table's rows.
const AD_SHAPES: [f64; 7] = [-0.6, -0.4, -0.2, 0.0, 0.2, 0.4, 0.6];
/// Quantiles of A² when both parameters are fitted, for each shape (row) and
/// upper-tail probability (column): simulated by the ignored test
/// `ad_table`, 4000 samples of 400 per shape.
const AD_TABLE: [[f64; 7]; 7] = [
    [0.4743, 0.6985, 0.8599, 0.9872, 1.2499, 1.5200, 1.8168],
    [0.4397, 0.6389, 0.7880, 0.9185, 1.1463, 1.3359, 1.6178],
    [0.4185, 0.6002, 0.7275, 0.8359, 1.0226, 1.2188, 1.4816],
    [0.3970, 0.5690, 0.6885, 0.7929, 0.9519, 1.1150, 1.3648],
    [0.3691, 0.5332, 0.6494, 0.7430, 0.9191, 1.1042, 1.3837],
    [0.3625, 0.5035, 0.6132, 0.6910, 0.8347, 1.0054, 1.2174],
    [0.3577, 0.5022, 0.6034, 0.6796, 0.8124, 0.9488, 1.1498],
];

/// The p-value of A² for a fit of shape ξ: the table's quantiles
/// interpolated in ξ, then in ln p, extrapolated past the last column.
pub fn ad_p_value(a2: f64, shape: f64) -> f64 {
    let s = shape.clamp(AD_SHAPES[0], AD_SHAPES[AD_SHAPES.len() - 1]);
    let r = AD_SHAPES.iter().rposition(|&x| x <= s).unwrap_or(0);
    let r2 = (r + 1).min(AD_SHAPES.len() - 1);
    let w = if r2 == r {
        0.0
    } else {
        (s - AD_SHAPES[r]) / (AD_SHAPES[r2] - AD_SHAPES[r])
    };
    let q: Vec<f64> = (0..AD_P.len())
        .map(|c| AD_TABLE[r][c] * (1.0 - w) + AD_TABLE[r2][c] * w)
        .collect();
    if a2 <= q[0] {
        return AD_P[0].max(1.0 - 0.5 * (a2 / q[0]).max(0.0)).min(1.0);
    }
    // Between two columns ln p is linear in A²; past the last, it goes on
    // with the slope of the last two.
    let last = q.len() - 1;
    let c = (1..=last).find(|&c| a2 <= q[c]).unwrap_or(last);
    let t = (a2 - q[c - 1]) / (q[c] - q[c - 1]);
    let lp = ln(AD_P[c - 1]) + t * (ln(AD_P[c]) - ln(AD_P[c - 1]));
    exp(lp).clamp(1e-12, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forecast::gpd::tests::{draws, raw};

    #[test]
    fn p_values_fall_as_a2_grows_and_match_the_table() {
        assert!((ad_p_value(0.9519, 0.0) - 0.05).abs() < 1e-9);
        assert!((ad_p_value(0.7929, 0.0) - 0.10).abs() < 1e-9);
        let mut last = 1.0;
        for i in 0..60 {
            let p = ad_p_value(0.05 * i as f64, -0.3);
            assert!(p <= last && p > 0.0, "{i}");
            last = p;
        }
        assert!(last < 1e-3, "extrapolated past the table: {last}");
    }

    #[test]
    fn the_rule_climbs_past_a_body_that_is_not_pareto() {
        // A uniform body of 995 000 samples, then an exponential tail of
        // 5000 from 50 µs: the lowest candidate (the top 10 000) reaches
        // into the body, and the rule must end in the tail.
        let mut h = Histogram::new();
        let mut s = 11u64;
        for _ in 0..995_000 {
            let u = crate::forecast::gpd::tests::uniform(&mut s);
            h.record(20_000 + (u * 30_000.0) as u64);
        }
        for y in draws(
            Gpd {
                shape: 0.0,
                scale: 2000.0,
            },
            5000,
            5,
        ) {
            h.record(50_000 + y as u64);
        }
        let c = choose(&h).unwrap();
        assert!(c.tail.threshold >= 49_000.0, "{}", c.tail.threshold);
        assert!(c.tried > 1, "the lowest candidate (in the body) was taken");
        assert!(c.fit.gpd.shape.abs() < 0.15, "{:?}", c.fit);
        assert!(c.p_value >= ACCEPT);
    }

    #[test]
    fn too_few_samples_choose_no_threshold() {
        let mut h = Histogram::new();
        for v in 0..500 {
            h.record(1000 + v);
        }
        assert_eq!(choose(&h), Err(NoThreshold::TooFew { samples: 500 }));
    }

    #[test]
    #[ignore = "simulates the table of AD quantiles (minutes in debug; run with --release)"]
    fn ad_table() {
        let reps = 4000;
        let size = 400;
        for (r, &shape) in AD_SHAPES.iter().enumerate() {
            let gpd = Gpd { shape, scale: 1.0 };
            let mut a2s: Vec<f64> = (0..reps)
                .map(|i| {
                    let mut ys = draws(gpd, size, 0x9e37_79b9 + (r * reps + i) as u64);
                    ys.sort_by(f64::total_cmp);
                    let t = raw(&ys);
                    let f = fit(&t).unwrap();
                    anderson_darling(&t, &f.gpd)
                })
                .collect();
            a2s.sort_by(f64::total_cmp);
            let row: Vec<String> = AD_P
                .iter()
                .map(|p| format!("{:.4}", a2s[((1.0 - p) * reps as f64) as usize]))
                .collect();
            println!("[{}], // {shape}", row.join(", "));
        }
    }
}
