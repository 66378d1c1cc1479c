//! Integration tests for `rtlat noise`.

use crate::util::*;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The CPU a test measures: the second when there is one (the default leaves the first free).
fn measured_cpu() -> String {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    if n > 1 { "1" } else { "0" }.to_string()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// The sum of a series' points (samples × rounded mean) and their samples.
fn series_sums(t: &Value) -> (u64, u64) {
    let points = t["series"]["points"].as_array().expect("points");
    points.iter().fold((0, 0), |(sum, n), p| {
        (
            sum + u(&p["avg_ns"]) * u(&p["samples"]),
            n + u(&p["samples"]),
        )
    })
}

case!(a_noise_run_accounts_for_its_time, [Measuring], |t| {
    let cpu = measured_cpu();
    let json = t.path("n.json");
    let (out, r) = run_json(
        t.rtlat()
            .arg("noise")
            .args(UNPRIVILEGED)
            .args(["--cpus", &cpu, "--threshold", "2us", "--duration", "2s"])
            .timeout(Duration::from_secs(60)),
        &json,
        0,
    );
    assert_eq!(r["benchmark"], "noise");
    assert_eq!(r["end_reason"], "duration");
    assert_result_consistent(&r);
    let all = thread(&r, &format!("cpu{cpu}"));
    let noise = thread(&r, &format!("cpu{cpu}/noise"));
    let d = &r["details"];
    assert_eq!(d["threshold_ns"], 2000);
    let c = &d["cpus"][0];
    assert_eq!(c["cpu"].to_string(), cpu);
    // Every loop is one gap; the floor is the shortest gap, but never
    // shorter than one clock read (a shorter gap is the clock standing
    // still between two reads).
    let loops = u(&c["loops"]);
    assert_eq!(u(&all["summary"]["samples"]), loops);
    let floor = u(&c["floor_ns"]);
    let read = c["read_cost_ns"].as_f64().expect("read cost");
    assert!(
        read > 0.0 && floor as f64 >= read.round(),
        "loop {floor} ns, read {read} ns"
    );
    assert_eq!(u(&all["summary"]["min_ns"]).max(read.round() as u64), floor);
    // The gaps cover the loop's time: loops × mean gap is the span of the
    // run, within the rounding of each gap and of the mean to whole ns
    // (half a ns a loop each), and the noise is part of it. The loop
    // looks at the clock's end once a batch (about 1 ms of loops), so it
    // ends past the duration by at most a batch and the noise within it.
    let span = u(&c["last_ns"]) - u(&c["first_ns"]);
    let duration = u(&r["duration_ns"]);
    let stolen_all = u(&c["stolen_ns"]);
    assert!(
        span <= duration + 1_000_000 + stolen_all && span * 100 >= duration * 95,
        "{span} of {duration} ({stolen_all} ns stolen)"
    );
    let mean_sum = loops * u(&all["summary"]["avg_ns"]);
    assert!(
        mean_sum.abs_diff(span) <= loops + 1_000,
        "{mean_sum} vs {span}"
    );
    let (stolen, above) = (u(&c["stolen_ns"]), u(&c["gaps_above"]));
    assert_eq!(u(&noise["summary"]["samples"]), above);
    assert!(stolen <= span);
    // Every gap is at least the floor: the loops below the threshold at the
    // floor's cost and the stolen time fit in the span.
    assert!(
        (loops - above) * floor + stolen <= span,
        "{loops} x {floor} ns + {stolen} ns > {span} ns"
    );
    if above > 0 {
        assert!(u(&noise["summary"]["min_ns"]) > 2000);
        let f = c["stolen_fraction"].as_f64().expect("fraction");
        assert!((f - stolen as f64 / span as f64).abs() < 1e-6);
    }
    // The per-interval series add up to the totals.
    let (_, n) = series_sums(all);
    assert_eq!(n, loops);
    let (sum, n) = series_sums(noise);
    assert_eq!(n, above);
    assert!(sum.abs_diff(stolen) <= above, "{sum} vs {stolen}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("noise: cpu{cpu}: ")), "{stdout}");
    // The report reads it.
    let rep = t.rtlat().arg("report").arg(&json).output().expect("runs");
    assert_exit(&rep, 0, "report");
    let text = String::from_utf8_lossy(&rep.stdout);
    assert!(text.contains(&format!("noise: cpu{cpu}: ")), "{text}");
});

case!(noise_loops_end_the_run, [Measuring], |t| {
    let (_, r) = t.run_json(
        t.rtlat()
            .arg("noise")
            .args(UNPRIVILEGED)
            .args(["--cpus", &measured_cpu(), "--loops", "100000", "--quiet"])
            .args(["--counter", "monotonic"])
            .timeout(Duration::from_secs(60)),
        "l.json",
        0,
    );
    assert_eq!(r["details"]["cpus"][0]["loops"], 100_000);
    assert_eq!(r["total"]["samples"], 100_000);
    assert_eq!(r["details"]["counter"], "monotonic");
});

case!(
    a_gap_above_max_latency_exits_1_with_the_result_written,
    [Measuring],
    |t| {
        // Every gap is longer than 1 ns.
        let (_, r) = t.run_json(
            t.rtlat()
                .arg("noise")
                .args(UNPRIVILEGED)
                .args(["--cpus", &measured_cpu(), "--loops", "100000", "--quiet"])
                .args(["--max-latency", "1ns"])
                .timeout(Duration::from_secs(60)),
            "m.json",
            1,
        );
        assert_eq!(r["thresholds"]["max_latency_exceeded"], true);
        assert_eq!(r["complete"], true);
    }
);

#[test]
fn noise_bad_inputs_give_one_line_and_exit_2() {
    assert_usage_errors(&[
        &["noise", "--threshold", "0"],
        &["noise", "--threshold", "500ns"],
        &["noise", "--threshold", "2s"],
        &["noise", "--cpus", "9999"],
        &["noise", "--cpus", ""],
        &["noise", "--policy", "deadline"],
        &["noise", "--policy", "other", "--priority", "5"],
        &["noise", "--counter", "sundial"],
        &["noise", "--duration", "3us"],
    ]);
}

/// A SCHED_FIFO thread at `priority` on `cpu` that spins `burst` every
/// `period` until `stop`; returns the start and end of each burst (CLOCK_MONOTONIC ns).
fn noise_source(
    cpu: usize,
    priority: i32,
    burst: u64,
    period: u64,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<(u64, u64)>> {
    std::thread::Builder::new()
        .name("noise-source".into())
        .spawn(move || {
            // SAFETY: plain syscalls on the calling thread with valid arguments.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                assert_eq!(
                    libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set),
                    0
                );
                let p = libc::sched_param {
                    sched_priority: priority,
                };
                assert_eq!(libc::sched_setscheduler(0, libc::SCHED_FIFO, &p), 0);
            }
            let now = || {
                let mut ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                // SAFETY: a valid timespec to write.
                unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
                ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
            };
            let mut bursts = Vec::with_capacity(1000);
            let mut next = now() + period;
            while !stop.load(Ordering::Relaxed) {
                let ts = libc::timespec {
                    tv_sec: (next / 1_000_000_000) as libc::time_t,
                    tv_nsec: (next % 1_000_000_000) as libc::c_long,
                };
                // SAFETY: an absolute sleep on a valid timespec.
                unsafe {
                    libc::clock_nanosleep(
                        libc::CLOCK_MONOTONIC,
                        libc::TIMER_ABSTIME,
                        &ts,
                        std::ptr::null_mut(),
                    )
                };
                let b = now();
                let mut e = b;
                while e < b + burst {
                    e = now();
                }
                bursts.push((b, e));
                next += period;
            }
            bursts
        })
        .expect("spawns")
}

case!(
    a_known_noise_source_is_found_with_its_stolen_time,
    [Root, Measuring],
    |t| {
        let cpu: usize = measured_cpu().parse().expect("cpu");
        let stop = Arc::new(AtomicBool::new(false));
        // 2 ms every 100 ms at SCHED_FIFO 90, above the loop's 50.
        let source = noise_source(cpu, 90, 2_000_000, 100_000_000, Arc::clone(&stop));
        let (_, r) = t.run_json(
            t.rtlat()
                .args(["noise", "--priority", "50", "--cpus", &cpu.to_string()])
                .args(["--duration", "3s", "--quiet"])
                .timeout(Duration::from_secs(60)),
            "k.json",
            0,
        );
        stop.store(true, Ordering::Relaxed);
        let bursts = source.join().expect("source");
        let c = &r["details"]["cpus"][0];
        let (first, last) = (u(&c["first_ns"]), u(&c["last_ns"]));
        // A burst inside a longer gap (RT throttling's share of other tasks,
        // up to 50 ms, which the eight longest gaps hold) is not a gap of its own.
        let long: Vec<(u64, u64)> = c["longest"]
            .as_array()
            .expect("longest")
            .iter()
            .map(|g| (u(&g["start_ns"]), u(&g["end_ns"])))
            .filter(|(s, e)| e - s > 3_000_000)
            .collect();
        let merged = |b: u64, e: u64| long.iter().any(|&(s, t)| s <= e && b <= t);
        let inside: Vec<u64> = bursts
            .iter()
            .filter(|&&(b, e)| b >= first && e <= last && !merged(b, e))
            .map(|(b, e)| e - b)
            .collect();
        assert!(inside.len() >= 20, "{} bursts in the run", inside.len());
        let expected: u64 = inside.iter().sum();
        // The source's gaps: those of its length (other noise is shorter, or
        // far longer: RT throttling's share).
        let noise = thread(&r, &format!("cpu{cpu}/noise"));
        let (mut found, mut n) = (0u64, 0u64);
        for b in noise["histogram"]["buckets"].as_array().expect("buckets") {
            let (lo, hi, count) = (u(&b["low_ns"]), u(&b["high_ns"]), u(&b["count"]));
            if lo >= 1_800_000 && hi <= 3_000_000 {
                found += count * (lo + (hi - lo) / 2);
                n += count;
            }
        }
        let ratio = found as f64 / expected as f64;
        assert!(
            (0.9..=1.1).contains(&ratio),
            "{n} gaps of {found} ns for {} bursts of {expected} ns",
            inside.len()
        );
        eprintln!(
            "source: {} bursts, {expected} ns; found {n} gaps, {found} ns",
            inside.len()
        );
        assert!(u(&c["stolen_ns"]) >= found);
    }
);

/// The kernel's available tracers ("" where tracefs cannot be read).
fn available_tracers() -> String {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .find_map(|d| std::fs::read_to_string(format!("{d}/available_tracers")).ok())
        .unwrap_or_default()
}

case!(
    the_kernel_tracers_are_refused_naming_their_option_where_missing,
    [Root],
    |t| {
        let tracers = available_tracers();
        for (flag, tracer, config) in [
            ("--osnoise", "osnoise", "CONFIG_OSNOISE_TRACER"),
            ("--hwlat", "hwlat", "CONFIG_HWLAT_TRACER"),
        ] {
            let has = tracers.split_whitespace().any(|t| t == tracer);
            if !need(Need::Machine(
            !has,
            "a kernel without the tracer (the guests of scripts/gpio-e2e.sh run it where it is)",
        )) {
            continue;
        }
            let out = t
                .rtlat()
                .args(["noise", flag, "--duration", "1s"])
                .timeout(Duration::from_secs(30))
                .output()
                .expect("runs");
            let line = error_line(&out, 3, flag);
            assert!(line.contains(config), "{flag}: {line}");
        }
    }
);

#[test]
fn the_kernel_tracers_exclude_each_other() {
    assert_usage_errors(&[&["noise", "--osnoise", "--hwlat", "--duration", "1s"]]);
}
