//! The load host: a separate process that runs the loads for a benchmark (or
//! for `rtlat load`), and [`RunningLoads`], its handle in the parent.
//!
//! Protocol: the parent runs `rtlat load --serve --parent PID [--load-cpus L]
//! [--load-target A] -- SPEC` with pipes on stdin and stdout. The host writes
//! one JSON object per line: `{"event":"started","records":[..]}`, then
//! `{"event":"progress",..}` twice a second, and `{"event":"final",..}` after
//! stdin says `stop` or closes; or `{"event":"error","kind":"usage|env|io",
//! "message":".."}` if the loads cannot start.

use super::{LoadContext, LoadOptions, LoadSet, LoadSpec};
use crate::error::{Error, Outcome, Result};
use crate::sys::{self, process::Pid};
use crate::units::format_cpu_list;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the host reports progress.
pub const REPORT_EVERY: Duration = Duration::from_millis(500);
const START_TIMEOUT: Duration = Duration::from_secs(30);
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Default)]
struct State {
    records: Vec<Value>,
    started: bool,
    error: Option<Error>,
    final_records: Option<Vec<Value>>,
    stdin: Option<ChildStdin>,
    /// The host process until it is reaped: while it is here its pid, which is
    /// also its process group id, cannot be reused, so killing the group is safe.
    child: Option<Child>,
    /// How the host ended, once reaped.
    ended: Option<String>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait until `done` holds or `timeout` passes; true if it holds.
    fn wait_for(&self, timeout: Duration, done: impl Fn(&State) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = self.lock();
        while !done(&st) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            st = self
                .changed
                .wait_timeout(st, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }

    /// SIGKILL the host's whole process group unless it has been reaped.
    fn kill_group(&self) {
        let st = self.lock();
        if let Some(child) = &st.child {
            let _ = sys::process::kill_group(child.id() as Pid, libc::SIGKILL);
        }
    }
}

/// Loads running in a separate host process, started by a benchmark after its
/// real-time setup and stopped after its last sample.
pub struct RunningLoads {
    shared: Arc<Shared>,
    keeper: Option<JoinHandle<()>>,
}

/// This executable: by its path while that exists (so the host is named like
/// it), else through /proc/self/exe (the binary was replaced or deleted).
pub fn this_exe() -> PathBuf {
    match std::env::current_exe() {
        Ok(p) if p.is_file() => p,
        _ => PathBuf::from("/proc/self/exe"),
    }
}

fn error_from(kind: &str, message: String) -> Error {
    match kind {
        "usage" => Error::usage(message),
        "io" => Error::io(message),
        _ => Error::env(message),
    }
}

/// The keeper thread: parent of the host (the host dies with it, so it lives
/// until the host has ended), reader of its reports, and its reaper.
fn keep(shared: Arc<Shared>, mut cmd: Command, cpus: Vec<usize>) {
    // Threads inherit policy and affinity from their creator, the host from this thread.
    let _ = sys::sched::set_current(sys::sched::Sched::Other);
    let _ = sys::sched::confine_current(&cpus);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let mut st = shared.lock();
            st.error = Some(Error::env(format!(
                "cannot start the load process ({}): {e}",
                cmd.get_program().to_string_lossy()
            )));
            st.ended = Some("not started".into());
            shared.changed.notify_all();
            return;
        }
    };
    let stdout = child.stdout.take();
    {
        let mut st = shared.lock();
        st.stdin = child.stdin.take();
        st.child = Some(child);
    }
    if let Some(stdout) = stdout {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let records = || msg["records"].as_array().cloned().unwrap_or_default();
            let mut st = shared.lock();
            match msg["event"].as_str() {
                Some("started") => {
                    st.records = records();
                    st.started = true;
                }
                Some("progress") => st.records = records(),
                Some("final") => {
                    st.records = records();
                    st.final_records = Some(records());
                }
                Some("error") => {
                    st.error = Some(error_from(
                        msg["kind"].as_str().unwrap_or("env"),
                        msg["message"].as_str().unwrap_or("the loads failed").into(),
                    ))
                }
                _ => {}
            }
            shared.changed.notify_all();
        }
    }
    // End of output: the host and everything that inherited its stdout are gone
    // or going. Kill what may remain of the group, then reap the host.
    shared.kill_group();
    let child = shared.lock().child.take();
    let ended = match child.map(|mut c| c.wait()) {
        Some(Ok(status)) => status.to_string(),
        Some(Err(e)) => format!("cannot be waited for: {e}"),
        None => "gone".into(),
    };
    let mut st = shared.lock();
    st.stdin = None;
    st.ended = Some(ended);
    shared.changed.notify_all();
}

impl RunningLoads {
    /// Start the loads of `spec` in a load host (this executable, `load --serve`).
    /// Returns once every load has started, or with the reason none could.
    pub fn start(spec: &LoadSpec, opts: &LoadOptions) -> Result<RunningLoads> {
        Self::start_with_exe(&this_exe(), spec, opts)
    }

    /// [`RunningLoads::start`] with an explicit rtlat executable (for tests of the library).
    #[doc(hidden)]
    pub fn start_with_exe(exe: &Path, spec: &LoadSpec, opts: &LoadOptions) -> Result<RunningLoads> {
        let mut cmd = Command::new(exe);
        cmd.arg("load")
            .arg("--serve")
            .arg("--parent")
            .arg(std::process::id().to_string());
        if let Some(cpus) = &opts.cpus {
            cmd.arg("--load-cpus").arg(format_cpu_list(cpus));
        }
        if let Some(t) = &opts.target {
            cmd.arg("--load-target").arg(t.to_string());
        }
        cmd.arg("--")
            .arg(&spec.text)
            .env(super::exec::MARKER, "host")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            // Its own group: a terminal's Ctrl-C reaches the benchmark, which stops the
            // loads in order, and the whole group can be killed at once.
            .process_group(0);
        let cpus = opts
            .cpus
            .clone()
            .unwrap_or_else(crate::sysinfo::online_cpus);
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let keeper = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("rtlat-loads".into())
                .stack_size(256 << 10)
                .spawn(move || keep(shared, cmd, cpus))
                .map_err(|e| {
                    Error::env(format!("cannot start the load keeper thread: {e}")).because(e)
                })?
        };
        let loads = RunningLoads {
            shared,
            keeper: Some(keeper),
        };
        let ready = loads.shared.wait_for(START_TIMEOUT, |st| {
            st.started || st.error.is_some() || st.ended.is_some()
        });
        let failure = {
            let mut st = loads.shared.lock();
            if let Some(e) = st.error.take() {
                Some(e)
            } else if !ready {
                Some(Error::env("the loads did not start within 30 s"))
            } else if !st.started {
                Some(Error::env(format!(
                    "the load process ended at start ({})",
                    st.ended.clone().unwrap_or_default()
                )))
            } else {
                None
            }
        };
        match failure {
            Some(e) => {
                drop(loads); // stops and reaps whatever started
                Err(e)
            }
            None => Ok(loads),
        }
    }

    /// The records now (refreshed by the host twice a second).
    pub fn records(&self) -> Vec<Value> {
        let st = self.shared.lock();
        let mut records = st.records.clone();
        if st.final_records.is_none() {
            if let Some(ended) = &st.ended {
                mark_lost(&mut records, ended);
            }
        }
        records
    }

    /// True once the host process has ended (it should only end when stopped).
    pub fn has_ended(&self) -> bool {
        self.shared.lock().ended.is_some()
    }

    /// One line: each load's achieved rate (average since it started).
    pub fn rates_line(&self) -> String {
        super::rates_line_of(&self.records())
    }

    fn shutdown(&mut self) {
        let Some(keeper) = self.keeper.take() else {
            return;
        };
        {
            let mut st = self.shared.lock();
            if let Some(mut stdin) = st.stdin.take() {
                let _ = stdin.write_all(b"stop\n");
            } // dropped: end of input also means stop
        }
        let done = self.shared.wait_for(STOP_TIMEOUT, |st| {
            st.final_records.is_some() || st.ended.is_some()
        });
        if !done {
            self.shared.kill_group();
        }
        let _ = keeper.join();
    }

    /// Stop every load and wait until nothing of them is left; the final records.
    pub fn stop(mut self) -> Vec<Value> {
        self.shutdown();
        let mut st = self.shared.lock();
        match st.final_records.take() {
            Some(r) => r,
            None => {
                let ended = st.ended.clone().unwrap_or_else(|| "unknown".into());
                let mut records = std::mem::take(&mut st.records);
                mark_lost(&mut records, &ended);
                records
            }
        }
    }
}

impl Drop for RunningLoads {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The host ended without its final report: say so in every record.
fn mark_lost(records: &mut [Value], ended: &str) {
    for r in records.iter_mut() {
        if let Some(failed) = r.get_mut("failed").and_then(Value::as_array_mut) {
            let note = format!(
                "the load process ended unexpectedly ({ended}); figures are from its last report"
            );
            if !failed.iter().any(|f| f["reason"] == note.as_str()) {
                failed.push(json!({"worker": null, "what": "died", "reason": note}));
            }
        }
    }
}

fn send(out: &mut impl Write, msg: &Value) -> bool {
    writeln!(out, "{msg}").and_then(|()| out.flush()).is_ok()
}

/// The host's side: run the loads, report, stop on `stop` or end of input.
pub fn serve(spec: &LoadSpec, opts: &LoadOptions, parent: Option<u32>) -> Result<Outcome> {
    if let Some(ppid) = parent {
        sys::signals::die_with_parent().map_err(|e| {
            Error::env(format!("cannot tie the load process to its parent: {e}")).because(e)
        })?;
        // The parent may have died before the prctl took effect.
        if std::os::unix::process::parent_id() != ppid {
            return Ok(Outcome::Success);
        }
    }
    sys::process::set_thread_name(c"rtlat-loads");
    let mut out = std::io::stdout().lock();
    let fail = |out: &mut std::io::StdoutLock<'_>, e: Error| {
        send(
            out,
            &json!({"event": "error", "kind": e.kind().name(), "message": e.to_string()}),
        );
        Ok(Outcome::Reported(e.kind()))
    };
    // Loads never run at real-time priority, and stay on their CPUs; every thread
    // and child inherits both from this one.
    if let Err(e) = sys::sched::set_current(sys::sched::Sched::Other) {
        return fail(
            &mut out,
            Error::env(format!("cannot set SCHED_OTHER for the loads: {e}")),
        );
    }
    let cpus = opts
        .cpus
        .clone()
        .unwrap_or_else(crate::sysinfo::online_cpus);
    if let Err(e) = sys::sched::confine_current(&cpus) {
        return fail(
            &mut out,
            Error::env(format!(
                "cannot confine the loads to CPU(s) {}: {e}",
                format_cpu_list(&cpus)
            )),
        );
    }
    let ctx = LoadContext {
        cpus: opts.cpus.clone(),
        target: opts.target,
    };
    let mut set = match LoadSet::start(spec, &ctx) {
        Ok(s) => s,
        Err(e) => return fail(&mut out, e),
    };
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::Builder::new()
        .name("ld-control".into())
        .spawn(move || {
            let stdin = std::io::stdin();
            let mut line = String::new();
            loop {
                line.clear();
                match stdin.lock().read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if line.trim() == "stop" => break,
                    Ok(_) => {}
                }
            }
            let _ = tx.send(());
        })
        .map_err(|e| Error::env(format!("cannot start the load control thread: {e}")).because(e))?;
    let mut alive = send(
        &mut out,
        &json!({"event": "started", "records": set.records()}),
    );
    while alive {
        match rx.recv_timeout(REPORT_EVERY) {
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                alive = send(
                    &mut out,
                    &json!({"event": "progress", "records": set.records()}),
                );
            }
            _ => break,
        }
    }
    let records = set.stop();
    send(&mut out, &json!({"event": "final", "records": records}));
    Ok(Outcome::Success)
}
