//! Integration tests for `rtlat suite` and `rtlat compare --by-board`.

use crate::case::Case;
use crate::sshd::{sshd, Board, Keys, SSHD, SSH_BOARDS};
use crate::util::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn manifest(dir: &Path) -> Value {
    load(&dir.join("suite.json"))
}

fn states(m: &Value) -> Vec<(String, String)> {
    m["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| {
            (
                s["name"].as_str().expect("name").to_string(),
                s["state"].as_str().expect("state").to_string(),
            )
        })
        .collect()
}

/// Every step done, its result complete and schema-valid.
fn assert_all_done(dir: &Path) -> Vec<String> {
    let m = manifest(dir);
    assert_eq!(m["schema"], "rtlat-suite");
    assert!(m["system"]["cpu_count"].as_u64().unwrap_or(0) > 0, "{m}");
    let mut names = Vec::new();
    for (name, state) in states(&m) {
        assert_eq!(state, "done", "step {name}: {m}");
        let file = dir.join(format!("{name}.json"));
        let r = load(&file);
        assert_eq!(r["complete"], true, "{name}");
        assert_schema_valid(&file);
        names.push(name);
    }
    names
}

/// `rtlat suite TOML --out OUT`, run to its end.
pub(crate) fn run_suite(t: &Case, toml: &Path, out: &Path) -> Output {
    t.rtlat()
        .arg("suite")
        .arg(toml)
        .arg("--out")
        .arg(out)
        .output()
        .expect("runs")
}

/// The stdout of `run`, once asserted that it succeeded.
fn succeeded(run: &Output) -> String {
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    stdout
}

/// The file `name` a suite wrote in `dir`.
pub(crate) fn written(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).expect(name)
}

/// The by-board table of the suite directory `out` in `format`.
fn by_board(t: &Case, out: &Path, format: &str) -> String {
    let table = t
        .rtlat()
        .args(["compare", "--by-board", "--format", format])
        .arg(out)
        .output()
        .expect("runs");
    assert!(table.status.success());
    String::from_utf8_lossy(&table.stdout).to_string()
}

/// A suite of three steps below `head`: `first` (timer, 1 s), `second`
/// (timer, for `second`, with `args` after `--cpus 0`), `third` (switch, 1 s).
fn three_steps(head: &str, second: &str, args: &str) -> String {
    format!(
        r#"{head}
[[step]]
name = "first"
bench = "timer"
duration = "1s"
args = ["--cpus", "0"]

[[step]]
name = "second"
bench = "timer"
duration = "{second}"
args = ["--cpus", "0"{args}]

[[step]]
name = "third"
bench = "switch"
duration = "1s"
"#
    )
}

/// Waits (a minute at most, else fails saying `what`) until the suite in
/// `dir` runs its step `second` and `also` holds.
fn wait_for_second(dir: &Path, also: impl Fn() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let running = dir.join("suite.json").exists()
            && states(&manifest(dir))
                .iter()
                .any(|(n, s)| n == "second" && s == "running");
        if running && also() {
            return;
        }
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The states of the suite in `dir` (of [`three_steps`]): `first` done,
/// `second` in state `second`, `third` pending.
fn assert_stopped_in_second(dir: &Path, second: &str) {
    assert_eq!(
        states(&manifest(dir)),
        [
            ("first".into(), "done".into()),
            ("second".into(), second.into()),
            ("third".into(), "pending".into())
        ]
    );
}

case!(
    quick_suite_runs_every_step_and_writes_report_and_summary,
    [Root],
    |t| {
        let out = t.path("quick");
        let run = {
            let _turn = measuring();
            run_suite(&t, Path::new("quick"), &out)
        };
        let stdout = succeeded(&run);
        let names = assert_all_done(&out);
        assert_eq!(names, ["cruncher", "switch", "timer", "timer-load"]);
        let report = written(&out, "report.html");
        let summary = written(&out, "summary.md");
        for n in &names {
            assert!(stdout.contains(&format!("] {n}: done in")), "{stdout}");
            assert!(
                report.contains(&format!("{n}.json")),
                "report.html lacks {n}"
            );
            assert!(
                summary.contains(&format!("| {n} |")),
                "summary.md lacks {n}"
            );
            assert!(summary.contains(&format!("{n} max")) || n == "cruncher");
        }
        assert!(summary.contains("cruncher stretch"), "{summary}");
        // The by-board table of the directory is the one in summary.md.
        let table = by_board(&t, &out, "markdown");
        assert!(summary.contains(table.trim()), "{table}\n---\n{summary}");
        eprintln!("summary.md:\n{summary}");
    }
);

case!(
    a_suite_killed_in_its_second_step_resumes_keeping_the_first,
    [Root, Measuring],
    |t| {
        let toml = t.path("resumable.toml");
        let resumable = three_steps(
            "\nname = \"resumable\"\n",
            "8s",
            r#", "--save-every", "1s""#,
        );
        std::fs::write(&toml, resumable).expect("write");
        let out = t.path("r");
        let mut child = t
            .process()
            .arg("suite")
            .arg(&toml)
            .arg("--out")
            .arg(&out)
            .stdout(Stdio::null())
            .spawn()
            .expect("starts");
        // Wait until the second step has saved a partial result.
        let second = out.join("second.json");
        let saved = || second.exists() && load(&second)["complete"] == false;
        wait_for_second(&out, saved, "the second step never ran");
        child.kill().expect("SIGKILL");
        child.wait().expect("reaped");
        let first = std::fs::read(out.join("first.json")).expect("first result");
        // The step's own process died with the suite: nothing rewrites the file any more.
        std::thread::sleep(Duration::from_millis(1500));
        let partial = std::fs::read(&second).expect("second result");
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(
            partial,
            std::fs::read(&second).unwrap(),
            "the step outlived the suite"
        );
        assert_eq!(load(&second)["complete"], false);
        assert_stopped_in_second(&out, "running");

        let again = run_suite(&t, &toml, &out);
        let stdout = String::from_utf8_lossy(&again.stdout);
        assert!(again.status.success(), "{stdout}");
        assert!(
            stdout.contains("[1/3] first: done before, kept"),
            "{stdout}"
        );
        assert!(stdout.contains("[2/3] second: done in"), "{stdout}");
        assert_all_done(&out);
        assert_eq!(
            first,
            std::fs::read(out.join("first.json")).unwrap(),
            "the completed step's file was touched"
        );
        assert!(load(&second)["duration_ns"].as_u64().unwrap() >= 7_000_000_000);
    }
);

/// A step whose machine lacks a device (exit 3), optional or not, and a step that runs.
fn lacking(optional: bool) -> String {
    format!(
        r#"
[[step]]
name = "no-chip"
bench = "irq loopback"
duration = "1s"
args = ["--chip", "/dev/gpiochip-rtlat-none", "--out", "0", "--in", "1"]
optional = {optional}

[[step]]
name = "timer"
bench = "timer"
duration = "1s"
args = ["--cpus", "0", "--policy", "other", "--no-mlock", "--dma-latency", "off"]
"#
    )
}

case!(
    an_optional_step_the_machine_cannot_run_is_skipped_with_its_reason,
    [],
    |t| {
        for optional in [true, false] {
            let toml = t.path(format!("lacking-{optional}.toml"));
            std::fs::write(&toml, lacking(optional)).expect("write");
            let out = t.path(format!("o-{optional}"));
            let run = run_suite(&t, &toml, &out);
            let stdout = String::from_utf8_lossy(&run.stdout);
            let m = manifest(&out);
            let no_chip = &m["steps"][0];
            assert_eq!(no_chip["exit_code"], 3, "{m}");
            assert!(
                no_chip["message"]
                    .as_str()
                    .unwrap_or("")
                    .contains("no GPIO chip"),
                "{m}"
            );
            // The step after it ran either way.
            assert_eq!(states(&m)[1], ("timer".into(), "done".into()), "{m}");
            let summary = written(&out, "summary.md");
            if optional {
                assert!(run.status.success(), "{stdout}");
                assert_eq!(no_chip["state"], "skipped", "{m}");
                assert!(stdout.contains("[1/2] no-chip: skipped: "), "{stdout}");
                assert!(summary.contains("| skipped: "), "{summary}");
            } else {
                assert_eq!(run.status.code(), Some(3), "{stdout}");
                assert_eq!(no_chip["state"], "failed", "{m}");
                assert!(summary.contains("| failed: "), "{summary}");
            }
        }
    }
);

case!(
    over_ssh_a_skipped_step_records_rtlats_reason_not_sshs,
    [Root, Native(SSH_BOARDS), Provided(sshd(), SSHD)],
    |t| {
        let keys = Keys::new();
        let board = Board::new(&keys);
        let toml = t.path("lacking.toml");
        std::fs::write(&toml, lacking(true)).expect("write");
        let out = t.path("o");
        let c = remote_suite(&toml, &out, &keys, &[&board]);
        // ssh as users run it: its own "Connection to … closed." not hidden.
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let mut c = Command::new(bin());
        for (i, a) in args.iter().enumerate() {
            let hiding = a == "LogLevel=ERROR";
            let before_hiding = args.get(i + 1).is_some_and(|n| n == "LogLevel=ERROR");
            if !hiding && !before_hiding {
                c.arg(a);
            }
        }
        let run = c.stdin(Stdio::null()).output().expect("runs");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr),
        );
        assert!(run.status.success(), "{stdout}\n{stderr}");
        let d = out.join(format!("root@{}", board.addr));
        let m = manifest(&d);
        let step = &m["steps"][0];
        assert_eq!(step["state"], "skipped", "{m}");
        let why = step["message"].as_str().unwrap_or("");
        assert!(
            why.starts_with("rtlat: ") && why.contains("no GPIO chip"),
            "{m}"
        );
        assert!(!stderr.contains("Connection to"), "{stderr}");
        // Said once: in the progress line, not echoed before it as well.
        let said = format!("{stdout}{stderr}").matches(why).count();
        assert_eq!(said, 1, "{stdout}\n{stderr}");
        let summary = written(&d, "summary.md");
        assert!(summary.contains(&format!("skipped: {why}")), "{summary}");
        assert!(!summary.contains("no-chip.json"), "{summary}");
    }
);

case!(bad_suites_give_one_line_and_exit_2, [], |t| {
    let out = t.path("o");
    let bad = |args: &[&str], want: &str| {
        let r = t.rtlat().args(args).output().expect("runs");
        let line = error_line(&r, 2, &format!("{args:?}"));
        assert!(line.contains(want), "{args:?}: {line}");
    };
    let o = out.to_str().unwrap();
    bad(&["suite", "fast", "--out", o], "quick, classic, soak");
    let toml = t.path("bad.toml");
    std::fs::write(
        &toml,
        "[[step]]\nname = \"a\"\nbench = \"timer\"\nduration = 5s\n",
    )
    .unwrap();
    let t = toml.to_str().unwrap();
    bad(&["suite", t, "--out", o], "bad.toml:4:12");
    std::fs::write(
        &toml,
        "[[step]]\nname = \"a\"\nbench = \"timer\"\nduration = \"5s\"\nargs = [\"--colour\"]\n",
    )
    .unwrap();
    bad(&["suite", t, "--out", o], "step 'a'");
    bad(
        &["suite", "quick", "--out", o, "--target", "board"],
        "ssh://",
    );
    bad(&["compare", "--by-board", o], "suite.json");
    assert!(!out.exists(), "nothing is created for a refused suite");
});

fn remote_suite(suite: &Path, out: &Path, keys: &Keys, targets: &[&Board]) -> Command {
    remote_suite_with(suite, out, keys, targets, &bin())
}

fn remote_suite_with(
    suite: &Path,
    out: &Path,
    keys: &Keys,
    targets: &[&Board],
    remote_rtlat: &Path,
) -> Command {
    let mut c = Command::new(bin());
    c.arg("suite").arg(suite).arg("--out").arg(out);
    for b in targets {
        c.args(["--target", &b.target()]);
    }
    c.args(keys.ssh_options())
        .arg("--remote-rtlat")
        .arg(remote_rtlat)
        .stdin(Stdio::null());
    c
}

case!(
    quick_suite_on_two_boards_over_ssh_gives_one_table_with_two_rows,
    [Root, Native(SSH_BOARDS), Provided(sshd(), SSHD)],
    |t| {
        let keys = Keys::new();
        let (a, b) = (Board::new(&keys), Board::new(&keys));
        let out = t.path("boards");
        let run = {
            let _turn = measuring();
            remote_suite(Path::new("quick"), &out, &keys, &[&a, &b])
                .output()
                .expect("runs")
        };
        succeeded(&run);
        for board in [&a, &b] {
            let d = out.join(format!("root@{}", board.addr));
            let names = assert_all_done(&d);
            assert_eq!(names, ["cruncher", "switch", "timer", "timer-load"]);
            assert_eq!(manifest(&d)["target"], board.target());
            assert!(d.join("report.html").is_file() && d.join("summary.md").is_file());
            // Nothing left running on the board but its sshd.
            assert_eq!(
                board.pids().len(),
                1,
                "left on {}: {:?}",
                board.ns,
                board.pids()
            );
        }
        let table = by_board(&t, &out, "csv");
        eprintln!("by-board:\n{table}");
        let rows: Vec<&str> = table.lines().collect();
        assert_eq!(rows.len(), 3, "{table}");
        assert!(rows[0].starts_with("board,cruncher_ideal_us,cruncher_stretch,switch_min_us"));
        // Rows named by the host name the boards record (here one for both,
        // the namespaces share it), told apart by their directories.
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
        let host = host.trim();
        assert!(
            rows[1].starts_with(&format!("{host} [root@{}],", a.addr)),
            "{table}"
        );
        assert!(
            rows[2].starts_with(&format!("{host} [root@{}],", b.addr)),
            "{table}"
        );
        let summary = written(&out, "summary.md");
        assert!(
            summary.contains(&format!("| {host} [root@{}] |", b.addr)),
            "{summary}"
        );
        // The page of all boards: the by-board table, then the summary, above
        // the first plot; each result under its board's and step's name.
        let page = written(&out, "report.html");
        let first_plot = page.find("<svg ").expect("a plot");
        let boards = page.find("<h2>Boards</h2>").expect("the by-board table");
        let summary = page.find("<h2>Summary</h2>").expect("a summary");
        assert!(boards < summary && summary < first_plot);
        for board in [&a, &b] {
            for step in ["cruncher", "switch", "timer", "timer-load"] {
                let name = format!("{host} [root@{}]: {step}", board.addr);
                assert!(page.contains(&format!("<h2>{name} — ")), "no {name}");
            }
        }
    }
);

case!(
    a_board_lost_mid_run_is_reported_and_the_other_completes,
    [Root, Native(SSH_BOARDS), Provided(sshd(), SSHD), Measuring],
    |t| {
        let keys = Keys::new();
        let (mut a, b) = (Board::new(&keys), Board::new(&keys));
        let suite = t.path("short.toml");
        std::fs::write(&suite, three_steps("", "6s", "")).unwrap();
        let out = t.path("boards");
        let child = remote_suite(&suite, &out, &keys, &[&a, &b])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starts");
        let da = out.join(format!("root@{}", a.addr));
        wait_for_second(&da, || true, "the second step never ran on a");
        std::thread::sleep(Duration::from_secs(1));
        a.kill_all();
        let run = child.wait_with_output().expect("ends");
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(3), "{stderr}");
        eprintln!("lost board:\n{stderr}");
        let last = stderr.lines().last().unwrap_or_default();
        assert!(
            last.contains(&format!("root@{} became unreachable", a.addr))
                && last.contains("1 completed step(s) are kept"),
            "{stderr}"
        );
        assert_stopped_in_second(&da, "failed");
        assert_eq!(load(&da.join("first.json"))["complete"], true);
        assert_all_done(&out.join(format!("root@{}", b.addr)));
    }
);

case!(
    a_target_without_rtlat_or_with_another_version_is_refused_in_one_line,
    [Root, Native(SSH_BOARDS), Provided(sshd(), SSHD)],
    |t| {
        let keys = Keys::new();
        let a = Board::new(&keys);
        let out = t.path("o");
        let old = t.path("old-rtlat");
        std::fs::write(&old, "#!/bin/sh\necho rtlat 0.0.1\n").unwrap();
        std::process::Command::new("chmod")
            .arg("+x")
            .arg(&old)
            .status()
            .unwrap();
        let refused = |remote: &str, want: &str| {
            let r = remote_suite_with(Path::new("quick"), &out, &keys, &[&a], Path::new(remote))
                .output()
                .expect("runs");
            let line = error_line(&r, 3, want);
            eprintln!("refused: {line}");
            assert!(line.contains(want), "{line}");
        };
        refused(
            "/nonexistent/rtlat",
            "install rtlat there or give --remote-rtlat",
        );
        refused(old.to_str().unwrap(), "runs 'rtlat 0.0.1'");
        let gone = t
            .process()
            .args(["suite", "quick", "--out"])
            .arg(&out)
            .args(["--target", "ssh://root@10.202.250.1"])
            .args(keys.ssh_options())
            .args(["--ssh-option", "ConnectTimeout=2"])
            .output()
            .expect("runs");
        let line = error_line(&gone, 3, "an unreachable target");
        eprintln!("unreachable: {line}");
        assert!(line.contains("is unreachable"), "{line}");
    }
);
