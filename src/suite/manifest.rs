//! `suite.json`: the suite's steps, their state and the system, rewritten
//! atomically after every change so a killed suite can be resumed.

use super::plan::{Plan, Step};
use crate::error::{Error, Result};
use crate::result::{EndReason, RunResult, Tool};
use crate::sysinfo::SystemInfo;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const FILE: &str = "suite.json";
/// Held while a suite runs in the directory: `.suite.lock`.
pub const LOCK: &str = "suite";
pub const SCHEMA: &str = "rtlat-suite";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    Pending,
    Running,
    Done,
    Failed,
    /// Stopped by a signal (the suite's or the step's own) before its end.
    Interrupted,
    /// An optional step the machine cannot run (it exited 3): see `message`.
    Skipped,
}

/// One step and what became of it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepState {
    #[serde(flatten)]
    pub step: Step,
    /// The result file, relative to the suite directory: always the step's
    /// own name with `.json` ([`Step::file`]); what a manifest read back says
    /// is never followed.
    pub file: String,
    /// The command line of the step (the result file as the runner named it).
    pub command: Vec<String>,
    pub state: StepStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_utc: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_utc: Option<String>,
    /// Why a failed step failed, or why an optional one was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The manifest of one suite directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub schema: String,
    pub schema_version: u32,
    pub tool: Tool,
    pub suite: String,
    /// The board's name in comparisons: the target, else the hostname.
    pub board: String,
    /// `ssh://…` when the suite ran remotely.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The system the steps ran on, once (from the first result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<SystemInfo>,
    pub steps: Vec<StepState>,
}

/// Now as RFC 3339 UTC.
pub fn now_utc() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    crate::result::rfc3339_utc(d.as_secs(), d.subsec_nanos())
}

/// True when `path` holds a result that ran to its end.
pub fn finished(path: &Path) -> bool {
    RunResult::load(path).is_ok_and(|r| r.complete && r.end_reason != EndReason::Signal)
}

impl Manifest {
    /// Read `dir/suite.json`.
    pub fn read(dir: &Path) -> Result<Manifest> {
        let path = dir.join(FILE);
        let text = crate::input::read_json_object(&path, "an rtlat suite manifest")?;
        let mut m: Manifest = serde_json::from_str(&text).map_err(|e| {
            Error::usage(format!(
                "{} is not an rtlat suite manifest: {}",
                path.display(),
                crate::render::one_line(&e.to_string())
            ))
            .because(e)
        })?;
        if m.schema != SCHEMA {
            return Err(Error::usage(format!(
                "{} is not an rtlat suite manifest (schema '{}')",
                path.display(),
                m.schema
            )));
        }
        m.check_names()
            .map_err(|e| Error::usage(format!("{}: {e}", path.display())))?;
        for s in &mut m.steps {
            s.file = s.step.file();
        }
        Ok(m)
    }

    /// The board, suite and step names a manifest gives are bounded as
    /// those given on the command line or in a suite file are.
    fn check_names(&self) -> std::result::Result<(), String> {
        use crate::input::check_name;
        check_name("board", &self.board)?;
        check_name("suite name", &self.suite)?;
        for s in &self.steps {
            super::plan::check_step_name(&s.step.name)?;
        }
        Ok(())
    }

    /// The manifest of `dir` for `plan`: the existing one when it is the same
    /// suite (its done steps whose results are complete stay done, the rest
    /// are pending again), else a new one. Another suite's directory is refused.
    pub fn open(dir: &Path, plan: &Plan, board: &str, target: Option<&str>) -> Result<Manifest> {
        if dir.join(FILE).exists() {
            let mut m = Manifest::read(dir)?;
            let same = m.steps.len() == plan.steps.len()
                && m.steps.iter().zip(&plan.steps).all(|(a, b)| a.step == *b);
            if !same {
                return Err(Error::usage(format!(
                    "{} holds another suite ('{}' with other steps); give another --out or remove it",
                    dir.display(),
                    m.suite
                )));
            }
            for s in &mut m.steps {
                if s.state != StepStatus::Done || !finished(&dir.join(&s.file)) {
                    s.state = StepStatus::Pending;
                }
            }
            return Ok(m);
        }
        Ok(Manifest {
            schema: SCHEMA.into(),
            schema_version: 1,
            tool: Tool::this(),
            suite: plan.name.clone(),
            board: board.into(),
            target: target.map(String::from),
            system: None,
            steps: plan
                .steps
                .iter()
                .map(|s| StepState {
                    step: s.clone(),
                    file: s.file(),
                    command: Vec::new(),
                    state: StepStatus::Pending,
                    exit_code: None,
                    started_utc: None,
                    finished_utc: None,
                    message: None,
                })
                .collect(),
        })
    }

    /// Rewrite `dir/suite.json` atomically.
    pub fn save(&self, dir: &Path) -> Result<()> {
        let path: PathBuf = dir.join(FILE);
        let mut text = serde_json::to_string_pretty(self)
            .map_err(|e| Error::io(format!("cannot encode the manifest: {e}")).because(e))?;
        text.push('\n');
        crate::render::write_output(&path, text.as_bytes())
    }

    /// The steps that did not end done (or skipped, as optional steps may).
    pub fn unfinished(&self) -> Vec<&StepState> {
        self.steps
            .iter()
            .filter(|s| !matches!(s.state, StepStatus::Done | StepStatus::Skipped))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_read_back_names_each_file_after_its_step() {
        let dir = tempfile::tempdir().unwrap();
        let plan = super::super::plan::builtin("quick").unwrap();
        let mut m = Manifest::open(dir.path(), &plan, "b", None).unwrap();
        m.steps[0].file = "../../elsewhere.json".into();
        m.save(dir.path()).unwrap();
        let again = Manifest::read(dir.path()).unwrap();
        assert_eq!(again.steps[0].file, plan.steps[0].file());
        m.steps[0].step.name = "../x".into();
        m.save(dir.path()).unwrap();
        let e = Manifest::read(dir.path()).unwrap_err();
        assert!(e.message().contains("not usable as a file name"), "{e}");
    }

    #[test]
    fn a_done_step_without_a_complete_result_is_pending_again() {
        let dir = tempfile::tempdir().unwrap();
        let plan = super::super::plan::builtin("quick").unwrap();
        let mut m = Manifest::open(dir.path(), &plan, "b", None).unwrap();
        m.steps[0].state = StepStatus::Done;
        m.save(dir.path()).unwrap();
        let again = Manifest::open(dir.path(), &plan, "b", None).unwrap();
        assert_eq!(again.steps[0].state, StepStatus::Pending, "no result file");
        let other = super::super::plan::builtin("classic").unwrap();
        let e = Manifest::open(dir.path(), &other, "b", None).unwrap_err();
        assert!(e.message().contains("another suite"), "{e}");
    }
}
