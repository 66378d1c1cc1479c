//! `rtlat watch`: the user's own threads measured from outside, from the
//! kernel's standard scheduler and timer tracepoints, with nothing
//! injected into the watched process. Per thread, four series: `comm:tid`
//! (wake-up latency), `comm:tid/timer` (lateness against its own sleep's
//! expiry, what cyclictest reports of its thread), `comm:tid/run` (time on
//! the CPU per activation) and `comm:tid/interval` (between two wake-ups,
//! whose median is the period detected).
//!
//! The threads of the selection found in `/proc` at the start have their
//! series from the start; with `--comm` and the default selection, threads
//! that start during the run take series kept in reserve.

mod events;
mod follow;
mod reader;
pub mod select;

use crate::engine::{RunControl, Setup};
use crate::error::{Outcome, Result};
use select::Selection;
use serde::Serialize;

/// Validated settings of a watch.
#[derive(Debug, Clone, Serialize)]
pub struct WatchConfig {
    pub select: Selection,
    /// The longest an activation may take (`--deadline`), and the period
    /// declared (`--period`), which is that limit when no deadline is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_ns: Option<u64>,
    /// The worst wake-ups of each thread explained (`--explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain_worst: Option<usize>,
    #[serde(flatten)]
    pub control: RunControl,
    #[serde(skip)]
    pub setup: Setup,
}

/// The series of one watched thread, in this order.
pub const PARTS: [&str; 4] = ["", "/timer", "/run", "/interval"];

/// Series kept in reserve for threads that start during the run.
pub const RESERVE: usize = 16;

/// Watch the selected threads until the run ends.
pub fn run(cfg: &WatchConfig, command_line: Vec<String>) -> Result<Outcome> {
    reader::run(cfg, command_line)
}
