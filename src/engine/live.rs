//! Live output: a refreshed table on a terminal, stable greppable lines otherwise.

use super::channel::Channel;
use crate::stats::IntervalStats;
use crate::units::us;
use std::io::{IsTerminal, Write};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A per-thread table redrawn in place every interval (stdout is a terminal).
    Table,
    /// One line per thread per interval (stdout is a file or pipe).
    Lines,
    /// Nothing until the summary.
    Quiet,
}

pub struct Live {
    pub mode: Mode,
    interval_ns: u64,
    drawn: usize,
    /// Worst latency so far per channel (for Lines mode).
    worst: Vec<u64>,
}

impl Live {
    pub fn new(quiet: bool, interval_ns: u64) -> Self {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stdout().is_terminal() {
            Mode::Table
        } else {
            Mode::Lines
        };
        Live {
            mode,
            interval_ns,
            drawn: 0,
            worst: Vec::new(),
        }
    }

    /// Lines mode: one line per finished interval, e.g.
    /// `interval t=3.000s name=cpu0 samples=1000 min_us=2.101 avg_us=3.020 max_us=9.877 overruns=0 worst_us=12.003`
    pub fn intervals(&mut self, idx: usize, name: &str, ivs: &[IntervalStats]) {
        if self.mode != Mode::Lines || ivs.is_empty() {
            return;
        }
        if self.worst.len() <= idx {
            self.worst.resize(idx + 1, 0);
        }
        let mut out = std::io::stdout().lock();
        for iv in ivs {
            self.worst[idx] = self.worst[idx].max(iv.max);
            let end_ns = (iv.index + 1) * self.interval_ns;
            let _ = writeln!(
                out,
                "interval t={}.{:03}s name={name} samples={} min_us={} avg_us={} max_us={} overruns={} worst_us={}",
                end_ns / 1_000_000_000,
                end_ns / 1_000_000 % 1000,
                iv.samples,
                us(iv.min),
                us(iv.avg()),
                us(iv.max),
                iv.overruns,
                us(self.worst[idx])
            );
        }
        let _ = out.flush();
    }

    /// Table mode: redraw the per-thread table with elapsed/remaining time.
    pub fn refresh(&mut self, channels: &[Channel], elapsed_ns: u64, remaining_ns: Option<u64>) {
        if self.mode != Mode::Table {
            return;
        }
        let mut s = String::new();
        if self.drawn > 0 {
            s.push_str(&format!("\x1b[{}A", self.drawn));
        }
        let remaining = remaining_ns
            .map(|r| format!("  remaining {}", clock_time(r.saturating_add(999_999_999))))
            .unwrap_or_else(|| "  (Ctrl-C to stop)".into());
        s.push_str(&format!(
            "\x1b[2Kelapsed {}{remaining}\n",
            clock_time(elapsed_ns)
        ));
        s.push_str(&format!(
            "\x1b[2K{:<8} {:>12} {:>10} {:>10} {:>10} {:>10} {:>9}\n",
            "thread", "samples", "min us", "avg us", "max us", "p99 us", "overruns"
        ));
        for c in channels {
            let t = c.collector.totals();
            let avg = t.sum.checked_div(t.samples).unwrap_or(0);
            let p99 = c.collector.histogram().percentile(99.0).unwrap_or(0);
            s.push_str(&format!(
                "\x1b[2K{:<8} {:>12} {:>10} {:>10} {:>10} {:>10} {:>9}\n",
                c.name,
                t.samples,
                us(t.min),
                us(avg),
                us(t.max),
                us(p99),
                t.overruns
            ));
        }
        self.drawn = channels.len() + 2;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(s.as_bytes());
        let _ = out.flush();
    }
}

/// `hh:mm:ss`.
pub fn clock_time(ns: u64) -> String {
    let s = ns / 1_000_000_000;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}
