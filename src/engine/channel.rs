//! A measured series as the reporter sees it: the collecting side of one
//! recorder, its points over time and its latest interval.

use crate::stats::{Collector, IntervalStats, SeriesBuilder, Summary};

/// One measured series: a thread (timer), a pair (switch), a metric (net).
pub struct Channel {
    pub name: String,
    pub cpu: Option<usize>,
    pub collector: Collector,
    pub series: SeriesBuilder,
    /// The latest finished interval, for live output.
    pub last: Option<IntervalStats>,
    /// Whether the result's `total` merges this series (false for a series
    /// of another quantity beside the main ones, e.g. a timer's IRQ-context
    /// latency beside its thread latency).
    pub in_total: bool,
}

impl Channel {
    pub fn new(name: String, cpu: Option<usize>, collector: Collector, interval_ns: u64) -> Self {
        Channel {
            name,
            cpu,
            collector,
            series: SeriesBuilder::new(interval_ns),
            in_total: true,
            last: None,
        }
    }

    /// Drain the recorder; returns the intervals finished since the last call.
    pub fn collect(&mut self, scratch: &mut Vec<IntervalStats>) {
        scratch.clear();
        self.collector.collect(scratch);
        for iv in scratch.iter() {
            self.series.push(iv);
        }
        if let Some(iv) = scratch.last() {
            self.last = Some(*iv);
        }
    }

    pub fn summary(&self) -> Summary {
        Summary::from_parts(self.collector.totals(), self.collector.histogram())
    }
}
