//! What the running kernel's tracefs offers, probed without changing
//! anything (also in the board build, for `rtlat check`). Sessions,
//! instances and the reading of the trace are `crate::trace`'s.

use std::fs;
use std::path::{Path, PathBuf};

/// What the running kernel's tracefs can measure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// The tracefs mount, if one is mounted and readable.
    pub root: Option<PathBuf>,
    /// `timerlat` in `available_tracers` (CONFIG_TIMERLAT_TRACER).
    pub timerlat: bool,
    /// `osnoise/per_cpu/cpu0/timerlat_fd` (user-space timerlat, Linux 6.5).
    pub timerlat_fd: bool,
    /// `events/timer/hrtimer_start` and `hrtimer_expire_entry`.
    pub hrtimer_events: bool,
}

impl Capabilities {
    /// Probe the mounted tracefs (nothing is changed).
    pub fn probe() -> Self {
        match crate::sys::trace::TRACEFS
            .iter()
            .map(Path::new)
            .find(|d| d.join("available_tracers").exists())
        {
            Some(d) => Self::of(d),
            None => Capabilities::default(),
        }
    }

    /// Probe tracefs, mounting it first (root only) if it is not mounted.
    pub fn probe_or_mount() -> Self {
        let c = Self::probe();
        if c.root.is_some() {
            return c;
        }
        let dir = Path::new(crate::sys::trace::TRACEFS[0]);
        if dir.is_dir() && crate::sys::trace::mount_tracefs(dir) {
            return Self::of(dir);
        }
        c
    }

    /// The contexts `timer --context` can measure on this kernel, for
    /// `rtlat check`: `user` through `timerlat_fd` (Linux 6.5).
    pub fn contexts(&self) -> Vec<&'static str> {
        match (self.timerlat, self.timerlat_fd) {
            (false, _) => Vec::new(),
            (true, false) => vec!["irq", "thread"],
            (true, true) => vec!["irq", "thread", "user"],
        }
    }

    /// What the tracefs mounted at `root` offers (a captured tree in tests).
    pub fn of(root: &Path) -> Self {
        let tracers = fs::read_to_string(root.join("available_tracers")).unwrap_or_default();
        Capabilities {
            root: Some(root.to_path_buf()),
            timerlat: tracers.split_whitespace().any(|t| t == "timerlat"),
            timerlat_fd: root.join("osnoise/per_cpu/cpu0/timerlat_fd").exists(),
            hrtimer_events: root.join("events/timer/hrtimer_start/enable").exists()
                && root
                    .join("events/timer/hrtimer_expire_entry/enable")
                    .exists(),
        }
    }
}
