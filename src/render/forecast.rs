//! A forecast in words: the lines the summary and `rtlat report` print for
//! each series, and the verdict on `--max-forecast`.

use super::printable::printable;
use crate::result::forecast::{BoundForecast, Forecast, ForecastValue, Spikes};
use crate::result::RunResult;
use crate::units::{human_duration, us};

/// `1e-9`
fn prob(p: f64) -> String {
    if p == 0.0 {
        return "0".into();
    }
    let s = format!("{p:.1e}");
    s.replace(".0e", "e")
}

/// Latencies beyond this are shown as beyond it: a tail that heavy
/// forecasts nothing a real-time system could use.
const BEYOND_NS: u64 = 1_000_000_000_000;

/// `58.201 us`, or `beyond 1000 s`.
fn lat(ns: u64) -> String {
    if ns > BEYOND_NS {
        format!("beyond {} s", BEYOND_NS / 1_000_000_000)
    } else {
        format!("{} us", us(ns))
    }
}

/// `58.201 us (51.090 us to 71.322 us)`
fn value(v: &ForecastValue) -> String {
    format!(
        "{} ({} to {})",
        lat(v.value_ns),
        lat(v.low_ns),
        lat(v.high_ns)
    )
}

/// A duration in words, rounded to what matters: `3h10m`, `42.0s`.
fn span(ns: u64) -> String {
    const MIN: u64 = 60_000_000_000;
    if ns >= 3_600_000_000_000 {
        let m = (ns + MIN / 2) / MIN;
        format!("{}h{:02}m", m / 60, m % 60)
    } else if ns >= MIN {
        let s = (ns + 500_000_000) / 1_000_000_000;
        format!("{}m{:02}s", s / 60, s % 60)
    } else if ns >= 1_000_000_000 {
        format!("{:.1}s", ns as f64 / 1e9)
    } else {
        format!("{:.1}ms", ns as f64 / 1e6)
    }
}

/// The lines of one series' forecast, each starting with `forecast NAME:`
/// or `spikes NAME:`.
pub fn lines(name: &str, f: &Forecast) -> Vec<String> {
    let name = printable(name);
    let mut out = Vec::new();
    match (&f.withheld, &f.per_sample) {
        (Some(why), _) => out.push(format!("forecast {name}: WITHHELD, {}", printable(why))),
        (None, Some(v)) => {
            let mut line = format!(
                "forecast {name}: {} per sample: {}",
                prob(f.exceedance),
                value(v)
            );
            if let Some(h) = &f.per_hour {
                line += &format!("; {} per hour: {}", prob(f.exceedance), value(h));
            }
            line += &format!(", {:.0} % intervals", 100.0 * f.level);
            out.push(line);
        }
        (None, None) => out.push(format!(
            "forecast {name}: {} per sample is not beyond the tail's threshold: the samples answer it",
            prob(f.exceedance)
        )),
    }
    if let Some(m) = &f.max_within {
        out.push(format!(
            "forecast {name}: the maximum of {}: {} ({} to {})",
            span(m.within_ns),
            lat(m.value_ns),
            lat(m.low_ns),
            lat(m.high_ns)
        ));
    }
    if let Some(b) = &f.bound {
        out.push(format!("forecast {name}: {}", bound(b, f.exceedance)));
    }
    if let Some(s) = &f.spikes {
        out.push(format!("spikes {name}: {}", spikes(s)));
    }
    out
}

fn bound(b: &BoundForecast, p: f64) -> String {
    let mut s = format!("bound {} us", us(b.bound_ns));
    if let (Some(w), Some(v), Some(lo), Some(hi)) = (
        b.within_ns,
        b.probability,
        b.probability_low,
        b.probability_high,
    ) {
        s += &format!(
            ": exceeded within {} with probability {} ({} to {})",
            span(w),
            prob(v),
            prob(lo),
            prob(hi)
        );
    }
    let conf = format!("{:.0} %", 100.0 * b.confidence);
    s += &match (b.claim.as_str(), b.more_ns) {
        ("holds", _) => format!("; holds at {} per sample with {conf} confidence", prob(p)),
        ("longer", Some(more)) => format!(
            "; to show it holds at {} per sample with {conf} confidence, run at least {} more",
            prob(p),
            span(more)
        ),
        _ => format!(
            "; the forecast at {} per sample reaches it: no run shows it holds",
            prob(p)
        ),
    };
    s
}

fn spikes(s: &Spikes) -> String {
    let mut out = format!("{} above {} us", s.count, us(s.threshold_ns));
    if let Some(m) = s.mtbf_ns {
        out += &format!(", MTBF {}", span(m));
    }
    if let Some(p) = &s.period {
        out += &format!(
            ", every {} ± {}: {:.0} % of the spikes",
            human_duration(p.period_ns),
            human_duration(p.jitter_ns),
            100.0 * p.share
        );
    }
    out += &format!(" (times known to {})", human_duration(s.resolution_ns));
    out
}

/// Every forecast line of a result, then the verdict on `--max-forecast`.
pub fn all_lines(r: &RunResult) -> Vec<String> {
    let mut out: Vec<String> = r
        .threads
        .iter()
        .filter_map(|t| Some(lines(&t.name, t.forecast.as_ref()?)))
        .flatten()
        .collect();
    if let Some(limit) = r.thresholds.max_forecast_ns {
        let p = r
            .threads
            .iter()
            .find_map(|t| t.forecast.as_ref())
            .map(|f| format!(" at {} per sample", prob(f.exceedance)))
            .unwrap_or_default();
        out.push(format!(
            "max-forecast {} us{p}: {}",
            us(limit),
            if r.thresholds.max_forecast_exceeded {
                "EXCEEDED"
            } else {
                "ok"
            }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probabilities_and_spans_read_short() {
        assert_eq!(prob(1e-9), "1e-9");
        assert_eq!(prob(2.5e-7), "2.5e-7");
        assert_eq!(span(11_400_000_000_000), "3h10m");
        assert_eq!(span(90_000_000_000), "1m30s");
        assert_eq!(span(4_200_000_000), "4.2s");
        assert_eq!(span(97_100_000), "97.1ms");
        assert_eq!(lat(58_201), "58.201 us");
        assert_eq!(lat(u64::MAX), "beyond 1000 s");
    }
}
