//! Deterministic results of every benchmark kind, built in code, for the
//! snapshot tests of the exporters and plots (no clock, no machine).

// The board build's tests use a few of them.
#![cfg_attr(not(feature = "host-tools"), allow(dead_code))]

use crate::result::details::cruncher::CruncherDetails;
use crate::result::details::switch::{PairDetails, SwitchDetails};
use crate::result::details::Details;
use crate::result::{
    Benchmark, EndReason, Phase, Policy, RunResult, Series, SeriesPoint, ThreadResult, Thresholds,
    Tool, Tuning,
};
use crate::stats::recorder::Totals;
use crate::stats::{Histogram, Summary};
use crate::sysinfo::{CpuGovernor, SystemInfo};
use serde_json::json;

use crate::stats::xorshift;

/// How one thread's samples look.
#[derive(Clone, Copy)]
pub struct Shape {
    pub base_ns: u64,
    pub spread_ns: u64,
    /// Every `spike_every`-th sample is `spike_ns` plus noise (0: none).
    pub spike_every: u64,
    pub spike_ns: u64,
}

/// Samples at `period_ns`, their histogram, exact totals and 1 s series.
pub fn thread(
    name: &str,
    cpu: Option<usize>,
    seed: u64,
    n: u64,
    period_ns: u64,
    shape: Shape,
    offset_ns: u64,
) -> (ThreadResult, Totals, Histogram) {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut h = Histogram::new();
    let mut t = Totals::default();
    let mut points: Vec<SeriesPoint> = Vec::new();
    for i in 0..n {
        let r = xorshift(&mut s);
        // A skewed bulk: the smaller of two draws, as latencies cluster low.
        let a = r % shape.spread_ns.max(1);
        let b = (r >> 32) % shape.spread_ns.max(1);
        let mut v = shape.base_ns + a.min(b);
        if shape.spike_every > 0 && i % shape.spike_every == shape.spike_every / 2 {
            v = shape.spike_ns + (r >> 16) % (shape.spike_ns / 4 + 1);
        }
        let at = offset_ns + i * period_ns;
        h.record(v);
        if t.samples == 0 || v > t.max {
            t.max = v;
            t.max_index = i;
            t.max_time = at;
        }
        t.min = if t.samples == 0 { v } else { t.min.min(v) };
        t.samples += 1;
        t.sum += v;
        t.sum_sq += v as u128 * v as u128;
        t.last = v;
        let start = at / 1_000_000_000 * 1_000_000_000;
        match points.last_mut() {
            Some(p) if p.t_ns == start => {
                let (v, n) = (v as i64, p.samples as i64);
                let total = p.avg_ns * n + v;
                p.samples += 1;
                p.avg_ns = total / (n + 1);
                p.min_ns = p.min_ns.min(v);
                p.max_ns = p.max_ns.max(v);
            }
            _ => points.push(SeriesPoint {
                t_ns: start,
                samples: 1,
                min_ns: v as i64,
                avg_ns: v as i64,
                max_ns: v as i64,
                overruns: 0,
            }),
        }
    }
    let summary = Summary::from_parts(&t, &h);
    (
        ThreadResult {
            name: name.into(),
            cpu,
            summary,
            histogram: h.to_record(),
            series: Series {
                interval_ns: 1_000_000_000,
                points,
            },
            forecast: None,
        },
        t,
        h,
    )
}

fn total(parts: &[(ThreadResult, Totals, Histogram)]) -> Summary {
    let mut t = Totals::default();
    let mut h = Histogram::new();
    for (_, pt, ph) in parts {
        t.merge(pt);
        h.merge(ph);
    }
    Summary::from_parts(&t, &h)
}

pub fn system(host: &str) -> SystemInfo {
    SystemInfo {
        hostname: Some(host.into()),
        kernel_release: Some("6.6.21-rt26".into()),
        kernel_version: Some("#1 SMP PREEMPT_RT Tue Mar  5 14:12:40 CET 2024".into()),
        machine: Some("aarch64".into()),
        preempt_model: "PREEMPT_RT".into(),
        realtime_sysfs: Some(true),
        cmdline: Some("console=ttyAMA0,115200 isolcpus=2,3 nohz_full=2,3 rcu_nocbs=2,3".into()),
        device_tree_model: Some("Raspberry Pi 4 Model B Rev 1.4".into()),
        cpu_count: 4,
        online_cpus: Some("0-3".into()),
        isolcpus: Some("2-3".into()),
        nohz_full: Some("2-3".into()),
        rcu_nocbs: Some("2,3".into()),
        clocksource: Some("arch_sys_counter".into()),
        available_clocksources: vec!["arch_sys_counter".into()],
        governors: (0..4)
            .map(|cpu| CpuGovernor {
                cpu,
                governor: "performance".into(),
            })
            .collect(),
        smt_active: None,
        sched_rt_runtime_us: Some(-1),
        sched_rt_period_us: Some(1_000_000),
        timer_migration: Some(false),
        ..SystemInfo::default()
    }
}

fn base(
    benchmark: Benchmark,
    host: &str,
    threads: Vec<(ThreadResult, Totals, Histogram)>,
    period_ns: u64,
    duration_ns: u64,
) -> RunResult {
    let n = threads.len();
    let total = total(&threads);
    RunResult {
        schema: crate::result::SCHEMA_NAME.into(),
        schema_version: crate::result::SCHEMA_VERSION,
        tool: Tool {
            name: "rtlat".into(),
            version: "0.1.0".into(),
        },
        benchmark,
        label: None,
        command_line: vec![
            "rtlat".into(),
            benchmark.name().into(),
            "--duration".into(),
            "20s".into(),
        ],
        start_time_utc: "2026-01-05T10:00:00.000Z".into(),
        duration_ns: Some(duration_ns),
        complete: true,
        end_reason: EndReason::Duration,
        config: json!({ "period_ns": period_ns, "duration_ns": duration_ns }),
        system: system(host),
        tuning: Tuning {
            mlock: Some(true),
            dma_latency_us: Some(Some(0)),
            policy: Some(Policy::Fifo),
            priority: Some(80),
            deadline: None,
            affinity: threads.iter().map(|t| t.0.cpu).collect(),
            phase_offsets_ns: (0..n as u64).map(|i| i * period_ns / n as u64).collect(),
        },
        threads: threads.into_iter().map(|t| t.0).collect(),
        total,
        thresholds: Thresholds::default(),
        loads: Vec::new(),
        notes: Vec::new(),
        measuring_cpu_time_ns: 0,
        phases: Vec::new(),
        details: serde_json::Map::new(),
        explained: Vec::new(),
    }
}

const fn shape(base_ns: u64, spread_ns: u64, spike_every: u64, spike_ns: u64) -> Shape {
    Shape {
        base_ns,
        spread_ns,
        spike_every,
        spike_ns,
    }
}

/// Timer on two CPUs, 10 s idle then 10 s under `exec:2,memory:32M`.
pub fn timer_phases() -> RunResult {
    let period = 1_000_000;
    let idle = shape(3_000, 6_000, 4_001, 40_000);
    let busy = shape(4_500, 14_000, 997, 95_000);
    let mut phases = Vec::new();
    let mut all: Vec<Vec<(ThreadResult, Totals, Histogram)>> = vec![Vec::new(), Vec::new()];
    for (p, (name, sh, offset)) in [("idle", idle, 0u64), ("load", busy, 10_000_000_000)]
        .iter()
        .enumerate()
    {
        let parts: Vec<_> = (0..2)
            .map(|c| {
                thread(
                    &format!("cpu{c}"),
                    Some(c),
                    11 + c as u64 + 10 * p as u64,
                    10_000,
                    period,
                    *sh,
                    *offset,
                )
            })
            .collect();
        phases.push(Phase {
            name: name.to_string(),
            start_ns: *offset,
            end_ns: offset + 10_000_000_000,
            threads: parts.iter().map(|x| x.0.clone()).collect(),
            total: total(&parts),
        });
        for (c, part) in parts.into_iter().enumerate() {
            all[c].push(part);
        }
    }
    // The whole run per CPU: both phases merged.
    let threads: Vec<(ThreadResult, Totals, Histogram)> = all
        .into_iter()
        .map(|mut parts| {
            let (mut t, mut tot, mut h) = parts.remove(0);
            for (pt, ptot, ph) in parts {
                tot.merge(&ptot);
                h.merge(&ph);
                t.series.points.extend(pt.series.points);
            }
            t.summary = Summary::from_parts(&tot, &h);
            t.histogram = h.to_record();
            (t, tot, h)
        })
        .collect();
    let mut r = base(Benchmark::Timer, "board-a", threads, period, 20_000_000_000);
    r.phases = phases;
    r.label = Some("rpi4 rt26".into());
    r.loads = vec![
        json!({"name": "exec", "spec": "exec:2", "params": {"command": "ls /bin"}, "workers": 2, "started": 2, "failed": [], "achieved_rate": 812.4, "rate_unit": "ops/s", "ops": 8124, "cpu_time_ns": 9_100_000_000u64, "duration_ns": 10_000_000_000u64}),
        json!({"name": "memory", "spec": "memory:32M", "params": {"bytes": 33554432}, "workers": 1, "started": 1, "failed": [], "achieved_rate": 1_512_000_000.0, "rate_unit": "B/s", "ops": 451, "cpu_time_ns": 9_900_000_000u64, "duration_ns": 10_000_000_000u64}),
    ];
    r.notes = vec!["a note with <markup> & a link http://example.invalid/x".into()];
    r
}

/// Timer on twelve CPUs (more than a plot draws), no load.
pub fn timer_many() -> RunResult {
    let threads = (0..12)
        .map(|c| {
            thread(
                &format!("cpu{c}"),
                Some(c),
                100 + c as u64,
                2_000,
                500_000,
                shape(
                    2_000 + 100 * c as u64,
                    5_000,
                    501 + c as u64,
                    20_000 + 3_000 * c as u64,
                ),
                0,
            )
        })
        .collect();
    base(Benchmark::Timer, "board-b", threads, 500_000, 1_000_000_000)
}

/// `timer --context irq,thread` on two CPUs: series `cpuN/irq`, `cpuN/thread`.
pub fn timer_contexts() -> RunResult {
    let mut threads = Vec::new();
    for c in 0..2u64 {
        for (i, level) in ["irq", "thread"].iter().enumerate() {
            let base = 1_000 + 4_000 * i as u64 + 500 * c;
            threads.push(thread(
                &format!("cpu{c}/{level}"),
                Some(c as usize),
                300 + 10 * c + i as u64,
                1_000 + 500 * c,
                1_000_000,
                shape(base, 2_000, 0, 0),
                0,
            ));
        }
    }
    base(
        Benchmark::Timer,
        "board-k",
        threads,
        1_000_000,
        1_000_000_000,
    )
}

pub fn switch() -> RunResult {
    let threads = (0..2)
        .map(|i| {
            thread(
                &format!("pair{i}"),
                Some(i),
                21 + i as u64,
                5_000,
                1_000_000,
                shape(6_000, 4_000, 1_203, 31_000),
                0,
            )
        })
        .collect();
    let mut r = base(
        Benchmark::Switch,
        "board-a",
        threads,
        1_000_000,
        5_000_000_000,
    );
    r.total.overruns = 3;
    let pair = |name: &str, lost, late| PairDetails {
        name: name.into(),
        lost,
        wakee_busy: lost - late,
        waker_late: late,
        unrecorded: 0,
        rung: 5_000,
    };
    r.details = SwitchDetails {
        via: "futex".into(),
        processes: false,
        lost: Some(3),
        pairs: vec![pair("pair0", 1, 1), pair("pair1", 2, 0)],
    }
    .to_map();
    for (k, v) in [
        ("placement", json!("same")),
        ("warm", json!(true)),
        ("wakee_priority", json!(80)),
        ("waker_priority", json!(79)),
    ] {
        r.config[k] = v;
    }
    r
}

pub fn cruncher() -> RunResult {
    let threads = vec![thread(
        "run",
        Some(1),
        31,
        500,
        20_000_000,
        shape(10_012_000, 60_000, 97, 10_900_000),
        0,
    )];
    let mut r = base(
        Benchmark::Cruncher,
        "board-a",
        threads,
        20_000_000,
        10_000_000_000,
    );
    r.details = CruncherDetails {
        ideal_ns: 10_004_000,
        work_ns: 10_000_000,
        iterations: 1_384_675,
        calibration_runs: 20,
        calibration_slowest_ns: 10_101_723,
        tolerance: 0.05,
        beyond_tolerance: Some(6),
        stretch: Some(1.1234),
    }
    .to_map();
    r
}

/// One thread per named shape, `n` samples at 1 ms each, seeds from `seed` on.
fn named(
    shapes: &[(&str, Shape)],
    cpu: Option<usize>,
    seed: u64,
    n: u64,
) -> Vec<(ThreadResult, Totals, Histogram)> {
    shapes
        .iter()
        .enumerate()
        .map(|(i, (name, s))| thread(name, cpu, seed + i as u64, n, 1_000_000, *s, 0))
        .collect()
}

pub fn net() -> RunResult {
    let sh = [
        ("rtt", shape(38_000, 20_000, 1_001, 410_000)),
        ("tx", shape(4_000, 3_000, 0, 0)),
        ("rx", shape(9_000, 6_000, 2_003, 120_000)),
        ("server_rx", shape(8_000, 5_000, 0, 0)),
        ("turnaround", shape(14_000, 6_000, 0, 0)),
    ];
    let threads = named(&sh, None, 41, 10_000);
    let mut r = base(
        Benchmark::Net,
        "board-a",
        threads,
        1_000_000,
        10_000_000_000,
    );
    for (k, v) in [
        ("lost", 2),
        ("duplicated", 0),
        ("reordered", 1),
        ("late", 4),
    ] {
        r.details.insert(k.into(), v.into());
    }
    r
}

pub fn irq() -> RunResult {
    let sh = [
        ("irq", shape(7_000, 3_000, 0, 0)),
        ("user", shape(16_000, 8_000, 777, 70_000)),
        ("wake", shape(21_000, 9_000, 777, 5_000_000)),
    ];
    let threads = named(&sh, Some(2), 51, 3_000);
    let mut r = base(Benchmark::Irq, "board-a", threads, 1_000_000, 3_000_000_000);
    r.details.insert("missed".into(), 1.into());
    r
}

/// A result that measured nothing (killed before the first sample).
pub fn empty() -> RunResult {
    let mut r = base(Benchmark::Timer, "board-c", Vec::new(), 1_000_000, 0);
    r.threads = vec![ThreadResult {
        name: "cpu0".into(),
        cpu: Some(0),
        summary: Summary::default(),
        histogram: Histogram::new().to_record(),
        series: Series {
            interval_ns: 1_000_000_000,
            points: Vec::new(),
        },
        forecast: None,
    }];
    r.complete = false;
    r.end_reason = EndReason::Running;
    r.start_time_utc = String::new();
    r
}

/// A timer result of `secs` seconds: 1 s intervals at 0..=`secs` s (the
/// last one the samples taken just as the run ended), each of `ns`.
pub fn over_time(secs: u64, ns: i64) -> RunResult {
    let mut r = timer_many();
    r.threads.truncate(1);
    r.duration_ns = Some(secs * 1_000_000_000);
    r.threads[0].series.points = (0..=secs)
        .map(|i| crate::result::SeriesPoint {
            t_ns: i * 1_000_000_000,
            samples: 10,
            min_ns: ns,
            avg_ns: ns,
            max_ns: ns,
            overruns: 0,
        })
        .collect();
    r.threads[0].series.interval_ns = 1_000_000_000;
    r
}
