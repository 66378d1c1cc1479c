//! Option groups every measuring subcommand shares, and their conversion
//! into the engine's plain configuration.

use crate::engine::rt::DEFAULT_PRIORITY;
use crate::engine::{OutputConfig, RtConfig, RunControl, Setup};
use crate::error::{Error, Result};
use crate::forecast::ForecastSettings;
use crate::load::{LoadOptions, LoadPlan};
use crate::sys::sched::Sched;
use crate::units::{human_duration, parse_duration_ns};
use clap::{Args, ValueEnum};
use std::path::PathBuf;

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

// Real-time runtime settings shared by every benchmark.
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

/// A label as given with `--label`: UTF-8 (clap refuses other bytes before
/// this runs) and at most [`crate::input::MAX_NAME_CHARS`] characters.
pub fn label(s: &str) -> std::result::Result<String, String> {
    crate::input::check_name("the label", s)?;
    Ok(s.to_string())
}

// Output and threshold settings shared by every benchmark.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Write the result to FILE (rewritten atomically every few seconds during the run); - writes it to stdout, which then carries only the result
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// A label for this run in reports and comparisons, at most 256 characters [default: hostname + kernel]
    #[arg(long, value_parser = label)]
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
    /// Exit 1 if the tail forecast's upper limit of the latency exceeded with probability P per sample is above DURATION, or the forecast is withheld (P sets --exceedance)
    #[arg(long, value_name = "DURATION[@P]", value_parser = max_forecast, hide = super::NO_HOST_TOOLS)]
    pub max_forecast: Option<(u64, Option<f64>)>,
    /// Serve live metrics for Prometheus at http://ADDR:PORT/metrics during the run (no default address)
    #[arg(long, value_name = "ADDR:PORT", value_parser = listen_addr)]
    pub metrics_listen: Option<std::net::SocketAddr>,
    #[command(flatten)]
    pub forecast: ForecastArgs,
}

// What the tail forecast forecasts (docs/forecast.md); shared by every
// benchmark and `rtlat report`. (Not a doc comment: clap would make it the
// about of the subcommand it is flattened into, see `cli::Command`.)
#[derive(Debug, Args, Default)]
pub struct ForecastArgs {
    /// Forecast the latency exceeded with probability P per sample, and per hour of running [default: 1e-9]
    #[arg(long, hide = super::NO_HOST_TOOLS, value_name = "P", value_parser = probability)]
    pub exceedance: Option<f64>,
    /// Forecast against a latency bound: how much longer a run must be to show it holds at --confidence, and with --within the probability a run that long exceeds it
    #[arg(long, hide = super::NO_HOST_TOOLS, value_name = "DURATION", value_parser = positive_duration)]
    pub bound: Option<u64>,
    /// Forecast the maximum of a run this long (and with --bound the probability it exceeds the bound)
    #[arg(long, hide = super::NO_HOST_TOOLS, value_name = "DURATION", value_parser = positive_duration)]
    pub within: Option<u64>,
    /// The one-sided confidence at which --bound must be shown to hold [default: 0.95]
    #[arg(long, hide = super::NO_HOST_TOOLS, value_name = "C", value_parser = probability)]
    pub confidence: Option<f64>,
    /// Samples above DURATION are spikes: their count, mean time between them, period [default: the median of the interval maxima + 3 robust standard deviations]
    #[arg(long, hide = super::NO_HOST_TOOLS, value_name = "DURATION", value_parser = positive_duration)]
    pub spike_threshold: Option<u64>,
}

impl ForecastArgs {
    /// Whether any forecast option was given.
    pub fn given(&self) -> bool {
        self.exceedance.is_some()
            || self.bound.is_some()
            || self.within.is_some()
            || self.confidence.is_some()
            || self.spike_threshold.is_some()
    }

    /// The settings; `at` is the probability `--max-forecast` names, which
    /// sets the exceedance and must agree with `--exceedance` if both are given.
    pub fn settings(&self, at: Option<f64>) -> Result<ForecastSettings> {
        let exceedance = match (self.exceedance, at) {
            (Some(e), Some(p)) if e != p => {
                return Err(Error::usage(format!(
                    "--exceedance {e:e} and --max-forecast ...@{p:e} name different probabilities; give one"
                )))
            }
            (e, p) => e.or(p).unwrap_or(crate::forecast::DEFAULT_EXCEEDANCE),
        };
        Ok(ForecastSettings {
            exceedance,
            bound_ns: self.bound,
            within_ns: self.within,
            confidence: self.confidence.unwrap_or(0.95),
            spike_threshold_ns: self.spike_threshold,
        })
    }
}

/// A probability strictly between 0 and 1: `1e-9`, `0.95`.
pub fn probability(s: &str) -> std::result::Result<f64, String> {
    match crate::units::parse_decimal(s) {
        Some(p) if p > 0.0 && p < 1.0 => Ok(p),
        _ => Err(format!(
            "'{s}' is not a probability between 0 and 1 (exclusive), e.g. 1e-9 or 0.95"
        )),
    }
}

/// `--max-forecast DURATION[@P]`: `200us@1e-9`, `200us`.
fn max_forecast(s: &str) -> std::result::Result<(u64, Option<f64>), String> {
    let (d, p) = match s.split_once('@') {
        Some((d, p)) => (d, Some(probability(p)?)),
        None => (s, None),
    };
    Ok((positive_duration(d)?, p))
}

impl RtArgs {
    /// Refuse `--policy deadline` for a benchmark without a period it could
    /// reserve; `why` completes "--policy deadline …".
    pub fn refuse_deadline(&self, why: &str) -> Result<()> {
        if self.policy == PolicyArg::Deadline {
            return Err(Error::usage(format!(
                "--policy deadline {why}; use fifo, rr or other"
            )));
        }
        Ok(())
    }

    /// Validate the runtime options; `period_ns` is the benchmark's period (deadline default).
    pub fn to_config(&self, period_ns: u64) -> Result<RtConfig> {
        let a = self;
        if a.priority.is_some() && matches!(a.policy, PolicyArg::Other | PolicyArg::Deadline) {
            return Err(Error::usage(
                "--priority applies to --policy fifo or rr only; drop it or choose fifo/rr",
            ));
        }
        if (a.dl_runtime.is_some() || a.dl_deadline.is_some()) && a.policy != PolicyArg::Deadline {
            return Err(Error::usage(
                "--dl-runtime/--dl-deadline apply to --policy deadline only",
            ));
        }
        let prio = a.priority.unwrap_or(DEFAULT_PRIORITY);
        let sched = match a.policy {
            PolicyArg::Fifo => Sched::Fifo(prio),
            PolicyArg::Rr => Sched::Rr(prio),
            PolicyArg::Other => Sched::Other,
            PolicyArg::Deadline => {
                let runtime_ns = a.dl_runtime.unwrap_or((period_ns / 10).max(20_000));
                let deadline_ns = a.dl_deadline.unwrap_or(period_ns);
                if !(runtime_ns <= deadline_ns && deadline_ns <= period_ns) {
                    return Err(Error::usage(format!(
                        "SCHED_DEADLINE needs runtime <= deadline <= period (got {} <= {} <= {}); adjust --dl-runtime/--dl-deadline/--period",
                        human_duration(runtime_ns),
                        human_duration(deadline_ns),
                        human_duration(period_ns)
                    )));
                }
                Sched::Deadline {
                    runtime_ns,
                    deadline_ns,
                    period_ns,
                }
            }
        };
        Ok(RtConfig {
            sched,
            mlock: !a.no_mlock,
            dma_latency: match a.dma_latency {
                DmaArg::Off => None,
                DmaArg::Us(v) => Some(v),
            },
        })
    }
}

/// Refuses the forecast options in a build without the forecast (the
/// board build): exit 3, as the other options this build leaves out.
pub fn refuse_forecast(asked: bool) -> Result<()> {
    if asked && !cfg!(feature = "host-tools") {
        return Err(Error::env(
            "the tail forecast is in the full build (host-tools), not the board build: run rtlat report --max-forecast (or the forecast options) on the result file on a workstation",
        ));
    }
    Ok(())
}

impl OutputArgs {
    /// What the forecast at the end of the run forecasts.
    pub fn forecast_settings(&self) -> Result<ForecastSettings> {
        refuse_forecast(self.max_forecast.is_some() || self.forecast.given())?;
        self.forecast.settings(self.max_forecast.and_then(|m| m.1))
    }

    /// Where the run's output goes.
    pub fn output_config(&self) -> OutputConfig {
        // The result on stdout: no live lines (the rest of the text goes to stderr).
        let json_on_stdout = self
            .json
            .as_deref()
            .is_some_and(|p| p.as_os_str() == "-" || p == std::path::Path::new("/dev/stdout"));
        OutputConfig {
            json: self.json.clone(),
            label: self.label.clone(),
            quiet: self.quiet || json_on_stdout,
        }
    }
}

// Loads started beside a benchmark (after the real-time setup, before the
// first sample) and stopped after the last sample. Shared by every
// benchmark. (Not a doc comment: see `ForecastArgs`.)
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

impl LoadOpts {
    /// The validated loads to run beside the measurement, if any.
    pub fn plan(&self) -> Result<Option<LoadPlan>> {
        let Some(text) = &self.load else {
            if self.idle_first.is_some() {
                return Err(Error::usage(
                    "--idle-first needs --load: give the load to start after the idle phase",
                ));
            }
            if self.load_cpus.is_some() || self.load_target.is_some() {
                return Err(Error::usage(
                    "--load-cpus/--load-target need --load: give the loads to run",
                ));
            }
            return Ok(None);
        };
        Ok(Some(LoadPlan {
            spec: crate::load::parse_spec(text)?,
            options: LoadOptions::parse(self.load_cpus.as_deref(), self.load_target.as_deref())?,
            idle_first_ns: self.idle_first,
        }))
    }
}

// The option groups every measuring subcommand takes: real-time runtime,
// output and thresholds, loads. (Not a doc comment: see `ForecastArgs`.)
#[derive(Debug, Args)]
pub struct MeasureArgs {
    #[command(flatten)]
    pub rt: RtArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub load: LoadOpts,
}

impl MeasureArgs {
    /// The engine's setup; `period_ns` is the benchmark's period (deadline default).
    pub fn setup(&self, period_ns: u64) -> Result<Setup> {
        self.setup_with(self.rt.to_config(period_ns)?)
    }

    /// The engine's setup with a runtime chosen by the benchmark (e.g. a simulation's).
    pub fn setup_with(&self, rt: RtConfig) -> Result<Setup> {
        self.output.setup(rt, &self.load)
    }

    /// The run control, with the benchmark's own end conditions.
    pub fn control(
        &self,
        duration_ns: Option<u64>,
        loops: Option<u64>,
        break_threshold_ns: Option<u64>,
    ) -> RunControl {
        self.output.control(duration_ns, loops, break_threshold_ns)
    }
}

impl OutputArgs {
    /// The engine's setup: the runtime `rt`, these outputs and `load`'s loads.
    pub fn setup(&self, rt: RtConfig, load: &LoadOpts) -> Result<Setup> {
        let forecast = self.forecast_settings()?;
        Ok(Setup {
            rt,
            forecast,
            output: self.output_config(),
            loads: load.plan()?,
        })
    }

    /// The run control, with the benchmark's own end conditions.
    pub fn control(
        &self,
        duration_ns: Option<u64>,
        loops: Option<u64>,
        break_threshold_ns: Option<u64>,
    ) -> RunControl {
        RunControl {
            duration_ns,
            loops,
            max_latency_ns: self.max_latency,
            max_forecast_ns: self.max_forecast.map(|m| m.0),
            break_threshold_ns,
            interval_ns: self.interval,
            save_every_ns: self.save_every,
            metrics_listen: self.metrics_listen,
        }
    }
}

/// A duration with a unit, greater than zero.
pub fn positive_duration(s: &str) -> std::result::Result<u64, String> {
    let ns = parse_duration_ns(s)?;
    if ns == 0 {
        return Err(format!(
            "'{s}' is zero; give a positive duration such as 1ms"
        ));
    }
    Ok(ns)
}

/// The period of a measuring loop, or a computation's length: positive and
/// at most [`crate::units::MAX_PERIOD_NS`] (1 s).
pub fn period(s: &str) -> std::result::Result<u64, String> {
    crate::units::parse_period_ns(s)
}

/// `--metrics-listen`: an explicit IP address and port.
pub(crate) fn listen_addr(s: &str) -> std::result::Result<std::net::SocketAddr, String> {
    s.parse().map_err(|_| {
        format!("'{s}' is not ADDR:PORT; give an IP address and a port, e.g. 127.0.0.1:9464 or [::1]:9464")
    })
}

fn dma_latency(s: &str) -> std::result::Result<DmaArg, String> {
    if s == "off" {
        return Ok(DmaArg::Off);
    }
    match s.parse::<i32>() {
        Ok(v) if v >= 0 => Ok(DmaArg::Us(v)),
        _ => Err(format!("'{s}' is not 'off' or a latency in µs (0 or more)")),
    }
}

/// Refuses `option`, which reads the kernel's trace, in a build without
/// it (the board build): exit 3, as on a kernel without the tracer (a
/// suite's optional step is skipped, not failed). `None`: nothing asked.
pub fn needs_kernel_trace(option: Option<&str>) -> Result<()> {
    match option {
        Some(o) if !crate::KERNEL_TRACE => Err(Error::env(format!(
            "{o} reads the kernel's trace, which this build leaves out (the board build); use the full build, or build with --features kernel-trace"
        ))),
        _ => Ok(()),
    }
}

// `--explain` and how many worst cases it explains.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Explain the worst samples of each thread (and every --break-threshold hit): their latency split into idle exit, IRQs, softirqs, other threads, preemption off, hypervisor steal, from the kernel's standard trace events (root, tracefs)
    #[arg(long, hide = super::NO_KERNEL_TRACE)]
    pub explain: bool,
    /// How many of each thread's worst samples --explain explains
    #[arg(long, hide = super::NO_KERNEL_TRACE, value_name = "N", default_value_t = 10, requires = "explain", value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub explain_worst: u64,
    /// With --explain: the kernel stack of the task that held the CPU when the thread was woken (preemption off, interrupts off, a thread that ran), from a stacktrace trigger on the thread's wake-ups and /proc/kallsyms
    #[arg(long, hide = super::NO_KERNEL_TRACE, requires = "explain")]
    pub explain_stacks: bool,
}

impl ExplainArgs {
    /// The worst cases to explain per thread, with --explain.
    pub fn worst(&self) -> Option<usize> {
        self.explain.then_some(self.explain_worst as usize)
    }

    /// The kernel stacks at the measuring threads' wake-ups, with --explain.
    pub fn stacks(&self) -> bool {
        self.explain && self.explain_stacks
    }

    /// Refuse `--explain-stacks` for a benchmark whose explained intervals
    /// hold no wake-up of its thread to record a stack at; `why` completes
    /// "--explain-stacks …".
    pub fn refuse_stacks(&self, why: &str) -> Result<()> {
        if self.explain_stacks {
            return Err(Error::usage(format!("--explain-stacks {why}")));
        }
        Ok(())
    }
}
