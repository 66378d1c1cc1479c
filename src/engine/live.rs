//! Live output: a refreshed table on a terminal, stable greppable lines otherwise.

use super::channel::Channel;
use crate::stats::IntervalStats;
use crate::units::us;
use std::io::IsTerminal;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveStyle {
    /// A per-thread table redrawn in place every interval (stdout is a terminal).
    Table,
    /// One line per thread per interval (stdout is a file or pipe).
    Lines,
    /// Nothing until the summary.
    Quiet,
}

pub struct Live {
    pub mode: LiveStyle,
    interval_ns: u64,
    drawn: usize,
    /// Worst latency so far per channel (for Lines mode).
    worst: Vec<u64>,
    /// Lines mode: finished intervals not printed yet, as (channel, interval).
    pending: Vec<(usize, IntervalStats)>,
    /// Lines mode: per channel, the index of the latest interval it finished.
    latest: Vec<Option<u64>>,
}

/// Width assumed when the terminal does not say.
const DEFAULT_WIDTH: usize = 80;

impl Live {
    pub fn new(quiet: bool, interval_ns: u64) -> Self {
        let mode = if quiet {
            LiveStyle::Quiet
        } else if std::io::stdout().is_terminal() {
            LiveStyle::Table
        } else {
            LiveStyle::Lines
        };
        Live {
            mode,
            interval_ns,
            drawn: 0,
            worst: Vec::new(),
            pending: Vec::new(),
            latest: Vec::new(),
        }
    }

    /// Lines mode: take the intervals channel `idx` finished since the last call.
    /// They are printed by [`Live::print_intervals`], in time order.
    pub fn intervals(&mut self, idx: usize, ivs: &[IntervalStats]) {
        if self.mode != LiveStyle::Lines || ivs.is_empty() {
            return;
        }
        if self.latest.len() <= idx {
            self.latest.resize(idx + 1, None);
            self.worst.resize(idx + 1, 0);
        }
        for iv in ivs {
            self.latest[idx] = Some(iv.index);
            self.pending.push((idx, *iv));
        }
    }

    /// Lines mode: one line per finished interval, in time order, e.g.
    /// `interval t=3.000s name=cpu0 samples=1000 min_us=2.101 avg_us=3.020 max_us=9.877 overruns=0 worst_us=12.003`
    ///
    /// Each thread finishes an interval at its first sample after the
    /// interval's end, so at a given moment one thread may have finished
    /// interval k while another has not: an interval is printed once every
    /// channel has finished it (or, `elapsed_ns` given, once a whole interval
    /// has passed since its end: a stalled channel does not hold the others back), and
    /// every pending one when `all` (the end of the run).
    pub fn print_intervals(&mut self, names: &[&str], elapsed_ns: Option<u64>, all: bool) {
        if self.pending.is_empty() {
            return;
        }
        let upto = if all {
            u64::MAX
        } else {
            // The latest interval every channel has finished (None: one has finished none).
            let watermark = (0..names.len())
                .map(|i| self.latest.get(i).copied().flatten())
                .min()
                .flatten();
            let by_time = elapsed_ns.and_then(|e| (e / self.interval_ns.max(1)).checked_sub(2));
            match (watermark, by_time) {
                (Some(a), Some(b)) => a.max(b),
                (Some(a), None) | (None, Some(a)) => a,
                (None, None) => return,
            }
        };
        self.pending.sort_by_key(|&(c, iv)| (iv.index, c));
        let cut = self.pending.partition_point(|(_, iv)| iv.index <= upto);
        let mut text = String::new();
        for (idx, iv) in self.pending.drain(..cut) {
            self.worst[idx] = self.worst[idx].max(iv.max);
            let end_ns = (iv.index + 1) * self.interval_ns;
            text.push_str(&format!(
                "interval t={}.{:03}s name={} samples={} min_us={} avg_us={} max_us={} overruns={} worst_us={}\n",
                end_ns / 1_000_000_000,
                end_ns / 1_000_000 % 1000,
                names.get(idx).copied().unwrap_or("?"),
                iv.samples,
                us(iv.min),
                us(iv.avg()),
                us(iv.max),
                iv.overruns,
                us(self.worst[idx])
            ));
        }
        crate::outfile::print(&text);
    }

    /// Table mode: redraw the per-thread table with elapsed/remaining time,
    /// fitted to the terminal's width.
    pub fn refresh(&mut self, channels: &[Channel], elapsed_ns: u64, remaining_ns: Option<u64>) {
        if self.mode != LiveStyle::Table {
            return;
        }
        let rows: Vec<Row> = channels
            .iter()
            .filter(|c| c.in_use())
            .map(|c| {
                let t = c.collector.totals();
                Row {
                    name: &c.name,
                    figures: [
                        t.samples.to_string(),
                        us(t.min),
                        us(t.sum.checked_div(t.samples).unwrap_or(0)),
                        us(t.max),
                        us(c.collector.histogram().percentile(99.0).unwrap_or(0)),
                        t.overruns.to_string(),
                    ],
                }
            })
            .collect();
        let width = rustix::termios::tcgetwinsize(std::io::stdout())
            .ok()
            .map(|w| usize::from(w.ws_col))
            .filter(|&w| w > 0)
            .unwrap_or(DEFAULT_WIDTH);
        let mut s = String::new();
        if self.drawn > 0 {
            s.push_str(&format!("\x1b[{}A", self.drawn));
        }
        let lines = table(&rows, elapsed_ns, remaining_ns, width);
        for line in &lines {
            s.push_str("\x1b[2K");
            s.push_str(line);
            s.push('\n');
        }
        self.drawn = lines.len();
        crate::outfile::print(&s);
    }
}

/// One thread's figures in the live table, as printed.
struct Row<'a> {
    name: &'a str,
    /// In the order of [`COLUMNS`].
    figures: [String; 6],
}

/// The table's figure columns: heading and width.
const COLUMNS: [(&str, usize); 6] = [
    ("samples", 12),
    ("min us", 10),
    ("avg us", 10),
    ("max us", 10),
    ("p99 us", 10),
    ("overruns", 9),
];

/// Which columns a narrow terminal keeps, most wanted first (indexes into [`COLUMNS`]).
const KEEP_ORDER: [usize; 6] = [3, 2, 5, 4, 1, 0];

/// The live table's lines for a terminal `width` columns wide: columns are
/// dropped (least wanted first) until a line fits, and nothing is longer than
/// `width`, so the terminal never wraps a line and the redraw stays in place.
fn table(rows: &[Row], elapsed_ns: u64, remaining_ns: Option<u64>, width: usize) -> Vec<String> {
    let remaining = remaining_ns
        .map(|r| format!("  remaining {}", clock_time(r.saturating_add(999_999_999))))
        .unwrap_or_else(|| "  (Ctrl-C to stop)".into());
    let name_w = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(6, 16);
    let mut used = name_w;
    let mut shown = [false; 6];
    for &c in &KEEP_ORDER {
        if used + 1 + COLUMNS[c].1 <= width {
            used += 1 + COLUMNS[c].1;
            shown[c] = true;
        }
    }
    let line = |name: &str, cells: &dyn Fn(usize) -> String| {
        let mut l = format!("{:<name_w$}", name.chars().take(name_w).collect::<String>());
        for (c, &(_, w)) in COLUMNS.iter().enumerate() {
            if shown[c] {
                l.push_str(&format!(" {:>w$}", cells(c)));
            }
        }
        l
    };
    let mut lines = vec![
        format!("elapsed {}{remaining}", clock_time(elapsed_ns)),
        line("thread", &|c| COLUMNS[c].0.to_string()),
    ];
    lines.extend(rows.iter().map(|r| line(r.name, &|c| r.figures[c].clone())));
    // Last resort for a terminal narrower than the name column and one figure.
    lines
        .into_iter()
        .map(|l| l.chars().take(width.max(1)).collect())
        .collect()
}

/// `hh:mm:ss`.
pub fn clock_time(ns: u64) -> String {
    let s = ns / 1_000_000_000;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<Row<'static>> {
        ["cpu0", "cpu1", "pair-cpu0-cpu1"]
            .into_iter()
            .map(|name| Row {
                name,
                figures: [
                    "123456789012".into(),
                    "1.234".into(),
                    "12.345".into(),
                    "123456.789".into(),
                    "99.999".into(),
                    "1234567".into(),
                ],
            })
            .collect()
    }

    #[test]
    fn the_table_fits_every_width_and_drops_columns_not_lines() {
        let full = table(&rows(), 3_000_000_000, Some(7_000_000_000), 200);
        assert!(full[1].contains("samples") && full[1].contains("p99 us"));
        for width in [40, 60, 80, 200] {
            let lines = table(&rows(), 3_000_000_000, Some(7_000_000_000), width);
            assert_eq!(
                lines.len(),
                5,
                "one line per thread, the heading and the clock"
            );
            for l in &lines {
                assert!(l.chars().count() <= width, "{width}: {l:?}");
            }
            // The most wanted figure is always there, whole.
            assert!(lines[1].contains("max us"), "{width}: {:?}", lines[1]);
            assert!(lines[2].contains("123456.789"), "{width}: {:?}", lines[2]);
            assert!(lines[0].contains("remaining 00:00:07"), "{width}");
        }
        let narrow = table(&rows(), 0, None, 40);
        assert!(!narrow[1].contains("samples") && narrow[1].contains("avg us"));
    }

    #[test]
    fn interval_lines_wait_for_every_channel_and_come_out_in_time_order() {
        let iv = |index| IntervalStats {
            index,
            samples: 1,
            ..Default::default()
        };
        let mut live = Live::new(true, 1_000_000_000);
        live.mode = LiveStyle::Lines;
        let names = ["a", "b"];
        // a finished intervals 0 and 1, b only 0: only interval 0 may go out.
        live.intervals(0, &[iv(0), iv(1)]);
        live.intervals(1, &[iv(0)]);
        live.print_intervals(&names, Some(2_100_000_000), false);
        assert_eq!(live.pending.len(), 1);
        assert_eq!(live.pending[0].1.index, 1);
        live.intervals(1, &[iv(1), iv(2)]);
        live.print_intervals(&names, Some(2_200_000_000), false);
        assert_eq!(
            live.pending.iter().map(|p| p.1.index).collect::<Vec<_>>(),
            [2]
        );
        // A channel that stops finishing intervals holds the others back one interval at most.
        live.intervals(1, &[iv(3), iv(4)]);
        live.print_intervals(&names, Some(5_500_000_000), false);
        assert_eq!(
            live.pending.iter().map(|p| p.1.index).collect::<Vec<_>>(),
            [4]
        );
        live.print_intervals(&names, None, true);
        assert!(live.pending.is_empty());
    }
}
