//! Command-line definitions: every clap type lives under `src/cli/`, one file
//! per subcommand plus the shared option groups ([`common`]). Each converts
//! into the plain configuration of its subcommand; nothing below sees clap.

use clap::{Parser, Subcommand};

pub mod check;
pub mod common;
#[cfg(feature = "host-tools")]
pub mod compare;
pub mod cruncher;
#[cfg(feature = "host-tools")]
pub mod import;
pub mod irq;
pub mod length;
pub mod load;
#[cfg(feature = "host-tools")]
pub mod meta;
pub mod net;
pub mod noise;
#[cfg(feature = "host-tools")]
pub mod report;
#[cfg(feature = "host-tools")]
pub mod suite;
pub mod switch;
pub mod timer;
#[cfg(feature = "host-tools")]
pub mod trend;
pub mod watch;

pub use check::CheckArgs;
pub use common::{positive_duration, DmaArg, LoadOpts, OutputArgs, PolicyArg, RtArgs};
#[cfg(feature = "host-tools")]
pub use compare::CompareArgs;
pub use cruncher::CruncherArgs;
#[cfg(feature = "host-tools")]
pub use import::ImportArgs;
pub use load::LoadArgs;
pub use net::NetArgs;
pub use noise::NoiseArgs;
#[cfg(feature = "host-tools")]
pub use report::ReportArgs;
#[cfg(feature = "host-tools")]
pub use suite::SuiteArgs;
pub use switch::SwitchArgs;
pub use timer::{ClockArg, TimerArgs};
#[cfg(feature = "host-tools")]
pub use trend::TrendArgs;
pub use watch::WatchArgs;

const ABOUT: &str = "Real-time latency benchmarks for Linux: how late does this machine respond?";

const EXAMPLES: &str = "\
Examples:
  rtlat timer --duration 10s                 timer latency on every CPU, 1 ms period, SCHED_FIFO 80
  rtlat timer --period 100us --cpus 1-3 --json r.json
  rtlat timer --policy other --no-mlock --dma-latency off --duration 5s
                                             unprivileged (no real-time scheduling, memory not locked)
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
    #[command(after_help = timer::TIMER_EXAMPLES)]
    Timer(TimerArgs),
    /// Check what on this system helps or hurts real-time measurement
    #[command(after_help = "Example:\n  rtlat check\n  rtlat check --json > check.json")]
    Check(CheckArgs),
    /// Context-switch latency: real-time threads or processes waking each other
    Switch(SwitchArgs),
    /// How much a fixed computation is stretched by interference
    Cruncher(CruncherArgs),
    /// OS noise: how much of a busy CPU is taken away, how often and for how long (what oslat measures)
    Noise(NoiseArgs),
    /// UDP latency with the send and receive paths measured apart
    Net(NetArgs),
    /// External interrupt latency over GPIO or serial modem lines: loopback, target, host
    Irq(irq::IrqArgs),
    /// The latency of real-time threads already running (your application's), from the kernel's trace
    #[command(after_help = watch::WATCH_EXAMPLES)]
    Watch(WatchArgs),
    /// Run the load generators on their own
    Load(LoadArgs),
    /// A battery of runs into one directory (resumable), here or on several boards over ssh
    #[cfg(feature = "host-tools")]
    Suite(SuiteArgs),
    /// Text summary, SVG plots and a self-contained HTML report of result files
    #[cfg(feature = "host-tools")]
    Report(ReportArgs),
    /// Compare result files side by side (text, Markdown, CSV); regression checks
    #[cfg(feature = "host-tools")]
    Compare(CompareArgs),
    /// Latency over time: a table per board, plots, and the runs from which it got worse
    #[cfg(feature = "host-tools")]
    Trend(TrendArgs),
    /// Turn other tools' output (cyclictest, Xenomai, rtla, jitterdebugger, sockperf, oslat, RTAI) into a result
    #[cfg(feature = "host-tools")]
    Import(ImportArgs),
    #[cfg(feature = "host-tools")]
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    #[command(after_help = "Example:\n  rtlat completions bash > /etc/bash_completion.d/rtlat")]
    Completions(meta::CompletionsArgs),
    #[cfg(feature = "host-tools")]
    /// Write the man pages (rtlat.1, rtlat-timer.1, …) into a directory
    #[command(after_help = "Example:\n  rtlat man /usr/local/share/man/man1 && man rtlat-timer")]
    Man(meta::ManArgs),
}

/// The subcommands only the full build has (feature `host-tools`); a board
/// build (`--no-default-features`) names them when asked for one.
pub const HOST_TOOLS: &[&str] = &[
    "suite",
    "report",
    "compare",
    "trend",
    "import",
    "completions",
    "man",
];

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn host_tools_are_exactly_the_subcommands_a_board_build_leaves_out() {
        let cmd = Cli::command();
        for name in HOST_TOOLS {
            let built = cmd.find_subcommand(name).is_some();
            assert_eq!(built, cfg!(feature = "host-tools"), "{name}");
        }
        // The measuring subcommands and `report` are in every build.
        for name in [
            "timer", "check", "switch", "cruncher", "noise", "net", "irq", "watch", "load",
            "report",
        ] {
            assert!(cmd.find_subcommand(name).is_some(), "{name}");
        }
    }
}
