//! What a result file must hold together beyond its shape: the checks a
//! reader applies to every result it loads ([`super::check`] calls
//! [`check`]), so that a file edited by hand, cut, or written by a broken
//! tool is refused with the field named instead of being reported as if
//! measured.
//!
//! Imported results hold negative latencies (Xenomai's anticipation) and
//! totals that merge only some threads (rtla keeps its IRQ latencies apart):
//! both pass.

use crate::input::check_name;
use crate::result::{EndReason, RunResult, SeriesPoint};
use crate::stats::Summary;

/// Threads up to this many have their total checked to be the sum of some of
/// them (2^16 sums at most); more threads, only the bound above.
const SUBSET_THREADS: usize = 16;

/// Every check of this module; the error names the field.
/// The run's threads and total, then each phase's, with the phase's name
/// ("" for the run itself): what the checks of a loaded result walk.
pub(crate) fn groups(
    r: &RunResult,
) -> impl Iterator<Item = (&str, &Vec<crate::result::ThreadResult>, &Summary)> {
    std::iter::once(("", &r.threads, &r.total)).chain(
        r.phases
            .iter()
            .map(|p| (p.name.as_str(), &p.threads, &p.total)),
    )
}

/// Where a check found a problem: the thread, and its phase when in one.
pub(crate) fn place(phase: &str, name: &str) -> String {
    if phase.is_empty() {
        format!("thread '{name}'")
    } else {
        format!("phase '{phase}', thread '{name}'")
    }
}

pub fn check(r: &RunResult) -> Result<(), String> {
    check_names(r)?;
    check_end(r)?;
    check_start_time(&r.start_time_utc)?;
    for (phase, threads, total) in groups(r) {
        let at = |name: &str| place(phase, name);
        check_average(total).map_err(|e| format!("{}: {e}", at("total")))?;
        for t in threads {
            check_average(&t.summary).map_err(|e| format!("{}: {e}", at(&t.name)))?;
            for (i, p) in t.series.points.iter().enumerate() {
                check_point(p).map_err(|e| format!("{}: series point {i}: {e}", at(&t.name)))?;
            }
        }
        let samples: Vec<u64> = threads.iter().map(|t| t.summary.samples).collect();
        if !is_subset_sum(&samples, total.samples) {
            return Err(format!(
                "{}: {} samples is not the sum of its threads' samples ({})",
                at("total"),
                total.samples,
                samples
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    for p in &r.phases {
        if p.start_ns > p.end_ns {
            return Err(format!(
                "phase '{}': start_ns {} is after end_ns {}",
                p.name, p.start_ns, p.end_ns
            ));
        }
    }
    Ok(())
}

/// Labels and names are bounded ([`crate::input::MAX_NAME_CHARS`]): every
/// renderer repeats them, in every row and plot.
fn check_names(r: &RunResult) -> Result<(), String> {
    let names = [
        ("label", r.label.as_deref()),
        ("system.hostname", r.system.hostname.as_deref()),
        ("system.kernel_release", r.system.kernel_release.as_deref()),
    ];
    for (what, name) in names {
        if let Some(n) = name {
            check_name(what, n)?;
        }
    }
    let threads = r
        .threads
        .iter()
        .chain(r.phases.iter().flat_map(|p| p.threads.iter()));
    for t in threads {
        check_name("thread name", &t.name)?;
    }
    for p in &r.phases {
        check_name("phase name", &p.name)?;
    }
    Ok(())
}

/// A complete run has ended for a reason; `running` is what a file says
/// while its run goes on (or after it was killed).
fn check_end(r: &RunResult) -> Result<(), String> {
    if r.complete && r.end_reason == EndReason::Running {
        return Err(
            "complete is true but end_reason is 'running': a finished run records why it ended"
                .into(),
        );
    }
    Ok(())
}

/// `start_time_utc`: empty (unknown) or a real UTC time,
/// `YYYY-MM-DDTHH:MM:SS.mmmZ`, year 1970 to 9999.
pub fn check_start_time(s: &str) -> Result<(), String> {
    if s.is_empty() || valid_time(s) {
        return Ok(());
    }
    let shown: String = s
        .chars()
        .take(40)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    Err(format!(
        "start_time_utc '{shown}' is not a UTC time (YYYY-MM-DDTHH:MM:SS.mmmZ, a real date)"
    ))
}

fn valid_time(s: &str) -> bool {
    let b = s.as_bytes();
    let shape = b.len() == 24
        && b.iter().enumerate().all(|(i, &c)| match i {
            4 | 7 => c == b'-',
            10 => c == b'T',
            13 | 16 => c == b':',
            19 => c == b'.',
            23 => c == b'Z',
            _ => c.is_ascii_digit(),
        });
    if !shape {
        return false;
    }
    let num = |from: usize, to: usize| -> u32 {
        b[from..to]
            .iter()
            .fold(0, |n, &d| n * 10 + u32::from(d - b'0'))
    };
    let (year, month, day) = (num(0, 4), num(5, 7), num(8, 10));
    let (hour, minute, second) = (num(11, 13), num(14, 16), num(17, 19));
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1970..=9999).contains(&year)
        && (1..=days).contains(&day)
        && hour < 24
        && minute < 60
        && second < 60
}

/// The average of samples lies between their extremes.
fn check_average(s: &Summary) -> Result<(), String> {
    if s.samples > 0 && (s.avg_ns < s.min_ns || s.avg_ns > s.max_ns) {
        return Err(format!(
            "avg {} ns is outside min {} .. max {} ns",
            s.avg_ns, s.min_ns, s.max_ns
        ));
    }
    Ok(())
}

fn check_point(p: &SeriesPoint) -> Result<(), String> {
    if p.samples > 0 && !(p.min_ns <= p.avg_ns && p.avg_ns <= p.max_ns) {
        return Err(format!(
            "min {} / avg {} / max {} ns are not in order",
            p.min_ns, p.avg_ns, p.max_ns
        ));
    }
    Ok(())
}

/// Whether `total` is the sum of some of `parts` (a total merges all its
/// threads, or some of them). Past [`SUBSET_THREADS`] parts, only that it
/// is at most their sum.
fn is_subset_sum(parts: &[u64], total: u64) -> bool {
    let all = parts.iter().try_fold(0u64, |n, &p| n.checked_add(p));
    match all {
        None => return false,
        Some(all) if total > all => return false,
        Some(all) if total == all || total == 0 => return true,
        Some(_) => {}
    }
    if parts.len() > SUBSET_THREADS {
        return true;
    }
    let mut sums = vec![0u64];
    for &p in parts {
        let more: Vec<u64> = sums.iter().filter_map(|s| s.checked_add(p)).collect();
        sums.extend(more);
        if sums.contains(&total) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_real() {
        for ok in [
            "",
            "2026-12-01T03:14:57.611Z",
            "2024-02-29T23:59:59.999Z",
            "1970-01-01T00:00:00.000Z",
        ] {
            assert!(check_start_time(ok).is_ok(), "{ok}");
        }
        for bad in [
            "2026-02-31T10:00:00.000Z",
            "2025-02-29T10:00:00.000Z",
            "2026-13-01T10:00:00.000Z",
            "2026-12-01T24:00:00.000Z",
            "2026-12-01T10:60:00.000Z",
            "2026-12-01T10:00:60.000Z",
            "2026-12-01T10:00:00Z",
            "yesterday",
            "0000-01-01T00:00:00.000Z",
        ] {
            assert!(check_start_time(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_total_is_a_sum_of_some_threads() {
        assert!(is_subset_sum(&[5, 7], 12));
        assert!(is_subset_sum(&[5, 7], 7));
        assert!(is_subset_sum(&[5, 7], 0));
        assert!(!is_subset_sum(&[5, 7], 6));
        assert!(!is_subset_sum(&[5, 7], 13));
        assert!(!is_subset_sum(&[u64::MAX, 1], 1));
        assert!(is_subset_sum(&[1; 40], 17));
    }
}
