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

use super::{detect, Format, Input, Reader};
use super::{field, parse_u64, parse_us, Imported, ParseError, Parsed, ThreadBuild};
use crate::result::SeriesPoint;

struct Row {
    line: usize,
    min: i64,
    avg: i64,
    max: i64,
    overruns: u64,
    msw: u64,
}

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
pub static FORMAT: Format = Format {
    name: "xenomai",
    tool: "xenomai-latency",
    describe: "Xenomai latency output",
    detect: |head| {
        detect::line_starts_with(
            head,
            &["RTT|", "RTH|", "RTD|", "RTS|", "== Sampling period"],
        )
    },
    read: Reader::Lines(parse),
};

pub fn parse(lines: &mut Input) -> Parsed<Imported> {
    let (mut period_us, mut mode, mut prio, mut cpu) = (None, None, None, None);
    let mut rows: Vec<Row> = Vec::new();
    let mut cells: Vec<(usize, u64, u64)> = Vec::new();
    let mut hss_avg: Option<(u64, f64, f64)> = None;
    let mut rts: Option<(usize, Totals)> = None;
    let mut other_histograms = false;
    while let Some((n, raw)) = lines.next_line()? {
        let t = raw.trim();
        let t = t.strip_prefix("^C").unwrap_or(t).trim();
        if t.is_empty() || PROSE.iter().any(|p| t.starts_with(p)) {
            continue;
        }
        if let Some(h) = t.strip_prefix("==") {
            let h = h.trim();
            if let Some(p) = h.strip_prefix("Sampling period:") {
                period_us = Some(count_field(
                    n,
                    p.trim().trim_end_matches("us").trim(),
                    "the sampling period",
                )?);
            } else if let Some(m) = h.strip_prefix("Test mode:") {
                mode = Some(m.trim().to_string());
            }
            continue;
        }
        let Some((code, rest)) = t.split_once('|') else {
            return Err(ParseError::at(
                n,
                format!(
                    "expected a Xenomai latency line (RTT|, RTD|, HSD|, HSS|, RTS| …), found {}",
                    super::found(t)
                ),
            ));
        };
        let f: Vec<&str> = rest.split('|').map(str::trim).collect();
        match code {
            "RTH" | "HSH" | "---" => {}
            "RTT" => rtt(n, rest, &mut period_us, &mut mode, &mut prio, &mut cpu)?,
            "RTD" => {
                // 7 fields since Xenomai 3 (msw), 6 before.
                let msw_col = match f.len() {
                    7 => true,
                    6 => false,
                    k => return Err(ParseError::at(n, format!("expected 6 or 7 '|'-separated fields after RTD (min, avg, max, overruns, [msw,] best, worst), found {k}"))),
                };
                rows.push(Row {
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
                });
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
                    return Err(ParseError::at(n, format!("expected 'HSD|  kind| from - to | samples' with whole numbers, found {}", super::found(t))));
                };
                match f[0] {
                    "avg" => {
                        if cells.last().is_some_and(|c| c.1 >= from) {
                            return Err(ParseError::at(
                                n,
                                "expected HSD cells in increasing order",
                            ));
                        }
                        cells.push((n, from, hits));
                    }
                    "min" | "max" => other_histograms = true,
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
                    let avg: f64 = f[2]
                        .parse()
                        .map_err(|_| ParseError::at(n, "expected the HSS average as a number"))?;
                    let sd: f64 = f[3]
                        .parse()
                        .map_err(|_| ParseError::at(n, "expected the HSS stddev as a number"))?;
                    if avg.is_finite() && sd.is_finite() {
                        hss_avg = Some((samples, avg, sd));
                    }
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
                rts = Some((
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
            other => {
                return Err(ParseError::at(n, format!("expected a Xenomai latency line (RTT|, RTD|, HSD|, HSS|, RTS| …), found {}", super::found(&format!("{other}|")))));
            }
        }
    }
    if rows.is_empty() && rts.is_none() {
        return Err(ParseError::at(
            0,
            "expected RTD or RTS lines (the output of Xenomai's latency)",
        ));
    }
    let Some(period_us) = period_us.filter(|&p| p > 0) else {
        return Err(ParseError::at(
            0,
            "expected the period ('== Sampling period: N us' or an RTT line)",
        ));
    };
    let period_ns = period_us.saturating_mul(1000);
    let per_second = (1_000_000_000 / period_ns).max(1);

    let mut imp = Imported::new(crate::result::Benchmark::Timer);
    let mut b = ThreadBuild::new(
        cpu.map(|c| format!("cpu{c}"))
            .unwrap_or_else(|| "thread0".into()),
        cpu,
    );
    let (min, avg, max, overruns, msw) = match &rts {
        Some((_, t)) => (t.min, t.avg, t.max, t.overruns, t.msw),
        None => (
            rows.iter().map(|r| r.min).min().unwrap_or(0),
            rows.iter().map(|r| r.avg).sum::<i64>() / rows.len().max(1) as i64,
            rows.iter().map(|r| r.max).max().unwrap_or(0),
            rows.last().map(|r| r.overruns).unwrap_or(0),
            rows.last().map(|r| r.msw).unwrap_or(0),
        ),
    };
    let negative = min < 0 || rows.iter().any(|r| r.min < 0);
    let clamp = |v: i64| v.max(0) as u64;
    b.min_ns = Some(clamp(min));
    b.max_ns = Some(clamp(max));
    b.avg_ns = Some(clamp(avg) as f64);
    b.overruns = overruns;

    let mut prev = 0u64;
    let mut worst_row = None;
    for (i, r) in rows.iter().enumerate() {
        if r.overruns < prev {
            return Err(ParseError::at(
                r.line,
                "expected the overrun total to never decrease",
            ));
        }
        if r.min > r.max {
            return Err(ParseError::at(r.line, "expected lat min ≤ lat max"));
        }
        b.series.points.push(SeriesPoint {
            t_ns: i as u64 * 1_000_000_000,
            samples: per_second,
            min_ns: clamp(r.min),
            avg_ns: clamp(r.avg).clamp(clamp(r.min), clamp(r.max)),
            max_ns: clamp(r.max),
            overruns: r.overruns - prev,
        });
        prev = r.overruns;
        if worst_row.is_none() && r.max >= max {
            worst_row = Some(i as u64);
        }
    }
    b.max_at = worst_row.map(|i| (i * per_second, i * 1_000_000_000));

    if !cells.is_empty() {
        let hits: u64 = cells.iter().fold(0u64, |a, c| a.saturating_add(c.2));
        let last = cells[cells.len() - 1].1;
        // The last cell also holds everything beyond the histogram: when the maximum lies past it, it is the overflow.
        let overflow_cell = clamp(max) >= last.saturating_add(1).saturating_mul(1000);
        let used = if overflow_cell {
            &cells[..cells.len() - 1]
        } else {
            &cells[..]
        };
        for (n, from, h) in used {
            b.add(from.saturating_mul(1000), *h)
                .map_err(|e| ParseError::at(*n, e.msg))?;
        }
        b.count = Some(hits);
        if overflow_cell {
            b.overflow_at_ns = Some(last.saturating_mul(1000));
        }
        if let Some((_, _, sd)) = hss_avg {
            b.stddev_ns = Some(sd * 1000.0);
        }
    } else {
        let secs = rts
            .as_ref()
            .and_then(|(_, t)| t.actual_s)
            .filter(|_| rows.is_empty())
            .unwrap_or(rows.len() as u64);
        b.count = Some(secs.saturating_mul(per_second));
        imp.notes.push("no HSD histogram in the input (run latency with -h): only per-second min/avg/max are known".into());
    }
    imp.duration_ns = rts
        .as_ref()
        .and_then(|(_, t)| t.actual_s)
        .unwrap_or(rows.len() as u64)
        .saturating_mul(1_000_000_000);
    if let Some(req) = rts.as_ref().and_then(|(_, t)| t.requested_s) {
        imp.config.insert(
            "requested_duration_ns".into(),
            req.saturating_mul(1_000_000_000).into(),
        );
    }
    imp.config.insert("period_ns".into(), period_ns.into());
    if let Some(m) = &mode {
        imp.config.insert("test_mode".into(), m.clone().into());
    }
    imp.config.insert("histogram_cell_ns".into(), 1000.into());
    imp.details.insert("mode_switches".into(), msw.into());
    imp.tuning.policy = crate::result::Policy::Fifo;
    imp.tuning.priority = prio.unwrap_or(99).clamp(1, 99);
    imp.tuning.affinity = vec![cpu];
    imp.notes.push("Xenomai latency prints no host, kernel or start time; HSD cells are read as 1 µs (the default -B 1000)".into());
    if other_histograms {
        imp.notes.push("the HSD min/max histograms (per-second extremes) are not imported; the avg histogram holds every sample".into());
    }
    if negative {
        imp.notes.push("Xenomai reported negative latencies (wake-ups before the deadline, from its timer anticipation); they are counted as 0, and the histogram holds absolute values".into());
    }
    if msw > 0 {
        imp.notes.push(format!("{msw} mode switch(es) during sampling: some peaks may come from the task leaving real-time mode"));
    }
    imp.threads.push(b);
    Ok(imp)
}
