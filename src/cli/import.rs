//! `rtlat import` options, turned into [`ImportConfig`].

use crate::error::Error;
use crate::import::{cyclictest_hist, cyclictest_json, cyclictest_status, cyclictest_verbose};
use crate::import::{jitterdebugger, oslat, rtai, rteval, rtla, rtla_top, sockperf};
use crate::import::{xenomai, ImportConfig, ImportFormat, SourceUnit};
use clap::{Args, ValueEnum};
use std::path::PathBuf;

const IMPORT_EXAMPLES: &str = "\
Formats:
  cyclictest-json   cyclictest --json=FILE (with or without -h N)
  cyclictest-hist   cyclictest -h N -q > FILE (the histogram text on stdout)
  cyclictest-status cyclictest -q > FILE (its T: summary lines), or a log of its live view
  cyclictest-verbose cyclictest -v > FILE (a thread:loop:latency line per sample)
  xenomai           Xenomai latency output (RTT/RTD lines, HSD/HSS with -h/-s, RTS)
  rtla-timerlat     rtla timerlat hist output
  rtla-osnoise      rtla osnoise hist output
  rtla-osnoise-top  rtla osnoise top output (per-CPU totals, no series)
  jitterdebugger    jitterdebugger's results.json
  sockperf          sockperf ping-pong --full-log FILE
  oslat             oslat output (its per-core table)
  rtai              RTAI testsuite latency output (its display's RTD rows)
  rteval            rteval's XML report (summary.xml: cyclictest per core)
Without --from, the format is told from the file's first lines (and said on
stderr); a --from that does not fit names the format that does. Lines before
the output (a shell prompt and the command) are skipped with a note. A cut
histogram is refused; a line log without its closing summary is imported as
an incomplete result.
Imported results record their source in config and notes; their precision is
the tool's (1 us for the histogram tools), kept in rtlat's histogram buckets.

Examples:
  cyclictest -m -p80 -i1000 -t -a -q -h 400 -D 60 --json=ct.json
  rtlat import --from cyclictest-json ct.json -o ct-result.json
  rtlat compare ct-result.json rtlat.json
  ssh board cat latency.log | rtlat import - --load 'hackbench -l 100000' -o xeno.json";

/// The formats `--from` names (each a [`ImportFormat`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportFromArg {
    /// cyclictest --json=FILE
    CyclictestJson,
    /// cyclictest -h N output (histogram text)
    CyclictestHist,
    /// cyclictest status lines: the -q summary or a log of its live view
    CyclictestStatus,
    /// cyclictest -v per-sample output
    CyclictestVerbose,
    /// Xenomai latency output (RTD/RTS/HSD lines)
    Xenomai,
    /// rtla timerlat hist output
    RtlaTimerlat,
    /// rtla osnoise hist output
    RtlaOsnoise,
    /// rtla osnoise top output (per-CPU totals, no series)
    RtlaOsnoiseTop,
    /// jitterdebugger results.json
    Jitterdebugger,
    /// sockperf ping-pong --full-log CSV
    Sockperf,
    /// oslat output (its per-core table)
    Oslat,
    /// RTAI testsuite latency output (its display's RTD rows)
    Rtai,
    /// rteval's XML report (summary.xml: its cyclictest statistics per core)
    Rteval,
}

impl ImportFromArg {
    pub fn format(self) -> &'static ImportFormat {
        match self {
            ImportFromArg::CyclictestJson => &cyclictest_json::FORMAT,
            ImportFromArg::CyclictestHist => &cyclictest_hist::FORMAT,
            ImportFromArg::CyclictestStatus => &cyclictest_status::FORMAT,
            ImportFromArg::CyclictestVerbose => &cyclictest_verbose::FORMAT,
            ImportFromArg::Xenomai => &xenomai::FORMAT,
            ImportFromArg::RtlaTimerlat => &rtla::FORMAT,
            ImportFromArg::RtlaOsnoise => &rtla::FORMAT_OSNOISE,
            ImportFromArg::RtlaOsnoiseTop => &rtla_top::FORMAT,
            ImportFromArg::Jitterdebugger => &jitterdebugger::FORMAT,
            ImportFromArg::Sockperf => &sockperf::FORMAT,
            ImportFromArg::Oslat => &oslat::FORMAT,
            ImportFromArg::Rtai => &rtai::FORMAT,
            ImportFromArg::Rteval => &rteval::FORMAT,
        }
    }
}

#[derive(Debug, Args)]
#[command(after_help = IMPORT_EXAMPLES)]
pub struct ImportArgs {
    /// The format of FILE [default: told from its first lines]
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub from: Option<ImportFromArg>,
    /// The other tool's output ('-': standard input)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The load the run had, as you declare it (recorded as declared, not measured), e.g. "stress-ng --cpu 4"
    #[arg(long, value_name = "TEXT")]
    pub load: Option<String>,
    /// Where to write the rtlat result
    #[arg(long, short, value_name = "RESULT.json")]
    pub output: PathBuf,
    /// A label for this result in reports and comparisons, at most 256 characters [default: the tool, then hostname + kernel (or the file name)]
    #[arg(long, value_parser = super::common::label)]
    pub label: Option<String>,
    /// When the run started, in UTC (2024-01-05T02:00:00Z, or a date): for outputs that do not record it, so that rtlat trend can place them in time
    #[arg(long, value_name = "TIME", value_parser = parse_start)]
    pub start: Option<u64>,
    /// Do not print the report of the imported result
    #[arg(long, short)]
    pub quiet: bool,
    /// The unit of cyclictest's values, which its histogram, status lines and -v output do not print: ns for a run with -N [default: ns when the command line above the output has -N, else us]
    #[arg(long, value_enum, value_name = "UNIT")]
    pub unit: Option<UnitArg>,
}

/// The units `--unit` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UnitArg {
    /// microseconds (cyclictest's default)
    Us,
    /// nanoseconds (cyclictest -N)
    Ns,
}

/// `2024-01-05T02:00:00Z`, `2024-01-05T02:00:00.000Z` or `2024-01-05` as
/// seconds since the Unix epoch.
pub fn parse_start(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let full = if t.len() == 10 {
        format!("{t}T00:00:00Z")
    } else {
        t.to_string()
    };
    crate::import::dates::parse_rfc3339_utc(&full)
        .and_then(|v| u64::try_from(v).ok())
        .ok_or_else(|| {
            format!("'{s}' is not a UTC time; give it as 2024-01-05T02:00:00Z or 2024-01-05")
        })
}

impl TryFrom<&ImportArgs> for ImportConfig {
    type Error = Error;

    fn try_from(a: &ImportArgs) -> Result<Self, Error> {
        // Refused before anything is read: writing would destroy the input.
        crate::outfile::refuse_inputs([a.output.as_path()], [a.file.as_path()])?;
        Ok(ImportConfig {
            format: a.from.map(ImportFromArg::format),
            file: a.file.clone(),
            load: a.load.clone(),
            output: a.output.clone(),
            label: a.label.clone(),
            start: a.start,
            quiet: a.quiet,
            unit: a.unit.map(|u| match u {
                UnitArg::Us => SourceUnit::Us,
                UnitArg::Ns => SourceUnit::Ns,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_times() {
        crate::units::check_parses(
            parse_start,
            &[
                ("2024-01-05T02:00:00Z", 1_704_420_000),
                ("2024-01-05T02:00:00.250Z", 1_704_420_000),
                ("2024-01-05", 1_704_412_800),
            ],
        );
        crate::units::check_refuses(parse_start, &["yesterday", "2024-13-05", "1969-12-31"]);
    }

    #[test]
    fn every_format_has_its_name_on_the_command_line() {
        let args = ImportFromArg::value_variants();
        assert_eq!(args.len(), crate::import::FORMATS.len());
        for a in args {
            let name = a
                .to_possible_value()
                .expect("visible")
                .get_name()
                .to_string();
            assert_eq!(a.format().name, name);
            assert!(crate::import::by_name(&name).is_some());
        }
    }
}
