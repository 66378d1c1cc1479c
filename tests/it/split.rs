//! `rtlat timer --split`: each sample split into its IRQ and scheduling parts
//! from the kernel's hrtimer events, on the machine's own kernel.

use crate::util::*;
use serde_json::Value;
use std::path::Path;

const TRACEFS: &str = "/sys/kernel/tracing";

/// What a run must leave as it found it: the instances (but those of
/// other rtlat runs still alive, which tests beside this one own), the
/// global timer events' switches, the tracer.
fn tracefs_state() -> (Vec<String>, String) {
    let root = Path::new(TRACEFS);
    let alive = |name: &str| {
        name.strip_prefix("rtlat-")
            .is_some_and(|pid| Path::new("/proc").join(pid).exists())
    };
    let mut instances: Vec<String> = std::fs::read_dir(root.join("instances"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !alive(n))
                .collect()
        })
        .unwrap_or_default();
    instances.sort();
    let read = |rel: &str| std::fs::read_to_string(root.join(rel)).unwrap_or_default();
    let rest = format!(
        "hrtimer_start {}; hrtimer_expire_entry {}; tracer {}; tracing_on {}",
        read("events/timer/hrtimer_start/enable").trim(),
        read("events/timer/hrtimer_expire_entry/enable").trim(),
        read("current_tracer").trim(),
        read("tracing_on").trim()
    );
    (instances, rest)
}

/// Asserts that tracefs is as `before`: the same switches, and no
/// instance that was not there (one a killed run left may be gone: a run
/// removes those at its start).
fn assert_restored(before: &(Vec<String>, String)) {
    let (instances, rest) = tracefs_state();
    assert_eq!(rest, before.1, "tracefs left changed");
    let new: Vec<&String> = instances.iter().filter(|i| !before.0.contains(i)).collect();
    assert!(new.is_empty(), "instances left behind: {new:?}");
}

/// Whether tracefs has the hrtimer events, mounting it as `rtlat` would.
fn hrtimer_events() -> bool {
    let root = Path::new(TRACEFS);
    if !root.join("events").is_dir() {
        let _ = std::process::Command::new("mount")
            .args(["-t", "tracefs", "nodev", TRACEFS])
            .status();
    }
    root.join("events/timer/hrtimer_start/format").exists()
}

/// Why a test skips without [`hrtimer_events`].
const NO_HRTIMER_EVENTS: &str = "this kernel has no tracefs with timer:hrtimer_start";

fn named<'a>(threads: &'a [Value], name: &str) -> &'a Value {
    threads
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no series {name}"))
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

case!(
    split_gives_every_sample_its_irq_and_scheduling_parts_and_restores_tracefs,
    [
        Root,
        Native(HOST_TRACE),
        Machine(hrtimer_events(), NO_HRTIMER_EVENTS),
        Measuring
    ],
    |t| {
        let before = tracefs_state();
        let json = t.path("s.json");
        let out = t
            .rtlat()
            .args([
                "timer",
                "--split",
                "--period",
                "500us",
                "--duration",
                "3s",
                "--quiet",
                "--json",
            ])
            .arg(&json)
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert_schema_valid(&json);
        let r = load(&json);
        let d = &r["details"]["split"];
        let threads = r["threads"].as_array().expect("threads");
        let users: Vec<&Value> = threads
            .iter()
            .filter(|t| !t["name"].as_str().unwrap_or("").contains('/'))
            .collect();
        assert!(!users.is_empty());
        assert_eq!(
            threads.len(),
            3 * users.len(),
            "cpuN, cpuN/irq, cpuN/sched each"
        );
        let mut samples = 0;
        for u in &users {
            let name = u["name"].as_str().expect("name");
            let (irq, sched) = (
                named(threads, &format!("{name}/irq")),
                named(threads, &format!("{name}/sched")),
            );
            assert_eq!(irq["cpu"], u["cpu"]);
            let (us, is, ss) = (&u["summary"], &irq["summary"], &sched["summary"]);
            for s in [us, is, ss] {
                assert_summary_invariants(s);
            }
            // One pair of parts per matched sample, nearly every sample matched.
            assert_eq!(is["samples"], ss["samples"], "{name}");
            let (total, matched) = (n(&us["samples"]), n(&is["samples"]));
            assert!(
                matched <= total && matched * 100 >= total * 99,
                "{name}: {matched} of {total} matched"
            );
            // Each part is at most the sample it is part of.
            assert!(n(&is["max_ns"]) <= n(&us["max_ns"]), "{name}: {is} vs {us}");
            assert!(n(&ss["max_ns"]) <= n(&us["max_ns"]), "{name}: {ss} vs {us}");
            // The parts add up: their averages to the samples' (within the few unmatched).
            let sum = n(&is["avg_ns"]) + n(&ss["avg_ns"]);
            let avg = n(&us["avg_ns"]);
            assert!(
                sum.abs_diff(avg) * 20 <= avg.max(20),
                "{name}: irq + sched averages {sum} ns against {avg} ns"
            );
            samples += total;
        }
        // The total is the user samples' alone.
        assert_eq!(n(&r["total"]["samples"]), samples);
        assert_eq!(d["irq_above_total"], 0, "{d}");
        assert_eq!(
            n(&d["matched"]) + n(&d["unmatched_samples"]),
            samples,
            "{d}"
        );
        assert!(d.get("restore_problems").is_none(), "{d}");
        assert_restored(&before);
    }
);

case!(split_without_root_exits_3_naming_the_fix, [Root], |_t| {
    let err = timer_as_nobody_error("--split");
    assert!(
        err.contains("--split needs tracefs") && err.contains("root"),
        "{err}"
    );
});

#[test]
fn split_with_context_or_synthetic_samples_is_a_usage_error() {
    for extra in [&["--context", "irq"][..], &["--synthetic", "1"][..]] {
        let out = rtlat()
            .args(["timer", "--split", "--duration", "1s"])
            .args(extra)
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains("--split"), "{err}");
    }
}
