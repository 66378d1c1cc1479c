//! The logarithms and the power of ten the plots scale by, from the pure-Rust
//! `libm` crate rather than the C library's libm.so: with them, nothing in
//! rtlat calls into libm.so, so the binary does not link it and no run maps it
//! (under mlockall every mapped page of libm.so would be resident in every
//! `rtlat timer`, though only `report` and `compare` draw plots).

/// Base-10 and base-2 logarithms (`lg`, `lb` as ISO 80000-2 names them).
pub(crate) trait Logs {
    /// log10(self)
    fn lg(self) -> f64;
    /// log2(self)
    fn lb(self) -> f64;
}

impl Logs for f64 {
    fn lg(self) -> f64 {
        libm::log10(self)
    }
    fn lb(self) -> f64 {
        libm::log2(self)
    }
}

/// 10^e
pub(crate) fn pow10(e: f64) -> f64 {
    libm::pow(10.0, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_logs_and_powers_are_those_of_the_c_library() {
        for x in [1e-3, 0.1, 0.5, 1.0, 2.0, 3.0, 10.0, 1234.5, 1e9, 4.2e15] {
            assert!(
                (x.lg() - x.log10()).abs() <= 1e-15 * x.log10().abs().max(1.0),
                "{x}"
            );
            assert!(
                (x.lb() - x.log2()).abs() <= 1e-15 * x.log2().abs().max(1.0),
                "{x}"
            );
        }
        for e in [-6.0, -3.0, -1.0, 0.0, 1.0, 2.0, 9.0] {
            assert_eq!(pow10(e), 10f64.powf(e), "{e}");
        }
        assert_eq!(1000f64.lg(), 3.0);
        assert_eq!(1024f64.lb(), 10.0);
        assert!(0f64.lg().is_infinite() && (-1f64).lg().is_nan());
    }
}
