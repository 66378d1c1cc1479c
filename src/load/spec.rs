//! The load spec: `exec:2,memory:32M,net:4MB/s`.
//!
//! Loads are separated by commas; each is a name followed by `:`-separated
//! arguments. An argument is `key=value` or a bare value whose form says what
//! it is: a count (`2`: workers, groups or threads), a size (`32M`), a rate
//! (`4MB/s`), a duration (`100us`) or the word `flood`. `cmd=` takes the rest
//! of its load (it may contain `:` but not `,`).
//!
//! Sizes and rates: `K`, `M`, `G` and `KiB`, `MiB`, `GiB` are powers of 1024;
//! `KB`, `MB`, `GB` are powers of 1000 (so `4MB/s` is 4 000 000 bytes/s).

use crate::error::{Error, Result};
use serde_json::{json, Map, Value};
use std::path::PathBuf;

pub const NAMES: &str = "exec, hackbench, memory, cpu, io, net, timers";

/// A parsed load spec: the loads in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadSpec {
    /// The spec as the user wrote it.
    pub text: String,
    pub items: Vec<LoadItem>,
}

/// One load of a spec and the text it came from (`memory:32M`).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadItem {
    pub token: String,
    pub kind: LoadKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LoadKind {
    Exec(ExecParams),
    Hackbench(HackbenchParams),
    Memory(MemoryParams),
    Cpu(CpuParams),
    Io(IoParams),
    Net(NetParams),
    Timers(TimersParams),
}

/// `exec[:N][:cmd=COMMAND]`: N workers each running COMMAND in a loop.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecParams {
    pub workers: usize,
    /// Program and arguments (split on white space) [default: `ls /bin`].
    pub command: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ipc {
    Socket,
    Pipe,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskMode {
    Process,
    Thread,
}

/// `hackbench[:GROUPS][:fds=N][:size=BYTES][:ipc=socket|pipe][:mode=process|thread]`.
#[derive(Debug, Clone, PartialEq)]
pub struct HackbenchParams {
    pub groups: usize,
    /// Senders and receivers per group (rt-tests `-f`).
    pub fds: usize,
    /// Message size in bytes (rt-tests `-s`).
    pub message: usize,
    pub ipc: Ipc,
    pub mode: TaskMode,
}

/// `memory[:N][:SIZE][:stride=BYTES]`: N workers, each over its own SIZE working set.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryParams {
    pub workers: usize,
    pub size: u64,
    pub stride: u64,
}

/// `cpu[:N]` [default: one worker per load CPU].
#[derive(Debug, Clone, PartialEq)]
pub struct CpuParams {
    pub workers: Option<usize>,
}

/// `io[:N][:SIZE][:block=SIZE][:dir=PATH]`: N workers writing and fsyncing a file bounded to SIZE.
#[derive(Debug, Clone, PartialEq)]
pub struct IoParams {
    pub workers: usize,
    pub size: u64,
    pub block: u64,
    pub dir: Option<PathBuf>,
}

/// `net[:RATE|flood][:payload=BYTES]`.
#[derive(Debug, Clone, PartialEq)]
pub struct NetParams {
    /// Bytes per second; `None` is flood (as fast as possible).
    pub rate: Option<u64>,
    pub payload: usize,
}

/// `timers[:N][:PERIOD]`: N threads, each woken every PERIOD.
#[derive(Debug, Clone, PartialEq)]
pub struct TimersParams {
    pub threads: usize,
    pub period_ns: u64,
}

pub const DEFAULT_EXEC_COMMAND: &str = "ls /bin";
pub const DEFAULT_MEMORY_SIZE: u64 = 32 << 20;
pub const DEFAULT_STRIDE: u64 = 4096 + 64;
pub const DEFAULT_IO_SIZE: u64 = 64 << 20;
pub const DEFAULT_IO_BLOCK: u64 = 64 << 10;
pub const DEFAULT_NET_RATE: u64 = 4_000_000;
pub const DEFAULT_PAYLOAD: usize = 1024;
pub const DEFAULT_TIMER_THREADS: usize = 8;
pub const DEFAULT_TIMER_PERIOD_NS: u64 = 100_000;
const MAX_WORKERS: usize = 4096;

impl LoadKind {
    pub fn name(&self) -> &'static str {
        match self {
            LoadKind::Exec(_) => "exec",
            LoadKind::Hackbench(_) => "hackbench",
            LoadKind::Memory(_) => "memory",
            LoadKind::Cpu(_) => "cpu",
            LoadKind::Io(_) => "io",
            LoadKind::Net(_) => "net",
            LoadKind::Timers(_) => "timers",
        }
    }

    /// Every parameter, defaults included, for the result.
    pub fn params(&self) -> Map<String, Value> {
        let v = match self {
            LoadKind::Exec(p) => json!({"workers": p.workers, "command": p.command.join(" ")}),
            LoadKind::Hackbench(p) => json!({
                "groups": p.groups, "fds": p.fds, "message_bytes": p.message,
                "ipc": match p.ipc { Ipc::Socket => "socket", Ipc::Pipe => "pipe" },
                "mode": match p.mode { TaskMode::Process => "process", TaskMode::Thread => "thread" },
            }),
            LoadKind::Memory(p) => {
                json!({"workers": p.workers, "size_bytes": p.size, "stride_bytes": p.stride})
            }
            LoadKind::Cpu(p) => json!({"workers": p.workers}),
            LoadKind::Io(p) => json!({
                "workers": p.workers, "size_bytes": p.size, "block_bytes": p.block,
                "dir": p.dir.as_ref().map(|d| d.display().to_string()),
            }),
            LoadKind::Net(p) => json!({
                "mode": if p.rate.is_some() { "rate" } else { "flood" },
                "bytes_per_s": p.rate, "payload_bytes": p.payload,
            }),
            LoadKind::Timers(p) => json!({"threads": p.threads, "period_ns": p.period_ns}),
        };
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }
}

/// Parse a spec such as `exec:2,memory:32M,net:4MB/s`; errors name the offending token.
pub fn parse_spec(spec: &str) -> Result<LoadSpec> {
    let text = spec.trim();
    if text.is_empty() {
        return Err(Error::usage(format!(
            "empty load spec; name one or more loads, e.g. exec:2,memory:32M (loads: {NAMES})"
        )));
    }
    let mut items = Vec::new();
    for token in text.split(',') {
        let token = token.trim();
        if token.is_empty() {
            return Err(Error::usage(format!(
                "load spec '{text}': an empty load between commas"
            )));
        }
        let kind =
            parse_item(token).map_err(|e| Error::usage(format!("bad load '{token}': {e}")))?;
        items.push(LoadItem {
            token: token.to_string(),
            kind,
        });
    }
    Ok(LoadSpec {
        text: text.to_string(),
        items,
    })
}

/// A bare argument, classified by its form.
enum Arg<'a> {
    Count(u64),
    Size(u64),
    Rate(u64),
    Duration(u64),
    Flood,
    Key(&'a str, &'a str),
}

fn classify(arg: &str) -> std::result::Result<Arg<'_>, String> {
    if let Some((k, v)) = arg.split_once('=') {
        return Ok(Arg::Key(k.trim(), v.trim()));
    }
    if arg.eq_ignore_ascii_case("flood") {
        return Ok(Arg::Flood);
    }
    if !arg.is_empty() && arg.bytes().all(|b| b.is_ascii_digit()) {
        return arg
            .parse()
            .map(Arg::Count)
            .map_err(|_| format!("'{arg}' is too large"));
    }
    if let Some(r) = arg.strip_suffix("/s") {
        return parse_size(r).map(Arg::Rate);
    }
    if let Ok(s) = parse_size(arg) {
        return Ok(Arg::Size(s));
    }
    if let Ok(d) = crate::units::parse_duration_ns(arg) {
        return Ok(Arg::Duration(d));
    }
    Err(String::new())
}

/// A size: a number and a unit (B, K, KB, KiB, M, MB, MiB, G, GB, GiB); a bare number is bytes.
pub fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || format!("'{t}' is not a size such as 4096, 64K or 32M");
    if num.is_empty() || num.matches('.').count() > 1 {
        return Err(bad());
    }
    let scale: f64 = match unit {
        "" | "B" => 1.0,
        "K" | "k" | "KiB" => 1024.0,
        "KB" | "kB" => 1e3,
        "M" | "MiB" => 1024.0 * 1024.0,
        "MB" => 1e6,
        "G" | "GiB" => 1024.0 * 1024.0 * 1024.0,
        "GB" => 1e9,
        _ => return Err(bad()),
    };
    let v: f64 = num.parse().map_err(|_| bad())?;
    let bytes = (v * scale).round();
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!("'{t}' is too large"));
    }
    Ok(bytes as u64)
}

fn count(v: u64, what: &str, max: usize) -> std::result::Result<usize, String> {
    if v == 0 {
        return Err(format!("the {what} must be at least 1"));
    }
    if v > max as u64 {
        return Err(format!("{v} {what} is too many (at most {max})"));
    }
    Ok(v as usize)
}

fn key_count(k: &str, v: &str, max: usize) -> std::result::Result<usize, String> {
    let n: u64 = v
        .parse()
        .map_err(|_| format!("{k}='{v}' is not a whole number"))?;
    count(n, k, max)
}

fn key_size(k: &str, v: &str) -> std::result::Result<u64, String> {
    parse_size(v).map_err(|e| format!("{k}: {e}"))
}

/// Assign once: the same parameter given twice is an error.
fn set<T>(slot: &mut Option<T>, v: T, what: &str) -> std::result::Result<(), String> {
    if slot.is_some() {
        return Err(format!("the {what} is given twice"));
    }
    *slot = Some(v);
    Ok(())
}

fn parse_item(token: &str) -> std::result::Result<LoadKind, String> {
    let (name, rest) = match token.split_once(':') {
        Some((n, r)) => (n.trim(), Some(r)),
        None => (token, None),
    };
    let name = name.to_ascii_lowercase();
    let mut args: Vec<&str> = Vec::new();
    let mut command: Option<String> = None;
    if let Some(mut rest) = rest {
        loop {
            if let Some(cmd) = rest.trim_start().strip_prefix("cmd=") {
                command = Some(cmd.trim().to_string());
                break;
            }
            match rest.split_once(':') {
                Some((a, r)) => {
                    args.push(a.trim());
                    rest = r;
                }
                None => {
                    args.push(rest.trim());
                    break;
                }
            }
        }
    }
    if command.is_some() && name != "exec" {
        return Err("cmd= applies to exec only".into());
    }
    let mut workers: Option<usize> = None;
    let mut size: Option<u64> = None;
    let mut rate: Option<Option<u64>> = None;
    let mut duration: Option<u64> = None;
    let mut keys: Vec<(&str, &str)> = Vec::new();
    let (worker_word, allows_size, allows_rate, allows_duration, example) = match name.as_str() {
        "exec" => (
            "worker count",
            false,
            false,
            false,
            "exec:2 or exec:2:cmd=ls /bin",
        ),
        "hackbench" => (
            "group count",
            false,
            false,
            false,
            "hackbench:4 or hackbench:4:fds=10",
        ),
        "memory" => (
            "worker count",
            true,
            false,
            false,
            "memory:2, memory:32M or memory:2:64M",
        ),
        "cpu" => ("worker count", false, false, false, "cpu:2"),
        "io" => (
            "worker count",
            true,
            false,
            false,
            "io:1, io:1:16M or io:1:block=4K",
        ),
        "net" => ("", false, true, false, "net:4MB/s or net:flood"),
        "timers" => (
            "thread count",
            false,
            false,
            true,
            "timers:8 or timers:8:50us",
        ),
        "" => return Err(format!("no load name; the loads are {NAMES}")),
        _ => return Err(format!("unknown load '{name}'; the loads are {NAMES}")),
    };
    for a in &args {
        if a.is_empty() {
            return Err(format!("an empty argument (examples: {example})"));
        }
        let what_is_allowed = || {
            let mut forms = Vec::new();
            if !worker_word.is_empty() {
                forms.push(format!("a {worker_word}"));
            }
            if allows_size {
                forms.push("a size".to_string());
            }
            if allows_rate {
                forms.push("a rate such as 4MB/s".to_string());
                forms.push("'flood'".to_string());
            }
            if allows_duration {
                forms.push("a period".to_string());
            }
            forms.push("a key=value parameter".to_string());
            let last = forms.pop().unwrap_or_default();
            let forms = if forms.is_empty() {
                last
            } else {
                format!("{} or {last}", forms.join(", "))
            };
            format!("'{a}' is not {forms} (examples: {example})")
        };
        match classify(a) {
            Ok(Arg::Key(k, v)) => keys.push((k, v)),
            Ok(Arg::Count(n)) if !worker_word.is_empty() => set(
                &mut workers,
                count(n, worker_word, MAX_WORKERS)?,
                worker_word,
            )?,
            Ok(Arg::Size(s)) if allows_size => set(&mut size, s, "size")?,
            Ok(Arg::Rate(r)) if allows_rate => {
                if r == 0 {
                    return Err("the rate must be above 0 bytes/s (or use 'flood')".into());
                }
                set(&mut rate, Some(r), "rate")?
            }
            Ok(Arg::Flood) if allows_rate => set(&mut rate, None, "rate")?,
            Ok(Arg::Duration(d)) if allows_duration => set(&mut duration, d, "period")?,
            _ => return Err(what_is_allowed()),
        }
    }
    let unknown_key =
        |k: &str, known: &str| format!("unknown parameter '{k}' (for {name}: {known})");
    Ok(match name.as_str() {
        "exec" => {
            for (k, v) in keys {
                match k {
                    "workers" => set(&mut workers, key_count(k, v, MAX_WORKERS)?, worker_word)?,
                    _ => return Err(unknown_key(k, "workers, cmd")),
                }
            }
            let command: Vec<String> = command
                .as_deref()
                .unwrap_or(DEFAULT_EXEC_COMMAND)
                .split_whitespace()
                .map(str::to_string)
                .collect();
            if command.is_empty() {
                return Err("cmd= is empty; give a command such as cmd=ls /bin".into());
            }
            if super::exec::resolve(&command[0]).is_none() {
                return Err(format!(
                    "'{}' is not an executable file or a command in PATH; give cmd=/full/path ARGS",
                    command[0]
                ));
            }
            LoadKind::Exec(ExecParams {
                workers: workers.unwrap_or(1),
                command,
            })
        }
        "hackbench" => {
            let (mut fds, mut message, mut ipc, mut mode) = (None, None, None, None);
            for (k, v) in keys {
                match k {
                    "groups" => set(&mut workers, key_count(k, v, 1000)?, worker_word)?,
                    "fds" => set(&mut fds, key_count(k, v, 1000)?, k)?,
                    "size" => {
                        let s = key_size(k, v)?;
                        if s == 0 || s > crate::sys::process::MAX_MESSAGE as u64 {
                            return Err(format!("size={v}: messages are 1 byte to 64K"));
                        }
                        set(&mut message, s as usize, k)?
                    }
                    "ipc" => match v {
                        "socket" => set(&mut ipc, Ipc::Socket, k)?,
                        "pipe" => set(&mut ipc, Ipc::Pipe, k)?,
                        _ => return Err(format!("ipc='{v}': use ipc=socket or ipc=pipe")),
                    },
                    "mode" => match v {
                        "process" => set(&mut mode, TaskMode::Process, k)?,
                        "thread" => set(&mut mode, TaskMode::Thread, k)?,
                        _ => return Err(format!("mode='{v}': use mode=process or mode=thread")),
                    },
                    _ => return Err(unknown_key(k, "groups, fds, size, ipc, mode")),
                }
            }
            let groups = workers.unwrap_or(10);
            let fds = fds.unwrap_or(20);
            if groups * fds * 2 > 20_000 {
                return Err(format!(
                    "{groups} groups of {fds} senders and {fds} receivers is more than 20000 tasks"
                ));
            }
            LoadKind::Hackbench(HackbenchParams {
                groups,
                fds,
                message: message.unwrap_or(100),
                ipc: ipc.unwrap_or(Ipc::Socket),
                mode: mode.unwrap_or(TaskMode::Process),
            })
        }
        "memory" => {
            let mut stride = None;
            for (k, v) in keys {
                match k {
                    "workers" => set(&mut workers, key_count(k, v, MAX_WORKERS)?, worker_word)?,
                    "size" => set(&mut size, key_size(k, v)?, "size")?,
                    "stride" => set(&mut stride, key_size(k, v)?, k)?,
                    _ => return Err(unknown_key(k, "workers, size, stride")),
                }
            }
            let size = size.unwrap_or(DEFAULT_MEMORY_SIZE);
            if size < 64 << 10 {
                return Err(format!(
                    "the working set must be at least 64K (got {size} bytes)"
                ));
            }
            if size > 1 << 40 {
                return Err("the working set is larger than 1 TiB".into());
            }
            let stride = stride.unwrap_or(DEFAULT_STRIDE);
            if stride < 64 || stride >= size {
                return Err(format!(
                    "stride={stride}: the stride must be at least 64 bytes and below the size"
                ));
            }
            LoadKind::Memory(MemoryParams {
                workers: workers.unwrap_or(1),
                size,
                stride,
            })
        }
        "cpu" => {
            for (k, v) in keys {
                match k {
                    "workers" => set(&mut workers, key_count(k, v, MAX_WORKERS)?, worker_word)?,
                    _ => return Err(unknown_key(k, "workers")),
                }
            }
            LoadKind::Cpu(CpuParams { workers })
        }
        "io" => {
            let (mut block, mut dir) = (None, None);
            for (k, v) in keys {
                match k {
                    "workers" => set(&mut workers, key_count(k, v, MAX_WORKERS)?, worker_word)?,
                    "size" => set(&mut size, key_size(k, v)?, "size")?,
                    "block" => set(&mut block, key_size(k, v)?, k)?,
                    "dir" => {
                        if v.is_empty() {
                            return Err("dir= is empty".into());
                        }
                        set(&mut dir, PathBuf::from(v), k)?
                    }
                    _ => return Err(unknown_key(k, "workers, size, block, dir")),
                }
            }
            let block = block.unwrap_or(DEFAULT_IO_BLOCK);
            if !(512..=64 << 20).contains(&block) {
                return Err(format!("block={block}: a block is 512 bytes to 64M"));
            }
            let size = size.unwrap_or(DEFAULT_IO_SIZE.max(block));
            if size < block {
                return Err(format!(
                    "the file bound ({size} bytes) is smaller than a block ({block} bytes)"
                ));
            }
            LoadKind::Io(IoParams {
                workers: workers.unwrap_or(1),
                size,
                block,
                dir,
            })
        }
        "net" => {
            let mut payload = None;
            for (k, v) in keys {
                match k {
                    "rate" => {
                        if v.eq_ignore_ascii_case("flood") {
                            set(&mut rate, None, "rate")?
                        } else {
                            let r = v
                                .strip_suffix("/s")
                                .ok_or_else(|| format!("rate='{v}' is not a rate such as 4MB/s"))
                                .and_then(|r| parse_size(r).map_err(|e| format!("rate: {e}")))?;
                            if r == 0 {
                                return Err("the rate must be above 0 bytes/s".into());
                            }
                            set(&mut rate, Some(r), "rate")?
                        }
                    }
                    "payload" => {
                        let p = key_size(k, v)?;
                        if !(1..=65507).contains(&p) {
                            return Err(format!("payload={v}: a UDP payload is 1 to 65507 bytes"));
                        }
                        set(&mut payload, p as usize, k)?
                    }
                    _ => return Err(unknown_key(k, "rate, payload")),
                }
            }
            LoadKind::Net(NetParams {
                rate: rate.unwrap_or(Some(DEFAULT_NET_RATE)),
                payload: payload.unwrap_or(DEFAULT_PAYLOAD),
            })
        }
        "timers" => {
            for (k, v) in keys {
                match k {
                    "threads" | "workers" => {
                        set(&mut workers, key_count(k, v, MAX_WORKERS)?, worker_word)?
                    }
                    "period" => set(
                        &mut duration,
                        crate::units::parse_duration_ns(v).map_err(|e| format!("period: {e}"))?,
                        "period",
                    )?,
                    _ => return Err(unknown_key(k, "threads, period")),
                }
            }
            let period_ns = duration.unwrap_or(DEFAULT_TIMER_PERIOD_NS);
            if !(1_000..=1_000_000_000).contains(&period_ns) {
                return Err("the timer period must be 1us to 1s".into());
            }
            LoadKind::Timers(TimersParams {
                threads: workers.unwrap_or(DEFAULT_TIMER_THREADS),
                period_ns,
            })
        }
        _ => unreachable!("names are checked above"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(s: &str) -> LoadKind {
        let spec = parse_spec(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(spec.items.len(), 1);
        spec.items.into_iter().next().unwrap().kind
    }

    fn err(s: &str) -> String {
        match parse_spec(s) {
            Ok(v) => panic!("{s} was accepted: {v:?}"),
            Err(e) => {
                assert_eq!(e.exit_code(), crate::error::exit::USAGE);
                e.to_string()
            }
        }
    }

    #[test]
    fn the_issue_example_parses() {
        let spec = parse_spec("exec:2,memory:32M,net:4MB/s").unwrap();
        let tokens: Vec<&str> = spec.items.iter().map(|i| i.token.as_str()).collect();
        assert_eq!(tokens, ["exec:2", "memory:32M", "net:4MB/s"]);
        assert_eq!(
            spec.items[0].kind,
            LoadKind::Exec(ExecParams {
                workers: 2,
                command: vec!["ls".into(), "/bin".into()]
            })
        );
        assert_eq!(
            spec.items[1].kind,
            LoadKind::Memory(MemoryParams {
                workers: 1,
                size: 32 << 20,
                stride: DEFAULT_STRIDE
            })
        );
        assert_eq!(
            spec.items[2].kind,
            LoadKind::Net(NetParams {
                rate: Some(4_000_000),
                payload: 1024
            })
        );
    }

    #[test]
    fn units_binary_and_decimal() {
        assert_eq!(parse_size("32M").unwrap(), 32 << 20);
        assert_eq!(parse_size("32MiB").unwrap(), 32 << 20);
        assert_eq!(parse_size("32MB").unwrap(), 32_000_000);
        assert_eq!(parse_size("1.5K").unwrap(), 1536);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert!(parse_size("3X").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("1.2.3M").is_err());
        assert_eq!(
            one("net:10kB/s"),
            LoadKind::Net(NetParams {
                rate: Some(10_000),
                payload: 1024
            })
        );
        assert_eq!(
            one("net:1M/s:payload=512"),
            LoadKind::Net(NetParams {
                rate: Some(1 << 20),
                payload: 512
            })
        );
    }

    #[test]
    fn every_load_with_defaults_and_parameters() {
        assert_eq!(one("cpu"), LoadKind::Cpu(CpuParams { workers: None }));
        assert_eq!(one("CPU:3"), LoadKind::Cpu(CpuParams { workers: Some(3) }));
        assert_eq!(
            one("memory:2:64M:stride=8K"),
            LoadKind::Memory(MemoryParams {
                workers: 2,
                size: 64 << 20,
                stride: 8192
            })
        );
        assert_eq!(
            one("memory:workers=3:size=1M"),
            LoadKind::Memory(MemoryParams {
                workers: 3,
                size: 1 << 20,
                stride: DEFAULT_STRIDE
            })
        );
        assert_eq!(
            one("hackbench:4:fds=10:size=200:ipc=pipe:mode=thread"),
            LoadKind::Hackbench(HackbenchParams {
                groups: 4,
                fds: 10,
                message: 200,
                ipc: Ipc::Pipe,
                mode: TaskMode::Thread
            })
        );
        assert_eq!(
            one("hackbench"),
            LoadKind::Hackbench(HackbenchParams {
                groups: 10,
                fds: 20,
                message: 100,
                ipc: Ipc::Socket,
                mode: TaskMode::Process
            })
        );
        assert_eq!(
            one("io:2:16M:block=4K:dir=/var/tmp"),
            LoadKind::Io(IoParams {
                workers: 2,
                size: 16 << 20,
                block: 4096,
                dir: Some("/var/tmp".into())
            })
        );
        assert_eq!(
            one("net:flood"),
            LoadKind::Net(NetParams {
                rate: None,
                payload: 1024
            })
        );
        assert_eq!(
            one("net"),
            LoadKind::Net(NetParams {
                rate: Some(DEFAULT_NET_RATE),
                payload: 1024
            })
        );
        assert_eq!(
            one("timers:16:50us"),
            LoadKind::Timers(TimersParams {
                threads: 16,
                period_ns: 50_000
            })
        );
        assert_eq!(
            one("timers:period=1ms"),
            LoadKind::Timers(TimersParams {
                threads: DEFAULT_TIMER_THREADS,
                period_ns: 1_000_000
            })
        );
    }

    #[test]
    fn exec_command_takes_the_rest_of_its_load() {
        let spec = parse_spec("exec:3:cmd=/bin/echo a:b c , cpu:1").unwrap();
        let e = err("exec:cmd=/nonexistent/prog x");
        assert!(
            e.contains("'/nonexistent/prog' is not an executable"),
            "{e}"
        );
        assert_eq!(
            spec.items[0].kind,
            LoadKind::Exec(ExecParams {
                workers: 3,
                command: vec!["/bin/echo".into(), "a:b".into(), "c".into()]
            })
        );
        assert_eq!(
            spec.items[1].kind,
            LoadKind::Cpu(CpuParams { workers: Some(1) })
        );
        assert!(err("exec:cmd=").contains("cmd= is empty"));
        assert!(err("cpu:cmd=ls").contains("exec only"));
    }

    #[test]
    fn bad_specs_name_the_offending_token() {
        let e = err("foo");
        assert!(e.contains("'foo'") && e.contains("unknown load"), "{e}");
        let e = err("memory:-1");
        assert!(e.contains("'memory:-1'") && e.contains("'-1'"), "{e}");
        let e = err("net:abc");
        assert!(e.contains("'net:abc'") && e.contains("'abc'"), "{e}");
        let e = err("exec:2,cpu:0");
        assert!(e.contains("'cpu:0'") && e.contains("at least 1"), "{e}");
        let e = err("exec:2,,cpu");
        assert!(e.contains("empty load"), "{e}");
        assert!(err("").contains("empty load spec"));
        assert!(err("memory:2:3").contains("given twice"));
        assert!(err("memory:1K").contains("at least 64K"));
        assert!(err("net:0MB/s").contains("above 0"));
        assert!(err("net:4MB/s:flood").contains("given twice"));
        assert!(err("cpu:32M").contains("'32M' is not a worker count"));
        assert!(err("exec:4MB/s").contains("is not"));
        assert!(err("io:1:block=1").contains("512 bytes"));
        assert!(err("io:1:4K:block=64K").contains("smaller than a block"));
        assert!(err("hackbench:1000:fds=1000").contains("20000 tasks"));
        assert!(err("timers:8:100ns").contains("1us to 1s"));
        assert!(err("timers:8:2s").contains("1us to 1s"));
        assert!(err("net:payload=70000").contains("65507"));
        assert!(err("memory:colour=red").contains("unknown parameter 'colour'"));
        assert!(err(":2").contains("no load name"));
        assert!(err("cpu:").contains("empty argument"));
        // Every message is one line.
        for bad in ["foo", "memory:-1", "net:abc", "exec:x"] {
            assert!(!err(bad).contains('\n'));
        }
    }
}
