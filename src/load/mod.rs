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

pub mod args;
mod command;
pub mod host;
pub mod kinds;
pub mod report;
pub mod spec;
pub mod worker;

use crate::error::{Error, Result};
use crate::sys::clock;
use crate::units::{format_cpu_list, parse_ranges};
use serde_json::{json, Map, Value};
use std::net::{SocketAddr, ToSocketAddrs};

pub use command::{run, LoadCommand};
pub use host::RunningLoads;
pub use kinds::{cpu, exec, hackbench, io, kspin, memory, net, timers};
pub use report::{human_rate, rates_line_of};
use spec::LoadKind;
pub use spec::{parse_spec, LoadSpec};
use worker::{PoolTotals, Reading};

/// Validated `--load-cpus` and `--load-target`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// CPUs the loads may run on (None: all online CPUs).
    pub cpus: Option<Vec<usize>>,
    /// Where the net load sends (None: rtlat's own loopback sink).
    pub target: Option<SocketAddr>,
}

/// Loads to run beside a measurement: what, where, and when they start.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    pub spec: LoadSpec,
    pub options: LoadOptions,
    /// Measure idle this long first, then start the loads (separate statistics per phase).
    pub idle_first_ns: Option<u64>,
}

impl LoadOptions {
    /// Validate `--load-cpus` and `--load-target` (exit 2 with one line when wrong).
    pub fn parse(load_cpus: Option<&str>, load_target: Option<&str>) -> Result<LoadOptions> {
        let cpus = match load_cpus.map(str::trim) {
            None => None,
            Some(text) => {
                let online = crate::sysinfo::online_cpus();
                if text == "all" {
                    Some(online)
                } else {
                    let mut cpus = parse_ranges(text).map_err(|e| {
                        Error::usage(format!("--load-cpus '{text}': {e}")).because(e)
                    })?;
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
        let target = match load_target.map(str::trim) {
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
    pub totals: PoolTotals,
    /// Bytes moved, for loads whose rate is in bytes/s.
    pub bytes: Option<u64>,
    /// Load-specific figures added to the record.
    pub extra: Map<String, Value>,
    /// When the load stopped working (CLOCK_MONOTONIC ns), if its clean-up
    /// took longer than that: the record's duration ends here.
    pub stopped_ns: Option<u64>,
}

impl Progress {
    pub fn of(totals: PoolTotals) -> Self {
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
    /// Its name, workers, rate unit and parameters.
    fn about(&self) -> About;
    /// Start the workers. An `Err` is a load that cannot run at all; a worker
    /// that fails is recorded in the progress instead.
    fn start(&mut self, ctx: &LoadContext) -> Result<()>;
    /// The figures so far, or, [`Reading::Final`], stop every worker (nothing
    /// of the load survives) and give the final figures.
    fn read(&mut self, reading: Reading) -> Progress;

    fn progress(&mut self) -> Progress {
        self.read(Reading::SoFar)
    }

    fn stop(&mut self) -> Progress {
        self.read(Reading::Final)
    }
}

/// What a load is, for its record.
#[derive(Debug, Clone, PartialEq)]
pub struct About {
    pub name: &'static str,
    /// Workers requested (threads or processes).
    pub workers: usize,
    pub unit: RateUnit,
    /// Every parameter (defaults and resolved values included).
    pub params: Map<String, Value>,
}

impl About {
    /// A load whose rate counts operations.
    pub fn ops(name: &'static str, workers: usize, params: Map<String, Value>) -> About {
        About {
            name,
            workers,
            unit: RateUnit::Ops,
            params,
        }
    }

    /// A load whose rate counts bytes.
    pub fn bytes(name: &'static str, workers: usize, params: Map<String, Value>) -> About {
        About {
            unit: RateUnit::Bytes,
            ..About::ops(name, workers, params)
        }
    }

    /// The same with one more (or a resolved) parameter.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> About {
        self.params.insert(key.into(), value.into());
        self
    }
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
        LoadKind::Kspin(p) => Box::new(kspin::KspinLoad::new(p)),
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
    let About {
        name,
        workers,
        unit,
        params,
    } = load.about();
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
        "name": name,
        "spec": token,
        "params": params,
        "workers": workers,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn options_are_validated() {
        let online = crate::sysinfo::online_cpus();
        let o = LoadOptions::parse(Some("0"), Some("127.0.0.1:9000")).unwrap();
        assert_eq!(o.cpus, Some(vec![0]));
        assert_eq!(o.target, Some("127.0.0.1:9000".parse().unwrap()));
        assert_eq!(
            LoadOptions::parse(Some("all"), None).unwrap().cpus,
            Some(online)
        );
        for (c, t) in [
            (Some("9999"), None),
            (Some("x"), None),
            (None, Some("nohostport")),
            (None, Some("127.0.0.1:0")),
        ] {
            let e = LoadOptions::parse(c, t).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{e}");
            assert!(e.to_string().starts_with("--load-"), "{e}");
        }
        assert_eq!(
            LoadOptions::parse(None, None).unwrap(),
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
}
