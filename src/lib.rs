//! rtlat: a real-time latency benchmark suite for Linux.
//!
//! Data flows from the command line (`cli`) into a validated configuration per
//! benchmark, through the real-time runtime (`sys`), into per-thread recorders
//! (`stats`), and out as a self-describing result (`result`) rendered by the
//! renderers (`render`). All `unsafe` code lives in `sys`.
//!
//! The `host-tools` feature (default) adds what only a workstation needs:
//! reading result files (`report`, `compare`, `trend`, `import`), `suite`,
//! and in `render` the SVG, HTML, LAVA and comparison output. Without it
//! (`--no-default-features`) the board build measures, prints each run's own
//! summary and writes result files. The `kernel-trace` feature (default) adds the timer
//! measurements read from the kernel's trace (`timer --context`, `--split`)
//! and `--explain` (`explain`).

pub mod bench;
pub mod check;
pub mod cli;
pub mod engine;
pub mod error;
#[cfg(feature = "kernel-trace")]
pub mod explain;
pub mod forecast;
#[cfg(feature = "host-tools")]
pub mod import;
pub mod input;
pub mod load;
pub mod metrics;
pub mod outfile;
#[cfg(all(test, feature = "host-tools"))]
mod props;
pub mod remote;
pub mod render;
pub mod result;
pub mod stats;
#[cfg(feature = "host-tools")]
pub mod suite;
pub mod sys;
pub mod sysinfo;
#[cfg(feature = "kernel-trace")]
pub mod trace;

/// Whether this build reads the kernel's trace (the `kernel-trace`
/// feature): what a board build says and checks when it does not.
pub const KERNEL_TRACE: bool = cfg!(feature = "kernel-trace");
#[cfg(feature = "host-tools")]
pub mod trend;
pub mod units;
