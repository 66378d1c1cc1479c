//! `rtlat import`: other tools' output turned into rtlat results, so they
//! compare and plot like ours.
//!
//! One file per foreign format, each a [`ImportFormat`]; [`detect`] tells them apart
//! by their first lines when `--from` is not given. Each parser reads its
//! format strictly and fails with the line number and what it expected there;
//! nothing panics on hostile input (every input is bounded: lines at 64 KiB,
//! JSON files at 64 MiB, see [`lines`]). Values the tools print in whole µs
//! become whole-µs ns values in rtlat's log-linear buckets; samples a tool
//! counted beyond its histogram's range are kept (never dropped) at the
//! range's limit, with the exact maximum, and a note says so ([`thread`]).
//!
//! - [`cyclictest_json`] `cyclictest --json`, [`cyclictest_hist`] `cyclictest -h`,
//!   [`cyclictest_status`] its status lines (`-q` summary, live log),
//!   [`cyclictest_verbose`] its `-v` per-sample output,
//!   [`xenomai`] Xenomai `latency`, [`rtla`] `rtla timerlat hist` and `rtla osnoise hist`,
//!   [`rtla_top`] `rtla osnoise top` (per-CPU totals, no series),
//!   [`jitterdebugger`] its `results.json`, [`sockperf`] `sockperf --full-log`,
//!   [`oslat`] oslat's table, [`rtai`] RTAI's testsuite latency display,
//!   [`rteval`] rteval's XML report (its cyclictest statistics per core);
//! - [`json`]: a lenient JSON reader for the tools' hand-printed JSON;
//! - [`xml`]: a small XML reader for rteval's report;
//! - [`imported`]: what a parser found, and how it becomes a [`RunResult`].

pub mod cyclictest_hist;
pub mod cyclictest_json;
pub mod cyclictest_status;
pub mod cyclictest_verbose;
pub mod dates;
pub mod detect;
pub mod imported;
pub mod jitterdebugger;
pub mod json;
pub mod lines;
pub mod oslat;
pub mod rows;
pub mod rtai;
pub mod rteval;
pub mod rtla;
pub mod rtla_top;
pub mod sockperf;
pub mod system;
pub mod thread;
pub mod xenomai;
pub mod xml;

#[cfg(test)]
mod fuzz;

pub use detect::detect;
pub use imported::Imported;
pub use lines::{
    field, found, parse_u64, parse_us, read_bounded, Lines, ParseError, Parsed, SourceUnit,
    MAX_JSON, MAX_LINE,
};
pub use thread::ThreadBuild;

use crate::error::{Error, Outcome, Result};
use crate::render::{load, text, write_output};
use crate::result::RunResult;
use std::io::{BufRead, Read};
use std::path::PathBuf;

/// One foreign format: its names, how to recognise it, how to read it. Each
/// importer declares its own as `FORMAT`.
pub struct ImportFormat {
    /// The name given with `--from` and recorded as `config.imported_from`.
    pub name: &'static str,
    /// The tool's short name, used in default labels.
    pub tool: &'static str,
    /// What the input is, in words.
    pub describe: &'static str,
    /// Whether the input's first lines (`head`, at most [`detect::HEAD`] bytes) look like this format.
    pub detect: fn(head: &str) -> bool,
    /// How it reads the whole input.
    pub read: Reader,
}

/// A format's parser, by how it takes the input.
#[derive(Debug, Clone, Copy)]
pub enum Reader {
    /// Line by line (each line bounded at [`MAX_LINE`]).
    Lines(fn(lines: &mut Input) -> Parsed<Imported>),
    /// The whole input as one text (bounded at [`MAX_JSON`]): the JSON formats.
    Text(fn(text: &str) -> Parsed<Imported>),
}

/// The input of a line-by-line parser.
pub type Input<'a> = Lines<&'a mut dyn BufRead>;

impl Reader {
    /// Read the whole input; `unit`: the values' unit where the format does not say it.
    pub fn read(self, input: &mut dyn BufRead, unit: Option<SourceUnit>) -> Parsed<Imported> {
        match self {
            Reader::Lines(parse) => parse(&mut Lines::new(input).with_unit(unit)),
            Reader::Text(parse) => parse(&read_bounded(input)?),
        }
    }
}

impl std::fmt::Debug for ImportFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The formats whose values have no stated unit (cyclictest's, µs or ns with
/// -N), the ones `--unit` applies to.
pub const UNIT_FORMATS: [&str; 3] = ["cyclictest-hist", "cyclictest-status", "cyclictest-verbose"];

/// Every format, in the order `--from` lists them.
pub static FORMATS: [&ImportFormat; 13] = [
    &cyclictest_json::FORMAT,
    &cyclictest_hist::FORMAT,
    &cyclictest_status::FORMAT,
    &cyclictest_verbose::FORMAT,
    &xenomai::FORMAT,
    &rtla::FORMAT,
    &rtla::FORMAT_OSNOISE,
    &rtla_top::FORMAT,
    &jitterdebugger::FORMAT,
    &sockperf::FORMAT,
    &oslat::FORMAT,
    &rtai::FORMAT,
    &rteval::FORMAT,
];

/// The format called `name` (as `--from` spells it).
pub fn by_name(name: &str) -> Option<&'static ImportFormat> {
    FORMATS.iter().copied().find(|f| f.name == name)
}

/// What `rtlat import` does, as plain configuration.
#[derive(Debug, Clone)]
pub struct ImportConfig {
    /// The input's format; `None`: detected from its first lines.
    pub format: Option<&'static ImportFormat>,
    /// The other tool's output; `-`: standard input.
    pub file: PathBuf,
    /// The load the run had, as declared by the user (not measured).
    pub load: Option<String>,
    /// Where the rtlat result goes.
    pub output: PathBuf,
    pub label: Option<String>,
    /// When the run started (seconds since the epoch), as the user declares it.
    pub start: Option<u64>,
    /// Do not print the report of the imported result.
    pub quiet: bool,
    /// The unit of the values, for the formats that do not say it ([`UNIT_FORMATS`]).
    pub unit: Option<SourceUnit>,
}

/// Parse `input` as `format`. `file` is the name recorded in the result.
pub fn parse(
    format: &ImportFormat,
    input: &mut dyn BufRead,
    file: &str,
    label: Option<String>,
) -> Parsed<RunResult> {
    parse_in(format, input, file, label, None)
}

/// [`parse`] with the values' `unit` where the format does not say it.
pub fn parse_in(
    format: &ImportFormat,
    input: &mut dyn BufRead,
    file: &str,
    label: Option<String>,
    unit: Option<SourceUnit>,
) -> Parsed<RunResult> {
    format
        .read
        .read(input, unit)?
        .into_result(format, file, label)
}

/// A declared load as the result records it: named, not measured.
pub fn declared_load(text: &str) -> serde_json::Value {
    serde_json::json!({
        "name": text,
        "spec": text,
        "declared": true,
        "measured": false,
    })
}

/// The input: a file, or standard input for `-`, bounded at
/// [`crate::input::MAX_INPUT_BYTES`] (a FIFO fed forever ends there).
fn open_input(cfg: &ImportConfig) -> Result<(String, Box<dyn Read>)> {
    let path = &cfg.file;
    if path.as_os_str() == "-" {
        return Ok((
            "stdin".into(),
            Box::new(crate::input::Bounded::new(std::io::stdin())),
        ));
    }
    let meta = std::fs::metadata(path)
        .map_err(|e| Error::usage(format!("cannot read {}: {e}", path.display())).because(e))?;
    if meta.is_dir() {
        let what = cfg.format.map_or("other tool's output", |f| f.describe);
        return Err(Error::usage(format!(
            "{} is a directory; give the {what} file",
            path.display(),
        )));
    }
    let file = std::fs::File::open(path)
        .map_err(|e| Error::usage(format!("cannot read {}: {e}", path.display())).because(e))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok((name, Box::new(crate::input::Bounded::new(file))))
}

/// The format to read the input as: the one given, checked against what the
/// head looks like, or the one detected (said on stderr).
fn choose(cfg: &ImportConfig, shown: &str, head: &[u8]) -> Result<&'static ImportFormat> {
    let detected = detect(&String::from_utf8_lossy(head));
    match (cfg.format, detected) {
        // Outputs of one tool can share their first lines (cyclictest's
        // status lines start its -h output too): its own parser judges.
        (Some(f), Some(d)) if f.name != d.name && f.tool != d.tool => Err(Error::usage(format!(
            "{shown} does not look like {} but like {}: give --from {} (or leave --from out)",
            f.describe, d.describe, d.name
        ))),
        (Some(f), _) => Ok(f),
        (None, Some(d)) => Ok(d),
        (None, None) => {
            let names: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
            Err(Error::usage(format!(
                "{shown}: cannot tell which tool wrote it; give --from FORMAT ({})",
                names.join(", ")
            )))
        }
    }
}

pub fn run(cfg: &ImportConfig) -> Result<Outcome> {
    let dest = crate::outfile::checked(&cfg.output)?;
    let (name, input) = open_input(cfg)?;
    let shown = if name == "stdin" {
        "standard input".to_string()
    } else {
        cfg.file.display().to_string()
    };
    // The head is read once, looked at to tell or check the format, then parsed with the rest.
    let mut head = Vec::new();
    let mut input = std::io::BufReader::with_capacity(1 << 16, input);
    (&mut input)
        .take(detect::HEAD as u64)
        .read_to_end(&mut head)
        .map_err(|e| Error::usage(format!("cannot read {shown}: {e}")).because(e))?;
    let format = choose(cfg, &shown, &head)?;
    if let Some(u) = cfg.unit.filter(|_| !UNIT_FORMATS.contains(&format.name)) {
        return Err(Error::usage(format!(
            "--unit {} applies to cyclictest's histogram, status lines and -v output ({}), whose values carry no unit; {shown} is {}, which states its own",
            u.name(),
            UNIT_FORMATS.join(", "),
            format.describe
        )));
    }
    let mut reader = std::io::BufReader::new(std::io::Cursor::new(head).chain(input));
    let mut result =
        parse_in(format, &mut reader, &name, cfg.label.clone(), cfg.unit).map_err(|e| {
            let what = format.describe;
            if e.line == 0 {
                Error::usage(format!("{shown}: not valid {what}: {}", e.msg))
            } else {
                Error::usage(format!("{shown}:{}: not valid {what}: {}", e.line, e.msg))
            }
        })?;
    if cfg.format.is_none() {
        // Said once the input has read as that format (a refusal names the format itself).
        eprintln!(
            "rtlat import: {shown} read as {} ({})",
            format.name, format.describe
        );
    }
    if let Some(secs) = cfg.start {
        let given = crate::result::rfc3339_utc(secs, 0);
        let was = std::mem::replace(&mut result.start_time_utc, given.clone());
        result.notes.push(if was.is_empty() {
            format!("start time declared at import (--start): {given}")
        } else {
            format!(
                "start time declared at import (--start): {given}, in place of the source's {was}"
            )
        });
    }
    if let Some(load) = &cfg.load {
        result.loads = vec![declared_load(load)];
        result
            .notes
            .push(format!("load declared at import (not measured): {load}"));
    }
    let json = serde_json::to_vec_pretty(&result)
        .map_err(|e| Error::io(format!("cannot encode the result: {e}")).because(e))?;
    write_output(&cfg.output, &json)?;
    // What we wrote must read back like any result (a device or FIFO cannot
    // be read back: the bytes written are read instead).
    let loaded = if dest.takes_rewrites() {
        load(&cfg.output)?
    } else {
        let back = serde_json::from_slice(&json).map_err(|e| {
            Error::io(format!("the imported result does not read back: {e}")).because(e)
        })?;
        crate::render::Loaded::new(cfg.output.clone(), back)
    };
    if !cfg.quiet {
        crate::outfile::print(&text::report(&loaded));
    }
    Ok(Outcome::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        for f in FORMATS {
            assert_eq!(by_name(f.name).map(|g| g.name), Some(f.name));
        }
        let mut names: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FORMATS.len());
        assert!(by_name("gnuplot").is_none());
    }
}
