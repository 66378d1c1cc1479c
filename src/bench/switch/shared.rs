//! What the two sides of a pair share: a few words in shared memory (a forked
//! wakee sees them too) with the protocol over them — the wake in flight, its
//! acknowledgement and time, the wakee's readiness or setup failure, the stop,
//! the arming handshake — and the wake lines between them.

use crate::engine::rt::PRIVILEGE_FIX;
use crate::error::{Error, Result};
use crate::sys::{
    ipc::{Doorbell, Mechanism},
    shm::SharedWords,
};
use std::sync::atomic::{AtomicU32, Ordering};

/// Written by the waker: the number of the wake in flight.
const SEQ: usize = 0;
/// Written by the wakee: the number of the last wake it completed ...
const DONE: usize = 1;
/// ... and when it ran (CLOCK_MONOTONIC, two halves: no 64-bit atomics on 32-bit targets).
const T1_LO: usize = 2;
const T1_HI: usize = 3;
/// Written by the waker at the end of the run.
const STOP: usize = 4;
/// Written by the wakee: 1 when it waits for wakes, 2 when it failed.
const READY: usize = 5;
const FAIL_STAGE: usize = 6;
const FAIL_ERRNO: usize = 7;
/// Written by the waker: the number of its latest request to arm (futex word).
const ARM: usize = 8;
/// Written by the wakee: the arm request it answered, just before it waits on the line.
const ARMED: usize = 9;
/// Written by the wakee when it is ready: its thread id (`--explain`).
const TID: usize = 10;
/// Written by the wakee with each acknowledgement: the CPU it ran on
/// ([`NO_CPU`]: not known).
const CPU: usize = 11;
const WORDS: usize = 12;
const NO_CPU: u32 = u32::MAX;

/// Where a wakee's setup failed.
pub const STAGE_PIN: u32 = 1;
pub const STAGE_SCHED: u32 = 2;
pub const STAGE_MLOCK: u32 = 3;
/// Not setup: the wakee's wait on its line failed.
pub const STAGE_WAIT: u32 = 4;

/// The words a pair shares.
pub struct PairShared {
    words: SharedWords,
}

impl PairShared {
    fn new() -> std::io::Result<Self> {
        Ok(PairShared {
            words: SharedWords::new(WORDS)?,
        })
    }
    #[inline(always)]
    fn w(&self, i: usize) -> &AtomicU32 {
        self.words.get(i)
    }
    /// The waker: wake `seq` is in flight.
    #[inline(always)]
    pub fn post(&self, seq: u32) {
        self.w(SEQ).store(seq, Ordering::Release);
    }
    /// The wake in flight.
    #[inline(always)]
    pub fn seq(&self) -> u32 {
        self.w(SEQ).load(Ordering::Acquire)
    }
    /// The wakee: it ran at `t1` on CPU `cpu` for wake `seq`.
    #[inline(always)]
    pub fn ack(&self, seq: u32, t1: u64, cpu: Option<usize>) {
        let cpu = cpu.and_then(|c| u32::try_from(c).ok()).unwrap_or(NO_CPU);
        self.w(CPU).store(cpu, Ordering::Relaxed);
        self.w(T1_LO).store(t1 as u32, Ordering::Relaxed);
        self.w(T1_HI).store((t1 >> 32) as u32, Ordering::Relaxed);
        self.w(DONE).store(seq, Ordering::Release);
    }
    /// The wakee's run time for wake `seq`, once it completed it.
    #[inline(always)]
    pub fn acked(&self, seq: u32) -> Option<u64> {
        if self.w(DONE).load(Ordering::Acquire) != seq {
            return None;
        }
        let lo = self.w(T1_LO).load(Ordering::Relaxed) as u64;
        let hi = self.w(T1_HI).load(Ordering::Relaxed) as u64;
        Some((hi << 32) | lo)
    }
    /// The CPU the wakee ran on for the wake it completed last, once
    /// [`PairShared::acked`] saw it (`None`: not known).
    #[inline(always)]
    pub fn acked_on(&self) -> Option<usize> {
        let cpu = self.w(CPU).load(Ordering::Relaxed);
        (cpu != NO_CPU).then_some(cpu as usize)
    }
    pub fn stop(&self) {
        self.w(STOP).store(1, Ordering::Release);
    }
    #[inline(always)]
    pub fn stopped(&self) -> bool {
        self.w(STOP).load(Ordering::Acquire) != 0
    }
    /// The wakee (thread `tid`) waits for wakes.
    pub fn set_ready(&self, tid: i32) {
        self.w(TID).store(tid as u32, Ordering::Relaxed);
        self.w(READY).store(1, Ordering::Release);
    }
    /// The wakee's thread id, once it is ready.
    pub fn wakee_tid(&self) -> Option<i32> {
        (self.ready() == 1).then(|| self.w(TID).load(Ordering::Relaxed) as i32)
    }
    /// The wakee failed at `stage`.
    pub fn fail(&self, stage: u32, e: &std::io::Error) {
        self.w(FAIL_STAGE).store(stage, Ordering::Relaxed);
        self.w(FAIL_ERRNO)
            .store(e.raw_os_error().unwrap_or(0) as u32, Ordering::Relaxed);
        self.w(READY).store(2, Ordering::Release);
    }
    /// 0 while the wakee sets up, 1 when it waits for wakes, 2 when it failed.
    pub fn ready(&self) -> u32 {
        self.w(READY).load(Ordering::Acquire)
    }
    /// Where and why the wakee failed, if it did.
    pub fn failure(&self) -> Option<(u32, std::io::Error)> {
        let stage = self.w(FAIL_STAGE).load(Ordering::Acquire);
        (stage != 0).then(|| {
            let errno = self.w(FAIL_ERRNO).load(Ordering::Relaxed) as i32;
            (stage, std::io::Error::from_raw_os_error(errno))
        })
    }
}

/// Both sides of a pair.
pub struct PairLink {
    pub shared: PairShared,
    /// Waker to wakee: the arm requests and the measured wakes.
    pub bell: Doorbell,
    /// Wakee to waker, the same mechanism: the answers to arm requests (warm mode only).
    pub answer: Option<Doorbell>,
    /// Test knob: the wakee sleeps this long before acknowledging a wake.
    pub delay: u64,
}

impl PairLink {
    /// The shared words and wake lines of one pair; with `processes`, all of
    /// it survives a fork; with `warm`, a line back for the arming handshake.
    pub fn new(m: Mechanism, processes: bool, warm: bool, delay: u64) -> Result<PairLink> {
        let line = || Doorbell::new(m, processes).map_err(|e| line_error(m, e));
        Ok(PairLink {
            shared: PairShared::new()
                .map_err(|e| Error::env(format!("cannot map shared memory: {e}")).because(e))?,
            bell: line()?,
            answer: if warm { Some(line()?) } else { None },
            delay,
        })
    }

    /// The arming handshake, waker's side: ring the line with an arm request
    /// and wait (at most until `deadline`) for the answer, which the wakee
    /// sends right before it waits on the line for the measured wake. The
    /// round trip goes through the measured mechanism, so its code and data
    /// are warm when the measured wake follows (rt-tests' sync step).
    #[inline(always)]
    pub fn arm(&self, answer: &Doorbell, token: &mut u32, n: u32, deadline: u64) {
        self.shared.w(ARM).store(n, Ordering::Release);
        self.bell.ring();
        while self.shared.w(ARMED).load(Ordering::Acquire) != n {
            if !matches!(answer.wait_until(token, deadline), Ok(true)) {
                return; // no answer in time: the wake goes ahead anyway
            }
        }
    }

    /// The wakee's side: wait for an arm request (or the stop), answer it.
    /// Returns false at the stop or on an error.
    #[inline(always)]
    pub fn await_arm(&self, answer: &Doorbell, token: &mut u32, seen: &mut u32) -> bool {
        loop {
            if let Err(e) = self.bell.wait(token) {
                self.shared.fail(STAGE_WAIT, &e);
                return false;
            }
            if self.shared.stopped() {
                return false;
            }
            let v = self.shared.w(ARM).load(Ordering::Acquire);
            if v != *seen {
                *seen = v;
                break;
            }
            // A wake with no new request (a stray signal): wait again.
        }
        self.shared.w(ARMED).store(*seen, Ordering::Release);
        answer.ring();
        true
    }
}

/// Rings the wakee a last time with the stop flag set, even if the waker panics.
pub struct StopOnDrop<'a>(pub &'a PairLink);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.shared.stop();
        self.0.bell.ring();
    }
}

/// The error of a wakee process that failed its setup at `stage`.
pub fn setup_error(stage: u32, e: &std::io::Error, cpu: usize, policy: &str) -> Error {
    match stage {
        STAGE_PIN => Error::env(format!(
            "cannot pin a wakee process to CPU {cpu}: {e}; check --cpus"
        )),
        STAGE_SCHED if e.raw_os_error() == Some(libc::EPERM) => Error::env(format!(
            "not permitted to use SCHED_{policy} in a wakee process ({e}); {PRIVILEGE_FIX}; or use --policy other (unprivileged, not real-time)"
        )),
        STAGE_SCHED => Error::env(format!(
            "cannot set SCHED_{policy} in a wakee process: {e}"
        )),
        STAGE_MLOCK => Error::env(format!(
            "cannot lock memory in a wakee process (mlockall: {e}); {PRIVILEGE_FIX}, or raise 'ulimit -l', or pass --no-mlock"
        )),
        _ => Error::env(format!("a wakee process failed: {e}")),
    }
}

fn line_error(m: Mechanism, e: std::io::Error) -> Error {
    let fix = match m {
        Mechanism::Mqueue => "; check /proc/sys/fs/mqueue/queues_max and 'ulimit -q'",
        Mechanism::SysvSem => "; check /proc/sys/kernel/sem",
        _ => "",
    };
    Error::env(format!("cannot create a {} wake line: {e}{fix}", m.name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_is_acknowledged_with_its_time_in_two_halves() {
        let s = PairShared::new().expect("mmap");
        s.post(7);
        assert_eq!(s.seq(), 7);
        assert_eq!(s.acked(7), None);
        let t1 = (5u64 << 32) | 9;
        s.ack(7, t1, Some(3));
        assert_eq!(s.acked(7), Some(t1));
        assert_eq!(s.acked_on(), Some(3));
        s.ack(7, t1, None);
        assert_eq!(s.acked_on(), None);
        assert_eq!(s.acked(8), None);
        assert!(!s.stopped());
        s.stop();
        assert!(s.stopped());
    }

    #[test]
    fn a_failure_carries_its_stage_and_errno() {
        let s = PairShared::new().expect("mmap");
        assert_eq!(s.ready(), 0);
        assert!(s.failure().is_none());
        s.fail(STAGE_SCHED, &std::io::Error::from_raw_os_error(libc::EPERM));
        assert_eq!(s.ready(), 2);
        let (stage, e) = s.failure().expect("failed");
        assert_eq!((stage, e.raw_os_error()), (STAGE_SCHED, Some(libc::EPERM)));
        let msg = setup_error(stage, &e, 0, "FIFO").to_string();
        assert!(msg.contains("not permitted to use SCHED_FIFO"), "{msg}");
    }
}
