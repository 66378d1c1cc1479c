//! `rtlat cruncher` options.

use super::common::{positive_duration, MeasureArgs};
use super::length::RunLength;
use crate::bench::cruncher::CruncherConfig;
use crate::error::Error;
use crate::sysinfo;
use crate::units::human_duration;
use clap::Args;

pub const CRUNCHER_HELP: &str = "\
A fixed, deterministic computation (a serial xorshift chain over a small
on-stack table: no allocation, no system call) is first calibrated to about
--work on the measuring CPU, at the run's policy and priority: it is timed
--calibration-runs times, once per period (calibration takes that many
periods before the measurement starts), and the fastest is the ideal. Then
it runs once per --period (absolute timer) for the duration; each run's
duration is a sample.
  stretch = longest run / ideal
Runs longer than ideal x (1 + --tolerance) are counted (beyond_tolerance).
A run that ends after the next period start is an overrun (periods skipped).

Examples:
  rtlat cruncher --duration 30s
  rtlat cruncher --work 2ms --period 10ms --cpu 1 --duration 5m --json c.json
  rtlat cruncher --tolerance 1% --max-latency 12ms   exit 1 if a run took longer than 12 ms";

// `--explain-stacks` is parsed to be refused in one line: no help for it.
#[derive(Debug, Args)]
#[command(
    after_help = CRUNCHER_HELP,
    mut_arg("loops", |a| a.help("Stop after N runs")),
    mut_arg("explain_stacks", |a| a.hide(true))
)]
pub struct CruncherArgs {
    /// Length of the computation, sized at calibration (ns, us, ms, s), at most 1s
    #[arg(long, short, default_value = "10ms", value_parser = super::common::period)]
    pub work: u64,
    /// Period of the runs [default: 100ms, or 2 x --work if that is longer]
    #[arg(long, short, allow_hyphen_values = true, value_parser = positive_duration)]
    pub period: Option<u64>,
    /// Runs longer than the ideal by more than this are counted, e.g. 5% or 0.5%
    #[arg(long, default_value = "5%", value_parser = tolerance)]
    pub tolerance: f64,
    /// CPU the computation runs on
    #[arg(long, default_value_t = 0)]
    pub cpu: usize,
    /// Timed calibration runs; the ideal is their minimum
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub calibration_runs: u32,
    #[command(flatten)]
    pub length: RunLength,
    #[command(flatten)]
    pub explain: super::common::ExplainArgs,
    #[command(flatten)]
    pub common: MeasureArgs,
}

/// `5%`, `0.5%` or `5` (percent) into a fraction.
fn tolerance(s: &str) -> std::result::Result<f64, String> {
    let t = s.trim();
    let num = t.strip_suffix('%').unwrap_or(t);
    match crate::units::parse_decimal(num.trim()) {
        Some(v) if (0.0..=1000.0).contains(&v) => Ok(v / 100.0),
        _ => Err(format!(
            "'{s}' is not a percentage between 0 and 1000, e.g. 5%"
        )),
    }
}

impl TryFrom<&CruncherArgs> for CruncherConfig {
    type Error = Error;
    fn try_from(a: &CruncherArgs) -> Result<Self, Error> {
        a.common
            .rt
            .refuse_deadline("is not supported by cruncher")?;
        let online = sysinfo::online_cpus();
        if !online.contains(&a.cpu) {
            return Err(Error::usage(format!(
                "--cpu {}: not an online CPU; online CPUs are {}",
                a.cpu,
                crate::units::format_cpu_list(&online)
            )));
        }
        super::common::needs_kernel_trace(a.explain.explain.then_some("--explain"))?;
        a.explain.refuse_stacks(
            "does not fit cruncher: a stack is recorded when a measuring thread is woken, and the computation it times runs without one (whatever takes the CPU preempts it); run without --explain-stacks",
        )?;
        let period = a.period.unwrap_or((2 * a.work).max(100_000_000));
        if period <= a.work {
            return Err(Error::usage(format!(
                "--period {} must be longer than --work {}",
                human_duration(period),
                human_duration(a.work)
            )));
        }
        let rt = a.common.rt.to_config(period)?;
        Ok(CruncherConfig {
            cpu: a.cpu,
            work_ns: a.work,
            period_ns: period,
            tolerance: a.tolerance,
            calibration_runs: a.calibration_runs,
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

    fn config(extra: &[&str]) -> Result<CruncherConfig, Error> {
        let mut argv = vec!["rtlat", "cruncher"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Cruncher(a) => CruncherConfig::try_from(&a),
            _ => unreachable!(),
        }
    }

    #[test]
    fn tolerance_parses_percentages() {
        assert_eq!(tolerance("5%"), Ok(0.05));
        assert_eq!(tolerance("0.5%"), Ok(0.005));
        assert_eq!(tolerance("10"), Ok(0.1));
        assert!(tolerance("-1%").is_err());
        assert!(tolerance("five").is_err());
    }

    #[test]
    fn the_period_defaults_to_100ms_or_twice_the_work() {
        let c = config(&["--cpu", "0"]).expect("ok");
        assert_eq!((c.work_ns, c.period_ns), (10_000_000, 100_000_000));
        let c = config(&["--work", "80ms"]).expect("ok");
        assert_eq!(c.period_ns, 160_000_000);
        assert_eq!(c.tolerance, 0.05);
    }

    #[test]
    fn bad_combinations_are_usage_errors() {
        for bad in [
            vec!["--policy", "deadline"],
            vec!["--work", "10ms", "--period", "5ms"],
            vec!["--cpu", "100000"],
        ] {
            let e = config(&bad).expect_err("refused");
            assert_eq!(e.exit_code(), 2, "{bad:?}: {e}");
        }
    }
}
