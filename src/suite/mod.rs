//! `rtlat suite`: a battery of benchmark runs on a board, one step after the
//! other into a results directory, resumable, on this machine or on several
//! targets at once over ssh.
//!
//! - [`plan`]: the steps (built-in profiles, TOML files);
//! - [`manifest`]: `suite.json`, the steps' state and the system;
//! - [`runner`]: the step loop and its progress lines, over an executor:
//!   [`local`] (children of this executable) or [`remote`] (ssh);
//! - [`finish`]: `report.html`, `summary.md`, and suite directories read
//!   back as boards (`rtlat compare --by-board`).

pub mod finish;
pub mod local;
pub mod manifest;
pub mod plan;
pub mod remote;
pub mod runner;

use crate::error::{Error, Outcome, Result};
use crate::render::compare::TableFormat;
use crate::sys::signals::{SignalWatch, StopFlag};
use manifest::Manifest;
use plan::Plan;
use remote::Target;
use runner::{Ended, ProgressLines};
use std::path::{Path, PathBuf};

/// A validated `rtlat suite` command.
#[derive(Debug, Clone)]
pub struct SuiteConfig {
    pub plan: Plan,
    pub out: PathBuf,
    /// Empty: run on this machine.
    pub targets: Vec<Target>,
    /// `-o` options for ssh, passed through.
    pub ssh_options: Vec<String>,
    /// rtlat on the targets.
    pub remote_rtlat: String,
    /// Every local step serves its live metrics here (`--metrics-listen`).
    pub metrics_listen: Option<std::net::SocketAddr>,
}

/// A validated `rtlat compare --by-board`.
#[derive(Debug, Clone)]
pub struct BoardsConfig {
    pub dirs: Vec<PathBuf>,
    pub format: TableFormat,
}

/// `rtlat compare --by-board`.
pub fn compare_boards(cfg: &BoardsConfig) -> Result<Outcome> {
    let boards = finish::boards_of(&cfg.dirs)?;
    crate::outfile::print(&crate::render::boards::table(&boards, cfg.format));
    Ok(Outcome::Success)
}

/// The directory an option names to write into, made if need be: only
/// it, never its parents (the one rule of every output path: what rtlat
/// writes goes into a directory that exists).
pub(crate) fn make_dir(dir: &Path) -> Result<()> {
    crate::outfile::make_dir(dir, "--out")
}

/// One line about a board that did not end well, or `None`.
pub(crate) fn trouble(board: &str, m: &Manifest, ended: &Ended, dir: &Path) -> Option<String> {
    if let Some(why) = &ended.unreachable {
        let kept = m.steps.len() - m.unfinished().len();
        return Some(format!(
            "{board} became unreachable ({why}); its {kept} completed step(s) are kept in {}; run the same command again to resume",
            dir.display()
        ));
    }
    if ended.interrupted {
        return Some(format!(
            "{board}: interrupted; run the same command again to resume into {}",
            dir.display()
        ));
    }
    let failed: Vec<&str> = m
        .unfinished()
        .iter()
        .map(|s| s.step.name.as_str())
        .collect();
    (!failed.is_empty()).then(|| {
        format!(
            "{board}: step(s) {} failed (see suite.json); run the same command again to retry them",
            failed.join(", ")
        )
    })
}

/// `rtlat suite`.
pub fn run(cfg: &SuiteConfig) -> Result<Outcome> {
    make_dir(&cfg.out)?;
    // One suite at a time in a directory: two would interleave their steps.
    let _lock = crate::outfile::lock_dir(&cfg.out, manifest::LOCK, "--out")?;
    let stop = StopFlag::default();
    let _signals = SignalWatch::start(stop.clone())
        .map_err(|e| Error::env(format!("cannot watch for signals: {e}")).because(e))?;
    if !cfg.targets.is_empty() {
        return remote::run_all(cfg, &stop);
    }
    let system = crate::sysinfo::SystemInfo::collect();
    let board = system
        .hostname
        .clone()
        .unwrap_or_else(|| "localhost".into());
    let mut m = Manifest::open(&cfg.out, &cfg.plan, &board, None)?;
    m.system = Some(system);
    m.save(&cfg.out)?;
    let mut exec = local::Local {
        exe: local::this_exe(),
        metrics: cfg.metrics_listen,
    };
    let ended = runner::run_steps(
        &cfg.out,
        &mut m,
        &mut exec,
        &stop,
        &ProgressLines::new("", true),
    )?;
    finish::write(&cfg.out, &m)?;
    crate::outln!(
        "{} and {} in {}",
        finish::SUMMARY,
        finish::REPORT,
        cfg.out.display()
    );
    Ok(match trouble(&board, &m, &ended, &cfg.out) {
        Some(msg) => Outcome::EnvironmentFailed(msg),
        None => Outcome::Success,
    })
}
