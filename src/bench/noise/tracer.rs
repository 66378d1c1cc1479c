//! `rtlat noise --osnoise` and `--hwlat`: the kernel's own noise tracers
//! measure the CPUs instead of rtlat's busy loop (a loop of rtlat's and the
//! tracer's kernel thread on one CPU would each count the other as noise).
//!
//! The osnoise tracer runs in rtlat's tracefs instance: its `osnoise/N`
//! threads spin on the measuring CPUs, each noise above `--threshold`
//! (`tracing_thresh`) is an `osnoise:sample_threshold` event (series
//! `cpuN/osnoise`), and every period ends with a line of counters (runtime,
//! noise, longest single noise, occurrences per source) added up per CPU in
//! the details. The hwlat tracer can only run in the top-level directory:
//! its thread spins with interrupts off through the measuring CPUs in turn,
//! and each gap above the threshold is a sample (series `hwlat`). Every
//! setting is restored at the end by the [`Session`].

use super::KernelTracer;
use super::NoiseConfig;
use crate::bench::explaining::Explaining;
use crate::bench::timer::lines::{header, seconds_ns};
use crate::engine::{Channel, RunSpec, StopFlag};
use crate::error::{Error, Outcome, Result};
use crate::result::details::noise::{HwlatTotals, NoiseDetails, OsnoiseCpu};
use crate::result::details::Details;
use crate::result::Benchmark;
use crate::result::{BreakEvent, RunResult};
use crate::stats::recorder::{self, Recorder};
use crate::sys::tracefs::Capabilities;
use crate::trace::instance::{self, tracefs_error};
use crate::trace::tracefs::{self, Pipe, Session};
use crate::trace::{Finish, Round, Tracer};
use std::path::{Path, PathBuf};

/// Why this kernel cannot run `t`, as the one-line error naming the fix.
pub fn refuse(root: Option<&Path>, t: KernelTracer) -> Option<Error> {
    let fix = format!(
        "boot a kernel with {}, e.g. a Debian kernel (linux-image-amd64 or linux-image-rt-amd64)",
        t.config()
    );
    let Some(root) = root else {
        return Some(Error::env(format!(
            "{} needs tracefs (/sys/kernel/tracing), which is not mounted or not readable: run as root, or {fix}",
            t.option()
        )));
    };
    let tracers = tracefs::read(root, "available_tracers").unwrap_or_default();
    if tracers.split_whitespace().any(|w| w == t.name()) {
        return None;
    }
    Some(Error::env(format!(
        "{} needs the kernel's {} tracer ({}), which is not in {}/available_tracers: {fix}",
        t.option(),
        t.name(),
        t.config(),
        root.display()
    )))
}

/// The counters of one osnoise period, as its line prints them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Period {
    pub runtime_us: u64,
    pub noise_us: u64,
    pub max_single_us: u64,
    /// hw, nmi, irq, softirq, thread.
    pub counts: [u64; 5],
}

/// A line of the tracers' `trace_pipe` that rtlat reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Line {
    /// The osnoise tracer's line at the end of a period.
    Period { cpu: usize, ts_ns: u64, p: Period },
    /// `sample_threshold: start S duration N ns interference I`
    Sample { cpu: usize, ts_ns: u64, ns: u64 },
    /// `#SEQ inner/outer(us): I/O ts:T count:C [nmi-total:N nmi-count:M]`
    Hwlat {
        cpu: usize,
        ts_ns: u64,
        inner_us: u64,
        outer_us: u64,
        nmi_count: u64,
    },
}

/// Parse one line; `None` for anything else (comments, other events).
pub fn parse(line: &str) -> Option<Line> {
    let (cpu, _, ts_ns, body) = header(line.trim_end())?;
    if let Some(r) = body.strip_prefix("sample_threshold: ") {
        let mut w = r.split_whitespace();
        let ns = w
            .by_ref()
            .skip_while(|&x| x != "duration")
            .nth(1)?
            .parse()
            .ok()?;
        return Some(Line::Sample { cpu, ts_ns, ns });
    }
    if body.starts_with('#') && body.contains("inner/outer(us):") {
        let (_, r) = body.split_once("inner/outer(us):")?;
        let (inner, outer) = r.split_whitespace().next()?.split_once('/')?;
        let nmi_count = r
            .split_whitespace()
            .find_map(|w| w.strip_prefix("nmi-count:"))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        return Some(Line::Hwlat {
            cpu,
            ts_ns,
            inner_us: inner.parse().ok()?,
            outer_us: outer.parse().ok()?,
            nmi_count,
        });
    }
    let w: Vec<&str> = body.split_whitespace().collect();
    if w.len() != 9 || seconds_ns(w[2]).is_none() {
        return None;
    }
    let n = |i: usize| w[i].parse::<u64>().ok();
    Some(Line::Period {
        cpu,
        ts_ns,
        p: Period {
            runtime_us: n(0)?,
            noise_us: n(1)?,
            max_single_us: n(3)?,
            counts: [n(4)?, n(5)?, n(6)?, n(7)?, n(8)?],
        },
    })
}

/// Per-CPU totals of the periods, in the order of `cpus`.
#[derive(Debug, Clone, Default)]
pub struct TracerTotals {
    pub osnoise: Vec<OsnoiseCpu>,
    pub hwlat: HwlatTotals,
}

impl TracerTotals {
    fn new(cpus: &[usize]) -> Self {
        TracerTotals {
            osnoise: cpus
                .iter()
                .map(|&cpu| OsnoiseCpu {
                    cpu,
                    ..OsnoiseCpu::default()
                })
                .collect(),
            hwlat: HwlatTotals {
                cpus: cpus.to_vec(),
                ..HwlatTotals::default()
            },
        }
    }

    fn add(&mut self, cpu: usize, p: &Period) {
        let Some(c) = self.osnoise.iter_mut().find(|c| c.cpu == cpu) else {
            return;
        };
        c.periods += 1;
        c.runtime_us += p.runtime_us;
        c.noise_us += p.noise_us;
        c.max_single_noise_us = c.max_single_noise_us.max(p.max_single_us);
        c.max_period_noise_us = c.max_period_noise_us.max(p.noise_us);
        for (t, n) in [
            &mut c.hw,
            &mut c.nmi,
            &mut c.irq,
            &mut c.softirq,
            &mut c.thread,
        ]
        .into_iter()
        .zip(p.counts)
        {
            *t += n;
        }
        c.available_pct = if c.runtime_us == 0 {
            0.0
        } else {
            let a = 100.0 * (1.0 - c.noise_us as f64 / c.runtime_us as f64);
            (a * 100_000.0).round() / 100_000.0
        };
    }
}

/// Where the lines go: samples into the recorders, periods into the totals.
struct Sink {
    recs: Vec<Recorder>,
    cpus: Vec<usize>,
    start: u64,
    end: u64,
    /// A period line counts when it ends within half a period of the window.
    half_period: u64,
    totals: TracerTotals,
}

impl Sink {
    fn feed(&mut self, line: Line) {
        match line {
            Line::Sample { cpu, ts_ns, ns } => {
                let i = self.cpus.iter().position(|&c| c == cpu);
                if let (Some(i), true) = (i, (self.start..self.end).contains(&ts_ns)) {
                    self.recs[i].record(ns, ts_ns - self.start, 0);
                }
            }
            Line::Period { cpu, ts_ns, p } => {
                let from = self.start + self.half_period;
                if (from..=self.end.saturating_add(self.half_period)).contains(&ts_ns) {
                    self.totals.add(cpu, &p);
                }
            }
            Line::Hwlat {
                ts_ns,
                inner_us,
                outer_us,
                nmi_count,
                ..
            } => {
                if !(self.start..self.end).contains(&ts_ns) {
                    return;
                }
                let h = &mut self.totals.hwlat;
                h.samples += 1;
                h.max_inner_us = h.max_inner_us.max(inner_us);
                h.max_outer_us = h.max_outer_us.max(outer_us);
                h.nmi_count += nmi_count;
                let us = inner_us.max(outer_us);
                self.recs[0].record(us * 1000, ts_ns - self.start, 0);
            }
        }
    }
}

/// The osnoise period (us) rtlat sets: rtla's default.
const PERIOD_US: u64 = 1_000_000;

/// The tracer set up and started (tracing off until the run starts).
struct Tracing {
    /// Where the tracer writes and the tracing switch is.
    dir: PathBuf,
    pipe: Pipe,
    session: Session,
    notes: Vec<String>,
    hwlat: HwlatTotals,
}

fn set(session: &mut Session, file: &str, value: &str) -> Result<()> {
    session
        .set(file, value)
        .map_err(|e| tracefs_error(&format!("set {file}"), e))
}

fn start(cfg: &NoiseConfig, t: KernelTracer) -> Result<Tracing> {
    let caps = Capabilities::probe_or_mount();
    if let Some(e) = refuse(caps.root.as_deref(), t) {
        return Err(e);
    }
    let root = caps.root.unwrap_or_default();
    let (mut session, mut notes) =
        Session::begin(&root, tracefs::Uses::Global).map_err(Error::env)?;
    let cpus = crate::units::format_cpu_list(&cfg.cpus);
    let thresh_us = (cfg.threshold_ns / 1000).max(1).to_string();
    set(&mut session, "tracing_thresh", &thresh_us)?;
    let mut hwlat = HwlatTotals::default();
    let dir = match t {
        KernelTracer::Osnoise => {
            set(&mut session, "osnoise/cpus", &cpus)?;
            set(&mut session, "osnoise/period_us", &PERIOD_US.to_string())?;
            set(&mut session, "osnoise/runtime_us", &PERIOD_US.to_string())?;
            for f in ["osnoise/stop_tracing_us", "osnoise/stop_tracing_total_us"] {
                set(&mut session, f, "0")?;
            }
            let (inst, name) = instance::open(
                &mut session,
                &root,
                &[
                    ("tracing_on", "0"),
                    ("events/osnoise/sample_threshold/enable", "1"),
                    ("current_tracer", "osnoise"),
                ],
                &mut notes,
            )?;
            notes.push(format!(
                "measured by the kernel's osnoise tracer instead of rtlat's loop: its osnoise/N threads spun on CPUs {cpus} (period and runtime {} ms), read from the trace_pipe of tracefs instance {name}; cpuN/osnoise holds each noise above tracing_thresh {thresh_us} us",
                PERIOD_US / 1000
            ));
            inst
        }
        KernelTracer::Hwlat => {
            set(&mut session, "tracing_on", "0")?;
            set(&mut session, "trace_clock", "mono")?;
            set(
                &mut session,
                "tracing_cpumask",
                &tracefs::cpumask(&cfg.cpus),
            )?;
            if root.join("hwlat_detector/mode").exists() {
                set(&mut session, "hwlat_detector/mode", "round-robin")?;
            }
            set(&mut session, "current_tracer", "hwlat")?;
            let read = |f: &str| {
                tracefs::read(&root, f)
                    .ok()
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .unwrap_or(0)
            };
            hwlat.width_us = read("hwlat_detector/width");
            hwlat.window_us = read("hwlat_detector/window");
            hwlat.threshold_us = read("tracing_thresh");
            notes.push(format!(
                "measured by the kernel's hwlat tracer (top-level tracefs, the only place it runs) instead of rtlat's loop: its thread spun with interrupts off {} of every {} us, moving through CPUs {cpus}; hwlat holds each gap above {} us (the longer of inner and outer)",
                hwlat.width_us, hwlat.window_us, hwlat.threshold_us
            ));
            root.clone()
        }
    };
    let pipe = Pipe::open(&dir).map_err(|e| tracefs_error("open trace_pipe", e))?;
    Ok(Tracing {
        dir,
        pipe,
        session,
        notes,
        hwlat,
    })
}

/// The thread that switches the tracer on at the start, reads its lines
/// until the end (and one period after, for the last period's line), and
/// switches it off.
struct Reader {
    t: KernelTracer,
    pipe: Pipe,
    dir: PathBuf,
    sink: Sink,
    duration: Option<u64>,
    /// How long after the end the last period's line may come.
    tail: u64,
    stopped_at: Option<u64>,
    problem: Option<String>,
    /// The details before the run, and the hwlat settings.
    before: NoiseDetails,
    hwlat: HwlatTotals,
}

impl Tracer for Reader {
    fn name(&self) -> String {
        format!("rtlat-{}", self.t.name())
    }

    fn begin(&mut self, start: u64) {
        self.problem = tracefs::write(&self.dir, "tracing_on", "1")
            .err()
            .map(|e| format!("cannot switch tracing on: {e}"));
        self.sink.start = start;
        self.sink.end = self.duration.map_or(u64::MAX, |d| start + d);
    }

    fn round(&mut self, now: u64, stop: &StopFlag) -> Round {
        if self.stopped_at.is_none() && (stop.is_set() || now >= self.sink.end) {
            self.sink.end = self.sink.end.min(now);
            self.stopped_at = Some(now);
        }
        if self.stopped_at.is_some_and(|s| now >= s + self.tail) {
            return Round::Done;
        }
        let sink = &mut self.sink;
        match self.pipe.drain(|l| {
            if let Some(line) = parse(l) {
                sink.feed(line);
            }
        }) {
            Ok(true) => Round::More,
            Ok(false) => Round::Pause(std::time::Duration::from_millis(50)),
            Err(e) => {
                self.problem = Some(format!("reading trace_pipe failed: {e}"));
                Round::Done
            }
        }
    }

    fn end(mut self: Box<Self>) -> (Option<BreakEvent>, Finish) {
        let _ = tracefs::write(&self.dir, "tracing_on", "0");
        for r in &mut self.sink.recs {
            r.finish();
        }
        let Reader {
            t,
            sink,
            problem,
            before,
            hwlat,
            ..
        } = *self;
        let totals = sink.totals;
        let finish = Box::new(move |r: &mut RunResult, problems: &[String]| {
            let mut d = before;
            match t {
                KernelTracer::Osnoise => d.osnoise = totals.osnoise,
                KernelTracer::Hwlat => {
                    d.hwlat = Some(HwlatTotals {
                        width_us: hwlat.width_us,
                        window_us: hwlat.window_us,
                        threshold_us: hwlat.threshold_us,
                        ..totals.hwlat
                    })
                }
            }
            r.notes.extend(problem);
            r.notes
                .extend(problems.iter().map(|p| format!("tracefs: {p}")));
            r.details.extend(d.to_map());
        });
        (None, finish)
    }
}

/// Run the kernel tracer `t` on the measuring CPUs end to end.
pub fn run(cfg: &NoiseConfig, t: KernelTracer, argv: Vec<String>) -> Result<Outcome> {
    let mut spec = RunSpec::new(Benchmark::Noise, cfg, &cfg.setup, &cfg.control, argv)?;
    let tracing = start(cfg, t)?;
    spec.notes.extend(tracing.notes);
    spec.notes.push(format!(
        "the policy of the settings line is that of rtlat's reader thread; the kernel's {} threads run at the kernel's own",
        t.name()
    ));
    let before = NoiseDetails {
        counter: "kernel".into(),
        threshold_ns: cfg.threshold_ns,
        tracer: Some(t.name().into()),
        ..NoiseDetails::default()
    };
    spec.details.extend(before.to_map());
    let names: Vec<(String, Option<usize>)> = match t {
        KernelTracer::Osnoise => cfg
            .cpus
            .iter()
            .map(|&c| (format!("cpu{c}/osnoise"), Some(c)))
            .collect(),
        KernelTracer::Hwlat => vec![("hwlat".into(), None)],
    };
    let (mut recs, mut channels) = (Vec::new(), Vec::new());
    for (name, cpu) in names {
        let (rec, col) = recorder::pair(cfg.control.interval_ns);
        recs.push(rec);
        channels.push(Channel::new(name, cpu, col, cfg.control.interval_ns));
    }
    let mut traced = crate::trace::Tracing::default();
    traced.keep(tracing.session);
    traced.add(Box::new(Reader {
        t,
        pipe: tracing.pipe,
        dir: tracing.dir,
        sink: Sink {
            recs,
            cpus: cfg.cpus.clone(),
            start: 0,
            end: u64::MAX,
            half_period: PERIOD_US * 500,
            totals: TracerTotals::new(&cfg.cpus),
        },
        duration: cfg.control.duration_ns,
        tail: match t {
            KernelTracer::Osnoise => PERIOD_US * 1000 + 300_000_000,
            KernelTracer::Hwlat => 0,
        },
        stopped_at: None,
        problem: None,
        before,
        hwlat: tracing.hwlat,
    }));
    super::execute(cfg, spec, channels, Vec::new(), Explaining::tracing(traced))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osnoise_period_lines_and_samples_are_read() {
        let p = parse("           <...>-859     [001] ....    81.637220: 1000000        190  99.98100       9     18      0   1007     18      1");
        assert_eq!(
            p,
            Some(Line::Period {
                cpu: 1,
                ts_ns: 81_637_220_000,
                p: Period {
                    runtime_us: 1_000_000,
                    noise_us: 190,
                    max_single_us: 9,
                    counts: [18, 0, 1007, 18, 1],
                },
            })
        );
        let s = parse("       osnoise/8-961     [008] d.h.  5789.857532: sample_threshold: start 5789.857529929 duration 1446 ns interference 1");
        assert_eq!(
            s,
            Some(Line::Sample {
                cpu: 8,
                ts_ns: 5_789_857_532_000,
                ns: 1446
            })
        );
        // The header's column titles are no period.
        assert_eq!(parse("#           TASK-PID      CPU#  ||||   TIMESTAMP  IN US       IN US  AVAILABLE  IN US     HW    NMI    IRQ   SIRQ THREAD"), None);
    }

    #[test]
    fn hwlat_samples_are_read_with_and_without_nmis() {
        let h = parse("           <...>-1729    [001] d...   678.473449: #1     inner/outer(us):   11/12    ts:1581527483.343962693 count:6");
        assert_eq!(
            h,
            Some(Line::Hwlat {
                cpu: 1,
                ts_ns: 678_473_449_000,
                inner_us: 11,
                outer_us: 12,
                nmi_count: 0
            })
        );
        let n = parse("  hwlatd-88 [000] d.... 10.000001: #2     inner/outer(us):  250/7    ts:10.000000100 count:1 nmi-total:3 nmi-count:2");
        assert!(matches!(
            n,
            Some(Line::Hwlat {
                inner_us: 250,
                outer_us: 7,
                nmi_count: 2,
                ..
            })
        ));
    }

    #[test]
    fn periods_add_up_per_cpu_within_the_window() {
        let s = 10_000_000_000;
        let mut sink = Sink {
            recs: vec![recorder::pair(1_000_000_000).0],
            cpus: vec![1],
            start: s,
            end: s + 2_000_000_000,
            half_period: 500_000_000,
            totals: TracerTotals::new(&[1]),
        };
        let period = |noise_us, max_single_us| Period {
            runtime_us: 1_000_000,
            noise_us,
            max_single_us,
            counts: [1, 0, 10, 2, 1],
        };
        for (ts, p) in [
            (s + 100_000_000, period(999, 999)), // ended before the run
            (s + 1_000_000_000, period(100, 40)),
            (s + 2_000_000_000, period(300, 20)),
            (s + 2_600_000_000, period(999, 999)), // after the end
        ] {
            sink.feed(Line::Period {
                cpu: 1,
                ts_ns: ts,
                p,
            });
        }
        // Another CPU's period is not this run's.
        sink.feed(Line::Period {
            cpu: 0,
            ts_ns: s + 1_000_000_000,
            p: period(5, 5),
        });
        let c = &sink.totals.osnoise[0];
        assert_eq!((c.periods, c.runtime_us, c.noise_us), (2, 2_000_000, 400));
        assert_eq!((c.max_single_noise_us, c.max_period_noise_us), (40, 300));
        assert_eq!((c.hw, c.irq, c.softirq, c.thread), (2, 20, 4, 2));
        assert!(
            (c.available_pct - 99.98).abs() < 1e-9,
            "{}",
            c.available_pct
        );
    }

    #[test]
    fn a_kernel_without_the_tracer_is_refused_naming_its_config() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("available_tracers"), "blk function nop\n").expect("write");
        for (t, config) in [
            (KernelTracer::Osnoise, "CONFIG_OSNOISE_TRACER"),
            (KernelTracer::Hwlat, "CONFIG_HWLAT_TRACER"),
        ] {
            let e = refuse(Some(dir.path()), t).expect("refused");
            assert_eq!(e.exit_code(), 3);
            assert!(e.to_string().contains(config), "{e}");
            assert!(refuse(None, t).is_some_and(|e| e.exit_code() == 3));
        }
        std::fs::write(
            dir.path().join("available_tracers"),
            "hwlat osnoise timerlat nop\n",
        )
        .expect("write");
        assert!(refuse(Some(dir.path()), KernelTracer::Osnoise).is_none());
        assert!(refuse(Some(dir.path()), KernelTracer::Hwlat).is_none());
    }
}
