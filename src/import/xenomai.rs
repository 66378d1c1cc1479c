//! Xenomai `latency` (and EVL `latmus`) text output:
//!
//! ```text
//! == Sampling period: 1000 us
//! RTT|  00:00:01  (periodic user-mode task, 1000 us period, priority 99)
//! RTH|----lat min|----lat avg|----lat max|-overrun|---msw|---lat best|--lat worst
//! RTD|      6.916|      7.083|     11.708|       0|     0|      6.916|     11.708
//! HSD|    avg|  7 -  8 |      997        (with -h: every sample, 1 µs cells)
//! HSS|    avg|      9999|      7.519|      0.641   (with -h or -s)
//! RTS|      6.874|      8.708|     28.333|       0|     0|    00:00:10/00:00:10
//! ```
//!
//! One RTD row per second (that second's min/avg/max, the overrun total so
//! far, mode switches, the best and worst so far); Xenomai 2 has no `msw`
//! column. The `avg` histogram holds every sample by absolute value in 1 µs
//! cells, its last cell collecting everything beyond; the `min`/`max`
//! histograms hold per-second extremes and are not imported.

use super::lines::Preamble;
use super::rows::{Row, RowLog};
use super::{detect, ImportFormat, Input, Reader};
use super::{field, parse_u64, parse_us, Imported, ParseError, Parsed, ThreadBuild};

struct Totals {
    min: i64,
    avg: i64,
    max: i64,
    overruns: u64,
    msw: u64,
    actual_s: Option<u64>,
    requested_s: Option<u64>,
}

fn hms(line: usize, s: &str) -> Parsed<u64> {
    let p: Option<Vec<u64>> = s.trim().split(':').map(parse_u64).collect();
    let secs = match p.as_deref() {
        Some([h, m, sec]) => h
            .checked_mul(3600)
            .and_then(|v| v.checked_add(m.checked_mul(60)?))
            .and_then(|v| v.checked_add(*sec)),
        _ => None,
    };
    secs.ok_or_else(|| {
        ParseError::at(
            line,
            format!("expected a time hh:mm:ss, found {}", super::found(s)),
        )
    })
}

fn us_field(line: usize, s: &str, what: &str) -> Parsed<i64> {
    field(line, s, parse_us, what, "in µs (e.g. 12.345)")
}

fn count_field(line: usize, s: &str, what: &str) -> Parsed<u64> {
    field(line, s, parse_u64, what, "as a whole number")
}

/// `(periodic user-mode task, 1000 us period, priority 99)` or latmus' `(user, 1000 us period, priority 90, CPU1)`.
fn rtt(
    line: usize,
    rest: &str,
    period: &mut Option<u64>,
    mode: &mut Option<String>,
    prio: &mut Option<i32>,
    cpu: &mut Option<usize>,
) -> Parsed<()> {
    let (Some(open), Some(close)) = (rest.find('('), rest.rfind(')')) else {
        return Err(ParseError::at(
            line,
            format!(
                "expected 'RTT|  hh:mm:ss  (mode, N us period, priority P)', found {}",
                super::found(rest)
            ),
        ));
    };
    if close < open {
        return Err(ParseError::at(
            line,
            "expected '(' before ')' in the RTT line",
        ));
    }
    for (i, part) in rest[open + 1..close].split(',').map(str::trim).enumerate() {
        if let Some(p) = part.strip_suffix("us period") {
            *period = Some(count_field(line, p, "the period")?);
        } else if let Some(p) = part.strip_prefix("priority") {
            *prio = p.trim().parse().ok();
        } else if let Some(c) = part.strip_prefix("CPU") {
            *cpu = c.split('-').next().and_then(parse_u64).map(|c| c as usize);
        } else if i == 0 {
            *mode = Some(part.to_string());
        }
    }
    Ok(())
}

const PROSE: [&str; 8] = [
    "warming up",
    "running quietly",
    "Warning!",
    "Please contact",
    "connecting to",
    "Received broadcast",
    "(enabling",
    "latency:",
];
/// Xenomai latency output.
pub static FORMAT: ImportFormat = ImportFormat {
    name: "xenomai",
    tool: "xenomai-latency",
    describe: "Xenomai latency output",
    // RTAI's testsuite prints RTH/RTD rows too, under its own title.
    detect: |head| {
        detect::line_starts_with(
            head,
            &["RTT|", "RTH|", "RTD|", "RTS|", "== Sampling period"],
        ) && !detect::line_starts_with(head, &["RTAI Testsuite - "])
    },
    read: Reader::Lines(parse),
};

/// What `parse` saw, line by line.
#[derive(Default)]
struct Seen {
    period_us: Option<u64>,
    mode: Option<String>,
    prio: Option<i32>,
    cpu: Option<usize>,
    /// The avg histogram: its cells, all but the last added, and the last (maybe the overflow cell).
    hist: Option<ThreadBuild>,
    hist_hits: u64,
    last_cell: Option<(usize, u64, u64)>,
    hss_avg: Option<(usize, u64, f64)>,
    rts: Option<(usize, Totals)>,
    /// The RTD rows, folded at the end once the RTS line tells which belong to the run.
    rows: Vec<Row>,
    other_histograms: bool,
    started: bool,
}

impl Seen {
    fn cell(&mut self, n: usize, from: u64, hits: u64) -> Parsed<()> {
        if self.last_cell.is_some_and(|c| c.1 >= from) {
            return Err(ParseError::at(n, "expected HSD cells in increasing order"));
        }
        let hist = self
            .hist
            .get_or_insert_with(|| ThreadBuild::new("hist", None));
        if let Some((m, f, h)) = self.last_cell.replace((n, from, hits)) {
            hist.add(f.saturating_mul(1000), h)
                .map_err(|e| ParseError::at(m, e.msg))?;
        }
        self.hist_hits = self.hist_hits.saturating_add(hits);
        Ok(())
    }
}

const EXPECTED: &str = "its lines ('== Sampling period: N us', RTT|, RTD|, HSD|, HSS|, RTS|)";

pub fn parse(lines: &mut Input) -> Parsed<Imported> {
    let mut seen = Seen::default();
    let mut preamble = Preamble::default();
    let mut cut_line = None;
    while let Some((n, raw)) = lines.next_line()? {
        if lines.cut() {
            // The input stops inside this line: a log cut short; the lines before it are what is known.
            cut_line = Some(n);
            break;
        }
        let t = raw.trim();
        let t = t.strip_prefix("^C").unwrap_or(t).trim();
        if t.is_empty() || PROSE.iter().any(|p| t.starts_with(p)) {
            continue;
        }
        if let Some(h) = t.strip_prefix("==") {
            let h = h.trim();
            if let Some(p) = h.strip_prefix("Sampling period:") {
                seen.period_us = Some(count_field(
                    n,
                    p.trim().trim_end_matches("us").trim(),
                    "the sampling period",
                )?);
            } else if let Some(m) = h.strip_prefix("Test mode:") {
                seen.mode = Some(m.trim().to_string());
            }
            seen.started = true;
            continue;
        }
        let code = t.split_once('|');
        let Some((code, rest)) = code.filter(|(c, _)| CODES.contains(c)) else {
            if !seen.started {
                preamble.skip(n, t, EXPECTED)?;
                continue;
            }
            return Err(ParseError::at(
                n,
                format!(
                    "expected a Xenomai latency line (RTT|, RTD|, HSD|, HSS|, RTS| …), found {}",
                    super::found(t)
                ),
            ));
        };
        seen.started = true;
        line(n, code, rest, &mut seen)?;
    }
    finish(seen, preamble, cut_line)
}

const CODES: [&str; 8] = ["RTH", "HSH", "---", "RTT", "RTD", "HSD", "HSS", "RTS"];

/// One `CODE|rest` line.
fn line(n: usize, code: &str, rest: &str, seen: &mut Seen) -> Parsed<()> {
    let f: Vec<&str> = rest.split('|').map(str::trim).collect();
    match code {
        "RTT" => rtt(
            n,
            rest,
            &mut seen.period_us,
            &mut seen.mode,
            &mut seen.prio,
            &mut seen.cpu,
        )?,
        "RTD" => {
            // 7 fields since Xenomai 3 (msw), 6 before.
            let msw_col = match f.len() {
                7 => true,
                6 => false,
                k => return Err(ParseError::at(n, format!("expected 6 or 7 '|'-separated fields after RTD (min, avg, max, overruns, [msw,] best, worst), found {k}"))),
            };
            if seen.period_us.is_none_or(|p| p == 0) {
                return Err(ParseError::at(
                    n,
                    "expected the period ('== Sampling period: N us' or an RTT line) before the first RTD line",
                ));
            }
            if seen.rts.is_some() || seen.last_cell.is_some() {
                return Err(ParseError::at(
                    n,
                    "expected no RTD line after the closing HSD/RTS lines",
                ));
            }
            let row = Row {
                line: n,
                min: us_field(n, f[0], "lat min")?,
                avg: us_field(n, f[1], "lat avg")?,
                max: us_field(n, f[2], "lat max")?,
                overruns: count_field(n, f[3], "the overrun count")?,
                msw: if msw_col {
                    count_field(n, f[4], "the mode switch count")?
                } else {
                    0
                },
            };
            seen.rows.push(row);
        }
        "HSD" => {
            if f.len() < 3 {
                return Err(ParseError::at(
                    n,
                    "expected 'HSD|  kind| from - to | samples'",
                ));
            }
            let from = f[1].split('-').next().and_then(parse_u64);
            let (Some(from), Some(hits)) = (from, parse_u64(f[2])) else {
                return Err(ParseError::at(
                    n,
                    format!(
                        "expected 'HSD|  kind| from - to | samples' with whole numbers, found {}",
                        super::found(rest)
                    ),
                ));
            };
            match f[0] {
                "avg" => seen.cell(n, from, hits)?,
                "min" | "max" => seen.other_histograms = true,
                k => {
                    return Err(ParseError::at(
                        n,
                        format!(
                            "expected min, avg or max after HSD|, found {}",
                            super::found(k)
                        ),
                    ))
                }
            }
        }
        "HSS" => {
            if f.len() < 4 {
                return Err(ParseError::at(
                    n,
                    "expected 'HSS|  kind| samples| average| stddev'",
                ));
            }
            if f[0] == "avg" {
                let samples = count_field(n, f[1], "the HSS sample count")?;
                let sd: f64 = f[3]
                    .parse()
                    .ok()
                    .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| ParseError::at(n, "expected the HSS stddev as a number"))?;
                seen.hss_avg = Some((n, samples, sd));
            }
        }
        "RTS" => {
            let (msw, time) = match f.len() {
                6 => (count_field(n, f[4], "the mode switch count")?, f[5]),
                5 => (0, f[4]),
                k => return Err(ParseError::at(n, format!("expected 5 or 6 '|'-separated fields after RTS (min, avg, max, overruns, [msw,] actual/requested time), found {k}"))),
            };
            let (actual, requested) = match time.split_once('/') {
                Some((a, r)) => (Some(hms(n, a)?), Some(hms(n, r)?)),
                None => (Some(hms(n, time)?), None),
            };
            seen.rts = Some((
                n,
                Totals {
                    min: us_field(n, f[0], "lat min")?,
                    avg: us_field(n, f[1], "lat avg")?,
                    max: us_field(n, f[2], "lat max")?,
                    overruns: count_field(n, f[3], "the overrun count")?,
                    msw,
                    actual_s: actual,
                    requested_s: requested,
                },
            ));
        }
        _ => {} // RTH, HSH, ---: headers
    }
    Ok(())
}

fn per_second(period_us: u64) -> u64 {
    (1_000_000 / period_us.max(1)).max(1)
}

/// How many of the first RTD rows came before the run: rows beyond the RTS
/// line's duration (one a second). Xenomai's klatency shows this: its kernel
/// module (klat_mod) samples from the moment it is loaded and queues a result
/// a second in a pipe, which klatency drains at once when it starts, so its
/// first RTD lines are seconds measured before it ran; its RTS line's
/// min/avg/max are the module's overall figures, its time klatency's own.
fn backlog(seen: &Seen) -> usize {
    match seen.rts.as_ref().and_then(|(_, t)| t.actual_s) {
        Some(secs) if secs > 0 => seen
            .rows
            .len()
            .saturating_sub(usize::try_from(secs).unwrap_or(usize::MAX)),
        _ => 0,
    }
}

fn finish(mut seen: Seen, preamble: Preamble, cut_line: Option<usize>) -> Parsed<Imported> {
    let skipped = backlog(&seen);
    let mut log = RowLog::new(1_000_000_000);
    // The overrun column is a running total: the run's own count starts after the backlog's.
    let backlog_overruns = skipped
        .checked_sub(1)
        .and_then(|i| seen.rows.get(i))
        .map_or(0, |r| r.overruns);
    log.overruns = backlog_overruns;
    for r in &seen.rows[skipped..] {
        log.push(r, per_second(seen.period_us.unwrap_or(1)))?;
    }
    if log.rows == 0 && seen.rts.is_none() {
        return Err(ParseError::at(
            0,
            "expected RTD or RTS lines (the output of Xenomai's latency)",
        ));
    }
    let Some(period_us) = seen.period_us.filter(|&p| p > 0) else {
        return Err(ParseError::at(
            0,
            "expected the period ('== Sampling period: N us' or an RTT line)",
        ));
    };
    let per_second = per_second(period_us);
    let mut imp = Imported::new(crate::result::Benchmark::Timer);
    imp.notes.extend(preamble.note());
    let cpu = seen.cpu;
    let mut b = ThreadBuild::new(
        cpu.map(|c| format!("cpu{c}"))
            .unwrap_or_else(|| "thread0".into()),
        cpu,
    );
    let rts = seen.rts.as_ref().map(|(n, t)| (*n, t));
    let (min, avg, max, overruns, msw) = if skipped > 0 {
        let (_, t) = rts.expect("a backlog is told by the RTS line");
        imp.notes.push(format!(
            "{} RTD lines for a run of {} s (RTS): the first {skipped} are seconds measured before the run (klatency prints the results its kernel module queued since it was loaded, at once), so the figures, count and series are the last {} lines'; the RTS line's own figures cover the module's whole time: min {}, avg {}, max {} µs, {} overruns",
            seen.rows.len(),
            log.rows,
            log.rows,
            us(t.min),
            us(t.avg),
            us(t.max),
            t.overruns
        ));
        let overruns = log.overruns.saturating_sub(backlog_overruns);
        (log.min, log.avg(), log.max, overruns, log.msw)
    } else {
        figures(rts, &log)?
    };
    let negative = min < 0 || log.negative;
    b.min_ns = Some(min);
    b.max_ns = Some(max);
    b.avg_ns = Some(avg as f64);
    b.overruns = overruns;
    b.series = log.series.to_series();
    b.max_at = log
        .worst
        .filter(|w| w.1 >= max)
        .map(|(i, _)| (i * per_second, i * 1_000_000_000));

    match (rts, seen.hist.take()) {
        (Some(_), Some(hist)) => b = with_histogram(b, hist, &seen, max)?,
        (Some((_, t)), None) => {
            let secs = t.actual_s.filter(|_| log.rows == 0).unwrap_or(log.rows);
            b.count = Some(secs.saturating_mul(per_second));
            imp.notes.push("no HSD histogram in the input (run latency with -h): only per-second min/avg/max are known".into());
        }
        (None, _) => {
            b.count = Some(log.rows.saturating_mul(per_second));
            imp.complete = false;
            imp.end_reason = crate::result::EndReason::Running;
            imp.notes.push(format!(
                "the input stops before latency's closing RTS line{} (a run killed or a machine that stopped): the figures cover the {} RTD line(s) present, one per second",
                cut_line.map(|n| format!(" (line {n} is cut off)")).unwrap_or_default(),
                log.rows
            ));
        }
    }
    if let Some((_, count, sd)) = seen.hss_avg.filter(|_| rts.is_some()) {
        b.stddev_ns = Some(sd * 1000.0);
        if b.recorded() == 0 {
            b.count = Some(count);
        }
        imp.notes.push(format!("{count} samples and the stddev are latency's own statistics (its HSS avg line, computed over 1 µs cells)"));
    }
    record_run(&mut imp, &seen, rts.map(|(_, t)| t), log.rows, period_us);
    imp.details.insert("mode_switches".into(), msw.into());
    imp.notes.push("Xenomai latency prints no host, kernel or start time; HSD cells are read as 1 µs (the default -B 1000)".into());
    if seen.other_histograms {
        imp.notes.push("the HSD min/max histograms (per-second extremes) are not imported; the avg histogram holds every sample".into());
    }
    if negative {
        imp.notes.push(format!("Xenomai reported negative latencies (wake-ups before the deadline, from its timer anticipation; min {} µs); the histogram holds absolute values, as latency's does", us(min)));
    }
    if msw > 0 {
        imp.notes.push(format!("{msw} mode switch(es) during sampling: some peaks may come from the task leaving real-time mode"));
    }
    imp.threads.push(b);
    Ok(imp)
}

/// (min, avg, max, overruns, mode switches) of the run: the closing RTS line's
/// (checked to cover the RTD lines), else what the RTD lines add up to.
fn figures(rts: Option<(usize, &Totals)>, log: &RowLog) -> Parsed<(i64, i64, i64, u64, u64)> {
    Ok(match rts {
        Some((n, t)) => {
            // The closing summary covers every row printed before it.
            if log.rows > 0 && (t.min > log.min || t.max < log.max || t.overruns < log.overruns) {
                return Err(ParseError::at(n, format!(
                    "expected the RTS line to cover its RTD lines (min ≤ {}, max ≥ {}, overruns ≥ {}), found min {}, max {}, overruns {}",
                    us(log.min), us(log.max), log.overruns, us(t.min), us(t.max), t.overruns
                )));
            }
            (t.min, t.avg, t.max, t.overruns, t.msw)
        }
        None => (log.min, log.avg(), log.max, log.overruns, log.msw),
    })
}

/// The thread as the avg histogram `hist` (HSD lines) holds it, with `b`'s
/// figures and series; `max` tells whether the last cell is the overflow.
fn with_histogram(
    mut b: ThreadBuild,
    mut hist: ThreadBuild,
    seen: &Seen,
    max: i64,
) -> Parsed<ThreadBuild> {
    // The last cell also holds everything beyond the histogram: when the maximum lies past it, it is the overflow.
    let (n, last, hits) = seen.last_cell.expect("a histogram has a last cell");
    let overflow_cell = max.max(0) as u64 >= last.saturating_add(1).saturating_mul(1000);
    if !overflow_cell {
        hist.add(last.saturating_mul(1000), hits)
            .map_err(|e| ParseError::at(n, e.msg))?;
    } else {
        hist.overflow_at_ns = Some(last.saturating_mul(1000));
    }
    if let Some((m, count, _)) = seen.hss_avg {
        if count != seen.hist_hits {
            return Err(ParseError::at(m, format!(
                "expected the HSS avg sample count to be the sum of the HSD avg cells ({}), found {count}",
                seen.hist_hits
            )));
        }
    }
    hist.name = b.name.clone();
    hist.cpu = b.cpu;
    hist.count = Some(seen.hist_hits);
    hist.min_ns = b.min_ns;
    hist.max_ns = b.max_ns;
    hist.avg_ns = b.avg_ns;
    hist.overruns = b.overruns;
    hist.series = std::mem::replace(
        &mut b.series,
        crate::result::Series {
            interval_ns: 1_000_000_000,
            points: Vec::new(),
        },
    );
    hist.max_at = b.max_at;
    Ok(hist)
}

/// The run's duration (`rows`: its RTD lines, one per second), period, mode and tuning.
fn record_run(imp: &mut Imported, seen: &Seen, rts: Option<&Totals>, rows: u64, period_us: u64) {
    // RTS gives whole seconds, as do the RTD lines (one a second).
    imp.duration_precision_ns = Some(1_000_000_000);
    imp.duration_ns = Some(
        rts.and_then(|t| t.actual_s)
            .unwrap_or(rows)
            .saturating_mul(1_000_000_000),
    );
    if let Some(req) = rts.and_then(|t| t.requested_s) {
        imp.config.insert(
            "requested_duration_ns".into(),
            req.saturating_mul(1_000_000_000).into(),
        );
    }
    imp.config
        .insert("period_ns".into(), period_us.saturating_mul(1000).into());
    if let Some(m) = &seen.mode {
        imp.config.insert("test_mode".into(), m.clone().into());
    }
    imp.config.insert("histogram_cell_ns".into(), 1000.into());
    imp.tuning.policy = Some(crate::result::Policy::Fifo);
    imp.tuning.priority = Some(seen.prio.unwrap_or(99).clamp(1, 99));
    imp.tuning.affinity = vec![seen.cpu];
}

/// ns as µs with 3 decimals, as latency prints them.
fn us(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::Lines;

    fn read(text: &str) -> Parsed<Imported> {
        let mut bytes = text.as_bytes();
        let mut input: &mut dyn std::io::BufRead = &mut bytes;
        parse(&mut Lines::new(&mut input))
    }

    #[test]
    fn negative_latencies_are_kept_signed() {
        let imp = read(&String::from_utf8_lossy(&crate::import::fuzz::fixture(
            "xenomai-latency-s-prompt.txt",
        )))
        .unwrap();
        let t = &imp.threads[0];
        assert_eq!(t.min_ns, Some(-412));
        assert_eq!(t.max_ns, Some(9_775));
        assert_eq!(t.count, Some(50_000));
        assert_eq!(t.stddev_ns, Some(529.0));
        assert!(imp.complete);
    }

    #[test]
    fn a_log_without_its_rts_line_is_incomplete() {
        let text = "== Sampling period: 1000 us\nRTD|      1.000|      2.000|      3.000|       0|     0|      1.000|      3.000\nRTD|     -1.000|      2.000|      4.000|       0|     0|     -1.000|      4.000\nRTD|      1.0";
        let imp = read(text).unwrap();
        assert!(!imp.complete);
        assert_eq!(imp.threads[0].count, Some(2000));
        assert_eq!(imp.threads[0].min_ns, Some(-1000));
        assert!(imp.notes.iter().any(|n| n.contains("line 4 is cut off")));
    }
}
