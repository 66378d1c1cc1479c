//! `rtlat compare`: one row per result, the columns its benchmark needs, as
//! text, Markdown or CSV; and the regression check against a baseline.

use super::{load, load_all, primary, svg, write_output, CompareArgs, Loaded};
use crate::error::{Error, Outcome, Result};
use crate::output::text::secs;
use crate::stats::summary::label as percentile_label;
use crate::stats::Summary;
use crate::units::us;
use std::fmt::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TableFormat {
    /// Aligned columns for a terminal
    Text,
    /// A GitHub-flavoured Markdown table
    Markdown,
    /// Comma-separated values with a header line (latencies in us)
    Csv,
}

/// What `--baseline` compares. Latencies come from each result's main figure
/// (timer: all CPUs, switch: all pairs, cruncher: `run`, net: `rtt`, irq: round trip).
#[derive(Debug, Clone, PartialEq)]
pub enum Metric {
    Min,
    Avg,
    Max,
    Stddev,
    Percentile(f64),
    Overruns,
    Lost,
    Stretch,
}

impl Metric {
    pub fn parse(s: &str) -> std::result::Result<Metric, String> {
        let t = s.trim().to_ascii_lowercase();
        Ok(match t.as_str() {
            "min" => Metric::Min,
            "avg" | "mean" => Metric::Avg,
            "max" => Metric::Max,
            "stddev" => Metric::Stddev,
            "overruns" => Metric::Overruns,
            "lost" => Metric::Lost,
            "stretch" => Metric::Stretch,
            p if p.starts_with('p') => {
                let v: f64 = p[1..].parse().map_err(|_| bad_metric(s))?;
                let known = crate::stats::summary::PERCENTILES
                    .iter()
                    .any(|&k| (k - v).abs() < 1e-9);
                if !known {
                    return Err(bad_metric(s));
                }
                Metric::Percentile(v)
            }
            _ => return Err(bad_metric(s)),
        })
    }

    pub fn name(&self) -> String {
        match self {
            Metric::Min => "min".into(),
            Metric::Avg => "avg".into(),
            Metric::Max => "max".into(),
            Metric::Stddev => "stddev".into(),
            Metric::Percentile(p) => percentile_label(*p),
            Metric::Overruns => "overruns".into(),
            Metric::Lost => "lost".into(),
            Metric::Stretch => "stretch".into(),
        }
    }

    fn is_latency(&self) -> bool {
        matches!(
            self,
            Metric::Min | Metric::Avg | Metric::Max | Metric::Stddev | Metric::Percentile(_)
        )
    }

    /// The metric's value for a result, or why it has none.
    pub fn value(&self, l: &Loaded) -> std::result::Result<f64, String> {
        let (_, _, s) = primary(&l.result);
        let missing = |what: &str| format!("{} ({}) has no {what}", l.label, l.path.display());
        match self {
            Metric::Min | Metric::Avg | Metric::Max | Metric::Stddev | Metric::Percentile(_)
                if s.samples == 0 =>
            {
                Err(missing("samples"))
            }
            Metric::Min => Ok(s.min_ns as f64),
            Metric::Avg => Ok(s.avg_ns as f64),
            Metric::Max => Ok(s.max_ns as f64),
            Metric::Stddev => Ok(s.stddev_ns as f64),
            Metric::Percentile(p) => s.percentile(*p).map(|v| v as f64).ok_or_else(|| {
                missing(&format!(
                    "{} ({} samples are too few)",
                    percentile_label(*p),
                    s.samples
                ))
            }),
            Metric::Overruns => Ok(s.overruns as f64),
            Metric::Lost => lost(l)
                .map(|v| v as f64)
                .ok_or_else(|| missing("lost count")),
            Metric::Stretch => stretch(l).ok_or_else(|| missing("stretch")),
        }
    }

    fn show(&self, v: f64) -> String {
        if self.is_latency() {
            format!("{} us", us(v.max(0.0) as u64))
        } else if *self == Metric::Stretch {
            format!("{v:.3}")
        } else {
            format!("{v}")
        }
    }
}

fn bad_metric(s: &str) -> String {
    format!(
        "unknown metric '{s}'; use min, avg, max, stddev, p50, p90, p99, p99.9, p99.99, p99.999, p99.9999, overruns, lost or stretch"
    )
}

/// `10%`, `10` or `2.5%` as a percentage.
pub fn parse_margin(s: &str) -> std::result::Result<f64, String> {
    let t = s.trim();
    let num = t.strip_suffix('%').unwrap_or(t).trim();
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!(
            "'{s}' is not a margin; give a percentage such as 10%"
        )),
    }
}

fn detail_u64(l: &Loaded, key: &str) -> Option<u64> {
    l.result.details.get(key).and_then(|v| v.as_u64())
}

/// Lost wakes, packets or edges: `details.lost`, else the summary's overruns for switch.
fn lost(l: &Loaded) -> Option<u64> {
    detail_u64(l, "lost")
        .or_else(|| (l.result.benchmark == "switch").then_some(l.result.total.overruns))
}

/// cruncher: `details.stretch`, else max / ideal.
fn stretch(l: &Loaded) -> Option<f64> {
    if let Some(s) = l.result.details.get("stretch").and_then(|v| v.as_f64()) {
        return Some(s);
    }
    let ideal = detail_u64(l, "ideal_ns").filter(|&i| i > 0)?;
    let (_, _, s) = primary(&l.result);
    (s.samples > 0).then(|| s.max_ns as f64 / ideal as f64)
}

#[derive(Debug, Clone, Copy)]
enum Figure {
    Min,
    Avg,
    Max,
    P(f64),
    Overruns,
}

#[derive(Debug, Clone, Copy)]
enum Source {
    Primary,
    Thread(&'static str),
    /// irq: `roundtrip` (log host), else `wake` (loopback).
    RoundTrip,
}

#[derive(Debug, Clone, Copy)]
enum Get {
    Of(Source, Figure),
    Lost,
    Missed,
    Duration,
    Ideal,
    Stretch,
    BeyondTolerance,
}

struct Column {
    head: &'static str,
    csv: &'static str,
    get: Get,
}

const fn col(head: &'static str, csv: &'static str, get: Get) -> Column {
    Column { head, csv, get }
}

fn columns(benchmark: &str) -> Vec<Column> {
    use Figure::*;
    use Get::*;
    use Source::*;
    match benchmark {
        "timer" => vec![
            col("min", "min_us", Of(Primary, Min)),
            col("avg", "avg_us", Of(Primary, Avg)),
            col("max", "max_us", Of(Primary, Max)),
            col("p99", "p99_us", Of(Primary, P(99.0))),
            col("p99.99", "p99.99_us", Of(Primary, P(99.99))),
            col("overruns", "overruns", Of(Primary, Overruns)),
            col("duration", "duration_s", Duration),
        ],
        "switch" => vec![
            col("min", "min_us", Of(Primary, Min)),
            col("avg", "avg_us", Of(Primary, Avg)),
            col("max", "max_us", Of(Primary, Max)),
            col("p99", "p99_us", Of(Primary, P(99.0))),
            col("lost", "lost", Lost),
            col("duration", "duration_s", Duration),
        ],
        "cruncher" => vec![
            col("ideal", "ideal_us", Ideal),
            col("min", "min_us", Of(Primary, Min)),
            col("avg", "avg_us", Of(Primary, Avg)),
            col("max", "max_us", Of(Primary, Max)),
            col("stretch", "stretch", Stretch),
            col("beyond tol.", "beyond_tolerance", BeyondTolerance),
            col("duration", "duration_s", Duration),
        ],
        "net" => vec![
            col("rtt min", "rtt_min_us", Of(Thread("rtt"), Min)),
            col("rtt avg", "rtt_avg_us", Of(Thread("rtt"), Avg)),
            col("rtt max", "rtt_max_us", Of(Thread("rtt"), Max)),
            col("rtt p99", "rtt_p99_us", Of(Thread("rtt"), P(99.0))),
            col("tx avg", "tx_avg_us", Of(Thread("tx"), Avg)),
            col("tx max", "tx_max_us", Of(Thread("tx"), Max)),
            col("rx avg", "rx_avg_us", Of(Thread("rx"), Avg)),
            col("rx max", "rx_max_us", Of(Thread("rx"), Max)),
            col("lost", "lost", Lost),
        ],
        "irq" => vec![
            col("irq avg", "irq_avg_us", Of(Thread("irq"), Avg)),
            col("irq max", "irq_max_us", Of(Thread("irq"), Max)),
            col("user avg", "user_avg_us", Of(Thread("user"), Avg)),
            col("user max", "user_max_us", Of(Thread("user"), Max)),
            col("round trip avg", "roundtrip_avg_us", Of(RoundTrip, Avg)),
            col("round trip max", "roundtrip_max_us", Of(RoundTrip, Max)),
            col("missed", "missed", Missed),
        ],
        _ => vec![
            col("min", "min_us", Of(Primary, Min)),
            col("avg", "avg_us", Of(Primary, Avg)),
            col("max", "max_us", Of(Primary, Max)),
            col("p99", "p99_us", Of(Primary, P(99.0))),
            col("overruns", "overruns", Of(Primary, Overruns)),
            col("duration", "duration_s", Duration),
        ],
    }
}

fn summary_of(l: &Loaded, src: Source) -> Option<Summary> {
    let r = &l.result;
    let thread = |n: &str| {
        r.threads
            .iter()
            .find(|t| t.name == n)
            .map(|t| t.summary.clone())
    };
    match src {
        Source::Primary => Some(primary(r).2),
        Source::Thread(n) => thread(n),
        Source::RoundTrip => thread("roundtrip").or_else(|| thread("wake")),
    }
}

/// A cell as text; `None` is shown as `-` (empty in CSV).
fn cell(l: &Loaded, get: Get, csv: bool) -> Option<String> {
    match get {
        Get::Of(src, stat) => {
            let s = summary_of(l, src)?;
            if s.samples == 0 && !matches!(stat, Figure::Overruns) {
                return None;
            }
            Some(match stat {
                Figure::Min => us(s.min_ns),
                Figure::Avg => us(s.avg_ns),
                Figure::Max => us(s.max_ns),
                Figure::P(p) => us(s.percentile(p)?),
                Figure::Overruns => s.overruns.to_string(),
            })
        }
        Get::Lost => lost(l).map(|v| v.to_string()),
        Get::Missed => detail_u64(l, "missed").map(|v| v.to_string()),
        Get::Duration if l.result.duration_ns == 0 => None,
        Get::Duration => Some(if csv {
            format!("{:.3}", l.result.duration_ns as f64 / 1e9)
        } else {
            secs(l.result.duration_ns)
        }),
        Get::Ideal => detail_u64(l, "ideal_ns").map(us),
        Get::Stretch => stretch(l).map(|v| format!("{v:.3}")),
        Get::BeyondTolerance => detail_u64(l, "beyond_tolerance").map(|v| v.to_string()),
    }
}

/// One table: a header and rows of cells.
struct Table {
    benchmark: String,
    head: Vec<String>,
    /// Left-aligned columns (label, load).
    left: usize,
    rows: Vec<Vec<String>>,
}

fn build_tables(
    rows: &[&Loaded],
    format: TableFormat,
    delta: Option<(&Metric, &Loaded)>,
) -> Vec<Table> {
    let csv = format == TableFormat::Csv;
    let mut benches: Vec<&str> = Vec::new();
    for l in rows {
        if !benches.contains(&l.result.benchmark.as_str()) {
            benches.push(&l.result.benchmark);
        }
    }
    benches
        .into_iter()
        .map(|b| {
            let cols = columns(b);
            let mut head: Vec<String> = vec!["label".into(), "load".into()];
            head.extend(cols.iter().map(|c| {
                if csv {
                    c.csv.to_string()
                } else {
                    c.head.to_string()
                }
            }));
            if let Some((m, _)) = delta {
                head.push(if csv {
                    format!("{}_vs_baseline_pct", m.name())
                } else {
                    format!("{} vs baseline", m.name())
                });
            }
            let missing = if csv { String::new() } else { "-".to_string() };
            let rows = rows
                .iter()
                .filter(|l| l.result.benchmark == b)
                .map(|l| {
                    let mut row = vec![l.label.clone(), super::loads_of(&l.result, false)];
                    row.extend(
                        cols.iter()
                            .map(|c| cell(l, c.get, csv).unwrap_or_else(|| missing.clone())),
                    );
                    if let Some((m, base)) = delta {
                        row.push(if std::ptr::eq(*l, base) {
                            if csv {
                                String::new()
                            } else {
                                "baseline".into()
                            }
                        } else {
                            match (m.value(l), m.value(base)) {
                                (Ok(v), Ok(b)) => change(v, b)
                                    .map(|c| {
                                        if csv {
                                            format!("{c:.1}")
                                        } else {
                                            format!("{c:+.1}%")
                                        }
                                    })
                                    .unwrap_or_else(|| missing.clone()),
                                _ => missing.clone(),
                            }
                        });
                    }
                    row
                })
                .collect();
            Table {
                benchmark: b.to_string(),
                head,
                left: 2,
                rows,
            }
        })
        .collect()
}

/// Relative change in percent; `None` when the baseline is 0 and the value too.
fn change(v: f64, base: f64) -> Option<f64> {
    if base > 0.0 {
        Some((v - base) / base * 100.0)
    } else if v > 0.0 {
        Some(f64::INFINITY)
    } else {
        Some(0.0)
    }
}

fn unit_note(benchmark: &str) -> &'static str {
    match benchmark {
        "cruncher" => "computation times in us",
        _ => "latencies in us",
    }
}

fn render_text(tables: &[Table]) -> String {
    let mut o = String::new();
    for (i, t) in tables.iter().enumerate() {
        if i > 0 {
            o.push('\n');
        }
        let _ = writeln!(
            o,
            "{}: {}, {} result(s)",
            t.benchmark,
            unit_note(&t.benchmark),
            t.rows.len()
        );
        let widths: Vec<usize> = (0..t.head.len())
            .map(|c| {
                t.rows
                    .iter()
                    .map(|r| r[c].chars().count())
                    .chain(std::iter::once(t.head[c].chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &[String]| {
            let mut s = String::new();
            for (c, v) in cells.iter().enumerate() {
                if c > 0 {
                    s.push_str("  ");
                }
                let pad = widths[c].saturating_sub(v.chars().count());
                if c < t.left {
                    s.push_str(v);
                    if c + 1 < cells.len() {
                        s.push_str(&" ".repeat(pad));
                    }
                } else {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(v);
                }
            }
            s.trim_end().to_string()
        };
        let _ = writeln!(o, "{}", line(&t.head));
        for r in &t.rows {
            let _ = writeln!(o, "{}", line(r));
        }
    }
    o
}

fn md_cell(s: &str) -> String {
    s.replace('\\', "\\\\").replace('|', "\\|")
}

fn render_markdown(tables: &[Table]) -> String {
    let mut o = String::new();
    for (i, t) in tables.iter().enumerate() {
        if i > 0 {
            o.push('\n');
        }
        let _ = writeln!(
            o,
            "**{}** ({}, {} result(s))\n",
            t.benchmark,
            unit_note(&t.benchmark),
            t.rows.len()
        );
        let head: Vec<String> = t.head.iter().map(|h| md_cell(h)).collect();
        let _ = writeln!(o, "| {} |", head.join(" | "));
        let sep: Vec<&str> = (0..t.head.len())
            .map(|c| if c < t.left { "---" } else { "---:" })
            .collect();
        let _ = writeln!(o, "| {} |", sep.join(" | "));
        for r in &t.rows {
            let cells: Vec<String> = r.iter().map(|c| md_cell(c)).collect();
            let _ = writeln!(o, "| {} |", cells.join(" | "));
        }
    }
    o
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn render_csv(tables: &[Table]) -> String {
    let mut o = String::new();
    for (i, t) in tables.iter().enumerate() {
        if i > 0 {
            o.push('\n');
        }
        let mut head = vec!["label".to_string(), "benchmark".to_string()];
        head.extend(t.head.iter().skip(1).cloned());
        let _ = writeln!(
            o,
            "{}",
            head.iter()
                .map(|h| csv_field(h))
                .collect::<Vec<_>>()
                .join(",")
        );
        for r in &t.rows {
            let mut cells = vec![r[0].clone(), t.benchmark.clone()];
            cells.extend(r.iter().skip(1).cloned());
            let _ = writeln!(
                o,
                "{}",
                cells
                    .iter()
                    .map(|c| csv_field(c))
                    .collect::<Vec<_>>()
                    .join(",")
            );
        }
    }
    o
}

/// The comparison table of `rows` in `format`; with a baseline, a column with
/// the change of `metric` against it.
pub fn table(
    rows: &[&Loaded],
    format: TableFormat,
    baseline: Option<(&Metric, &Loaded)>,
) -> String {
    let tables = build_tables(rows, format, baseline);
    match format {
        TableFormat::Text => render_text(&tables),
        TableFormat::Markdown => render_markdown(&tables),
        TableFormat::Csv => render_csv(&tables),
    }
}

/// The verdict of one result against the baseline: `Ok(true)` when worse by more than `margin` %.
pub fn worse(
    metric: &Metric,
    l: &Loaded,
    base: &Loaded,
    margin: f64,
) -> std::result::Result<(bool, String), String> {
    let v = metric.value(l)?;
    let b = metric.value(base)?;
    let limit = b * (1.0 + margin / 100.0);
    let is_worse = v > limit;
    let pct = change(v, b).unwrap_or(0.0);
    let how = if pct.is_infinite() {
        "up from 0".to_string()
    } else {
        format!("{pct:+.1}%")
    };
    Ok((
        is_worse,
        format!(
            "{} {}: {} {} vs baseline {} {} ({how}; limit +{margin}%)",
            if is_worse { "WORSE" } else { "ok" },
            l.label,
            metric.name(),
            metric.show(v),
            base.label,
            metric.show(b),
        ),
    ))
}

pub fn run(args: &CompareArgs) -> Result<Outcome> {
    let results = load_all(&args.results)?;
    let base = args.baseline.as_deref().map(load).transpose()?;
    let mut rows: Vec<&Loaded> = Vec::new();
    if let Some(b) = &base {
        rows.push(b);
    }
    rows.extend(results.iter());
    if let (Some(b), Some(_)) = (&base, args.fail_if_worse) {
        for l in &results {
            if l.result.benchmark != b.result.benchmark {
                return Err(Error::usage(format!(
                    "{} is a {} result but the baseline {} is a {} result; compare like with like",
                    l.path.display(),
                    l.result.benchmark,
                    b.path.display(),
                    b.result.benchmark
                )));
            }
        }
    }
    let delta = base.as_ref().map(|b| (&args.metric, b));
    print!("{}", table(&rows, args.format, delta));
    if let Some(path) = &args.svg {
        write_output(path, svg::document(&svg::compare_plots(&rows)).as_bytes())?;
    }
    let (Some(b), Some(margin)) = (&base, args.fail_if_worse) else {
        return Ok(Outcome::Success);
    };
    let mut any_worse = false;
    for l in &results {
        let (is_worse, line) = worse(&args.metric, l, b, margin).map_err(Error::usage)?;
        eprintln!("rtlat compare: {line}");
        any_worse |= is_worse;
    }
    Ok(if any_worse {
        Outcome::ThresholdExceeded
    } else {
        Outcome::Success
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_parse_and_refuse() {
        assert_eq!(Metric::parse("max"), Ok(Metric::Max));
        assert_eq!(Metric::parse("P99.99"), Ok(Metric::Percentile(99.99)));
        assert!(Metric::parse("p42").unwrap_err().contains("unknown metric"));
        assert!(Metric::parse("fastest").is_err());
        assert_eq!(Metric::Percentile(99.9).name(), "p99.9");
    }

    #[test]
    fn margins() {
        assert_eq!(parse_margin("10%"), Ok(10.0));
        assert_eq!(parse_margin("2.5"), Ok(2.5));
        assert!(parse_margin("-1%").is_err());
        assert!(parse_margin("ten").is_err());
        assert!(parse_margin("nan").is_err());
    }

    #[test]
    fn changes() {
        assert_eq!(change(110.0, 100.0), Some(10.0));
        assert_eq!(change(0.0, 0.0), Some(0.0));
        assert_eq!(change(1.0, 0.0), Some(f64::INFINITY));
    }

    #[test]
    fn fields_are_quoted_where_needed() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(md_cell("a|b"), "a\\|b");
    }
}
