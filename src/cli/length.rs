//! `--duration` and `--loops`: when a benchmark run ends. One option group,
//! flattened into each benchmark's options; each names what a loop counts
//! with `mut_arg("loops", …)` on its own struct.

use super::common::positive_duration;
use clap::Args;

#[derive(Debug, Args)]
pub struct RunLength {
    /// Stop after this long (e.g. 10s, 5m, 2h) [default: until interrupted]
    #[arg(long, short, allow_hyphen_values = true, value_parser = positive_duration, conflicts_with = "loops")]
    pub duration: Option<u64>,
    /// Stop after N samples per thread
    #[arg(long, short, value_parser = clap::value_parser!(u64).range(1..))]
    pub loops: Option<u64>,
}
