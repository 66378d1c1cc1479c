//! The tail beyond the run: a generalized Pareto fit to the histogram's
//! tail ([`threshold`], [`gpd`]), the checks the fit needs on the series
//! ([`checks`]), the spikes and their period ([`spikes`]), and what the
//! fit predicts ([`predict`]). A forecast that a check refuses is withheld,
//! with the check and why. The method, its assumptions and its limits:
//! docs/forecast.md.

// The fit is the full build's (host-tools): a board's result is forecast
// by `rtlat report` on a workstation, and the board build stays small.
#[cfg(feature = "host-tools")]
pub mod checks;
#[cfg(feature = "host-tools")]
mod fit;
#[cfg(feature = "host-tools")]
pub mod gpd;
#[cfg(feature = "host-tools")]
pub mod predict;
#[cfg(feature = "host-tools")]
pub mod special;
#[cfg(feature = "host-tools")]
pub mod spikes;
#[cfg(feature = "host-tools")]
pub mod threshold;

#[cfg(feature = "host-tools")]
pub use fit::{annotate, annotate_missing, forecast, tail_curve};

use crate::result::RunResult;

/// The level of every interval a forecast gives.
pub const LEVEL: f64 = 0.95;
/// The probability per sample forecast unless `--exceedance` says.
pub const DEFAULT_EXCEEDANCE: f64 = 1e-9;

/// What to forecast (the options of a run and of `rtlat report`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ForecastSettings {
    /// The probability per sample of the forecast latency.
    pub exceedance: f64,
    /// A latency bound to forecast against (ns).
    pub bound_ns: Option<u64>,
    /// A run length to forecast for (ns).
    pub within_ns: Option<u64>,
    /// The one-sided confidence of the claim on the bound.
    pub confidence: f64,
    /// The spike threshold (ns); derived from the series when absent.
    pub spike_threshold_ns: Option<u64>,
}

impl Default for ForecastSettings {
    fn default() -> Self {
        ForecastSettings {
            exceedance: DEFAULT_EXCEEDANCE,
            bound_ns: None,
            within_ns: None,
            confidence: 0.95,
            spike_threshold_ns: None,
        }
    }
}

/// Whether a forecast of `r` breaks `--max-forecast`: its upper limit is
/// above `limit_ns`, or it was withheld (it cannot show the limit holds).
pub fn exceeds(r: &RunResult, limit_ns: u64) -> bool {
    r.threads
        .iter()
        .filter(|t| t.summary.samples > 0)
        .any(|t| match &t.forecast {
            Some(f) => f.per_sample.is_none_or(|v| v.high_ns > limit_ns),
            None => true,
        })
}

/// The board build forecasts nothing (its summary says nothing of the
/// tail); `rtlat report` of its result on a workstation does.
#[cfg(not(feature = "host-tools"))]
pub fn annotate(_: &mut RunResult, _: &ForecastSettings) {}

/// See [`annotate`]: nothing in the board build.
#[cfg(not(feature = "host-tools"))]
pub fn annotate_missing(_: &mut RunResult, _: &ForecastSettings, _: bool) {}

#[cfg(all(test, feature = "host-tools"))]
mod tests;
