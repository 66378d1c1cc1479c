//! Details of a `watch` result: how the threads were chosen, and per
//! watched thread what its series do not say (its task id and name, the
//! period detected, how many activations, when it ended); what the
//! kernel's trace buffers lost.

use super::Details;
use serde::{Deserialize, Serialize};

/// The `details` of a watch result: `{"watch": {...}}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WatchDetails {
    pub watch: WatchFigures,
}

impl Details for WatchDetails {}

/// What a watch saw beside its series.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WatchFigures {
    /// The selection as given: `pid 1234`, `comm cyclic*`, `real-time`.
    pub selection: String,
    /// Where the figures came from.
    pub source: String,
    /// One per watched thread, in the order of their series.
    #[serde(default)]
    pub threads: Vec<WatchedThread>,
    /// Threads that matched once every series kept in reserve was in use.
    #[serde(default)]
    pub unwatched_threads: u64,
    /// Wake-ups after which a thread was seen running without its switch
    /// in: the kernel's trace lacks a few on some machines. Those
    /// activations have no figure (none is guessed).
    #[serde(default)]
    pub switches_missing: u64,
    /// Lost-event notices of the trace buffers, and the per-CPU stats.
    #[serde(default)]
    pub lost_events: u64,
    #[serde(default)]
    pub ring_buffer_overruns: u64,
    #[serde(default)]
    pub dropped_events: u64,
    /// tracefs settings that could not be restored (expected none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restore_problems: Vec<String>,
}

/// One watched thread.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WatchedThread {
    /// Its series' name, `comm:tid`.
    pub name: String,
    pub tid: i32,
    pub comm: String,
    /// Activations seen: switches in after a wake-up.
    pub activations: u64,
    /// Of them, those whose wake-up was the thread's own timer's expiry.
    pub timer_wakes: u64,
    /// The median time between two wake-ups, once there were two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_ns: Option<u64>,
    /// When it ended, ns after the start (`None`: it ran to the end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at_ns: Option<u64>,
    /// The activations' jitter: the largest distance of an interval
    /// between two wake-ups from the period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ns: Option<u64>,
    /// Activations that overran: the next one was due before it ended (a
    /// sleep until a time already past), or it took longer than the
    /// declared `--deadline` (else `--period`) from its timer's expiry or
    /// its wake-up.
    #[serde(default)]
    pub overruns: u64,
    /// Time it was preempted in the middle of its activations, in all.
    #[serde(default)]
    pub preempted_ns: u64,
    /// Who preempted it mid-activation, most time first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interference: Vec<Preemptor>,
}

/// A task that preempted a watched thread in the middle of its activations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Preemptor {
    /// `comm pid FIFO 90`.
    pub task: String,
    pub times: u64,
    pub ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_details_read_back_under_their_key() {
        let d = WatchDetails {
            watch: WatchFigures {
                selection: "comm cyclic*".into(),
                threads: vec![WatchedThread {
                    name: "cyclictest:42".into(),
                    tid: 42,
                    comm: "cyclictest".into(),
                    activations: 3,
                    timer_wakes: 3,
                    period_ns: Some(1_000_000),
                    overruns: 1,
                    interference: vec![Preemptor {
                        task: "hog 7 FIFO 90".into(),
                        times: 1,
                        ns: 2_500_000,
                    }],
                    ..WatchedThread::default()
                }],
                ..WatchFigures::default()
            },
        };
        assert_eq!(super::super::keys_read_back(&d), ["watch"]);
    }
}
