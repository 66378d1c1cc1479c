//! The sink of `timer --context`'s trace reader: a recorder per CPU and
//! level, the window of the run, the loops and the break; with `--explain`
//! each sample recorded is handed to its series' tap too.

use super::pairing::{Sink, Skipped};
use crate::bench::timer::lines::Ctx;
use crate::result::BreakEvent;
use crate::stats::recorder::Recorder;
use crate::stats::tap::Tap;
use std::sync::Arc;

/// Where a context's series is among a CPU's.
pub fn level_index(ctx: Ctx) -> usize {
    match ctx {
        Ctx::Irq => 0,
        Ctx::Thread => 1,
        Ctx::User => 2,
    }
}

/// The reader's sink: a recorder per CPU and level; a sample counts when its
/// timer expiry falls inside the run's window, and so does each period
/// without one.
pub struct LevelSink {
    pub recs: Vec<Recorder>,
    /// Levels per CPU (2, or 3 with user) and the one counted for --loops.
    pub levels: usize,
    pub top: Ctx,
    pub cpus: Vec<usize>,
    pub start: u64,
    pub end: u64,
    pub period: u64,
    pub threshold: u64,
    /// Thread samples recorded per CPU (for --loops).
    pub counts: Vec<u64>,
    pub loops: u64,
    pub brk: Option<BreakEvent>,
    /// The break's sample: (CPU index, context, latency, expiry), and the
    /// last IRQ sample of each CPU: (expiry, latency).
    pub brk_sample: Option<(usize, Ctx, u64, u64)>,
    pub last_irq: Vec<Option<(u64, u64)>>,
    /// With `--explain`, the tap of each recorder (as `recs`), else empty.
    pub taps: Vec<Option<Arc<Tap>>>,
}

impl LevelSink {
    /// How many of the skipped expiries fall inside the window.
    pub fn inside(&self, s: Skipped) -> u64 {
        if s.count == 0 {
            return 0;
        }
        let p = self.period;
        let last = s.first + (s.count - 1) * p;
        if last < self.start || s.first >= self.end {
            return 0;
        }
        let lo = if s.first >= self.start {
            0
        } else {
            (self.start - s.first).div_ceil(p)
        };
        let hi = if last < self.end {
            s.count - 1
        } else {
            (self.end - 1 - s.first) / p
        };
        hi + 1 - lo
    }
}

impl Sink for LevelSink {
    fn record(&mut self, i: usize, ctx: Ctx, latency_ns: u64, expiry_ns: u64, skipped: Skipped) {
        // Nothing after the loops, nor after the break (the rest of the
        // batch being read is later than the sample that ended the run).
        if self.counts[i] >= self.loops || self.brk.is_some() {
            return;
        }
        let k = self.levels * i + level_index(ctx);
        let overruns = self.inside(skipped);
        if expiry_ns < self.start || expiry_ns >= self.end {
            if overruns > 0 {
                self.recs[k].add_overruns(overruns);
            }
            return;
        }
        let at = expiry_ns - self.start;
        self.recs[k].record(latency_ns, at, overruns);
        if let Some(Some(t)) = self.taps.get(k) {
            t.push(expiry_ns, latency_ns);
        }
        if ctx == Ctx::Irq {
            self.last_irq[i] = Some((expiry_ns, latency_ns));
        }
        if ctx == self.top {
            self.counts[i] += 1;
        }
        if latency_ns > self.threshold && self.brk.is_none() {
            self.brk_sample = Some((i, ctx, latency_ns, expiry_ns));
            self.brk = Some(BreakEvent {
                thread: k,
                cpu: Some(self.cpus[i]),
                sample: self.counts[i],
                latency_ns,
                at_ns: at,
                trace_marked: false,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = 1_000_000;

    #[test]
    fn only_periods_inside_the_window_count() {
        let r = LevelSink {
            recs: Vec::new(),
            levels: 2,
            top: Ctx::Thread,
            cpus: Vec::new(),
            start: 10 * P,
            end: 20 * P,
            period: P,
            threshold: u64::MAX,
            counts: Vec::new(),
            loops: u64::MAX,
            brk: None,
            brk_sample: None,
            last_irq: Vec::new(),
            taps: Vec::new(),
        };
        let s = |first: u64, count: u64| Skipped { first, count };
        assert_eq!(r.inside(s(12 * P, 3)), 3);
        assert_eq!(r.inside(s(8 * P, 5)), 3); // 10, 11, 12
        assert_eq!(r.inside(s(18 * P, 5)), 2); // 18, 19
        assert_eq!(r.inside(s(5 * P, 30)), 10);
        assert_eq!(r.inside(s(2 * P, 3)), 0);
        assert_eq!(r.inside(s(20 * P, 3)), 0);
        assert_eq!(r.inside(s(12 * P, 0)), 0);
    }
}
