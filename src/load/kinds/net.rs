//! `net`: bulk UDP traffic at a target rate (`net:4MB/s`, MB = 10^6 bytes) or
//! as fast as possible (`net:flood`, the `ping -f` role), to rtlat's own
//! loopback sink or to `--load-target HOST:PORT`.
//!
//! [`BulkSender`] and [`UdpSink`] are also used by `rtlat net --bulk`. The
//! sender runs on its own thread at SCHED_OTHER and paces itself with absolute
//! sleeps on CLOCK_MONOTONIC: packet k is due at start + k·payload/rate, so a
//! late wake-up is caught up by the next burst and the average rate stays exact
//! (after a stall of more than 100 ms the schedule restarts instead of bursting).

use crate::error::{Error, Result};
use crate::load::args::{key_size, object, parse_size, set, ArgResult, Args, LoadShape};
use crate::load::worker::{Failure, PoolTotals, Reading};
use crate::load::{About, Load, LoadContext, Progress};
use crate::stats::seqlock::SeqCell;
use crate::sys::{self, clock};
use serde_json::{json, Map, Value};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::unix::thread::JoinHandleExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// `net[:RATE|flood][:payload=BYTES]`.
#[derive(Debug, Clone, PartialEq)]
pub struct NetParams {
    /// Bytes per second; `None` is flood (as fast as possible).
    pub rate: Option<u64>,
    pub payload: usize,
}

pub const DEFAULT_NET_RATE: u64 = 4_000_000;
pub const DEFAULT_PAYLOAD: usize = 1024;

impl NetParams {
    /// Every parameter, for the result.
    pub fn to_map(&self) -> Map<String, Value> {
        object(json!({
            "mode": if self.rate.is_some() { "rate" } else { "flood" },
            "bytes_per_s": self.rate, "payload_bytes": self.payload,
        }))
    }
}

pub const KIND: LoadShape = LoadShape::new("net", "net:4MB/s or net:flood")
    .counting("")
    .rated();

pub fn parse(mut a: Args<'_>) -> ArgResult<NetParams> {
    let mut payload = None;
    for (k, v) in std::mem::take(&mut a.keys) {
        match k {
            "rate" => {
                if v.eq_ignore_ascii_case("flood") {
                    set(&mut a.rate, None, "rate")?
                } else {
                    let r = v
                        .strip_suffix("/s")
                        .ok_or_else(|| format!("rate='{v}' is not a rate such as 4MB/s"))
                        .and_then(|r| parse_size(r).map_err(|e| format!("rate: {e}")))?;
                    if r == 0 {
                        return Err("the rate must be above 0 bytes/s".into());
                    }
                    set(&mut a.rate, Some(r), "rate")?
                }
            }
            "payload" => {
                let p = key_size(k, v)?;
                if !(1..=65507).contains(&p) {
                    return Err(format!("payload={v}: a UDP payload is 1 to 65507 bytes"));
                }
                set(&mut payload, p as usize, k)?
            }
            _ => return Err(a.unknown_key(k, "rate, payload")),
        }
    }
    Ok(NetParams {
        rate: a.rate.unwrap_or(Some(DEFAULT_NET_RATE)),
        payload: payload.unwrap_or(DEFAULT_PAYLOAD),
    })
}

/// What and how fast to send.
#[derive(Debug, Clone)]
pub struct BulkConfig {
    pub target: SocketAddr,
    /// Bytes of UDP payload per second; `None` floods (as fast as possible).
    pub bytes_per_s: Option<u64>,
    /// Payload bytes per datagram (1..=65507) [default 1024].
    pub payload: usize,
}

impl BulkConfig {
    /// Paced at `bytes_per_s` (None: flood) with the default payload.
    pub fn new(target: SocketAddr, bytes_per_s: Option<u64>) -> Self {
        BulkConfig {
            target,
            bytes_per_s,
            payload: DEFAULT_PAYLOAD,
        }
    }
}

/// What a [`BulkSender`] sent.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct BulkReport {
    pub target: String,
    pub requested_bytes_per_s: Option<u64>,
    /// Payload bytes sent successfully.
    pub bytes: u64,
    pub packets: u64,
    pub send_errors: u64,
    pub seconds: f64,
    pub achieved_bytes_per_s: f64,
}

/// Counts so far of a running sender.
#[derive(Debug, Clone, Copy, Default)]
pub struct BulkProgress {
    pub bytes: u64,
    pub packets: u64,
    pub send_errors: u64,
}

struct SenderEnd {
    progress: BulkProgress,
    seconds: f64,
    cpu_ns: u64,
}

/// A thread sending UDP datagrams to one target until stopped.
pub struct BulkSender {
    cfg: BulkConfig,
    stop: Arc<AtomicBool>,
    counts: Arc<SeqCell<3>>,
    handle: JoinHandle<SenderEnd>,
}

/// Below this, a sleep is not worth its wake-up: send the next packets now.
const MIN_SLEEP_NS: u64 = 20_000;
/// Behind schedule by more than this: restart the schedule rather than burst.
const MAX_CATCH_UP_NS: u64 = 100_000_000;

fn send_loop(
    socket: &UdpSocket,
    cfg: &BulkConfig,
    stop: &AtomicBool,
    counts: &SeqCell<3>,
) -> BulkProgress {
    let data = vec![0xa5u8; cfg.payload];
    let mut p = BulkProgress::default();
    let send = |p: &mut BulkProgress| match socket.send(&data) {
        Ok(n) => {
            p.bytes += n as u64;
            p.packets += 1;
        }
        Err(_) => p.send_errors += 1,
    };
    let publish = |p: &BulkProgress| counts.write(&[p.bytes, p.packets, p.send_errors]);
    let c = libc::CLOCK_MONOTONIC;
    match cfg.bytes_per_s {
        None => {
            let mut n = 0u32;
            while !stop.load(Ordering::Relaxed) {
                send(&mut p);
                n = n.wrapping_add(1);
                if n % 64 == 0 {
                    publish(&p);
                }
            }
        }
        Some(rate) => {
            // Packet k after `base` is due at base + k * payload / rate seconds.
            let ns_per_packet = |k: u64| -> u64 {
                (k as u128 * cfg.payload as u128 * 1_000_000_000 / rate as u128) as u64
            };
            let (mut base, mut k) = (clock::now_ns(c), 0u64);
            while !stop.load(Ordering::Relaxed) {
                let now = clock::now_ns(c);
                if now > base + ns_per_packet(k) + MAX_CATCH_UP_NS {
                    (base, k) = (now, 0);
                }
                while base + ns_per_packet(k) <= now && !stop.load(Ordering::Relaxed) {
                    send(&mut p);
                    k += 1;
                }
                publish(&p);
                let next = base + ns_per_packet(k);
                let now = clock::now_ns(c);
                if next > now + MIN_SLEEP_NS {
                    // Wake at most every 100 ms to notice a stop request.
                    clock::sleep_until(c, next.min(now + 100_000_000));
                } else if next > now {
                    std::thread::yield_now();
                }
            }
        }
    }
    publish(&p);
    p
}

fn unspecified_for(target: &SocketAddr) -> SocketAddr {
    match target.ip() {
        IpAddr::V4(_) => SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 0),
        IpAddr::V6(_) => SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), 0),
    }
}

fn other_thread() -> std::result::Result<(), String> {
    sys::sched::set_current(sys::sched::Sched::Other)
        .map_err(|e| format!("cannot set SCHED_OTHER: {e}"))
}

impl BulkSender {
    /// Start sending to `cfg.target` from a new thread at SCHED_OTHER.
    pub fn start(cfg: BulkConfig) -> Result<BulkSender> {
        if !(1..=65507).contains(&cfg.payload) {
            return Err(Error::usage(format!(
                "UDP payload of {} bytes: use 1 to 65507",
                cfg.payload
            )));
        }
        if cfg.bytes_per_s == Some(0) {
            return Err(Error::usage(
                "bulk rate 0 bytes/s: give a positive rate or flood",
            ));
        }
        let socket = UdpSocket::bind(unspecified_for(&cfg.target))
            .and_then(|s| s.connect(cfg.target).map(|()| s))
            .map_err(|e| {
                Error::env(format!("cannot send UDP to {}: {e}", cfg.target)).because(e)
            })?;
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(SeqCell::<3>::default());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let handle = {
            let (cfg, stop, counts) = (cfg.clone(), Arc::clone(&stop), Arc::clone(&counts));
            std::thread::Builder::new()
                .name("ld-udp-send".into())
                .spawn(move || {
                    let ready = other_thread();
                    let ok = ready.is_ok();
                    let _ = ready_tx.send(ready);
                    let t0 = clock::now_ns(libc::CLOCK_MONOTONIC);
                    let progress = if ok {
                        send_loop(&socket, &cfg, &stop, &counts)
                    } else {
                        BulkProgress::default()
                    };
                    SenderEnd {
                        progress,
                        seconds: (clock::now_ns(libc::CLOCK_MONOTONIC) - t0) as f64 / 1e9,
                        cpu_ns: sys::thread_cpu_time_ns(),
                    }
                })
                .map_err(|e| {
                    Error::env(format!("cannot start the UDP sender thread: {e}")).because(e)
                })?
        };
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(BulkSender {
                cfg,
                stop,
                counts,
                handle,
            }),
            Ok(Err(e)) => {
                let _ = handle.join();
                Err(Error::env(format!("UDP sender: {e}")))
            }
            Err(_) => Err(Error::env("the UDP sender thread ended at start")),
        }
    }

    /// What has been sent so far.
    pub fn progress(&self) -> BulkProgress {
        let ([bytes, packets, send_errors], _) = self.counts.read();
        BulkProgress {
            bytes,
            packets,
            send_errors,
        }
    }

    /// CPU time of the sender thread so far (None once it has ended).
    pub fn cpu_time_ns(&self) -> Option<u64> {
        if self.handle.is_finished() {
            return None;
        }
        sys::process::thread_cpu_ns(self.handle.as_pthread_t())
    }

    /// True if the sender thread ended without being stopped (it panicked).
    pub fn has_died(&self) -> bool {
        self.handle.is_finished()
    }

    /// Stop sending and report.
    pub fn stop(self) -> BulkReport {
        self.stop_with_cpu().0
    }

    /// Stop sending; the report and the sender thread's CPU time in ns.
    pub fn stop_with_cpu(self) -> (BulkReport, u64) {
        self.stop.store(true, Ordering::Relaxed);
        let (progress, seconds, cpu_ns) = match self.handle.join() {
            Ok(end) => (end.progress, end.seconds, end.cpu_ns),
            Err(_) => {
                let ([bytes, packets, send_errors], _) = self.counts.read();
                let p = BulkProgress {
                    bytes,
                    packets,
                    send_errors,
                };
                (p, 0.0, 0)
            }
        };
        let report = BulkReport {
            target: self.cfg.target.to_string(),
            requested_bytes_per_s: self.cfg.bytes_per_s,
            bytes: progress.bytes,
            packets: progress.packets,
            send_errors: progress.send_errors,
            seconds,
            achieved_bytes_per_s: if seconds > 0.0 {
                progress.bytes as f64 / seconds
            } else {
                0.0
            },
        };
        (report, cpu_ns)
    }
}

/// A UDP receiver that counts and discards what arrives.
pub struct UdpSink {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    counts: Arc<SeqCell<2>>,
    handle: JoinHandle<(u64, u64)>,
}

impl UdpSink {
    /// Bind to `addr` (port 0: any free port) and receive on a thread at SCHED_OTHER.
    pub fn bind(addr: SocketAddr) -> Result<UdpSink> {
        let socket = UdpSocket::bind(addr).map_err(|e| {
            Error::env(format!("cannot bind the UDP sink to {addr}: {e}")).because(e)
        })?;
        let addr = socket
            .local_addr()
            .map_err(|e| Error::env(format!("UDP sink: {e}")).because(e))?;
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .map_err(|e| Error::env(format!("UDP sink: {e}")).because(e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(SeqCell::<2>::default());
        let handle = {
            let (stop, counts) = (Arc::clone(&stop), Arc::clone(&counts));
            std::thread::Builder::new()
                .name("ld-udp-sink".into())
                .spawn(move || {
                    let _ = other_thread();
                    let mut buf = vec![0u8; 65536];
                    let (mut bytes, mut packets) = (0u64, 0u64);
                    while !stop.load(Ordering::Relaxed) {
                        if let Ok(n) = socket.recv(&mut buf) {
                            bytes += n as u64;
                            packets += 1;
                        }
                        counts.write(&[bytes, packets]);
                    }
                    (bytes, sys::thread_cpu_time_ns())
                })
                .map_err(|e| {
                    Error::env(format!("cannot start the UDP sink thread: {e}")).because(e)
                })?
        };
        Ok(UdpSink {
            addr,
            stop,
            counts,
            handle,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Bytes and datagrams received so far.
    pub fn received(&self) -> (u64, u64) {
        let ([bytes, packets], _) = self.counts.read();
        (bytes, packets)
    }

    /// CPU time of the sink thread so far (None once it has ended).
    pub fn cpu_time_ns(&self) -> Option<u64> {
        if self.handle.is_finished() {
            return None;
        }
        sys::process::thread_cpu_ns(self.handle.as_pthread_t())
    }

    /// Stop receiving; the bytes received.
    pub fn stop(self) -> u64 {
        self.stop_with_cpu().0
    }

    /// Stop receiving; the bytes received and the sink thread's CPU time in ns.
    pub fn stop_with_cpu(self) -> (u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the receiver now rather than at its next timeout: an empty datagram.
        let to = match self.addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => {
                SocketAddr::new(Ipv4Addr::LOCALHOST.into(), self.addr.port())
            }
            IpAddr::V6(ip) if ip.is_unspecified() => {
                SocketAddr::new(Ipv6Addr::LOCALHOST.into(), self.addr.port())
            }
            _ => self.addr,
        };
        if let Ok(s) = UdpSocket::bind(unspecified_for(&to)) {
            let _ = s.send_to(&[], to);
        }
        self.handle
            .join()
            .unwrap_or_else(|_| (self.counts.read().0[0], 0))
    }
}

/// The `net` load: a [`BulkSender`] and, without `--load-target`, a loopback [`UdpSink`].
pub struct NetLoad {
    params: NetParams,
    target: Option<SocketAddr>,
    sender: Option<BulkSender>,
    sink: Option<UdpSink>,
    done: Option<Progress>,
    cpu_ns: u64,
    own_sink: bool,
}

impl NetLoad {
    pub fn new(params: NetParams) -> Self {
        NetLoad {
            params,
            target: None,
            sender: None,
            sink: None,
            done: None,
            cpu_ns: 0,
            own_sink: false,
        }
    }

    fn progress_of(
        &mut self,
        sent: BulkProgress,
        received: Option<u64>,
        failed: Vec<Failure>,
    ) -> Progress {
        let mut p = Progress::of(PoolTotals {
            ops: sent.packets,
            cpu_ns: self.cpu_ns,
            started: 1,
            failed,
        })
        .with_bytes(sent.bytes);
        p.extra
            .insert("send_errors".into(), sent.send_errors.into());
        if let Some(r) = received {
            p.extra.insert("received_bytes".into(), r.into());
        }
        p
    }
}

impl Load for NetLoad {
    fn about(&self) -> About {
        let sink = if self.own_sink {
            "rtlat loopback sink"
        } else {
            "external"
        };
        About::bytes("net", 1, self.params.to_map())
            .with("target", self.target.map(|t| t.to_string()))
            .with("sink", sink)
    }
    fn start(&mut self, ctx: &LoadContext) -> Result<()> {
        let target = match ctx.target {
            Some(t) => t,
            None => {
                let sink = UdpSink::bind(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 0))?;
                let t = sink.local_addr();
                self.sink = Some(sink);
                self.own_sink = true;
                t
            }
        };
        self.target = Some(target);
        self.sender = Some(BulkSender::start(BulkConfig {
            target,
            bytes_per_s: self.params.rate,
            payload: self.params.payload,
        })?);
        Ok(())
    }
    fn read(&mut self, reading: Reading) -> Progress {
        if let Some(done) = &self.done {
            return done.clone();
        }
        match reading {
            Reading::SoFar => self.so_far(),
            Reading::Final => self.finish(),
        }
    }
}

impl NetLoad {
    /// The figures while running.
    fn so_far(&mut self) -> Progress {
        let Some(sender) = &self.sender else {
            return Progress::default();
        };
        let sent = sender.progress();
        let mut failed = Vec::new();
        if sender.has_died() {
            failed.push(Failure::died(0, "the UDP sender thread ended"));
        }
        self.cpu_ns = sender.cpu_time_ns().unwrap_or(0)
            + self
                .sink
                .as_ref()
                .and_then(UdpSink::cpu_time_ns)
                .unwrap_or(0);
        let received = self.sink.as_ref().map(|s| s.received().0);
        self.progress_of(sent, received, failed)
    }
    /// Stop the sender and the sink; the final figures, kept.
    fn finish(&mut self) -> Progress {
        let Some(sender) = self.sender.take() else {
            return Progress::default();
        };
        let died = sender.has_died();
        let (report, sender_cpu) = sender.stop_with_cpu();
        let stopped_ns = clock::now_ns(libc::CLOCK_MONOTONIC);
        let (received, sink_cpu) = match self.sink.take() {
            Some(s) => {
                // Let the last datagrams arrive before the sink stops counting.
                std::thread::sleep(Duration::from_millis(20));
                let (b, c) = s.stop_with_cpu();
                (Some(b), c)
            }
            None => (None, 0),
        };
        self.cpu_ns = sender_cpu + sink_cpu;
        let failed = if died {
            vec![Failure::died(0, "the UDP sender thread ended")]
        } else {
            Vec::new()
        };
        let sent = BulkProgress {
            bytes: report.bytes,
            packets: report.packets,
            send_errors: report.send_errors,
        };
        let mut p = self.progress_of(sent, received, failed);
        p.stopped_ns = Some(stopped_ns);
        self.done = Some(p.clone());
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paced_sender_hits_its_rate_into_the_sink() {
        let sink = UdpSink::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let sender =
            BulkSender::start(BulkConfig::new(sink.local_addr(), Some(1_000_000))).unwrap();
        std::thread::sleep(Duration::from_millis(500));
        assert!(sender.progress().packets > 0);
        let report = sender.stop();
        std::thread::sleep(Duration::from_millis(20));
        let received = sink.stop();
        let ratio = report.achieved_bytes_per_s / 1e6;
        assert!((0.9..1.1).contains(&ratio), "{report:?}");
        assert_eq!(report.send_errors, 0);
        assert!(
            received > 0 && received <= report.bytes,
            "{received} vs {report:?}"
        );
        assert_eq!(report.bytes, report.packets * 1024);
    }

    #[test]
    fn bad_configs_are_usage_errors() {
        let t: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let mut c = BulkConfig::new(t, Some(0));
        assert_eq!(BulkSender::start(c.clone()).err().unwrap().exit_code(), 2);
        c.bytes_per_s = None;
        c.payload = 0;
        assert_eq!(BulkSender::start(c).err().unwrap().exit_code(), 2);
    }
}
