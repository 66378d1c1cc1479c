//! Evidence of what held a CPU, taken apart from `--explain`: a FIFO hog
//! that logs each of its bursts, and a tracefs instance of the test's own
//! that records one CPU's NET_RX softirqs. Each explained case is checked
//! against it: a case that a known cause covered for more than half its
//! latency must name that cause as its culprit, with a part as long as the
//! evidence says; a case the cause did not cover is left out because the
//! evidence says so, whatever it names.

use crate::explain::{culprit, Reaped};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A stretch of time on CLOCK_MONOTONIC (ns) during which a cause ran for
/// `ran` ns of it (the rest the host took from the guest, or nothing).
#[derive(Debug, Clone, Copy)]
pub struct Span {
    pub from: u64,
    pub to: u64,
    pub ran: u64,
}

/// How long the cause of `spans` ran within `(from, to)`: each span's
/// overlap, scaled by the share of its time the cause really ran.
pub fn covered(spans: &[Span], from: u64, to: u64) -> u64 {
    spans
        .iter()
        .map(|s| {
            let (a, b) = (s.from.max(from), s.to.min(to));
            let wall = s.to.saturating_sub(s.from);
            if b <= a || wall == 0 {
                0
            } else {
                ((b - a) as u128 * s.ran.min(wall) as u128 / wall as u128) as u64
            }
        })
        .sum()
}

/// A SCHED_FIFO 90 process named `comm` on `cpu` that busy-loops
/// `burst_ms` every 100 ms and logs each burst: its start and end on
/// CLOCK_MONOTONIC and the CPU time it took (the scheduler's count, which
/// leaves out what the host stole).
pub struct Hog {
    pub proc: Reaped,
    log: PathBuf,
}

impl Hog {
    pub fn start(comm: &str, cpu: usize, burst_ms: u32, dir: &Path) -> Hog {
        let log = dir.join(format!("{comm}.bursts"));
        let script = format!(
            "import os, time\n\
             open('/proc/self/comm', 'w').write('{comm}')\n\
             os.sched_setaffinity(0, {{{cpu}}})\n\
             os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(90))\n\
             log = open('{log}', 'w', buffering=1)\n\
             mono = time.CLOCK_MONOTONIC\n\
             burst = {burst_ms} * 1000000\n\
             print('ready', flush=True)\n\
             while True:\n\
             \x20   a, c = time.clock_gettime_ns(mono), time.thread_time_ns()\n\
             \x20   while time.clock_gettime_ns(mono) < a + burst:\n\
             \x20       pass\n\
             \x20   b, d = time.clock_gettime_ns(mono), time.thread_time_ns()\n\
             \x20   log.write(f'{{a}} {{b}} {{d - c}}\\n')\n\
             \x20   time.sleep(0.1 - {burst_ms} / 1000)\n",
            log = log.display()
        );
        Hog {
            proc: ready_python(&script),
            log,
        }
    }

    /// The bursts logged so far.
    pub fn bursts(&self) -> Vec<Span> {
        let text = std::fs::read_to_string(&self.log).expect("the hog's log");
        text.lines()
            .filter_map(|l| {
                let v: Vec<u64> = l.split(' ').filter_map(|w| w.parse().ok()).collect();
                (v.len() == 3).then(|| Span {
                    from: v[0],
                    to: v[1],
                    ran: v[2],
                })
            })
            .collect()
    }
}

/// The test's own record of one CPU's NET_RX softirqs, in a tracefs
/// instance of its own (removed when dropped), on CLOCK_MONOTONIC.
pub struct SoftirqWitness {
    dir: PathBuf,
}

impl SoftirqWitness {
    pub fn start(cpu: usize) -> SoftirqWitness {
        let dir = PathBuf::from(format!(
            "/sys/kernel/tracing/instances/rtlat-test-{}",
            std::process::id()
        ));
        std::fs::create_dir(&dir).expect("a tracefs instance");
        let w = SoftirqWitness { dir };
        for (file, value) in [
            ("trace_clock", "mono".to_string()),
            ("buffer_size_kb", "16384".into()),
            ("tracing_cpumask", format!("{:x}", 1u64 << cpu)),
            ("events/irq/softirq_entry/filter", "vec == 3".into()),
            ("events/irq/softirq_exit/filter", "vec == 3".into()),
            ("events/irq/softirq_entry/enable", "1".into()),
            ("events/irq/softirq_exit/enable", "1".into()),
        ] {
            std::fs::write(w.dir.join(file), value).expect(file);
        }
        w
    }

    /// Stops recording; NET_RX's runs (CLOCK_MONOTONIC ns). The trace is
    /// kept as `keep` for a failure's post-mortem.
    pub fn spans(&self, keep: &Path) -> Vec<Span> {
        std::fs::write(self.dir.join("tracing_on"), "0").expect("tracing_on");
        let text = std::fs::read_to_string(self.dir.join("trace")).expect("trace");
        std::fs::write(keep, &text).expect("the witness's trace kept");
        let (mut spans, mut entered) = (Vec::new(), None);
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            // `<idle>-0 [001] ..s1. 24763.907744: softirq_entry: vec=3 [action=NET_RX]`
            let Some(ts) = line
                .split_whitespace()
                .find(|w| w.ends_with(':') && w.contains('.'))
                .and_then(|w| w.trim_end_matches(':').parse::<f64>().ok())
            else {
                continue;
            };
            let ns = (ts * 1e9).round() as u64;
            if line.contains("softirq_entry:") {
                entered = Some(ns);
            } else if let Some(a) = entered.take() {
                spans.push(Span {
                    from: a,
                    to: ns,
                    ran: ns - a,
                });
            }
        }
        spans
    }
}

impl Drop for SoftirqWitness {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("events/irq/softirq_entry/enable"), "0");
        let _ = std::fs::write(self.dir.join("events/irq/softirq_exit/enable"), "0");
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// What the evidence says of a result's cases.
#[derive(Debug, Default)]
pub struct Verdict {
    /// Cases the cause covered for more than half their latency.
    pub covered: usize,
    /// Cases the cause ran in at all, by the evidence or by `--explain`.
    pub touched: usize,
    /// One line per case whose explanation the evidence contradicts.
    pub wrong: Vec<String>,
    /// Events the kernel's buffer lost during the run (`--explain`'s count).
    pub lost: u64,
    /// Cases `--explain` could not rebuild (`trace overwritten`: its reader
    /// fell behind): it says so instead of guessing, and they are not judged.
    pub overwritten: usize,
}

/// How far a part may differ from the evidence: the cause's own edges (a
/// logged burst begins after its wake-up and ends before its switch out; a
/// traced softirq's stamps are µs) and the kernel's stamps.
fn slack(ran: u64) -> u64 {
    ran / 10 + 200_000
}

/// Checks each case of `r` (a result with `--explain`) against `spans`,
/// the evidence of when the cause ran; `is_cause` tells the parts that name
/// it. In every case the cause's parts must add up to the time it ran
/// there (within [`slack`], and short of it by at most what the case gives
/// the hypervisor), and a case it covered for more than half its latency
/// must name it as the culprit (the largest part, but for what the case
/// gives the hypervisor).
pub fn judge(
    r: &Value,
    cases: &[Value],
    spans: &[Span],
    is_cause: impl Fn(&Value) -> bool,
) -> Verdict {
    let start = r["details"]["explain"]["monotonic_start_ns"]
        .as_u64()
        .filter(|&s| s > 0)
        .expect("details.explain.monotonic_start_ns");
    let mut v = Verdict {
        lost: r["details"]["explain"]["lost_events"].as_u64().unwrap_or(0),
        ..Verdict::default()
    };
    for c in cases {
        let at = start + c["at_ns"].as_u64().expect("at_ns");
        let lat = c["latency_ns"].as_u64().expect("latency_ns");
        let ran = covered(spans, at, at + lat);
        let parts = c["parts"].as_array().expect("parts");
        if overwritten(parts) {
            v.overwritten += 1;
            continue;
        }
        let part: u64 = parts
            .iter()
            .filter(|p| is_cause(p))
            .map(|p| p["ns"].as_u64().expect("ns"))
            .sum();
        // Where in an accounting window the host took the CPU is not
        // traced: --explain carves what it stole from the longest silent
        // stretches, which a busy loop's is. So the cause's part may be
        // short of the evidence by what the case gives the hypervisor.
        let stolen: u64 = parts
            .iter()
            .filter(|p| p["kind"] == "hypervisor")
            .map(|p| p["ns"].as_u64().expect("ns"))
            .sum();
        // The culprit: the cause's part is the largest, or would be with
        // what the case gives the hypervisor (carved from the wrong stretch).
        let other = parts
            .iter()
            .filter(|p| !is_cause(p) && p["kind"] != "hypervisor")
            .map(|p| p["ns"].as_u64().unwrap_or(0))
            .max()
            .unwrap_or(0);
        let top = part > 0 && part + stolen >= other;
        let short = ran.saturating_sub(part);
        let over = part.saturating_sub(ran);
        let most = 2 * ran > lat;
        v.covered += usize::from(most);
        v.touched += usize::from(ran > 0 || part > 0);
        if over > slack(ran) || short > slack(ran) + stolen || (most && !top) {
            v.wrong.push(format!(
                "at {} ns, {lat} ns late: the cause ran {ran} ns of it, --explain gives it {part} ns, culprit {:?}; parts {}",
                c["at_ns"],
                culprit(c),
                c["parts"]
            ));
        }
    }
    v
}

/// No case contradicts the evidence, and the cause covered at least
/// `floor` of the cases for more than half their latency (else the run
/// proves nothing).
pub fn assert_verdict(v: &Verdict, floor: usize, of: usize, what: &str) {
    eprintln!(
        "{what}: ran in {} of {of} cases, more than half of {} of them; {} not rebuilt",
        v.touched, v.covered, v.overwritten
    );
    assert!(
        v.overwritten * 10 <= of,
        "--explain's reader fell behind: {} of {of} cases lost their events",
        v.overwritten
    );
    assert!(
        v.wrong.is_empty(),
        "--explain contradicts the evidence of {what} in {} of {of} cases ({} events lost):\n{}",
        v.wrong.len(),
        v.lost,
        v.wrong.join("\n")
    );
    assert!(
        v.covered >= floor,
        "{what} covered only {} of the {of} worst cases (at least {floor} expected): the load did not make the worst cases",
        v.covered
    );
}

/// Whether a case's parts say its events were gone before it was read,
/// or not read in time.
pub fn overwritten(parts: &[Value]) -> bool {
    parts.len() == 1
        && (parts[0]["name"] == "trace overwritten" || parts[0]["name"] == "trace not read in time")
}

/// A python3 `script` started, once it printed `ready` (its set-up done).
pub fn ready_python(script: &str) -> Reaped {
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("a line from the script");
    assert_eq!(line.trim(), "ready", "the script did not start");
    Reaped(child)
}
