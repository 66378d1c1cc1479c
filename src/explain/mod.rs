//! `--explain`: why a measuring thread was late. While a benchmark
//! measures, the standard tracepoints of the measuring CPUs (IRQs,
//! softirqs, irq_vectors, NMIs, switches, wake-ups, idle states) are read
//! from rtlat's tracefs instance into a bounded ring per CPU; each of the
//! worst intervals a measuring thread hands through its [`Tap`] is then
//! rebuilt from the ring and split into parts that add up to it
//! ([`attribute`]). Nothing here knows a benchmark: an interval is a CPU,
//! a start, an end and the thread that waited.
//!
//! [`Tap`]: crate::stats::tap::Tap

pub mod attribute;
pub mod best;
pub mod details;
pub mod events;
pub mod pace;
pub mod reader;
#[cfg(any(test, feature = "replay"))]
pub mod replay;
pub mod setup;
pub mod steal;
pub mod symbols;
pub mod symcache;
pub mod timeline;
pub mod together;

pub use attribute::{attribute, Interval};
pub use reader::ExplainDetails;
pub use setup::Explain;
