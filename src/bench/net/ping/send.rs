//! The sending side: one request per period on a fixed CLOCK_MONOTONIC
//! grid ([`Grid`]), each stamped with CLOCK_REALTIME just before `send()`;
//! it reads the kernel's TX timestamps from the socket's error queue and
//! records `tx = kernel TX stamp − user time before send()`. The two-thread
//! path's sender reads them right after each send; the one-thread path
//! reads them after the reply is in (`pingpong`).

use super::super::{back_off, realtime_of, wire, MONOTONIC, REALTIME};
use super::ledger::{SendTimes, TxKeys};
use super::{Pace, PingConfig, Plan, Progress, TX_DRAIN_NS};
use crate::engine::StopFlag;
use crate::result::details::net::PingCounts;
use crate::stats::recorder::Recorder;
use crate::sys::clock::now_ns;
use crate::sys::net::{ErrQueue, TsSocket};
use std::io;
use std::sync::Arc;

/// The sending thread: paced sends, TX timestamps from the error queue.
pub(super) struct Sender {
    sock: TsSocket,
    /// `None` without the TX/RX split (`--no-split`).
    tx: Option<Recorder>,
    keys: TxKeys,
    /// The send time of each request, for the receiver's round trips.
    times: Arc<SendTimes>,
    request: Vec<u8>,
    progress: Arc<Progress>,
    hardware: bool,
    timeout_ns: u64,
    /// The run's start on CLOCK_REALTIME.
    start_real: u64,
    /// Send overruns not yet reported with a TX sample.
    pending_overruns: u64,
    attempts: u64,
    pub(super) c: PingCounts,
}

impl Sender {
    /// The sender of `cfg`'s requests on `sock`, recording into `tx`; it
    /// matches TX timestamps of the last `window` datagrams.
    pub(super) fn new(
        sock: TsSocket,
        tx: Option<Recorder>,
        cfg: &PingConfig,
        (window, times): (usize, Arc<SendTimes>),
        progress: Arc<Progress>,
    ) -> Self {
        Sender {
            sock,
            tx,
            keys: TxKeys::new(window),
            times,
            request: wire::request(cfg.size, cfg.session),
            progress,
            hardware: cfg.common.timestamps.is_hardware(),
            timeout_ns: cfg.timeout_ns,
            start_real: 0,
            pending_overruns: 0,
            attempts: 0,
            c: PingCounts::default(),
        }
    }

    /// The thread's life: send as `plan` says, wait a little for the last
    /// TX timestamps, close the series; returns its counts.
    pub(super) fn run(mut self, plan: &Plan, stop: &StopFlag) -> PingCounts {
        self.start(plan);
        let mut grid = Grid::new(plan);
        while let Some(seq) = grid.due(stop) {
            self.send(seq);
            if self.tx.is_some() {
                // Software TX timestamps are usually queued before send() returns.
                self.take_tx_stamps(false);
            }
            grid.advance(&mut self);
        }
        self.finish(plan)
    }

    /// Note the run's start.
    pub(super) fn start(&mut self, plan: &Plan) {
        self.start_real = realtime_of(plan.start);
    }

    /// Sending is over: tell the receiver, wait a little for the last TX
    /// timestamps, close the series; returns the counts.
    pub(super) fn finish(mut self, plan: &Plan) -> PingCounts {
        self.progress.write(&[self.attempts, self.c.sent, 1]);
        if self.tx.is_some() {
            // Late TX timestamps (hardware, queued devices): wait a little for them.
            let deadline = now_ns(MONOTONIC) + plan.timeout.min(TX_DRAIN_NS);
            while self.c.tx_stamps + self.c.tx_unmatched < self.c.sent
                && now_ns(MONOTONIC) < deadline
            {
                if self.take_tx_stamps(false) == 0 {
                    back_off();
                }
            }
        }
        self.c.attempts = self.attempts;
        if let Some(tx) = &mut self.tx {
            tx.finish();
        }
        self.c
    }

    /// Send request `seq` now.
    #[inline]
    pub(super) fn send(&mut self, seq: u64) {
        self.attempts = seq + 1;
        // Published before the send: its reply can never outrun it.
        self.progress.write(&[self.attempts, self.c.sent, 0]);
        let t_send = now_ns(REALTIME);
        self.times.sending(seq, t_send);
        wire::stamp_request(&mut self.request, seq, t_send);
        match self.sock.send(&self.request) {
            Ok(_) => {
                self.c.sent += 1;
                self.keys.sent(t_send);
            }
            Err(e) => {
                self.times.failed(seq);
                self.keys.failed();
                self.c.send_errors += 1;
                self.c.refused += u64::from(e.kind() == io::ErrorKind::ConnectionRefused);
            }
        }
    }

    /// Whether TX timestamps are taken (not with `--no-split`).
    pub(super) fn splits(&self) -> bool {
        self.tx.is_some()
    }

    /// Read the queued TX timestamps, all of them or (`through_latest`) up
    /// to that of the latest request: one read when it is the only one
    /// queued. Returns how many messages were read.
    #[inline]
    pub(super) fn take_tx_stamps(&mut self, through_latest: bool) -> u32 {
        let mut n = 0;
        loop {
            match self.sock.recv_errqueue() {
                Ok(ErrQueue::Empty) => return n,
                Ok(ErrQueue::Sent {
                    key,
                    software_ns,
                    hardware_ns,
                }) => {
                    n += 1;
                    let ts = if self.hardware {
                        hardware_ns
                    } else {
                        software_ns
                    };
                    if ts != 0 {
                        self.on_tx(key, ts);
                    }
                    if through_latest && self.keys.is_latest(key) {
                        return n;
                    }
                }
                Ok(ErrQueue::Other) => n += 1,
                Err(_) => {
                    self.c.recv_errors += 1;
                    return n;
                }
            }
        }
    }

    #[inline]
    fn on_tx(&mut self, key: u32, ts: u64) {
        match self.keys.take(key) {
            Some(send_ns) if ts >= send_ns && ts - send_ns <= self.timeout_ns => {
                let at = ts.saturating_sub(self.start_real);
                if let Some(tx) = &mut self.tx {
                    tx.record(ts - send_ns, at, std::mem::take(&mut self.pending_overruns));
                }
                self.c.tx_stamps += 1;
            }
            _ => self.c.tx_unmatched += 1,
        }
    }
}

/// The send slots: one per period on a fixed grid from the plan's start,
/// until the count or the duration is reached or a stop is requested.
pub(super) struct Grid {
    pace: Pace,
    next: u64,
    seq: u64,
    period: u64,
    loops: u64,
    end: u64,
}

impl Grid {
    pub(super) fn new(plan: &Plan) -> Grid {
        Grid {
            pace: plan.pace,
            next: plan.start,
            seq: 0,
            period: plan.period,
            loops: plan.loops.unwrap_or(u64::MAX),
            end: plan.duration.map_or(u64::MAX, |d| plan.start + d),
        }
    }

    /// Wait until the next slot (sleeping or spinning, as `--pace` says);
    /// its sequence number, or `None` when the run is over.
    #[inline]
    pub(super) fn due(&self, stop: &StopFlag) -> Option<u64> {
        if self.seq >= self.loops || self.next >= self.end || stop.is_set() {
            return None;
        }
        match self.pace {
            Pace::Sleep => crate::sys::clock::sleep_until(MONOTONIC, self.next),
            Pace::Spin => while now_ns(MONOTONIC) < self.next && !stop.is_set() {},
        }
        (!stop.is_set()).then_some(self.seq)
    }

    /// When the slot after the one just used is due (CLOCK_MONOTONIC).
    #[inline]
    pub(super) fn next_at(&self) -> u64 {
        self.next + self.period
    }

    /// The slot was used: move to the next one; more than a period behind,
    /// skip the missed slots (counted as overruns of `s`), stay on the grid.
    #[inline]
    pub(super) fn advance(&mut self, s: &mut Sender) {
        self.seq += 1;
        self.next += self.period;
        let now = now_ns(MONOTONIC);
        if now >= self.next + self.period {
            let missed = (now - self.next) / self.period;
            s.c.send_overruns += missed;
            s.pending_overruns += missed;
            self.next += missed * self.period;
        }
    }
}
