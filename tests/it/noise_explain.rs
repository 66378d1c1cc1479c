//! `rtlat noise --explain`: a known source of noise on the measuring CPU is
//! found among the gaps of the busy loop, named, and its share of the
//! stolen time matches what the source itself took.

use crate::case::Case;
use crate::evidence::{covered, Hog, SoftirqWitness};
use crate::explain::{assert_parts_add_up, measuring_cpu, net_rx_flood};
use crate::util::*;
use serde_json::Value;

/// A task's time on the CPU so far (ns, the scheduler's own count).
fn runtime_ns(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).expect("schedstat");
    s.split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .expect("runtime")
}

/// `noise --explain` on `cpu` for `duration`, below a FIFO 90 source, its
/// result in the case's directory: the result and its stdout.
fn noise_run(t: &Case, cpu: usize, duration: &str) -> (Value, String) {
    let (out, r) = t.run_json(
        t.rtlat().args([
            "noise",
            "--explain",
            "--cpus",
            &cpu.to_string(),
            "--priority",
            "80",
            "--duration",
            duration,
        ]),
        "n.json",
        0,
    );
    (r, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The CPU's totals by cause, and the ns of the causes `pick` takes.
fn totals(r: &Value, cpu: usize, pick: impl Fn(&Value) -> bool) -> (Value, u64) {
    let t = r["details"]["explain"]["totals"]
        .as_array()
        .expect("totals")
        .iter()
        .find(|t| t["cpu"] == cpu)
        .cloned()
        .expect("this CPU's totals");
    let parts = t["parts"].as_array().expect("parts");
    let sum: u64 = parts.iter().map(|p| p["ns"].as_u64().expect("ns")).sum();
    assert_eq!(sum, t["ns"].as_u64().expect("ns"), "the causes add up");
    let ns = parts
        .iter()
        .filter(|p| pick(p))
        .map(|p| p["ns"].as_u64().expect("ns"))
        .sum();
    (t, ns)
}

case!(
    a_fifo_thread_above_the_loop_is_named_with_the_time_it_took,
    crate::explain::TRACED_HOG,
    |t| {
        let cpu = measuring_cpu();
        let source = Hog::start("rtlat-nhog", cpu, 2, t.dir());
        let pid = source.proc.0.id();
        let (t0, before) = (std::time::Instant::now(), runtime_ns(pid));
        let (r, text) = noise_run(&t, cpu, "5s");
        let (wall, took) = (t0.elapsed(), runtime_ns(pid) - before);
        let span = r["details"]["cpus"][0]["last_ns"].as_u64().expect("last")
            - r["details"]["cpus"][0]["first_ns"].as_u64().expect("first");
        // What the source took while the loop ran, at the rate it took it over
        // the whole run (the scheduler's count: steal left out, as here).
        let expected = took as f64 * span as f64 / wall.as_nanos() as f64;
        let is_source = |p: &Value| {
            p["kind"] == "thread"
                && p["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("rtlat-nhog ") && n.ends_with(" FIFO 90"))
        };
        let (t, named) = totals(&r, cpu, is_source);
        eprintln!("source took {expected:.0} ns of the loop's span, named for {named} ns: {t}");
        assert!(
            (named as f64 - expected).abs() <= 0.1 * expected,
            "the source took {expected:.0} ns, --explain gave it {named} ns: {t}"
        );
        // The longest gaps are the source's bursts, explained one by one.
        let cases = r["explained"].as_array().cloned().unwrap_or_default();
        assert_eq!(cases.len(), 10, "{cases:?}");
        assert_parts_add_up(&cases);
        let line = format!("noise: cpu{cpu}: by cause, ");
        assert!(
            text.lines()
                .any(|l| l.starts_with(&line) && l.contains("thread rtlat-nhog ")),
            "{text}"
        );
    }
);

case!(
    a_udp_flood_received_on_the_measuring_cpu_is_named_net_rx,
    [
        Root,
        Native(HOST_TRACE),
        Program("python3", "python3"),
        Cpus(
            2,
            "the flood is sent from another CPU than the measuring one"
        ),
        Measuring
    ],
    |t| {
        let cpu = measuring_cpu();
        // Paced: every gap is attributed, and a flood as fast as an idle
        // sender can make gaps faster than the reader (on the sender's CPU)
        // attributes them; it then skips some, counted, but not in NET_RX's sum.
        let _flood = net_rx_flood(cpu, "40MB/s");
        std::thread::sleep(std::time::Duration::from_millis(500));
        let witness = SoftirqWitness::start(cpu);
        let (r, _) = noise_run(&t, cpu, "4s");
        let c = &r["details"]["cpus"][0];
        let span = (
            c["first_ns"].as_u64().expect("first"),
            c["last_ns"].as_u64().expect("last"),
        );
        let took = covered(&witness.spans(&t.path("witness.trace")), span.0, span.1);
        let net_rx = |p: &Value| p["kind"] == "softirq" && p["name"] == "NET_RX";
        let (t, ns) = totals(&r, cpu, net_rx);
        eprintln!("NET_RX {ns} ns in the gaps, {took} ns traced apart: {t}");
        // The time the flood's receive work took on the CPU while the loop ran,
        // from a trace of the test's own, against what --explain found in the
        // loop's gaps (softirq runs shorter than the threshold are not gaps).
        assert!(
            (ns as f64 - took as f64).abs() <= 0.1 * took as f64,
            "NET_RX ran {took} ns on cpu{cpu} while the loop ran, --explain found {ns} ns: {t}"
        );
        // The flood's receive work is the largest cause from outside the loop
        // (the loop's own time in its gaps aside) after what the hypervisor took.
        let first = t["parts"]
            .as_array()
            .expect("parts")
            .iter()
            .find(|p| p["kind"] != "hypervisor" && p["kind"] != "self")
            .cloned()
            .expect("a cause");
        assert!(net_rx(&first), "NET_RX is not the largest cause: {t}");
        assert!(ns > 0);
    }
);

case!(
    noise_explain_without_root_exits_3_naming_the_fix,
    [Root],
    |_t| {
        crate::explain::assert_explain_needs_root(&as_nobody_error(&["noise", "--explain"]));
    }
);

#[test]
fn noise_explain_with_a_kernel_tracer_or_without_explain_is_a_usage_error() {
    assert_usage_errors(&[
        &["noise", "--explain", "--osnoise"],
        &["noise", "--explain", "--hwlat"],
        &["noise", "--explain-worst", "3"],
        &["noise", "--explain", "--explain-worst", "0"],
    ]);
}
