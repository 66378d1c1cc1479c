//! `exec`: process creation, the "while ls; do ls /bin; done" load. Each
//! worker forks and executes a short command (default `ls /bin`, output to
//! /dev/null) and waits for it, in a loop. Children die with their worker
//! (PR_SET_PDEATHSIG) and carry `RTLAT_LOAD=exec` in their environment.

use crate::error::{Error, Result};
use crate::load::args::{object, ArgResult, Args, LoadShape};
use crate::load::worker::{Body, Pool, Reading, WorkerCtx};
use crate::load::{About, Load, LoadContext, Progress};
use crate::sys::process::{self, ExecImage, Exit, Pid};
use serde_json::{json, Map, Value};
use std::ffi::OsString;
use std::fs::File;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// `exec[:N][:cmd=COMMAND]`: N workers each running COMMAND in a loop.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecParams {
    pub workers: usize,
    /// Program and arguments (split on white space) [default: `ls /bin`].
    pub command: Vec<String>,
}

pub const DEFAULT_EXEC_COMMAND: &str = "ls /bin";

impl ExecParams {
    /// Every parameter, for the result.
    pub fn to_map(&self) -> Map<String, Value> {
        object(json!({"workers": self.workers, "command": self.command.join(" ")}))
    }
}

pub const KIND: LoadShape = LoadShape::new("exec", "exec:2 or exec:2:cmd=ls /bin");

pub fn parse(mut a: Args<'_>) -> ArgResult<ExecParams> {
    a.workers_only("workers, cmd")?;
    let command: Vec<String> = a
        .command
        .as_deref()
        .unwrap_or(DEFAULT_EXEC_COMMAND)
        .split_whitespace()
        .map(str::to_string)
        .collect();
    if command.is_empty() {
        return Err("cmd= is empty; give a command such as cmd=ls /bin".into());
    }
    if resolve(&command[0]).is_none() {
        return Err(format!(
            "'{}' is not an executable file or a command in PATH; give cmd=/full/path ARGS",
            command[0]
        ));
    }
    Ok(ExecParams {
        workers: a.count.unwrap_or(1),
        command,
    })
}

/// Environment variable set in every child of the loads (`RTLAT_LOAD=<load name>`).
pub const MARKER: &str = "RTLAT_LOAD";

pub struct ExecLoad {
    params: ExecParams,
    program: PathBuf,
    /// The child each worker waits for (0: none); a zombie until cleared.
    current: Vec<Arc<Mutex<Pid>>>,
    failed_runs: Arc<AtomicU32>,
    pool: Option<Pool>,
}

impl ExecLoad {
    pub fn new(params: ExecParams) -> Self {
        ExecLoad {
            program: PathBuf::from(&params.command[0]),
            params,
            current: Vec::new(),
            failed_runs: Arc::new(AtomicU32::new(0)),
            pool: None,
        }
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Resolve a program name as execvp(3) would.
pub fn resolve(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return is_executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

struct Run {
    image: Arc<ExecImage>,
    null: Arc<File>,
    current: Arc<Mutex<Pid>>,
    failed_runs: Arc<AtomicU32>,
    command: String,
}

fn body(ctx: &WorkerCtx, run: Run) -> std::result::Result<(), String> {
    let me = std::process::id() as Pid;
    let (mut ops, mut child_cpu, mut fork_errors) = (0u64, 0u64, 0u32);
    while !ctx.stopping() {
        let mut child = {
            // Hold the slot while forking, so a stop never misses a fresh child.
            let mut slot = run.current.lock().unwrap_or_else(|p| p.into_inner());
            if ctx.stopping() {
                break;
            }
            match process::spawn_exec(&run.image, run.null.as_fd(), me) {
                Ok(child) => {
                    *slot = child.pid();
                    child
                }
                Err(e) => {
                    drop(slot);
                    fork_errors += 1;
                    if fork_errors >= 1000 {
                        return Err(format!("fork failed 1000 times in a row: {e}"));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    continue;
                }
            }
        };
        fork_errors = 0;
        let waited = child.wait_ended();
        // The child is a zombie now: its pid cannot be reused until reaped, so a
        // stop that read it before this point signalled the right process.
        *run.current.lock().unwrap_or_else(|p| p.into_inner()) = 0;
        waited.map_err(|e| format!("waiting for a child failed: {e}"))?;
        let reaped = child
            .reap()
            .map_err(|e| format!("reaping a child failed: {e}"))?;
        child_cpu += reaped.cpu_ns;
        match reaped.exit {
            Exit::Code(0) => ops += 1,
            Exit::Code(127) if ops == 0 => {
                return Err(format!(
                    "cannot execute '{}' (exit status 127)",
                    run.command
                ))
            }
            Exit::Signal(_) if ctx.stopping() => {}
            _ => {
                ops += 1;
                run.failed_runs.fetch_add(1, Ordering::Relaxed);
            }
        }
        ctx.tally.publish(ops, child_cpu);
    }
    ctx.tally.publish(ops, child_cpu);
    Ok(())
}

impl Load for ExecLoad {
    fn about(&self) -> About {
        let program = self.program.display().to_string();
        About::ops("exec", self.params.workers, self.params.to_map()).with("program", program)
    }
    fn start(&mut self, ctx: &LoadContext) -> Result<()> {
        let name = &self.params.command[0];
        self.program = resolve(name).ok_or_else(|| {
            Error::usage(format!(
                "exec load: '{name}' is not an executable file or a command in PATH; give cmd=/full/path ARGS"
            ))
        })?;
        let mut env: Vec<(OsString, OsString)> =
            std::env::vars_os().filter(|(k, _)| k != MARKER).collect();
        env.push((MARKER.into(), "exec".into()));
        let args: Vec<OsString> = self.params.command.iter().map(OsString::from).collect();
        let image = ExecImage::new(self.program.as_os_str(), &args, &env)
            .map_err(|e| Error::usage(format!("exec load: bad command: {e}")).because(e))?;
        let image = Arc::new(image);
        let null = Arc::new(
            File::options()
                .read(true)
                .write(true)
                .open("/dev/null")
                .map_err(|e| {
                    Error::env(format!("exec load: cannot open /dev/null: {e}")).because(e)
                })?,
        );
        let mut bodies: Vec<Body> = Vec::new();
        for _ in 0..self.params.workers {
            let current = Arc::new(Mutex::new(0));
            self.current.push(Arc::clone(&current));
            let run = Run {
                image: Arc::clone(&image),
                null: Arc::clone(&null),
                current,
                failed_runs: Arc::clone(&self.failed_runs),
                command: self.params.command.join(" "),
            };
            bodies.push(Box::new(move |ctx: &WorkerCtx| body(ctx, run)));
        }
        self.pool = Some(Pool::start("ld-exec", ctx.cpus.as_deref(), bodies));
        Ok(())
    }
    fn read(&mut self, reading: Reading) -> Progress {
        if reading == Reading::Final {
            let Some(pool) = self.pool.as_mut() else {
                return Progress::default();
            };
            pool.request_stop();
            // A long command would hold its worker: end it (it is alive or a zombie, never reaped yet).
            for slot in &self.current {
                let pid = *slot.lock().unwrap_or_else(|p| p.into_inner());
                if pid > 0 {
                    let _ = process::kill(pid, libc::SIGKILL);
                }
            }
        }
        let mut p = Progress::of(Pool::read(&mut self.pool, reading));
        p.extra.insert(
            "failed_runs".into(),
            self.failed_runs.load(Ordering::Relaxed).into(),
        );
        p
    }
}
