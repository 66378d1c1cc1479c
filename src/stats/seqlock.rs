//! A single-writer sequence lock over `u64` words built from `AtomicU32`s only,
//! so it works on 32-bit targets without 64-bit atomics (32-bit PowerPC).
//!
//! The writer never waits: it bumps the sequence to odd, stores the words,
//! and bumps it to even. Readers retry until they see the same even sequence
//! before and after their copy.

use std::sync::atomic::{fence, AtomicU32, Ordering};

pub struct SeqCell<const N: usize> {
    seq: AtomicU32,
    lo: [AtomicU32; N],
    hi: [AtomicU32; N],
}

impl<const N: usize> Default for SeqCell<N> {
    fn default() -> Self {
        SeqCell {
            seq: AtomicU32::new(0),
            lo: std::array::from_fn(|_| AtomicU32::new(0)),
            hi: std::array::from_fn(|_| AtomicU32::new(0)),
        }
    }
}

impl<const N: usize> SeqCell<N> {
    /// Publish `words`. Only one thread may ever write a given cell.
    #[inline(always)]
    pub fn write(&self, words: &[u64; N]) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        for (i, &w) in words.iter().enumerate() {
            self.lo[i].store(w as u32, Ordering::Relaxed);
            self.hi[i].store((w >> 32) as u32, Ordering::Relaxed);
        }
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// A consistent copy of the last published words and the sequence it was read at.
    pub fn read(&self) -> ([u64; N], u32) {
        loop {
            let s1 = self.seq.load(Ordering::Acquire);
            if s1 & 1 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let mut out = [0u64; N];
            for (i, o) in out.iter_mut().enumerate() {
                let lo = self.lo[i].load(Ordering::Relaxed) as u64;
                let hi = self.hi[i].load(Ordering::Relaxed) as u64;
                *o = (hi << 32) | lo;
            }
            fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) == s1 {
                return (out, s1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn readers_never_see_a_torn_write() {
        let cell = Arc::new(SeqCell::<3>::default());
        let w = Arc::clone(&cell);
        let writer = std::thread::spawn(move || {
            for i in 0..200_000u64 {
                let v = i.wrapping_mul(0x1_0000_0001);
                w.write(&[v, v ^ u64::MAX, v]);
            }
        });
        let mut reads = 0;
        while !writer.is_finished() || reads < 1000 {
            let (x, seq) = cell.read();
            if seq == 0 {
                continue; // nothing written yet
            }
            assert_eq!(x[0], x[2], "torn read");
            assert_eq!(x[1], x[0] ^ u64::MAX, "torn read");
            reads += 1;
        }
        writer.join().unwrap();
        let (x, _) = cell.read();
        assert_eq!(x[0], 199_999u64.wrapping_mul(0x1_0000_0001));
    }
}
