//! A suite directory as a hostile user may leave it: a tampered manifest, a
//! step named after the suite's own files, two suites on one `--out`.

use crate::util::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A suite of one unprivileged timer step named `name`, lasting `duration`.
fn one_step(dir: &Path, name: &str, duration: &str) -> std::path::PathBuf {
    let toml = dir.join(format!("{}.toml", &name[..name.len().min(40)]));
    let text = format!(
        "[[step]]\nname = \"{name}\"\nbench = \"timer\"\nduration = \"{duration}\"\n\
         args = [\"--cpus\", \"0\", \"--policy\", \"other\", \"--no-mlock\", \"--dma-latency\", \"off\"]\n"
    );
    std::fs::write(&toml, text).expect("write suite");
    toml
}

fn suite(toml: &Path, out: &Path) -> Command {
    let mut c = Command::new(bin());
    c.arg("suite").arg(toml).arg("--out").arg(out);
    c
}

fn manifest(out: &Path) -> Value {
    load(&out.join("suite.json"))
}

case!(
    a_tampered_manifest_never_makes_a_resumed_suite_write_outside_its_directory,
    [Measuring],
    |t| {
        let toml = one_step(t.dir(), "t", "1s");
        let out = t.path("out");
        let first = suite(&toml, &out).output().expect("runs");
        assert_exit(&first, 0, "first run");
        // Someone rewrites the manifest: the step failed, its file is elsewhere.
        let victim = t.path("victim.json");
        std::fs::write(&victim, "precious\n").expect("victim");
        let mut m = manifest(&out);
        m["steps"][0]["state"] = "failed".into();
        m["steps"][0]["file"] = victim.to_str().expect("utf-8").into();
        std::fs::write(out.join("suite.json"), m.to_string()).expect("tamper");
        let again = suite(&toml, &out).output().expect("runs");
        let stdout = String::from_utf8_lossy(&again.stdout);
        assert_exit(&again, 0, &format!("resumed: {stdout}"));
        assert!(stdout.contains("t.json"), "{stdout}");
        assert!(!stdout.contains("victim"), "{stdout}");
        assert_eq!(
            std::fs::read_to_string(&victim).expect("victim"),
            "precious\n"
        );
        let m = manifest(&out);
        assert_eq!(m["steps"][0]["file"], "t.json", "{m}");
        assert_eq!(m["steps"][0]["state"], "done", "{m}");
        assert_eq!(load(&out.join("t.json"))["complete"], true);

        // A step name that is a path, planted in the manifest, is refused.
        let mut m = manifest(&out);
        m["steps"][0]["name"] = "../t".into();
        std::fs::write(out.join("suite.json"), m.to_string()).expect("tamper");
        let refused = suite(&toml, &out).output().expect("runs");
        let line = error_line(&refused, 2, "a path as a step name");
        assert!(line.contains("not usable as a file name"), "{line}");
    }
);

case!(
    a_step_named_after_the_suites_own_files_or_too_long_is_refused_before_anything_runs,
    [],
    |t| {
        for name in ["suite", "report", "summary"] {
            let toml = one_step(t.dir(), name, "1s");
            let out = t.path(format!("out-{name}"));
            let r = suite(&toml, &out).output().expect("runs");
            let line = error_line(&r, 2, name);
            assert!(
                line.contains(&format!("step name '{name}' is reserved")),
                "{line}"
            );
            assert!(!out.exists(), "{name}: nothing is created");
        }
        // Within the bound on names, but too long for `<name>.json`.
        let toml = one_step(t.dir(), &"s".repeat(251), "1s");
        let out = t.path("out-long");
        let r = suite(&toml, &out).output().expect("runs");
        let line = error_line(&r, 2, "a step name of 251 characters");
        assert!(
            line.contains("251 characters long") && line.contains("at most 250"),
            "{line}"
        );
        assert!(!out.exists(), "nothing is created");
    }
);

case!(
    a_second_suite_on_the_same_out_is_refused_and_an_interrupted_step_says_so,
    [Measuring],
    |t| {
        let toml = one_step(t.dir(), "long", "60s");
        let out = t.path("out");
        let first = suite(&toml, &out)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starts");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !(out.join("suite.json").exists()
            && manifest(&out)["steps"][0]["state"] == "running"
            && out.join("long.json").exists())
        {
            assert!(Instant::now() < deadline, "the step never started");
            std::thread::sleep(Duration::from_millis(100));
        }
        let second = suite(&toml, &out).output().expect("runs");
        let line = error_line(&second, 4, "second suite");
        let pid = format!("another rtlat (pid {})", first.id());
        assert!(line.contains(&pid) && line.contains("--out"), "{line}");
        assert!(second.stdout.is_empty(), "the second suite ran nothing");

        send_signal(first.id(), "INT");
        let ended = first.wait_with_output().expect("ends");
        let stdout = String::from_utf8_lossy(&ended.stdout);
        assert!(stdout.contains("[1/1] long: interrupted after"), "{stdout}");
        assert!(!stdout.contains("failed"), "{stdout}");
        let m = manifest(&out);
        assert_eq!(m["steps"][0]["state"], "interrupted", "{m}");
        // The lock went with the suite: the same command resumes.
        assert!(!out.join(".suite.lock").exists(), "lock file left");
    }
);
