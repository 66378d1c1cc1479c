//! Steps on this machine: each a child process of this same executable,
//! a normal run with its own exit code, killed with the suite.

use super::plan::Step;
use super::runner::{Executor, Job, StepRun};
use crate::sys::signals::{StopFlag, SIGINT};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

pub use crate::load::host::this_exe;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Poll a running child this often.
const POLL: Duration = Duration::from_millis(100);
/// Progress ticks this often.
const TICK: Duration = Duration::from_secs(1);

/// Reads a child's stderr on a thread: each line echoed with `prefix` but
/// the last, which is returned (the child's one-line error, if it failed,
/// then said once, as the step's reason; else given to [`echo`]).
pub fn watch_stderr(
    stderr: impl Read + Send + 'static,
    prefix: String,
) -> std::thread::JoinHandle<Option<String>> {
    std::thread::spawn(move || {
        let mut held: Option<String> = None;
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let line = line.trim_end().to_string();
            if line.is_empty() {
                continue;
            }
            if let Some(before) = held.replace(line) {
                eprintln!("{prefix}{before}");
            }
        }
        held
    })
}

/// Echo a line [`watch_stderr`] held back that is not a step's reason.
pub fn echo(prefix: &str, line: Option<&str>) {
    if let Some(l) = line {
        eprintln!("{prefix}{l}");
    }
}

/// Wait for `child`, ticking; SIGINT to it once `stop` is set.
pub fn wait(child: &mut Child, stop: &StopFlag, tick: &mut dyn FnMut(Duration)) -> Option<i32> {
    let start = Instant::now();
    let mut next_tick = TICK;
    let mut signalled = false;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.code(),
            Ok(None) => {}
            Err(_) => return child.wait().ok().and_then(|s| s.code()),
        }
        if stop.is_set() && !signalled {
            let _ = crate::sys::process::kill(child.id() as i32, SIGINT);
            signalled = true;
        }
        std::thread::sleep(POLL);
        if start.elapsed() >= next_tick {
            tick(start.elapsed());
            next_tick += TICK;
        }
    }
}

/// Runs steps as children of this executable.
pub struct Local {
    pub exe: PathBuf,
    /// Passed to every step as `--metrics-listen`: one endpoint, each step in turn.
    pub metrics: Option<std::net::SocketAddr>,
}

impl Local {
    fn argv(&self, step: &Step, local: &Path) -> Vec<String> {
        let mut v = step.argv(&local.display().to_string());
        if let Some(a) = self.metrics {
            v.extend(["--metrics-listen".into(), a.to_string()]);
        }
        v
    }
}

impl Executor for Local {
    fn command(&self, step: &Step, local: &Path) -> Vec<String> {
        let mut v = vec![self.exe.display().to_string()];
        v.extend(self.argv(step, local));
        v
    }

    fn run(&mut self, job: Job<'_>) -> StepRun {
        let Job {
            step,
            local,
            stop,
            tick,
        } = job;
        let mut cmd = Command::new(&self.exe);
        cmd.args(self.argv(step, local))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        crate::sys::process::die_with_spawner(&mut cmd);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                return StepRun {
                    message: Some(format!("cannot start {}: {e}", self.exe.display())),
                    ..StepRun::default()
                }
            }
        };
        let prefix = format!("  {}: ", step.name);
        let errors = child.stderr.take().map(|e| watch_stderr(e, prefix.clone()));
        let code = wait(&mut child, stop, tick);
        let message = errors.and_then(|h| h.join().ok().flatten());
        if code == Some(0) {
            echo(&prefix, message.as_deref());
        }
        StepRun {
            code,
            message: message.filter(|_| code != Some(0)),
            unreachable: false,
        }
    }
}
