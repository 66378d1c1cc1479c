//! Integration tests for `rtlat net serve` / `rtlat net ping`.
//!
//! Real traffic only ever goes to loopback or to two network namespaces a test
//! creates itself (joined by a veth pair, 10.201.x.y and fd00:201:x::y inside
//! them only), deleted again by a guard even when the test fails.

use crate::case::Case;
use crate::util::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Why the net tests cannot run under qemu-user.
const NO_TIMESTAMPING: &str =
    "qemu-user does not implement SO_TIMESTAMPING (setsockopt fails with ENOPROTOOPT)";

static NEXT: AtomicU32 = AtomicU32::new(1);

/// Two namespaces `a` (server) and `b` (client) joined by a veth pair.
/// Dropping it deletes both namespaces (and with them the veth pair).
pub(crate) struct Netns {
    pub(crate) a: String,
    pub(crate) b: String,
    pub(crate) a4: String,
    a6: String,
    /// The veth end in `a`.
    pub(crate) va: String,
}

impl Netns {
    pub(crate) fn new() -> Netns {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let pid = std::process::id();
        let a = format!("rtlat-{pid}-{n}-a");
        let b = format!("rtlat-{pid}-{n}-b");
        let net = Netns {
            a4: format!("10.201.{n}.1"),
            a6: format!("fd00:201:{n:x}::1"),
            a: a.clone(),
            b: b.clone(),
            va: format!("rl{pid}x{n}a"),
        };
        // From here on, Drop cleans up whatever was created.
        ip(&["netns", "add", &a]);
        ip(&["netns", "add", &b]);
        let (va, vb) = (format!("rl{pid}x{n}a"), format!("rl{pid}x{n}b"));
        ip(&[
            "link", "add", &va, "netns", &a, "type", "veth", "peer", "name", &vb, "netns", &b,
        ]);
        for (ns, dev, host) in [(&a, &va, 1), (&b, &vb, 2)] {
            ip(&["-n", ns, "link", "set", "lo", "up"]);
            ip(&[
                "-n",
                ns,
                "addr",
                "add",
                &format!("10.201.{n}.{host}/24"),
                "dev",
                dev,
            ]);
            ip(&[
                "-n",
                ns,
                "addr",
                "add",
                &format!("fd00:201:{n:x}::{host}/64"),
                "dev",
                dev,
                "nodad",
            ]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
        }
        net
    }

    pub(crate) fn exec(&self, ns: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns]).arg(bin()).args(args);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// A running `rtlat net serve`, killed on drop if still running.
pub(crate) struct Server {
    child: Option<Child>,
    /// The address it listens on, from its first line.
    addr: String,
    sink: Option<String>,
    lines: mpsc::Receiver<String>,
}

impl Server {
    pub(crate) fn spawn(cmd: &mut Command) -> Server {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn serve");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut s = Server {
            child: Some(child),
            addr: String::new(),
            sink: None,
            lines: rx,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(line) = s.lines.recv_timeout(Duration::from_millis(100)) {
                if let Some(rest) = line.strip_prefix("rtlat net serve: listening on ") {
                    let mut parts = rest.split(' ');
                    s.addr = parts.next().expect("address").to_string();
                    s.sink = rest
                        .split("(bulk sink on ")
                        .nth(1)
                        .map(|x| x.trim_end_matches(')').to_string());
                    return s;
                }
            }
            if let Some(st) = s.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                let out = s
                    .child
                    .take()
                    .expect("child")
                    .wait_with_output()
                    .expect("out");
                panic!(
                    "serve ended early ({st}): {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
        panic!("serve did not start listening within 10 s");
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Send `sig`, wait (≤ 10 s) and return the output.
    pub(crate) fn stop(mut self, sig: i32) -> (Option<i32>, String) {
        let pid = self.pid();
        send_signal(pid, &sig.to_string());
        let mut child = self.child.take().expect("child");
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait") {
                break s;
            }
            assert!(t0.elapsed() < Duration::from_secs(10), "serve did not end");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut rest = String::new();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(200)) {
            rest.push_str(&l);
            rest.push('\n');
        }
        (status.code(), rest)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub(crate) fn serve_args<'a>(listen: &'a str, json: &'a Path, extra: &[&'a str]) -> Vec<String> {
    let mut v: Vec<String> = ["net", "serve", "--listen", listen, "--duration", "60s"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v.push("--quiet".into());
    v.push("--json".into());
    v.push(json.display().to_string());
    v
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

fn show(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `net ping TO ARGS` on loopback, unprivileged and quiet, its result in
/// `json`: the run must exit 0; the result.
fn loopback_ping(t: &Case, to: &str, args: &[&str], json: &Path) -> Value {
    let out = t
        .rtlat()
        .args(["net", "ping", to])
        .args(args)
        .args(UNPRIVILEGED)
        .args(["--quiet", "--json"])
        .arg(json)
        .output()
        .expect("ping runs");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    load(json)
}

/// The checks every complete ping result passes.
fn assert_ping_result(r: &Value, json: &Path) {
    assert_eq!(r["benchmark"], "net");
    assert_eq!(r["config"]["role"], "ping");
    assert_eq!(r["complete"], true);
    assert_eq!(r["details"]["timestamping"], "software");
    assert_eq!(
        series_names(r),
        ["rtt", "tx", "rx", "server_rx", "turnaround"]
    );
    for t in r["threads"].as_array().expect("threads") {
        if u(&t["summary"], "samples") > 0 {
            assert_summary_invariants(&t["summary"]);
            assert_thread_consistent(t);
        }
    }
    let d = &r["details"];
    assert_eq!(u(d, "sent"), u(d, "answered") + u(d, "lost"));
    assert_eq!(u(&thread(r, "rtt")["summary"], "samples"), u(d, "answered"));
    assert_schema_valid(json);
}

/// Asserts that of the pings in `d` (a ping result's details) all `n`
/// were sent and answered, none lost.
fn assert_all_answered(d: &Value, n: u64) {
    assert_eq!(
        (u(d, "sent"), u(d, "answered"), u(d, "lost")),
        (n, n, 0),
        "{d}"
    );
}

/// `net serve` in namespace `a` of a fresh veth pair on port 7357 (of its
/// IPv6 address with `v6`), its result in serve.json of the case's
/// directory; the pings of [`Pair::ping`] go from namespace `b`.
struct Pair {
    net: Netns,
    server: Server,
    listen: String,
    sj: PathBuf,
    pj: PathBuf,
}

impl Pair {
    fn start(t: &Case, v6: bool, extra: &[&str]) -> Pair {
        let net = Netns::new();
        let (sj, pj) = (t.path("serve.json"), t.path("ping.json"));
        let listen = if v6 {
            format!("[{}]:7357", net.a6)
        } else {
            format!("{}:7357", net.a4)
        };
        let server = Server::spawn(net.exec(&net.a, &[]).args(serve_args(&listen, &sj, extra)));
        Pair {
            net,
            server,
            listen,
            sj,
            pj,
        }
    }

    /// `net ping` of the server with `args`, quiet, its result in ping.json.
    fn ping(&self, args: &[&str]) -> Command {
        let mut c = self.net.exec(&self.net.b, &["net", "ping", &self.listen]);
        c.args(args).args(["--quiet", "--json"]).arg(&self.pj);
        c
    }

    /// A [`Pair::ping`] that must exit 0: its output, and its result, which
    /// passes the checks of every complete ping result.
    fn ping_ok(&self, args: &[&str]) -> (Output, Value) {
        let out = self.ping(args).output().expect("ping runs");
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let r = load(&self.pj);
        assert_ping_result(&r, &self.pj);
        (out, r)
    }
}

case!(
    ping_across_a_veth_pair_splits_tx_and_rx_and_loses_nothing,
    [Root, Native(NO_TIMESTAMPING), Measuring],
    |t| {
        let pair = Pair::start(&t, false, &[]);
        assert_eq!(pair.server.addr, pair.listen);
        let (out, r) = pair.ping_ok(&["--rate", "10000/s", "--count", "20000"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("20000 sent, 20000 answered, 0 lost"),
            "{stdout}"
        );
        let d = &r["details"];
        assert_eq!((u(d, "sent"), u(d, "lost")), (20_000, 0));
        assert_eq!(u(d, "duplicated"), 0);
        assert_eq!(u(d, "bad_replies"), 0);
        assert_eq!(r["config"]["period_ns"], 100_000);
        assert_eq!(r["config"]["size"], 64);
        let s = |n: &str| &thread(&r, n)["summary"];
        for n in ["rtt", "tx", "rx", "server_rx", "turnaround"] {
            assert!(u(s(n), "samples") > 0, "{n} has no samples");
        }
        assert_eq!(u(s("rtt"), "samples"), 20_000);
        // Timestamps missing only if the kernel dropped some (then they are counted).
        assert_eq!(u(s("tx"), "samples") + u(d, "tx_missing"), 20_000);
        assert_eq!(u(s("rx"), "samples") + u(d, "rx_missing"), 20_000);
        assert!(u(s("tx"), "min_ns") > 0 && u(s("rx"), "min_ns") > 0);
        // Each round trip contains its TX, server RX, turnaround and RX latencies.
        if u(d, "tx_missing") + u(d, "rx_missing") + u(d, "server_rx_missing") == 0 {
            let parts: u64 = ["tx", "rx", "server_rx", "turnaround"]
                .iter()
                .map(|n| u(s(n), "avg_ns"))
                .sum();
            assert!(
                u(s("rtt"), "avg_ns") + 4 >= parts,
                "rtt avg {} < sum of parts {parts}",
                u(s("rtt"), "avg_ns")
            );
        }
        // The server's own result: every request answered, both series recorded.
        let (code, _) = pair.server.stop(2);
        assert_eq!(code, Some(0));
        let sj = pair.sj;
        let sr = load(&sj);
        assert_eq!(sr["complete"], true);
        assert_eq!(sr["end_reason"], "signal");
        assert_eq!(sr["config"]["role"], "serve");
        assert_eq!(u(&sr["details"], "requests"), 20_000);
        assert_eq!(u(&sr["details"], "replied"), 20_000);
        assert_eq!(u(&sr["details"], "ignored"), 0);
        assert_eq!(
            u(&thread(&sr, "server_rx")["summary"], "samples"),
            20_000 - u(&sr["details"], "rx_missing")
        );
        assert_eq!(u(&thread(&sr, "turnaround")["summary"], "samples"), 20_000);
        assert_schema_valid(&sj);
    }
);

case!(
    bulk_traffic_rate_is_recorded_within_ten_percent,
    [Root, Native(NO_TIMESTAMPING), Measuring],
    |t| {
        let pair = Pair::start(&t, false, &[]);
        let sink = format!("{}:7358", pair.net.a4);
        assert_eq!(pair.server.sink.as_deref(), Some(sink.as_str()));
        let (out, r) = pair.ping_ok(&["--bulk", "4MB/s", "--rate", "10000/s", "--count", "20000"]);
        let bulk = &r["details"]["bulk"];
        assert_eq!(bulk["target"], sink);
        assert_eq!(u(bulk, "requested_bytes_per_s"), 4_000_000);
        // The bulk traffic goes to another socket: the veth pair still loses
        // no ping.
        assert_all_answered(&r["details"], 20_000);
        let achieved = bulk["achieved_bytes_per_s"].as_f64().expect("achieved");
        assert!(
            (3_600_000.0..=4_400_000.0).contains(&achieved),
            "bulk achieved {achieved} B/s, not within 10 % of 4 MB/s"
        );
        assert_eq!(r["loads"][0]["name"], "net");
        assert!(String::from_utf8_lossy(&out.stdout).contains("MB/s achieved"));
        let (code, _) = pair.server.stop(15);
        assert_eq!(code, Some(0));
        let sr = load(&pair.sj);
        // The sink got (nearly) everything the sender sent: it is the same path.
        let sent = u(bulk, "bytes");
        let got = u(&sr["details"], "sink_bytes");
        assert!(got > sent / 2 && got <= sent, "sink {got} of {sent} bytes");
    }
);

case!(
    ipv6_ping_inside_the_namespaces,
    [Root, Native(NO_TIMESTAMPING), Measuring],
    |t| {
        let pair = Pair::start(&t, true, &[]);
        let (_, r) = pair.ping_ok(&["--rate", "10000/s", "--count", "3000", "--size", "200"]);
        assert_eq!(r["config"]["peer"], pair.listen);
        assert_all_answered(&r["details"], 3000);
        assert!(u(&thread(&r, "tx")["summary"], "samples") > 0);
        assert!(u(&thread(&r, "rx")["summary"], "samples") > 0);
    }
);

case!(
    server_killed_mid_run_counts_losses_writes_results_and_exits_3,
    [Root, Native(NO_TIMESTAMPING), Measuring],
    |t| {
        let pair = Pair::start(&t, false, &[]);
        let pj = &pair.pj;
        let ping = pair
            .ping(&[
                "--rate",
                "10000/s",
                "--count",
                "30000",
                "--timeout",
                "200ms",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ping runs");
        std::thread::sleep(Duration::from_millis(1200));
        let _ = pair.server.stop(9);
        let t0 = Instant::now();
        let out = ping.wait_with_output().expect("ping ends");
        assert!(t0.elapsed() < Duration::from_secs(10), "ping hung");
        let line = error_line(&out, 3, &show(&out));
        assert!(
            line.contains("stopped answering") && line.contains("results written to"),
            "{line}"
        );
        let r = load(pj);
        assert_ping_result(&r, pj);
        let d = &r["details"];
        assert!(u(d, "answered") > 1000, "{d}");
        assert!(u(d, "lost") + u(d, "send_errors") > 1000, "{d}");
        assert_eq!(u(d, "sent") + u(d, "send_errors"), 30_000);
        assert!(u(d, "trailing_unanswered") >= 10);
        // The summary was printed before the verdict.
        assert!(String::from_utf8_lossy(&out.stdout).contains("lost"));
    }
);

/// Send `payload` from `sock` to the server; return the reply, if any, within 300 ms.
fn exchange(sock: &UdpSocket, to: &str, payload: &[u8]) -> Option<Vec<u8>> {
    sock.send_to(payload, to).expect("send");
    let mut buf = [0u8; 70_000];
    sock.set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    match sock.recv_from(&mut buf) {
        Ok((n, _)) => Some(buf[..n].to_vec()),
        Err(_) => None,
    }
}

/// A valid request of `size` bytes (wire format v1, big-endian).
fn request(size: usize, seq: u64) -> Vec<u8> {
    let mut b = vec![0u8; size];
    b[0..4].copy_from_slice(b"RTLN");
    b[4] = 1;
    b[5] = 1;
    b[8..12].copy_from_slice(&(size as u32).to_be_bytes());
    b[12..16].copy_from_slice(&0xfeed_u32.to_be_bytes());
    b[16..24].copy_from_slice(&seq.to_be_bytes());
    b[24..32].copy_from_slice(&123_456_789u64.to_be_bytes());
    b
}

case!(
    hostile_datagrams_are_counted_and_ignored_and_valid_pings_still_answered,
    [Native(NO_TIMESTAMPING)],
    |t| {
        let sj = t.path("serve.json");
        let mut extra = UNPRIVILEGED.to_vec();
        extra.extend(["--max-size", "1500", "--no-sink"]);
        let mut cmd = t.process();
        cmd.args(serve_args("127.0.0.1:0", &sj, &extra));
        let server = Server::spawn(&mut cmd);
        let to = server.addr.clone();
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let other = UdpSocket::bind("127.0.0.1:0").expect("bind");

        // Valid requests of several sizes: the reply has exactly the request's length.
        let mut valid = 0u64;
        for size in [48usize, 64, 1000, 1500] {
            let reply = exchange(&sock, &to, &request(size, size as u64)).expect("a reply");
            valid += 1;
            assert_eq!(reply.len(), size);
            assert_eq!(&reply[0..6], b"RTLN\x01\x02", "kind reply");
            assert_eq!(
                &reply[16..24],
                &(size as u64).to_be_bytes(),
                "sequence echoed"
            );
            assert_eq!(
                &reply[24..32],
                &123_456_789u64.to_be_bytes(),
                "send time echoed"
            );
        }
        // Only the sender gets the reply.
        other
            .set_read_timeout(Some(Duration::from_millis(100)))
            .expect("timeout");
        assert!(
            other.recv_from(&mut [0u8; 100]).is_err(),
            "a bystander got a reply"
        );

        let mut expect = std::collections::BTreeMap::<&str, u64>::new();
        let mut hostile = |what: &'static str, payload: Vec<u8>| {
            *expect.entry(what).or_default() += 1;
            sock.send_to(&payload, &to).expect("send");
        };
        // Random bytes (never starting with the magic).
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for i in 0..40 {
            let len = [1usize, 7, 47, 48, 64, 200, 1499][i % 7];
            let mut b: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            b[0] = b'x';
            hostile(if len < 48 { "short" } else { "foreign" }, b);
        }
        // Truncated headers: every prefix of a valid request shorter than the header.
        let good = request(64, 1);
        for len in [1usize, 4, 5, 16, 32, 47] {
            hostile("short", good[..len].to_vec());
        }
        // The header only, of a 64-byte request: its length field no longer matches.
        hostile("bad_length", good[..48].to_vec());
        // Absurd length fields.
        for absurd in [0u32, 1, 47, 49, 65_536, u32::MAX] {
            let mut b = request(64, 2);
            b[8..12].copy_from_slice(&absurd.to_be_bytes());
            hostile("bad_length", b);
        }
        // Another version, an unknown kind, a reply sent to the server, a request with flags.
        let mut b = request(64, 3);
        b[4] = 2;
        hostile("bad_version", b);
        for (kind, flags) in [(0u8, 0u8), (3, 0), (2, 1), (1, 1)] {
            let mut b = request(64, 4);
            b[5] = kind;
            b[7] = flags;
            hostile("malformed", b);
        }
        // Larger than --max-size.
        let mut big = request(2000, 5);
        big[8..12].copy_from_slice(&2000u32.to_be_bytes());
        hostile("oversized", big);
        // An empty datagram.
        hostile("short", Vec::new());

        // None of them was answered: the first reply is to the valid request sent
        // after them all (the server handles datagrams in order), and nothing follows.
        let reply = exchange(&sock, &to, &request(64, 99)).expect("still answering");
        assert_eq!(
            &reply[16..24],
            &99u64.to_be_bytes(),
            "a hostile datagram was answered"
        );
        valid += 1;
        assert!(
            sock.recv_from(&mut [0u8; 2048]).is_err(),
            "an extra datagram came back"
        );
        // A real ping loses nothing.
        let pj = t.path("ping.json");
        let r = loopback_ping(&t, &to, &["--rate", "5000/s", "--count", "1000"], &pj);
        assert_eq!(u(&r["details"], "lost"), 0);
        valid += 1000;

        let (code, _) = server.stop(2);
        assert_eq!(code, Some(0));
        let d = load(&sj)["details"].clone();
        for (what, n) in &expect {
            assert_eq!(u(&d, what), *n, "{what}: {d}");
        }
        assert_eq!(u(&d, "ignored"), expect.values().sum::<u64>());
        assert_eq!(u(&d, "requests"), valid);
        assert_eq!(u(&d, "replied"), valid);
        assert_schema_valid(&sj);
    }
);

case!(
    unprivileged_ipv6_loopback_round_trip,
    [
        Native(NO_TIMESTAMPING),
        Machine(UdpSocket::bind("[::1]:0").is_ok(), "no IPv6 loopback here")
    ],
    |t| {
        let (sj, pj) = (t.path("serve.json"), t.path("ping.json"));
        let mut cmd = t.process();
        cmd.args(serve_args("[::1]:0", &sj, &UNPRIVILEGED));
        let server = Server::spawn(&mut cmd);
        assert!(server.addr.starts_with("[::1]:"), "{}", server.addr);
        let args = ["--period", "500us", "--count", "500"];
        let r = loopback_ping(&t, &server.addr, &args, &pj);
        assert_ping_result(&r, &pj);
        assert_eq!(r["tuning"]["policy"], "other");
        assert_eq!(u(&r["details"], "answered"), 500);
        drop(server);
    }
);

case!(
    bad_inputs_give_one_line_and_exit_2,
    [Native(NO_TIMESTAMPING)],
    |t| {
        // One case (--load nosuch:1) is checked only after the sockets are set up.
        let ping = |args: &[&'static str]| [&["net", "ping", "127.0.0.1:7357"][..], args].concat();
        let cases: Vec<Vec<&str>> = vec![
            ping(&["--rate", "0"]),
            ping(&["--rate", "0/s"]),
            ping(&["--rate", "fast"]),
            ping(&["--rate", "5000000/s"]),
            ping(&["--period", "0"]),
            ping(&["--size", "10"]),
            ping(&["--size", "70000"]),
            ping(&["--count", "0"]),
            ping(&["--bulk", "4Mb/s"]),
            ping(&["--bulk", "0MB/s"]),
            ping(&["--bulk-target", "127.0.0.1:9"]),
            ping(&["--rate", "1k/s", "--period", "1ms"]),
            ping(&["--load", "nosuch:1"]),
            ping(&["--bind", "fd00::1"]),
            vec!["net", "ping", "127.0.0.1"],
            vec!["net", "ping", "127.0.0.1:0"],
            vec!["net", "ping", "127.0.0.1:99999"],
            vec!["net", "ping", "::1:7357"],
            vec!["net", "ping"],
            vec!["net", "serve", "--listen", "127.0.0.1:65535"],
            vec!["net", "serve", "--max-size", "20"],
            vec!["net", "serve", "--listen", "nonsense"],
            ping(&["--busy-poll", "0"]),
            ping(&["--busy-poll", "-5"]),
            ping(&["--busy-poll", "soon"]),
            ping(&["--busy-poll", "2000000"]),
            vec!["net", "ping", "127.0.0.1:7", "--echo", "--bulk", "1MB/s"],
            ping(&["--spin", "0"]),
            ping(&["--spin", "soon"]),
            ping(&["--spin", "offf"]),
            ping(&["--spin", "20us", "--overlap"]),
            ping(&["--spin", "5us", "--period", "20us"]),
            ping(&["--spin", "2ms", "--period", "1ms"]),
            ping(&["--no-split", "--timestamps", "hardware"]),
        ];
        assert_usage_errors(&cases.iter().map(Vec::as_slice).collect::<Vec<_>>());
        let msg =
            |args: &[&str]| stderr_lines(&t.rtlat().args(args).output().expect("runs")).join("");
        let m = msg(&ping(&["--size", "10"]));
        assert!(m.contains("--size 10") && m.contains("48"), "{m}");
        let m = msg(&ping(&["--rate", "0"]));
        assert!(m.contains("--rate") && m.contains("above zero"), "{m}");
        let m = msg(&ping(&["--spin", "2ms", "--period", "1ms"]));
        assert!(
            m.contains("--spin 2ms") && m.contains("at most the period"),
            "{m}"
        );
        let m = msg(&ping(&["--spin", "5us", "--period", "20us"]));
        assert!(m.contains("one-thread path") && m.contains("50us"), "{m}");
    }
);

case!(
    a_port_in_use_for_serve_exits_2_naming_it,
    [Native(NO_TIMESTAMPING)],
    |t| {
        let held = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let port = held.local_addr().expect("addr").port();
        // `net serve --listen LISTEN`'s one error line (exit 2).
        let refused = |listen: &str| {
            let out = t
                .rtlat()
                .args(["net", "serve", "--listen", listen])
                .args(UNPRIVILEGED)
                .output()
                .expect("runs");
            error_line(&out, 2, listen)
        };
        // The reflector's port in use.
        let listen = format!("127.0.0.1:{port}");
        let line = refused(&listen);
        assert!(line.contains(&listen) && line.contains("in use"), "{line}");
        // The bulk sink's port (the next one) in use.
        let line = refused(&format!("127.0.0.1:{}", port - 1));
        assert!(line.contains("in use"), "{line}");
    }
);

case!(an_unresolvable_host_exits_2, [Root, Measuring], |_t| {
    // Inside a fresh namespace (loopback only), a name lookup cannot reach any network.
    let net = Netns::new();
    let out = net
        .exec(&net.b, &["net", "ping", "no-such-host.invalid:7357"])
        .output()
        .expect("runs");
    let line = error_line(&out, 2, "ping no-such-host.invalid");
    assert!(
        line.contains("no-such-host.invalid") && line.contains("resolve"),
        "{line}"
    );
});

case!(
    without_privileges_ping_and_serve_exit_3_naming_the_fix,
    [Root, Native(NO_TIMESTAMPING), Measuring],
    |t| {
        let exe = unprivileged_copy(t.dir());
        for args in [
            &["net", "ping", "127.0.0.1:7357", "--count", "10"][..],
            &[
                "net",
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--duration",
                "1s",
            ][..],
        ] {
            let out = as_nobody(&exe).args(args).output().expect("setpriv runs");
            let line = error_line(&out, 3, &format!("{args:?}"));
            assert!(
                line.contains("setcap cap_sys_nice,cap_ipc_lock+ep"),
                "{line}"
            );
        }
    }
);

/// A process the test started, killed (by its pid) on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

case!(
    echo_service_gives_round_trip_and_local_split_without_server_series,
    [
        Root,
        Native(NO_TIMESTAMPING),
        Program("socat", "socat"),
        Measuring
    ],
    |t| {
        let net = Netns::new();
        let pj = t.path("ping.json");
        // A plain UDP echo service (RFC 862): socat hands each datagram through a
        // pipe and back; reading the pipe in blocks of the datagram size keeps
        // every reply exactly its request. Real-time, like the client, so the
        // shared machine's builds do not starve it.
        let listen = format!("UDP-LISTEN:7,bind={},rcvbuf=1048576", net.a4);
        let echo = Command::new("ip")
            .args(["netns", "exec", &net.a, "chrt", "-f", "80", "socat"])
            .args(["-b", "64", "-T", "120", &listen, "PIPE"])
            .stderr(Stdio::null())
            .spawn()
            .expect("socat starts");
        let _echo = Killed(echo);
        std::thread::sleep(Duration::from_millis(300));
        let target = format!("{}:7", net.a4);
        let out = net
            .exec(&net.b, &["net", "ping", "--echo", &target])
            .args(["--rate", "10000/s", "--count", "20000", "--quiet", "--json"])
            .arg(&pj)
            .output()
            .expect("ping runs");
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("no server-side series"), "{stdout}");
        let r = load(&pj);
        assert_eq!(r["complete"], true);
        assert_eq!(r["config"]["echo"], true);
        assert_eq!(series_names(&r), ["rtt", "tx", "rx"]);
        let d = &r["details"];
        assert_eq!(
            (u(d, "sent"), u(d, "answered"), u(d, "lost")),
            (20_000, 20_000, 0)
        );
        assert_eq!(u(d, "bad_replies"), 0);
        assert_eq!(d["server_series"], false);
        assert_eq!(
            u(d, "server_rx_missing"),
            0,
            "not counted against an echo service"
        );
        let s = |n: &str| &thread(&r, n)["summary"];
        assert_eq!(u(s("rtt"), "samples"), 20_000);
        assert_eq!(u(s("tx"), "samples") + u(d, "tx_missing"), 20_000);
        assert_eq!(u(s("rx"), "samples") + u(d, "rx_missing"), 20_000);
        assert!(u(s("tx"), "samples") > 0 && u(s("rx"), "samples") > 0);
        assert!(notes(&r).contains("plain echo service"), "{}", notes(&r));
        assert_schema_valid(&pj);
    }
);

case!(
    the_path_follows_period_and_overlap_and_no_split_keeps_the_round_trip_only,
    [Root, Native(NO_TIMESTAMPING), Measuring],
    |t| {
        let net = Netns::new();
        let listen = format!("{}:7357", net.a4);
        let server = Server::spawn(net.exec(&net.a, &[]).args(serve_args(
            &listen,
            &t.path("serve.json"),
            &[],
        )));
        let ping = |tag: &str, extra: &[&str]| -> Value {
            let pj = t.path(format!("{tag}.json"));
            let out = net
                .exec(
                    &net.b,
                    &["net", "ping", &listen, "--count", "2000", "--json"],
                )
                .arg(&pj)
                .args(extra)
                .output()
                .expect("ping runs");
            assert_eq!(out.status.code(), Some(0), "{tag}: {}", show(&out));
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            let r = load(&pj);
            let path = r["config"]["path"].as_str().expect("path").to_string();
            assert_eq!(r["details"]["path"], path.as_str(), "{tag}");
            assert!(text.contains(&format!("{path} path")), "{tag}: {text}");
            let d = &r["details"];
            assert_eq!(
                (u(d, "sent"), u(d, "answered"), u(d, "lost")),
                (2000, 2000, 0),
                "{tag}: {d}"
            );
            r
        };
        // A normal period: one thread; one worker ran (its CPU time is recorded).
        let r = ping("normal", &["--rate", "5000/s"]);
        assert_eq!(r["config"]["path"], "one-thread");
        assert_eq!(
            series_names(&r),
            ["rtt", "tx", "rx", "server_rx", "turnaround"]
        );
        assert!(u(&thread(&r, "tx")["summary"], "samples") > 0);
        // Without --spin the one-thread path spins up to 50us (half the 200us
        // period would be more) for each reply, except on PREEMPT_RT.
        let rt = std::fs::read_to_string("/sys/kernel/realtime").is_ok_and(|t| t.trim() == "1");
        assert_eq!(r["config"]["spin_by_default"], true);
        if rt {
            assert!(r["config"]["spin_ns"].is_null());
            assert!(notes(&r).contains("no spin by default on PREEMPT_RT"));
        } else {
            assert_eq!(r["config"]["spin_ns"], 50_000);
            assert!(
                notes(&r).contains("spinning up to 50us for each reply (the default"),
                "{}",
                notes(&r)
            );
            assert!(
                notes(&r).contains("replies taken while spinning (spinning up to 50us by default)"),
                "{}",
                notes(&r)
            );
        }
        // Asked to overlap, or a period too short for a round trip: two threads.
        let r = ping("overlap", &["--rate", "5000/s", "--overlap"]);
        assert_eq!(r["config"]["path"], "two-thread");
        assert!(r["config"]["spin_ns"].is_null(), "no spin on two threads");
        assert!(notes(&r).contains("--overlap"), "{}", notes(&r));
        let r = ping("short", &["--period", "20us", "--timeout", "100ms"]);
        assert_eq!(r["config"]["path"], "two-thread");
        assert!(notes(&r).contains("shorter than a round trip"));
        // --no-split: the round trip only, no timestamps asked for or read.
        let r = ping("nosplit", &["--rate", "5000/s", "--no-split"]);
        assert_eq!(series_names(&r), ["rtt"]);
        assert_eq!(r["config"]["split"], false);
        assert_eq!(u(&r["details"], "tx_stamps"), 0);
        assert_eq!(u(&r["details"], "rx_missing"), 0);
        assert_eq!(u(&r["details"], "tx_missing"), 0);
        assert!(!notes(&r).contains("timestamps missing"), "{}", notes(&r));
        assert_eq!(r["details"]["server_series"], false);
        assert_eq!(u(&thread(&r, "rtt")["summary"], "samples"), 2000);
        // --busy-poll is set on the socket and recorded.
        let r = ping(
            "busy",
            &["--rate", "5000/s", "--busy-poll", "50", "--spin", "off"],
        );
        assert_eq!(r["config"]["busy_poll_us"], 50);
        assert!(r["config"]["spin_ns"].is_null());
        assert_eq!(r["config"]["spin_by_default"], false);
        assert!(notes(&r).contains("busy polling 50us"), "{}", notes(&r));
        assert_eq!(
            u(&r["details"], "spun_replies"),
            0,
            "--spin off, no spun reply"
        );
        // --spin: the thread polls for each reply instead of sleeping; with a
        // whole period to spin in, the replies over the veth pair come while it
        // spins (a few may come later, after a stall of the machine).
        let r = ping("spin", &["--rate", "2000/s", "--spin", "500us"]);
        assert_eq!(r["config"]["spin_ns"], 500_000);
        assert_eq!(r["config"]["spin_by_default"], false);
        assert!(notes(&r).contains("spinning up to 500us"), "{}", notes(&r));
        let spun = u(&r["details"], "spun_replies");
        assert!((1800..=2000).contains(&spun), "spun {spun} of 2000 replies");
        let said = format!("{spun} of 2000 replies taken while spinning (--spin 500us)");
        assert!(notes(&r).contains(&said), "{}", notes(&r));
        assert_eq!(u(&thread(&r, "rtt")["summary"], "samples"), 2000);
        // --pace: sleeping to each slot leaves the CPU free between requests;
        // spinning to it (as sockperf's --mps) keeps the thread on its CPU the
        // whole run, so its CPU time is about the run's length.
        let cpu_share = |r: &Value| {
            let cpu = r["measuring_cpu_time_ns"].as_u64().expect("cpu time") as f64;
            cpu / (2000.0 * 500_000.0)
        };
        let r = ping("sleep", &["--rate", "2000/s", "--spin", "off"]);
        assert_eq!(r["config"]["pace"], "sleep");
        let asleep = cpu_share(&r);
        let r = ping(
            "pace",
            &["--rate", "2000/s", "--spin", "off", "--pace", "spin"],
        );
        assert_eq!(r["config"]["pace"], "spin");
        assert!(notes(&r).contains("spinning to each send slot (--pace spin)"));
        assert_eq!(
            u(&r["details"], "spun_replies"),
            0,
            "the replies are waited for"
        );
        assert_eq!(u(&thread(&r, "rtt")["summary"], "samples"), 2000);
        let spinning = cpu_share(&r);
        assert!(
            asleep < 0.35 && spinning > 0.6,
            "CPU share of the run: {asleep:.2} sleeping, {spinning:.2} spinning"
        );
        let (code, _) = server.stop(2);
        assert_eq!(code, Some(0));
    }
);

/// A plain UDP echo service (RFC 862) on loopback, in a thread of the test.
struct EchoThread {
    addr: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl EchoThread {
    fn start() -> EchoThread {
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        let addr = sock.local_addr().expect("addr").to_string();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = std::sync::Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while !stopped.load(Ordering::Relaxed) {
                if let Ok((n, from)) = sock.recv_from(&mut buf) {
                    let _ = sock.send_to(&buf[..n], from);
                }
            }
        });
        EchoThread {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for EchoThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

// The short unprivileged run of `net ping` that also runs under qemu-user:
// against an echo service with the split off, it needs neither `net
// serve` nor the kernel's socket timestamps (which qemu-user lacks).
case!(
    an_unprivileged_echo_ping_on_loopback_answers_every_request,
    [],
    |t| {
        let echo = EchoThread::start();
        let json = t.path("ping.json");
        let (_, r) = run_json(
            t.rtlat()
                .args(["net", "ping", "--echo", &echo.addr, "--no-split", "--quiet"])
                .args(["--count", "300", "--period", "2ms"])
                .args(UNPRIVILEGED)
                .timeout(Duration::from_secs(120)),
            &json,
            0,
        );
        assert_eq!(r["benchmark"], "net");
        assert_eq!(r["complete"], true);
        // Loopback loses nothing, and a late reply is still measured: every
        // request asked for is sent, answered and measured.
        let d = &r["details"];
        assert_eq!(
            (u(d, "sent"), u(d, "answered"), u(d, "lost")),
            (300, 300, 0),
            "{d}"
        );
        assert_eq!(u(d, "bad_replies"), 0, "{d}");
        assert_eq!(r["threads"][0]["name"], "rtt");
        assert_eq!(u(&r["threads"][0]["summary"], "samples"), 300);
        assert_summary_invariants(&r["total"]);
    }
);
