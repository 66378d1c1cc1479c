//! How long the explain reader pauses between its rounds: as long as the
//! kernel's buffers (overwrite mode) keep what an interval to come will
//! need, since a round costs the reader mostly its wake-up and its reads.

/// How far before an interval its CPU's trace is read: the events that
/// tell which task ran and which handlers were nested when it began.
pub const MARGIN_NS: u64 = 100_000_000;
/// The reader's pause between rounds, at least and at most. Its cost is
/// mostly per round and per read (a partly written page is copied event by
/// event, a full one swapped), so it reads as seldom as the kernel's
/// buffer allows: the pause is sized for [`ROUND_PAGES`] of the busiest
/// CPU at the rate of the round before.
const ROUND_MS: (u64, u64) = (20, 100);
/// The longest pause while nothing waits for the trace: the kernel's buffer
/// keeps the events, and a round then costs the reader mostly its wake-up.
/// Held to [`QUIET_PAGES`] of the busiest CPU at its last measured rate,
/// margin included, so that an interval that comes during it still finds
/// its events.
const QUIET_MS: u64 = 250;
/// Pages a quiet pause and the margin before an interval may fill, at
/// most: half of a CPU's 2 MB buffer.
const QUIET_PAGES: u64 = 256;
/// The longest pause when every interval is attributed: a burst of them
/// (a flood's gaps) must not outgrow what may wait for the trace.
const ROUND_MS_EVERY: u64 = 50;
/// Pages a CPU should write in one pause, at most: an eighth of its 2 MB
/// buffer. Likewise a thread's intervals: a quarter of what its tap holds
/// and of what may wait for the trace.
const ROUND_PAGES: u64 = 64;
pub const ROUND_SHARE: usize = 4;

/// The reader's clock of rounds and reads.
#[derive(Debug, Clone, Copy)]
pub struct RoundPace {
    /// When the last round was.
    round_at: u64,
    /// When the trace was last read, and the busiest CPU's pages per
    /// second then (`None`: not measured yet).
    read_at: u64,
    page_rate: Option<u64>,
}

impl RoundPace {
    /// Rounds from `start` on (CLOCK_MONOTONIC ns).
    pub fn new(start: u64) -> RoundPace {
        RoundPace {
            round_at: start,
            read_at: start,
            page_rate: None,
        }
    }

    /// The trace was read at `now`: (whether more pages were waiting than
    /// a round reads, the most pages one CPU had).
    pub fn read(&mut self, now: u64, (backlog, pages): (bool, u64)) {
        let ms = now.saturating_sub(self.read_at) / 1_000_000;
        if !backlog && pages > 0 && ms > 0 {
            // All the pages since the last read: the CPUs' rate.
            self.page_rate = Some(pages * 1000 / ms);
        }
        self.read_at = now;
    }

    /// A round at `now`; the ms since the one before.
    pub fn round(&mut self, now: u64) -> u64 {
        let ms = (now.saturating_sub(self.round_at) / 1_000_000).max(1);
        self.round_at = now;
        ms
    }

    /// The pause after the round at `now` (ms): long while it is `quiet`
    /// (nothing taken, nothing waiting), else sized for the `pages` the
    /// busiest CPU had and the intervals the busiest thread handed over
    /// for its room (`taken`); short when `every` interval is attributed.
    pub fn pause(
        &mut self,
        now: u64,
        quiet: bool,
        every: bool,
        pages: u64,
        taken: Option<(u64, u64)>,
    ) -> u64 {
        let ms = self.round(now);
        match (quiet && !every, self.page_rate) {
            (true, Some(rate)) => (QUIET_PAGES * 1000 / rate.max(1))
                .saturating_sub(MARGIN_NS / 1_000_000)
                .clamp(ROUND_MS.1, QUIET_MS),
            _ => (ROUND_PAGES * ms / pages.max(1))
                .min(taken.map_or(u64::MAX, |(n, room)| room * ms / n.max(1)))
                .clamp(ROUND_MS.0, ROUND_MS.1)
                .min(if every { ROUND_MS_EVERY } else { ROUND_MS.1 }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_quiet_reader_waits_as_long_as_the_buffer_keeps_the_margin() {
        let mut p = RoundPace::new(0);
        // Before any read the rate is unknown: the usual longest pause.
        assert_eq!(p.pause(10 * MS, true, false, 0, None), ROUND_MS.1);
        // 10 pages in 1 s: 256 pages last 25 s, the quiet pause is whole.
        p.read(1000 * MS, (false, 10));
        assert_eq!(p.pause(1000 * MS, true, false, 0, None), QUIET_MS);
        // 1280 pages a second: 200 ms for 256 pages, less the 100 ms margin,
        // is under the usual longest pause, which stays.
        p.read(2000 * MS, (false, 1280));
        assert_eq!(p.pause(2000 * MS, true, false, 0, None), ROUND_MS.1);
        // 800 a second: 320 ms less the margin.
        p.read(3000 * MS, (false, 800));
        assert_eq!(p.pause(3000 * MS, true, false, 0, None), 220);
        // A backlog says nothing of the rate.
        p.read(3100 * MS, (true, 256));
        assert_eq!(p.pause(3100 * MS, true, false, 0, None), 220);
    }

    #[test]
    fn work_waiting_or_every_interval_keeps_the_rounds_short() {
        let mut p = RoundPace::new(0);
        p.read(1000 * MS, (false, 10));
        p.round(1000 * MS);
        // Not quiet: 64 pages at the last round's 128 pages in 100 ms.
        assert_eq!(p.pause(1100 * MS, false, false, 128, None), 50);
        // Intervals: a quarter of the room at the rate they came.
        assert_eq!(p.pause(1200 * MS, false, false, 0, Some((100, 40))), 40);
        // Every interval attributed: never past its own longest pause.
        assert_eq!(p.pause(1300 * MS, true, true, 0, None), ROUND_MS_EVERY);
    }
}
