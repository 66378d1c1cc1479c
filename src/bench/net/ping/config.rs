//! The validated settings of a ping run (built from the command line in
//! `cli::net`).

use super::super::{Common, MONOTONIC, REALTIME};
use crate::sys::clock::now_ns;
use serde::Serialize;
use std::net::SocketAddr;

/// Validated settings of a ping run.
#[derive(Debug, Clone, Serialize)]
pub struct PingConfig {
    pub role: &'static str,
    /// The server as given on the command line, and as resolved.
    pub target: String,
    pub peer: SocketAddr,
    pub bind: SocketAddr,
    pub period_ns: u64,
    pub rate_per_s: f64,
    /// Datagram size (UDP payload) in bytes.
    pub size: usize,
    pub timeout_ns: u64,
    /// Chosen per run; replies of other runs are ignored.
    pub session: u32,
    pub bulk: Option<BulkPlan>,
    /// Packets to send (`--count`), timestamps, CPU, output …
    #[serde(flatten)]
    pub common: Common,
}

/// Background bulk UDP during the measurement (`--bulk`).
#[derive(Debug, Clone, Serialize)]
pub struct BulkPlan {
    pub target: SocketAddr,
    /// `None`: as fast as the socket takes it.
    pub bytes_per_s: Option<u64>,
    pub payload: usize,
}

/// A run identifier that differs between runs (time and pid), never 0.
pub fn session_id() -> u32 {
    let t = now_ns(REALTIME) ^ now_ns(MONOTONIC).rotate_left(32);
    let x = (t ^ (u64::from(std::process::id()) << 17)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((x >> 32) as u32) | 1
}
