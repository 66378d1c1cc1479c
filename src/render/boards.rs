//! `rtlat compare --by-board`: one row per board, a group of columns per
//! suite step — the layout of the published comparisons (CRUNCHER ideal and
//! stretch; SWITCH min/avg/max/lost; timer min/avg/max/overruns/test time,
//! per kernel context for a `timer --context` step: KLATENCY beside LATENCY),
//! as text, Markdown or CSV through the one table renderer.

use super::compare::{cell, TableFormat};
use super::describe::{levels, LEVELS};
use super::table::{self, Align, Col};
use super::Loaded;
use crate::result::model::{Column, Get, Source};
use crate::result::Benchmark;

/// One board: its name and its steps' results (`None`: the step has no usable result).
#[derive(Debug)]
pub struct BoardResults {
    pub label: String,
    pub steps: Vec<(String, Option<Loaded>)>,
}

/// The columns of a step in the by-board table, by their CSV names among the
/// benchmark's compare columns.
fn wanted(b: Benchmark) -> &'static [&'static str] {
    match b {
        Benchmark::Cruncher => &["ideal_us", "stretch"],
        Benchmark::Switch => &["min_us", "avg_us", "max_us", "lost"],
        Benchmark::Timer => &["min_us", "avg_us", "max_us", "overruns", "duration_s"],
        Benchmark::Net => &["rtt_min_us", "rtt_avg_us", "rtt_max_us", "lost"],
        Benchmark::Irq => &["irq_max_us", "user_max_us", "roundtrip_max_us", "missed"],
        Benchmark::Noise => &["max_us", "stolen_us", "noise_gaps"],
        Benchmark::Watch => &["avg_us", "max_us", "p99_us", "duration_s"],
    }
}

fn columns(b: Benchmark) -> Vec<Column> {
    let want = wanted(b);
    b.compare_columns()
        .iter()
        .filter(|c| want.contains(&c.csv))
        .copied()
        .collect()
}

/// How a column is headed: the test time under its published name.
fn head(c: &Column) -> &'static str {
    if c.csv == "duration_s" {
        "test time"
    } else {
        c.head
    }
}

/// A group of columns: a step, and for a step of kernel contexts one of its
/// levels (`irq`, `thread`, `user`), each a group of its own.
struct Group {
    step: String,
    bench: Option<Benchmark>,
    level: Option<&'static str>,
}

impl Group {
    /// Its name in headings: `step`, or `step irq` (`step_irq` in CSV).
    fn name(&self, csv: bool) -> String {
        match self.level {
            Some(l) if csv => format!("{}_{l}", self.step),
            Some(l) => format!("{} {l}", self.step),
            None => self.step.clone(),
        }
    }

    /// Its columns: the benchmark's, read from the level's series when it has one.
    fn columns(&self) -> Vec<Column> {
        let mut cs = self.bench.map(columns).unwrap_or_default();
        if let Some(level) = self.level {
            for c in &mut cs {
                if let Get::Of(Source::Main, f) = c.get {
                    c.get = Get::Of(Source::Level(level), f);
                }
            }
        }
        cs
    }
}

/// The steps of every board, each once, in the order they first appear, with
/// the benchmark of the first result found for it; a step whose results have
/// kernel-context levels (`timer --context`, rtla imports) gives a group per
/// level any board has, from the interrupt up.
fn groups_of(boards: &[BoardResults]) -> Vec<Group> {
    let mut steps: Vec<(String, Option<Benchmark>, Vec<&'static str>)> = Vec::new();
    for b in boards {
        for (name, l) in &b.steps {
            let bench = l.as_ref().map(|l| l.result.benchmark);
            let levels = l.as_ref().map(|l| levels(&l.result)).unwrap_or_default();
            match steps.iter_mut().find(|(n, _, _)| n == name) {
                Some((_, known, ls)) => {
                    *known = known.or(bench);
                    ls.extend(levels);
                }
                None => steps.push((name.clone(), bench, levels)),
            }
        }
    }
    let mut groups = Vec::new();
    for (step, bench, ls) in steps {
        if ls.is_empty() {
            groups.push(Group {
                step,
                bench,
                level: None,
            });
            continue;
        }
        for level in LEVELS {
            if ls.contains(&level) {
                groups.push(Group {
                    step: step.clone(),
                    bench,
                    level: Some(level),
                });
            }
        }
    }
    groups
}

/// The header and one row per board.
fn rows(boards: &[BoardResults], format: TableFormat) -> Vec<Vec<String>> {
    let csv = format == TableFormat::Csv;
    let missing = if csv { String::new() } else { "-".into() };
    let groups: Vec<(Group, Vec<Column>)> = groups_of(boards)
        .into_iter()
        .map(|g| {
            let cs = g.columns();
            (g, cs)
        })
        .collect();
    let mut header = vec!["board".to_string()];
    for (g, cs) in &groups {
        for c in cs {
            let name = g.name(false);
            header.push(if csv {
                format!("{}_{}", g.name(true), c.csv)
            } else if head(c).starts_with(&format!("{name} ")) {
                // `noise gaps` of the step `noise`, not `noise noise gaps`.
                head(c).to_string()
            } else {
                format!("{name} {}", head(c))
            });
        }
    }
    let mut out = vec![header];
    for b in boards {
        let mut row = vec![b.label.clone()];
        for (g, cs) in &groups {
            let l = b
                .steps
                .iter()
                .find(|(n, _)| *n == g.step)
                .and_then(|(_, l)| l.as_ref())
                .filter(|l| Some(l.result.benchmark) == g.bench);
            for c in cs {
                row.push(
                    l.and_then(|l| cell(l, c.get, csv))
                        .unwrap_or_else(|| missing.clone()),
                );
            }
        }
        out.push(row);
    }
    out
}

/// The header and one row per board, as text shows them.
pub fn rows_of(boards: &[BoardResults]) -> Vec<Vec<String>> {
    rows(boards, TableFormat::Text)
}

/// The by-board table in `format`; text and Markdown say the units.
pub fn table(boards: &[BoardResults], format: TableFormat) -> String {
    let rows = rows(boards, format);
    let aligns: Vec<Align> = (0..rows[0].len())
        .map(|c| if c == 0 { Align::Left } else { Align::Right })
        .collect();
    let note = "latencies and computation times in us, test time in s";
    match format {
        TableFormat::Csv => table::csv(&rows),
        TableFormat::Markdown => format!("{}\n{note}\n", table::markdown(&aligns, &rows)),
        TableFormat::Text => {
            let cols: Vec<Col> = aligns
                .iter()
                .map(|a| match a {
                    Align::Left => Col::left(),
                    Align::Right => Col::right(),
                })
                .collect();
            format!("{note}\n{}", table::text(&cols, &rows))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_wanted_column_exists() {
        for b in Benchmark::ALL {
            assert_eq!(columns(b).len(), wanted(b).len(), "{b}");
        }
    }

    #[test]
    fn a_step_of_kernel_contexts_has_a_group_per_level_over_every_cpu() {
        let k = crate::render::testdata::timer_contexts();
        let plain = crate::render::testdata::timer_many();
        let loaded = |r| Some(Loaded::new("r.json".into(), r));
        let boards = [
            BoardResults {
                label: "k".into(),
                steps: vec![("klat".into(), loaded(k.clone()))],
            },
            BoardResults {
                label: "plain".into(),
                steps: vec![("klat".into(), loaded(plain))],
            },
        ];
        let t = table(&boards, TableFormat::Csv);
        let lines: Vec<Vec<&str>> = t.lines().map(|l| l.split(',').collect()).collect();
        let head = &lines[0];
        let at = |name: &str| head.iter().position(|h| *h == name).unwrap();
        for level in ["irq", "thread"] {
            let of = |cpu: usize| {
                let name = format!("cpu{cpu}/{level}");
                k.threads
                    .iter()
                    .find(|t| t.name == name)
                    .unwrap()
                    .summary
                    .clone()
            };
            let (a, b) = (of(0), of(1));
            let us = |ns: i64| format!("{:.3}", ns as f64 / 1e3);
            let row = &lines[1];
            assert_eq!(
                row[at(&format!("klat_{level}_min_us"))],
                us(a.min_ns.min(b.min_ns))
            );
            assert_eq!(
                row[at(&format!("klat_{level}_max_us"))],
                us(a.max_ns.max(b.max_ns))
            );
            let avg = (a.avg_ns as f64 * a.samples as f64 + b.avg_ns as f64 * b.samples as f64)
                / (a.samples + b.samples) as f64;
            assert_eq!(
                row[at(&format!("klat_{level}_avg_us"))],
                us(avg.round() as i64)
            );
            // A plain timer result has no levels: its cells are empty.
            assert_eq!(lines[2][at(&format!("klat_{level}_max_us"))], "");
        }
        assert!(!head.iter().any(|h| h.starts_with("klat_user")), "{t}");
        assert!(!head.contains(&"klat_min_us"), "{t}");
    }

    #[test]
    fn a_column_named_after_its_step_is_not_said_twice() {
        let mut r = crate::render::testdata::timer_many();
        r.benchmark = Benchmark::Noise;
        let boards = [BoardResults {
            label: "vm".into(),
            steps: vec![("noise".into(), Some(Loaded::new("r.json".into(), r)))],
        }];
        let t = table(&boards, TableFormat::Markdown);
        let head = t.lines().next().unwrap();
        assert!(head.contains("| noise gaps |"), "{t}");
        assert!(head.contains("| noise max |"), "{t}");
        assert!(!head.contains("noise noise"), "{t}");
    }

    #[test]
    fn a_board_without_a_step_shows_dashes() {
        let boards = [
            BoardResults {
                label: "a".into(),
                steps: vec![("x".into(), None)],
            },
            BoardResults {
                label: "b".into(),
                steps: vec![],
            },
        ];
        let t = table(&boards, TableFormat::Csv);
        assert_eq!(t, "board\na\nb\n");
    }
}
