//! `rtlat net serve|ping` options, and their conversion into the plain
//! configurations of [`crate::bench::net`].

use super::common::{positive_duration, ExplainArgs, MeasureArgs};
use crate::bench::net::ping::{
    default_spin, session_id, BulkPlan, Pace, Path, ONE_THREAD_MIN_PERIOD_NS,
};
use crate::bench::net::wire::{HEADER, MAX_DATAGRAM};
use crate::bench::net::{
    parse_byte_rate, parse_rate, resolve, Common, NetConfig, PingConfig, ServeConfig, Timestamps,
    DEFAULT_PORT,
};
use crate::engine::Setup;
use crate::engine::{RtConfig, RunControl};
use crate::error::{Error, Result};
use crate::load::LoadPlan;
use crate::remote::peer::Board;
use crate::remote::Target;
use crate::units::human_duration;
use clap::{Args, Subcommand, ValueEnum};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

const NET_EXAMPLES: &str = "\
Examples (two hosts, or two network namespaces):
  rtlat net serve                                    reflector on 0.0.0.0:7357, bulk sink on :7358
  rtlat net ping 10.0.0.1:7357                       20000 packets at 1000/s, 64 bytes
  rtlat net ping 10.0.0.1:7357 --rate 10000/s --size 256 --json net.json
  rtlat net ping 10.0.0.1:7357 --bulk 4MB/s          with 4 MB/s of background UDP to the server's sink
  rtlat net serve --listen '[::]:7357'               IPv6 (and IPv4-mapped) clients";

#[derive(Debug, Args)]
#[command(after_help = NET_EXAMPLES)]
pub struct NetArgs {
    #[command(subcommand)]
    pub command: NetCommand,
}

#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once
pub enum NetCommand {
    /// Real-time UDP reflector: answers `ping`, measuring its own RX latency and turnaround
    #[command(after_help = SERVE_HELP)]
    Serve(ServeArgs),
    /// Send UDP packets at a fixed rate to a `serve` and measure round trip, TX and RX latency
    #[command(after_help = PING_HELP)]
    Ping(PingArgs),
}

const SERVE_HELP: &str = "\
Every valid request is answered to its sender with a reply of exactly the
same length, carrying the server's RX latency (kernel RX timestamp -> user
receive) and turnaround (user receive -> just before the reply is sent).
Short, foreign, malformed or oversized datagrams are counted and ignored.
A bulk sink (discarding whatever it receives) listens on the next port, for
`rtlat net ping --bulk`.

Examples:
  rtlat net serve
  rtlat net serve --listen 10.0.0.1:9000 --duration 1h --json serve.json
  rtlat net serve --listen '[::]:7357' --no-sink";

const PING_HELP: &str = "\
Per packet: rtt = user receive of the reply - user time before the send;
tx = kernel TX timestamp - user time before the send; rx = user receive -
kernel RX timestamp; server_rx and turnaround come from the reply (not
with --echo: an echo service returns the request unchanged). All on
CLOCK_REALTIME, the clock of the kernel's software timestamps.
A reply that never arrives is lost; one later than --timeout is late (still
measured). Exit 3 when the server stopped answering (results are written).

Examples:
  rtlat net ping 10.0.0.1:7357
  rtlat net ping 10.0.0.1:7357 --rate 10000/s --count 100000 --json net.json
  rtlat net ping '[fd00::1]:7357' --period 500us --size 1000
  rtlat net ping 10.0.0.1:7357 --bulk 4MB/s          background UDP to 10.0.0.1:7358 meanwhile
  rtlat net ping --echo 10.0.0.9:7                   against a board's UDP echo service (RFC 862)
  rtlat net ping 10.0.0.1:7357 --no-split            round trip only, as sockperf measures
  rtlat net ping 10.0.0.1:7357 --serve-on ssh://root@10.0.0.1
                                                     starts (and stops) the server there itself

One thread sends each request and takes its reply itself (then reads the TX
timestamp), unless --overlap or a period under 50us asks for two threads (a
sender and a receiver). The result's config.path says which ran.";

/// Which kernel timestamps to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TimestampsArg {
    /// Kernel software timestamps (CLOCK_REALTIME; every NIC)
    Software,
    /// NIC hardware timestamps: needs hardware timestamping enabled on the interface and its clock following CLOCK_REALTIME (phc2sys)
    Hardware,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address and port to listen on (IPv4 or [IPv6]); a bare port listens on 0.0.0.0
    #[arg(long, value_name = "ADDR:PORT", default_value = "0.0.0.0:7357")]
    pub listen: String,
    /// Datagrams longer than this are counted as oversized and ignored
    #[arg(long, value_name = "BYTES", default_value_t = MAX_DATAGRAM)]
    pub max_size: usize,
    /// Stop after answering N requests [default: until interrupted]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Stop after this long [default: until interrupted]
    #[arg(long, short, value_parser = positive_duration)]
    pub duration: Option<u64>,
    /// Do not run the bulk sink on the next port
    #[arg(long)]
    pub no_sink: bool,
    #[command(flatten)]
    pub explain: ExplainArgs,
    #[command(flatten)]
    pub side: SideArgs,
}

#[derive(Debug, Args)]
pub struct PingArgs {
    /// The server, `HOST:PORT` or `[IPv6]:PORT`
    #[arg(value_name = "HOST:PORT")]
    pub target: String,
    /// Packets per second, e.g. `1000/s` or `10k/s` [default: 1000/s]
    #[arg(long, conflicts_with = "period")]
    pub rate: Option<String>,
    /// Time between packets, e.g. `1ms` (instead of --rate), at most 1s
    #[arg(long, short, value_parser = super::common::period)]
    pub period: Option<u64>,
    /// Datagram size in bytes (UDP payload), the 48-byte header included
    #[arg(long, default_value_t = 64)]
    pub size: usize,
    /// Packets to send [default: 20000, or unlimited with --duration]
    #[arg(long, short = 'n', value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Send for this long (e.g. 10s, 5m)
    #[arg(long, short, value_parser = positive_duration)]
    pub duration: Option<u64>,
    /// A reply later than this is late; at the end, wait this long for the last replies
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = positive_duration)]
    pub timeout: u64,
    /// Background bulk UDP during the measurement, e.g. `4MB/s` (or `max`), to the server's sink
    #[arg(long, value_name = "RATE")]
    pub bulk: Option<String>,
    /// Where the bulk traffic goes [default: the server's address, port + 1]
    #[arg(long, value_name = "HOST:PORT", requires = "bulk")]
    pub bulk_target: Option<String>,
    /// Bulk datagram size in bytes
    #[arg(long, value_name = "BYTES", default_value_t = 1400, requires = "bulk")]
    pub bulk_size: usize,
    /// Local address to send from [default: any address of the server's family]
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<String>,
    /// The server is a plain UDP echo service (RFC 862), not `rtlat net serve`: round trip and local TX/RX only
    #[arg(long)]
    pub echo: bool,
    /// Two threads, a sender and a receiver, so requests may overlap (a reply may come after the next request)
    #[arg(long)]
    pub overlap: bool,
    /// Round trip only: no kernel timestamps, no TX/RX split (as sockperf measures)
    #[arg(long, conflicts_with = "timestamps")]
    pub no_split: bool,
    /// Busy-poll the device queue up to USEC microseconds in each receive (SO_BUSY_POLL)
    #[arg(long, value_name = "USEC", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub busy_poll: Option<u32>,
    /// After each send, poll for the reply without sleeping for up to DURATION, then block (any device; costs CPU; the thread keeps its CPU from other work meanwhile); `off` always blocks [default: up to 50us or half the period on the one-thread path, off on PREEMPT_RT]
    #[arg(long, value_name = "DURATION|off", value_parser = spin_arg, conflicts_with = "overlap")]
    pub spin: Option<Spin>,
    /// How to wait for each send slot: `sleep` (the CPU is free between requests) or `spin` (read the clock until the slot, as sockperf's --mps does: the send path stays warm, the CPU is busy all the time)
    #[arg(long, value_name = "HOW", value_enum, default_value_t = PaceArg::Sleep)]
    pub pace: PaceArg,
    #[command(flatten)]
    pub explain: ExplainArgs,
    #[command(flatten)]
    pub peer: PeerArgs,
    #[command(flatten)]
    pub side: SideArgs,
}

// `--serve-on` and the ssh options that go with it.
#[derive(Debug, Args)]
pub struct PeerArgs {
    /// Start `rtlat net serve` on this board over ssh for the run (on the address and port pinged), stop it at the end and keep its result
    #[arg(long, value_name = "ssh://[user@]host[:port]", value_parser = Target::parse, conflicts_with = "echo")]
    pub serve_on: Option<Target>,
    /// An option for ssh, e.g. `StrictHostKeyChecking=no` (passed as -o; repeatable)
    #[arg(long, value_name = "OPTION", requires = "serve_on")]
    pub ssh_option: Vec<String>,
    /// rtlat on the board
    #[arg(
        long,
        value_name = "PATH",
        default_value = "rtlat",
        requires = "serve_on"
    )]
    pub remote_rtlat: String,
}

// What both sides take: the kernel timestamps, the CPU, the measuring options.
#[derive(Debug, Args)]
pub struct SideArgs {
    /// Kernel timestamps for the latencies measured on this side (serve: RX; ping: TX and RX)
    #[arg(long, value_enum, default_value = "software")]
    pub timestamps: TimestampsArg,
    /// Pin this side's measuring threads to this CPU
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<usize>,
    #[command(flatten)]
    pub common: MeasureArgs,
}

impl From<TimestampsArg> for Timestamps {
    fn from(t: TimestampsArg) -> Self {
        match t {
            TimestampsArg::Software => Timestamps::Software,
            TimestampsArg::Hardware => Timestamps::Hardware,
        }
    }
}

impl TryFrom<&NetArgs> for NetConfig {
    type Error = Error;
    fn try_from(a: &NetArgs) -> Result<Self> {
        Ok(match &a.command {
            NetCommand::Serve(s) => NetConfig::Serve(ServeConfig::try_from(s)?),
            NetCommand::Ping(p) => NetConfig::Ping(PingConfig::try_from(p)?),
        })
    }
}

/// The settings both sides have.
fn common(
    side: &SideArgs,
    rt: RtConfig,
    control: RunControl,
    loads: Option<LoadPlan>,
) -> Result<Common> {
    let output = &side.common.output;
    let forecast = output.forecast_settings()?;
    Ok(Common {
        control,
        timestamps: side.timestamps.into(),
        clock: "realtime",
        cpu: side.cpu,
        setup: Setup {
            rt,
            forecast,
            output: output.output_config(),
            loads,
        },
    })
}

fn check_cpu(cpu: Option<usize>) -> Result<()> {
    if let Some(c) = cpu {
        let online = crate::sysinfo::online_cpus();
        if !online.contains(&c) {
            return Err(Error::usage(format!(
                "--cpu {c} is not online; online CPUs are {}",
                crate::units::format_cpu_list(&online)
            )));
        }
    }
    Ok(())
}

impl TryFrom<&ServeArgs> for ServeConfig {
    type Error = Error;
    fn try_from(a: &ServeArgs) -> Result<Self> {
        // `--load` first, so a typo is reported as such (exit 2) rather than
        // after a socket error.
        let loads = a.side.common.load.plan()?;
        check_cpu(a.side.cpu)?;
        let text = a.listen.trim();
        let listen = match text.parse::<u16>() {
            Ok(port) => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port),
            Err(_) => resolve(text, "--listen")?,
        };
        if a.max_size < HEADER || a.max_size > MAX_DATAGRAM {
            return Err(Error::usage(format!(
                "--max-size {} is outside {HEADER}..={MAX_DATAGRAM} bytes",
                a.max_size
            )));
        }
        let sink = if a.no_sink {
            None
        } else if listen.port() == 0 {
            Some(SocketAddr::new(listen.ip(), 0))
        } else {
            let port = listen.port().checked_add(1).ok_or_else(|| {
                Error::usage("--listen port 65535 leaves no port for the bulk sink: choose a lower port or pass --no-sink")
            })?;
            Some(SocketAddr::new(listen.ip(), port))
        };
        explain_fits(&a.explain, a.side.cpu, false)?;
        Ok(ServeConfig {
            role: "serve",
            listen,
            sink,
            max_size: a.max_size,
            explain: a.explain.worst(),
            explain_stacks: a.explain.stacks(),
            common: common(
                &a.side,
                a.side.common.rt.to_config(1_000_000)?,
                a.side.common.control(a.duration, a.count, None),
                loads,
            )?,
        })
    }
}

/// The period and the rate of `--rate` or `--period` (default 1000/s).
/// `--pace`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PaceArg {
    Sleep,
    Spin,
}

/// `--spin`: a duration to poll for each reply, or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spin {
    For(u64),
    Off,
}

fn spin_arg(s: &str) -> std::result::Result<Spin, String> {
    if s.eq_ignore_ascii_case("off") {
        return Ok(Spin::Off);
    }
    positive_duration(s)
        .map(Spin::For)
        .map_err(|e| format!("{e}, or off to always block"))
}

fn pacing(a: &PingArgs) -> Result<(u64, f64)> {
    let (period_ns, rate_per_s) = match (&a.rate, a.period) {
        (Some(r), _) => {
            let rate = parse_rate(r).map_err(Error::usage)?;
            (((1e9 / rate).round() as u64).max(1), rate)
        }
        (None, Some(p)) => (p, 1e9 / p as f64),
        (None, None) => (1_000_000, 1000.0),
    };
    if period_ns < 1000 {
        return Err(Error::usage(
            "--period must be at least 1us (at most 1000000 packets/s)",
        ));
    }
    Ok((period_ns, rate_per_s))
}

/// The local address to send from: `--bind`, or any of the server's family.
fn bind_address(a: &PingArgs, peer: SocketAddr) -> Result<SocketAddr> {
    let Some(b) = &a.bind else {
        let any = if peer.is_ipv4() {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        } else {
            IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        };
        return Ok(SocketAddr::new(any, 0));
    };
    let ip: IpAddr = b.trim().parse().map_err(|_| {
        Error::usage(format!(
            "--bind '{b}' is not an IP address (e.g. 10.0.0.2 or fd00::2)"
        ))
    })?;
    if ip.is_ipv4() != peer.is_ipv4() {
        return Err(Error::usage(format!(
            "--bind {ip} and the server {peer} are of different IP versions"
        )));
    }
    Ok(SocketAddr::new(ip, 0))
}

/// The background traffic of `--bulk`, if asked for.
fn bulk_plan(a: &PingArgs, peer: SocketAddr) -> Result<Option<BulkPlan>> {
    let Some(text) = &a.bulk else {
        return Ok(None);
    };
    let bytes_per_s = parse_byte_rate(text).map_err(Error::usage)?;
    let target = match &a.bulk_target {
        Some(t) => resolve(t, "--bulk-target")?,
        None if a.echo => {
            return Err(Error::usage(
                "--bulk with --echo needs --bulk-target HOST:PORT (an echo service has no bulk sink: it would send the traffic back)",
            ))
        }
        None => {
            let port = peer.port().checked_add(1).ok_or_else(|| {
                Error::usage("the server port is 65535: give --bulk-target HOST:PORT")
            })?;
            SocketAddr::new(peer.ip(), port)
        }
    };
    if !(1..=MAX_DATAGRAM).contains(&a.bulk_size) {
        return Err(Error::usage(format!(
            "--bulk-size {} is outside 1..={MAX_DATAGRAM} bytes",
            a.bulk_size
        )));
    }
    Ok(Some(BulkPlan {
        target,
        bytes_per_s,
        payload: a.bulk_size,
    }))
}

/// `--explain` explains an RX series (from the kernel's RX stamp, which
/// `--no-split` turns off) on the one CPU it is measured on.
fn explain_fits(explain: &ExplainArgs, cpu: Option<usize>, no_split: bool) -> Result<()> {
    if !explain.explain {
        return Ok(());
    }
    super::common::needs_kernel_trace(Some("--explain"))?;
    if no_split {
        return Err(Error::usage(
            "--explain explains each datagram from its kernel RX timestamp, which --no-split turns off: drop --no-split",
        ));
    }
    if cpu.is_none() {
        return Err(Error::usage(
            "--explain reads the trace of the CPU the datagrams are taken on: pin it with --cpu N",
        ));
    }
    Ok(())
}

impl TryFrom<&PingArgs> for PingConfig {
    type Error = Error;
    fn try_from(a: &PingArgs) -> Result<Self> {
        // `--load` first, so a typo is reported as such (exit 2) rather than
        // after a socket error.
        let loads = a.side.common.load.plan()?;
        check_cpu(a.side.cpu)?;
        let (period_ns, rate_per_s) = pacing(a)?;
        if a.size < HEADER || a.size > MAX_DATAGRAM {
            return Err(Error::usage(format!(
                "--size {} is outside {HEADER}..={MAX_DATAGRAM} bytes (the {HEADER}-byte header up to the largest UDP datagram)",
                a.size
            )));
        }
        let peer = resolve(&a.target, "server")?;
        if peer.port() == 0 {
            return Err(Error::usage(format!(
                "server '{}': port 0 cannot be reached; give the port serve listens on (default {DEFAULT_PORT})",
                a.target
            )));
        }
        let bind = bind_address(a, peer)?;
        let bulk = bulk_plan(a, peer)?;
        let path = Path::choose(period_ns, a.overlap);
        if let Some(Spin::For(spin)) = a.spin {
            if path == Path::TwoThread {
                return Err(Error::usage(format!(
                    "--spin needs the one-thread path, and a period of {} takes two threads; give a period of at least {}",
                    human_duration(period_ns),
                    human_duration(ONE_THREAD_MIN_PERIOD_NS)
                )));
            }
            if spin > period_ns {
                return Err(Error::usage(format!(
                    "--spin {} is longer than the period {}: give at most the period",
                    human_duration(spin),
                    human_duration(period_ns)
                )));
            }
        }
        explain_fits(&a.explain, a.side.cpu, a.no_split)?;
        let rt = a.side.common.rt.to_config(period_ns)?;
        let loops = match (a.count, a.duration) {
            (None, None) => Some(20_000),
            (c, _) => c,
        };
        Ok(PingConfig {
            role: "ping",
            target: a.target.clone(),
            peer,
            bind,
            period_ns,
            rate_per_s,
            size: a.size,
            timeout_ns: a.timeout,
            session: session_id(),
            bulk,
            path,
            split: !a.no_split,
            echo: a.echo,
            explain: a.explain.worst(),
            explain_stacks: a.explain.stacks(),
            busy_poll_us: a.busy_poll,
            spin_ns: match a.spin {
                Some(Spin::For(ns)) => Some(ns),
                Some(Spin::Off) => None,
                None => default_spin(path, period_ns, crate::sysinfo::is_preempt_rt()),
            },
            spin_by_default: a.spin.is_none(),
            pace: match a.pace {
                PaceArg::Sleep => Pace::Sleep,
                PaceArg::Spin => Pace::Spin,
            },
            serve_on: a
                .peer
                .serve_on
                .clone()
                .map(|t| Board::new(t, a.peer.ssh_option.clone(), a.peer.remote_rtlat.clone())),
            common: common(
                &a.side,
                rt,
                a.side.common.control(a.duration, loops, None),
                loads,
            )?,
        })
    }
}
