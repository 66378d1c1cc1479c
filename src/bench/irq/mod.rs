//! `rtlat irq`: external interrupt latency over an edge on a wire.
//!
//! Three roles share one edge backend (GPIO character device, serial modem
//! lines, or an in-process simulated wire):
//! - `loopback`: one board drives an output wired to its own input. Per edge,
//!   t0 = clock just before the write; irq = kernel event timestamp − t0;
//!   user = time the measuring thread holds the event − t0; wake = user − irq.
//! - `target`: the board under test answers every trigger edge on a reply
//!   line at once; kernel timestamp → user, and user → reply written.
//! - `host`: the log host drives the trigger and timestamps the reply edge
//!   on its own input: the round trip; no reply within `--timeout` is missed.
//!
//! Inputs always watch both edges, so the line level is known at every event
//! and a lost event shows as a sequence-number gap or two edges of one kind
//! in a row. `--edge` selects which edges are measured; with `rising` or
//! `falling`, the opposite edge returns the wire to idle unmeasured.

mod gpio;
mod host;
mod loopback;
mod serial;
mod sim;
mod target;

use crate::cli::{positive_duration, LoadOpts, OutputArgs, RtArgs};
use crate::engine::{self, Channel, RunControl, RunSpec, Worker, WorkerEnd};
use crate::engine::{RtConfig, StopFlag};
use crate::error::{Error, Outcome, Result};
use crate::result::RunResult;
use crate::stats::recorder::{self, Recorder};
use crate::sys;
use serde::Serialize;
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Longest a measuring thread blocks before it looks at the stop flag again.
pub(crate) const WAIT_SLICE_NS: u64 = 100_000_000;

const IRQ_HELP: &str = "\
Roles (one board, or a log host and a target wired together):
  loopback  an output wired to an input on one board: IRQ latency (kernel event
            timestamp - write), user latency (event held by the RT thread - write)
            and their difference, the wake-up cost
  target    the board under test: answers every trigger edge on its reply line
  host      the log host (plain Linux): drives the trigger, times the reply edge

Examples:
  rtlat irq loopback --backend sim --count 10000 --json i.json
  rtlat irq loopback --chip gpiochip0 --out 17 --in 27 --period 1ms --duration 60s
  rtlat irq target --out gpiochip0:5 --in gpiochip0:6 --json target.json
  rtlat irq host --out GPIO5 --in GPIO6 --rate 1000 --count 100000 --policy other
  rtlat irq loopback --backend serial --port /dev/ttyUSB0 --out rts --in cts";

/// `rtlat irq`: one of the three roles.
#[derive(Debug, clap::Args)]
#[command(after_help = IRQ_HELP, subcommand_required = true)]
pub struct IrqArgs {
    #[command(subcommand)]
    pub role: RoleCommand,
}

#[derive(Debug, clap::Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once
pub enum RoleCommand {
    /// One board, an output wired to an input: IRQ, user and wake-up latency per edge
    Loopback(RoleArgs),
    /// The board under test: answer every trigger edge on the reply line at once
    Target(RoleArgs),
    /// The log host: drive the trigger, time the target's reply edge (round trip)
    Host(RoleArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendArg {
    /// The Linux GPIO character device (uAPI v2): kernel event timestamps and sequence numbers
    Gpio,
    /// The modem-control lines of a serial port (RTS/DTR out, CTS/DSR/DCD/RI in)
    Serial,
    /// An in-process simulated wire with a configurable delay and jitter
    Sim,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EdgeArg {
    Rising,
    Falling,
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EventClockArg {
    /// CLOCK_MONOTONIC (default)
    Monotonic,
    /// CLOCK_REALTIME
    Realtime,
    /// The hardware timestamp engine, where the board has one
    Hte,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BiasArg {
    PullUp,
    PullDown,
    Disabled,
}

/// Options shared by the three roles.
#[derive(Debug, clap::Args)]
pub struct RoleArgs {
    /// Where edges come from
    #[arg(long, value_enum, default_value = "gpio")]
    pub backend: BackendArg,
    /// GPIO chip of the lines: gpiochip0, 0 or /dev/gpiochip0 [default: gpiochip0 for offsets; every chip for line names]
    #[arg(long)]
    pub chip: Option<String>,
    /// The line rtlat drives (loopback: the output; target: the reply; host: the trigger).
    /// GPIO: OFFSET, CHIP:OFFSET or a line name; serial: rts or dtr [default: rts]
    #[arg(long = "out", value_name = "LINE")]
    pub out_line: Option<String>,
    /// The line rtlat watches (loopback: the input; target: the trigger; host: the reply).
    /// GPIO: OFFSET, CHIP:OFFSET or a line name; serial: cts, dsr, dcd or ri [default: cts]
    #[arg(long = "in", value_name = "LINE")]
    pub in_line: Option<String>,
    /// Serial port of --backend serial, e.g. /dev/ttyS0 or /dev/ttyUSB0
    #[arg(long, value_name = "DEVICE")]
    pub port: Option<PathBuf>,
    /// Which edges are measured (the input always watches both, so none is lost unseen)
    #[arg(long, value_enum, default_value = "both")]
    pub edge: EdgeArg,
    /// Clock of the kernel event timestamps (GPIO)
    #[arg(long, value_enum, default_value = "monotonic")]
    pub event_clock: EventClockArg,
    /// Bias of the GPIO input line [default: as is]
    #[arg(long, value_enum)]
    pub bias: Option<BiasArg>,
    /// Debounce period of the GPIO input line
    #[arg(long, value_name = "DURATION", value_parser = positive_duration)]
    pub debounce: Option<u64>,
    /// Time between measured edges (loopback, host; target with --backend sim) [default: 1ms]
    #[arg(long, short, value_name = "DURATION", value_parser = positive_duration, conflicts_with = "rate")]
    pub period: Option<u64>,
    /// Measured edges per second, instead of --period
    #[arg(long, value_name = "HZ", value_parser = rate_period)]
    pub rate: Option<u64>,
    /// Stop after N measured edges (loopback, host: edges driven; target: edges answered)
    #[arg(long, short = 'n', visible_alias = "loops", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Stop after this long (e.g. 10s, 5m, 2h) [default: until --count or interrupted]
    #[arg(long, short, value_parser = positive_duration, conflicts_with = "count")]
    pub duration: Option<u64>,
    /// An edge with no event (loopback) or reply (host) within DURATION is missed [default: 100ms]
    #[arg(long, value_name = "DURATION", value_parser = positive_duration)]
    pub timeout: Option<u64>,
    /// Pin the measuring thread to this CPU [default: not pinned]
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Simulated wire: delay from the write to the interrupt (before jitter)
    #[arg(long, value_name = "DURATION", default_value = "20us", value_parser = crate::units::parse_duration_ns)]
    pub sim_delay: u64,
    /// Simulated wire: uniform random extra delay, 0 to DURATION
    #[arg(long, value_name = "DURATION", default_value = "10us", value_parser = crate::units::parse_duration_ns)]
    pub sim_jitter: u64,
    /// Simulated wire: seed of the jitter
    #[arg(long, value_name = "SEED", default_value = "1")]
    pub sim_seed: u64,
    /// Simulated wire: drop every Nth kernel event, as an overflowing event buffer would (tests)
    #[arg(long, hide = true, value_name = "N", value_parser = clap::value_parser!(u64).range(2..))]
    pub sim_lose_every: Option<u64>,
    #[command(flatten)]
    pub rt: RtArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub load: LoadOpts,
}

/// `--rate HZ` as a period in ns.
fn rate_period(s: &str) -> std::result::Result<u64, String> {
    let hz: f64 = s
        .trim()
        .trim_end_matches("Hz")
        .trim_end_matches("hz")
        .parse()
        .map_err(|_| format!("'{s}' is not a rate in Hz, e.g. 1000"))?;
    if !(hz.is_finite() && hz > 0.0 && hz <= 1e9) {
        return Err(format!("'{s}' is out of range: give 0 < HZ <= 1e9"));
    }
    Ok(((1e9 / hz).round() as u64).max(1))
}

/// The three roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Loopback,
    Target,
    Host,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Loopback => "loopback",
            Role::Target => "target",
            Role::Host => "host",
        }
    }
}

/// Which edges are measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// Settings of the simulated wire.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SimConfig {
    pub delay_ns: u64,
    pub jitter_ns: u64,
    pub seed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lose_every: Option<u64>,
}

/// Validated settings of an irq run.
#[derive(Debug, Clone, Serialize)]
pub struct IrqConfig {
    pub role: Role,
    pub backend: BackendArg,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chip: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_line: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_line: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<PathBuf>,
    pub edge: EdgeArg,
    pub event_clock: EventClockArg,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bias: Option<BiasArg>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub debounce_ns: Option<u64>,
    /// Time between measured edges; `null` for a target, which follows the host.
    pub period_ns: Option<u64>,
    pub timeout_ns: Option<u64>,
    #[serde(flatten)]
    pub control: RunControl,
    pub cpu: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sim: Option<SimConfig>,
    #[serde(skip)]
    pub rt: RtConfig,
}

pub const DEFAULT_PERIOD_NS: u64 = 1_000_000;
pub const DEFAULT_TIMEOUT_NS: u64 = 100_000_000;

impl IrqConfig {
    pub fn from_args(role: Role, a: &RoleArgs) -> Result<Self> {
        let sim = a.backend == BackendArg::Sim;
        let paced = role != Role::Target || sim;
        let given_period = a.period.or(a.rate);
        if !paced && given_period.is_some() {
            return Err(Error::usage(
                "--period/--rate do not apply to a target: it answers the host's edges (drop them)",
            ));
        }
        if role == Role::Target && a.timeout.is_some() {
            return Err(Error::usage(
                "--timeout does not apply to a target: it waits for the host's edges (drop it)",
            ));
        }
        match a.backend {
            BackendArg::Gpio => {
                if a.out_line.is_none() || a.in_line.is_none() {
                    return Err(Error::usage(
                        "--backend gpio needs both lines: --out LINE --in LINE (OFFSET, CHIP:OFFSET or a line name)",
                    ));
                }
                if a.port.is_some() {
                    return Err(Error::usage(
                        "--port applies to --backend serial; GPIO lines are given with --chip/--out/--in",
                    ));
                }
            }
            BackendArg::Serial => {
                if a.port.is_none() {
                    return Err(Error::usage(
                        "--backend serial needs --port DEVICE, e.g. --port /dev/ttyUSB0",
                    ));
                }
                if a.chip.is_some() || a.bias.is_some() || a.debounce.is_some() {
                    return Err(Error::usage(
                        "--chip/--bias/--debounce apply to --backend gpio only",
                    ));
                }
                if a.event_clock != EventClockArg::Monotonic {
                    return Err(Error::usage(
                        "serial modem lines have no kernel event timestamps: drop --event-clock",
                    ));
                }
            }
            BackendArg::Sim => {
                if a.chip.is_some()
                    || a.out_line.is_some()
                    || a.in_line.is_some()
                    || a.port.is_some()
                    || a.bias.is_some()
                    || a.debounce.is_some()
                {
                    return Err(Error::usage(
                        "--chip/--out/--in/--port/--bias/--debounce do not apply to --backend sim (it has no real lines)",
                    ));
                }
                if a.event_clock == EventClockArg::Hte {
                    return Err(Error::usage(
                        "--event-clock hte needs a GPIO chip with a hardware timestamp engine",
                    ));
                }
            }
        }
        if let (Some(o), Some(i)) = (&a.out_line, &a.in_line) {
            if o == i {
                return Err(Error::usage(
                    "--out and --in name the same line: wire an output to a different input",
                ));
            }
        }
        let period_ns = paced.then(|| given_period.unwrap_or(DEFAULT_PERIOD_NS));
        let rt = a.rt.to_config(period_ns.unwrap_or(DEFAULT_PERIOD_NS))?;
        if a.cpu.is_some() && !rt.can_pin() {
            return Err(Error::usage(
                "--cpu cannot be used with --policy deadline (SCHED_DEADLINE tasks cannot be pinned)",
            ));
        }
        if let Some(cpu) = a.cpu {
            let online = crate::sysinfo::online_cpus();
            if !online.contains(&cpu) {
                return Err(Error::usage(format!(
                    "--cpu {cpu} is not an online CPU (online: {})",
                    crate::units::format_cpu_list(&online)
                )));
            }
        }
        let (out_line, in_line) = match a.backend {
            BackendArg::Serial => (
                Some(a.out_line.clone().unwrap_or_else(|| "rts".into())),
                Some(a.in_line.clone().unwrap_or_else(|| "cts".into())),
            ),
            _ => (a.out_line.clone(), a.in_line.clone()),
        };
        Ok(IrqConfig {
            role,
            backend: a.backend,
            chip: a.chip.clone(),
            out_line,
            in_line,
            port: a.port.clone(),
            edge: a.edge,
            event_clock: a.event_clock,
            bias: a.bias,
            debounce_ns: a.debounce,
            period_ns,
            timeout_ns: (role != Role::Target).then(|| a.timeout.unwrap_or(DEFAULT_TIMEOUT_NS)),
            cpu: a.cpu,
            control: a.output.control(a.duration, a.count, None),
            sim: sim.then_some(SimConfig {
                delay_ns: a.sim_delay,
                jitter_ns: a.sim_jitter,
                seed: a.sim_seed,
                lose_every: a.sim_lose_every,
            }),
            rt,
        })
    }

    pub fn measured(&self) -> Measured {
        match self.edge {
            EdgeArg::Rising => Measured::Rising,
            EdgeArg::Falling => Measured::Falling,
            EdgeArg::Both => Measured::Both,
        }
    }

    /// The clock every timestamp of the run is taken on (the kernel's event clock).
    pub fn clock_id(&self) -> libc::clockid_t {
        match self.event_clock {
            EventClockArg::Realtime => libc::CLOCK_REALTIME,
            _ => libc::CLOCK_MONOTONIC,
        }
    }
}

/// One edge seen on the watched line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Edge {
    /// A rising edge: the line is now high.
    pub rising: bool,
    /// The kernel's timestamp of the edge (run clock); `None` when the backend has none (serial).
    pub kernel_ns: Option<u64>,
    /// When the measuring thread held the event: right after the read returned.
    pub user_ns: u64,
    /// The kernel's sequence number of the event on its line, when the backend has one.
    pub seqno: Option<u32>,
}

/// A source of edges on a watched line and a line to drive. The measuring
/// thread calls `drive` and `wait_edge` in its hot loop: neither allocates.
pub trait EdgeBackend {
    /// Called on the measuring thread once it is set up, with the run's start
    /// time; buffers and per-thread resources are made ready here.
    fn begin(&mut self, _start_ns: u64) -> io::Result<()> {
        Ok(())
    }
    /// Drive the output line high or low.
    fn drive(&mut self, high: bool) -> io::Result<()>;
    /// The next edge on the watched line, waiting until `deadline_ns` at most
    /// (run clock, absolute); `None` when none came in time.
    fn wait_edge(&mut self, deadline_ns: u64) -> io::Result<Option<Edge>>;
    /// The current level of the watched line (before the run).
    fn input_level(&mut self) -> io::Result<bool>;
    /// Whether edges carry kernel timestamps.
    fn kernel_timestamps(&self) -> bool;
}

/// Where the measuring loop's time comes from: the real clock in a run, a
/// scripted one in unit tests.
pub trait Timebase {
    fn now(&self) -> u64;
    fn sleep_until(&mut self, t: u64);
}

/// The run clock.
pub struct RealTime(pub libc::clockid_t);

impl Timebase for RealTime {
    #[inline(always)]
    fn now(&self) -> u64 {
        sys::clock::now_ns(self.0)
    }
    #[inline(always)]
    fn sleep_until(&mut self, t: u64) {
        sys::clock::sleep_until(self.0, t)
    }
}

/// What happened to the edges of a run, kept by the measuring thread and
/// handed over when it ends (see [`EdgeReport`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EdgeReport {
    /// Measured edges rtlat drove (loopback, host).
    pub edges_driven: u64,
    /// Events read from the watched line, measured or not.
    pub edges_seen: u64,
    /// Trigger edges the target answered and measured.
    pub answered: u64,
    /// Measured edges with no event (loopback) or reply (host) within the timeout.
    pub missed: u64,
    /// Edges back to idle (`--edge rising|falling`) not seen within the timeout.
    pub missed_idle: u64,
    /// Events the kernel dropped: gaps in the sequence numbers.
    pub lost_events: u64,
    /// Two edges of one kind in a row with no event lost between them.
    pub repeated_edges: u64,
    /// Events of the other kind than the one awaited, or stale ones read before an edge (host: late replies).
    pub unexpected_edges: u64,
    /// Kernel timestamps that went backwards or fell outside [write, read].
    pub timestamp_errors: u64,
    /// Sequence numbers of the first and the last event.
    pub first_seqno: Option<u32>,
    pub last_seqno: Option<u32>,
    /// Periods skipped because an edge took longer than the period.
    pub overruns: u64,
    /// An I/O error that ended the run early.
    pub error: Option<String>,
}

/// Per-event bookkeeping: sequence numbers, edge kinds, timestamp order.
#[derive(Debug, Default)]
pub struct EdgeAccount {
    pub r: EdgeReport,
    last_rising: Option<bool>,
    last_kernel_ns: u64,
}

impl EdgeAccount {
    /// Account for one event read from the watched line.
    #[inline]
    pub fn on_edge(&mut self, e: &Edge) {
        self.r.edges_seen += 1;
        let mut gap = 0;
        if let Some(seqno) = e.seqno {
            if let Some(last) = self.r.last_seqno {
                let d = seqno.wrapping_sub(last);
                if d == 0 || d > u32::MAX / 2 {
                    // Backwards: cannot happen on one request; count it as disorder.
                    self.r.repeated_edges += 1;
                } else {
                    gap = d - 1;
                }
            } else {
                self.r.first_seqno = Some(seqno);
            }
            self.r.last_seqno = Some(seqno);
            self.r.lost_events += u64::from(gap);
        }
        if gap == 0 && self.last_rising == Some(e.rising) {
            self.r.repeated_edges += 1;
        }
        self.last_rising = Some(e.rising);
        if let Some(k) = e.kernel_ns {
            if k < self.last_kernel_ns {
                self.r.timestamp_errors += 1;
            }
            self.last_kernel_ns = k;
        }
    }

    /// The level the watched line was last seen at.
    pub fn last_level(&self) -> Option<bool> {
        self.last_rising
    }

    /// Start from a known level (read before the run).
    pub fn set_level(&mut self, high: bool) {
        self.last_rising = Some(high);
    }
}

/// What the measuring loops share: where to stop and when.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Start of the run (run clock).
    pub start: u64,
    pub period: u64,
    pub end: u64,
    pub count: u64,
    pub timeout: u64,
    pub measured: Measured,
}

/// Drain events already waiting (stale ones) without blocking; returns how many.
pub(crate) fn drain<B: EdgeBackend + ?Sized, T: Timebase>(
    b: &mut B,
    t: &T,
    acct: &mut EdgeAccount,
) -> io::Result<u64> {
    let mut n = 0;
    while let Some(e) = b.wait_edge(t.now())? {
        acct.on_edge(&e);
        n += 1;
    }
    Ok(n)
}

/// Wait until `deadline` for an edge to `want_high`, in slices so a stop
/// request is seen; other edges are accounted and skipped.
#[inline]
pub(crate) fn wait_for<B: EdgeBackend + ?Sized, T: Timebase>(
    b: &mut B,
    t: &T,
    acct: &mut EdgeAccount,
    want_high: bool,
    deadline: u64,
    stop: &StopFlag,
) -> io::Result<Option<Edge>> {
    loop {
        let now = t.now();
        let slice = deadline.min(now.saturating_add(WAIT_SLICE_NS));
        match b.wait_edge(slice)? {
            Some(e) => {
                acct.on_edge(&e);
                if e.rising == want_high {
                    return Ok(Some(e));
                }
                acct.r.unexpected_edges += 1;
            }
            None => {
                if slice >= deadline || stop.is_set() {
                    return Ok(None);
                }
            }
        }
    }
}

/// Overruns: periods that passed while an edge was handled. Moves `next`
/// past `now` on the original grid and returns how many periods were skipped.
#[inline(always)]
pub(crate) fn advance(next: &mut u64, period: u64, now: u64) -> u64 {
    *next += period;
    if now >= *next {
        let skipped = (now - *next) / period + 1;
        *next += skipped * period;
        skipped
    } else {
        0
    }
}

/// The recorders of one role, in the order of its series.
pub(crate) struct Recorders(pub Vec<Recorder>);

impl Recorders {
    fn finish(&mut self) {
        for r in &mut self.0 {
            r.finish();
        }
    }
}

/// Series names of a role: the recorders are created in this order.
fn series_names(role: Role, kernel_ts: bool) -> &'static [&'static str] {
    match (role, kernel_ts) {
        (Role::Loopback, true) => &["irq", "user", "wake"],
        (Role::Loopback, false) => &["user"],
        (Role::Target, true) => &["kernel_to_user", "user_to_reply"],
        (Role::Target, false) => &["user_to_reply"],
        (Role::Host, _) => &["roundtrip"],
    }
}

/// Open the backend the configuration names (before memory is locked).
fn open_backend(cfg: &IrqConfig) -> Result<Box<dyn EdgeBackend + Send>> {
    let clock = cfg.clock_id();
    Ok(match cfg.backend {
        BackendArg::Gpio => Box::new(gpio::GpioBackend::open(cfg)?),
        BackendArg::Serial => Box::new(serial::SerialBackend::open(cfg)?),
        BackendArg::Sim => {
            let sc = cfg.sim.unwrap_or(SimConfig {
                delay_ns: 20_000,
                jitter_ns: 10_000,
                seed: 1,
                lose_every: None,
            });
            let mode = match cfg.role {
                Role::Target => sim::Mode::Source {
                    period_ns: cfg.period_ns.unwrap_or(DEFAULT_PERIOD_NS),
                },
                _ => sim::Mode::Echo,
            };
            Box::new(sim::SimBackend::new(clock, mode, sc))
        }
    })
}

/// The one-line edge account printed after the summary.
pub fn account_line(role: Role, r: &EdgeReport) -> String {
    let seq = match (r.first_seqno, r.last_seqno) {
        (Some(a), Some(b)) => format!(
            " (seqno {a}..{b}{})",
            if r.lost_events == 0 {
                ", continuous"
            } else {
                ""
            }
        ),
        _ => String::new(),
    };
    let head = match role {
        Role::Target => format!("edges: {} seen, {} answered", r.edges_seen, r.answered),
        _ => format!(
            "edges: {} driven, {} seen, {} missed",
            r.edges_driven, r.edges_seen, r.missed
        ),
    };
    let mut s = format!(
        "{head}, {} lost{seq}, {} repeated, {} unexpected, {} timestamp errors",
        r.lost_events, r.repeated_edges, r.unexpected_edges, r.timestamp_errors
    );
    if r.missed_idle > 0 {
        s.push_str(&format!(", {} returns to idle missed", r.missed_idle));
    }
    s
}

/// Put the edge account into the result's details.
fn fill_details(result: &mut RunResult, role: Role, r: &EdgeReport) {
    if let Ok(serde_json::Value::Object(map)) = serde_json::to_value(r) {
        for (k, v) in map {
            if k != "error" {
                result.details.insert(k, v);
            }
        }
    }
    result.details.insert(
        "seqno_continuous".into(),
        serde_json::Value::Bool(r.lost_events == 0 && r.first_seqno.is_some()),
    );
    if role == Role::Target {
        // rtlat's own share of the response: event read -> reply written.
        let avg = |name: &str| {
            result
                .threads
                .iter()
                .find(|t| t.name == name)
                .filter(|t| t.summary.samples > 0)
                .map(|t| t.summary.avg_ns as f64)
        };
        if let (Some(k2u), Some(u2r)) = (avg("kernel_to_user"), avg("user_to_reply")) {
            if k2u + u2r > 0.0 {
                let share = u2r / (k2u + u2r);
                result
                    .details
                    .insert("own_share_of_response".into(), serde_json::json!(share));
            }
        }
    }
    let problems = r.missed + r.missed_idle + r.lost_events + r.repeated_edges;
    if problems > 0 {
        result.notes.push(format!(
            "{} edge(s) missed, {} event(s) lost by the kernel, {} repeated edge(s): see details",
            r.missed + r.missed_idle,
            r.lost_events,
            r.repeated_edges
        ));
    }
    if let Some(e) = &r.error {
        result.end_reason = crate::result::EndReason::Error;
        result.notes.push(format!("the run ended on an error: {e}"));
    }
}

/// Run `rtlat irq` end to end; returns the exit code.
pub fn run(args: &IrqArgs, command_line: Vec<String>) -> Result<Outcome> {
    let (role, a) = match &args.role {
        RoleCommand::Loopback(a) => (Role::Loopback, a),
        RoleCommand::Target(a) => (Role::Target, a),
        RoleCommand::Host(a) => (Role::Host, a),
    };
    let cfg = IrqConfig::from_args(role, a)?;
    let mut backend = open_backend(&cfg)?;
    let kernel_ts = backend.kernel_timestamps();
    let start_level = backend
        .input_level()
        .map_err(|e| Error::env(format!("cannot read the watched line: {e}")))?;
    let clock = cfg.clock_id();

    let mut notes = Vec::new();
    if !kernel_ts {
        notes.push(
            "no kernel event timestamps on this backend: only user-space times are measured".into(),
        );
    }
    if cfg.event_clock == EventClockArg::Hte {
        notes.push("HTE timestamps are compared with CLOCK_MONOTONIC: samples outside [write, read] are counted as timestamp_errors".into());
    }
    let only = match cfg.measured() {
        Measured::Both => None,
        Measured::Rising => Some("rising"),
        Measured::Falling => Some("falling"),
    };
    if let Some(kind) = only {
        notes.push(format!(
            "only {kind} edges are measured; the opposite edge returns the wire to idle unmeasured"
        ));
    }

    let mut spec = RunSpec::new(
        "irq",
        a.output.output_config(),
        cfg.control.clone(),
        command_line,
        cfg.rt.clone(),
    );
    spec.config = serde_json::to_value(&cfg).unwrap_or_default();
    spec.tuning = cfg.rt.tuning(vec![cfg.cpu], vec![0]);
    spec.notes = notes;
    spec.details.insert("role".into(), role.name().into());
    let mut spec = spec.with_loads(a.load.plan()?)?;

    let report: Arc<Mutex<Option<EdgeReport>>> = Arc::new(Mutex::new(None));
    let names = series_names(role, kernel_ts);
    let mut channels = Vec::with_capacity(names.len());
    let mut recs = Vec::with_capacity(names.len());
    for name in names {
        let (rec, col) = recorder::pair(cfg.control.interval_ns);
        channels.push(Channel::new(
            (*name).into(),
            cfg.cpu,
            col,
            cfg.control.interval_ns,
        ));
        recs.push(rec);
    }
    let mut recs = Recorders(recs);
    let out = Arc::clone(&report);
    let plan_cfg = cfg.clone();
    let worker = Worker {
        name: format!("rtlat-irq-{}", role.name()),
        cpu: cfg.cpu,
        body: Box::new(move |start: u64, stop: &StopFlag| -> WorkerEnd {
            let plan = Plan {
                start,
                period: plan_cfg.period_ns.unwrap_or(DEFAULT_PERIOD_NS),
                end: plan_cfg
                    .control
                    .duration_ns
                    .map(|d| start.saturating_add(d))
                    .unwrap_or(u64::MAX),
                count: plan_cfg.control.loops.unwrap_or(u64::MAX),
                timeout: plan_cfg.timeout_ns.unwrap_or(DEFAULT_TIMEOUT_NS),
                measured: plan_cfg.measured(),
            };
            let mut acct = EdgeAccount::default();
            acct.set_level(start_level);
            let mut time = RealTime(clock);
            let res = backend.begin(start).and_then(|()| match role {
                Role::Loopback => loopback::measure(
                    backend.as_mut(),
                    &mut time,
                    &plan,
                    &mut recs,
                    &mut acct,
                    stop,
                ),
                Role::Target => target::measure(
                    backend.as_mut(),
                    &mut time,
                    &plan,
                    &mut recs,
                    &mut acct,
                    stop,
                ),
                Role::Host => host::measure(
                    backend.as_mut(),
                    &mut time,
                    &plan,
                    &mut recs,
                    &mut acct,
                    stop,
                ),
            });
            recs.finish();
            if let Err(e) = res {
                acct.r.error = Some(format!("edge backend failed during the run: {e}"));
            }
            if let Ok(mut g) = out.lock() {
                *g = Some(acct.r);
            }
            WorkerEnd { brk: None }
        }),
    };
    let fin = Arc::clone(&report);
    spec.finish = Some(Box::new(move |result: &mut RunResult| {
        if let Some(r) = fin.lock().ok().and_then(|g| g.clone()) {
            fill_details(result, role, &r);
        }
    }));
    let outcome = engine::execute(spec, channels, vec![worker], clock)?;
    let r = report
        .lock()
        .ok()
        .and_then(|g| g.clone())
        .unwrap_or_default();
    println!("{}", account_line(role, &r));
    if let Some(e) = r.error {
        return Ok(Outcome::EnvironmentFailed(e));
    }
    Ok(outcome.outcome)
}

#[cfg(test)]
pub(crate) mod testing {
    //! A scripted wire in virtual time for the role loops' unit tests.
    use super::*;
    use std::cell::Cell;
    use std::collections::VecDeque;
    use std::rc::Rc;

    #[derive(Clone, Default)]
    pub struct VClock(pub Rc<Cell<u64>>);

    impl Timebase for VClock {
        fn now(&self) -> u64 {
            self.0.get()
        }
        fn sleep_until(&mut self, t: u64) {
            if t > self.0.get() {
                self.0.set(t);
            }
        }
    }

    /// A wire whose edges arrive `irq` ns after a drive and are read `wake` ns later.
    /// `drop` lists drive numbers (1-based) whose event the kernel "loses".
    pub struct Wire {
        pub clock: VClock,
        pub irq: u64,
        pub wake: u64,
        pub level: bool,
        pub drives: Vec<(u64, bool)>,
        pub pending: VecDeque<Edge>,
        pub seqno: u32,
        pub drop: Vec<usize>,
        /// Edges that arrive on their own: (time, level).
        pub incoming: VecDeque<(u64, bool)>,
        pub echo: bool,
    }

    impl Wire {
        pub fn new(clock: VClock, irq: u64, wake: u64, echo: bool) -> Self {
            Wire {
                clock,
                irq,
                wake,
                level: false,
                drives: Vec::new(),
                pending: VecDeque::new(),
                seqno: 0,
                drop: Vec::new(),
                incoming: VecDeque::new(),
                echo,
            }
        }
    }

    impl EdgeBackend for Wire {
        fn drive(&mut self, high: bool) -> io::Result<()> {
            let now = self.clock.now();
            self.drives.push((now, high));
            if self.echo && high != self.level {
                self.level = high;
                self.seqno += 1;
                if !self.drop.contains(&self.drives.len()) {
                    self.pending.push_back(Edge {
                        rising: high,
                        kernel_ns: Some(now + self.irq),
                        user_ns: now + self.irq + self.wake,
                        seqno: Some(self.seqno),
                    });
                }
            }
            Ok(())
        }
        fn wait_edge(&mut self, deadline_ns: u64) -> io::Result<Option<Edge>> {
            if let Some(&(at, high)) = self.incoming.front() {
                if at + self.irq <= deadline_ns.max(self.clock.now()) {
                    self.incoming.pop_front();
                    self.seqno += 1;
                    self.pending.push_back(Edge {
                        rising: high,
                        kernel_ns: Some(at + self.irq),
                        user_ns: at + self.irq + self.wake,
                        seqno: Some(self.seqno),
                    });
                }
            }
            match self.pending.front() {
                Some(e) if e.user_ns <= deadline_ns.max(self.clock.now()) => {
                    let e = self.pending.pop_front().expect("front");
                    self.clock.sleep_until(e.user_ns);
                    Ok(Some(e))
                }
                _ => {
                    self.clock.sleep_until(deadline_ns);
                    Ok(None)
                }
            }
        }
        fn input_level(&mut self) -> io::Result<bool> {
            Ok(false)
        }
        fn kernel_timestamps(&self) -> bool {
            true
        }
    }

    /// Drain a recorder's collector and return its totals.
    pub fn totals(
        mut col: crate::stats::Collector,
    ) -> (crate::stats::recorder::Totals, crate::stats::Histogram) {
        col.collect(&mut Vec::new());
        (*col.totals(), col.histogram().clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(rising: bool, seqno: u32, k: u64) -> Edge {
        Edge {
            rising,
            kernel_ns: Some(k),
            user_ns: k + 1,
            seqno: Some(seqno),
        }
    }

    #[test]
    fn account_counts_seqno_gaps_repeats_and_backward_timestamps() {
        let mut a = EdgeAccount::default();
        a.set_level(false);
        a.on_edge(&edge(true, 1, 10));
        a.on_edge(&edge(false, 2, 20));
        // seqno 3 and 4 lost: the kind may repeat without being "repeated".
        a.on_edge(&edge(false, 5, 30));
        // A repeat with no gap is a repeated edge.
        a.on_edge(&edge(false, 6, 40));
        // Timestamp going backwards.
        a.on_edge(&edge(true, 7, 35));
        assert_eq!(a.r.edges_seen, 5);
        assert_eq!(a.r.lost_events, 2);
        assert_eq!(a.r.repeated_edges, 1);
        assert_eq!(a.r.timestamp_errors, 1);
        assert_eq!((a.r.first_seqno, a.r.last_seqno), (Some(1), Some(7)));
    }

    #[test]
    fn seqno_wraps_without_a_false_gap() {
        let mut a = EdgeAccount::default();
        a.on_edge(&edge(true, u32::MAX, 1));
        a.on_edge(&edge(false, 0, 2));
        a.on_edge(&edge(true, 2, 3));
        // MAX -> 0 is continuous; 0 -> 2 lost one.
        assert_eq!(a.r.lost_events, 1);
        assert_eq!(a.r.repeated_edges, 0);
    }

    #[test]
    fn advance_stays_on_the_grid() {
        let mut next = 1000;
        assert_eq!(advance(&mut next, 1000, 1500), 0);
        assert_eq!(next, 2000);
        // The edge at 2000 handled until 4500: 3000 and 4000 passed; the next is 5000.
        assert_eq!(advance(&mut next, 1000, 4500), 2);
        assert_eq!(next, 5000);
    }

    #[test]
    fn rate_is_a_period() {
        assert_eq!(rate_period("1000"), Ok(1_000_000));
        assert_eq!(rate_period("2.5Hz"), Ok(400_000_000));
        assert!(rate_period("0").is_err());
        assert!(rate_period("x").is_err());
    }

    #[test]
    fn measured_edges() {
        assert!(Measured::Both.includes(true) && Measured::Both.includes(false));
        assert!(Measured::Rising.includes(true) && !Measured::Rising.includes(false));
        assert!(Measured::Falling.idle_high() && !Measured::Rising.idle_high());
    }
}
