//! What people read: every renderer of results, and `rtlat report`.
//!
//! - [`text`]: the run's start line and summary, the text report of a result;
//! - [`table`]: the one table renderer (text with alignment per column,
//!   Markdown, CSV) under every table;
//! - [`svg`]: a small deterministic SVG writer ([`svg::writer`]) and the
//!   plots ([`svg::plots`]: histogram with a log count axis, latency over
//!   time, latency by percentile);
//! - [`html`]: one self-contained HTML report (inline SVG, embedded data);
//! - [`compare`]: one row per result as text, Markdown or CSV, and the
//!   regression check against a baseline;
//! - [`loaded`]: result files read and checked, [`describe`]: the phrases
//!   every renderer shares.
//!
//! Each output is a [`Render`]: a set of results in, a document out. What a
//! benchmark's figures mean comes from [`crate::result::Benchmark`], never
//! from matching its name. Everything here reads files that may come from
//! anywhere: every reader checks what it uses and fails with one line
//! (exit 2), never a panic.

pub mod compare;
pub mod describe;
pub mod html;
pub mod loaded;
pub mod svg;
pub mod table;
pub mod text;

#[cfg(test)]
mod testdata;
#[cfg(test)]
mod tests;

pub use loaded::{check, label_of, load, load_all, one_line, Loaded, MAX_RESULT_BYTES};

use crate::error::{Outcome, Result};
use crate::result::Benchmark;
use std::path::{Path, PathBuf};

/// A renderer: results in, one document out (text, Markdown, CSV, SVG, HTML).
pub trait Render {
    fn render(&self, results: &[&Loaded]) -> String;
}

/// The benchmarks of `results`, each once, in the order they first appear.
pub fn benchmarks_of(results: &[&Loaded]) -> Vec<Benchmark> {
    let mut benches: Vec<Benchmark> = Vec::new();
    for l in results {
        if !benches.contains(&l.result.benchmark) {
            benches.push(l.result.benchmark);
        }
    }
    benches
}

/// Write an output file (see [`crate::outfile`]); failures exit 4.
pub fn write_output(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::outfile::write(path, bytes).map_err(|e| crate::outfile::write_error(path, e))
}

/// A validated `rtlat report` command.
#[derive(Debug, Clone)]
pub struct ReportConfig {
    pub results: Vec<PathBuf>,
    /// Where to write the plots as one SVG document.
    pub svg: Option<PathBuf>,
    /// Where to write the self-contained HTML report.
    pub html: Option<PathBuf>,
    /// No text summary on stdout.
    pub quiet: bool,
}

/// `rtlat report`: the SVG and HTML files asked for, then the text reports.
pub fn run_report(cfg: &ReportConfig) -> Result<Outcome> {
    for path in [&cfg.svg, &cfg.html].into_iter().flatten() {
        crate::outfile::checked(path)?;
    }
    let loaded = load_all(&cfg.results)?;
    let results: Vec<&Loaded> = loaded.iter().collect();
    let files: [(&Option<PathBuf>, &dyn Render); 2] =
        [(&cfg.svg, &svg::SvgReport), (&cfg.html, &html::HtmlReport)];
    for (path, renderer) in files {
        if let Some(path) = path {
            write_output(path, renderer.render(&results).as_bytes())?;
        }
    }
    if !cfg.quiet {
        crate::outfile::print(&text::TextReport.render(&results));
    }
    Ok(Outcome::Success)
}
