//! Clock reads and absolute-time sleeps, and the one conversion of sys between
//! integer nanoseconds and the kernel's `timespec`/`timeval` (`SecNs`).

use libc::{clockid_t, timespec};
use rustix::io::Errno;
use rustix::thread::clock_nanosleep_absolute;
use rustix::time::{clock_gettime_dynamic, ClockId, DynamicClockId, Timespec};

/// The clocks a benchmark can run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    Monotonic,
    Realtime,
}

impl Clock {
    pub fn id(self) -> clockid_t {
        match self {
            Clock::Monotonic => libc::CLOCK_MONOTONIC,
            Clock::Realtime => libc::CLOCK_REALTIME,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Clock::Monotonic => "monotonic",
            Clock::Realtime => "realtime",
        }
    }
}

/// Nanoseconds in one second.
pub(crate) const NS_PER_SEC: u64 = 1_000_000_000;

/// The one conversion of sys between integer nanoseconds and the kernel's
/// (seconds, nanoseconds) pairs: `timespec` of libc and of rustix, `timeval`.
pub(crate) trait SecNs: Sized {
    /// Whole seconds and the nanoseconds left over.
    fn sec_ns(&self) -> (u64, u64);
    /// The value for `sec` seconds and `nsec` (< 1 s) nanoseconds.
    fn from_sec_ns(sec: u64, nsec: u64) -> Self;

    /// The value as integer ns (wrapping, as the kernel's clocks never reach it).
    #[inline(always)]
    fn to_ns(&self) -> u64 {
        let (sec, nsec) = self.sec_ns();
        sec.wrapping_mul(NS_PER_SEC).wrapping_add(nsec)
    }
    /// `ns` as this type.
    #[inline(always)]
    fn from_ns(ns: u64) -> Self {
        Self::from_sec_ns(ns / NS_PER_SEC, ns % NS_PER_SEC)
    }
}

/// [`SecNs`] of the structs with `tv_sec` and `tv_nsec`: libc's and rustix's `timespec`.
macro_rules! timespec_sec_ns {
    ($($t:ty),*) => {$(
        impl SecNs for $t {
            #[inline(always)]
            fn sec_ns(&self) -> (u64, u64) {
                (self.tv_sec as u64, self.tv_nsec as u64)
            }
            #[inline(always)]
            fn from_sec_ns(sec: u64, nsec: u64) -> Self {
                Self {
                    // `as _`: time_t is 32-bit on armv7/ppc glibc and a deprecated alias on musl.
                    tv_sec: sec as _,
                    tv_nsec: nsec as _,
                }
            }
        }
    )*};
}
timespec_sec_ns!(timespec, Timespec);

/// A `timeval` keeps microseconds: `from_ns` truncates the nanoseconds.
impl SecNs for libc::timeval {
    #[inline(always)]
    fn sec_ns(&self) -> (u64, u64) {
        (self.tv_sec as u64, (self.tv_usec as u64).wrapping_mul(1000))
    }
    #[inline(always)]
    fn from_sec_ns(sec: u64, nsec: u64) -> Self {
        libc::timeval {
            tv_sec: sec as _,
            tv_usec: (nsec / 1000) as _,
        }
    }
}

/// The current time of `clock` in ns (0 for a clock the kernel does not
/// have). Never allocates; one vDSO call.
#[inline(always)]
pub fn now_ns(clock: clockid_t) -> u64 {
    match ClockId::try_from(clock) {
        Ok(id) => clock_gettime_dynamic(DynamicClockId::Known(id)).map_or(0, |ts| ts.to_ns()),
        Err(_) => 0,
    }
}

/// Sleep until the absolute time `deadline_ns` of `clock` (TIMER_ABSTIME),
/// resuming after interruptions (EINTR) so the deadline is always reached.
#[inline(always)]
pub fn sleep_until(clock: clockid_t, deadline_ns: u64) {
    let Ok(id) = ClockId::try_from(clock) else {
        return; // clock_nanosleep would fail with EINVAL
    };
    let ts = Timespec::from_ns(deadline_ns);
    while clock_nanosleep_absolute(id, &ts) == Err(Errno::INTR) {}
}

/// The current UTC wall-clock time as seconds and nanoseconds since the epoch.
pub fn wall_clock() -> (u64, u32) {
    let ns = now_ns(libc::CLOCK_REALTIME);
    (ns / NS_PER_SEC, (ns % NS_PER_SEC) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_advances_and_sleep_until_is_absolute() {
        let c = Clock::Monotonic.id();
        let t0 = now_ns(c);
        let target = t0 + 2_000_000;
        sleep_until(c, target);
        let t1 = now_ns(c);
        assert!(t1 >= target, "woke before the absolute deadline");
        // A deadline in the past returns at once.
        sleep_until(c, t0);
        assert!(now_ns(c) - t1 < 1_000_000_000);
    }

    #[test]
    fn timespec_round_trip() {
        let ns = 12_345_678_901_234u64;
        assert_eq!(timespec::from_ns(ns).to_ns(), ns);
        assert_eq!(Timespec::from_ns(ns).to_ns(), ns);
        assert_eq!(timespec::from_ns(ns).sec_ns(), (12_345, 678_901_234));
        assert_eq!(libc::timeval::from_ns(ns).to_ns(), 12_345_678_901_000);
    }
}
