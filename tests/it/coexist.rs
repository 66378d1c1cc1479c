//! Runs that read the kernel's trace from instances of their own run side
//! by side: two `timer --explain` at once, and both ends of a round trip
//! explained at once; a run killed mid-way leaves the other's result
//! whole, and its instance is removed by the next run that starts.

use crate::explain::{assert_parts_add_up, Reaped};
use crate::util::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const INSTANCES: &str = "/sys/kernel/tracing/instances";

/// `timer --explain` on `cpu` for `duration`, its result in `json`.
fn timer_on(cpu: usize, duration: &str, json: &Path) -> Command {
    let mut c = Command::new(bin());
    c.args(["timer", "--explain", "--cpus", &cpu.to_string()])
        .args(["--period", "200us", "--duration", duration, "--quiet"])
        .arg("--json")
        .arg(json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn instance_of(pid: u32) -> PathBuf {
    Path::new(INSTANCES).join(format!("rtlat-{pid}"))
}

case!(
    two_explain_runs_on_two_cpus_run_at_once,
    [
        Root,
        Native(HOST_TRACE),
        Cpus(2, "two runs on two CPUs"),
        Measuring
    ],
    |t| {
        let (a, b) = (t.path("a.json"), t.path("b.json"));
        let first = timer_on(0, "3s", &a).spawn().expect("runs");
        let second = timer_on(1, "3s", &b).spawn().expect("runs");
        for (run, json) in [(first, &a), (second, &b)] {
            let out = run.wait_with_output().expect("waits");
            assert_exit(&out, 0, &format!("{json:?}"));
            let r = load(json);
            let cases = r["explained"].as_array().cloned().unwrap_or_default();
            assert_eq!(cases.len(), 10, "{json:?}: {cases:?}");
            assert_parts_add_up(&cases);
            assert_eq!(r["details"]["explain"]["lost_events"], 0, "{json:?}");
        }
    }
);

case!(
    a_killed_explain_run_leaves_the_other_whole_and_its_instance_to_the_next,
    [
        Root,
        Native(HOST_TRACE),
        Cpus(2, "two runs on two CPUs"),
        Measuring
    ],
    |t| {
        let (a, b, c) = (t.path("a.json"), t.path("b.json"), t.path("c.json"));
        let survivor = timer_on(0, "3s", &a).spawn().expect("runs");
        let victim = Reaped(timer_on(1, "10s", &b).spawn().expect("runs"));
        let pid = victim.0.id();
        // Both measuring, then the second killed where it stands.
        for _ in 0..100 {
            if instance_of(pid).exists() && b.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
        send_signal(pid, "KILL");
        drop(victim);
        assert!(
            instance_of(pid).exists(),
            "a SIGKILLed run cannot remove its instance"
        );
        let out = survivor.wait_with_output().expect("waits");
        assert_exit(&out, 0, "the run beside the killed one");
        let r = load(&a);
        let cases = r["explained"].as_array().cloned().unwrap_or_default();
        assert_eq!(cases.len(), 10, "{cases:?}");
        assert_eq!(r["complete"], true);
        assert_eq!(r["end_reason"], "duration");
        let s = &r["threads"][0]["summary"];
        let periods =
            s["samples"].as_u64().expect("samples") + s["overruns"].as_u64().expect("overruns");
        assert!(
            periods.abs_diff(15_000) <= 15,
            "3 s at 200 us: {periods} periods counted"
        );
        // The next run that starts removes what the killed one left.
        let (out, r) = run_json(
            t.rtlat()
                .args(["timer", "--explain", "--cpus", "1", "--duration", "1s"]),
            &c,
            0,
        );
        assert!(
            !instance_of(pid).exists(),
            "the killed run's instance is left"
        );
        let said = format!("killed rtlat run (pid {pid})");
        assert!(
            r["notes"]
                .as_array()
                .expect("notes")
                .iter()
                .any(|n| n.as_str().is_some_and(|n| n.contains(&said))),
            "no note of the killed run: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
);

case!(
    both_ends_of_a_round_trip_are_explained_at_once,
    [
        Root,
        Native(HOST_TRACE),
        Cpus(2, "two runs on two CPUs"),
        Measuring
    ],
    |t| {
        let net = crate::net::Netns::new();
        let (sj, pj) = (t.path("serve.json"), t.path("ping.json"));
        let listen = format!("{}:7357", net.a4);
        let server = crate::net::Server::spawn(net.exec(&net.a, &[]).args(crate::net::serve_args(
            &listen,
            &sj,
            &["--cpu", "1", "--explain"],
        )));
        let out = net
            .exec(&net.b, &["net", "ping", &listen, "--explain", "--cpu", "0"])
            .args(["--rate", "2000/s", "--duration", "3s", "--quiet", "--json"])
            .arg(&pj)
            .output()
            .expect("ping runs");
        assert_exit(&out, 0, "net ping --explain beside net serve --explain");
        let (code, _) = server.stop(2);
        assert_eq!(code, Some(0));
        for (json, series) in [(&pj, "rx"), (&sj, "server_rx")] {
            let r = load(json);
            let cases: Vec<_> = r["explained"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|c| c["thread"] == series)
                .collect();
            assert_eq!(cases.len(), 10, "{series}: {cases:?}");
            assert_parts_add_up(&cases);
        }
    }
);
