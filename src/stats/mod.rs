//! Statistics that never lose the tail.
//!
//! - [`histogram`]: log-linear buckets over the whole `u64` range of ns, ≤ 0.4 % error;
//! - [`recorder`]: the hot-path side (one per measuring thread, lock-free publication);
//! - [`series`]: per-interval points over time in constant memory;
//! - [`summary`]: min/avg/max/stddev/percentiles computed from what was recorded.

pub mod histogram;
pub mod recorder;
pub mod seqlock;
pub mod series;
pub mod summary;
pub mod tap;

pub use histogram::Histogram;
pub use recorder::{Collector, IntervalStats, Recorder};
pub use series::SeriesBuilder;
pub use summary::Summary;

/// One step of Marsaglia's xorshift64 generator (13, 7, 17): the next
/// `state`, also returned. Deterministic noise for simulations and test data;
/// `state` must not be 0.
#[inline]
pub fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}
