//! `rtlat net serve`: a real-time UDP reflector.
//!
//! One thread blocks in `recvmsg`, takes CLOCK_REALTIME right after it
//! returns, checks the datagram, rewrites it in place into its reply (same
//! length) carrying the server's RX latency (user receive − kernel RX
//! timestamp) and turnaround (user receive → just before `sendto`), and sends
//! it back to the address it came from. Anything else is counted and dropped.

use super::wire::{self, Bad, Header};
use super::{back_off, block_signals, prepare_socket, realtime_of, receiving, run_spec, Common};
use super::{MONOTONIC, REALTIME};
use crate::bench::threads::{writing, Slot, Threads};
use crate::engine::{Finisher, RunSpec, StopFlag};
use crate::error::{Error, Outcome, Result};
use crate::load::net::UdpSink;
use crate::result::details::net::{NetDetails, NetSide, ServeCounts};
use crate::result::details::Details;
use crate::result::RunResult;
use crate::stats::recorder::Recorder;
use crate::stats::tap::Tap;
use crate::sys::clock::now_ns;
use crate::sys::net::TsSocket;
use serde::Serialize;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::Arc;

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
    /// The worst server RX intervals explained (`--explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<usize>,
    /// `--explain-stacks`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explain_stacks: bool,
    /// Requests to answer (`--count`), timestamps, CPU, output …
    #[serde(flatten)]
    pub common: Common,
}

struct Server {
    sock: TsSocket,
    server_rx: Recorder,
    turnaround: Recorder,
    buf: Vec<u8>,
    hardware: bool,
    start_real: u64,
    /// `--explain`: each server RX interval (its start on CLOCK_MONOTONIC,
    /// the trace's clock) goes to this tap.
    tap: Option<Arc<Tap>>,
    /// CLOCK_REALTIME − CLOCK_MONOTONIC at the start.
    real_ahead: u64,
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
            if let Some(t) = &self.tap {
                t.push(kernel.saturating_sub(self.real_ahead), server_rx);
            }
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
                    back_off();
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

/// The reflector's socket, with RX timestamps on.
fn open_socket(cfg: &ServeConfig) -> Result<TsSocket> {
    let sock = TsSocket::bind(&cfg.listen).map_err(|e| bind_error("--listen", &cfg.listen, e))?;
    prepare_socket(&sock, Some(cfg.common.timestamps), false)?;
    Ok(sock)
}

/// The bulk sink, unless `--no-sink`.
fn open_sink(cfg: &ServeConfig) -> Result<Option<UdpSink>> {
    let Some(addr) = cfg.sink else {
        return Ok(None);
    };
    UdpSink::bind(addr).map(Some).map_err(|e| match e {
        Error::Environment { msg, .. } if msg.contains("in use") => Error::usage(format!(
            "bulk sink {addr} is in use (another rtlat net serve?); choose another --listen port or pass --no-sink"
        )),
        other => other,
    })
}

/// The counts as a note.
fn requests_note(c: &ServeCounts) -> String {
    format!(
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
    )
}

/// Run `rtlat net serve`.
pub fn run(cfg: &ServeConfig, command_line: Vec<String>) -> Result<Outcome> {
    block_signals()?;
    let sock = open_socket(cfg)?;
    let listen = sock.local_addr().unwrap_or(cfg.listen);
    let sink = open_sink(cfg)?;
    let sink_addr = sink.as_ref().map(|s| s.local_addr());
    // Tracing is set up (and can fail) before the server says it listens.
    let mut threads = receiving(
        &cfg.common,
        (cfg.explain, cfg.explain_stacks),
        "request on its way to the socket",
    )?;
    crate::outln!(
        "rtlat net serve: listening on {listen}{}",
        sink_addr
            .map(|s| format!(" (bulk sink on {s})"))
            .unwrap_or_default()
    );
    let _ = io::stdout().flush();
    let counts = Slot::default();
    server_thread(cfg, sock, counts.clone(), &mut threads);
    let mut spec = spec(cfg, (listen, sink_addr), command_line)?;
    let sink = Slot::new(sink);
    spec.finish = Some(finisher(cfg, counts, sink.clone()));
    let outcome = threads.execute(spec, MONOTONIC);
    if let Some(s) = sink.take() {
        s.stop();
    }
    Ok(outcome?.outcome)
}

/// The run: its config with the addresses actually bound (a port 0 was
/// chosen by the kernel), what it measures (the first note).
fn spec(
    cfg: &ServeConfig,
    (listen, sink): (SocketAddr, Option<SocketAddr>),
    command_line: Vec<String>,
) -> Result<RunSpec> {
    let bound = ServeConfig {
        listen,
        sink,
        ..cfg.clone()
    };
    run_spec(
        serde_json::to_value(&bound).unwrap_or_default(),
        &cfg.common,
        1,
        format!(
            "serve on {listen}: server_rx from kernel {} RX timestamps, every time on CLOCK_REALTIME",
            cfg.common.timestamps.name()
        ),
        command_line,
    )
}

/// The server's thread: its two series (the server RX explained with
/// `--explain`: from the request's kernel RX stamp to the thread running
/// after `recvmsg`), its counts into `counts` when it ends.
fn server_thread(
    cfg: &ServeConfig,
    sock: TsSocket,
    counts: Slot<ServeCounts>,
    threads: &mut Threads,
) {
    let cpu = cfg.common.cpu;
    // Requests come at the client's rate, unknown here.
    let tap = threads.watch("server_rx", cpu, None);
    let mut server = Server {
        sock,
        server_rx: threads.series("server_rx", cpu),
        turnaround: threads.series("turnaround", cpu),
        buf: vec![0u8; cfg.max_size],
        hardware: cfg.common.timestamps.is_hardware(),
        start_real: 0,
        tap: tap.clone(),
        real_ahead: 0,
        c: ServeCounts::default(),
    };
    let (loops, duration) = (cfg.common.control.loops, cfg.common.control.duration_ns);
    threads.worker(
        "rtlat-net-serve".into(),
        cfg.common.pin(),
        move |start, stop| {
            server.start_real = realtime_of(start);
            server.real_ahead = server.start_real.saturating_sub(start);
            writing(tap.as_deref(), || {
                measure(&mut server, loops, duration.map(|d| start + d), stop)
            });
            server.server_rx.finish();
            server.turnaround.finish();
            counts.put(server.c.clone());
        },
    );
}

/// The run's finisher: the counts (and the bulk sink's bytes) into the
/// details and a note.
fn finisher(cfg: &ServeConfig, counts: Slot<ServeCounts>, sink: Slot<UdpSink>) -> Finisher {
    let timestamping = cfg.common.timestamps;
    Box::new(move |r: &mut RunResult| {
        let mut c = counts.get().unwrap_or_default();
        if let Some(s) = sink.take() {
            c.sink_bytes = Some(s.stop());
        }
        r.notes.push(requests_note(&c));
        let details = NetDetails {
            timestamping,
            side: Some(NetSide::Serve(c)),
        };
        r.details.extend(details.to_map());
    })
}
