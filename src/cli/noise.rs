//! `rtlat noise` options.

use super::common::{positive_duration, MeasureArgs};
use super::length::RunLength;
use crate::bench::noise::counter::CounterKind;
use crate::bench::noise::KernelTracer;
use crate::bench::noise::{rt_throttling, NoiseConfig};
use crate::error::Error;
use crate::sys::sched::Sched;
use crate::sysinfo;
use crate::units::{format_cpu_list, human_duration};
use clap::{Args, ValueEnum};

pub const NOISE_HELP: &str = "\
On each measuring CPU a thread at the run's policy and priority reads the
clock back to back and never sleeps (oslat's busy loop). Every gap between
two reads is a sample of the CPU's series cpuN: the shortest is the loop's
own cost; whatever ran instead of the loop (interrupts, softirqs, other
threads, the hypervisor) makes a gap longer. Gaps above --threshold are
also the series cpuN/noise: their count, their sum (the stolen time, per
interval in the live view and in total) and their lengths.
The clock is the time-stamp counter (calibrated against CLOCK_MONOTONIC)
where it is invariant, else clock_gettime(CLOCK_MONOTONIC).
";

/// The kernel tracers noise measures with instead (feature `kernel-trace`).
const NOISE_TRACERS: &str = "
With --osnoise the kernel's osnoise tracer measures instead (its osnoise/N
threads spin on the CPUs, in rtlat's own tracefs instance): each noise above
--threshold is a sample of cpuN/osnoise, and the per-period counters (runtime,
noise, % available, occurrences per source: hw, nmi, irq, softirq, thread)
are added up per CPU in the details, as rtla osnoise top shows them. With
--hwlat the hwlat tracer (top-level tracefs only) spins with interrupts off
through the CPUs in turn: each gap above --threshold is a sample of hwlat.
Every tracefs setting is restored at the end.
";

const NOISE_REST: &str = "
A SCHED_FIFO loop takes its whole CPU: with RT throttling on
(/proc/sys/kernel/sched_rt_runtime_us below its period) other tasks still
get their share, counted as noise, and the result notes it. With throttling
off, rtlat refuses to loop in real time on every CPU.

Examples:
  rtlat noise --duration 30s                 every CPU but the first, SCHED_FIFO 80
  rtlat noise --cpus 1 --threshold 1us --duration 5m --json n.json
  rtlat noise --policy other --cpus 2-3 --duration 10s
  rtlat noise --cpus 1 --max-latency 50us    exit 1 if a gap was longer than 50 us
  rtlat noise --osnoise --duration 10s       the kernel's osnoise tracer's figures";

/// What `rtlat noise --help` says after the options, for this build.
fn noise_help() -> String {
    let tracers = if super::NO_KERNEL_TRACE {
        ""
    } else {
        NOISE_TRACERS
    };
    super::for_this_build(&format!("{NOISE_HELP}{tracers}{NOISE_REST}"))
}

/// The clock the busy loop reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CounterArg {
    /// The time-stamp counter where invariant, else monotonic
    Auto,
    /// The time-stamp counter (x86_64 with constant_tsc and nonstop_tsc)
    Tsc,
    /// clock_gettime(CLOCK_MONOTONIC)
    Monotonic,
}

// `--explain-stacks` is parsed to be refused in one line: no help for it.
#[derive(Debug, Args)]
#[command(
    after_help = noise_help(),
    mut_arg("loops", |a| a.help("Stop after N loops (gaps) per CPU")),
    mut_arg("explain_stacks", |a| a.hide(true))
)]
pub struct NoiseArgs {
    /// CPUs to measure, e.g. `1,3-5`, or `all` [default: every online CPU but the first, or CPU 0 alone]
    #[arg(long)]
    pub cpus: Option<String>,
    /// Gaps longer than this are noise (ns, us, ms), from 1us to 1s
    #[arg(long, default_value = "5us", value_parser = threshold)]
    pub threshold: u64,
    /// The clock the loop reads back to back
    #[arg(long, value_enum, default_value = "auto")]
    pub counter: CounterArg,
    /// Measure with the kernel's osnoise tracer instead of rtlat's loop: series cpuN/osnoise, per-CPU counters in the details (CONFIG_OSNOISE_TRACER)
    #[arg(long, hide = super::NO_KERNEL_TRACE, conflicts_with = "hwlat")]
    pub osnoise: bool,
    /// Measure with the kernel's hwlat tracer (interrupts off, hardware and firmware stalls) instead of rtlat's loop: series hwlat (CONFIG_HWLAT_TRACER)
    #[arg(long, hide = super::NO_KERNEL_TRACE)]
    pub hwlat: bool,
    #[command(flatten)]
    pub explain: super::common::ExplainArgs,
    #[command(flatten)]
    pub length: RunLength,
    #[command(flatten)]
    pub common: MeasureArgs,
}

fn threshold(s: &str) -> std::result::Result<u64, String> {
    let ns = positive_duration(s)?;
    if !(1_000..=1_000_000_000).contains(&ns) {
        return Err(format!("'{s}' is not between 1us and 1s"));
    }
    Ok(ns)
}

/// Every online CPU but the first (oslat's default), or the only one.
fn default_cpus(online: &[usize]) -> Vec<usize> {
    if online.len() > 1 {
        online[1..].to_vec()
    } else {
        online.to_vec()
    }
}

impl TryFrom<&NoiseArgs> for NoiseConfig {
    type Error = Error;
    fn try_from(a: &NoiseArgs) -> Result<Self, Error> {
        a.common
            .rt
            .refuse_deadline("is not supported by noise: a busy loop has no period")?;
        let tracer = match (a.osnoise, a.hwlat) {
            (true, _) => Some(KernelTracer::Osnoise),
            (_, true) => Some(KernelTracer::Hwlat),
            _ => None,
        };
        if let (true, Some(t)) = (a.explain.explain, tracer) {
            return Err(Error::usage(format!(
                "--explain attributes the gaps of rtlat's loop, which does not run with {}; leave one of them out",
                t.option()
            )));
        }
        let online = sysinfo::online_cpus();
        let cpus = match &a.cpus {
            Some(list) => crate::units::parse_cpu_list(list, &online).map_err(Error::usage)?,
            None => default_cpus(&online),
        };
        if cpus.is_empty() {
            return Err(Error::usage("--cpus selects no CPU; give e.g. 1 or all"));
        }
        let rt = a.common.rt.to_config(1_000_000)?;
        let real_time = matches!(rt.sched, Sched::Fifo(_) | Sched::Rr(_));
        if real_time && online.iter().all(|c| cpus.contains(c)) && rt_throttling().0 == Some(-1) {
            return Err(Error::usage(format!(
                "--cpus {}: real-time busy loops on every CPU with RT throttling off (sched_rt_runtime_us = -1) would starve the machine; leave a CPU out, use --policy other, or turn throttling on",
                format_cpu_list(&cpus)
            )));
        }
        if (a.osnoise || a.hwlat) && a.length.loops.is_some() {
            return Err(Error::usage(
                "--loops counts the gaps of rtlat's loop, which does not run with --osnoise or --hwlat; give --duration",
            ));
        }
        if let Some(d) = a.length.duration {
            if d < 2 * a.threshold {
                return Err(Error::usage(format!(
                    "--duration {} is shorter than twice --threshold {}",
                    human_duration(d),
                    human_duration(a.threshold)
                )));
            }
        }
        // Usage errors first (exit 2), then what this build cannot do (3).
        super::common::needs_kernel_trace(tracer.map(|t| t.option()))?;
        super::common::needs_kernel_trace(a.explain.explain.then_some("--explain"))?;
        a.explain.refuse_stacks(
            "does not fit noise: a stack is recorded when a measuring thread is woken, and its busy loop never is; run without --explain-stacks",
        )?;
        Ok(NoiseConfig {
            cpus,
            threshold_ns: a.threshold,
            counter: match a.counter {
                CounterArg::Auto => None,
                CounterArg::Tsc => Some(CounterKind::Tsc),
                CounterArg::Monotonic => Some(CounterKind::Monotonic),
            },
            tracer,
            explain: a.explain.worst(),
            control: a.common.control(a.length.duration, a.length.loops, None),
            setup: a.common.setup_with(rt)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn config(extra: &[&str]) -> Result<NoiseConfig, Error> {
        let mut argv = vec!["rtlat", "noise"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Noise(a) => NoiseConfig::try_from(&a),
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_default_leaves_the_first_cpu_free() {
        assert_eq!(default_cpus(&[0, 1, 2]), [1, 2]);
        assert_eq!(default_cpus(&[0]), [0]);
        let c = config(&[]).expect("ok");
        assert_eq!(c.cpus, default_cpus(&sysinfo::online_cpus()));
        assert_eq!((c.threshold_ns, c.counter), (5_000, None));
    }

    #[test]
    fn thresholds_are_bounded() {
        assert_eq!(threshold("1us"), Ok(1_000));
        assert!(threshold("500ns").is_err());
        assert!(threshold("2s").is_err());
    }

    #[test]
    fn bad_combinations_are_usage_errors() {
        for bad in [
            vec!["--policy", "deadline"],
            vec!["--cpus", "100000"],
            vec!["--policy", "other", "--priority", "10"],
            vec!["--duration", "5us"],
            vec!["--osnoise", "--loops", "1000"],
        ] {
            let e = config(&bad).expect_err("refused");
            assert_eq!(e.exit_code(), 2, "{bad:?}: {e}");
        }
    }
}
