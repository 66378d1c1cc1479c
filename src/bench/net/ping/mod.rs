//! `rtlat net ping`: two real-time threads on one connected UDP socket.
//! The sender ([`send`]) sends a request every period on a fixed grid and
//! reads the kernel's TX timestamps from the socket's error queue between
//! sends; the receiver ([`receive`]) blocks in `recvmsg` and measures each
//! reply the moment it lands, so a reply that never comes never delays the
//! next send. Through a seqlock cell the sender publishes how many requests
//! it attempted (before each send) and when it is done; the receiver reads
//! it to reject replies to requests never sent and to know when to stop.
//! [`ledger`] matches replies and TX timestamps to their requests;
//! [`report`] writes the result's details and the verdicts.
//!
//! Every time is CLOCK_REALTIME, the clock of the kernel's software
//! timestamps: `tx = kernel TX stamp − user time before send()`,
//! `rx = user time after recvmsg() − kernel RX stamp`,
//! `rtt = user time after recvmsg() of the reply − user time before send()`.
//! The pacing uses CLOCK_MONOTONIC (absolute, on a fixed grid).

mod config;
mod ledger;
mod receive;
mod report;
mod send;

pub use config::{session_id, BulkPlan, PingConfig};

use super::{block_signals, prepare_socket, run_spec, MONOTONIC};
use crate::engine::{self, Channel, StopFlag, Worker, WorkerEnd};
use crate::error::{Error, Outcome, Result};
use crate::load::net::{BulkConfig, BulkSender};
use crate::result::details::net::PingCounts;
use crate::stats::recorder::{self, Recorder};
use crate::stats::seqlock::SeqCell;
use crate::sys::net::TsSocket;
use crate::units::human_duration;
use receive::Receiver;
use send::Sender;
use std::io;
use std::sync::{Arc, Mutex};

/// After the last send, how long to wait for its TX timestamp at most.
const TX_DRAIN_NS: u64 = 100_000_000;
/// After SIGINT/SIGTERM, wait at most this long for the last replies.
const STOP_DRAIN_NS: u64 = 500_000_000;
/// A trailing run of this many unanswered packets means the peer went away.
const GONE_AFTER: u64 = 10;
/// Bounds of the window of packets tracked for matching replies.
const MIN_WINDOW: usize = 1024;
const MAX_WINDOW: usize = 1 << 18;

/// The series, in the order of the result's `threads`.
pub const SERIES: [&str; 5] = ["rtt", "tx", "rx", "server_rx", "turnaround"];

/// What the sender publishes for the receiver: requests attempted (published
/// before each send), requests the kernel accepted, and 1 once sending is over.
type Progress = SeqCell<3>;

/// What the measuring threads are told.
#[derive(Clone, Copy)]
struct Plan {
    period: u64,
    /// Start on CLOCK_MONOTONIC.
    start: u64,
    loops: Option<u64>,
    duration: Option<u64>,
    timeout: u64,
}

/// The window of requests tracked: twice the requests of one timeout, bounded.
fn window(timeout_ns: u64, period_ns: u64, loops: Option<u64>) -> usize {
    let per_timeout = (timeout_ns / period_ns.max(1)).saturating_mul(2) + 64;
    let w = per_timeout.clamp(MIN_WINDOW as u64, MAX_WINDOW as u64) as usize;
    match loops {
        Some(n) if (n as usize) < w => (n as usize).max(MIN_WINDOW),
        _ => w,
    }
}

fn bind_error(cfg: &PingConfig, e: io::Error) -> Error {
    match e.raw_os_error() {
        Some(libc::EADDRNOTAVAIL) => Error::usage(format!(
            "--bind {}: no interface has this address; check 'ip addr'",
            cfg.bind.ip()
        )),
        Some(libc::EAFNOSUPPORT) => Error::env(format!(
            "{} is not available on this host (kernel without IPv{}); use the other IP version",
            cfg.peer,
            if cfg.peer.is_ipv4() { 4 } else { 6 }
        )),
        _ => Error::env(format!("cannot open a UDP socket on {}: {e}", cfg.bind)),
    }
}

/// The socket connected to the server, with timestamps on.
fn open_socket(cfg: &PingConfig) -> Result<TsSocket> {
    let sock = TsSocket::bind(&cfg.bind).map_err(|e| bind_error(cfg, e))?;
    sock.connect(&cfg.peer).map_err(|e| {
        Error::env(format!(
            "cannot reach {} ({e}); check the address and the route ('ip route get {}')",
            cfg.peer,
            cfg.peer.ip()
        ))
    })?;
    prepare_socket(&sock, cfg.common.timestamps, true)?;
    Ok(sock)
}

/// A measuring thread running `body` from the run's start; its counts are
/// added to `counts` when it ends.
fn worker(
    name: &str,
    cpu: Option<usize>,
    plan: Plan,
    counts: &Arc<Mutex<PingCounts>>,
    body: impl FnOnce(&Plan, &StopFlag) -> PingCounts + Send + 'static,
) -> Worker {
    let counts = Arc::clone(counts);
    Worker {
        name: name.into(),
        cpu,
        body: Box::new(move |start: u64, stop: &StopFlag| -> WorkerEnd {
            let c = body(&Plan { start, ..plan }, stop);
            if let Ok(mut g) = counts.lock() {
                g.add(&c);
            }
            WorkerEnd { brk: None }
        }),
    }
}

/// Run `rtlat net ping`.
pub fn run(cfg: &PingConfig, command_line: Vec<String>) -> Result<Outcome> {
    block_signals()?;
    let sock = open_socket(cfg)?;
    let local = sock.local_addr().unwrap_or(cfg.bind);
    let rsock = sock
        .try_clone()
        .map_err(|e| Error::env(format!("cannot duplicate the socket: {e}")).because(e))?;

    let win = window(cfg.timeout_ns, cfg.period_ns, cfg.common.control.loops);
    let interval = cfg.common.control.interval_ns;
    let (mut recs, mut channels): (Vec<Recorder>, Vec<Channel>) = (Vec::new(), Vec::new());
    for name in SERIES {
        let (rec, col) = recorder::pair(interval);
        recs.push(rec);
        channels.push(Channel::new(name.into(), cfg.common.cpu, col, interval));
    }
    let [rtt, tx, rx, server_rx, turnaround]: [Recorder; 5] = recs
        .try_into()
        .map_err(|_| Error::env("internal: recorder missing"))?;
    let progress = Arc::new(Progress::default());
    let sender = Sender::new(sock, tx, cfg, win, Arc::clone(&progress));
    let receiver = Receiver::new(rsock, [rtt, rx, server_rx, turnaround], cfg, win, progress);

    let counts: Arc<Mutex<PingCounts>> = Arc::new(Mutex::new(PingCounts::default()));
    let bulk: Arc<Mutex<Option<BulkSender>>> = Arc::new(Mutex::new(None));
    let mut spec = run_spec(
        serde_json::to_value(cfg).unwrap_or_default(),
        &cfg.common,
        2,
        format!(
            "ping {} from {local}: {} bytes every {}; tx/rx from kernel {} timestamps, every time on CLOCK_REALTIME",
            cfg.peer,
            cfg.size,
            human_duration(cfg.period_ns),
            cfg.common.timestamps.name()
        ),
        command_line,
    )?;
    spec.finish = Some(report::finisher(
        Arc::clone(&counts),
        Arc::clone(&bulk),
        cfg.clone(),
    ));

    let plan = Plan {
        period: cfg.period_ns,
        start: 0,
        loops: cfg.common.control.loops,
        duration: cfg.common.control.duration_ns,
        timeout: cfg.timeout_ns,
    };
    let pin = cfg.common.pin();
    let sending = worker("rtlat-net-tx", pin, plan, &counts, move |p, stop| {
        sender.run(p, stop)
    });
    let receiving = worker("rtlat-net-rx", pin, plan, &counts, move |p, stop| {
        receiver.run(p, stop)
    });

    if let Some(b) = &cfg.bulk {
        let sender = BulkSender::start(BulkConfig {
            target: b.target,
            bytes_per_s: b.bytes_per_s,
            payload: b.payload,
        })?;
        if let Ok(mut g) = bulk.lock() {
            *g = Some(sender);
        }
    }
    let outcome = engine::execute(spec, channels, vec![sending, receiving], MONOTONIC);
    // On an early error the finisher never ran: stop the bulk traffic here.
    if let Some(b) = bulk.lock().ok().and_then(|mut g| g.take()) {
        b.stop();
    }
    let outcome = outcome?;
    let c = counts.lock().map(|g| g.derived()).unwrap_or_default();
    match report::verdict(cfg, &c) {
        Some(msg) => Ok(Outcome::EnvironmentFailed(msg)),
        None => Ok(outcome.outcome),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_covers_two_timeouts_within_bounds() {
        assert_eq!(window(1_000_000_000, 100_000, None), 20_064);
        assert_eq!(window(1_000_000_000, 1_000, None), MAX_WINDOW);
        assert_eq!(window(1_000_000, 1_000_000, None), MIN_WINDOW);
        assert_eq!(window(1_000_000_000, 100_000, Some(5000)), 5000);
    }
}
