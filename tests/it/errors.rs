use crate::util::*;

#[test]
fn bad_values_give_one_line_and_exit_2() {
    let cases: &[&[&str]] = &[
        &["timer", "--period", "0"],
        &["timer", "--period", "-5"],
        &["timer", "--period", "abc"],
        &["timer", "--period", "10"],
        &["timer", "--period", "1ns"],
        &["timer", "--period", "9us"],
        &["timer", "--cpus", "999"],
        &["timer", "--cpus", "1-x"],
        &["timer", "--priority", "200"],
        &["timer", "--duration", "0"],
        &["timer", "--loops", "0"],
        &["timer", "--policy", "nosuch"],
        &["timer", "--dma-latency", "-3"],
        &["timer", "--policy", "other", "--priority", "5"],
        &["timer", "--dl-runtime", "10us"],
        &[
            "timer",
            "--policy",
            "deadline",
            "--dl-runtime",
            "2ms",
            "--period",
            "1ms",
        ],
        &["timer", "--duration", "1s", "--loops", "5"],
        &["timer", "--no-such-option"],
        &["nosuchcommand"],
    ];
    assert_usage_errors(cases);
}

#[test]
fn messages_name_the_offending_value_and_the_fix() {
    let out = rtlat()
        .args(["timer", "--cpus", "999"])
        .output()
        .expect("runs");
    let msg = stderr_lines(&out).join("");
    assert!(
        msg.contains("999") && msg.contains("online CPUs are"),
        "{msg}"
    );
    let out = rtlat()
        .args(["timer", "--period", "10"])
        .output()
        .expect("runs");
    let msg = stderr_lines(&out).join("");
    assert!(msg.contains("10us") || msg.contains("unit"), "{msg}");
}

#[test]
fn help_and_version() {
    let out = rtlat().arg("--help").output().expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.contains("Examples:") && text.contains("timer") && text.contains("check"));
    assert!(text.contains("Exit codes"));
    let out = rtlat().args(["timer", "--help"]).output().expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Examples:") && text.contains("overrun") && text.contains("--period"));
    let out = rtlat().arg("--version").output().expect("runs");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("rtlat {}", env!("CARGO_PKG_VERSION"))
    );
}

case!(
    missing_privileges_exit_3_naming_the_fix,
    [Root, Measuring],
    |t| {
        let exe = unprivileged_copy(t.dir());
        for extra in [&[][..], &["--no-mlock", "--dma-latency", "off"][..]] {
            let out = as_nobody(&exe)
                .args(["timer", "--duration", "1s"])
                .args(extra)
                .output()
                .expect("setpriv runs");
            let line = error_line(&out, 3, &format!("{extra:?}"));
            assert!(
                line.contains("setcap cap_sys_nice,cap_ipc_lock+ep"),
                "{line}"
            );
            // Every privilege missing is named at once; what is not asked
            // for is not.
            let asked = extra.is_empty();
            for what in ["locked memory", "/dev/cpu_dma_latency"] {
                assert_eq!(line.contains(what), asked, "{what}: {line}");
            }
            assert!(line.contains("real-time policy fifo"), "{line}");
        }
        // With memory locking and dma latency off, the scheduling refusal names --policy other.
        let out = as_nobody(&exe)
            .args([
                "timer",
                "--duration",
                "1s",
                "--no-mlock",
                "--dma-latency",
                "off",
            ])
            .output()
            .expect("runs");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--policy other"));
    }
);

case!(
    policy_other_is_the_explicit_unprivileged_mode,
    [Root, Measuring],
    |t| {
        let exe = unprivileged_copy(t.dir());
        let json = t.path("r.json");
        std::fs::write(&json, b"").expect("create");
        std::fs::set_permissions(&json, std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .expect("chmod");
        let mut nobody = as_nobody(&exe);
        nobody
            .arg("timer")
            .args(UNPRIVILEGED)
            .args(["--duration", "1s", "--quiet"]);
        let (_, r) = run_json(&mut assert_cmd::Command::from_std(nobody), &json, 0);
        assert_eq!(r["tuning"]["policy"], "other");
        assert_eq!(r["tuning"]["mlock"], false);
        assert!(r["tuning"]["dma_latency_us"].is_null());
        assert!(r["total"]["samples"].as_u64().expect("samples") > 0);
    }
);
