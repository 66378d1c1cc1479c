//! The one-thread path: one real-time thread sends each request on the
//! grid and takes its reply itself, as sockperf's ping-pong does; only
//! then (after the round trip's second timestamp) it reads the request's TX
//! timestamp from the error queue without waiting. Between the two
//! timestamps of a round trip there are exactly two syscalls, `send()` and
//! `recvmsg()`, and no other thread is woken by the TX timestamp.
//!
//! With `--spin`, the thread first polls the socket without sleeping for
//! up to that long after the send (`recvmsg` with `MSG_DONTWAIT`, the clock
//! between polls), as a busy-waiting client does: the reply then finds the
//! thread running instead of waking it, at the cost of the CPU it spins on
//! (nothing else of lower priority runs there meanwhile). Replies taken so
//! are counted (`spun_replies`); past the spin it blocks as without it.
//!
//! If the reply has not come when the next request is due, the thread sends
//! that one and takes the late reply (still measured) while waiting for the
//! next. The blocking `recvmsg` ends at the socket's receive timeout, which
//! the kernel keeps in scheduler ticks (1–10 ms): a reply that never comes
//! would hold the thread past the next slots. So after a wait that ended
//! without its reply, the thread is careful: it waits in `ppoll` until
//! exactly the next slot and only then reads (one syscall more), until a
//! reply comes in time again. A lost reply costs at most the slots of one
//! tick (skipped and counted in `send_overruns`); a peer that went away
//! costs one.

use super::receive::Receiver;
use super::send::{Grid, Sender};
use super::{Plan, MONOTONIC};
use crate::engine::StopFlag;
use crate::result::details::net::PingCounts;
use crate::sys::clock::now_ns;

/// The thread's life: send and receive as `plan` says, then wait for the
/// last replies and TX timestamps; returns the counts of both sides.
pub(super) fn run(mut s: Sender, mut r: Receiver, plan: &Plan, stop: &StopFlag) -> PingCounts {
    s.start(plan);
    r.start(plan);
    let mut grid = Grid::new(plan);
    let mut careful = false;
    let spin = plan.spin.unwrap_or(0);
    while let Some(seq) = grid.due(stop) {
        s.send(seq);
        let next = grid.next_at();
        let answered = if spin > 0 && r.spin_for(seq, next.min(now_ns(MONOTONIC) + spin)) {
            true
        } else if careful {
            wait_exactly(&mut s, &mut r, seq, next)
        } else {
            // The reply to this request, or the next slot, whichever comes first.
            let mut got = r.receive_one(true);
            while got != Some(seq) && now_ns(MONOTONIC) < next {
                got = r.receive_one(true);
            }
            got == Some(seq)
        };
        careful = !answered;
        if s.splits() {
            s.take_tx_stamps(true);
        }
        grid.advance(&mut s);
    }
    let sent = s.c.sent;
    let mut c = s.finish(plan);
    r.drain(sent, plan, stop);
    c.add(&r.finish());
    c
}

/// Take datagrams until the reply to `seq` or until `next` (CLOCK_MONOTONIC)
/// exactly; whether the reply came.
fn wait_exactly(s: &mut Sender, r: &mut Receiver, seq: u64, next: u64) -> bool {
    loop {
        let now = now_ns(MONOTONIC);
        if now >= next {
            return false;
        }
        let ready = r.wait(next - now);
        if ready.readable || ready.error {
            // A pending error (ICMP port unreachable) is read and counted here.
            if r.receive_one(false) == Some(seq) {
                return true;
            }
        }
        if ready.error && s.splits() {
            // A TX timestamp keeps the socket ready: take it now.
            s.take_tx_stamps(false);
        }
    }
}
