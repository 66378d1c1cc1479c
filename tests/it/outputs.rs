//! Output files (`--json`, `import -o`, `report --svg/--html`, `compare
//! --svg`, `load --json`) go through one writer: files and links are
//! replaced atomically, /dev/null is written in place, FIFOs and other
//! devices are refused and left as they are, and a destination that cannot
//! be written is refused before anything is measured.

use crate::util::*;
use assert_cmd::Command;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A result written by a short synthetic timer run.
fn a_result(dir: &Path) -> PathBuf {
    let r = dir.join("r.json");
    let out = synthetic_timer(&r).output().expect("runs");
    assert_eq!(out.status.code(), Some(0));
    r
}

/// Every subcommand that writes a file, writing to `dest`.
fn writers(result: &Path, dest: &Path) -> Vec<(&'static str, Command)> {
    let import =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/cyclictest.json");
    let mut cmds = Vec::new();
    cmds.push(("timer", synthetic_timer(dest)));
    let mut imp = rtlat();
    imp.args(["import", "--quiet"])
        .arg(&import)
        .arg("-o")
        .arg(dest);
    cmds.push(("imp", imp));
    for flag in ["--svg", "--html"] {
        let mut report = rtlat();
        report
            .args(["report", "--quiet"])
            .arg(result)
            .arg(flag)
            .arg(dest);
        cmds.push(("report", report));
    }
    let mut compare = rtlat();
    compare
        .arg("compare")
        .arg(result)
        .arg(result)
        .arg("--svg")
        .arg(dest);
    cmds.push(("compare", compare));
    let mut load = rtlat();
    load.args(["load", "cpu:1", "--duration", "200ms", "--quiet", "--json"])
        .arg(dest);
    cmds.push(("load", load));
    cmds
}

/// A 60 s unprivileged timer run writing to `dest`, and how long it took: a
/// destination that cannot be written must end it before it measures.
fn long_run_to(dest: &Path) -> (std::process::Output, Duration) {
    let started = Instant::now();
    let out = rtlat()
        .arg("timer")
        .args(UNPRIVILEGED)
        .args(["--duration", "60s", "--json"])
        .arg(dest)
        .output()
        .expect("runs");
    (out, started.elapsed())
}

/// `cmd`, refused before any work: exit 2, one line naming `dest` and the fix.
fn assert_refused(what: &str, mut cmd: Command, dest: &Path) {
    let started = Instant::now();
    let out = cmd.timeout(Duration::from_secs(20)).output().expect("runs");
    let lines = stderr_lines(&out);
    assert_eq!(out.status.code(), Some(2), "{what}: {lines:?}");
    assert_eq!(lines.len(), 1, "{what}: {lines:?}");
    assert!(
        lines[0].contains(&*dest.to_string_lossy()) && lines[0].contains("regular file"),
        "{what}: {lines:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{what} took {:?}",
        started.elapsed()
    );
}

case!(
    a_device_node_is_refused_and_stays_a_device_node,
    [Root],
    |t| {
        let result = a_result(t.dir());
        let dev = t.path("zero");
        let c = std::ffi::CString::new(dev.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a valid path; makedev(1, 5) is /dev/zero's device number.
        let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 5)) };
        assert_eq!(rc, 0, "mknod: {}", std::io::Error::last_os_error());
        for (what, cmd) in writers(&result, &dev) {
            assert_refused(what, cmd, &dev);
            let kind = std::fs::symlink_metadata(&dev)
                .expect("still there")
                .file_type();
            assert!(kind.is_char_device(), "{what} replaced the device node");
        }
        // The null device is an output, wherever it is named.
        let out = synthetic_timer(Path::new("/dev/null"))
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0));
    }
);

case!(a_fifo_is_refused_at_once_and_stays_a_fifo, [], |t| {
    let result = a_result(t.dir());
    let fifo = t.path("fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `c` is a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // No reader: a run that opened it would wait forever.
    for (what, cmd) in writers(&result, &fifo) {
        assert_refused(what, cmd, &fifo);
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
    }
});

case!(
    a_symlink_stays_a_link_and_its_target_holds_the_result,
    [],
    |t| {
        let target = t.path("target.json");
        std::fs::write(&target, "old").unwrap();
        let link = t.path("link.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let out = synthetic_timer(&link).output().expect("runs");
        assert_eq!(out.status.code(), Some(0));
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        let v = load(&target);
        assert_eq!(v["benchmark"], "timer");
    }
);

case!(
    a_full_device_is_refused_before_measuring,
    [Machine(Path::new("/dev/full").exists(), "no /dev/full",)],
    |_t| {
        let full = Path::new("/dev/full");
        assert_refused("timer", synthetic_timer(full), full);
        assert!(std::fs::metadata(full)
            .unwrap()
            .file_type()
            .is_char_device());
    }
);

case!(a_missing_directory_is_refused_before_measuring, [], |t| {
    let result = a_result(t.dir());
    let missing = t.path("no/such/dir/out");
    for (what, mut cmd) in writers(&result, &missing) {
        let started = Instant::now();
        let out = cmd.output().expect("runs");
        let line = error_line(&out, 4, what);
        assert!(
            line.contains("no/such/dir/out") && line.contains("create the directory"),
            "{line}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{what} took {:?}",
            started.elapsed()
        );
    }
    // A 60 s run ends at once, not after measuring.
    let (out, took) = long_run_to(&missing);
    assert_eq!(out.status.code(), Some(4));
    // qemu-user (scripts/cross.sh) starts a binary far slower than a CPU does.
    let bound = if std::env::var_os("RTLAT_TEST_EMULATOR").is_some() {
        5
    } else {
        1
    };
    assert!(took < Duration::from_secs(bound), "took {took:?}");
});

/// Run `cmd` with its stdout closed before it prints anything.
fn with_stdout_closed(mut cmd: std::process::Command) -> std::process::Output {
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawns");
    drop(child.stdout.take());
    child.wait_with_output().expect("waits")
}

case!(
    a_closed_stdout_is_no_panic_and_the_result_is_still_written,
    [],
    |t| {
        let result = a_result(t.dir());
        let import =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/cyclictest.json");
        let out = |name: &str| t.path(name);
        let runs: Vec<(&str, Vec<std::ffi::OsString>, Option<PathBuf>)> = vec![
            (
                "timer",
                [
                    "timer",
                    "--synthetic",
                    "2",
                    "--cpus",
                    "0",
                    "--loops",
                    "50000",
                    "--json",
                ]
                .iter()
                .map(Into::into)
                .chain([out("t.json").into_os_string()])
                .collect(),
                Some(out("t.json")),
            ),
            (
                "import",
                vec![
                    "import".into(),
                    import.into_os_string(),
                    "-o".into(),
                    out("i.json").into(),
                ],
                Some(out("i.json")),
            ),
            (
                "report",
                vec![
                    "report".into(),
                    result.clone().into(),
                    "--svg".into(),
                    out("r.svg").into(),
                ],
                Some(out("r.svg")),
            ),
            (
                "compare",
                vec![
                    "compare".into(),
                    result.clone().into(),
                    result.clone().into(),
                ],
                None,
            ),
            (
                "report --format lava",
                vec![
                    "report".into(),
                    result.clone().into(),
                    "--format".into(),
                    "lava".into(),
                ],
                None,
            ),
            ("check", vec!["check".into()], None),
            (
                "completions",
                vec!["completions".into(), "bash".into()],
                None,
            ),
            (
                "load",
                [
                    "load",
                    "cpu:1",
                    "--duration",
                    "300ms",
                    "--interval",
                    "50ms",
                    "--json",
                ]
                .iter()
                .map(Into::into)
                .chain([out("l.json").into_os_string()])
                .collect(),
                Some(out("l.json")),
            ),
        ];
        for (what, args, file) in runs {
            let mut cmd = t.process();
            cmd.args(&args);
            let o = with_stdout_closed(cmd);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!err.contains("panicked"), "{what}: {err}");
            assert_eq!(o.status.code(), Some(0), "{what}: {err}");
            if let Some(f) = file {
                let len = std::fs::metadata(&f).map(|m| m.len()).unwrap_or(0);
                assert!(len > 100, "{what}: {} not written", f.display());
            }
        }
    }
);

/// A tmpfs of 64 kB mounted on `dir` (root only), unmounted when dropped.
struct SmallFs(PathBuf);

impl SmallFs {
    fn mount(dir: &Path) -> Option<SmallFs> {
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "rtlat-test"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| SmallFs(dir.to_path_buf()))
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

case!(
    a_full_file_system_is_refused_before_measuring,
    [Root],
    |t| {
        let dir = t.path("small");
        std::fs::create_dir(&dir).expect("mkdir");
        let fs = SmallFs::mount(&dir);
        if !need(Need::Provided(fs.is_some(), "a tmpfs mount")) {
            return;
        }
        // Fill it: writing stops at ENOSPC.
        let mut fill = std::fs::File::create(dir.join("fill")).expect("create");
        let block = vec![7u8; 4096];
        while std::io::Write::write_all(&mut fill, &block).is_ok() {}
        drop(fill);
        let dest = dir.join("r.json");
        let (out, took) = long_run_to(&dest);
        let line = error_line(&out, 4, "a 60 s run");
        assert!(took < Duration::from_secs(5), "took {took:?}");
        assert!(
            line.contains("r.json") && line.contains("free some space"),
            "{line}"
        );
        assert!(!dest.exists());
        // With room again, the same destination is taken.
        std::fs::remove_file(dir.join("fill")).expect("rm");
        let out = synthetic_timer(&dest).output().expect("runs");
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert!(dest.exists());
    }
);
