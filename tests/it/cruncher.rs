//! Integration tests for `rtlat cruncher`.

use crate::util::*;
use std::time::Duration;

case!(a_cruncher_run_meets_the_acceptance, [Root, Native( "qemu's translated code speeds up as it warms, so the calibrated ideal is no lower bound", ), Measuring], |t| {
    // As many calibration runs as measured runs: the ideal is the minimum of as
    // many draws. Above the other tests' real-time threads (priority 80), which
    // would otherwise stretch calibration runs and measured runs unequally.
    let (out, r) = t.run_json(t.rtlat()
            .args([
                "cruncher",
                "--priority",
                "90",
                "--work",
                "2ms",
                "--period",
                "20ms",
            ])
            .args(["--calibration-runs", "100", "--duration", "1s"])
            .timeout(Duration::from_secs(60)), "c.json", 0);
    assert_eq!(r["benchmark"], "cruncher");
    assert_eq!(r["complete"], true);
    assert_eq!(r["end_reason"], "duration");
    let d = &r["details"];
    let ideal = d["ideal_ns"].as_u64().expect("ideal_ns");
    assert!(ideal > 0);
    assert_eq!(d["work_ns"], 2_000_000);
    assert_eq!(d["calibration_runs"], 100);
    assert!(d["calibration_slowest_ns"].as_u64().expect("slowest") >= ideal);
    assert_eq!(d["tolerance"].as_f64(), Some(0.05));
    assert_result_consistent(&r);
    let t = &r["total"];
    let (min, avg, max) = (
        t["min_ns"].as_u64().expect("min"),
        t["avg_ns"].as_u64().expect("avg"),
        t["max_ns"].as_u64().expect("max"),
    );
    assert!(min <= avg && avg <= max);
    assert!(
        min as f64 >= 0.95 * ideal as f64,
        "a run ({min} ns) was faster than 0.95 x the ideal ({ideal} ns)"
    );
    // One run per 20 ms period for 1 s.
    let samples = t["samples"].as_u64().expect("samples");
    let overruns = t["overruns"].as_u64().expect("overruns");
    assert!(
        (48..=50).contains(&(samples + overruns)),
        "{samples} runs + {overruns} overruns"
    );
    let beyond = d["beyond_tolerance"].as_u64().expect("beyond_tolerance");
    assert!(beyond <= samples);
    let stretch = d["stretch"].as_f64().expect("stretch");
    assert!((stretch - max as f64 / ideal as f64).abs() < 1e-9);
    assert!(stretch >= 0.95);
    // Runs beyond the tolerance can only exist if the maximum is beyond it.
    assert_eq!(beyond > 0, max as f64 > ideal as f64 * 1.05 + 0.5);
    assert_eq!(r["threads"][0]["name"], "run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("stretch"), "{stdout}");
});

case!(cruncher_unprivileged_loops, [], |t| {
    let (_, r) = t.run_json(
        t.rtlat()
            .arg("cruncher")
            .args(UNPRIVILEGED)
            .args([
                "--work",
                "1ms",
                "--period",
                "5ms",
                "--calibration-runs",
                "3",
            ])
            .args(["--loops", "7", "--quiet"])
            .timeout(Duration::from_secs(60)),
        "u.json",
        0,
    );
    assert_eq!(r["end_reason"], "loops");
    assert_eq!(r["total"]["samples"], 7);
    assert_eq!(r["tuning"]["policy"], "other");
    assert!(r["details"]["ideal_ns"].as_u64().expect("ideal") > 0);
});

#[test]
fn cruncher_bad_inputs_give_one_line_and_exit_2() {
    assert_usage_errors(&[
        &["cruncher", "--work", "0"],
        &["cruncher", "--work", "0ms"],
        &["cruncher", "--work", "10ms", "--period", "5ms"],
        &["cruncher", "--tolerance", "lots"],
        &["cruncher", "--cpu", "9999"],
        &["cruncher", "--policy", "deadline"],
    ]);
}

/// An unprivileged cruncher run writing `dest`, with `runs` calibration runs of 100 ms.
fn cruncher_run(dest: &std::path::Path, runs: &str) -> std::process::Child {
    std::process::Command::new(bin())
        .args(["cruncher", "--work", "100ms", "--calibration-runs", runs])
        .args(UNPRIVILEGED)
        .arg("--json")
        .arg(dest)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawns")
}

/// Send `sig` to `child`, wait for it: how long it took to end, and its output.
fn end_with(child: std::process::Child, sig: i32) -> (Duration, std::process::Output) {
    let sent = std::time::Instant::now();
    // SAFETY: kill(2) on our own child, not yet waited for.
    unsafe { libc::kill(child.id() as i32, sig) };
    let out = child.wait_with_output().expect("waits");
    (sent.elapsed(), out)
}

case!(
    each_terminal_signal_ends_calibration_with_a_result_that_says_nothing_was_measured,
    [Measuring],
    |t| {
        for (sig, name) in [
            (libc::SIGINT, "SIGINT"),
            (libc::SIGTERM, "SIGTERM"),
            (libc::SIGHUP, "SIGHUP"),
        ] {
            let r = t.path(format!("{name}.json"));
            // 100 calibration runs of 100 ms, one per 200 ms: 20 s of calibration.
            let child = cruncher_run(&r, "100");
            std::thread::sleep(Duration::from_millis(1500));
            let (took, out) = end_with(child, sig);
            assert_eq!(out.status.code(), Some(0), "{name}: {out:?}");
            assert!(took < Duration::from_secs(2), "{name}: took {took:?}");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(stdout.contains("nothing was measured"), "{name}: {stdout}");
            let v = load(&r);
            assert_eq!(v["complete"], true, "{name}");
            assert_eq!(v["end_reason"], "signal", "{name}");
            assert_eq!(v["total"]["samples"], 0, "{name}");
            let notes = v["notes"].to_string();
            assert!(
                notes.contains(name) && notes.contains("nothing was measured"),
                "{notes}"
            );
            assert_schema_valid(&r);
        }
        // After calibration, SIGHUP ends the measurement with what it measured.
        let r = t.path("measured.json");
        let child = cruncher_run(&r, "1");
        std::thread::sleep(Duration::from_millis(2000));
        let (took, out) = end_with(child, libc::SIGHUP);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert!(took < Duration::from_secs(2), "took {took:?}");
        let v = load(&r);
        assert_eq!(v["end_reason"], "signal");
        assert!(
            v["total"]["samples"].as_u64().unwrap_or(0) > 0,
            "nothing measured"
        );
    }
);
