//! `--metrics-listen`: a real Prometheus scrapes a live run, and the endpoint
//! holds up against hostile clients without disturbing the measurement.

use crate::util;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process killed and reaped when the test ends, however it ends.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback port free right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One HTTP/1.0 GET: the status code and the body (None: no answer).
fn http_get(addr: SocketAddr, target: &str) -> Option<(u16, String)> {
    http_get_with(addr, target, "")
}

/// [`http_get`] with more header lines (each ending in CRLF).
fn http_get_with(addr: SocketAddr, target: &str, headers: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {target} HTTP/1.0\r\nHost: {addr}\r\n{headers}\r\n").ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

/// Percent-encode a query parameter.
fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Wait until `addr` serves `/metrics` (rtlat's setup can take a moment).
fn wait_for_metrics(addr: SocketAddr) -> String {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some((200, body)) = http_get(addr, "/metrics") {
            return body;
        }
        assert!(Instant::now() < until, "{addr}/metrics never answered");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A measuring timer run serving metrics on `port`, its result in `json`,
/// its standard output (only the final summary, under --quiet) to `stdout`.
fn timer_serving(port: u16, duration: &str, json: &Path, stdout: Stdio) -> Reaped {
    let child = Command::new(util::bin())
        .args([
            "timer",
            "--quiet",
            "--duration",
            duration,
            "--interval",
            "200ms",
        ])
        .args(["--metrics-listen", &format!("127.0.0.1:{port}")])
        .arg("--json")
        .arg(json)
        .stdout(stdout)
        .spawn()
        .unwrap();
    Reaped(child)
}

/// A value of a metric line `name{labels} value` in an exposition.
fn exposition_value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

/// Prometheus' answer to an instant query: (labels, value) per series.
fn prom_query(prom: SocketAddr, q: &str) -> Vec<(Value, f64)> {
    let (status, body) = http_get(prom, &format!("/api/v1/query?query={}", encode(q)))
        .unwrap_or_else(|| panic!("Prometheus did not answer {q}"));
    assert_eq!(status, 200, "{q}: {body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let value = r["value"][1].as_str().unwrap().parse::<f64>().unwrap();
            (r["metric"].clone(), value)
        })
        .collect()
}

case!(
    a_real_prometheus_scrapes_the_histogram_of_a_live_run,
    [Root, Program("prometheus", "prometheus"), Measuring],
    |t| {
        let (port, prom_port) = (free_port(), free_port());
        let config = t.path("prometheus.yml");
        std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: rtlat\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n        labels:\n          board: ci\n"
        ),
    )
    .unwrap();
        let prom_log = std::fs::File::create(t.path("prometheus.log")).unwrap();
        let _prom = Reaped(
            Command::new("prometheus")
                .arg(format!("--config.file={}", config.display()))
                .arg(format!("--storage.tsdb.path={}", t.path("data").display()))
                .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
                .stdout(Stdio::null())
                .stderr(prom_log)
                .spawn()
                .unwrap(),
        );
        let prom: SocketAddr = format!("127.0.0.1:{prom_port}").parse().unwrap();
        let until = Instant::now() + Duration::from_secs(30);
        while http_get(prom, "/-/ready").map(|r| r.0) != Some(200) {
            assert!(Instant::now() < until, "Prometheus never became ready");
            std::thread::sleep(Duration::from_millis(200));
        }

        let json = t.path("timer.json");
        let mut run = timer_serving(port, "30s", &json, Stdio::null());
        let status = run.0.wait().unwrap();
        assert!(status.success() || status.code() == Some(1), "{status}");
        let result = util::load(&json);
        // Scrapes take a moment to be queryable.
        std::thread::sleep(Duration::from_secs(2));

        let scrapes = prom_query(prom, "count_over_time(rtlat_latency_seconds_count[5m])");
        assert!(
            !scrapes.is_empty(),
            "Prometheus stored no rtlat_latency_seconds_count"
        );
        for (labels, n) in &scrapes {
            assert!(*n >= 2.0, "{labels}: only {n} scrapes");
            assert_eq!(labels["board"], "ci");
        }
        let counts = prom_query(prom, "last_over_time(rtlat_latency_seconds_count[5m])");
        let maxima = prom_query(prom, "last_over_time(rtlat_latency_max_seconds[5m])");
        let buckets = prom_query(prom, "last_over_time(rtlat_latency_seconds_bucket[5m])");
        let info = prom_query(prom, "last_over_time(rtlat_info[5m])");
        assert_eq!(info.len(), 1);
        assert_eq!(info[0].0["benchmark"], "timer");
        assert_eq!(info[0].0["preempt"], result["system"]["preempt_model"]);

        let duration_s = result["duration_ns"].as_f64().unwrap() / 1e9;
        let threads = result["threads"].as_array().unwrap();
        assert_eq!(counts.len(), threads.len(), "one series per thread");
        for t in threads {
            let series = t["name"].as_str().unwrap();
            let of = |v: &[(Value, f64)]| -> Vec<(Value, f64)> {
                v.iter()
                    .filter(|(l, _)| l["series"] == series)
                    .cloned()
                    .collect()
            };
            let samples = t["summary"]["samples"].as_f64().unwrap();
            // The last scrape is at most one scrape interval (1 s) plus one
            // publication interval (200 ms) older than the end of the run.
            let tolerance = samples / duration_s * 1.2 + 1.0;
            let scraped = of(&counts)[0].1;
            eprintln!("{series}: result {samples} samples, last scrape {scraped}");
            assert!(
            scraped <= samples && samples - scraped <= tolerance,
            "{series}: Prometheus counted {scraped}, the result {samples} (tolerance {tolerance})"
        );
            // The highest non-empty bucket: the lowest bound holding every sample.
            let mut bounds: Vec<(f64, f64)> = of(&buckets)
                .iter()
                .map(|(l, v)| (l["le"].as_str().unwrap().parse::<f64>().unwrap(), *v))
                .collect();
            bounds.sort_by(|a, b| a.0.total_cmp(&b.0));
            assert_eq!(bounds.last().unwrap().1, scraped, "+Inf holds every sample");
            let top = bounds.iter().position(|b| b.1 == scraped).unwrap();
            let (le, below) = (
                bounds[top].0,
                top.checked_sub(1).map_or(0.0, |i| bounds[i].0),
            );
            // The maximum the last scrape saw: the result's, unless that came later.
            let max_s = t["summary"]["max_ns"].as_f64().unwrap() / 1e9;
            let max_at = t["summary"]["max_at_ns"].as_f64().unwrap() / 1e9;
            let scraped_max = of(&maxima)[0].1;
            let max = if max_at < duration_s - 1.5 {
                max_s
            } else {
                scraped_max
            };
            if max_at < duration_s - 1.5 {
                assert!(
                    (scraped_max - max_s).abs() < 1e-9,
                    "{series}: max {scraped_max} vs {max_s}"
                );
            }
            assert!(
                below <= max && max <= le,
                "{series}: maximum {max}s outside the highest non-empty bucket ({below}, {le}]"
            );
        }
    }
);

/// Resident memory and thread count of process `pid`.
fn rss_kib_and_threads(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |k: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap()
    };
    (field("VmRSS:"), field("Threads:"))
}

case!(
    hostile_clients_neither_grow_rtlat_nor_disturb_it,
    [Root, Measuring],
    |t| {
        let json = t.path("timer.json");
        let port = free_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        // The run's summary goes into a pipe already full, read only once the
        // final snapshot has been scraped: the run publishes its final figures,
        // then blocks printing its summary, so the endpoint keeps serving them.
        let (mut summary, full) = full_pipe();
        let mut run = timer_serving(port, "12s", &json, full);
        let started = Instant::now();
        let pid = run.0.id();
        wait_for_metrics(addr);
        // Settle: a few requests served, so the baseline has the server's buffers.
        for _ in 0..5 {
            wait_for_metrics(addr);
        }
        let (rss0, threads0) = rss_kib_and_threads(pid);

        // 200 idle connections at once.
        let idle: Vec<TcpStream> = (0..200)
            .filter_map(|_| TcpStream::connect(addr).ok())
            .collect();
        assert!(idle.len() >= 100, "only {} connections made", idle.len());
        // A 1 MB request header: the server gives up after 8 KiB.
        let mut big = TcpStream::connect(addr).unwrap();
        big.set_write_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        big.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut header = b"GET /metrics HTTP/1.1\r\nX-Big: ".to_vec();
        header.resize(1 << 20, b'a');
        header.extend_from_slice(b"\r\n\r\n");
        // The write may end in the kernel's buffers before the server reads it.
        let _ = big.write_all(&header);
        let mut big_answer = Vec::new();
        let _ = big.read_to_end(&mut big_answer);
        // Random bytes, with and without the end of a header.
        let mut x: u32 = 0x9e37_79b9;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        for end in [&b""[..], b"\r\n\r\n"] {
            if let Ok(mut s) = TcpStream::connect(addr) {
                let _ = s.write_all(&noise);
                let _ = s.write_all(end);
            }
        }
        std::thread::sleep(Duration::from_secs(1));
        let (rss1, threads1) = rss_kib_and_threads(pid);
        drop(idle);
        drop(big);

        // The endpoint answers again once the idle connections are gone.
        let body = wait_for_metrics(addr);
        assert!(
            body.contains("rtlat_latency_seconds_count{series="),
            "{body}"
        );
        let (rss2, threads2) = rss_kib_and_threads(pid);
        eprintln!("RSS {rss0} KiB before, {rss1} under abuse, {rss2} after; threads {threads0}/{threads1}/{threads2}");
        assert!(
            big_answer.is_empty(),
            "1 MB of header was answered: the server should close after 8 KiB"
        );
        for (when, rss, threads) in [("under abuse", rss1, threads1), ("after", rss2, threads2)] {
            assert!(
                rss < rss0 + 2048,
                "RSS grew from {rss0} KiB to {rss} KiB {when}"
            );
            assert_eq!(threads, threads0, "thread count changed {when}");
        }
        let (status, _) = http_get(addr, "/").unwrap();
        assert_eq!(status, 404);

        // Once the run's 12 s are over, a snapshot unchanged across several
        // publication intervals (200 ms) is the final one.
        let until = started + Duration::from_secs(40);
        std::thread::sleep(
            (started + Duration::from_secs(13)).saturating_duration_since(Instant::now()),
        );
        let mut body = wait_for_metrics(addr);
        loop {
            std::thread::sleep(Duration::from_millis(700));
            let again = wait_for_metrics(addr);
            if again == body {
                break;
            }
            body = again;
            assert!(Instant::now() < until, "the snapshot never settled: {body}");
        }
        let mut printed = String::new();
        summary.read_to_string(&mut printed).unwrap();
        let status = run.0.wait().unwrap();
        assert!(status.success() || status.code() == Some(1), "{status}");
        assert!(printed.contains("rtlat timer"), "{printed}");
        let result = util::load(&json);
        // Every thread kept its pace through the abuse (1 ms period, 12 s): the
        // samples a period-driven thread takes do not depend on its latencies,
        // only on it being woken at all.
        let duration_s = result["duration_ns"].as_f64().unwrap() / 1e9;
        for t in result["threads"].as_array().unwrap() {
            let samples = t["summary"]["samples"].as_f64().unwrap();
            let overruns = t["summary"]["overruns"].as_f64().unwrap();
            let expected = duration_s * 1000.0;
            assert!(
                samples + overruns >= expected * 0.97,
                "{}: {samples} samples + {overruns} overruns in {duration_s}s",
                t["name"]
            );
        }
        // The last /metrics is the result: the same run, the same figures.
        assert_scrape_is_the_result(&body, &result);
    }
);

/// A pipe whose buffer is full: its read end, and its write end for a
/// child, whose first write then blocks until the read end is read.
fn full_pipe() -> (std::fs::File, Stdio) {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors were just created and are owned here only.
    let (reader, mut writer) = unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    };
    // SAFETY: fcntl on a descriptor this function owns; no pointers.
    let size = unsafe { libc::fcntl(fds[1], libc::F_SETPIPE_SZ, 4096) };
    assert!(
        size > 0,
        "F_SETPIPE_SZ: {}",
        std::io::Error::last_os_error()
    );
    writer.write_all(&vec![b'\n'; size as usize]).unwrap();
    (reader, Stdio::from(writer))
}

/// Every figure the exposition `body` carries equals the result's.
fn assert_scrape_is_the_result(body: &str, result: &Value) {
    let value = |metric: &str, series: &str| -> f64 {
        let key = format!("{metric}{{series=\"{series}\"}}");
        exposition_value(body, &key).unwrap_or_else(|| panic!("no {key} in {body}"))
    };
    let duration_ns = result["duration_ns"].as_f64().unwrap();
    let elapsed = exposition_value(body, "rtlat_elapsed_seconds").expect("elapsed");
    assert_eq!(elapsed, duration_ns / 1e9, "not the final snapshot: {body}");
    let threads = result["threads"].as_array().unwrap();
    assert_eq!(
        body.matches("rtlat_latency_seconds_count{").count(),
        threads.len(),
        "one series per thread: {body}"
    );
    for t in threads {
        let name = t["name"].as_str().unwrap();
        let s = &t["summary"];
        let n = |k: &str| s[k].as_f64().unwrap();
        assert_eq!(
            value("rtlat_latency_seconds_count", name),
            n("samples"),
            "{name}"
        );
        assert_eq!(value("rtlat_samples_total", name), n("samples"), "{name}");
        assert_eq!(value("rtlat_overruns_total", name), n("overruns"), "{name}");
        assert_eq!(
            value("rtlat_latency_max_seconds", name),
            n("max_ns") / 1e9,
            "{name}"
        );
        // The result's average is rounded to the nanosecond.
        let avg_ns = value("rtlat_latency_seconds_sum", name) * 1e9 / n("samples");
        assert!(
            (avg_ns - n("avg_ns")).abs() <= 1.0,
            "{name}: {avg_ns} vs {s}"
        );
        // Each bound counts at least the result's buckets wholly under it
        // and at most those that start under it.
        let buckets = t["histogram"]["buckets"].as_array().unwrap();
        let under = |bound_ns: f64, edge: &str| -> f64 {
            buckets
                .iter()
                .filter(|b| b[edge].as_f64().unwrap() <= bound_ns)
                .map(|b| b["count"].as_f64().unwrap())
                .sum()
        };
        let prefix = format!("rtlat_latency_seconds_bucket{{series=\"{name}\",le=\"");
        let mut bounds = 0;
        for line in body.lines().filter_map(|l| l.strip_prefix(&prefix)) {
            let (le, v) = line.split_once("\"} ").unwrap();
            let v: f64 = v.parse().unwrap();
            let bound_ns = if le == "+Inf" {
                f64::INFINITY
            } else {
                (le.parse::<f64>().unwrap() * 1e9).round()
            };
            assert!(
                under(bound_ns, "high_ns") <= v && v <= under(bound_ns, "low_ns"),
                "{name}: {v} under {le} s"
            );
            bounds += 1;
        }
        assert_eq!(bounds, 14, "{name}: {body}");
    }
}

// `suite --metrics-listen`: each local step serves the endpoint in turn, so
// a scraper sees the cruncher and then the timer under one address.
case!(
    a_suite_serves_each_steps_metrics_on_one_address,
    [Root],
    |t| {
        let toml = t.path("two.toml");
        std::fs::write(
        &toml,
        "name = \"two\"\n\n[[step]]\nname = \"first\"\nbench = \"switch\"\nduration = \"3s\"\n\n\
         [[step]]\nname = \"second\"\nbench = \"timer\"\nduration = \"3s\"\nargs = [\"--cpus\", \"0\"]\n",
    )
    .unwrap();
        let port = free_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let _turn = util::measuring();
        let child = Command::new(util::bin())
            .arg("suite")
            .arg(&toml)
            .arg("--out")
            .arg(t.path("out"))
            .args(["--metrics-listen", &addr.to_string()])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut child = Reaped(child);
        let mut seen = std::collections::BTreeSet::new();
        let until = Instant::now() + Duration::from_secs(30);
        while seen.len() < 2 && Instant::now() < until {
            if let Some((200, body)) = http_get(addr, "/metrics") {
                for b in ["switch", "timer"] {
                    if body.contains(&format!("benchmark=\"{b}\"")) {
                        seen.insert(b);
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let status = child.0.wait().unwrap();
        assert!(status.success(), "suite failed: {status:?}");
        assert_eq!(
            seen.into_iter().collect::<Vec<_>>(),
            ["switch", "timer"],
            "both steps' endpoints were seen"
        );
    }
);

// Slowloris: 64 connections held open without a word while a scraper asks
// again and again. Every scrape is answered, each within 2 s.
case!(
    idle_connections_held_open_never_starve_a_scrape,
    [Measuring],
    |t| {
        let json = t.path("timer.json");
        let port = free_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let run = Reaped(
            Command::new(util::bin())
                .args(["timer", "--quiet", "--duration", "60s", "--cpus", "0"])
                .args(util::UNPRIVILEGED)
                .args(["--metrics-listen", &format!("127.0.0.1:{port}")])
                .arg("--json")
                .arg(&json)
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        );
        wait_for_metrics(addr);
        let idle: Vec<TcpStream> = (0..64)
            .filter_map(|_| TcpStream::connect(addr).ok())
            .collect();
        assert_eq!(idle.len(), 64, "connections made");
        // Past the server's 5 s request deadline, so that its idle slots also
        // time out meanwhile.
        let until = Instant::now() + Duration::from_secs(7);
        let mut scrapes = 0;
        while Instant::now() < until {
            let began = Instant::now();
            let got = http_get(addr, "/metrics");
            let took = began.elapsed();
            assert!(
                matches!(&got, Some((200, body)) if body.contains("rtlat_info{")),
                "scrape {scrapes} with 64 idle connections open: {got:?}"
            );
            assert!(
                took < Duration::from_secs(2),
                "scrape {scrapes} took {took:?}"
            );
            scrapes += 1;
            std::thread::sleep(Duration::from_millis(200));
        }
        assert!(scrapes >= 20, "{scrapes} scrapes");
        drop(idle);
        util::send_signal(run.0.id(), "INT");
    }
);

case!(
    a_watch_serves_the_culprit_of_each_threads_maximum_as_an_exemplar,
    [
        Root,
        Native(util::HOST_TRACE),
        Cpus(2, "the application and its hog run on CPU 1"),
        Machine(crate::watch::watch_events(), crate::watch::NO_EVENTS),
        Measuring
    ],
    |t| {
        use crate::watch::{fifo_on, now_ns, sleep_until};
        let port = free_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let mut w = Reaped(
            t.process()
                .args(["watch", "--comm", "rtmax", "--duration", "10s", "--quiet"])
                .args(["--metrics-listen", &addr.to_string()])
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        );
        wait_for_metrics(addr);
        // A 1 ms periodic thread, and a hog above it that holds their CPU
        // for 50 ms once: longer than anything else here delays it.
        let app = std::thread::Builder::new()
            .name("rtmax".into())
            .spawn(|| {
                fifo_on(1, 50);
                let mut next = now_ns() + 1_000_000;
                for _ in 0..3000 {
                    sleep_until(next);
                    next += 1_000_000;
                }
            })
            .unwrap();
        std::thread::Builder::new()
            .name("rtmaxhog".into())
            .spawn(|| {
                fifo_on(1, 70);
                sleep_until(now_ns() + 1_000_000_000);
                let end = now_ns() + 50_000_000;
                while now_ns() < end {}
            })
            .unwrap()
            .join()
            .unwrap();
        app.join().unwrap();
        // The endpoint is refreshed once per interval (1 s).
        std::thread::sleep(Duration::from_millis(1500));
        let accept =
            "Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n";
        let (status, body) = http_get_with(addr, "/metrics", accept).expect("an answer");
        assert_eq!(status, 200, "{body}");
        assert!(body.ends_with("# EOF\n"), "{body}");
        let line = body
            .lines()
            .find(|l| {
                l.starts_with("rtlat_latency_seconds_bucket{series=\"rtmax:") && l.contains(" # {")
            })
            .unwrap_or_else(|| panic!("no exemplar on the application's series: {body}"));
        let (_, exemplar) = line.split_once(" # {culprit=\"").expect("a culprit");
        assert!(exemplar.starts_with("rtmaxhog "), "{line}");
        let secs: f64 = exemplar.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(secs >= 0.045, "{line}");
        // Without asking for OpenMetrics: the text format, no exemplar.
        let (_, plain) = http_get(addr, "/metrics").expect("an answer");
        assert!(
            !plain.contains(" # {") && !plain.contains("# EOF"),
            "{plain}"
        );
        // Ended as a user ends it, so that it removes its tracefs instance.
        // SAFETY: a signal to the watch this test started and has not reaped.
        unsafe { libc::kill(w.0.id() as libc::pid_t, libc::SIGINT) };
        let _ = w.0.wait();
    }
);
