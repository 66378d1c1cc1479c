//! The plain configuration of an irq run (built from the command line in
//! `cli::irq`); its serde names are those of the result file's `config`.

use crate::engine::RunControl;
use crate::engine::Setup;
use serde::Serialize;
use std::path::PathBuf;

pub const DEFAULT_PERIOD_NS: u64 = 1_000_000;
pub const DEFAULT_TIMEOUT_NS: u64 = 100_000_000;

/// The three roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Loopback,
    Target,
    Host,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Loopback => "loopback",
            Role::Target => "target",
            Role::Host => "host",
        }
    }
}

/// Where edges come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// The Linux GPIO character device (uAPI v2).
    Gpio,
    /// The modem-control lines of a serial port.
    Serial,
    /// An in-process simulated wire.
    Sim,
}

/// Where a target's reply is issued from: rtlat's measuring thread, or the
/// kernel responder of kmod/ (`/dev/rtlat-responder`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReplyFrom {
    User,
    /// The threaded interrupt handler.
    Thread,
    /// A kernel thread at a SCHED_FIFO priority, woken by the handler.
    Kthread,
    /// The hard interrupt handler.
    Irq,
}

impl ReplyFrom {
    pub fn name(self) -> &'static str {
        match self {
            ReplyFrom::User => "user",
            ReplyFrom::Thread => "thread",
            ReplyFrom::Kthread => "kthread",
            ReplyFrom::Irq => "irq",
        }
    }
}

/// Which edges are measured (`edge` in the configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Measured {
    Rising,
    Falling,
    Both,
}

impl Measured {
    /// The level the wire rests at between measured edges (`both`: where it starts).
    pub fn idle_high(self) -> bool {
        self == Measured::Falling
    }
    /// Is an edge to `high` measured?
    #[inline(always)]
    pub fn includes(self, high: bool) -> bool {
        match self {
            Measured::Both => true,
            Measured::Rising => high,
            Measured::Falling => !high,
        }
    }
}

/// Clock of the kernel event timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EventClock {
    Monotonic,
    Realtime,
    /// The hardware timestamp engine.
    Hte,
}

/// Bias of a GPIO input line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bias {
    PullUp,
    PullDown,
    Disabled,
}

/// Settings of the simulated wire.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SimConfig {
    pub delay_ns: u64,
    pub jitter_ns: u64,
    pub seed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lose_every: Option<u64>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            delay_ns: 20_000,
            jitter_ns: 10_000,
            seed: 1,
            lose_every: None,
        }
    }
}

/// Validated settings of an irq run.
#[derive(Debug, Clone, Serialize)]
pub struct IrqConfig {
    pub role: Role,
    pub backend: Backend,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chip: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_line: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_line: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<PathBuf>,
    pub edge: Measured,
    pub event_clock: EventClock,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bias: Option<Bias>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub debounce_ns: Option<u64>,
    /// Time between measured edges; `null` for a target, which follows the host.
    pub period_ns: Option<u64>,
    pub timeout_ns: Option<u64>,
    #[serde(flatten)]
    pub control: RunControl,
    pub cpu: Option<usize>,
    /// The worst event → thread intervals explained (`--explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<usize>,
    /// `--explain-stacks`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explain_stacks: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sim: Option<SimConfig>,
    /// target: where the reply is issued from (user: rtlat itself).
    pub reply_from: ReplyFrom,
    /// target --reply-from kthread: the kernel thread's SCHED_FIFO priority.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_priority: Option<u32>,
    /// host: the board `rtlat irq target` is started on for the run (`--target`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<crate::remote::peer::Board>,
    /// Further options of the board's `irq target` (`--target-arg`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub target_args: Vec<String>,
    #[serde(skip)]
    pub setup: Setup,
}

impl IrqConfig {
    /// Which edges are measured.
    pub fn measured(&self) -> Measured {
        self.edge
    }

    /// The clock every timestamp of the run is taken on (the kernel's event clock).
    pub fn clock_id(&self) -> libc::clockid_t {
        match self.event_clock {
            EventClock::Realtime => libc::CLOCK_REALTIME,
            _ => libc::CLOCK_MONOTONIC,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_edges() {
        assert!(Measured::Both.includes(true) && Measured::Both.includes(false));
        assert!(Measured::Rising.includes(true) && !Measured::Rising.includes(false));
        assert!(Measured::Falling.idle_high() && !Measured::Rising.idle_high());
    }

    #[test]
    fn names_in_the_result_are_unchanged() {
        let v = serde_json::to_value((Backend::Sim, Measured::Both, EventClock::Hte, Bias::PullUp))
            .unwrap();
        assert_eq!(v, serde_json::json!(["sim", "both", "hte", "pull-up"]));
    }
}
