//! The step loop: each step one after the other through an [`Executor`]
//! (this machine, or a target over ssh), the manifest rewritten at every
//! change, completed steps skipped, a progress line per step.

use super::manifest::{finished, now_utc, Manifest, StepStatus};
use super::plan::Step;
use crate::error::Result;
use crate::render::describe::us_signed;
use crate::result::{EndReason, RunResult};
use crate::sys::signals::StopFlag;
use crate::units::human_duration;
use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

/// How a step's process ended.
#[derive(Debug, Default)]
pub struct StepRun {
    /// Its exit code (`None`: it did not start or was killed by a signal).
    pub code: Option<i32>,
    /// Its last error line, or why it could not run.
    pub message: Option<String>,
    /// The target cannot be reached any more: stop its remaining steps.
    pub unreachable: bool,
}

/// A step to run: its result goes to `local`; `tick` is called about once a
/// second while it runs; it is ended early (SIGINT) when `stop` is set.
pub struct Job<'a> {
    pub step: &'a Step,
    pub local: &'a Path,
    pub stop: &'a StopFlag,
    pub tick: &'a mut dyn FnMut(Duration),
}

/// Runs a step somewhere and leaves its result at `local`.
pub trait Executor {
    /// The command line recorded in the manifest.
    fn command(&self, step: &Step, local: &Path) -> Vec<String>;
    /// Run the job's step (see [`Job`]).
    fn run(&mut self, job: Job<'_>) -> StepRun;
}

/// How the suite on one board ended.
#[derive(Debug, Default)]
pub struct Ended {
    pub interrupted: bool,
    /// Why the board could not be reached any more.
    pub unreachable: Option<String>,
}

/// Progress lines, prefixed with the board when several run at once; a
/// live line (elapsed, remaining, the running worst) only on a terminal.
pub struct ProgressLines {
    pub prefix: String,
    pub live: bool,
}

impl ProgressLines {
    pub fn new(prefix: &str, may_be_live: bool) -> ProgressLines {
        ProgressLines {
            prefix: prefix.into(),
            live: may_be_live && std::io::stdout().is_terminal(),
        }
    }

    fn line(&self, i: usize, n: usize, name: &str, what: &str) {
        let text = format!("{}[{i}/{n}] {name}: {what}", self.prefix);
        if self.live {
            crate::outfile::print(&format!("\r\x1b[K{text}\n"));
        } else {
            crate::outln!("{text}");
        }
    }
}

/// The worst latency of a (possibly running) result file.
fn worst(path: &Path) -> Option<String> {
    let r = RunResult::load(path).ok()?;
    (r.total.samples > 0).then(|| format!("worst {} us", us_signed(r.total.max_ns)))
}

/// Whether the result at `path` says its run was ended by a signal.
fn ended_by_signal(path: &Path) -> bool {
    RunResult::load(path).is_ok_and(|r| r.end_reason == EndReason::Signal)
}

/// Run the steps of `m` that are not done, in order, into `dir`.
pub fn run_steps(
    dir: &Path,
    m: &mut Manifest,
    exec: &mut dyn Executor,
    stop: &StopFlag,
    progress: &ProgressLines,
) -> Result<Ended> {
    let n = m.steps.len();
    let mut ended = Ended::default();
    for i in 0..n {
        let (step, file) = (m.steps[i].step.clone(), dir.join(&m.steps[i].file));
        if m.steps[i].state == StepStatus::Done {
            progress.line(i + 1, n, &step.name, "done before, kept");
            continue;
        }
        if stop.is_set() {
            ended.interrupted = true;
            break;
        }
        {
            let s = &mut m.steps[i];
            s.command = exec.command(&step, &file);
            s.state = StepStatus::Running;
            s.started_utc = Some(now_utc());
            s.finished_utc = None;
            s.exit_code = None;
            s.message = None;
        }
        m.save(dir)?;
        let length = Duration::from_nanos(step.length_ns());
        progress.line(
            i + 1,
            n,
            &step.name,
            &format!(
                "{} ({})",
                m.steps[i].command.join(" "),
                human_duration(step.length_ns())
            ),
        );
        let start = Instant::now();
        let mut tick = |elapsed: Duration| {
            if progress.live {
                let left = length.saturating_sub(elapsed);
                let w = worst(&file).unwrap_or_default();
                crate::outfile::print(&format!(
                    "\r\x1b[K{}[{}/{n}] {}: {} elapsed, {} left {w}",
                    progress.prefix,
                    i + 1,
                    step.name,
                    human_duration(elapsed.as_nanos() as u64),
                    human_duration(left.as_nanos() as u64),
                ));
            }
        };
        let run = exec.run(Job {
            step: &step,
            local: &file,
            stop,
            tick: &mut tick,
        });
        let took = human_duration(start.elapsed().as_nanos() as u64);
        let done = finished(&file);
        let s = &mut m.steps[i];
        s.finished_utc = Some(now_utc());
        s.exit_code = run.code;
        if done {
            s.state = StepStatus::Done;
            if m.system.is_none() {
                m.system = RunResult::load(&file).ok().map(|r| r.system);
            }
            let w = worst(&file).map(|w| format!(", {w}")).unwrap_or_default();
            progress.line(i + 1, n, &step.name, &format!("done in {took}{w}"));
        } else if stop.is_set() || ended_by_signal(&file) {
            // Stopped, with what it measured so far saved: not a failure.
            s.state = StepStatus::Interrupted;
            s.message = Some("interrupted by a signal; its partial result is kept".into());
            progress.line(
                i + 1,
                n,
                &step.name,
                &format!("interrupted after {took}; run the same command again to resume"),
            );
        } else {
            let why = run.message.clone().unwrap_or_else(|| match run.code {
                Some(c) => format!("exit code {c}"),
                None => "ended by a signal".into(),
            });
            s.message = Some(why.clone());
            if step.optional && run.code == Some(3) && !run.unreachable {
                s.state = StepStatus::Skipped;
                progress.line(i + 1, n, &step.name, &format!("skipped: {why}"));
            } else {
                s.state = StepStatus::Failed;
                progress.line(i + 1, n, &step.name, &format!("failed after {took}: {why}"));
            }
        }
        m.save(dir)?;
        if run.unreachable {
            ended.unreachable = run.message;
            break;
        }
        if stop.is_set() {
            ended.interrupted = true;
            break;
        }
    }
    Ok(ended)
}
