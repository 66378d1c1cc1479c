//! Hostile neighbours of an output file and of a run: links planted beside
//! the output, an output that is also an input, two writers of one file,
//! outputs that are never read, the hangup of the session that started
//! the run, and the limits (`ulimit`) of a hostile shell.

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

case!(
    sighup_ends_timer_and_switch_runs_with_a_complete_result,
    [
        Root,
        Native("it signals 1.5 s after spawn; an emulated start can take 3 s",),
        Measuring
    ],
    |_t| {
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
);

case!(
    links_planted_beside_an_output_are_never_followed,
    [Root],
    |t| {
        let victim = t.path("victim");
        std::fs::write(&victim, "precious").expect("victim");
        let out = t.path("out");
        std::fs::create_dir(&out).expect("out");
        // The temporary and probe files beside r.json have random names
        // (the tests of src/outfile.rs plant links at them); the lock file's
        // name is known: a link planted there is refused before any work,
        // naming the fix.
        let lock = out.join(".r.json.lock");
        std::os::unix::fs::symlink(&victim, &lock).expect("plant");
        let json = out.join("r.json");
        assert_refused(
            "lock",
            synthetic_timer(&json),
            4,
            "remove the link planted beside it",
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(std::fs::symlink_metadata(&lock)
            .expect("plant")
            .file_type()
            .is_symlink());
        assert!(!json.exists());
        std::fs::remove_file(&lock).expect("unplant");
        let run = synthetic_timer(&json).output().expect("runs");
        assert_eq!(run.status.code(), Some(0), "{:?}", stderr_lines(&run));
        assert_eq!(load(&json)["complete"], true);
        assert_schema_valid(&json);

        // A link another user planted at the output's own name in a sticky
        // directory is refused, as the kernel refuses to follow it.
        let shared = t.path("shared");
        std::fs::create_dir(&shared).expect("shared");
        std::fs::set_permissions(
            &shared,
            std::os::unix::fs::PermissionsExt::from_mode(0o1777),
        )
        .expect("chmod");
        let planted = shared.join("r.json");
        std::os::unix::fs::symlink(&victim, &planted).expect("plant");
        std::os::unix::fs::lchown(&planted, Some(65534), Some(65534)).expect("lchown");
        let run = synthetic_timer(&planted).output().expect("runs");
        let lines = stderr_lines(&run);
        assert_eq!(run.status.code(), Some(2), "{lines:?}");
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }
);

/// `cmd` refused before doing anything: exit `code`, one line containing `needle`.
fn assert_refused(what: &str, mut cmd: assert_cmd::Command, code: i32, needle: &str) {
    let t0 = Instant::now();
    let out = cmd.timeout(Duration::from_secs(20)).output().expect("runs");
    let lines = stderr_lines(&out);
    assert_eq!(out.status.code(), Some(code), "{what}: {lines:?}");
    assert_eq!(lines.len(), 1, "{what}: {lines:?}");
    assert!(lines[0].contains(needle), "{what}: {lines:?}");
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "{what}: {:?}",
        t0.elapsed()
    );
}

case!(
    an_output_that_is_an_input_of_the_same_command_is_refused,
    [],
    |t| {
        let r = t.path("r.json");
        assert_eq!(
            synthetic_timer(&r).output().expect("runs").status.code(),
            Some(0)
        );
        let link = t.path("link.json");
        std::os::unix::fs::symlink(&r, &link).expect("link");
        let before = std::fs::read(&r).expect("read");
        for flag in ["--html", "--svg"] {
            let mut c = t.rtlat();
            c.args(["report", "--quiet"]).arg(&r).arg(flag).arg(&link);
            assert_refused(flag, c, 2, "also an input");
        }
        let mut c = t.rtlat();
        c.arg("compare").arg(&r).arg(&r).arg("--svg").arg(&r);
        assert_refused("compare", c, 2, "also an input");
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/cyclictest.json");
        let x = t.path("x.json");
        std::fs::copy(fixture, &x).expect("copy");
        let imported = std::fs::read(&x).expect("read");
        let mut c = t.rtlat();
        c.args(["import", "--quiet"]).arg(&x).arg("-o").arg(&x);
        assert_refused("import", c, 2, "also an input");
        assert_eq!(
            std::fs::read(&r).unwrap(),
            before,
            "an input was overwritten"
        );
        assert_eq!(
            std::fs::read(&x).unwrap(),
            imported,
            "an input was overwritten"
        );
    }
);

case!(
    a_second_run_writing_the_same_file_is_refused_before_measuring,
    [Measuring],
    |t| {
        let json = t.path("r.json");
        let mut first = t
            .process()
            .args(["timer", "--quiet", "--policy", "other", "--no-mlock"])
            .args(["--dma-latency", "off", "--cpus", "0", "--duration", "60s"])
            .arg("--json")
            .arg(&json)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn rtlat");
        // The first run holds the lock once it has checked its output.
        let t0 = Instant::now();
        while !t.path(".r.json.lock").exists() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "the first run never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let pid = first.id().to_string();
        assert_refused("second", synthetic_timer(&json), 4, &pid);
        let (code, _) = signal_and_wait(&mut first, libc::SIGTERM, Duration::from_secs(2));
        let err = first.wait_with_output().expect("output").stderr;
        assert_eq!(code, Some(0), "{}", String::from_utf8_lossy(&err));
        let r = load(&json);
        assert_eq!(r["complete"], true);
        assert_eq!(r["end_reason"], "signal");
    }
);

case!(
    an_unread_fifo_as_the_result_file_is_refused_at_once,
    [],
    |t| {
        let fifo = t.path("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a valid path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let mut long = t.rtlat();
        long.arg("timer")
            .args(UNPRIVILEGED)
            .args(["--duration", "60s", "--json"])
            .arg(&fifo);
        assert_refused("timer", long, 2, "FIFO");
        assert!(std::os::unix::fs::FileTypeExt::is_fifo(
            &std::fs::symlink_metadata(&fifo).unwrap().file_type()
        ));
    }
);

/// `rtlat ARGS` run by sh after `ulimit LIMIT`, in `dir`.
fn under_ulimit(dir: &Path, limit: &str, args: &str) -> std::process::Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit {limit} && exec \"$0\" {args}"))
        .arg(bin())
        .current_dir(dir)
        .output()
        .expect("sh runs")
}

/// The names in `dir` but `keep`.
fn left_in(dir: &Path, keep: &[&str]) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| !keep.contains(&n.as_str()))
        .collect()
}

const SYNTHETIC: &str = "timer --synthetic 1 --cpus 0 --quiet";

/// `rtlat ARGS` under a file size limit of `bytes` (prlimit), in `dir`.
fn under_fsize(dir: &Path, bytes: u64, args: &str) -> std::process::Output {
    Command::new("prlimit")
        .arg(format!("--fsize={bytes}"))
        .arg(bin())
        .args(args.split_whitespace())
        .current_dir(dir)
        .output()
        .expect("prlimit runs")
}

case!(
    a_file_size_limit_gives_a_clear_error_and_leaves_no_temporary_file,
    [Program("prlimit", "util-linux")],
    |t| {
        let args = format!("{SYNTHETIC} --loops 100000 --json r.json");
        // Below the first save: refused before measuring.
        let out = under_fsize(t.dir(), 1024, &args);
        let line = error_line(&out, 4, "a 1 KiB limit");
        assert!(
            line.starts_with("rtlat: cannot write r.json: File too large"),
            "{line}"
        );
        assert!(line.contains("ulimit -f"), "{line}");
        assert!(out.stdout.is_empty(), "it measured");
        assert_eq!(left_in(t.dir(), &[]), Vec::<String>::new(), "files left");
        // Above the first save, below the final one: SIGXFSZ does not kill the
        // run; the last write fails, the last good save stays.
        let out = under_fsize(t.dir(), 30_000, &args);
        let line = error_line(&out, 4, "a 30 kB limit");
        assert!(
            line.contains("File too large") && line.contains("ulimit -f"),
            "{line}"
        );
        assert!(!out.stdout.is_empty(), "no summary");
        assert_eq!(left_in(t.dir(), &["r.json"]), Vec::<String>::new());
        assert_eq!(load(&t.path("r.json"))["complete"], false);
    }
);

case!(
    a_small_stack_limit_runs_and_too_few_files_name_the_fix,
    [],
    |t| {
        let out = under_ulimit(
            t.dir(),
            "-s 64",
            &format!("{SYNTHETIC} --loops 1000 --json s.json"),
        );
        assert_exit(&out, 0, "ulimit -s 64");
        assert_result_consistent(&load(&t.path("s.json")));
        let out = under_ulimit(
            t.dir(),
            "-n 4",
            &format!("{SYNTHETIC} --loops 1000 --json n.json"),
        );
        let line = error_line(&out, 4, "ulimit -n 4");
        assert!(line.contains("raise the limit ('ulimit -n"), "{line}");
        // Wherever the descriptors run out, the line names the limit.
        let out = under_ulimit(
            t.dir(),
            "-n 4",
            "net ping 127.0.0.1:9 --count 3 --policy other --no-mlock --dma-latency off",
        );
        let line = error_line(&out, 3, "net ping under ulimit -n 4");
        assert!(line.contains("raise the limit ('ulimit -n"), "{line}");
        assert_eq!(left_in(t.dir(), &["s.json"]), Vec::<String>::new());
    }
);

case!(results_go_only_where_they_can_be_read_whole, [], |t| {
    // A device that fails every write: refused before the run.
    let full = t
        .rtlat()
        .args(["timer", "--synthetic", "1", "--cpus", "0", "--loops", "100"])
        .args(["--json", "/dev/full"])
        .output()
        .expect("runs");
    let line = error_line(&full, 2, "--json /dev/full");
    assert!(
        line.contains("/dev/full is a device") && line.contains("regular file"),
        "{line}"
    );
    // The result on stdout: stdout is that JSON only, the summary on stderr.
    let piped = t
        .rtlat()
        .args(["timer", "--synthetic", "1", "--cpus", "0", "--loops", "100"])
        .args(["--json", "-"])
        .output()
        .expect("runs");
    assert_exit(&piped, 0, "--json -");
    let r: serde_json::Value =
        serde_json::from_slice(&piped.stdout).expect("stdout is the result alone");
    assert_result_consistent(&r);
    assert!(String::from_utf8_lossy(&piped.stderr).contains("cpu0"));
    // One output named twice, as given or through another name.
    let json = t.path("r.json");
    assert_exit(&synthetic_timer(&json).output().expect("runs"), 0, "r.json");
    let x = t.path("x.svg");
    let cases: [(&Path, &Path); 3] = [
        (&x, &x),
        (Path::new("-"), Path::new("/dev/stdout")),
        (&x, &t.path(".").join("x.svg")),
    ];
    for (i, (svg, html)) in cases.into_iter().enumerate() {
        if i == 2 {
            std::fs::write(&x, "old").expect("x.svg");
        }
        let out = t
            .rtlat()
            .arg("report")
            .arg(&json)
            .arg("--svg")
            .arg(svg)
            .arg("--html")
            .arg(html)
            .output()
            .expect("runs");
        let line = error_line(&out, 2, &format!("{svg:?} {html:?}"));
        assert!(line.contains("--svg") && line.contains("--html"), "{line}");
        assert!(line.contains("same output"), "{line}");
    }
});

// Under a small stack limit the work runs on a thread of its own: signals
// sent to the process still end the run with its result saved.
case!(
    signals_end_a_run_under_a_small_stack_limit,
    [Measuring],
    |t| {
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            let json = t.path(format!("sig{sig}.json"));
            let mut child = Command::new("sh")
            .arg("-c")
            .arg("ulimit -s 64 && exec \"$0\" timer --quiet --duration 60s --cpus 0 --policy other --no-mlock --dma-latency off --json \"$1\"")
            .arg(bin())
            .arg(&json)
            .stdout(Stdio::null())
            .spawn()
            .expect("sh runs");
            let deadline = Instant::now() + Duration::from_secs(20);
            while !json.exists() {
                assert!(Instant::now() < deadline, "no first save");
                std::thread::sleep(Duration::from_millis(50));
            }
            let (code, took) = signal_and_wait(&mut child, sig, Duration::from_secs(1));
            assert_eq!(code, Some(0), "signal {sig}");
            assert!(took < Duration::from_secs(2), "signal {sig}: {took:?}");
            let r = load(&json);
            assert_eq!(
                (r["complete"].as_bool(), r["end_reason"].as_str()),
                (Some(true), Some("signal"))
            );
        }
    }
);
