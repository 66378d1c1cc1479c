//! cyclictest's histogram text (`-h N`, printed on stdout at the end): one row
//! per µs bucket (`000012 000216\t000192`: the bucket, then a count per
//! thread, plus a sum column with `-H`), then `# Total:`, `# Min Latencies:`,
//! `# Avg Latencies:` (whole µs), `# Max Latencies:`, `# Histogram Overflows:`
//! and the first overflow cycle numbers. Lines starting with `#` that carry
//! nothing we use, and `WARN:` lines (stderr merged in), are skipped.

use super::lines::Preamble;
use super::{detect, ImportFormat, Input, Reader};
use super::{parse_u64, Imported, ParseError, Parsed, ThreadBuild};
use crate::stats::summary::signed;

/// The numbers after a `# Label:` prefix.
fn numbers(line: usize, rest: &str, what: &str) -> Parsed<Vec<u64>> {
    rest.split_whitespace()
        .map(|t| {
            parse_u64(t).ok_or_else(|| {
                ParseError::at(
                    line,
                    format!(
                        "expected whole numbers after '{what}', found {}",
                        super::found(t)
                    ),
                )
            })
        })
        .collect()
}
/// cyclictest -h histogram output.
pub static FORMAT: ImportFormat = ImportFormat {
    name: "cyclictest-hist",
    tool: "cyclictest",
    describe: "cyclictest -h histogram output",
    detect: |head| detect::line_starts_with(head, &["# Histogram", "# Min Latencies:"]),
    read: Reader::Lines(parse),
};

/// The summary lines cyclictest prints after every histogram, in its order.
const SUMMARY: [&str; 5] = [
    "Total:",
    "Min Latencies:",
    "Avg Latencies:",
    "Max Latencies:",
    "Histogram Overflows:",
];

const EXPECTED: &str = "histogram rows ('000012 000216 …', then '# Total:' …)";

/// One thread's column: its build and its lowest and highest non-empty buckets.
struct Column {
    build: ThreadBuild,
    low: Option<u64>,
    high: Option<u64>,
}

/// A `T: 0 (12345) P:80 I:1000 C:   2000 Min: …` status line: (thread, priority, interval µs).
fn status(t: &str) -> Option<(usize, i32, u64)> {
    let rest = t.strip_prefix("T:")?;
    let mut it = rest.split_whitespace();
    let index = parse_u64(it.next()?)? as usize;
    let mut prio = None;
    let mut interval = None;
    for w in it {
        if let Some(p) = w.strip_prefix("P:") {
            prio = p.parse().ok();
        } else if let Some(i) = w.strip_prefix("I:") {
            interval = parse_u64(i);
        }
    }
    Some((index, prio?, interval?))
}

pub fn parse(lines: &mut Input) -> Parsed<Imported> {
    let mut cols: Vec<Column> = Vec::new();
    let mut summary: [Option<(usize, Vec<u64>)>; 5] = Default::default();
    let mut last_bucket: Option<u64> = None;
    let mut first_row = 0;
    let mut dma: Option<i32> = None;
    let mut policy = None;
    let mut statuses: Vec<(i32, u64)> = Vec::new();
    let mut preamble = Preamble::default();
    let mut started = false;
    let mut last = 0;
    while let Some((n, line)) = lines.next_line()? {
        last = n;
        if lines.cut() {
            return Err(ParseError::at(n, "expected a whole line, found the input ending inside this one (no line end): the output looks cut; import the whole output"));
        }
        let t = line.trim();
        if t.is_empty() || t.starts_with("WARN:") {
            continue;
        }
        if let Some((i, prio, interval)) = status(t) {
            if i >= statuses.len() {
                statuses.resize(i + 1, (0, 0));
            }
            statuses[i] = (prio, interval);
            started = true;
            continue;
        }
        if let Some(p) = t.strip_prefix("policy:") {
            policy = p.split(':').next().map(|p| p.trim().to_string());
            started = true;
            continue;
        }
        if let Some(c) = t.strip_prefix('#') {
            let c = c.trim();
            if let Some(i) = SUMMARY.iter().position(|label| c.starts_with(label)) {
                let what = format!("# {}", SUMMARY[i]);
                summary[i] = Some((n, numbers(n, &c[SUMMARY[i].len()..], &what)?));
            } else if let Some(rest) = c.strip_prefix("/dev/cpu_dma_latency set to ") {
                dma = rest.trim_end_matches("us").trim().parse().ok();
            } else if !started && !c.starts_with("Histogram") {
                preamble.skip(n, t, EXPECTED)?;
                continue;
            }
            started = true;
            continue;
        }
        let mut it = t.split_whitespace();
        let Some(bucket) = it.next().and_then(parse_u64) else {
            if !started {
                preamble.skip(n, t, EXPECTED)?;
                continue;
            }
            return Err(ParseError::at(
                n,
                format!(
                    "expected a histogram row (the bucket in µs, then one count per thread) or a '# …' line, found {}",
                    super::found(t)
                ),
            ));
        };
        started = true;
        if summary.iter().any(|s| s.is_some()) {
            return Err(ParseError::at(
                n,
                "expected no histogram row after '# Total:'",
            ));
        }
        if last_bucket.is_some_and(|l| l >= bucket) {
            return Err(ParseError::at(n, "expected buckets in increasing order"));
        }
        last_bucket = Some(bucket);
        let mut counts = 0;
        for tok in it {
            let v = parse_u64(tok).ok_or_else(|| {
                ParseError::at(n, format!("expected a histogram row (the bucket in µs, then one count per thread), found {}", super::found(t)))
            })?;
            if first_row == 0 {
                cols.push(Column {
                    build: ThreadBuild::new(format!("thread{counts}"), None),
                    low: None,
                    high: None,
                });
            }
            if let Some(col) = cols.get_mut(counts) {
                if v > 0 {
                    col.build
                        .add(bucket.saturating_mul(1000), v)
                        .map_err(|e| ParseError::at(n, e.msg))?;
                    col.low.get_or_insert(bucket);
                    col.high = Some(bucket);
                }
            }
            counts += 1;
        }
        if counts == 0 {
            return Err(ParseError::at(
                n,
                "expected one count per thread after the bucket",
            ));
        }
        if first_row == 0 {
            first_row = n;
        } else if counts != cols.len() {
            return Err(ParseError::at(
                n,
                format!(
                    "expected {} counts as in the rows before, found {counts}",
                    cols.len()
                ),
            ));
        }
    }
    if cols.is_empty() {
        return Err(ParseError::at(
            last,
            format!("expected histogram rows (run cyclictest with -h N and keep its stdout), but the input ends at line {last} without one"),
        ));
    }
    if let Some(i) = summary.iter().position(|s| s.is_none()) {
        return Err(ParseError::at(
            last,
            format!(
                "expected cyclictest's summary lines after the histogram ('# Total:', '# Min Latencies:', '# Avg Latencies:', '# Max Latencies:', '# Histogram Overflows:'), but the input ends at line {last} without '# {}': the output looks cut; import the whole output",
                SUMMARY[i]
            ),
        ));
    }
    let [total, mins, avgs, maxs, overflows] = summary.map(|s| s.unwrap_or_default());
    let threads = total.1.len();
    let columns = cols.len();
    if threads == 0 || (columns != threads && columns != threads + 1) {
        return Err(ParseError::at(
            first_row,
            format!("expected {threads} counts per row (one per thread, plus a sum with -H), found {columns}"),
        ));
    }
    for (i, (n, v)) in [&total, &mins, &avgs, &maxs, &overflows]
        .into_iter()
        .enumerate()
    {
        if v.len() != threads {
            return Err(ParseError::at(
                *n,
                format!(
                    "expected {threads} values after '# {}', found {}",
                    SUMMARY[i],
                    v.len()
                ),
            ));
        }
    }
    let limit = last_bucket.map_or(0, |l| l.saturating_add(1));
    let mut imp = Imported::new(crate::result::Benchmark::Timer);
    imp.notes.extend(preamble.note());
    for (i, col) in cols.into_iter().take(threads).enumerate() {
        let Column {
            build: mut b,
            low,
            high,
        } = col;
        if total.1[i] != b.recorded() {
            return Err(ParseError::at(
                total.0,
                format!(
                    "expected '# Total:' of thread {i} to be the sum of its rows ({}), found {}",
                    b.recorded(),
                    total.1[i]
                ),
            ));
        }
        let over = overflows.1[i];
        let (min, max) = (mins.1[i], maxs.1[i]);
        if b.recorded() > 0 {
            if low.is_some_and(|l| min < limit && min != l) {
                return Err(ParseError::at(mins.0, format!("expected the minimum of thread {i} in its lowest non-empty bucket ({}), found {min}", low.unwrap_or(0))));
            }
            if over == 0 && high.is_some_and(|h| max != h) {
                return Err(ParseError::at(maxs.0, format!("expected the maximum of thread {i} in its highest non-empty bucket ({}, no overflows), found {max}", high.unwrap_or(0))));
            }
        }
        if over > 0 && max < limit {
            return Err(ParseError::at(maxs.0, format!("expected the maximum of thread {i} beyond the histogram ({limit} µs, as {over} overflows are counted), found {max}")));
        }
        b.count = Some(b.recorded().saturating_add(over));
        b.overflow_at_ns = Some(limit.saturating_mul(1000));
        b.min_ns = Some(signed(min.saturating_mul(1000)));
        b.max_ns = Some(signed(max.saturating_mul(1000)));
        // cyclictest prints whole-µs averages here; the histogram mean is finer unless samples overflowed.
        if over > 0 {
            b.avg_ns = Some(avgs.1[i] as f64 * 1000.0);
        }
        imp.threads.push(b);
    }
    periods(&mut imp, &statuses, threads);
    if let Some(p) = policy.as_deref().and_then(crate::result::Policy::from_name) {
        imp.tuning.policy = Some(p);
        imp.tuning.priority = statuses.first().map(|s| s.0.clamp(0, 99));
    }
    imp.config.insert("histogram_buckets".into(), limit.into());
    imp.tuning.dma_latency_us = dma.map(Some);
    imp.notes.push(if statuses.is_empty() {
        "cyclictest's histogram text (with -q) names no host, kernel, period, policy or priority: those are unknown; buckets are read as µs (not -N)".into()
    } else {
        "cyclictest's histogram text names no host or kernel; the period and priority are its status lines' (T: … P: I:); buckets are read as µs (not -N)".into()
    });
    if overflows.1.iter().any(|&o| o > 0) {
        imp.notes
            .push("the average of a thread with overflows is cyclictest's whole-µs average".into());
    }
    Ok(imp)
}

/// Threads that ran with different intervals: recorded per thread, and said.
pub fn thread_periods(imp: &mut Imported, periods: Vec<u64>, why: &str) {
    let list: Vec<String> = periods
        .iter()
        .enumerate()
        .map(|(i, p)| format!("thread{i} {} µs", p / 1000))
        .collect();
    imp.notes.push(format!(
        "the threads ran with different intervals ({why}): {}",
        list.join(", ")
    ));
    imp.config
        .insert("thread_periods_ns".into(), periods.into());
}

/// Each thread's own interval from its status line (`I:`): one period when they agree.
fn periods(imp: &mut Imported, statuses: &[(i32, u64)], threads: usize) {
    let known: Vec<u64> = statuses
        .iter()
        .take(threads)
        .map(|s| s.1.saturating_mul(1000))
        .collect();
    if known.len() != threads || known.contains(&0) {
        return;
    }
    if known.iter().all(|&p| p == known[0]) {
        imp.config.insert("period_ns".into(), known[0].into());
    } else {
        thread_periods(imp, known, "cyclictest's -d distance");
    }
}
