//! `rtlat irq` options: the three roles and the options they share, and their
//! conversion into [`IrqConfig`].

use super::common::{positive_duration, MeasureArgs};
use crate::bench::irq::{
    Backend, Bias, EventClock, IrqConfig, Measured, ReplyFrom, Role, SimConfig, DEFAULT_PERIOD_NS,
    DEFAULT_TIMEOUT_NS,
};
use crate::error::Error;
use crate::remote::peer::Board;
use crate::remote::Target;
use std::path::PathBuf;

pub const IRQ_HELP: &str = "\
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
  rtlat irq target --out gpiochip0:5 --in gpiochip0:6 --reply-from kthread --policy other
                                             the kernel responder (kmod/) replies, from a kernel thread
  rtlat irq host --out GPIO5 --in GPIO6 --rate 1000 --count 100000 --policy other
  rtlat irq host --out GPIO5 --in GPIO6 --target ssh://root@board --target-arg=--out=GPIO6 --target-arg=--in=GPIO5
                                             starts (and stops) irq target on the board itself
  rtlat irq loopback --backend serial --port /dev/ttyUSB0 --out rts --in cts";

// `rtlat irq`: one of the three roles. (Not a doc comment: clap would make
// it the subcommand's about, see `cli::Command`.)
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendArg {
    /// The Linux GPIO character device (uAPI v2): kernel event timestamps and sequence numbers
    Gpio,
    /// The modem-control lines of a serial port (RTS/DTR out, CTS/DSR/DCD/RI in)
    Serial,
    /// An in-process simulated wire with a configurable delay and jitter
    Sim,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReplyFromArg {
    /// rtlat's measuring thread (the GPIO character device)
    User,
    /// The kernel responder's threaded interrupt handler (kmod/, /dev/rtlat-responder)
    Thread,
    /// A kernel thread of the responder at a SCHED_FIFO priority, woken by the handler
    Kthread,
    /// The responder's hard interrupt handler (needs a GPIO chip that cannot sleep)
    Irq,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EdgeArg {
    Rising,
    Falling,
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EventClockArg {
    /// CLOCK_MONOTONIC (default)
    Monotonic,
    /// CLOCK_REALTIME
    Realtime,
    /// The hardware timestamp engine, where the board has one
    Hte,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BiasArg {
    PullUp,
    PullDown,
    Disabled,
}

// Options shared by the three roles.
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
    /// Time between measured edges (loopback, host; target with --backend sim), at most 1s [default: 1ms]
    #[arg(long, short, value_name = "DURATION", value_parser = super::common::period, conflicts_with = "rate")]
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
    #[command(flatten)]
    pub explain: super::common::ExplainArgs,
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
    /// target: where the reply is issued from; thread, kthread and irq need the rtlat-responder kernel module (docs/irq.md)
    #[arg(long, value_enum, default_value = "user")]
    pub reply_from: ReplyFromArg,
    /// target --reply-from kthread: SCHED_FIFO priority of the kernel thread [default: 50]
    #[arg(long, value_name = "1-99", value_parser = clap::value_parser!(u32).range(1..=99))]
    pub reply_priority: Option<u32>,
    /// host: start `rtlat irq target` on this board over ssh for the run (same backend, edges and, with sim, period), stop it at the end and merge its series as target/…
    #[arg(long, value_name = "ssh://[user@]host[:port]", value_parser = Target::parse)]
    pub target: Option<Target>,
    /// An option of the board's `irq target`, e.g. `--target-arg=--out=gpiochip0:5` (its lines; repeatable)
    #[arg(
        long,
        value_name = "ARG",
        allow_hyphen_values = true,
        requires = "target"
    )]
    pub target_arg: Vec<String>,
    /// An option for ssh, e.g. `StrictHostKeyChecking=no` (passed as -o; repeatable)
    #[arg(long, value_name = "OPTION", requires = "target")]
    pub ssh_option: Vec<String>,
    /// rtlat on the board
    #[arg(
        long,
        value_name = "PATH",
        default_value = "rtlat",
        requires = "target"
    )]
    pub remote_rtlat: String,
    #[command(flatten)]
    pub common: MeasureArgs,
}

/// `--rate HZ` as a period in ns.
fn rate_period(s: &str) -> std::result::Result<u64, String> {
    let hz = crate::units::parse_decimal(s.trim().trim_end_matches("Hz").trim_end_matches("hz"))
        .ok_or_else(|| format!("'{s}' is not a rate in Hz, e.g. 1000"))?;
    if !(hz.is_finite() && (1.0..=1e9).contains(&hz)) {
        return Err(format!(
            "'{s}' is out of range: give 1 <= HZ <= 1e9 (a period of at most 1s)"
        ));
    }
    Ok(((1e9 / hz).round() as u64).max(1))
}

impl From<BackendArg> for Backend {
    fn from(a: BackendArg) -> Self {
        match a {
            BackendArg::Gpio => Backend::Gpio,
            BackendArg::Serial => Backend::Serial,
            BackendArg::Sim => Backend::Sim,
        }
    }
}

impl From<EdgeArg> for Measured {
    fn from(a: EdgeArg) -> Self {
        match a {
            EdgeArg::Rising => Measured::Rising,
            EdgeArg::Falling => Measured::Falling,
            EdgeArg::Both => Measured::Both,
        }
    }
}

impl From<EventClockArg> for EventClock {
    fn from(a: EventClockArg) -> Self {
        match a {
            EventClockArg::Monotonic => EventClock::Monotonic,
            EventClockArg::Realtime => EventClock::Realtime,
            EventClockArg::Hte => EventClock::Hte,
        }
    }
}

impl From<BiasArg> for Bias {
    fn from(a: BiasArg) -> Self {
        match a {
            BiasArg::PullUp => Bias::PullUp,
            BiasArg::PullDown => Bias::PullDown,
            BiasArg::Disabled => Bias::Disabled,
        }
    }
}

impl TryFrom<&IrqArgs> for IrqConfig {
    type Error = Error;
    fn try_from(args: &IrqArgs) -> Result<Self, Error> {
        let (role, a) = match &args.role {
            RoleCommand::Loopback(a) => (Role::Loopback, a),
            RoleCommand::Target(a) => (Role::Target, a),
            RoleCommand::Host(a) => (Role::Host, a),
        };
        validate(role, a)?;
        let sim = a.backend == BackendArg::Sim;
        let paced = role != Role::Target || sim;
        let period_ns = paced.then(|| a.period.or(a.rate).unwrap_or(DEFAULT_PERIOD_NS));
        let rt = a
            .common
            .rt
            .to_config(period_ns.unwrap_or(DEFAULT_PERIOD_NS))?;
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
            backend: a.backend.into(),
            chip: a.chip.clone(),
            out_line,
            in_line,
            port: a.port.clone(),
            edge: a.edge.into(),
            event_clock: a.event_clock.into(),
            bias: a.bias.map(Bias::from),
            debounce_ns: a.debounce,
            period_ns,
            timeout_ns: (role != Role::Target).then(|| a.timeout.unwrap_or(DEFAULT_TIMEOUT_NS)),
            cpu: a.cpu,
            explain: a.explain.worst(),
            explain_stacks: a.explain.stacks(),
            control: a.common.control(a.duration, a.count, None),
            sim: sim.then_some(SimConfig {
                delay_ns: a.sim_delay,
                jitter_ns: a.sim_jitter,
                seed: a.sim_seed,
                lose_every: a.sim_lose_every,
            }),
            reply_from: match a.reply_from {
                ReplyFromArg::User => ReplyFrom::User,
                ReplyFromArg::Thread => ReplyFrom::Thread,
                ReplyFromArg::Kthread => ReplyFrom::Kthread,
                ReplyFromArg::Irq => ReplyFrom::Irq,
            },
            reply_priority: a.reply_priority,
            target: a
                .target
                .clone()
                .map(|t| Board::new(t, a.ssh_option.clone(), a.remote_rtlat.clone())),
            target_args: a.target_arg.clone(),
            setup: a.common.setup_with(rt)?,
        })
    }
}

/// `--explain` explains the wake-up from the kernel's event timestamp
/// (CLOCK_MONOTONIC, the trace's clock) to the thread holding the event,
/// on the thread's CPU, on the board that measures it.
fn explain_fits(role: Role, a: &RoleArgs) -> Result<(), Error> {
    if !a.explain.explain {
        return Ok(());
    }
    super::common::needs_kernel_trace(Some("--explain"))?;
    let fix = match () {
        _ if role == Role::Host => "--explain explains a wake-up on the board that takes the edge: run it with irq loopback or on the target (--target-arg=--explain)",
        _ if a.reply_from != ReplyFromArg::User => "--explain explains rtlat's own wake-up: it needs --reply-from user",
        _ if a.backend == BackendArg::Serial => "--explain needs the kernel's event timestamps, which serial modem lines lack: use --backend gpio",
        _ if a.event_clock != EventClockArg::Monotonic => "--explain compares the event timestamps with the kernel's trace, on CLOCK_MONOTONIC: drop --event-clock",
        _ if a.cpu.is_none() => "--explain reads the trace of the measuring thread's CPU: pin it with --cpu N",
        _ => return Ok(()),
    };
    Err(Error::usage(fix))
}

/// The options that do not fit the role or the backend, in the order they are checked.
fn validate(role: Role, a: &RoleArgs) -> Result<(), Error> {
    let paced = role != Role::Target || a.backend == BackendArg::Sim;
    if !paced && a.period.or(a.rate).is_some() {
        return Err(Error::usage(
            "--period/--rate do not apply to a target: it answers the host's edges (drop them)",
        ));
    }
    if role != Role::Host && a.target.is_some() {
        return Err(Error::usage(
            "--target applies to irq host (it starts irq target on that board): drop it",
        ));
    }
    if role == Role::Target && a.timeout.is_some() {
        return Err(Error::usage(
            "--timeout does not apply to a target: it waits for the host's edges (drop it)",
        ));
    }
    if a.reply_from != ReplyFromArg::User {
        if role != Role::Target {
            return Err(Error::usage(
                "--reply-from applies to irq target (the board that answers): drop it",
            ));
        }
        if a.backend != BackendArg::Gpio {
            return Err(Error::usage(
                "--reply-from thread/kthread/irq answers on GPIO lines: use --backend gpio",
            ));
        }
    }
    if a.reply_priority.is_some() && a.reply_from != ReplyFromArg::Kthread {
        return Err(Error::usage(
            "--reply-priority is the kernel thread's priority: it needs --reply-from kthread",
        ));
    }
    let gpio_only = a.chip.is_some() || a.bias.is_some() || a.debounce.is_some();
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
            if gpio_only {
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
            if gpio_only || a.out_line.is_some() || a.in_line.is_some() || a.port.is_some() {
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
    explain_fits(role, a)?;
    if let (Some(o), Some(i)) = (&a.out_line, &a.in_line) {
        if o == i {
            return Err(Error::usage(
                "--out and --in name the same line: wire an output to a different input",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_is_a_period() {
        let periods = [("1000", 1_000_000), ("2.5Hz", 400_000_000)];
        crate::units::check_parses(rate_period, &periods);
        crate::units::check_refuses(rate_period, &["0", "x"]);
    }
}
