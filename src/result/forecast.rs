//! A series' forecast as the result file keeps it: the tail beyond the
//! run, with the fit, every check and the spikes, or the reason it was
//! withheld. Made by `crate::forecast`; docs/forecast.md explains it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A series' forecast as a result file has it. The board build neither
/// makes nor shows forecasts: it passes the field by unread, and the parser
/// of its many optional parts stays out of the board binary.
pub(crate) fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Forecast>, D::Error> {
    #[cfg(feature = "host-tools")]
    return Option::<Forecast>::deserialize(d);
    #[cfg(not(feature = "host-tools"))]
    return serde::de::IgnoredAny::deserialize(d).map(|_| None);
}

/// The field written: a board build never has a forecast to write.
pub(crate) fn write<S: Serializer>(f: &Option<Forecast>, s: S) -> Result<S::Ok, S::Error> {
    #[cfg(feature = "host-tools")]
    return f.serialize(s);
    #[cfg(not(feature = "host-tools"))]
    return {
        let _ = f;
        s.serialize_none()
    };
}

/// The forecast of one series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Forecast {
    /// The probability per sample the latency is forecast at (`--exceedance`).
    #[schemars(extend("exclusiveMinimum" = 0, "exclusiveMaximum" = 1))]
    pub exceedance: f64,
    /// The level of every interval below (0.95).
    pub level: f64,
    /// Why no latency is forecast: the check that failed and how. Absent
    /// when the forecast is made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld: Option<String>,
    /// The latency exceeded with probability `exceedance` per sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_sample: Option<ForecastValue>,
    /// The latency exceeded with probability `exceedance` within an hour
    /// of running (at the run's sample rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_hour: Option<ForecastValue>,
    /// The maximum of a run of `--within`: its median and an interval that
    /// holds it with probability `level`, the fit's uncertainty included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_within: Option<MaxWithin>,
    /// What the forecast says of `--bound`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<BoundForecast>,
    /// The generalized Pareto fit of the tail, when a threshold was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<TailFit>,
    /// Every check the forecast rests on, in the order they are made.
    pub checks: Vec<TailCheck>,
    /// The samples above the spike threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spikes: Option<Spikes>,
}

/// A forecast latency and its interval (ns).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ForecastValue {
    pub value_ns: u64,
    pub low_ns: u64,
    pub high_ns: u64,
}

/// The maximum of a run of a given length.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MaxWithin {
    pub within_ns: u64,
    pub value_ns: u64,
    pub low_ns: u64,
    pub high_ns: u64,
}

/// What the forecast says of a bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BoundForecast {
    pub bound_ns: u64,
    /// With `--within`: the probability that a run this long exceeds the
    /// bound at least once, and its interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability_low: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability_high: Option<f64>,
    /// `--confidence`: the one-sided confidence of the claim below.
    pub confidence: f64,
    /// `holds`: the upper limit of the latency at `exceedance` is below the
    /// bound; `longer`: a run `more_ns` longer would show it, if the tail
    /// stays as fitted; `never`: the forecast itself reaches the bound.
    #[schemars(extend("enum" = ["holds", "longer", "never"]))]
    pub claim: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_ns: Option<u64>,
}

/// The generalized Pareto distribution fitted above the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TailFit {
    pub threshold_ns: u64,
    /// Samples at or above the threshold, and in all.
    pub exceedances: u64,
    pub samples: u64,
    /// ξ: above 0 a heavy tail, 0 exponential, below 0 a tail with an end.
    pub shape: f64,
    /// σ in ns.
    pub scale_ns: f64,
    /// Thresholds tried by the rule before this one was accepted (itself included).
    pub thresholds_tried: u64,
}

/// One check: its test, statistic and p-value, and whether it passed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TailCheck {
    /// `goodness of fit`, `stationarity`, `periodicity`, `independence of sizes`,
    /// `independence of gaps`, `clustering`.
    pub name: String,
    /// The test: `Anderson-Darling`, `Kolmogorov-Smirnov`, `Ljung-Box`, `runs` …
    pub test: String,
    /// `null`: the check was not run (too little data; `detail` says).
    pub statistic: Option<f64>,
    pub p_value: Option<f64>,
    pub passed: bool,
    /// What was tested or found, in words.
    pub detail: String,
}

/// The samples above a threshold: how many, how often, and their rhythm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Spikes {
    /// `--spike-threshold`, or derived from the interval maxima.
    pub threshold_ns: u64,
    /// Samples above the threshold (from the histogram).
    pub count: u64,
    /// Intervals of the series whose maximum is above the threshold.
    pub intervals: u64,
    /// Mean time between spikes as hwlatdetect gives it: from the first to
    /// the last, divided by count − 1. `null` with fewer than 2 spikes.
    pub mtbf_ns: Option<u64>,
    /// Spike times are known to this: the interval of the series.
    pub resolution_ns: u64,
    /// A period found in the spike times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<Periodicity>,
}

/// Spikes that come at a regular period.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Periodicity {
    pub period_ns: u64,
    /// The standard deviation of the spikes' times about the period's grid.
    pub jitter_ns: u64,
    /// The share of the spikes on the grid (0–1).
    pub share: f64,
}

#[cfg(test)]
mod tests {
    use crate::result::RunResult;
    use serde_json::json;

    /// A result whose first thread carries a withheld forecast.
    fn with_forecast() -> serde_json::Value {
        let mut v = serde_json::to_value(crate::render::testdata::timer_phases()).unwrap();
        v["threads"][0]["forecast"] = json!({
            "exceedance": 1e-6, "level": 0.95, "withheld": "a level shift halfway",
            "checks": [], "spikes": null
        });
        v
    }

    #[test]
    fn a_forecast_in_a_file_is_read_by_the_full_build_and_passed_by_on_a_board() {
        let r: RunResult = serde_json::from_value(with_forecast()).unwrap();
        let f = r.threads[0].forecast.as_ref();
        if cfg!(feature = "host-tools") {
            assert_eq!(
                f.unwrap().withheld.as_deref(),
                Some("a level shift halfway")
            );
            let back = serde_json::to_value(&r).unwrap();
            assert_eq!(back["threads"][0]["forecast"]["level"], 0.95);
        } else {
            assert!(f.is_none());
        }
        // The rest of the thread is read alike in both builds.
        let plain = crate::render::testdata::timer_phases();
        assert_eq!(r.threads[0].summary.max_ns, plain.threads[0].summary.max_ns);
        assert_eq!(r.threads.len(), plain.threads.len());
    }

    #[test]
    fn a_malformed_forecast_is_refused_by_the_full_build() {
        let mut v = with_forecast();
        v["threads"][0]["forecast"]["level"] = json!("high");
        let read = serde_json::from_value::<RunResult>(v);
        assert_eq!(read.is_err(), cfg!(feature = "host-tools"));
    }
}
