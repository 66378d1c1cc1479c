//! The clock a busy loop reads back to back, and its conversion to
//! nanoseconds: the time-stamp counter calibrated against CLOCK_MONOTONIC
//! where it is invariant (x86_64), else `clock_gettime(CLOCK_MONOTONIC)`
//! (the vDSO: no system call).

use crate::sys;
use serde::{Deserialize, Serialize};

const MONO: libc::clockid_t = libc::CLOCK_MONOTONIC;

/// Which clock the loop reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CounterKind {
    /// The time-stamp counter (`rdtsc`), as oslat reads it.
    Tsc,
    /// `clock_gettime(CLOCK_MONOTONIC)`.
    Monotonic,
}

impl CounterKind {
    pub fn name(self) -> &'static str {
        match self {
            CounterKind::Tsc => "tsc",
            CounterKind::Monotonic => "monotonic",
        }
    }
}

/// A clock read as raw ticks and their conversion to ns on CLOCK_MONOTONIC.
pub trait Ticks: Copy + Send + 'static {
    fn now(&self) -> u64;
    /// A span of ticks in ns.
    fn span_ns(&self, ticks: u64) -> u64;
    /// A reading as CLOCK_MONOTONIC ns.
    fn mono_ns(&self, ticks: u64) -> u64;
}

/// CLOCK_MONOTONIC itself: a tick is a ns.
#[derive(Debug, Clone, Copy)]
pub struct Monotonic;

impl Ticks for Monotonic {
    #[inline(always)]
    fn now(&self) -> u64 {
        sys::clock::now_ns(MONO)
    }
    #[inline(always)]
    fn span_ns(&self, ticks: u64) -> u64 {
        ticks
    }
    #[inline(always)]
    fn mono_ns(&self, ticks: u64) -> u64 {
        ticks
    }
}

/// The time-stamp counter with its rate measured against CLOCK_MONOTONIC.
#[derive(Debug, Clone, Copy)]
pub struct Tsc {
    /// ns per tick in 32.32 fixed point.
    mult: u64,
    /// A reading of both clocks at the same moment.
    base_ticks: u64,
    base_ns: u64,
}

/// Calibration reads both clocks this far apart.
const CALIBRATION_NS: u64 = 100_000_000;

impl Tsc {
    /// Measure the counter's rate over [`CALIBRATION_NS`]; `None` without an
    /// invariant counter or if it did not move.
    pub fn calibrate() -> Option<Tsc> {
        if !sys::tsc::available() {
            return None;
        }
        let (t0, n0) = Self::pair();
        sys::clock::sleep_until(MONO, n0 + CALIBRATION_NS);
        let (t1, n1) = Self::pair();
        let (dt, dn) = (t1.checked_sub(t0)?, n1.checked_sub(n0)?);
        if dt == 0 || dn == 0 {
            return None;
        }
        let mult = ((u128::from(dn) << 32) / u128::from(dt)).min(u128::from(u64::MAX)) as u64;
        Some(Tsc {
            mult,
            base_ticks: t1,
            base_ns: n1,
        })
    }

    /// The counter and CLOCK_MONOTONIC read as close together as seen: the
    /// tightest of a few tries, the counter taken in the middle.
    fn pair() -> (u64, u64) {
        let mut best = (u64::MAX, 0, 0);
        for _ in 0..16 {
            let a = sys::clock::now_ns(MONO);
            let t = sys::tsc::read();
            let b = sys::clock::now_ns(MONO);
            if b.saturating_sub(a) < best.0 {
                best = (b.saturating_sub(a), t, a + (b - a) / 2);
            }
        }
        (best.1, best.2)
    }

    /// Ticks per µs (the counter's frequency in MHz).
    pub fn mhz(&self) -> f64 {
        if self.mult == 0 {
            0.0
        } else {
            (1u64 << 32) as f64 * 1000.0 / self.mult as f64
        }
    }
}

impl Ticks for Tsc {
    #[inline(always)]
    fn now(&self) -> u64 {
        sys::tsc::read()
    }
    /// To the nearest ns: a floor would take up to a ns from every one of
    /// the loop's gaps, all the same way (tens of ms over 60 million).
    #[inline(always)]
    fn span_ns(&self, ticks: u64) -> u64 {
        ((u128::from(ticks) * u128::from(self.mult) + (1 << 31)) >> 32) as u64
    }
    #[inline(always)]
    fn mono_ns(&self, ticks: u64) -> u64 {
        if ticks >= self.base_ticks {
            self.base_ns + self.span_ns(ticks - self.base_ticks)
        } else {
            self.base_ns
                .saturating_sub(self.span_ns(self.base_ticks - ticks))
        }
    }
}

/// The cost of one read of `t`, in ns: the fastest of a few rounds of reads
/// back to back, each round's span over its reads.
pub fn read_cost_ns<T: Ticks>(t: &T) -> f64 {
    const READS: u64 = 1000;
    let mut best = u64::MAX;
    for _ in 0..20 {
        let a = t.now();
        let mut last = a;
        for _ in 0..READS {
            last = std::hint::black_box(t.now());
        }
        best = best.min(t.span_ns(last.wrapping_sub(a)));
    }
    best as f64 / READS as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_agrees_with_the_monotonic_clock() {
        let Some(tsc) = Tsc::calibrate() else {
            return; // no invariant counter here: the loop reads CLOCK_MONOTONIC
        };
        let (t, n) = Tsc::pair();
        // Within 50 µs of the monotonic clock right after calibration.
        assert!(
            tsc.mono_ns(t).abs_diff(n) < 50_000,
            "{} vs {n}",
            tsc.mono_ns(t)
        );
        assert!(tsc.mhz() > 1.0, "{} MHz", tsc.mhz());
    }

    #[test]
    fn spans_scale_by_the_rate() {
        let t = Tsc {
            mult: 1 << 31, // 0.5 ns per tick
            base_ticks: 1000,
            base_ns: 5000,
        };
        assert_eq!(t.span_ns(10), 5);
        // 5.5 ns is 6, 5.0 is 5: to the nearest ns, not down.
        assert_eq!(t.span_ns(11), 6);
        let third = Tsc {
            mult: (1 << 32) / 3 + 1, // a third of a ns per tick
            ..t
        };
        assert_eq!(third.span_ns(2), 1);
        assert_eq!(third.span_ns(300_000_000), 100_000_000);
        assert_eq!(t.mono_ns(1010), 5005);
        assert_eq!(t.mono_ns(990), 4995);
        assert_eq!(t.mhz(), 2000.0);
    }

    #[test]
    fn a_read_costs_something() {
        let c = read_cost_ns(&Monotonic);
        assert!(c > 0.0 && c < 100_000.0, "{c}");
    }
}
