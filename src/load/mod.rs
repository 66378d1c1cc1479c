//! `rtlat load` and the load generators that run beside a measurement.
//!
//! A benchmark never runs loads in its own process: [`RunningLoads::start`]
//! spawns a load host (`rtlat load SPEC --serve`, by posix_spawn, so the
//! real-time process is neither forked nor copy-on-write afterwards) in its own
//! process group, at SCHED_OTHER, confined to `--load-cpus`. The host runs a
//! [`LoadSet`] (one generator per load, behind the [`Load`] trait) and reports
//! its records as JSON lines. Clean-up is guaranteed: the host and every load
//! process die with their parent (PR_SET_PDEATHSIG, checked against races),
//! the whole group is killed before the host is reaped, and the io load's
//! files never have a name.

pub mod cpu;
pub mod exec;
pub mod hackbench;
pub mod host;
pub mod io;
pub mod memory;
pub mod net;
pub mod spec;
pub mod timers;
pub mod worker;

use crate::bench::runtime::{SignalWatch, StopFlag};
use crate::cli::{positive_duration, LoadOpts};
use crate::error::{Error, Result};
use crate::sys::clock;
use crate::units::{format_cpu_list, human_duration, parse_ranges};
use serde_json::{json, Map, Value};
use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

pub use host::RunningLoads;
use spec::LoadKind;
pub use spec::{parse_spec, LoadSpec};
use worker::Totals;

const LOAD_HELP: &str = "\
SPEC is a comma-separated list of loads; each takes ':'-separated arguments,
either key=value or a bare count, size, rate or period:

  exec[:N][:cmd=COMMAND]     N workers [1] fork+exec COMMAND [ls /bin] in a loop, output to
                             /dev/null (the \"while ls\" load); cmd= takes the rest of its load
  hackbench[:G][:fds=N][:size=B][:ipc=socket|pipe][:mode=process|thread]
                             G groups [10] of N senders and N receivers [20] exchanging B-byte
                             messages [100], as rt-tests' hackbench; rate: messages/s
  memory[:N][:SIZE][:stride=B]
                             N workers [1] each over its own SIZE working set [32M], one cache
                             line per access, B bytes apart [4160: a page + a line]; rate: bytes/s
  cpu[:N]                    N computing workers [one per load CPU]; rate: rounds/s
  io[:N][:SIZE][:block=B][:dir=PATH]
                             N workers [1] rewriting a nameless file bounded to SIZE [64M] in
                             B-byte blocks [64K], fsync after each, in PATH [$TMPDIR, /var/tmp]
  net[:RATE|flood][:payload=B]
                             UDP datagrams of B bytes [1024] at RATE [4MB/s] or as fast as
                             possible, to rtlat's loopback sink or --load-target
  timers[:N][:PERIOD]        N threads [8] woken every PERIOD [100us], 1 ns timer slack

Sizes and rates: K, M, G (and KiB, MiB, GiB) are powers of 1024; KB, MB, GB are
powers of 1000 (4MB/s is 4 000 000 bytes/s). Loads run at SCHED_OTHER in their own
process group; nothing outlives rtlat, not even after SIGKILL.

Examples:
  rtlat load exec:2,memory:32M,cpu:1 --duration 5s
  rtlat load hackbench:4,net:flood --load-cpus 1
  rtlat load net:4MB/s --load-target 192.168.1.20:9000
  rtlat timer --load exec:2,memory:32M --idle-first 10m --duration 1h";

/// `rtlat load SPEC`: run loads on their own and print what they achieve.
#[derive(Debug, clap::Args)]
#[command(after_help = LOAD_HELP)]
pub struct LoadArgs {
    /// The loads, e.g. exec:2,memory:32M,net:4MB/s (see below)
    #[arg(value_name = "SPEC", allow_hyphen_values = true)]
    pub spec: String,
    /// Stop after this long (e.g. 10s, 5m) [default: until interrupted]
    #[arg(long, short, allow_hyphen_values = true, value_parser = positive_duration)]
    pub duration: Option<u64>,
    /// CPUs the loads may run on, e.g. 1-3 [default: all online CPUs]
    #[arg(long, value_name = "LIST")]
    pub load_cpus: Option<String>,
    /// Where the net load sends [default: rtlat's own loopback sink]
    #[arg(long, value_name = "HOST:PORT")]
    pub load_target: Option<String>,
    /// How often the achieved rates are printed
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = positive_duration)]
    pub interval: u64,
    /// Print only the final table
    #[arg(long, short)]
    pub quiet: bool,
    /// Also write the load records to FILE as JSON
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Run as the load host of another rtlat process (JSON lines on stdout, stops on stdin EOF)
    #[arg(long, hide = true)]
    pub serve: bool,
    /// With --serve: the pid of the process to die with
    #[arg(long, hide = true, value_name = "PID")]
    pub parent: Option<u32>,
}

/// Validated `--load-cpus` and `--load-target`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// CPUs the loads may run on (None: all online CPUs).
    pub cpus: Option<Vec<usize>>,
    /// Where the net load sends (None: rtlat's own loopback sink).
    pub target: Option<SocketAddr>,
}

/// Validate `--load-cpus` and `--load-target` (exit 2 with one line when wrong).
pub fn options_from(opts: &LoadOpts) -> Result<LoadOptions> {
    let cpus = match opts.load_cpus.as_deref().map(str::trim) {
        None => None,
        Some(text) => {
            let online = crate::sysinfo::online_cpus();
            if text == "all" {
                Some(online)
            } else {
                let mut cpus = parse_ranges(text)
                    .map_err(|e| Error::usage(format!("--load-cpus '{text}': {e}")))?;
                cpus.sort_unstable();
                cpus.dedup();
                if cpus.is_empty() {
                    return Err(Error::usage("--load-cpus is empty; give CPUs such as 1-3"));
                }
                if let Some(bad) = cpus.iter().find(|c| !online.contains(c)) {
                    return Err(Error::usage(format!(
                        "--load-cpus: CPU {bad} is not online; online CPUs are {}",
                        format_cpu_list(&online)
                    )));
                }
                Some(cpus)
            }
        }
    };
    let target = match opts.load_target.as_deref().map(str::trim) {
        None => None,
        Some(text) => {
            let bad = |why: String| {
                Error::usage(format!(
                    "--load-target '{text}': {why}; give HOST:PORT, e.g. 192.168.1.20:9000"
                ))
            };
            let addr = text
                .to_socket_addrs()
                .map_err(|e| bad(e.to_string()))?
                .next()
                .ok_or_else(|| bad("no address".into()))?;
            if addr.port() == 0 {
                return Err(bad("port 0".into()));
            }
            Some(addr)
        }
    };
    Ok(LoadOptions { cpus, target })
}

/// How a load's rate is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateUnit {
    Ops,
    Bytes,
}

impl RateUnit {
    pub fn name(self) -> &'static str {
        match self {
            RateUnit::Ops => "ops/s",
            RateUnit::Bytes => "bytes/s",
        }
    }
}

/// A load's figures at one moment.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    pub totals: Totals,
    /// Bytes moved, for loads whose rate is in bytes/s.
    pub bytes: Option<u64>,
    /// Load-specific figures added to the record.
    pub extra: Map<String, Value>,
    /// When the load stopped working (CLOCK_MONOTONIC ns), if its clean-up
    /// took longer than that: the record's duration ends here.
    pub stopped_ns: Option<u64>,
}

impl Progress {
    pub fn of(totals: Totals) -> Self {
        Progress {
            totals,
            ..Progress::default()
        }
    }
    pub fn with_bytes(mut self, bytes: u64) -> Self {
        self.bytes = Some(bytes);
        self
    }
}

/// Where loads run.
#[derive(Debug, Clone, Default)]
pub struct LoadContext {
    pub cpus: Option<Vec<usize>>,
    pub target: Option<SocketAddr>,
}

impl LoadContext {
    /// The CPUs the loads may use: `--load-cpus`, else every online CPU.
    pub fn load_cpus(&self) -> Vec<usize> {
        self.cpus
            .clone()
            .unwrap_or_else(crate::sysinfo::online_cpus)
    }
}

/// One load generator. Created from its parameters, started once, asked for
/// its progress any number of times, stopped once.
pub trait Load: Send {
    fn name(&self) -> &'static str;
    /// Every parameter (defaults and resolved values included), for the record.
    fn params(&self) -> Map<String, Value>;
    /// Workers requested (threads or processes).
    fn workers(&self) -> usize;
    fn rate_unit(&self) -> RateUnit;
    /// Start the workers. An `Err` is a load that cannot run at all; a worker
    /// that fails is recorded in the progress instead.
    fn start(&mut self, ctx: &LoadContext) -> Result<()>;
    fn progress(&mut self) -> Progress;
    /// Stop every worker (nothing of the load survives) and give the final figures.
    fn stop(&mut self) -> Progress;
}

/// The generator for one load of a spec.
pub fn generator(kind: &LoadKind) -> Box<dyn Load> {
    match kind.clone() {
        LoadKind::Exec(p) => Box::new(exec::ExecLoad::new(p)),
        LoadKind::Hackbench(p) => Box::new(hackbench::HackbenchLoad::new(p)),
        LoadKind::Memory(p) => Box::new(memory::MemoryLoad::new(p)),
        LoadKind::Cpu(p) => Box::new(cpu::CpuLoad::new(p)),
        LoadKind::Io(p) => Box::new(io::IoLoad::new(p)),
        LoadKind::Net(p) => Box::new(net::NetLoad::new(p)),
        LoadKind::Timers(p) => Box::new(timers::TimersLoad::new(p)),
    }
}

fn mono_ns() -> u64 {
    clock::now_ns(libc::CLOCK_MONOTONIC)
}

struct Entry {
    token: String,
    load: Box<dyn Load>,
    started_ns: u64,
    stopped: Option<(u64, Progress)>,
}

/// The loads of a spec running in this process (the load host's side).
pub struct LoadSet {
    entries: Vec<Entry>,
}

/// The record of one load, as stored in results.
pub fn record(token: &str, load: &dyn Load, p: &Progress, duration_ns: u64) -> Value {
    let secs = duration_ns as f64 / 1e9;
    let unit = load.rate_unit();
    let amount = match unit {
        RateUnit::Ops => p.totals.ops,
        RateUnit::Bytes => p.bytes.unwrap_or(0),
    };
    let rate = if secs > 0.0 {
        (amount as f64 / secs * 1000.0).round() / 1000.0
    } else {
        0.0
    };
    let mut r = json!({
        "name": load.name(),
        "spec": token,
        "params": load.params(),
        "workers": load.workers(),
        "started": p.totals.started,
        "failed": p.totals.failed,
        "achieved_rate": rate,
        "rate_unit": unit.name(),
        "ops": p.totals.ops,
        "cpu_time_ns": p.totals.cpu_ns,
        "duration_ns": duration_ns,
    });
    if let Value::Object(m) = &mut r {
        if let Some(b) = p.bytes {
            m.insert("bytes".into(), b.into());
        }
        for (k, v) in &p.extra {
            m.insert(k.clone(), v.clone());
        }
    }
    r
}

impl LoadSet {
    /// Start every load of `spec`; if one cannot start, the others are stopped.
    pub fn start(spec: &LoadSpec, ctx: &LoadContext) -> Result<LoadSet> {
        let mut set = LoadSet {
            entries: Vec::new(),
        };
        for item in &spec.items {
            let mut load = generator(&item.kind);
            let started_ns = mono_ns();
            load.start(ctx)?;
            set.entries.push(Entry {
                token: item.token.clone(),
                load,
                started_ns,
                stopped: None,
            });
        }
        Ok(set)
    }

    /// The records now.
    pub fn records(&mut self) -> Vec<Value> {
        let now = mono_ns();
        self.entries
            .iter_mut()
            .map(|e| match &e.stopped {
                Some((end, p)) => record(&e.token, e.load.as_ref(), p, end - e.started_ns),
                None => {
                    let p = e.load.progress();
                    record(&e.token, e.load.as_ref(), &p, now - e.started_ns)
                }
            })
            .collect()
    }

    fn stop_all(&mut self) {
        for e in self.entries.iter_mut().filter(|e| e.stopped.is_none()) {
            let p = e.load.stop();
            let end = p.stopped_ns.unwrap_or_else(mono_ns).max(e.started_ns);
            e.stopped = Some((end, p));
        }
    }

    /// Stop every load; the final records.
    pub fn stop(mut self) -> Vec<Value> {
        self.stop_all();
        self.records()
    }
}

impl Drop for LoadSet {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// A rate for people: `812 ops/s`, `1.23 Mops/s`, `4.00 MB/s` (MB = 10^6 bytes).
pub fn human_rate(rate: f64, unit: &str) -> String {
    let base = if unit == "bytes/s" { "B/s" } else { "ops/s" };
    let (scaled, prefix) = if rate >= 1e9 {
        (rate / 1e9, "G")
    } else if rate >= 1e6 {
        (rate / 1e6, "M")
    } else if rate >= 1e3 {
        (rate / 1e3, "k")
    } else {
        (rate, "")
    };
    if prefix.is_empty() {
        format!("{scaled:.1} {base}")
    } else {
        format!("{scaled:.2} {prefix}{base}")
    }
}

/// One line: each load's achieved rate, and its failures if any.
pub fn rates_line_of(records: &[Value]) -> String {
    records
        .iter()
        .map(|r| {
            let name = r["name"].as_str().unwrap_or("?");
            let rate = r["achieved_rate"].as_f64().unwrap_or(0.0);
            let unit = r["rate_unit"].as_str().unwrap_or("ops/s");
            let failed = r["failed"].as_array().map_or(0, Vec::len);
            if failed > 0 {
                format!("{name} {} ({failed} failed)", human_rate(rate, unit))
            } else {
                format!("{name} {}", human_rate(rate, unit))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn table(records: &[Value]) -> String {
    let mut rows = vec![[
        "load".to_string(),
        "spec".into(),
        "workers".into(),
        "rate".into(),
        "ops".into(),
        "cpu time".into(),
        "failed".into(),
    ]];
    for r in records {
        let failed: Vec<String> = r["failed"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|f| {
                        format!(
                            "#{} {}: {}",
                            f["worker"],
                            f["what"].as_str().unwrap_or(""),
                            f["reason"].as_str().unwrap_or("")
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        rows.push([
            r["name"].as_str().unwrap_or("?").into(),
            r["spec"].as_str().unwrap_or("").into(),
            format!("{}/{}", r["started"], r["workers"]),
            human_rate(
                r["achieved_rate"].as_f64().unwrap_or(0.0),
                r["rate_unit"].as_str().unwrap_or(""),
            ),
            r["ops"].to_string(),
            format!(
                "{:.3}s",
                r["cpu_time_ns"].as_u64().unwrap_or(0) as f64 / 1e9
            ),
            if failed.is_empty() {
                "-".into()
            } else {
                failed.join("; ")
            },
        ]);
    }
    let widths: Vec<usize> = (0..7)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                if c == 6 {
                    cell.clone()
                } else {
                    format!("{cell:<w$}", w = widths[c])
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn write_json(path: &PathBuf, doc: &Value) -> Result<()> {
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(doc).map_err(|e| Error::io(e.to_string()))?;
    std::fs::write(&tmp, text + "\n")
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| Error::io(format!("cannot write {}: {e}", path.display())))
}

/// `rtlat load SPEC`: start the loads, print their rates every interval and at the end.
pub fn run(args: &LoadArgs, argv: Vec<String>) -> Result<i32> {
    let spec = parse_spec(&args.spec)?;
    let opts = options_from(&LoadOpts {
        load_cpus: args.load_cpus.clone(),
        load_target: args.load_target.clone(),
        ..LoadOpts::default()
    })?;
    if args.serve {
        return host::serve(&spec, &opts, args.parent);
    }
    let stop = StopFlag::default();
    let watch = SignalWatch::start(stop.clone())?;
    let cpus = opts
        .cpus
        .clone()
        .unwrap_or_else(crate::sysinfo::online_cpus);
    let loads = RunningLoads::start(&spec, &opts)?;
    let t0 = mono_ns();
    let mut out = std::io::stdout();
    if !args.quiet {
        let until = args.duration.map_or("until interrupted".to_string(), |d| {
            format!("for {}", human_duration(d))
        });
        let _ = writeln!(
            out,
            "rtlat load: {} on CPU(s) {} at SCHED_OTHER, {until}",
            spec.text,
            format_cpu_list(&cpus)
        );
    }
    let mut next_print = t0 + args.interval;
    let reason = loop {
        std::thread::sleep(Duration::from_millis(50));
        let now = mono_ns();
        if let Some(sig) = watch.caught() {
            break if sig == crate::sys::signals::SIGINT {
                "SIGINT"
            } else {
                "SIGTERM"
            };
        }
        if args.duration.is_some_and(|d| now - t0 >= d) {
            break "duration reached";
        }
        if loads.has_ended() {
            break "the load process ended";
        }
        if now >= next_print {
            next_print += args.interval;
            if !args.quiet {
                let t = (now - t0) as f64 / 1e9;
                let _ = writeln!(out, "t={t:.1}s {}", loads.rates_line());
            }
        }
    };
    let elapsed = mono_ns() - t0;
    let records = loads.stop();
    drop(watch);
    let _ = write!(out, "{}", table(&records));
    let _ = writeln!(
        out,
        "rtlat load: stopped after {:.3}s ({reason}); rates are averages over each load's run",
        elapsed as f64 / 1e9
    );
    if let Some(path) = &args.json {
        let doc = json!({
            "command_line": argv,
            "spec": spec.text,
            "load_cpus": cpus,
            "duration_ns": elapsed,
            "ended_by": reason,
            "loads": records,
        });
        write_json(path, &doc)?;
    }
    Ok(crate::error::exit::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(cpus: Option<&str>, target: Option<&str>) -> LoadOpts {
        LoadOpts {
            load_cpus: cpus.map(str::to_string),
            load_target: target.map(str::to_string),
            ..LoadOpts::default()
        }
    }

    #[test]
    fn options_are_validated() {
        let online = crate::sysinfo::online_cpus();
        let o = options_from(&opts(Some("0"), Some("127.0.0.1:9000"))).unwrap();
        assert_eq!(o.cpus, Some(vec![0]));
        assert_eq!(o.target, Some("127.0.0.1:9000".parse().unwrap()));
        assert_eq!(
            options_from(&opts(Some("all"), None)).unwrap().cpus,
            Some(online)
        );
        for (c, t) in [
            (Some("9999"), None),
            (Some("x"), None),
            (None, Some("nohostport")),
            (None, Some("127.0.0.1:0")),
        ] {
            let e = options_from(&opts(c, t)).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{e}");
            assert!(e.to_string().starts_with("--load-"), "{e}");
        }
        assert_eq!(
            options_from(&opts(None, None)).unwrap(),
            LoadOptions::default()
        );
    }

    #[test]
    fn in_process_set_runs_and_records_every_field() {
        if std::env::var_os("RTLAT_TEST_EMULATOR").is_some() {
            eprintln!("skipped under qemu-user: stopping the loads outlasts the 0.3 s the wake-up bound assumes");
            return;
        }
        let spec = parse_spec("cpu:1,timers:2:1ms,memory:1:1M,io:1:1M:block=4K,net:1MB/s").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut spec = spec;
        if let LoadKind::Io(p) = &mut spec.items[3].kind {
            p.dir = Some(dir.path().to_path_buf());
        }
        let mut set = LoadSet::start(&spec, &LoadContext::default()).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(set.records().len(), 5);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let records = set.stop();
        for r in &records {
            for key in [
                "name",
                "spec",
                "params",
                "workers",
                "started",
                "failed",
                "achieved_rate",
                "rate_unit",
                "ops",
                "cpu_time_ns",
                "duration_ns",
            ] {
                assert!(r.get(key).is_some(), "{key} missing in {r}");
            }
            assert!(r["achieved_rate"].as_f64().unwrap() > 0.0, "{r}");
            assert_eq!(r["failed"].as_array().unwrap().len(), 0, "{r}");
            assert_eq!(r["started"], r["workers"], "{r}");
            assert!(r["cpu_time_ns"].as_u64().unwrap() > 0, "{r}");
        }
        assert_eq!(records[1]["rate_unit"], "ops/s");
        assert_eq!(records[2]["rate_unit"], "bytes/s");
        // Timers: 2 threads at 1 kHz for ~0.3 s.
        let wakeups = records[1]["ops"].as_u64().unwrap();
        assert!((30..=700).contains(&wakeups), "{wakeups}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn rates_are_readable() {
        assert_eq!(human_rate(812.34, "ops/s"), "812.3 ops/s");
        assert_eq!(human_rate(4_000_000.0, "bytes/s"), "4.00 MB/s");
        assert_eq!(human_rate(1_234_000.0, "ops/s"), "1.23 Mops/s");
        let line = rates_line_of(&[
            json!({"name": "exec", "achieved_rate": 10.0, "rate_unit": "ops/s", "failed": []}),
            json!({"name": "net", "achieved_rate": 2e6, "rate_unit": "bytes/s", "failed": [{"worker": 0}]}),
        ]);
        assert_eq!(line, "exec 10.0 ops/s, net 2.00 MB/s (1 failed)");
    }
}
