//! cyclictest's plain outputs imported (`-q` summary lines, a log of its
//! live view, `-v` samples): every figure exactly the printed one (or, for
//! `-v`, the samples'), what the lines do not carry left unknown, and a cut
//! last line refused with its number.

use crate::report::fixture;
use crate::util::*;
use serde_json::Value;
use std::path::Path;

fn import(dir: &Path, input: &Path) -> Value {
    let out = rtlat()
        .current_dir(dir)
        .arg("import")
        .arg(input)
        .args(["-o", "r.json", "--quiet"])
        .output()
        .expect("runs");
    assert_exit(&out, 0, "import");
    load(&dir.join("r.json"))
}

/// The last `T:` line of each thread: (count, min, avg, max) in µs as printed.
fn printed(text: &str) -> Vec<(u64, u64, u64, u64)> {
    let mut last: Vec<(u64, u64, u64, u64)> = Vec::new();
    for piece in text.split(['\n', '\r']) {
        let Some(at) = piece.find("T:") else { continue };
        let spaced = piece[at..].replace(':', ": ");
        let words: Vec<&str> = spaced.split_whitespace().collect();
        let after = |key: &str| -> u64 {
            let i = words.iter().position(|w| *w == key).expect(key);
            words[i + 1].parse().expect("number")
        };
        let thread: usize = words[1].parse().expect("thread");
        if last.len() <= thread {
            last.resize(thread + 1, (0, 0, 0, 0));
        }
        last[thread] = (after("C:"), after("Min:"), after("Avg:"), after("Max:"));
    }
    last
}

case!(
    cyclictest_summary_and_live_lines_give_the_printed_figures_exactly,
    [],
    |t| {
        for file in [
            "cyclictest-q.txt",
            "cyclictest-q-published.txt",
            "cyclictest-live.txt",
        ] {
            let text = std::fs::read_to_string(fixture(file)).expect("fixture");
            let want = printed(&text);
            assert_eq!(want.len(), 2, "{file}");
            let r = import(t.dir(), &fixture(file));
            assert_eq!(r["config"]["imported_from"], "cyclictest-status");
            let threads = r["threads"].as_array().expect("threads");
            assert_eq!(threads.len(), want.len(), "{file}");
            for (t, (c, min, avg, max)) in threads.iter().zip(&want) {
                let s = &t["summary"];
                assert_eq!(s["samples"], *c, "{file}");
                assert_eq!(s["min_ns"], min * 1000, "{file}");
                assert_eq!(s["avg_ns"], avg * 1000, "{file}");
                assert_eq!(s["max_ns"], max * 1000, "{file}");
                // Not in the lines: unknown, never made up.
                assert_eq!(s["stddev_ns"], Value::Null, "{file}");
                assert_eq!(s["percentiles"], serde_json::json!([]), "{file}");
                assert_eq!(t["histogram"]["buckets"], serde_json::json!([]), "{file}");
            }
        }
        // The live log rewrites each thread's line: the last one wins, not the first.
        let live = std::fs::read_to_string(fixture("cyclictest-live.txt")).expect("fixture");
        assert!(live.matches("T: 0 (").count() > 10);
    }
);

case!(
    cyclictest_verbose_samples_become_a_full_histogram,
    [],
    |t| {
        let text = std::fs::read_to_string(fixture("cyclictest-v.txt")).expect("fixture");
        let samples: Vec<u64> = text
            .lines()
            .filter_map(|l| {
                let parts: Vec<&str> = l.split(':').map(str::trim).collect();
                (parts.len() == 3).then(|| parts[2].parse().ok()).flatten()
            })
            .collect();
        assert_eq!(samples.len(), 2000);
        let r = import(t.dir(), &fixture("cyclictest-v.txt"));
        assert_eq!(r["config"]["imported_from"], "cyclictest-verbose");
        let s = &r["threads"][0]["summary"];
        assert_eq!(s["samples"], 2000);
        assert_eq!(s["min_ns"], samples.iter().min().unwrap() * 1000);
        assert_eq!(s["max_ns"], samples.iter().max().unwrap() * 1000);
        let avg_ns = samples.iter().sum::<u64>() as f64 * 1000.0 / 2000.0;
        assert_eq!(s["avg_ns"], avg_ns.round() as u64);
        let buckets = r["threads"][0]["histogram"]["buckets"]
            .as_array()
            .expect("buckets");
        let held: u64 = buckets
            .iter()
            .map(|b| b["count"].as_u64().expect("count"))
            .sum();
        assert_eq!(held, 2000);
        assert!(s["percentiles"].as_array().expect("percentiles").len() >= 3);
        assert_eq!(r["config"]["period_ns"], 1_500_000);
    }
);

case!(a_cut_last_line_is_refused_with_its_number, [], |t| {
    for file in [
        "cyclictest-q.txt",
        "cyclictest-live.txt",
        "cyclictest-v.txt",
    ] {
        let text = std::fs::read(fixture(file)).expect("fixture");
        let lines = text.iter().filter(|&&b| b == b'\n').count();
        let cut = t.path(format!("cut-{file}"));
        // The last line without its last 3 bytes (its end among them).
        std::fs::write(&cut, &text[..text.len() - 3]).expect("write");
        let out = t
            .rtlat()
            .current_dir(t.dir())
            .arg("import")
            .arg(&cut)
            .args(["-o", "cut.json", "--quiet"])
            .output()
            .expect("runs");
        let line = error_line(&out, 2, file);
        assert!(
            line.contains(&format!(":{lines}: ")) && line.contains("cut"),
            "{file}: {line}"
        );
        assert!(!t.path("cut.json").exists(), "{file}");
    }
});

case!(
    imported_logs_with_a_declared_start_go_into_a_trend,
    [],
    |t| {
        let logs = t.path("logs");
        std::fs::create_dir(&logs).expect("mkdir");
        for (day, file) in [
            ("2019-03-01", "cyclictest-q.txt"),
            ("2019-03-02", "cyclictest-v.txt"),
        ] {
            let out = t
                .rtlat()
                .arg("import")
                .arg(fixture(file))
                .args(["--start", day, "--label", "old-board", "--quiet", "-o"])
                .arg(logs.join(format!("{day}.json")))
                .output()
                .expect("runs");
            assert_exit(&out, 0, "out");
            let r = load(&logs.join(format!("{day}.json")));
            assert_eq!(r["start_time_utc"], format!("{day}T00:00:00.000Z"));
        }
        let out = t.rtlat().arg("trend").arg(&logs).output().expect("runs");
        assert_exit(&out, 0, "out");
        let text = String::from_utf8_lossy(&out.stdout);
        let row = text
            .lines()
            .find(|l| l.starts_with("timer "))
            .expect("a row");
        let cells: Vec<&str> = row.split_whitespace().collect();
        // series (2 words), load, runs, first and last (date and time each).
        assert_eq!(cells[4], "2", "{text}");
        assert_eq!((cells[5], cells[7]), ("2019-03-01", "2019-03-02"), "{text}");
        assert!(text.starts_with("old-board\n"), "{text}");
        let out = t
            .rtlat()
            .args(["import", "--start", "yesterday", "-o", "x.json"])
            .arg(fixture("cyclictest-q.txt"))
            .current_dir(t.dir())
            .output()
            .expect("runs");
        let line = error_line(&out, 2, "bad --start");
        assert!(line.contains("2024-01-05T02:00:00Z"), "{line}");
    }
);
