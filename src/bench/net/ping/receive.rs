//! The receiving side: blocks in `recvmsg`, takes CLOCK_REALTIME right
//! after it returns, matches the reply to its request and records
//! `rtt = user receive − user time before send()` (the sender's own record
//! of that request's send time, [`SendTimes`]), `rx = user receive − kernel
//! RX stamp`, and the server's RX latency and turnaround carried in the
//! reply once checked to fit inside the round trip. A reply naming a request
//! never sent, or echoing another send time than the one recorded, is
//! counted by reason and not measured. The two-thread path runs it
//! as its own thread ([`Receiver::run`]); the one-thread path calls
//! [`Receiver::receive_one`] between sends.

use super::super::wire::{self, Header};
use super::super::{back_off, realtime_of, MONOTONIC, REALTIME};
use super::ledger::{Match, Replies, SendTimes, Sent};
use super::{PingConfig, Plan, Progress, STOP_DRAIN_NS};
use crate::engine::StopFlag;
use crate::result::details::net::PingCounts;
use crate::stats::recorder::Recorder;
use crate::stats::tap::Tap;
use crate::sys::clock::now_ns;
use crate::sys::net::{Ready, Received, TsSocket};
use std::io;
use std::sync::Arc;

/// The receiving thread: blocks in recvmsg, measures each reply as it lands.
pub(super) struct Receiver {
    sock: TsSocket,
    rtt: Recorder,
    /// `None` without the TX/RX split (`--no-split`).
    rx: Option<Recorder>,
    /// The server's series: `None` against an echo service or without the split.
    server: Option<[Recorder; 2]>,
    /// The peer is an echo service: the reply is the request unchanged.
    echo: bool,
    replies: Replies,
    /// The sender's record of when each request left.
    times: Arc<SendTimes>,
    reply: Vec<u8>,
    progress: Arc<Progress>,
    session: u32,
    hardware: bool,
    timeout_ns: u64,
    start_real: u64,
    /// `--explain`: each measured RX interval (its start on
    /// CLOCK_MONOTONIC, the trace's clock) goes to this tap.
    tap: Option<Arc<Tap>>,
    /// CLOCK_REALTIME − CLOCK_MONOTONIC at the start.
    real_ahead: u64,
    c: PingCounts,
}

impl Receiver {
    /// The receiver of `cfg`'s replies on `sock`, recording into `rtt`,
    /// `rx` and the server's `server_rx` and `turnaround`; it tells apart
    /// replies to the last `window` requests.
    pub(super) fn new(
        sock: TsSocket,
        (rtt, rx, server): (Recorder, Option<Recorder>, Option<[Recorder; 2]>),
        cfg: &PingConfig,
        (window, times): (usize, Arc<SendTimes>),
        progress: Arc<Progress>,
    ) -> Self {
        Receiver {
            sock,
            rtt,
            rx,
            server,
            echo: cfg.echo,
            replies: Replies::new(window),
            times,
            reply: vec![0u8; cfg.size],
            progress,
            session: cfg.session,
            hardware: cfg.common.timestamps.is_hardware(),
            timeout_ns: cfg.timeout_ns,
            start_real: 0,
            tap: None,
            real_ahead: 0,
            c: PingCounts::default(),
        }
    }

    /// Hand each RX interval (the reply's kernel RX stamp → this thread
    /// ran) to `tap` (`--explain`).
    pub(super) fn explain_into(&mut self, tap: Arc<Tap>) {
        self.tap = Some(tap);
    }

    /// The thread's life: take replies until the sender is done and the
    /// last ones are in (or given up), close the series; returns its counts.
    pub(super) fn run(mut self, plan: &Plan, stop: &StopFlag) -> PingCounts {
        self.start(plan);
        loop {
            self.receive_one(true);
            let ([_, sent, done], _) = self.progress.read();
            if done == 1 {
                self.drain(sent, plan, stop);
                break;
            }
        }
        self.finish()
    }

    /// Note the run's start.
    pub(super) fn start(&mut self, plan: &Plan) {
        self.start_real = realtime_of(plan.start);
        self.real_ahead = self.start_real.saturating_sub(plan.start);
        if let Some(t) = &self.tap {
            t.set_writer(crate::sys::sched::gettid());
        }
    }

    /// Close the series; returns the counts.
    pub(super) fn finish(mut self) -> PingCounts {
        let ([attempts, _, _], _) = self.progress.read();
        self.c.answered = self.replies.answered();
        self.c.trailing_unanswered = self.replies.trailing_unanswered(attempts);
        self.rtt.finish();
        if let Some(t) = &self.tap {
            t.close();
        }
        let server = self.server.iter_mut().flatten();
        for r in self.rx.iter_mut().chain(server) {
            r.finish();
        }
        self.c
    }

    /// Take one datagram and measure it, waiting (up to the receive timeout)
    /// if `wait`; the sequence number of a first reply to a request.
    #[inline]
    pub(super) fn receive_one(&mut self, wait: bool) -> Option<u64> {
        match self.sock.recv(&mut self.reply, wait) {
            Ok(got) => {
                let t_recv = now_ns(REALTIME);
                self.on_reply(&got, t_recv)
            }
            Err(e) => {
                match e.kind() {
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => {}
                    io::ErrorKind::ConnectionRefused => self.c.refused += 1,
                    _ => {
                        self.c.recv_errors += 1;
                        back_off();
                    }
                }
                None
            }
        }
    }

    /// Poll for the reply to `seq` without sleeping until `until`
    /// (CLOCK_MONOTONIC); whether it came (then counted as spun).
    #[inline]
    pub(super) fn spin_for(&mut self, seq: u64, until: u64) -> bool {
        loop {
            if self.receive_one(false) == Some(seq) {
                self.c.spun_replies += 1;
                return true;
            }
            if now_ns(MONOTONIC) >= until {
                return false;
            }
        }
    }

    /// Sending is over: take replies until all `sent` are answered, or
    /// `--timeout` has passed (less after a stop request).
    pub(super) fn drain(&mut self, sent: u64, plan: &Plan, stop: &StopFlag) {
        let since = now_ns(MONOTONIC);
        let wait = if stop.is_set() {
            plan.timeout.min(STOP_DRAIN_NS)
        } else {
            plan.timeout
        };
        while self.replies.answered() < sent && now_ns(MONOTONIC) < since + wait {
            self.receive_one(true);
        }
    }

    /// Wait up to `ns` (to the nanosecond) until a datagram or an error is
    /// ready to be read.
    #[inline]
    pub(super) fn wait(&mut self, ns: u64) -> Ready {
        self.sock.poll(ns).unwrap_or_else(|_| {
            self.c.recv_errors += 1;
            back_off();
            Ready::default()
        })
    }

    #[inline]
    fn on_reply(&mut self, r: &Received, t_recv: u64) -> Option<u64> {
        // An echo service returns the request itself.
        let kind = if self.echo {
            wire::KIND_REQUEST
        } else {
            wire::KIND_REPLY
        };
        if r.truncated || r.len != self.reply.len() {
            self.c.bad_replies += 1;
            return None;
        }
        let h = match Header::parse(&self.reply[..r.len]) {
            Ok(h) if h.kind == kind && h.session == self.session => h,
            _ => {
                self.c.bad_replies += 1;
                return None;
            }
        };
        let sent_at = self.sent_at(&h)?;
        match self.replies.reply(h.seq) {
            Match::Fresh { reordered } => self.c.reordered += u64::from(reordered),
            Match::Duplicate => {
                self.c.duplicated += 1;
                return None;
            }
            Match::Stale => {
                self.c.stale += 1;
                return None;
            }
        }
        let at = t_recv.saturating_sub(self.start_real);
        self.c.last_reply_at_ns = Some(at);
        let rtt = match t_recv.checked_sub(sent_at) {
            Some(rtt) => {
                self.rtt.record(rtt, at, 0);
                self.c.late += u64::from(rtt > self.timeout_ns);
                Some(rtt)
            }
            None => {
                self.c.clock_anomalies += 1;
                None
            }
        };
        if let Some(rx) = &mut self.rx {
            let kernel = if self.hardware {
                r.hardware_ns
            } else {
                r.software_ns
            };
            if kernel == 0 {
                self.c.rx_missing += 1;
            } else {
                match t_recv.checked_sub(kernel) {
                    Some(d) if d <= self.timeout_ns => {
                        rx.record(d, at, 0);
                        if let Some(t) = &self.tap {
                            t.push(kernel.saturating_sub(self.real_ahead), d);
                        }
                    }
                    _ => self.c.clock_anomalies += 1,
                }
            }
        }
        if let Some([server_rx, turnaround]) = &mut self.server {
            let has_rx = h.flags & wire::FLAG_SERVER_RX != 0;
            let rx_ns = if has_rx { h.server_rx_ns } else { 0 };
            // The server's times lie inside the round trip, or are not its.
            let span = rx_ns.checked_add(h.turnaround_ns);
            if rtt.is_some_and(|rtt| span.is_some_and(|s| s <= rtt)) {
                if has_rx {
                    server_rx.record(rx_ns, at, 0);
                } else {
                    self.c.server_rx_missing += 1;
                }
                turnaround.record(h.turnaround_ns, at, 0);
            } else if rtt.is_some() {
                self.c.server_span_too_long += 1;
            }
        }
        Some(h.seq)
    }

    /// The client's own send time of the request `h` answers, once checked
    /// that it was sent and that the reply echoes that time; `None` (the
    /// reply counted by reason) when not.
    #[inline]
    fn sent_at(&mut self, h: &Header) -> Option<u64> {
        let ([attempts, _, _], _) = self.progress.read();
        let sent = if h.seq < attempts {
            self.times.of(h.seq)
        } else {
            Sent::Never
        };
        match sent {
            Sent::At(t) if t == h.client_send_ns => Some(t),
            Sent::At(_) => {
                self.c.altered_replies += 1;
                None
            }
            Sent::Stale => {
                self.c.stale += 1;
                None
            }
            Sent::Never => {
                self.c.unsent_replies += 1;
                None
            }
        }
    }
}
