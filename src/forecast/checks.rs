//! The checks a tail forecast rests on, made on the series (per-interval
//! maxima over time): the run is stationary (its halves alike), and the
//! spikes are independent (no period, no clusters, sizes and gaps without
//! correlation). Each check fails at p < [`ALPHA`].

use super::special::{chi2_sf, kolmogorov_sf, normal_cdf};
use crate::result::forecast::{Periodicity, TailCheck};
use crate::units::human_duration;

/// A check fails when its p-value is below this.
pub const ALPHA: f64 = 0.01;
/// Intervals (or spikes) a check needs to run.
const FEWEST: usize = 20;

fn not_run(name: &str, test: &str, why: String) -> TailCheck {
    TailCheck {
        name: name.into(),
        test: test.into(),
        statistic: None,
        p_value: None,
        passed: true,
        detail: format!("not run: {why}"),
    }
}

fn made(name: &str, test: &str, stat: f64, p: f64, detail: String) -> TailCheck {
    TailCheck {
        name: name.into(),
        test: test.into(),
        statistic: Some(stat),
        p_value: Some(p),
        passed: p >= ALPHA,
        detail,
    }
}

/// `p = 0.034`, `p < 0.001`.
pub fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

/// The interval maxima of the first half against the second's (two-sample
/// Kolmogorov–Smirnov, with Stephens' small-sample correction).
pub fn stationarity(maxima: &[f64]) -> TailCheck {
    const NAME: &str = "stationarity";
    const TEST: &str = "Kolmogorov-Smirnov";
    if maxima.len() < FEWEST {
        return not_run(
            NAME,
            TEST,
            format!("{} intervals, {FEWEST} needed", maxima.len()),
        );
    }
    let (a, b) = maxima.split_at(maxima.len() / 2);
    let d = ks_distance(a, b);
    let ne = (a.len() * b.len()) as f64 / maxima.len() as f64;
    let lambda = (ne.sqrt() + 0.12 + 0.11 / ne.sqrt()) * d;
    let p = kolmogorov_sf(lambda);
    made(
        NAME,
        TEST,
        d,
        p,
        format!(
            "interval maxima of the first half against the second (D = {d:.3}, {})",
            p_text(p)
        ),
    )
}

fn ks_distance(a: &[f64], b: &[f64]) -> f64 {
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (mut i, mut j, mut d) = (0usize, 0usize, 0.0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / a.len() as f64 - j as f64 / b.len() as f64).abs());
    }
    d
}

/// The periodicity check: failed when the spikes have a period.
pub fn periodicity(period: Option<&Periodicity>, spikes: usize) -> TailCheck {
    match period {
        Some(p) => TailCheck {
            name: "periodicity".into(),
            test: "period grid".into(),
            statistic: Some(p.share),
            p_value: None,
            passed: false,
            detail: format!(
                "spikes are periodic, every {} ± {}: {:.0} % of the spikes",
                human_duration(p.period_ns),
                human_duration(p.jitter_ns),
                100.0 * p.share
            ),
        },
        None => TailCheck {
            name: "periodicity".into(),
            test: "period grid".into(),
            statistic: None,
            p_value: None,
            passed: true,
            detail: format!("no period in the times of {spikes} spike interval(s)"),
        },
    }
}

/// Ljung–Box on `xs` over min(10, n/5) lags: autocorrelation of spike sizes
/// (or of the gaps between spikes).
pub fn ljung_box(name: &str, what: &str, xs: &[f64]) -> TailCheck {
    const TEST: &str = "Ljung-Box";
    let n = xs.len();
    if n < FEWEST {
        return not_run(name, TEST, format!("{n} {what}, {FEWEST} needed"));
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
    if var <= 0.0 {
        return not_run(name, TEST, format!("the {what} are all equal"));
    }
    let lags = (n / 5).clamp(1, 10);
    let mut q = 0.0;
    for h in 1..=lags {
        let c: f64 = (h..n).map(|i| (xs[i] - mean) * (xs[i - h] - mean)).sum();
        let r = c / var;
        q += r * r / (n - h) as f64;
    }
    q *= (n * (n + 2)) as f64;
    let p = chi2_sf(q, lags as f64);
    made(
        name,
        TEST,
        q,
        p,
        format!("{n} {what} over {lags} lag(s) (Q = {q:.1}, {})", p_text(p)),
    )
}

/// The Wald–Wolfowitz runs test on which intervals hold a spike: too few
/// runs means spikes cluster, too many that they alternate.
pub fn runs(spiked: &[bool]) -> TailCheck {
    const NAME: &str = "clustering";
    const TEST: &str = "runs";
    let n1 = spiked.iter().filter(|&&s| s).count();
    let n2 = spiked.len() - n1;
    if n1 < FEWEST / 2 || n2 < FEWEST / 2 {
        return not_run(
            NAME,
            TEST,
            format!(
                "{n1} interval(s) with spikes and {n2} without, {} of each needed",
                FEWEST / 2
            ),
        );
    }
    let r = 1 + spiked.windows(2).filter(|w| w[0] != w[1]).count();
    let (a, b, n) = (n1 as f64, n2 as f64, spiked.len() as f64);
    let mu = 2.0 * a * b / n + 1.0;
    let var = (mu - 1.0) * (mu - 2.0) / (n - 1.0);
    let z = (r as f64 - mu) / var.sqrt();
    let p = 2.0 * normal_cdf(-z.abs());
    made(
        NAME,
        TEST,
        z,
        p,
        format!(
            "{r} runs of intervals with and without spikes, {mu:.1} expected (z = {z:.2}, {})",
            p_text(p)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forecast::gpd::tests::uniform;

    fn noise(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n).map(|_| uniform(&mut s)).collect()
    }

    #[test]
    fn a_shift_halfway_fails_stationarity_and_noise_passes() {
        let x = noise(400, 1);
        assert!(stationarity(&x).passed);
        let shifted: Vec<f64> = x
            .iter()
            .enumerate()
            .map(|(i, v)| if i >= 200 { v + 0.5 } else { *v })
            .collect();
        let c = stationarity(&shifted);
        assert!(!c.passed, "{c:?}");
        assert!(c.p_value.unwrap() < 1e-6);
    }

    #[test]
    fn correlated_sizes_fail_ljung_box_and_noise_passes() {
        let x = noise(300, 2);
        assert!(ljung_box("independence of sizes", "spike sizes", &x).passed);
        // A slow wave through the sizes.
        let wave: Vec<f64> = (0..300).map(|i| x[i] + ((i / 15) % 2) as f64).collect();
        assert!(!ljung_box("independence of sizes", "spike sizes", &wave).passed);
    }

    #[test]
    fn clustered_spikes_fail_the_runs_test() {
        let x = noise(500, 3);
        let random: Vec<bool> = x.iter().map(|&v| v < 0.2).collect();
        assert!(runs(&random).passed);
        let clustered: Vec<bool> = (0..500).map(|i| (i / 25) % 5 == 0).collect();
        let c = runs(&clustered);
        assert!(!c.passed && c.statistic.unwrap() < 0.0, "{c:?}");
    }

    #[test]
    fn too_little_data_runs_no_check() {
        let c = stationarity(&[1.0, 2.0, 3.0]);
        assert!(c.passed && c.p_value.is_none());
        assert!(c.detail.starts_with("not run: 3 intervals"));
    }
}
