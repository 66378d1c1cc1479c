//! `rtlat compare`: result files side by side, and the regression check.

use crate::error::Error;
use crate::render::compare::{CompareConfig, Metric, TableFormat};
use crate::suite::BoardsConfig;
use std::path::PathBuf;

const COMPARE_EXAMPLES: &str = "\
One row per result; the label is the run's --label, else hostname + kernel release
(and architecture, board model or file name where results would share a label).
Columns follow the benchmark: timer min/avg/max/p99/p99.99/overruns/duration;
switch min/avg/max/lost; net rtt/tx/rx; irq irq/user/round trip; cruncher
ideal/max/stretch; noise min/avg/max/p99.99 gap, stolen, noise gaps. Latencies in us.

Examples:
  rtlat compare a.json b.json c.json
  rtlat compare *.json --format markdown > table.md
  rtlat compare new.json --baseline old.json --fail-if-worse 10%        exit 1 if max got >10% worse
  rtlat compare new.json --baseline old.json --fail-if-worse 5% --metric p99.99
  rtlat compare a.json b.json --svg overlay.svg                         histograms overlaid
  rtlat compare --by-board board-a board-b --format markdown            suite directories, a row per board";

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareFormatArg {
    /// Aligned columns for a terminal
    Text,
    /// A GitHub-flavoured Markdown table
    Markdown,
    /// Comma-separated values with a header line (latencies in us)
    Csv,
}

impl From<CompareFormatArg> for TableFormat {
    fn from(f: CompareFormatArg) -> TableFormat {
        match f {
            CompareFormatArg::Text => TableFormat::Text,
            CompareFormatArg::Markdown => TableFormat::Markdown,
            CompareFormatArg::Csv => TableFormat::Csv,
        }
    }
}

#[derive(Debug, clap::Args)]
#[command(after_help = COMPARE_EXAMPLES)]
pub struct CompareArgs {
    /// Result files, one row each
    #[arg(required = true, value_name = "RESULT.json")]
    pub results: Vec<PathBuf>,
    /// Table format
    #[arg(long, value_enum, default_value = "text")]
    pub format: CompareFormatArg,
    /// A reference result: shown first, and the others are checked against it
    #[arg(long, value_name = "RESULT.json")]
    pub baseline: Option<PathBuf>,
    /// Exit 1 if --metric of any result is worse than the baseline's by more than PERCENT (e.g. 10%)
    #[arg(long, value_name = "PERCENT", requires = "baseline", value_parser = parse_margin)]
    pub fail_if_worse: Option<f64>,
    /// The metric --baseline compares: min, avg, max, stddev, p50 … p99.9999, overruns, lost, stretch
    #[arg(long, default_value = "max", value_parser = Metric::parse)]
    pub metric: Metric,
    /// Write the results' histograms overlaid (and their percentile curves) as SVG
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// The arguments are suite directories (rtlat suite --out): one row per board, columns per step
    #[arg(long, conflicts_with_all = ["baseline", "svg"])]
    pub by_board: bool,
}

/// `10%`, `10` or `2.5%` as a percentage.
pub fn parse_margin(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let num = t.strip_suffix('%').unwrap_or(t).trim();
    match crate::units::parse_decimal(num) {
        Some(v) if v >= 0.0 => Ok(v),
        _ => Err(format!(
            "'{s}' is not a margin; give a percentage such as 10%"
        )),
    }
}

impl TryFrom<&CompareArgs> for CompareConfig {
    type Error = Error;
    fn try_from(a: &CompareArgs) -> Result<Self, Error> {
        Ok(CompareConfig {
            results: a.results.clone(),
            format: a.format.into(),
            baseline: a.baseline.clone(),
            fail_if_worse: a.fail_if_worse,
            metric: a.metric.clone(),
            svg: a.svg.clone(),
        })
    }
}

impl TryFrom<&CompareArgs> for BoardsConfig {
    type Error = Error;
    fn try_from(a: &CompareArgs) -> Result<Self, Error> {
        Ok(BoardsConfig {
            dirs: a.results.clone(),
            format: a.format.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn margins() {
        crate::units::check_parses(parse_margin, &[("10%", 10.0), ("2.5", 2.5)]);
        crate::units::check_refuses(parse_margin, &["-1%", "ten", "nan"]);
    }
}
