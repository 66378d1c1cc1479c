//! The busy loop: the clock read back to back, every gap between two reads
//! counted. Gaps shorter than [`SMALL`] ns (nearly all of them) go into a
//! tally on the stack with one add; every [`BATCH`] loops the tally is handed
//! to the recorder ([`Recorder::record_many`]) and the stop flag and the end
//! are checked. Longer gaps are recorded one by one, and those above the
//! threshold also into the noise series and the [`GapLog`]. Nothing in the
//! loop allocates, locks or makes a system call; the hand-over is part of
//! one gap every [`BATCH`] loops, so no time goes unobserved. A longer gap
//! is also where the thread may have been moved to another CPU, its own
//! gone away: the CPU is checked there, and the loop ends without the gap
//! that ended elsewhere.

use super::counter::Ticks;
use crate::engine::{Moved, StopFlag};
use crate::result::details::noise::NoiseGap as Gap;
use crate::stats::recorder::Recorder;
use crate::stats::tap::Tap;
use crate::sys;

/// Gaps shorter than this are tallied (the histogram's exact range).
pub const SMALL: usize = 256;
/// Loops between two hand-overs of the tally (about a millisecond).
pub const BATCH: u64 = 65_536;
/// Longest gaps kept per CPU apart from the log.
pub const WORST: usize = 8;

/// The gaps above the threshold of one CPU, in order, for an attribution
/// after the run: the first `capacity` of them (allocated before the loop)
/// and the count of those that did not fit, and the [`WORST`] longest.
#[derive(Debug, Clone)]
pub struct GapLog {
    pub gaps: Vec<Gap>,
    pub dropped: u64,
    /// Longest first.
    pub worst: Vec<Gap>,
}

impl GapLog {
    pub fn with_capacity(capacity: usize) -> Self {
        GapLog {
            gaps: Vec::with_capacity(capacity),
            dropped: 0,
            worst: Vec::with_capacity(WORST + 1),
        }
    }

    /// Keep `g` (never allocates: beyond the capacity it is only counted).
    fn push(&mut self, g: Gap) {
        if self.gaps.len() < self.gaps.capacity() {
            self.gaps.push(g);
        } else {
            self.dropped += 1;
        }
        if self.worst.len() < WORST || self.worst.last().is_some_and(|w| w.len_ns() < g.len_ns()) {
            let at = self.worst.partition_point(|w| w.len_ns() >= g.len_ns());
            if self.worst.len() == WORST {
                self.worst.pop();
            }
            self.worst.insert(at, g);
        }
    }
}

/// When the loop ends and what counts as noise.
#[derive(Debug, Clone, Copy)]
pub struct LoopPlan {
    pub threshold_ns: u64,
    pub duration_ns: Option<u64>,
    pub loops: Option<u64>,
    /// The CPU the loop is pinned to (`None`: not checked).
    pub cpu: Option<usize>,
}

/// What one CPU's loop counted.
#[derive(Debug, Clone, Default)]
pub struct LoopCount {
    pub loops: u64,
    /// Gaps above the threshold and their sum.
    pub above: u64,
    pub stolen_ns: u64,
    /// From the first read to the last: the sum of every gap.
    pub span_ns: u64,
    /// The first and the last read on CLOCK_MONOTONIC.
    pub first_ns: u64,
    pub last_ns: u64,
    /// The loop ended on another CPU than its own: its CPU went away.
    pub moved: Option<Moved>,
}

/// The recorders a loop writes: every gap, and the gaps above the
/// threshold (also handed to `--explain`'s tap when there is one).
pub struct LoopRecorders<'a> {
    pub all: &'a mut Recorder,
    pub noise: &'a mut Recorder,
    pub log: &'a mut GapLog,
    pub tap: Option<&'a Tap>,
}

/// Run the loop from `start` (CLOCK_MONOTONIC ns) until the plan's end or `stop`.
pub fn busy<T: Ticks>(
    t: &T,
    plan: &LoopPlan,
    start: u64,
    stop: &StopFlag,
    out: &mut LoopRecorders,
) -> LoopCount {
    sys::clock::sleep_until(libc::CLOCK_MONOTONIC, start);
    let end = plan
        .duration_ns
        .map_or(u64::MAX, |d| start.saturating_add(d));
    let limit = plan.loops.unwrap_or(u64::MAX);
    let mut tally = [0u32; SMALL];
    let mut count = LoopCount::default();
    let mut prev = t.now();
    let first = prev;
    while !stop.is_set() && count.loops < limit {
        let n = BATCH.min(limit - count.loops);
        let mut ran = n;
        for i in 0..n {
            let now = t.now();
            let gap = t.span_ns(now.wrapping_sub(prev));
            if gap < SMALL as u64 {
                tally[gap as usize] += 1;
            } else if long_gap(t, gap, (prev, now), start, plan, out, &mut count) {
                ran = i; // that gap is not a sample
                break;
            }
            prev = now;
        }
        count.loops += ran;
        let now = t.mono_ns(prev);
        // The last batch's gaps belong to the run's last interval, not past its end.
        let at = now.min(end.saturating_sub(1)).saturating_sub(start);
        hand_over(&mut tally, out.all, at);
        if now >= end || count.moved.is_some() {
            break;
        }
    }
    out.all.finish();
    out.noise.finish();
    count.span_ns = t.span_ns(prev.wrapping_sub(first));
    count.first_ns = t.mono_ns(first);
    count.last_ns = t.mono_ns(prev);
    count
}

/// A gap too long for the tally: recorded on its own, and as noise above
/// the threshold; unless the loop now runs on another CPU than its own
/// (true: it does, and `count` says where).
#[cold]
#[inline(never)]
fn long_gap<T: Ticks>(
    t: &T,
    gap: u64,
    (from, to): (u64, u64),
    start: u64,
    plan: &LoopPlan,
    out: &mut LoopRecorders,
    count: &mut LoopCount,
) -> bool {
    count.moved = Moved::here(plan.cpu, t.mono_ns(to).saturating_sub(start));
    if count.moved.is_some() {
        return true;
    }
    // Both series place a gap where it began: when the loop lost the CPU.
    let begin = t.mono_ns(from);
    out.all.record(gap, begin.saturating_sub(start), 0);
    if gap > plan.threshold_ns {
        let end = t.mono_ns(to);
        out.noise.record(gap, begin.saturating_sub(start), 0);
        out.log.push(Gap {
            start_ns: begin,
            end_ns: end,
        });
        if let Some(tap) = out.tap {
            tap.push(begin, end.saturating_sub(begin));
        }
        count.above += 1;
        count.stolen_ns += gap;
    }
    false
}

/// The tally into the recorder, `at` ns after the start; the tally is zero after.
#[inline(never)]
fn hand_over(tally: &mut [u32; SMALL], rec: &mut Recorder, at: u64) {
    for (gap, n) in tally.iter_mut().enumerate() {
        if *n != 0 {
            rec.record_many(gap as u64, *n, at);
            *n = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::counter::Monotonic;
    use super::*;
    use crate::stats::recorder;

    fn gap(start: u64, len: u64) -> Gap {
        Gap {
            start_ns: start,
            end_ns: start + len,
        }
    }

    #[test]
    fn the_log_keeps_the_first_gaps_and_the_longest() {
        let mut log = GapLog::with_capacity(3);
        for (i, len) in [5u64, 50, 7, 90, 1, 60, 2, 3, 4, 8, 9, 10]
            .iter()
            .enumerate()
        {
            log.push(gap(i as u64 * 100, *len));
        }
        assert_eq!(log.gaps, [gap(0, 5), gap(100, 50), gap(200, 7)]);
        assert_eq!(log.dropped, 9);
        let lens: Vec<u64> = log.worst.iter().map(Gap::len_ns).collect();
        assert_eq!(lens, [90, 60, 50, 10, 9, 8, 7, 5]);
    }

    #[test]
    fn every_loop_is_one_gap_and_the_gaps_add_up() {
        let (mut all, mut ca) = recorder::pair(1_000_000_000);
        let (mut noise, _cn) = recorder::pair(1_000_000_000);
        let mut log = GapLog::with_capacity(16);
        let plan = LoopPlan {
            threshold_ns: 1_000,
            duration_ns: None,
            loops: Some(200_000),
            cpu: None,
        };
        let start = sys::clock::now_ns(libc::CLOCK_MONOTONIC);
        let mut out = LoopRecorders {
            all: &mut all,
            noise: &mut noise,
            log: &mut log,
            tap: None,
        };
        let t0 = sys::clock::now_ns(libc::CLOCK_MONOTONIC);
        let c = busy(&Monotonic, &plan, start, &StopFlag::default(), &mut out);
        let took = sys::clock::now_ns(libc::CLOCK_MONOTONIC) - t0;
        assert_eq!(c.loops, 200_000);
        ca.collect(&mut Vec::new());
        let t = ca.totals();
        assert_eq!(t.samples, 200_000);
        // The gaps add up to the loop's span exactly (checked below), which
        // lies within the time the call took; the noise is part of it.
        assert!(t.sum <= took, "{} of {took}", t.sum);
        assert!(c.stolen_ns <= t.sum);
        assert_eq!(c.above, noise.totals().samples);
        assert_eq!(c.stolen_ns, noise.totals().sum);
        assert_eq!(c.span_ns, t.sum);
        assert!(c.above as usize >= log.gaps.len());
    }

    /// A clock whose every read is a microsecond after the one before.
    #[derive(Clone, Copy)]
    struct Stepping;
    // 32 bits: the boards without 64-bit atomics run these tests too.
    static STEPPED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    impl Ticks for Stepping {
        fn now(&self) -> u64 {
            u64::from(STEPPED.fetch_add(1_000, std::sync::atomic::Ordering::Relaxed))
        }
        fn span_ns(&self, ticks: u64) -> u64 {
            ticks
        }
        fn mono_ns(&self, ticks: u64) -> u64 {
            ticks
        }
    }

    #[test]
    fn a_loop_found_on_another_cpu_ends_without_that_gap() {
        let here = sys::sched::current_cpu().expect("sched_getcpu");
        sys::sched::pin_current(here).expect("pinned where it runs");
        let run = |cpu: Option<usize>| {
            let (mut all, mut ca) = recorder::pair(1_000_000_000);
            let (mut noise, _cn) = recorder::pair(1_000_000_000);
            let mut log = GapLog::with_capacity(128);
            let plan = LoopPlan {
                threshold_ns: 500,
                duration_ns: None,
                loops: Some(100),
                cpu,
            };
            let mut out = LoopRecorders {
                all: &mut all,
                noise: &mut noise,
                log: &mut log,
                tap: None,
            };
            let c = busy(&Stepping, &plan, 0, &StopFlag::default(), &mut out);
            ca.collect(&mut Vec::new());
            (c, ca.totals().samples, log.gaps.len())
        };
        // On its own CPU every gap (each one long) is a sample and noise.
        let (c, samples, logged) = run(Some(here));
        assert_eq!((c.loops, samples, logged, c.moved), (100, 100, 100, None));
        // Pinned to a CPU it is not on: the first gap ends the loop unrecorded.
        let (c, samples, logged) = run(Some(here + 1));
        let m = c.moved.expect("moved");
        assert_eq!((m.from, m.to), (here + 1, here));
        assert_eq!((c.loops, samples, logged, c.above), (0, 0, 0, 0));
    }
}
