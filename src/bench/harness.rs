//! What every benchmark does around its measuring threads: collect their
//! recorders on a non-real-time thread, print live output, rewrite the result
//! file atomically, and assemble the final result.

use crate::error::{Error, Result};
use crate::output::live::Live;
use crate::result::{RunResult, Series, SeriesPoint, ThreadResult};
use crate::stats::recorder::Totals;
use crate::stats::{Collector, Histogram, IntervalStats, Summary};
use std::path::PathBuf;

/// Points kept per series before neighbours merge (and the interval doubles).
pub const SERIES_POINTS: usize = 4096;

/// One measured series: a thread (timer), a pair (switch), a metric (net).
pub struct Channel {
    pub name: String,
    pub cpu: Option<usize>,
    pub collector: Collector,
    pub series: SeriesBuilder,
    /// The latest finished interval, for live output.
    pub last: Option<IntervalStats>,
}

impl Channel {
    pub fn new(name: String, cpu: Option<usize>, collector: Collector, interval_ns: u64) -> Self {
        Channel {
            name,
            cpu,
            collector,
            series: SeriesBuilder::new(interval_ns),
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

    pub fn to_series(&self) -> Series {
        let interval_ns = self.base_ns << self.shift;
        Series {
            interval_ns,
            points: self
                .points
                .iter()
                .map(|p| SeriesPoint {
                    t_ns: p.index * interval_ns,
                    samples: p.samples,
                    min_ns: p.min,
                    avg_ns: p.avg(),
                    max_ns: p.max,
                    overruns: p.overruns,
                })
                .collect(),
        }
    }
}

/// Where and how often the result file is written.
pub struct Saver {
    pub path: Option<PathBuf>,
    pub every_ns: u64,
    pub last_error: Option<String>,
}

impl Saver {
    /// Write `result`; a failure is remembered (and reported once) but never stops the measurement.
    pub fn save(&mut self, result: &RunResult) {
        let Some(path) = &self.path else { return };
        match result.save(path) {
            Ok(()) => self.last_error = None,
            Err(e) => {
                let msg = format!(
                    "cannot write {}: {e}; check the path and free space (the measurement goes on)",
                    path.display()
                );
                if self.last_error.as_deref() != Some(msg.as_str()) {
                    eprintln!("rtlat: {msg}");
                }
                self.last_error = Some(msg);
            }
        }
    }

    /// The final write; its failure decides the exit code.
    pub fn save_final(&mut self, result: &RunResult) -> Result<()> {
        self.save(result);
        match &self.last_error {
            Some(msg) => Err(Error::io(msg.clone())),
            None => Ok(()),
        }
    }
}

/// Fill `result.threads` and `result.total` from the channels.
pub fn fill_result(result: &mut RunResult, channels: &[Channel]) {
    let mut total_hist = Histogram::new();
    let mut totals = Totals::default();
    result.threads = channels
        .iter()
        .map(|c| {
            total_hist.merge(c.collector.histogram());
            totals.merge(c.collector.totals());
            ThreadResult {
                name: c.name.clone(),
                cpu: c.cpu,
                summary: c.summary(),
                histogram: c.collector.histogram().to_record(),
                series: c.series.to_series(),
            }
        })
        .collect();
    if totals.samples > 0 {
        total_hist.set_extremes(totals.min, totals.max);
    }
    result.total = Summary::from_parts(&totals, &total_hist);
    let lost: u64 = channels.iter().map(|c| c.collector.lost_intervals).sum();
    let note_prefix = "live intervals lost";
    result.notes.retain(|n| !n.starts_with(note_prefix));
    if lost > 0 {
        result.notes.push(format!(
            "{note_prefix}: {lost} (the reporter stalled; histograms and totals are complete, the series has gaps)"
        ));
    }
}

/// Collect every channel and print the live view.
pub fn tick(channels: &mut [Channel], live: &mut Live, elapsed_ns: u64, remaining_ns: Option<u64>) {
    let mut scratch = Vec::new();
    for (i, c) in channels.iter_mut().enumerate() {
        c.collect(&mut scratch);
        live.intervals(i, &c.name, &scratch);
    }
    live.refresh(channels, elapsed_ns, remaining_ns);
}
