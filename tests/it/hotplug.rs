//! A CPU taken offline mid-run, and back: `timer`, `switch` and `noise`
//! end the series measured on it with a note that names it (in the result
//! and the text), keep no sample measured on the CPU the kernel moved the
//! thread to, and measure on the other CPU to the end.

use crate::case::Case;
use crate::util::*;
use serde_json::Value;
use std::time::Duration;

const CPU1: &str = "/sys/devices/system/cpu/cpu1/online";

/// CPU 1 taken offline for as long as this lives: back online when it is
/// dropped, whatever the test does meanwhile (a failed assertion included).
struct Offline;

impl Offline {
    /// CPU 1 offline (None: it could not be taken offline).
    fn take() -> Option<Offline> {
        std::fs::write(CPU1, "0").ok().map(|_| Offline)
    }
}

impl Drop for Offline {
    fn drop(&mut self) {
        // A write refused while the kernel is busy with the CPU is retried.
        for _ in 0..50 {
            if std::fs::write(CPU1, "1").is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("CPU 1 could not be brought back online: write 1 to {CPU1}");
    }
}

/// A 3 s run of `args` (writing `--json`), CPU 1 offline from about +1 s
/// to +1.7 s: its text output, its result and the note naming `series`
/// (whose CPU was 1 and which the kernel moved to CPU 0).
fn offline_mid_run(t: &Case, args: &[&str], series: &str) -> (String, Value, String) {
    let json = t.path("hp.json");
    let child = t
        .process()
        .args(args)
        .args(["--duration", "3s", "--interval", "100ms", "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("starts");
    std::thread::sleep(Duration::from_millis(1000));
    let offline = Offline::take();
    std::thread::sleep(Duration::from_millis(700));
    let was_offline = offline.is_some();
    drop(offline);
    let out = child.wait_with_output().expect("ends");
    assert!(was_offline, "CPU 1 could not be taken offline");
    assert_eq!(out.status.code(), Some(0), "{args:?}");
    let r: Value = serde_json::from_slice(&std::fs::read(&json).expect("result")).expect("JSON");
    let notes: Vec<&str> = r["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .filter_map(|n| n.as_str())
        .filter(|n| n.contains("went offline"))
        .collect();
    assert_eq!(notes.len(), 1, "one series ends: {notes:?}");
    let note = notes[0].to_string();
    assert!(
        note.starts_with(&format!("{series}: CPU 1 went offline"))
            && note.contains("moved the thread to CPU 0"),
        "{note}"
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains(&note), "the text names it: {text}");
    (text, r, note)
}

/// When the note says the series ended, in ns from the start.
fn ended_at(note: &str) -> u64 {
    let secs = note
        .split_once("at +")
        .and_then(|(_, rest)| rest.split_once('s'))
        .and_then(|(s, _)| s.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no time in {note}"));
    (secs * 1e9).round() as u64
}

/// The series `name` of `r` has samples before `at` ns (rounded down to its
/// interval: the note's time has milliseconds) and none in a later interval,
/// and fewer than `full`; the series `other` has `full` at least.
fn ends_there(r: &Value, name: &str, at: u64, other: &str, full: u64) {
    let t = thread(r, name);
    assert_eq!(t["cpu"], 1, "{name} was measured on CPU 1");
    let interval = t["series"]["interval_ns"].as_u64().expect("interval");
    let points = t["series"]["points"].as_array().expect("points");
    let last = points
        .iter()
        .filter(|p| p["samples"].as_u64() > Some(0))
        .filter_map(|p| p["t_ns"].as_u64())
        .max()
        .expect("samples before the CPU went");
    assert!(
        last <= at / interval * interval,
        "{name}: a sample at +{last} ns, after its CPU went at +{at} ns"
    );
    let samples = |t: &Value| t["summary"]["samples"].as_u64().expect("samples");
    assert!(
        samples(t) > 0 && samples(t) < full,
        "{name}: {}",
        samples(t)
    );
    assert!(
        samples(thread(r, other)) >= full,
        "{other} measured to the end"
    );
}

case!(
    a_cpu_taken_offline_ends_its_timer_series_and_is_named,
    [
        Root,
        Native("CPU hotplug of the host"),
        Cpus(2, "CPU 1 goes offline while CPU 0 measures on"),
        Machine(
            std::path::Path::new(CPU1).exists(),
            "CPU hotplug (/sys/devices/system/cpu/cpu1/online)"
        ),
        Measuring
    ],
    |t| {
        let (_, r, note) = offline_mid_run(&t, &["timer", "--cpus", "0,1"], "cpu1");
        // 1 ms periods: about 1000 samples before CPU 1 went, 2500 of 3000 on CPU 0.
        ends_there(&r, "cpu1", ended_at(&note), "cpu0", 2_500);
        assert!(samples_of(&r, "cpu1") < 1_900);
    }
);

case!(
    a_cpu_taken_offline_ends_its_switch_pair_and_is_named,
    [
        Root,
        Native("CPU hotplug of the host"),
        Cpus(2, "CPU 1 goes offline while CPU 0's pair measures on"),
        Machine(
            std::path::Path::new(CPU1).exists(),
            "CPU hotplug (/sys/devices/system/cpu/cpu1/online)"
        ),
        Measuring
    ],
    |t| {
        let (_, r, note) = offline_mid_run(&t, &["switch", "--cpus", "0,1"], "pair1");
        ends_there(&r, "pair1", ended_at(&note), "pair0", 2_500);
        assert!(samples_of(&r, "pair1") < 1_900);
        // The pair that ended lost no wake for it: its wakes are samples or counted losses.
        let pairs = r["details"]["pairs"].as_array().expect("pairs");
        let pair1 = pairs.iter().find(|p| p["name"] == "pair1").expect("pair1");
        assert!(pair1["lost"].as_u64() < Some(100), "{pair1}");
    }
);

case!(
    a_cpu_taken_offline_ends_its_noise_loop_and_is_named,
    [
        Root,
        Native("CPU hotplug of the host"),
        Cpus(2, "CPU 1 goes offline while its loop runs"),
        Machine(
            std::path::Path::new(CPU1).exists(),
            "CPU hotplug (/sys/devices/system/cpu/cpu1/online)"
        ),
        Measuring
    ],
    |t| {
        // CPU 1 only: CPU 0 stays free for the reporter and the hotplug itself.
        let (_, r, note) = offline_mid_run(&t, &["noise", "--cpus", "1"], "cpu1");
        let at = ended_at(&note);
        for name in ["cpu1", "cpu1/noise"] {
            let points = thread(&r, name)["series"]["points"]
                .as_array()
                .expect("points");
            let interval = thread(&r, name)["series"]["interval_ns"]
                .as_u64()
                .expect("interval");
            assert!(
                points
                    .iter()
                    .filter(|p| p["samples"].as_u64() > Some(0))
                    .all(|p| p["t_ns"].as_u64() <= Some(at / interval * interval)),
                "{name}: a gap after CPU 1 went at +{at} ns"
            );
        }
        // The loop ran about a second on CPU 1 and stopped: its span ends
        // when the CPU went (the note's time is rounded to the millisecond).
        let cpus = r["details"]["cpus"].as_array().expect("cpus");
        let span = cpus[0]["last_ns"].as_u64().expect("last")
            - cpus[0]["first_ns"].as_u64().expect("first");
        assert!(
            span > 500_000_000 && span <= at + 500_000,
            "span {span} ns, CPU 1 went at +{at} ns"
        );
    }
);

/// The samples of series `name`.
fn samples_of(r: &Value, name: &str) -> u64 {
    thread(r, name)["summary"]["samples"]
        .as_u64()
        .expect("samples")
}
