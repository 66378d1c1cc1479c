//! cyclictest's histogram text (`-h N` or `-H N`, on stdout or in the
//! `--histfile`): rows of µs buckets (`000012 000216\t000192`: the bucket,
//! then a count per thread, plus a sum column with `-H`), then `# Min
//! Latencies:`, `# Avg Latencies:` (whole µs), `# Max Latencies:`, `# Histogram
//! Overflows:` and the first overflow cycle numbers. Older rt-tests print every
//! bucket below N and a `# Total:` line first; current rt-tests print only the
//! non-empty rows and no `# Total:`. With `-H`, the summary lines carry the
//! all-threads value on Total, Max and Overflows only (never on Min or Avg).
//! Lines starting with `#` that carry nothing we use, and `WARN:` lines
//! (stderr merged in), are skipped.

use super::lines::Preamble;
use super::{detect, ImportFormat, Input, Reader};
use super::{parse_u64, Imported, ParseError, Parsed, SourceUnit, ThreadBuild};
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
    let mut hist = Hist {
        given: lines.unit(),
        ..Hist::default()
    };
    let mut last = 0;
    while let Some((n, line)) = lines.next_line()? {
        last = n;
        if lines.cut() {
            return Err(ParseError::at(n, "expected a whole line, found the input ending inside this one (no line end): the output looks cut; import the whole output"));
        }
        hist.line(n, line.trim())?;
    }
    hist.finish(last)
}

/// A summary line as read: its line number and its numbers.
type Numbers = (usize, Vec<u64>);

/// The summary lines after the histogram; `total` only from older rt-tests.
struct Summary {
    total: Option<Numbers>,
    mins: Numbers,
    avgs: Numbers,
    maxs: Numbers,
    overflows: Numbers,
}

/// The all-threads value that -H adds to summary line `SUMMARY[i]` (line `n`):
/// the threads' sum (Total, Overflows) or their maximum (Max).
fn check_all(n: usize, i: usize, v: &[u64]) -> Parsed<()> {
    let (each, all) = v.split_at(v.len() - 1);
    let want = if i == 3 {
        each.iter().copied().max().unwrap_or(0)
    } else {
        each.iter().fold(0u64, |a, &x| a.saturating_add(x))
    };
    if all[0] != want {
        return Err(ParseError::at(
            n,
            format!(
                "expected the last value after '# {}' (all threads, -H) to be {}, found {}",
                SUMMARY[i],
                if i == 3 { "their maximum" } else { "their sum" },
                all[0]
            ),
        ));
    }
    Ok(())
}

/// What the lines read so far say: the parser's state, one method per kind of line.
#[derive(Default)]
struct Hist {
    cols: Vec<Column>,
    /// The summary lines, in `SUMMARY`'s order.
    summary: [Option<Numbers>; 5],
    last_bucket: Option<u64>,
    /// The line of the first histogram row (0: none yet).
    first_row: usize,
    dma: Option<i32>,
    policy: Option<String>,
    /// (priority, interval µs) of each thread's status line.
    statuses: Vec<(i32, u64)>,
    preamble: Preamble,
    started: bool,
    /// The values' unit as `--unit` gives it.
    given: Option<SourceUnit>,
    /// ns per unit of the values, fixed at the first row.
    scale: Option<u64>,
}

impl Hist {
    /// The values' unit and where it comes from: `--unit`, else a command
    /// line skipped above the output (rows come after it), else µs.
    fn unit(&self) -> (SourceUnit, String) {
        SourceUnit::of_output(self.given, &self.preamble)
    }

    /// One trimmed line `n`.
    fn line(&mut self, n: usize, t: &str) -> Parsed<()> {
        if t.is_empty() || t.starts_with("WARN:") {
            return Ok(());
        }
        if let Some((i, prio, interval)) = status(t) {
            if i >= self.statuses.len() {
                self.statuses.resize(i + 1, (0, 0));
            }
            self.statuses[i] = (prio, interval);
            self.started = true;
            return Ok(());
        }
        if let Some(p) = t.strip_prefix("policy:") {
            self.policy = p.split(':').next().map(|p| p.trim().to_string());
            self.started = true;
            return Ok(());
        }
        if let Some(c) = t.strip_prefix('#') {
            return self.comment(n, t, c.trim());
        }
        self.row(n, t)
    }

    /// A `#` line `t`, `c` its text after the `#`: a summary line, the DMA latency, or a preamble line.
    fn comment(&mut self, n: usize, t: &str, c: &str) -> Parsed<()> {
        if let Some(i) = SUMMARY.iter().position(|label| c.starts_with(label)) {
            let what = format!("# {}", SUMMARY[i]);
            self.summary[i] = Some((n, numbers(n, &c[SUMMARY[i].len()..], &what)?));
        } else if let Some(rest) = c.strip_prefix("/dev/cpu_dma_latency set to ") {
            self.dma = rest.trim_end_matches("us").trim().parse().ok();
        } else if !self.started && !c.starts_with("Histogram") {
            return self.preamble.skip(n, t, EXPECTED);
        }
        self.started = true;
        Ok(())
    }

    /// A histogram row (the bucket, then a count per column), or a preamble line before the first.
    fn row(&mut self, n: usize, t: &str) -> Parsed<()> {
        let mut it = t.split_whitespace();
        let Some(bucket) = it.next().and_then(parse_u64) else {
            if !self.started {
                return self.preamble.skip(n, t, EXPECTED);
            }
            return Err(ParseError::at(
                n,
                format!(
                    "expected a histogram row (the bucket in µs, then one count per thread) or a '# …' line, found {}",
                    super::found(t)
                ),
            ));
        };
        self.started = true;
        if self.summary.iter().any(|s| s.is_some()) {
            return Err(ParseError::at(
                n,
                "expected no histogram row after '# Total:'",
            ));
        }
        if self.last_bucket.is_some_and(|l| l >= bucket) {
            return Err(ParseError::at(n, "expected buckets in increasing order"));
        }
        self.last_bucket = Some(bucket);
        let scale = match self.scale {
            Some(s) => s,
            None => *self.scale.insert(self.unit().0.ns()),
        };
        let cols = &mut self.cols;
        let mut counts = 0;
        for tok in it {
            let v = parse_u64(tok).ok_or_else(|| {
                ParseError::at(n, format!("expected a histogram row (the bucket in µs, then one count per thread), found {}", super::found(t)))
            })?;
            if self.first_row == 0 {
                cols.push(Column {
                    build: ThreadBuild::new(format!("thread{counts}"), None),
                    low: None,
                    high: None,
                });
            }
            if let Some(col) = cols.get_mut(counts) {
                if v > 0 {
                    col.build
                        .add(bucket.saturating_mul(scale), v)
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
        if self.first_row == 0 {
            self.first_row = n;
        } else if counts != cols.len() {
            return Err(ParseError::at(
                n,
                format!(
                    "expected {} counts as in the rows before, found {counts}",
                    cols.len()
                ),
            ));
        }
        Ok(())
    }

    /// The end of the input at line `last`: checks that the output is whole and its
    /// summary lines fit the rows, then builds the import.
    fn finish(mut self, last: usize) -> Parsed<Imported> {
        if self.cols.is_empty() {
            return Err(ParseError::at(
                last,
                format!("expected histogram rows (run cyclictest with -h N and keep its stdout), but the input ends at line {last} without one"),
            ));
        }
        // `# Total:` comes from older rt-tests only; the other four close every histogram.
        if let Some(i) = (1..SUMMARY.len()).find(|&i| self.summary[i].is_none()) {
            return Err(ParseError::at(
                last,
                format!(
                    "expected cyclictest's summary lines after the histogram ('# Min Latencies:', '# Avg Latencies:', '# Max Latencies:', '# Histogram Overflows:'), but the input ends at line {last} without '# {}': the output looks cut; import the whole output",
                    SUMMARY[i]
                ),
            ));
        }
        let [total, rest @ ..] = std::mem::take(&mut self.summary);
        let [mins, avgs, maxs, overflows] = rest.map(|s| s.unwrap_or_default());
        // Min never carries -H's all-threads value: it counts the threads.
        let threads = mins.1.len();
        let columns = self.cols.len();
        if threads == 0 || (columns != threads && columns != threads + 1) {
            return Err(ParseError::at(
                self.first_row,
                format!("expected {threads} counts per row (one per thread, plus a sum with -H), found {columns}"),
            ));
        }
        // With -H, Total, Max and Overflows may end with the all-threads value.
        let all = columns == threads + 1;
        let lines = [Some(&mins), Some(&avgs), Some(&maxs), Some(&overflows)];
        for (i, numbers) in std::iter::once(total.as_ref()).chain(lines).enumerate() {
            let Some((n, v)) = numbers else { continue };
            let with_all = all && i != 1 && i != 2 && v.len() == threads + 1;
            if v.len() != threads && !with_all {
                return Err(ParseError::at(
                    *n,
                    format!(
                        "expected {threads} values after '# {}', found {}",
                        SUMMARY[i],
                        v.len()
                    ),
                ));
            }
            if with_all {
                check_all(*n, i, v)?;
            }
        }
        let summary = Summary {
            total,
            mins,
            avgs,
            maxs,
            overflows,
        };
        self.into_imported(&summary, threads)
    }

    /// The import: a thread per column (the sum column of -H left out), and the run's settings.
    fn into_imported(self, summary: &Summary, threads: usize) -> Parsed<Imported> {
        let overflows = &summary.overflows;
        let limit = self.last_bucket.map_or(0, |l| l.saturating_add(1));
        let mut imp = Imported::new(crate::result::Benchmark::Timer);
        imp.notes.extend(self.preamble.note());
        let (unit, said) = self.unit();
        let u = unit.name();
        imp.precision_ns = unit.ns();
        if unit == SourceUnit::Ns {
            imp.unit = "ns";
        }
        for (i, col) in self.cols.into_iter().take(threads).enumerate() {
            imp.threads.push(thread(i, col, summary, limit, unit.ns())?);
        }
        let statuses = &self.statuses;
        periods(&mut imp, statuses, threads);
        if let Some(p) = self
            .policy
            .as_deref()
            .and_then(crate::result::Policy::from_name)
        {
            imp.tuning.policy = Some(p);
            imp.tuning.priority = statuses.first().map(|s| s.0.clamp(0, 99));
        }
        if summary.total.is_some() {
            // Older rt-tests print every bucket below -h N: the last row is N − 1.
            imp.config.insert("histogram_buckets".into(), limit.into());
        } else if overflows.1.iter().any(|&o| o > 0) {
            imp.notes.push(format!("this rt-tests prints only the non-empty rows, so the histogram's size (-h N) is not in the output: samples beyond it are placed at {limit} {u}, the first {u} past the highest row"));
        }
        imp.tuning.dma_latency_us = self.dma.map(Some);
        imp.notes.push(if statuses.is_empty() {
            format!("cyclictest's histogram text (with -q) names no host, kernel, period, policy or priority: those are unknown; its values are {said}")
        } else {
            format!("cyclictest's histogram text names no host or kernel; the period and priority are its status lines' (T: … P: I:); its values are {said}")
        });
        if overflows.1.iter().any(|&o| o > 0) {
            imp.notes.push(format!(
                "the average of a thread with overflows is cyclictest's whole-{u} average"
            ));
        }
        Ok(imp)
    }
}

/// Thread `i` from its column, checked against the summary lines; `limit` is the
/// first value past the histogram; `scale` is ns per unit of the values.
fn thread(i: usize, col: Column, summary: &Summary, limit: u64, scale: u64) -> Parsed<ThreadBuild> {
    let Summary {
        total,
        mins,
        avgs,
        maxs,
        overflows,
    } = summary;
    let Column {
        build: mut b,
        low,
        high,
    } = col;
    if let Some(total) = total.as_ref().filter(|t| t.1[i] != b.recorded()) {
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
        return Err(ParseError::at(maxs.0, format!("expected the maximum of thread {i} beyond the histogram (from {limit}, as {over} overflows are counted), found {max}")));
    }
    b.count = Some(b.recorded().saturating_add(over));
    b.overflow_at_ns = Some(limit.saturating_mul(scale));
    b.min_ns = Some(signed(min.saturating_mul(scale)));
    b.max_ns = Some(signed(max.saturating_mul(scale)));
    // cyclictest prints whole-unit averages here; the histogram mean is finer unless samples overflowed.
    if over > 0 {
        b.avg_ns = Some(avgs.1[i] as f64 * scale as f64);
    }
    Ok(b)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_give_thread_priority_and_interval() {
        assert_eq!(
            status("T: 0 (12345) P:80 I:1000 C:   2000 Min:      3 Act:    5"),
            Some((0, 80, 1000))
        );
        assert_eq!(status("T: 3 ( 7) P:99 I:250 C: 9"), Some((3, 99, 250)));
        // Both P: and I: are needed, and a thread number.
        assert_eq!(status("T: 1 (7) I:1000 C: 9"), None);
        assert_eq!(status("T: 1 (7) P:80 C: 9"), None);
        assert_eq!(status("T: x (7) P:80 I:1000"), None);
        assert_eq!(status("000012 000216"), None);
    }

    #[test]
    fn summary_numbers_are_whole_and_named_when_not() {
        assert_eq!(
            numbers(4, " 000012  7 0", "# Max Latencies:"),
            Ok(vec![12, 7, 0])
        );
        assert_eq!(numbers(4, "", "# Total:"), Ok(vec![]));
        let e = numbers(9, " 12 1.5", "# Avg Latencies:").unwrap_err();
        assert_eq!(e.line, 9);
        assert_eq!(
            e.msg,
            "expected whole numbers after '# Avg Latencies:', found '1.5'"
        );
    }
}
