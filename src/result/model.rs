//! What the result's names mean: the benchmark kinds, why a run ended, the
//! scheduling policy. Readers ask these types (title, main series, compare
//! columns, units, whether series merge) instead of matching strings.
//! The serde names are those of schema version 1.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The benchmark a result comes from.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Benchmark {
    Timer,
    Switch,
    Cruncher,
    Net,
    Irq,
    Noise,
    Watch,
}

/// The threads that make up a benchmark's main figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MainSeries {
    /// The first of these threads the result has; else every thread merged.
    FirstOf(&'static [&'static str]),
    /// The threads named prefix + a number (timer: `cpuN`), or of kernel
    /// contexts the level closest to user space (`cpuN/user`, else
    /// `cpuN/thread`, never `cpuN/irq`), merged under a name; else every
    /// thread merged.
    Prefixed {
        prefix: &'static str,
        name: &'static str,
    },
    /// Every thread merged.
    All,
}

/// A statistic of a summary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Figure {
    Min,
    Avg,
    Max,
    P(f64),
    Overruns,
}

/// The series a compare column reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Source {
    /// The main figure ([`Benchmark::main_series`]).
    Main,
    /// The first of these threads the result has.
    Thread(&'static [&'static str]),
    /// One level of a result of kernel contexts (`timer --context`, rtla
    /// imports): its series on every CPU (`cpuN/irq` …) taken together.
    Level(&'static str),
}

/// What a compare column shows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Get {
    Of(Source, Figure),
    /// `details.lost`, else the overruns where they are lost wakes ([`Benchmark::overruns_are_lost`]).
    Lost,
    /// `details.missed`.
    Missed,
    Duration,
    /// `details.ideal_ns`.
    Ideal,
    /// `details.stretch`, else max / ideal.
    Stretch,
    /// `details.beyond_tolerance`.
    BeyondTolerance,
    /// noise: the time stolen from the busy loops, every CPU's together.
    Stolen,
    /// noise: the gaps above the threshold, every CPU's together.
    NoiseGaps,
    /// The tail forecast at each file's exceedance: the highest of its
    /// threads', `withheld` when one was withheld.
    Forecast,
}

/// One column of `rtlat compare`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Column {
    /// Heading in text and Markdown.
    pub head: &'static str,
    /// Heading in CSV (with its unit).
    pub csv: &'static str,
    pub get: Get,
}

const fn col(head: &'static str, csv: &'static str, get: Get) -> Column {
    Column { head, csv, get }
}

const MAIN: Source = Source::Main;
const RTT: Source = Source::Thread(&["rtt"]);
const TX: Source = Source::Thread(&["tx"]);
const RX: Source = Source::Thread(&["rx"]);
const IRQ: Source = Source::Thread(&["irq"]);
const USER: Source = Source::Thread(&["user"]);
/// irq: `roundtrip` (log host), else `wake` (loopback).
const ROUND_TRIP: Source = Source::Thread(&["roundtrip", "wake"]);

// The main figure's columns, shared by timer, switch and cruncher.
const MIN: Column = col("min", "min_us", Get::Of(MAIN, Figure::Min));
const AVG: Column = col("avg", "avg_us", Get::Of(MAIN, Figure::Avg));
const MAX: Column = col("max", "max_us", Get::Of(MAIN, Figure::Max));
const P99: Column = col("p99", "p99_us", Get::Of(MAIN, Figure::P(99.0)));
const LOST: Column = col("lost", "lost", Get::Lost);
const DURATION: Column = col("duration", "duration_s", Get::Duration);
const FORECAST: Column = col("forecast", "forecast_us", Get::Forecast);

const TIMER_COLUMNS: &[Column] = &[
    MIN,
    AVG,
    MAX,
    P99,
    col("p99.99", "p99.99_us", Get::Of(MAIN, Figure::P(99.99))),
    FORECAST,
    col("overruns", "overruns", Get::Of(MAIN, Figure::Overruns)),
    DURATION,
];

const SWITCH_COLUMNS: &[Column] = &[MIN, AVG, MAX, P99, FORECAST, LOST, DURATION];

const CRUNCHER_COLUMNS: &[Column] = &[
    col("ideal", "ideal_us", Get::Ideal),
    MIN,
    AVG,
    MAX,
    col("stretch", "stretch", Get::Stretch),
    col("beyond tol.", "beyond_tolerance", Get::BeyondTolerance),
    DURATION,
];

const NET_COLUMNS: &[Column] = &[
    col("rtt min", "rtt_min_us", Get::Of(RTT, Figure::Min)),
    col("rtt avg", "rtt_avg_us", Get::Of(RTT, Figure::Avg)),
    col("rtt max", "rtt_max_us", Get::Of(RTT, Figure::Max)),
    col("rtt p99", "rtt_p99_us", Get::Of(RTT, Figure::P(99.0))),
    col("tx avg", "tx_avg_us", Get::Of(TX, Figure::Avg)),
    col("tx max", "tx_max_us", Get::Of(TX, Figure::Max)),
    col("rx avg", "rx_avg_us", Get::Of(RX, Figure::Avg)),
    col("rx max", "rx_max_us", Get::Of(RX, Figure::Max)),
    LOST,
];

const IRQ_COLUMNS: &[Column] = &[
    col("irq avg", "irq_avg_us", Get::Of(IRQ, Figure::Avg)),
    col("irq max", "irq_max_us", Get::Of(IRQ, Figure::Max)),
    col("user avg", "user_avg_us", Get::Of(USER, Figure::Avg)),
    col("user max", "user_max_us", Get::Of(USER, Figure::Max)),
    col(
        "round trip avg",
        "roundtrip_avg_us",
        Get::Of(ROUND_TRIP, Figure::Avg),
    ),
    col(
        "round trip max",
        "roundtrip_max_us",
        Get::Of(ROUND_TRIP, Figure::Max),
    ),
    col("missed", "missed", Get::Missed),
];

const NOISE_COLUMNS: &[Column] = &[
    MIN,
    AVG,
    MAX,
    col("p99.99", "p99.99_us", Get::Of(MAIN, Figure::P(99.99))),
    FORECAST,
    col("stolen", "stolen_us", Get::Stolen),
    col("noise gaps", "noise_gaps", Get::NoiseGaps),
    DURATION,
];

const WATCH_COLUMNS: &[Column] = &[MIN, AVG, MAX, P99, FORECAST, DURATION];

impl Benchmark {
    pub const ALL: [Benchmark; 7] = [
        Benchmark::Timer,
        Benchmark::Switch,
        Benchmark::Cruncher,
        Benchmark::Net,
        Benchmark::Irq,
        Benchmark::Noise,
        Benchmark::Watch,
    ];

    /// The subcommand and serde name: `timer`, `switch`, `cruncher`, `net`, `irq`, `noise`, `watch`.
    pub fn name(self) -> &'static str {
        match self {
            Benchmark::Timer => "timer",
            Benchmark::Switch => "switch",
            Benchmark::Cruncher => "cruncher",
            Benchmark::Net => "net",
            Benchmark::Irq => "irq",
            Benchmark::Noise => "noise",
            Benchmark::Watch => "watch",
        }
    }

    pub fn from_name(name: &str) -> Option<Benchmark> {
        Benchmark::ALL.into_iter().find(|b| b.name() == name)
    }

    /// What the benchmark measures, for titles.
    pub fn title(self) -> &'static str {
        match self {
            Benchmark::Timer => "Timer wake-up latency",
            Benchmark::Switch => "Context-switch latency",
            Benchmark::Cruncher => "Computation time (cruncher)",
            Benchmark::Net => "UDP latency",
            Benchmark::Irq => "Interrupt latency",
            Benchmark::Noise => "OS noise (busy-loop gaps)",
            Benchmark::Watch => "Watched threads' wake-up latency",
        }
    }

    /// What a value is: `latency`, or `computation time` for cruncher.
    pub fn quantity(self) -> &'static str {
        match self {
            Benchmark::Cruncher => "computation time",
            Benchmark::Noise => "loop gap",
            _ => "latency",
        }
    }

    /// What its main series counts: a net run's every series measures the
    /// same packets, so it counts packets, not five samples a packet.
    pub fn counted(self) -> &'static str {
        match self {
            Benchmark::Net => "packets",
            _ => "samples",
        }
    }

    /// The unit line of a table: `latencies in us`.
    pub fn unit_note(self) -> &'static str {
        match self {
            Benchmark::Cruncher => "computation times in us",
            Benchmark::Noise => "loop gaps in us",
            _ => "latencies in us",
        }
    }

    /// Whether the threads measure the same quantity, so that an `all` row
    /// (the merged `total`) means something: not for net (rtt, tx, rx …) or
    /// irq (irq, user, wake …), whose series are different metrics.
    pub fn merges_alike(self) -> bool {
        !matches!(self, Benchmark::Net | Benchmark::Irq)
    }

    /// The threads of the main figure: timer all CPUs (rtla imports keep IRQ
    /// latencies apart), switch all pairs, cruncher `run`, net `rtt`, irq the
    /// round trip (`roundtrip`), else `wake`, else `irq`.
    pub fn main_series(self) -> MainSeries {
        match self {
            Benchmark::Timer => MainSeries::Prefixed {
                prefix: "cpu",
                name: "all CPUs",
            },
            Benchmark::Switch => MainSeries::All,
            Benchmark::Cruncher => MainSeries::FirstOf(&["run"]),
            Benchmark::Net => MainSeries::FirstOf(&["rtt"]),
            Benchmark::Irq => MainSeries::FirstOf(&["roundtrip", "wake", "irq"]),
            Benchmark::Noise => MainSeries::Prefixed {
                prefix: "cpu",
                name: "all CPUs",
            },
            Benchmark::Watch => MainSeries::All,
        }
    }

    /// The columns of `rtlat compare` (after label and load).
    pub fn compare_columns(self) -> &'static [Column] {
        match self {
            Benchmark::Timer => TIMER_COLUMNS,
            Benchmark::Switch => SWITCH_COLUMNS,
            Benchmark::Cruncher => CRUNCHER_COLUMNS,
            Benchmark::Net => NET_COLUMNS,
            Benchmark::Irq => IRQ_COLUMNS,
            Benchmark::Noise => NOISE_COLUMNS,
            Benchmark::Watch => WATCH_COLUMNS,
        }
    }

    /// Whether the measured threads are rtlat's own, whose tuning (policy,
    /// mlock, dma latency) the result's describes: not for watch, which
    /// measures the user's threads from outside.
    pub fn measures_own_threads(self) -> bool {
        self != Benchmark::Watch
    }

    /// Whether overruns count lost wakes (switch) when `details.lost` is absent.
    pub fn overruns_are_lost(self) -> bool {
        self == Benchmark::Switch
    }
}

impl fmt::Display for Benchmark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl PartialEq<&str> for Benchmark {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}

/// Why a run ended.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum EndReason {
    /// Still running (a file rewritten during the run, or a killed run).
    #[default]
    Running,
    Duration,
    Loops,
    Signal,
    /// A sample crossed `--break`.
    Break,
    Error,
}

impl EndReason {
    pub fn name(self) -> &'static str {
        match self {
            EndReason::Running => "running",
            EndReason::Duration => "duration",
            EndReason::Loops => "loops",
            EndReason::Signal => "signal",
            EndReason::Break => "break",
            EndReason::Error => "error",
        }
    }

    /// How the run ended, in words: `ran its whole duration`.
    pub fn phrase(self) -> &'static str {
        match self {
            EndReason::Running => "did not finish (still running when saved, or killed)",
            EndReason::Duration => "ran its whole duration",
            EndReason::Loops => "took all its samples (--loops)",
            EndReason::Signal => "stopped by a signal",
            EndReason::Break => "stopped when a sample crossed --break",
            EndReason::Error => "ended by an error",
        }
    }

    pub fn from_name(name: &str) -> Option<EndReason> {
        [
            EndReason::Running,
            EndReason::Duration,
            EndReason::Loops,
            EndReason::Signal,
            EndReason::Break,
            EndReason::Error,
        ]
        .into_iter()
        .find(|r| r.name() == name)
    }

    /// Whether the run ended as it was asked to (duration or sample count).
    pub fn as_asked(self) -> bool {
        matches!(self, EndReason::Duration | EndReason::Loops)
    }
}

impl fmt::Display for EndReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The scheduling policy of the measuring threads.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Fifo,
    Rr,
    Deadline,
    #[default]
    Other,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
            Policy::Deadline => "deadline",
            Policy::Other => "other",
        }
    }

    pub fn from_name(name: &str) -> Option<Policy> {
        [Policy::Fifo, Policy::Rr, Policy::Deadline, Policy::Other]
            .into_iter()
            .find(|p| p.name() == name)
    }

    /// Whether the policy has a static priority (fifo, rr).
    pub fn has_priority(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }

    /// `SCHED_FIFO 80`, `SCHED_OTHER`.
    pub fn label(self, priority: i32) -> String {
        let upper = self.name().to_uppercase();
        if self.has_priority() {
            format!("SCHED_{upper} {priority}")
        } else {
            format!("SCHED_{upper}")
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_names_are_those_of_schema_version_1() {
        for b in Benchmark::ALL {
            let json = serde_json::to_string(&b).unwrap();
            assert_eq!(json, format!("\"{}\"", b.name()));
            assert_eq!(Benchmark::from_name(b.name()), Some(b));
            assert_eq!(serde_json::from_str::<Benchmark>(&json).unwrap(), b);
        }
        for (r, n) in [
            (EndReason::Running, "running"),
            (EndReason::Duration, "duration"),
            (EndReason::Loops, "loops"),
            (EndReason::Signal, "signal"),
            (EndReason::Break, "break"),
            (EndReason::Error, "error"),
        ] {
            assert_eq!(serde_json::to_value(r).unwrap(), n);
            assert_eq!(r.name(), n);
            assert_eq!(EndReason::from_name(n), Some(r));
        }
        for (p, n) in [
            (Policy::Fifo, "fifo"),
            (Policy::Rr, "rr"),
            (Policy::Deadline, "deadline"),
            (Policy::Other, "other"),
        ] {
            assert_eq!(serde_json::to_value(p).unwrap(), n);
            assert_eq!(serde_json::from_value::<Policy>(n.into()).unwrap(), p);
            assert_eq!(Policy::from_name(n), Some(p));
        }
        assert!(serde_json::from_str::<Benchmark>("\"latency\"").is_err());
    }

    #[test]
    fn policy_labels() {
        assert_eq!(Policy::Fifo.label(80), "SCHED_FIFO 80");
        assert_eq!(Policy::Deadline.label(0), "SCHED_DEADLINE");
    }
}
