//! Per-interval statistics over time in constant memory: the `series` of a
//! result. When a long run exceeds the point budget, neighbouring points merge
//! and the interval doubles. (`result::Series` is built from it.)

use crate::stats::IntervalStats;

/// Points kept per series before neighbours merge (and the interval doubles).
pub const SERIES_POINTS: usize = 4096;

/// Per-interval statistics in constant memory.
#[derive(Debug, Clone)]
pub struct SeriesBuilder {
    base_ns: u64,
    /// Each point covers 2^shift base intervals.
    shift: u32,
    points: Vec<IntervalStats>,
}

impl SeriesBuilder {
    pub fn new(base_ns: u64) -> Self {
        SeriesBuilder {
            base_ns,
            shift: 0,
            points: Vec::new(),
        }
    }

    pub fn push(&mut self, iv: &IntervalStats) {
        let coarse = iv.index >> self.shift;
        match self.points.last_mut() {
            Some(last) if last.index == coarse => last.merge(iv),
            _ => self.points.push(IntervalStats {
                index: coarse,
                ..*iv
            }),
        }
        if self.points.len() > SERIES_POINTS {
            self.shift += 1;
            let mut merged: Vec<IntervalStats> = Vec::with_capacity(SERIES_POINTS / 2 + 1);
            for p in &self.points {
                let idx = p.index >> 1;
                match merged.last_mut() {
                    Some(m) if m.index == idx => m.merge(p),
                    _ => merged.push(IntervalStats { index: idx, ..*p }),
                }
            }
            self.points = merged;
        }
    }

    /// The interval each point covers now (ns).
    pub fn interval_ns(&self) -> u64 {
        self.base_ns << self.shift
    }

    /// The points, oldest first; `index` counts intervals of [`Self::interval_ns`].
    pub fn points(&self) -> &[IntervalStats] {
        &self.points
    }
}
