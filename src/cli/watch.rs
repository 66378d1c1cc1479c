//! `rtlat watch` options.

use super::common::{positive_duration, ExplainArgs, LoadOpts, OutputArgs};
use crate::bench::watch::select::{check_pattern, Selection};
use crate::bench::watch::WatchConfig;
use crate::engine::RtConfig;
use crate::error::Error;
use clap::Args;

pub const WATCH_EXAMPLES: &str = "\
Follows threads that are already running, from the kernel's sched and
timer trace events (root, tracefs); nothing is injected into them. Per
thread: comm:tid (wake-up latency: sched_waking to running),
comm:tid/timer (its own sleep's expiry to running, what cyclictest reports
of its thread), comm:tid/run (time on the CPU per activation) and
comm:tid/interval (between wake-ups; the median is the detected period).
Overruns: a sleep until a time already past (the next activation came
before this one ended), or an activation longer than --deadline (else
--period). Who preempted each thread mid-activation is in the details;
--explain splits each thread's worst wake-ups into their causes on the CPU
it ran on: the tasks, handlers, idle exits and hypervisor time that kept it
waiting. With --comm and by default, threads that start during
the run are watched too; a run that saw none of the selected threads ends
with exit 3.

Examples:
  rtlat watch --duration 1m                       every SCHED_FIFO/RR/DEADLINE thread
  rtlat watch --comm cyclictest --duration 60s --json w.json
  rtlat watch --cgroup /system.slice/plc.service --duration 1h
  rtlat watch --pid 4242 --max-latency 100us      exit 1 if a wake-up of 4242's threads took longer
  rtlat watch --comm 'motor*' --period 2ms --explain --duration 10m";

// `--explain-stacks` is parsed to be refused in one line: no help for it.
#[derive(Debug, Args)]
#[command(mut_arg("explain_stacks", |a| a.hide(true)))]
pub struct WatchArgs {
    /// Watch these processes' threads (as they are at the start) or these threads, by id
    #[arg(long, value_delimiter = ',', conflicts_with = "comm", value_parser = clap::value_parser!(i32).range(1..))]
    pub pid: Vec<i32>,
    /// Watch the threads in this cgroup at the start: its path as /proc/PID/cgroup shows it (e.g. /system.slice/app.service)
    #[arg(long, value_name = "PATH", conflicts_with_all = ["pid", "comm"])]
    pub cgroup: Option<String>,
    /// Watch the threads whose name matches PATTERN (* any run, ? any one character), also those that start during the run [default: every real-time thread]
    #[arg(long, value_name = "PATTERN")]
    pub comm: Option<String>,
    /// Stop after this long (e.g. 10s, 5m, 2h) [default: until interrupted]
    #[arg(long, short, allow_hyphen_values = true, value_parser = positive_duration)]
    pub duration: Option<u64>,
    /// The watched threads' period (e.g. 2ms): an activation longer than this from its timer's expiry or wake-up overran, unless --deadline is given
    #[arg(long, value_name = "DURATION", value_parser = positive_duration)]
    pub period: Option<u64>,
    /// An activation longer than this from its timer's expiry or wake-up overran
    #[arg(long, value_name = "DURATION", value_parser = positive_duration)]
    pub deadline: Option<u64>,
    #[command(flatten)]
    pub explain: ExplainArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub load: LoadOpts,
}

impl TryFrom<&WatchArgs> for WatchConfig {
    type Error = Error;
    fn try_from(a: &WatchArgs) -> Result<Self, Error> {
        a.explain.refuse_stacks(
            "does not fit watch: it records the stacks at the wake-ups of rtlat's own measuring threads, and watch reads the watched threads' events itself; run without --explain-stacks",
        )?;
        let select = match (&a.pid[..], &a.comm, &a.cgroup) {
            (_, _, Some(g)) => Selection::Cgroup(g.clone()),
            ([], None, None) => Selection::RealTime,
            ([], Some(g), None) => {
                check_pattern(g).map_err(Error::usage)?;
                Selection::Comm(g.clone())
            }
            (p, _, None) => Selection::Pids(p.to_vec()),
        };
        Ok(WatchConfig {
            select,
            deadline_ns: a.deadline,
            period_ns: a.period,
            explain_worst: a.explain.worst(),
            control: a.output.control(a.duration, None, None),
            // The watch's own threads are ordinary ones: it measures others.
            setup: a.output.setup(RtConfig::unprivileged(), &a.load)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn config(args: &[&str]) -> Result<WatchConfig, Error> {
        let cli = Cli::try_parse_from([&["rtlat", "watch"], args].concat()).expect("parses");
        let Command::Watch(a) = cli.command else {
            panic!("not watch")
        };
        WatchConfig::try_from(&a)
    }

    #[test]
    fn the_selection_comes_from_the_options() {
        let got = config(&["--comm", "cyclic*", "--duration", "2s"]);
        {
            let c = got.expect("full build");
            assert_eq!(c.select, Selection::Comm("cyclic*".into()));
            assert_eq!(c.control.duration_ns, Some(2_000_000_000));
            assert_eq!(
                config(&["--pid", "3,4"]).expect("pids").select,
                Selection::Pids(vec![3, 4])
            );
            assert_eq!(config(&[]).expect("default").select, Selection::RealTime);
            assert_eq!(
                config(&["--cgroup", "/app.slice"]).expect("cgroup").select,
                Selection::Cgroup("/app.slice".into())
            );
            let e = config(&["--comm", "a[b]"]).expect_err("a class");
            assert_eq!(e.exit_code(), crate::error::exit::USAGE);
        }
        assert!(Cli::try_parse_from(["rtlat", "watch", "--pid", "1", "--comm", "x"]).is_err());
    }
}
