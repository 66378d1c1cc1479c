//! The Prometheus text exposition format (version 0.0.4) of a run's latest
//! snapshot, or OpenMetrics 1.0 for a client that asks for it: the same
//! families, with each series' maximum as an exemplar on its bucket,
//! carrying the maximum's culprit where the benchmark knows it.

use crate::stats::histogram::{lower_bound, upper_bound};
use crate::stats::recorder::Totals;
use crate::stats::Histogram;
use std::fmt::Write;

/// The `le` bounds of `rtlat_latency_seconds`, in ns: 1 µs … 10 ms in 1-2-5 steps.
pub const BOUNDS_NS: [u64; 13] = [
    1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000,
    5_000_000, 10_000_000,
];

/// One measured series as the endpoint shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeriesSnapshot {
    pub name: String,
    /// Samples per `BOUNDS_NS` slot (not cumulative); the last slot is above 10 ms.
    pub buckets: [u64; BOUNDS_NS.len() + 1],
    /// Samples in the histogram (the sum of `buckets`).
    pub count: u64,
    pub sum_ns: u64,
    /// Samples and overruns the recorder published (may trail `count` by a few).
    pub samples: u64,
    pub overruns: u64,
    pub max_ns: u64,
    /// The maximum of the latest finished interval (`--interval`), if one finished.
    pub interval_max_ns: Option<u64>,
    /// The highest latency whose culprit is known, and that culprit.
    pub max_by: Option<(u64, String)>,
}

impl SeriesSnapshot {
    /// Reduce rtlat's lossless histogram to the exposition's buckets. Each of
    /// its buckets goes whole into the first bound at or above the highest
    /// value it can hold — its upper edge, or the series' exact maximum when
    /// that lies inside it: no sample is counted twice or lost, and a bound is
    /// never below a sample counted under it (a bucket straddling a bound, at
    /// most 1/128 of it wide, is counted under the next bound unless the
    /// maximum shows its samples are all at or under this one).
    pub fn new(name: &str, totals: &Totals, hist: &Histogram) -> Self {
        let mut buckets = [0u64; BOUNDS_NS.len() + 1];
        for (i, c) in hist.nonzero() {
            let mut hi = upper_bound(i);
            // The maximum bounds every sample; used only where it falls in
            // this bucket (a snapshot whose totals trail it is not trusted).
            if (lower_bound(i)..hi).contains(&totals.max) {
                hi = totals.max;
            }
            let slot = BOUNDS_NS
                .iter()
                .position(|&b| hi <= b)
                .unwrap_or(BOUNDS_NS.len());
            buckets[slot] += c;
        }
        SeriesSnapshot {
            name: name.to_string(),
            buckets,
            count: buckets.iter().sum(),
            sum_ns: totals.sum,
            samples: totals.samples,
            overruns: totals.overruns,
            max_ns: totals.max,
            interval_max_ns: None,
            max_by: None,
        }
    }
}

/// A load's achieved rate.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadRate {
    pub name: String,
    pub unit: String,
    pub rate: f64,
}

/// What the endpoint serves: the latest state of every series.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    pub series: Vec<SeriesSnapshot>,
    pub loads: Vec<LoadRate>,
    pub elapsed_ns: u64,
}

/// Seconds from ns, as Prometheus writes floats.
fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(v: &str) -> String {
    // The backslash first, so the ones added after are not doubled.
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A per-series metric family: name, type, help, and its value of a series.
type Family = (
    &'static str,
    &'static str,
    &'static str,
    fn(&SeriesSnapshot) -> String,
);

/// An exemplar's label set holds at most 128 characters.
const EXEMPLAR_CHARS: usize = 128 - "culprit".len();

/// ` # {culprit="…"} SECONDS`: the exemplar of the bucket bounded by
/// `le_ns` (`None`: +Inf) when the series' known maximum falls in it.
fn exemplar(s: &SeriesSnapshot, below_ns: u64, le_ns: Option<u64>) -> String {
    match &s.max_by {
        Some((ns, who)) if *ns > below_ns && le_ns.is_none_or(|le| *ns <= le) => {
            let who: String = who.chars().take(EXEMPLAR_CHARS).collect();
            format!(" # {{culprit=\"{}\"}} {}", escape(&who), secs(*ns))
        }
        _ => String::new(),
    }
}

/// `rtlat_latency_seconds`, a histogram per series; each series' known
/// maximum an exemplar on its bucket when `open`.
fn histograms(out: &mut String, snap: &Snapshot, open: bool) {
    header(
        out,
        "rtlat_latency_seconds",
        "histogram",
        "Latency per series, from rtlat's lossless histogram.",
    );
    for s in &snap.series {
        let name = escape(&s.name);
        let mut cumulative = 0;
        let mut below = 0;
        let example = |below, le| {
            if open {
                exemplar(s, below, le)
            } else {
                String::new()
            }
        };
        for (b, n) in BOUNDS_NS.iter().zip(&s.buckets) {
            cumulative += n;
            let _ = writeln!(
                out,
                "rtlat_latency_seconds_bucket{{series=\"{name}\",le=\"{}\"}} {cumulative}{}",
                secs(*b),
                example(below, Some(*b))
            );
            below = *b;
        }
        let _ = writeln!(
            out,
            "rtlat_latency_seconds_bucket{{series=\"{name}\",le=\"+Inf\"}} {}{}",
            s.count,
            example(below, None)
        );
        let _ = writeln!(
            out,
            "rtlat_latency_seconds_sum{{series=\"{name}\"}} {}",
            secs(s.sum_ns)
        );
        let _ = writeln!(
            out,
            "rtlat_latency_seconds_count{{series=\"{name}\"}} {}",
            s.count
        );
    }
}

/// The whole exposition: the info metric, then each family over every
/// series; OpenMetrics when `open`.
pub fn render(info: &[(&str, String)], snap: &Snapshot, open: bool) -> String {
    let mut out = String::with_capacity(1024 + snap.series.len() * 2048);
    header(
        &mut out,
        "rtlat_info",
        "gauge",
        "The measuring run: benchmark, host, kernel, preemption model, rtlat version.",
    );
    let labels: Vec<String> = info
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    let _ = writeln!(out, "rtlat_info{{{}}} 1", labels.join(","));
    header(
        &mut out,
        "rtlat_elapsed_seconds",
        "gauge",
        "Time since the measurement started.",
    );
    let _ = writeln!(out, "rtlat_elapsed_seconds {}", secs(snap.elapsed_ns));

    histograms(&mut out, snap, open);
    let families: [Family; 3] = [
        (
            "rtlat_samples_total",
            "counter",
            "Samples measured per series.",
            |s| s.samples.to_string(),
        ),
        (
            "rtlat_overruns_total",
            "counter",
            "Periods missed per series.",
            |s| s.overruns.to_string(),
        ),
        (
            "rtlat_latency_max_seconds",
            "gauge",
            "The highest latency so far per series (exact).",
            |s| secs(s.max_ns).to_string(),
        ),
    ];
    for (family, kind, help, value) in families {
        // OpenMetrics names a counter's family without its samples' suffix.
        let typed = match (open, family.strip_suffix("_total")) {
            (true, Some(stem)) => stem,
            _ => family,
        };
        header(&mut out, typed, kind, help);
        for s in &snap.series {
            let _ = writeln!(
                out,
                "{family}{{series=\"{}\"}} {}",
                escape(&s.name),
                value(s)
            );
        }
    }
    header(
        &mut out,
        "rtlat_latency_interval_max_seconds",
        "gauge",
        "The highest latency of the latest finished interval per series (--interval).",
    );
    for s in &snap.series {
        if let Some(ns) = s.interval_max_ns {
            let _ = writeln!(
                out,
                "rtlat_latency_interval_max_seconds{{series=\"{}\"}} {}",
                escape(&s.name),
                secs(ns)
            );
        }
    }
    if !snap.loads.is_empty() {
        header(
            &mut out,
            "rtlat_load_rate",
            "gauge",
            "Achieved rate of each load beside the measurement (average since it started).",
        );
        for l in &snap.loads {
            let _ = writeln!(
                out,
                "rtlat_load_rate{{load=\"{}\",unit=\"{}\"}} {}",
                escape(&l.name),
                escape(&l.unit),
                l.rate
            );
        }
    }
    if open {
        out.push_str("# EOF\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(values: &[u64]) -> SeriesSnapshot {
        let mut h = Histogram::new();
        let mut t = Totals::default();
        for &v in values {
            h.record(v);
            t.samples += 1;
            t.sum += v;
            t.max = t.max.max(v);
        }
        SeriesSnapshot::new("cpu0", &t, &h)
    }

    #[test]
    fn every_sample_lands_in_one_bucket_never_below_its_value() {
        let s = series(&[500, 999, 1_000, 1_003, 1_004, 7_000, 10_000_000, 20_000_000]);
        assert_eq!(s.count, 8);
        // 500 and 999 are exactly under 1 µs; the bucket 1000..=1003 straddles
        // 1 µs and goes under 2 µs with 1004.
        assert_eq!(s.buckets[0], 2);
        assert_eq!(s.buckets[1], 3);
        assert_eq!(s.buckets[3], 1); // 7 µs under 10 µs
                                     // 10 ms exactly sits in a bucket reaching past 10 ms: only +Inf, as 20 ms.
        assert_eq!(s.buckets[BOUNDS_NS.len() - 1], 0);
        assert_eq!(s.buckets[BOUNDS_NS.len()], 2);
    }

    #[test]
    fn the_maximum_keeps_a_straddling_bucket_under_its_bound() {
        // 4 981 191 ns sits in the bucket 4 980 736..=5 013 503, which
        // straddles 5 ms: as the series' maximum it is under 5 ms, and so is
        // the bucket (the highest bucket must bound the maximum).
        let s = series(&[3_000, 4_981_191]);
        assert_eq!(
            s.buckets[BOUNDS_NS.iter().position(|&b| b == 5_000_000).unwrap()],
            1
        );
        // The same bucket below a larger maximum still goes under the next bound.
        let s = series(&[4_981_191, 7_000_000]);
        assert_eq!(
            s.buckets[BOUNDS_NS.iter().position(|&b| b == 10_000_000).unwrap()],
            2
        );
        // A maximum that trails the histogram (outside the bucket) is not used.
        let mut h = Histogram::new();
        h.record(4_981_191);
        let t = Totals {
            samples: 1,
            sum: 4_981_191,
            max: 4_000_000,
            ..Default::default()
        };
        let s = SeriesSnapshot::new("cpu0", &t, &h);
        assert_eq!(
            s.buckets[BOUNDS_NS.iter().position(|&b| b == 10_000_000).unwrap()],
            1
        );
    }

    #[test]
    fn exposition_is_cumulative_and_labelled() {
        let snap = Snapshot {
            series: vec![series(&[1_500, 3_000, 3_000])],
            loads: vec![LoadRate {
                name: "exec".into(),
                unit: "ops/s".into(),
                rate: 12.5,
            }],
            elapsed_ns: 2_000_000_000,
        };
        let text = render(&[("host", "b\"1".into())], &snap, false);
        assert!(text.contains("rtlat_info{host=\"b\\\"1\"} 1\n"), "{text}");
        assert!(text.contains("rtlat_latency_seconds_bucket{series=\"cpu0\",le=\"0.000001\"} 0\n"));
        assert!(text.contains("rtlat_latency_seconds_bucket{series=\"cpu0\",le=\"0.000002\"} 1\n"));
        assert!(text.contains("rtlat_latency_seconds_bucket{series=\"cpu0\",le=\"0.000005\"} 3\n"));
        assert!(text.contains("rtlat_latency_seconds_bucket{series=\"cpu0\",le=\"+Inf\"} 3\n"));
        assert!(text.contains("rtlat_latency_seconds_count{series=\"cpu0\"} 3\n"));
        assert!(text.contains("rtlat_latency_seconds_sum{series=\"cpu0\"} 0.0000075\n"));
        assert!(text.contains("rtlat_samples_total{series=\"cpu0\"} 3\n"));
        assert!(text.contains("rtlat_latency_max_seconds{series=\"cpu0\"} 0.000003\n"));
        assert!(text.contains("rtlat_load_rate{load=\"exec\",unit=\"ops/s\"} 12.5\n"));
        assert!(text.contains("rtlat_elapsed_seconds 2\n"));
        assert!(
            !text.contains("rtlat_latency_interval_max_seconds{"),
            "no interval yet"
        );
        let mut later = snap.clone();
        later.series[0].interval_max_ns = Some(2_500);
        let text = render(&[], &later, false);
        assert!(text.contains("rtlat_latency_interval_max_seconds{series=\"cpu0\"} 0.0000025\n"));
        assert!(!text.contains(" # {") && !text.contains("# EOF"), "{text}");
    }

    #[test]
    fn open_metrics_carries_the_culprit_of_the_maximum_on_its_bucket() {
        let mut snap = Snapshot {
            series: vec![series(&[1_500, 3_000, 4_200])],
            ..Snapshot::default()
        };
        snap.series[0].max_by = Some((4_200, "rthog 77 \"FIFO\" 90".into()));
        let text = render(&[], &snap, true);
        let with: Vec<&str> = text.lines().filter(|l| l.contains(" # {")).collect();
        assert_eq!(
            with,
            ["rtlat_latency_seconds_bucket{series=\"cpu0\",le=\"0.000005\"} 3 # {culprit=\"rthog 77 \\\"FIFO\\\" 90\"} 0.0000042"]
        );
        assert!(text.ends_with("\n# EOF\n"), "{text}");
        // A counter's family is named without the suffix its samples carry.
        assert!(text.contains("# TYPE rtlat_samples counter\n"), "{text}");
        assert!(
            text.contains("\nrtlat_samples_total{series=\"cpu0\"} 3\n"),
            "{text}"
        );
        // Above every bound: on +Inf; a long culprit is cut to the limit.
        snap.series[0].max_by = Some((20_000_000, "x".repeat(300)));
        let text = render(&[], &snap, true);
        let line = text.lines().find(|l| l.contains(" # {")).unwrap();
        assert!(
            line.starts_with("rtlat_latency_seconds_bucket{series=\"cpu0\",le=\"+Inf\"}"),
            "{line}"
        );
        assert_eq!(line.matches('x').count(), EXEMPLAR_CHARS);
    }
}
