//! The result file: the contract between a run and everything that reads it.
//!
//! `RunResult` is versioned (`schema_version`) and documented in
//! `docs/result-schema.json`. Every time is integer ns. A file is rewritten
//! atomically during a run with `complete: false`, so a killed run leaves a
//! valid, self-describing file.

pub mod details;
pub mod explained;
pub mod forecast;
pub mod model;
pub mod schema;
pub mod totals;

pub use explained::{Explained, Part};
pub use model::{Benchmark, EndReason, Policy};

use crate::stats::histogram::HistogramRecord;
use crate::stats::summary::signed;
use crate::stats::Summary;
use crate::sysinfo::SystemInfo;
use serde::{Deserialize, Serialize};
use std::path::Path;

pub const SCHEMA_NAME: &str = "rtlat-result";
pub const SCHEMA_VERSION: u32 = 1;

/// One run of one benchmark.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(title = "rtlat result file, schema version 1")]
#[schemars(
    description = "One run of one rtlat benchmark. Every time is an integer number of nanoseconds. The file is rewritten atomically during a run with complete=false; a file left with complete=false comes from a run that was killed."
)]
#[schemars(extend("$id" = "rtlat-result-v1"))]
pub struct RunResult {
    /// Always `rtlat-result`.
    #[schemars(extend("const" = "rtlat-result"))]
    pub schema: String,
    #[schemars(extend("const" = 1))]
    pub schema_version: u32,
    pub tool: Tool,
    /// `timer`, `switch`, `cruncher`, `net`, `irq`.
    pub benchmark: Benchmark,
    /// Given with `--label`; else readers use hostname + kernel release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub command_line: Vec<String>,
    /// RFC 3339 UTC time of the first sample.
    #[schemars(extend("pattern" = "^(|\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z)$"))]
    pub start_time_utc: String,
    /// From the first sample to the end (or to the last rewrite while running);
    /// `null` when the source of an import does not record it.
    pub duration_ns: Option<u64>,
    /// False while running and when the run was killed before it could finish.
    pub complete: bool,
    /// `running`, `duration`, `loops`, `signal`, `break`, `error`.
    pub end_reason: EndReason,
    /// The benchmark's validated settings.
    #[schemars(extend("type" = "object"))]
    pub config: serde_json::Value,
    pub system: SystemInfo,
    pub tuning: Tuning,
    /// One entry per measuring thread (per CPU for `timer`).
    pub threads: Vec<ThreadResult>,
    /// Every thread merged.
    pub total: Summary,
    #[serde(default)]
    pub thresholds: Thresholds,
    /// Loads that ran beside the measurement (empty: none declared).
    #[serde(default)]
    #[schemars(extend("items" = {"type": "object"}))]
    pub loads: Vec<serde_json::Value>,
    /// Warnings the run wants a reader to know (e.g. intervals the reporter lost).
    #[serde(default)]
    pub notes: Vec<String>,
    /// CPU time used by the measuring threads, all together (ns).
    #[serde(default)]
    pub measuring_cpu_time_ns: u64,
    /// Per-phase statistics when the run had phases (`--idle-first`: `idle`, then `load`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
    /// Benchmark-specific figures that are not latency series, e.g. cruncher
    /// `ideal_ns`/`stretch`, net `lost`/`duplicated`/`reordered`, irq `missed`.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub details: serde_json::Map<String, serde_json::Value>,
    /// The worst intervals explained (`--explain`), worst first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub explained: Vec<Explained>,
}

/// One phase of a run, with its own statistics.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Phase {
    pub name: String,
    /// ns after the start of the run.
    pub start_ns: u64,
    pub end_ns: u64,
    pub threads: Vec<ThreadResult>,
    pub total: Summary,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Tool {
    #[schemars(extend("const" = "rtlat"))]
    pub name: String,
    pub version: String,
}

impl Tool {
    pub fn this() -> Tool {
        Tool {
            name: env!("CARGO_PKG_NAME").into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// The real-time tuning the run applied, recorded whether on or off. An rtlat
/// run records every field; an import leaves `null` (or, for
/// `dma_latency_us`, leaves the field out) what its source does not record.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Tuning {
    /// mlockall(MCL_CURRENT|MCL_FUTURE) was in force; `null`: unknown.
    pub mlock: Option<bool>,
    /// Value held on /dev/cpu_dma_latency in µs; `null` when off. The field
    /// absent: unknown (an import whose source does not say).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(extend("minimum" = 0))]
    pub dma_latency_us: Option<Option<i32>>,
    /// `fifo`, `rr`, `deadline`, `other`; `null`: unknown.
    pub policy: Option<Policy>,
    /// Static priority for fifo/rr; 0 otherwise; `null`: unknown.
    #[schemars(extend("minimum" = 0, "maximum" = 99))]
    pub priority: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DeadlineParams>,
    /// Per thread: the CPU it was pinned to, `null` when not pinned.
    pub affinity: Vec<Option<usize>>,
    /// Wake-up offset of each thread within the period (ns).
    pub phase_offsets_ns: Vec<u64>,
}

/// A field that is present: its value, `null` included (`Some(None)`); an
/// absent field is `None` through `#[serde(default)]`.
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeadlineParams {
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Thresholds {
    #[serde(default)]
    #[schemars(extend("minimum" = 1))]
    pub max_latency_ns: Option<u64>,
    #[serde(default)]
    pub max_latency_exceeded: bool,
    /// `--max-forecast`: the bound on each thread's forecast (the upper
    /// limit of its latency at its `exceedance`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1))]
    pub max_forecast_ns: Option<u64>,
    /// A forecast was above `max_forecast_ns`, or withheld.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub max_forecast_exceeded: bool,
    #[serde(default)]
    #[schemars(extend("minimum" = 1))]
    pub break_threshold_ns: Option<u64>,
    /// The sample that crossed `break_threshold_ns`, if one did.
    #[serde(default)]
    pub break_event: Option<BreakEvent>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct BreakEvent {
    pub thread: usize,
    pub cpu: Option<usize>,
    pub sample: u64,
    pub latency_ns: u64,
    /// ns after the start of the run.
    pub at_ns: u64,
    /// Whether a marker was written to the kernel trace and tracing stopped.
    pub trace_marked: bool,
}

/// One measuring thread.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThreadResult {
    /// `cpu0`, `pair0`, `rtt` …
    pub name: String,
    pub cpu: Option<usize>,
    pub summary: Summary,
    pub histogram: HistogramRecord,
    pub series: Series,
    /// The tail beyond the run (docs/forecast.md); absent in files written
    /// before forecasts, and when the series was not forecast.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "forecast::read",
        serialize_with = "forecast::write"
    )]
    pub forecast: Option<forecast::Forecast>,
}

/// Per-interval statistics over time. When a long run exceeds the point budget,
/// neighbouring points merge and `interval_ns` doubles: memory stays constant.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Series {
    #[schemars(range(min = 1))]
    pub interval_ns: u64,
    pub points: Vec<SeriesPoint>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct SeriesPoint {
    /// Start of the interval, ns after the start of the run.
    pub t_ns: u64,
    pub samples: u64,
    pub min_ns: i64,
    pub avg_ns: i64,
    pub max_ns: i64,
    pub overruns: u64,
}

impl crate::stats::SeriesBuilder {
    /// The points as the result's series.
    pub fn to_series(&self) -> Series {
        self.series_in(Vec::new(), (0, u64::MAX))
    }

    /// The points that start within `window` (ns) as the result's series,
    /// written into `points`' allocation, grown once to all the points this
    /// builder can hold: a result rewritten during a run then keeps one
    /// buffer per series, and its saves never ask the heap for a bigger one.
    pub fn series_in(&self, mut points: Vec<SeriesPoint>, window: (u64, u64)) -> Series {
        let interval_ns = self.interval_ns();
        points.clear();
        if points.capacity() < self.capacity() {
            // Written once, as the builder's own points are: the copy is
            // resident from the first save on, rather than growing the
            // process by a point per interval for the whole run.
            crate::sys::mem::room_written(&mut points, self.capacity(), SeriesPoint::default());
        }
        points.extend(
            self.points()
                .iter()
                .map(|p| SeriesPoint {
                    t_ns: p.index * interval_ns,
                    samples: p.samples,
                    min_ns: signed(p.min),
                    avg_ns: signed(p.avg()),
                    max_ns: signed(p.max),
                    overruns: p.overruns,
                })
                .filter(|p| p.t_ns >= window.0 && p.t_ns < window.1),
        );
        Series {
            interval_ns,
            points,
        }
    }
}

impl RunResult {
    /// Read and check a result file.
    pub fn load(path: &Path) -> Result<RunResult, String> {
        let text = crate::input::read_json_object(path, "an rtlat result")
            .map_err(|e| e.message().to_string())?;
        // Parsed into a value first, then typed: every reader of result JSON
        // goes through the one value deserializer, so its code is in the
        // binary once (a board build's size).
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not an rtlat result ({e})", path.display()))?;
        // JSON from another tool (cyclictest --json, jitterdebugger): say how to use it.
        let foreign = value.get("schema").is_none();
        let r: RunResult = serde_json::from_value(value).map_err(|e| {
            if foreign {
                format!(
                    "{}: not an rtlat result (no \"schema\" field); if another tool wrote it, turn it into one with: rtlat import {} -o result.json",
                    path.display(),
                    path.display()
                )
            } else {
                format!("{}: not an rtlat result ({e})", path.display())
            }
        })?;
        if r.schema != SCHEMA_NAME {
            return Err(format!(
                "{}: schema is '{}', expected '{SCHEMA_NAME}'",
                path.display(),
                r.schema
            ));
        }
        if r.schema_version > SCHEMA_VERSION {
            return Err(format!(
                "{}: schema version {} is newer than this rtlat understands ({SCHEMA_VERSION}); upgrade rtlat",
                path.display(),
                r.schema_version
            ));
        }
        Ok(r)
    }

    /// Write atomically: a temporary file beside `path`, fsync, rename.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        crate::outfile::write_with(path, |w| {
            serde_json::to_writer_pretty(&mut *w, self).map_err(std::io::Error::other)
        })
    }
}

/// Format seconds since the Unix epoch as RFC 3339 UTC (`2026-11-30T09:00:00.123Z`).
pub fn rfc3339_utc(secs: u64, nanos: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days (H. Hinnant's algorithm), valid for all dates after 1970.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        nanos / 1_000_000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formatting() {
        assert_eq!(rfc3339_utc(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339_utc(951_782_400, 5_000_000),
            "2000-02-29T00:00:00.005Z"
        );
        assert_eq!(rfc3339_utc(1_796_030_400, 0), "2026-11-30T09:20:00.000Z");
    }
}
