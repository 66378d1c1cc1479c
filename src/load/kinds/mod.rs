//! The load generators, one file per load: its parameters and their parser
//! (called by the spec grammar in `spec.rs`), and the generator itself behind
//! the [`Load`](super::Load) trait.

pub mod cpu;
pub mod exec;
pub mod hackbench;
pub mod io;
pub mod kspin;
pub mod memory;
pub mod net;
pub mod timers;
