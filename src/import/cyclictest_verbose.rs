//! cyclictest's per-sample output (`-v`): after `Thread N Interval: I`
//! lines, one `thread: loop: latency` line per sample (µs, or ns with `-N`,
//! which the output does not say: `--unit ns` or a pasted command line does):
//!
//! ```text
//! Thread 0 Interval: 1500
//!        0:       0:      87
//!        0:       1:      66
//! ```
//!
//! Every sample is there: each thread becomes a full histogram, its count,
//! min, avg and max those of its samples.

use super::lines::Preamble;
use super::{parse_u64, Imported, ParseError, Parsed, SourceUnit, ThreadBuild};
use super::{ImportFormat, Input, Reader};

/// cyclictest -v per-sample output.
pub static FORMAT: ImportFormat = ImportFormat {
    name: "cyclictest-verbose",
    tool: "cyclictest",
    describe: "cyclictest -v per-sample output",
    detect: |head| head.lines().any(|l| sample(l).is_some()),
    read: Reader::Lines(parse),
};

/// A `thread: loop: latency` line.
fn sample(t: &str) -> Option<(usize, u64, u64)> {
    let mut it = t.trim().split(':').map(str::trim);
    let thread = parse_u64(it.next()?)?;
    let cycle = parse_u64(it.next()?)?;
    let latency = parse_u64(it.next()?)?;
    if it.next().is_some() || thread >= 1 << 16 {
        return None;
    }
    Some((thread as usize, cycle, latency))
}

/// A `Thread N Interval: I` line: (thread, interval µs).
fn interval(t: &str) -> Option<(usize, u64)> {
    let rest = t.strip_prefix("Thread ")?;
    let (n, i) = rest.split_once(" Interval:")?;
    let n = parse_u64(n.trim())?;
    (n < 1 << 16).then_some((n as usize, parse_u64(i.trim())?))
}

const EXPECTED: &str =
    "cyclictest -v lines ('Thread 0 Interval: 1000', then 'thread: loop: latency')";

pub fn parse(lines: &mut Input) -> Parsed<Imported> {
    let mut threads: Vec<Option<ThreadBuild>> = Vec::new();
    let mut intervals: Vec<u64> = Vec::new();
    let mut preamble = Preamble::default();
    let mut dma = None;
    let mut end = 0;
    // ns per unit of the values, fixed at the first sample (a pasted command line comes before).
    let mut unit = None;
    while let Some((n, line)) = lines.next_line()? {
        end = n;
        if lines.cut() {
            return Err(ParseError::at(n, "expected a whole line, found the input ending inside this one (no line end): the output looks cut; import the whole output"));
        }
        let t = line.trim();
        if let Some((thread, _, latency)) = sample(t) {
            if thread >= threads.len() {
                threads.resize(thread + 1, None);
            }
            let (u, _) =
                *unit.get_or_insert_with(|| SourceUnit::of_output(lines.unit(), &preamble));
            let b = threads[thread]
                .get_or_insert_with(|| ThreadBuild::new(format!("thread{thread}"), None));
            b.add(latency.saturating_mul(u.ns()), 1)
                .map_err(|e| ParseError::at(n, e.msg))?;
        } else if let Some((thread, i)) = interval(t) {
            if thread >= intervals.len() {
                intervals.resize(thread + 1, 0);
            }
            intervals[thread] = i.saturating_mul(1000);
        } else if let Some(rest) = t.strip_prefix("# /dev/cpu_dma_latency set to ") {
            dma = rest.trim_end_matches("us").trim().parse::<i32>().ok();
        } else if t.is_empty()
            || t.starts_with("Max CPUs")
            || t.starts_with("Online CPUs")
            || t.starts_with("WARN:")
        {
        } else if threads.is_empty() {
            preamble.skip(n, t, EXPECTED)?;
        } else {
            return Err(ParseError::at(
                n,
                format!("expected {EXPECTED}, found {}", super::found(t)),
            ));
        }
    }
    let mut imp = Imported::new(crate::result::Benchmark::Timer);
    imp.notes.extend(preamble.note());
    for (i, b) in threads.into_iter().enumerate() {
        let b = b.ok_or_else(|| {
            ParseError::at(end, format!("expected samples of thread {i}, found none"))
        })?;
        imp.threads.push(b);
    }
    if imp.threads.is_empty() {
        return Err(ParseError::at(
            end,
            format!("expected {EXPECTED}, but the input ends at line {end} without a sample"),
        ));
    }
    let periods: Vec<u64> = (0..imp.threads.len())
        .map(|i| intervals.get(i).copied().unwrap_or(0))
        .collect();
    if !periods.contains(&0) {
        if periods.iter().all(|&p| p == periods[0]) {
            imp.config.insert("period_ns".into(), periods[0].into());
        } else {
            super::cyclictest_hist::thread_periods(&mut imp, periods, "cyclictest's -d distance");
        }
    }
    imp.tuning.dma_latency_us = dma.map(Some);
    let (u, said) = unit.unwrap_or_else(|| SourceUnit::of_output(lines.unit(), &preamble));
    imp.precision_ns = u.ns();
    if u == SourceUnit::Ns {
        imp.unit = "ns";
    }
    imp.notes.push(format!("cyclictest -v output names no host, kernel, start time, policy or priority: those are unknown; every sample is in the histogram, its values {said}"));
    Ok(imp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_and_interval_lines() {
        assert_eq!(sample("       0:    1997:      66"), Some((0, 1997, 66)));
        assert_eq!(sample("0: 1: 2: 3"), None);
        assert_eq!(sample("T: 0 (1) P:80"), None);
        assert_eq!(interval("Thread 1 Interval: 1500"), Some((1, 1500)));
    }
}
