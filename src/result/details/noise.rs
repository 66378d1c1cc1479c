//! Details of a `noise` result: the clock the busy loop read, the
//! threshold, RT throttling as found, and per CPU the loops, the stolen time
//! and the longest gaps; with `--osnoise` or `--hwlat` the kernel tracer's
//! totals instead.

use super::Details;
use serde::{Deserialize, Serialize};

/// The `details` of a noise result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NoiseDetails {
    /// The clock the loop read: `tsc` or `monotonic`; `kernel` when a kernel
    /// tracer measured instead of rtlat's loop.
    #[serde(default)]
    pub counter: String,
    /// The time-stamp counter's measured rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counter_mhz: Option<f64>,
    /// Gaps longer than this are noise (0: not known, an import of rtla
    /// osnoise top, whose output does not say).
    #[serde(default)]
    pub threshold_ns: u64,
    /// `/proc/sys/kernel/sched_rt_runtime_us` at the start (-1: throttling off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rt_runtime_us: Option<i64>,
    /// `/proc/sys/kernel/sched_rt_period_us` at the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rt_period_us: Option<i64>,
    /// One per measuring CPU; absent until the run has ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<CpuNoise>,
    /// The kernel tracer that measured instead of rtlat's loop: `osnoise` or `hwlat`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracer: Option<String>,
    /// The osnoise tracer's per-period counters summed per CPU.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub osnoise: Vec<OsnoiseCpu>,
    /// The hwlat tracer's settings and what its samples add up to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hwlat: Option<HwlatTotals>,
}

/// One CPU's osnoise periods added up (rtla osnoise top's columns).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OsnoiseCpu {
    pub cpu: usize,
    /// Periods of the tracer counted (their end within the run).
    pub periods: u64,
    /// The time the kernel's osnoise/N thread ran, and the noise it saw (us).
    pub runtime_us: u64,
    pub noise_us: u64,
    /// 100 × (1 − noise / runtime).
    pub available_pct: f64,
    /// The most noise of one period, and the longest single noise (us).
    #[serde(default)]
    pub max_period_noise_us: u64,
    pub max_single_noise_us: u64,
    /// Noise occurrences per source: hardware (no other cause seen), NMI,
    /// IRQ, softirq, thread.
    pub hw: u64,
    pub nmi: u64,
    pub irq: u64,
    pub softirq: u64,
    pub thread: u64,
}

/// The hwlat tracer's settings and samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HwlatTotals {
    /// Of every window, the tracer spins with interrupts off for width (us).
    pub width_us: u64,
    pub window_us: u64,
    /// Samples are gaps above this (us): tracing_thresh.
    pub threshold_us: u64,
    /// The CPUs the tracer moved through (round-robin).
    pub cpus: Vec<usize>,
    pub samples: u64,
    /// The longest gap inside one read pair (inner) and between two (outer), us.
    pub max_inner_us: u64,
    pub max_outer_us: u64,
    /// NMIs seen during the samples' windows.
    pub nmi_count: u64,
}

/// What one CPU's busy loop counted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuNoise {
    pub cpu: usize,
    /// Loops run: gaps measured.
    pub loops: u64,
    /// One clock read, measured back to back on this CPU (ns).
    pub read_cost_ns: f64,
    /// The shortest gap: the loop's own cost, below which nothing is seen.
    pub floor_ns: u64,
    /// Gaps above the threshold, and their sum: the time taken from the loop.
    pub gaps_above: u64,
    pub stolen_ns: u64,
    /// Stolen time over the time the loop ran.
    pub stolen_fraction: f64,
    /// The loop's first and last clock read on CLOCK_MONOTONIC (ns).
    #[serde(default)]
    pub first_ns: u64,
    #[serde(default)]
    pub last_ns: u64,
    /// The longest gaps above the threshold, longest first, on CLOCK_MONOTONIC.
    pub longest: Vec<NoiseGap>,
}

/// A gap on CLOCK_MONOTONIC (ns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoiseGap {
    pub start_ns: u64,
    pub end_ns: u64,
}

impl NoiseGap {
    pub fn len_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

impl Details for NoiseDetails {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::details::keys_read_back;

    #[test]
    fn keys_are_those_of_the_result_file() {
        let d = NoiseDetails {
            counter: "tsc".into(),
            counter_mhz: Some(2600.0),
            threshold_ns: 5000,
            rt_runtime_us: Some(950_000),
            rt_period_us: Some(1_000_000),
            cpus: vec![CpuNoise {
                cpu: 1,
                loops: 10,
                read_cost_ns: 8.5,
                floor_ns: 9,
                gaps_above: 1,
                stolen_ns: 6000,
                stolen_fraction: 0.5,
                first_ns: 1,
                last_ns: 12001,
                longest: vec![NoiseGap {
                    start_ns: 1,
                    end_ns: 6001,
                }],
            }],
            tracer: Some("osnoise".into()),
            osnoise: vec![OsnoiseCpu::default()],
            hwlat: Some(HwlatTotals::default()),
        };
        assert_eq!(
            keys_read_back(&d),
            [
                "counter",
                "counter_mhz",
                "cpus",
                "hwlat",
                "osnoise",
                "rt_period_us",
                "rt_runtime_us",
                "threshold_ns",
                "tracer"
            ]
        );
    }
}
