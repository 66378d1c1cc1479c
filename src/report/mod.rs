//! `rtlat import` until the importers move to `src/import/` (in parallel):
//! what the import code reaches through `super::`/`crate::report::` now lives
//! in [`crate::render`]; these re-exports keep it building in the meantime.
//! After the move this file goes away: the importers use `crate::render::{load,
//! write_output, check, Loaded, text, svg}` directly.

pub mod import;

pub use crate::render::{check, load, svg, text, write_output, Loaded};

use crate::error::{Outcome, Result};
use std::path::PathBuf;

const IMPORT_EXAMPLES: &str = "\
Formats:
  cyclictest-json   cyclictest --json=FILE (with or without -h N)
  cyclictest-hist   cyclictest -h N -q > FILE (the histogram text on stdout)
  xenomai           Xenomai latency output (RTT/RTD lines, HSD/HSS with -h/-s, RTS)
  rtla-timerlat     rtla timerlat hist output
  jitterdebugger    jitterdebugger's results.json
  sockperf          sockperf ping-pong --full-log FILE
Imported results record their source in config and notes; their precision is
the tool's (1 us for the histogram tools), kept in rtlat's histogram buckets.

Examples:
  cyclictest -m -p80 -i1000 -t -a -q -h 400 -D 60 --json=ct.json
  rtlat import --from cyclictest-json ct.json -o ct-result.json
  rtlat compare ct-result.json rtlat.json";

#[derive(Debug, clap::Args)]
#[command(after_help = IMPORT_EXAMPLES)]
pub struct ImportArgs {
    /// The format of FILE
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub from: import::Format,
    /// The other tool's output
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Where to write the rtlat result
    #[arg(long, short, value_name = "RESULT.json")]
    pub output: PathBuf,
    /// A label for this result in reports and comparisons [default: the tool, then hostname + kernel (or the file name)]
    #[arg(long)]
    pub label: Option<String>,
    /// Do not print the report of the imported result
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run_import(args: &ImportArgs) -> Result<Outcome> {
    import::run(args)
}
