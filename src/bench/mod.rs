//! The benchmarks, one module each, on a shared runtime and harness.

pub mod cruncher;
pub mod harness;
pub mod irq;
pub mod net;
pub mod runtime;
pub mod switch;
pub mod timer;
