//! The final text summary of a result.

use crate::result::RunResult;
use crate::stats::summary::{label, Summary, PERCENTILES};
use crate::units::{human_duration, us};
use std::fmt::Write;

/// A header line and one row per thread plus `all`, latencies in µs.
pub fn summary(r: &RunResult) -> String {
    let mut s = String::new();
    let t = &r.tuning;
    let policy = match t.policy.as_str() {
        "fifo" | "rr" => format!("SCHED_{} {}", t.policy.to_uppercase(), t.priority),
        other => format!("SCHED_{}", other.to_uppercase()),
    };
    let dma = t
        .dma_latency_us
        .map(|v| format!("{v}us"))
        .unwrap_or_else(|| "off".into());
    let period = r
        .config
        .get("period_ns")
        .and_then(|v| v.as_u64())
        .map(|p| format!(", period {}", human_duration(p)))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "rtlat {}: {} thread(s){period}, {policy}, mlock {}, dma_latency {dma}, {} in {}{}",
        r.benchmark,
        r.threads.len(),
        if t.mlock { "on" } else { "off" },
        if r.complete { "ended" } else { "INCOMPLETE" },
        secs(r.duration_ns),
        match r.end_reason.as_str() {
            "" | "duration" | "loops" => String::new(),
            reason => format!(" ({reason})"),
        }
    );
    let n_max = r
        .threads
        .iter()
        .map(|t| t.summary.samples)
        .max()
        .unwrap_or(0)
        .max(r.total.samples);
    let ps: Vec<f64> = PERCENTILES
        .iter()
        .copied()
        .filter(|&p| crate::stats::summary::supported(p, n_max))
        .collect();
    let _ = write!(
        s,
        "{:<8} {:>10} {:>9} {:>9} {:>9} {:>9}",
        "(us)", "samples", "min", "avg", "max", "stddev"
    );
    for &p in &ps {
        let _ = write!(s, " {:>9}", label(p));
    }
    let _ = writeln!(s, " {:>8}  max at", "overruns");
    let mut row = |name: &str, m: &Summary| {
        let _ = write!(
            s,
            "{:<8} {:>10} {:>9} {:>9} {:>9} {:>9}",
            name,
            m.samples,
            us(m.min_ns),
            us(m.avg_ns),
            us(m.max_ns),
            us(m.stddev_ns)
        );
        for &p in &ps {
            let v = m.percentile(p).map(us).unwrap_or_else(|| "-".into());
            let _ = write!(s, " {v:>9}");
        }
        let at = if m.samples > 0 {
            format!("#{} (+{})", m.max_sample, secs(m.max_at_ns))
        } else {
            "-".into()
        };
        let _ = writeln!(s, " {:>8}  {at}", m.overruns);
    };
    for th in &r.threads {
        row(&th.name, &th.summary);
    }
    if r.threads.len() > 1 {
        row("all", &r.total);
    }
    if let Some(b) = &r.thresholds.break_event {
        let _ = writeln!(
            s,
            "break: {} sample #{} latency {} us at +{}{}",
            r.threads
                .get(b.thread)
                .map(|t| t.name.as_str())
                .unwrap_or("?"),
            b.sample,
            us(b.latency_ns),
            secs(b.at_ns),
            if b.trace_marked {
                "; kernel trace marked and tracing stopped (read tracing/trace; echo 1 > tracing/tracing_on to resume)"
            } else {
                ""
            }
        );
    }
    if let Some(limit) = r.thresholds.max_latency_ns {
        let _ = writeln!(
            s,
            "max-latency {} us: {}",
            us(limit),
            if r.thresholds.max_latency_exceeded {
                "EXCEEDED"
            } else {
                "ok"
            }
        );
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// Seconds with three decimals: `12.345s`.
pub fn secs(ns: u64) -> String {
    format!("{}.{:03}s", ns / 1_000_000_000, ns / 1_000_000 % 1000)
}
