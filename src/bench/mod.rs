//! The benchmarks, one module each, on a shared runtime and harness.

pub mod harness;
pub mod runtime;
pub mod timer;
