//! `rtla timerlat hist` output:
//!
//! ```text
//! # RTLA timerlat histogram
//! # Time unit is microseconds (us)
//! # Duration:   0 00:10:00
//! Index   IRQ-000   Thr-000   IRQ-001   Thr-001
//! 0        276489         0    206089         0
//! 1        318327     35487    388149     30024
//! over:         0         0         0         0
//! count:   600002    600002    600002    600002
//! min:          0         1         0         1
//! avg:          0         5         0         5
//! max:         16        36        15        58
//! ALL:        IRQ       Thr
//! count:  1200004   1200004
//! …
//! ```
//!
//! Rows are the bucket's lower value (index × bucket size), all-zero rows are
//! skipped, `over:` counts samples beyond the histogram, averages are
//! truncated to whole units, `-` marks a column without samples. Thread
//! latency (`Thr-NNN`) becomes thread `cpuN` (what cyclictest measures), IRQ
//! latency `irq-cpuN`, user-space latency (`-u`) `usr-cpuN`; the total merges
//! the `cpuN` threads.

use super::{detect, Format, Input, Reader};
use super::{parse_u64, Imported, ParseError, Parsed, ThreadBuild};

fn values(n: usize, rest: &str, columns: usize, what: &str) -> Parsed<Vec<Option<u64>>> {
    let v: Vec<Option<u64>> = rest
        .split_whitespace()
        .map(|t| {
            if t == "-" {
                Ok(None)
            } else {
                parse_u64(t).map(Some).ok_or_else(|| {
                    ParseError::at(
                        n,
                        format!(
                            "expected whole numbers or '-' after '{what}', found {}",
                            super::found(t)
                        ),
                    )
                })
            }
        })
        .collect::<Parsed<_>>()?;
    if v.len() != columns {
        return Err(ParseError::at(n, format!("expected {columns} values after '{what}' (one per column of the Index line), found {}", v.len())));
    }
    Ok(v)
}

fn duration(s: &str) -> Option<u64> {
    // "0 00:10:00": days, then hh:mm:ss.
    let mut it = s.split_whitespace();
    let days = parse_u64(it.next()?)?;
    let hms: Vec<u64> = it
        .next()?
        .split(':')
        .map(parse_u64)
        .collect::<Option<_>>()?;
    match hms.as_slice() {
        [h, m, s] => days
            .checked_mul(86_400)?
            .checked_add(h.checked_mul(3600)?)?
            .checked_add(m.checked_mul(60)?)?
            .checked_add(*s),
        _ => None,
    }
}
/// rtla timerlat hist output.
pub static FORMAT: Format = Format {
    name: "rtla-timerlat",
    tool: "rtla-timerlat",
    describe: "rtla timerlat hist output",
    detect: |head| {
        detect::line_starts_with(head, &["# RTLA timerlat"])
            || head
                .lines()
                .any(|l| l.starts_with("Index") && (l.contains("IRQ-") || l.contains("Thr-")))
    },
    read: Reader::Lines(parse),
};

pub fn parse(lines: &mut Input) -> Parsed<Imported> {
    let mut scale = 1000u64;
    let mut secs = None;
    let mut header: Option<(usize, Vec<(String, usize)>)> = None;
    let mut rows: Vec<(usize, u64, Vec<u64>)> = Vec::new();
    let mut stats: [Option<(usize, Vec<Option<u64>>)>; 5] = Default::default();
    const NAMES: [&str; 5] = ["over:", "count:", "min:", "avg:", "max:"];
    while let Some((n, raw)) = lines.next_line()? {
        let t = raw.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(c) = t.strip_prefix('#') {
            let c = c.trim();
            if let Some(u) = c.strip_prefix("Time unit is ") {
                scale = if u.starts_with("nano") { 1 } else { 1000 };
            } else if let Some(d) = c.strip_prefix("Duration:") {
                secs = duration(d);
            }
            continue;
        }
        let Some((_, cols)) = &header else {
            if let Some(rest) = t.strip_prefix("Index") {
                let mut cols = Vec::new();
                for tok in rest.split_whitespace() {
                    let parsed = tok.split_once('-').and_then(|(k, c)| {
                        let cpu = parse_u64(c)? as usize;
                        matches!(k, "IRQ" | "Thr" | "Usr").then(|| (k.to_string(), cpu))
                    });
                    cols.push(parsed.ok_or_else(|| {
                        ParseError::at(
                            n,
                            format!(
                                "expected columns like IRQ-000, Thr-000, Usr-000, found {}",
                                super::found(tok)
                            ),
                        )
                    })?);
                }
                if cols.is_empty() {
                    return Err(ParseError::at(
                        n,
                        "expected at least one column after Index",
                    ));
                }
                header = Some((n, cols));
                continue;
            }
            if t.starts_with("rtla timerlat hit stop tracing") || t.starts_with("Saving trace") {
                continue;
            }
            return Err(ParseError::at(
                n,
                format!("expected rtla timerlat hist output ('# RTLA timerlat histogram', then an 'Index IRQ-000 Thr-000 …' line), found {}", super::found(t)),
            ));
        };
        let columns = cols.len();
        if t.starts_with("ALL:") {
            break; // the all-CPU summary follows; we merge ourselves.
        }
        if let Some(i) = NAMES.iter().position(|name| t.starts_with(name)) {
            stats[i] = Some((n, values(n, &t[NAMES[i].len()..], columns, NAMES[i])?));
            if i == 4 {
                break; // max: is the last per-column line.
            }
            continue;
        }
        if stats.iter().any(|s| s.is_some()) {
            return Err(ParseError::at(
                n,
                format!(
                    "expected count:, min:, avg: or max: after over:, found {}",
                    super::found(t)
                ),
            ));
        }
        let mut it = t.split_whitespace();
        let index = it.next().and_then(parse_u64);
        let counts: Option<Vec<u64>> = it.map(parse_u64).collect();
        let (Some(index), Some(counts)) = (index, counts) else {
            return Err(ParseError::at(n, format!("expected a histogram row (the bucket, then {columns} counts) or over:, found {}", super::found(t))));
        };
        if counts.len() != columns {
            return Err(ParseError::at(
                n,
                format!(
                    "expected {columns} counts after the bucket, found {}",
                    counts.len()
                ),
            ));
        }
        if rows.last().is_some_and(|r| r.1 >= index) {
            return Err(ParseError::at(n, "expected buckets in increasing order"));
        }
        rows.push((n, index, counts));
    }
    let Some((_, cols)) = header else {
        return Err(ParseError::at(0, "expected an 'Index IRQ-000 Thr-000 …' header line (rtla timerlat hist output without --no-header/--no-index)"));
    };
    let limit = rows.last().map(|r| r.1.saturating_add(1)).unwrap_or(0);
    let mut imp = Imported::new(crate::result::Benchmark::Timer);
    if scale == 1 {
        imp.precision_ns = 1;
        imp.unit = "ns";
    }
    let name = |kind: &str, cpu: usize| match kind {
        "Thr" => format!("cpu{cpu}"),
        "IRQ" => format!("irq-cpu{cpu}"),
        _ => format!("usr-cpu{cpu}"),
    };
    let stat = |i: usize, c: usize| stats[i].as_ref().and_then(|(_, v)| v[c]);
    for (c, (kind, cpu)) in cols.iter().enumerate() {
        let mut b = ThreadBuild::new(name(kind, *cpu), Some(*cpu));
        for (n, index, counts) in &rows {
            b.add(index.saturating_mul(scale), counts[c])
                .map_err(|e| ParseError::at(*n, e.msg))?;
        }
        let over = stat(0, c).unwrap_or(0);
        let expected = b.recorded().saturating_add(over);
        if let Some((n, v)) = &stats[1] {
            let count = v[c].unwrap_or(0);
            if count != expected {
                return Err(ParseError::at(*n, format!("expected count {expected} for {kind}-{cpu:03} (its rows plus over:), found {count}")));
            }
        }
        b.count = Some(expected);
        b.overflow_at_ns = Some(limit.saturating_mul(scale));
        if expected > 0 {
            b.min_ns = stat(2, c).map(|v| v.saturating_mul(scale));
            b.max_ns = stat(4, c).map(|v| v.saturating_mul(scale));
            if over > 0 {
                b.avg_ns = stat(3, c).map(|v| v as f64 * scale as f64);
            }
        }
        imp.threads.push(b);
    }
    if cols.iter().any(|(k, _)| k == "Thr") {
        imp.total_of = cols
            .iter()
            .filter(|(k, _)| k == "Thr")
            .map(|(k, c)| name(k, *c))
            .collect();
    }
    imp.duration_ns = secs.unwrap_or(0).saturating_mul(1_000_000_000);
    imp.config
        .insert("tool".into(), "rtla timerlat hist".into());
    imp.notes.push("rtla's histogram output names no host, kernel, period or policy; cpuN is the timerlat thread latency (Thr), irq-cpuN the IRQ latency".into());
    if secs.is_none() {
        imp.notes
            .push("no '# Duration:' line: the duration is unknown".into());
    }
    Ok(imp)
}
