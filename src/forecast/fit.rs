//! A result's series forecast: the threshold chosen, the tail fitted,
//! the checks made, and what the fit predicts ([`super`]'s method).

use super::predict::{self, Claim, Estimate};
use super::threshold::{self, Chosen, NoThreshold};
use super::{checks, special, spikes, ForecastSettings, LEVEL};
use crate::result::forecast::{
    BoundForecast, Forecast, ForecastValue, MaxWithin, TailCheck, TailFit,
};
use crate::result::{RunResult, Series};
use crate::stats::Histogram;

const HOUR_NS: f64 = 3.6e12;

/// Forecast every thread of a result that has samples.
pub fn annotate(r: &mut RunResult, s: &ForecastSettings) {
    annotate_missing(r, s, true);
}

/// Forecast the threads with samples that have no forecast yet, or all of
/// them with `again`.
pub fn annotate_missing(r: &mut RunResult, s: &ForecastSettings, again: bool) {
    let duration = r.duration_ns.filter(|&d| d > 0);
    for t in &mut r.threads {
        if t.summary.samples == 0 || (t.forecast.is_some() && !again) {
            continue;
        }
        let min = t.summary.min_ns.max(0) as u64;
        let max = t.summary.max_ns.max(0) as u64;
        let Ok(h) = Histogram::from_record(&t.histogram, min, max) else {
            continue;
        };
        t.forecast = Some(match t.histogram.overflow {
            Some(o) => beyond_range(o, s),
            None => forecast(&h, &t.series, duration, s),
        });
    }
}

/// The forecast of an imported histogram with samples beyond its tool's
/// range: withheld, since the tail's shape is what the tool did not keep.
fn beyond_range(o: crate::stats::histogram::Overflow, s: &ForecastSettings) -> Forecast {
    Forecast {
        exceedance: s.exceedance,
        level: LEVEL,
        withheld: Some(format!(
            "{} samples lie beyond the histogram's range (at least {} us): the tail was not kept",
            o.count,
            crate::units::us(o.from_ns)
        )),
        per_sample: None,
        per_hour: None,
        max_within: None,
        bound: None,
        fit: None,
        checks: Vec::new(),
        spikes: None,
    }
}

/// The forecast of one series from its histogram and per-interval series;
/// `duration_ns` gives the sample rate (per hour, `--within`).
pub fn forecast(
    h: &Histogram,
    series: &Series,
    duration_ns: Option<u64>,
    s: &ForecastSettings,
) -> Forecast {
    let maxima: Vec<f64> = series
        .points
        .iter()
        .filter(|p| p.samples > 0)
        .map(|p| p.max_ns as f64)
        .collect();
    let spike_at = s
        .spike_threshold_ns
        .map(|v| v as f64)
        .or_else(|| spikes::default_threshold(&maxima));
    let spikes = spike_at.map(|th| spikes::spikes(h, series, th));
    let chosen = threshold::choose(h);
    let mut checks = vec![fit_check(&chosen)];
    checks.push(checks::stationarity(&maxima));
    if let Some(th) = spike_at {
        let ev = spikes::events(series, th);
        let period = spikes.as_ref().and_then(|sp| sp.period.as_ref());
        checks.push(checks::periodicity(period, ev.len()));
        let sizes: Vec<f64> = ev.iter().map(|e| e.1).collect();
        checks.push(checks::ljung_box(
            "independence of sizes",
            "spike sizes",
            &sizes,
        ));
        let res = series.interval_ns.max(1) as f64;
        let gaps: Vec<f64> = ev.windows(2).map(|w| (w[1].0 - w[0].0) / res).collect();
        checks.push(checks::ljung_box(
            "independence of gaps",
            "gaps between spikes",
            &gaps,
        ));
        let spiked: Vec<bool> = series
            .points
            .iter()
            .filter(|p| p.samples > 0)
            .map(|p| p.max_ns as f64 > th)
            .collect();
        checks.push(checks::runs(&spiked));
    }
    let mut f = Forecast {
        exceedance: s.exceedance,
        level: LEVEL,
        withheld: withheld(&chosen, &checks),
        per_sample: None,
        per_hour: None,
        max_within: None,
        bound: None,
        fit: chosen.as_ref().ok().map(tail_fit),
        checks,
        spikes,
    };
    if let (None, Ok(c)) = (&f.withheld, &chosen) {
        predictions(&mut f, c, h.samples as f64, duration_ns, s);
    }
    f
}

/// A fitted tail as a plot draws it: the latency (ns) at each per-sample
/// probability from the threshold's share down to `down_to`, with its
/// interval. `None` when no threshold is found.
pub fn tail_curve(h: &Histogram, down_to: f64, points: usize) -> Option<Vec<(f64, Estimate)>> {
    let c = threshold::choose(h).ok()?;
    let top = ln_of(c.tail.rate());
    let bottom = ln_of(down_to);
    if bottom >= top || bottom.is_nan() || points < 2 {
        return None;
    }
    let out: Vec<(f64, Estimate)> = (0..points)
        .filter_map(|i| {
            // Just below the threshold's share, so that each p is in the tail.
            let lp = top - 1e-9 - (top - bottom) * i as f64 / (points - 1) as f64;
            let p = special::exp(lp);
            predict::latency_at(&c, p, LEVEL).map(|e| (p, e))
        })
        .collect();
    (!out.is_empty()).then_some(out)
}

fn ln_of(x: f64) -> f64 {
    special::ln(x)
}

fn tail_fit(c: &Chosen) -> TailFit {
    TailFit {
        threshold_ns: c.tail.threshold as u64,
        exceedances: c.tail.count() as u64,
        samples: c.tail.samples as u64,
        shape: c.fit.gpd.shape,
        scale_ns: c.fit.gpd.scale,
        thresholds_tried: c.tried as u64,
    }
}

fn fit_check(chosen: &Result<Chosen, NoThreshold>) -> TailCheck {
    let us = |ns: f64| crate::units::us(ns as u64);
    let (stat, p, passed, detail) = match chosen {
        Ok(c) => (
            Some(c.a2),
            Some(c.p_value),
            true,
            format!(
                "generalized Pareto above {} us: {} of {} samples, shape {:.3} (A² = {:.3}, {}; {} threshold(s) tried)",
                us(c.tail.threshold),
                c.tail.count(),
                c.tail.samples,
                c.fit.gpd.shape,
                c.a2,
                checks::p_text(c.p_value),
                c.tried
            ),
        ),
        Err(NoThreshold::TooFew { samples }) => (
            None,
            None,
            false,
            format!(
                "too few samples in the tail: the fit needs {} exceedances within the top 1 % of the samples, and {samples} samples give fewer",
                threshold::FEWEST
            ),
        ),
        Err(NoThreshold::Rejected {
            tried,
            best_p,
            a2,
            threshold_ns,
        }) => (
            Some(*a2),
            Some(*best_p),
            false,
            format!(
                "no threshold gives a generalized Pareto tail: the best of {tried}, {} us, has A² = {a2:.3}, {}",
                us(*threshold_ns as f64),
                checks::p_text(*best_p)
            ),
        ),
    };
    TailCheck {
        name: "goodness of fit".into(),
        test: "Anderson-Darling".into(),
        statistic: stat,
        p_value: p,
        passed,
        detail,
    }
}

/// The reason to withhold: the failed check that matters most, named. Too
/// few samples comes first; then what breaks the method's assumptions
/// (stationarity, periodicity, independence), whatever the fit's test says;
/// then the fit.
fn withheld(chosen: &Result<Chosen, NoThreshold>, checks: &[TailCheck]) -> Option<String> {
    let too_few = matches!(chosen, Err(NoThreshold::TooFew { .. }));
    let failed = checks
        .iter()
        .filter(|c| !c.passed)
        .min_by_key(|c| match c.name.as_str() {
            "goodness of fit" if too_few => 0,
            "stationarity" => 1,
            "periodicity" => 2,
            "goodness of fit" => 4,
            _ => 3,
        })?;
    Some(match failed.name.as_str() {
        "goodness of fit" if too_few => failed.detail.clone(),
        "goodness of fit" => format!("goodness of fit: {}", failed.detail),
        "stationarity" => format!("not stationary: {}", failed.detail),
        "periodicity" => format!("{}: not independent", failed.detail),
        name => format!("not independent: {name}: {}", failed.detail),
    })
}

fn value(e: Estimate) -> ForecastValue {
    ForecastValue {
        value_ns: e.value.round() as u64,
        low_ns: e.low.round() as u64,
        high_ns: e.high.round() as u64,
    }
}

fn predictions(
    f: &mut Forecast,
    c: &Chosen,
    n: f64,
    duration_ns: Option<u64>,
    s: &ForecastSettings,
) {
    f.per_sample = predict::latency_at(c, s.exceedance, LEVEL).map(value);
    // Samples in `ns` of running at the run's rate.
    let samples_in = |ns: u64| duration_ns.map(|d| n * ns as f64 / d as f64);
    if let Some(nh) = samples_in(HOUR_NS as u64) {
        let p = predict::per_sample(s.exceedance, nh);
        f.per_hour = predict::latency_at(c, p, LEVEL).map(value);
    }
    if let (Some(w), Some(nw)) = (s.within_ns, s.within_ns.and_then(samples_in)) {
        f.max_within = predict::max_of(c, nw, LEVEL).map(|e| MaxWithin {
            within_ns: w,
            value_ns: e.value.round() as u64,
            low_ns: e.low.round() as u64,
            high_ns: e.high.round() as u64,
        });
    }
    let Some(b) = s.bound_ns else { return };
    let within = s.within_ns.zip(s.within_ns.and_then(samples_in));
    let p = within.and_then(|(_, nw)| predict::exceed_within(c, b as f64, nw, LEVEL));
    let claim = predict::claim(c, b as f64, s.exceedance, s.confidence);
    let (name, more_ns) = match claim {
        Some(Claim::Holds) => ("holds", None),
        Some(Claim::Longer(r)) => (
            "longer",
            duration_ns.map(|d| ((r - 1.0).max(0.0) * d as f64).round() as u64),
        ),
        Some(Claim::Never) | None => ("never", None),
    };
    f.bound = Some(BoundForecast {
        bound_ns: b,
        within_ns: within.map(|w| w.0),
        probability: p.map(|e| e.value),
        probability_low: p.map(|e| e.low),
        probability_high: p.map(|e| e.high),
        confidence: s.confidence,
        claim: name.into(),
        more_ns,
    });
}
