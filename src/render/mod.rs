//! What people read: every renderer of results, and `rtlat report`
//! ([`report`]).
//!
//! - [`text`]: the run's start line and summary, the text report of a result;
//! - [`table`]: the one table renderer (text with alignment per column,
//!   Markdown, CSV) under every table;
//! - [`svg`]: a small deterministic SVG writer ([`svg::writer`]) and the
//!   plots ([`svg::plots`]: histogram with a log count axis, latency over
//!   time, latency by percentile);
//! - [`html`]: one self-contained HTML report (inline SVG, embedded data);
//! - [`compare`]: one row per result as text, Markdown or CSV, and the
//!   regression check against a baseline;
//! - [`loaded`]: result files read and checked, [`describe`]: the phrases
//!   every renderer shares.
//!
//! Each output is a [`Render`]: a set of results in, a document out. What a
//! benchmark's figures mean comes from [`crate::result::Benchmark`], never
//! from matching its name. Everything here reads files that may come from
//! anywhere: every reader checks what it uses and fails with one line
//! (exit 2), never a panic.

// The board build (no `host-tools`) keeps what prints a run's own summary.
#[cfg(feature = "host-tools")]
pub mod boards;
#[cfg(feature = "host-tools")]
pub mod causes;
#[cfg(feature = "host-tools")]
pub mod compare;
pub mod consistent;
pub mod describe;
#[cfg(feature = "host-tools")]
pub mod forecast;
#[cfg(feature = "host-tools")]
pub mod html;
#[cfg(feature = "host-tools")]
pub mod lava;
pub mod loaded;
pub mod names;
pub mod printable;
#[cfg(feature = "host-tools")]
mod report;
#[cfg(feature = "host-tools")]
pub mod svg;
pub mod table;
pub mod text;

#[cfg(test)]
pub(crate) mod testdata;
#[cfg(all(test, feature = "host-tools"))]
pub(crate) mod tests;

pub use loaded::{check, label_of, load, load_all, one_line, Loaded, MAX_RESULT_BYTES};
#[cfg(feature = "host-tools")]
pub use report::{run_report, ReportConfig, ReportFormat};

use crate::error::Result;
use crate::result::Benchmark;
use std::path::Path;

/// A renderer: results in, one document out (text, Markdown, CSV, SVG, HTML).
pub trait Render {
    fn render(&self, results: &[&Loaded]) -> String;
}

/// The benchmarks of `results`, each once, in the order they first appear.
pub fn benchmarks_of(results: &[&Loaded]) -> Vec<Benchmark> {
    let mut benches: Vec<Benchmark> = Vec::new();
    for l in results {
        if !benches.contains(&l.result.benchmark) {
            benches.push(l.result.benchmark);
        }
    }
    benches
}

/// Write an output file (see [`crate::outfile`]); failures exit 4.
pub fn write_output(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::outfile::write(path, bytes).map_err(|e| crate::outfile::write_error(path, e))
}
