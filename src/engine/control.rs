//! Run control and output settings shared by every benchmark: defined once,
//! flattened into each benchmark's configuration.

use super::rt::RtConfig;
use crate::load::LoadPlan;
use serde::Serialize;
use std::path::PathBuf;

/// When a run ends and what it must stay within.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RunControl {
    /// Stop after this long (None: until interrupted or `loops`).
    pub duration_ns: Option<u64>,
    /// Stop after this many samples per measuring thread.
    pub loops: Option<u64>,
    /// Exit 1 if any latency exceeds this (results are written first).
    pub max_latency_ns: Option<u64>,
    /// Exit 1 if a thread's forecast (upper limit) exceeds this, or is withheld.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_forecast_ns: Option<u64>,
    /// Stop at the first sample above this, mark the kernel trace, stop tracing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub break_threshold_ns: Option<u64>,
    /// Interval of live output and of the over-time series.
    pub interval_ns: u64,
    /// How often the result file is rewritten during the run.
    pub save_every_ns: u64,
    /// Serve live metrics for Prometheus here (`--metrics-listen`); not a
    /// measurement setting, so not recorded.
    #[serde(skip)]
    pub metrics_listen: Option<std::net::SocketAddr>,
}

/// Where a run's output goes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutputConfig {
    /// The result file, rewritten atomically during the run.
    pub json: Option<PathBuf>,
    /// A label for reports and comparisons.
    pub label: Option<String>,
    /// Print only the final summary.
    pub quiet: bool,
}

/// What every benchmark's configuration hands the engine besides its own
/// settings: the real-time runtime, where output goes, and the loads. Not
/// part of the result's `config` (the tuning and loads are recorded apart).
#[derive(Debug, Clone, Default)]
pub struct Setup {
    pub rt: RtConfig,
    /// What the tail forecast at the end of the run forecasts.
    pub forecast: crate::forecast::ForecastSettings,
    pub output: OutputConfig,
    /// Loads to run beside the measurement (`--load`), possibly after an idle phase.
    pub loads: Option<LoadPlan>,
}
