//! `rtlat suite`: a battery of runs into a results directory, here or on
//! several targets over ssh.

use crate::error::Error;
use crate::suite::plan::{self, Plan};
use crate::suite::remote::Target;
use crate::suite::SuiteConfig;
use clap::Parser;
use std::path::PathBuf;

const SUITE_EXAMPLES: &str = "\
Profiles:
  quick      cruncher, switch, timer idle and timer under load, 5 s each: a first look
  classic    cruncher idle, switch idle, timer under load, 10 min each: the published battery
  soak       timer under the full load mix for 6 h, after 10 min idle

Each step is a normal run (rtlat <bench> … --json DIR/<step>.json); DIR/suite.json
lists the steps and their state, DIR/report.html and DIR/summary.md come at the end.
The same command again resumes: completed steps are kept, the others run again.
A FILE.toml defines a suite of its own (see docs/suite.md).

Examples:
  rtlat suite quick --out results
  rtlat suite classic --out board-a
  rtlat suite lab.toml --out lab
  rtlat suite quick --out boards --target ssh://root@board-a --target ssh://root@board-b
  rtlat compare --by-board boards                   one row per board";

#[derive(Debug, clap::Args)]
#[command(after_help = SUITE_EXAMPLES)]
pub struct SuiteArgs {
    /// A profile (quick, classic, soak) or a FILE.toml defining the steps
    #[arg(value_name = "PROFILE|FILE.toml")]
    pub suite: std::ffi::OsString,
    /// The results directory (created; the same again resumes)
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Run on this target over ssh, into DIR/<target>/ (repeatable: all at once)
    #[arg(long, value_name = "ssh://[user@]host[:port]", value_parser = Target::parse)]
    pub target: Vec<Target>,
    /// An option for ssh, e.g. `StrictHostKeyChecking=no` (passed as -o; repeatable)
    #[arg(long, value_name = "OPTION", requires = "target")]
    pub ssh_option: Vec<String>,
    /// rtlat on the targets
    #[arg(
        long,
        value_name = "PATH",
        default_value = "rtlat",
        requires = "target"
    )]
    pub remote_rtlat: String,
    /// Serve every step's live metrics for Prometheus at http://ADDR:PORT/metrics (each step in turn)
    #[arg(long, value_name = "ADDR:PORT", value_parser = super::common::listen_addr, conflicts_with = "target")]
    pub metrics_listen: Option<std::net::SocketAddr>,
}

/// A step's command line must parse as the benchmark it names.
fn check_steps(p: &Plan) -> Result<(), Error> {
    for s in &p.steps {
        let mut argv = vec!["rtlat".to_string()];
        argv.extend(s.argv("step.json"));
        if let Err(e) = super::Cli::try_parse_from(&argv) {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("bad usage");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            return Err(Error::usage(format!(
                "suite '{}', step '{}': {first}",
                p.name, s.name
            )));
        }
    }
    Ok(())
}

impl TryFrom<&SuiteArgs> for SuiteConfig {
    type Error = Error;
    fn try_from(a: &SuiteArgs) -> Result<Self, Error> {
        // Each step is a command line recorded as text in suite.json (to be
        // repeated by hand) and run with the result's path in it.
        if a.out.to_str().is_none() {
            return Err(Error::usage(format!(
                "--out {}: the results directory of a suite must be named in UTF-8 (its steps' command lines are recorded as text in suite.json)",
                a.out.display()
            )));
        }
        let plan = plan::resolve_os(&a.suite)?;
        check_steps(&plan)?;
        Ok(SuiteConfig {
            plan,
            out: a.out.clone(),
            targets: a.target.clone(),
            ssh_options: a.ssh_option.clone(),
            remote_rtlat: a.remote_rtlat.clone(),
            metrics_listen: a.metrics_listen,
        })
    }
}
