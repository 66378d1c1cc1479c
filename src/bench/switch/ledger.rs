//! The waker's books: every period of a run is either a sample or a lost
//! wake, and each lost wake has a cause (the wakee was busy, or the waker
//! itself woke late). Pure logic, tested without threads.

use crate::stats::recorder::Recorder;

/// What the waker decided at a period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakerStep {
    Ring,
    /// The previous wake is still pending: this period is lost.
    Skip,
}

/// The waker's accounting of wakes, samples and lost periods (pure logic).
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    start: u64,
    /// End of the run (u64::MAX without --duration).
    end: u64,
    period: u64,
    /// Number of the last wake rung.
    pub seq: u32,
    pub pending: bool,
    /// When the pending wake was rung.
    t0: u64,
    /// Periods lost since the last recorded sample.
    owed: u64,
    /// Periods lost because the wakee had not completed the previous wake.
    pub wakee_busy: u64,
    /// Periods lost because the waker itself woke a whole period late.
    pub waker_late: u64,
    pub rung: u64,
}

impl Ledger {
    pub fn new(start: u64, end: u64, period: u64) -> Self {
        Ledger {
            start,
            end,
            period,
            ..Default::default()
        }
    }

    /// At the timer wake for the period due at `due`, woken at `now`, given the
    /// wakee's run time for the pending wake if it completed it.
    #[inline(always)]
    pub fn on_period(
        &mut self,
        due: u64,
        now: u64,
        ack: Option<u64>,
        rec: &mut Recorder,
    ) -> WakerStep {
        // Periods overslept, counting only those that start before the end of the run.
        let before_end = self.end.saturating_sub(due).saturating_sub(1) / self.period;
        let late = (now.saturating_sub(due) / self.period).min(before_end);
        self.owed += late;
        self.waker_late += late;
        if self.pending {
            match ack {
                Some(t1) => self.settle(t1, rec),
                None => {
                    self.owed += 1;
                    self.wakee_busy += 1;
                    return WakerStep::Skip;
                }
            }
        }
        WakerStep::Ring
    }

    #[inline(always)]
    fn settle(&mut self, t1: u64, rec: &mut Recorder) {
        rec.record(
            t1.saturating_sub(self.t0),
            t1.saturating_sub(self.start),
            self.owed,
        );
        self.owed = 0;
        self.pending = false;
    }

    /// When the wake in flight was rung, while it is pending.
    #[inline(always)]
    pub fn rung_at(&self) -> Option<u64> {
        self.pending.then_some(self.t0)
    }

    #[inline(always)]
    pub fn rang(&mut self, seq: u32, t0: u64) {
        self.seq = seq;
        self.t0 = t0;
        self.pending = true;
        self.rung += 1;
    }

    /// The next period after the one due at `due`, handled at `now`: periods
    /// the waker overslept are skipped (and were counted as lost).
    #[inline(always)]
    pub fn next_due(&self, due: u64, now: u64) -> u64 {
        due + self.period * (1 + now.saturating_sub(due) / self.period)
    }

    /// At the end of the run, with the pending wake's completion if it came.
    /// Returns the lost periods no sample could carry (not in the summary's overruns).
    pub fn finish(&mut self, ack: Option<u64>, rec: &mut Recorder) -> u64 {
        if self.pending {
            if let Some(t1) = ack {
                self.settle(t1, rec);
            } else {
                self.wakee_busy += 1;
                self.owed += 1;
                self.pending = false;
            }
        }
        std::mem::take(&mut self.owed)
    }

    /// The pending wake, if any, is neither a sample nor a lost wake: it was
    /// (or would have been) measured on another CPU than the pair's, whose
    /// run ends there.
    pub fn forget(&mut self) {
        self.pending = false;
    }

    pub fn lost(&self) -> u64 {
        self.wakee_busy + self.waker_late
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::recorder;

    fn collect(col: &mut crate::stats::Collector) -> crate::stats::recorder::Totals {
        col.collect(&mut Vec::new());
        *col.totals()
    }

    #[test]
    fn every_period_is_a_sample_or_a_lost_wake() {
        let (mut rec, mut col) = recorder::pair(1_000_000_000);
        let p = 1000;
        let mut l = Ledger::new(0, u64::MAX, p);
        // Period 0: ring.
        assert_eq!(l.on_period(0, 10, None, &mut rec), WakerStep::Ring);
        l.rang(1, 20);
        // Period 1: the wakee ran at 25 -> sample 5; ring again.
        assert_eq!(l.on_period(1000, 1005, Some(25), &mut rec), WakerStep::Ring);
        l.rang(2, 1010);
        // Periods 2 and 3: the wakee has not completed: two lost periods, no ring.
        assert_eq!(l.on_period(2000, 2001, None, &mut rec), WakerStep::Skip);
        assert_eq!(l.on_period(3000, 3001, None, &mut rec), WakerStep::Skip);
        // Period 4: completed at 3500; the waker itself is 2.5 periods late:
        // periods 5 and 6 are skipped and lost too.
        assert_eq!(
            l.on_period(4000, 6500, Some(3500), &mut rec),
            WakerStep::Ring
        );
        assert_eq!(l.next_due(4000, 6500), 7000);
        l.rang(3, 6510);
        assert_eq!(
            l.on_period(7000, 7001, Some(6600), &mut rec),
            WakerStep::Ring
        );
        l.rang(4, 7002);
        assert_eq!(l.finish(Some(7010), &mut rec), 0);
        rec.finish();
        let t = collect(&mut col);
        assert_eq!(t.samples, 4);
        assert_eq!(t.overruns, 4);
        assert_eq!((l.wakee_busy, l.waker_late, l.lost()), (2, 2, 4));
        // 8 periods (0..=7): 4 samples + 4 lost.
        assert_eq!(t.samples + l.lost(), 8);
        assert_eq!((t.min, t.max), (5, 2490));
    }

    #[test]
    fn periods_overslept_past_the_end_are_not_lost() {
        let (mut rec, _col) = recorder::pair(1_000_000_000);
        // Run of 10 periods; at period 8 the waker wakes 5 periods late:
        // only period 9 was lost, 10..12 are after the end.
        let mut l = Ledger::new(0, 10_000, 1000);
        assert_eq!(l.on_period(8000, 13_100, None, &mut rec), WakerStep::Ring);
        assert_eq!(l.waker_late, 1);
        assert!(l.next_due(8000, 13_100) >= 10_000);
    }

    #[test]
    fn a_forgotten_wake_is_neither_a_sample_nor_lost() {
        let (mut rec, mut col) = recorder::pair(1_000_000_000);
        let mut l = Ledger::new(0, u64::MAX, 1000);
        l.on_period(0, 1, None, &mut rec);
        l.rang(1, 2);
        // The wakee is busy for a period, then completes the wake elsewhere.
        assert_eq!(l.on_period(1000, 1001, None, &mut rec), WakerStep::Skip);
        l.forget();
        assert_eq!(l.rung_at(), None);
        // The period lost before is still owed, and no sample carries it.
        assert_eq!(l.finish(Some(1500), &mut rec), 1);
        assert_eq!(l.lost(), 1);
        rec.finish();
        assert_eq!(collect(&mut col).samples, 0);
    }

    #[test]
    fn an_unfinished_last_wake_is_lost_but_unrecorded() {
        let (mut rec, mut col) = recorder::pair(1_000_000_000);
        let mut l = Ledger::new(0, u64::MAX, 1000);
        l.on_period(0, 1, None, &mut rec);
        l.rang(1, 2);
        assert_eq!(l.on_period(1000, 1001, None, &mut rec), WakerStep::Skip);
        assert_eq!(l.finish(None, &mut rec), 2);
        assert_eq!(l.lost(), 2);
        rec.finish();
        assert_eq!(collect(&mut col).samples, 0);
    }
}
