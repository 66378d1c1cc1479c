//! Hostile neighbours: an echo server that forges its replies, and clients
//! that hold the metrics endpoint's connections open without a word.

use crate::util::*;
use serde_json::Value;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The replies a [`ForgingServer`] sent, by what it did to them.
#[derive(Default, Debug, Clone, Copy)]
struct Forged {
    /// True replies, each sent twice.
    doubled: u64,
    /// The client's send time rewritten (to 0, or the previous request's
    /// sequence number with this one's send time).
    altered: u64,
    /// The sequence number moved far beyond anything sent.
    unsent: u64,
    /// True replies claiming a turnaround of 10 s.
    long_span: u64,
}

/// A `rtlat net serve` impostor on loopback, in a thread of the test: it
/// answers request `seq` in one of five ways by `seq % 5` (see [`Forged`]).
struct ForgingServer {
    addr: String,
    forged: Arc<Mutex<Forged>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Offsets of the wire format (src/bench/net/wire.rs).
const KIND: usize = 5;
const SEQ: usize = 16;
const SENT: usize = 24;
const SERVER_RX: usize = 32;
const TURNAROUND: usize = 40;

fn put(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_be_bytes());
}

fn get(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl ForgingServer {
    fn start() -> ForgingServer {
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        let addr = sock.local_addr().expect("addr").to_string();
        let forged = Arc::new(Mutex::new(Forged::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (tally, stopped) = (Arc::clone(&forged), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            let mut b = [0u8; 2048];
            while !stopped.load(Ordering::Relaxed) {
                let Ok((n, from)) = sock.recv_from(&mut b) else {
                    continue;
                };
                let r = &mut b[..n];
                r[KIND] = 2;
                r[6..8].copy_from_slice(&1u16.to_be_bytes());
                put(r, SERVER_RX, 1);
                put(r, TURNAROUND, 1);
                let seq = get(r, SEQ);
                let mut f = tally.lock().expect("tally");
                match seq % 5 {
                    0 => {
                        f.doubled += 1;
                        let _ = sock.send_to(r, from);
                    }
                    1 => {
                        f.altered += 1;
                        put(r, SENT, 0);
                    }
                    2 => {
                        f.unsent += 1;
                        put(r, SEQ, seq + (1 << 40));
                    }
                    3 => {
                        f.long_span += 1;
                        put(r, TURNAROUND, 10_000_000_000);
                    }
                    _ => {
                        f.altered += 1;
                        put(r, SEQ, seq - 1);
                    }
                }
                let _ = sock.send_to(r, from);
            }
        });
        ForgingServer {
            addr,
            forged,
            stop,
            thread: Some(thread),
        }
    }

    fn forged(&self) -> Forged {
        *self.forged.lock().expect("tally")
    }
}

impl Drop for ForgingServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn count(d: &Value, key: &str) -> u64 {
    d[key]
        .as_u64()
        .unwrap_or_else(|| panic!("details lack {key}: {d}"))
}

fn thread_named<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no thread {name}"))
}

case!(
    a_forging_echo_server_gets_no_forged_round_trip_recorded,
    [
        Native("qemu-user does not implement SO_TIMESTAMPING (the server's series need the split)",),
        Measuring
    ],
    |t| {
        for path in [&[][..], &["--overlap"][..]] {
            let server = ForgingServer::start();
            let json = t.path("ping.json");
            let _ = std::fs::remove_file(&json);
            let began = Instant::now();
            let (out, r) = run_json(
                t.rtlat()
                    .args(["net", "ping", &server.addr, "--count", "300"])
                    .args(["--period", "2ms", "--timeout", "200ms"])
                    .args(path)
                    .args(UNPRIVILEGED)
                    .timeout(Duration::from_secs(120)),
                &json,
                0,
            );
            let wall = began.elapsed().as_nanos() as u64;
            let f = server.forged();
            let case = format!("{path:?} {f:?}");
            let d = &r["details"];
            assert_eq!(count(d, "sent"), 300, "{case}");
            assert_eq!(count(d, "altered_replies"), f.altered, "{case}");
            assert_eq!(count(d, "unsent_replies"), f.unsent, "{case}");
            assert_eq!(count(d, "server_span_too_long"), f.long_span, "{case}");
            assert_eq!(count(d, "duplicated"), f.doubled, "{case}");
            assert_eq!(count(d, "answered"), f.doubled + f.long_span, "{case}");
            assert_eq!(count(d, "lost"), f.altered + f.unsent, "{case}");
            // Every round trip recorded is a true one, measured in this run.
            let rtt = &thread_named(&r, "rtt")["summary"];
            assert_eq!(rtt["samples"], d["answered"], "{case}");
            let (min, max) = (rtt["min_ns"].as_u64(), rtt["max_ns"].as_u64());
            assert!(min.is_some_and(|m| m > 0), "{case}: min {min:?}");
            assert!(
                max.is_some_and(|m| m < wall),
                "{case}: max {max:?} of {wall}"
            );
            let turnaround = &thread_named(&r, "turnaround")["summary"];
            assert_eq!(turnaround["samples"], f.doubled, "{case}");
            assert_eq!(turnaround["max_ns"], 1, "{case}");
            assert_result_consistent(&r);
            let stdout = String::from_utf8_lossy(&out.stdout);
            let line = format!("{} echoed another send time than the one sent", f.altered);
            assert!(
                stdout.contains(&line),
                "{case}: summary lacks {line}: {stdout}"
            );
            let report = t.rtlat().arg("report").arg(&json).output().expect("runs");
            assert_exit(&report, 0, &format!("report of {case}"));
        }
    }
);
