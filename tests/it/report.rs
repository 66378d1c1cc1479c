//! `rtlat report`, `rtlat compare`: exporters and plots on
//! synthetic results (byte for byte), validity (xmllint, chromium), the
//! regression check, and hostile input (imports: `import.rs`).
//! Snapshots are insta's (`tests/snapshots/report/*.snap`): `INSTA_UPDATE=always
//! cargo test` rewrites them, `cargo insta review` shows the changes.

use crate::util::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

use crate::snapshot::snapshot;

pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
}

/// A synthetic timer run on CPU 0 with the machine-dependent fields fixed.
pub(crate) fn synthetic(dir: &Path, name: &str, seed: u64, loops: u64, label: &str) -> PathBuf {
    let path = dir.join(name);
    let out = synthetic_on_cpu0(seed, loops)
        .args(["--quiet", "--json"])
        .arg(&path)
        .output()
        .expect("runs");
    assert_exit(&out, 0, "out");
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
    // The system is replaced, and with it what the run noted of its own
    // (under qemu-user: that it was emulated).
    if let Some(notes) = v["notes"].as_array_mut() {
        notes.retain(|n| !n.as_str().is_some_and(|s| s.starts_with("emulated:")));
    }
    v["measuring_cpu_time_ns"] = json!(0);
    v["label"] = json!(label);
    std::fs::write(&path, serde_json::to_string_pretty(&v).expect("json")).expect("write");
    path
}

pub(crate) fn run_in(dir: &Path, args: &[&str]) -> std::process::Output {
    rtlat().current_dir(dir).args(args).output().expect("runs")
}

pub(crate) fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Headless chromium (ended after 120 s), offline, its profile in
/// `profile`: a test that runs it needs `chromium`.
pub(crate) fn headless_chromium(profile: &Path) -> std::process::Command {
    let mut c = std::process::Command::new("timeout");
    c.args(["-k", "5", "120", "chromium", "--headless", "--no-sandbox"])
        .args(["--disable-gpu", "--no-first-run"])
        .args([
            "--disable-background-networking",
            "--disable-component-update",
        ])
        .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// What a test that calls [`assert_xml_valid`] needs.
pub(crate) const XMLLINT: Need = Need::Program("xmllint", "libxml2-utils");

/// Asserts that `path` is well-formed XML (the test needs [`XMLLINT`]).
pub(crate) fn assert_xml_valid(path: &Path) {
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
pub(crate) fn assert_refused(out: &std::process::Output, wants: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    assert!(!err.contains("panicked"), "{err}");
    for w in wants {
        assert!(err.contains(w), "'{w}' not in: {err}");
    }
}

case!(report_text_svg_and_html_match_snapshots, [], |t| {
    synthetic(t.dir(), "a.json", 7, 20_000, "board-a idle");
    let out = run_in(
        t.dir(),
        &["report", "a.json", "--svg", "a.svg", "--html", "a.html"],
    );
    assert_exit(&out, 0, "out");
    snapshot("it-report.txt", &stdout(&out));
    let svg = std::fs::read_to_string(t.path("a.svg")).expect("svg");
    snapshot("it-report.svg", &svg);
    let html = std::fs::read_to_string(t.path("a.html")).expect("html");
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
    let out = run_in(t.dir(), &["report", "a.json", "--quiet", "--svg", "b.svg"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(t.path("b.svg")).expect("svg"), svg);
});

case!(svg_outputs_are_valid_xml, [XMLLINT], |t| {
    synthetic(t.dir(), "a.json", 7, 20_000, "a");
    synthetic(t.dir(), "b.json", 8, 30_000, "b");
    let out = run_in(
        t.dir(),
        &["report", "a.json", "b.json", "--quiet", "--svg", "r.svg"],
    );
    assert_eq!(out.status.code(), Some(0));
    assert_xml_valid(&t.path("r.svg"));
    let out = run_in(t.dir(), &["compare", "a.json", "b.json", "--svg", "c.svg"]);
    assert_eq!(out.status.code(), Some(0));
    assert_xml_valid(&t.path("c.svg"));
    let c = std::fs::read_to_string(t.path("c.svg")).expect("svg");
    assert!(c.contains("2 results compared"));
    assert!(
        c.contains(">a</text>") && c.contains(">b</text>"),
        "both results in the legend"
    );
});

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

case!(
    html_report_is_offline_and_renders_in_chromium,
    [
        Program("chromium", "chromium"),
        Program("python3", "python3")
    ],
    |t| {
        synthetic(t.dir(), "a.json", 7, 20_000, "board-a idle");
        let out = run_in(
            t.dir(),
            &["report", "a.json", "--quiet", "--html", "a.html"],
        );
        assert_eq!(out.status.code(), Some(0));
        let html_path = t.path("a.html");
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
        let read = rtlat::result::RunResult::load(&t.path("a.json")).expect("result");
        assert!(
            embedded == serde_json::to_value(&read).expect("value"),
            "the embedded data is not the result"
        );

        let png = t.path("shot.png");
        let profile = t.path("profile");
        let shot = headless_chromium(&profile)
            .args(["--disable-quic", "--disable-sync", "--hide-scrollbars"])
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
);

case!(compare_prints_one_row_per_result_in_every_format, [], |t| {
    let dir = t.dir();
    synthetic(dir, "a.json", 7, 20_000, "board-a");
    synthetic(dir, "b.json", 8, 30_000, "board-b");
    synthetic(dir, "c.json", 9, 10_000, "board-c");
    let files = ["a.json", "b.json", "c.json"];
    let text = run_in(dir, &[&["compare"], &files[..]].concat());
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
        dir,
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
        dir,
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
});

// A result written by rtlat before the typed model (schema version 1, a real
// 2 s timer run on CPU 0) still loads in `report` and `compare`.
case!(a_version_1_result_loads_in_report_and_compare, [], |t| {
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
    let svg = t.path("v1.svg");
    let html = t.path("v1.html");
    let out = t
        .rtlat()
        .arg("report")
        .arg(&path)
        .arg("--svg")
        .arg(&svg)
        .arg("--html")
        .arg(&html)
        .output()
        .expect("runs");
    assert_exit(&out, 0, "out");
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
        let out = t
            .rtlat()
            .args(["compare", "--format", format])
            .arg(&path)
            .arg(&path)
            .output()
            .expect("runs");
        assert_exit(&out, 0, "out");
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
    let out = t
        .rtlat()
        .args(["compare", "--baseline"])
        .arg(&path)
        .arg(&path)
        .args(["--fail-if-worse", "0%"])
        .output()
        .expect("runs");
    assert_exit(&out, 0, "out");
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("max {max} us")));
    // Rendered as before the schema widened: every figure it records, as it was shown.
    let fixtures = path.parent().expect("dir");
    let text = stdout(&run_in(fixtures, &["report", "v1-timer.json"]));
    snapshot("v1-timer.txt", &text);
    let md = stdout(&run_in(
        fixtures,
        &["compare", "--format", "markdown", "v1-timer.json"],
    ));
    snapshot("v1-timer.md", &md);
});

fn max_us(path: &Path) -> f64 {
    load(path)["total"]["max_ns"].as_f64().expect("max") / 1000.0
}

case!(
    fail_if_worse_exits_1_only_when_worse_beyond_the_margin,
    [],
    |t| {
        let a = synthetic(t.dir(), "a.json", 7, 20_000, "old");
        let b = synthetic(t.dir(), "b.json", 8, 30_000, "new");
        let (old, new) = (max_us(&a), max_us(&b));
        assert!(
            new > old * 1.1 && new < old * 1.5,
            "fixture maxima {old} / {new}"
        );
        // `compare NEW --baseline BASE --fail-if-worse MARGIN MORE...`
        let compare = |new: &str, base: &str, margin: &str, more: &[&str]| {
            let args = [
                "compare",
                new,
                "--baseline",
                base,
                "--fail-if-worse",
                margin,
            ];
            run_in(t.dir(), &[&args[..], more].concat())
        };
        let worse = compare("b.json", "a.json", "10%", &[]);
        assert_exit(&worse, 1, "worse");
        assert!(String::from_utf8_lossy(&worse.stderr).contains("WORSE new: max"));
        assert_eq!(
            stdout(&worse)
                .lines()
                .filter(|l| l.starts_with("old") || l.starts_with("new"))
                .count(),
            2
        );
        // Within a wide margin, better, or equal: success.
        let wide = compare("b.json", "a.json", "50%", &[]);
        assert_eq!(wide.status.code(), Some(0));
        let better = compare("a.json", "b.json", "10", &[]);
        assert_eq!(better.status.code(), Some(0));
        let same = compare("a.json", "a.json", "0%", &[]);
        assert_eq!(same.status.code(), Some(0));
        // Another metric: the average barely moves.
        let avg = compare("b.json", "a.json", "10%", &["--metric", "avg"]);
        assert_exit(&avg, 0, "avg");
        // A metric the sample count does not support, a bad margin, a bad metric: exit 2.
        let short = synthetic(t.dir(), "s.json", 9, 500, "short");
        assert!(short.exists());
        let p = compare("s.json", "a.json", "10%", &["--metric", "p99.99"]);
        assert_refused(&p, &["p99.99"]);
        assert_refused(&compare("b.json", "a.json", "ten", &[]), &["margin"]);
        assert_refused(
            &run_in(t.dir(), &["compare", "b.json", "--metric", "fastest"]),
            &["unknown metric"],
        );
        // --fail-if-worse needs --baseline (clap's message names the missing argument on its next line).
        assert_refused(
            &run_in(t.dir(), &["compare", "b.json", "--fail-if-worse", "10%"]),
            &["required"],
        );
    }
);

/// (format, fixture, benchmark, threads)
pub(crate) fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

case!(hostile_inputs_are_refused_without_panicking, [], |t| {
    let good = synthetic(t.dir(), "good.json", 7, 2_000, "good");
    let text = std::fs::read_to_string(&good).expect("good");
    let v: Value = serde_json::from_str(&text).expect("json");
    let mutated = |f: &dyn Fn(&mut Value)| {
        let mut m = v.clone();
        f(&mut m);
        serde_json::to_string(&m).expect("json")
    };
    let huge = t.path("huge.json");
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
            mutated(&|m| m["threads"][0]["summary"]["min_ns"] = json!(i64::MAX)),
            &["min", "above max"],
        ),
        (
            // Latencies are signed: beyond i64 is not a result.
            mutated(&|m| m["threads"][0]["summary"]["min_ns"] = json!(u64::MAX)),
            &["not an rtlat result", "i64"],
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
        let p = write(t.dir(), &format!("h{i}.json"), content);
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .expect("name")
            .to_string();
        assert_refused(&run_in(t.dir(), &["report", &name]), wants);
        assert_refused(&run_in(t.dir(), &["compare", "good.json", &name]), wants);
    }
    assert_refused(&run_in(t.dir(), &["report", "huge.json"]), &["too large"]);
    assert_refused(
        &run_in(t.dir(), &["compare", "missing.json"]),
        &["missing.json"],
    );
    assert_refused(&run_in(t.dir(), &["report", "."]), &["directory"]);
});

case!(a_baseline_of_another_benchmark_is_refused, [], |t| {
    let net = t.path("net.json");
    let out = t
        .rtlat()
        .args(["import", "--quiet"])
        .arg(fixture("sockperf-full-log.csv"))
        .arg("-o")
        .arg(&net)
        .output()
        .expect("runs");
    assert_exit(&out, 0, "out");
    let timer = t.path("timer.json");
    let out = synthetic_timer(&timer).output().expect("runs");
    assert_eq!(out.status.code(), Some(0));
    // Without --fail-if-worse too: a timer maximum is no round trip.
    let out = t
        .rtlat()
        .arg("compare")
        .arg(&timer)
        .arg("--baseline")
        .arg(&net)
        .output()
        .expect("runs");
    assert_refused(&out, &["like with like"]);
});

#[test]
fn another_tools_json_is_pointed_at_import() {
    let out = rtlat()
        .arg("report")
        .arg(fixture("cyclictest.json"))
        .output()
        .expect("runs");
    assert_refused(&out, &["not an rtlat result", "rtlat import"]);
}

/// Every import fixture imported (its format detected), with the result's
/// path; a `*-refused.*` fixture is a real output that import must refuse.
fn import_every_fixture(dir: &Path) -> Vec<(String, PathBuf)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import");
    let mut names: Vec<String> = std::fs::read_dir(&src)
        .expect("fixtures")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".sh") && !n.contains("-refused."))
        .collect();
    names.sort();
    assert!(names.len() >= 7, "{names:?}");
    names
        .into_iter()
        .map(|name| {
            let out_name = format!("{name}.result.json");
            let out = run_in(
                dir,
                &[
                    "import",
                    src.join(&name).to_str().expect("path"),
                    "-o",
                    &out_name,
                    "--quiet",
                ],
            );
            assert_exit(&out, 0, &name);
            (name, dir.join(out_name))
        })
        .collect()
}

/// The cells of a text summary row (`cpu0  2000  8.000 …  max at`), by whitespace.
fn summary_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in text.lines() {
        if line.starts_with("(us)") {
            in_table = true;
            continue;
        }
        if in_table
            && (["note:", "details:", "forecast ", "spikes "]
                .iter()
                .any(|p| line.starts_with(p))
                || line.is_empty())
        {
            in_table = false;
        }
        if in_table {
            rows.push(line.split_whitespace().map(str::to_string).collect());
        }
    }
    rows
}

case!(
    imports_show_what_their_source_does_not_record_as_unknown,
    [],
    |t| {
        for (name, path) in import_every_fixture(t.dir()) {
            let r = load(&path);
            let p = path.to_str().expect("path");
            let html_path = format!("{name}.html");
            let rep = run_in(t.dir(), &["report", p, "--html", &html_path]);
            assert_eq!(rep.status.code(), Some(0), "{name}");
            let text = stdout(&rep);
            let html = std::fs::read_to_string(t.path(&html_path)).expect("html");
            let md = stdout(&run_in(t.dir(), &["compare", "--format", "markdown", p]));
            let csv = stdout(&run_in(t.dir(), &["compare", "--format", "csv", p]));
            // Where the maximum was: never an invented #0 at +0.000s.
            for (what, out) in [("text", &text), ("html", &html)] {
                assert!(!out.contains("#0 ("), "{name} {what}: {out}");
                assert!(!out.contains("(+0.000s)"), "{name} {what}");
            }
            // A duration only where the source gives one, never 0.000s.
            for (what, out) in [("text", &text), ("markdown", &md), ("html", &html)] {
                assert!(!out.contains(" 0.000s"), "{name} {what}: {out}");
                assert!(!out.contains(">0.000s<"), "{name} {what}");
            }
            assert!(!csv.lines().any(|l| l.ends_with(",0.000")), "{name}: {csv}");
            if r["duration_ns"].is_null() {
                assert!(text.contains(", ended\n"), "{name}: {text}");
                assert!(html.contains("<td>duration</td><td>-</td>"), "{name}");
            }
            if r["threads"].as_array().is_some_and(|t| t.is_empty()) {
                // Totals without series (rtla osnoise top): the report shows them.
                assert!(
                    text.contains("osnoise: cpu1: 3264315 us noise"),
                    "{name}: {text}"
                );
                continue;
            }
            // stddev: '-' where the result does not know it, never 0.000.
            let rows = summary_rows(&text);
            assert!(!rows.is_empty(), "{name}: {text}");
            let summaries: Vec<&Value> = r["threads"]
                .as_array()
                .expect("threads")
                .iter()
                .map(|t| &t["summary"])
                .chain(std::iter::once(&r["total"]))
                .collect();
            for row in &rows {
                assert_ne!(row[5], "0.000", "{name}: stddev 0.000 in {row:?}");
            }
            for (row, s) in rows.iter().zip(&summaries) {
                if s["stddev_ns"].is_null() {
                    assert_eq!(row[5], "-", "{name}: {row:?}");
                }
            }
            assert!(
                !html.contains("<td>0.000</td><td>-</td>") || name.contains("rtla"),
                "{name}"
            );
            // Tuning nobody recorded is not shown as a default.
            if r["tuning"]["policy"].is_null() {
                for (what, out) in [("text", &text), ("html", &html)] {
                    assert!(!out.contains("SCHED_OTHER"), "{name} {what}");
                }
            }
            if r["tuning"]["mlock"].is_null() {
                assert!(!text.contains("mlock off"), "{name}: {text}");
                assert!(!html.contains("<td>mlock</td><td>false</td>"), "{name}");
            }
            if r["tuning"].get("dma_latency_us").is_none() {
                assert!(!text.contains("dma_latency off"), "{name}: {text}");
            }
            // No empty over-time chart: imports without a series have no such plot.
            let has_points = r["threads"]
                .as_array()
                .expect("threads")
                .iter()
                .any(|t| !t["series"]["points"].as_array().expect("points").is_empty());
            assert_eq!(html.contains("over time —"), has_points, "{name}");
            assert!(
                !html.contains("no per-interval series in this result\u{3c}/text>"),
                "{name}"
            );
        }
    }
);

case!(
    jitterdebugger_imports_record_the_tuning_the_tool_always_applies,
    [],
    |t| {
        let (_, path) = import_every_fixture(t.dir())
            .into_iter()
            .find(|(n, _)| n.starts_with("jitterdebugger"))
            .expect("a jitterdebugger fixture");
        let r = load(&path);
        assert_eq!(r["tuning"]["mlock"], true);
        assert_eq!(r["tuning"]["dma_latency_us"], 0);
        assert!(r["notes"].as_array().expect("notes").iter().any(|n| n
            .as_str()
            .is_some_and(|s| s.contains("jitterdebugger always locks memory"))));
        let text = stdout(&run_in(t.dir(), &["report", path.to_str().expect("path")]));
        assert!(text.contains("mlock on, dma_latency 0us"), "{text}");
    }
);

case!(
    overflowed_imports_print_bounds_and_draw_the_overflow_bin,
    [XMLLINT],
    |t| {
        let mut seen = 0;
        for (name, path) in import_every_fixture(t.dir()) {
            let r = load(&path);
            let overflowed: Vec<&Value> = r["threads"]
                .as_array()
                .expect("threads")
                .iter()
                .filter(|t| !t["histogram"]["overflow"].is_null())
                .collect();
            if overflowed.is_empty() {
                continue;
            }
            seen += 1;
            let mut any_bound = false;
            for t in &overflowed {
                let o = &t["histogram"]["overflow"];
                assert!(o["count"].as_u64().expect("count") > 0, "{name}");
                assert!(t["summary"]["stddev_ns"].is_null(), "{name}: {t}");
                let bounds: Vec<&Value> = t["summary"]["percentiles"]
                    .as_array()
                    .expect("percentiles")
                    .iter()
                    .filter(|p| p["bound"] == true)
                    .collect();
                // A percentile is a bound when its rank falls among the samples beyond.
                let (n, beyond) = (
                    t["summary"]["samples"].as_u64().expect("samples"),
                    o["count"].as_u64().expect("count"),
                );
                for p in t["summary"]["percentiles"].as_array().expect("percentiles") {
                    let rank = (p["p"].as_f64().expect("p") / 100.0 * n as f64).ceil() as u64;
                    assert_eq!(p["bound"] == true, rank > n - beyond, "{name}: {p}");
                }
                any_bound |= !bounds.is_empty();
                for b in bounds {
                    assert!(b["ns"].as_u64() >= o["from_ns"].as_u64(), "{name}: {b}");
                }
            }
            let p = path.to_str().expect("path");
            let svg = format!("{name}.svg");
            let html = format!("{name}.html");
            let rep = run_in(t.dir(), &["report", p, "--svg", &svg, "--html", &html]);
            assert_eq!(rep.status.code(), Some(0), "{name}");
            let text = stdout(&rep);
            let rows = summary_rows(&text);
            // Every summary shown (threads and total) with a bound prints '≥'.
            let any_bound = any_bound
                || r["total"]["percentiles"]
                    .as_array()
                    .expect("percentiles")
                    .iter()
                    .any(|p| p["bound"] == true);
            let marked = rows.iter().any(|r| r.iter().any(|c| c == "≥"));
            assert_eq!(marked, any_bound, "{name}: {text}");
            let csv = stdout(&run_in(t.dir(), &["compare", "--format", "csv", p]));
            let md = stdout(&run_in(t.dir(), &["compare", "--format", "markdown", p]));
            let html = std::fs::read_to_string(t.path(&html)).expect("html");
            assert_eq!(html.contains("<td>≥ "), any_bound, "{name}");
            // The compare columns (p99, p99.99) show a bound when theirs is one.
            let main_bound = r["total"]["percentiles"]
                .as_array()
                .expect("percentiles")
                .iter()
                .any(|p| p["bound"] == true && (p["p"] == 99.0 || p["p"] == 99.99));
            if main_bound {
                assert!(
                    csv.contains(",≥ ") && md.contains("| ≥ "),
                    "{name}: {csv}{md}"
                );
            }
            // Histogram and percentile plots: a labelled band each, per overflowed thread.
            let svg = std::fs::read_to_string(t.path(&svg)).expect("svg");
            let from = overflowed[0]["histogram"]["overflow"]["from_ns"]
                .as_u64()
                .expect("from")
                / 1000;
            let label = format!("≥ {from} µs: ");
            assert!(svg.contains(&label), "{name}: no '{label}' in the SVG");
            assert!(
                svg.matches("beyond the tool&#39;s range").count() >= 2 * overflowed.len(),
                "{name}"
            );
            assert!(
                svg.matches("fill=\"#fbe3d6\"").count() >= 2 * overflowed.len(),
                "{name}"
            );
            assert_xml_valid(&t.path(format!("{name}.svg")));
        }
        assert!(seen >= 3, "only {seen} fixtures overflow their histogram");
    }
);
