//! The receiving thread: blocks in `recvmsg`, takes CLOCK_REALTIME right
//! after it returns, matches the reply to its request and records
//! `rtt = user receive − user time before send()` (the send time comes back
//! in the reply), `rx = user receive − kernel RX stamp`, and the server's RX
//! latency and turnaround carried in the reply.

use super::super::wire::{self, Header};
use super::super::{back_off, realtime_of, MONOTONIC, REALTIME};
use super::ledger::{Match, Replies};
use super::{PingConfig, Plan, Progress, STOP_DRAIN_NS};
use crate::engine::StopFlag;
use crate::result::details::net::PingCounts;
use crate::stats::recorder::Recorder;
use crate::sys::clock::now_ns;
use crate::sys::net::{Received, TsSocket};
use std::io;
use std::sync::Arc;

/// The receiving thread: blocks in recvmsg, measures each reply as it lands.
pub(super) struct Receiver {
    sock: TsSocket,
    rtt: Recorder,
    rx: Recorder,
    server_rx: Recorder,
    turnaround: Recorder,
    replies: Replies,
    reply: Vec<u8>,
    progress: Arc<Progress>,
    session: u32,
    hardware: bool,
    timeout_ns: u64,
    start_real: u64,
    c: PingCounts,
}

impl Receiver {
    /// The receiver of `cfg`'s replies on `sock`, recording into `rtt`,
    /// `rx`, `server_rx` and `turnaround`; it tells apart replies to the
    /// last `window` requests.
    pub(super) fn new(
        sock: TsSocket,
        [rtt, rx, server_rx, turnaround]: [Recorder; 4],
        cfg: &PingConfig,
        window: usize,
        progress: Arc<Progress>,
    ) -> Self {
        Receiver {
            sock,
            rtt,
            rx,
            server_rx,
            turnaround,
            replies: Replies::new(window),
            reply: vec![0u8; cfg.size],
            progress,
            session: cfg.session,
            hardware: cfg.common.timestamps.is_hardware(),
            timeout_ns: cfg.timeout_ns,
            start_real: 0,
            c: PingCounts::default(),
        }
    }

    /// The thread's life: take replies until the sender is done and the
    /// last ones are in (or given up), close the series; returns its counts.
    pub(super) fn run(mut self, plan: &Plan, stop: &StopFlag) -> PingCounts {
        self.start_real = realtime_of(plan.start);
        receive_loop(&mut self, plan, stop);
        for r in [
            &mut self.rtt,
            &mut self.rx,
            &mut self.server_rx,
            &mut self.turnaround,
        ] {
            r.finish();
        }
        self.c
    }

    #[inline]
    fn on_reply(&mut self, r: &Received, t_recv: u64) {
        if r.truncated || r.len != self.reply.len() {
            self.c.bad_replies += 1;
            return;
        }
        let h = match Header::parse(&self.reply[..r.len]) {
            Ok(h) if h.kind == wire::KIND_REPLY && h.session == self.session => h,
            _ => {
                self.c.bad_replies += 1;
                return;
            }
        };
        let ([attempts, _, _], _) = self.progress.read();
        if h.seq >= attempts {
            self.c.bad_replies += 1;
            return;
        }
        match self.replies.reply(h.seq) {
            Match::Fresh { reordered } => self.c.reordered += u64::from(reordered),
            Match::Duplicate => {
                self.c.duplicated += 1;
                return;
            }
            Match::Stale => {
                self.c.stale += 1;
                return;
            }
        }
        let at = t_recv.saturating_sub(self.start_real);
        self.c.last_reply_at_ns = Some(at);
        // The send time echoed in the reply (session and sequence checked above).
        match t_recv.checked_sub(h.client_send_ns) {
            Some(rtt) => {
                self.rtt.record(rtt, at, 0);
                self.c.late += u64::from(rtt > self.timeout_ns);
            }
            None => self.c.clock_anomalies += 1,
        }
        let kernel = if self.hardware {
            r.hardware_ns
        } else {
            r.software_ns
        };
        if kernel == 0 {
            self.c.rx_missing += 1;
        } else {
            match t_recv.checked_sub(kernel) {
                Some(rx) if rx <= self.timeout_ns => self.rx.record(rx, at, 0),
                _ => self.c.clock_anomalies += 1,
            }
        }
        if h.flags & wire::FLAG_SERVER_RX != 0 {
            self.server_rx.record(h.server_rx_ns, at, 0);
        } else {
            self.c.server_rx_missing += 1;
        }
        self.turnaround.record(h.turnaround_ns, at, 0);
    }
}

/// The receiver: every reply until the sender is done and the last replies
/// are in, or `--timeout` after that (less after a stop request).
fn receive_loop(r: &mut Receiver, plan: &Plan, stop: &StopFlag) {
    let mut done_at: Option<u64> = None;
    loop {
        match r.sock.recv(&mut r.reply, true) {
            Ok(got) => {
                let t_recv = now_ns(REALTIME);
                r.on_reply(&got, t_recv);
            }
            Err(e) => match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => {}
                io::ErrorKind::ConnectionRefused => r.c.refused += 1,
                _ => {
                    r.c.recv_errors += 1;
                    back_off();
                }
            },
        }
        let ([_, sent, done], _) = r.progress.read();
        if done == 1 {
            let now = now_ns(MONOTONIC);
            let since = *done_at.get_or_insert(now);
            let wait = if stop.is_set() {
                plan.timeout.min(STOP_DRAIN_NS)
            } else {
                plan.timeout
            };
            if r.replies.answered() >= sent || now >= since + wait {
                break;
            }
        }
    }
    let ([attempts, _, _], _) = r.progress.read();
    r.c.answered = r.replies.answered();
    r.c.trailing_unanswered = r.replies.trailing_unanswered(attempts);
}
