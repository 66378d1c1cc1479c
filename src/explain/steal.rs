//! The hypervisor's steal time of each CPU (`/proc/stat`, 8th column, in
//! USER_HZ ticks: 10 ms on every Linux architecture), sampled by the reader
//! into a short history so that an interval's steal can be looked up after
//! the fact.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Seek};

/// ns per USER_HZ tick.
pub const TICK_NS: u64 = 10_000_000;
/// Samples kept (about a minute).
const KEEP: usize = 512;
/// The shortest time between two samples: the counter moves in 10 ms
/// ticks, and generating /proc/stat (a line per IRQ) costs the reader more
/// than anything else it does per round.
const EVERY_NS: u64 = 100_000_000;

/// The steal counters of the CPUs watched, over time.
#[derive(Debug)]
pub struct Steal {
    cpus: Vec<usize>,
    /// (monotonic time, steal ns of each CPU of `cpus`).
    history: VecDeque<(u64, Vec<u64>)>,
    /// Whether /proc/stat had the column at all.
    pub seen: bool,
    /// /proc/stat kept open, read again from its start each time.
    file: Option<File>,
    text: String,
}

/// Each CPU's steal in ns from a /proc/stat text.
pub fn parse(text: &str) -> Vec<(usize, u64)> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let cpu = w.next()?.strip_prefix("cpu")?.parse().ok()?;
            let steal: u64 = w.nth(7)?.parse().ok()?;
            Some((cpu, steal * TICK_NS))
        })
        .collect()
}

impl Steal {
    pub fn new(cpus: &[usize]) -> Steal {
        Steal {
            cpus: cpus.to_vec(),
            history: VecDeque::with_capacity(KEEP),
            seen: false,
            file: File::open("/proc/stat").ok(),
            text: String::with_capacity(4096),
        }
    }

    /// Read /proc/stat now (`now`: monotonic ns), unless it was read less
    /// than [`EVERY_NS`] ago.
    pub fn sample(&mut self, now: u64) {
        if self
            .history
            .back()
            .is_some_and(|l| now.saturating_sub(l.0) < EVERY_NS)
        {
            return;
        }
        let Some(f) = self.file.as_mut() else {
            return;
        };
        self.text.clear();
        if f.rewind().is_err() || f.read_to_string(&mut self.text).is_err() {
            return;
        }
        let all = parse(&self.text);
        self.record(now, &all);
    }

    pub fn record(&mut self, now: u64, all: &[(usize, u64)]) {
        let v: Vec<u64> = self
            .cpus
            .iter()
            .map(|c| all.iter().find(|x| x.0 == *c).map_or(0, |x| x.1))
            .collect();
        self.seen |= !all.is_empty();
        if self.history.len() == KEEP {
            self.history.pop_front();
        }
        self.history.push_back((now, v));
    }

    /// The steal CPU `cpu` saw between the last sample at or before `start`
    /// and the first at or after `end`, plus one tick for the counter's
    /// rounding (0 when the samples do not bracket the interval).
    pub fn between(&self, cpu: usize, start: u64, end: u64) -> u64 {
        let Some(i) = self.cpus.iter().position(|&c| c == cpu) else {
            return 0;
        };
        let before = self.history.iter().rev().find(|s| s.0 <= start);
        let after = self.history.iter().find(|s| s.0 >= end);
        match (before, after) {
            (Some(b), Some(a)) if a.1[i] > b.1[i] => a.1[i] - b.1[i] + TICK_NS,
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_the_eighth_column_in_ticks_and_brackets_an_interval() {
        let text = "cpu  1 2 3 4 5 6 7 859 0 0\ncpu0 578720 153 101479 543807 1208 0 846 449 0 0\ncpu1 6 2 1 4 2 0 2 409 0 0\nintr 5\n";
        assert_eq!(parse(text), vec![(0, 4_490_000_000), (1, 4_090_000_000)]);
        let mut s = Steal::new(&[1]);
        s.record(100, &[(1, 0)]);
        s.record(200, &[(1, 20_000_000)]);
        s.record(300, &[(1, 20_000_000)]);
        assert_eq!(s.between(1, 150, 190), 30_000_000);
        assert_eq!(s.between(1, 210, 290), 0);
        assert_eq!(s.between(1, 250, 350), 0, "not bracketed yet");
        assert_eq!(s.between(0, 150, 190), 0);
    }
}
