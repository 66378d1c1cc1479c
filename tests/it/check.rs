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

/// The "timer contexts" factor says what this kernel's tracefs offers, and
/// `timer --context` agrees: where check finds no timerlat tracer, asking
/// for the IRQ context exits 3 naming CONFIG_TIMERLAT_TRACER.
#[test]
fn check_says_which_timer_contexts_this_kernel_can_measure() {
    let out = rtlat().args(["check", "--json"]).output().expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let f = v["factors"]
        .as_array()
        .expect("factors")
        .iter()
        .find(|f| f["name"] == "timer contexts")
        .expect("a timer contexts factor")
        .clone();
    let detail = f["detail"].as_str().expect("detail");
    let tracers = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .find_map(|d| std::fs::read_to_string(format!("{d}/available_tracers")).ok());
    match &tracers {
        None => assert!(detail.starts_with("unknown"), "{f}"),
        Some(t) if t.split_whitespace().any(|x| x == "timerlat") => {
            assert_eq!(f["verdict"], "good", "{f}");
            assert!(detail.starts_with("irq, thread, and user"), "{f}");
        }
        Some(_) => {
            assert_eq!(f["verdict"], "info", "{f}");
            assert!(detail.contains("CONFIG_TIMERLAT_TRACER"), "{f}");
        }
    }
    if tracers.is_some() {
        let hrtimer = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
            .iter()
            .any(|d| {
                std::path::Path::new(d)
                    .join("events/timer/hrtimer_start")
                    .is_dir()
            });
        assert_eq!(detail.contains("timer --split splits"), hrtimer, "{f}");
    }
    let measurable = tracers.is_some_and(|t| t.split_whitespace().any(|x| x == "timerlat"));
    // `--explain` combines with `--context`: the kernel's lack of the
    // tracer is what refuses it, not the options.
    for extra in [&[][..], &["--explain"][..]] {
        if measurable {
            break;
        }
        let out = rtlat()
            .args(["timer", "--context", "irq", "--duration", "1s", "--quiet"])
            .args(extra)
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{extra:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("CONFIG_TIMERLAT_TRACER") || err.contains("tracefs"),
            "{err}"
        );
    }
}
