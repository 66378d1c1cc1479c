//! `rtlat net ping`: requests on one connected UDP socket, on one of two paths
//! ([`Path::choose`] picks it; the result's `config.path` says which ran).
//!
//! The one-thread path ([`pingpong`], the usual one): one real-time thread
//! sends a request, blocks in `recvmsg` for its reply, then reads the TX
//! timestamp from the error queue without waiting — as lean as sockperf's
//! ping-pong: two syscalls between the timestamps of a round trip.
//!
//! The two-thread path (`--overlap`, or a period below
//! [`ONE_THREAD_MIN_PERIOD_NS`]): the sender ([`send`]) sends a request every
//! period on a fixed grid and reads the TX timestamps between sends; the
//! receiver ([`receive`]) blocks in `recvmsg` and measures each reply the
//! moment it lands, so a reply that never comes never delays the next send
//! (but each TX timestamp queued wakes the blocked receiver once more).
//!
//! On both, through a seqlock cell the sender publishes how many requests
//! it attempted (before each send) and when it is done; the receiver reads
//! it to reject replies to requests never sent and to know when to stop.
//! The sender also records each request's send time by sequence number
//! (before the send); a round trip is measured from that record, never from
//! the send time the reply carries, which a broken or hostile server can
//! rewrite (such replies, and server times longer than the round trip, are
//! counted by reason and not measured).
//! [`ledger`] matches replies and TX timestamps to their requests;
//! [`report`] writes the result's details and the verdicts.
//!
//! Every time is CLOCK_REALTIME, the clock of the kernel's software
//! timestamps: `tx = kernel TX stamp − user time before send()`,
//! `rx = user time after recvmsg() − kernel RX stamp`,
//! `rtt = user time after recvmsg() of the reply − user time before send()`
//! (the sender's own record of it).
//! The pacing uses CLOCK_MONOTONIC (absolute, on a fixed grid).

mod config;
mod ledger;
mod pingpong;
mod receive;
mod report;
mod send;
mod serve_on;

pub use config::{
    default_spin, session_id, BulkPlan, Pace, Path, PingConfig, DEFAULT_SPIN_MAX_NS,
    ONE_THREAD_MIN_PERIOD_NS,
};

use super::{block_signals, prepare_socket, receiving, run_spec, MONOTONIC, RECV_SLICE_NS};
use crate::bench::threads::{Slot, Threads};
use crate::engine::{RunSpec, StopFlag};
use crate::error::{Error, Outcome, Result};
use crate::load::net::{BulkConfig, BulkSender};
use crate::result::details::net::PingCounts;
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
    /// `--spin`: poll for each reply this long before blocking (one-thread path).
    spin: Option<u64>,
    /// `--pace`: how the sender waits for each slot.
    pace: Pace,
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
    let mut sock = TsSocket::bind(&cfg.bind).map_err(|e| bind_error(cfg, e))?;
    sock.connect(&cfg.peer).map_err(|e| {
        Error::env(format!(
            "cannot reach {} ({e}); check the address and the route ('ip route get {}')",
            cfg.peer,
            cfg.peer.ip()
        ))
    })?;
    prepare_socket(&sock, cfg.split.then_some(cfg.common.timestamps), true)?;
    if cfg.path == Path::OneThread {
        // The one thread must get back to the next send slot: wait at most a
        // period for a reply (the kernel rounds it up to a scheduler tick).
        sock.set_recv_timeout(cfg.period_ns.min(RECV_SLICE_NS))
            .map_err(|e| Error::env(format!("cannot set a receive timeout: {e}")).because(e))?;
    }
    if let Some(us) = cfg.busy_poll_us {
        sock.set_busy_poll(us).map_err(|e| {
            let fix = if e.raw_os_error() == Some(libc::EPERM) {
                ": above net.core.busy_read it needs CAP_NET_ADMIN (run as root, or raise the sysctl)"
            } else {
                ""
            };
            Error::env(format!("--busy-poll {us}: the kernel refused SO_BUSY_POLL ({e}){fix}"))
                .because(e)
        })?;
    }
    Ok(sock)
}

/// A measuring thread on `cpu` running `body` from the run's start; its
/// counts are added to `counts` when it ends.
fn worker(
    threads: &mut Threads,
    name: &str,
    cpu: Option<usize>,
    plan: Plan,
    counts: &Arc<Mutex<PingCounts>>,
    body: impl FnOnce(&Plan, &StopFlag) -> PingCounts + Send + 'static,
) {
    let counts = Arc::clone(counts);
    threads.worker(name.into(), cpu, move |start, stop| {
        let c = body(&Plan { start, ..plan }, stop);
        if let Ok(mut g) = counts.lock() {
            g.add(&c);
        }
    });
}

/// The measuring threads of the run's path.
fn workers(
    cfg: &PingConfig,
    (sender, receiver): (Sender, Receiver),
    counts: &Arc<Mutex<PingCounts>>,
    threads: &mut Threads,
) {
    let plan = Plan {
        period: cfg.period_ns,
        start: 0,
        loops: cfg.common.control.loops,
        duration: cfg.common.control.duration_ns,
        timeout: cfg.timeout_ns,
        spin: cfg.spin_ns,
        pace: cfg.pace,
    };
    let pin = cfg.common.pin();
    match cfg.path {
        Path::OneThread => worker(
            threads,
            "rtlat-net-ping",
            pin,
            plan,
            counts,
            move |p, stop| pingpong::run(sender, receiver, p, stop),
        ),
        Path::TwoThread => {
            worker(
                threads,
                "rtlat-net-tx",
                pin,
                plan,
                counts,
                move |p, stop| sender.run(p, stop),
            );
            worker(
                threads,
                "rtlat-net-rx",
                pin,
                plan,
                counts,
                move |p, stop| receiver.run(p, stop),
            );
        }
    }
}

/// The series of a run, in the order of the result's `threads`: the
/// round trip; TX and RX with the split; the server's with `rtlat net serve`.
fn series(cfg: &PingConfig) -> &'static [&'static str] {
    match (cfg.split, cfg.echo) {
        (false, _) => &SERIES[..1],
        (true, true) => &SERIES[..3],
        (true, false) => &SERIES[..],
    }
}

/// The first note: what is measured, and how.
fn first_note(cfg: &PingConfig, local: std::net::SocketAddr) -> String {
    let peer = if cfg.echo {
        format!("the UDP echo service {}", cfg.peer)
    } else {
        cfg.peer.to_string()
    };
    let path = match cfg.path {
        Path::OneThread => "one thread sends and takes each reply",
        Path::TwoThread if cfg.period_ns < ONE_THREAD_MIN_PERIOD_NS => {
            "two threads (a sender and a receiver: the period is shorter than a round trip may be)"
        }
        Path::TwoThread => "two threads (a sender and a receiver: --overlap)",
    };
    let split = if cfg.split {
        format!(
            "tx/rx from kernel {} timestamps",
            cfg.common.timestamps.name()
        )
    } else {
        "round trip only (--no-split: no kernel timestamps)".into()
    };
    let mut busy = cfg
        .busy_poll_us
        .map(|us| format!(", busy polling {us}us"))
        .unwrap_or_default();
    match (cfg.spin_ns, cfg.spin_by_default) {
        (Some(ns), false) => {
            busy += &format!(", spinning up to {} for each reply", human_duration(ns));
        }
        (Some(ns), true) => {
            busy += &format!(
                ", spinning up to {} for each reply (the default; --spin off always blocks)",
                human_duration(ns)
            );
        }
        (None, true) if cfg.path == Path::OneThread => {
            busy += ", blocking for each reply (no spin by default on PREEMPT_RT: the threads that deliver the reply may run below this one; --spin DURATION to spin)";
        }
        (None, _) => {}
    }
    if cfg.pace == Pace::Spin {
        busy += ", spinning to each send slot (--pace spin)";
    }
    format!(
        "ping {peer} from {local}: {} bytes every {}; {} path: {path}{busy}; {split}, every time on CLOCK_REALTIME",
        cfg.size,
        human_duration(cfg.period_ns),
        cfg.path.name(),
    )
}

/// The sending and receiving ends of the run on the socket and its
/// duplicate, each with its recorders; the receiver's RX intervals (from
/// the reply's kernel RX stamp to the thread running after `recvmsg`) are
/// explained with `--explain`.
fn endpoints(
    cfg: &PingConfig,
    (sock, rsock): (TsSocket, TsSocket),
    threads: &mut Threads,
) -> Result<(Sender, Receiver)> {
    let win = window(cfg.timeout_ns, cfg.period_ns, cfg.common.control.loops);
    // TX timestamps come within microseconds of the send (hardware ones
    // within milliseconds) and are read at once, not after a reply's timeout.
    let tx_win = window(TX_DRAIN_NS, cfg.period_ns, cfg.common.control.loops);
    let cpu = cfg.common.cpu;
    let mut recs: Vec<_> = series(cfg)
        .iter()
        .map(|name| Some(threads.series(name, cpu)))
        .collect();
    recs.resize_with(SERIES.len(), || None);
    let mut take = |i: usize| recs[i].take();
    let rtt = take(0).ok_or_else(|| Error::env("internal: recorder missing"))?;
    let (tx, rx) = (take(1), take(2));
    let server = take(3).zip(take(4)).map(|(a, b)| [a, b]);
    let progress = Arc::new(Progress::default());
    let times = Arc::new(ledger::SendTimes::new(win));
    let keys = (tx_win, Arc::clone(&times));
    let sender = Sender::new(sock, tx, cfg, keys, Arc::clone(&progress));
    let mut receiver = Receiver::new(rsock, (rtt, rx, server), cfg, (win, times), progress);
    if let Some(tap) = threads.watch(SERIES[2], cpu, Some(cfg.period_ns)) {
        receiver.explain_into(tap);
    }
    Ok((sender, receiver))
}

/// Start the bulk traffic of `--bulk`, if asked; the finisher stops it.
fn start_bulk(cfg: &PingConfig, bulk: &Slot<BulkSender>) -> Result<()> {
    if let Some(b) = &cfg.bulk {
        let sender = BulkSender::start(BulkConfig {
            target: b.target,
            bytes_per_s: b.bytes_per_s,
            payload: b.payload,
        })?;
        bulk.put(sender);
    }
    Ok(())
}

/// Run `rtlat net ping`.
pub fn run(cfg: &PingConfig, command_line: Vec<String>) -> Result<Outcome> {
    // Before any signal is blocked: ssh must not inherit a blocked mask.
    let partner = serve_on::start(cfg)?;
    block_signals()?;
    let sock = open_socket(cfg)?;
    let local = sock.local_addr().unwrap_or(cfg.bind);
    let rsock = sock
        .try_clone()
        .map_err(|e| Error::env(format!("cannot duplicate the socket: {e}")).because(e))?;
    // Tracing is set up (and can fail) before anything is measured.
    let mut threads = receiving(
        &cfg.common,
        (cfg.explain, cfg.explain_stacks),
        "reply on its way to the socket",
    )?;
    let ends = endpoints(cfg, (sock, rsock), &mut threads)?;
    let counts: Arc<Mutex<PingCounts>> = Arc::new(Mutex::new(PingCounts::default()));
    let bulk = Slot::default();
    let mut spec = spec(cfg, local, command_line)?;
    let report = report::finisher(Arc::clone(&counts), bulk.clone(), cfg.clone());
    spec.finish = Some(partner.finisher(report, serve_on::merge));
    workers(cfg, ends, &counts, &mut threads);
    start_bulk(cfg, &bulk)?;
    let outcome = threads.execute(spec, MONOTONIC);
    // On an early error the finisher never ran: stop the bulk traffic here.
    if let Some(b) = bulk.take() {
        b.stop();
    }
    let outcome = outcome?;
    let c = counts.lock().map(|g| g.derived()).unwrap_or_default();
    if let Some(msg) = report::verdict(cfg, &c) {
        return Ok(Outcome::EnvironmentFailed(msg));
    }
    Ok(partner.outcome(outcome.outcome))
}

/// The run: its config, what it measures and how (the first note), and
/// what a plain echo service leaves out.
fn spec(
    cfg: &PingConfig,
    local: std::net::SocketAddr,
    command_line: Vec<String>,
) -> Result<RunSpec> {
    let threads = match cfg.path {
        Path::OneThread => 1,
        Path::TwoThread => 2,
    };
    let mut spec = run_spec(
        serde_json::to_value(cfg).unwrap_or_default(),
        &cfg.common,
        threads,
        first_note(cfg, local),
        command_line,
    )?;
    spec.period_ns = Some(cfg.period_ns);
    if cfg.echo {
        spec.notes.push(format!(
            "no server-side series (server_rx, turnaround): {} is a plain echo service, which returns each request unchanged",
            cfg.peer
        ));
    }
    Ok(spec)
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
