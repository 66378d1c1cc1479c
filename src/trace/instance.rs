//! rtlat's own tracefs instance for a run that reads the kernel's trace
//! (`timer --context`, `--split`, `--explain`): created inside a [`Session`]
//! that restores every setting it changed.

use crate::error::{Error, Result};
use crate::trace::tracefs::{self, Session};
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::tracefs::tests::{fake_tracefs, files};

    /// The value of a fake tracefs file as written (with its newline).
    fn text(p: &Path) -> String {
        std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// The set-up writes only into its instance (the unexpanded global
    /// buffer is saved to be set at the end); the restore puts every
    /// global file back, stops the instance's tracer and removes it (a
    /// fake's directory of plain files cannot go: reported by name).
    #[test]
    fn an_instance_is_set_up_and_restored_on_a_fake_tracefs() {
        let root = fake_tracefs();
        let state = root.path().join("state");
        let before = files(root.path(), &[&state]);
        let mut s = Session::fake(root.path(), state.clone());
        let mut notes = Vec::new();
        let settings = [("tracing_cpumask", "00000002"), ("tracing_on", "1")];
        let (inst, name) = open(&mut s, root.path(), &settings, &mut notes).expect("open");
        assert_eq!(name, format!("rtlat-{}", std::process::id()));
        assert_eq!(inst, root.path().join("instances").join(&name));
        for (f, v) in [
            ("trace_clock", "mono"),
            ("buffer_size_kb", "2048"),
            ("tracing_cpumask", "00000002"),
            ("tracing_on", "1"),
        ] {
            assert_eq!(text(&inst.join(f)), format!("{v}\n"), "{f}");
        }
        assert_eq!(
            files(root.path(), &[&state, &inst]),
            before,
            "globals untouched"
        );
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("1408 KB"), "{notes:?}");
        let persisted =
            crate::trace::tracefs::State::parse(&std::fs::read_to_string(&state).unwrap());
        assert_eq!(persisted.instances, [format!("instances/{name}")]);
        assert_eq!(
            persisted.saved,
            [("buffer_size_kb".to_string(), "1408".to_string())]
        );

        let problems = s.restore();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with(&format!("cannot remove {}:", inst.display())),
            "{problems:?}"
        );
        assert_eq!(text(&inst.join("tracing_on")), "0\n");
        assert_eq!(text(&inst.join("current_tracer")), "nop\n");
        let after = files(root.path(), &[&state, &inst]);
        let want: Vec<_> = before
            .iter()
            .map(|(p, v)| {
                let v = if p.ends_with("buffer_size_kb") {
                    b"1408\n".to_vec()
                } else {
                    v.clone()
                };
                (p.clone(), v)
            })
            .collect();
        assert_eq!(after, want);
    }

    /// A tracefs without `instances/` (not root, or not tracefs): the error
    /// names the fix, and nothing global was changed.
    #[test]
    fn an_instance_that_cannot_be_made_is_an_error_that_says_why() {
        let root = fake_tracefs();
        std::fs::remove_dir(root.path().join("instances")).unwrap();
        let state = root.path().join("state");
        let before = files(root.path(), &[&state]);
        let mut s = Session::fake(root.path(), state.clone());
        let e = open_as(&mut s, "rtlat-x", &[]).expect_err("no instances/");
        assert!(
            e.to_string()
                .starts_with("cannot create an instance in tracefs: "),
            "{e}"
        );
        assert!(e.to_string().contains("run as root"), "{e}");
        assert!(s.restore().is_empty());
        assert_eq!(files(root.path(), &[&state]), before);
    }
}
