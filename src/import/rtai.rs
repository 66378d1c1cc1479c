//! RTAI's testsuite `latency` (its `display`, kernel or user space):
//!
//! ```text
//! ## RTAI latency calibration tool ##
//! # period = 1000000 (ns)
//! # avrgtime = 1 (s)
//! # timer_mode is oneshot
//!
//! RTAI Testsuite - KERNEL latency (all data in nanoseconds)
//! RTH|    lat min|    ovl min|    lat avg|    lat max|    ovl max|   overruns
//! RTD|     -35125|     -35125|     -10767|      19762|      19762|          0
//! ```
//!
//! The calibration header comes from the latency module (the user-space test
//! prints `# average time = N (s)`), then one RTD row per `avrgtime` of
//! samples, one a period: that interval's min, avg and max in ns, the
//! overall min and max so far, and the overrun total. The display runs until
//! stopped (Ctrl+C, or Enter for the user-space one) and prints no summary;
//! the shell lines and the module's CPU use after the rows are its tail.
//! When the module is removed first, the display prints its last sample
//! again (the FIFO read fails and leaves it): a last row that repeats the
//! one before it is that, and is not counted.

use super::lines::Preamble;
use super::rows::{Row, RowLog};
use super::ThreadBuild;
use super::{parse_u64, ImportFormat, Imported, Input, ParseError, Parsed, Reader};

/// RTAI's testsuite latency display.
pub static FORMAT: ImportFormat = ImportFormat {
    name: "rtai",
    tool: "rtai-latency",
    describe: "RTAI testsuite latency output",
    detect: |head| {
        head.lines().any(|l| {
            l.trim_start()
                .strip_prefix("RTAI Testsuite - ")
                .is_some_and(|r| r.contains(" latency"))
        })
    },
    read: Reader::Lines(parse),
};

const EXPECTED: &str =
    "RTAI's latency display ('RTAI Testsuite - KERNEL latency …', then RTH| and RTD| rows)";

/// The RTH columns of the latency tests (kernel, user, kernel threads).
const COLUMNS: [&str; 6] = [
    "lat min", "ovl min", "lat avg", "lat max", "ovl max", "overruns",
];

/// What the lines read so far say.
#[derive(Default)]
struct Display {
    preamble: Preamble,
    period_ns: Option<u64>,
    average_s: Option<u64>,
    timer_mode: Option<String>,
    /// The `RTAI Testsuite - … latency` title (`KERNEL latency`, `USER latency` …).
    test: Option<String>,
    rows: Vec<(Row, [i64; 2])>,
    /// Lines after the rows (the shell, the module's CPU use): the first one's number.
    tail: Option<usize>,
}

/// A `YYYY/MM/DD HH:MM:SS` line (the user-space display's timestamp).
fn is_date(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() >= 18
        && b[4] == b'/'
        && b[7] == b'/'
        && t.contains(':')
        && b[..4].iter().all(u8::is_ascii_digit)
}

/// The number in `# key = N (unit)`.
fn header_number(n: usize, rest: &str, what: &str) -> Parsed<u64> {
    rest.trim_start_matches([' ', '='])
        .split_whitespace()
        .next()
        .and_then(parse_u64)
        .filter(|&v| v > 0)
        .ok_or_else(|| {
            ParseError::at(
                n,
                format!(
                    "expected a positive whole number for {what}, found {}",
                    super::found(rest)
                ),
            )
        })
}

impl Display {
    /// One trimmed line `n`.
    fn line(&mut self, n: usize, t: &str) -> Parsed<()> {
        if t.is_empty() || is_date(t) {
            return Ok(());
        }
        if let Some(h) = t.strip_prefix('#').filter(|_| self.test.is_none()) {
            let h = h.trim_start_matches('#').trim();
            if let Some(r) = h.strip_prefix("period") {
                self.period_ns = Some(header_number(n, r, "the period (ns)")?);
            } else if let Some(r) = h
                .strip_prefix("avrgtime")
                .or_else(|| h.strip_prefix("average time"))
            {
                self.average_s = Some(header_number(n, r, "the averaging time (s)")?);
            } else if let Some(m) = h.strip_prefix("timer_mode is") {
                self.timer_mode = Some(m.trim().to_string());
            }
            return Ok(());
        }
        if let Some(title) = t.strip_prefix("RTAI Testsuite - ") {
            let test = title.split('(').next().unwrap_or(title).trim();
            if self.test.is_some() || !test.ends_with("latency") {
                return Err(ParseError::at(
                    n,
                    format!("expected one RTAI latency test, found {}", super::found(t)),
                ));
            }
            self.test = Some(test.to_string());
            return Ok(());
        }
        let Some((code, rest)) = t
            .split_once('|')
            .filter(|(c, _)| matches!(*c, "RTH" | "RTD"))
        else {
            if self.test.is_none() {
                return self.preamble.skip(n, t, EXPECTED);
            }
            if self.rows.is_empty() {
                return Err(ParseError::at(
                    n,
                    format!("expected RTH| or RTD| rows, found {}", super::found(t)),
                ));
            }
            self.tail.get_or_insert(n);
            return Ok(());
        };
        if self.test.is_none() {
            return Err(ParseError::at(
                n,
                "expected the 'RTAI Testsuite - … latency' line before the rows",
            ));
        }
        if let Some(at) = self.tail {
            return Err(ParseError::at(
                n,
                format!("expected no {code}| row after the output ended at line {at}"),
            ));
        }
        let f: Vec<&str> = rest.split('|').map(str::trim).collect();
        if code == "RTH" {
            if f != COLUMNS {
                return Err(ParseError::at(
                    n,
                    format!(
                        "expected the columns {}, found {}",
                        COLUMNS.join(", "),
                        super::found(rest)
                    ),
                ));
            }
            return Ok(());
        }
        self.row(n, &f)
    }

    /// An RTD row's fields `f`, checked against the rows before it.
    fn row(&mut self, n: usize, f: &[&str]) -> Parsed<()> {
        if self.period_ns.is_none() || self.average_s.is_none() {
            return Err(ParseError::at(n, "expected the calibration header ('# period = N (ns)' and '# avrgtime = N (s)') before the first RTD row: without it, how many samples a row covers is unknown"));
        }
        let v: Vec<i64> = f
            .iter()
            .map(|x| {
                x.parse::<i64>()
                    .ok()
                    .filter(|v| v.unsigned_abs() < super::thread::MAX_LATENCY_NS)
            })
            .collect::<Option<_>>()
            .filter(|v: &Vec<i64>| v.len() == 6 && v[5] >= 0)
            .ok_or_else(|| {
                ParseError::at(
                    n,
                    format!(
                        "expected 6 whole numbers of ns after RTD| ({}), found {}",
                        COLUMNS.join(", "),
                        super::found(&f.join("|"))
                    ),
                )
            })?;
        if !(v[0] <= v[2] && v[2] <= v[3]) {
            return Err(ParseError::at(n, "expected lat min ≤ lat avg ≤ lat max"));
        }
        // ovl min and ovl max are the extremes so far, this row's included.
        let (lo, hi) = self
            .rows
            .last()
            .map_or((v[0], v[3]), |(_, [lo, hi])| (v[0].min(*lo), v[3].max(*hi)));
        if v[1] != lo || v[4] != hi {
            return Err(ParseError::at(
                n,
                format!(
                    "expected ovl min {lo} and ovl max {hi} (the extremes so far), found {} and {}",
                    v[1], v[4]
                ),
            ));
        }
        let row = Row {
            line: n,
            min: v[0],
            avg: v[2],
            max: v[3],
            overruns: v[5] as u64,
            msw: 0,
        };
        self.rows.push((row, [v[1], v[4]]));
        Ok(())
    }

    fn finish(mut self, last: usize) -> Parsed<Imported> {
        let (Some(period_ns), Some(average_s)) = (self.period_ns, self.average_s) else {
            return Err(ParseError::at(
                last,
                format!(
                    "expected {EXPECTED}, but the input ends at line {last} without an RTD row"
                ),
            ));
        };
        let mut imp = Imported::new(crate::result::Benchmark::Timer);
        imp.notes.extend(self.preamble.note());
        let stale = self.rows.len() >= 2 && {
            let (a, b) = (
                &self.rows[self.rows.len() - 2].0,
                &self.rows[self.rows.len() - 1].0,
            );
            (a.min, a.avg, a.max, a.overruns) == (b.min, b.avg, b.max, b.overruns)
        };
        if stale {
            self.rows.pop();
            imp.notes.push("the last RTD row repeats the one before it, as RTAI's display prints its last sample again once the module is gone: it is not counted".into());
        }
        if self.rows.is_empty() {
            return Err(ParseError::at(
                last,
                format!("expected RTD rows, but the input ends at line {last} without one"),
            ));
        }
        let interval_ns = average_s.saturating_mul(1_000_000_000);
        let per_row = (interval_ns / period_ns).max(1);
        let mut log = RowLog::new(interval_ns);
        for (r, _) in &self.rows {
            log.push(r, per_row)?;
        }
        let mut b = ThreadBuild::new("thread0", None);
        b.count = Some(log.rows.saturating_mul(per_row));
        b.min_ns = Some(log.min);
        b.max_ns = Some(log.max);
        b.avg_ns = Some(log.avg() as f64);
        b.overruns = log.overruns;
        b.max_at = log.worst.map(|(i, _)| (i * per_row, i * interval_ns));
        b.series = log.series.to_series();
        imp.threads.push(b);
        imp.precision_ns = 1;
        imp.unit = "ns";
        imp.end_reason = crate::result::EndReason::Signal;
        imp.duration_ns = Some(log.rows.saturating_mul(interval_ns));
        imp.duration_precision_ns = Some(interval_ns);
        imp.config.insert("period_ns".into(), period_ns.into());
        imp.config.insert(
            "tool".into(),
            format!("RTAI testsuite {}", self.test.unwrap_or_default()).into(),
        );
        if let Some(m) = self.timer_mode {
            imp.config.insert("timer_mode".into(), m.into());
        }
        imp.notes.push(format!("RTAI's latency display names no host, kernel or start time and keeps no samples: each RTD row is {average_s} s of samples ({per_row} at a {period_ns} ns period), its min, avg and max; no histogram, percentiles or stddev"));
        if log.negative {
            imp.notes.push(format!("RTAI reported negative latencies (wake-ups before the deadline: its timer's anticipation, calibrated by the latency module; min {} ns); the series holds them at 0", log.min));
        }
        Ok(imp)
    }
}

pub fn parse(lines: &mut Input) -> Parsed<Imported> {
    let mut display = Display::default();
    let mut last = 0;
    while let Some((n, raw)) = lines.next_line()? {
        last = n;
        if lines.cut() {
            return Err(ParseError::at(n, "expected a whole line, found the input ending inside this one (no line end): the output looks cut; import the whole output"));
        }
        display.line(n, raw.trim())?;
    }
    display.finish(last)
}
