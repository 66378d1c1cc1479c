//! The final text summary of a result.

use crate::result::RunResult;
use crate::stats::summary::{label, Summary, PERCENTILES};
use crate::units::{human_duration, us};
use std::fmt::Write;

/// The settings of a run in one phrase: `2 thread(s), period 1ms, SCHED_FIFO 80, mlock on, dma_latency 0us`.
pub fn settings(r: &RunResult) -> String {
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
    // Measuring threads (one entry of `affinity` each), not series.
    let threads = if t.affinity.is_empty() {
        r.threads.len()
    } else {
        t.affinity.len()
    };
    format!(
        "{threads} thread(s){period}, {policy}, mlock {}, dma_latency {dma}",
        if t.mlock { "on" } else { "off" },
    )
}

/// The line printed when a run starts.
pub fn start_line(r: &RunResult) -> String {
    let until = match (
        r.config.get("duration_ns").and_then(|v| v.as_u64()),
        r.config.get("loops").and_then(|v| v.as_u64()),
    ) {
        (Some(d), _) => format!("for {}", human_duration(d)),
        (None, Some(n)) => format!("for {n} samples per thread"),
        _ => "until interrupted (Ctrl-C)".into(),
    };
    format!("rtlat {}: {}, {until}", r.benchmark, settings(r))
}

/// A header line and one row per thread plus `all`, latencies in µs; then
/// per-phase tables, loads, thresholds and notes.
pub fn summary(r: &RunResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "rtlat {}: {}, {} in {}{}",
        r.benchmark,
        settings(r),
        if r.complete { "ended" } else { "INCOMPLETE" },
        secs(r.duration_ns),
        match r.end_reason.as_str() {
            "" | "duration" | "loops" => String::new(),
            reason => format!(" ({reason})"),
        }
    );
    let merge = merges_alike(r);
    s.push_str(&table(&r.threads, merge.then_some(&r.total)));
    for p in &r.phases {
        let _ = writeln!(
            s,
            "phase {} ({} to {}):",
            p.name,
            secs(p.start_ns),
            secs(p.end_ns)
        );
        s.push_str(&table(&p.threads, merge.then_some(&p.total)));
    }
    for l in &r.loads {
        let name = l.get("name").and_then(|v| v.as_str()).unwrap_or("?");
        let rate = l
            .get("achieved_rate")
            .and_then(|v| v.as_f64())
            .unwrap_or(0.0);
        let unit = l.get("rate_unit").and_then(|v| v.as_str()).unwrap_or("");
        let workers = l.get("workers").and_then(|v| v.as_u64()).unwrap_or(0);
        let failed = l
            .get("failed")
            .and_then(|v| v.as_array())
            .map(|a| a.len())
            .unwrap_or(0);
        let _ = writeln!(
            s,
            "load {name}: {workers} worker(s), {rate:.1} {unit}{}",
            if failed > 0 {
                format!(", {failed} FAILED")
            } else {
                String::new()
            }
        );
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

/// One row per thread plus `all` when there are several, latencies in µs,
/// with the percentiles the sample count supports.
pub fn table(threads: &[crate::result::ThreadResult], total: Option<&Summary>) -> String {
    let mut s = String::new();
    let n_max = threads
        .iter()
        .map(|t| t.summary.samples)
        .max()
        .unwrap_or(0)
        .max(total.map_or(0, |t| t.samples));
    let ps: Vec<f64> = PERCENTILES
        .iter()
        .copied()
        .filter(|&p| crate::stats::summary::supported(p, n_max))
        .collect();
    let w = threads
        .iter()
        .map(|t| t.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(10);
    let _ = write!(
        s,
        "{:<w$} {:>10} {:>9} {:>9} {:>9} {:>9}",
        "(us)", "samples", "min", "avg", "max", "stddev"
    );
    for &p in &ps {
        let _ = write!(s, " {:>9}", label(p));
    }
    let _ = writeln!(s, " {:>8}  max at", "overruns");
    let mut row = |name: &str, m: &Summary| {
        let _ = write!(
            s,
            "{:<w$} {:>10} {:>9} {:>9} {:>9} {:>9}",
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
    for th in threads {
        row(&th.name, &th.summary);
    }
    if let Some(total) = total.filter(|_| threads.len() > 1) {
        row("all", total);
    }
    s
}

/// Whether the threads of a result measure the same quantity, so that an
/// `all` row (the merged `total`) means something: not for net (rtt, tx, rx …)
/// or irq (irq, user, wake …), whose series are different metrics.
pub fn merges_alike(r: &RunResult) -> bool {
    !matches!(r.benchmark.as_str(), "net" | "irq")
}
