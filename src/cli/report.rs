//! `rtlat report`: the text summary, SVG plots and an HTML page of result files.

use crate::error::Error;
use crate::render::ReportConfig;
use std::path::PathBuf;

const REPORT_EXAMPLES: &str = "\
Examples:
  rtlat report r.json                               the text summary
  rtlat report r.json --svg r.svg                   histogram, latency over time, percentiles
  rtlat report idle.json load.json --html report.html
                                                    one self-contained HTML page (no network)";

#[derive(Debug, clap::Args)]
#[command(after_help = REPORT_EXAMPLES)]
pub struct ReportArgs {
    /// Result files (from --json of a benchmark, or from rtlat import)
    #[arg(required = true, value_name = "RESULT.json")]
    pub results: Vec<PathBuf>,
    /// Write the plots as one SVG file: latency histogram (log count axis), latency over time, latency by percentile
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write one self-contained HTML report: system, config, loads, summaries, every plot and the result data
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Do not print the text summary
    #[arg(long, short)]
    pub quiet: bool,
}

impl TryFrom<&ReportArgs> for ReportConfig {
    type Error = Error;
    fn try_from(a: &ReportArgs) -> Result<Self, Error> {
        Ok(ReportConfig {
            results: a.results.clone(),
            svg: a.svg.clone(),
            html: a.html.clone(),
            quiet: a.quiet,
        })
    }
}
