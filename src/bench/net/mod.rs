//! `rtlat net`: UDP latency with the send (TX) and receive (RX) paths
//! measured apart, from the kernel's socket timestamps (SO_TIMESTAMPING).
//!
//! `serve` is a real-time UDP reflector that measures its own RX latency and
//! turnaround and carries both back in each reply; `ping` sends at a fixed
//! rate and measures the round trip, its own TX and RX latencies, and counts
//! lost, duplicated, reordered and late replies. See `wire` for the datagram.
//! This file holds what both sides share: the socket and run setup.

pub mod parse;
pub mod ping;
pub mod serve;
pub mod wire;

pub use crate::result::details::net::Timestamps;
pub use parse::{parse_byte_rate, parse_rate, resolve};
pub use ping::PingConfig;
pub use serve::ServeConfig;

use crate::bench::threads::Threads;
use crate::engine::Setup;
use crate::engine::{RunControl, RunSpec};
use crate::error::{Error, Outcome, Result};
use crate::result::details::net::NetDetails;
use crate::result::details::Details;
use crate::result::Benchmark;
use crate::sys::clock::now_ns;
use crate::sys::net::{Stamping, TsSocket};
use serde::Serialize;

/// The port `serve` listens on by default; its bulk sink is on the next one.
pub const DEFAULT_PORT: u16 = 7357;

const REALTIME: libc::clockid_t = libc::CLOCK_REALTIME;
const MONOTONIC: libc::clockid_t = libc::CLOCK_MONOTONIC;
/// How long one blocking receive waits before the end conditions are checked again.
const RECV_SLICE_NS: u64 = 50_000_000;

/// What `rtlat net` runs: one side of the exchange.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // built once per run
pub enum NetConfig {
    Serve(ServeConfig),
    Ping(PingConfig),
}

/// Run `rtlat net serve|ping`.
pub fn run(cfg: &NetConfig, argv: Vec<String>) -> Result<Outcome> {
    match cfg {
        NetConfig::Serve(c) => serve::run(c, argv),
        NetConfig::Ping(c) => ping::run(c, argv),
    }
}

/// The CLOCK_REALTIME time of `mono`, a CLOCK_MONOTONIC time.
fn realtime_of(mono: u64) -> u64 {
    let (m, r) = (now_ns(MONOTONIC), now_ns(REALTIME));
    (r + mono).saturating_sub(m)
}

/// Wait a millisecond: after an unexpected socket error (never spin on a
/// persistent one), or for something that has not arrived yet.
fn back_off() {
    crate::sys::clock::sleep_until(MONOTONIC, now_ns(MONOTONIC) + 1_000_000);
}

/// Block SIGINT/SIGTERM; call before any thread starts (bulk sender, sink),
/// so that they inherit the blocked mask.
fn block_signals() -> Result<()> {
    crate::sys::signals::block_termination()
        .map_err(|e| Error::env(format!("cannot block signals: {e}")).because(e))
}

/// Turn on the kernel timestamps of `ts` if any (TX ones too with `tx`),
/// large buffers, and receives that return every [`RECV_SLICE_NS`].
fn prepare_socket(sock: &TsSocket, ts: Option<Timestamps>, tx: bool) -> Result<()> {
    if let Some(ts) = ts {
        let stamping = match ts {
            Timestamps::Software => Stamping::Software,
            Timestamps::Hardware => Stamping::Hardware,
        };
        sock.enable_timestamps(stamping.flags(tx)).map_err(|e| {
            Error::env(format!(
                "the kernel refused socket timestamps (SO_TIMESTAMPING: {e}); a Linux kernel of 4.0 or later is needed"
            ))
        })?;
    }
    sock.set_buffers(1 << 20);
    sock.set_recv_timeout(RECV_SLICE_NS)
        .map_err(|e| Error::env(format!("cannot set a receive timeout: {e}")).because(e))
}

/// The side's measuring threads, its receiving thread explained with
/// `--explain` (on the CPU of `--cpu`): each datagram from its kernel RX
/// stamp to the thread running after `recvmsg`, the time before that
/// `pending`; `explain` is `--explain`'s worst and `--explain-stacks`.
fn receiving(
    common: &Common,
    explain: (Option<usize>, bool),
    pending: &'static str,
) -> Result<Threads> {
    let (cpu, interval) = (common.cpu, common.control.interval_ns);
    Threads::begin_on(cpu, explain, "own receive path", Some(pending), interval)
}

/// The settings both sides have (in the result's `config` beside each
/// side's own).
#[derive(Debug, Clone, Serialize)]
pub struct Common {
    /// When the run ends (`--count` is its `loops`).
    #[serde(flatten)]
    pub control: RunControl,
    pub timestamps: Timestamps,
    /// The clock of every timestamp: `realtime`.
    pub clock: &'static str,
    /// The CPU of the measuring threads (`--cpu`).
    pub cpu: Option<usize>,
    #[serde(skip)]
    pub setup: Setup,
}

impl Common {
    /// The CPU to pin the measuring threads to, if pinning is possible.
    fn pin(&self) -> Option<usize> {
        self.cpu.filter(|_| self.setup.rt.can_pin())
    }
}

/// The run of one side with `threads` measuring threads: `config` is the
/// result's config, `note` the first note (what is measured, and how). Its
/// details say which timestamps it uses until the finisher writes the whole
/// record.
fn run_spec(
    config: serde_json::Value,
    common: &Common,
    threads: usize,
    note: String,
    command_line: Vec<String>,
) -> Result<RunSpec> {
    let mut spec = RunSpec::new(
        Benchmark::Net,
        &config,
        &common.setup,
        &common.control,
        command_line,
    )?
    .threads(vec![common.cpu; threads], vec![0; threads]);
    spec.notes.push(note);
    spec.details = NetDetails {
        timestamping: common.timestamps,
        side: None,
    }
    .to_map();
    Ok(spec)
}
