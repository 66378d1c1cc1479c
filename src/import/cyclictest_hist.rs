//! cyclictest's histogram text (`-h N`, printed on stdout at the end): one row
//! per µs bucket (`000012 000216\t000192`: the bucket, then a count per
//! thread, plus a sum column with `-H`), then `# Total:`, `# Min Latencies:`,
//! `# Avg Latencies:` (whole µs), `# Max Latencies:`, `# Histogram Overflows:`
//! and the first overflow cycle numbers. Lines starting with `#` that carry
//! nothing we use, and `WARN:` lines (stderr merged in), are skipped.

use super::{detect, Format, Input, Reader};
use super::{parse_u64, Imported, ParseError, Parsed, ThreadBuild};

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
pub static FORMAT: Format = Format {
    name: "cyclictest-hist",
    tool: "cyclictest",
    describe: "cyclictest -h histogram output",
    detect: |head| detect::line_starts_with(head, &["# Histogram", "# Min Latencies:"]),
    read: Reader::Lines(parse),
};

pub fn parse(lines: &mut Input) -> Parsed<Imported> {
    let mut rows: Vec<(usize, u64, Vec<u64>)> = Vec::new();
    let mut total: Option<(usize, Vec<u64>)> = None;
    let mut mins: Option<(usize, Vec<u64>)> = None;
    let mut avgs: Option<(usize, Vec<u64>)> = None;
    let mut maxs: Option<(usize, Vec<u64>)> = None;
    let mut overflows: Option<(usize, Vec<u64>)> = None;
    let mut dma: Option<i32> = None;
    let mut columns = None;
    while let Some((n, line)) = lines.next_line()? {
        let t = line.trim();
        if t.is_empty() || t.starts_with("WARN:") {
            continue;
        }
        if let Some(c) = t.strip_prefix('#') {
            let c = c.trim();
            let labelled = |label: &str| c.strip_prefix(label).map(str::to_string);
            if let Some(rest) = labelled("Total:") {
                total = Some((n, numbers(n, &rest, "# Total:")?));
            } else if let Some(rest) = labelled("Min Latencies:") {
                mins = Some((n, numbers(n, &rest, "# Min Latencies:")?));
            } else if let Some(rest) = labelled("Avg Latencies:") {
                avgs = Some((n, numbers(n, &rest, "# Avg Latencies:")?));
            } else if let Some(rest) = labelled("Max Latencies:") {
                maxs = Some((n, numbers(n, &rest, "# Max Latencies:")?));
            } else if let Some(rest) = labelled("Histogram Overflows:") {
                overflows = Some((n, numbers(n, &rest, "# Histogram Overflows:")?));
            } else if let Some(rest) = labelled("/dev/cpu_dma_latency set to ") {
                dma = rest.trim_end_matches("us").trim().parse().ok();
            }
            continue;
        }
        let mut it = t.split_whitespace();
        let bucket = it.next().and_then(parse_u64);
        let counts: Option<Vec<u64>> = it.map(parse_u64).collect();
        let (Some(bucket), Some(counts)) = (bucket, counts) else {
            return Err(ParseError::at(
                n,
                format!(
                    "expected a histogram row (the bucket in µs, then one count per thread) or a '# …' line, found {}",
                    super::found(t)
                ),
            ));
        };
        if counts.is_empty() {
            return Err(ParseError::at(
                n,
                "expected one count per thread after the bucket",
            ));
        }
        if let Some(c) = columns {
            if counts.len() != c {
                return Err(ParseError::at(
                    n,
                    format!(
                        "expected {c} counts as in the rows before, found {}",
                        counts.len()
                    ),
                ));
            }
        }
        columns = Some(counts.len());
        if rows.last().is_some_and(|r| r.1 >= bucket) {
            return Err(ParseError::at(n, "expected buckets in increasing order"));
        }
        rows.push((n, bucket, counts));
    }
    let Some(columns) = columns else {
        return Err(ParseError::at(
            0,
            "expected histogram rows (run cyclictest with -h N and keep its stdout)",
        ));
    };
    // Threads: from the summary lines, else every column.
    let threads = total
        .as_ref()
        .or(mins.as_ref())
        .or(maxs.as_ref())
        .map(|(_, v)| v.len())
        .unwrap_or(columns);
    if threads == 0 || (columns != threads && columns != threads + 1) {
        return Err(ParseError::at(
            rows[0].0,
            format!("expected {threads} counts per row (one per thread, plus a sum with -H), found {columns}"),
        ));
    }
    for (what, v) in [
        ("# Total:", &total),
        ("# Min Latencies:", &mins),
        ("# Avg Latencies:", &avgs),
        ("# Max Latencies:", &maxs),
        ("# Histogram Overflows:", &overflows),
    ] {
        if let Some((n, v)) = v {
            if v.len() != threads {
                return Err(ParseError::at(
                    *n,
                    format!(
                        "expected {threads} values after '{what}', found {}",
                        v.len()
                    ),
                ));
            }
        }
    }
    let limit = rows.last().map(|r| r.1.saturating_add(1)).unwrap_or(0);
    let mut imp = Imported::new(crate::result::Benchmark::Timer);
    for i in 0..threads {
        let mut b = ThreadBuild::new(format!("thread{i}"), None);
        for (n, bucket, counts) in &rows {
            b.add(bucket.saturating_mul(1000), counts[i])
                .map_err(|e| ParseError::at(*n, e.msg))?;
        }
        if let Some((n, v)) = &total {
            if v[i] != b.recorded() {
                return Err(ParseError::at(
                    *n,
                    format!("expected '# Total:' of thread {i} to be the sum of its rows ({}), found {}", b.recorded(), v[i]),
                ));
            }
        }
        let over = overflows.as_ref().map(|(_, v)| v[i]).unwrap_or(0);
        b.count = Some(b.recorded().saturating_add(over));
        b.overflow_at_ns = Some(limit.saturating_mul(1000));
        b.min_ns = mins.as_ref().map(|(_, v)| v[i].saturating_mul(1000));
        b.max_ns = maxs.as_ref().map(|(_, v)| v[i].saturating_mul(1000));
        // cyclictest prints whole-µs averages here; the histogram mean is finer unless samples overflowed.
        if over > 0 {
            b.avg_ns = avgs.as_ref().map(|(_, v)| v[i] as f64 * 1000.0);
        }
        imp.threads.push(b);
    }
    imp.config.insert("histogram_buckets".into(), limit.into());
    imp.tuning.dma_latency_us = dma;
    imp.notes.push("cyclictest's histogram text names no host, kernel, period, policy or priority: those are unknown (policy recorded as other, priority 0); buckets are read as µs (not -N)".into());
    if overflows
        .as_ref()
        .is_some_and(|(_, v)| v.iter().any(|&o| o > 0))
    {
        imp.notes
            .push("the average of a thread with overflows is cyclictest's whole-µs average".into());
    }
    Ok(imp)
}
