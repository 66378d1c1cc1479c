//! `rtlat net ping`: one real-time thread sends a request every period and,
//! between sends, waits in `ppoll` for replies and the kernel's TX
//! timestamps, so a reply is taken the moment it arrives and a reply that
//! never comes never delays the next send.
//!
//! Every time is CLOCK_REALTIME, the clock of the kernel's software
//! timestamps: `tx = kernel TX stamp − user time before send()`,
//! `rx = user time after recvmsg() − kernel RX stamp`,
//! `rtt = user time after recvmsg() of the reply − user time before send()`.
//! The pacing uses CLOCK_MONOTONIC (absolute, on a fixed grid).

use super::wire::{self, Header};
use super::{PingArgs, TimestampsArg};
use crate::engine::{self, Channel, RunControl, RunSpec, Worker, WorkerEnd};
use crate::engine::{RtConfig, StopFlag};
use crate::error::{Error, Outcome, Result};
use crate::load::net::{BulkConfig, BulkSender};
use crate::result::RunResult;
use crate::stats::recorder::{self, Recorder};
use crate::stats::seqlock::SeqCell;
use crate::sys::clock::now_ns;
use crate::sys::net::{ErrQueue, Received, Stamping, TsSocket};
use crate::units::human_duration;
use serde::Serialize;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};

const REALTIME: libc::clockid_t = libc::CLOCK_REALTIME;
const MONOTONIC: libc::clockid_t = libc::CLOCK_MONOTONIC;
/// How long one blocking receive waits before the end conditions are checked again.
const RECV_SLICE_NS: u64 = 50_000_000;
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
    /// Packets to send (`--count`).
    #[serde(flatten)]
    pub control: RunControl,
    pub timeout_ns: u64,
    pub timestamps: TimestampsArg,
    /// The clock of every timestamp.
    pub clock: &'static str,
    /// Chosen per run; replies of other runs are ignored.
    pub session: u32,
    pub cpu: Option<usize>,
    pub bulk: Option<BulkPlan>,
    #[serde(skip)]
    pub rt: RtConfig,
}

#[derive(Debug, Clone, Serialize)]
pub struct BulkPlan {
    pub target: SocketAddr,
    /// `None`: as fast as the socket takes it.
    pub bytes_per_s: Option<u64>,
    pub payload: usize,
}

impl PingConfig {
    pub fn from_args(a: &PingArgs) -> Result<Self> {
        super::check_loads(&a.load)?;
        super::check_cpu(a.cpu)?;
        let (period_ns, rate_per_s) = match (&a.rate, a.period) {
            (Some(r), _) => {
                let rate = super::parse_rate(r).map_err(Error::usage)?;
                (((1e9 / rate).round() as u64).max(1), rate)
            }
            (None, Some(p)) => (p, 1e9 / p as f64),
            (None, None) => (1_000_000, 1000.0),
        };
        if period_ns < 1000 {
            return Err(Error::usage(
                "--period must be at least 1us (at most 1000000 packets/s)",
            ));
        }
        if a.size < wire::HEADER || a.size > wire::MAX_DATAGRAM {
            return Err(Error::usage(format!(
                "--size {} is outside {}..={} bytes (the {}-byte header up to the largest UDP datagram)",
                a.size,
                wire::HEADER,
                wire::MAX_DATAGRAM,
                wire::HEADER
            )));
        }
        let peer = super::resolve(&a.target, "server")?;
        if peer.port() == 0 {
            return Err(Error::usage(format!(
                "server '{}': port 0 cannot be reached; give the port serve listens on (default {})",
                a.target,
                super::DEFAULT_PORT
            )));
        }
        let bind = match &a.bind {
            Some(b) => {
                let ip: IpAddr = b.trim().parse().map_err(|_| {
                    Error::usage(format!(
                        "--bind '{b}' is not an IP address (e.g. 10.0.0.2 or fd00::2)"
                    ))
                })?;
                if ip.is_ipv4() != peer.is_ipv4() {
                    return Err(Error::usage(format!(
                        "--bind {ip} and the server {peer} are of different IP versions"
                    )));
                }
                SocketAddr::new(ip, 0)
            }
            None => SocketAddr::new(
                if peer.is_ipv4() {
                    IpAddr::V4(Ipv4Addr::UNSPECIFIED)
                } else {
                    IpAddr::V6(Ipv6Addr::UNSPECIFIED)
                },
                0,
            ),
        };
        let bulk = match &a.bulk {
            None => None,
            Some(text) => {
                let bytes_per_s = super::parse_byte_rate(text).map_err(Error::usage)?;
                let target = match &a.bulk_target {
                    Some(t) => super::resolve(t, "--bulk-target")?,
                    None => {
                        let port = peer.port().checked_add(1).ok_or_else(|| {
                            Error::usage("the server port is 65535: give --bulk-target HOST:PORT")
                        })?;
                        SocketAddr::new(peer.ip(), port)
                    }
                };
                if !(1..=wire::MAX_DATAGRAM).contains(&a.bulk_size) {
                    return Err(Error::usage(format!(
                        "--bulk-size {} is outside 1..={} bytes",
                        a.bulk_size,
                        wire::MAX_DATAGRAM
                    )));
                }
                Some(BulkPlan {
                    target,
                    bytes_per_s,
                    payload: a.bulk_size,
                })
            }
        };
        let rt = a.rt.to_config(period_ns)?;
        let loops = match (a.count, a.duration) {
            (None, None) => Some(20_000),
            (c, _) => c,
        };
        Ok(PingConfig {
            role: "ping",
            target: a.target.clone(),
            peer,
            bind,
            period_ns,
            rate_per_s,
            size: a.size,
            control: a.output.control(a.duration, loops, None),
            timeout_ns: a.timeout,
            timestamps: a.timestamps,
            clock: "realtime",
            session: session_id(),
            cpu: a.cpu,
            bulk,
            rt,
        })
    }
}

/// A run identifier that differs between runs (time and pid), never 0.
fn session_id() -> u32 {
    let t = now_ns(REALTIME) ^ now_ns(MONOTONIC).rotate_left(32);
    let x = (t ^ (u64::from(std::process::id()) << 17)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((x >> 32) as u32) | 1
}

/// Packet accounting of a ping run (all counts; times in ns).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct PingCounts {
    /// Requests the sender tried: `sent + send_errors`.
    pub attempts: u64,
    /// Requests the kernel accepted.
    pub sent: u64,
    /// Requests the kernel refused (e.g. ECONNREFUSED after an ICMP port unreachable).
    pub send_errors: u64,
    /// Distinct replies matched to a request.
    pub answered: u64,
    /// `sent − answered`: requests never answered (replies older than the tracking window included).
    pub lost: u64,
    /// Answered, but the round trip exceeded `--timeout` (still measured).
    pub late: u64,
    /// Extra copies of a reply already received.
    pub duplicated: u64,
    /// Replies that arrived after a reply to a later request.
    pub reordered: u64,
    /// Replies to requests no longer tracked (older than the window): in `lost`, not measured.
    pub stale: u64,
    /// Datagrams that are not a reply of this run (wrong size, magic, session, unknown sequence).
    pub bad_replies: u64,
    /// ICMP port unreachable reports (ECONNREFUSED): nothing listened at the server's port.
    pub refused: u64,
    pub recv_errors: u64,
    /// Send slots skipped because the sender was more than a period late.
    pub send_overruns: u64,
    /// TX timestamps matched to a request, and requests left without one.
    pub tx_stamps: u64,
    pub tx_missing: u64,
    /// TX timestamps whose key matched no request or gave an implausible latency.
    pub tx_unmatched: u64,
    /// Replies without a kernel RX timestamp of the chosen kind.
    pub rx_missing: u64,
    /// Replies whose server had no RX timestamp.
    pub server_rx_missing: u64,
    /// Samples dropped because the clock went backwards (CLOCK_REALTIME stepped).
    pub clock_anomalies: u64,
    /// Requests sent after the last one answered.
    pub trailing_unanswered: u64,
    /// When the last fresh reply arrived, ns after the start.
    pub last_reply_at_ns: Option<u64>,
}

impl PingCounts {
    /// Fold in the other thread's counts (each thread fills its own fields).
    pub fn add(&mut self, o: &PingCounts) {
        macro_rules! sum {
            ($($f:ident),*) => { $(self.$f += o.$f;)* };
        }
        sum!(
            attempts,
            sent,
            send_errors,
            answered,
            late,
            duplicated,
            reordered,
            stale,
            bad_replies,
            refused,
            recv_errors,
            send_overruns,
            tx_stamps,
            tx_unmatched,
            rx_missing,
            server_rx_missing,
            clock_anomalies,
            trailing_unanswered
        );
        self.last_reply_at_ns = self.last_reply_at_ns.max(o.last_reply_at_ns);
    }

    /// With the figures that follow from both threads' counts filled in.
    pub fn derived(&self) -> PingCounts {
        PingCounts {
            lost: self.sent.saturating_sub(self.answered),
            tx_missing: self.sent.saturating_sub(self.tx_stamps),
            ..self.clone()
        }
    }
}

/// The CLOCK_REALTIME time of `mono`, a CLOCK_MONOTONIC time.
fn realtime_of(mono: u64) -> u64 {
    let (m, r) = (now_ns(MONOTONIC), now_ns(REALTIME));
    (r + mono).saturating_sub(m)
}

/// What a reply turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// The first reply to a request; `reordered`: a later request was answered before.
    Fresh {
        reordered: bool,
    },
    Duplicate,
    /// Its slot already holds a newer request's reply: older than the window.
    Stale,
}

/// Replies seen, by sequence number, in a fixed ring (the receiver's side).
pub struct Replies {
    /// `seq + 1` of the reply that last used each slot (0: none).
    tags: Vec<u64>,
    mask: u64,
    highest: Option<u64>,
    answered: u64,
}

impl Replies {
    /// Track the last `window` requests (rounded up to a power of two).
    pub fn new(window: usize) -> Self {
        let n = window.next_power_of_two().max(2);
        Replies {
            tags: vec![0; n],
            mask: n as u64 - 1,
            highest: None,
            answered: 0,
        }
    }

    /// A reply to request `seq` (known to have been sent).
    #[inline]
    pub fn reply(&mut self, seq: u64) -> Match {
        let tag = &mut self.tags[(seq & self.mask) as usize];
        if *tag == seq + 1 {
            return Match::Duplicate;
        }
        if *tag > seq + 1 {
            return Match::Stale;
        }
        *tag = seq + 1;
        self.answered += 1;
        let reordered = self.highest.is_some_and(|h| seq < h);
        self.highest = Some(self.highest.map_or(seq, |h| h.max(seq)));
        Match::Fresh { reordered }
    }

    pub fn answered(&self) -> u64 {
        self.answered
    }

    /// Of `attempts` requests, those after the highest one answered.
    pub fn trailing_unanswered(&self, attempts: u64) -> u64 {
        attempts.saturating_sub(self.highest.map_or(0, |h| h + 1))
    }
}

/// Send times by the kernel's OPT_ID key (the count of datagrams sent before).
struct TxKeys {
    ring: Vec<(u32, u64)>,
    mask: u32,
    next: u32,
    /// kernel key − our index; re-learnt after a refused send, since kernels
    /// before 6.x consumed a key for some failed sends.
    offset: u32,
    resync: bool,
}

impl TxKeys {
    fn new(window: usize) -> Self {
        let n = window.next_power_of_two().clamp(2, 1 << 31);
        TxKeys {
            ring: vec![(u32::MAX, 0); n],
            mask: n as u32 - 1,
            next: 0,
            offset: 0,
            resync: false,
        }
    }
    #[inline]
    fn sent(&mut self, send_ns: u64) {
        self.ring[(self.next & self.mask) as usize] = (self.next, send_ns);
        self.next = self.next.wrapping_add(1);
    }
    fn failed(&mut self) {
        self.resync = true;
    }
    /// The send time of the datagram with kernel key `key`, once.
    #[inline]
    fn take(&mut self, key: u32) -> Option<u64> {
        if self.resync && self.next > 0 {
            // Drained right after a send: the stamp is the latest datagram's.
            self.offset = key.wrapping_sub(self.next - 1);
            self.resync = false;
        }
        let idx = key.wrapping_sub(self.offset);
        let slot = &mut self.ring[(idx & self.mask) as usize];
        if slot.0 == idx && slot.1 != 0 {
            let t = slot.1;
            slot.1 = 0;
            Some(t)
        } else {
            None
        }
    }
}

/// What the sender publishes for the receiver: requests attempted (published
/// before each send), requests the kernel accepted, and 1 once sending is over.
type Progress = SeqCell<3>;

/// The sending thread: paced sends, TX timestamps from the error queue.
struct Sender {
    sock: TsSocket,
    tx: Recorder,
    keys: TxKeys,
    request: Vec<u8>,
    progress: Arc<Progress>,
    hardware: bool,
    timeout_ns: u64,
    /// The run's start on CLOCK_REALTIME.
    start_real: u64,
    /// Send overruns not yet reported with a TX sample.
    pending_overruns: u64,
    attempts: u64,
    c: PingCounts,
}

impl Sender {
    /// Send request `seq` now.
    #[inline]
    fn send(&mut self, seq: u64) {
        self.attempts = seq + 1;
        // Published before the send: its reply can never outrun it.
        self.progress.write(&[self.attempts, self.c.sent, 0]);
        let t_send = now_ns(REALTIME);
        wire::stamp_request(&mut self.request, seq, t_send);
        match self.sock.send(&self.request) {
            Ok(_) => {
                self.c.sent += 1;
                self.keys.sent(t_send);
            }
            Err(e) => {
                self.keys.failed();
                self.c.send_errors += 1;
                self.c.refused += u64::from(e.kind() == io::ErrorKind::ConnectionRefused);
            }
        }
        // Software TX timestamps are usually queued before send() returns.
        self.take_tx_stamps();
    }

    /// Read every queued TX timestamp; returns how many messages were read.
    #[inline]
    fn take_tx_stamps(&mut self) -> u32 {
        let mut n = 0;
        loop {
            match self.sock.recv_errqueue() {
                Ok(ErrQueue::Empty) => return n,
                Ok(ErrQueue::Sent {
                    key,
                    software_ns,
                    hardware_ns,
                }) => {
                    n += 1;
                    let ts = if self.hardware {
                        hardware_ns
                    } else {
                        software_ns
                    };
                    if ts != 0 {
                        self.on_tx(key, ts);
                    }
                }
                Ok(ErrQueue::Other) => n += 1,
                Err(_) => {
                    self.c.recv_errors += 1;
                    return n;
                }
            }
        }
    }

    #[inline]
    fn on_tx(&mut self, key: u32, ts: u64) {
        match self.keys.take(key) {
            Some(send_ns) if ts >= send_ns && ts - send_ns <= self.timeout_ns => {
                let at = ts.saturating_sub(self.start_real);
                self.tx
                    .record(ts - send_ns, at, std::mem::take(&mut self.pending_overruns));
                self.c.tx_stamps += 1;
            }
            _ => self.c.tx_unmatched += 1,
        }
    }
}

/// The receiving thread: blocks in recvmsg, measures each reply as it lands.
struct Receiver {
    sock: TsSocket,
    rtt: Recorder,
    rx: Recorder,
    server_rx: Recorder,
    turnaround: Recorder,
    replies: Replies,
    reply: Vec<u8>,
    progress: Arc<Progress>,
    session: u32,
    hardware: bool,
    timeout_ns: u64,
    start_real: u64,
    c: PingCounts,
}

impl Receiver {
    #[inline]
    fn on_reply(&mut self, r: &Received, t_recv: u64) {
        if r.truncated || r.len != self.reply.len() {
            self.c.bad_replies += 1;
            return;
        }
        let h = match Header::parse(&self.reply[..r.len]) {
            Ok(h) if h.kind == wire::KIND_REPLY && h.session == self.session => h,
            _ => {
                self.c.bad_replies += 1;
                return;
            }
        };
        let ([attempts, _, _], _) = self.progress.read();
        if h.seq >= attempts {
            self.c.bad_replies += 1;
            return;
        }
        match self.replies.reply(h.seq) {
            Match::Fresh { reordered } => self.c.reordered += u64::from(reordered),
            Match::Duplicate => {
                self.c.duplicated += 1;
                return;
            }
            Match::Stale => {
                self.c.stale += 1;
                return;
            }
        }
        let at = t_recv.saturating_sub(self.start_real);
        self.c.last_reply_at_ns = Some(at);
        // The send time echoed in the reply (session and sequence checked above).
        match t_recv.checked_sub(h.client_send_ns) {
            Some(rtt) => {
                self.rtt.record(rtt, at, 0);
                self.c.late += u64::from(rtt > self.timeout_ns);
            }
            None => self.c.clock_anomalies += 1,
        }
        let kernel = if self.hardware {
            r.hardware_ns
        } else {
            r.software_ns
        };
        if kernel == 0 {
            self.c.rx_missing += 1;
        } else {
            match t_recv.checked_sub(kernel) {
                Some(rx) if rx <= self.timeout_ns => self.rx.record(rx, at, 0),
                _ => self.c.clock_anomalies += 1,
            }
        }
        if h.flags & wire::FLAG_SERVER_RX != 0 {
            self.server_rx.record(h.server_rx_ns, at, 0);
        } else {
            self.c.server_rx_missing += 1;
        }
        self.turnaround.record(h.turnaround_ns, at, 0);
    }
}

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

/// The sender: one request per period on a fixed grid from `plan.start`.
fn send_loop(s: &mut Sender, plan: &Plan, stop: &StopFlag) {
    let loops = plan.loops.unwrap_or(u64::MAX);
    let end = plan.duration.map_or(u64::MAX, |d| plan.start + d);
    let mut next = plan.start;
    let mut seq = 0u64;
    while seq < loops && next < end && !stop.is_set() {
        crate::sys::clock::sleep_until(MONOTONIC, next);
        if stop.is_set() {
            break;
        }
        s.send(seq);
        seq += 1;
        next += plan.period;
        let now = now_ns(MONOTONIC);
        if now >= next + plan.period {
            // More than a period behind: skip the missed slots, stay on the grid.
            let missed = (now - next) / plan.period;
            s.c.send_overruns += missed;
            s.pending_overruns += missed;
            next += missed * plan.period;
        }
    }
    s.progress.write(&[s.attempts, s.c.sent, 1]);
    // Late TX timestamps (hardware, queued devices): wait a little for them.
    let deadline = now_ns(MONOTONIC) + plan.timeout.min(TX_DRAIN_NS);
    while s.c.tx_stamps + s.c.tx_unmatched < s.c.sent && now_ns(MONOTONIC) < deadline {
        if s.take_tx_stamps() == 0 {
            crate::sys::clock::sleep_until(MONOTONIC, now_ns(MONOTONIC) + 1_000_000);
        }
    }
    s.c.attempts = s.attempts;
}

/// The receiver: every reply until the sender is done and the last replies
/// are in, or `--timeout` after that (less after a stop request).
fn receive_loop(r: &mut Receiver, plan: &Plan, stop: &StopFlag) {
    let mut done_at: Option<u64> = None;
    loop {
        match r.sock.recv(&mut r.reply, true) {
            Ok(got) => {
                let t_recv = now_ns(REALTIME);
                r.on_reply(&got, t_recv);
            }
            Err(e) => match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => {}
                io::ErrorKind::ConnectionRefused => r.c.refused += 1,
                _ => {
                    r.c.recv_errors += 1;
                    crate::sys::clock::sleep_until(MONOTONIC, now_ns(MONOTONIC) + 1_000_000);
                }
            },
        }
        let ([_, sent, done], _) = r.progress.read();
        if done == 1 {
            let now = now_ns(MONOTONIC);
            let since = *done_at.get_or_insert(now);
            let wait = if stop.is_set() {
                plan.timeout.min(STOP_DRAIN_NS)
            } else {
                plan.timeout
            };
            if r.replies.answered() >= sent || now >= since + wait {
                break;
            }
        }
    }
    let ([attempts, _, _], _) = r.progress.read();
    r.c.answered = r.replies.answered();
    r.c.trailing_unanswered = r.replies.trailing_unanswered(attempts);
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

/// Run `rtlat net ping`; returns the exit code.
pub fn run(a: &PingArgs, command_line: Vec<String>) -> Result<Outcome> {
    let cfg = PingConfig::from_args(a)?;
    // Before any thread starts (bulk sender, sink): they must inherit the blocked mask.
    crate::sys::signals::block_termination()
        .map_err(|e| Error::env(format!("cannot block signals: {e}")))?;
    let hardware = cfg.timestamps == TimestampsArg::Hardware;
    let stamping = if hardware {
        Stamping::Hardware
    } else {
        Stamping::Software
    };
    let sock = TsSocket::bind(&cfg.bind).map_err(|e| bind_error(&cfg, e))?;
    sock.connect(&cfg.peer).map_err(|e| {
        Error::env(format!(
            "cannot reach {} ({e}); check the address and the route ('ip route get {}')",
            cfg.peer,
            cfg.peer.ip()
        ))
    })?;
    sock.enable_timestamps(stamping.flags(true)).map_err(|e| {
        Error::env(format!(
            "the kernel refused socket timestamps (SO_TIMESTAMPING: {e}); a Linux kernel of 4.0 or later is needed"
        ))
    })?;
    sock.set_buffers(1 << 20);
    sock.set_recv_timeout(RECV_SLICE_NS)
        .map_err(|e| Error::env(format!("cannot set a receive timeout: {e}")))?;
    let local = sock.local_addr().unwrap_or(cfg.bind);
    let rsock = sock
        .try_clone()
        .map_err(|e| Error::env(format!("cannot duplicate the socket: {e}")))?;

    let win = window(cfg.timeout_ns, cfg.period_ns, cfg.control.loops);
    let (mut recs, mut channels) = (Vec::new(), Vec::new());
    for name in SERIES {
        let (rec, col) = recorder::pair(cfg.control.interval_ns);
        recs.push(rec);
        channels.push(Channel::new(
            name.into(),
            cfg.cpu,
            col,
            cfg.control.interval_ns,
        ));
    }
    let mut recs = recs.into_iter();
    let mut next_rec = || {
        recs.next()
            .ok_or_else(|| Error::env("internal: recorder missing"))
    };
    let (rtt, tx, rx, server_rx, turnaround) = (
        next_rec()?,
        next_rec()?,
        next_rec()?,
        next_rec()?,
        next_rec()?,
    );
    let progress = Arc::new(Progress::default());
    let mut sender = Sender {
        sock,
        tx,
        keys: TxKeys::new(win),
        request: wire::request(cfg.size, cfg.session),
        progress: Arc::clone(&progress),
        hardware,
        timeout_ns: cfg.timeout_ns,
        start_real: 0,
        pending_overruns: 0,
        attempts: 0,
        c: PingCounts::default(),
    };
    let mut receiver = Receiver {
        sock: rsock,
        rtt,
        rx,
        server_rx,
        turnaround,
        replies: Replies::new(win),
        reply: vec![0u8; cfg.size],
        progress,
        session: cfg.session,
        hardware,
        timeout_ns: cfg.timeout_ns,
        start_real: 0,
        c: PingCounts::default(),
    };

    let counts: Arc<Mutex<PingCounts>> = Arc::new(Mutex::new(PingCounts::default()));
    let bulk: Arc<Mutex<Option<BulkSender>>> = Arc::new(Mutex::new(None));

    let mut spec = RunSpec::new(
        "net",
        a.output.output_config(),
        cfg.control.clone(),
        command_line,
        cfg.rt.clone(),
    );
    spec.config = serde_json::to_value(&cfg).unwrap_or_default();
    spec.tuning = cfg.rt.tuning(vec![cfg.cpu, cfg.cpu], vec![0, 0]);
    let mut spec = spec.with_loads(a.load.plan()?)?;
    spec.notes.push(format!(
        "ping {} from {local}: {} bytes every {}; tx/rx from kernel {} timestamps, every time on CLOCK_REALTIME",
        cfg.peer,
        cfg.size,
        human_duration(cfg.period_ns),
        if hardware { "hardware" } else { "software" }
    ));
    spec.details.insert(
        "timestamping".into(),
        if hardware { "hardware" } else { "software" }.into(),
    );
    spec.finish = Some(finisher(
        Arc::clone(&counts),
        Arc::clone(&bulk),
        cfg.clone(),
    ));

    let plan = Plan {
        period: cfg.period_ns,
        start: 0,
        loops: cfg.control.loops,
        duration: cfg.control.duration_ns,
        timeout: cfg.timeout_ns,
    };
    let pin = cfg.cpu.filter(|_| cfg.rt.can_pin());
    let (counts_s, counts_r) = (Arc::clone(&counts), Arc::clone(&counts));
    let sending = Worker {
        name: "rtlat-net-tx".into(),
        cpu: pin,
        body: Box::new(move |start: u64, stop: &StopFlag| -> WorkerEnd {
            sender.start_real = realtime_of(start);
            send_loop(&mut sender, &Plan { start, ..plan }, stop);
            sender.tx.finish();
            if let Ok(mut g) = counts_s.lock() {
                g.add(&sender.c);
            }
            WorkerEnd { brk: None }
        }),
    };
    let receiving = Worker {
        name: "rtlat-net-rx".into(),
        cpu: pin,
        body: Box::new(move |start: u64, stop: &StopFlag| -> WorkerEnd {
            receiver.start_real = realtime_of(start);
            receive_loop(&mut receiver, &Plan { start, ..plan }, stop);
            for r in [
                &mut receiver.rtt,
                &mut receiver.rx,
                &mut receiver.server_rx,
                &mut receiver.turnaround,
            ] {
                r.finish();
            }
            if let Ok(mut g) = counts_r.lock() {
                g.add(&receiver.c);
            }
            WorkerEnd { brk: None }
        }),
    };

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
    let saved = a
        .output
        .json
        .as_ref()
        .map(|p| format!("; results written to {}", p.display()))
        .unwrap_or_default();
    if let Some(msg) = peer_gone(&cfg, &c) {
        return Ok(Outcome::EnvironmentFailed(format!("{msg}{saved}")));
    }
    if hardware && c.sent > 0 && c.tx_stamps == 0 && c.rx_missing == c.answered {
        return Ok(Outcome::EnvironmentFailed(format!(
            "no hardware timestamps arrived: enable them on the interface (e.g. hwstamp_ctl -i IF -t 1 -r 1) or use --timestamps software{saved}"
        )));
    }
    Ok(outcome.outcome)
}

/// The one-line verdict when the server stopped answering (exit 3).
fn peer_gone(cfg: &PingConfig, c: &PingCounts) -> Option<String> {
    let attempts = c.sent + c.send_errors;
    let refused = if c.refused > 0 {
        format!(
            ", {} ICMP port unreachable (nothing listens there any more)",
            c.refused
        )
    } else {
        String::new()
    };
    if attempts > 0 && c.answered == 0 {
        return Some(format!(
            "no reply from {} to any of {attempts} packets{refused}: is 'rtlat net serve' running there, and the port open?",
            cfg.peer
        ));
    }
    if c.trailing_unanswered >= GONE_AFTER {
        let since = c
            .last_reply_at_ns
            .map(crate::units::secs)
            .unwrap_or_else(|| "?".into());
        return Some(format!(
            "{} stopped answering after +{since}: the last {} packets got no reply ({} lost of {} sent{refused})",
            cfg.peer, c.trailing_unanswered, c.lost, c.sent
        ));
    }
    None
}

fn finisher(
    counts: Arc<Mutex<PingCounts>>,
    bulk: Arc<Mutex<Option<BulkSender>>>,
    cfg: PingConfig,
) -> engine::Finisher {
    Box::new(move |r: &mut RunResult| {
        let c = counts.lock().map(|g| g.derived()).unwrap_or_default();
        if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(&c) {
            r.details.extend(m);
        }
        r.notes.push(format!(
            "packets: {} sent, {} answered, {} lost, {} late (> {}), {} duplicated, {} reordered{}{}",
            c.sent,
            c.answered,
            c.lost,
            c.late,
            human_duration(cfg.timeout_ns),
            c.duplicated,
            c.reordered,
            if c.send_errors > 0 {
                format!(", {} refused by the kernel", c.send_errors)
            } else {
                String::new()
            },
            if c.bad_replies + c.stale > 0 {
                format!(", {} bad and {} stale replies ignored", c.bad_replies, c.stale)
            } else {
                String::new()
            }
        ));
        if c.tx_missing > 0 || c.rx_missing > 0 {
            r.notes.push(format!(
                "timestamps missing: {} TX, {} RX (those packets have no tx/rx sample)",
                c.tx_missing, c.rx_missing
            ));
        }
        if c.send_overruns > 0 {
            r.notes.push(format!(
                "{} send slots skipped: the sender was more than a period late (counted as tx overruns)",
                c.send_overruns
            ));
        }
        if let Some(sender) = bulk.lock().ok().and_then(|mut g| g.take()) {
            let payload = cfg.bulk.as_ref().map_or(0, |b| b.payload);
            let report = sender.stop();
            let rec = super::bulk_record(&report, payload);
            let requested = report
                .requested_bytes_per_s
                .map(|b| format!("{:.3} MB/s requested, ", b as f64 / 1e6))
                .unwrap_or_else(|| "unthrottled, ".into());
            r.notes.push(format!(
                "bulk UDP to {}: {requested}{:.3} MB/s achieved ({} packets of {payload} bytes in {:.3}s, {} send errors)",
                report.target,
                report.achieved_bytes_per_s / 1e6,
                report.packets,
                report.seconds,
                report.send_errors
            ));
            r.details.insert("bulk".into(), rec.clone());
            r.loads.push(rec);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_classified() {
        let mut t = Replies::new(4);
        assert_eq!(t.reply(1), Match::Fresh { reordered: false });
        assert_eq!(t.reply(1), Match::Duplicate);
        assert_eq!(t.reply(0), Match::Fresh { reordered: true });
        assert_eq!(t.answered(), 2);
        assert_eq!(t.trailing_unanswered(3), 1);
        // seq 6 reuses the slot of 2: a late reply to 2 is stale.
        assert_eq!(t.reply(6), Match::Fresh { reordered: false });
        assert_eq!(t.reply(2), Match::Stale);
        assert_eq!(t.reply(6), Match::Duplicate);
        assert_eq!(t.trailing_unanswered(10), 3);
        assert_eq!(t.answered(), 3);
    }

    #[test]
    fn counts_of_both_threads_add_up() {
        let sender = PingCounts {
            attempts: 12,
            sent: 10,
            send_errors: 2,
            tx_stamps: 9,
            ..Default::default()
        };
        let receiver = PingCounts {
            answered: 7,
            last_reply_at_ns: Some(5),
            trailing_unanswered: 4,
            ..Default::default()
        };
        let mut c = PingCounts::default();
        c.add(&sender);
        c.add(&receiver);
        let d = c.derived();
        assert_eq!((d.sent, d.answered, d.lost, d.tx_missing), (10, 7, 3, 1));
        assert_eq!((d.attempts, d.last_reply_at_ns), (12, Some(5)));
    }

    #[test]
    fn tx_keys_match_once_and_resync_after_a_failed_send() {
        let mut k = TxKeys::new(8);
        k.sent(10);
        k.sent(20);
        assert_eq!(k.take(1), Some(20));
        assert_eq!(k.take(1), None, "matched once");
        assert_eq!(k.take(0), Some(10));
        assert_eq!(k.take(5), None, "never sent");
        // An old kernel used key 2 for a refused send: the next datagram has key 3.
        k.failed();
        k.sent(30);
        assert_eq!(k.take(3), Some(30));
        k.sent(40);
        assert_eq!(k.take(4), Some(40));
    }

    #[test]
    fn window_covers_two_timeouts_within_bounds() {
        assert_eq!(window(1_000_000_000, 100_000, None), 20_064);
        assert_eq!(window(1_000_000_000, 1_000, None), MAX_WINDOW);
        assert_eq!(window(1_000_000, 1_000_000, None), MIN_WINDOW);
        assert_eq!(window(1_000_000_000, 100_000, Some(5000)), 5000);
    }

    #[test]
    fn peer_gone_verdicts() {
        let cfg_peer: SocketAddr = "10.0.0.1:7357".parse().unwrap();
        let a = PingCounts {
            sent: 100,
            answered: 0,
            lost: 100,
            trailing_unanswered: 100,
            ..Default::default()
        };
        let cfg = test_cfg(cfg_peer);
        assert!(peer_gone(&cfg, &a).unwrap().contains("any of 100"));
        let b = PingCounts {
            sent: 100,
            answered: 60,
            lost: 40,
            trailing_unanswered: 40,
            last_reply_at_ns: Some(1_500_000_000),
            ..Default::default()
        };
        assert!(peer_gone(&cfg, &b).unwrap().contains("after +1.500s"));
        let ok = PingCounts {
            sent: 100,
            answered: 97,
            lost: 3,
            trailing_unanswered: 1,
            ..Default::default()
        };
        assert_eq!(peer_gone(&cfg, &ok), None);
    }

    fn test_cfg(peer: SocketAddr) -> PingConfig {
        PingConfig {
            role: "ping",
            target: peer.to_string(),
            peer,
            bind: "0.0.0.0:0".parse().unwrap(),
            period_ns: 1_000_000,
            rate_per_s: 1000.0,
            size: 64,
            control: RunControl {
                loops: Some(100),
                interval_ns: 1_000_000_000,
                save_every_ns: 5_000_000_000,
                ..RunControl::default()
            },
            timeout_ns: 1_000_000_000,
            timestamps: TimestampsArg::Software,
            clock: "realtime",
            session: 1,
            cpu: None,
            bulk: None,
            rt: RtConfig::unprivileged(),
        }
    }
}
