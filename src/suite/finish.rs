//! What a suite leaves besides its results: `report.html` (the steps and
//! every result named by its step) and `summary.md` (the by-board table and
//! the steps);
//! and suite directories read back as boards for `compare --by-board`.

use super::manifest::{Manifest, StepStatus, FILE};
use crate::error::{Error, Result};
use crate::render::boards::{self, BoardResults};
use crate::render::compare::TableFormat;
use crate::render::html::{self, Entry};
use crate::render::svg::escape;
use crate::render::{write_output, Loaded};
use std::fmt::Write;
use std::path::{Path, PathBuf};

pub const REPORT: &str = "report.html";
pub const SUMMARY: &str = "summary.md";

/// The board of a suite directory: its done steps' results, named by the
/// host name the board records (else the manifest's board: the target).
pub fn board_of(dir: &Path, m: &Manifest) -> BoardResults {
    let steps: Vec<(String, Option<Loaded>)> = m
        .steps
        .iter()
        .map(|s| {
            let l = (s.state == StepStatus::Done)
                .then(|| crate::render::load(&dir.join(&s.file)).ok())
                .flatten();
            (s.step.name.clone(), l)
        })
        .collect();
    let label = system_of(m, &steps)
        .and_then(|s| s.hostname.as_deref())
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(crate::render::printable::printable_string)
        .unwrap_or_else(|| m.board.clone());
    BoardResults { label, steps }
}

/// The system a suite ran on: the manifest's, else its first result's.
fn system_of<'a>(
    m: &'a Manifest,
    steps: &'a [(String, Option<Loaded>)],
) -> Option<&'a crate::sysinfo::SystemInfo> {
    m.system.as_ref().or_else(|| {
        steps
            .iter()
            .find_map(|(_, l)| l.as_ref().map(|l| &l.result.system))
    })
}

/// The suite directories under `dir`: itself when it holds a manifest, else
/// its subdirectories that do (a run over several targets), by name.
pub fn suite_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    if dir.join(FILE).is_file() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let entries = std::fs::read_dir(dir).map_err(|e| {
        Error::usage(format!(
            "cannot read {}: {e}; give a directory written by rtlat suite --out (with its {FILE})",
            dir.display()
        ))
        .because(e)
    })?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join(FILE).is_file())
        .collect();
    dirs.sort();
    if dirs.is_empty() {
        return Err(Error::usage(format!(
            "{} holds no {FILE}; give a directory written by rtlat suite --out",
            dir.display()
        )));
    }
    Ok(dirs)
}

/// Every board of `dirs` (each a suite directory or a directory of them),
/// named by host name; boards that share one are told apart by
/// architecture, board model, kernel, and at last their directory's name.
pub fn boards_of(dirs: &[PathBuf]) -> Result<Vec<BoardResults>> {
    let mut boards = Vec::new();
    let mut parts = Vec::new();
    for d in dirs {
        for sd in suite_dirs(d)? {
            let m = Manifest::read(&sd)?;
            let b = board_of(&sd, &m);
            let sys = system_of(&m, &b.steps);
            let field = |f: fn(&crate::sysinfo::SystemInfo) -> Option<&str>| {
                sys.and_then(f)
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .map(crate::render::printable::printable_string)
            };
            let dir = sd.file_name().map(|n| {
                format!(
                    "[{}]",
                    crate::render::printable::printable_string(&n.to_string_lossy())
                )
            });
            parts.push(vec![
                Some(b.label.clone()),
                field(|s| s.machine.as_deref()),
                field(crate::sysinfo::SystemInfo::board_model).map(|m| format!("({m})")),
                field(|s| s.kernel_release.as_deref()),
                dir,
            ]);
            boards.push(b);
        }
    }
    let names = crate::render::names::distinct(&parts, &[0], &[1, 2, 3, 4]);
    for (b, name) in boards.iter_mut().zip(names) {
        b.label = name;
    }
    Ok(boards)
}

/// The steps as rows: name, command, state (with its reason), and the
/// result file of those that left one.
fn steps_rows(m: &Manifest) -> Vec<Vec<String>> {
    let mut rows = vec![vec![
        "step".to_string(),
        "bench".into(),
        "duration".into(),
        "load".into(),
        "state".into(),
        "result".into(),
    ]];
    for s in &m.steps {
        let state = match (&s.state, &s.message) {
            (StepStatus::Failed, Some(why)) => format!("failed: {why}"),
            (StepStatus::Skipped, Some(why)) => format!("skipped: {why}"),
            (StepStatus::Interrupted, _) => "interrupted".into(),
            (st, _) => serde_json::to_value(st)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
        };
        let kept = matches!(s.state, StepStatus::Done | StepStatus::Interrupted);
        rows.push(vec![
            s.step.name.clone(),
            s.step.bench.clone(),
            s.step.duration.clone(),
            s.step.load.clone().unwrap_or_else(|| "none".into()),
            state,
            if kept { s.file.clone() } else { "-".into() },
        ]);
    }
    rows
}

/// `summary.md` of boards (one or many) with their manifests, in the same order.
pub fn summary(title: &str, boards: &[BoardResults], manifests: &[&Manifest]) -> String {
    let mut o = format!("# {title}\n\n");
    o.push_str(&boards::table(boards, TableFormat::Markdown));
    for (b, m) in boards.iter().zip(manifests) {
        let steps = crate::render::table::markdown(&[], &steps_rows(m));
        let _ = write!(o, "\n## {}: steps\n\n{steps}", b.label);
    }
    o
}

/// `report.html` of boards with their manifests, in the same order: the
/// by-board table when there are several, the summary of the results, each
/// board's steps (skipped and failed ones with their reason), then every
/// result, named by its step (and board).
pub fn report(title: &str, boards: &[BoardResults], manifests: &[&Manifest]) -> String {
    let (mut first, mut steps) = (String::new(), String::new());
    let many = boards.len() > 1;
    if many {
        let _ = writeln!(first, "<h2>Boards</h2>");
        html::table(&mut first, 1, &boards::rows_of(boards));
        let _ = writeln!(
            first,
            "<p>Latencies and computation times in µs, test time in s.</p>"
        );
    }
    for (b, m) in boards.iter().zip(manifests) {
        let rows = steps_rows(m);
        let _ = writeln!(steps, "<h2>{}: steps</h2>", escape(&b.label));
        html::table(&mut steps, rows[0].len(), &rows);
    }
    let entries: Vec<Entry> = boards
        .iter()
        .flat_map(|b| {
            b.steps.iter().filter_map(move |(step, l)| {
                l.as_ref().map(|loaded| Entry {
                    name: if many {
                        format!("{}: {step}", b.label)
                    } else {
                        step.clone()
                    },
                    loaded,
                })
            })
        })
        .collect();
    html::page(title, [&first, &steps], &entries)
}

/// Write `report.html` and `summary.md` of the suite in `dir`.
pub fn write(dir: &Path, m: &Manifest) -> Result<()> {
    let board = board_of(dir, m);
    let title = format!("rtlat suite '{}' on {}", m.suite, board.label);
    let boards = std::slice::from_ref(&board);
    write_output(&dir.join(REPORT), report(&title, boards, &[m]).as_bytes())?;
    let text = summary(&title, boards, &[m]);
    write_output(&dir.join(SUMMARY), text.as_bytes())
}
