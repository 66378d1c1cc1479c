//! `irq target --reply-from thread|kthread|irq`: the reply is issued by the
//! kernel responder of kmod/ (`/dev/rtlat-responder`), not by rtlat.
//!
//! rtlat resolves the lines to their chip label and offset, starts the
//! module in the chosen mode and then only collects (woken by the module
//! after each reply, through poll): the module records, per
//! edge, the handler's entry, the start of the reply context and the moment
//! the output was set. Series: edge_to_reply (handler entry → reply issued),
//! edge_to_context (→ the threaded handler or kernel thread runs; 0 in irq)
//! and context_to_reply (the output set call).

use super::account::EdgeAccount;
use super::backend::{kernel_line, Edge, EdgeBackend};
use super::config::{IrqConfig, ReplyFrom};
use super::drive::{DriveSession, Timebase};
use crate::error::{Error, Result};
use crate::result::details::irq::ResponderCounts;
use crate::sys::responder;
use crate::sys::responder::{open_device, GpioLine, Record, Responder, ResponderMode};
use std::io;
use std::path::Path;

/// Series of a target whose reply the kernel issues.
pub(crate) const SERIES: &[&str] = &["edge_to_reply", "edge_to_context", "context_to_reply"];
const BATCH: usize = 64;
/// kthread's SCHED_FIFO priority unless --reply-priority says otherwise.
pub const DEFAULT_PRIORITY: u32 = 50;

fn mode_of(r: ReplyFrom) -> Option<ResponderMode> {
    match r {
        ReplyFrom::User => None,
        ReplyFrom::Thread => Some(ResponderMode::Thread),
        ReplyFrom::Kthread => Some(ResponderMode::Kthread),
        ReplyFrom::Irq => Some(ResponderMode::Irq),
    }
}

/// The kernel responder as the target's edge source: it answers by itself;
/// `wait_edge` hands over its records.
pub struct KernelReply {
    dev: Responder,
    clock: libc::clockid_t,
    level: bool,
    buf: Vec<Record>,
    queued: usize,
    next: usize,
    reply_ns: u64,
}

impl KernelReply {
    pub fn open(cfg: &IrqConfig) -> Result<KernelReply> {
        let what = format!("--reply-from {}", cfg.reply_from.name());
        let mode = mode_of(cfg.reply_from)
            .ok_or_else(|| Error::usage("--reply-from user is rtlat's own reply"))?;
        // The module first: without it nothing else matters.
        let dev = open_device(Path::new(responder::DEVICE), &what)?;
        let chip = cfg.chip.as_deref();
        let (in_label, in_off, level) =
            kernel_line(cfg.in_line.as_deref().unwrap_or(""), chip, "--in")?;
        let (out_label, out_off, _) =
            kernel_line(cfg.out_line.as_deref().unwrap_or(""), chip, "--out")?;
        let line = |label: String, offset| GpioLine::Label { label, offset };
        let prio = cfg.reply_priority.unwrap_or(DEFAULT_PRIORITY);
        if let Err(e) = dev.start(
            &line(in_label, in_off),
            &line(out_label, out_off),
            mode,
            prio,
        ) {
            let reason = dev.info().map(|i| i.reason).unwrap_or_default();
            // The kernel's line says "reply-from irq refused: …"; ours says so already.
            let reason = match reason.strip_prefix("reply-from irq refused: ") {
                _ if reason.is_empty() => e.to_string(),
                Some(r) => r.to_string(),
                None => reason,
            };
            return Err(
                Error::env(format!("the kernel responder refused {what}: {reason}")).because(e),
            );
        }
        Ok(KernelReply {
            dev,
            clock: cfg.clock_id(),
            level,
            buf: vec![Record::default(); BATCH],
            queued: 0,
            next: 0,
            reply_ns: 0,
        })
    }

    fn take(&mut self) -> Edge {
        let r = self.buf[self.next];
        self.next += 1;
        self.reply_ns = r.reply_ns;
        Edge {
            rising: r.level != 0,
            kernel_ns: Some(r.edge_ns),
            user_ns: r.start_ns,
            // The module counts per edge from 1; the account only needs continuity.
            seqno: Some(r.seq as u32),
        }
    }
}

impl Drop for KernelReply {
    fn drop(&mut self) {
        // Closing the device stops it too; stop first so the lines are free at once.
        let _ = self.dev.stop();
    }
}

impl EdgeBackend for KernelReply {
    fn drive(&mut self, _high: bool) -> io::Result<()> {
        Ok(()) // the module drives the reply line
    }

    fn wait_edge(&mut self, deadline_ns: u64) -> io::Result<Option<Edge>> {
        loop {
            if self.next < self.queued {
                return Ok(Some(self.take()));
            }
            self.queued = self.dev.read_records(&mut self.buf)?;
            self.next = 0;
            if self.queued > 0 {
                continue;
            }
            let now = crate::sys::clock::now_ns(self.clock);
            if now >= deadline_ns {
                return Ok(None);
            }
            // The module wakes us after each reply (poll), never before it.
            self.dev.wait_readable(deadline_ns - now)?;
        }
    }

    fn input_level(&mut self) -> io::Result<bool> {
        Ok(self.level)
    }

    fn kernel_timestamps(&self) -> bool {
        true
    }

    fn kernel_reply_ns(&self) -> Option<u64> {
        Some(self.reply_ns)
    }

    fn responder_counts(&self) -> Option<ResponderCounts> {
        let i = self.dev.info().ok()?;
        Some(ResponderCounts {
            responder_seen: i.seen,
            responder_answered: i.answered,
            responder_coalesced: i.coalesced,
            responder_dropped: i.dropped,
        })
    }
}

/// The collecting loop: every record is an edge the kernel answered.
pub(crate) fn measure<B: EdgeBackend + ?Sized, T: Timebase>(
    b: &mut B,
    t: &mut T,
    s: DriveSession<'_>,
) -> io::Result<()> {
    let (plan, recs, acct, stop) = (s.plan, s.recs, s.acct, s.stop);
    let mut n: u64 = 0;
    while let Some(e) = plan.next_edge(b, t, stop, n)? {
        record(
            &e,
            b.kernel_reply_ns(),
            plan.start,
            plan.measured,
            recs,
            acct,
            &mut n,
        );
    }
    Ok(())
}

/// Account for one answered edge and record its times when it is measured.
fn record(
    e: &Edge,
    reply: Option<u64>,
    start: u64,
    measured: super::config::Measured,
    recs: &mut super::drive::Recorders,
    acct: &mut EdgeAccount,
    n: &mut u64,
) {
    acct.on_edge(e);
    acct.r.answered += 1;
    let (Some(k), Some(reply)) = (e.kernel_ns, reply) else {
        return;
    };
    if k < start || !measured.includes(e.rising) {
        return;
    }
    *n += 1;
    if !(k <= e.user_ns && e.user_ns <= reply) {
        acct.r.timestamp_errors += 1;
        return;
    }
    let at = k - start;
    if let [total, wake, set, ..] = recs.0.as_mut_slice() {
        total.record(reply - k, at, 0);
        wake.record(e.user_ns - k, at, 0);
        set.record(reply - e.user_ns, at, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::Measured;
    use super::super::drive::{DrivePlan, Recorders};
    use super::super::testing::{totals, VClock};
    use super::*;
    use crate::engine::StopFlag;
    use crate::stats::recorder;
    use std::collections::VecDeque;

    /// The module's records in virtual time: (seq, level, edge, context, reply).
    struct Records {
        clock: VClock,
        queue: VecDeque<(u32, bool, u64, u64, u64)>,
        reply: u64,
    }

    impl EdgeBackend for Records {
        fn drive(&mut self, _high: bool) -> io::Result<()> {
            panic!("the module drives the reply, not rtlat");
        }
        fn wait_edge(&mut self, deadline_ns: u64) -> io::Result<Option<Edge>> {
            let Some((seq, level, k, ctx, reply)) = self.queue.pop_front() else {
                self.clock.sleep_until(deadline_ns);
                return Ok(None);
            };
            self.clock.sleep_until(reply);
            self.reply = reply;
            Ok(Some(Edge {
                rising: level,
                kernel_ns: Some(k),
                user_ns: ctx,
                seqno: Some(seq),
            }))
        }
        fn input_level(&mut self) -> io::Result<bool> {
            Ok(false)
        }
        fn kernel_reply_ns(&self) -> Option<u64> {
            Some(self.reply)
        }
    }

    fn run(
        records: &[(u32, bool, u64, u64, u64)],
        start: u64,
        count: u64,
        measured: Measured,
    ) -> (EdgeAccount, Vec<recorder::Totals>) {
        let clock = VClock::default();
        let mut b = Records {
            clock: clock.clone(),
            queue: records.iter().copied().collect(),
            reply: 0,
        };
        let (recs, cols): (Vec<_>, Vec<_>) = (0..SERIES.len())
            .map(|_| recorder::pair(1_000_000_000))
            .unzip();
        let mut recs = Recorders(recs);
        let mut acct = EdgeAccount::default();
        acct.set_level(false);
        let plan = DrivePlan {
            start,
            period: 0,
            end: 10_000_000,
            count,
            timeout: 0,
            measured,
        };
        let session = DriveSession {
            plan: &plan,
            recs: &mut recs,
            acct: &mut acct,
            stop: &StopFlag::default(),
            tap: None,
        };
        measure(&mut b, &mut clock.clone(), session).unwrap();
        recs.finish();
        (acct, cols.into_iter().map(|c| totals(c).0).collect())
    }

    #[test]
    fn every_record_is_an_answered_edge_split_into_its_stages() {
        let recs: Vec<_> = (0..6u32)
            .map(|i| {
                let k = 1_000 + u64::from(i) * 10_000;
                (i + 1, i % 2 == 0, k, k + 300, k + 350)
            })
            .collect();
        let (acct, t) = run(&recs, 0, 6, Measured::Both);
        assert_eq!(
            (acct.r.edges_seen, acct.r.answered, acct.r.lost_events),
            (6, 6, 0)
        );
        assert_eq!((acct.r.repeated_edges, acct.r.timestamp_errors), (0, 0));
        // edge_to_reply, edge_to_context, context_to_reply
        assert_eq!((t[0].samples, t[0].min, t[0].max), (6, 350, 350));
        assert_eq!((t[1].samples, t[1].min, t[1].max), (6, 300, 300));
        assert_eq!((t[2].samples, t[2].min, t[2].max), (6, 50, 50));
    }

    #[test]
    fn gaps_early_edges_and_disordered_stamps_are_accounted_not_measured() {
        let recs = [
            // Before the start: answered, not measured.
            (1, true, 500, 600, 700),
            (2, false, 2_000, 2_100, 2_200),
            // seq 3 coalesced by the module: a gap of one.
            (4, true, 3_000, 3_100, 3_150),
            // The reply before the context began: a timestamp error.
            (5, false, 4_000, 4_200, 4_100),
            (6, true, 5_000, 5_010, 5_020),
        ];
        let (acct, t) = run(&recs, 1_000, 4, Measured::Both);
        assert_eq!((acct.r.edges_seen, acct.r.answered), (5, 5));
        assert_eq!(acct.r.lost_events, 1);
        assert_eq!(acct.r.timestamp_errors, 1);
        assert_eq!((acct.r.first_seqno, acct.r.last_seqno), (Some(1), Some(6)));
        // Measured: seq 2, 4 and 6 (5 counted, its stamps refused).
        assert_eq!(t[0].samples, 3);
        assert_eq!((t[0].min, t[0].max), (20, 200));
    }

    #[test]
    fn rising_only_still_answers_falling_edges() {
        let recs: Vec<_> = (0..4u32)
            .map(|i| {
                let k = 1_000 + u64::from(i) * 1_000;
                (i + 1, i % 2 == 0, k, k + 10, k + 30)
            })
            .collect();
        let (acct, t) = run(&recs, 0, 2, Measured::Rising);
        // Rising, falling (answered, not measured), rising: the count is reached.
        assert_eq!((acct.r.answered, acct.r.repeated_edges), (3, 0));
        assert_eq!((t[0].samples, t[0].min, t[0].max), (2, 30, 30));
    }
}
