//! A lossy single-producer ring of per-sample records (intended wake time,
//! latency) from a measuring thread to a reader that matches them with
//! kernel trace events (`timer --split`, `--explain`).
//!
//! A reader that wants only the worst records (`--explain`) sets a floor:
//! the writer then passes the records below it by, counting them, with a
//! load and a compare instead of the record's stores, so that the reader's
//! cost follows the worst cases and not the sample rate.
//!
//! The writer never waits and never allocates: it stores the record's
//! 32-bit halves and publishes the new head. A reader that falls more than
//! the ring's capacity behind loses the oldest records and counts them. Built
//! from `AtomicU32`s only (32-bit PowerPC has no 64-bit atomics).

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

/// Words per record: intended time (lo, hi), latency (lo, hi).
const WORDS: usize = 4;

pub struct Tap {
    slots: Box<[AtomicU32]>,
    /// Words per record: [`WORDS`], and one more for the thread of each
    /// record in a tap that several threads' records go through.
    words: usize,
    capacity: u32,
    head: AtomicU32,
    /// The writing thread's id (0 until it starts).
    tid: AtomicI32,
    closed: AtomicBool,
    /// Records with a latency below this (ns, saturated) are not wanted.
    floor: AtomicU32,
    /// Records passed by under the floor (wrapping; the reader sums).
    passed: AtomicU32,
}

/// Room in a tap for 2 s of intervals, one every `every_ns` (unknown:
/// 2 s at 32 768/s): what may come between two of the reader's rounds.
pub fn room(every_ns: Option<u64>) -> usize {
    match every_ns {
        Some(p) => (2_000_000_000 / p.max(1)).clamp(1 << 10, 1 << 16) as usize,
        None => 1 << 16,
    }
}

/// The reader's position in a [`Tap`].
#[derive(Debug, Default)]
pub struct TapReader {
    tail: u32,
    /// Records overwritten before they were read.
    pub lost: u64,
    /// Records the writer passed by under the floor, up to the last drain.
    pub passed: u64,
    passed_seen: u32,
}

impl Tap {
    /// A ring of `capacity` records (rounded up to a power of two), all
    /// memory allocated here.
    pub fn new(capacity: usize) -> Tap {
        Self::with_words(capacity, WORDS)
    }

    /// A tap whose records each name their thread ([`Tap::push_of`]): one
    /// writer hands over the intervals of the threads it follows.
    pub fn of_threads(capacity: usize) -> Tap {
        Self::with_words(capacity, WORDS + 1)
    }

    fn with_words(capacity: usize, words: usize) -> Tap {
        let capacity = capacity.clamp(16, 1 << 24).next_power_of_two();
        Tap {
            slots: (0..capacity * words).map(|_| AtomicU32::new(0)).collect(),
            words,
            capacity: capacity as u32,
            head: AtomicU32::new(0),
            tid: AtomicI32::new(0),
            closed: AtomicBool::new(false),
            floor: AtomicU32::new(0),
            passed: AtomicU32::new(0),
        }
    }

    /// Its records name their thread ([`Tap::of_threads`]).
    pub fn names_threads(&self) -> bool {
        self.words > WORDS
    }

    /// Records it holds before the oldest is overwritten.
    pub fn capacity(&self) -> usize {
        self.capacity as usize
    }

    /// Say which thread writes (its kernel thread id).
    pub fn set_writer(&self, tid: i32) {
        self.tid.store(tid, Ordering::Release);
    }

    pub fn writer(&self) -> Option<i32> {
        Some(self.tid.load(Ordering::Acquire)).filter(|&t| t != 0)
    }

    /// Records with a latency below `ns` need not be published (`0`:
    /// every record). Written only when it changes, so that the writer's
    /// copy of it stays in its cache.
    pub fn set_floor(&self, ns: u64) {
        let ns = ns.min(u64::from(u32::MAX)) as u32;
        if self.floor.load(Ordering::Relaxed) != ns {
            self.floor.store(ns, Ordering::Relaxed);
        }
    }

    /// Publish one record, or count it passed by when it is under the
    /// floor. Only one thread may ever push to a tap.
    #[inline(always)]
    pub fn push(&self, intended: u64, latency: u64) {
        self.publish(intended, latency, None);
    }

    /// [`Tap::push`] of thread `tid`'s record, in a tap made by
    /// [`Tap::of_threads`].
    pub fn push_of(&self, intended: u64, latency: u64, tid: i32) {
        self.publish(intended, latency, Some(tid));
    }

    #[inline(always)]
    fn publish(&self, intended: u64, latency: u64, tid: Option<i32>) {
        if (latency.min(u64::from(u32::MAX)) as u32) < self.floor.load(Ordering::Relaxed) {
            let n = self.passed.load(Ordering::Relaxed);
            self.passed.store(n.wrapping_add(1), Ordering::Relaxed);
            return;
        }
        let h = self.head.load(Ordering::Relaxed);
        // The head published before is visible to a reader that sees any of
        // the stores below (paired with the fence in `drain`).
        std::sync::atomic::fence(Ordering::Release);
        let at = (h & (self.capacity - 1)) as usize * self.words;
        let s = &self.slots[at..at + self.words];
        s[0].store(intended as u32, Ordering::Relaxed);
        s[1].store((intended >> 32) as u32, Ordering::Relaxed);
        s[2].store(latency as u32, Ordering::Relaxed);
        s[3].store((latency >> 32) as u32, Ordering::Relaxed);
        if let (Some(tid), Some(w)) = (tid, s.get(WORDS)) {
            w.store(tid as u32, Ordering::Relaxed);
        }
        self.head.store(h.wrapping_add(1), Ordering::Release);
    }

    /// The writer has ended: no record follows.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Hand every record not read yet to `f` (oldest first); records the
    /// writer overwrote before they could be read are counted in `r.lost`.
    pub fn drain(&self, r: &mut TapReader, mut f: impl FnMut(u64, u64)) {
        self.drain_of(r, |i, l, _| f(i, l));
    }

    /// [`Tap::drain`] with each record's thread: the one it names in a tap
    /// made by [`Tap::of_threads`], else the writer (-1 while unknown: no
    /// thread's id, the idle task's 0 neither).
    pub fn drain_of(&self, r: &mut TapReader, mut f: impl FnMut(u64, u64, i32)) {
        let writer = self.writer().unwrap_or(-1);
        let passed = self.passed.load(Ordering::Relaxed);
        r.passed += u64::from(passed.wrapping_sub(r.passed_seen));
        r.passed_seen = passed;
        // The slot `capacity` records behind the head may be being written
        // (its head not published yet): only `capacity - 1` are safe to read.
        let safe = self.capacity - 1;
        let mut head = self.head.load(Ordering::Acquire);
        let behind = head.wrapping_sub(r.tail);
        if behind > safe {
            r.lost += u64::from(behind - safe);
            r.tail = head.wrapping_sub(safe);
        }
        while r.tail != head {
            let at = (r.tail & (self.capacity - 1)) as usize * self.words;
            let s = &self.slots[at..at + self.words];
            let w = |i: usize| u64::from(s[i].load(Ordering::Relaxed));
            let (intended, latency) = (w(0) | w(1) << 32, w(2) | w(3) << 32);
            let tid = s
                .get(WORDS)
                .map_or(writer, |t| t.load(Ordering::Relaxed) as i32);
            // The writer may have lapped this slot while it was copied.
            std::sync::atomic::fence(Ordering::Acquire);
            let now = self.head.load(Ordering::Relaxed);
            if now.wrapping_sub(r.tail) > safe {
                r.lost += u64::from(now.wrapping_sub(r.tail) - safe);
                r.tail = now.wrapping_sub(safe);
                head = now;
                continue;
            }
            f(intended, latency, tid);
            r.tail = r.tail.wrapping_add(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tap_holds_two_seconds_of_intervals_within_bounds() {
        assert_eq!(room(Some(1_000_000)), 2000);
        assert_eq!(room(Some(100_000)), 20_000);
        // At least 1024, at most 65 536, and 65 536 when the rate is unknown.
        assert_eq!(room(Some(27_000_000)), 1024);
        assert_eq!(room(Some(10_000)), 1 << 16);
        assert_eq!(room(Some(0)), 1 << 16);
        assert_eq!(room(None), 1 << 16);
    }

    #[test]
    fn records_under_the_floor_are_counted_not_published() {
        let t = Tap::new(16);
        let mut r = TapReader::default();
        t.push(1, 0);
        t.set_floor(100);
        for (i, lat) in [5u64, 100, 99, 150, 0, u64::MAX].into_iter().enumerate() {
            t.push(i as u64 + 2, lat);
        }
        let mut got = Vec::new();
        t.drain(&mut r, |a, b| got.push((a, b)));
        // Without a floor every record, a zero latency too; then the
        // floor and above (a latency past 32 bits included).
        assert_eq!(got, vec![(1, 0), (3, 100), (5, 150), (7, u64::MAX)]);
        assert_eq!((r.passed, r.lost), (3, 0));
        t.set_floor(0);
        t.push(8, 1);
        t.drain(&mut r, |a, b| got.push((a, b)));
        assert_eq!((got.len(), r.passed), (5, 3));
    }

    #[test]
    fn records_arrive_in_order_and_a_lapped_reader_counts_its_losses() {
        let t = Tap::new(16);
        let mut r = TapReader::default();
        for i in 0..10u64 {
            t.push(i << 33, i * 7);
        }
        let mut got = Vec::new();
        t.drain(&mut r, |a, b| got.push((a, b)));
        assert_eq!(got.len(), 10);
        assert_eq!(got[9], (9 << 33, 63));
        assert_eq!(r.lost, 0);
        // 40 more into a ring of 16 (15 readable): the 25 oldest are gone.
        for i in 10..50u64 {
            t.push(i, i);
        }
        let mut firsts = Vec::new();
        t.drain(&mut r, |a, _| firsts.push(a));
        assert_eq!(r.lost, 25);
        assert_eq!(firsts, (35..50).collect::<Vec<_>>());
        assert!(!t.is_closed() && t.writer().is_none());
        t.set_writer(42);
        t.close();
        assert!(t.is_closed() && t.writer() == Some(42));
    }

    #[test]
    fn a_tap_of_threads_names_each_records_thread() {
        let t = Tap::of_threads(16);
        let plain = Tap::new(16);
        plain.set_writer(9);
        let (mut r, mut p) = (TapReader::default(), TapReader::default());
        t.push_of(1, 10, 5);
        t.push_of(2, 20, 7);
        t.set_floor(15);
        t.push_of(3, 14, 8);
        plain.push(4, 40);
        let mut got = Vec::new();
        t.drain_of(&mut r, |a, b, c| got.push((a, b, c)));
        plain.drain_of(&mut p, |a, b, c| got.push((a, b, c)));
        // The floor holds for them too; a plain tap's records are its writer's.
        assert_eq!(got, vec![(1, 10, 5), (2, 20, 7), (4, 40, 9)]);
        assert_eq!(r.passed, 1);
    }

    #[test]
    fn a_concurrent_writer_never_hands_out_a_torn_record() {
        let t = std::sync::Arc::new(Tap::new(64));
        let w = std::sync::Arc::clone(&t);
        let writer = std::thread::spawn(move || {
            for i in 0..200_000u64 {
                // Both halves of each word pair carry i: a torn read mixes two.
                w.push(i << 32 | i, i << 32 | i);
            }
            w.close();
        });
        let mut r = TapReader::default();
        let mut seen = 0u64;
        let mut last = None;
        loop {
            let closed = t.is_closed();
            t.drain(&mut r, |a, b| {
                assert_eq!(a, b);
                assert_eq!(a >> 32, a & 0xffff_ffff, "torn: {a:#x}");
                assert!(last.is_none_or(|l| a > l), "out of order");
                last = Some(a);
                seen += 1;
            });
            if closed {
                break;
            }
        }
        writer.join().unwrap();
        assert_eq!(seen + r.lost, 200_000);
    }
}
