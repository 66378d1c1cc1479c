//! `oslat` output (rt-tests): a banner, then one column per measured core
//! (`\t` is a tab):
//!
//! ```text
//!         Core:\t 0 1
//! Counter Freq:\t 2597 2597 (Mhz)
//!     001 (us):\t 68541878 76726484
//!     002 (us):\t 126 176
//!     ...
//!     032 (us):\t 21 19 (including overflows)
//!      Minimum:\t 1 1 (us)
//!      Average:\t 1.000 1.000 (us)
//!      Maximum:\t 10283 45212 (us)
//!      Max-Min:\t 10282 45211 (us)
//!     Duration:\t 2.001 2.001 (sec)
//! ```
//!
//! A row `NNN (us)` counts the loop gaps shorter than NNN µs and at least
//! NNN−1 (oslat truncates each gap to whole µs and prints the bucket's
//! upper end); `...` stands for rows of zeros (`-z`); the last row also holds
//! every longer gap. Values are imported as printed (NNN µs); the last row is
//! kept at its limit, the exact maximum beside it ([`ThreadBuild`]). Series
//! are named `cpuN`, as `rtlat noise` names its own. oslat 1.10 (the first
//! rt-tests with oslat) prints no `oslat V` banner and names the frequency row
//! `CPU Freq:`; later versions print `Counter Freq:` (`(Mhz)`, `(MHz)` in 2.10).

use super::lines::Preamble;
use super::{
    detect, parse_u64, ImportFormat, Imported, Input, ParseError, Parsed, Reader, ThreadBuild,
};
use crate::result::{Benchmark, Policy};

/// oslat's text output.
pub static FORMAT: ImportFormat = ImportFormat {
    name: "oslat",
    tool: "oslat",
    describe: "oslat output",
    detect: |head| {
        detect::line_starts_with(head, &["oslat V"])
            || (detect::line_starts_with(head, &["Core:"])
                && detect::line_starts_with(head, &["Counter Freq:", "CPU Freq:"]))
    },
    read: Reader::Lines(parse),
};

const EXPECTED: &str = "oslat's table ('Core:', then 'Counter Freq:' and the bucket rows)";

/// What the lines read so far say.
#[derive(Default)]
struct Table {
    preamble: Preamble,
    priority: Option<String>,
    cores: Vec<ThreadBuild>,
    last_bucket: u64,
    overflow_seen: bool,
    /// Minimum, Average, Maximum (per core), in order.
    stats: Vec<Vec<f64>>,
    duration_ns: Option<u64>,
}

/// The values of a row: `columns` numbers, then the unit or note in parentheses.
fn values(n: usize, rest: &str, columns: usize, what: &str) -> Parsed<(Vec<f64>, String)> {
    let (nums, tail) = match rest.find('(') {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    };
    let v: Vec<f64> = nums
        .split_whitespace()
        .map(|t| {
            t.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0 && *v < 9e12)
                .ok_or_else(|| {
                    ParseError::at(
                        n,
                        format!("expected numbers after '{what}', found {}", super::found(t)),
                    )
                })
        })
        .collect::<Parsed<_>>()?;
    if v.len() != columns {
        return Err(ParseError::at(
            n,
            format!(
                "expected {columns} values after '{what}' (one per core), found {}",
                v.len()
            ),
        ));
    }
    Ok((v, tail.to_string()))
}

impl Table {
    fn line(&mut self, n: usize, t: &str) -> Parsed<()> {
        if self.duration_ns.is_some() || t.is_empty() {
            return Ok(());
        }
        let Some((key, rest)) = t.split_once(':') else {
            if t == "..." && !self.cores.is_empty() {
                return Ok(());
            }
            return self.before(n, t);
        };
        let key = key.trim();
        match key {
            "Core" => self.core(n, rest),
            _ if self.cores.is_empty() => {
                if key == "Thread priority" {
                    self.priority = Some(rest.trim().to_string());
                }
                self.before(n, t)
            }
            "Counter Freq" | "CPU Freq" => values(n, rest, self.cores.len(), key).map(|_| ()),
            "Minimum" | "Average" | "Maximum" | "Max-Min" => self.stat(n, key, rest),
            "Duration" => {
                let (v, _) = values(n, rest, self.cores.len(), key)?;
                if self.stats.len() < 4 {
                    return Err(ParseError::at(
                        n,
                        "expected Minimum, Average, Maximum and Max-Min before Duration",
                    ));
                }
                let longest = v.iter().fold(0.0f64, |a, &b| a.max(b));
                self.duration_ns = Some((longest * 1e9).round() as u64);
                Ok(())
            }
            _ => self.bucket(n, key, rest),
        }
    }

    /// A line before the table: oslat's banner, or a preamble line.
    fn before(&mut self, n: usize, t: &str) -> Parsed<()> {
        if !self.cores.is_empty() {
            return Err(ParseError::at(
                n,
                format!(
                    "expected a bucket row or the summary, found {}",
                    super::found(t)
                ),
            ));
        }
        let banner = [
            "oslat V",
            "Total runtime",
            "Thread priority",
            "CPU list",
            "CPU for main",
            "Workload",
            "Preheat",
            "Pre-heat",
            "Test ",
        ];
        if banner.iter().any(|b| t.starts_with(b)) {
            return Ok(());
        }
        self.preamble.skip(n, t, EXPECTED)
    }

    fn core(&mut self, n: usize, rest: &str) -> Parsed<()> {
        if !self.cores.is_empty() {
            return Err(ParseError::at(n, "expected one 'Core:' line"));
        }
        for tok in rest.split_whitespace() {
            let cpu = parse_u64(tok).filter(|&c| c < 1 << 20).ok_or_else(|| {
                ParseError::at(
                    n,
                    format!(
                        "expected CPU numbers after 'Core:', found {}",
                        super::found(tok)
                    ),
                )
            })? as usize;
            self.cores
                .push(ThreadBuild::new(format!("cpu{cpu}"), Some(cpu)));
        }
        if self.cores.is_empty() {
            return Err(ParseError::at(n, "expected at least one CPU after 'Core:'"));
        }
        Ok(())
    }

    /// A row `NNN (us): counts…`.
    fn bucket(&mut self, n: usize, key: &str, rest: &str) -> Parsed<()> {
        let label = key.strip_suffix("(us)").map(str::trim).and_then(parse_u64);
        let Some(b) = label.filter(|&b| b > self.last_bucket && b < 1 << 32) else {
            return Err(ParseError::at(n, format!("expected a bucket row 'NNN (us):' above the last one, or the summary, found {}", super::found(key))));
        };
        if self.overflow_seen || !self.stats.is_empty() {
            return Err(ParseError::at(
                n,
                "expected the summary after the row of overflows",
            ));
        }
        self.last_bucket = b;
        let (counts, tail) = values(n, rest, self.cores.len(), key)?;
        self.overflow_seen = tail.contains("overflow");
        for (core, c) in self.cores.iter_mut().zip(counts) {
            let c = c as u64;
            core.count = Some(
                core.count
                    .unwrap_or(0)
                    .checked_add(c)
                    .ok_or_else(|| ParseError::at(n, "expected counts that fit 64 bits"))?,
            );
            if self.overflow_seen {
                core.overflow_at_ns = Some(b * 1000);
            } else {
                core.add(b * 1000, c)
                    .map_err(|e| ParseError::at(n, e.msg))?;
            }
        }
        Ok(())
    }

    fn stat(&mut self, n: usize, key: &str, rest: &str) -> Parsed<()> {
        let order = ["Minimum", "Average", "Maximum", "Max-Min"];
        if order.get(self.stats.len()) != Some(&key) || !self.overflow_seen {
            return Err(ParseError::at(n, format!("expected the summary rows in oslat's order after the buckets (Minimum, Average, Maximum, Max-Min), found '{key}'")));
        }
        let (v, _) = values(n, rest, self.cores.len(), key)?;
        self.stats.push(v);
        Ok(())
    }

    fn finish(self, last: usize) -> Parsed<Imported> {
        if self.cores.is_empty() {
            return Err(ParseError::at(
                last,
                format!(
                    "expected {EXPECTED}, but the input ends at line {last} without a 'Core:' line"
                ),
            ));
        }
        let Some(duration) = self.duration_ns else {
            return Err(ParseError::at(last, format!("expected oslat's summary ending with 'Duration:', but the input ends at line {last} without it: the output looks cut; import the whole output")));
        };
        let mut imp = Imported::new(Benchmark::Noise);
        for (i, mut core) in self.cores.into_iter().enumerate() {
            if core.count.unwrap_or(0) > 0 {
                core.min_ns = Some((self.stats[0][i] * 1000.0).round() as i64);
                core.avg_ns = Some(self.stats[1][i] * 1000.0);
                core.max_ns = Some((self.stats[2][i] * 1000.0).round() as i64);
            }
            imp.threads.push(core);
        }
        imp.duration_ns = Some(duration);
        // oslat prints the duration in ms (`3.008 (sec)`).
        imp.duration_precision_ns = Some(1_000_000);
        match self.priority.as_deref() {
            Some("default") => imp.tuning.policy = Some(Policy::Other),
            Some(p) => {
                if let Some(prio) = p
                    .strip_prefix("SCHED_FIFO:")
                    .and_then(|v| v.trim().parse().ok())
                {
                    imp.tuning.policy = Some(Policy::Fifo);
                    imp.tuning.priority = Some(prio);
                }
            }
            None => {}
        }
        imp.notes.extend(self.preamble.note());
        Ok(imp)
    }
}

pub fn parse(lines: &mut Input) -> Parsed<Imported> {
    let mut table = Table::default();
    let mut last = 0;
    while let Some((n, raw)) = lines.next_line()? {
        last = n;
        if lines.cut() {
            return Err(ParseError::at(n, "expected a whole line, found the input ending inside this one (no line end): the output looks cut; import the whole output"));
        }
        table.line(n, raw.trim())?;
    }
    table.finish(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::fuzz::fixture;
    use crate::import::parse;

    fn import(text: &[u8]) -> Parsed<crate::result::RunResult> {
        parse(&FORMAT, &mut &text[..], "oslat.txt", None)
    }

    #[test]
    fn the_numbers_are_those_printed() {
        let r = import(&fixture("oslat.txt")).expect("imports");
        assert_eq!(r.benchmark, Benchmark::Noise);
        assert_eq!(r.duration_ns, Some(4_997_000_000));
        assert_eq!(r.tuning.policy, Some(Policy::Other));
        let t = &r.threads[0];
        assert_eq!((t.name.as_str(), t.cpu), ("cpu1", Some(1)));
        assert_eq!(t.summary.samples, 266753041);
        assert_eq!(t.summary.min_ns, 1000);
        assert_eq!(t.summary.max_ns, 471_000);
        assert_eq!(t.summary.avg_ns, 1000);
    }

    #[test]
    fn two_cores_with_omitted_rows() {
        let r = import(&fixture("oslat-2cpu-z.txt")).expect("imports");
        let names: Vec<&str> = r.threads.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["cpu0", "cpu1"]);
        assert_eq!(r.duration_ns, Some(2_000_000_000));
    }

    #[test]
    fn a_cut_output_is_refused() {
        let text = fixture("oslat.txt");
        let s = String::from_utf8_lossy(&text);
        for cut in ["     Maximum:", "    Duration:", "    010 (us):"] {
            let at = s.find(cut).expect("in the fixture");
            let e = import(s[..at].as_bytes()).expect_err("refused");
            assert!(
                e.msg.contains("cut") || e.msg.contains("expected"),
                "{}",
                e.msg
            );
        }
        assert!(import(&text[..text.len() - 3]).is_err());
    }
}
