//! What `timer` reads from the kernel's trace (the full build only):
//! `--context`, the timerlat tracer's own samples.

pub mod contexts;
mod ctxsink;
pub mod noise;
pub mod pairing;
pub mod raw;
pub mod userlat;
