//! Hostile neighbours of an output file and of a run: links planted beside
//! the output, an output that is also an input, two writers of one file,
//! outputs that are never read, and the hangup of the session that started
//! the run.

use crate::util::*;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Send `sig` to `child` and wait for it to end (at most `within`); its
/// exit code and how long it took.
fn signal_and_wait(child: &mut Child, sig: i32, within: Duration) -> (Option<i32>, Duration) {
    // SAFETY: kill takes a pid and a signal number; no pointers.
    let rc = unsafe { libc::kill(child.id() as i32, sig) };
    assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return (s.code(), t0.elapsed());
        }
        assert!(
            t0.elapsed() < within + Duration::from_secs(5),
            "signal {sig} did not end the run"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A 60 s run of `bench` (with `args`) writing `json`.
fn spawn_long(bench: &str, args: &[&str], json: &Path) -> Child {
    Command::new(bin())
        .args([bench, "--quiet", "--duration", "60s"])
        .args(args)
        .arg("--json")
        .arg(json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rtlat")
}

#[test]
fn sighup_ends_timer_and_switch_runs_with_a_complete_result() {
    if !need(Need::Root) {
        return;
    }
    let _turn = measuring();
    if !need(Need::Native(
        "it signals 1.5 s after spawn; an emulated start can take 3 s",
    )) {
        return;
    }
    let runs: [(&str, &[&str]); 2] = [("timer", &[]), ("switch", &["--cpus", "0"])];
    for (bench, args) in runs {
        let dir = tempfile::tempdir().expect("tempdir");
        let json = dir.path().join("r.json");
        let mut child = spawn_long(bench, args, &json);
        std::thread::sleep(Duration::from_millis(1500));
        let (code, took) = signal_and_wait(&mut child, libc::SIGHUP, Duration::from_secs(2));
        let err = child.wait_with_output().expect("output").stderr;
        assert!(
            took <= Duration::from_secs(2),
            "{bench}: SIGHUP took {took:?} to end the run"
        );
        assert_eq!(code, Some(0), "{bench}: {}", String::from_utf8_lossy(&err));
        let r = load(&json);
        assert_eq!(r["benchmark"], bench);
        assert_eq!(r["complete"], true, "{bench}");
        assert_eq!(r["end_reason"], "signal", "{bench}");
        assert!(r["total"]["samples"].as_u64().unwrap_or(0) > 0, "{bench}");
        assert_schema_valid(&json);
    }
}
