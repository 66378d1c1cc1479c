//! `rtlat import`: every fixture imported, compared and plotted like a run;
//! formats told apart; cut, damaged and hostile inputs; prompts before the
//! output; the tools' shapes (rtla -b/-E, cyclictest intervals, Xenomai -s);
//! bounded memory on large inputs read from standard input.

use crate::report::{
    assert_refused, assert_xml_valid, fixture, run_in, stdout, synthetic, write, XMLLINT,
};
use crate::snapshot::snapshot;
use crate::util::*;
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// Every fixture of a format: (format, file, benchmark, threads).
#[rustfmt::skip]
const IMPORTS: [(&str, &str, &str, usize); 20] = [
    ("cyclictest-json", "cyclictest-hist.json", "timer", 2),
    ("cyclictest-json", "cyclictest.json", "timer", 2),
    ("cyclictest-json", "cyclictest-distance.json", "timer", 2),
    ("cyclictest-hist", "cyclictest-hist.txt", "timer", 2),
    ("cyclictest-hist", "cyclictest-hist-status.txt", "timer", 2),
    ("cyclictest-status", "cyclictest-q.txt", "timer", 2),
    ("cyclictest-status", "cyclictest-q-published.txt", "timer", 2),
    ("cyclictest-status", "cyclictest-live.txt", "timer", 2),
    ("cyclictest-verbose", "cyclictest-v.txt", "timer", 1),
    ("xenomai", "xenomai-latency.txt", "timer", 1),
    ("xenomai", "xenomai-latency-s-prompt.txt", "timer", 1),
    ("rtla-timerlat", "rtla-timerlat-hist.txt", "timer", 4),
    ("rtla-timerlat", "rtla-timerlat-hist-b10-E20.txt", "timer", 4),
    ("jitterdebugger", "jitterdebugger-results.json", "timer", 2),
    ("sockperf", "sockperf-full-log.csv", "net", 1),
    ("oslat", "oslat.txt", "noise", 1),
    ("oslat", "oslat-2cpu-z.txt", "noise", 2),
    ("rtla-osnoise", "rtla-osnoise-hist.txt", "noise", 1),
    ("rtla-osnoise-top", "rtla-osnoise-top.txt", "noise", 0),
    ("rteval", "rteval-3.8-summary.xml", "timer", 2),
];

case!(
    every_fixture_imports_and_compares_and_plots_like_an_rtlat_run,
    [XMLLINT],
    |t| {
        synthetic(t.dir(), "rtlat.json", 7, 20_000, "rtlat");
        for (format, file, benchmark, threads) in IMPORTS {
            let out_name = format!("{file}.result.json");
            let out = t
                .rtlat()
                .current_dir(t.dir())
                .args(["import", "--from", format])
                .arg(fixture(file))
                .args(["-o", &out_name, "--quiet"])
                .output()
                .expect("runs");
            assert_exit(&out, 0, file);
            let path = t.path(&out_name);
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
            let cmp = run_in(t.dir(), &["compare", "rtlat.json", &out_name]);
            assert_exit(&cmp, 0, file);
            let rows = stdout(&cmp)
                .lines()
                .filter(|l| !l.starts_with("label") && l.contains("none (idle)"))
                .count();
            assert_eq!(rows, 2, "{file}: {}", stdout(&cmp));
            let svg = format!("{file}.svg");
            let rep = run_in(
                t.dir(),
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
            assert_xml_valid(&t.path(&svg));
        }
        // The import and the rtlat run of the same kind overlay in one plot.
        let out = run_in(
            t.dir(),
            &[
                "compare",
                "rtlat.json",
                "cyclictest-hist.json.result.json",
                "--svg",
                "both.svg",
            ],
        );
        assert_eq!(out.status.code(), Some(0));
        assert_xml_valid(&t.path("both.svg"));
    }
);

case!(import_label_and_cyclictest_details, [], |t| {
    let out = run_in(
        t.dir(),
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
    let r = load(&t.path("c.json"));
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
        t.dir(),
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
    let r = load(&t.path("n.json"));
    assert!(r["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .any(|n| n.as_str().is_some_and(|s| s.contains("no histogram"))));
    assert!(r["label"]
        .as_str()
        .expect("label")
        .starts_with("cyclictest "));
});

case!(
    import_without_from_tells_the_format_from_the_file,
    [],
    |t| {
        for (format, file, ..) in IMPORTS {
            let out_name = format!("{file}.detected.json");
            let out = run_in(
                t.dir(),
                &[
                    "import",
                    fixture(file).to_str().expect("path"),
                    "-o",
                    &out_name,
                    "--quiet",
                ],
            );
            assert_exit(&out, 0, file);
            let r = load(&t.path(&out_name));
            assert_eq!(r["config"]["imported_from"], format, "{file}");
            // The detected format is said, on one line of stderr.
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(err.lines().count(), 1, "{file}: {err}");
            assert!(
                err.contains(&format!("read as {format} (")),
                "{file}: {err}"
            );
        }
        // What no format claims is refused, naming --from and the formats.
        let unknown = write(t.dir(), "unknown.txt", "hello\nworld\n");
        let out = run_in(
            t.dir(),
            &["import", unknown.to_str().expect("path"), "-o", "u.json"],
        );
        assert_refused(&out, &["cannot tell", "--from", "sockperf"]);
        assert!(!t.path("u.json").exists());
    }
);

case!(
    garbled_imports_name_the_line_and_what_was_expected,
    [],
    |t| {
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
            let input = write(t.dir(), &format!("bad{i}.txt"), text);
            let out = t
                .rtlat()
                .current_dir(t.dir())
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
                !t.path("out.json").exists(),
                "{format}: a result was written for bad input"
            );
        }
    }
);

case!(
    importers_refuse_huge_and_noisy_inputs_on_one_line,
    [],
    |t| {
        let huge = t.path("huge.json");
        std::fs::File::create(&huge)
            .expect("create")
            .set_len(1 << 30)
            .expect("sparse 1 GB file");
        let noise: Vec<u8> = (0..20_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        std::fs::write(t.path("noise.bin"), noise).expect("noise");
        for (format, ..) in IMPORTS {
            for input in ["huge.json", "noise.bin"] {
                let out = t
                    .rtlat()
                    .current_dir(t.dir())
                    .args(["import", "--from", format, input, "-o", "x.json"])
                    .timeout(Duration::from_secs(60))
                    .output()
                    .expect("runs");
                assert_refused(&out, &["expected"]);
            }
        }
        assert_refused(
            &run_in(
                t.dir(),
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
);

fn import_text(dir: &Path, file: &Path, extra: &[&str]) -> std::process::Output {
    rtlat()
        .current_dir(dir)
        .arg("import")
        .arg(file)
        .args(["-o", "r.json", "--quiet"])
        .args(extra)
        .output()
        .expect("runs")
}

/// Cut positions through a text: inside lines and exactly at line ends, from the header to the last byte.
fn cuts(text: &[u8]) -> Vec<usize> {
    let mut at: Vec<usize> = (1..10).map(|i| text.len() * i / 10).collect();
    at.push(text.len() - 1);
    at.push(text.len() - 2);
    // At a line end in the middle and near the end (a file cut between two lines).
    for frac in [2, 3] {
        let from = text.len() - text.len() / frac;
        if let Some(nl) = text[from..].iter().position(|&b| b == b'\n') {
            at.push(from + nl + 1);
        }
    }
    at.retain(|&c| c < text.len());
    at
}

case!(
    cut_histograms_are_refused_with_their_line_and_cut_logs_are_incomplete,
    [],
    |t| {
        let histograms = [
            "cyclictest-hist.txt",
            "cyclictest-hist-status.txt",
            "rtla-timerlat-hist.txt",
            "rtla-timerlat-hist-b10-E20.txt",
            "rtla-osnoise-hist.txt",
            "oslat.txt",
            "oslat-2cpu-z.txt",
        ];
        let logs = [
            "xenomai-latency.txt",
            "xenomai-latency-s-prompt.txt",
            "sockperf-full-log.csv",
        ];
        for file in histograms.iter().chain(&logs) {
            let text = std::fs::read(fixture(file)).expect("fixture");
            let whole = import_text(t.dir(), &fixture(file), &[]);
            assert_eq!(whole.status.code(), Some(0), "{file}");
            let full = load(&t.path("r.json"));
            assert_eq!(full["complete"], true, "{file}");
            for cut in cuts(&text) {
                let part = write(t.dir(), "cut.txt", &String::from_utf8_lossy(&text[..cut]));
                let _ = std::fs::remove_file(t.path("r.json"));
                let from = full["config"]["imported_from"].as_str().expect("format");
                let out = import_text(t.dir(), &part, &["--from", from]);
                let err = String::from_utf8_lossy(&out.stderr);
                if histograms.contains(file) && out.status.code() == Some(0) {
                    // Cut after everything it holds (in the overflow cycle list, a closing blank line): the same figures.
                    let r = load(&t.path("r.json"));
                    assert_eq!(r["threads"], full["threads"], "{file} cut at {cut}");
                    assert_eq!(r["total"], full["total"], "{file} cut at {cut}");
                } else if histograms.contains(file) {
                    // Named by its line: 'cut.txt:N: not valid …'.
                    assert_refused(&out, &["cut.txt:", "not valid"]);
                    assert!(
                        err.split("cut.txt:")
                            .nth(1)
                            .and_then(|r| r.split(':').next())
                            .is_some_and(|n| n.parse::<usize>().is_ok()),
                        "{file} cut at {cut}: no line in {err}"
                    );
                } else if out.status.code() == Some(0) {
                    let r = load(&t.path("r.json"));
                    if r["complete"] == true {
                        // Cut after the last figure (a closing rule line): the same figures.
                        assert_eq!(r["threads"], full["threads"], "{file} cut at {cut}");
                        assert_eq!(r["total"], full["total"], "{file} cut at {cut}");
                        continue;
                    }
                    assert_eq!(r["end_reason"], "running", "{file} cut at {cut}");
                    assert!(
                        notes(&r).contains("cover"),
                        "{file} cut at {cut}: {}",
                        notes(&r)
                    );
                    let n = r["total"]["samples"].as_u64().expect("samples");
                    assert!(
                        n <= full["total"]["samples"].as_u64().expect("samples"),
                        "{file} cut at {cut}"
                    );
                } else {
                    // Cut before any data line: nothing to import.
                    assert_refused(&out, &["not valid"]);
                }
            }
        }
    }
);

case!(
    a_prompt_before_the_output_is_skipped_with_a_note_but_damage_inside_is_refused,
    [],
    |t| {
        let out = import_text(t.dir(), &fixture("xenomai-latency-s-prompt.txt"), &[]);
        assert_eq!(out.status.code(), Some(0));
        let r = load(&t.path("r.json"));
        assert_eq!(r["complete"], true);
        let n = notes(&r);
        assert!(
            n.contains("skipped") && n.contains("root@board:~# latency -t0 -s"),
            "{n}"
        );
        // latency -s: its sample count and stddev are used.
        assert_eq!(r["threads"][0]["summary"]["samples"], 50_000);
        assert_eq!(r["threads"][0]["summary"]["stddev_ns"], 529);
        // The same damage inside the output names its line.
        let text =
            std::fs::read_to_string(fixture("xenomai-latency-s-prompt.txt")).expect("fixture");
        let mut lines: Vec<&str> = text.lines().collect();
        lines.insert(9, "root@board:~# oops");
        let bad = write(t.dir(), "bad.txt", &(lines.join("\n") + "\n"));
        assert_refused(
            &import_text(t.dir(), &bad, &[]),
            &["bad.txt:10:", "expected a Xenomai latency line"],
        );
    }
);

case!(
    rtla_bucket_width_and_range_come_from_its_command_and_rows,
    [],
    |t| {
        let out = import_text(t.dir(), &fixture("rtla-timerlat-hist-b10-E20.txt"), &[]);
        assert_exit(&out, 0, "out");
        let r = load(&t.path("r.json"));
        assert_eq!(r["config"]["histogram_bucket_ns"], 10_000);
        assert_eq!(r["config"]["histogram_entries"], 20);
        assert_eq!(r["config"]["precision_ns"], 10_000);
        let n = notes(&r);
        // -E 20 × -b 10: the range ends at 200 µs, not at the last printed row + 1 (191).
        assert!(n.contains("(≥ 200 us)"), "{n}");
        assert!(!n.contains("191"), "{n}");
        // Without the command, the width is told from the rows (every one a multiple of 10).
        let text =
            std::fs::read_to_string(fixture("rtla-timerlat-hist-b10-E20.txt")).expect("fixture");
        let bare = write(
            t.dir(),
            "bare.txt",
            text.split_once('\n').expect("prompt").1,
        );
        assert_eq!(import_text(t.dir(), &bare, &[]).status.code(), Some(0));
        let r = load(&t.path("r.json"));
        assert_eq!(r["config"]["histogram_bucket_ns"], 10_000);
        assert!(notes(&r).contains("told from the printed rows"));
        // The default fixture: 1 µs buckets, 256 entries, the overflow at 256 µs.
        assert_eq!(
            import_text(t.dir(), &fixture("rtla-timerlat-hist.txt"), &[])
                .status
                .code(),
            Some(0)
        );
        let r = load(&t.path("r.json"));
        assert_eq!(r["config"]["histogram_entries"], 256);
        assert!(notes(&r).contains("(≥ 256 us)"), "{}", notes(&r));
        // A max that is not in its highest non-empty bucket is an inconsistency, named.
        let bad = write(
            t.dir(),
            "bad.txt",
            &text.replace("max:         13       251", "max:         13       151"),
        );
        assert_refused(
            &import_text(t.dir(), &bad, &[]),
            &["bad.txt:", "max of Thr-000"],
        );
    }
);

case!(cyclictest_threads_keep_their_own_intervals, [], |t| {
    let out = import_text(t.dir(), &fixture("cyclictest-distance.json"), &[]);
    assert_eq!(out.status.code(), Some(0));
    let r = load(&t.path("r.json"));
    assert_eq!(
        r["config"]["thread_periods_ns"],
        serde_json::json!([1_000_000, 1_500_000])
    );
    assert!(notes(&r).contains("thread1 1500 µs"), "{}", notes(&r));
    // With -h cyclictest runs every thread at -i: one period (from the status lines here).
    let out = import_text(t.dir(), &fixture("cyclictest-hist-status.txt"), &[]);
    assert_eq!(out.status.code(), Some(0));
    let r = load(&t.path("r.json"));
    assert_eq!(r["config"]["period_ns"], 1_000_000);
    assert!(r["config"].get("thread_periods_ns").is_none());
    assert_eq!(r["tuning"]["policy"], "fifo");
    assert_eq!(r["tuning"]["priority"], 80);
    // Status lines with different intervals are kept per thread.
    let text = std::fs::read_to_string(fixture("cyclictest-hist-status.txt")).expect("fixture");
    let two = write(
        t.dir(),
        "two.txt",
        &text.replace("T: 1 (32484) P:80 I:1000", "T: 1 (32484) P:80 I:1500"),
    );
    assert_eq!(import_text(t.dir(), &two, &[]).status.code(), Some(0));
    let r = load(&t.path("r.json"));
    assert_eq!(
        r["config"]["thread_periods_ns"],
        serde_json::json!([1_000_000, 1_500_000])
    );
});

case!(
    a_declared_load_is_recorded_and_reported_and_a_wrong_from_names_the_right_one,
    [],
    |t| {
        let out = t
            .rtlat()
            .current_dir(t.dir())
            .args([
                "import",
                "-",
                "-o",
                "r.json",
                "--load",
                "hackbench -l 100000",
            ])
            .pipe_stdin(fixture("xenomai-latency.txt"))
            .expect("stdin")
            .output()
            .expect("runs");
        assert_exit(&out, 0, "out");
        let text = stdout(&out);
        assert!(text.contains("load: hackbench -l 100000"), "{text}");
        assert!(!text.contains("none (idle)"), "{text}");
        let r = load(&t.path("r.json"));
        assert_eq!(r["loads"][0]["spec"], "hackbench -l 100000");
        assert_eq!(r["loads"][0]["declared"], true);
        assert_eq!(r["loads"][0]["measured"], false);
        assert_eq!(r["config"]["source_file"], "stdin");
        let out = run_in(
            t.dir(),
            &[
                "import",
                "--from",
                "rtla-timerlat",
                fixture("xenomai-latency.txt").to_str().expect("path"),
                "-o",
                "w.json",
            ],
        );
        assert_refused(&out, &["does not look like rtla", "--from xenomai"]);
    }
);

/// The peak resident memory (VmHWM, kB) of a running process, 0 once it is gone.
fn hwm_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// A generated input of about `bytes` bytes in one text format: (head, one line per index, tail).
struct Generated {
    head: String,
    line: fn(u64) -> String,
    tail: fn(u64) -> String,
}

fn generated(format: &str, bytes: u64) -> (Generated, u64) {
    let g = match format {
        "xenomai" => Generated {
            head: "root@board:~# latency -t0 -p 1000\n== Sampling period: 1000 us\n== Test mode: periodic user-mode task\n== All results in microseconds\nwarming up...\nRTT|  00:00:01  (periodic user-mode task, 1000 us period, priority 99)\nRTH|----lat min|----lat avg|----lat max|-overrun|---msw|---lat best|--lat worst\n".into(),
            line: |i| format!("RTD|{:11.3}|{:11.3}|{:11.3}|{:8}|{:6}|{:11.3}|{:11.3}\n", -0.25, 1.5, 5.0 + (i % 7) as f64, 0, 0, -0.25, 11.0),
            tail: |n| format!("---|-----------|-----------|-----------|--------|------|-------------------------\nRTS|{:11.3}|{:11.3}|{:11.3}|{:8}|{:6}|    {:02}:{:02}:{:02}/{:02}:{:02}:{:02}\n", -0.25, 1.5, 11.0, 0, 0, n / 3600, n / 60 % 60, n % 60, n / 3600, n / 60 % 60, n % 60),
        },
        "rtla-timerlat" => Generated {
            head: "root@board:~# rtla timerlat hist -d 1d -E 100000000\n# RTLA timerlat histogram\n# Time unit is microseconds (us)\n# Duration:   1 00:00:00\nIndex   IRQ-000   Thr-000\n".into(),
            line: |i| format!("{:<6}{:9} {:9} \n", i, 1, 1),
            tail: |n| format!("over: {:9} {:9} \ncount:{:9} {:9} \nmin:  {:9} {:9} \navg:  {:9} {:9} \nmax:  {:9} {:9} \n", 0, 0, n, n, 0, 0, n / 2, n / 2, n - 1, n - 1),
        },
        "cyclictest-hist" => Generated {
            head: "# /dev/cpu_dma_latency set to 0us\n# Histogram\n".into(),
            line: |i| format!("{:06} {:06}\t{:06}\n", i, 1, 1),
            tail: |n| format!("# Total: {:09} {:09}\n# Min Latencies: {:05} {:05}\n# Avg Latencies: {:05} {:05}\n# Max Latencies: {:05} {:05}\n# Histogram Overflows: 00000 00000\n# Histogram Overflow at cycle number:\n# Thread 0:\n# Thread 1:\n\n", n, n, 0, 0, n / 2, n / 2, n - 1, n - 1),
        },
        _ => Generated {
            head: String::new(),
            line: |i| format!("{i}, {}.{:09}, {}.{:09}, 25.000\n", 2 + i / 1_000_000, i % 1_000_000 * 1000, 2 + i / 1_000_000, i % 1_000_000 * 1000 + 50_000),
            tail: |_| String::new(),
        },
    };
    let per_line = (g.line)(bytes / 40).len() as u64;
    (g, bytes / per_line)
}

fn sockperf_head(n: u64) -> String {
    format!("------------------------------\ntest was performed using the following parameters: --mps=1000 --burst=1 --reply-every=1 --msg-size=14 --time=1000\n------------------------------\nsockperf: [Total Run] RunTime=1000.000 sec; Warm up time=400 msec; SentMessages={n}; ReceivedMessages={n}\nsockperf: ========= Printing statistics for Server No: 0\nsockperf: [Valid Duration] RunTime=999.000 sec; SentMessages={n}; ReceivedMessages={n}\nsockperf: # dropped messages = 0; # duplicated messages = 0; # out-of-order messages = 0\n------------------------------\npacket, txTime(sec), rxTime(sec), latency(usec)\n")
}

/// Import a generated input of about `bytes` bytes from standard input: (peak kB, result bytes, result).
fn import_big(dir: &Path, format: &str, bytes: u64) -> (u64, u64, Value) {
    let (g, n) = generated(format, bytes);
    let head = if format == "sockperf" {
        sockperf_head(n)
    } else {
        g.head.clone()
    };
    let mut child = std::process::Command::new(bin())
        .current_dir(dir)
        .args(["import", "-", "-o", "big.json", "--quiet"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawns");
    let pid = child.id();
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, &mut stdin);
        w.write_all(head.as_bytes()).expect("head");
        for i in 0..n {
            w.write_all((g.line)(i).as_bytes()).expect("line");
        }
        w.write_all((g.tail)(n).as_bytes()).expect("tail");
        w.flush().expect("flush");
    });
    let mut peak = 0;
    while child.try_wait().expect("waits").is_none() {
        peak = peak.max(hwm_kb(pid));
        std::thread::sleep(Duration::from_millis(20));
    }
    writer.join().expect("writer");
    let out = child.wait_with_output().expect("output");
    assert_exit(&out, 0, format);
    let path = dir.join("big.json");
    let size = std::fs::metadata(&path).expect("result").len();
    let r = load(&path);
    let samples = r["threads"][0]["summary"]["samples"]
        .as_u64()
        .expect("samples");
    assert!(samples >= n, "{format}: {samples} samples for {n} lines");
    (peak, size, r)
}

case!(
    large_inputs_from_standard_input_import_in_bounded_memory,
    [],
    |t| {
        // 500 MB each with a release build (`cargo test --release`), 40 MB in a
        // slower debug build: an importer that kept its lines in memory would
        // still exceed the bound.
        let bytes: u64 = if cfg!(debug_assertions) {
            40 << 20
        } else {
            500 << 20
        };
        for format in ["xenomai", "rtla-timerlat", "cyclictest-hist", "sockperf"] {
            let started = std::time::Instant::now();
            let (peak_kb, size, r) = import_big(t.dir(), format, bytes);
            eprintln!(
                "{format}: {} MB in {:.1}s, peak {} MB, result {} kB",
                bytes >> 20,
                started.elapsed().as_secs_f64(),
                peak_kb >> 10,
                size >> 10
            );
            assert!(peak_kb > 0, "{format}: no memory figure");
            match emulator() {
                // qemu-user's own memory (its cache of translated code) is in the
                // figure, tens of megabytes of it.
                Some(emu) => skip_check(
                    &format!("under {emu}: the memory is qemu-user's, not the import's"),
                    &format!("{format}: the memory bound is not checked under {emu}"),
                ),
                None => assert!(peak_kb <= 64 << 10, "{format}: {peak_kb} kB resident"),
            }
            assert!(size <= 2 << 20, "{format}: a result of {size} bytes");
            assert_eq!(r["complete"], true, "{format}");
            for t in r["threads"].as_array().expect("threads") {
                assert!(t["series"]["points"].as_array().expect("points").len() <= 4096);
            }
        }
    }
);
