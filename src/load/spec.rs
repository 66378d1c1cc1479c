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
//!
//! This file is the grammar: it splits the list, sorts each load's bare
//! arguments by form, and hands them to the load's own parser ([`Kind`], in
//! `kinds/`), which reads its keys and checks its ranges.

use super::kinds::{cpu, exec, hackbench, io, memory, net, timers};
use crate::error::{Error, Result};
use serde_json::{Map, Value};

pub use super::kinds::cpu::CpuParams;
pub use super::kinds::exec::{ExecParams, DEFAULT_EXEC_COMMAND};
pub use super::kinds::hackbench::{HackbenchParams, Ipc, TaskMode};
pub use super::kinds::io::{IoParams, DEFAULT_IO_BLOCK, DEFAULT_IO_SIZE};
pub use super::kinds::memory::{MemoryParams, DEFAULT_MEMORY_SIZE, DEFAULT_STRIDE};
pub use super::kinds::net::{NetParams, DEFAULT_NET_RATE, DEFAULT_PAYLOAD};
pub use super::kinds::timers::{TimersParams, DEFAULT_TIMER_PERIOD_NS, DEFAULT_TIMER_THREADS};

pub const NAMES: &str = "exec, hackbench, memory, cpu, io, net, timers";

/// Most workers (threads or processes) one load may ask for.
pub const MAX_WORKERS: usize = 4096;

/// Every load, with what its bare arguments may be and its parser.
const KINDS: [&Kind; 7] = [
    &exec::KIND,
    &hackbench::KIND,
    &memory::KIND,
    &cpu::KIND,
    &io::KIND,
    &net::KIND,
    &timers::KIND,
];

/// A parse error of one load: a message without the load's token (added by
/// [`parse_spec`]).
pub type Parsed<T> = std::result::Result<T, String>;

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
        match self {
            LoadKind::Exec(p) => p.to_map(),
            LoadKind::Hackbench(p) => p.to_map(),
            LoadKind::Memory(p) => p.to_map(),
            LoadKind::Cpu(p) => p.to_map(),
            LoadKind::Io(p) => p.to_map(),
            LoadKind::Net(p) => p.to_map(),
            LoadKind::Timers(p) => p.to_map(),
        }
    }
}

/// A JSON object's map (empty for anything else).
pub fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
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
        let kind = parse_item(token)
            .map_err(|e| Error::usage(format!("bad load '{token}': {e}")).because(e))?;
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

/// A load: its name, what its bare arguments may be, and its parser.
pub struct Kind {
    pub name: &'static str,
    /// What a bare count counts (`worker count` …); empty when it takes none.
    pub count: &'static str,
    /// A bare size is the load's size.
    pub size: bool,
    /// A bare rate (or `flood`) is the load's rate.
    pub rate: bool,
    /// A bare duration is the load's period.
    pub period: bool,
    /// Shown when an argument has the wrong form.
    pub example: &'static str,
    /// Reads the keys, applies the defaults and checks the ranges.
    pub parse: fn(Args<'_>) -> Parsed<LoadKind>,
}

impl Kind {
    /// A load named `name` whose bare number is its worker count, taking no
    /// bare size, rate or period.
    pub const fn new(
        name: &'static str,
        example: &'static str,
        parse: fn(Args<'_>) -> Parsed<LoadKind>,
    ) -> Kind {
        Kind {
            name,
            count: "worker count",
            size: false,
            rate: false,
            period: false,
            example,
            parse,
        }
    }

    /// The same, its bare number counting something else (empty: no count).
    pub const fn counting(self, count: &'static str) -> Kind {
        Kind { count, ..self }
    }

    /// The same, with a bare size.
    pub const fn sized(self) -> Kind {
        Kind { size: true, ..self }
    }

    /// The same, with a bare rate (or `flood`).
    pub const fn rated(self) -> Kind {
        Kind { rate: true, ..self }
    }

    /// The same, with a bare period.
    pub const fn periodic(self) -> Kind {
        Kind {
            period: true,
            ..self
        }
    }

    /// The error for a bare argument of a form this load does not take.
    fn not_a(&self, a: &str) -> String {
        let mut forms = Vec::new();
        if !self.count.is_empty() {
            forms.push(format!("a {}", self.count));
        }
        if self.size {
            forms.push("a size".to_string());
        }
        if self.rate {
            forms.push("a rate such as 4MB/s".to_string());
            forms.push("'flood'".to_string());
        }
        if self.period {
            forms.push("a period".to_string());
        }
        forms.push("a key=value parameter".to_string());
        let last = forms.pop().unwrap_or_default();
        let forms = if forms.is_empty() {
            last
        } else {
            format!("{} or {last}", forms.join(", "))
        };
        format!("'{a}' is not {forms} (examples: {})", self.example)
    }
}

/// The arguments of one load, bare ones sorted by form; the keys are left to
/// the load's parser.
pub struct Args<'a> {
    kind: &'static Kind,
    /// The bare count (workers, groups or threads).
    pub count: Option<usize>,
    pub size: Option<u64>,
    /// `Some(None)` is flood.
    pub rate: Option<Option<u64>>,
    pub period: Option<u64>,
    /// `key=value` arguments in the order given.
    pub keys: Vec<(&'a str, &'a str)>,
    /// `cmd=`: the rest of the load (exec only).
    pub command: Option<String>,
}

impl<'a> Args<'a> {
    /// The error for a key this load does not know; `known` lists its keys.
    pub fn unknown_key(&self, k: &str, known: &str) -> String {
        format!("unknown parameter '{k}' (for {}: {known})", self.kind.name)
    }

    /// The bare count given as `k=v` instead (at most `max`).
    pub fn set_count(&mut self, k: &str, v: &str, max: usize) -> Parsed<()> {
        set(&mut self.count, key_count(k, v, max)?, self.kind.count)
    }

    /// Read the keys of a load whose only key is `workers` (`known`: what the
    /// error for another key lists).
    pub fn workers_only(&mut self, known: &str) -> Parsed<()> {
        for (k, v) in std::mem::take(&mut self.keys) {
            match k {
                "workers" => self.set_count(k, v, MAX_WORKERS)?,
                _ => return Err(self.unknown_key(k, known)),
            }
        }
        Ok(())
    }

    /// Sort one bare argument (or keep a key for the load's parser).
    fn add(&mut self, a: &'a str) -> Parsed<()> {
        let kind = self.kind;
        if a.is_empty() {
            return Err(format!("an empty argument (examples: {})", kind.example));
        }
        match classify(a) {
            Ok(Arg::Key(k, v)) => self.keys.push((k, v)),
            Ok(Arg::Count(n)) if !kind.count.is_empty() => set(
                &mut self.count,
                count(n, kind.count, MAX_WORKERS)?,
                kind.count,
            )?,
            Ok(Arg::Size(s)) if kind.size => set(&mut self.size, s, "size")?,
            Ok(Arg::Rate(r)) if kind.rate => {
                if r == 0 {
                    return Err("the rate must be above 0 bytes/s (or use 'flood')".into());
                }
                set(&mut self.rate, Some(r), "rate")?
            }
            Ok(Arg::Flood) if kind.rate => set(&mut self.rate, None, "rate")?,
            Ok(Arg::Duration(d)) if kind.period => set(&mut self.period, d, "period")?,
            _ => return Err(kind.not_a(a)),
        }
        Ok(())
    }
}

/// One load: split its arguments, find its kind, sort the bare arguments,
/// and let the kind parse the rest.
fn parse_item(token: &str) -> Parsed<LoadKind> {
    let (name, rest) = match token.split_once(':') {
        Some((n, r)) => (n.trim(), Some(r)),
        None => (token, None),
    };
    let name = name.to_ascii_lowercase();
    let mut bare: Vec<&str> = Vec::new();
    let mut command: Option<String> = None;
    if let Some(mut rest) = rest {
        loop {
            if let Some(cmd) = rest.trim_start().strip_prefix("cmd=") {
                command = Some(cmd.trim().to_string());
                break;
            }
            match rest.split_once(':') {
                Some((a, r)) => {
                    bare.push(a.trim());
                    rest = r;
                }
                None => {
                    bare.push(rest.trim());
                    break;
                }
            }
        }
    }
    if command.is_some() && name != "exec" {
        return Err("cmd= applies to exec only".into());
    }
    let kind = match KINDS.iter().find(|k| k.name == name) {
        Some(k) => *k,
        None if name.is_empty() => return Err(format!("no load name; the loads are {NAMES}")),
        None => return Err(format!("unknown load '{name}'; the loads are {NAMES}")),
    };
    let mut args = Args {
        kind,
        count: None,
        size: None,
        rate: None,
        period: None,
        keys: Vec::new(),
        command,
    };
    for a in bare {
        args.add(a)?;
    }
    (kind.parse)(args)
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

fn classify(arg: &str) -> Parsed<Arg<'_>> {
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
pub fn parse_size(text: &str) -> Parsed<u64> {
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

/// A count of `what`: 1 to `max`.
pub fn count(v: u64, what: &str, max: usize) -> Parsed<usize> {
    if v == 0 {
        return Err(format!("the {what} must be at least 1"));
    }
    if v > max as u64 {
        return Err(format!("{v} {what} is too many (at most {max})"));
    }
    Ok(v as usize)
}

/// `k=v` as a count of 1 to `max`.
pub fn key_count(k: &str, v: &str, max: usize) -> Parsed<usize> {
    let n: u64 = v
        .parse()
        .map_err(|_| format!("{k}='{v}' is not a whole number"))?;
    count(n, k, max)
}

/// `k=v` as a size.
pub fn key_size(k: &str, v: &str) -> Parsed<u64> {
    parse_size(v).map_err(|e| format!("{k}: {e}"))
}

/// A range check: `Err` with the message unless `ok`.
pub fn ensure(ok: bool, message: impl FnOnce() -> String) -> Parsed<()> {
    if ok {
        Ok(())
    } else {
        Err(message())
    }
}

/// Assign once: the same parameter given twice is an error.
pub fn set<T>(slot: &mut Option<T>, v: T, what: &str) -> Parsed<()> {
    if slot.is_some() {
        return Err(format!("the {what} is given twice"));
    }
    *slot = Some(v);
    Ok(())
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
