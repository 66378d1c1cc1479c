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
#[cfg(feature = "kernel-trace")]
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

/// Each subcommand's options are built only when it is the one parsed
/// (`defer`): building every subcommand's took about 0.5 MB of heap, which
/// a run then held resident under mlockall (the static build's allocator
/// keeps what it once mapped). Help, completions and man pages build all.
/// A deferred build applies the subcommand's `Args` after the variant's
/// own about: an `Args` struct (or one flattened into it) with a doc
/// comment would replace it, so they have none (a test checks).
#[derive(Debug, Subcommand)]
#[command(defer = true)]
#[allow(clippy::large_enum_variant)] // parsed once; boxing buys nothing
pub enum Command {
    /// Wake-up latency of periodic real-time threads, one per CPU (what cyclictest measures)
    #[command(after_help = for_this_build(timer::TIMER_EXAMPLES))]
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
    #[cfg(feature = "kernel-trace")]
    #[command(after_help = watch::WATCH_EXAMPLES)]
    Watch(watch::WatchArgs),
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
    /// Turn other tools' output (cyclictest, Xenomai, rtla, jitterdebugger, sockperf, oslat, RTAI, rteval) into a result
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

/// The options of the measuring subcommands that need the `host-tools`
/// feature (the tail forecast): a build without it keeps them, hidden from
/// its help, to refuse them in one line that names the full build.
pub const HOST_TOOLS_OPTIONS: &[&str] = &[
    "--max-forecast",
    "--exceedance",
    "--bound",
    "--within",
    "--confidence",
    "--spike-threshold",
];

/// The options that read the kernel's trace (feature `kernel-trace`): a
/// build without it keeps them, hidden from its help, to refuse them with
/// exit 3, as a kernel without the tracer is refused.
pub const KERNEL_TRACE_OPTIONS: &[&str] = &[
    "--context",
    "--split",
    "--explain",
    "--explain-worst",
    "--explain-stacks",
    "--osnoise",
    "--hwlat",
];

/// This build has no `host-tools`: its options are hidden (`hide = NO_HOST_TOOLS`).
pub const NO_HOST_TOOLS: bool = !cfg!(feature = "host-tools");

/// This build has no `kernel-trace`: its options are hidden.
pub const NO_KERNEL_TRACE: bool = !cfg!(feature = "kernel-trace");

/// The options this build refuses, which its help does not show.
pub fn left_out() -> impl Iterator<Item = &'static str> {
    let host: &[&str] = if NO_HOST_TOOLS {
        HOST_TOOLS_OPTIONS
    } else {
        &[]
    };
    let trace: &[&str] = if NO_KERNEL_TRACE {
        KERNEL_TRACE_OPTIONS
    } else {
        &[]
    };
    host.iter().chain(trace).copied()
}

/// The words of a help text as options and values are spelt: `--no-split`
/// is one word, `--target-arg=--explain` two.
pub fn help_words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .filter(|w| !w.is_empty())
}

/// A subcommand's text after its options without the example lines that
/// name an option this build leaves out ([`left_out`]), nor the lines that
/// continue them (indented deeper than an example).
pub fn for_this_build(text: &str) -> String {
    let mut out = String::new();
    let mut dropping = false;
    for line in text.lines() {
        let continues = line.starts_with("    ");
        if !(continues && dropping) {
            dropping = line.starts_with("  rtlat ")
                && help_words(line).any(|w| left_out().any(|o| o == w));
        }
        if !dropping {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.truncate(out.trim_end().len());
    out
}

/// The subcommands that read the kernel's trace (feature `kernel-trace`);
/// a board build refuses them as a kernel without the tracer would.
pub const TRACE_TOOLS: &[&str] = &["watch"];

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    /// Every subcommand's about, at every depth, is its variant's, before
    /// and after the deferred build (an `Args` struct's doc comment would
    /// replace it).
    #[test]
    fn a_deferred_build_keeps_each_subcommands_about() {
        fn abouts(cmd: &clap::Command, path: &str, out: &mut Vec<(String, String)>) {
            for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
                let path = format!("{path} {}", sub.get_name());
                let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
                out.push((path.clone(), about));
                abouts(sub, &path, out);
            }
        }
        let (mut before, mut after) = (Vec::new(), Vec::new());
        let cmd = Cli::command();
        abouts(&cmd, "rtlat", &mut before);
        let mut built = cmd.clone();
        built.build();
        abouts(&built, "rtlat", &mut after);
        for (path, about) in &after {
            assert!(!about.is_empty(), "{path} has no about");
            if let Some((_, was)) = before.iter().find(|(p, _)| p == path) {
                assert_eq!(about, was, "{path}");
            }
        }
        assert!(
            after.len() > before.len(),
            "nested subcommands are deferred"
        );
    }

    /// A parse builds only the subcommand it is about (`defer`): the
    /// options of the others are not there.
    #[test]
    fn only_the_parsed_subcommand_is_built() {
        let cmd = Cli::command();
        let timer = cmd.find_subcommand("timer").expect("timer");
        assert_eq!(
            timer.get_arguments().count(),
            0,
            "built before it is parsed"
        );
        let mut built = cmd.clone();
        built.build();
        let timer = built.find_subcommand("timer").expect("timer");
        assert!(timer
            .get_arguments()
            .any(|a| a.get_long() == Some("period")));
        let net = built.find_subcommand("net").expect("net");
        assert!(net.find_subcommand("ping").is_some());
    }

    #[test]
    fn host_tools_are_exactly_the_subcommands_a_board_build_leaves_out() {
        let cmd = Cli::command();
        for name in HOST_TOOLS {
            let built = cmd.find_subcommand(name).is_some();
            assert_eq!(built, cfg!(feature = "host-tools"), "{name}");
        }
        for name in TRACE_TOOLS {
            assert_eq!(cmd.find_subcommand(name).is_some(), crate::KERNEL_TRACE);
        }
        // The measuring subcommands are in every build.
        for name in [
            "timer", "check", "switch", "cruncher", "noise", "net", "irq", "load",
        ] {
            assert!(cmd.find_subcommand(name).is_some(), "{name}");
        }
    }

    /// `rtlat SUB... --help` as a user sees it, for every subcommand.
    fn every_help() -> Vec<(String, String)> {
        fn walk(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<(String, String)>) {
            // (clap's own `help` subcommand, added by the build, has no help of its own.)
            for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
                let mut path = path.clone();
                path.push(sub.get_name().to_string());
                let argv = std::iter::once("rtlat".to_string())
                    .chain(path.iter().cloned())
                    .chain(["--help".to_string()]);
                let help = match Cli::command().try_get_matches_from(argv) {
                    Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => e.to_string(),
                    other => panic!("rtlat {path:?} --help: {other:?}"),
                };
                out.push((path.join(" "), help));
                walk(sub, path, out);
            }
        }
        let mut out = Vec::new();
        let mut cli = Cli::command();
        cli.build(); // the deferred subcommands too
        walk(&cli, Vec::new(), &mut out);
        out
    }

    /// The help of every subcommand names no option this build refuses;
    /// the full build's names every one (the lists name real options).
    #[test]
    fn the_help_shows_only_what_this_build_does() {
        let helps = every_help();
        assert!(helps.len() > 10, "{} subcommands", helps.len());
        let named = |o: &str| {
            helps
                .iter()
                .filter(|(_, h)| help_words(h).any(|w| w == o))
                .map(|(sub, _)| sub.as_str())
                .collect::<Vec<_>>()
        };
        for o in left_out() {
            assert!(named(o).is_empty(), "{o} in the help of {:?}", named(o));
        }
        let kept = |on: bool, list: &'static [&'static str]| list.iter().filter(move |_| on);
        for o in kept(!NO_HOST_TOOLS, HOST_TOOLS_OPTIONS)
            .chain(kept(!NO_KERNEL_TRACE, KERNEL_TRACE_OPTIONS))
        {
            assert!(!named(o).is_empty(), "{o} is in no help of the full build");
        }
    }

    /// An option the build leaves out is still parsed, so that it is
    /// refused in one line naming the build that has it (exit 3).
    #[test]
    fn a_left_out_option_is_refused_by_name() {
        let cli = Cli::try_parse_from(["rtlat", "timer", "--split", "--duration", "1s"])
            .expect("--split parses in every build");
        let Command::Timer(args) = cli.command else {
            panic!("not timer");
        };
        let refused = crate::bench::timer::TimerConfig::try_from(&args).err();
        if NO_KERNEL_TRACE {
            let e = refused.expect("the board build refuses --split");
            assert_eq!(e.exit_code(), 3, "{}", e.message());
            assert!(
                e.message().contains("--features kernel-trace"),
                "{}",
                e.message()
            );
        }
        let cli = Cli::try_parse_from(["rtlat", "timer", "--bound", "1ms", "--duration", "1s"])
            .expect("--bound parses in every build");
        let Command::Timer(args) = cli.command else {
            panic!("not timer");
        };
        let refused = crate::bench::timer::TimerConfig::try_from(&args).err();
        assert_eq!(refused.is_some(), NO_HOST_TOOLS, "{refused:?}");
        if let Some(e) = refused {
            assert_eq!(e.exit_code(), 3, "{}", e.message());
        }
    }

    #[test]
    fn examples_naming_a_left_out_option_are_dropped_with_their_continuation() {
        let text = "Examples:\n  rtlat a --x 1\n  rtlat b --explain\n                 why\n  rtlat c --no-split\n";
        let shown = for_this_build(text);
        assert!(
            shown.contains("rtlat a --x 1") && shown.contains("--no-split"),
            "{shown}"
        );
        assert_eq!(shown.contains("--explain"), !NO_KERNEL_TRACE, "{shown}");
        assert_eq!(shown.contains("why"), !NO_KERNEL_TRACE, "{shown}");
    }
}
