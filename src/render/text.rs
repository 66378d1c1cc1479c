//! Text for a terminal: the lines printed when a run starts and ends (the
//! summary), and the text report of a result file (`rtlat report`).
//! Measuring threads never format text; only these functions do.

use super::describe::{
    detail_value, dma_of, duration_of, extremes_of, loads_of, machine_of, mlock_of, percentile_of,
    period_of, policy_of, us_or_unknown, UNKNOWN,
};
use super::printable::printable;
use super::table::{self, Col};
use super::{Loaded, Render};
use crate::result::details::Details;
use crate::result::{RunResult, ThreadResult};
use crate::stats::summary::{label, supported, Summary, PERCENTILES};
use crate::units::{human_duration, secs, us};
use std::fmt::Write;

/// The settings of a run in one phrase: `2 thread(s), period 1ms, SCHED_FIFO 80, mlock on, dma_latency 0us`;
/// what the result does not record is left out.
pub fn settings(r: &RunResult) -> String {
    let t = &r.tuning;
    // Measuring threads (one entry of `affinity` each), not series.
    if !r.benchmark.measures_own_threads() {
        return watched(r);
    }
    let threads = if t.affinity.is_empty() {
        r.threads.len()
    } else {
        t.affinity.len()
    };
    let mut parts = vec![format!("{threads} thread(s)")];
    parts.extend(period_of(r).map(|p| format!("period {p}")));
    parts.extend(policy_of(r));
    parts.extend(mlock_of(r).map(|m| format!("mlock {m}")));
    parts.extend(dma_of(r).map(|d| format!("dma_latency {d}")));
    parts.join(", ")
}

/// What a watch follows: its selection (`comm cyclictest`, `pids 12, 13`,
/// `realtime`) and, once known, how many threads.
fn watched(r: &RunResult) -> String {
    let selection = match r.config.get("select") {
        Some(serde_json::Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => format!("{k} {s}"),
                serde_json::Value::Array(a) => format!(
                    "{k} {}",
                    a.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                v => format!("{k} {v}"),
            })
            .collect::<Vec<_>>()
            .join(", "),
        Some(serde_json::Value::String(s)) => s.clone(),
        _ => "threads".into(),
    };
    // A watched thread's other series are named after it: `NAME/…`.
    match r.threads.iter().filter(|t| !t.name.contains('/')).count() {
        0 => format!("watching {selection}"),
        n => format!("watching {selection}: {n} thread(s)"),
    }
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
        "rtlat {}: {}, {}{}{}",
        r.benchmark,
        settings(r),
        if r.complete { "ended" } else { "INCOMPLETE" },
        duration_of(r)
            .map(|d| format!(" in {d}"))
            .unwrap_or_default(),
        if r.end_reason.as_asked() {
            String::new()
        } else {
            format!(" ({})", r.end_reason)
        }
    );
    let merge = r.benchmark.merges_alike();
    s.push_str(&summary_table(&r.threads, merge.then_some(&r.total)));
    for p in &r.phases {
        let _ = writeln!(
            s,
            "phase {} ({} to {}):",
            printable(&p.name),
            secs(p.start_ns),
            secs(p.end_ns)
        );
        s.push_str(&summary_table(&p.threads, merge.then_some(&p.total)));
    }
    for l in &r.loads {
        let name = printable(l.get("name").and_then(|v| v.as_str()).unwrap_or("?"));
        if l.get("declared").and_then(|v| v.as_bool()) == Some(true) {
            let _ = writeln!(s, "load {name}: declared, not measured");
            continue;
        }
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
            "load {name}: {workers} worker(s), {}{}",
            crate::load::human_rate(rate, unit),
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
            printable(
                r.threads
                    .get(b.thread)
                    .map(|t| t.name.as_str())
                    .unwrap_or("?")
            ),
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
        let _ = writeln!(s, "max-latency {} us: {}", us(limit), exceeded(r));
    }
    // A board build makes no forecast and reads none from a file.
    #[cfg(feature = "host-tools")]
    for line in super::forecast::all_lines(r) {
        let _ = writeln!(s, "{line}");
    }
    // Only a build that reads the kernel's trace makes a watch (a board
    // build leaves the reading of its details out).
    let watched = crate::KERNEL_TRACE && r.benchmark == crate::result::Benchmark::Watch;
    if let Some(d) = watched
        .then(|| crate::result::details::watch::WatchDetails::of(r))
        .flatten()
    {
        for t in &d.watch.threads {
            let _ = writeln!(s, "{}", printable(&watched_line(t)));
        }
    }
    for e in &r.explained {
        let _ = writeln!(s, "{}", printable(&explained_line(e)));
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {}", printable(n));
    }
    s
}

/// `worst 16.9 ms at +4.670s on cpu0: hypervisor 16.6 ms, irq virtio0-input 0.2 ms`.
pub fn explained_line(e: &crate::result::Explained) -> String {
    format!(
        "worst {} at +{} on {}: {}",
        crate::result::explained::short(e.latency_ns),
        secs(e.at_ns),
        e.thread,
        e.parts_line(4)
    )
}

/// `app:42: 2500 activations, period 2.0 ms (jitter 2.5 ms), 50 overruns,
/// preempted 1.2 ms mid-activation, most by hog 7 FIFO 90 (4 times, 1.2 ms)`.
pub fn watched_line(t: &crate::result::details::watch::WatchedThread) -> String {
    use crate::result::explained::short;
    let mut s = format!("{}: {} activations", t.name, t.activations);
    if let Some(p) = t.period_ns {
        let _ = write!(s, ", period {}", short(p));
        if let Some(j) = t.jitter_ns {
            let _ = write!(s, " (jitter {})", short(j));
        }
    }
    let _ = write!(
        s,
        ", {} overruns, preempted {} mid-activation",
        t.overruns,
        short(t.preempted_ns)
    );
    if let Some(i) = t.interference.first() {
        let _ = write!(
            s,
            ", most by {} ({} times, {})",
            i.task,
            i.times,
            short(i.ns)
        );
    }
    s
}

/// `EXCEEDED` or `ok`: the verdict on `--max-latency`.
pub fn exceeded(r: &RunResult) -> &'static str {
    if r.thresholds.max_latency_exceeded {
        "EXCEEDED"
    } else {
        "ok"
    }
}

/// The percentiles a table shows: those `samples` supports.
pub fn shown_percentiles(samples: u64) -> Vec<f64> {
    PERCENTILES
        .iter()
        .copied()
        .filter(|&p| supported(p, samples))
        .collect()
}

/// `#12 (+0.013s)`, or `-` without samples or when the result does not
/// record it: where the maximum was.
pub fn max_at(m: &Summary) -> String {
    match (m.max_sample, m.max_at_ns) {
        _ if m.samples == 0 => UNKNOWN.into(),
        (Some(i), Some(at)) => format!("#{i} (+{})", secs(at)),
        (Some(i), None) => format!("#{i}"),
        (None, Some(at)) => format!("+{}", secs(at)),
        (None, None) => UNKNOWN.into(),
    }
}

/// One row per thread plus `all` when there are several, latencies in µs,
/// with the percentiles the sample count supports.
pub fn summary_table(threads: &[ThreadResult], total: Option<&Summary>) -> String {
    let n_max = threads
        .iter()
        .map(|t| t.summary.samples)
        .max()
        .unwrap_or(0)
        .max(total.map_or(0, |t| t.samples));
    let ps = shown_percentiles(n_max);
    let mut cols = vec![
        Col::left().min(10),
        Col::right().fixed(10).gap(1),
        Col::right().fixed(9).gap(1),
        Col::right().fixed(9).gap(1),
        Col::right().fixed(9).gap(1),
        Col::right().fixed(9).gap(1),
    ];
    cols.extend(ps.iter().map(|_| Col::right().fixed(9).gap(1)));
    cols.push(Col::right().fixed(8).gap(1));
    cols.push(Col::left().gap(2));
    let mut head: Vec<String> = ["(us)", "samples", "min", "avg", "max", "stddev"]
        .map(String::from)
        .to_vec();
    head.extend(ps.iter().map(|&p| label(p)));
    head.push("overruns".into());
    head.push("max at".into());
    let row = |name: &str, m: &Summary| {
        let mut r = vec![name.to_string(), m.samples.to_string()];
        r.extend(extremes_of(m));
        r.push(us_or_unknown(m.stddev_ns));
        r.extend(ps.iter().map(|&p| percentile_of(m, p)));
        r.push(m.overruns.to_string());
        r.push(max_at(m));
        r
    };
    let mut rows = vec![head];
    rows.extend(threads.iter().map(|t| row(&t.name, &t.summary)));
    if let Some(total) = total.filter(|_| threads.len() > 1) {
        rows.push(row("all", total));
    }
    table::text(&cols, &rows)
}

/// The text report of one result: what ran on what under which load, the
/// summary and the benchmark-specific details.
pub fn report(l: &Loaded) -> String {
    let r = &l.result;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "== {}: {} ({})",
        l.label,
        r.benchmark,
        printable(&l.path.display().to_string())
    );
    let _ = writeln!(s, "system: {}", printable(&machine_of(r)));
    let start = if r.start_time_utc.is_empty() {
        "unknown".to_string()
    } else {
        r.start_time_utc.clone()
    };
    let _ = writeln!(
        s,
        "start: {}, load: {}",
        printable(&start),
        printable(&loads_of(r, true))
    );
    s.push_str(&summary(r));
    for line in super::describe::noise_lines(r) {
        let _ = writeln!(s, "{}", printable(&line));
    }
    if let Some(line) = super::describe::details_line(r) {
        let _ = writeln!(s, "{}", printable(&line));
    } else if !r.details.is_empty() {
        let items: Vec<String> = r
            .details
            .iter()
            .map(|(k, v)| format!("{}={}", printable(k), printable(&detail_value(v))))
            .collect();
        let _ = writeln!(s, "details: {}", items.join(" "));
    }
    s
}

/// The text reports of results, a blank line between.
pub struct TextReport;

impl Render for TextReport {
    fn render(&self, results: &[&Loaded]) -> String {
        let texts: Vec<String> = results.iter().map(|l| report(l)).collect();
        texts.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use crate::result::details::watch::{Preemptor, WatchedThread};

    #[test]
    fn a_watched_thread_is_one_line_with_its_main_preemptor() {
        let mut t = WatchedThread {
            name: "app:42".into(),
            activations: 2500,
            period_ns: Some(2_000_000),
            jitter_ns: Some(2_500_000),
            overruns: 50,
            ..WatchedThread::default()
        };
        assert_eq!(
            super::watched_line(&t),
            "app:42: 2500 activations, period 2.0 ms (jitter 2.5 ms), 50 overruns, preempted 0 ns mid-activation"
        );
        t.preempted_ns = 1_200_000;
        t.interference = vec![Preemptor {
            task: "hog 7 FIFO 90".into(),
            times: 4,
            ns: 1_200_000,
        }];
        t.period_ns = None;
        assert_eq!(
            super::watched_line(&t),
            "app:42: 2500 activations, 50 overruns, preempted 1.2 ms mid-activation, most by hog 7 FIFO 90 (4 times, 1.2 ms)"
        );
    }
}
