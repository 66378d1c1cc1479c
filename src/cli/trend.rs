//! `rtlat trend`: latency over months, and the runs from which it got worse.

use super::compare::{parse_margin, CompareFormatArg};
use crate::error::Error;
use crate::trend::change::Test;
use crate::trend::runs::BoardFrom;
use crate::trend::TrendConfig;
use std::path::PathBuf;

const TREND_EXAMPLES: &str = "\
Results are grouped by board (the label, else the hostname), benchmark, load and
series, and ordered by their start time. A change is a run from which a series is
worse (or better) beyond its own run-to-run noise: a rank test (Mann-Whitney) over
the runs before and after, on max, p99.9, p99 and p50 (docs/trend.md).

Examples:
  rtlat trend nightly/                                  every result under nightly/
  rtlat trend nightly/ --format markdown > trend.md
  rtlat trend nightly/ --svg trend.svg --html trend.html
  rtlat trend nightly/ --fail-on-regression             exit 1 when a series got worse
  rtlat trend lab/ --board-from system.device_tree_model  boards named by their model
  rtlat trend today/ --by-run --svg runs.svg            runs side by side, not over time";

#[derive(Debug, clap::Args)]
#[command(after_help = TREND_EXAMPLES)]
pub struct TrendArgs {
    /// Result files, suite directories, or directories searched for *.json results
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Table format
    #[arg(long, value_enum, default_value = "text")]
    pub format: CompareFormatArg,
    /// Write max, p99.9, p99 and p50 per run over time as SVG
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write one self-contained HTML page: the tables, the changes and the plots
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// The smallest change named: medians before and after this far apart (e.g. 10%)
    #[arg(long, value_name = "PERCENT", default_value = "10%", value_parser = parse_margin)]
    pub min_change: f64,
    /// Exit 1 when a series got worse
    #[arg(long)]
    pub fail_on_regression: bool,
    /// What names a run's board: label, host (the hostname it records), or a
    /// field of the result file as a dotted path [default: the label, else the host]
    #[arg(long, value_name = "label|host|FIELD", value_parser = BoardFrom::parse)]
    pub board_from: Option<BoardFrom>,
    /// Plot each series' runs by their index in start order, not over time
    #[arg(long)]
    pub by_run: bool,
}

impl TryFrom<&TrendArgs> for TrendConfig {
    type Error = Error;
    fn try_from(a: &TrendArgs) -> Result<Self, Error> {
        Ok(TrendConfig {
            paths: a.paths.clone(),
            format: a.format.into(),
            svg: a.svg.clone(),
            html: a.html.clone(),
            test: Test {
                min_change: a.min_change / 100.0,
                ..Test::default()
            },
            fail_on_regression: a.fail_on_regression,
            board_from: a.board_from.clone().unwrap_or_default(),
            by_run: a.by_run,
        })
    }
}
