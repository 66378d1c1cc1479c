//! `rtlat net`: UDP latency with the send (TX) and receive (RX) paths
//! measured apart, from the kernel's socket timestamps (SO_TIMESTAMPING).
//!
//! `serve` is a real-time UDP reflector that measures its own RX latency and
//! turnaround and carries both back in each reply; `ping` sends at a fixed
//! rate and measures the round trip, its own TX and RX latencies, and counts
//! lost, duplicated, reordered and late replies. See `wire` for the datagram.

mod ping;
mod serve;
pub mod wire;

use crate::cli::{positive_duration, LoadOpts, OutputArgs, RtArgs};
use crate::error::{Error, Outcome, Result};
use std::net::{SocketAddr, ToSocketAddrs};

/// The port `serve` listens on by default; its bulk sink is on the next one.
pub const DEFAULT_PORT: u16 = 7357;

const NET_EXAMPLES: &str = "\
Examples (two hosts, or two network namespaces):
  rtlat net serve                                    reflector on 0.0.0.0:7357, bulk sink on :7358
  rtlat net ping 10.0.0.1:7357                       20000 packets at 1000/s, 64 bytes
  rtlat net ping 10.0.0.1:7357 --rate 10000/s --size 256 --json net.json
  rtlat net ping 10.0.0.1:7357 --bulk 4MB/s          with 4 MB/s of background UDP to the server's sink
  rtlat net serve --listen '[::]:7357'               IPv6 (and IPv4-mapped) clients";

#[derive(Debug, clap::Args)]
#[command(after_help = NET_EXAMPLES)]
pub struct NetArgs {
    #[command(subcommand)]
    pub command: NetCommand,
}

#[derive(Debug, clap::Subcommand)]
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
kernel RX timestamp; server_rx and turnaround come from the reply. All on
CLOCK_REALTIME, the clock of the kernel's software timestamps.
A reply that never arrives is lost; one later than --timeout is late (still
measured). Exit 3 when the server stopped answering (results are written).

Examples:
  rtlat net ping 10.0.0.1:7357
  rtlat net ping 10.0.0.1:7357 --rate 10000/s --count 100000 --json net.json
  rtlat net ping '[fd00::1]:7357' --period 500us --size 1000
  rtlat net ping 10.0.0.1:7357 --bulk 4MB/s          background UDP to 10.0.0.1:7358 meanwhile";

/// Which kernel timestamps to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimestampsArg {
    /// Kernel software timestamps (CLOCK_REALTIME; every NIC)
    Software,
    /// NIC hardware timestamps: needs hardware timestamping enabled on the interface and its clock following CLOCK_REALTIME (phc2sys)
    Hardware,
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address and port to listen on (IPv4 or [IPv6]); a bare port listens on 0.0.0.0
    #[arg(long, value_name = "ADDR:PORT", default_value = "0.0.0.0:7357")]
    pub listen: String,
    /// Datagrams longer than this are counted as oversized and ignored
    #[arg(long, value_name = "BYTES", default_value_t = wire::MAX_DATAGRAM)]
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
    /// Kernel timestamps for the server's RX latency
    #[arg(long, value_enum, default_value = "software")]
    pub timestamps: TimestampsArg,
    /// Pin the serving thread to this CPU
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<usize>,
    #[command(flatten)]
    pub rt: RtArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub load: LoadOpts,
}

#[derive(Debug, clap::Args)]
pub struct PingArgs {
    /// The server, `HOST:PORT` or `[IPv6]:PORT`
    #[arg(value_name = "HOST:PORT")]
    pub target: String,
    /// Packets per second, e.g. `1000/s` or `10k/s` [default: 1000/s]
    #[arg(long, conflicts_with = "period")]
    pub rate: Option<String>,
    /// Time between packets, e.g. `1ms` (instead of --rate)
    #[arg(long, short, value_parser = positive_duration)]
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
    /// Kernel timestamps for the TX and RX latencies
    #[arg(long, value_enum, default_value = "software")]
    pub timestamps: TimestampsArg,
    /// Pin the measuring thread to this CPU
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<usize>,
    #[command(flatten)]
    pub rt: RtArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub load: LoadOpts,
}

/// Run `rtlat net serve|ping`; returns the exit code.
pub fn run(args: &NetArgs, argv: Vec<String>) -> Result<Outcome> {
    match &args.command {
        NetCommand::Serve(a) => serve::run(a, argv),
        NetCommand::Ping(a) => ping::run(a, argv),
    }
}

/// Validate `--load` before any socket is opened, so a typo is reported as
/// such (exit 2) rather than after a socket error.
fn check_loads(l: &LoadOpts) -> Result<()> {
    l.plan().map(|_| ())
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

/// Resolve `HOST:PORT` (`[IPv6]:PORT`; a name is looked up) to one address.
pub fn resolve(text: &str, what: &str) -> Result<SocketAddr> {
    let t = text.trim();
    if let Ok(a) = t.parse::<SocketAddr>() {
        return Ok(a);
    }
    let Some((host, port)) = t.rsplit_once(':') else {
        return Err(Error::usage(format!(
            "{what} '{t}' has no port; write it as HOST:PORT, e.g. 10.0.0.1:{DEFAULT_PORT}"
        )));
    };
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
        return Err(Error::usage(format!(
            "{what} '{t}' is ambiguous: put an IPv6 address in brackets, e.g. [fd00::1]:{DEFAULT_PORT}"
        )));
    }
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if port.parse::<u16>().is_err() {
        return Err(Error::usage(format!(
            "{what} '{t}': '{port}' is not a port (0-65535); IPv6 addresses go in brackets: [fd00::1]:{DEFAULT_PORT}"
        )));
    }
    if host.is_empty() {
        return Err(Error::usage(format!(
            "{what} '{t}' has no host; write it as HOST:PORT"
        )));
    }
    let lookup = format!("{host}:{port}")
        .to_socket_addrs()
        .or_else(|_| (host, port.parse::<u16>().unwrap_or(0)).to_socket_addrs());
    match lookup {
        Ok(mut addrs) => addrs.next().ok_or_else(|| {
            Error::usage(format!(
                "{what} '{t}': the name has no address; check the host name"
            ))
        }),
        Err(e) => Err(Error::usage(format!(
            "cannot resolve {what} '{t}' ({e}); check the host name, or give an address such as 10.0.0.1:{DEFAULT_PORT}"
        ))),
    }
}

/// Parse a packet rate: `1000/s`, `10k/s`, `1000`, `2kHz`. Returns packets per second.
pub fn parse_rate(text: &str) -> std::result::Result<f64, String> {
    let t = text.trim();
    let body = t
        .strip_suffix("/s")
        .or_else(|| t.strip_suffix("Hz"))
        .unwrap_or(t);
    let (num, scale) = match body.strip_suffix('k') {
        Some(n) => (n, 1e3),
        None => (body, 1.0),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("--rate '{t}' is not a rate; write it as 1000/s or 10k/s"))?;
    let rate = v * scale;
    if !rate.is_finite() || rate <= 0.0 {
        return Err(format!("--rate '{t}' must be above zero; give e.g. 1000/s"));
    }
    if rate > 1e6 {
        return Err(format!(
            "--rate '{t}' is above 1000000/s (a 1us period); lower it"
        ));
    }
    Ok(rate)
}

/// Parse a byte rate: `4MB/s`, `500kB/s`, `1MiB/s`, `1000B/s` (`/s` optional),
/// or `max` (as fast as the socket takes it: `None`).
pub fn parse_byte_rate(text: &str) -> std::result::Result<Option<u64>, String> {
    let t = text.trim();
    if t == "max" {
        return Ok(None);
    }
    let body = t.strip_suffix("/s").unwrap_or(t);
    let split = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (num, unit) = body.split_at(split);
    let scale = match unit {
        "B" | "" => 1.0,
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1_048_576.0,
        "GiB" => 1_073_741_824.0,
        _ => {
            return Err(format!(
                "--bulk '{t}': unknown unit '{unit}'; use B, kB, MB, GB, KiB, MiB or GiB per second, e.g. 4MB/s"
            ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("--bulk '{t}' is not a rate; write it as 4MB/s or max"))?;
    let r = v * scale;
    if !r.is_finite() || r < 1.0 {
        return Err(format!(
            "--bulk '{t}' must be at least 1 byte per second; give e.g. 4MB/s"
        ));
    }
    if r > 1e12 {
        return Err(format!("--bulk '{t}' is too large"));
    }
    Ok(Some(r.round() as u64))
}

/// The result's view of a bulk report, shaped like the other loads' records.
fn bulk_record(r: &crate::load::net::BulkReport, payload: usize) -> serde_json::Value {
    serde_json::json!({
        "name": "net",
        "kind": "bulk-udp",
        "workers": 1,
        "target": r.target,
        "payload_bytes": payload,
        "requested_bytes_per_s": r.requested_bytes_per_s,
        "achieved_bytes_per_s": r.achieved_bytes_per_s,
        "achieved_rate": r.achieved_bytes_per_s / 1e6,
        "rate_unit": "MB/s",
        "bytes": r.bytes,
        "packets": r.packets,
        "send_errors": r.send_errors,
        "seconds": r.seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("1000/s"), Ok(1000.0));
        assert_eq!(parse_rate("10k/s"), Ok(10_000.0));
        assert_eq!(parse_rate("250"), Ok(250.0));
        assert_eq!(parse_rate("2kHz"), Ok(2000.0));
        assert!(parse_rate("0").unwrap_err().contains("above zero"));
        assert!(parse_rate("0/s").is_err());
        assert!(parse_rate("-5/s").is_err());
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("5M/s").is_err());
        assert!(parse_rate("2000000/s").is_err());
    }

    #[test]
    fn byte_rates() {
        assert_eq!(parse_byte_rate("4MB/s"), Ok(Some(4_000_000)));
        assert_eq!(parse_byte_rate("500kB/s"), Ok(Some(500_000)));
        assert_eq!(parse_byte_rate("1MiB/s"), Ok(Some(1_048_576)));
        assert_eq!(parse_byte_rate("1.5MB"), Ok(Some(1_500_000)));
        assert_eq!(parse_byte_rate("1000"), Ok(Some(1000)));
        assert_eq!(parse_byte_rate("max"), Ok(None));
        assert!(parse_byte_rate("0MB/s").is_err());
        assert!(parse_byte_rate("4Mb/s").unwrap_err().contains("unit"));
        assert!(parse_byte_rate("lots").is_err());
    }

    #[test]
    fn addresses() {
        assert_eq!(
            resolve("10.0.0.1:7357", "x").unwrap(),
            "10.0.0.1:7357".parse().unwrap()
        );
        assert_eq!(
            resolve("[fd00::1]:9", "x").unwrap(),
            "[fd00::1]:9".parse().unwrap()
        );
        assert_eq!(resolve("localhost:5", "x").unwrap().port(), 5);
        assert!(resolve("10.0.0.1", "x")
            .unwrap_err()
            .to_string()
            .contains("no port"));
        assert!(resolve("10.0.0.1:99999", "x")
            .unwrap_err()
            .to_string()
            .contains("not a port"));
        assert!(resolve(":80", "x").is_err());
        assert!(resolve("::1:80", "x")
            .unwrap_err()
            .to_string()
            .contains("brackets"));
    }
}
