//! The sending thread: one request per period on a fixed CLOCK_MONOTONIC
//! grid, each stamped with CLOCK_REALTIME just before `send()`; between
//! sends it reads the kernel's TX timestamps from the socket's error queue
//! and records `tx = kernel TX stamp − user time before send()`.

use super::super::{back_off, realtime_of, wire, MONOTONIC, REALTIME};
use super::ledger::TxKeys;
use super::{PingConfig, Plan, Progress, TX_DRAIN_NS};
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
    tx: Recorder,
    keys: TxKeys,
    request: Vec<u8>,
    progress: Arc<Progress>,
    hardware: bool,
    timeout_ns: u64,
    /// The run's start on CLOCK_REALTIME.
    start_real: u64,
    /// Send overruns not yet reported with a TX sample.
    pending_overruns: u64,
    attempts: u64,
    c: PingCounts,
}

impl Sender {
    /// The sender of `cfg`'s requests on `sock`, recording into `tx`; it
    /// matches TX timestamps of the last `window` datagrams.
    pub(super) fn new(
        sock: TsSocket,
        tx: Recorder,
        cfg: &PingConfig,
        window: usize,
        progress: Arc<Progress>,
    ) -> Self {
        Sender {
            sock,
            tx,
            keys: TxKeys::new(window),
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
        self.start_real = realtime_of(plan.start);
        send_loop(&mut self, plan, stop);
        self.tx.finish();
        self.c
    }

    /// Send request `seq` now.
    #[inline]
    fn send(&mut self, seq: u64) {
        self.attempts = seq + 1;
        // Published before the send: its reply can never outrun it.
        self.progress.write(&[self.attempts, self.c.sent, 0]);
        let t_send = now_ns(REALTIME);
        wire::stamp_request(&mut self.request, seq, t_send);
        match self.sock.send(&self.request) {
            Ok(_) => {
                self.c.sent += 1;
                self.keys.sent(t_send);
            }
            Err(e) => {
                self.keys.failed();
                self.c.send_errors += 1;
                self.c.refused += u64::from(e.kind() == io::ErrorKind::ConnectionRefused);
            }
        }
        // Software TX timestamps are usually queued before send() returns.
        self.take_tx_stamps();
    }

    /// Read every queued TX timestamp; returns how many messages were read.
    #[inline]
    fn take_tx_stamps(&mut self) -> u32 {
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
                self.tx
                    .record(ts - send_ns, at, std::mem::take(&mut self.pending_overruns));
                self.c.tx_stamps += 1;
            }
            _ => self.c.tx_unmatched += 1,
        }
    }
}

/// The sender: one request per period on a fixed grid from `plan.start`.
fn send_loop(s: &mut Sender, plan: &Plan, stop: &StopFlag) {
    let loops = plan.loops.unwrap_or(u64::MAX);
    let end = plan.duration.map_or(u64::MAX, |d| plan.start + d);
    let mut next = plan.start;
    let mut seq = 0u64;
    while seq < loops && next < end && !stop.is_set() {
        crate::sys::clock::sleep_until(MONOTONIC, next);
        if stop.is_set() {
            break;
        }
        s.send(seq);
        seq += 1;
        next += plan.period;
        let now = now_ns(MONOTONIC);
        if now >= next + plan.period {
            // More than a period behind: skip the missed slots, stay on the grid.
            let missed = (now - next) / plan.period;
            s.c.send_overruns += missed;
            s.pending_overruns += missed;
            next += missed * plan.period;
        }
    }
    s.progress.write(&[s.attempts, s.c.sent, 1]);
    // Late TX timestamps (hardware, queued devices): wait a little for them.
    let deadline = now_ns(MONOTONIC) + plan.timeout.min(TX_DRAIN_NS);
    while s.c.tx_stamps + s.c.tx_unmatched < s.c.sent && now_ns(MONOTONIC) < deadline {
        if s.take_tx_stamps() == 0 {
            back_off();
        }
    }
    s.c.attempts = s.attempts;
}
