//! A suite's report as people read it: every step named, the summary and
//! the steps above the first plot, the system once, a skipped step with
//! rtlat's reason; the page as headless chromium parsed it.

use crate::suite::{run_suite, written};
use crate::util::{need, Need};

const STEPS: &str = r#"
[[step]]
name = "no-chip"
bench = "irq loopback"
duration = "1s"
args = ["--chip", "/dev/gpiochip-rtlat-none", "--out", "0", "--in", "1"]
optional = true

[[step]]
name = "timer"
bench = "timer"
duration = "1s"
args = ["--cpus", "0", "--policy", "other", "--no-mlock", "--dma-latency", "off"]

[[step]]
name = "timer-load"
bench = "timer"
duration = "1s"
load = "cpu:1"
args = ["--cpus", "0", "--policy", "other", "--no-mlock", "--dma-latency", "off"]
"#;

case!(
    a_suite_report_names_every_step_and_shows_the_system_once,
    [],
    |t| {
        let toml = t.path("steps.toml");
        std::fs::write(&toml, STEPS).unwrap();
        let out = t.path("o");
        let run = run_suite(&t, &toml, &out);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "{stderr}");
        // The skipped step's reason is rtlat's line, said once: in its
        // progress line, not echoed before it as well.
        let said = format!("{}{stderr}", String::from_utf8_lossy(&run.stdout));
        let m: serde_json::Value =
            serde_json::from_str(&written(&out, "suite.json")).expect("json");
        let why = m["steps"][0]["message"].as_str().expect("a reason");
        assert!(why.starts_with("rtlat: "), "{why}");
        assert_eq!(said.matches(why).count(), 1, "{said}");
        let page = written(&out, "report.html");
        check(&page);
        let summary = written(&out, "summary.md");
        assert!(!summary.contains("no-chip.json"), "{summary}");
        assert!(
            summary.contains("| skipped: rtlat: ") && summary.contains("| timer-load.json |"),
            "{summary}"
        );
        if !need(Need::Program("chromium", "chromium")) {
            return;
        }
        let dom = crate::report::headless_chromium(&t.path("profile"))
            .arg("--dump-dom")
            .arg(format!("file://{}", out.join("report.html").display()))
            .output()
            .expect("chromium runs");
        check(&String::from_utf8_lossy(&dom.stdout));
    }
);

/// What a reader sees in the page (as written, or as the browser parsed it).
fn check(page: &str) {
    let (top, plots) = page.split_once("<svg ").expect("a plot");
    // Above the first plot: a summary row linking to each result, then the
    // steps (the skipped one with its reason).
    let summary = top.find("<h2>Summary</h2>").expect("a summary");
    assert!(
        top.find(": steps</h2>").is_some_and(|s| s > summary),
        "{top}"
    );
    assert!(
        top.contains("skipped: rtlat: ") && top.contains("no GPIO chip"),
        "{top}"
    );
    for (i, step) in ["timer", "timer-load"].iter().enumerate() {
        assert!(
            top.contains(&format!("<a href=\"#result-{i}\">{step}</a>")),
            "{top}"
        );
        assert!(
            page.contains(&format!("<h2>{step} — ")),
            "no heading for {step}"
        );
    }
    assert_eq!(page.matches("<td>hostname</td>").count(), 1, "{plots}");
    assert!(page.contains("The machine of <a href=\"#result-0\">timer</a>."));
}
