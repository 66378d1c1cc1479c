//! `rtlat compare`: one row per result, the columns its benchmark needs
//! ([`Benchmark::compare_columns`]), as text, Markdown or CSV; and the
//! regression check against a baseline.

use super::describe::{
    duration_of, level_summary, loads_of, percentile_cell, primary, thread_of, us_signed, UNKNOWN,
};
use super::loaded::{load, load_all};
use super::table::{self, Align, Col};
use super::{benchmarks_of, svg::CompareSvg, write_output, Loaded, Render};
use crate::error::{Error, Outcome, Result};
use crate::result::details::noise::{CpuNoise, NoiseDetails};
use crate::result::details::Details;
use crate::result::model::{Figure, Get, Source};
use crate::result::Benchmark;
use crate::stats::summary::label as percentile_label;
use crate::stats::Summary;
use crate::units::us;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableFormat {
    /// Aligned columns for a terminal
    Text,
    /// A GitHub-flavoured Markdown table
    Markdown,
    /// Comma-separated values with a header line (latencies in us)
    Csv,
}

/// A validated `rtlat compare` command.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    pub results: Vec<PathBuf>,
    pub format: TableFormat,
    pub baseline: Option<PathBuf>,
    /// Exit 1 when `metric` of a result is worse than the baseline's by more than this many %.
    pub fail_if_worse: Option<f64>,
    pub metric: Metric,
    /// Where to write the overlaid histograms as SVG.
    pub svg: Option<PathBuf>,
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
        let (_, threads, s) = primary(&l.result);
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
            Metric::Stddev => s
                .stddev_ns
                .map(|v| v as f64)
                .ok_or_else(|| missing("stddev (its source does not give one)")),
            Metric::Percentile(p) => s.percentile(*p).map(|v| v as f64).ok_or_else(|| {
                // An import of counts and extremes alone (status lines) has samples but no histogram.
                let why = if threads.iter().all(|t| t.histogram.buckets.is_empty()) {
                    "no histogram in the source: it gives only counts and extremes".to_string()
                } else {
                    format!("{} samples are too few", s.samples)
                };
                missing(&format!("{} ({why})", percentile_label(*p)))
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
            format!("{} us", us_signed(v.round() as i64))
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

fn detail_u64(l: &Loaded, key: &str) -> Option<u64> {
    l.result.details.get(key).and_then(|v| v.as_u64())
}

/// Lost wakes, packets or edges: `details.lost`, else the summary's overruns for switch.
fn lost(l: &Loaded) -> Option<u64> {
    detail_u64(l, "lost").or_else(|| {
        l.result
            .benchmark
            .overruns_are_lost()
            .then_some(l.result.total.overruns)
    })
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

/// noise: a per-CPU figure of `details.cpus`, every CPU's added.
fn noise_sum(l: &Loaded, f: impl Fn(&CpuNoise) -> u64) -> Option<u64> {
    let d = NoiseDetails::of(&l.result)?;
    (!d.cpus.is_empty()).then(|| d.cpus.iter().map(f).sum())
}

fn summary_of(l: &Loaded, src: Source) -> Option<Summary> {
    match src {
        Source::Main => Some(primary(&l.result).2),
        Source::Thread(names) => thread_of(&l.result, names).map(|t| t.summary.clone()),
        Source::Level(level) => level_summary(&l.result, level),
    }
}

/// A cell as text; `None` is shown as `-` (empty in CSV).
pub(crate) fn cell(l: &Loaded, get: Get, csv: bool) -> Option<String> {
    match get {
        Get::Of(src, stat) => {
            let s = summary_of(l, src)?;
            if s.samples == 0 && !matches!(stat, Figure::Overruns) {
                return None;
            }
            Some(match stat {
                Figure::Min => us_signed(s.min_ns),
                Figure::Avg => us_signed(s.avg_ns),
                Figure::Max => us_signed(s.max_ns),
                Figure::P(p) => percentile_cell(s.percentile_of(p)?),
                Figure::Overruns => s.overruns.to_string(),
            })
        }
        Get::Lost => lost(l).map(|v| v.to_string()),
        Get::Missed => detail_u64(l, "missed").map(|v| v.to_string()),
        Get::Duration => {
            let d = l.result.duration_ns.filter(|&d| d > 0)?;
            if csv {
                Some(format!("{:.3}", d as f64 / 1e9))
            } else {
                duration_of(&l.result)
            }
        }
        Get::Ideal => detail_u64(l, "ideal_ns").map(us),
        Get::Stretch => stretch(l).map(|v| format!("{v:.3}")),
        Get::BeyondTolerance => detail_u64(l, "beyond_tolerance").map(|v| v.to_string()),
        Get::Stolen => noise_sum(l, |c| c.stolen_ns).map(us),
        Get::NoiseGaps => noise_sum(l, |c| c.gaps_above).map(|v| v.to_string()),
        Get::Forecast => forecast_cell(l),
    }
}

/// The highest per-sample forecast of the result's threads, `withheld`
/// when one was withheld; `None` without forecasts.
fn forecast_cell(l: &Loaded) -> Option<String> {
    let all: Vec<_> = l
        .result
        .threads
        .iter()
        .filter(|t| t.summary.samples > 0)
        .filter_map(|t| t.forecast.as_ref())
        .collect();
    if all.iter().any(|f| f.withheld.is_some()) {
        return Some("withheld".into());
    }
    all.iter()
        .filter_map(|f| f.per_sample)
        .map(|v| v.value_ns)
        .max()
        .map(us)
}

/// One table: a header and rows of cells.
struct Table {
    benchmark: Benchmark,
    /// The header, then one row per result.
    rows: Vec<Vec<String>>,
    /// How many columns of words lead (label, machine, load), left-aligned;
    /// the figures after them are right-aligned.
    left: usize,
}

impl Table {
    fn align(&self, c: usize) -> Align {
        if c < self.left {
            Align::Left
        } else {
            Align::Right
        }
    }
}

/// A column's head and its cell of a result.
type MachineColumn = (&'static str, fn(&Loaded) -> String);

/// What tells the machines of results apart beside their labels: the
/// architecture and the board model, each a column when the results differ
/// in it.
fn machine_columns(group: &[&&Loaded]) -> Vec<MachineColumn> {
    let columns: [MachineColumn; 2] = [
        ("arch", |l| {
            let m = l.result.system.machine.as_deref().unwrap_or(UNKNOWN);
            super::printable::printable_string(m)
        }),
        ("board", |l| {
            let m = l.result.system.board_model().unwrap_or(UNKNOWN);
            super::printable::printable_string(m)
        }),
    ];
    columns
        .into_iter()
        .filter(|(_, of)| {
            let seen: std::collections::BTreeSet<String> = group.iter().map(|l| of(l)).collect();
            seen.len() > 1
        })
        .collect()
}

fn build_tables(
    rows: &[&Loaded],
    format: TableFormat,
    delta: Option<(&Metric, &Loaded)>,
) -> Vec<Table> {
    let csv = format == TableFormat::Csv;
    let missing = if csv { String::new() } else { "-".to_string() };
    benchmarks_of(rows)
        .into_iter()
        .map(|b| {
            let cols = b.compare_columns();
            let group: Vec<&&Loaded> = rows.iter().filter(|l| l.result.benchmark == b).collect();
            let machine = machine_columns(&group);
            let mut head: Vec<String> = vec!["label".into()];
            head.extend(machine.iter().map(|(h, _)| h.to_string()));
            head.push("load".into());
            head.extend(
                cols.iter()
                    .map(|c| if csv { c.csv } else { c.head }.to_string()),
            );
            if let Some((m, _)) = delta {
                head.push(if csv {
                    format!("{}_vs_baseline_pct", m.name())
                } else {
                    format!("{} vs baseline", m.name())
                });
            }
            let mut table = vec![head];
            table.extend(group.iter().map(|l| {
                let mut row = vec![l.label.clone()];
                row.extend(machine.iter().map(|(_, of)| of(l)));
                row.push(loads_of(&l.result, false));
                row.extend(
                    cols.iter()
                        .map(|c| cell(l, c.get, csv).unwrap_or_else(|| missing.clone())),
                );
                if let Some((m, base)) = delta {
                    row.push(if std::ptr::eq(**l, base) {
                        if csv { "" } else { "baseline" }.to_string()
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
            }));
            Table {
                benchmark: b,
                rows: table,
                left: 2 + machine.len(),
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

/// The tables one after the other, a blank line between them.
fn render_each(tables: &[Table], one: fn(&Table) -> String) -> String {
    let mut o = String::new();
    for (i, t) in tables.iter().enumerate() {
        if i > 0 {
            o.push('\n');
        }
        o.push_str(&one(t));
    }
    o
}

/// A table's heading: the benchmark, its unit and how many results.
fn heading(t: &Table, markdown: bool) -> String {
    let (b, note, n) = (&t.benchmark, t.benchmark.unit_note(), t.rows.len() - 1);
    if markdown {
        format!("**{b}** ({note}, {n} result(s))\n\n")
    } else {
        format!("{b}: {note}, {n} result(s)\n")
    }
}

fn render_text(t: &Table) -> String {
    let head = heading(t, false);
    let cols: Vec<Col> = (0..t.rows[0].len())
        .map(|c| match t.align(c) {
            Align::Left => Col::left(),
            Align::Right => Col::right(),
        })
        .collect();
    head + &table::text(&cols, &t.rows)
}

fn render_markdown(t: &Table) -> String {
    let head = heading(t, true);
    let aligns: Vec<Align> = (0..t.rows[0].len()).map(|c| t.align(c)).collect();
    head + &table::markdown(&aligns, &t.rows)
}

/// CSV names the benchmark in its second column, where text has the load.
fn render_csv(t: &Table) -> String {
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .enumerate()
        .map(|(n, r)| {
            let second = if n == 0 {
                "benchmark".to_string()
            } else {
                t.benchmark.to_string()
            };
            let mut cells = vec![r[0].clone(), second];
            cells.extend(r.iter().skip(1).cloned());
            cells
        })
        .collect();
    table::csv(&rows)
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
        TableFormat::Text => {
            render_each(&tables, render_text) + &emulated(rows, "") + &culprits(rows, "")
        }
        TableFormat::Markdown => {
            render_each(&tables, render_markdown) + &emulated(rows, "- ") + &culprits(rows, "- ")
        }
        TableFormat::Csv => render_each(&tables, render_csv),
    }
}

/// What the mark of an emulated result means, with the emulator of each;
/// empty when none ran under one.
fn emulated(rows: &[&Loaded], bullet: &str) -> String {
    use std::fmt::Write as _;
    let marked: Vec<_> = rows
        .iter()
        .filter_map(|l| Some((l, l.result.system.emulation.as_deref()?)))
        .collect();
    if marked.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "\n{}: measured under an emulator; its figures are the emulator's and its host's, not the hardware's:\n",
        super::loaded::EMULATED.trim()
    );
    for (l, how) in marked {
        let _ = writeln!(
            s,
            "{bullet}{}: {}",
            l.label,
            super::printable::printable(how)
        );
    }
    s
}

/// The culprits of each result's explained worst cases (`--explain`), the
/// three worst of each result side by side; empty when none has any.
fn culprits(rows: &[&Loaded], bullet: &str) -> String {
    use std::fmt::Write as _;
    const SHOWN: usize = 3;
    if rows.iter().all(|l| l.result.explained.is_empty()) {
        return String::new();
    }
    let mut s = String::from("\nculprits of the worst samples (--explain):\n");
    for l in rows {
        let cases: Vec<String> = l
            .result
            .explained
            .iter()
            .take(SHOWN)
            .map(|e| {
                let c = e.culprit().map_or("nothing recorded".into(), |p| p.label());
                format!("{} {}", crate::result::explained::short(e.latency_ns), c)
            })
            .collect();
        let shown = if cases.is_empty() {
            "not explained".to_string()
        } else {
            cases.join("; ")
        };
        let _ = writeln!(
            s,
            "{bullet}{}: {}",
            super::printable::printable(&l.label),
            super::printable::printable(&shown)
        );
    }
    s
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

/// The comparison table as a renderer: a format and, optionally, a baseline to measure against.
pub struct CompareTable<'a> {
    pub format: TableFormat,
    pub baseline: Option<(&'a Metric, &'a Loaded)>,
}

impl Render for CompareTable<'_> {
    fn render(&self, results: &[&Loaded]) -> String {
        table(results, self.format, self.baseline)
    }
}

/// What the explained worst cases were made of, each result against the
/// baseline (or the second of two results against the first): the
/// causes whose share moved.
fn causes_text(base: Option<&Loaded>, results: &[Loaded]) -> String {
    let pairs: Vec<(&Loaded, &Loaded)> = match (base, results) {
        (Some(b), _) => results.iter().map(|l| (b, l)).collect(),
        (None, [a, b]) => vec![(a, b)],
        _ => Vec::new(),
    };
    let mut out = String::new();
    for (before, after) in pairs {
        let lines = crate::render::causes::lines(
            (&before.label, &before.result),
            (&after.label, &after.result),
        );
        for l in lines {
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

/// `rtlat compare`.
pub fn run(args: &CompareConfig) -> Result<Outcome> {
    let inputs = args.results.iter().chain(&args.baseline);
    crate::outfile::refuse_inputs(args.svg.as_deref(), inputs.map(PathBuf::as_path))?;
    // Checked and locked before any work, until the last write.
    let _output = args
        .svg
        .as_deref()
        .map(crate::outfile::checked)
        .transpose()?;
    let mut results = load_all(&args.results)?;
    let mut base = args.baseline.as_deref().map(load).transpose()?;
    super::loaded::tell_apart(results.iter_mut().chain(base.as_mut()));
    for l in results.iter_mut().chain(base.as_mut()) {
        let settings = crate::forecast::ForecastSettings::default();
        crate::forecast::annotate_missing(&mut l.result, &settings, false);
    }
    let mut rows: Vec<&Loaded> = Vec::new();
    if let Some(b) = &base {
        rows.push(b);
    }
    rows.extend(results.iter());
    // A baseline is compared figure by figure: only with results of its benchmark.
    if let Some(b) = &base {
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
    let tables = CompareTable {
        format: args.format,
        baseline: delta,
    };
    let mut text = tables.render(&rows);
    if args.format == TableFormat::Text {
        text.push_str(&causes_text(base.as_ref(), &results));
    }
    crate::outfile::print(&text);
    if let Some(path) = &args.svg {
        write_output(path, CompareSvg.render(&rows).as_bytes())?;
    }
    let (Some(b), Some(margin)) = (&base, args.fail_if_worse) else {
        return Ok(Outcome::Success);
    };
    let mut any_worse = false;
    for l in &results {
        let (is_worse, mut line) = worse(&args.metric, l, b, margin).map_err(Error::usage)?;
        if let Some(grew) = crate::render::causes::grew_most(&b.result, &l.result) {
            line.push_str(&format!("; {grew}"));
        }
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
    fn changes() {
        assert_eq!(change(110.0, 100.0), Some(10.0));
        assert_eq!(change(0.0, 0.0), Some(0.0));
        assert_eq!(change(1.0, 0.0), Some(f64::INFINITY));
    }
}
