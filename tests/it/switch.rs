//! Integration tests for `rtlat switch`.

use crate::case::Case;
use crate::util::*;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// Why `--processes` cannot run under qemu-user.
const NO_FORK: &str = "qemu-user runs threads of its own, and rtlat forks wakee processes only from a single-threaded process";

const VIAS: [&str; 7] = [
    "futex",
    "eventfd",
    "pipe",
    "posix-sem",
    "sysv-sem",
    "mqueue",
    "signal",
];

/// Whether this machine has two CPUs; when not, the cross-CPU checks are
/// left out, the skip logged.
fn two_cpus() -> bool {
    let two = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
    if !two {
        skip_check(
            "cross-CPU placement: one CPU",
            "cross-CPU placement not checked: one CPU",
        );
    }
    two
}

/// A `switch` run with `args` that succeeds, its result in `json`.
fn run_switch(json: &Path, args: &[&str]) -> (std::process::Output, Value) {
    run_json(
        rtlat()
            .args(["switch", "--quiet"])
            .args(args)
            .timeout(Duration::from_secs(30)),
        json,
        0,
    )
}

/// Every period of every pair is a sample or a lost wake; the result is
/// complete (run_switch checked it against the schema). Unless `slow`, most
/// wakes arrive.
fn assert_switch_result(r: &Value, what: &str, duration_ns: u64, period_ns: u64, slow: bool) {
    assert_eq!(r["benchmark"], "switch", "{what}");
    assert_eq!(r["complete"], true, "{what}");
    assert_eq!(r["end_reason"], "duration", "{what}");
    let expected = duration_ns / period_ns;
    let threads = r["threads"].as_array().expect("threads");
    let pairs = r["details"]["pairs"].as_array().expect("details.pairs");
    assert_eq!(threads.len(), pairs.len(), "{what}");
    assert_result_consistent(r);
    let mut lost_total = 0;
    for (i, (t, p)) in threads.iter().zip(pairs).enumerate() {
        assert_eq!(t["name"], format!("pair{i}"), "{what}");
        assert_eq!(p["name"], t["name"], "{what}");
        let s = &t["summary"];
        let samples = s["samples"].as_u64().expect("samples");
        let lost = p["lost"].as_u64().expect("lost");
        let unrecorded = p["unrecorded"].as_u64().expect("unrecorded");
        assert_eq!(
            lost,
            p["wakee_busy"].as_u64().expect("busy") + p["waker_late"].as_u64().expect("late"),
            "{what}: lost is not the sum of its causes: {p}"
        );
        // The summary's overruns are the lost wakes (except any after the last sample).
        assert_eq!(
            s["overruns"].as_u64(),
            Some(lost - unrecorded),
            "{what}: {p}"
        );
        assert!(
            samples + lost + 2 >= expected && samples + lost <= expected + 2,
            "{what}: {samples} samples + {lost} lost for {expected} periods"
        );
        assert!(
            slow || samples * 2 >= expected,
            "{what}: only {samples} of {expected} wakes arrived"
        );
        assert!(s["min_ns"].as_u64().expect("min") > 0, "{what}: min 0");
        lost_total += lost;
    }
    assert_eq!(r["details"]["lost"].as_u64(), Some(lost_total), "{what}");
}

/// The acceptance, for every mechanism: same CPU and cross CPU (threads or processes).
fn every_mechanism(t: &Case, processes: bool) {
    let json = t.path("s.json");
    let mut placements = vec![("same", "0")];
    if two_cpus() {
        placements.push(("cross", "0,1"));
    }
    for via in VIAS {
        for (placement, cpus) in &placements {
            let mut args = vec![
                "--via",
                via,
                "--placement",
                placement,
                "--cpus",
                cpus,
                "--duration",
                "500ms",
            ];
            if processes {
                args.push("--processes");
            }
            let what = format!("{args:?}");
            let (out, r) = run_switch(&json, &args);
            assert_switch_result(&r, &what, 500_000_000, 1_000_000, false);
            assert_eq!(r["config"]["via"], *via);
            assert_eq!(r["config"]["processes"], processes);
            assert_eq!(r["config"]["placement"], *placement);
            let pair0 = &r["config"]["pairs"][0];
            if *placement == "cross" {
                assert_ne!(pair0["waker_cpu"], pair0["wakee_cpu"], "{what}");
            } else {
                assert_eq!(pair0["waker_cpu"], pair0["wakee_cpu"], "{what}");
            }
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(stdout.contains("lost wakes"), "{what}: {stdout}");
        }
    }
}

case!(
    every_mechanism_between_threads_meets_the_acceptance,
    [Root, Measuring],
    |t| {
        every_mechanism(&t, false);
    }
);

case!(
    every_mechanism_between_processes_meets_the_acceptance,
    [Root, Native(NO_FORK), Measuring],
    |t| {
        every_mechanism(&t, true);
    }
);

case!(
    a_default_run_has_one_pair_per_cpu_and_the_documented_defaults,
    [Root, Measuring],
    |t| {
        let json = t.path("d.json");
        let (_, r) = run_switch(&json, &["--duration", "1s"]);
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(r["threads"].as_array().expect("threads").len(), cpus);
        assert_eq!(r["config"]["via"], "futex");
        assert_eq!(r["config"]["period_ns"], 1_000_000);
        assert_eq!(r["config"]["wakee_priority"], 80);
        assert_eq!(r["config"]["waker_priority"], 79);
        assert_eq!(r["tuning"]["policy"], "fifo");
        assert_eq!(r["tuning"]["priority"], 80);
        assert_switch_result(&r, "defaults", 1_000_000_000, 1_000_000, false);
    }
);

case!(
    a_slow_wakee_loses_wakes_and_they_are_counted,
    [Root, Measuring],
    |t| {
        let json = t.path("l.json");
        // The wakee acknowledges each wake 2.5 periods after it ran: the next two
        // periods find it busy, every time.
        let modes: &[bool] = if emulator().is_some() {
            skip_check(
                &format!("slow wakee with processes: {NO_FORK}"),
                &format!("slow wakee: processes skipped under emulation: {NO_FORK}"),
            );
            &[false]
        } else {
            &[false, true]
        };
        for &processes in modes {
            let mut args = vec![
                "--cpus",
                "0",
                "--duration",
                "600ms",
                "--wakee-delay",
                "2500us",
            ];
            if processes {
                args.push("--processes");
            }
            let (out, r) = run_switch(&json, &args);
            assert_switch_result(&r, "slow wakee", 600_000_000, 1_000_000, true);
            let p = &r["details"]["pairs"][0];
            let samples = r["threads"][0]["summary"]["samples"].as_u64().expect("n");
            let busy = p["wakee_busy"].as_u64().expect("busy");
            let lost = p["lost"].as_u64().expect("lost");
            // Each sample is followed by two lost periods (found busy, or overslept
            // by the waker itself on this noisy machine).
            assert!(
                lost >= 2 * (samples - 1),
                "{samples} samples but only {lost} lost periods"
            );
            assert!(
                busy >= samples,
                "{samples} samples, {busy} found the wakee busy"
            );
            assert!(samples <= 210, "{samples} samples: wakes were not skipped");
            // Latency is still the wake-up alone, not the wakee's delay.
            assert!(r["total"]["min_ns"].as_u64().expect("min") < 2_500_000);
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                stdout.contains(&format!("lost wakes {}", p["lost"])),
                "{stdout}"
            );
        }
    }
);

case!(loops_bound_the_wakes_per_pair, [Root, Measuring], |t| {
    let (_, r) = run_switch(
        &t.path("n.json"),
        &[
            "--cpus", "0", "--loops", "300", "--period", "500us", "--via", "pipe",
        ],
    );
    assert_eq!(r["end_reason"], "loops");
    let p = &r["details"]["pairs"][0];
    let samples = r["threads"][0]["summary"]["samples"].as_u64().expect("n");
    let lost_wakes = p["rung"].as_u64().expect("rung") - samples;
    assert_eq!(p["rung"], 300);
    assert!(lost_wakes <= p["wakee_busy"].as_u64().expect("busy"));
});

case!(
    sigint_ends_a_process_run_promptly_and_reaps_the_wakees,
    [Root, Native(NO_FORK), Measuring],
    |t| {
        let json = t.path("i.json");
        let err = t.path("stderr");
        let mut child = t
            .process()
            .args([
                "switch",
                "--quiet",
                "--processes",
                "--via",
                "sysv-sem",
                "--duration",
                "60s",
                "--json",
            ])
            .arg(&json)
            // Files, not pipes: a wakee left running would hold a pipe open,
            // and the test would wait on it instead of failing.
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&err).expect("stderr file"))
            .spawn()
            .expect("spawn");
        std::thread::sleep(Duration::from_millis(1500));
        let pid = child.id();
        // The wakees: every process whose parent is rtlat, each known by its
        // start time too, so that a new process given the same pid later is
        // not taken for it.
        let wakees = children_of(pid);
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(wakees.len(), cpus, "one wakee process per pair: {wakees:?}");
        let t0 = Instant::now();
        send_signal(pid, "INT");
        let status = child.wait().expect("wait");
        assert!(
            t0.elapsed() < Duration::from_millis(1500),
            "took {:?} to stop",
            t0.elapsed()
        );
        let stderr = std::fs::read_to_string(&err).unwrap_or_default();
        assert_eq!(status.code(), Some(0), "{stderr}");
        let r = load(&json);
        assert_eq!(r["complete"], true);
        assert_eq!(r["end_reason"], "signal");
        assert!(r["total"]["samples"].as_u64().expect("n") > 500);
        // Gone: a wakee left running would have been given to another parent
        // when rtlat ended, but it would keep its start time.
        for (w, started) in wakees {
            let now = proc_stat(w).map(|(_, started)| started);
            assert_ne!(now, Some(started), "wakee {w} outlived rtlat");
        }
    }
);

/// The parent and the start time (in clock ticks since boot) of process
/// `pid`, from /proc/PID/stat; None once it is gone.
fn proc_stat(pid: u32) -> Option<(u32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which may hold spaces and ')'.
    let fields: Vec<&str> = stat.rsplit_once(") ")?.1.split_whitespace().collect();
    Some((fields[1].parse().ok()?, fields[19].parse().ok()?))
}

/// The child processes of `parent` and their start times, found by the
/// parent field of every process in /proc (which needs no kernel option,
/// unlike /proc/PID/task/TID/children).
fn children_of(parent: u32) -> Vec<(u32, u64)> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| match proc_stat(pid)? {
            (ppid, started) if ppid == parent => Some((pid, started)),
            _ => None,
        })
        .collect()
}

case!(unprivileged_mode_runs_without_real_time, [], |t| {
    let mut args = UNPRIVILEGED.to_vec();
    args.extend(["--cpus", "0", "--loops", "200"]);
    let (_, r) = run_switch(&t.path("u.json"), &args);
    assert_eq!(r["tuning"]["policy"], "other");
    assert_eq!(r["config"]["waker_priority"], Value::Null);
    assert!(r["total"]["samples"].as_u64().expect("n") > 0);
});

#[test]
fn bad_inputs_give_one_line_and_exit_2() {
    assert_usage_errors(&[
        &["switch", "--via", "nosuch"],
        &["switch", "--period", "0"],
        &["switch", "--period", "0ms"],
        &["switch", "--duration", "-1s"],
        &["switch", "--placement", "cross", "--cpus", "0"],
        &["switch", "--policy", "deadline"],
        &["switch", "--cpus", "9999"],
    ]);
}
