//! Markers in the kernel's trace buffer, so a trace shows what happened at a break.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// tracefs mount points, newest first.
pub(crate) const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Open handles on `trace_marker` and `tracing_on`, taken before the first sample
/// so that a break costs no path lookup.
#[derive(Debug)]
pub struct TraceMarker {
    pub dir: PathBuf,
    marker: File,
    tracing_on: File,
}

impl TraceMarker {
    /// Open tracefs, mounting it at /sys/kernel/tracing first if it is not
    /// mounted (root only). Returns the tracer and whether this call mounted it.
    pub fn open_or_mount() -> Option<(Self, bool)> {
        if let Some(t) = Self::open() {
            return Some((t, false));
        }
        let dir = Path::new(TRACEFS[0]);
        if !dir.is_dir() || !mount_tracefs(dir) {
            return None;
        }
        Self::open().map(|t| (t, true))
    }

    /// Open tracefs if it is mounted and writable; `None` otherwise.
    pub fn open() -> Option<Self> {
        TRACEFS.iter().map(Path::new).find_map(|dir| {
            let marker = OpenOptions::new()
                .write(true)
                .open(dir.join("trace_marker"))
                .ok()?;
            let tracing_on = OpenOptions::new()
                .write(true)
                .open(dir.join("tracing_on"))
                .ok()?;
            Some(TraceMarker {
                dir: dir.to_path_buf(),
                marker,
                tracing_on,
            })
        })
    }

    /// Write `text` into the trace and stop tracing, so the buffer ends at the event.
    pub fn mark_and_stop(&mut self, text: &str) -> bool {
        let a = self.marker.write_all(text.as_bytes()).is_ok();
        let b = self.tracing_on.write_all(b"0").is_ok();
        a && b
    }
}

pub(crate) fn mount_tracefs(dir: &Path) -> bool {
    use rustix::mount::{mount, MountFlags};
    mount("nodev", dir, "tracefs", MountFlags::empty(), None).is_ok()
}
