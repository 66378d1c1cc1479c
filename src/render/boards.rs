//! `rtlat compare --by-board`: one row per board, a group of columns per
//! suite step — the layout of the published comparisons (CRUNCHER ideal and
//! stretch; SWITCH min/avg/max/lost; timer min/avg/max/overruns/test time),
//! as text, Markdown or CSV through the one table renderer.

use super::compare::{cell, TableFormat};
use super::table::{self, Align, Col};
use super::Loaded;
use crate::result::model::Column;
use crate::result::Benchmark;

/// One board: its name and its steps' results (`None`: the step has no usable result).
#[derive(Debug)]
pub struct Board {
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

/// The steps of every board, each once, in the order they first appear, with
/// the benchmark of the first result found for it.
fn steps_of(boards: &[Board]) -> Vec<(String, Option<Benchmark>)> {
    let mut steps: Vec<(String, Option<Benchmark>)> = Vec::new();
    for b in boards {
        for (name, l) in &b.steps {
            let bench = l.as_ref().map(|l| l.result.benchmark);
            match steps.iter_mut().find(|(n, _)| n == name) {
                Some((_, known)) => *known = known.or(bench),
                None => steps.push((name.clone(), bench)),
            }
        }
    }
    steps
}

/// The header and one row per board.
fn rows(boards: &[Board], format: TableFormat) -> Vec<Vec<String>> {
    let csv = format == TableFormat::Csv;
    let missing = if csv { String::new() } else { "-".into() };
    let steps = steps_of(boards);
    let cols: Vec<(String, Vec<Column>)> = steps
        .iter()
        .map(|(n, b)| (n.clone(), b.map(columns).unwrap_or_default()))
        .collect();
    let mut header = vec!["board".to_string()];
    for (step, cs) in &cols {
        for c in cs {
            header.push(if csv {
                format!("{step}_{}", c.csv)
            } else {
                format!("{step} {}", head(c))
            });
        }
    }
    let mut out = vec![header];
    for b in boards {
        let mut row = vec![b.label.clone()];
        for (step, cs) in &cols {
            let l = b
                .steps
                .iter()
                .find(|(n, _)| n == step)
                .and_then(|(_, l)| l.as_ref());
            for c in cs {
                let v = l
                    .filter(|l| columns(l.result.benchmark).contains(c))
                    .and_then(|l| cell(l, c.get, csv));
                row.push(v.unwrap_or_else(|| missing.clone()));
            }
        }
        out.push(row);
    }
    out
}

/// The by-board table in `format`; text and Markdown say the units.
pub fn table(boards: &[Board], format: TableFormat) -> String {
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
    fn a_board_without_a_step_shows_dashes() {
        let boards = [
            Board {
                label: "a".into(),
                steps: vec![("x".into(), None)],
            },
            Board {
                label: "b".into(),
                steps: vec![],
            },
        ];
        let t = table(&boards, TableFormat::Csv);
        assert_eq!(t, "board\na\nb\n");
    }
}
