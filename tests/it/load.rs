//! Integration tests for `rtlat load`: rates, records, clean-up after every
//! way a run can end, bad specs, scheduling and CPU confinement of the loads.

use crate::explain::Reaped;
use crate::util::*;
use rtlat::load::{parse_spec, LoadOptions, RunningLoads};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Every process rtlat starts inherits this variable from it (the loads' own
/// children get it too: they are given rtlat's environment).
const TAG: &str = "RTLAT_TEST_TAG";

fn unique_tag() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "load-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Live processes carrying `TAG=tag` (zombies have no environment and do not count).
fn tagged(tag: &str) -> Vec<i32> {
    let needle = format!("{TAG}={tag}");
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Wait until `cond` holds, at most `limit`.
fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// `rtlat load ARGS`, killed when the test ends however it ends (a failed
/// assertion must not leave loads running under the tests after it).
fn spawn_load(args: &[&str], tag: &str, tmp: &Path) -> Reaped {
    let child = Command::new(bin())
        .arg("load")
        .args(args)
        .env(TAG, tag)
        .env("TMPDIR", tmp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rtlat load");
    Reaped(child)
}

fn empty_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).expect("read dir").count() == 0
}

fn records(path: &Path) -> Vec<Value> {
    load(path)["loads"].as_array().expect("loads").clone()
}

/// `cmd` (an `rtlat load`) run with `-q --json JSON`, which must exit 0:
/// its output and its records.
fn run_load(cmd: &mut assert_cmd::Command, json: &Path) -> (Output, Vec<Value>) {
    let out = cmd.args(["-q", "--json"]).arg(json).output().expect("runs");
    assert_eq!(out.status.code(), Some(0), "{:?}", stderr_lines(&out));
    (out, records(json))
}

fn assert_record_ok(r: &Value) {
    for key in [
        "name",
        "spec",
        "params",
        "workers",
        "started",
        "failed",
        "achieved_rate",
        "rate_unit",
        "ops",
        "cpu_time_ns",
        "duration_ns",
    ] {
        assert!(r.get(key).is_some(), "{key} missing in {r}");
    }
    assert!(r["achieved_rate"].as_f64().unwrap() > 0.0, "no rate: {r}");
    assert!(r["ops"].as_u64().unwrap() > 0, "no ops: {r}");
    assert!(r["cpu_time_ns"].as_u64().unwrap() > 0, "no CPU time: {r}");
    assert_eq!(r["started"], r["workers"], "a worker is missing: {r}");
    assert_eq!(r["failed"].as_array().unwrap().len(), 0, "failures: {r}");
    assert!(["ops/s", "bytes/s"].contains(&r["rate_unit"].as_str().unwrap()));
}

case!(
    the_issue_loads_report_rates_and_leave_nothing_behind,
    [],
    |t| {
        let json = t.path("out").with_extension("json");
        let io_dir = tempfile::tempdir().expect("tempdir");
        let tag = unique_tag();
        let out = t
            .process()
            .args([
                "load",
                "exec:2,memory:32M,cpu:1",
                "--duration",
                "2s",
                "--json",
            ])
            .arg(&json)
            .env(TAG, &tag)
            .env("TMPDIR", io_dir.path())
            .output()
            .expect("rtlat runs");
        assert_eq!(out.status.code(), Some(0), "{:?}", stderr_lines(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("t=1.") && l.contains(" exec ")),
            "no periodic rates: {stdout}"
        );
        assert!(stdout.contains("(duration reached)"), "{stdout}");
        let recs = records(&json);
        let names: Vec<&str> = recs.iter().map(|r| r["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["exec", "memory", "cpu"]);
        for r in &recs {
            assert_record_ok(r);
            let d = r["duration_ns"].as_u64().unwrap();
            assert!(
                (1_800_000_000..4_000_000_000).contains(&d),
                "duration {d}: {r}"
            );
        }
        assert_eq!(recs[0]["params"]["command"], "ls /bin");
        assert_eq!(recs[1]["params"]["size_bytes"], 32 << 20);
        assert_eq!(recs[1]["rate_unit"], "bytes/s");
        assert_eq!(
            recs[1]["bytes"].as_u64().unwrap(),
            recs[1]["ops"].as_u64().unwrap() * 64
        );
        // Nothing left: no process that inherited rtlat's environment, no file.
        assert_eq!(
            tagged(&tag),
            Vec::<i32>::new(),
            "processes left after the run"
        );
        assert!(empty_dir(io_dir.path()), "files left in TMPDIR");
    }
);

case!(
    sigkill_of_rtlat_leaves_no_load_process_within_2s,
    [Measuring],
    |t| {
        // Its 2 s are a deadline, so it takes the measuring turn as the other
        // timing-based tests do: no real-time run of another test beside it.
        let tag = unique_tag();
        let mut child = spawn_load(
            &[
                "exec:2,hackbench:1:fds=3,memory:1M,io:1:1M:block=4K,net:1MB/s,timers:2:1ms",
                "--quiet",
            ],
            &tag,
            t.dir(),
        );
        // rtlat, its load host and 6 hackbench tasks at least (exec children come and go).
        let started = || {
            let t = tagged(&tag);
            t.len() >= 8 && t.iter().any(|&p| comm(p) == "rtlat-hackbench")
        };
        assert!(
            wait_until(Duration::from_secs(10), started),
            "the loads did not start: {:?}",
            tagged(&tag)
        );
        let before = tagged(&tag);
        assert!(
            before.iter().any(|&p| comm(p) == "rtlat-loads"),
            "no load host"
        );
        assert!(before.iter().any(|&p| comm(p) == "rtlat-hackbench"));
        send_signal(child.0.id(), "KILL");
        let _ = child.0.wait();
        let t0 = Instant::now();
        let gone = wait_until(Duration::from_secs(2), || tagged(&tag).is_empty());
        let left: Vec<(i32, String)> = tagged(&tag).into_iter().map(|p| (p, comm(p))).collect();
        assert!(gone, "after {:?} still alive: {left:?}", t0.elapsed());
        assert!(empty_dir(t.dir()), "the io load left a file");
    }
);

#[test]
fn sigint_and_sigterm_end_the_run_with_rates_printed() {
    for sig in ["INT", "TERM"] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let tag = unique_tag();
        let mut child = spawn_load(
            &[
                "exec:1,hackbench:1:fds=2,io:1:1M:block=4K",
                "--interval",
                "300ms",
            ],
            &tag,
            tmp.path(),
        );
        let mut lines = BufReader::new(child.0.stdout.take().expect("stdout")).lines();
        let first = lines.next().expect("a header").expect("text");
        assert!(first.starts_with("rtlat load: exec:1,"), "{first}");
        let periodic = lines.next().expect("a rate line").expect("text");
        assert!(periodic.starts_with("t="), "{periodic}");
        let t0 = Instant::now();
        send_signal(child.0.id(), sig);
        let rest: Vec<String> = lines.map_while(std::result::Result::ok).collect();
        let status = child.0.wait().expect("wait");
        assert!(t0.elapsed() < Duration::from_secs(3), "SIG{sig}: slow end");
        assert_eq!(status.code(), Some(0), "SIG{sig}");
        let text = rest.join("\n");
        assert!(text.contains(&format!("(SIG{sig})")), "{text}");
        for name in ["exec ", "hackbench ", "io "] {
            let row = rest
                .iter()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("no final row for {name}: {text}"));
            assert!(
                row.contains("/s") && !row.contains(" 0.0 "),
                "no rate in: {row}"
            );
        }
        assert!(
            wait_until(Duration::from_secs(1), || tagged(&tag).is_empty()),
            "left: {:?}",
            tagged(&tag)
        );
        assert!(empty_dir(tmp.path()));
    }
}

#[test]
fn bad_specs_and_options_exit_2_naming_the_token() {
    for (args, token) in [
        (vec!["foo"], "'foo'"),
        (vec!["memory:-1"], "'-1'"),
        (vec!["net:abc"], "'abc'"),
        (vec!["exec:2,cpu:0"], "'cpu:0'"),
        (vec!["exec:1:cmd=/nonexistent/prog"], "/nonexistent/prog"),
        (vec!["cpu:1", "--load-cpus", "4096"], "4096"),
        (vec!["net", "--load-target", "no-port"], "no-port"),
    ] {
        let out = rtlat()
            .arg("load")
            .args(&args)
            .args(["--duration", "1s"])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr_lines(&out);
        assert_eq!(err.len(), 1, "{args:?}: {err:?}");
        assert!(err[0].contains(token), "{args:?}: {}", err[0]);
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

case!(
    net_load_holds_its_rate_on_loopback_and_reaches_an_external_target,
    [],
    |t| {
        let json = t.path("net.json");
        let (_, recs) = run_load(
            t.rtlat().args(["load", "net:2MB/s", "--duration", "2s"]),
            &json,
        );
        let r = &recs[0];
        assert_record_ok(r);
        let rate = r["achieved_rate"].as_f64().unwrap();
        assert!(
            (1.8e6..=2.2e6).contains(&rate),
            "net:2MB/s achieved {rate} bytes/s: {r}"
        );
        let sent = r["bytes"].as_u64().unwrap();
        let received = r["received_bytes"].as_u64().unwrap();
        assert!(received > sent / 2 && received <= sent, "{r}");
        assert_eq!(r["params"]["sink"], "rtlat loopback sink");

        // An external target: our own socket counts what arrives.
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        sock.set_read_timeout(Some(Duration::from_millis(200)))
            .expect("timeout");
        let target = sock.local_addr().expect("addr").to_string();
        let counter = std::thread::spawn(move || {
            let (mut bytes, mut buf, mut idle) = (0u64, vec![0u8; 65536], 0);
            while idle < 10 {
                match sock.recv(&mut buf) {
                    Ok(n) => {
                        bytes += n as u64;
                        idle = 0;
                    }
                    Err(_) => idle += 1,
                }
            }
            bytes
        });
        let json2 = t.path("ext.json");
        let mut ext = t.rtlat();
        ext.args(["load", "net:1MB/s:payload=512", "--duration", "1s"])
            .args(["--load-target", &target]);
        let (_, recs) = run_load(&mut ext, &json2);
        let r = &recs[0];
        let got = counter.join().expect("counter");
        let sent = r["bytes"].as_u64().unwrap();
        assert_eq!(r["params"]["target"], target.as_str());
        assert_eq!(r["params"]["payload_bytes"], 512);
        assert!(sent > 800_000, "{r}");
        assert!(got > sent / 2 && got <= sent, "sent {sent}, received {got}");
    }
);

case!(net_flood_and_the_other_generators_run, [], |t| {
    let json = t.path("all.json");
    let specs =
        "net:flood,hackbench:1:fds=2:mode=thread:ipc=pipe,timers:2:1ms,exec:1:cmd=/bin/true";
    let mut all = t.rtlat();
    all.args(["load", specs, "--duration", "1s"])
        .env("TMPDIR", t.dir());
    let (_, recs) = run_load(&mut all, &json);
    for r in &recs {
        assert_record_ok(r);
    }
    assert_eq!(recs[0]["params"]["mode"], "flood");
    // Paced at 2 MB/s the sender sends 2 MB in a second; flooding, far more.
    assert!(
        recs[0]["achieved_rate"].as_f64().unwrap() > 2e6,
        "{}",
        recs[0]
    );
    assert_eq!(recs[1]["params"]["mode"], "thread");
    assert_eq!(recs[1]["params"]["ipc"], "pipe");
    // Timers: 2 threads at 1 kHz, sharing the CPUs with a flood and
    // hackbench, wake at most at the asked rate (their rate alone:
    // timers_wake_at_the_asked_rate).
    let wakeups = recs[2]["achieved_rate"].as_f64().unwrap();
    assert!(wakeups <= 2000.0 * 1.01, "{}", recs[2]);
});

case!(timers_wake_at_the_asked_rate, [Measuring], |t| {
    // Alone: beside other loads or a real-time run on the same CPUs, the
    // SCHED_OTHER timer threads are woken late and skip what they missed.
    let json = t.path("timers.json");
    let (_, recs) = run_load(
        t.rtlat().args(["load", "timers:2:1ms", "--duration", "3s"]),
        &json,
    );
    let r = &recs[0];
    assert_record_ok(r);
    assert_eq!(r["params"]["threads"], 2);
    assert_eq!(r["params"]["period_ns"], 1_000_000);
    // 2 threads at 1 kHz: 2000 wake-ups/s asked, met within 10 %.
    let rate = r["achieved_rate"].as_f64().unwrap();
    assert!((1800.0..=2200.0).contains(&rate), "{rate} wake-ups/s: {r}");
    // Never more wake-ups than expiries in the time the load ran.
    let expiries = 2 * r["duration_ns"].as_u64().unwrap() / 1_000_000;
    assert!(
        r["ops"].as_u64().unwrap() <= expiries,
        "{expiries} expiries: {r}"
    );
});

case!(a_worker_that_dies_is_recorded, [], |t| {
    let json = t.path("dead.json");
    // A command that cannot be executed: exit status 127 on its first run.
    let script = t.path("missing.sh");
    std::fs::write(&script, "#!/bin/sh\nexit 127\n").expect("script");
    let mut perm = std::fs::metadata(&script).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&script, perm).expect("chmod");
    let spec = format!("exec:2:cmd={},cpu:1", script.display());
    let (out, recs) = run_load(t.rtlat().args(["load", &spec, "--duration", "1s"]), &json);
    let failed = recs[0]["failed"].as_array().expect("failed");
    assert_eq!(failed.len(), 2, "{}", recs[0]);
    assert!(failed
        .iter()
        .all(|f| f["what"] == "died" && f["reason"].as_str().unwrap().contains("127")));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("died: cannot execute"), "{stdout}");
    assert_record_ok(&recs[1]);
});

case!(io_load_writes_a_nameless_file_and_leaves_none, [], |t| {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag();
    let spec = format!("io:2:2M:block=4K:dir={}", dir.path().display());
    let mut child = spawn_load(&[&spec, "--duration", "2s", "-q"], &tag, t.dir());
    // The host holds two unlinked files in the directory; the directory stays empty.
    let holds = || {
        tagged(&tag)
            .into_iter()
            .filter(|&p| comm(p) == "rtlat-loads")
            .flat_map(|p| {
                std::fs::read_dir(format!("/proc/{p}/fd"))
                    .into_iter()
                    .flatten()
            })
            .flatten()
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .filter(|l| {
                let l = l.to_string_lossy();
                l.starts_with(&*dir.path().to_string_lossy()) && l.ends_with("(deleted)")
            })
            .count()
    };
    assert!(
        wait_until(Duration::from_secs(10), || holds() == 2),
        "the io load holds no nameless file"
    );
    assert!(empty_dir(dir.path()), "a file has a name during the run");
    let status = child.0.wait().expect("wait");
    assert_eq!(status.code(), Some(0));
    assert!(empty_dir(dir.path()) && empty_dir(t.dir()));
    assert!(tagged(&tag).is_empty());
});

/// Policy (field 41 of /proc/PID/task/TID/stat) of every thread of `pid`.
fn policies(pid: i32) -> Vec<u32> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) {
            let after = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
            if let Some(p) = after.split_whitespace().nth(38) {
                out.push(p.parse().unwrap_or(99));
            }
        }
    }
    out
}

fn allowed_cpus(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or("")
        .trim()
        .to_string()
}

case!(
    loads_run_at_sched_other_on_the_load_cpus_even_under_an_rt_parent,
    [Root, Measuring],
    |t| {
        let tag = unique_tag();
        // rtlat itself at SCHED_FIFO 10, pinned to CPU 0, as a benchmark's thread may be.
        let mut child = Command::new("chrt")
            .args(["-f", "10", "taskset", "-c", "0"])
            .arg(bin())
            .args(["load", "cpu:1,hackbench:1:fds=2,exec:1,timers:2:1ms"])
            .args(["--load-cpus", "0", "--duration", "3s", "-q"])
            .env(TAG, &tag)
            .env("TMPDIR", t.dir())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chrt runs");
        assert!(
            wait_until(Duration::from_secs(10), || tagged(&tag)
                .iter()
                .filter(|&&p| comm(p) == "rtlat-hackbench")
                .count()
                >= 4),
            "the loads did not start"
        );
        let pids = tagged(&tag);
        let front = pids
            .iter()
            .copied()
            .find(|&p| comm(p) == "rtlat")
            .expect("rtlat");
        assert!(policies(front).contains(&1), "the parent is not SCHED_FIFO");
        let loads: Vec<i32> = pids.into_iter().filter(|&p| p != front).collect();
        assert!(loads.len() >= 5, "{loads:?}");
        for p in loads {
            let pol = policies(p);
            if pol.is_empty() {
                continue; // ended meanwhile (an exec child)
            }
            assert!(
                pol.iter().all(|&x| x == 0),
                "{} ({p}) runs at policy {pol:?}",
                comm(p)
            );
            let cpus = allowed_cpus(p);
            assert!(
                cpus == "0" || cpus.is_empty(),
                "{} ({p}) may run on {cpus}",
                comm(p)
            );
        }
        let status = child.wait().expect("wait");
        assert_eq!(status.code(), Some(0));
    }
);

#[test]
fn the_library_api_starts_reports_and_stops_loads() {
    let spec = parse_spec("cpu:1,timers:1:1ms").expect("spec");
    let opts = LoadOptions::parse(None, None).expect("opts");
    let loads = RunningLoads::start_with_exe(&bin(), &spec, &opts).expect("start");
    assert!(!loads.has_ended());
    std::thread::sleep(Duration::from_millis(1200));
    let now = loads.records();
    assert_eq!(now.len(), 2);
    assert!(now[0]["ops"].as_u64().unwrap() > 0, "{now:?}");
    let line = loads.rates_line();
    assert!(
        line.starts_with("cpu ") && line.contains(", timers "),
        "{line}"
    );
    let last = loads.stop();
    for r in &last {
        assert_record_ok(r);
    }
    assert!(last[1]["ops"].as_u64() >= now[1]["ops"].as_u64());
    // A load the host cannot start is reported as the host's error (environment: exit 3).
    let bad = parse_spec("cpu:1,io:1:dir=/nonexistent/dir").expect("spec");
    let e = RunningLoads::start_with_exe(&bin(), &bad, &opts)
        .err()
        .expect("fails");
    assert_eq!(e.exit_code(), 3);
    assert!(e.to_string().contains("/nonexistent/dir"), "{e}");
}

case!(
    killing_the_load_host_kills_its_children_and_is_reported,
    [Measuring],
    |t| {
        // A 2 s deadline, as above: no real-time run of another test beside it.
        let json = t.path("k.json");
        let tag = unique_tag();
        let mut child = spawn_load(
            &[
                "exec:1,hackbench:1:fds=3",
                "-q",
                "--json",
                json.to_str().unwrap(),
            ],
            &tag,
            t.dir(),
        );
        let host = || tagged(&tag).into_iter().find(|&p| comm(p) == "rtlat-loads");
        assert!(
            wait_until(Duration::from_secs(10), || tagged(&tag)
                .iter()
                .filter(|&&p| comm(p) == "rtlat-hackbench")
                .count()
                == 6),
            "the loads did not start"
        );
        // Let the host report once, then kill it: its children die with it (PR_SET_PDEATHSIG).
        std::thread::sleep(Duration::from_millis(700));
        send_signal(host().expect("host") as u32, "KILL");
        let front = child.0.id() as i32;
        assert!(
            wait_until(Duration::from_secs(2), || tagged(&tag)
                .iter()
                .all(|&p| p == front)),
            "left: {:?}",
            tagged(&tag)
                .into_iter()
                .map(|p| (p, comm(p)))
                .collect::<Vec<_>>()
        );
        // rtlat notices, ends and says what happened.
        let status = child.0.wait().expect("wait");
        assert_eq!(status.code(), Some(0));
        let mut out = String::new();
        std::io::Read::read_to_string(&mut child.0.stdout.take().unwrap(), &mut out).unwrap();
        assert!(out.contains("(the load process ended)"), "{out}");
        for r in records(&json) {
            let failed = r["failed"].as_array().expect("failed");
            assert!(
                failed
                    .iter()
                    .any(|f| f["reason"].as_str().unwrap().contains("ended unexpectedly")),
                "{r}"
            );
        }
    }
);

/// Without the responder module, the kspin load (a kernel section with
/// preemption off) cannot start: exit 3, one line naming how to get it, and
/// the benchmark it was to load ends the same way.
#[test]
fn kspin_without_the_responder_module_names_the_fix() {
    if !need(Need::Machine(
        !Path::new("/dev/rtlat-responder").exists(),
        "the responder module is loaded: this checks the error without it",
    )) {
        return;
    }
    for args in [
        &["load", "kspin", "--duration", "1s"][..],
        &["timer", "--duration", "1s", "--load", "kspin:len=2ms", "-q"][..],
    ] {
        let out = rtlat().args(args).output().expect("rtlat runs");
        let line = error_line(&out, 3, &args.join(" "));
        assert!(
            line.contains("for the kspin load")
                && line.contains("rtlat-responder kernel module is not loaded")
                && line.contains("scripts/kmod-build.sh"),
            "{line}"
        );
    }
}
