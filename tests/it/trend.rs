//! `rtlat trend` as a user runs it: a tree of nightly results, the board
//! that got worse named and `--fail-on-regression`'s exit code, files that
//! are not results counted, and the HTML page rendered by chromium.

use crate::case::Case;
use crate::util::{assert_exit, need, Need};
use serde_json::{json, Value};
use std::path::Path;

/// A nightly timer result of one thread with these figures (ns), made of
/// the v1 fixture.
fn nightly(board: &str, kernel: &str, day: u64, p50: u64, p99: u64, max: u64) -> Value {
    let text = include_str!("../fixtures/results/v1-timer.json");
    let mut r: Value = serde_json::from_str(text).expect("fixture");
    let summary = json!({
        "samples": 100_000, "min_ns": p50 / 2, "avg_ns": p50, "max_ns": max, "stddev_ns": null,
        "percentiles": [{"p": 50.0, "ns": p50}, {"p": 99.0, "ns": p99}],
        "overruns": 0, "max_sample": null, "max_at_ns": null
    });
    r["threads"][0]["summary"] = summary.clone();
    r["threads"][0]["histogram"]["buckets"] = json!([]);
    r["threads"][0]["series"]["points"] = json!([]);
    r["total"] = summary;
    r["system"]["hostname"] = json!(board);
    r["system"]["kernel_release"] = json!(kernel);
    r["start_time_utc"] = json!(rtlat::result::rfc3339_utc(1_767_600_000 + day * 86_400, 0));
    r
}

/// Three boards, 40 nights each, a kernel update on night 20; board-b's
/// figures twice as high from night 25 on.
fn nightlies(dir: &Path) {
    for board in ["board-a", "board-b", "board-c"] {
        for day in 0..40u64 {
            let wobble = 1000 + (day * 37 % 11) * 40;
            let k = if board == "board-b" && day >= 25 {
                2
            } else {
                1
            };
            let kernel = if day < 20 {
                "6.6.21-rt26"
            } else {
                "6.6.30-rt30"
            };
            let r = nightly(
                board,
                kernel,
                day,
                10 * wobble * k,
                30 * wobble * k,
                90 * wobble * k,
            );
            let path = dir.join(board).join(format!("{day:02}.json"));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, r.to_string()).unwrap();
        }
    }
    std::fs::write(dir.join("board-a/notes.json"), "{\"not\": \"a result\"}").unwrap();
}

/// `rtlat trend` of the case's directory.
fn trend(t: &Case) -> assert_cmd::Command {
    let mut c = t.rtlat();
    c.arg("trend").arg(t.dir());
    c
}

case!(
    trend_names_the_board_that_got_worse_and_fails_on_request,
    [],
    |t| {
        nightlies(t.dir());
        let out = trend(&t).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8_lossy(&out.stdout);
        let changes: Vec<&str> = text.lines().filter(|l| l.contains(" from run ")).collect();
        assert_eq!(changes.len(), 1, "{text}");
        assert!(
            changes[0].contains("board-b: timer") && changes[0].contains("worse from run 26 of 40"),
            "{text}"
        );
        assert!(changes[0].contains("25.json (2026-01-30"), "{text}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("skipped 1 file(s)") && err.contains("notes.json"),
            "{err}"
        );

        let fail = trend(&t).arg("--fail-on-regression").output().unwrap();
        assert_eq!(fail.status.code(), Some(1));
        // Without board-b there is nothing to fail on.
        std::fs::remove_dir_all(t.path("board-b")).unwrap();
        let pass = trend(&t).arg("--fail-on-regression").output().unwrap();
        assert_eq!(pass.status.code(), Some(0));
        assert!(String::from_utf8_lossy(&pass.stdout).contains("no change beyond run-to-run noise"));
    }
);

case!(trend_without_results_is_refused, [], |t| {
    std::fs::write(t.path("x.json"), "[]").unwrap();
    let out = trend(&t).output().unwrap();
    let line = crate::util::error_line(&out, 2, "no results");
    assert!(line.contains("no rtlat result among 1 file(s)"), "{line}");
    let out = t
        .rtlat()
        .args(["trend", "/nonexistent/dir"])
        .output()
        .unwrap();
    let line = crate::util::error_line(&out, 2, "missing path");
    assert!(line.contains("/nonexistent/dir"), "{line}");
});

case!(trend_html_renders_in_chromium_without_errors, [], |t| {
    nightlies(t.dir());
    let html = t.path("trend.html");
    let out = trend(&t).arg("--html").arg(&html).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(!page.contains("http://") && !page.contains("https://"));
    if !need(Need::Program("chromium", "chromium")) {
        return;
    }
    let profile = t.path("profile");
    let dom = crate::report::headless_chromium(&profile)
        .args(["--enable-logging=stderr", "--v=0", "--dump-dom"])
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("chromium runs");
    let dom_text = String::from_utf8_lossy(&dom.stdout);
    let log = String::from_utf8_lossy(&dom.stderr);
    // The page as the browser parsed it: every plot, the tables, the change.
    assert_eq!(dom_text.matches("<svg ").count(), 3, "{log}");
    assert_eq!(dom_text.matches("<table>").count(), 3, "{log}");
    assert!(dom_text.contains("worse from run 26 of 40"), "{log}");
    for bad in [
        "CONSOLE",
        "Uncaught",
        "This page contains the following errors",
    ] {
        assert!(
            !log.contains(bad) && !dom_text.contains(bad),
            "{bad}: {log}"
        );
    }
});

case!(three_thousand_results_make_one_trend, [], |t| {
    for board in ["board-a", "board-b", "board-c"] {
        std::fs::create_dir(t.path(board)).unwrap();
        for day in 0..1000u64 {
            let wobble = 1000 + (day * 37 % 11) * 40;
            let kernel = if day < 500 {
                "6.6.21-rt26"
            } else {
                "6.6.30-rt30"
            };
            let r = nightly(board, kernel, day, 10 * wobble, 30 * wobble, 90 * wobble);
            std::fs::write(t.path(format!("{board}/{day:04}.json")), r.to_string()).unwrap();
        }
    }
    let svg = t.path("t.svg");
    let out = trend(&t).arg("--svg").arg(&svg).output().unwrap();
    assert_exit(&out, 0, "out");
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("timer ")).collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(
        rows.iter()
            .all(|r| r.split_whitespace().nth(4) == Some("1000")),
        "{text}"
    );
    assert!(text.contains("no change beyond run-to-run noise"), "{text}");
    assert!(std::fs::read_to_string(&svg).unwrap().contains("1000 runs"));
});

/// The x of every dot of the first plot (`<svg` or `<g`) in `doc`.
fn first_plot_dots(doc: &str, plot: &str) -> Vec<String> {
    let first = doc.split(plot).nth(1).expect("a plot");
    let first = first.split("</svg>").next().unwrap();
    let first = first.split("</g>").next().unwrap();
    first
        .split("<circle cx=\"")
        .skip(1)
        .map(|c| c.split('"').next().unwrap().to_string())
        .collect()
}

case!(
    trend_of_an_afternoon_shows_each_run_per_board_and_load,
    [],
    |t| {
        // One host name, two labelled boards; board-y idle and under a load,
        // twelve runs each within 40 minutes.
        let t0 = 1_767_600_000u64;
        for (board, load) in [("board-y", false), ("board-y", true), ("board-z", false)] {
            for run in 0..12u64 {
                let mut r = nightly("pi", "6.6.21-rt26", 0, 10_000, 30_000, 90_000 + run * 500);
                r["label"] = json!(board);
                r["start_time_utc"] = json!(rtlat::result::rfc3339_utc(t0 + run * 218, 0));
                if load {
                    r["loads"] = json!([{"spec": "hackbench"}]);
                }
                let name = format!("{board}-{load}-{run:02}.json");
                std::fs::write(t.path(name), r.to_string()).unwrap();
            }
        }
        let (svg, html) = (t.path("t.svg"), t.path("t.html"));
        let out = trend(&t)
            .arg("--svg")
            .arg(&svg)
            .arg("--html")
            .arg(&html)
            .output()
            .unwrap();
        assert_exit(&out, 0, "out");
        let text = String::from_utf8_lossy(&out.stdout);
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("timer ")).collect();
        assert_eq!(rows.len(), 3, "{text}");
        assert!(
            text.starts_with("board-y\n") && text.contains("\nboard-z\n"),
            "{text}"
        );
        assert!(
            rows.iter().any(|r| r.contains(" hackbench "))
                && rows.iter().filter(|r| r.contains(" idle ")).count() == 2,
            "{text}"
        );
        let doc = std::fs::read_to_string(&svg).unwrap();
        assert!(doc.contains(">minutes since 2026-01-05 08:00:00<"), "{doc}");
        let mut xs = first_plot_dots(&doc, "<g transform");
        assert_eq!(xs.len(), 36, "{xs:?}");
        xs.sort();
        xs.dedup();
        assert_eq!(xs.len(), 12, "{xs:?}");
        if !need(Need::Program("chromium", "chromium")) {
            return;
        }
        let dom = crate::report::headless_chromium(&t.path("profile"))
            .arg("--dump-dom")
            .arg(format!("file://{}", html.display()))
            .output()
            .expect("chromium runs");
        let dom = String::from_utf8_lossy(&dom.stdout);
        // As the browser parsed the page: the tables above the first plot,
        // twelve distinct x positions among its 36 dots.
        let (tables, plots) = dom.split_once("<svg ").expect("a plot");
        assert_eq!(tables.matches("<table>").count(), 2, "{dom}");
        let mut xs = first_plot_dots(&format!("<svg {plots}"), "<svg ");
        assert_eq!(xs.len(), 36, "{xs:?}");
        xs.sort();
        xs.dedup();
        assert_eq!(xs.len(), 12, "{xs:?}");
        assert!(plots.contains(">minutes since 2026-01-05 08:00:00<"));
    }
);
