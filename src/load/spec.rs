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
//! arguments by form, and hands them to the load's own parser (in
//! `kinds/`), which reads its keys and checks its ranges.

use super::args::{ArgResult, Args, LoadShape};
use super::kinds::{cpu, exec, hackbench, io, kspin, memory, net, timers};
use crate::error::{Error, Result};
use serde_json::{Map, Value};

pub use super::kinds::cpu::CpuParams;
pub use super::kinds::exec::{ExecParams, DEFAULT_EXEC_COMMAND};
pub use super::kinds::hackbench::{HackbenchParams, Ipc, TaskMode};
pub use super::kinds::io::{IoParams, DEFAULT_IO_BLOCK, DEFAULT_IO_SIZE};
pub use super::kinds::kspin::{KspinParams, Off, DEFAULT_KSPIN_LEN_NS, DEFAULT_KSPIN_PERIOD_NS};
pub use super::kinds::memory::{MemoryParams, DEFAULT_MEMORY_SIZE, DEFAULT_STRIDE};
pub use super::kinds::net::{NetParams, DEFAULT_NET_RATE, DEFAULT_PAYLOAD};
pub use super::kinds::timers::{TimersParams, DEFAULT_TIMER_PERIOD_NS, DEFAULT_TIMER_THREADS};

pub const NAMES: &str = "exec, hackbench, memory, cpu, io, net, timers, kspin";

/// A load's parser: reads the keys, applies the defaults and checks the ranges.
type Parser = fn(Args<'_>) -> ArgResult<LoadKind>;

/// Every load, with what its bare arguments may be and its parser.
const KINDS: [(&LoadShape, Parser); 8] = [
    (&exec::KIND, |a| exec::parse(a).map(LoadKind::Exec)),
    (&hackbench::KIND, |a| {
        hackbench::parse(a).map(LoadKind::Hackbench)
    }),
    (&memory::KIND, |a| memory::parse(a).map(LoadKind::Memory)),
    (&cpu::KIND, |a| cpu::parse(a).map(LoadKind::Cpu)),
    (&io::KIND, |a| io::parse(a).map(LoadKind::Io)),
    (&net::KIND, |a| net::parse(a).map(LoadKind::Net)),
    (&timers::KIND, |a| timers::parse(a).map(LoadKind::Timers)),
    (&kspin::KIND, |a| kspin::parse(a).map(LoadKind::Kspin)),
];

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
    Kspin(KspinParams),
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
            LoadKind::Kspin(_) => "kspin",
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
            LoadKind::Kspin(p) => p.to_map(),
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

/// One load: split its arguments, find its kind, sort the bare arguments,
/// and let the kind parse the rest.
fn parse_item(token: &str) -> ArgResult<LoadKind> {
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
    let (kind, parse) = match KINDS.iter().find(|(k, _)| k.name == name) {
        Some(&(k, parse)) => (k, parse),
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
    parse(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::args::parse_size;

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
    fn kspin_takes_a_period_a_length_and_what_is_off() {
        let k = |workers, period_ns, len_ns, off| {
            LoadKind::Kspin(KspinParams {
                workers,
                period_ns,
                len_ns,
                off,
            })
        };
        assert_eq!(
            one("kspin"),
            k(
                1,
                DEFAULT_KSPIN_PERIOD_NS,
                DEFAULT_KSPIN_LEN_NS,
                Off::Preemption
            )
        );
        assert_eq!(
            one("kspin:50ms:len=2ms:off=irqs:2"),
            k(2, 50_000_000, 2_000_000, Off::Interrupts)
        );
        assert!(err("kspin:len=30ms").contains("len must be 1us to 20ms"));
        assert!(err("kspin:10ms:len=6ms").contains("half the period"));
        assert!(err("kspin:off=all").contains("off=preempt or off=irqs"));
        assert!(err("kspin:size=3").contains("workers, period, len, off"));
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
