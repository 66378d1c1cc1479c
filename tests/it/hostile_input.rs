//! Input made to hurt: endless inputs, names that are not UTF-8, terminal
//! escapes in labels, result files whose figures contradict each other.
//! Each is refused with one line and exit 2, or handled correctly; none
//! panics or takes unbounded memory.

use crate::util::{bin, load, rtlat};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The finished child's exit code, stderr and peak resident memory (KiB).
struct Ran {
    code: Option<i32>,
    stderr: String,
    max_rss_kib: i64,
}

/// Run rtlat with `args` in `dir`, measuring its peak resident memory
/// (wait4's rusage: exact, whenever the peak came). The child is reaped by
/// wait4 itself, not by `Child::wait`, hence the allowance.
#[allow(clippy::zombie_processes)]
fn run_measured(dir: &Path, args: &[&std::ffi::OsStr]) -> Ran {
    let mut child = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rtlat");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    let mut status = 0;
    // SAFETY: all-zero is a valid `rusage` (plain integers).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pid is our own child, not yet waited for (std's `Child`
    // is not used to wait); `status` and `usage` are valid for writes.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4");
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    Ran {
        code,
        stderr,
        max_rss_kib: usage.ru_maxrss,
    }
}

fn os(args: &[&str]) -> Vec<std::ffi::OsString> {
    args.iter().map(|a| a.into()).collect()
}

fn run_str(dir: &Path, args: &[&str]) -> Ran {
    let args = os(args);
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    run_measured(dir, &refs)
}

/// Exit 2, one line on stderr holding every one of `wants`.
fn assert_refused(r: &Ran, wants: &[&str]) {
    assert_eq!(r.code, Some(2), "stderr: {}", r.stderr);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {}", r.stderr);
    for w in wants {
        assert!(r.stderr.contains(w), "'{w}' not in: {}", r.stderr);
    }
}

fn fixture_result() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results/v1-timer.json")
}

/// The fixture result with `change` applied, written as `dir/name`.
fn mutated(dir: &Path, name: &str, change: impl Fn(&mut Value)) -> PathBuf {
    let mut v = load(&fixture_result());
    change(&mut v);
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec_pretty(&v).expect("json")).expect("write");
    p
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo")
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

/// A writer that feeds `head` then `chunk` forever into the FIFO at
/// `path`, until the reader closes it.
fn feed_forever(path: &Path, head: &'static [u8], chunk: &'static [u8]) {
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&path) else {
            return;
        };
        if f.write_all(head).is_err() {
            return;
        }
        let block = chunk.repeat((1 << 16) / chunk.len().max(1));
        while f.write_all(&block).is_ok() {}
    });
}

/// The most memory an endless or oversized input may take: the 256 MiB
/// input limit, and what parsing it needs.
const BOUNDED_KIB: i64 = 640 << 10;
/// What refusing `/dev/zero` at its first byte may take.
const SMALL_KIB: i64 = 64 << 10;

#[test]
fn dev_zero_is_refused_at_once_by_every_reader() {
    let dir = tempfile::tempdir().expect("tmp");
    let cases: [&[&str]; 4] = [
        &["report", "/dev/zero"],
        &["report", "--quiet", "/dev/zero", "--html", "out.html"],
        &["compare", "/dev/zero", "/dev/zero"],
        &["import", "/dev/zero", "-o", "out.json"],
    ];
    for args in cases {
        let r = run_str(dir.path(), args);
        assert_refused(&r, &["/dev/zero"]);
        assert!(
            r.max_rss_kib < SMALL_KIB,
            "{args:?}: {} KiB resident",
            r.max_rss_kib
        );
    }
    let r = run_str(
        dir.path(),
        &[
            "import",
            "--from",
            "cyclictest-json",
            "/dev/zero",
            "-o",
            "o.json",
        ],
    );
    assert_refused(&r, &["/dev/zero"]);
    assert!(r.max_rss_kib < BOUNDED_KIB, "{} KiB", r.max_rss_kib);
    assert!(!dir.path().join("o.json").exists());
    assert!(!dir.path().join("out.html").exists());
}

#[test]
fn a_fifo_fed_forever_stops_at_the_input_limit() {
    let dir = tempfile::tempdir().expect("tmp");
    // A result that never ends: one note after another.
    let fifo = dir.path().join("endless.json");
    mkfifo(&fifo);
    feed_forever(&fifo, b"{\"notes\": [", b"\"an endless note\", ");
    let r = run_str(dir.path(), &["report", "endless.json"]);
    assert_refused(&r, &["endless.json", "256 MiB"]);
    assert!(r.max_rss_kib < BOUNDED_KIB, "{} KiB", r.max_rss_kib);
    // An import whose lines are each valid, forever.
    let fifo = dir.path().join("endless.txt");
    mkfifo(&fifo);
    feed_forever(
        &fifo,
        b"== Sampling period: 1000 us\n\
RTT|  00:00:01  (periodic user-mode task, 1000 us period, priority 99)\n\
RTH|----lat min|----lat avg|----lat max|-overrun|---msw|---lat best|--lat worst\n",
        b"RTD|      0.703|      1.577|      7.746|       0|     0|      0.703|      7.746\n",
    );
    let r = run_str(
        dir.path(),
        &["import", "--from", "xenomai", "endless.txt", "-o", "x.json"],
    );
    assert_refused(&r, &["endless.txt", "256 MiB"]);
    assert!(r.max_rss_kib < BOUNDED_KIB, "{} KiB", r.max_rss_kib);
    assert!(!dir.path().join("x.json").exists());
}

#[test]
fn a_suite_toml_and_a_manifest_are_read_bounded() {
    let dir = tempfile::tempdir().expect("tmp");
    let fifo = dir.path().join("endless.toml");
    mkfifo(&fifo);
    feed_forever(&fifo, b"# a comment that never ends ", b"x");
    let r = run_str(dir.path(), &["suite", "endless.toml", "--out", "out"]);
    assert_refused(&r, &["endless.toml", "256 MiB"]);
    assert!(r.max_rss_kib < BOUNDED_KIB, "{} KiB", r.max_rss_kib);
    // A suite directory whose manifest is /dev/zero.
    let board = dir.path().join("board");
    std::fs::create_dir(&board).expect("mkdir");
    std::os::unix::fs::symlink("/dev/zero", board.join("suite.json")).expect("symlink");
    let r = run_str(dir.path(), &["compare", "--by-board", "board"]);
    assert_refused(&r, &["suite.json"]);
    assert!(r.max_rss_kib < SMALL_KIB, "{} KiB", r.max_rss_kib);
}

#[test]
fn inconsistent_result_files_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().expect("tmp");
    type Change = fn(&mut Value);
    let cases: [(&str, Change, &[&str]); 9] = [
        (
            "avg-above-max",
            |v| v["total"]["avg_ns"] = json!(9_000_000_000i64),
            &["total", "avg"],
        ),
        (
            "thread-avg-below-min",
            |v| v["threads"][0]["summary"]["avg_ns"] = json!(1),
            &["cpu0", "avg"],
        ),
        (
            "total-not-the-sum",
            |v| v["total"]["samples"] = json!(5),
            &["total", "samples"],
        ),
        (
            "buckets-not-the-samples",
            |v| v["threads"][0]["histogram"]["buckets"][0]["count"] = json!(100_000),
            &["cpu0", "histogram"],
        ),
        (
            "complete-but-running",
            |v| v["end_reason"] = json!("running"),
            &["complete", "end_reason", "running"],
        ),
        (
            "february-31",
            |v| v["start_time_utc"] = json!("2026-02-31T10:00:00.000Z"),
            &["start_time_utc"],
        ),
        (
            "hour-25",
            |v| v["start_time_utc"] = json!("2026-12-01T25:00:00.000Z"),
            &["start_time_utc"],
        ),
        (
            "series-avg-above-max",
            |v| {
                let p = &mut v["threads"][0]["series"]["points"][0];
                p["avg_ns"] = json!(p["max_ns"].as_i64().expect("max") + 1);
            },
            &["series point 0"],
        ),
        (
            "phase-ends-before-it-starts",
            |v| {
                let t = v["threads"].clone();
                let total = v["total"].clone();
                v["phases"] = json!([{"name": "idle", "start_ns": 10, "end_ns": 5,
                    "threads": t, "total": total}]);
            },
            &["phase 'idle'", "start_ns"],
        ),
    ];
    for (name, change, wants) in cases {
        let file = format!("{name}.json");
        mutated(dir.path(), &file, change);
        let mut want: Vec<&str> = vec![&file];
        want.extend_from_slice(wants);
        assert_refused(&run_str(dir.path(), &["report", &file]), &want);
        assert_refused(
            &run_str(dir.path(), &["compare", "--format", "csv", &file]),
            &want,
        );
    }
    // The untouched fixture and legitimate imports still load.
    let out = rtlat()
        .args(["report", "--quiet"])
        .arg(fixture_result())
        .output()
        .expect("run");
    assert!(out.status.success(), "{out:?}");
}
