//! `rtlat report`, `rtlat compare`, `rtlat import`: exporters and plots on
//! synthetic results (byte for byte), validity (xmllint, chromium), the
//! regression check, every import fixture, and hostile input.
//! Snapshots are insta's (`tests/snapshots/report/*.snap`): `INSTA_UPDATE=always
//! cargo test` rewrites them, `cargo insta review` shows the changes.

use crate::util::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::snapshot::snapshot;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
}

/// A synthetic timer run on CPU 0 with the machine-dependent fields fixed.
fn synthetic(dir: &Path, name: &str, seed: u64, loops: u64, label: &str) -> PathBuf {
    let path = dir.join(name);
    let out = rtlat()
        .args([
            "timer",
            "--synthetic",
            &seed.to_string(),
            "--cpus",
            "0",
            "--loops",
            &loops.to_string(),
            "--quiet",
            "--json",
        ])
        .arg(&path)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut v = load(&path);
    v["start_time_utc"] = json!("2026-01-05T10:00:00.000Z");
    v["command_line"] = json!([
        "rtlat",
        "timer",
        "--synthetic",
        seed.to_string(),
        "--cpus",
        "0",
        "--loops",
        loops.to_string()
    ]);
    v["system"] = json!({
        "hostname": "board-a",
        "kernel_release": "6.6.21-rt26",
        "kernel_version": "#1 SMP PREEMPT_RT Tue Mar  5 14:12:40 CET 2024",
        "machine": "aarch64",
        "preempt_model": "PREEMPT_RT",
        "realtime_sysfs": true,
        "device_tree_model": "Raspberry Pi 4 Model B Rev 1.4",
        "cpu_count": 4,
        "online_cpus": "0-3"
    });
    v["measuring_cpu_time_ns"] = json!(0);
    v["label"] = json!(label);
    std::fs::write(&path, serde_json::to_string_pretty(&v).expect("json")).expect("write");
    path
}

fn run_in(dir: &Path, args: &[&str]) -> std::process::Output {
    rtlat().current_dir(dir).args(args).output().expect("runs")
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn have(tool: &str, package: &str) -> bool {
    let found = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !found {
        assert!(
            !in_ci(),
            "{tool} is missing: .ci/run must install {package}"
        );
        skip_check(
            &format!("{tool} is not installed (apt-get install {package})"),
            &format!("skipped: {tool} is not installed (apt-get install {package})"),
        );
    }
    found
}

fn assert_xml_valid(path: &Path) {
    if !have("xmllint", "libxml2-utils") {
        return;
    }
    let out = std::process::Command::new("xmllint")
        .arg("--noout")
        .arg(path)
        .output()
        .expect("xmllint runs");
    assert!(
        out.status.success(),
        "{} is not valid XML: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Exit 2 with exactly one line on stderr that contains every piece of `wants`.
fn assert_refused(out: &std::process::Output, wants: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    assert!(!err.contains("panicked"), "{err}");
    for w in wants {
        assert!(err.contains(w), "'{w}' not in: {err}");
    }
}

#[test]
fn report_text_svg_and_html_match_snapshots() {
    let dir = tempfile::tempdir().expect("tempdir");
    synthetic(dir.path(), "a.json", 7, 20_000, "board-a idle");
    let out = run_in(
        dir.path(),
        &["report", "a.json", "--svg", "a.svg", "--html", "a.html"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    snapshot("it-report.txt", &stdout(&out));
    let svg = std::fs::read_to_string(dir.path().join("a.svg")).expect("svg");
    snapshot("it-report.svg", &svg);
    let html = std::fs::read_to_string(dir.path().join("a.html")).expect("html");
    snapshot("it-report.html", &html);
    // Plots: histogram, latency over time, latency by percentile, each titled with what/on what/load.
    assert_eq!(svg.matches("<g transform=").count(), 3);
    for what in [
        "histogram — board-a idle",
        "over time — board-a idle",
        "by percentile — board-a idle",
        "Raspberry Pi 4",
        "load: none (idle)",
        "(log scale)",
        "µs",
    ] {
        assert!(svg.contains(what), "'{what}' missing from the SVG");
    }
    // Quiet: files only.
    let out = run_in(
        dir.path(),
        &["report", "a.json", "--quiet", "--svg", "b.svg"],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.svg")).expect("svg"),
        svg
    );
}

#[test]
fn svg_outputs_are_valid_xml() {
    let dir = tempfile::tempdir().expect("tempdir");
    synthetic(dir.path(), "a.json", 7, 20_000, "a");
    synthetic(dir.path(), "b.json", 8, 30_000, "b");
    let out = run_in(
        dir.path(),
        &["report", "a.json", "b.json", "--quiet", "--svg", "r.svg"],
    );
    assert_eq!(out.status.code(), Some(0));
    assert_xml_valid(&dir.path().join("r.svg"));
    let out = run_in(
        dir.path(),
        &["compare", "a.json", "b.json", "--svg", "c.svg"],
    );
    assert_eq!(out.status.code(), Some(0));
    assert_xml_valid(&dir.path().join("c.svg"));
    let c = std::fs::read_to_string(dir.path().join("c.svg")).expect("svg");
    assert!(c.contains("2 results compared"));
    assert!(
        c.contains(">a</text>") && c.contains(">b</text>"),
        "both results in the legend"
    );
}

/// Decode a PNG (RGB or RGBA, 8 bit) and print: distinct colours, non-white pixels, pixels.
const PNG_STATS: &str = r#"
import sys, zlib, struct
d = open(sys.argv[1], 'rb').read()
assert d[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat = 8, b''
while pos < len(d):
    n, = struct.unpack('>I', d[pos:pos+4]); t = d[pos+4:pos+8]; body = d[pos+8:pos+8+n]; pos += 12 + n
    if t == b'IHDR': w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
    elif t == b'IDAT': idat += body
assert depth == 8 and ctype in (2, 6), (depth, ctype)
bpp = 3 if ctype == 2 else 4
raw = zlib.decompress(idat); stride = w * bpp
prev = bytearray(stride); colors = set(); nonwhite = 0; i = 0
for y in range(h):
    f = raw[i]; i += 1; line = bytearray(raw[i:i+stride]); i += stride
    if f == 1:
        for x in range(bpp, stride): line[x] = (line[x] + line[x-bpp]) & 255
    elif f == 2:
        for x in range(stride): line[x] = (line[x] + prev[x]) & 255
    elif f == 3:
        for x in range(stride): line[x] = (line[x] + (((line[x-bpp] if x >= bpp else 0) + prev[x]) >> 1)) & 255
    elif f == 4:
        for x in range(stride):
            a = line[x-bpp] if x >= bpp else 0; b = prev[x]; c = prev[x-bpp] if x >= bpp else 0
            p = a + b - c; pa = abs(p - a); pb = abs(p - b); pc = abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else (b if pb <= pc else c))) & 255
    for x in range(0, stride, bpp):
        px = bytes(line[x:x+3]); colors.add(px)
        if px != b'\xff\xff\xff': nonwhite += 1
    prev = line
print(len(colors), nonwhite, w * h)
"#;

#[test]
fn html_report_is_offline_and_renders_in_chromium() {
    let dir = tempfile::tempdir().expect("tempdir");
    synthetic(dir.path(), "a.json", 7, 20_000, "board-a idle");
    let out = run_in(
        dir.path(),
        &["report", "a.json", "--quiet", "--html", "a.html"],
    );
    assert_eq!(out.status.code(), Some(0));
    let html_path = dir.path().join("a.html");
    let html = std::fs::read_to_string(&html_path).expect("html");
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "a URL in the report"
    );
    assert!(
        !html.contains(" src=") && !html.contains("<link"),
        "an external resource in the report"
    );
    assert_eq!(html.matches("<svg ").count(), 3);
    // The embedded result data is the file's.
    let tag = "<script type=\"application/json\" id=\"data-0\">";
    let start = html.find(tag).expect("embedded data") + tag.len();
    let end = start + html[start..].find("</script>").expect("end of data");
    let embedded: Value = serde_json::from_str(&html[start..end]).expect("embedded JSON");
    let read = rtlat::result::RunResult::load(&dir.path().join("a.json")).expect("result");
    assert!(
        embedded == serde_json::to_value(&read).expect("value"),
        "the embedded data is not the result"
    );

    if !have("chromium", "chromium") || !have("python3", "python3") {
        return;
    }
    let png = dir.path().join("shot.png");
    let profile = dir.path().join("profile");
    let shot = std::process::Command::new("timeout")
        .args([
            "-k",
            "5",
            "120",
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg("--window-size=1200,900")
        .arg(format!("file://{}", html_path.display()))
        .output()
        .expect("chromium runs");
    assert!(
        png.exists(),
        "no screenshot: {}",
        String::from_utf8_lossy(&shot.stderr)
    );
    let stats = std::process::Command::new("python3")
        .args(["-c", PNG_STATS])
        .arg(&png)
        .output()
        .expect("python3 runs");
    assert!(
        stats.status.success(),
        "{}",
        String::from_utf8_lossy(&stats.stderr)
    );
    let nums: Vec<u64> = stdout(&stats)
        .split_whitespace()
        .map(|n| n.parse().expect("number"))
        .collect();
    let (colors, nonwhite, pixels) = (nums[0], nums[1], nums[2]);
    // A blank page is one colour; the report has text, tables and coloured plot lines.
    assert!(colors >= 16, "only {colors} colours in the screenshot");
    assert!(
        nonwhite * 50 > pixels,
        "only {nonwhite} of {pixels} pixels are not white"
    );
}

#[test]
fn compare_prints_one_row_per_result_in_every_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    synthetic(dir.path(), "a.json", 7, 20_000, "board-a");
    synthetic(dir.path(), "b.json", 8, 30_000, "board-b");
    synthetic(dir.path(), "c.json", 9, 10_000, "board-c");
    let files = ["a.json", "b.json", "c.json"];
    let text = run_in(dir.path(), &[&["compare"], &files[..]].concat());
    assert_eq!(text.status.code(), Some(0));
    let t = stdout(&text);
    let rows: Vec<&str> = t.lines().filter(|l| l.starts_with("board-")).collect();
    assert_eq!(rows.len(), 3, "{t}");
    for (row, label) in rows.iter().zip(["board-a", "board-b", "board-c"]) {
        assert!(row.starts_with(label), "{row}");
    }
    let header = t.lines().find(|l| l.starts_with("label")).expect("header");
    for col in ["min", "avg", "max", "p99", "p99.99", "overruns", "duration"] {
        assert!(
            header.split_whitespace().any(|h| h == col),
            "no column {col}: {header}"
        );
    }
    snapshot("it-compare.txt", &t);

    let md = stdout(&run_in(
        dir.path(),
        &[&["compare", "--format", "markdown"], &files[..]].concat(),
    ));
    let table: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(table.len(), 5, "header, separator and three rows: {md}");
    let cells = |l: &str| l.trim_matches('|').split(" | ").count();
    assert!(
        table
            .iter()
            .all(|l| l.ends_with('|') && cells(l) == cells(table[0])),
        "{md}"
    );
    assert!(
        table[1]
            .trim_matches('|')
            .split('|')
            .all(|c| c.trim().trim_end_matches(':') == "---"),
        "{}",
        table[1]
    );
    snapshot("it-compare.md", &md);

    let csv = stdout(&run_in(
        dir.path(),
        &[&["compare", "--format", "csv"], &files[..]].concat(),
    ));
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 4, "{csv}");
    assert!(
        lines[0].starts_with("label,benchmark,load,min_us,avg_us,max_us"),
        "{}",
        lines[0]
    );
    assert!(lines
        .iter()
        .all(|l| l.split(',').count() == lines[0].split(',').count()));
    snapshot("it-compare.csv", &csv);
}

/// A result written by rtlat before the typed model (schema version 1, a real
/// 2 s timer run on CPU 0) still loads in `report` and `compare`.
#[test]
fn a_version_1_result_loads_in_report_and_compare() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results/v1-timer.json");
    let v = load(&path);
    assert_eq!(v["schema_version"], 1);
    let us = |ns: &Value| {
        let ns = ns.as_u64().expect("ns");
        format!("{}.{:03}", ns / 1000, ns % 1000)
    };
    let (min, avg, max) = (
        us(&v["total"]["min_ns"]),
        us(&v["total"]["avg_ns"]),
        us(&v["total"]["max_ns"]),
    );
    let samples = v["total"]["samples"].to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let svg = dir.path().join("v1.svg");
    let html = dir.path().join("v1.html");
    let out = rtlat()
        .arg("report")
        .arg(&path)
        .arg("--svg")
        .arg(&svg)
        .arg("--html")
        .arg(&html)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    assert!(
        text.contains(": timer (")
            && text.contains("rtlat timer: 1 thread(s), period 1ms, SCHED_FIFO 80"),
        "{text}"
    );
    let cpu0 = text
        .lines()
        .find(|l| l.starts_with("cpu0 "))
        .expect("a cpu0 row");
    for figure in [&samples, &min, &avg, &max] {
        assert!(cpu0.contains(figure.as_str()), "{figure} not in: {cpu0}");
    }
    assert!(std::fs::read_to_string(&svg)
        .expect("svg")
        .contains("Timer wake-up latency"));
    assert!(std::fs::read_to_string(&html)
        .expect("html")
        .contains("Timer wake-up latency"));
    for (format, head) in [
        ("text", "timer: latencies in us, 2 result(s)"),
        ("csv", "label,benchmark,load,min_us"),
    ] {
        let out = rtlat()
            .args(["compare", "--format", format])
            .arg(&path)
            .arg(&path)
            .output()
            .expect("runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let t = stdout(&out);
        assert!(t.starts_with(head), "{t}");
        let rows: Vec<&str> = t
            .lines()
            .skip(if format == "text" { 2 } else { 1 })
            .collect();
        assert_eq!(rows.len(), 2, "{t}");
        for row in rows {
            for figure in [&min, &avg, &max] {
                assert!(row.contains(figure.as_str()), "{figure} not in: {row}");
            }
        }
    }
    let out = rtlat()
        .args(["compare", "--baseline"])
        .arg(&path)
        .arg(&path)
        .args(["--fail-if-worse", "0%"])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("max {max} us")));
}

fn max_us(path: &Path) -> f64 {
    load(path)["total"]["max_ns"].as_f64().expect("max") / 1000.0
}

#[test]
fn fail_if_worse_exits_1_only_when_worse_beyond_the_margin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = synthetic(dir.path(), "a.json", 7, 20_000, "old");
    let b = synthetic(dir.path(), "b.json", 8, 30_000, "new");
    let (old, new) = (max_us(&a), max_us(&b));
    assert!(
        new > old * 1.1 && new < old * 1.5,
        "fixture maxima {old} / {new}"
    );
    let worse = run_in(
        dir.path(),
        &[
            "compare",
            "b.json",
            "--baseline",
            "a.json",
            "--fail-if-worse",
            "10%",
        ],
    );
    assert_eq!(
        worse.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&worse.stderr)
    );
    assert!(String::from_utf8_lossy(&worse.stderr).contains("WORSE new: max"));
    assert_eq!(
        stdout(&worse)
            .lines()
            .filter(|l| l.starts_with("old") || l.starts_with("new"))
            .count(),
        2
    );
    // Within a wide margin, better, or equal: success.
    let wide = run_in(
        dir.path(),
        &[
            "compare",
            "b.json",
            "--baseline",
            "a.json",
            "--fail-if-worse",
            "50%",
        ],
    );
    assert_eq!(wide.status.code(), Some(0));
    let better = run_in(
        dir.path(),
        &[
            "compare",
            "a.json",
            "--baseline",
            "b.json",
            "--fail-if-worse",
            "10",
        ],
    );
    assert_eq!(better.status.code(), Some(0));
    let same = run_in(
        dir.path(),
        &[
            "compare",
            "a.json",
            "--baseline",
            "a.json",
            "--fail-if-worse",
            "0%",
        ],
    );
    assert_eq!(same.status.code(), Some(0));
    // Another metric: the average barely moves.
    let avg = run_in(
        dir.path(),
        &[
            "compare",
            "b.json",
            "--baseline",
            "a.json",
            "--fail-if-worse",
            "10%",
            "--metric",
            "avg",
        ],
    );
    assert_eq!(
        avg.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&avg.stderr)
    );
    // A metric the sample count does not support, a bad margin, a bad metric: exit 2.
    let short = synthetic(dir.path(), "s.json", 9, 500, "short");
    assert!(short.exists());
    let p = run_in(
        dir.path(),
        &[
            "compare",
            "s.json",
            "--baseline",
            "a.json",
            "--fail-if-worse",
            "10%",
            "--metric",
            "p99.99",
        ],
    );
    assert_refused(&p, &["p99.99"]);
    assert_refused(
        &run_in(
            dir.path(),
            &[
                "compare",
                "b.json",
                "--baseline",
                "a.json",
                "--fail-if-worse",
                "ten",
            ],
        ),
        &["margin"],
    );
    assert_refused(
        &run_in(dir.path(), &["compare", "b.json", "--metric", "fastest"]),
        &["unknown metric"],
    );
    // --fail-if-worse needs --baseline (clap's message names the missing argument on its next line).
    assert_refused(
        &run_in(dir.path(), &["compare", "b.json", "--fail-if-worse", "10%"]),
        &["required"],
    );
}

/// (format, fixture, benchmark, threads)
const IMPORTS: [(&str, &str, &str, usize); 7] = [
    ("cyclictest-json", "cyclictest-hist.json", "timer", 2),
    ("cyclictest-json", "cyclictest.json", "timer", 2),
    ("cyclictest-hist", "cyclictest-hist.txt", "timer", 2),
    ("xenomai", "xenomai-latency.txt", "timer", 1),
    ("rtla-timerlat", "rtla-timerlat-hist.txt", "timer", 4),
    ("jitterdebugger", "jitterdebugger-results.json", "timer", 2),
    ("sockperf", "sockperf-full-log.csv", "net", 1),
];

#[test]
fn every_fixture_imports_and_compares_and_plots_like_an_rtlat_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    synthetic(dir.path(), "rtlat.json", 7, 20_000, "rtlat");
    for (format, file, benchmark, threads) in IMPORTS {
        let out_name = format!("{file}.result.json");
        let out = rtlat()
            .current_dir(dir.path())
            .args(["import", "--from", format])
            .arg(fixture(file))
            .args(["-o", &out_name, "--quiet"])
            .output()
            .expect("runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let path = dir.path().join(&out_name);
        assert_schema_valid(&path);
        let r = load(&path);
        assert_eq!(r["benchmark"], benchmark, "{file}");
        assert_eq!(r["tool"]["name"], "rtlat");
        assert_eq!(r["config"]["imported_from"], format);
        assert_eq!(r["config"]["source_file"], file);
        assert!(
            r["notes"][0]
                .as_str()
                .expect("note")
                .contains("imported by rtlat import"),
            "{file}"
        );
        let ts = r["threads"].as_array().expect("threads");
        assert_eq!(ts.len(), threads, "{file}");
        for t in ts {
            let s = &t["summary"];
            let n = s["samples"].as_u64().expect("samples");
            assert!(n > 0, "{file}: no samples in {}", t["name"]);
            let counted: u64 = t["histogram"]["buckets"]
                .as_array()
                .expect("buckets")
                .iter()
                .map(|b| b["count"].as_u64().expect("count"))
                .sum();
            if counted > 0 {
                // Nothing dropped: the histogram holds every sample the tool counted.
                assert_eq!(counted, n, "{file}: {}", t["name"]);
                assert_summary_invariants(s);
            }
        }
        let snap = std::fs::read_to_string(&path).expect("result");
        snapshot(&format!("it-import-{file}.json"), &snap);
        // Compares and plots beside an rtlat run.
        let cmp = run_in(dir.path(), &["compare", "rtlat.json", &out_name]);
        assert_eq!(
            cmp.status.code(),
            Some(0),
            "{file}: {}",
            String::from_utf8_lossy(&cmp.stderr)
        );
        let rows = stdout(&cmp)
            .lines()
            .filter(|l| !l.starts_with("label") && l.contains("none (idle)"))
            .count();
        assert_eq!(rows, 2, "{file}: {}", stdout(&cmp));
        let svg = format!("{file}.svg");
        let rep = run_in(
            dir.path(),
            &[
                "report",
                &out_name,
                "--svg",
                &svg,
                "--html",
                &format!("{file}.html"),
            ],
        );
        assert_eq!(rep.status.code(), Some(0), "{file}");
        assert!(stdout(&rep).contains("imported by rtlat import"));
        assert_xml_valid(&dir.path().join(&svg));
    }
    // The import and the rtlat run of the same kind overlay in one plot.
    let out = run_in(
        dir.path(),
        &[
            "compare",
            "rtlat.json",
            "cyclictest-hist.json.result.json",
            "--svg",
            "both.svg",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    assert_xml_valid(&dir.path().join("both.svg"));
}

#[test]
fn import_label_and_cyclictest_details() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run_in(
        dir.path(),
        &[
            "import",
            "--from",
            "cyclictest-json",
            fixture("cyclictest-hist.json").to_str().expect("path"),
            "-o",
            "c.json",
            "--label",
            "vm cyclictest",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stdout(&out).starts_with("== vm cyclictest: timer (c.json)"),
        "{}",
        stdout(&out)
    );
    let r = load(&dir.path().join("c.json"));
    assert_eq!(r["label"], "vm cyclictest");
    assert_eq!(r["config"]["period_ns"], 1_000_000);
    assert_eq!(r["tuning"]["policy"], "fifo");
    assert_eq!(r["tuning"]["priority"], 80);
    assert_eq!(r["threads"][0]["name"], "cpu0");
    assert_eq!(
        r["system"]["kernel_release"]
            .as_str()
            .map(|s| !s.is_empty()),
        Some(true)
    );
    assert!(r["start_time_utc"]
        .as_str()
        .expect("start")
        .ends_with(".000Z"));
    // Without -h there is no distribution, and the result says so.
    let out = run_in(
        dir.path(),
        &[
            "import",
            "--from",
            "cyclictest-json",
            fixture("cyclictest.json").to_str().expect("path"),
            "-o",
            "n.json",
            "--quiet",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let r = load(&dir.path().join("n.json"));
    assert!(r["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .any(|n| n.as_str().is_some_and(|s| s.contains("no histogram"))));
    assert!(r["label"]
        .as_str()
        .expect("label")
        .starts_with("cyclictest "));
}

#[test]
fn import_without_from_tells_the_format_from_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (format, file, ..) in IMPORTS {
        let out_name = format!("{file}.detected.json");
        let out = run_in(
            dir.path(),
            &[
                "import",
                fixture(file).to_str().expect("path"),
                "-o",
                &out_name,
                "--quiet",
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = load(&dir.path().join(&out_name));
        assert_eq!(r["config"]["imported_from"], format, "{file}");
    }
    // What no format claims is refused, naming --from and the formats.
    let unknown = write(dir.path(), "unknown.txt", "hello\nworld\n");
    let out = run_in(
        dir.path(),
        &["import", unknown.to_str().expect("path"), "-o", "u.json"],
    );
    assert_refused(&out, &["cannot tell", "--from", "sockperf"]);
    assert!(!dir.path().join("u.json").exists());
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

#[test]
fn garbled_imports_name_the_line_and_what_was_expected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ct = std::fs::read_to_string(fixture("cyclictest-hist.json")).expect("fixture");
    let cases: Vec<(&str, String, &str)> = vec![
        ("cyclictest-json", ct[..ct.len() / 2].to_string(), ""),
        ("cyclictest-json", "{\n \"thread\": {\n  \"0\": {\"cycles\": -5}\n }\n}\n".into(), ":3:"),
        ("cyclictest-json", ct.replacen("\"cycles\"", "\"cycle\"", 1), ""),
        ("cyclictest-hist", "# Histogram\n000000 000001\t000002\n000001 00000x\t000002\n".into(), ":3:"),
        ("cyclictest-hist", "# Histogram\n000000 000001\t000002\n000001 000004\n".into(), ":3:"),
        ("xenomai", "== Sampling period: 1000 us\nRTD|      1.0|      2.0|      x|       0|     0|      1.0|      2.0\n".into(), ":2:"),
        ("xenomai", "== Sampling period: 1000 us\nXYZ|1|2\n".into(), ":2:"),
        ("rtla-timerlat", "# RTLA timerlat histogram\nIndex   IRQ-000   Thr-000\n0   5   6\n1   five   6\n".into(), ":4:"),
        ("rtla-timerlat", "# RTLA timerlat histogram\nIndex   IRQ-000   Thr-000\n0   5   6\nover:   0   0\ncount:  5   7\n".into(), ":5:"),
        ("jitterdebugger", "{\n \"cpu\": {\n  \"0\": {\"count\": \"many\"}\n }\n}\n".into(), ":3:"),
        ("sockperf", "packet, txTime(sec), rxTime(sec), latency(usec)\n0, 1.000000000, 1.000050000, 25.000\n1, abc, 1.0, 2.0\n".into(), ":3:"),
        ("sockperf", "packet, txTime(sec), rxTime(sec), latency(usec)\n0, 1.000050000, 1.000000000, 25.000\n".into(), ":2:"),
    ];
    for (i, (format, text, line)) in cases.iter().enumerate() {
        let input = write(dir.path(), &format!("bad{i}.txt"), text);
        let out = rtlat()
            .current_dir(dir.path())
            .args(["import", "--from", format])
            .arg(&input)
            .args(["-o", "out.json"])
            .output()
            .expect("runs");
        let mut wants = vec!["expected", "not valid"];
        if !line.is_empty() {
            wants.push(line);
        }
        assert_refused(&out, &wants);
        assert!(
            !dir.path().join("out.json").exists(),
            "{format}: a result was written for bad input"
        );
    }
}

#[test]
fn hostile_inputs_are_refused_without_panicking() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = synthetic(dir.path(), "good.json", 7, 2_000, "good");
    let text = std::fs::read_to_string(&good).expect("good");
    let v: Value = serde_json::from_str(&text).expect("json");
    let mutated = |f: &dyn Fn(&mut Value)| {
        let mut m = v.clone();
        f(&mut m);
        serde_json::to_string(&m).expect("json")
    };
    let huge = dir.path().join("huge.json");
    std::fs::File::create(&huge)
        .expect("create")
        .set_len(1 << 30)
        .expect("sparse 1 GB file");
    let cases: Vec<(String, &[&str])> = vec![
        (text[..text.len() / 2].to_string(), &["not an rtlat result"]),
        (
            mutated(&|m| m["schema_version"] = json!(99)),
            &["newer than this rtlat"],
        ),
        (
            mutated(&|m| m["schema"] = json!("something-else")),
            &["schema"],
        ),
        (
            text.replacen("\"avg_ns\": ", "\"avg_ns\": NaN, \"x\": ", 1),
            &["not an rtlat result"],
        ),
        (
            mutated(&|m| m["total"]["samples"] = json!(-5)),
            &["not an rtlat result"],
        ),
        (
            mutated(&|m| m["threads"][0]["summary"]["min_ns"] = json!(u64::MAX)),
            &["min", "above max"],
        ),
        (
            mutated(&|m| m["threads"][0]["histogram"]["buckets"][0]["low_ns"] = json!(257)),
            &["bucket"],
        ),
        (
            mutated(&|m| m["threads"][0]["histogram"]["scheme"] = json!("linear")),
            &["scheme"],
        ),
        (
            mutated(&|m| m["threads"][0]["summary"]["percentiles"][0]["p"] = json!(250.0)),
            &["percentile"],
        ),
        (
            "\u{1}\u{2}garbage\u{0}".to_string(),
            &["not an rtlat result"],
        ),
        (
            mutated(&|m| m["benchmark"] = json!("latency")),
            &["not an rtlat result", "unknown variant"],
        ),
        // Inconsistent figures: each is named.
        (
            mutated(&|m| {
                let n = m["threads"][0]["summary"]["samples"].as_u64().unwrap();
                m["threads"][0]["summary"]["samples"] = json!(n + 7);
            }),
            &["histogram holds", "summary says"],
        ),
        (
            mutated(&|m| {
                let n = m["total"]["samples"].as_u64().unwrap();
                m["total"]["samples"] = json!(n * 2 + 1);
            }),
            &["total", "threads hold only"],
        ),
        (
            mutated(&|m| {
                let max = m["threads"][0]["summary"]["max_ns"].as_u64().unwrap();
                m["threads"][0]["summary"]["percentiles"][0]["ns"] = json!(max + 1);
            }),
            &["outside min"],
        ),
        (
            mutated(&|m| {
                let ps = m["threads"][0]["summary"]["percentiles"]
                    .as_array_mut()
                    .unwrap();
                ps.swap(0, 1);
            }),
            &["not in order"],
        ),
        (
            mutated(&|m| {
                m["threads"] = json!([]);
                m["phases"] = json!([]);
            }),
            &["without threads"],
        ),
    ];
    for (i, (content, wants)) in cases.iter().enumerate() {
        let p = write(dir.path(), &format!("h{i}.json"), content);
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .expect("name")
            .to_string();
        assert_refused(&run_in(dir.path(), &["report", &name]), wants);
        assert_refused(&run_in(dir.path(), &["compare", "good.json", &name]), wants);
    }
    assert_refused(
        &run_in(dir.path(), &["report", "huge.json"]),
        &["too large"],
    );
    assert_refused(
        &run_in(dir.path(), &["compare", "missing.json"]),
        &["missing.json"],
    );
    assert_refused(&run_in(dir.path(), &["report", "."]), &["directory"]);
    // Every importer refuses a 1 GB file of zeros and a file of noise, quickly and on one line.
    let noise: Vec<u8> = (0..20_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(dir.path().join("noise.bin"), noise).expect("noise");
    for (format, ..) in IMPORTS {
        for input in ["huge.json", "noise.bin"] {
            let out = rtlat()
                .current_dir(dir.path())
                .args(["import", "--from", format, input, "-o", "x.json"])
                .timeout(Duration::from_secs(60))
                .output()
                .expect("runs");
            assert_refused(&out, &["expected"]);
        }
    }
    assert_refused(
        &run_in(
            dir.path(),
            &[
                "import",
                "--from",
                "sockperf",
                "missing.csv",
                "-o",
                "x.json",
            ],
        ),
        &["missing.csv"],
    );
}

#[test]
fn a_baseline_of_another_benchmark_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let net = dir.path().join("net.json");
    let out = rtlat()
        .args(["import", "--quiet"])
        .arg(fixture("sockperf-full-log.csv"))
        .arg("-o")
        .arg(&net)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let timer = dir.path().join("timer.json");
    let out = synthetic_timer(&timer).output().expect("runs");
    assert_eq!(out.status.code(), Some(0));
    // Without --fail-if-worse too: a timer maximum is no round trip.
    let out = rtlat()
        .arg("compare")
        .arg(&timer)
        .arg("--baseline")
        .arg(&net)
        .output()
        .expect("runs");
    assert_refused(&out, &["like with like"]);
}

#[test]
fn another_tools_json_is_pointed_at_import() {
    let out = rtlat()
        .arg("report")
        .arg(fixture("cyclictest.json"))
        .output()
        .expect("runs");
    assert_refused(&out, &["not an rtlat result", "rtlat import"]);
}
