//! A measured series as the reporter sees it: the collecting side of one
//! recorder, its points over time and its latest interval.

use crate::stats::{Collector, IntervalStats, SeriesBuilder, Summary};
use std::sync::{Arc, Mutex};

/// The name of a series known only once it is in use (a thread `watch`
/// sees start during the run), given by whoever fills its recorder.
pub type LateName = Arc<Mutex<Option<String>>>;

/// The highest latency of a series and what held it up (its culprit),
/// given by whoever knows it as the run goes (the metrics show it).
pub type MaxBy = Arc<Mutex<Option<(u64, String)>>>;

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
    /// Where the name comes from when it is not known at the start: until
    /// it is given, the series is unused and left out of the result.
    pub late: Option<LateName>,
    /// The culprit of the series' maximum, where the benchmark knows it.
    pub max_by: Option<MaxBy>,
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
            late: None,
            max_by: None,
        }
    }

    /// A series held in reserve, named through `late` once it is used.
    pub fn reserved(late: LateName, collector: Collector, interval_ns: u64) -> Self {
        let mut c = Channel::new(String::new(), None, collector, interval_ns);
        c.late = Some(late);
        c
    }

    /// The culprit of the maximum so far with that maximum, if known.
    pub fn max_culprit(&self) -> Option<(u64, String)> {
        self.max_by.as_ref()?.lock().ok()?.clone()
    }

    /// Whether the series is in use: it has its name.
    pub fn in_use(&self) -> bool {
        !self.name.is_empty()
    }

    /// Drain the recorder; returns the intervals finished since the last call.
    pub fn collect(&mut self, scratch: &mut Vec<IntervalStats>) {
        scratch.clear();
        if let Some(name) = self.late.as_ref().and_then(|l| l.lock().ok()?.clone()) {
            self.name = name;
        }
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
