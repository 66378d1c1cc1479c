//! `rtlat report --format lava`: every figure of every result as a LAVA test
//! case, one `lava-test-case` command per line, for a test definition to run
//! in LAVA's test shell (see contrib/lava/).
//!
//! Per result: `<prefix>-run` (pass when the run completed without a break),
//! then per series (each thread and `all`) its minimum, average, percentiles
//! and maximum in µs. A maximum above the result's `--max-latency` budget
//! fails its case; every other figure is a measurement that passes. The
//! prefix is the benchmark, or the file's name when several results share a
//! benchmark. Names hold only `[-_.a-zA-Z0-9]` (LAVA's rule, and safe in a
//! shell).

use super::describe::us_signed;
use super::{Loaded, Render};
use crate::stats::summary::signed;
use crate::stats::Summary;
use std::fmt::Write;

pub struct LavaReport;

/// `s` with every character LAVA does not take in a name turned into `_`.
fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// One `lava-test-case` line.
fn case(out: &mut String, name: &str, pass: bool, measurement_ns: Option<i64>) {
    let result = if pass { "pass" } else { "fail" };
    let _ = write!(out, "lava-test-case {name} --result {result}");
    if let Some(ns) = measurement_ns {
        let _ = write!(out, " --measurement {} --units us", us_signed(ns));
    }
    out.push('\n');
}

/// The cases of one series: min, avg, each percentile, max (failing above `budget_ns`).
fn series_cases(out: &mut String, prefix: &str, s: &Summary, budget_ns: Option<u64>) {
    if s.samples == 0 {
        return;
    }
    case(out, &format!("{prefix}-min"), true, Some(s.min_ns));
    case(out, &format!("{prefix}-avg"), true, Some(s.avg_ns));
    for p in &s.percentiles {
        case(out, &format!("{prefix}-p{}", p.p), true, Some(signed(p.ns)));
    }
    let within = budget_ns.is_none_or(|b| s.max_ns <= signed(b));
    case(out, &format!("{prefix}-max"), within, Some(s.max_ns));
}

impl Render for LavaReport {
    fn render(&self, results: &[&Loaded]) -> String {
        let mut out = String::new();
        for l in results {
            let r = &l.result;
            let shared = results
                .iter()
                .filter(|o| o.result.benchmark == r.benchmark)
                .count()
                > 1;
            let prefix = if shared {
                let stem = l.path.file_stem().unwrap_or_default().to_string_lossy();
                sanitize(&stem)
            } else {
                r.benchmark.name().to_string()
            };
            let ran = r.complete && r.thresholds.break_event.is_none();
            case(&mut out, &format!("{prefix}-run"), ran, None);
            let budget = r.thresholds.max_latency_ns;
            for t in &r.threads {
                let name = format!("{prefix}-{}", sanitize(&t.name));
                series_cases(&mut out, &name, &t.summary, budget);
            }
            series_cases(&mut out, &format!("{prefix}-all"), &r.total, budget);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_safe_and_budget_fails_the_max() {
        assert_eq!(sanitize("cpu 0;rm"), "cpu_0_rm");
        let mut out = String::new();
        let s = Summary {
            samples: 10,
            min_ns: 1_500,
            avg_ns: 2_000,
            max_ns: 9_001,
            percentiles: vec![crate::stats::summary::Percentile {
                p: 99.9,
                ns: 8_000,
                bound: false,
            }],
            ..Default::default()
        };
        series_cases(&mut out, "timer-cpu0", &s, Some(9_000));
        assert_eq!(
            out,
            "lava-test-case timer-cpu0-min --result pass --measurement 1.500 --units us\n\
             lava-test-case timer-cpu0-avg --result pass --measurement 2.000 --units us\n\
             lava-test-case timer-cpu0-p99.9 --result pass --measurement 8.000 --units us\n\
             lava-test-case timer-cpu0-max --result fail --measurement 9.001 --units us\n"
        );
        out.clear();
        series_cases(&mut out, "x", &s, Some(9_001));
        assert!(
            out.ends_with("lava-test-case x-max --result pass --measurement 9.001 --units us\n")
        );
        out.clear();
        series_cases(&mut out, "x", &Summary::default(), None);
        assert_eq!(out, "", "a series without samples has no figures");
    }
}
