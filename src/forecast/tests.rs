//! Recovery of known tails: simulated data sets whose 1e-6 quantile is
//! known, forecast through the whole chain (histogram, threshold rule, fit,
//! profile interval).

use super::gpd::tests::uniform;
use super::predict::latency_at;
use super::special::{exp_m1, ln};
use super::threshold::choose;
use crate::stats::Histogram;

/// A family of tails by its quantile function: the value exceeded with
/// probability q.
struct Family {
    name: &'static str,
    value_at: fn(f64) -> f64,
}

fn gpd(shape: f64, q: f64) -> f64 {
    let l = -ln(q);
    let g = if shape == 0.0 {
        l
    } else {
        exp_m1(shape * l) / shape
    };
    20_000.0 + 2000.0 * g
}

const FAMILIES: [Family; 5] = [
    Family {
        name: "GPD shape -0.2",
        value_at: |q| gpd(-0.2, q),
    },
    Family {
        name: "GPD shape 0",
        value_at: |q| gpd(0.0, q),
    },
    Family {
        name: "GPD shape 0.2",
        value_at: |q| gpd(0.2, q),
    },
    // P(X > x) = exp(−((x − 5 µs)/4 µs)^1.5): lighter than exponential.
    Family {
        name: "Weibull shape 1.5",
        value_at: |q| 5000.0 + 4000.0 * libm::pow(-ln(q), 1.0 / 1.5),
    },
    Family {
        name: "exponential",
        value_at: |q| 3000.0 - 2500.0 * ln(q),
    },
];

/// Samples per data set; only the top hundredth, where the threshold rule
/// looks, is drawn (from the quantile function), the rest is one bucket far
/// below.
const SAMPLES: u64 = 100_000;
const SETS: u64 = 200;

fn data_set(f: &Family, seed: u64) -> Histogram {
    let mut h = Histogram::new();
    let top = SAMPLES / 100;
    let mut s = seed;
    for _ in 0..top {
        let q = 0.01 * uniform(&mut s);
        h.record((f.value_at)(q).round() as u64);
    }
    h.add_to_bucket(crate::stats::histogram::index_of(500), SAMPLES - top);
    h
}

/// The share of the sets whose interval holds the true 1e-6 quantile.
fn coverage(fi: usize, f: &Family) -> f64 {
    let truth = (f.value_at)(1e-6);
    let mut covered = 0;
    for set in 0..SETS {
        let h = data_set(f, 0x5eed_0000 + 1000 * fi as u64 + set);
        let Ok(c) = choose(&h) else { continue };
        let Some(e) = latency_at(&c, 1e-6, 0.95) else {
            continue;
        };
        if e.low <= truth && truth <= e.high {
            covered += 1;
        }
    }
    covered as f64 / SETS as f64
}

#[test]
fn the_interval_of_the_1e_6_quantile_covers_the_truth_in_90_to_98_percent() {
    // One thread per family: the test takes the time of one.
    let shares: Vec<f64> = std::thread::scope(|s| {
        let runs: Vec<_> = FAMILIES
            .iter()
            .enumerate()
            .map(|(fi, f)| s.spawn(move || coverage(fi, f)))
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    for (f, share) in FAMILIES.iter().zip(shares) {
        eprintln!("{}: {:.1} %", f.name, 100.0 * share);
        assert!(
            (0.90..=0.98).contains(&share),
            "{}: the 95 % interval covered the true 1e-6 quantile in {:.1} % of {SETS} sets",
            f.name,
            100.0 * share
        );
    }
}
