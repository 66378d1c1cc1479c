//! The books the two threads keep to match what comes back to what was
//! sent: the client's own send time of each request by sequence number
//! (written by the sender, read by the receiver: a round trip never depends
//! on what the server echoes), replies by sequence number (receiver), and
//! send times by the kernel's TX timestamp key (sender). All are fixed
//! rings: no allocation once measuring.

use crate::stats::seqlock::SeqCell;

/// What a reply turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// The first reply to a request; `reordered`: a later request was answered before.
    Fresh {
        reordered: bool,
    },
    Duplicate,
    /// Its slot already holds a newer request's reply: older than the window.
    Stale,
}

/// Replies seen, by sequence number, in a fixed ring (the receiver's side).
pub struct Replies {
    /// `seq + 1` of the reply that last used each slot (0: none).
    tags: Vec<u64>,
    mask: u64,
    highest: Option<u64>,
    answered: u64,
}

impl Replies {
    /// Track the last `window` requests (rounded up to a power of two).
    pub fn new(window: usize) -> Self {
        let n = window.next_power_of_two().max(2);
        Replies {
            tags: vec![0; n],
            mask: n as u64 - 1,
            highest: None,
            answered: 0,
        }
    }

    /// A reply to request `seq` (known to have been sent).
    #[inline]
    pub fn reply(&mut self, seq: u64) -> Match {
        let tag = &mut self.tags[(seq & self.mask) as usize];
        if *tag == seq + 1 {
            return Match::Duplicate;
        }
        if *tag > seq + 1 {
            return Match::Stale;
        }
        *tag = seq + 1;
        self.answered += 1;
        let reordered = self.highest.is_some_and(|h| seq < h);
        self.highest = Some(self.highest.map_or(seq, |h| h.max(seq)));
        Match::Fresh { reordered }
    }

    pub fn answered(&self) -> u64 {
        self.answered
    }

    /// Of `attempts` requests, those after the highest one answered.
    pub fn trailing_unanswered(&self, attempts: u64) -> u64 {
        attempts.saturating_sub(self.highest.map_or(0, |h| h + 1))
    }
}

/// The send time of each of the last requests by sequence number, in a
/// fixed ring of seqlock cells (no 64-bit atomics): one writer, the sender,
/// and one reader, the receiver, in the same thread or in another.
pub struct SendTimes {
    /// Each slot: `seq + 1` of the request that last used it (0: none),
    /// and its send time (CLOCK_REALTIME).
    slots: Vec<SeqCell<2>>,
    mask: u64,
}

/// What the client's record says of a reply's sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// Sent at this time (CLOCK_REALTIME ns).
    At(u64),
    /// Sent, but its slot holds a newer request: older than the window.
    Stale,
    /// Never sent (or its send failed).
    Never,
}

impl SendTimes {
    /// Remember the last `window` requests (rounded up to a power of two).
    pub fn new(window: usize) -> Self {
        let n = window.next_power_of_two().max(2);
        SendTimes {
            slots: (0..n).map(|_| SeqCell::default()).collect(),
            mask: n as u64 - 1,
        }
    }

    /// Request `seq` is sent at `send_ns`: recorded before the send, so that
    /// its reply never finds the slot empty.
    #[inline(always)]
    pub fn sending(&self, seq: u64, send_ns: u64) {
        self.slots[(seq & self.mask) as usize].write(&[seq + 1, send_ns]);
    }

    /// The send of request `seq` failed: no reply can be one to it.
    pub fn failed(&self, seq: u64) {
        self.slots[(seq & self.mask) as usize].write(&[0, 0]);
    }

    /// What the record says of request `seq`.
    #[inline]
    pub fn of(&self, seq: u64) -> Sent {
        let ([tag, at], _) = self.slots[(seq & self.mask) as usize].read();
        match seq.checked_add(1) {
            Some(t) if tag == t => Sent::At(at),
            Some(t) if tag > t => Sent::Stale,
            _ => Sent::Never,
        }
    }
}

/// Send times by the kernel's OPT_ID key (the count of datagrams sent before).
pub struct TxKeys {
    ring: Vec<(u32, u64)>,
    mask: u32,
    next: u32,
    /// kernel key − our index; re-learnt after a refused send, since kernels
    /// before 6.x consumed a key for some failed sends.
    offset: u32,
    resync: bool,
}

impl TxKeys {
    pub fn new(window: usize) -> Self {
        let n = window.next_power_of_two().clamp(2, 1 << 31);
        TxKeys {
            ring: vec![(u32::MAX, 0); n],
            mask: n as u32 - 1,
            next: 0,
            offset: 0,
            resync: false,
        }
    }

    /// The next datagram left at `send_ns`.
    #[inline]
    pub fn sent(&mut self, send_ns: u64) {
        self.ring[(self.next & self.mask) as usize] = (self.next, send_ns);
        self.next = self.next.wrapping_add(1);
    }

    /// A send failed: the kernel may or may not have used a key for it.
    pub fn failed(&mut self) {
        self.resync = true;
    }

    /// Whether kernel key `key` is that of the latest datagram sent.
    #[inline]
    pub fn is_latest(&self, key: u32) -> bool {
        self.next > 0 && key.wrapping_sub(self.offset) == self.next - 1
    }

    /// The send time of the datagram with kernel key `key`, once.
    #[inline]
    pub fn take(&mut self, key: u32) -> Option<u64> {
        if self.resync && self.next > 0 {
            // Drained right after a send: the stamp is the latest datagram's.
            self.offset = key.wrapping_sub(self.next - 1);
            self.resync = false;
        }
        let idx = key.wrapping_sub(self.offset);
        let slot = &mut self.ring[(idx & self.mask) as usize];
        if slot.0 == idx && slot.1 != 0 {
            let t = slot.1;
            slot.1 = 0;
            Some(t)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_classified() {
        let mut t = Replies::new(4);
        assert_eq!(t.reply(1), Match::Fresh { reordered: false });
        assert_eq!(t.reply(1), Match::Duplicate);
        assert_eq!(t.reply(0), Match::Fresh { reordered: true });
        assert_eq!(t.answered(), 2);
        assert_eq!(t.trailing_unanswered(3), 1);
        // seq 6 reuses the slot of 2: a late reply to 2 is stale.
        assert_eq!(t.reply(6), Match::Fresh { reordered: false });
        assert_eq!(t.reply(2), Match::Stale);
        assert_eq!(t.reply(6), Match::Duplicate);
        assert_eq!(t.trailing_unanswered(10), 3);
        assert_eq!(t.answered(), 3);
    }

    #[test]
    fn send_times_say_when_each_request_left_and_which_never_did() {
        let t = SendTimes::new(4);
        assert_eq!(t.of(0), Sent::Never);
        t.sending(0, 100);
        t.sending(1, 200);
        assert_eq!((t.of(0), t.of(1)), (Sent::At(100), Sent::At(200)));
        assert_eq!(t.of(2), Sent::Never, "not sent yet");
        assert_eq!(t.of(u64::MAX), Sent::Never);
        t.sending(2, 300);
        t.failed(2);
        assert_eq!(t.of(2), Sent::Never, "its send failed");
        // seq 4 reuses the slot of 0.
        t.sending(4, 500);
        assert_eq!((t.of(0), t.of(4)), (Sent::Stale, Sent::At(500)));
    }

    #[test]
    fn tx_keys_match_once_and_resync_after_a_failed_send() {
        let mut k = TxKeys::new(8);
        k.sent(10);
        k.sent(20);
        assert!(k.is_latest(1) && !k.is_latest(0));
        assert_eq!(k.take(1), Some(20));
        assert_eq!(k.take(1), None, "matched once");
        assert_eq!(k.take(0), Some(10));
        assert_eq!(k.take(5), None, "never sent");
        // An old kernel used key 2 for a refused send: the next datagram has key 3.
        k.failed();
        k.sent(30);
        assert_eq!(k.take(3), Some(30));
        k.sent(40);
        assert_eq!(k.take(4), Some(40));
    }
}
