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

// The board build (no `host-tools`) keeps the text report only.
#[cfg(feature = "host-tools")]
pub mod boards;
#[cfg(feature = "host-tools")]
pub mod causes;
#[cfg(feature = "host-tools")]
pub mod compare;
pub mod consistent;
pub mod describe;
#[cfg(feature = "host-tools")]
pub mod forecast;
#[cfg(feature = "host-tools")]
pub mod html;
#[cfg(feature = "host-tools")]
pub mod lava;
pub mod loaded;
pub mod printable;
#[cfg(feature = "host-tools")]
pub mod svg;
pub mod table;
pub mod text;

#[cfg(test)]
pub(crate) mod testdata;
#[cfg(all(test, feature = "host-tools"))]
pub(crate) mod tests;

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
    /// What goes to stdout.
    pub format: ReportFormat,
    /// The forecast of series whose file has none ...
    pub forecast: crate::forecast::ForecastSettings,
    /// ... and of every series, when forecast options were given.
    pub forecast_again: bool,
}

/// What `rtlat report` prints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReportFormat {
    /// The text summary.
    #[default]
    Text,
    /// One `lava-test-case` line per figure ([`lava`]).
    Lava,
}

/// `rtlat report`: the SVG and HTML files asked for, then the text reports.
pub fn run_report(cfg: &ReportConfig) -> Result<Outcome> {
    let (files, stdout) = renderers(cfg)?;
    let inputs = cfg.results.iter().map(PathBuf::as_path);
    crate::outfile::refuse_inputs(files.iter().map(|(p, _)| *p), inputs)?;
    // Checked and locked before any work, until the last write.
    let _outputs = files
        .iter()
        .map(|(path, _)| crate::outfile::checked(path))
        .collect::<Result<Vec<_>>>()?;
    let mut loaded = load_all(&cfg.results)?;
    for l in &mut loaded {
        crate::forecast::annotate_missing(&mut l.result, &cfg.forecast, cfg.forecast_again);
    }
    let results: Vec<&Loaded> = loaded.iter().collect();
    for (path, renderer) in files {
        write_output(path, renderer.render(&results).as_bytes())?;
    }
    if !cfg.quiet {
        crate::outfile::print(&stdout.render(&results));
    }
    Ok(Outcome::Success)
}

/// The files `report` writes with their renderers, and what it prints.
type Renderers<'a> = (Vec<(&'a Path, &'static dyn Render)>, &'static dyn Render);

#[cfg(feature = "host-tools")]
fn renderers(cfg: &ReportConfig) -> Result<Renderers<'_>> {
    let files: [(&Option<PathBuf>, &'static dyn Render); 2] =
        [(&cfg.svg, &svg::SvgReport), (&cfg.html, &html::HtmlReport)];
    let files = files
        .into_iter()
        .filter_map(|(p, r)| Some((p.as_deref()?, r)))
        .collect();
    let stdout: &'static dyn Render = match cfg.format {
        ReportFormat::Text => &text::TextReport,
        ReportFormat::Lava => &lava::LavaReport,
    };
    Ok((files, stdout))
}

/// The board build renders text only; anything else is refused before work.
#[cfg(not(feature = "host-tools"))]
fn renderers(cfg: &ReportConfig) -> Result<Renderers<'_>> {
    let asked = [
        (cfg.svg.is_some(), "--svg"),
        (cfg.html.is_some(), "--html"),
        (cfg.format == ReportFormat::Lava, "--format lava"),
    ];
    match asked.into_iter().find(|(on, _)| *on) {
        Some((_, what)) => Err(crate::error::Error::usage(format!(
            "{what} is not in this board build of rtlat (built without the host-tools \
             feature): copy the result file to a machine with the full build and run \
             'rtlat report' there"
        ))),
        None => Ok((Vec::new(), &text::TextReport)),
    }
}
