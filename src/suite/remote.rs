//! The suite on targets over ssh ([`crate::remote`]): each step run there
//! into a scratch directory and fetched as it ends.

use super::local::{echo, wait, watch_stderr};
use super::manifest::Manifest;
use super::plan::Step;
use super::runner::{Executor, Job, ProgressLines, StepRun};
use super::{finish, trouble, SuiteConfig};
use crate::error::{Error, Outcome, Result};
pub use crate::remote::{quote, Ssh, Target};
use crate::sys::signals::StopFlag;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Steps on a target: run there into a scratch directory, then fetched.
pub struct Remote {
    pub ssh: Ssh,
    pub rtlat: String,
    /// The scratch directory on the target.
    pub dir: String,
}

impl Remote {
    fn remote_file(&self, step: &Step) -> String {
        format!("{}/{}", self.dir, step.file())
    }

    /// Copy the step's result from the target (`cat` over ssh).
    fn fetch(&self, step: &Step, local: &Path) -> std::result::Result<(), String> {
        let out = self
            .ssh
            .output(&format!("cat {}", quote(&self.remote_file(step))))
            .map_err(|e| format!("cannot run ssh: {e}"))?;
        if !out.status.success() || out.stdout.is_empty() {
            return Err(format!("no result to fetch ({})", Ssh::why(&out)));
        }
        crate::outfile::write(local, &out.stdout)
            .map_err(|e| crate::outfile::write_error(local, e).to_string())
    }

    /// Remove the scratch directory on the target.
    pub fn clean(&self) {
        let _ = self.ssh.output(&format!("rm -rf {}", quote(&self.dir)));
    }
}

impl Executor for Remote {
    fn command(&self, step: &Step, _local: &Path) -> Vec<String> {
        let mut v = vec![self.rtlat.clone()];
        v.extend(step.argv(&self.remote_file(step)));
        v
    }

    fn run(&mut self, job: Job<'_>) -> StepRun {
        let argv: Vec<String> = self
            .command(job.step, job.local)
            .iter()
            .map(|a| quote(a))
            .collect();
        // Its summary stays on the board (the result is fetched); its errors come back.
        let remote = format!(
            "mkdir -p {} && exec {} >/dev/null",
            quote(&self.dir),
            argv.join(" ")
        );
        let mut cmd = self.ssh.command(&remote, true);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                return StepRun {
                    message: Some(format!("cannot run ssh: {e}; install openssh-client")),
                    unreachable: true,
                    ..StepRun::default()
                }
            }
        };
        let prefix = format!("  {} {}: ", self.ssh.target.dir_name(), job.step.name);
        let outs = [
            child.stdout.take().map(|o| watch_stderr(o, prefix.clone())),
            child.stderr.take().map(|e| watch_stderr(e, prefix.clone())),
        ];
        let code = wait(&mut child, job.stop, job.tick);
        let [out, err] = outs.map(|h| h.and_then(|h| h.join().ok().flatten()));
        // Through the terminal come rtlat's own lines; ssh's come on its
        // stderr: the reason is rtlat's last line, ssh's only when rtlat said
        // nothing (it could not be started).
        let (reason, other) = match (out, err) {
            (Some(o), e) => (Some(o), e),
            (None, e) => (e, None),
        };
        echo(&prefix, other.as_deref());
        if code == Some(0) {
            echo(&prefix, reason.as_deref());
        }
        let fetched = self.fetch(job.step, job.local);
        let mut run = StepRun {
            code,
            message: reason.filter(|_| code != Some(0)),
            unreachable: false,
        };
        if code != Some(0) {
            if let Err(why) = self.ssh.reachable() {
                run.unreachable = true;
                run.message = Some(why);
            }
        } else if let Err(why) = fetched {
            run.message = Some(why);
        }
        run
    }
}

/// The suite on one target, into `dir`: a line of trouble, if any.
fn on_target(cfg: &SuiteConfig, target: &Target, dir: &Path, stop: &StopFlag) -> Option<String> {
    let name = target.dir_name();
    let ssh = Ssh {
        target: target.clone(),
        options: cfg.ssh_options.clone(),
    };
    if let Err(why) = ssh.check_version(&cfg.remote_rtlat) {
        return Some(why);
    }
    let opened = super::make_dir(dir)
        .and_then(|()| Manifest::open(dir, &cfg.plan, &name, Some(&target.to_string())));
    let mut m = match opened {
        Ok(m) => m,
        Err(e) => return Some(format!("{name}: {e}")),
    };
    let mut exec = Remote {
        ssh,
        rtlat: cfg.remote_rtlat.clone(),
        dir: format!("/tmp/rtlat-suite-{}-{name}", std::process::id()),
    };
    let progress = ProgressLines::new(&format!("{name} "), cfg.targets.len() == 1);
    let ended = super::runner::run_steps(dir, &mut m, &mut exec, stop, &progress);
    if ended.as_ref().is_ok_and(|e| e.unreachable.is_none()) {
        exec.clean();
    }
    let ended = match ended {
        Ok(e) => e,
        Err(e) => return Some(format!("{name}: {e}")),
    };
    if let Err(e) = finish::write(dir, &m) {
        return Some(format!("{name}: {e}"));
    }
    trouble(&name, &m, &ended, dir)
}

/// Run the suite on every target of `cfg` at once, each into `--out/<target>/`;
/// then `summary.md` over all of them in `--out`.
pub fn run_all(cfg: &SuiteConfig, stop: &StopFlag) -> Result<Outcome> {
    let dirs: Vec<PathBuf> = cfg
        .targets
        .iter()
        .map(|t| cfg.out.join(t.dir_name()))
        .collect();
    let troubles: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = cfg
            .targets
            .iter()
            .zip(&dirs)
            .map(|(t, d)| s.spawn(move || on_target(cfg, t, d, stop)))
            .collect();
        handles
            .into_iter()
            .filter_map(|h| {
                h.join()
                    .unwrap_or_else(|_| Some("a target thread panicked".into()))
            })
            .collect()
    });
    let done: Vec<PathBuf> = dirs
        .into_iter()
        .filter(|d| d.join(super::manifest::FILE).is_file())
        .collect();
    if !done.is_empty() {
        let boards = finish::boards_of(&done)?;
        let manifests: Vec<Manifest> = done
            .iter()
            .map(|d| Manifest::read(d))
            .collect::<Result<_>>()?;
        let refs: Vec<&Manifest> = manifests.iter().collect();
        let title = format!(
            "rtlat suite '{}' on {} board(s)",
            cfg.plan.name,
            boards.len()
        );
        let text = finish::summary(&title, &boards, &refs);
        crate::render::write_output(&cfg.out.join(finish::SUMMARY), text.as_bytes())?;
        let page = finish::report(&title, &boards, &refs);
        crate::render::write_output(&cfg.out.join(finish::REPORT), page.as_bytes())?;
        crate::outln!(
            "{} and {} in {}",
            finish::SUMMARY,
            finish::REPORT,
            cfg.out.display()
        );
    }
    let Some((last, others)) = troubles.split_last() else {
        return Ok(Outcome::Success);
    };
    for t in others {
        eprintln!("rtlat: {t}");
    }
    if done.is_empty() && troubles.len() == cfg.targets.len() {
        return Err(Error::env(last.clone()));
    }
    Ok(Outcome::EnvironmentFailed(last.clone()))
}
