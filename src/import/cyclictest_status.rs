//! cyclictest's status lines, one per thread:
//!
//! ```text
//! T: 0 (30745) P:80 I:1000 C:   1960 Min:     27 Act:   81 Avg:   99 Max:   10499
//! ```
//!
//! the final summary `cyclictest -q` prints, or a log of its live view (the
//! same lines rewritten again and again, with cursor-moving escapes and `\r`
//! or `\n` between updates): the last line of each thread wins. Count, min,
//! avg and max are taken exactly as printed (whole µs, or whole ns with `-N`,
//! which the lines do not say: `--unit ns`, or a command line with `-N` pasted
//! above them, tells it); the lines carry no histogram, percentiles or
//! standard deviation, which stay unknown.

use super::lines::Preamble;
use super::{detect, ImportFormat, Input, Reader};
use super::{parse_u64, Imported, ParseError, Parsed, SourceUnit, ThreadBuild};
use crate::stats::summary::signed;

/// cyclictest's status lines (`-q` summary or a live log).
pub static FORMAT: ImportFormat = ImportFormat {
    name: "cyclictest-status",
    tool: "cyclictest",
    describe: "cyclictest status lines (the -q summary or a log of its live view)",
    detect: |head| {
        head.split(['\n', '\r']).any(|l| status(l.trim()).is_some())
            && !detect::line_starts_with(head, &["# Histogram", "# Min Latencies:"])
            && !head.lines().any(histogram_row)
    },
    read: Reader::Lines(parse),
};

/// A row of cyclictest's histogram text (`000012 000216\t000192`): status
/// lines come before it in `-h` output, which is the other format's.
fn histogram_row(l: &str) -> bool {
    let mut words = l.split_whitespace();
    words
        .next()
        .is_some_and(|w| w.len() >= 6 && w.bytes().all(|b| b.is_ascii_digit()))
        && words
            .next()
            .is_some_and(|w| w.bytes().all(|b| b.is_ascii_digit()))
}

/// One status line's figures (µs, as printed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub thread: usize,
    pub priority: i32,
    pub interval_us: u64,
    pub count: u64,
    pub min_us: u64,
    pub avg_us: u64,
    pub max_us: u64,
}

/// `T: 0 ( 1234) P:80 I:1000 C: 100000 Min: 2 Act: 3 Avg: 3 Max: 25`, else `None`.
pub fn status(t: &str) -> Option<Status> {
    let rest = t.strip_prefix("T:")?;
    let (thread, rest) = rest.split_once('(')?;
    let (pid, rest) = rest.split_once(')')?;
    parse_u64(pid.trim())?;
    let mut fields: Vec<(&str, &str)> = Vec::new();
    let mut words = rest.split_whitespace();
    while let Some(w) = words.next() {
        let (key, value) = w.split_once(':')?;
        let value = if value.is_empty() {
            words.next()?
        } else {
            value
        };
        fields.push((key, value));
    }
    let get = |key: &str| {
        fields
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| parse_u64(v))
    };
    Some(Status {
        thread: parse_u64(thread.trim())?.try_into().ok()?,
        priority: get("P")?.min(99) as i32,
        interval_us: get("I")?,
        count: get("C")?,
        min_us: get("Min")?,
        avg_us: get("Avg")?,
        max_us: get("Max")?,
    })
}

const EXPECTED: &str = "cyclictest status lines ('T: 0 (1234) P:80 I:1000 C: … Max: …')";

pub fn parse(lines: &mut Input) -> Parsed<Imported> {
    let mut last: Vec<Option<(usize, Status)>> = Vec::new();
    let mut preamble = Preamble::default();
    let mut dma = None;
    let mut policy = None;
    let mut end = 0;
    while let Some((n, line)) = lines.next_line()? {
        end = n;
        if lines.cut() {
            return Err(ParseError::at(n, "expected a whole line, found the input ending inside this one (no line end): the output looks cut; import the whole output"));
        }
        for piece in line.split('\r').map(str::trim).filter(|p| !p.is_empty()) {
            if let Some(s) = status(piece) {
                if s.thread >= 1 << 16 {
                    return Err(ParseError::at(n, "expected a thread number below 65536"));
                }
                if s.thread >= last.len() {
                    last.resize(s.thread + 1, None);
                }
                let at = s.thread;
                last[at] = Some((n, s));
            } else if let Some(p) = piece.strip_prefix("policy:") {
                policy = p.split(':').next().map(|p| p.trim().to_string());
            } else if let Some(rest) = piece.strip_prefix("# /dev/cpu_dma_latency set to ") {
                dma = rest.trim_end_matches("us").trim().parse::<i32>().ok();
            } else if last.is_empty() {
                preamble.skip(n, piece, EXPECTED)?;
            } else if !piece.starts_with("WARN:") {
                return Err(ParseError::at(
                    n,
                    format!("expected {EXPECTED}, found {}", super::found(piece)),
                ));
            }
        }
    }
    if last.is_empty() {
        return Err(ParseError::at(
            end,
            format!("expected {EXPECTED}, but the input ends at line {end} without one"),
        ));
    }
    let mut imp = Imported::new(crate::result::Benchmark::Timer);
    imp.notes.extend(preamble.note());
    let (unit, said) = SourceUnit::of_output(lines.unit(), &preamble);
    imp.precision_ns = unit.ns();
    if unit == SourceUnit::Ns {
        imp.unit = "ns";
    }
    for (i, s) in last.iter().enumerate() {
        let Some((n, s)) = s else {
            return Err(ParseError::at(
                end,
                format!("expected a status line of thread {i}, found none"),
            ));
        };
        imp.threads.push(thread(*n, s, unit)?);
    }
    settings(&mut imp, &last, policy, dma);
    imp.notes.push(format!("cyclictest's status lines name no host, kernel or start time and carry no histogram: percentiles, distribution and stddev are unknown; count, min, avg and max are its whole-{} figures ({said})", unit.name()));
    Ok(imp)
}

/// A thread from its last status line `n`, its values in `unit`.
fn thread(n: usize, s: &Status, unit: SourceUnit) -> Parsed<ThreadBuild> {
    let mut b = ThreadBuild::new(format!("thread{}", s.thread), None);
    b.count = Some(s.count);
    if s.count > 0 {
        if s.min_us > s.max_us || s.avg_us < s.min_us || s.avg_us > s.max_us {
            return Err(ParseError::at(
                n,
                format!(
                    "expected Min ≤ Avg ≤ Max in the status line of thread {}, found {} / {} / {}",
                    s.thread, s.min_us, s.avg_us, s.max_us
                ),
            ));
        }
        let ns = |v: u64| v.saturating_mul(unit.ns());
        b.min_ns = Some(signed(ns(s.min_us)));
        b.max_ns = Some(signed(ns(s.max_us)));
        b.avg_ns = Some(ns(s.avg_us) as f64);
    }
    Ok(b)
}

/// The period, policy, priority and DMA latency the lines say.
fn settings(
    imp: &mut Imported,
    last: &[Option<(usize, Status)>],
    policy: Option<String>,
    dma: Option<i32>,
) {
    let statuses: Vec<&Status> = last.iter().flatten().map(|(_, s)| s).collect();
    let periods: Vec<u64> = statuses
        .iter()
        .map(|s| s.interval_us.saturating_mul(1000))
        .collect();
    if periods.iter().all(|&p| p == periods[0]) {
        imp.config.insert("period_ns".into(), periods[0].into());
    } else {
        super::cyclictest_hist::thread_periods(imp, periods, "cyclictest's -d distance");
    }
    let priority = statuses[0].priority;
    let named = policy.as_deref().and_then(crate::result::Policy::from_name);
    imp.tuning.policy = named.or((priority > 0).then_some(crate::result::Policy::Fifo));
    imp.tuning.priority = (imp.tuning.policy.is_some()).then_some(priority);
    imp.tuning.dma_latency_us = dma.map(Some);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_as_cyclictest_prints_them() {
        let s = status("T: 0 ( 1234) P:80 I:1000 C: 100000 Min: 2 Act: 3 Avg: 3 Max: 25").unwrap();
        assert_eq!(
            s,
            Status {
                thread: 0,
                priority: 80,
                interval_us: 1000,
                count: 100000,
                min_us: 2,
                avg_us: 3,
                max_us: 25
            }
        );
        let s = status(
            "T: 1 (30746) P: 0 I:1500 C:    822 Min:     45 Act:   85 Avg:  657 Max:  294810",
        )
        .unwrap();
        assert_eq!(
            (s.thread, s.priority, s.interval_us, s.max_us),
            (1, 0, 1500, 294810)
        );
        assert!(status("T: 0 (1234) P:80 I:1000 C: 10 Min: 2 Act: 3 Avg: 3").is_none());
        assert!(status("T: x (1234) P:80 I:1000 C: 10 Min: 2 Act: 3 Avg: 3 Max: 4").is_none());
    }
}
