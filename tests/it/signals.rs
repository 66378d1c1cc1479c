use crate::util::*;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn spawn_run(json: &std::path::Path) -> Child {
    Command::new(bin())
        .args(["timer", "--duration", "60s", "--save-every", "1s", "--json"])
        .arg(json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rtlat")
}

case!(
    sigint_ends_the_run_within_a_second_with_summary_and_complete_file,
    [
        Root,
        Native(
            "it signals 2.5 s after spawn and wants 2 s of samples; an emulated start can take 3 s",
        ),
        Measuring
    ],
    |_t| {
        for sig in ["INT", "TERM"] {
            let dir = tempfile::tempdir().expect("tempdir");
            let json = dir.path().join("r.json");
            let mut child = spawn_run(&json);
            std::thread::sleep(Duration::from_millis(2500));
            let t0 = Instant::now();
            send_signal(child.id(), sig);
            let status = loop {
                if let Some(s) = child.try_wait().expect("wait") {
                    break s;
                }
                assert!(
                    t0.elapsed() < Duration::from_secs(5),
                    "signal {sig} did not end the run"
                );
                std::thread::sleep(Duration::from_millis(10));
            };
            let took = t0.elapsed();
            assert!(
                took <= Duration::from_secs(1),
                "signal {sig}: exit took {took:?}"
            );
            assert_eq!(status.code(), Some(0));
            let out = child.wait_with_output().expect("output");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                stdout.contains("rtlat timer:") && stdout.contains("(signal)"),
                "{stdout}"
            );
            let r = load(&json);
            assert_eq!(r["complete"], true);
            assert_eq!(r["end_reason"], "signal");
            let d = r["duration_ns"].as_u64().expect("duration");
            assert!((2_000_000_000..10_000_000_000).contains(&d), "duration {d}");
            assert_summary_invariants(&r["total"]);
        }
    }
);

case!(
    sigkill_leaves_a_valid_incomplete_file,
    [
        Root,
        Native("it kills 3.5 s after spawn and wants a saved file; an emulated start can take 3 s",),
        Measuring
    ],
    |t| {
        let json = t.path("k.json");
        let mut child = spawn_run(&json);
        std::thread::sleep(Duration::from_millis(3500));
        send_signal(child.id(), "KILL");
        child.wait().expect("wait");
        let r = load(&json);
        assert_eq!(r["complete"], false);
        assert_eq!(r["end_reason"], "running");
        assert!(
            r["total"]["samples"].as_u64().expect("samples") > 1000,
            "no samples saved"
        );
        assert_schema_valid(&json);
        // No temporary file is left beside it (only the unlocked lock file,
        // which a killed run cannot remove and the next writer reuses).
        let names: Vec<_> = std::fs::read_dir(t.dir())
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n != ".k.json.lock")
            .collect();
        assert_eq!(names, ["k.json"], "{names:?}");
    }
);

case!(
    a_file_saved_during_a_run_spans_the_samples_it_holds,
    [
        Native("an emulated run keeps no pace with the clock"),
        Measuring
    ],
    |t| {
        // Saved every second, collected a quarter second after each second:
        // the file on disk at 2.6 s was saved at 2 s with what was collected
        // at 1.25 s. Its samples over its duration are the run's rate (the
        // forecast of a longer run scales by it), within what late wake-ups
        // cost.
        let json = t.path("m.json");
        let mut child = Command::new(bin())
            .args(["timer", "--period", "1ms", "--duration", "4s"])
            .args(["--save-every", "1s", "--quiet", "--json"])
            .arg(&json)
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn rtlat");
        std::thread::sleep(Duration::from_millis(2600));
        let early = load(&json);
        assert_eq!(child.wait().expect("wait").code(), Some(0));
        let rate = |r: &serde_json::Value| {
            let d = r["duration_ns"].as_u64().expect("duration") as f64;
            r["total"]["samples"].as_u64().expect("samples") as f64 / (d / 1e9)
        };
        let (mid, whole) = (rate(&early), rate(&load(&json)));
        assert!(
            (mid / whole - 1.0).abs() < 0.15,
            "{mid:.0} samples per second in the file saved during the run, {whole:.0} in the whole run"
        );
    }
);
