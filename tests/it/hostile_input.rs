//! Input made to hurt: endless inputs, names that are not UTF-8, terminal
//! escapes in labels, result files whose figures contradict each other.
//! Each is refused with one line and exit 2, or handled correctly; none
//! panics or takes unbounded memory.

use crate::util::{bin, load};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The finished child's exit code, stderr and peak resident memory (KiB).
struct Ran {
    code: Option<i32>,
    stderr: String,
    max_rss_kib: libc::c_long,
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
const BOUNDED_KIB: libc::c_long = 640 << 10;
/// What refusing `/dev/zero` at its first byte may take.
const SMALL_KIB: libc::c_long = 64 << 10;

case!(dev_zero_is_refused_at_once_by_every_reader, [], |t| {
    let cases: [&[&str]; 4] = [
        &["report", "/dev/zero"],
        &["report", "--quiet", "/dev/zero", "--html", "out.html"],
        &["compare", "/dev/zero", "/dev/zero"],
        &["import", "/dev/zero", "-o", "out.json"],
    ];
    for args in cases {
        let r = run_str(t.dir(), args);
        assert_refused(&r, &["/dev/zero"]);
        assert!(
            r.max_rss_kib < SMALL_KIB,
            "{args:?}: {} KiB resident",
            r.max_rss_kib
        );
    }
    let r = run_str(
        t.dir(),
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
    assert!(!t.path("o.json").exists());
    assert!(!t.path("out.html").exists());
});

case!(a_fifo_fed_forever_stops_at_the_input_limit, [], |t| {
    // A result that never ends: one note after another.
    let fifo = t.path("endless.json");
    mkfifo(&fifo);
    feed_forever(&fifo, b"{\"notes\": [", b"\"an endless note\", ");
    let r = run_str(t.dir(), &["report", "endless.json"]);
    assert_refused(&r, &["endless.json", "256 MiB"]);
    assert!(r.max_rss_kib < BOUNDED_KIB, "{} KiB", r.max_rss_kib);
    // An import whose lines are each valid, forever.
    let fifo = t.path("endless.txt");
    mkfifo(&fifo);
    feed_forever(
        &fifo,
        b"== Sampling period: 1000 us\n\
RTT|  00:00:01  (periodic user-mode task, 1000 us period, priority 99)\n\
RTH|----lat min|----lat avg|----lat max|-overrun|---msw|---lat best|--lat worst\n",
        b"RTD|      0.703|      1.577|      7.746|       0|     0|      0.703|      7.746\n",
    );
    let r = run_str(
        t.dir(),
        &["import", "--from", "xenomai", "endless.txt", "-o", "x.json"],
    );
    assert_refused(&r, &["endless.txt", "256 MiB"]);
    assert!(r.max_rss_kib < BOUNDED_KIB, "{} KiB", r.max_rss_kib);
    assert!(!t.path("x.json").exists());
});

case!(a_suite_toml_and_a_manifest_are_read_bounded, [], |t| {
    let fifo = t.path("endless.toml");
    mkfifo(&fifo);
    feed_forever(&fifo, b"# a comment that never ends ", b"x");
    let r = run_str(t.dir(), &["suite", "endless.toml", "--out", "out"]);
    assert_refused(&r, &["endless.toml", "256 MiB"]);
    assert!(r.max_rss_kib < BOUNDED_KIB, "{} KiB", r.max_rss_kib);
    // A suite directory whose manifest is /dev/zero.
    let board = t.path("board");
    std::fs::create_dir(&board).expect("mkdir");
    std::os::unix::fs::symlink("/dev/zero", board.join("suite.json")).expect("symlink");
    let r = run_str(t.dir(), &["compare", "--by-board", "board"]);
    assert_refused(&r, &["suite.json"]);
    assert!(r.max_rss_kib < SMALL_KIB, "{} KiB", r.max_rss_kib);
});

case!(labels_and_names_are_bounded_where_they_enter, [], |t| {
    let long = "x".repeat(300);
    let p = mutated(t.dir(), "long.json", |v| v["label"] = json!(long));
    let name = p.file_name().and_then(|n| n.to_str()).expect("name");
    for args in [
        vec!["report", name],
        vec!["report", "-q", name, "--html", "r.html"],
        vec!["compare", name],
    ] {
        assert_refused(&run_str(t.dir(), &args), &["label", "256"]);
    }
    let p = mutated(t.dir(), "thread.json", |v| {
        v["threads"][0]["name"] = json!("t".repeat(300))
    });
    let name = p.file_name().and_then(|n| n.to_str()).expect("name");
    assert_refused(
        &run_str(t.dir(), &["report", name]),
        &["thread name", "256"],
    );
    // On the command line.
    let fixture = fixture_result();
    let src = fixture.to_str().expect("utf-8 path");
    let cases: [&[&str]; 2] = [
        &["import", src, "-o", "i.json", "--label", &long],
        &["timer", "--duration", "1s", "--label", &long],
    ];
    for args in cases {
        assert_refused(&run_str(t.dir(), args), &["label", "256"]);
    }
});

case!(
    inconsistent_result_files_are_refused_naming_the_field,
    [],
    |t| {
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
            mutated(t.dir(), &file, change);
            let mut want: Vec<&str> = vec![&file];
            want.extend_from_slice(wants);
            assert_refused(&run_str(t.dir(), &["report", &file]), &want);
            assert_refused(
                &run_str(t.dir(), &["compare", "--format", "csv", &file]),
                &want,
            );
        }
        // The untouched fixture and legitimate imports still load.
        let out = t
            .rtlat()
            .args(["report", "--quiet"])
            .arg(fixture_result())
            .output()
            .expect("run");
        assert!(out.status.success(), "{out:?}");
    }
);

fn ff(bytes: &[u8]) -> std::ffi::OsString {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::OsStr::from_bytes(bytes).to_os_string()
}

/// `args` with text and bytes mixed, run in `dir`.
fn run_mixed(dir: &Path, args: &[std::ffi::OsString]) -> Ran {
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    run_measured(dir, &refs)
}

fn args_of(words: &str, extra: &[std::ffi::OsString]) -> Vec<std::ffi::OsString> {
    let mut v: Vec<std::ffi::OsString> = words.split_whitespace().map(Into::into).collect();
    v.extend_from_slice(extra);
    v
}

/// No panic: exit 0, or one line and an exit code of the table (2, 3, 4).
fn assert_no_panic(r: &Ran, what: &str) {
    assert!(
        matches!(r.code, Some(0 | 2 | 3 | 4)),
        "{what}: exit {:?}: {}",
        r.code,
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "{what}: {}", r.stderr);
}

case!(
    a_non_utf8_label_is_refused_by_every_subcommand_that_takes_one,
    [],
    |t| {
        let label = ff(b"lab\xffel");
        for sub in [
            "timer",
            "switch",
            "cruncher",
            "net ping 127.0.0.1:9",
            "net serve",
            "irq loopback",
            "import x.txt -o x.json",
        ] {
            let r = run_mixed(t.dir(), &args_of(sub, &["--label".into(), label.clone()]));
            assert_refused(&r, &["--label", "not UTF-8"]);
        }
        // Any other text option, and an argument that is no option's value.
        let r = run_mixed(t.dir(), &args_of("load", &[ff(b"cpu:\xff")]));
        assert_refused(&r, &["not UTF-8"]);
        let r = run_mixed(t.dir(), &args_of("completions", &[ff(b"ba\xffsh")]));
        assert_no_panic(&r, "completions");
        assert_eq!(r.code, Some(2));
    }
);

case!(
    a_non_utf8_file_name_works_or_is_refused_by_every_subcommand,
    [],
    |t| {
        let d = t.dir();
        // An existing result under a name that is not UTF-8 reads like any other.
        let name = ff(b"r\xff.json");
        std::fs::copy(fixture_result(), d.join(&name)).expect("copy");
        for sub in [
            "report",
            "report --format lava",
            "compare",
            "compare --format csv",
        ] {
            let r = run_mixed(d, &args_of(sub, std::slice::from_ref(&name)));
            assert_eq!(r.code, Some(0), "{sub}: {}", r.stderr);
        }
        let html = ff(b"r\xff.html");
        let r = run_mixed(
            d,
            &args_of("report -q", &[name.clone(), "--html".into(), html.clone()]),
        );
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert!(d.join(&html).is_file());
        // An import from and to such names.
        let src = ff(b"ct\xff.json");
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/cyclictest.json"),
            d.join(&src),
        )
        .expect("copy");
        let out = ff(b"imp\xff.json");
        let r = run_mixed(d, &args_of("import -q", &[src, "-o".into(), out.clone()]));
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        crate::util::assert_schema_valid(&d.join(&out));
        // A suite file under such a name; the results directory must be UTF-8
        // (the manifest records command lines as text).
        let toml = ff(b"s\xff.toml");
        std::fs::write(
            d.join(&toml),
            "[[step]]\nname = \"t\"\nbench = \"timer\"\nduration = \"1s\"\n",
        )
        .expect("toml");
        let r = run_mixed(
            d,
            &args_of("suite", &[toml.clone(), "--out".into(), ff(b"o\xff")]),
        );
        assert_refused(&r, &["--out", "UTF-8"]);
        assert!(!d.join(ff(b"o\xff")).exists());
        // A missing file of that name: one line naming it, exit 2.
        let missing = ff(b"gone\xff.json");
        for sub in ["report", "compare", "import --from xenomai", "suite"] {
            let mut extra = vec![missing.clone()];
            if sub.starts_with("import") {
                extra.extend(["-o".into(), "o.json".into()]);
            }
            if sub == "suite" {
                extra = vec![ff(b"gone\xff.toml"), "--out".into(), "o".into()];
            }
            let r = run_mixed(d, &args_of(sub, &extra));
            assert_refused(&r, &["gone"]);
        }
        // Measuring subcommands write their result under such a name (checked
        // before measuring: a missing directory exits 4 at once).
        let json = ff(b"nodir\xff/r.json");
        for sub in [
            "timer --duration 1s",
            "switch --duration 1s",
            "cruncher --duration 1s",
            "net serve --duration 1s",
            "load cpu:1 --duration 1s",
        ] {
            let r = run_mixed(d, &args_of(sub, &["--json".into(), json.clone()]));
            assert_no_panic(&r, sub);
            assert_eq!(r.code, Some(4), "{sub}: {}", r.stderr);
        }
        let t = ff(b"t\xff.json");
        let r = run_mixed(
            d,
            &args_of(
                "timer --duration 1s --policy other --no-mlock --dma-latency off -q --json",
                std::slice::from_ref(&t),
            ),
        );
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        crate::util::assert_schema_valid(&d.join(&t));
        let man = ff(b"man\xff");
        let r = run_mixed(d, &args_of("man", std::slice::from_ref(&man)));
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert!(d.join(&man).join("rtlat.1").is_file());
    }
);

/// Every character of `out` a terminal would act on, other than line ends.
fn controls(out: &str) -> Vec<char> {
    out.chars()
        .filter(|&c| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c))
        .collect()
}

case!(
    escapes_and_line_ends_in_names_reach_no_terminal_and_forge_no_row,
    [],
    |t| {
        let evil = "evil\x1b[2J\x1b]0;owned\x07\nforged,row|x\r\"q\"\u{202e}";
        mutated(t.dir(), "esc.json", |v| {
            v["label"] = json!(evil);
            v["threads"][0]["name"] = json!("cpu0\n\x1b[31mall");
            v["system"]["hostname"] = json!("h\x1bost");
            v["notes"] = json!(["a note\nnote: a forged note\x1b[0m"]);
        });
        let out = |args: &[&str]| {
            let o = t
                .rtlat()
                .args(args)
                .current_dir(t.dir())
                .output()
                .expect("run");
            assert!(o.status.success(), "{args:?}: {o:?}");
            String::from_utf8(o.stdout).expect("utf-8")
        };
        let report = out(&["report", "esc.json"]);
        assert!(controls(&report).is_empty(), "{report:?}");
        assert!(report.contains("evil\\x1b[2J"), "{report}");
        assert_eq!(
            report.lines().filter(|l| l.starts_with("note:")).count(),
            1,
            "{report}"
        );
        assert!(
            !report
                .lines()
                .any(|l| l.starts_with("forged") || l.starts_with("all")),
            "{report}"
        );
        // One header and one row per result, in every table format.
        let text = out(&["compare", "esc.json", "esc.json"]);
        assert!(controls(&text).is_empty(), "{text:?}");
        assert_eq!(text.lines().filter(|l| l.starts_with("evil")).count(), 2);
        let md = out(&["compare", "--format", "markdown", "esc.json"]);
        assert!(controls(&md).is_empty(), "{md:?}");
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
        assert_eq!(rows.len(), 3, "{md}");
        // Each row has as many cells as the header: `|` in the label is escaped.
        let cells = |l: &str| l.replace("\\|", "").matches('|').count();
        assert_eq!(cells(rows[0]), cells(rows[2]), "{md}");
        let csv = out(&["compare", "--format", "csv", "esc.json"]);
        assert!(controls(&csv).is_empty(), "{csv:?}");
        assert_eq!(csv.lines().count(), 2, "{csv}");
        assert!(
            csv.lines()
                .nth(1)
                .expect("row")
                .starts_with("\"evil\\x1b[2J"),
            "{csv}"
        );
        assert!(csv.contains("\"\"q\"\""), "quotes doubled: {csv}");
        // HTML and SVG escape on their own.
        out(&[
            "report", "-q", "esc.json", "--html", "r.html", "--svg", "r.svg",
        ]);
        for f in ["r.html", "r.svg"] {
            let page = std::fs::read_to_string(t.path(f)).expect("read");
            assert!(!page.contains('\x1b') && !page.contains('\x07'), "{f}");
        }
    }
);

fn import_fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/import")
            .join(name),
    )
    .expect("fixture")
}

case!(
    numbers_beyond_range_are_refused_by_import_not_saturated,
    [],
    |t| {
        let hist = import_fixture("cyclictest-hist.txt").replacen(
            "# Max Latencies: 02427",
            "# Max Latencies: 10000000000000000000",
            1,
        );
        let mut ct: Value = serde_json::from_str(&import_fixture("cyclictest.json")).expect("json");
        ct["thread"]["0"]["max"] = json!(10_000_000_000_000_000_000u64);
        let mut avg = ct.clone();
        avg["thread"]["0"]["max"] = json!(1082);
        avg["thread"]["0"]["avg"] = json!(1e19);
        let rteval = import_fixture("rteval-3.8-summary.xml").replacen(
            "<maximum unit=\"us\">4857</maximum>",
            "<maximum unit=\"us\">10000000000000000000</maximum>",
            1,
        );
        let cases = [
            ("hist.txt", "cyclictest-hist", hist, "the max"),
            ("summary.xml", "rteval", rteval, "<maximum> of core 0"),
            (
                "max.json",
                "cyclictest-json",
                serde_json::to_string_pretty(&ct).expect("json"),
                "the max",
            ),
            (
                "avg.json",
                "cyclictest-json",
                serde_json::to_string_pretty(&avg).expect("json"),
                "the avg",
            ),
        ];
        for (file, from, text, what) in cases {
            std::fs::write(t.path(file), text).expect("write");
            let r = run_str(t.dir(), &["import", "--from", from, file, "-o", "out.json"]);
            assert_refused(&r, &[file, what, "out of range"]);
            assert!(!t.path("out.json").exists());
        }
    }
);

case!(
    a_step_name_of_300_characters_is_refused_before_anything_runs,
    [],
    |t| {
        let name = "s".repeat(300);
        std::fs::write(
            t.path("long.toml"),
            format!("[[step]]\nname = \"{name}\"\nbench = \"timer\"\nduration = \"1s\"\n"),
        )
        .expect("toml");
        let r = run_str(t.dir(), &["suite", "long.toml", "--out", "out"]);
        assert_refused(&r, &["long.toml", "step name", "300 characters", "256"]);
        assert!(!t.path("out").exists());
    }
);
