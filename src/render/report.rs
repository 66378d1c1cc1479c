//! `rtlat report`: the text summary, SVG plots, an HTML page or LAVA test
//! cases of result files. A workstation's command: the board build prints
//! each run's own summary at its end and leaves reading files to the full
//! build.

use super::{html, lava, load_all, svg, text, write_output, Loaded, Render};
use crate::error::{Outcome, Result};
use std::path::{Path, PathBuf};

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
