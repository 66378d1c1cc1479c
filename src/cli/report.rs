//! `rtlat report`: the text summary, SVG plots and an HTML page of result files.

use crate::error::Error;
use crate::render::{ReportConfig, ReportFormat};
use std::path::PathBuf;

const REPORT_EXAMPLES: &str = "\
Examples:
  rtlat report r.json                               the text summary
  rtlat report r.json --svg r.svg                   histogram, latency over time, percentiles
  rtlat report idle.json load.json --html report.html
                                                    one self-contained HTML page (no network)
  rtlat report r.json --format lava > cases.sh      LAVA test cases (run in LAVA's test shell)
  rtlat report r.json --bound 200us --within 24h    the tail forecast against a bound over a day";

/// What `rtlat report` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormatArg {
    /// The text summary
    Text,
    #[value(hide = super::NO_HOST_TOOLS)]
    /// One `lava-test-case NAME --result pass|fail --measurement VALUE --units us` line per figure; a maximum above the run's --max-latency fails
    Lava,
}

#[derive(Debug, clap::Args)]
#[command(after_help = super::for_this_build(REPORT_EXAMPLES))]
pub struct ReportArgs {
    /// Result files (from --json of a benchmark, or from rtlat import)
    #[arg(required = true, value_name = "RESULT.json")]
    pub results: Vec<PathBuf>,
    /// Write the plots as one SVG file: latency histogram (log count axis), latency over time, latency by percentile
    #[arg(long, value_name = "FILE", hide = super::NO_HOST_TOOLS)]
    pub svg: Option<PathBuf>,
    /// Write one self-contained HTML report: system, config, loads, summaries, every plot and the result data
    #[arg(long, value_name = "FILE", hide = super::NO_HOST_TOOLS)]
    pub html: Option<PathBuf>,
    /// Do not print the text summary
    #[arg(long, short)]
    pub quiet: bool,
    /// What to print on stdout
    #[arg(long, value_enum, default_value = "text")]
    pub format: ReportFormatArg,
    #[command(flatten)]
    pub forecast: crate::cli::common::ForecastArgs,
}

impl TryFrom<&ReportArgs> for ReportConfig {
    type Error = Error;
    fn try_from(a: &ReportArgs) -> Result<Self, Error> {
        if let (Some(svg), Some(html)) = (&a.svg, &a.html) {
            crate::outfile::refuse_same_output(&[("--svg", svg), ("--html", html)])?;
        }
        super::common::refuse_forecast(a.forecast.given())?;
        Ok(ReportConfig {
            results: a.results.clone(),
            svg: a.svg.clone(),
            html: a.html.clone(),
            quiet: a.quiet,
            forecast: a.forecast.settings(None)?,
            forecast_again: a.forecast.given(),
            format: match a.format {
                ReportFormatArg::Text => ReportFormat::Text,
                ReportFormatArg::Lava => ReportFormat::Lava,
            },
        })
    }
}
