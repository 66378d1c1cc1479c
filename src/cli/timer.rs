//! `rtlat timer` options.

use super::common::{positive_duration, ExplainArgs, MeasureArgs};
use crate::bench::timer::lines::Ctx;
use crate::bench::timer::TimerConfig;
use crate::engine::RtConfig;
use crate::error::Error;
use crate::sys::clock::Clock;
use crate::sysinfo;
use clap::{Args, ValueEnum};

pub const TIMER_EXAMPLES: &str = "\
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
  rtlat timer --policy deadline --period 1ms --dl-runtime 100us
  rtlat timer --context irq,thread --duration 20s     the kernel's timer IRQ and kernel-thread latency (timerlat tracer)
  rtlat timer --split --duration 1m                   each sample split into its IRQ and scheduling parts
  rtlat timer --explain --duration 1m                 why the 10 worst samples of each thread were late";

/// The shortest period a timer thread is given: below it every period would
/// be an overrun, and the run would measure its own overhead.
pub const MIN_PERIOD_NS: u64 = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClockArg {
    Monotonic,
    Realtime,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ContextArg {
    Irq,
    Thread,
    User,
}

#[derive(Debug, Args)]
pub struct TimerArgs {
    /// CPUs to measure, e.g. `0,2-3`, or `all`
    #[arg(long, default_value = "all")]
    pub cpus: String,
    /// Period of every thread (ns, us, ms, s), at most 1s
    #[arg(long, short, default_value = "1ms", allow_hyphen_values = true, value_parser = super::common::period)]
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
    /// Measure in kernel contexts with the timerlat tracer instead: irq,thread (kernels with CONFIG_TIMERLAT_TRACER, e.g. PREEMPT_RT); user adds rtlat threads woken by the same timer through timerlat_fd (Linux 6.5)
    #[arg(
        long,
        hide = super::NO_KERNEL_TRACE,
        value_name = "CONTEXTS",
        value_delimiter = ',',
        conflicts_with = "synthetic"
    )]
    pub context: Vec<ContextArg>,
    /// Split each sample into its IRQ part (timer expiry → hard handler) and its scheduling part (handler → thread running), as series cpuN/irq and cpuN/sched, from the kernel's hrtimer trace events (root, tracefs)
    #[arg(long, hide = super::NO_KERNEL_TRACE, conflicts_with_all = ["synthetic", "context", "explain"])]
    pub split: bool,
    #[command(flatten)]
    pub explain: ExplainArgs,
    /// Deterministic synthetic samples from SEED instead of real sleeps (for tests)
    #[arg(long, hide = true, value_name = "SEED", conflicts_with = "explain")]
    pub synthetic: Option<u64>,
    #[command(flatten)]
    pub common: MeasureArgs,
}

impl TryFrom<&TimerArgs> for TimerConfig {
    type Error = Error;
    fn try_from(a: &TimerArgs) -> Result<Self, Error> {
        if a.period < MIN_PERIOD_NS {
            return Err(Error::usage(format!(
                "--period {} is below the {} floor rtlat can honour (a wake-up alone takes microseconds); give {} or more",
                crate::units::human_duration(a.period),
                crate::units::human_duration(MIN_PERIOD_NS),
                crate::units::human_duration(MIN_PERIOD_NS)
            )));
        }
        let mut contexts = Vec::new();
        for c in &a.context {
            let c = match c {
                ContextArg::Irq => Ctx::Irq,
                ContextArg::Thread => Ctx::Thread,
                ContextArg::User => Ctx::User,
            };
            if !contexts.contains(&c) {
                contexts.push(c);
            }
        }
        let traced = [
            (a.split, "--split"),
            (a.explain.explain, "--explain"),
            (!contexts.is_empty(), "--context"),
        ];
        super::common::needs_kernel_trace(traced.iter().find(|t| t.0).map(|t| t.1))?;
        if a.explain.explain && matches!(a.clock, ClockArg::Realtime) {
            return Err(Error::usage(
                "--explain compares samples with the kernel's trace, which runs on CLOCK_MONOTONIC: drop --clock realtime",
            ));
        }
        if !contexts.is_empty()
            && (a.period % 1000 != 0 || !(100_000..=1_000_000_000).contains(&a.period))
        {
            return Err(Error::usage(format!(
                "--period {} with --context: the timerlat tracer takes whole microseconds from 100us to 1s",
                crate::units::human_duration(a.period)
            )));
        }
        let online = sysinfo::online_cpus();
        let cpus = crate::units::parse_cpu_list(&a.cpus, &online).map_err(Error::usage)?;
        if cpus.is_empty() {
            return Err(Error::usage("--cpus selects no CPU; give e.g. 0 or all"));
        }
        let rt = if a.synthetic.is_some() {
            RtConfig::unprivileged()
        } else {
            a.common.rt.to_config(a.period)?
        };
        Ok(TimerConfig {
            cpus,
            period_ns: a.period,
            control: a.common.control(a.duration, a.loops, a.break_threshold),
            clock: match a.clock {
                ClockArg::Monotonic => Clock::Monotonic,
                ClockArg::Realtime => Clock::Realtime,
            },
            synthetic_seed: a.synthetic,
            contexts,
            split: a.split,
            explain: a.explain.worst(),
            explain_stacks: a.explain.stacks(),
            setup: a.common.setup_with(rt)?,
        })
    }
}
