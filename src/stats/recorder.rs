//! The hot-path recorder and its reporter-side collector.
//!
//! A [`Recorder`] belongs to one measuring thread. Per sample it does plain
//! arithmetic on its own fields, one relaxed atomic add into a delta
//! histogram, and one seqlock publication: no allocation, no lock, no
//! syscall, no formatting. The [`Collector`] on the (non-real-time) reporter
//! thread drains the deltas into a full `u64` histogram and reads snapshots and
//! finished intervals. Nothing blocks the writer.

use super::histogram::{index_of, Histogram, BUCKETS};
use super::seqlock::SeqCell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

/// Finished intervals kept for the reporter; it drains them every interval,
/// so this only overflows if the reporter stalls for this many intervals.
const RING: usize = 64;

/// Exact running statistics of one thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub samples: u64,
    pub sum: u64,
    pub sum_sq: u128,
    pub min: u64,
    pub max: u64,
    /// Sample index (0-based) of the maximum.
    pub max_index: u64,
    /// Time of the maximum, ns after the run's start.
    pub max_time: u64,
    pub overruns: u64,
    /// The latest sample.
    pub last: u64,
}

impl Totals {
    fn to_words(self) -> [u64; 10] {
        [
            self.samples,
            self.sum,
            self.sum_sq as u64,
            (self.sum_sq >> 64) as u64,
            self.min,
            self.max,
            self.max_index,
            self.max_time,
            self.overruns,
            self.last,
        ]
    }
    fn from_words(w: [u64; 10]) -> Self {
        Totals {
            samples: w[0],
            sum: w[1],
            sum_sq: (w[2] as u128) | ((w[3] as u128) << 64),
            min: w[4],
            max: w[5],
            max_index: w[6],
            max_time: w[7],
            overruns: w[8],
            last: w[9],
        }
    }

    /// Combine two threads' totals (the max keeps its own thread's index/time).
    pub fn merge(&mut self, o: &Totals) {
        if o.samples == 0 {
            return;
        }
        if self.samples == 0 || o.max > self.max {
            self.max = o.max;
            self.max_index = o.max_index;
            self.max_time = o.max_time;
        }
        self.min = if self.samples == 0 {
            o.min
        } else {
            self.min.min(o.min)
        };
        self.samples += o.samples;
        self.sum += o.sum;
        self.sum_sq += o.sum_sq;
        self.overruns += o.overruns;
        self.last = o.last;
    }
}

/// Statistics of one interval (by default one second) of one thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IntervalStats {
    /// Interval number since the start of the run.
    pub index: u64,
    pub samples: u64,
    pub min: u64,
    pub max: u64,
    pub sum: u64,
    pub overruns: u64,
}

impl IntervalStats {
    fn to_words(self) -> [u64; 6] {
        [
            self.index,
            self.samples,
            self.min,
            self.max,
            self.sum,
            self.overruns,
        ]
    }
    fn from_words(w: [u64; 6]) -> Self {
        IntervalStats {
            index: w[0],
            samples: w[1],
            min: w[2],
            max: w[3],
            sum: w[4],
            overruns: w[5],
        }
    }
    pub fn avg(&self) -> u64 {
        // Rounded to the nearest ns, as summaries are.
        (self.sum.saturating_add(self.samples / 2))
            .checked_div(self.samples)
            .unwrap_or(0)
    }
    /// Fold `o` (a neighbouring interval) into this one.
    pub fn merge(&mut self, o: &IntervalStats) {
        if o.samples > 0 {
            self.min = if self.samples == 0 {
                o.min
            } else {
                self.min.min(o.min)
            };
            self.max = self.max.max(o.max);
        }
        self.samples += o.samples;
        // Saturating: imported series may carry absurd values (never a measured one).
        self.sum = self.sum.saturating_add(o.sum);
        self.overruns += o.overruns;
    }
}

/// Phases a run can have: the whole run, or an idle phase then a load phase.
pub const PHASES: usize = 2;

/// What a recorder and its collector share.
struct Shared {
    /// Per phase: samples not yet drained by the collector. Phase 1's
    /// exists only in a run split in two ([`Collector::split_phases`]): 29 KB
    /// per thread that a run of one phase does not hold.
    delta0: Arc<[AtomicU32]>,
    delta1: OnceLock<Arc<[AtomicU32]>>,
    /// Per phase: the exact running statistics.
    totals: [SeqCell<10>; PHASES],
    ring: [SeqCell<6>; RING],
    head: AtomicU32,
    /// Intervals the collector has consumed (only read by simulations that pace themselves).
    tail: AtomicU32,
    /// When phase 1 starts, ns after the run's start (`u64::MAX`: never).
    /// Written once before the run starts; read once by the recorder.
    phase_at: SeqCell<1>,
}

/// A phase's delta counts, every bucket written (resident before mlockall).
fn new_delta() -> Arc<[AtomicU32]> {
    (0..BUCKETS).map(|_| AtomicU32::new(0)).collect()
}

/// Create a connected recorder/collector pair. All memory is allocated here
/// (and in [`Collector::split_phases`], before the run).
pub fn pair(interval_ns: u64) -> (Recorder, Collector) {
    let shared = Arc::new(Shared {
        delta0: new_delta(),
        delta1: OnceLock::new(),
        totals: std::array::from_fn(|_| SeqCell::default()),
        ring: std::array::from_fn(|_| SeqCell::default()),
        head: AtomicU32::new(0),
        tail: AtomicU32::new(0),
        phase_at: SeqCell::default(),
    });
    shared.phase_at.write(&[u64::MAX]);
    (
        Recorder {
            delta: Arc::clone(&shared.delta0),
            shared: Arc::clone(&shared),
            totals: Totals::default(),
            interval: IntervalStats::default(),
            interval_ns: interval_ns.max(1),
            interval_end: 0,
            next_event: 0,
            started: false,
            phase: 0,
            phase_at: u64::MAX,
            n: 0,
            head: 0,
        },
        Collector {
            shared,
            phase_hist: None,
            phase_totals: [Totals::default(); PHASES],
            histogram: Histogram::new(),
            totals: Totals::default(),
            tail: 0,
            lost_intervals: 0,
        },
    )
}

/// The measuring thread's side.
pub struct Recorder {
    /// The current phase's delta counts.
    delta: Arc<[AtomicU32]>,
    shared: Arc<Shared>,
    /// Statistics of the current phase.
    totals: Totals,
    interval: IntervalStats,
    interval_ns: u64,
    /// End of the current interval, ns after the run's start.
    interval_end: u64,
    /// The next interval end or phase change: the only branch into the cold path.
    next_event: u64,
    started: bool,
    phase: usize,
    phase_at: u64,
    /// Samples recorded in the whole run (the global sample index).
    n: u64,
    head: u32,
}

impl Recorder {
    /// Record one sample: `latency` ns, taken `at` ns after the run's start,
    /// with `overruns` periods missed before it.
    #[inline(always)]
    pub fn record(&mut self, latency: u64, at: u64, overruns: u64) {
        if at >= self.next_event {
            self.boundary(at);
        }
        self.delta[index_of(latency)].fetch_add(1, Ordering::Relaxed);
        let t = &mut self.totals;
        if t.samples == 0 || latency < t.min {
            t.min = latency;
        }
        if t.samples == 0 || latency > t.max {
            t.max = latency;
            t.max_index = self.n;
            t.max_time = at;
        }
        t.samples += 1;
        t.sum += latency;
        t.sum_sq += (latency as u128) * (latency as u128);
        t.overruns += overruns;
        t.last = latency;
        self.n += 1;
        let iv = &mut self.interval;
        if iv.samples == 0 || latency < iv.min {
            iv.min = latency;
        }
        iv.max = iv.max.max(latency);
        iv.samples += 1;
        iv.sum += latency;
        iv.overruns += overruns;
        self.shared.totals[self.phase].write(&self.totals.to_words());
    }

    /// Record `count` samples of the same `latency` at once, the latest taken
    /// `at` ns after the run's start: a busy loop's tally of equal gaps,
    /// handed over every few thousand loops instead of one by one. The
    /// sample index of a maximum among them is that of the first.
    #[inline(always)]
    pub fn record_many(&mut self, latency: u64, count: u32, at: u64) {
        if count == 0 {
            return;
        }
        if at >= self.next_event {
            self.boundary(at);
        }
        let n = u64::from(count);
        self.delta[index_of(latency)].fetch_add(count, Ordering::Relaxed);
        let t = &mut self.totals;
        if t.samples == 0 || latency < t.min {
            t.min = latency;
        }
        if t.samples == 0 || latency > t.max {
            t.max = latency;
            t.max_index = self.n;
            t.max_time = at;
        }
        t.samples += n;
        t.sum += latency * n;
        t.sum_sq += (latency as u128) * (latency as u128) * n as u128;
        t.last = latency;
        self.n += n;
        let iv = &mut self.interval;
        if iv.samples == 0 || latency < iv.min {
            iv.min = latency;
        }
        iv.max = iv.max.max(latency);
        iv.samples += n;
        iv.sum += latency * n;
        self.shared.totals[self.phase].write(&self.totals.to_words());
    }

    /// Overruns without a sample of their own (periods a source reports as
    /// missed after the last sample of the run).
    pub fn add_overruns(&mut self, overruns: u64) {
        self.totals.overruns += overruns;
        self.interval.overruns += overruns;
        self.shared.totals[self.phase].write(&self.totals.to_words());
    }

    /// The first sample, an interval end or the phase change.
    #[cold]
    fn boundary(&mut self, at: u64) {
        if !self.started {
            self.started = true;
            self.phase_at = self.shared.phase_at.read().0[0];
            self.start_interval(at);
        } else if at >= self.interval_end {
            self.publish_interval();
            self.start_interval(at);
        }
        if self.phase == 0 && at >= self.phase_at {
            self.phase = 1;
            self.totals = Totals::default();
            if let Some(d) = self.shared.delta1.get() {
                self.delta = Arc::clone(d);
            }
        }
        self.next_event = if self.phase == 0 {
            self.interval_end.min(self.phase_at)
        } else {
            self.interval_end
        };
    }

    fn start_interval(&mut self, at: u64) {
        let index = at / self.interval_ns;
        self.interval = IntervalStats {
            index,
            ..Default::default()
        };
        self.interval_end = (index + 1) * self.interval_ns;
    }

    fn publish_interval(&mut self) {
        if self.interval.samples == 0 {
            return;
        }
        let slot = self.head as usize % RING;
        self.shared.ring[slot].write(&self.interval.to_words());
        self.head = self.head.wrapping_add(1);
        self.shared.head.store(self.head, Ordering::Release);
    }

    /// Publish the last, partial interval at the end of the run.
    pub fn finish(&mut self) {
        self.publish_interval();
        self.interval.samples = 0;
    }

    /// Statistics of the current phase.
    pub fn totals(&self) -> &Totals {
        &self.totals
    }

    /// Finished intervals the collector has not read yet. A real measuring
    /// thread never waits on this; a simulation running faster than real time
    /// uses it to avoid overrunning the ring.
    pub fn backlog(&self) -> u32 {
        self.head
            .wrapping_sub(self.shared.tail.load(Ordering::Relaxed))
    }
}

/// Intervals a simulation may run ahead of the collector.
pub const PACE_LIMIT: u32 = (RING / 2) as u32;

/// The reporter's side: owns the full histograms of one thread.
pub struct Collector {
    shared: Arc<Shared>,
    /// Per phase, only in a run split in two ([`Collector::split_phases`]):
    /// a run of one phase keeps no copy of its whole-run histogram.
    phase_hist: Option<Box<[Histogram; PHASES]>>,
    phase_totals: [Totals; PHASES],
    /// The whole run: both phases merged.
    histogram: Histogram,
    totals: Totals,
    tail: u32,
    /// Intervals the reporter could not read in time (it stalled for > 64 intervals).
    pub lost_intervals: u64,
}

impl Collector {
    /// Keep a histogram per phase besides the whole run's: call before the
    /// memory is locked, in a run that [`Collector::set_phase_boundary`] will split.
    pub fn split_phases(&mut self) {
        self.shared.delta1.get_or_init(new_delta);
        if self.phase_hist.is_none() {
            self.phase_hist = Some(Box::new(std::array::from_fn(|_| Histogram::new())));
        }
    }

    /// Split the run at `at_ns` after its start: samples from then on go to
    /// phase 1. Call before the run starts, after [`Collector::split_phases`].
    pub fn set_phase_boundary(&self, at_ns: u64) {
        self.shared.phase_at.write(&[at_ns]);
    }

    /// Drain new samples into the histograms, refresh the totals, and return
    /// the intervals finished since the last call.
    pub fn collect(&mut self, finished: &mut Vec<IntervalStats>) {
        let mut merged = Totals::default();
        for p in 0..PHASES {
            let (words, _) = self.shared.totals[p].read();
            let delta = if p == 0 {
                Some(&self.shared.delta0)
            } else {
                self.shared.delta1.get()
            };
            for (i, cell) in delta.iter().flat_map(|d| d.iter()).enumerate() {
                if cell.load(Ordering::Relaxed) != 0 {
                    let n = cell.swap(0, Ordering::Relaxed) as u64;
                    if let Some(h) = &mut self.phase_hist {
                        h[p].add_to_bucket(i, n);
                    }
                    self.histogram.add_to_bucket(i, n);
                }
            }
            let t = Totals::from_words(words);
            if let (Some(h), true) = (&mut self.phase_hist, t.samples > 0) {
                // Buckets drained after the snapshot may hold a newer, larger sample;
                // the exact extremes catch up on the next collection.
                h[p].set_extremes(t.min, t.max);
            }
            self.phase_totals[p] = t;
            merged.merge(&t);
        }
        self.totals = merged;
        if merged.samples > 0 {
            self.histogram.set_extremes(merged.min, merged.max);
        }
        let head = self.shared.head.load(Ordering::Acquire);
        let pending = head.wrapping_sub(self.tail);
        if pending as usize > RING {
            self.lost_intervals += (pending as usize - RING) as u64;
            self.tail = head.wrapping_sub(RING as u32);
        }
        while self.tail != head {
            let (w, _) = self.shared.ring[self.tail as usize % RING].read();
            finished.push(IntervalStats::from_words(w));
            self.tail = self.tail.wrapping_add(1);
        }
        self.shared.tail.store(self.tail, Ordering::Relaxed);
    }

    /// The whole run.
    pub fn histogram(&self) -> &Histogram {
        &self.histogram
    }

    /// The whole run.
    pub fn totals(&self) -> &Totals {
        &self.totals
    }

    /// One phase (0: before the boundary, 1: after). In a run not split
    /// ([`Collector::split_phases`]) phase 0 is the whole run and there is no
    /// phase 1.
    pub fn phase(&self, p: usize) -> (&Totals, &Histogram) {
        debug_assert!(
            p == 0 || self.phase_hist.is_some(),
            "phase {p} of a run not split"
        );
        let h = self.phase_hist.as_ref().map_or(&self.histogram, |h| &h[p]);
        (&self.phase_totals[p], h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_many_equals_recording_one_by_one() {
        let (mut a, mut ca) = pair(1_000);
        let (mut b, mut cb) = pair(1_000);
        for (v, n, at) in [
            (20u64, 3u32, 10u64),
            (500, 1, 20),
            (20, 2, 1_500),
            (7, 4, 2_500),
        ] {
            a.record_many(v, n, at);
            for _ in 0..n {
                b.record(v, at, 0);
            }
        }
        a.finish();
        b.finish();
        let (mut ia, mut ib) = (Vec::new(), Vec::new());
        ca.collect(&mut ia);
        cb.collect(&mut ib);
        let (ta, tb) = (ca.totals(), cb.totals());
        assert_eq!(
            (ta.samples, ta.sum, ta.sum_sq, ta.min, ta.max),
            (tb.samples, tb.sum, tb.sum_sq, tb.min, tb.max)
        );
        assert_eq!(ta.samples, 10);
        assert_eq!(ia, ib);
        assert_eq!(ca.histogram(), cb.histogram());
    }

    #[test]
    fn collector_sees_every_sample_and_exact_extremes() {
        let (mut rec, mut col) = pair(1_000);
        let mut out = Vec::new();
        let mut t = 0;
        for i in 0..10_000u64 {
            let lat = (i * 7919) % 100_000 + 1;
            rec.record(lat, t, u64::from(i % 1000 == 0));
            t += 100;
            if i % 500 == 0 {
                col.collect(&mut out);
            }
        }
        rec.finish();
        col.collect(&mut out);
        let tot = col.totals();
        assert_eq!(tot.samples, 10_000);
        assert_eq!(col.histogram().samples, 10_000);
        assert_eq!(tot.min, 1);
        assert_eq!(tot.overruns, 10);
        assert_eq!(col.histogram().max, tot.max);
        // 10_000 samples 100 ns apart in 1 µs intervals: 1000 intervals of 10.
        assert_eq!(out.len(), 1000);
        assert!(out.iter().all(|iv| iv.samples == 10));
        assert_eq!(out.iter().map(|iv| iv.sum).sum::<u64>(), tot.sum);
        assert_eq!(out.iter().map(|iv| iv.max).max(), Some(tot.max));
        // Intervals are in order, none skipped.
        assert!(out.windows(2).all(|w| w[1].index == w[0].index + 1));
    }

    #[test]
    fn a_stalled_reporter_counts_lost_intervals_without_blocking_the_writer() {
        let (mut rec, mut col) = pair(10);
        for i in 0..1000u64 {
            rec.record(5, i * 10, 0);
        }
        rec.finish();
        let mut out = Vec::new();
        col.collect(&mut out);
        assert_eq!(out.len(), RING);
        assert_eq!(col.lost_intervals, 1000 - RING as u64);
        assert_eq!(col.totals().samples, 1000);
    }

    #[test]
    fn overruns_without_a_sample_reach_the_totals() {
        let (mut rec, mut col) = pair(1_000);
        let mut out = Vec::new();
        rec.record(10, 0, 1);
        rec.add_overruns(3);
        rec.finish();
        col.collect(&mut out);
        assert_eq!(col.totals().samples, 1);
        assert_eq!(col.totals().overruns, 4);
        assert_eq!(out.iter().map(|iv| iv.overruns).sum::<u64>(), 4);
    }

    #[test]
    fn max_is_located_by_index_and_time() {
        let (mut rec, _col) = pair(1_000_000);
        for (i, lat) in [5u64, 9, 100, 7].iter().enumerate() {
            rec.record(*lat, 1000 * i as u64, 0);
        }
        let t = rec.totals();
        assert_eq!((t.max, t.max_index, t.max_time), (100, 2, 2000));
    }

    #[test]
    fn a_phase_boundary_splits_the_statistics_without_losing_samples() {
        let (mut rec, mut col) = pair(1_000);
        col.split_phases();
        col.set_phase_boundary(5_000);
        for i in 0..100u64 {
            // 100 ns apart: samples 0..50 before the boundary, 50..100 after.
            rec.record(if i < 50 { 10 } else { 1000 + i }, i * 100, 0);
        }
        rec.finish();
        let mut out = Vec::new();
        col.collect(&mut out);
        let (t0, h0) = col.phase(0);
        let (t1, h1) = col.phase(1);
        assert_eq!((t0.samples, t0.max, h0.samples), (50, 10, 50));
        assert_eq!(
            (t1.samples, t1.min, t1.max, h1.samples),
            (50, 1050, 1099, 50)
        );
        // The maximum's index is global across phases.
        assert_eq!(t1.max_index, 99);
        assert_eq!(col.totals().samples, 100);
        assert_eq!(col.histogram().samples, 100);
        assert_eq!((col.totals().min, col.totals().max), (10, 1099));
        assert_eq!(out.iter().map(|iv| iv.samples).sum::<u64>(), 100);
    }

    #[test]
    fn totals_merge() {
        let mut a = Totals {
            samples: 2,
            sum: 10,
            sum_sq: 52,
            min: 4,
            max: 6,
            max_index: 1,
            max_time: 9,
            overruns: 1,
            last: 6,
        };
        let b = Totals {
            samples: 1,
            sum: 20,
            sum_sq: 400,
            min: 20,
            max: 20,
            max_index: 0,
            max_time: 3,
            overruns: 0,
            last: 20,
        };
        a.merge(&b);
        assert_eq!(
            (a.samples, a.sum, a.min, a.max, a.max_time, a.overruns),
            (3, 30, 4, 20, 3, 1)
        );
    }
}
