//! The validated settings of a ping run (built from the command line in
//! `cli::net`).

use super::super::{Common, MONOTONIC, REALTIME};
use crate::sys::clock::now_ns;
use serde::Serialize;
use std::net::SocketAddr;

/// Validated settings of a ping run.
#[derive(Debug, Clone, Serialize)]
pub struct PingConfig {
    pub role: &'static str,
    /// The server as given on the command line, and as resolved.
    pub target: String,
    pub peer: SocketAddr,
    pub bind: SocketAddr,
    pub period_ns: u64,
    pub rate_per_s: f64,
    /// Datagram size (UDP payload) in bytes.
    pub size: usize,
    pub timeout_ns: u64,
    /// Chosen per run; replies of other runs are ignored.
    pub session: u32,
    pub bulk: Option<BulkPlan>,
    /// Which threads measure (`--overlap` and the period choose; see [`Path::choose`]).
    pub path: Path,
    /// `false` with `--no-split`: the round trip only, no kernel timestamps requested.
    pub split: bool,
    /// The peer is a plain UDP echo service (`--echo`, RFC 862): it returns
    /// each request unchanged, with no server-side figures.
    pub echo: bool,
    /// SO_BUSY_POLL on the socket (`--busy-poll`), µs.
    pub busy_poll_us: Option<u32>,
    /// After each send, poll for the reply without sleeping for up to this
    /// long before blocking (`--spin`; one-thread path only), ns.
    pub spin_ns: Option<u64>,
    /// `spin_ns` is the default choice ([`default_spin`]), not `--spin`'s.
    pub spin_by_default: bool,
    /// How the sender waits for each send slot (`--pace`).
    pub pace: Pace,
    /// The board `rtlat net serve` is started on for the run (`--serve-on`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serve_on: Option<crate::remote::peer::Board>,
    /// The worst RX intervals explained (`--explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<usize>,
    /// `--explain-stacks`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explain_stacks: bool,
    /// Packets to send (`--count`), timestamps, CPU, output …
    #[serde(flatten)]
    pub common: Common,
}

/// Which threads measure a ping run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Path {
    /// One thread sends each request and takes its reply itself, then reads
    /// the TX timestamp from the error queue: two syscalls between the
    /// timestamps of a round trip, no other wake-up.
    OneThread,
    /// A sender paced on the grid and a receiver blocked in `recvmsg`:
    /// requests may overlap (a reply may come after the next request).
    TwoThread,
}

/// Below this period the one-thread path is not chosen: a round trip over
/// one Ethernet hop or a veth pair on a busy machine takes 20–50 µs, and the
/// one-thread path needs each reply before the next request is due.
pub const ONE_THREAD_MIN_PERIOD_NS: u64 = 50_000;

impl Path {
    /// Two threads when asked for (`--overlap`) or when the period leaves no
    /// room for a round trip (below [`ONE_THREAD_MIN_PERIOD_NS`]); else one.
    pub fn choose(period_ns: u64, overlap: bool) -> Path {
        if overlap || period_ns < ONE_THREAD_MIN_PERIOD_NS {
            Path::TwoThread
        } else {
            Path::OneThread
        }
    }

    /// As in the result (`one-thread`, `two-thread`).
    pub fn name(self) -> &'static str {
        match self {
            Path::OneThread => "one-thread",
            Path::TwoThread => "two-thread",
        }
    }
}

/// How the sender waits for its next send slot (`--pace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pace {
    /// Sleep until the slot (`clock_nanosleep` on the absolute time), as a
    /// periodic real-time task does: its CPU is free between requests.
    Sleep,
    /// Read the clock in a loop until the slot, as sockperf's `--mps` does:
    /// the CPU never idles and the thread never leaves user space between
    /// requests, so the send path stays warm (on a VM, no timer exit before
    /// each request); it takes the whole CPU from anything of lower priority.
    Spin,
}

impl Pace {
    /// As in the result (`sleep`, `spin`).
    pub fn name(self) -> &'static str {
        match self {
            Pace::Sleep => "sleep",
            Pace::Spin => "spin",
        }
    }
}

/// Background bulk UDP during the measurement (`--bulk`).
#[derive(Debug, Clone, Serialize)]
pub struct BulkPlan {
    pub target: SocketAddr,
    /// `None`: as fast as the socket takes it.
    pub bytes_per_s: Option<u64>,
    pub payload: usize,
}

/// A run identifier that differs between runs (time and pid), never 0.
pub fn session_id() -> u32 {
    let t = now_ns(REALTIME) ^ now_ns(MONOTONIC).rotate_left(32);
    let x = (t ^ (u64::from(std::process::id()) << 17)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((x >> 32) as u32) | 1
}

/// The longest spin chosen by default: a round trip over a veth pair or one
/// Ethernet hop on an idle machine comes well within it.
pub const DEFAULT_SPIN_MAX_NS: u64 = 50_000;

/// How long the one-thread path polls for each reply when `--spin` is not
/// given: up to [`DEFAULT_SPIN_MAX_NS`] or half the period, whichever is
/// shorter, so the reply finds the thread running (as a busy-waiting client
/// such as sockperf's does) at a bounded cost in CPU. None on the two-thread
/// path, and none on a PREEMPT_RT kernel, where the interrupt and softirq
/// threads that deliver the reply may run below the spinning thread on its
/// CPU.
pub fn default_spin(path: Path, period_ns: u64, preempt_rt: bool) -> Option<u64> {
    (path == Path::OneThread && !preempt_rt).then(|| DEFAULT_SPIN_MAX_NS.min(period_ns / 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_spin_is_bounded_and_off_where_it_could_starve_the_reply() {
        assert_eq!(
            default_spin(Path::OneThread, 1_000_000, false),
            Some(50_000)
        );
        assert_eq!(default_spin(Path::OneThread, 60_000, false), Some(30_000));
        assert_eq!(default_spin(Path::OneThread, 1_000_000, true), None);
        assert_eq!(default_spin(Path::TwoThread, 1_000_000, false), None);
    }
}
