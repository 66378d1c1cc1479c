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

/// What a test needs that a machine may lack. [`need`] says whether this
/// machine has it, and when not, records the skip with its reason.
#[derive(Clone, Copy)]
pub enum Need<'a> {
    /// Root: real-time scheduling, mlock, signals to others, privilege drops,
    /// network namespaces. CI runs as root; the fast tier leaves these tests
    /// to the full tier.
    Root,
    /// Not under qemu-user (why it cannot run there).
    Native(&'a str),
    /// A program on PATH (the program, its Debian package in
    /// scripts/packages.txt, which CI installs).
    Program(&'a str, &'a str),
    /// Something CI provides (whether this machine has it, what it is).
    Provided(bool, &'a str),
    /// Something a machine may lack, CI's included (whether this machine has
    /// it, why the test cannot run without it).
    Machine(bool, &'a str),
    /// A file a script makes before the tests (the variable naming it, the
    /// script). scripts/test.sh sets it in the full tier.
    File(&'a str, &'a str),
    /// At least this many CPUs (how many, why the test cannot run on fewer).
    Cpus(usize, &'a str),
    /// The measuring turn ([`measuring`]): never missing. A test declares it
    /// in the list of `case!` (tests/it/case.rs), which takes the turn once
    /// the other needs are met.
    Measuring,
}

/// Why a test that reads the kernel's trace runs natively only (a `Native`
/// need): the trace's pages are the host kernel's, not the emulated CPU's.
pub const HOST_TRACE: &str = "the trace's pages are the host kernel's";

/// True when the test may go on. Otherwise prints `skipped TEST: WHY` on
/// stderr and, when `RTLAT_SKIP_LOG` names a file, appends
/// `test<TAB>TEST<TAB>WHY` to it: scripts/test.sh counts and lists skips
/// (nextest and libtest count them as passed). Under `CI=true` a skip for
/// something CI provides fails the test instead. TEST is the test's name,
/// which libtest and nextest give the thread that runs it.
pub fn need(what: Need) -> bool {
    let fast = std::env::var_os("RTLAT_TIER").is_some_and(|t| t == "fast");
    let why = match what {
        Need::Root if fast => "needs root: left to the full tier (scripts/test.sh)".to_string(),
        Need::Root if is_root() => return true,
        Need::Root => provided(
            false,
            "root (RT scheduling, mlock, /dev/cpu_dma_latency, namespaces)",
        ),
        Need::Native(why) => match emulator() {
            Some(emu) => format!("under {emu}: {why}"),
            None => return true,
        },
        Need::Program(program, package) => {
            let found = std::process::Command::new("sh")
                .args(["-c", &format!("command -v {program}")])
                .output()
                .is_ok_and(|o| o.status.success());
            if found {
                return true;
            }
            provided(false, &format!("{program} (apt-get install {package})"))
        }
        Need::Provided(true, _) | Need::Machine(true, _) | Need::Measuring => return true,
        Need::Provided(false, what) => provided(false, what),
        Need::Machine(false, why) => why.to_string(),
        Need::File(var, script) => match std::env::var_os(var) {
            Some(v) if !v.is_empty() => return true,
            _ if fast => format!("needs {var} from {script}: left to the full tier"),
            _ => provided(
                false,
                &format!("{var} (made by {script}; scripts/test.sh sets it)"),
            ),
        },
        Need::Cpus(n, why) => {
            let cpus = std::thread::available_parallelism().map_or(1, |c| c.get());
            if cpus >= n {
                return true;
            }
            format!("{cpus} CPU(s), {n} needed: {why}")
        }
    };
    let test = test_name();
    eprintln!("skipped {test}: {why}");
    log_skip("test", &test, &why);
    false
}

/// The reason for a missing thing CI must have; under CI, a failure.
fn provided(present: bool, what: &str) -> String {
    assert!(
        present || !in_ci(),
        "{}: CI must provide {what}",
        test_name()
    );
    format!("needs {what}")
}

fn test_name() -> String {
    std::thread::current().name().unwrap_or("?").to_string()
}

/// Records a check skipped inside a test that otherwise runs (e.g. schema
/// validation without python3-jsonschema): prints `message` on stderr and logs
/// `check<TAB>TEST<TAB>WHY`.
pub fn skip_check(why: &str, message: &str) {
    eprintln!("{message}");
    log_skip("check", &test_name(), why);
}

fn log_skip(kind: &str, test: &str, why: &str) {
    let Some(path) = std::env::var_os("RTLAT_SKIP_LOG").filter(|p| !p.is_empty()) else {
        return;
    };
    let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
    let line = format!("{kind}\t{}\t{}\n", clean(test), clean(why));
    // One write of one short line to a file opened for appending: lines of
    // tests running in parallel (and in other processes) do not mix.
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

/// Runs `ip ARGS` (iproute2), asserting that it succeeds.
pub fn ip(args: &[&str]) {
    let out = std::process::Command::new("ip")
        .args(args)
        .output()
        .expect("ip runs");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Sends signal `sig` (a name or a number) to process `pid` with kill(1),
/// asserting that it was delivered.
pub fn send_signal(pid: u32, sig: &str) {
    let ok = std::process::Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .expect("kill runs")
        .success();
    assert!(ok, "kill -{sig} {pid} failed");
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

/// Tests that measure take turns: overlapping real-time runs (timer, switch,
/// cruncher, net, irq) would disturb each other's figures and timing-based
/// assertions. Hold the guard for the whole measuring part of a test. The
/// turn is an exclusive lock on a file, so that it holds between processes
/// (nextest runs each test in its own) as well as between threads.
pub fn measuring() -> Turn {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("measuring.lock");
    let file = lock_file(&path);
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
        .unwrap_or_else(|e| panic!("cannot lock {}: {e}", path.display()));
    Turn { _file: file }
}

/// `path`, made if missing, opened to hold an flock on it.
fn lock_file(path: &Path) -> std::fs::File {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()))
}

/// A measuring turn: the lock is released when the file closes, on drop.
pub struct Turn {
    _file: std::fs::File,
}

/// Options for a run without privileges: no real-time scheduling, no memory
/// locking, no /dev/cpu_dma_latency.
pub const UNPRIVILEGED: [&str; 5] = ["--policy", "other", "--no-mlock", "--dma-latency", "off"];

/// Asserts that `out` exited with `code`; when not, the message names `case`
/// and shows the run's stderr.
pub fn assert_exit(out: &Output, code: i32, case: &str) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{case}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `cmd` with `--json JSON` added, asserts that it exits with `code`
/// and that the result it wrote matches the schema, and returns its output
/// and the result.
pub fn run_json(cmd: &mut Command, json: &Path, code: i32) -> (Output, Value) {
    let out = cmd.arg("--json").arg(json).output().expect("runs");
    assert_exit(&out, code, &format!("{cmd:?}"));
    assert_schema_valid(json);
    (out, load(json))
}

pub fn stderr_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The one line a refused run printed on stderr, once asserted that the run
/// exited with `code` and printed just that line. `case` names the run in
/// failure messages.
pub fn error_line(out: &Output, code: i32, case: &str) -> String {
    let lines = stderr_lines(out);
    assert_eq!(out.status.code(), Some(code), "{case}: {lines:?}");
    assert_eq!(lines.len(), 1, "{case} printed {lines:?}");
    lines.into_iter().next().expect("one line")
}

/// Asserts that each of `cases` is a usage error: rtlat run with it exits 2,
/// prints one line on stderr, starting `rtlat: `, and nothing on stdout.
pub fn assert_usage_errors(cases: &[&[&str]]) {
    for args in cases {
        let out = rtlat().args(*args).output().expect("runs");
        let case = format!("{args:?}");
        let line = error_line(&out, 2, &case);
        assert!(line.starts_with("rtlat: "), "{case}: {line}");
        assert!(out.stdout.is_empty(), "{case} printed to stdout");
    }
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
    // The sum of `key` over the entries of the array `list`.
    let sum = |list: &Value, key: &str| -> u64 {
        list.as_array()
            .unwrap_or_else(|| panic!("no array for {key}: {t}"))
            .iter()
            .map(|e| e[key].as_u64().unwrap_or_else(|| panic!("no {key} in {e}")))
            .sum()
    };
    let hist = sum(&t["histogram"]["buckets"], "count");
    assert_eq!(hist, samples, "histogram counts != samples");
    let series = sum(&t["series"]["points"], "samples");
    assert_eq!(series, samples, "series samples != samples");
    let max_bucket_high = t["histogram"]["buckets"]
        .as_array()
        .and_then(|b| b.last())
        .map(|b| b["high_ns"].as_u64().expect("high"))
        .expect("a bucket");
    let max = t["summary"]["max_ns"].as_u64().expect("max");
    assert!(max <= max_bucket_high, "max {max} outside the last bucket");
}

/// The series (thread) `name` of result `r`.
pub fn thread<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no series {name} in {:?}", r["threads"]))
}

/// The names of result `r`'s series (threads), in order.
pub fn series_names(r: &Value) -> Vec<&str> {
    r["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect()
}

/// Result `r`'s notes, one a line.
pub fn notes(r: &Value) -> String {
    r["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The consistency of a whole result: the summary invariants of its total
/// and of every thread, and every thread's histogram and series.
pub fn assert_result_consistent(r: &Value) {
    assert_summary_invariants(&r["total"]);
    for t in r["threads"].as_array().expect("threads") {
        assert_summary_invariants(&t["summary"]);
        assert_thread_consistent(t);
    }
}

/// `rtlat timer --synthetic SEED --cpus 0 --loops LOOPS`: a deterministic
/// run of synthetic samples on CPU 0, which needs no privilege.
pub fn synthetic_on_cpu0(seed: u64, loops: u64) -> Command {
    let mut c = rtlat();
    c.args(["timer", "--synthetic", &seed.to_string()]).args([
        "--cpus",
        "0",
        "--loops",
        &loops.to_string(),
    ]);
    c
}

/// A short deterministic timer run (synthetic samples, no privilege needed)
/// writing its result to `dest`.
pub fn synthetic_timer(dest: &Path) -> Command {
    let mut c = synthetic_on_cpu0(1, 1000);
    c.args(["--quiet", "--json"]).arg(dest);
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

/// `rtlat timer OPTION` run as nobody (root only: the caller checks): the
/// one line it prints, after asserting exit 3 (the environment refused).
pub fn timer_as_nobody_error(option: &str) -> String {
    as_nobody_error(&["timer", option])
}

/// The one error line of `args` (a benchmark and its options) run as
/// nobody for 1 s at SCHED_OTHER, which must exit 3.
pub fn as_nobody_error(args: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = unprivileged_copy(dir.path());
    let out = as_nobody(&exe)
        .args(args)
        .args(["--duration", "1s", "--policy", "other"])
        .args(["--no-mlock", "--dma-latency", "off"])
        .output()
        .expect("setpriv runs");
    error_line(&out, 3, &args.join(" "))
}

/// A number from 1 to 249 that no other test, in this process or another,
/// holds for `kind` while the slot lives: for names and addresses that must
/// be unique on the machine (an address on the host's side of a veth pair).
/// Held through a lock on a file, which the kernel releases when a killed
/// test's process ends.
pub fn slot(kind: &str) -> Slot {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("slots");
    std::fs::create_dir_all(&dir).expect("slots directory");
    for n in 1..250 {
        let file = lock_file(&dir.join(format!("{kind}-{n}")));
        let lock = rustix::fs::FlockOperation::NonBlockingLockExclusive;
        if rustix::fs::flock(&file, lock).is_ok() {
            return Slot { n, _file: file };
        }
    }
    panic!("all 249 {kind} slots are taken");
}

/// A slot of [`slot`]: its number, free again on drop.
pub struct Slot {
    pub n: u32,
    _file: std::fs::File,
}
