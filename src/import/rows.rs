//! Rows of per-interval figures, as Xenomai's `latency` (RTD, one a second)
//! and RTAI's testsuite (RTD, one per `avrgtime`) print them: each row an
//! interval's min, avg and max, and the overrun total so far.

use super::{ParseError, Parsed};
use crate::stats::{IntervalStats, SeriesBuilder};

/// One row: its line, the interval's min, avg and max (ns, signed), the
/// overrun total so far and the mode switches (Xenomai 3).
pub struct Row {
    pub line: usize,
    pub min: i64,
    pub avg: i64,
    pub max: i64,
    pub overruns: u64,
    pub msw: u64,
}

/// Rows folded as they come (nothing kept per row): the run's extremes,
/// the mean of the rows' averages, the overrun total and a series point per row.
pub struct RowLog {
    pub series: SeriesBuilder,
    pub rows: u64,
    pub min: i64,
    pub max: i64,
    pub avg_sum: i128,
    pub overruns: u64,
    pub msw: u64,
    /// Row number and value of the first row holding the largest max.
    pub worst: Option<(u64, i64)>,
    pub negative: bool,
}

impl RowLog {
    /// An empty log whose rows each cover `interval_ns`.
    pub fn new(interval_ns: u64) -> Self {
        RowLog {
            series: SeriesBuilder::new(interval_ns),
            rows: 0,
            min: i64::MAX,
            max: i64::MIN,
            avg_sum: 0,
            overruns: 0,
            msw: 0,
            worst: None,
            negative: false,
        }
    }

    /// Row `r`, which covers `per_row` samples.
    pub fn push(&mut self, r: &Row, per_row: u64) -> Parsed<()> {
        if r.overruns < self.overruns {
            return Err(ParseError::at(
                r.line,
                "expected the overrun total to never decrease",
            ));
        }
        if r.min > r.max {
            return Err(ParseError::at(r.line, "expected lat min ≤ lat max"));
        }
        // The series holds what the result model can (no negative values yet).
        let clamp = |v: i64| v.max(0) as u64;
        self.series.push(&IntervalStats {
            index: self.rows,
            samples: per_row,
            min: clamp(r.min),
            max: clamp(r.max),
            sum: clamp(r.avg)
                .clamp(clamp(r.min), clamp(r.max))
                .saturating_mul(per_row),
            overruns: r.overruns - self.overruns,
        });
        if self.worst.is_none_or(|w| r.max > w.1) {
            self.worst = Some((self.rows, r.max));
        }
        self.negative |= r.min < 0;
        self.min = self.min.min(r.min);
        self.max = self.max.max(r.max);
        self.avg_sum += r.avg as i128;
        self.overruns = r.overruns;
        self.msw = r.msw;
        self.rows += 1;
        Ok(())
    }

    /// The mean of the rows' averages (each row covers as many samples).
    pub fn avg(&self) -> i64 {
        (self.avg_sum / self.rows.max(1) as i128) as i64
    }
}
