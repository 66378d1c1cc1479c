use crate::util::*;
use std::path::Path;

/// A synthetic timer run (seed 7) with `extra` options, its result in
/// `dir/name`, that exits with `code`.
fn synthetic(
    dir: &Path,
    name: &str,
    extra: &[&str],
    code: i32,
) -> (std::process::Output, serde_json::Value) {
    let mut cmd = rtlat();
    cmd.args(["timer", "--synthetic", "7", "--quiet"])
        .args(extra);
    run_json(&mut cmd, &dir.join(name), code)
}

#[test]
fn synthetic_summary_matches_snapshot() {
    let out = synthetic_on_cpu0(7, 200_000)
        .arg("--quiet")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    crate::snapshot::snapshot("timer-synthetic.txt", &String::from_utf8_lossy(&out.stdout));
}

case!(
    synthetic_results_are_deterministic_consistent_and_schema_valid,
    [],
    |t| {
        let args = ["--cpus", "0", "--loops", "50000", "--period", "200us"];
        let (_, a) = synthetic(t.dir(), "a.json", &args, 0);
        let (_, b) = synthetic(t.dir(), "b.json", &args, 0);
        assert_eq!(a["threads"], b["threads"], "same seed, different samples");
        assert_eq!(a["total"], b["total"]);
        assert_eq!(a["complete"], true);
        assert_eq!(a["end_reason"], "loops");
        assert_eq!(a["total"]["samples"], 50_000);
        assert_result_consistent(&a);
        // 50 000 samples at 200 us cover ~10 s: one series point per second.
        let points = a["threads"][0]["series"]["points"]
            .as_array()
            .expect("points");
        assert!((10..=11).contains(&points.len()), "{} points", points.len());
        assert_eq!(a["config"]["period_ns"], 200_000);
    }
);

case!(
    synthetic_overruns_are_counted_and_the_max_is_located,
    [],
    |t| {
        let (_, r) = synthetic(
            t.dir(),
            "o.json",
            &["--cpus", "0", "--loops", "1000000", "--period", "100us"],
            0,
        );
        let s = &r["threads"][0]["summary"];
        // The synthetic source overruns by >= 2 periods about every 200 000 samples.
        assert!(s["overruns"].as_u64().expect("overruns") >= 2, "{s}");
        assert!(s["max_ns"].as_u64().expect("max") >= 200_000, "{s}");
        let idx = s["max_sample"].as_u64().expect("idx");
        assert!(idx < 1_000_000);
        let at = s["max_at_ns"].as_u64().expect("at");
        // Sample k wakes at about k periods plus the overruns before it.
        assert!(
            at >= idx * 100_000,
            "max at {at} ns before its sample's slot"
        );
        // 1 000 000 samples support p99.9999.
        let ps = s["percentiles"].as_array().expect("ps");
        assert_eq!(ps.len(), 7);
    }
);

case!(
    max_latency_exceeded_exits_1_after_writing_results,
    [],
    |t| {
        let (out, r) = synthetic(
            t.dir(),
            "m.json",
            &["--cpus", "0", "--loops", "10000", "--max-latency", "10us"],
            1,
        );
        assert_eq!(r["complete"], true);
        assert_eq!(r["thresholds"]["max_latency_exceeded"], true);
        assert_eq!(r["total"]["samples"], 10_000);
        assert!(String::from_utf8_lossy(&out.stdout).contains("EXCEEDED"));
        let (_, r) = synthetic(
            t.dir(),
            "n.json",
            &["--cpus", "0", "--loops", "10000", "--max-latency", "10s"],
            0,
        );
        assert_eq!(r["thresholds"]["max_latency_exceeded"], false);
    }
);

case!(break_threshold_stops_at_the_first_sample_above, [], |t| {
    let (_, r) = synthetic(
        t.dir(),
        "b.json",
        &[
            "--cpus",
            "0",
            "--loops",
            "100000",
            "--break-threshold",
            "40us",
        ],
        1,
    );
    assert_eq!(r["end_reason"], "break");
    let b = &r["thresholds"]["break_event"];
    let s = &r["threads"][0]["summary"];
    assert!(b["latency_ns"].as_u64().expect("lat") > 40_000);
    // The break sample is the last one recorded, and the only one above the threshold.
    assert_eq!(
        b["sample"].as_u64().expect("sample") + 1,
        s["samples"].as_u64().expect("n")
    );
    assert_eq!(b["latency_ns"], s["max_ns"]);
    assert!(s["samples"].as_u64().expect("n") < 100_000);
});

case!(
    real_timer_run_meets_the_acceptance_invariants,
    [Root, Measuring],
    |t| {
        let (out, r) = t.run_json(t.rtlat().args(["timer", "--duration", "3s"]), "r.json", 0);
        assert_eq!(r["complete"], true);
        assert_eq!(r["end_reason"], "duration");
        let t = &r["tuning"];
        assert_eq!(
            (t["policy"].as_str(), t["priority"].as_i64()),
            (Some("fifo"), Some(80))
        );
        assert_eq!(t["mlock"], true);
        assert_eq!(t["dma_latency_us"], 0);
        let threads = r["threads"].as_array().expect("threads");
        let online = threads.len();
        assert!(online >= 1);
        assert_eq!(t["affinity"].as_array().expect("affinity").len(), online);
        assert_result_consistent(&r);
        for th in threads {
            let s = &th["summary"];
            // Every period of the 3 s is either a sample or a counted overrun.
            let periods = s["samples"].as_u64().expect("n") + s["overruns"].as_u64().expect("o");
            assert!(
                (2997..=3003).contains(&periods),
                "{periods} periods in 3 s at 1 ms: {s}"
            );
        }
        let lines = String::from_utf8_lossy(&out.stdout);
        assert!(
            lines.contains("interval t=1.000s name=cpu"),
            "no interval lines: {lines}"
        );
    }
);

case!(
    real_loops_give_exactly_that_many_samples,
    [Root, Measuring],
    |t| {
        let (_, r) = t.run_json(
            t.rtlat().args([
                "timer", "--cpus", "0", "--period", "200us", "--loops", "2000", "--quiet",
            ]),
            "l.json",
            0,
        );
        assert_eq!(r["total"]["samples"], 2000);
        assert_eq!(r["end_reason"], "loops");
        assert_eq!(r["threads"][0]["cpu"], 0);
    }
);

case!(real_break_marks_the_kernel_trace, [Root, Measuring], |t| {
    let (_, r) = t.run_json(
        t.rtlat()
            .args(["timer", "--cpus", "0", "--duration", "5s"])
            .args(["--break-threshold", "1ns", "--quiet"]),
        "t.json",
        1,
    );
    let b = &r["thresholds"]["break_event"];
    assert_eq!(b["sample"], 0, "1 ns is exceeded by the first sample");
    if b["trace_marked"] == true {
        let trace = std::fs::read_to_string("/sys/kernel/tracing/trace").expect("trace readable");
        let _ = std::fs::write("/sys/kernel/tracing/tracing_on", "1");
        assert!(
            trace.contains("rtlat: break on cpu0"),
            "marker missing from the trace"
        );
    } else {
        assert!(
            r["notes"].to_string().contains("tracefs"),
            "unmarked break without a note"
        );
    }
});

case!(
    deadline_policy_runs_unpinned_and_is_recorded,
    [Root, Measuring],
    |t| {
        let (_, r) = t.run_json(
            t.rtlat()
                .args(["timer", "--policy", "deadline", "--dl-runtime", "100us"])
                .args(["--duration", "1s", "--quiet"]),
            "d.json",
            0,
        );
        assert_eq!(r["tuning"]["policy"], "deadline");
        assert_eq!(r["tuning"]["deadline"]["runtime_ns"], 100_000);
        assert_eq!(r["tuning"]["deadline"]["period_ns"], 1_000_000);
        assert!(r["threads"][0]["cpu"].is_null());
        assert!(r["total"]["samples"].as_u64().expect("n") > 900);
    }
);

fn vm_rss_kb(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

case!(
    resident_memory_stays_flat_during_a_run,
    [
        Root,
        Native("the RSS is qemu-user's, which grows with its cache of translated code",),
        Measuring
    ],
    |t| {
        let mut child = t
            .process()
            .args([
                "timer",
                "--period",
                "100us",
                "--duration",
                "8s",
                // 8 000 intervals: the series fills its 4 096 points and merges
                // (at ~4.1 s) between the two readings.
                "--interval",
                "1ms",
                "--save-every",
                "1s",
                "--quiet",
                "--json",
            ])
            .arg(t.path("m.json"))
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let early = vm_rss_kb(child.id()).expect("rss at 1.5 s");
        std::thread::sleep(std::time::Duration::from_millis(6000));
        let late = vm_rss_kb(child.id()).expect("rss at 7.5 s");
        assert!(child.wait().expect("wait").success());
        // Locked memory only grows if something allocates beyond the reserve
        // sized for the run: allow one page of slack per thread stack guard.
        assert!(late <= early + 64, "RSS grew from {early} kB to {late} kB");
    }
);

case!(
    idle_first_then_load_gives_two_phases_and_a_load_record,
    [Root, Measuring],
    |t| {
        let (out, r) = t.run_json(
            t.rtlat()
                .args([
                    "timer",
                    "--cpus",
                    "0",
                    "--duration",
                    "3s",
                    "--idle-first",
                    "1s",
                ])
                .args(["--load", "cpu:1", "--load-cpus", "0", "--quiet"]),
            "p.json",
            0,
        );
        let phases = r["phases"].as_array().expect("phases");
        assert_eq!(phases.len(), 2);
        assert_eq!(
            (phases[0]["name"].as_str(), phases[1]["name"].as_str()),
            (Some("idle"), Some("load"))
        );
        assert_eq!(phases[0]["end_ns"], 1_000_000_000u64);
        assert_eq!(phases[1]["start_ns"], 1_000_000_000u64);
        let n = |p: &serde_json::Value| {
            let s = &p["total"];
            s["samples"].as_u64().expect("n") + s["overruns"].as_u64().expect("o")
        };
        // 1 s idle and 2 s loaded at 1 ms: every period is in exactly one phase.
        assert!(
            (995..=1005).contains(&n(&phases[0])),
            "idle periods {}",
            n(&phases[0])
        );
        assert!(
            (1990..=2010).contains(&n(&phases[1])),
            "load periods {}",
            n(&phases[1])
        );
        assert_eq!(
            phases[0]["total"]["samples"].as_u64().expect("n")
                + phases[1]["total"]["samples"].as_u64().expect("n"),
            r["total"]["samples"].as_u64().expect("n")
        );
        let loads = r["loads"].as_array().expect("loads");
        assert_eq!(loads.len(), 1);
        assert_eq!(loads[0]["name"], "cpu");
        assert!(loads[0]["achieved_rate"].as_f64().expect("rate") > 0.0);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("phase idle")
                && stdout.contains("phase load")
                && stdout.contains("load cpu"),
            "{stdout}"
        );
    }
);

#[test]
fn load_options_are_validated() {
    assert_usage_errors(&[
        &["timer", "--idle-first", "1s"],
        &[
            "timer",
            "--load",
            "cpu:1",
            "--idle-first",
            "5s",
            "--duration",
            "2s",
        ],
        &["timer", "--load", "nosuch:1"],
        &["timer", "--load-cpus", "0"],
    ]);
}

/// The times of the `interval t=…s` lines of a piped run, in output order.
fn interval_times(stdout: &[u8]) -> Vec<f64> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("interval t="))
        .map(|l| {
            l.split('s')
                .next()
                .and_then(|t| t.parse().ok())
                .unwrap_or_else(|| panic!("bad interval line {l:?}"))
        })
        .collect()
}

fn assert_in_time_order(times: &[f64], what: &str) {
    assert!(times.len() >= 8, "{what}: {} interval lines", times.len());
    for w in times.windows(2) {
        assert!(w[0] <= w[1], "{what}: t={} printed before t={}", w[0], w[1]);
    }
}

case!(
    piped_interval_lines_come_out_in_time_order,
    [Measuring],
    |t| {
        // A simulation runs each thread far ahead of the others: the strongest case.
        let out = t
            .rtlat()
            .args([
                "timer",
                "--synthetic",
                "3",
                "--cpus",
                "0,1",
                "--loops",
                "200000",
                "--period",
                "100us",
            ])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0));
        let times = interval_times(&out.stdout);
        assert!(
            times.len() >= 2 * 20,
            "20 s simulated, 2 threads: {}",
            times.len()
        );
        assert_in_time_order(&times, "synthetic");

        if !need(Need::Root) {
            return;
        }
        let out = t
            .rtlat()
            .args([
                "timer",
                "--period",
                "1ms",
                "--duration",
                "3s",
                "--interval",
                "100ms",
            ])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0));
        assert_in_time_order(&interval_times(&out.stdout), "real");
    }
);

case!(
    the_recorded_duration_is_the_span_the_periods_cover,
    [Root, Measuring],
    |t| {
        let (_, r) = t.run_json(
            t.rtlat().args([
                "timer", "--cpus", "0", "--period", "1ms", "--loops", "1000", "--quiet",
            ]),
            "d.json",
            0,
        );
        let duration = r["duration_ns"].as_u64().expect("duration") as f64;
        // 1 000 samples cover 1 000 periods, plus the periods an overrun skipped.
        let overruns = r["total"]["overruns"].as_u64().expect("overruns") as f64;
        let span = (1000.0 + overruns) * 1e6;
        assert!(
            (duration - span).abs() <= 0.01 * 1e9,
            "duration {duration} ns for a span of {span} ns"
        );
    }
);

/// `field` (kB) of /proc/PID/status.
fn status_kb(pid: u32, field: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

case!(
    a_one_cpu_run_holds_little_memory,
    [
        Root,
        Native("the memory is qemu-user's, not the run's"),
        Measuring
    ],
    |t| {
        let mut child = t
            .process()
            .args(["timer", "--cpus", "0", "--duration", "3s", "--quiet"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(std::time::Duration::from_millis(2500));
        let pid = child.id();
        let (hwm, file, locked) = (
            status_kb(pid, "VmHWM:").expect("VmHWM"),
            status_kb(pid, "RssFile:").expect("RssFile"),
            status_kb(pid, "VmLck:").expect("VmLck"),
        );
        assert!(child.wait().expect("wait").success());
        // Memory is locked (the whole address space is marked), yet only what
        // the run touches is resident. The resident code (RssFile) is the
        // binary's and libc's as the kernel maps them (a debug build's is far
        // larger than a release build's), so the bound is on the rest: the
        // heap, the stacks, the buffers. A heap reserve of megabytes per thread
        // or fully populated thread stacks would exceed it.
        assert!(locked > 0, "memory not locked");
        let rest = hwm.saturating_sub(file);
        assert!(
            rest <= 2048,
            "peak resident {hwm} kB, of which {file} kB code and files: {rest} kB beyond them"
        );
    }
);

/// Send `sig` to `child` and wait for it; how long it took to end.
fn signal_and_time(child: &mut std::process::Child, sig: i32) -> std::time::Duration {
    let sent = std::time::Instant::now();
    // SAFETY: kill(2) on our own child, which has not been waited for.
    unsafe { libc::kill(child.id() as i32, sig) };
    let status = child.wait().expect("waits");
    assert_eq!(status.code(), Some(0), "{status:?}");
    sent.elapsed()
}

case!(
    absurd_periods_and_durations_are_refused_and_the_longest_period_still_answers_sigterm,
    [Measuring],
    |t| {
        for args in [
            ["--period", "18446744073s"],
            ["--period", "2s"],
            ["--duration", "18446744073s"],
            ["--duration", "99999999999999999999h"],
            ["--save-every", "8785h"],
        ] {
            let started = std::time::Instant::now();
            let out = t
                .rtlat()
                .args(["timer", "--cpus", "0", "--policy", "other", "--quiet"])
                .args(args)
                .timeout(std::time::Duration::from_secs(20))
                .output()
                .expect("runs");
            assert_eq!(out.status.code(), Some(2), "{args:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(err.contains("longest"), "{args:?} names no bound: {err}");
            assert!(started.elapsed() < std::time::Duration::from_secs(5));
        }
        // A suite step's duration goes through the same bound.
        let plan = t.path("s.toml");
        std::fs::write(
        &plan,
        "name = \"x\"\n[[step]]\nname = \"t\"\nbench = \"timer\"\nduration = \"18446744073s\"\n",
    )
    .unwrap();
        let out = t
            .rtlat()
            .arg("suite")
            .arg(&plan)
            .arg("--out")
            .arg(t.path("out"))
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("longest duration"));

        // The longest period there is: SIGTERM still ends the run within 2 s, result saved.
        let r = t.path("r.json");
        let mut child = t
            .process()
            .args(["timer", "--cpus", "0", "--policy", "other", "--no-mlock"])
            .args([
                "--dma-latency",
                "off",
                "--quiet",
                "--period",
                "1s",
                "--json",
            ])
            .arg(&r)
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("spawns");
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let took = signal_and_time(&mut child, libc::SIGTERM);
        assert!(took < std::time::Duration::from_secs(2), "took {took:?}");
        let v = load(&r);
        assert_eq!(v["complete"], true);
        assert_eq!(v["end_reason"], "signal");
    }
);
