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
            // Merge neighbours in place: the series never reallocates.
            let mut kept = 0;
            for i in 0..self.points.len() {
                let p = self.points[i];
                let idx = p.index >> 1;
                if kept > 0 && self.points[kept - 1].index == idx {
                    self.points[kept - 1].merge(&p);
                } else {
                    self.points[kept] = IntervalStats { index: idx, ..p };
                    kept += 1;
                }
            }
            self.points.truncate(kept);
        }
    }

    /// Make room for the points a run will hold (at most the budget plus
    /// the one that triggers a merge) and touch it, so that the series
    /// neither reallocates nor faults in new pages during the run.
    pub fn reserve_points(&mut self, points: usize) {
        let n = points.min(SERIES_POINTS + 1);
        crate::sys::mem::room_written(&mut self.points, n, IntervalStats::default());
    }

    /// The points this builder holds without reallocating.
    pub fn capacity(&self) -> usize {
        self.points.capacity()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_series_merges_in_place_without_reallocating() {
        let mut s = SeriesBuilder::new(1000);
        s.reserve_points(usize::MAX);
        let cap = s.points.capacity();
        assert_eq!(cap, SERIES_POINTS + 1);
        for index in 0..3 * SERIES_POINTS as u64 {
            s.push(&IntervalStats {
                index,
                samples: 2,
                min: index,
                max: index + 1,
                sum: 2 * index,
                overruns: 0,
            });
        }
        assert_eq!(s.points.capacity(), cap, "the series reallocated");
        assert_eq!(s.interval_ns(), 4000);
        assert!(s.points().len() <= SERIES_POINTS);
        let total: u64 = s.points().iter().map(|p| p.samples).sum();
        assert_eq!(total, 6 * SERIES_POINTS as u64);
        // Each point covers 4 base intervals: min of the first, max of the last.
        assert_eq!(
            (s.points()[1].index, s.points()[1].min, s.points()[1].max),
            (1, 4, 8)
        );
    }

    #[test]
    fn a_series_copy_keeps_its_buffer_from_save_to_save() {
        let mut s = SeriesBuilder::new(1000);
        s.reserve_points(usize::MAX);
        let iv = |index| IntervalStats {
            index,
            samples: 1,
            min: 1,
            max: 1,
            sum: 1,
            overruns: 0,
        };
        s.push(&iv(0));
        let first = s.series_in(Vec::new(), (0, u64::MAX)).points;
        assert_eq!(first.capacity(), SERIES_POINTS + 1);
        // The next save writes into the same buffer.
        s.push(&iv(1));
        let at = first.as_ptr();
        let second = s.series_in(first, (0, u64::MAX)).points;
        assert_eq!((second.as_ptr(), second.len()), (at, 2));
    }
}
