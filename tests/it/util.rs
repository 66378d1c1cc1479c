use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

pub fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("rtlat")
}

/// The qemu-user emulator the tests run under (`RTLAT_TEST_EMULATOR`, set by
/// scripts/cross.sh, which also registers qemu with binfmt_misc so that the
/// foreign binary starts like a native one).
pub fn emulator() -> Option<String> {
    std::env::var("RTLAT_TEST_EMULATOR")
        .ok()
        .filter(|e| !e.is_empty())
}

/// Records that `test` skipped itself: prints `skipped TEST: WHY` on stderr and,
/// when `RTLAT_SKIP_LOG` names a file, appends `test<TAB>TEST<TAB>WHY` to it.
/// scripts/test.sh sets it and counts the skips (libtest counts them as passed).
/// Call it, then return from the test.
pub fn skip(test: &str, why: &str) {
    eprintln!("skipped {test}: {why}");
    log_skip("test", test, why);
}

/// Records a check skipped inside a test that otherwise runs (e.g. schema
/// validation without python3-jsonschema): prints `message` on stderr and logs
/// `check<TAB>TEST<TAB>WHY` (the test is the current libtest thread's name).
pub fn skip_check(why: &str, message: &str) {
    eprintln!("{message}");
    let thread = std::thread::current();
    log_skip("check", thread.name().unwrap_or("?"), why);
}

fn log_skip(kind: &str, test: &str, why: &str) {
    let Some(path) = std::env::var_os("RTLAT_SKIP_LOG").filter(|p| !p.is_empty()) else {
        return;
    };
    let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
    let line = format!("{kind}\t{}\t{}\n", clean(test), clean(why));
    // One write of one short line to a file opened for appending: lines of
    // tests running in parallel (and in other test binaries) do not mix.
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "cannot append to RTLAT_SKIP_LOG {}: {e}",
            path.to_string_lossy()
        );
    }
}

/// True when the test may run; under emulation, prints why it cannot and returns false.
pub fn runs_under_emulation(test: &str, why_not: &str) -> bool {
    match emulator() {
        Some(emu) => {
            eprintln!("skipped {test} under {emu}: {why_not}");
            log_skip("test", test, &format!("under {emu}: {why_not}"));
            false
        }
        None => true,
    }
}

pub fn rtlat() -> Command {
    Command::new(bin())
}

pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| v != "false" && v != "0")
}

pub fn is_root() -> bool {
    // SAFETY-free: read the effective uid from /proc.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// True when the test may run; prints why it is skipped otherwise (and fails under CI).
/// Tests that measure take turns: overlapping real-time runs (timer, switch,
/// cruncher, net, irq) would disturb each other's figures and timing-based
/// assertions. Hold the guard for the whole measuring part of a test.
pub fn measuring() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn require_root(test: &str) -> bool {
    if is_root() {
        return true;
    }
    assert!(!in_ci(), "{test}: CI must run as root");
    skip(
        test,
        "needs root (RT scheduling, mlock, /dev/cpu_dma_latency)",
    );
    false
}

pub fn stderr_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(str::to_owned)
        .collect()
}

pub fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Validate a result file against docs/result-schema.json with Python's jsonschema.
pub fn assert_schema_valid(path: &Path) {
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/result-schema.json");
    let probe = std::process::Command::new("python3")
        .args(["-c", "import jsonschema"])
        .output();
    if !probe.map(|o| o.status.success()).unwrap_or(false) {
        assert!(
            !in_ci(),
            "python3-jsonschema is missing: .ci/run must install it"
        );
        skip_check(
            "schema validation: python3-jsonschema is missing",
            "schema validation skipped: apt-get install python3-jsonschema",
        );
        return;
    }
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import json,sys,jsonschema; jsonschema.Draft202012Validator(json.load(open(sys.argv[2]))).validate(json.load(open(sys.argv[1])))",
        ])
        .arg(path)
        .arg(&schema)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{} does not match the schema: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The summary invariants every result must keep. Latencies are signed (an
/// import may hold negative ones, whose histogram and percentiles count
/// |latency|, as Xenomai's does).
pub fn assert_summary_invariants(s: &Value) {
    let g = |k: &str| {
        s[k].as_i64()
            .unwrap_or_else(|| panic!("summary lacks {k}: {s}"))
    };
    let (min, avg, max) = (g("min_ns"), g("avg_ns"), g("max_ns"));
    assert!(g("samples") > 0, "no samples: {s}");
    assert!(min <= avg && avg <= max, "min {min} avg {avg} max {max}");
    let (min, max) = if min < 0 {
        (0, min.abs().max(max.abs()))
    } else {
        (min, max)
    };
    let ps: Vec<i64> = s["percentiles"]
        .as_array()
        .expect("percentiles")
        .iter()
        .map(|p| p["ns"].as_i64().expect("ns"))
        .collect();
    assert!(!ps.is_empty(), "no percentiles in {s}");
    assert!(min <= ps[0], "min > p50");
    assert!(
        ps.windows(2).all(|w| w[0] <= w[1]),
        "percentiles not monotonic: {ps:?}"
    );
    assert!(*ps.last().expect("p") <= max, "a percentile exceeds max");
}

/// Histogram counts add up to the samples; series samples too.
pub fn assert_thread_consistent(t: &Value) {
    let samples = t["summary"]["samples"].as_u64().expect("samples");
    let hist: u64 = t["histogram"]["buckets"]
        .as_array()
        .expect("buckets")
        .iter()
        .map(|b| b["count"].as_u64().expect("count"))
        .sum();
    assert_eq!(hist, samples, "histogram counts != samples");
    let series: u64 = t["series"]["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| p["samples"].as_u64().expect("samples"))
        .sum();
    assert_eq!(series, samples, "series samples != samples");
    let max_bucket_high = t["histogram"]["buckets"]
        .as_array()
        .and_then(|b| b.last())
        .map(|b| b["high_ns"].as_u64().expect("high"))
        .expect("a bucket");
    let max = t["summary"]["max_ns"].as_u64().expect("max");
    assert!(max <= max_bucket_high, "max {max} outside the last bucket");
}

/// A short deterministic timer run (synthetic samples, no privilege needed)
/// writing its result to `dest`.
pub fn synthetic_timer(dest: &Path) -> Command {
    let mut c = rtlat();
    c.args([
        "timer",
        "--synthetic",
        "1",
        "--cpus",
        "0",
        "--loops",
        "1000",
        "--quiet",
        "--json",
    ])
    .arg(dest);
    c
}

/// A copy of the rtlat binary that an unprivileged user (nobody) can run,
/// in `dir` (made world-accessible): the binary under target/ may sit in a
/// directory that user cannot enter.
pub fn unprivileged_copy(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).expect("chmod dir");
    let copy = dir.join("rtlat");
    std::fs::copy(bin(), &copy).expect("copy binary");
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    copy
}

/// `exe` run as nobody (uid and gid 65534), without groups or capabilities.
pub fn as_nobody(exe: &Path) -> std::process::Command {
    let mut c = std::process::Command::new("setpriv");
    c.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
    ]);
    c.arg(exe);
    c
}
