//! Command-line definitions (clap only). Benchmarks never see these types:
//! each validates them into its own configuration.

use crate::units::parse_duration_ns;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

const ABOUT: &str = "Real-time latency benchmarks for Linux: how late does this machine respond?";

const EXAMPLES: &str = "\
Examples:
  rtlat timer --duration 10s                 timer latency on every CPU, 1 ms period, SCHED_FIFO 80
  rtlat timer --period 100us --cpus 1-3 --json r.json
  rtlat timer --policy other --duration 5s   unprivileged (no real-time scheduling)
  rtlat check                                what on this system helps or hurts real-time work

Exit codes: 0 ok, 1 latency threshold exceeded, 2 bad usage or input,
3 environment refused (privilege, device, kernel feature), 4 results could not be written.";

#[derive(Debug, Parser)]
#[command(name = "rtlat", version, about = ABOUT, after_help = EXAMPLES, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once; boxing buys nothing
pub enum Command {
    /// Wake-up latency of periodic real-time threads, one per CPU (what cyclictest measures)
    #[command(after_help = TIMER_EXAMPLES)]
    Timer(TimerArgs),
    /// Check what on this system helps or hurts real-time measurement
    #[command(after_help = "Example:\n  rtlat check\n  rtlat check --json > check.json")]
    Check(CheckArgs),
    /// Context-switch latency: real-time threads or processes waking each other
    Switch(crate::bench::switch::SwitchArgs),
    /// How much a fixed computation is stretched by interference
    Cruncher(crate::bench::cruncher::CruncherArgs),
    /// UDP latency with the send and receive paths measured apart
    Net(crate::bench::net::NetArgs),
    /// External interrupt latency over GPIO or serial modem lines: loopback, target, host
    Irq(crate::bench::irq::IrqArgs),
    /// Run the load generators on their own
    Load(crate::load::LoadArgs),
    /// Text summary, SVG plots and a self-contained HTML report of result files
    Report(crate::report::ReportArgs),
    /// Compare result files side by side (text, Markdown, CSV); regression checks
    Compare(crate::report::CompareArgs),
    /// Turn other tools' output (cyclictest, Xenomai, rtla, jitterdebugger, sockperf) into a result
    Import(crate::report::ImportArgs),
}

const TIMER_EXAMPLES: &str = "\
Each thread sleeps on an absolute timer (clock_nanosleep, TIMER_ABSTIME) and
records latency = actual wake time - intended wake time. Thread i of n wakes
i*period/n after thread 0, so threads never wake together. A wake-up later
than the next period start is an overrun: the missed periods are counted and
the schedule skips them, staying on the original grid (no drift).

Examples:
  rtlat timer --duration 10s
  rtlat timer --period 200us --cpus 0,2-3 --duration 5m --json r.json
  rtlat timer --loops 100000 --max-latency 100us      exit 1 if any sample exceeds 100 us
  rtlat timer --break-threshold 500us                 stop and mark the kernel trace at the first sample above 500 us
  rtlat timer --policy deadline --period 1ms --dl-runtime 100us";

/// Scheduling policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PolicyArg {
    /// SCHED_FIFO (default)
    Fifo,
    /// SCHED_RR
    Rr,
    /// SCHED_DEADLINE (runtime/deadline/period through sched_setattr)
    Deadline,
    /// SCHED_OTHER: the explicit unprivileged mode
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClockArg {
    Monotonic,
    Realtime,
}

/// Real-time runtime settings shared by every benchmark.
#[derive(Debug, Args)]
pub struct RtArgs {
    /// Scheduling policy of the measuring threads
    #[arg(long, value_enum, default_value = "fifo")]
    pub policy: PolicyArg,
    /// Static priority for fifo/rr, 1-99 [default: 80]
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..=99))]
    pub priority: Option<i32>,
    /// SCHED_DEADLINE runtime budget per period [default: period/10, at least 20us]
    #[arg(long, value_name = "DURATION", value_parser = positive_duration)]
    pub dl_runtime: Option<u64>,
    /// SCHED_DEADLINE relative deadline [default: the period]
    #[arg(long, value_name = "DURATION", value_parser = positive_duration)]
    pub dl_deadline: Option<u64>,
    /// Do not lock memory with mlockall (recorded in the result)
    #[arg(long)]
    pub no_mlock: bool,
    /// Hold /dev/cpu_dma_latency at N µs for the run, or `off` [default: 0, as cyclictest]
    #[arg(long, value_name = "off|N", default_value = "0", value_parser = dma_latency)]
    pub dma_latency: DmaArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaArg {
    Off,
    Us(i32),
}

/// Output and threshold settings shared by every benchmark.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Write the result to FILE (rewritten atomically every few seconds during the run)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// A label for this run in reports and comparisons [default: hostname + kernel]
    #[arg(long)]
    pub label: Option<String>,
    /// Print only the final summary
    #[arg(long, short)]
    pub quiet: bool,
    /// Interval of live output and of the over-time series
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = positive_duration)]
    pub interval: u64,
    /// How often the result file is rewritten during the run
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = positive_duration)]
    pub save_every: u64,
    /// Exit 1 if any latency exceeds DURATION (results are written first)
    #[arg(long, value_name = "DURATION", value_parser = positive_duration)]
    pub max_latency: Option<u64>,
}

#[derive(Debug, Args)]
pub struct TimerArgs {
    /// CPUs to measure, e.g. `0,2-3`, or `all`
    #[arg(long, default_value = "all")]
    pub cpus: String,
    /// Period of every thread (ns, us, ms, s)
    #[arg(long, short, default_value = "1ms", allow_hyphen_values = true, value_parser = positive_duration)]
    pub period: u64,
    /// Clock for the absolute sleeps and timestamps
    #[arg(long, value_enum, default_value = "monotonic")]
    pub clock: ClockArg,
    /// Stop after this long (e.g. 10s, 5m, 2h) [default: until interrupted]
    #[arg(long, short, allow_hyphen_values = true, value_parser = positive_duration, conflicts_with = "loops")]
    pub duration: Option<u64>,
    /// Stop after N samples per thread
    #[arg(long, short, value_parser = clap::value_parser!(u64).range(1..))]
    pub loops: Option<u64>,
    /// Stop at the first sample above DURATION, mark the kernel trace and stop tracing
    #[arg(long, value_name = "DURATION", value_parser = positive_duration)]
    pub break_threshold: Option<u64>,
    /// Deterministic synthetic samples from SEED instead of real sleeps (for tests)
    #[arg(long, hide = true, value_name = "SEED")]
    pub synthetic: Option<u64>,
    #[command(flatten)]
    pub rt: RtArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub load: LoadOpts,
}

/// Loads started beside a benchmark (after the real-time setup, before the
/// first sample) and stopped after the last sample. Shared by every benchmark.
#[derive(Debug, Args, Default, Clone)]
pub struct LoadOpts {
    /// Loads to run during the measurement, e.g. `exec:2,memory:32M,net:4MB/s` (see `rtlat load --help`)
    #[arg(long, value_name = "SPEC")]
    pub load: Option<String>,
    /// CPUs the loads may run on [default: all online CPUs]
    #[arg(long, value_name = "LIST")]
    pub load_cpus: Option<String>,
    /// Where the `net` load sends its UDP traffic [default: rtlat's own loopback sink]
    #[arg(long, value_name = "HOST:PORT")]
    pub load_target: Option<String>,
    /// Measure idle for DURATION first, then start the loads (separate statistics per phase)
    #[arg(long, value_name = "DURATION", value_parser = positive_duration)]
    pub idle_first: Option<u64>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Print the findings as JSON
    #[arg(long)]
    pub json: bool,
}

/// A duration with a unit, greater than zero.
pub fn positive_duration(s: &str) -> Result<u64, String> {
    let ns = parse_duration_ns(s)?;
    if ns == 0 {
        return Err(format!(
            "'{s}' is zero; give a positive duration such as 1ms"
        ));
    }
    Ok(ns)
}

fn dma_latency(s: &str) -> Result<DmaArg, String> {
    if s == "off" {
        return Ok(DmaArg::Off);
    }
    match s.parse::<i32>() {
        Ok(v) if v >= 0 => Ok(DmaArg::Us(v)),
        _ => Err(format!("'{s}' is not 'off' or a latency in µs (0 or more)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }
}
