//! rtlat: a real-time latency benchmark suite for Linux.
//!
//! Data flows from the command line (`cli`) into a validated configuration per
//! benchmark, through the real-time runtime (`sys`), into per-thread recorders
//! (`stats`), and out as a self-describing result (`result`) rendered by the
//! renderers (`render`). All `unsafe` code lives in `sys`.

pub mod bench;
pub mod check;
pub mod cli;
pub mod engine;
pub mod error;
pub mod import;
pub mod load;
pub mod outfile;
pub mod render;
pub mod result;
pub mod stats;
pub mod sys;
pub mod sysinfo;
pub mod units;
