//! What an explain run writes beside its cases (`details.explain`): the
//! events it read, what was lost or overwritten, and the noise totals.

use crate::result::totals::CpuTotals;
use serde::{Deserialize, Serialize};

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The figures of an explain run (`details.explain`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExplainDetails {
    /// The tracepoints recorded, and the ones this kernel lacks (parts it
    /// could not see).
    pub events: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// Whether /proc/stat gave the steal time.
    pub steal: bool,
    /// The run's start on CLOCK_MONOTONIC, the trace's clock: a case's
    /// `at_ns` plus this is its start there, to set beside other traces
    /// and logs of the same machine.
    #[serde(default)]
    pub monotonic_start_ns: u64,
    /// Intervals taken from the measuring threads, and explained.
    pub intervals: u64,
    pub explained: u64,
    /// Intervals the reader fell too far behind to read.
    pub tap_lost: u64,
    /// Events the kernel lost where an explained interval wanted them.
    pub lost_events: u64,
    /// Pages of the kernel's buffers read but not decoded: no interval
    /// wanted their events (the trace is read only when one does).
    #[serde(default)]
    pub pages_skipped: u64,
    /// Intervals explained after their events were pushed out of a full
    /// ring (`trace overwritten`) or before they were read (`trace not
    /// read in time`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub overwritten: u64,
    /// tracefs settings that could not be restored (expected none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restore_problems: Vec<String>,
    /// Every interval attributed and summed by cause, per CPU (when asked
    /// for: [`Explain::total_every_interval`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub totals: Vec<CpuTotals>,
}
