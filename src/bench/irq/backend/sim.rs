//! `--backend sim`: an in-process simulated wire, for tests and demonstrations.
//!
//! The wire and the interrupt are simulated: an edge's "kernel timestamp" is
//! the write time plus `delay` plus a uniform random `0..=jitter`. The wake-up
//! is real: the measuring thread sleeps on the run clock until that time, so
//! user − irq is this machine's own timer wake-up latency under the run's
//! real-time settings. As the kernel does, the event buffer keeps the newest
//! events when it overflows, and sequence numbers count every edge, so a
//! dropped event (`--sim-lose-every`) shows as a gap.

use super::{Edge, EdgeBackend};
use crate::bench::irq::config::SimConfig;
use crate::sys;
use std::io;

/// Events held between the wire and the reader (as the kernel's buffer).
const QUEUE: usize = 16;

/// Where the simulated edges come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimSource {
    /// The watched line follows the driven one (loopback; host with a simulated target).
    Echo,
    /// Edges arrive every `period_ns` on their own (a simulated host for a target).
    Source { period_ns: u64 },
}

pub struct SimBackend {
    clock: libc::clockid_t,
    mode: SimSource,
    cfg: SimConfig,
    rng: u64,
    out_level: bool,
    in_level: bool,
    queue: [Edge; QUEUE],
    head: usize,
    len: usize,
    seqno: u32,
    edges: u64,
    /// Source mode: the next edge's (write time, kernel time).
    upcoming: Option<(u64, u64)>,
}

impl SimBackend {
    pub fn new(clock: libc::clockid_t, mode: SimSource, cfg: SimConfig) -> Self {
        SimBackend {
            clock,
            mode,
            cfg,
            rng: (cfg.seed ^ 0x9E37_79B9_7F4A_7C15) | 1,
            out_level: false,
            in_level: false,
            queue: [Edge::default(); QUEUE],
            head: 0,
            len: 0,
            seqno: 0,
            edges: 0,
            upcoming: None,
        }
    }

    fn jitter(&mut self) -> u64 {
        let x = crate::stats::xorshift(&mut self.rng);
        if self.cfg.jitter_ns == 0 {
            0
        } else {
            x % (self.cfg.jitter_ns + 1)
        }
    }

    /// The wire changes level at `kernel_ns`: one kernel event, unless this one is dropped.
    fn edge(&mut self, kernel_ns: u64) {
        self.in_level = !self.in_level;
        self.seqno = self.seqno.wrapping_add(1);
        self.edges += 1;
        if self.cfg.lose_every.is_some_and(|n| self.edges % n == 0) {
            return;
        }
        if self.len == QUEUE {
            // Full: the oldest event goes, as in the kernel's kfifo.
            self.head = (self.head + 1) % QUEUE;
            self.len -= 1;
        }
        self.queue[(self.head + self.len) % QUEUE] = Edge {
            rising: self.in_level,
            kernel_ns: Some(kernel_ns),
            user_ns: 0,
            seqno: Some(self.seqno),
        };
        self.len += 1;
    }
}

impl EdgeBackend for SimBackend {
    fn begin(&mut self, start_ns: u64) -> io::Result<()> {
        if let SimSource::Source { period_ns } = self.mode {
            let write = start_ns + period_ns;
            let k = write + self.cfg.delay_ns + self.jitter();
            self.upcoming = Some((write, k));
        }
        Ok(())
    }

    #[inline]
    fn drive(&mut self, high: bool) -> io::Result<()> {
        if high != self.out_level {
            self.out_level = high;
            if self.mode == SimSource::Echo {
                let now = sys::clock::now_ns(self.clock);
                let k = now + self.cfg.delay_ns + self.jitter();
                self.edge(k);
            }
        }
        Ok(())
    }

    #[inline]
    fn wait_edge(&mut self, deadline_ns: u64) -> io::Result<Option<Edge>> {
        if let (SimSource::Source { period_ns }, Some((write, k))) = (self.mode, self.upcoming) {
            if self.len == 0 && k <= deadline_ns {
                self.edge(k);
                let w = write + period_ns;
                self.upcoming = Some((w, w + self.cfg.delay_ns + self.jitter()));
            }
        }
        if self.len > 0 {
            let e = self.queue[self.head];
            let k = e.kernel_ns.unwrap_or(0);
            if k <= deadline_ns {
                sys::clock::sleep_until(self.clock, k);
                let user_ns = sys::clock::now_ns(self.clock);
                self.head = (self.head + 1) % QUEUE;
                self.len -= 1;
                return Ok(Some(Edge { user_ns, ..e }));
            }
        }
        sys::clock::sleep_until(self.clock, deadline_ns);
        Ok(None)
    }

    fn input_level(&mut self) -> io::Result<bool> {
        Ok(self.in_level)
    }

    fn kernel_timestamps(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(lose_every: Option<u64>) -> SimConfig {
        SimConfig {
            delay_ns: 20_000,
            jitter_ns: 5_000,
            seed: 3,
            lose_every,
        }
    }

    #[test]
    fn echo_delivers_each_edge_after_the_delay_in_order() {
        let c = libc::CLOCK_MONOTONIC;
        let mut s = SimBackend::new(c, SimSource::Echo, cfg(None));
        let mut last = 0;
        for i in 0..20u32 {
            let t0 = sys::clock::now_ns(c);
            s.drive(i % 2 == 0).unwrap();
            let e = s.wait_edge(t0 + 1_000_000_000).unwrap().expect("edge");
            let k = e.kernel_ns.unwrap();
            assert!(
                k >= t0 + 20_000 && k <= t0 + 25_000 + 1_000_000,
                "k-t0 {}",
                k - t0
            );
            assert!(e.user_ns >= k, "user before irq");
            assert_eq!(e.rising, i % 2 == 0);
            assert_eq!(e.seqno, Some(i + 1));
            assert!(k > last);
            last = k;
        }
        // Driving the same level twice is no edge.
        s.drive(false).unwrap();
        let now = sys::clock::now_ns(c);
        assert_eq!(s.wait_edge(now + 100_000).unwrap(), None);
    }

    #[test]
    fn lost_events_leave_a_gap_and_a_full_buffer_keeps_the_newest() {
        let c = libc::CLOCK_MONOTONIC;
        let mut s = SimBackend::new(c, SimSource::Echo, cfg(Some(3)));
        for i in 0..6 {
            s.drive(i % 2 == 0).unwrap();
        }
        let far = sys::clock::now_ns(c) + 1_000_000_000;
        let seqnos: Vec<Option<u32>> = (0..4)
            .map(|_| s.wait_edge(far).unwrap().expect("edge").seqno)
            .collect();
        assert_eq!(seqnos, [Some(1), Some(2), Some(4), Some(5)]);

        let mut s = SimBackend::new(c, SimSource::Echo, cfg(None));
        for i in 0..(QUEUE + 4) {
            s.drive(i % 2 == 0).unwrap();
        }
        let first = s.wait_edge(far).unwrap().expect("edge");
        assert_eq!(first.seqno, Some(5));
    }

    #[test]
    fn source_mode_makes_periodic_alternating_edges() {
        let c = libc::CLOCK_MONOTONIC;
        let mut s = SimBackend::new(c, SimSource::Source { period_ns: 200_000 }, cfg(None));
        let start = sys::clock::now_ns(c);
        s.begin(start).unwrap();
        let mut prev = start;
        for i in 0..5u64 {
            let e = s.wait_edge(start + 10_000_000).unwrap().expect("edge");
            let k = e.kernel_ns.unwrap();
            let write = start + (i + 1) * 200_000;
            assert!(k >= write + 20_000 && k <= write + 25_000, "edge {i}");
            assert!(k > prev);
            assert_eq!(e.rising, i % 2 == 0);
            prev = k;
        }
    }
}
