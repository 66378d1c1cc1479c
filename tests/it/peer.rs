//! Two-system benchmarks driven from one side: `rtlat net ping --serve-on`
//! and `rtlat irq host --target` start the other side on a board over ssh
//! (a network namespace with its own sshd, see `sshd.rs`) and stop it.

use crate::sshd::{sshd, Board, Keys, SSHD, SSH_BOARDS};
use crate::util::*;
use std::path::Path;
use std::process::{Command, Output};

/// The board and the keys to reach it, when the test can run.
fn board() -> (Keys, Board) {
    let keys = Keys::new();
    let board = Board::new(&keys);
    (keys, board)
}

/// `rtlat ARGS` with the board's ssh options and this rtlat on the board.
fn with_board(args: &[&str], keys: &Keys, remote_rtlat: &Path) -> Command {
    let mut c = Command::new(bin());
    c.args(args)
        .args(keys.ssh_options())
        .arg("--remote-rtlat")
        .arg(remote_rtlat);
    c
}

/// Local processes still naming the board's address (ssh clients).
fn local_leftovers(addr: &str) -> Vec<String> {
    let out = Command::new("ps")
        .args(["-eo", "pid=,args="])
        .output()
        .expect("ps runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(addr) && !l.contains("sshd") && l.contains("ssh "))
        .map(String::from)
        .collect()
}

/// Nothing of a run is left on the board or here. sshd ends a closed
/// connection's own process after the client is gone, so the board is given
/// a few seconds to settle to its one listening sshd.
fn assert_nothing_left(board: &Board) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while board.pids().len() > 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let left: Vec<String> = board
        .pids()
        .iter()
        .map(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            format!("{pid} {}", String::from_utf8_lossy(&cmd).replace('\0', " "))
        })
        .collect();
    assert_eq!(
        left.len(),
        1,
        "left on the board besides its sshd: {left:?}"
    );
    assert!(
        local_leftovers(&board.addr).is_empty(),
        "left here: {:?}",
        local_leftovers(&board.addr)
    );
}

fn ok(run: &Output) -> String {
    let stdout = String::from_utf8_lossy(&run.stdout).to_string();
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    stdout
}

/// `rtlat ARGS --json JSON` with the board (this rtlat on it), in the
/// measuring turn: its output and result, once asserted that the run
/// succeeded (its output is printed) and wrote a complete, schema-valid
/// result.
fn board_run(args: &[&str], keys: &Keys, json: &Path) -> (String, serde_json::Value) {
    let run = {
        let _turn = measuring();
        with_board(args, keys, &bin())
            .arg("--json")
            .arg(json)
            .output()
            .expect("runs")
    };
    let stdout = ok(&run);
    eprintln!("{stdout}");
    assert_schema_valid(json);
    let r = load(json);
    assert_eq!(r["complete"], true);
    (stdout, r)
}

case!(
    ping_serve_on_starts_the_server_on_the_board_and_keeps_its_result,
    [Root, Native(SSH_BOARDS), Provided(sshd(), SSHD)],
    |t| {
        let (keys, board) = board();
        let json = t.path("ping.json");
        let target = format!("{}:7357", board.addr);
        let (_, r) = board_run(
            &[
                "net",
                "ping",
                &target,
                "--serve-on",
                &board.target(),
                "--count",
                "500",
                "--rate",
                "1000/s",
            ],
            &keys,
            &json,
        );
        assert_eq!(r["config"]["serve_on"], board.target());
        // Every request answered by the server started there, which measured them itself.
        assert_eq!(r["details"]["answered"], 500, "{}", r["details"]);
        let server = &r["details"]["server"];
        assert_eq!(server["target"], board.target());
        assert_eq!(server["end_reason"], "signal", "{server}");
        assert_eq!(server["details"]["requests"], 500, "{server}");
        let names: Vec<&str> = server["series"]
            .as_array()
            .expect("series")
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["server_rx", "turnaround"]);
        assert_eq!(server["series"][1]["samples"], 500);
        let threads = series_names(&r);
        assert!(threads.contains(&"server_rx"), "{threads:?}");
        assert!(
            r["notes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n.as_str().unwrap().contains("requests: 500 answered")),
            "{}",
            r["notes"]
        );
        assert_nothing_left(&board);
    }
);

case!(
    irq_host_target_starts_the_target_on_the_board_and_merges_its_series,
    [Root, Native(SSH_BOARDS), Provided(sshd(), SSHD)],
    |t| {
        let (keys, board) = board();
        let json = t.path("irq.json");
        let (stdout, r) = board_run(
            &[
                "irq",
                "host",
                "--backend",
                "sim",
                "--period",
                "1ms",
                "--count",
                "1000",
                "--target",
                &board.target(),
            ],
            &keys,
            &json,
        );
        assert_eq!(r["config"]["target"], board.target());
        let threads: Vec<(&str, u64)> = r["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["name"].as_str().unwrap(),
                    t["summary"]["samples"].as_u64().unwrap(),
                )
            })
            .collect();
        let names: Vec<&str> = threads.iter().map(|t| t.0).collect();
        assert_eq!(
            names,
            ["roundtrip", "target/kernel_to_user", "target/user_to_reply"]
        );
        assert_eq!(threads[0].1, 1000);
        // The target answered its edges for about as long as the host drove them.
        assert!(
            threads[1].1 > 300 && threads[2].1 == threads[1].1,
            "{threads:?}"
        );
        // The total stays the host's own.
        assert_eq!(r["total"]["samples"], 1000);
        let target = &r["details"]["target"];
        assert_eq!(target["end_reason"], "signal", "{target}");
        assert_eq!(target["details"]["role"], "target");
        assert_eq!(target["details"]["answered"], threads[1].1);
        assert!(stdout.contains("target/user_to_reply"), "{stdout}");
        assert!(
            stdout.contains("rtlat irq target ran on") && stdout.contains("share no wire"),
            "{stdout}"
        );
        assert_nothing_left(&board);
    }
);

case!(
    two_system_steps_run_in_a_suite,
    [Root, Native(SSH_BOARDS), Provided(sshd(), SSHD)],
    |t| {
        let (keys, board) = board();
        let mut remote: Vec<String> = keys.ssh_options();
        remote.extend(["--remote-rtlat".into(), bin().display().to_string()]);
        let remote = remote
            .iter()
            .map(|a| format!("{a:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        let suite = t.path("peers.toml");
        std::fs::write(
            &suite,
            format!(
                r#"
name = "peers"

[[step]]
name = "udp"
bench = "net ping"
duration = "2s"
args = ["{addr}:7357", "--serve-on", "{target}", {remote}]

[[step]]
name = "edges"
bench = "irq host"
duration = "2s"
args = ["--backend", "sim", "--target", "{target}", {remote}]
"#,
                addr = board.addr,
                target = board.target()
            ),
        )
        .unwrap();
        let out = t.path("out");
        let run = {
            let _turn = measuring();
            t.rtlat()
                .arg("suite")
                .arg(&suite)
                .arg("--out")
                .arg(&out)
                .output()
                .expect("runs")
        };
        let stdout = ok(&run);
        assert!(stdout.contains("] udp: done in"), "{stdout}");
        assert!(stdout.contains("] edges: done in"), "{stdout}");
        let udp = load(&out.join("udp.json"));
        assert_eq!(udp["details"]["server"]["target"], board.target());
        assert!(
            udp["details"]["server"]["details"]["requests"]
                .as_u64()
                .unwrap()
                > 1000
        );
        let edges = load(&out.join("edges.json"));
        assert_eq!(edges["threads"][2]["name"], "target/user_to_reply");
        assert!(edges["threads"][2]["summary"]["samples"].as_u64().unwrap() > 500);
        assert_nothing_left(&board);
    }
);

case!(
    a_board_unreachable_without_rtlat_or_with_another_version_is_refused_in_one_line,
    [Root, Native(SSH_BOARDS), Provided(sshd(), SSHD)],
    |t| {
        let (keys, board) = board();
        let old = t.path("old-rtlat");
        std::fs::write(&old, "#!/bin/sh\necho rtlat 0.0.1\n").unwrap();
        Command::new("chmod").arg("+x").arg(&old).status().unwrap();
        let json = t.path("r.json");
        let ping = |target: &str, remote: &Path, want: &str| {
            let server = format!("{}:7357", target.rsplit('@').next().unwrap());
            let r = with_board(
                &[
                    "net",
                    "ping",
                    &server,
                    "--serve-on",
                    target,
                    "--ssh-option",
                    "ConnectTimeout=2",
                    "--count",
                    "10",
                    "--json",
                    json.to_str().unwrap(),
                ],
                &keys,
                remote,
            )
            .output()
            .expect("runs");
            let line = error_line(&r, 3, want);
            eprintln!("refused: {line}");
            assert!(line.contains(want), "{line}");
            assert!(!json.exists(), "nothing was measured, nothing written");
        };
        let t = board.target();
        ping(
            &t,
            Path::new("/nonexistent/rtlat"),
            "install rtlat there or give --remote-rtlat",
        );
        ping(&t, &old, "runs 'rtlat 0.0.1', this is 'rtlat ");
        ping("ssh://root@10.202.250.1", &bin(), "is unreachable");
        let r = with_board(
            &[
                "irq",
                "host",
                "--backend",
                "sim",
                "--count",
                "10",
                "--target",
                &t,
            ],
            &keys,
            Path::new("/nonexistent/rtlat"),
        )
        .output()
        .expect("runs");
        let line = error_line(&r, 3, "irq host, no rtlat on the board");
        assert!(line.contains("has no '/nonexistent/rtlat'"), "{line}");
        assert_nothing_left(&board);
    }
);

case!(
    a_board_lost_mid_run_keeps_what_the_host_measured,
    [Root, Native(SSH_BOARDS), Provided(sshd(), SSHD), Measuring],
    |t| {
        let (keys, mut board) = board();
        let json = t.path("irq.json");
        let child = with_board(
            &[
                "irq",
                "host",
                "--backend",
                "sim",
                "--duration",
                "4s",
                "--target",
                &board.target(),
                "--json",
                json.to_str().unwrap(),
            ],
            &keys,
            &bin(),
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starts");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !json.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "the host never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
        board.kill_all();
        let run = child.wait_with_output().expect("ends");
        let line = error_line(&run, 3, "a lost board");
        eprintln!("lost: {line}");
        assert!(line.contains(&board.addr), "{line}");
        let r = load(&json);
        assert_eq!(r["complete"], true);
        assert!(r["threads"][0]["summary"]["samples"].as_u64().unwrap() > 2000);
        assert!(
            r["notes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n.as_str().unwrap().starts_with("the target on ")),
            "{}",
            r["notes"]
        );
        assert!(local_leftovers(&board.addr).is_empty());
    }
);

case!(
    an_interrupted_ping_stops_the_server_and_keeps_both_results,
    [Root, Native(SSH_BOARDS), Provided(sshd(), SSHD), Measuring],
    |t| {
        let (keys, board) = board();
        let json = t.path("ping.json");
        let target = format!("{}:7357", board.addr);
        let child = with_board(
            &[
                "net",
                "ping",
                &target,
                "--serve-on",
                &board.target(),
                "--duration",
                "60s",
                "--json",
                json.to_str().unwrap(),
            ],
            &keys,
            &bin(),
        )
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("starts");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        // Measuring: the first save of the result is there.
        while !(json.exists() && std::fs::read(&json).is_ok_and(|b| !b.is_empty())) {
            assert!(std::time::Instant::now() < deadline, "ping never started");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
        let st = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
        let run = child.wait_with_output().expect("ends");
        assert_eq!(run.status.code(), Some(0), "{:?}", stderr_lines(&run));
        let r = load(&json);
        assert_eq!(r["end_reason"], "signal");
        let answered = r["details"]["answered"].as_u64().unwrap();
        assert!(answered > 500, "{answered}");
        assert_eq!(r["details"]["server"]["details"]["requests"], answered);
        assert_nothing_left(&board);
    }
);
