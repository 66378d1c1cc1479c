//! Clock reads and absolute-time sleeps.

use libc::{clockid_t, timespec};

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

fn to_ns(ts: &timespec) -> u64 {
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

fn from_ns(ns: u64) -> timespec {
    timespec {
        // `as _`: time_t is 32-bit on armv7/ppc glibc and a deprecated alias on musl.
        tv_sec: (ns / 1_000_000_000) as _,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// The current time of `clock` in ns. Never allocates; one vDSO call.
#[inline(always)]
pub fn now_ns(clock: clockid_t) -> u64 {
    let mut ts = timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes it.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    to_ns(&ts)
}

/// Sleep until the absolute time `deadline_ns` of `clock` (TIMER_ABSTIME),
/// resuming after interruptions (EINTR) so the deadline is always reached.
#[inline(always)]
pub fn sleep_until(clock: clockid_t, deadline_ns: u64) {
    let ts = from_ns(deadline_ns);
    loop {
        // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null with TIMER_ABSTIME.
        let rc =
            unsafe { libc::clock_nanosleep(clock, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
        if rc != libc::EINTR {
            return;
        }
    }
}

/// The current UTC wall-clock time as seconds and nanoseconds since the epoch.
pub fn wall_clock() -> (u64, u32) {
    let ns = now_ns(libc::CLOCK_REALTIME);
    (ns / 1_000_000_000, (ns % 1_000_000_000) as u32)
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
        assert_eq!(to_ns(&from_ns(ns)), ns);
    }
}
