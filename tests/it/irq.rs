//! `rtlat irq`: the simulated wire end to end, and the errors of the real backends.
//! (The GPIO backend against a real kernel is tested by scripts/gpio-e2e.sh in QEMU.)

use crate::util::*;
use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A run of the simulated wire as `role`, unprivileged (these tests check
/// behaviour, not real-time latency), with the options in `extra` (split at
/// white space): its output and its result, which must exist and match the
/// schema. The run must exit 0.
fn sim(dir: &Path, role: &str, extra: &str) -> (std::process::Output, Value) {
    let json = dir.join(format!("{role}.json"));
    let out = rtlat()
        .args(["irq", role, "--backend", "sim", "--quiet", "--json"])
        .arg(&json)
        .args(UNPRIVILEGED)
        .args(extra.split_whitespace())
        .output()
        .expect("runs");
    assert!(
        json.exists(),
        "no result: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = load(&json);
    assert_schema_valid(&json);
    assert_eq!(out.status.code(), Some(0), "{:?}", stderr_lines(&out));
    (out, r)
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// irq <= user holds per edge, so it holds for min, max and every percentile.
fn assert_irq_below_user(r: &Value) {
    let (irq, user) = (&thread(r, "irq")["summary"], &thread(r, "user")["summary"]);
    for k in ["min_ns", "avg_ns", "max_ns"] {
        assert!(
            u(&irq[k]) <= u(&user[k]),
            "{k}: irq {} > user {}",
            irq[k],
            user[k]
        );
    }
    let ip = irq["percentiles"].as_array().expect("p");
    let up = user["percentiles"].as_array().expect("p");
    assert_eq!(ip.len(), up.len());
    for (a, b) in ip.iter().zip(up) {
        assert!(
            u(&a["ns"]) <= u(&b["ns"]),
            "p{}: irq {a} > user {b}",
            a["p"]
        );
    }
    assert_eq!(r["details"]["timestamp_errors"], 0);
}

case!(
    sim_loopback_measures_irq_user_and_wake_for_every_edge,
    [],
    |t| {
        let (out, r) = sim(t.dir(), "loopback", "--count 2000 --period 200us");
        assert_eq!(r["benchmark"], "irq");
        assert_eq!(r["complete"], true);
        assert_eq!(r["end_reason"], "loops");
        assert_eq!(series_names(&r), ["irq", "user", "wake"]);
        assert_result_consistent(&r);
        for t in r["threads"].as_array().expect("threads") {
            assert_eq!(t["summary"]["samples"], 2000, "{}", t["name"]);
        }
        assert_irq_below_user(&r);
        // The simulated interrupt comes at least 20 us (the default delay) after the write.
        let irq = &thread(&r, "irq")["summary"];
        assert!(u(&irq["min_ns"]) >= 20_000, "{irq}");
        let d = &r["details"];
        assert_eq!(d["role"], "loopback");
        assert_eq!(d["edges_driven"], 2000);
        assert_eq!(d["edges_seen"], 2000);
        assert_eq!(d["missed"], 0);
        assert_eq!(d["lost_events"], 0);
        assert_eq!(d["repeated_edges"], 0);
        assert_eq!(
            (&d["first_seqno"], &d["last_seqno"]),
            (&1.into(), &2000.into())
        );
        assert_eq!(d["seqno_continuous"], true);
        assert_eq!(r["config"]["role"], "loopback");
        assert_eq!(r["config"]["backend"], "sim");
        assert_eq!(r["config"]["period_ns"], 200_000);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(
                "edges: 2000 driven, 2000 seen, 0 missed, 0 lost (seqno 1..2000, continuous)"
            ),
            "{stdout}"
        );
    }
);

case!(
    sim_loopback_under_real_time_settings,
    [Root, Measuring],
    |t| {
        let (_, r) = t.run_json(
            t.rtlat()
                .args(["irq", "loopback", "--backend", "sim", "--count", "1000"])
                .args(["--period", "200us", "--cpu", "0", "--quiet"]),
            "rt.json",
            0,
        );
        assert_eq!(r["tuning"]["policy"], "fifo");
        assert_eq!(r["tuning"]["mlock"], true);
        assert_eq!(r["tuning"]["affinity"], serde_json::json!([0]));
        assert_eq!(r["total"]["samples"], 3000);
        assert_irq_below_user(&r);
    }
);

case!(
    idle_first_then_load_splits_the_edges_into_two_phases,
    [],
    |t| {
        let (_, r) = sim(
            t.dir(),
            "loopback",
            "--duration 2s --period 1ms --idle-first 1s --load cpu:1",
        );
        let phases = r["phases"].as_array().expect("phases");
        assert_eq!(phases.len(), 2);
        assert_eq!(phases[0]["name"], "idle");
        assert_eq!(phases[1]["name"], "load");
        assert_eq!(r["loads"].as_array().map(Vec::len), Some(1));
        // Every edge is in exactly one phase, for each of the three series.
        for (i, name) in ["irq", "user", "wake"].iter().enumerate() {
            let n = |p: &Value| u(&p["threads"][i]["summary"]["samples"]);
            assert_eq!(phases[0]["threads"][i]["name"], *name);
            assert_eq!(
                n(&phases[0]) + n(&phases[1]),
                u(&thread(&r, name)["summary"]["samples"])
            );
        }
        assert_eq!(r["details"]["missed"], 0);
    }
);

case!(
    dropped_kernel_events_are_missed_edges_and_seqno_gaps,
    [],
    |t| {
        let (out, r) = sim(
            t.dir(),
            "loopback",
            "--count 1050 --period 200us --timeout 2ms --sim-lose-every 100",
        );
        let d = &r["details"];
        // Every 100th edge dropped: 10 in 1050; the next event shows each gap.
        assert_eq!(d["edges_driven"], 1050);
        assert_eq!(d["missed"], 10);
        assert_eq!(d["lost_events"], 10);
        assert_eq!(d["edges_seen"], 1040);
        assert_eq!(d["repeated_edges"], 0);
        assert_eq!(d["seqno_continuous"], false);
        assert_eq!(thread(&r, "user")["summary"]["samples"], 1040);
        let notes = r["notes"].to_string();
        assert!(notes.contains("10 edge(s) missed"), "{notes}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("10 missed, 10 lost"), "{stdout}");
    }
);

case!(
    rising_only_measures_rising_edges_and_returns_to_idle,
    [],
    |t| {
        let (_, r) = sim(
            t.dir(),
            "loopback",
            "--count 500 --period 300us --edge rising",
        );
        assert_eq!(thread(&r, "irq")["summary"]["samples"], 500);
        let d = &r["details"];
        assert_eq!(d["edges_seen"], 1000, "every return to idle is seen too");
        assert_eq!(d["missed_idle"], 0);
        assert_eq!(d["repeated_edges"], 0);
        assert_irq_below_user(&r);
    }
);

case!(
    sim_target_answers_every_edge_and_splits_its_response,
    [],
    |t| {
        let (_, r) = sim(t.dir(), "target", "--count 1000 --period 200us");
        assert_eq!(series_names(&r), ["kernel_to_user", "user_to_reply"]);
        assert_result_consistent(&r);
        for t in r["threads"].as_array().expect("threads") {
            assert_eq!(t["summary"]["samples"], 1000);
        }
        let d = &r["details"];
        assert_eq!(d["answered"], 1000);
        assert_eq!(d["lost_events"], 0);
        assert_eq!(d["seqno_continuous"], true);
        let share = d["own_share_of_response"].as_f64().expect("share");
        assert!((0.0..1.0).contains(&share), "{share}");
    }
);

case!(sim_host_measures_every_round_trip, [], |t| {
    let (_, r) = sim(
        t.dir(),
        "host",
        "--count 1000 --rate 5000 --sim-delay 50us --sim-jitter 0us",
    );
    assert_eq!(series_names(&r), ["roundtrip"]);
    let s = &thread(&r, "roundtrip")["summary"];
    assert_eq!(s["samples"], 1000);
    // The kernel timestamp of the reply is exactly 50 us after the write began.
    assert!(u(&s["min_ns"]) >= 50_000, "{s}");
    assert_eq!(r["details"]["missed"], 0);
    assert_eq!(r["config"]["period_ns"], 200_000);
});

case!(sim_run_ends_on_sigint_with_a_complete_file, [], |t| {
    let json = t.path("s.json");
    let mut child = t
        .process()
        .args(["irq", "loopback", "--backend", "sim", "--quiet", "--json"])
        .arg(&json)
        .args(UNPRIVILEGED)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // The result file appears when measuring starts (signals are handled from then on).
    let t0 = Instant::now();
    while !json.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the run did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    send_signal(child.id(), "INT");
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "SIGINT did not end the run"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(0));
    let r = load(&json);
    assert_eq!(r["complete"], true);
    assert_eq!(r["end_reason"], "signal");
    assert!(u(&r["total"]["samples"]) > 0);
    assert_eq!(r["details"]["missed"], 0);
    assert_schema_valid(&json);
});

#[test]
fn bad_irq_options_give_one_line_and_exit_2() {
    // `rtlat irq` alone prints the usage (clap's help on a missing subcommand).
    let out = rtlat().arg("irq").output().expect("runs");
    assert_ne!(out.status.code(), Some(0));
    assert_usage_errors(&[
        &["irq", "loopback", "--out", "1"],
        &["irq", "loopback", "--in", "1", "--out", "1"],
        &["irq", "loopback", "--backend", "sim", "--in", "3"],
        &["irq", "loopback", "--backend", "serial"],
        &["irq", "loopback", "--backend", "sim", "--idle-first", "1s"],
        &["irq", "loopback", "--backend", "sim", "--load", "nosuch:1"],
        &[
            "irq", "target", "--in", "1", "--out", "2", "--period", "1ms",
        ],
        &[
            "irq",
            "target",
            "--in",
            "1",
            "--out",
            "2",
            "--timeout",
            "1s",
        ],
        &["irq", "host", "--backend", "sim", "--rate", "0"],
        &["irq", "host", "--backend", "sim", "--count", "0"],
        &["irq", "host", "--backend", "sim", "--edge", "up"],
        &[
            "irq",
            "loopback",
            "--backend",
            "sim",
            "--period",
            "1ms",
            "--rate",
            "10",
        ],
    ]);
}

#[test]
fn missing_devices_give_one_line_naming_the_fix_and_exit_3() {
    // (the arguments, split at white space; what the error names)
    let cases: &[(&str, &str)] = &[
        (
            "irq loopback --chip gpiochip97 --out 0 --in 1",
            "ls /dev/gpiochip*",
        ),
        (
            "irq target --out /dev/gpiochip98:0 --in /dev/gpiochip98:1",
            "no GPIO chip /dev/gpiochip98",
        ),
        (
            "irq loopback --backend serial --port /dev/ttyUSB-rtlat-none",
            "ls /dev/ttyS*",
        ),
        (
            "irq host --backend serial --port /dev/null",
            "not a serial port",
        ),
        (
            "irq loopback --backend serial --port /dev/ptmx",
            "no modem-control lines",
        ),
    ];
    for (args, fix) in cases {
        let out = rtlat()
            .args(args.split_whitespace())
            .args(UNPRIVILEGED)
            .output()
            .expect("runs");
        let line = error_line(&out, 3, &format!("{args:?}"));
        assert!(line.contains(fix), "{args:?}: {line}");
        assert!(out.stdout.is_empty(), "{args:?} started a run");
    }
}

case!(
    reply_from_the_kernel_without_the_module_names_the_build_and_exits_3,
    [Machine(
        !Path::new("/dev/rtlat-responder").exists(),
        "the rtlat-responder module is loaded here"
    )],
    |t| {
        for mode in ["thread", "kthread", "irq"] {
            let out = t
                .rtlat()
                .args(["irq", "target", "--reply-from", mode])
                .args(["--chip", "gpiochip97", "--in", "0", "--out", "1"])
                .args(UNPRIVILEGED)
                .output()
                .expect("runs");
            let l = error_line(&out, 3, mode);
            assert!(
                l.contains("rtlat-responder kernel module is not loaded"),
                "{l}"
            );
            assert!(
                l.contains("scripts/kmod-build.sh") && l.contains("dkms install"),
                "{l}"
            );
            assert!(l.contains(&format!("--reply-from {mode}")), "{l}");
            assert!(out.stdout.is_empty(), "{mode} started a run");
        }
    }
);

#[test]
fn reply_from_options_outside_a_gpio_target_are_usage_errors() {
    // (the arguments, split at white space; what the error names)
    let cases: &[(&str, &str)] = &[
        (
            "irq loopback --backend sim --reply-from thread",
            "irq target",
        ),
        (
            "irq target --backend sim --reply-from kthread",
            "--backend gpio",
        ),
        (
            "irq target --in 0 --out 1 --reply-from thread --reply-priority 10",
            "--reply-from kthread",
        ),
        (
            "irq target --in 0 --out 1 --reply-from kthread --reply-priority 0",
            "0",
        ),
        ("irq target --in 0 --out 1 --reply-from isr", "isr"),
    ];
    for (args, text) in cases {
        let out = rtlat()
            .args(args.split_whitespace())
            .output()
            .expect("runs");
        let lines = stderr_lines(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {lines:?}");
        assert!(
            lines.iter().any(|l| l.contains(text)),
            "{args:?}: {lines:?}"
        );
    }
}
