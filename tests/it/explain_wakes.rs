//! `--explain` of wake-ups that start on another CPU or before the thread
//! is due: `rtlat switch` (the waker's ring → the wakee ran) and `rtlat net
//! ping` (the reply's RX stamp → the receiving thread ran). A FIFO hog on
//! the waiting thread's CPU logs its bursts: each case must give it the
//! time it ran there, and name it where it ran most of the case
//! (tests/it/evidence.rs); the parts add up.

use crate::evidence::Hog;
use crate::explain::{
    assert_explain_needs_root, assert_hog_named, assert_parts_add_up, assert_stacks_on_tasks,
    each_has_part, measuring_cpu, stack_of,
};
use crate::util::*;
use serde_json::Value;

/// The cases of `thread` among a result's explained ones.
fn cases_of(r: &Value, thread: &str) -> Vec<Value> {
    r["explained"]
        .as_array()
        .expect("explained")
        .iter()
        .filter(|c| c["thread"] == thread)
        .cloned()
        .collect()
}

/// `rtlat` in namespace `ns`, every thread of it on `cpu`: the peer's
/// start-up and reporting stay off the measured CPU.
fn pinned(ns: &str, cpu: &str) -> std::process::Command {
    let mut c = std::process::Command::new("ip");
    c.args(["netns", "exec", ns, "taskset", "-c", cpu])
        .arg(bin());
    c
}

/// What the tests with a hog and a waker need: those of
/// [`crate::explain::TRACED_HOG`] and two CPUs at least, the waker (or the
/// server) on another CPU than the thread the hog delays.
const TRACED_HOG_AND_WAKER: [Need; 5] = [
    Need::Root,
    Need::Native(HOST_TRACE),
    Need::Program("python3", "python3"),
    Need::Cpus(2, "the wake-up comes from another CPU than the hog's"),
    Need::Measuring,
];

case!(
    a_fifo_hog_on_the_wakees_cpu_is_named_for_its_late_wakes,
    TRACED_HOG_AND_WAKER,
    |t| {
        let cpu = measuring_cpu();
        let hog = Hog::start("rtlat-hog", cpu, 2, t.dir());
        let json = t.path("s.json");
        // pair0's waker on the other CPU, its wakee on the hog's: each 2 ms
        // burst holds one wake (the next ones are lost wakes, not samples).
        let cpus = format!("{},{cpu}", cpu - 1);
        let (out, r) = run_json(
            t.rtlat()
                .args([
                    "switch",
                    "--explain",
                    "--cpus",
                    &cpus,
                    "--placement",
                    "cross",
                ])
                .args(["--period", "200us", "--duration", "4s"]),
            &json,
            0,
        );
        assert_schema_valid(&json);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("worst ") && text.contains(" on pair0: "),
            "{text}"
        );
        let cases = cases_of(&r, "pair0");
        assert!(cases.iter().all(|c| c["cpu"] == cpu), "{cases:?}");
        assert_hog_named(&r, &cases, &hog, (10, "the 10 worst wakes of pair0"), 7);
    }
);

case!(
    switch_explain_stacks_show_the_waker_in_its_wake_call,
    [Root, Native(HOST_TRACE), Measuring],
    |t| {
        let cpu = measuring_cpu().to_string();
        let json = t.path("s.json");
        // Both threads of the pair on one CPU: the waker holds it at every
        // wake-up of the wakee, so each case's stack is the waker's, in the
        // futex wake it does (no load needed to have a task on the CPU).
        let (_, r) = run_json(
            t.rtlat()
                .args(["switch", "--explain", "--explain-stacks"])
                .args(["--explain-worst", "5", "--cpus", &cpu, "--duration", "2s"]),
            &json,
            0,
        );
        assert_schema_valid(&json);
        let cases = cases_of(&r, "pair0");
        assert!(!cases.is_empty(), "{r}");
        assert_parts_add_up(&cases);
        let with = assert_stacks_on_tasks(&cases);
        let waker: Vec<Vec<String>> = with
            .iter()
            .filter(|p| {
                p["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("pair0-waker "))
            })
            .map(stack_of)
            .collect();
        assert!(
            waker
                .iter()
                .any(|s| s.iter().any(|f| f.starts_with("futex_wake"))),
            "no stack of the waker in its futex wake among {cases:#?}"
        );
        // Named from /proc/kallsyms: the test runs as root.
        for s in &waker {
            assert!(s.iter().all(|f| !f.starts_with("0x")), "{s:?}");
        }
    }
);

case!(
    a_fifo_hog_on_the_clients_cpu_is_named_for_its_late_replies,
    TRACED_HOG_AND_WAKER,
    |t| {
        let cpu = measuring_cpu();
        let net = crate::net::Netns::new();
        let (sj, pj) = (t.path("serve.json"), t.path("ping.json"));
        let listen = format!("{}:7357", net.a4);
        let other = (cpu - 1).to_string();
        let _server = crate::net::Server::spawn(
            pinned(&net.a, &other).args(crate::net::serve_args(&listen, &sj, &["--cpu", &other])),
        );
        let hog = Hog::start("rtlat-hog", cpu, 2, t.dir());
        // The reply is delivered by the server's CPU (veth), the client blocks
        // for it (--spin off): a burst on the client's CPU holds the reply that
        // comes during it. A burst that begins while the client sleeps to its
        // next send only delays the send, so the rate is high enough for the
        // client to wait for a reply a good part of the time (about a quarter:
        // 40 bursts hold 10 replies).
        let out = net
            .exec(
                &net.b,
                &[
                    "net",
                    "ping",
                    &listen,
                    "--explain",
                    "--cpu",
                    &cpu.to_string(),
                ],
            )
            .args(["--spin", "off", "--rate", "20000/s", "--duration", "4s"])
            .arg("--json")
            .arg(&pj)
            .output()
            .expect("ping runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_schema_valid(&pj);
        let r = load(&pj);
        let cases = cases_of(&r, "rx");
        assert!(
            each_has_part(&cases, |p| p["kind"] == "self"),
            "the thread's own receive path or the reply's way is in each: {cases:?}"
        );
        assert_hog_named(&r, &cases, &hog, (10, "the 10 worst replies"), 5);
    }
);

case!(
    a_fifo_hog_on_the_servers_cpu_is_named_for_its_late_requests,
    TRACED_HOG_AND_WAKER,
    |t| {
        let cpu = measuring_cpu();
        let net = crate::net::Netns::new();
        let (sj, pj) = (t.path("serve.json"), t.path("ping.json"));
        let listen = format!("{}:7357", net.a4);
        let (mine, other) = (cpu.to_string(), (cpu - 1).to_string());
        let server = crate::net::Server::spawn(net.exec(&net.a, &[]).args(crate::net::serve_args(
            &listen,
            &sj,
            &["--cpu", &mine, "--explain", "--explain-worst", "30"],
        )));
        let hog = Hog::start("rtlat-hog", cpu, 2, t.dir());
        let out = pinned(&net.b, &other)
            .args(["net", "ping", &listen, "--cpu", &other])
            .args(["--rate", "5000/s", "--duration", "4s", "--quiet", "--json"])
            .arg(&pj)
            .output()
            .expect("ping runs");
        assert_exit(&out, 0, "out");
        let (code, _) = server.stop(2);
        assert_eq!(code, Some(0));
        assert_schema_valid(&sj);
        let r = load(&sj);
        let cases = cases_of(&r, "server_rx");
        // About 40 bursts of the hog in the run: most among the 30 worst on a
        // quiet machine (the attribution tests run alone: scripts/test.sh).
        assert_hog_named(&r, &cases, &hog, (30, "the 30 worst requests"), 15);
    }
);

case!(
    a_fifo_hog_on_the_cpu_of_irq_loopback_is_named_for_its_late_wakes,
    crate::explain::TRACED_HOG,
    |t| {
        let cpu = measuring_cpu();
        let hog = Hog::start("rtlat-hog", cpu, 2, t.dir());
        let json = t.path("i.json");
        // The simulated wire's event timestamp is a time the thread sleeps
        // until (a real wake-up on this CPU): the plumbing of the GPIO path,
        // which the QEMU guests run on a real line.
        let (_, r) = run_json(
            t.rtlat()
                .args(["irq", "loopback", "--backend", "sim", "--explain"])
                .args([
                    "--cpu",
                    &cpu.to_string(),
                    "--period",
                    "200us",
                    "--duration",
                    "4s",
                ]),
            &json,
            0,
        );
        assert_schema_valid(&json);
        let cases = cases_of(&r, "wake");
        // The simulated wire's own wake-ups are as late as the bursts in about
        // half the worst cases (4 to 7 of 10 covered by a burst, 2 under a
        // build): every covered one is judged, and 3 must be there.
        assert_hog_named(&r, &cases, &hog, (10, "the 10 worst wakes"), 3);
    }
);

case!(
    switch_ping_and_serve_explain_without_root_exit_3_naming_the_fix,
    [Root],
    |_t| {
        for args in [
            &["switch", "--explain"][..],
            &["net", "ping", "127.0.0.1:7357", "--explain", "--cpu", "0"],
            &[
                "net",
                "serve",
                "--listen",
                "127.0.0.1:7357",
                "--explain",
                "--cpu",
                "0",
            ],
        ] {
            assert_explain_needs_root(&as_nobody_error(args));
        }
    }
);

#[test]
fn explain_options_that_cannot_work_are_usage_errors() {
    assert_usage_errors(&[
        &["switch", "--explain-worst", "3"],
        &["switch", "--explain", "--explain-worst", "0"],
        &[
            "net",
            "ping",
            "127.0.0.1:7357",
            "--explain",
            "--no-split",
            "--cpu",
            "0",
        ],
        &["net", "ping", "127.0.0.1:7357", "--explain"],
        &[
            "net",
            "ping",
            "127.0.0.1:7357",
            "--explain-worst",
            "3",
            "--cpu",
            "0",
        ],
    ]);
    let out = rtlat()
        .args(["net", "ping", "127.0.0.1:7357", "--explain"])
        .output()
        .expect("runs");
    assert!(error_line(&out, 2, "no --cpu").contains("--cpu N"));
}

case!(
    a_suite_step_with_explain_explains_its_worst_samples,
    [Root, Native(HOST_TRACE)],
    |t| {
        let cpu = measuring_cpu().to_string();
        let toml = t.path("lab.toml");
        std::fs::write(
        &toml,
        format!(
            "[[step]]\nname = \"sw\"\nbench = \"switch\"\nduration = \"2s\"\nargs = [\"--cpus\", \"{cpu}\"]\nexplain = 3\n\n\
             [[step]]\nname = \"plain\"\nbench = \"cruncher\"\nduration = \"1s\"\nargs = [\"--cpu\", \"{cpu}\", \"--work\", \"1ms\"]\nexplain = false\n"
        ),
    )
    .expect("write");
        let out = t.path("lab");
        let run = {
            let _turn = measuring();
            t.rtlat()
                .arg("suite")
                .arg(&toml)
                .arg("--out")
                .arg(&out)
                .output()
                .expect("runs")
        };
        assert_exit(&run, 0, "run");
        let m = load(&out.join("suite.json"));
        let steps = m["steps"].as_array().expect("steps");
        let line = |i: usize| steps[i]["command"].to_string();
        assert!(
            line(0).contains("\"--explain-worst\",\"3\"") && !line(1).contains("--explain"),
            "{m}"
        );
        assert_eq!(steps[0]["explain"], 3, "the step as written: {m}");
        let sw = load(&out.join("sw.json"));
        let cases = cases_of(&sw, "pair0");
        assert_eq!(cases.len(), 3, "explain = 3: {sw}");
        assert_parts_add_up(&cases);
        let plain = load(&out.join("plain.json"));
        assert!(
            plain["explained"].as_array().is_none_or(|a| a.is_empty()),
            "{plain}"
        );
    }
);
