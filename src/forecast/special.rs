//! The distribution functions the tests of the forecast need: the normal
//! distribution, the chi-square distribution (through the regularized
//! incomplete gamma function) and Kolmogorov's distribution. Transcendental
//! functions come from the pure-Rust `libm` crate, never from libm.so.

/// The natural logarithm.
pub(crate) fn ln(x: f64) -> f64 {
    libm::log(x)
}

/// ln(1 + x), exact for small x.
pub(crate) fn ln_1p(x: f64) -> f64 {
    libm::log1p(x)
}

/// e^x
pub(crate) fn exp(x: f64) -> f64 {
    libm::exp(x)
}

/// e^x − 1, exact for small x.
pub(crate) fn exp_m1(x: f64) -> f64 {
    libm::expm1(x)
}

/// P(Z ≤ z) for a standard normal Z.
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * libm::erfc(-z / std::f64::consts::SQRT_2)
}

/// The z with P(Z ≤ z) = p (0 < p < 1), by bisection: called a few times per
/// forecast, so exactness matters more than speed.
pub fn normal_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0f64, 40.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if normal_cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-12 {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// The (1 − α) quantile of the chi-square distribution with one degree of
/// freedom: the likelihood-ratio cut of a two-sided interval at level 1 − α.
pub fn chi2_1_quantile(level: f64) -> f64 {
    let z = normal_quantile(0.5 + level / 2.0);
    z * z
}

/// P(X > x) for X chi-square with `df` degrees of freedom.
pub fn chi2_sf(x: f64, df: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    gamma_q(df / 2.0, x / 2.0)
}

/// The regularized upper incomplete gamma function Q(a, x): the series of
/// P below a + 1, Legendre's continued fraction (modified Lentz) above.
fn gamma_q(a: f64, x: f64) -> f64 {
    let log_front = a * ln(x) - x - libm::lgamma(a);
    if x < a + 1.0 {
        let (mut term, mut sum, mut n) = (1.0 / a, 1.0 / a, a);
        for _ in 0..1000 {
            n += 1.0;
            term *= x / n;
            sum += term;
            if term.abs() < sum.abs() * 1e-15 {
                break;
            }
        }
        (1.0 - sum * exp(log_front)).clamp(0.0, 1.0)
    } else {
        const TINY: f64 = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / TINY;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..1000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < TINY {
                d = TINY;
            }
            c = b + an / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            let step = d * c;
            h *= step;
            if (step - 1.0).abs() < 1e-15 {
                break;
            }
        }
        (exp(log_front) * h).clamp(0.0, 1.0)
    }
}

/// P(K > λ) for Kolmogorov's distribution: the asymptotic p-value of a
/// Kolmogorov–Smirnov statistic scaled by √n.
pub fn kolmogorov_sf(lambda: f64) -> f64 {
    if lambda < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    for j in 1..=100 {
        let j = j as f64;
        let term = exp(-2.0 * j * j * lambda * lambda);
        sum += if j as u64 % 2 == 1 { term } else { -term };
        if term < 1e-16 {
            break;
        }
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    #[test]
    fn the_normal_distribution_matches_its_tables() {
        assert!(close(normal_cdf(0.0), 0.5, 1e-15));
        assert!(close(normal_cdf(1.959_963_984_540_054), 0.975, 1e-12));
        assert!(close(normal_cdf(-3.0), 0.001_349_898_031_630_094_6, 1e-10));
        assert!(close(normal_quantile(0.975), 1.959_963_984_540_054, 1e-9));
        assert!(close(normal_quantile(1e-9), -5.997_807_015_007_686, 1e-9));
        assert!(close(chi2_1_quantile(0.95), 3.841_458_820_694_124, 1e-9));
    }

    #[test]
    fn the_chi_square_tail_matches_its_tables() {
        // Values of scipy.stats.chi2.sf(x, df).
        assert!(close(chi2_sf(3.841_458_820_694_124, 1.0), 0.05, 1e-9));
        assert!(close(chi2_sf(18.307_038_053_275_146, 10.0), 0.05, 1e-9));
        assert!(close(chi2_sf(2.0, 4.0), 0.735_758_882_342_884_7, 1e-9));
        assert!(close(chi2_sf(40.0, 5.0), 1.493_367_900_050_393e-7, 1e-9));
        assert_eq!(chi2_sf(0.0, 3.0), 1.0);
    }

    #[test]
    fn the_kolmogorov_tail_matches_its_tables() {
        // Values of scipy.stats.kstwobign.
        assert!(close(kolmogorov_sf(1.358_098_639_322_550_7), 0.05, 1e-9));
        assert!(close(
            kolmogorov_sf(1.627_624_1),
            0.009_999_968_197_526_118,
            1e-9
        ));
        assert_eq!(kolmogorov_sf(0.1), 1.0);
    }
}
