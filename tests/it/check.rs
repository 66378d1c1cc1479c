use crate::util::*;

#[test]
fn check_json_lists_every_factor_with_a_verdict() {
    let out = rtlat().args(["check", "--json"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let factors = v["factors"].as_array().expect("factors");
    assert!(factors.len() >= 10, "{} factors", factors.len());
    let names: Vec<&str> = factors
        .iter()
        .map(|f| f["name"].as_str().expect("name"))
        .collect();
    for needle in [
        "preempt",
        "throttl",
        "governor",
        "SMT",
        "clocksource",
        "virtual",
    ] {
        assert!(
            names
                .iter()
                .any(|n| n.to_lowercase().contains(&needle.to_lowercase())),
            "no factor about {needle}: {names:?}"
        );
    }
    for f in factors {
        let verdict = f["verdict"].as_str().expect("verdict");
        assert!(["good", "warn", "bad", "info"].contains(&verdict), "{f}");
        if verdict == "warn" || verdict == "bad" {
            assert!(
                f["fix"].as_str().is_some_and(|s| !s.is_empty()),
                "no fix: {f}"
            );
        }
    }
    assert!(v["system"]["kernel_release"].is_string());
}

#[test]
fn check_text_prints_one_line_per_factor() {
    let json = rtlat().args(["check", "--json"]).output().expect("runs");
    let n = serde_json::from_slice::<serde_json::Value>(&json.stdout).expect("JSON")["factors"]
        .as_array()
        .expect("factors")
        .len();
    let out = rtlat().arg("check").output().expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let verdict_lines = text
        .lines()
        .filter(|l| {
            ["GOOD", "WARN", "BAD", "INFO"]
                .iter()
                .any(|v| l.starts_with(v))
        })
        .count();
    assert_eq!(verdict_lines, n, "{text}");
}
