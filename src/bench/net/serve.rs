//! `rtlat net serve`: a real-time UDP reflector.
//!
//! One thread blocks in `recvmsg`, takes CLOCK_REALTIME right after it
//! returns, checks the datagram, rewrites it in place into its reply (same
//! length) carrying the server's RX latency (user receive − kernel RX
//! timestamp) and turnaround (user receive → just before `sendto`), and sends
//! it back to the address it came from. Anything else is counted and dropped.

use super::wire::{self, Bad, Header};
use super::{ServeArgs, TimestampsArg};
use crate::engine::{self, Channel, RunControl, RunSpec, Worker, WorkerEnd};
use crate::engine::{RtConfig, StopFlag};
use crate::error::{Error, Outcome, Result};
use crate::load::net::UdpSink;
use crate::result::RunResult;
use crate::stats::recorder::{self, Recorder};
use crate::sys::clock::now_ns;
use crate::sys::net::{Stamping, TsSocket};
use serde::Serialize;
use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

const REALTIME: libc::clockid_t = libc::CLOCK_REALTIME;
const MONOTONIC: libc::clockid_t = libc::CLOCK_MONOTONIC;
/// How long one blocking receive waits before the stop flag is checked again.
const RECV_SLICE_NS: u64 = 50_000_000;
/// A server RX latency above this is a clock step, not a latency.
const IMPLAUSIBLE_NS: u64 = 10_000_000_000;

/// Validated settings of a serve run.
#[derive(Debug, Clone, Serialize)]
pub struct ServeConfig {
    pub role: &'static str,
    pub listen: SocketAddr,
    /// The bulk sink's address (`None`: `--no-sink`).
    pub sink: Option<SocketAddr>,
    pub max_size: usize,
    /// Requests to answer (`--count`).
    #[serde(flatten)]
    pub control: RunControl,
    pub timestamps: TimestampsArg,
    pub clock: &'static str,
    pub cpu: Option<usize>,
    #[serde(skip)]
    pub rt: RtConfig,
}

impl ServeConfig {
    pub fn from_args(a: &ServeArgs) -> Result<Self> {
        super::check_loads(&a.load)?;
        super::check_cpu(a.cpu)?;
        let text = a.listen.trim();
        let listen = match text.parse::<u16>() {
            Ok(port) => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port),
            Err(_) => super::resolve(text, "--listen")?,
        };
        if a.max_size < wire::HEADER || a.max_size > wire::MAX_DATAGRAM {
            return Err(Error::usage(format!(
                "--max-size {} is outside {}..={} bytes",
                a.max_size,
                wire::HEADER,
                wire::MAX_DATAGRAM
            )));
        }
        let sink = if a.no_sink {
            None
        } else if listen.port() == 0 {
            Some(SocketAddr::new(listen.ip(), 0))
        } else {
            let port = listen.port().checked_add(1).ok_or_else(|| {
                Error::usage("--listen port 65535 leaves no port for the bulk sink: choose a lower port or pass --no-sink")
            })?;
            Some(SocketAddr::new(listen.ip(), port))
        };
        Ok(ServeConfig {
            role: "serve",
            listen,
            sink,
            max_size: a.max_size,
            control: a.output.control(a.duration, a.count, None),
            timestamps: a.timestamps,
            clock: "realtime",
            cpu: a.cpu,
            rt: a.rt.to_config(1_000_000)?,
        })
    }
}

/// What the server saw (counts).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct ServeCounts {
    /// Valid requests, and replies the kernel accepted.
    pub requests: u64,
    pub replied: u64,
    pub send_errors: u64,
    /// Datagrams ignored, by reason, and their total.
    pub short: u64,
    pub foreign: u64,
    pub bad_version: u64,
    pub bad_length: u64,
    pub malformed: u64,
    pub oversized: u64,
    pub ignored: u64,
    pub recv_errors: u64,
    /// Requests without a kernel RX timestamp of the chosen kind.
    pub rx_missing: u64,
    pub clock_anomalies: u64,
    /// Bytes the bulk sink received.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sink_bytes: Option<u64>,
}

struct Server {
    sock: TsSocket,
    server_rx: Recorder,
    turnaround: Recorder,
    buf: Vec<u8>,
    hardware: bool,
    start_real: u64,
    c: ServeCounts,
}

impl Server {
    /// Handle one received datagram; `t_recv` was taken right after recvmsg returned.
    #[inline]
    fn on_datagram(&mut self, r: &crate::sys::net::Received, t_recv: u64) {
        let c = &mut self.c;
        if r.truncated {
            c.oversized += 1;
            c.ignored += 1;
            return;
        }
        let len = r.len.min(self.buf.len());
        let h: Header = match Header::parse(&self.buf[..len]) {
            Ok(h) if h.kind == wire::KIND_REQUEST => h,
            Ok(_) => {
                c.malformed += 1;
                c.ignored += 1;
                return;
            }
            Err(bad) => {
                match bad {
                    Bad::Short => c.short += 1,
                    Bad::Foreign => c.foreign += 1,
                    Bad::Version => c.bad_version += 1,
                    Bad::Length => c.bad_length += 1,
                    Bad::Malformed => c.malformed += 1,
                }
                c.ignored += 1;
                return;
            }
        };
        c.requests += 1;
        let _ = h;
        let at = t_recv.saturating_sub(self.start_real);
        let kernel = if self.hardware {
            r.hardware_ns
        } else {
            r.software_ns
        };
        let (flags, server_rx) = match t_recv.checked_sub(kernel) {
            _ if kernel == 0 => {
                c.rx_missing += 1;
                (0, 0)
            }
            Some(d) if d <= IMPLAUSIBLE_NS => {
                let hw = if self.hardware {
                    wire::FLAG_SERVER_RX_HARDWARE
                } else {
                    0
                };
                (wire::FLAG_SERVER_RX | hw, d)
            }
            _ => {
                c.clock_anomalies += 1;
                (0, 0)
            }
        };
        let buf = &mut self.buf[..len];
        wire::make_reply(buf, flags, server_rx);
        let t_send = now_ns(REALTIME);
        let turnaround = t_send.saturating_sub(t_recv);
        wire::set_turnaround(buf, turnaround);
        // Only ever to the sender, and never more bytes than it sent.
        match self.sock.send_to(buf, &r.from) {
            Ok(_) => self.c.replied += 1,
            Err(_) => self.c.send_errors += 1,
        }
        if flags & wire::FLAG_SERVER_RX != 0 {
            self.server_rx.record(server_rx, at, 0);
        }
        self.turnaround.record(turnaround, at, 0);
    }
}

fn measure(s: &mut Server, loops: Option<u64>, end: Option<u64>, stop: &StopFlag) {
    let loops = loops.unwrap_or(u64::MAX);
    let end = end.unwrap_or(u64::MAX);
    while s.c.requests < loops && !stop.is_set() && now_ns(MONOTONIC) < end {
        match s.sock.recv(&mut s.buf, true) {
            Ok(r) => {
                let t_recv = now_ns(REALTIME);
                s.on_datagram(&r, t_recv);
            }
            Err(e) => match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => {}
                _ => {
                    s.c.recv_errors += 1;
                    // Never spin on a persistent error.
                    crate::sys::clock::sleep_until(MONOTONIC, now_ns(MONOTONIC) + 1_000_000);
                }
            },
        }
    }
}

fn bind_error(what: &str, addr: &SocketAddr, e: io::Error) -> Error {
    match e.raw_os_error() {
        Some(libc::EADDRINUSE) => Error::usage(format!(
            "{what} {addr} is in use (another rtlat net serve?); choose another port with --listen{}",
            if what == "bulk sink" {
                " or pass --no-sink"
            } else {
                ""
            }
        )),
        Some(libc::EADDRNOTAVAIL) => Error::usage(format!(
            "{what} {addr}: no interface has this address; check 'ip addr'"
        )),
        Some(libc::EACCES) => Error::env(format!(
            "{what} {addr}: ports below 1024 need privilege; run as root or choose a port above 1023"
        )),
        Some(libc::EAFNOSUPPORT) => Error::env(format!(
            "{what} {addr}: this IP version is not available on this host"
        )),
        _ => Error::env(format!("cannot listen on {addr} ({what}): {e}")),
    }
}

/// Run `rtlat net serve`; returns the exit code.
pub fn run(a: &ServeArgs, command_line: Vec<String>) -> Result<Outcome> {
    let cfg = ServeConfig::from_args(a)?;
    // Before any thread starts (bulk sender, sink): they must inherit the blocked mask.
    crate::sys::signals::block_termination()
        .map_err(|e| Error::env(format!("cannot block signals: {e}")))?;
    let hardware = cfg.timestamps == TimestampsArg::Hardware;
    let stamping = if hardware {
        Stamping::Hardware
    } else {
        Stamping::Software
    };
    let sock = TsSocket::bind(&cfg.listen).map_err(|e| bind_error("--listen", &cfg.listen, e))?;
    sock.enable_timestamps(stamping.flags(false)).map_err(|e| {
        Error::env(format!(
            "the kernel refused socket timestamps (SO_TIMESTAMPING: {e}); a Linux kernel of 4.0 or later is needed"
        ))
    })?;
    sock.set_recv_timeout(RECV_SLICE_NS)
        .map_err(|e| Error::env(format!("cannot set a receive timeout: {e}")))?;
    sock.set_buffers(1 << 20);
    let listen = sock.local_addr().unwrap_or(cfg.listen);
    let sink = match cfg.sink {
        Some(addr) => Some(UdpSink::bind(addr).map_err(|e| match e {
            Error::Environment { msg, .. } if msg.contains("in use") => Error::usage(format!(
                "bulk sink {addr} is in use (another rtlat net serve?); choose another --listen port or pass --no-sink"
            )),
            other => other,
        })?),
        None => None,
    };
    let sink_addr = sink.as_ref().map(|s| s.local_addr());
    println!(
        "rtlat net serve: listening on {listen}{}",
        sink_addr
            .map(|s| format!(" (bulk sink on {s})"))
            .unwrap_or_default()
    );
    let _ = io::stdout().flush();

    let (server_rx, c1) = recorder::pair(cfg.control.interval_ns);
    let (turnaround, c2) = recorder::pair(cfg.control.interval_ns);
    let channels = vec![
        Channel::new("server_rx".into(), cfg.cpu, c1, cfg.control.interval_ns),
        Channel::new("turnaround".into(), cfg.cpu, c2, cfg.control.interval_ns),
    ];
    let mut server = Server {
        sock,
        server_rx,
        turnaround,
        buf: vec![0u8; cfg.max_size],
        hardware,
        start_real: 0,
        c: ServeCounts::default(),
    };

    let counts: Arc<Mutex<Option<ServeCounts>>> = Arc::new(Mutex::new(None));
    let sink = Arc::new(Mutex::new(sink));
    let mut spec = RunSpec::new(
        "net",
        a.output.output_config(),
        cfg.control.clone(),
        command_line,
        cfg.rt.clone(),
    );
    let mut config = serde_json::to_value(&cfg).unwrap_or_default();
    if let Some(m) = config.as_object_mut() {
        m.insert("listen".into(), listen.to_string().into());
        m.insert("sink".into(), sink_addr.map(|s| s.to_string()).into());
    }
    spec.config = config;
    spec.tuning = cfg.rt.tuning(vec![cfg.cpu], vec![0]);
    let mut spec = spec.with_loads(a.load.plan()?)?;
    spec.details.insert(
        "timestamping".into(),
        if hardware { "hardware" } else { "software" }.into(),
    );
    spec.notes.push(format!(
        "serve on {listen}: server_rx from kernel {} RX timestamps, every time on CLOCK_REALTIME",
        if hardware { "hardware" } else { "software" }
    ));
    let (counts_f, sink_f) = (Arc::clone(&counts), Arc::clone(&sink));
    spec.finish = Some(Box::new(move |r: &mut RunResult| {
        let mut c = counts_f
            .lock()
            .ok()
            .and_then(|g| g.clone())
            .unwrap_or_default();
        if let Some(s) = sink_f.lock().ok().and_then(|mut g| g.take()) {
            c.sink_bytes = Some(s.stop());
        }
        r.notes.push(format!(
            "requests: {} answered of {} valid ({} send errors); ignored {} (short {}, foreign {}, version {}, length {}, malformed {}, oversized {}){}",
            c.replied,
            c.requests,
            c.send_errors,
            c.ignored,
            c.short,
            c.foreign,
            c.bad_version,
            c.bad_length,
            c.malformed,
            c.oversized,
            c.sink_bytes
                .map(|b| format!("; bulk sink received {b} bytes"))
                .unwrap_or_default()
        ));
        if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(&c) {
            r.details.extend(m);
        }
    }));

    let (loops, duration) = (cfg.control.loops, cfg.control.duration_ns);
    let counts_w = Arc::clone(&counts);
    let worker = Worker {
        name: "rtlat-net-serve".into(),
        cpu: cfg.cpu.filter(|_| cfg.rt.can_pin()),
        body: Box::new(move |start: u64, stop: &StopFlag| -> WorkerEnd {
            let (m, r) = (now_ns(MONOTONIC), now_ns(REALTIME));
            server.start_real = (r + start).saturating_sub(m);
            measure(&mut server, loops, duration.map(|d| start + d), stop);
            server.server_rx.finish();
            server.turnaround.finish();
            if let Ok(mut g) = counts_w.lock() {
                *g = Some(server.c.clone());
            }
            WorkerEnd { brk: None }
        }),
    };
    let outcome = engine::execute(spec, channels, vec![worker], MONOTONIC);
    if let Some(s) = sink.lock().ok().and_then(|mut g| g.take()) {
        s.stop();
    }
    Ok(outcome?.outcome)
}
