//! `rtlat check`: is this system set up for real-time work, and what would
//! disturb a measurement?
//!
//! [`assess`] is pure: it judges a [`SystemInfo`] and the probed
//! [`Permissions`], so every verdict is testable with captured systems.
//!
//! Here the verdicts, the probe of permissions, the report and [`run`];
//! the individual checks are in `factors`, the kernel responder's (kmod/)
//! in `responder`.

use crate::error::{Error, Outcome};

use serde::{Deserialize, Serialize};

use crate::sys::probe;
use crate::sysinfo::SystemInfo;
use std::path::Path;

mod factors;
mod responder;

pub use factors::assess;

/// How a factor affects real-time work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Good,
    Warn,
    Bad,
    Info,
}

impl Verdict {
    /// The word shown in text output: `GOOD`, `WARN`, `BAD`, `INFO`.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Good => "GOOD",
            Verdict::Warn => "WARN",
            Verdict::Bad => "BAD",
            Verdict::Info => "INFO",
        }
    }
}

/// One judged aspect of the system.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Factor {
    pub name: String,
    pub verdict: Verdict,
    pub detail: String,
    /// What to do about it; always present for `Warn` and `Bad`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Factor {
    fn new(name: &str, verdict: Verdict, detail: impl Into<String>) -> Self {
        Factor {
            name: name.to_string(),
            verdict,
            detail: detail.into(),
            fix: None,
        }
    }

    fn good(name: &str, detail: impl Into<String>) -> Self {
        Factor::new(name, Verdict::Good, detail)
    }

    fn info(name: &str, detail: impl Into<String>) -> Self {
        Factor::new(name, Verdict::Info, detail)
    }

    fn warn(name: &str, detail: impl Into<String>) -> Self {
        Factor::new(name, Verdict::Warn, detail)
    }

    fn bad(name: &str, detail: impl Into<String>) -> Self {
        Factor::new(name, Verdict::Bad, detail)
    }

    fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

/// What this process is allowed to do; `Err` holds the reason.
#[derive(Debug, Clone)]
pub struct Permissions {
    /// A thread can switch to SCHED_FIFO.
    pub rt_fifo: Result<(), String>,
    /// Memory can be locked.
    pub mlock: Result<(), String>,
    /// `/dev/cpu_dma_latency` can be opened for writing.
    pub dma_latency: Result<(), String>,
    /// Highest RT priority allowed by `RLIMIT_RTPRIO`; `None` when no limit
    /// applies (`CAP_SYS_NICE`, or unlimited).
    pub rtprio_limit: Option<u64>,
    /// Bytes `RLIMIT_MEMLOCK` allows to lock; `None` when no limit applies
    /// (`CAP_IPC_LOCK`, or unlimited).
    pub memlock_limit: Option<u64>,
    /// debugfs's `sched/preempt` (a PREEMPT_DYNAMIC kernel's mode) can be
    /// read; else why not, in words that fit what was found.
    pub debugfs: Result<(), String>,
}

impl Permissions {
    /// Probe the running process. Harmless: nothing stays changed.
    pub fn probe() -> Self {
        let limit = |cap: u32, rlimit: Option<(u64, u64)>| {
            if probe::has_capability(cap) == Some(true) {
                return None;
            }
            rlimit
                .map(|(soft, _)| soft)
                .filter(|&soft| soft != u64::MAX)
        };
        let rtprio_limit = limit(probe::CAP_SYS_NICE, probe::rlimit_rtprio());
        let memlock_limit = limit(probe::CAP_IPC_LOCK, probe::rlimit_memlock());
        let rt_fifo = probe::can_use_rt_fifo().map_err(|e| match rtprio_limit {
            Some(n) => format!("{e} (RLIMIT_RTPRIO is {n})"),
            None => e.to_string(),
        });
        let mlock = probe::can_mlock().map_err(|e| match memlock_limit {
            Some(n) => format!("{e} (RLIMIT_MEMLOCK is {})", bytes(n)),
            None => e.to_string(),
        });
        let dma_latency =
            probe::can_hold_dma_latency().map_err(|e| format!("{}: {e}", crate::sys::pm::DEVICE));
        Permissions {
            rt_fifo,
            mlock,
            dma_latency,
            rtprio_limit,
            memlock_limit,
            debugfs: debugfs(Path::new("/sys/kernel/debug")),
        }
    }
}

/// `8 MiB`, `64 KiB`, `123 bytes`.
fn bytes(n: u64) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n % (1 << 10) == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// One line per factor: `VERDICT  name  detail  [fix: ...]`, aligned.
pub fn render_text(factors: &[Factor]) -> String {
    let name_width = factors.iter().map(|f| f.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for f in factors {
        let mut line = format!(
            "{:<4}  {:<name_width$}  {}",
            f.verdict.word(),
            f.name,
            f.detail
        );
        if let Some(fix) = &f.fix {
            line.push_str(&format!("  [fix: {fix}]"));
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Whether `sched/preempt` under the debugfs mount point `dir` can be
/// read, and if not, what stands in the way.
fn debugfs(dir: &Path) -> Result<(), String> {
    let file = dir.join("sched/preempt");
    match std::fs::read_to_string(&file) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            Err(format!("{} is root's only", file.display()))
        }
        Err(_) if std::fs::read_dir(dir).map_or(true, |mut d| d.next().is_none()) => Err(format!(
            "debugfs is not mounted (mount -t debugfs none {})",
            dir.display()
        )),
        Err(e) => Err(format!("{}: {e}", file.display())),
    }
}

#[derive(Serialize)]
struct Report<'a> {
    system: &'a SystemInfo,
    factors: &'a [Factor],
}

/// The whole `rtlat check`: describe, probe, judge, print to stdout.
pub fn run(json: bool) -> crate::error::Result<Outcome> {
    let system = SystemInfo::collect();
    let perms = Permissions::probe();
    let mut factors = assess(&system, &perms);
    factors.push(responder::factor(&responder::probe()));
    factors.push(factors::timer_contexts(
        &crate::sys::tracefs::Capabilities::probe(),
        &system,
    ));
    let text = if json {
        let mut t = serde_json::to_string_pretty(&Report {
            system: &system,
            factors: &factors,
        })
        .map_err(|e| Error::env(format!("cannot describe the system as JSON: {e}")).because(e))?;
        t.push('\n');
        t
    } else {
        render_text(&factors)
    };
    crate::outfile::print(&text);
    Ok(outcome(&factors))
}

/// Exit 3 when a factor is BAD (it would stop a measurement or falsify
/// it), naming them; success otherwise (warnings included).
fn outcome(factors: &[Factor]) -> Outcome {
    let bad: Vec<&str> = factors
        .iter()
        .filter(|f| f.verdict == Verdict::Bad)
        .map(|f| f.name.as_ref())
        .collect();
    match bad.is_empty() {
        true => Outcome::Success,
        false => Outcome::EnvironmentFailed(format!(
            "check: {} would stop or falsify a measurement: see the fix on {} BAD line",
            bad.join(", "),
            if bad.len() == 1 { "its" } else { "their" }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    pub(super) fn fixture(name: &str) -> SystemInfo {
        SystemInfo::collect_from(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/sysinfo")
                .join(name),
        )
    }

    pub(super) fn granted() -> Permissions {
        Permissions {
            rt_fifo: Ok(()),
            mlock: Ok(()),
            dma_latency: Ok(()),
            rtprio_limit: None,
            memlock_limit: None,
            debugfs: Ok(()),
        }
    }

    pub(super) fn refused() -> Permissions {
        Permissions {
            rt_fifo: Err("Operation not permitted (os error 1)".into()),
            mlock: Err("Cannot allocate memory (os error 12)".into()),
            dma_latency: Err("/dev/cpu_dma_latency: Permission denied (os error 13)".into()),
            rtprio_limit: Some(0),
            memlock_limit: Some(8 << 20),
            debugfs: Err("/sys/kernel/debug/sched/preempt is root's only".into()),
        }
    }

    pub(super) fn verdict(factors: &[Factor], name: &str) -> Verdict {
        factors
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("no factor {name}"))
            .verdict
    }

    pub(super) fn assert_fixes(factors: &[Factor]) {
        for f in factors {
            if matches!(f.verdict, Verdict::Warn | Verdict::Bad) {
                assert!(
                    f.fix.as_deref().is_some_and(|x| !x.is_empty()),
                    "{} is {:?} without a fix",
                    f.name,
                    f.verdict
                );
            }
            assert!(!f.detail.is_empty(), "{} has no detail", f.name);
        }
    }

    #[test]
    fn a_bad_factor_fails_the_check_and_a_warning_does_not() {
        let mut f = vec![
            Factor::good("SMT", "not active"),
            Factor::warn("RT throttling", "95 %").fix("echo -1"),
        ];
        assert_eq!(outcome(&f), Outcome::Success);
        f.push(Factor::new("preempt model", Verdict::Bad, "VOLUNTARY"));
        f.push(Factor::new("RT scheduling", Verdict::Bad, "not permitted"));
        let Outcome::EnvironmentFailed(line) = outcome(&f) else {
            panic!("a BAD factor passed");
        };
        assert!(line.contains("preempt model, RT scheduling"), "{line}");
        assert!(
            !line.contains("SMT") && !line.contains("throttling"),
            "{line}"
        );
    }

    #[test]
    fn text_is_aligned_and_json_is_lowercase() {
        let f = assess(&fixture("x86_64"), &granted());
        let text = render_text(&f);
        assert_eq!(text.lines().count(), f.len());
        let detail_col = |l: &str| {
            let name_end = 6 + f.iter().map(|x| x.name.len()).max().unwrap();
            assert_eq!(&l[name_end..name_end + 2], "  ", "{l}");
        };
        text.lines().for_each(detail_col);
        assert!(text.starts_with("BAD   preempt model"));
        assert!(text.contains("[fix: echo -1 > /proc/sys/kernel/sched_rt_runtime_us]"));

        let json = serde_json::to_value(&f[1]).unwrap();
        assert_eq!(json["verdict"], "warn");
        let good = serde_json::to_value(&f[3]).unwrap();
        assert!(good.get("fix").is_none());
    }

    #[test]
    fn live_probe_does_not_panic() {
        let perms = Permissions::probe();
        let f = assess(&SystemInfo::collect(), &perms);
        assert_fixes(&f);
    }
}
