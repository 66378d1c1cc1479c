//! `rtlat switch` options.

use super::common::{positive_duration, MeasureArgs, PolicyArg};
use super::length::RunLength;
use crate::bench::switch::{priorities, PairPlan, Placement, SwitchConfig};
use crate::error::Error;
use crate::sys::{ipc::Mechanism, sched::Sched};
use crate::sysinfo;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, ValueEnum};

pub const SWITCH_HELP: &str = "\
Pairs of real-time threads (with --processes: a thread and a forked process)
wake each other. The waker sleeps on an absolute periodic timer (--period);
each period it reads CLOCK_MONOTONIC and wakes the wakee through --via; the
wakee reads CLOCK_MONOTONIC as soon as it runs:
  latency = time the wakee runs - time just before the waker's wake call.
One pair per CPU of --cpus. --placement same puts waker and wakee on that CPU
(a true context switch); cross puts the wakee on the next CPU of the list.
The wakee runs at --priority (default 80), the waker one below it
(--waker-priority), so on one CPU the wake preempts the waker at once (with
equal priorities the waker yields the CPU right after the wake).
On one CPU, with the wakee at a priority at least the waker's, each wake is
preceded by an arming handshake (a round trip through the same mechanism):
the wakee has just run and waits on --via when it is woken, as in rt-tests,
so the latency is the wake and the context switch with warm caches. --cold
wakes it straight from its idle wait instead (a cache-cold wake-up, as an
event after an idle period sees it); cross-CPU wakes are always cold.
Lost wakes: a period without a sample, because the wakee had not completed
the previous wake when the period began (it is never woken twice), or the
waker itself woke a whole period late. They are the summary's overruns.

Examples:
  rtlat switch --duration 10s                        futex, one pair per CPU, same CPU
  rtlat switch --via posix-sem --placement cross --cpus 0,1 --duration 1m
  rtlat switch --via signal --processes --json s.json
  rtlat switch --priority 80 --waker-priority 80     equal priorities, like rt-tests -S
  rtlat switch --explain --duration 1m               why the 10 worst wakes of each pair were late";

/// `--via`: every wake [`Mechanism`] by its name.
fn via() -> impl TypedValueParser<Value = Mechanism> {
    PossibleValuesParser::new(
        Mechanism::ALL.map(|m| PossibleValue::new(m.name()).help(via_help(m))),
    )
    .map(|name| {
        Mechanism::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .expect("clap accepts only the possible values")
    })
}

fn via_help(m: Mechanism) -> &'static str {
    match m {
        Mechanism::Futex => {
            "Atomic increment + FUTEX_WAKE / FUTEX_WAIT (what mutexes and condvars use)"
        }
        Mechanism::Eventfd => "eventfd write / read",
        Mechanism::Pipe => "One byte through a pipe",
        Mechanism::PosixSem => "POSIX semaphore: sem_post / sem_wait",
        Mechanism::SysvSem => "System V semaphore: semop +1 / -1",
        Mechanism::Mqueue => "POSIX message queue: mq_send / mq_receive",
        Mechanism::Signal => "A signal to the wakee thread (tgkill), taken with sigwaitinfo",
    }
}

/// Where the two sides of a pair run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlacementArg {
    /// Waker and wakee on the same CPU: every wake is a context switch
    Same,
    /// The wakee on the next CPU of --cpus: every wake crosses CPUs
    Cross,
}

#[derive(Debug, Args)]
#[command(after_help = super::for_this_build(SWITCH_HELP), mut_arg("loops", |a| a.help("Stop after N wakes per pair")))]
pub struct SwitchArgs {
    /// Wake mechanism
    #[arg(long, default_value = "futex", value_parser = via())]
    pub via: Mechanism,
    /// Run each wakee in a forked process instead of a thread
    #[arg(long)]
    pub processes: bool,
    /// No arming handshake: wake the wakee straight from its idle wait (cache-cold wake-ups)
    #[arg(long)]
    pub cold: bool,
    /// CPUs that host one pair each, e.g. `0,2-3`, or `all`
    #[arg(long, default_value = "all")]
    pub cpus: String,
    /// same: both sides of a pair on its CPU; cross: the wakee on the next CPU of --cpus
    #[arg(long, value_enum, default_value = "same")]
    pub placement: PlacementArg,
    /// Period of every waker (ns, us, ms, s), at most 1s
    #[arg(long, short, default_value = "1ms", allow_hyphen_values = true, value_parser = super::common::period)]
    pub period: u64,
    #[command(flatten)]
    pub length: RunLength,
    /// Priority of the wakers, 1-99 [default: --priority minus 1]
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..=99))]
    pub waker_priority: Option<i32>,
    /// The wakee sleeps this long before acknowledging each wake (tests: forces lost wakes)
    #[arg(long, hide = true, value_name = "DURATION", value_parser = positive_duration)]
    pub wakee_delay: Option<u64>,
    #[command(flatten)]
    pub explain: super::common::ExplainArgs,
    #[command(flatten)]
    pub common: MeasureArgs,
}

impl TryFrom<&SwitchArgs> for SwitchConfig {
    type Error = Error;
    fn try_from(a: &SwitchArgs) -> Result<Self, Error> {
        a.common
            .rt
            .refuse_deadline("does not fit switch (the wakee is woken by events, not a period)")?;
        if a.waker_priority.is_some() && a.common.rt.policy == PolicyArg::Other {
            return Err(Error::usage(
                "--waker-priority applies to --policy fifo or rr only",
            ));
        }
        let online = sysinfo::online_cpus();
        let cpus = crate::units::parse_cpu_list(&a.cpus, &online).map_err(Error::usage)?;
        if cpus.is_empty() {
            return Err(Error::usage("--cpus selects no CPU; give e.g. 0 or all"));
        }
        let placement = match a.placement {
            PlacementArg::Same => Placement::Same,
            PlacementArg::Cross => Placement::Cross,
        };
        if placement == Placement::Cross && cpus.len() < 2 {
            return Err(Error::usage(
                "--placement cross needs at least two CPUs in --cpus, e.g. --cpus 0,1",
            ));
        }
        super::common::needs_kernel_trace(a.explain.explain.then_some("--explain"))?;
        if placement == Placement::Cross {
            a.explain.refuse_stacks(
                "does not fit --placement cross: the waker wakes the wakee from its own CPU, where the stack recorded is the waker's, not what held the wakee's CPU; use --placement same",
            )?;
        }
        let rt = a.common.rt.to_config(a.period)?;
        let (wakee_priority, waker_priority, waker_sched) = priorities(rt.sched, a.waker_priority);
        Ok(SwitchConfig {
            via: a.via,
            processes: a.processes,
            warm: !a.cold
                && placement == Placement::Same
                && matches!(rt.sched, Sched::Fifo(_) | Sched::Rr(_))
                && waker_priority <= wakee_priority,
            placement,
            pairs: PairPlan::layout(&cpus, placement, a.period),
            cpus,
            period_ns: a.period,
            wakee_priority,
            waker_priority,
            explain: a.explain.worst(),
            explain_stacks: a.explain.stacks(),
            control: a.common.control(a.length.duration, a.length.loops, None),
            wakee_delay_ns: a.wakee_delay,
            waker_sched,
            setup: a.common.setup_with(rt)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::engine::rt::DEFAULT_PRIORITY;
    use clap::Parser;

    fn args(extra: &[&str]) -> SwitchArgs {
        let mut argv = vec!["rtlat", "switch"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Switch(a) => a,
            _ => unreachable!(),
        }
    }

    fn config(extra: &[&str]) -> Result<SwitchConfig, Error> {
        SwitchConfig::try_from(&args(extra))
    }

    #[test]
    fn defaults_one_same_cpu_pair_per_cpu_waker_one_below() {
        let c = config(&["--cpus", "0", "--duration", "1s"]).expect("ok");
        assert_eq!(c.via, Mechanism::Futex);
        assert_eq!(c.period_ns, 1_000_000);
        assert_eq!(c.pairs.len(), 1);
        assert_eq!((c.pairs[0].waker_cpu, c.pairs[0].wakee_cpu), (0, 0));
        assert_eq!(c.wakee_priority, Some(DEFAULT_PRIORITY));
        assert_eq!(c.waker_priority, Some(DEFAULT_PRIORITY - 1));
        assert_eq!(c.waker_sched, Sched::Fifo(DEFAULT_PRIORITY - 1));
        assert!(c.warm);
        let v = serde_json::to_value(&c).expect("serialises");
        assert_eq!(v["via"], "futex");
        assert_eq!(v["placement"], "same");
        assert!(!config(&["--cpus", "0", "--cold"]).expect("ok").warm);
    }

    #[test]
    fn cross_placement_puts_the_wakee_on_the_next_cpu() {
        if sysinfo::online_cpus().len() < 2 {
            return;
        }
        let c = config(&[
            "--cpus",
            "0,1",
            "--placement",
            "cross",
            "--waker-priority",
            "80",
        ])
        .expect("ok");
        let p: Vec<(usize, usize)> = c.pairs.iter().map(|p| (p.waker_cpu, p.wakee_cpu)).collect();
        assert_eq!(p, vec![(0, 1), (1, 0)]);
        assert_eq!(c.pairs[1].phase_ns, 500_000);
        assert_eq!(c.waker_priority, Some(80));
        assert!(!c.warm);
        assert_eq!(
            serde_json::to_value(&c).expect("json")["placement"],
            "cross"
        );
    }

    #[test]
    fn bad_combinations_are_usage_errors() {
        for bad in [
            vec!["--placement", "cross", "--cpus", "0"],
            vec!["--policy", "deadline"],
            vec!["--policy", "other", "--waker-priority", "5"],
        ] {
            let e = config(&bad).expect_err("refused");
            assert_eq!(e.exit_code(), 2, "{bad:?}: {e}");
        }
    }

    #[test]
    fn explain_stacks_reach_a_same_cpu_pair_only() {
        let stacks = |extra: &[&str]| {
            let mut argv = vec!["--explain", "--explain-stacks"];
            argv.extend_from_slice(extra);
            config(&argv).map(|c| c.explain_stacks)
        };
        if !crate::KERNEL_TRACE {
            // The board build refuses --explain first, as the environment.
            assert_eq!(
                stacks(&["--cpus", "0"]).expect_err("no trace").exit_code(),
                3
            );
            return;
        }
        assert!(stacks(&["--cpus", "0"]).expect("same CPU"));
        assert!(
            !config(&["--explain", "--cpus", "0"])
                .expect("ok")
                .explain_stacks
        );
        if sysinfo::online_cpus().len() >= 2 {
            let e = stacks(&["--cpus", "0,1", "--placement", "cross"]).expect_err("cross");
            assert_eq!(e.exit_code(), 2, "{}", e.message());
            assert!(e.message().contains("--placement cross"), "{}", e.message());
        }
    }

    #[test]
    fn every_mechanism_is_named_on_the_command_line() {
        for m in Mechanism::ALL {
            assert_eq!(args(&["--via", m.name()]).via, m);
        }
        let argv = ["rtlat", "switch", "--via", "smoke-signal"];
        assert!(Cli::try_parse_from(argv).is_err());
    }
}
