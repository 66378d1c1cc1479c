//! The benchmarks, one module each, on the shared engine.

pub mod cruncher;
pub mod explaining;
pub mod irq;
pub mod net;
pub mod noise;
pub mod partner;
#[cfg(feature = "kernel-trace")]
pub mod split;
pub mod switch;
pub mod threads;
pub mod timer;
#[cfg(feature = "kernel-trace")]
pub mod watch;
