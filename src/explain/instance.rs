//! rtlat's own tracefs instance for a run that reads the kernel's trace
//! (`timer --context`, `--split`, `--explain`): created inside a [`Session`]
//! that restores every setting it changed.

use crate::error::{Error, Result};
use crate::sys::tracefs::{self, Session};
use std::path::{Path, PathBuf};

pub fn tracefs_error(what: &str, e: std::io::Error) -> Error {
    Error::env(format!(
        "cannot {what} in tracefs: {e}; run as root, and stop other users of the kernel tracers (rtla, another rtlat)"
    ))
    .because(e)
}

/// Create `instances/rtlat-PID` under `root` with `settings` written in
/// order (after `trace_clock mono` and a 2 MB buffer per CPU).
pub fn open(
    session: &mut Session,
    root: &Path,
    settings: &[(&str, &str)],
    notes: &mut Vec<String>,
) -> Result<(PathBuf, String)> {
    // The global buffer is allocated at its first use; a tracer or events in
    // an instance mark it used without growing it (it would stay at the 7 KB
    // of boot for the next user): have it at the size it was to grow to.
    if let Some(kb) = tracefs::read(root, "buffer_size_kb")
        .ok()
        .as_deref()
        .and_then(tracefs::unexpanded_size)
    {
        session
            .set_at_end("buffer_size_kb", kb)
            .map_err(|e| tracefs_error("save buffer_size_kb", e))?;
        notes.push(format!(
            "the kernel's global trace buffer was not allocated yet (to grow to {kb} KB at its first use); a tracer in an instance marks it used without growing it, so rtlat sets it to {kb} KB at the end"
        ));
    }
    let name = format!("rtlat-{}", std::process::id());
    let inst = open_as(session, &name, settings)?;
    Ok((inst, name))
}

/// Create `instances/NAME` with `settings` written in order (after
/// `trace_clock mono` and a 2 MB buffer per CPU), e.g. beside the one
/// [`open`] made.
pub fn open_as(session: &mut Session, name: &str, settings: &[(&str, &str)]) -> Result<PathBuf> {
    let inst = session
        .instance(name)
        .map_err(|e| tracefs_error("create an instance", e))?;
    for (file, value) in [("trace_clock", "mono"), ("buffer_size_kb", "2048")]
        .iter()
        .chain(settings)
    {
        tracefs::write(&inst, file, value).map_err(|e| tracefs_error(&format!("set {file}"), e))?;
    }
    Ok(inst)
}
