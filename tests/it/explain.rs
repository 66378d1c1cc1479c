//! `rtlat timer --explain`: known causes provoked on the measuring CPU,
//! each logging or tracing when it ran, must be given the time they took
//! in each worst sample and named as its culprit where they took most of
//! it (tests/it/evidence.rs), with parts that add up to each sample's
//! latency.

use crate::case::Case;
use crate::evidence::{assert_verdict, judge, Hog, SoftirqWitness, Verdict};
use crate::util::*;
use serde_json::Value;
use std::process::{Child, Command, Stdio};

/// The measuring CPU: the last one, away from where most housekeeping runs.
pub(crate) fn measuring_cpu() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()) - 1
}

/// What the tests with a hog (a python3 script, tests/it/evidence.rs) on
/// the measuring CPU need: the host's trace, and the measuring turn.
pub(crate) const TRACED_HOG: [Need; 4] = [
    Need::Root,
    Need::Native(HOST_TRACE),
    Need::Program("python3", "python3"),
    Need::Measuring,
];

/// A child that is killed when the test ends, however it ends.
pub(crate) struct Reaped(pub(crate) Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A UDP flood over a veth pair between two namespaces, received on
/// `cpu` (RPS: its NET_RX softirq) and sent from the CPU before it at
/// `rate` (`flood`: as fast as it can); both end when the pair is dropped.
pub(crate) fn net_rx_flood(cpu: usize, rate: &str) -> (crate::net::Netns, Reaped) {
    let net = crate::net::Netns::new();
    // Packets arriving on the veth in `a` are processed on the measuring
    // CPU (RPS): its NET_RX softirq.
    let rps = Command::new("ip")
        .args(["netns", "exec", &net.a, "sh", "-c"])
        .arg(format!(
            "echo {:x} > /sys/class/net/{}/queues/rx-0/rps_cpus",
            1u64 << cpu,
            net.va
        ))
        .status()
        .expect("ip netns exec");
    assert!(rps.success(), "rps_cpus");
    let flood = Reaped(
        Command::new("ip")
            .args(["netns", "exec", &net.b])
            .arg(bin())
            .args(["load", &format!("net:{rate}"), "--load-target"])
            .arg(format!("{}:9", net.a4))
            .args(["--load-cpus", &(cpu - 1).to_string(), "--quiet"])
            .stdout(Stdio::null())
            .spawn()
            .expect("flood"),
    );
    (net, flood)
}

/// Each explained case's parts add up to its latency (within 1 µs).
pub(crate) fn assert_parts_add_up(cases: &[Value]) {
    for c in cases {
        let sum: u64 = c["parts"]
            .as_array()
            .expect("parts")
            .iter()
            .map(|p| p["ns"].as_u64().expect("ns"))
            .sum();
        let lat = c["latency_ns"].as_u64().expect("latency_ns");
        assert!(
            sum.abs_diff(lat) <= 1000,
            "parts {sum} != latency {lat}: {c}"
        );
    }
}

/// Asserts that `cases` are the `n` worst of a run (`what` names them in
/// the message), that their parts add up, and that the hog (`rtlat-hog`)
/// is given the time it ran in each and named the culprit in at least
/// `named` of them (tests/it/evidence.rs). Returns the verdict.
pub(crate) fn assert_hog_named(
    r: &Value,
    cases: &[Value],
    hog: &Hog,
    (n, what): (usize, &str),
    named: usize,
) -> Verdict {
    assert_eq!(cases.len(), n, "{what}: {cases:?}");
    assert_parts_add_up(cases);
    let v = judge(r, cases, &hog.bursts(), names_hog("rtlat-hog"));
    assert_verdict(&v, named, cases.len(), "the hog");
    v
}

/// Whether every one of `cases` has a part that `part` accepts, but those
/// whose events were overwritten before they were read (which
/// [`assert_verdict`](crate::evidence::assert_verdict) bounds).
pub(crate) fn each_has_part(cases: &[Value], part: impl Fn(&Value) -> bool) -> bool {
    cases.iter().all(|c| {
        let parts = c["parts"].as_array().expect("parts");
        crate::evidence::overwritten(parts) || parts.iter().any(&part)
    })
}

/// Asserts that `err`, the error of an `--explain` run without root, names
/// the fix.
pub(crate) fn assert_explain_needs_root(err: &str) {
    assert!(
        err.contains("--explain needs tracefs") && err.contains("run as root"),
        "{err}"
    );
}

/// The largest part of a case: (kind, name).
pub(crate) fn culprit(c: &Value) -> (String, String) {
    let p = c["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .max_by_key(|p| p["ns"].as_u64().unwrap_or(0))
        .expect("a part");
    (
        p["kind"].as_str().unwrap_or("").into(),
        p["name"].as_str().unwrap_or("").into(),
    )
}

/// `--explain` on `cpu` for `duration` at `period`, its result in the
/// case's directory: the result and its cases.
fn explain_run(t: &Case, cpu: usize, duration: &str, period: &str) -> (Value, Vec<Value>) {
    let json = t.path("e.json");
    let (out, r) = run_json(
        t.rtlat().args([
            "timer",
            "--explain",
            "--cpus",
            &cpu.to_string(),
            "--priority",
            "80",
            "--period",
            period,
            "--duration",
            duration,
        ]),
        &json,
        0,
    );
    assert_schema_valid(&json);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("worst "), "no explained line:\n{text}");
    let cases = r["explained"].as_array().cloned().unwrap_or_default();
    // No idle-state exit longer than a hundred times the longest one this
    // CPU's idle states declare: longer is the host's (or nothing's).
    let limit = idle_limit_ns(cpu);
    for p in cases
        .iter()
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
    {
        if p["kind"] == "idle" {
            assert!(
                p["ns"].as_u64().unwrap_or(0) <= limit,
                "over {limit} ns: {p}"
            );
        }
    }
    (r, cases)
}

/// A hundred times the longest exit latency of `cpu`'s enabled idle
/// states, 100 us at least.
fn idle_limit_ns(cpu: usize) -> u64 {
    let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle");
    let read = |p: std::path::PathBuf| std::fs::read_to_string(p).unwrap_or_default();
    let longest_us = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|s| read(s.path().join("disable")).trim() != "1")
                .filter_map(|s| read(s.path().join("latency")).trim().parse::<u64>().ok())
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0);
    (longest_us * 100_000).max(100_000)
}

/// A part that names the hog `comm` (a FIFO 90 thread).
pub(crate) fn names_hog(comm: &str) -> impl Fn(&Value) -> bool + '_ {
    move |p: &Value| {
        p["kind"] == "thread"
            && p["name"]
                .as_str()
                .is_some_and(|n| n.starts_with(&format!("{comm} ")) && n.ends_with(" FIFO 90"))
    }
}

case!(
    a_fifo_thread_that_busy_loops_on_the_measuring_cpu_is_named,
    TRACED_HOG,
    |t| {
        let cpu = measuring_cpu();
        let hog = Hog::start("rtlat-hog", cpu, 2, t.dir());
        // A sample every 100 us: each 2 ms burst delays one by almost all of
        // it, above the scheduling noise of a quiet machine.
        let (r, cases) = explain_run(&t, cpu, "4s", "100us");
        assert_hog_named(&r, &cases, &hog, (10, "the 10 worst samples"), 7);
    }
);

case!(explain_without_root_exits_3_naming_the_fix, [Root], |_t| {
    assert_explain_needs_root(&timer_as_nobody_error("--explain"));
});

#[test]
fn explain_with_split_realtime_clock_or_deadline_is_a_usage_error() {
    assert_usage_errors(&[
        &["timer", "--explain", "--split"],
        &["timer", "--explain", "--clock", "realtime"],
        &["timer", "--explain-worst", "3"],
        &["timer", "--explain-stacks"],
        &["switch", "--explain-stacks"],
        &["net", "ping", "127.0.0.1:7357", "--explain-stacks"],
        &["timer", "--explain", "--explain-worst", "0"],
    ]);
}

/// `--explain-stacks` where the explained intervals hold no wake-up of the
/// measuring thread to record a stack at: one line naming why, exit 2.
#[test]
fn explain_stacks_without_a_wake_up_to_record_is_a_usage_error() {
    for (args, why) in [
        (&["noise"][..], "does not fit noise: "),
        (&["cruncher"], "does not fit cruncher: "),
        (&["watch"], "does not fit watch: "),
        (
            &["switch", "--placement", "cross", "--cpus", "0,1"],
            "does not fit --placement cross: ",
        ),
    ] {
        if args.contains(&"0,1") && std::thread::available_parallelism().map_or(1, |n| n.get()) < 2
        {
            continue;
        }
        let out = rtlat()
            .args(args)
            .args(["--explain", "--explain-stacks"])
            .output()
            .expect("runs");
        let line = error_line(&out, 2, &format!("{args:?}"));
        assert!(line.starts_with("rtlat: "), "{args:?}: {line}");
        assert!(line.contains(why), "{args:?}: {line}");
        assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
    }
    // Their help does not offer it; that of a benchmark that takes it does.
    for (sub, shown) in [
        ("noise", false),
        ("cruncher", false),
        ("watch", false),
        ("switch", true),
    ] {
        let out = rtlat().args([sub, "--help"]).output().expect("runs");
        let help = String::from_utf8_lossy(&out.stdout);
        assert_eq!(help.contains("--explain-stacks"), shown, "{sub}: {help}");
    }
}

case!(
    a_udp_flood_received_on_the_measuring_cpu_names_net_rx,
    [
        Root,
        Native(HOST_TRACE),
        Cpus(
            2,
            "the flood is sent from another CPU than the measuring one"
        ),
        Measuring
    ],
    |t| {
        let cpu = measuring_cpu();
        // The same run without the flood first, for compare.
        explain_run(&t, cpu, "2s", "200us");
        std::fs::rename(t.path("e.json"), t.path("idle.json")).expect("keep");
        let _flood = net_rx_flood(cpu, "flood");
        std::thread::sleep(std::time::Duration::from_millis(500));
        let witness = SoftirqWitness::start(cpu);
        let (r, cases) = explain_run(&t, cpu, "4s", "200us");
        assert_eq!(cases.len(), 10, "the 10 worst samples: {cases:?}");
        assert_parts_add_up(&cases);
        let net_rx = |p: &Value| p["kind"] == "softirq" && p["name"] == "NET_RX";
        let v = judge(&r, &cases, &witness.spans(&t.path("witness.trace")), net_rx);
        assert_verdict(&v, 3, cases.len(), "the flood's NET_RX");
        // compare says what grew: NET_RX's share of the explained time.
        let out = t
            .rtlat()
            .arg("compare")
            .args([t.path("idle.json"), t.path("e.json")])
            .output()
            .expect("compare");
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.contains(&format!("cpu{cpu} softirq NET_RX:")))
            .unwrap_or_else(|| panic!("NET_RX not among the causes that moved:\n{text}"));
        let share = |s: &str| -> f64 {
            let pct = s.rsplit('(').next().unwrap_or_default();
            pct.split(' ')
                .next()
                .unwrap_or_default()
                .parse()
                .unwrap_or(-1.0)
        };
        let (before, after) = line.split_once(" -> ").expect("before -> after");
        assert!(share(after) > share(before), "{line}");
    }
);

case!(
    a_fifo_burst_during_a_cruncher_run_is_a_part_of_it,
    TRACED_HOG,
    |t| {
        let cpu = measuring_cpu();
        let hog = Hog::start("rtlat-hog", cpu, 10, t.dir());
        let json = t.path("c.json");
        let (_, r) = run_json(
            t.rtlat().args([
                "cruncher",
                "--explain",
                "--explain-worst",
                "5",
                "--cpu",
                &cpu.to_string(),
                "--priority",
                "80",
                "--work",
                "10ms",
                "--period",
                "27ms",
                "--duration",
                "4s",
            ]),
            &json,
            0,
        );
        let cases = r["explained"].as_array().cloned().unwrap_or_default();
        assert!(
            each_has_part(&cases, |p| p["name"] == "own computation"),
            "{cases:?}"
        );
        // A 10 ms computation every 27 ms meets most of the hog's 10 ms bursts
        // (27 ms does not divide the hog's 100 ms, so the bursts fall at every
        // phase of the cycle): the runs a burst stretched are the worst, and
        // the hog's part of each is the time it ran there. A burst covers at
        // most half of a computation it stretches by all of it, so none is
        // asked to be the culprit.
        let v = assert_hog_named(&r, &cases, &hog, (5, "the 5 worst runs"), 0);
        assert!(v.touched >= 3, "the hog ran in {} of 5 cases", v.touched);
    }
);

case!(
    the_reader_stays_off_the_measuring_cpu,
    [
        Root,
        Native(HOST_TRACE),
        Cpus(2, "the reader runs on another CPU than the measuring one"),
        Measuring
    ],
    |t| {
        let cpu = measuring_cpu();
        let child = t
            .process()
            .args(["timer", "--cpus", &cpu.to_string(), "--duration", "4s"])
            .args(["--explain", "--quiet"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("rtlat runs");
        let pid = child.id();
        let _run = Reaped(child);
        // The reader's own affinity, once it has started: it confines
        // itself when the run begins (before that the thread exists with
        // the process's affinity, while memory is locked), and keeps it.
        let online: Vec<usize> = (0..=cpu).collect();
        let reader_cpus = || -> Option<(String, Vec<usize>)> {
            let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
            tasks.flatten().find_map(|t| {
                let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
                let status = std::fs::read_to_string(t.path().join("status")).ok()?;
                let list = status
                    .lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
                    .trim()
                    .to_string();
                let cpus = rtlat::units::parse_cpu_list(&list, &online).ok()?;
                (comm.trim() == "rtlat-explain").then_some((list, cpus))
            })
        };
        let mut seen = None;
        for _ in 0..60 {
            std::thread::sleep(std::time::Duration::from_millis(50));
            seen = reader_cpus();
            if seen
                .as_ref()
                .is_some_and(|(_, c)| !c.is_empty() && !c.contains(&cpu))
            {
                break;
            }
        }
        let (allowed, cpus) = seen.expect("an rtlat-explain thread within 3 s");
        assert!(
            !cpus.is_empty() && !cpus.contains(&cpu),
            "the reader may run on {allowed}, the measuring CPU is {cpu}"
        );
        // And it stays there.
        std::thread::sleep(std::time::Duration::from_millis(500));
        if let Some((later, c)) = reader_cpus() {
            assert!(!c.contains(&cpu), "the reader moved to {later}");
        }
    }
);

/// A SCHED_OTHER task named `comm` on `cpu` that maps 128 MB populated
/// and unmaps it, again and again: nearly all of its time is in the
/// kernel's memory management, in sections the measuring thread's wake-up
/// cannot preempt until the next rescheduling point.
fn unmapper(comm: &str, cpu: usize) -> Reaped {
    let script = format!(
        "import mmap, os\n\
         open('/proc/self/comm', 'w').write('{comm}')\n\
         os.sched_setaffinity(0, {{{cpu}}})\n\
         flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE\n\
         print('ready', flush=True)\n\
         while True:\n\
         \x20   mmap.mmap(-1, 128 << 20, flags=flags).close()\n"
    );
    crate::evidence::ready_python(&script)
}

/// A frame of the kernel's memory management.
fn is_mm_frame(f: &str) -> bool {
    [
        "zap_",
        "unmap_",
        "madvise",
        "tlb",
        "free_page",
        "release_pages",
        "page",
        "folio",
        "pte",
        "pmd",
        "mmap",
        "munmap",
        "populate",
        "handle_mm_fault",
        "do_anonymous",
        "clear_page",
        "vma",
        "lru",
    ]
    .iter()
    .any(|m| f.contains(m))
}

/// The kernel stack a part carries (`--explain-stacks`), innermost first.
pub(crate) fn stack_of(p: &Value) -> Vec<String> {
    p["stack"]
        .as_array()
        .map(|s| {
            s.iter()
                .filter_map(|f| f.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The parts of `cases` that carry a stack, each asserted to be a task's:
/// that part names the task the stack was recorded in, never the measuring
/// thread's own time.
pub(crate) fn assert_stacks_on_tasks(cases: &[Value]) -> Vec<Value> {
    let with: Vec<Value> = cases
        .iter()
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
        .filter(|p| !stack_of(p).is_empty())
        .collect();
    for p in &with {
        assert!(
            ["thread", "preempt-off", "irqs-off"].contains(&p["kind"].as_str().unwrap_or("")),
            "a stack on {p}"
        );
    }
    with
}

case!(
    explain_stacks_show_where_a_task_held_the_cpu_in_the_kernel,
    TRACED_HOG,
    |t| {
        let cpu = measuring_cpu();
        let _mm = unmapper("rtlat-unmap", cpu);
        let json = t.path("s.json");
        let (out, r) = run_json(
            t.rtlat().args([
                "timer",
                "--explain",
                "--explain-stacks",
                "--explain-worst",
                "20",
                "--cpus",
                &cpu.to_string(),
                "--priority",
                "80",
                "--period",
                "1ms",
                "--duration",
                "5s",
            ]),
            &json,
            0,
        );
        assert_schema_valid(&json);
        let cases = r["explained"].as_array().cloned().unwrap_or_default();
        assert_parts_add_up(&cases);
        let stack = stack_of;
        assert_stacks_on_tasks(&cases);
        // Where the unmapper held the CPU, its stack is in the memory
        // management (the kernel names its frames: the test runs as root).
        let held: Vec<&Value> = cases
            .iter()
            .filter(|c| culprit(c).1.starts_with("rtlat-unmap "))
            .collect();
        let mm: Vec<Vec<String>> = held
            .iter()
            .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
            .filter(|p| {
                p["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("rtlat-unmap "))
            })
            .map(|p| stack(&p))
            .filter(|s| s.iter().any(|f| is_mm_frame(f)))
            .collect();
        assert!(
            !mm.is_empty(),
            "no case led by the unmapper with a memory-management stack among {} it led: {cases:#?}",
            held.len()
        );
        assert!(mm[0].iter().all(|f| !f.starts_with("0x")), "{:?}", mm[0]);
        // The text line shows the innermost frames of the task.
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.lines()
                .any(|l| l.starts_with("worst ") && l.contains("rtlat-unmap ") && l.contains(" [")),
            "{text}"
        );
    }
);
