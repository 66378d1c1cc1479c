//! The set-up every integration test shares, written once: a test declares
//! what it needs and gets a scratch directory and the rtlat binary to run.
//!
//! ```ignore
//! case!(real_loops_give_exactly_that_many_samples, [Root, Measuring], |t| {
//!     let (_, r) = t.run_json(t.rtlat().args(["timer", "--loops", "20"]), "l.json", 0);
//!     assert_eq!(r["total"]["samples"], 20);
//! });
//! ```
//!
//! The list holds [`Need`] variants (written without `Need::`); in its
//! place may stand an array of them, constant or made by a function, for
//! the needs a module's tests share. Each is checked with [`need`], in order, before anything else:
//! the first one missing skips the test, logged with its reason.
//! `Measuring` takes the measuring turn ([`measuring`]) once the others are
//! met, held until the test ends.

use crate::util::{bin, measuring, need, run_json, Need, Turn};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A test `NAME` that runs `BODY` with `t`, its [`Case`], when this machine
/// has every need in the list; otherwise it skips through [`need`].
macro_rules! case {
    ($name:ident, [$($need:expr),* $(,)?], |$t:ident| $body:block) => {
        #[test]
        fn $name() {
            let needs = {
                #[allow(unused_imports)]
                use $crate::util::Need::*;
                [$($need),*]
            };
            let Some($t) = $crate::case::Case::start(&needs) else {
                return;
            };
            $body
        }
    };
    ($name:ident, $needs:expr, |$t:ident| $body:block) => {
        #[test]
        fn $name() {
            let Some($t) = $crate::case::Case::start(&$needs) else {
                return;
            };
            $body
        }
    };
}

/// One test's scratch directory and measuring turn, both released when the
/// test ends (the directory first).
pub struct Case {
    dir: tempfile::TempDir,
    _turn: Option<Turn>,
}

impl Case {
    /// The case, once every one of `needs` is met; `None` (the skip logged
    /// by [`need`]) at the first one missing.
    pub fn start(needs: &[Need]) -> Option<Case> {
        let mut turn = false;
        for &n in needs {
            match n {
                Need::Measuring => turn = true,
                n if !need(n) => return None,
                _ => {}
            }
        }
        Some(Case {
            dir: tempfile::tempdir().expect("tempdir"),
            _turn: turn.then(measuring),
        })
    }

    /// The scratch directory, removed when the test ends.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `name` in the scratch directory.
    pub fn path(&self, name: impl AsRef<Path>) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The rtlat binary (under qemu-user when the tests run emulated: the
    /// kernel starts the foreign binary through binfmt_misc), run in the
    /// scratch directory.
    pub fn rtlat(&self) -> assert_cmd::Command {
        let mut c = assert_cmd::Command::new(bin());
        c.current_dir(self.dir());
        c
    }

    /// The same as [`Case::rtlat`], for a run the test spawns and watches.
    pub fn process(&self) -> std::process::Command {
        let mut c = std::process::Command::new(bin());
        c.current_dir(self.dir());
        c
    }

    /// [`run_json`] with the result in `name` in the scratch directory.
    pub fn run_json(
        &self,
        cmd: &mut assert_cmd::Command,
        name: &str,
        code: i32,
    ) -> (Output, Value) {
        run_json(cmd, &self.path(name), code)
    }
}

/// With `RTLAT_TEST_KEEP` set, the scratch directory of a test that fails
/// is kept (its path printed) for the files it holds: results, traces.
impl Drop for Case {
    fn drop(&mut self) {
        if std::thread::panicking() && std::env::var_os("RTLAT_TEST_KEEP").is_some() {
            self.dir.disable_cleanup(true);
            eprintln!("kept {}", self.dir.path().display());
        }
    }
}
