//! sockperf `ping-pong --full-log FILE`: the run's summary (as sockperf
//! printed it, colour codes included), then one CSV row per packet of the
//! measured ("valid") part of the run:
//!
//! ```text
//! packet, txTime(sec), rxTime(sec), latency(usec)
//! 0, 2.403841683, 2.403899722, 29.020
//! ```
//!
//! sockperf before 3.4 printed the timestamps alone, under a `txTime, rxTime`
//! header (`2.403841683, 2.403899722`). The timestamps have ns resolution;
//! sockperf's latency column is half the round trip (unless `--full-rtt`). rtlat keeps the full round trip, rx − tx,
//! as thread `rtt`, with sockperf's dropped / duplicated / out-of-order counts.

use super::{detect, ImportFormat, Input, Reader};
use super::{parse_u64, Imported, ParseError, Parsed, ThreadBuild};
use crate::stats::{IntervalStats, SeriesBuilder};

/// `2.403841683` seconds as ns, exactly.
fn seconds_ns(s: &str) -> Option<u64> {
    let (int, frac) = s.trim().split_once('.').unwrap_or((s.trim(), ""));
    let secs = parse_u64(int)?;
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_ns = if frac.is_empty() {
        0
    } else {
        parse_u64(frac)? * 10u64.pow(9 - frac.len() as u32)
    };
    secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// Series points are per second of txTime.
const SERIES_INTERVAL_NS: u64 = 1_000_000_000;

/// One packet's round trip `rtt_ns`, sent `at_ns` after the first, as a series interval.
fn sample(at_ns: u64, rtt_ns: u64) -> IntervalStats {
    IntervalStats {
        index: at_ns / SERIES_INTERVAL_NS,
        samples: 1,
        min: rtt_ns,
        max: rtt_ns,
        sum: rtt_ns,
        overruns: 0,
    }
}

/// The number after `key` in `text`, e.g. `dropped messages = 3`.
fn number_after(text: &str, key: &str) -> Option<u64> {
    let rest = &text[text.find(key)? + key.len()..];
    let rest = rest.trim_start_matches([' ', '=']);
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    parse_u64(&rest[..end])
}
/// sockperf ping-pong --full-log output.
pub static FORMAT: ImportFormat = ImportFormat {
    name: "sockperf",
    tool: "sockperf",
    describe: "sockperf --full-log output",
    detect: |head| {
        detect::line_starts_with(head, &["sockperf:", "packet, txTime", "txTime, rxTime"])
    },
    read: Reader::Lines(parse),
};

pub fn parse(lines: &mut Input) -> Parsed<Imported> {
    let mut log = Log::new();
    let mut cut_line = None;
    while let Some((n, raw)) = lines.next_line()? {
        if lines.cut() && log.in_data {
            // The log stops inside this row: the rows before it are what is known.
            cut_line = Some(n);
            break;
        }
        log.line(n, raw.trim())?;
    }
    log.finish(cut_line)
}

/// What the lines read so far say: the parser's state, one method per kind of line.
struct Log {
    b: ThreadBuild,
    series: SeriesBuilder,
    /// After the `packet, txTime(sec), …` line.
    in_data: bool,
    /// The rows are `txTime, rxTime` alone (sockperf before 3.4).
    times_only: bool,
    first_tx: Option<u64>,
    last_tx: u64,
    /// Packet rows read.
    index: u64,
    /// (rtt, row, ns since the first packet) of the longest round trip.
    worst: Option<(u64, u64, u64)>,
    params: Option<String>,
    dropped: Option<u64>,
    duplicated: Option<u64>,
    reordered: Option<u64>,
    valid_runtime: Option<u64>,
    sent: Option<u64>,
    received: Option<u64>,
    preamble: super::lines::Preamble,
    started: bool,
}

impl Log {
    fn new() -> Self {
        Log {
            b: ThreadBuild::new("rtt", None),
            series: SeriesBuilder::new(SERIES_INTERVAL_NS),
            in_data: false,
            times_only: false,
            first_tx: None,
            last_tx: 0,
            index: 0,
            worst: None,
            params: None,
            dropped: None,
            duplicated: None,
            reordered: None,
            valid_runtime: None,
            sent: None,
            received: None,
            preamble: super::lines::Preamble::default(),
            started: false,
        }
    }

    /// One trimmed line `n`.
    fn line(&mut self, n: usize, t: &str) -> Parsed<()> {
        if t.is_empty() || t.bytes().all(|c| c == b'-') {
            self.started |= !t.is_empty();
            return Ok(());
        }
        if let Some(p) = t.strip_prefix("test was performed using the following parameters:") {
            self.started = true;
            self.params = Some(p.trim().to_string());
            return Ok(());
        }
        if let Some(s) = t.strip_prefix("sockperf:") {
            self.started = true;
            self.summary(s);
            return Ok(());
        }
        if t.starts_with("packet,") || t.starts_with("txTime,") {
            self.in_data = true;
            self.times_only = t.starts_with("txTime,");
            return Ok(());
        }
        if !self.in_data && !self.started {
            return self.preamble.skip(n, t, "sockperf --full-log output ('sockperf: …' lines, then 'packet, txTime(sec), rxTime(sec), latency(usec)')");
        }
        if !self.in_data {
            return Err(ParseError::at(
                n,
                format!("expected sockperf --full-log output ('sockperf: …' lines, then 'packet, txTime(sec), rxTime(sec), latency(usec)'), found {}", super::found(t)),
            ));
        }
        self.packet(n, t)
    }

    /// A `sockperf:` line `s` (after the prefix): the message counts it may carry.
    fn summary(&mut self, s: &str) {
        if s.contains("dropped messages") {
            self.dropped = number_after(s, "dropped messages");
            self.duplicated = number_after(s, "duplicated messages");
            self.reordered = number_after(s, "out-of-order messages");
        }
        if s.contains("[Valid Duration]") {
            self.valid_runtime = s
                .split("RunTime=")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .and_then(seconds_ns);
            self.sent = number_after(s, "SentMessages");
            self.received = number_after(s, "ReceivedMessages");
        }
    }

    /// A packet row: `packet, txTime(sec), rxTime(sec), latency(usec)`, or
    /// `txTime, rxTime` in the older layout.
    fn packet(&mut self, n: usize, t: &str) -> Parsed<()> {
        let f: Vec<&str> = t.split(',').map(str::trim).collect();
        let row = || {
            let (layout, example) = if self.times_only {
                ("txTime, rxTime", "2.403841683, 2.403899722")
            } else {
                (
                    "packet, txTime(sec), rxTime(sec), latency(usec)",
                    "0, 2.403841683, 2.403899722, 29.020",
                )
            };
            ParseError::at(
                n,
                format!(
                    "expected a packet row '{layout}' such as '{example}', found {}",
                    super::found(t)
                ),
            )
        };
        let times = if self.times_only {
            (f.len() == 2).then(|| (f[0], f[1]))
        } else {
            (f.len() == 4
                && parse_u64(f[0]).is_some()
                && f[3].parse::<f64>().is_ok_and(f64::is_finite))
            .then(|| (f[1], f[2]))
        };
        let Some((tx, rx)) = times else {
            return Err(row());
        };
        let (Some(tx), Some(rx)) = (seconds_ns(tx), seconds_ns(rx)) else {
            return Err(row());
        };
        if rx < tx {
            return Err(ParseError::at(n, "expected rxTime at or after txTime"));
        }
        if tx < self.last_tx {
            return Err(ParseError::at(
                n,
                "expected txTime at or after the previous packet's",
            ));
        }
        self.last_tx = tx;
        let start = *self.first_tx.get_or_insert(tx);
        let rtt = rx - tx;
        let at = tx - start;
        self.b.add(rtt, 1).map_err(|e| ParseError::at(n, e.msg))?;
        self.series.push(&sample(at, rtt));
        if self.worst.is_none_or(|w| rtt > w.0) {
            self.worst = Some((rtt, self.index, at));
        }
        self.index += 1;
        Ok(())
    }

    /// The end of the log (`cut_line`: the row it stops inside): checks the rows
    /// against the counts sockperf printed, then builds the import.
    fn finish(self, cut_line: Option<usize>) -> Parsed<Imported> {
        let index = self.index;
        if index == 0 {
            return Err(ParseError::at(
                0,
                "expected packet rows after 'packet, txTime(sec), rxTime(sec), latency(usec)' (run sockperf ping-pong with --full-log FILE)",
            ));
        }
        let mut imp = Imported::new(crate::result::Benchmark::Net);
        imp.precision_ns = 1;
        imp.unit = "ns";
        imp.notes.extend(self.preamble.note());
        if let Some(r) = self.received {
            if index > r {
                return Err(ParseError::at(0, format!("expected at most {r} packet rows (ReceivedMessages of the [Valid Duration] line), found {index}")));
            }
            if index < r {
                imp.complete = false;
                imp.end_reason = crate::result::EndReason::Running;
                imp.notes.push(format!(
                    "the log stops after {index} of the {r} packets sockperf received{}: the figures cover the rows present",
                    cut_line.map(|n| format!(" (line {n} is cut off)")).unwrap_or_default()
                ));
            }
        } else {
            imp.notes.push("no '[Valid Duration]' line with ReceivedMessages: whether every packet row is present cannot be checked".into());
        }
        let mut b = self.b;
        b.max_at = self.worst.map(|w| (w.1, w.2));
        b.series = self.series.to_series();
        imp.duration_ns = Some(
            self.valid_runtime
                .filter(|_| imp.complete)
                .unwrap_or(self.last_tx - self.first_tx.unwrap_or(self.last_tx)),
        );
        imp.threads.push(b);
        for (k, v) in [
            ("lost", self.dropped),
            ("duplicated", self.duplicated),
            ("reordered", self.reordered),
            ("sent", self.sent),
            ("received", self.received),
        ] {
            if let Some(v) = v {
                imp.details.insert(k.into(), v.into());
            }
        }
        if let Some(p) = &self.params {
            parameters(&mut imp, p);
        }
        imp.config
            .insert("tool".into(), "sockperf ping-pong".into());
        imp.notes.push("sockperf's own latency is half the round trip; rtt here is the full round trip (rxTime − txTime of each packet)".into());
        imp.notes.push("sockperf's log names no host, kernel or start time, and has no send (tx) or receive (rx) path split".into());
        Ok(imp)
    }
}

/// sockperf's parameters line `p`: the command line, the message rate and size.
fn parameters(imp: &mut Imported, p: &str) {
    imp.config
        .insert("sockperf_parameters".into(), p.to_string().into());
    imp.command_line = std::iter::once("sockperf".to_string())
        .chain(std::iter::once("ping-pong".to_string()))
        .chain(p.split_whitespace().map(str::to_string))
        .collect();
    if let Some(mps) = number_after(p, "--mps") {
        imp.config.insert("messages_per_second".into(), mps.into());
    }
    if let Some(size) = number_after(p, "--msg-size") {
        imp.config.insert("message_bytes".into(), size.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_seconds() {
        let exact = |t: &str| seconds_ns(t).ok_or(());
        let whole = [
            ("2.403841683", 2_403_841_683),
            ("2.5", 2_500_000_000),
            ("7", 7_000_000_000),
        ];
        crate::units::check_parses(exact, &whole);
        crate::units::check_refuses(exact, &["1.0000000001", "-1.0"]);
        assert_eq!(
            number_after("# dropped messages = 3; # dup", "dropped messages"),
            Some(3)
        );
    }

    #[test]
    fn series_stay_bounded() {
        let mut s = SeriesBuilder::new(SERIES_INTERVAL_NS);
        for i in 0..10_000u64 {
            s.push(&sample(i * SERIES_INTERVAL_NS, i));
        }
        let s = s.to_series();
        assert!(s.points.len() <= crate::stats::series::SERIES_POINTS);
        assert_eq!(s.interval_ns, 4 * SERIES_INTERVAL_NS);
        assert_eq!(s.points.iter().map(|p| p.samples).sum::<u64>(), 10_000);
        assert_eq!(
            (s.points[0].min_ns, s.points[0].avg_ns, s.points[0].max_ns),
            (0, 2, 3)
        );
    }

    #[test]
    fn absurd_round_trips_saturate_instead_of_overflowing() {
        let mut s = SeriesBuilder::new(SERIES_INTERVAL_NS);
        s.push(&sample(0, u64::MAX - 1));
        s.push(&sample(1, u64::MAX - 1));
        let p = &s.to_series().points[0];
        assert_eq!((p.samples, p.max_ns), (2, i64::MAX));
        assert!(p.avg_ns <= p.max_ns);
    }
}
