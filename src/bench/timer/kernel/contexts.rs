//! `rtlat timer --context irq,thread`: the kernel's `timerlat` tracer measures
//! a periodic timer per CPU in the hard IRQ handler and in a kernel thread
//! (`timerlat/N`, SCHED_FIFO 95); rtlat reads the samples from its own
//! tracefs instance (`instances/rtlat-PID`) — the binary per-CPU
//! `trace_pipe_raw` pages ([`raw`]), or the text `trace_pipe` where their
//! layout cannot be read — pairs them by (CPU, `#id`) and records them as
//! series `cpuN/irq`, `cpuN/thread`.
//!
//! Nothing is lost silently: the kernel arms the timer on a fixed grid and
//! skips the expiries its thread was too late for; every sample is placed on
//! that grid (sample time − latency) and the expiries between two samples of
//! a series count as its overruns, whether skipped by the kernel or lost
//! (`#id` gaps); lost-event notices and the instance's `per_cpu/cpuN/stats`
//! overruns go into the details.

use super::ctxsink::LevelSink;
use super::noise::{self, BreakAnalysis, Recent};
use super::pairing::{ContextDetails, Pairer};
use super::raw;
use super::userlat;
use crate::bench::timer::lines::{self, Ctx};
use crate::bench::timer::TimerConfig;
use crate::engine::{Channel, Finished, RunSpec, StopFlag, Worker};
use crate::error::{Error, Result};
use crate::explain::Explain;
use crate::result::Benchmark;
use crate::result::{BreakEvent, Policy, RunResult};
use crate::stats::recorder::{self, Recorder};
use crate::stats::tap::Tap;
use crate::sys::clock::Clock;
use crate::sys::tracefs::Capabilities;
use crate::trace::instance::{self, tracefs_error};
use crate::trace::tracefs::{self, Pipe, RawPipes, Session};
use crate::trace::{Finish, Pages, Round, Tracer};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The SCHED_FIFO priority the kernel gives its timerlat/N threads.
const KERNEL_THREAD_PRIORITY: i32 = 95;

/// The contexts `--context` accepts.
pub const ALL: [Ctx; 3] = [Ctx::Irq, Ctx::Thread, Ctx::User];

/// Why this kernel cannot measure `wanted`, as the one-line error naming the fix.
pub fn refuse(caps: &Capabilities, wanted: &[Ctx]) -> Option<Error> {
    const FIX: &str =
        "boot a PREEMPT_RT distribution kernel, which has it (e.g. Debian's linux-image-rt-amd64)";
    let Some(root) = &caps.root else {
        return Some(Error::env(format!(
            "--context needs tracefs (/sys/kernel/tracing), which is not mounted or not readable: run as root on a kernel with CONFIG_TIMERLAT_TRACER, or {FIX}"
        )));
    };
    if !caps.timerlat {
        return Some(Error::env(format!(
            "--context needs the kernel's timerlat tracer (CONFIG_TIMERLAT_TRACER), which is not in {}/available_tracers: {FIX}",
            root.display()
        )));
    }
    if wanted.contains(&Ctx::User) && !caps.timerlat_fd {
        return Some(Error::env(
            "--context user needs osnoise/per_cpu/cpuN/timerlat_fd (Linux 6.5 or later); this kernel has only irq and thread: use --context irq,thread or boot Linux 6.5+ with CONFIG_TIMERLAT_TRACER",
        ));
    }
    None
}

/// The series of one CPU, in order: with `user` the user-return level too.
fn levels(user: bool) -> &'static [Ctx] {
    if user {
        &ALL
    } else {
        &ALL[..2]
    }
}

/// Where the samples come from (the noise events too, with a break threshold).
enum Reader {
    Text(Pipe),
    Raw(RawPipes, raw::TimerlatLayout, Box<Option<Recent>>),
}

/// Every page waiting in every CPU's buffer; `Ok(false)`: all drained. At
/// the break, the analysis of what ran before it.
fn read_raw(
    pipes: &mut RawPipes,
    fmt: &raw::TimerlatLayout,
    mut noise: Option<&mut Recent>,
    pairer: &mut Pairer,
    sink: &mut LevelSink,
    analysis: &mut Option<BreakAnalysis>,
) -> std::io::Result<bool> {
    for i in 0..pipes.len() {
        // At most a few pages per CPU per round, so no CPU waits long.
        for _ in 0..16 {
            match pipes.read(i)? {
                None => break,
                Some((cpu, page)) => {
                    raw::walk_page(&fmt.page, page, |item| {
                        if let Some(n) = noise.as_deref_mut() {
                            if n.take(cpu, &item) {
                                return;
                            }
                        }
                        let Some(l) = raw::decode_item(fmt, cpu, &item) else {
                            return;
                        };
                        pairer.feed(&l, sink);
                        if let (Some(n), None, Some((i, ctx, lat, expiry))) =
                            (noise.as_deref(), analysis.as_ref(), sink.brk_sample)
                        {
                            let irq = sink.last_irq[i]
                                .filter(|&(e, _)| e == expiry)
                                .map(|(_, l)| l);
                            *analysis = Some(n.analyse(sink.cpus[i], ctx, lat, expiry, irq));
                        }
                    });
                }
            }
        }
    }
    Ok(false)
}

/// Run `timer --context`.
pub fn run(cfg: &TimerConfig, command_line: Vec<String>) -> Result<Finished> {
    let user = cfg.contexts.contains(&Ctx::User);
    let Tracing {
        root,
        session,
        mut notes,
        inst,
        reader,
        source,
    } = start_tracing(cfg, user)?;
    let mut tracing = crate::trace::Tracing::default();
    let (explain, taps) = explain_beside(cfg, user, session, &mut tracing, &mut notes)?;
    let (channels, recs) = channels(cfg, user);
    let mut spec = RunSpec::new(
        Benchmark::Timer,
        cfg,
        &cfg.setup,
        &cfg.control,
        command_line,
    )?
    .threads(vec![None], vec![0]);
    measuring_threads(cfg, &mut spec, user, &mut notes);
    spec.notes = notes;
    let problems: Arc<Mutex<Vec<String>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let workers = match user {
        true => user_workers(cfg, &root, &taps, (&done, &problems)),
        false => Vec::new(),
    };
    tracing.add(Box::new(SampleReader::new(
        cfg,
        user,
        (recs, taps),
        reader,
        (inst, source),
        (done, problems),
    )));
    // The samples' details first, then the explained cases.
    if let Some(e) = explain {
        e.add_to(&mut tracing);
    }
    tracing.execute(spec, channels, workers, Clock::Monotonic.id())
}

/// A tap per CPU and level, as the recorders (none without `--explain`).
type Taps = Vec<Option<Arc<Tap>>>;

/// With `--explain`, its tracing in a second instance of the run's
/// `session` (restored with it) and the taps of the samples; else the
/// session kept as it is.
fn explain_beside(
    cfg: &TimerConfig,
    user: bool,
    session: Session,
    tracing: &mut crate::trace::Tracing,
    notes: &mut Vec<String>,
) -> Result<(Option<Explain>, Taps)> {
    let Some(worst) = cfg.explain else {
        tracing.keep(session);
        return Ok((None, Vec::new()));
    };
    let own = "own wake-up path";
    let mut e = Explain::beside(
        session,
        &cfg.cpus,
        worst,
        cfg.control.break_threshold_ns,
        own,
    )?;
    if cfg.explain_stacks {
        e.stacks()?;
    }
    notes.extend(e.notes.iter().cloned());
    let taps = watch(&mut e, cfg, user);
    Ok((Some(e), taps))
}

/// rtlat's threads that read each CPU's `timerlat_fd` (`--context user`):
/// the thread and user levels of a CPU are its thread's wake-up.
fn user_workers(
    cfg: &TimerConfig,
    root: &Path,
    taps: &[Option<Arc<Tap>>],
    (done, problems): (&Arc<AtomicBool>, &Arc<Mutex<Vec<String>>>),
) -> Vec<Worker> {
    let levels = levels(true).len();
    cfg.cpus
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let own = taps
                .iter()
                .skip(levels * i + 1)
                .take(levels - 1)
                .flatten()
                .cloned()
                .collect();
            userlat::worker(
                root,
                c,
                cfg.control.duration_ns,
                GRACE_NS + 1_000_000_000,
                (Arc::clone(done), own),
                Arc::clone(problems),
            )
        })
        .collect()
}

/// With `--explain`, a tap per CPU and level (as the recorders): the
/// interval of a sample is from its timer's expiry to the context's
/// sample; the IRQ level waits in no thread, the thread level in the
/// kernel's timerlat/N (or, with `user`, rtlat's thread, which sets itself
/// as the writer of its CPU's thread and user taps).
fn watch(e: &mut Explain, cfg: &TimerConfig, user: bool) -> Vec<Option<Arc<Tap>>> {
    // Room for 1 s of samples: ten times the trace reader's pauses (50 ms)
    // and the explain reader's (at most 100 ms).
    let room = (1_000_000_000 / cfg.period_ns.max(1)) as usize;
    let mut taps = Vec::new();
    for &cpu in &cfg.cpus {
        for &ctx in levels(user) {
            let tap = e.watch(
                &format!("cpu{cpu}/{}", ctx.name()),
                cpu,
                room,
                Some(cfg.period_ns),
            );
            if ctx == Ctx::Thread && !user {
                if let Some(pid) = kernel_thread(&format!("timerlat/{cpu}")) {
                    tap.set_writer(pid);
                }
            }
            taps.push(Some(tap));
        }
    }
    taps
}

/// The pid of the kernel thread named `comm` (a child of kthreadd).
fn kernel_thread(comm: &str) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.find_map(|e| {
        let pid: i32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (name, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
        let ppid: i32 = rest.split_whitespace().nth(1)?.parse().ok()?;
        (name == comm && ppid == 2).then_some(pid)
    })
}

/// The trace lags the clock (more so on a loaded system, where the reader
/// waits behind the busy tasks): after the end the reader reads until every
/// CPU's samples have passed it (so that every period of the window is a
/// sample or a counted skip), at most this long.
const GRACE_NS: u64 = 2_000_000_000;

/// The timerlat tracer at work in rtlat's tracefs instance, and how its
/// samples are read. The fields are in the order they are dropped.
struct Tracing {
    reader: Reader,
    /// Where the samples come from, for the details.
    source: String,
    inst: PathBuf,
    notes: Vec<String>,
    /// Restores tracefs when dropped.
    session: Session,
    root: PathBuf,
}

/// Sets up the timerlat tracer (period, CPUs, the user workload with
/// `user`) in an instance of rtlat's own, and opens its output.
fn start_tracing(cfg: &TimerConfig, user: bool) -> Result<Tracing> {
    let caps = Capabilities::probe_or_mount();
    if let Some(e) = refuse(&caps, &cfg.contexts) {
        return Err(e);
    }
    let root = caps.root.clone().unwrap_or_default();
    let (mut session, mut notes) =
        Session::begin(&root, tracefs::Uses::Global).map_err(Error::env)?;
    let period_us = (cfg.period_ns / 1000).to_string();
    let cpus = crate::units::format_cpu_list(&cfg.cpus);
    session
        .set("osnoise/cpus", &cpus)
        .map_err(|e| tracefs_error("set osnoise/cpus", e))?;
    session
        .set("osnoise/timerlat_period_us", &period_us)
        .map_err(|e| tracefs_error("set osnoise/timerlat_period_us", e))?;
    if user {
        if !cfg.setup.rt.can_pin() {
            return Err(Error::usage(
                "--context user reads each CPU's timerlat_fd from a thread pinned to it: not with --policy deadline (unpinned); use fifo, rr or other",
            ));
        }
        userlat::user_workload(&mut session, &root)?;
    }
    let (inst, name) = instance::open(
        &mut session,
        &root,
        &[("current_tracer", "timerlat")],
        &mut notes,
    )?;
    if user {
        for &c in &cfg.cpus {
            userlat::probe(&root, c)?;
        }
    }
    let (reader, how) = open_reader(cfg, &root, &inst, &mut notes)?;
    let workload = if user {
        "rtlat's threads rtlat-tlatN read osnoise/per_cpu/cpuN/timerlat_fd, the kernel's timerlat/N threads off".to_string()
    } else {
        format!("its timerlat/N threads run at SCHED_FIFO {KERNEL_THREAD_PRIORITY}")
    };
    notes.push(format!(
        "samples of the kernel's timerlat tracer (period {period_us} us, CPUs {cpus}; {workload}) read from {how} of tracefs instance {name}"
    ));
    let source = format!("timerlat tracer, {how} of rtlat's tracefs instance");
    Ok(Tracing {
        reader,
        source,
        inst,
        notes,
        session,
        root,
    })
}

/// The binary per-CPU buffers where their layout can be read (cheaper for
/// the measured CPUs), else the text trace_pipe; and what it is, for the notes.
fn open_reader(
    cfg: &TimerConfig,
    root: &Path,
    inst: &Path,
    notes: &mut Vec<String>,
) -> Result<(Reader, &'static str)> {
    let format = raw::TimerlatLayout::parse(
        &tracefs::read(root, "events/header_page").unwrap_or_default(),
        &tracefs::read(root, "events/ftrace/timerlat/format").unwrap_or_default(),
    );
    let noise = match (&format, cfg.control.break_threshold_ns) {
        (Some(_), Some(_)) => noise_events(root, inst, &cfg.cpus, notes),
        (None, Some(_)) => {
            notes.push("--break-threshold: the break is not analysed (the trace's binary layout could not be read)".into());
            None
        }
        _ => None,
    };
    Ok(match format {
        Some(f) => (
            Reader::Raw(
                RawPipes::open(inst, &cfg.cpus)
                    .map_err(|e| tracefs_error("open trace_pipe_raw", e))?,
                f,
                Box::new(noise),
            ),
            "the binary per-CPU trace_pipe_raw buffers",
        ),
        None => (
            Reader::Text(Pipe::open(inst).map_err(|e| tracefs_error("open trace_pipe", e))?),
            "the text trace_pipe",
        ),
    })
}

/// The level closest to user space: the total (and the main figure), as a
/// plain timer run's is the user thread's.
fn top(user: bool) -> Ctx {
    *levels(user).last().unwrap_or(&Ctx::Thread)
}

/// A channel and its recorder per CPU and level, in that order.
fn channels(cfg: &TimerConfig, user: bool) -> (Vec<Channel>, Vec<Recorder>) {
    let mut channels = Vec::new();
    let mut recs = Vec::new();
    let top = top(user);
    for &cpu in &cfg.cpus {
        for &ctx in levels(user) {
            let (rec, col) = recorder::pair(cfg.control.interval_ns);
            let mut channel = Channel::new(
                format!("cpu{cpu}/{}", ctx.name()),
                Some(cpu),
                col,
                cfg.control.interval_ns,
            );
            channel.in_total = ctx == top;
            channels.push(channel);
            recs.push(rec);
        }
    }
    (channels, recs)
}

/// The tuning of the settings line: that of the threads that measure.
fn measuring_threads(cfg: &TimerConfig, spec: &mut RunSpec, user: bool, notes: &mut Vec<String>) {
    if user {
        // The measuring threads are rtlat's own, with its policy, one per CPU.
        spec.tuning = spec.rt.tuning(
            cfg.cpus.iter().map(|&c| Some(c)).collect(),
            vec![0; cfg.cpus.len()],
        );
    } else {
        // The settings line describes the measuring threads: the kernel's
        // timerlat/N, one per CPU; rtlat's reader thread is in a note.
        let reader_policy = match (spec.tuning.policy, spec.tuning.priority) {
            (Some(p), prio) => p.label(prio.unwrap_or(0)),
            (None, _) => "its default policy".into(),
        };
        notes.push(format!(
            "the threads and policy of the settings line are the kernel's timerlat/N threads; mlock and dma_latency are rtlat's, whose reader thread ran at {reader_policy}"
        ));
        spec.tuning.policy = Some(Policy::Fifo);
        spec.tuning.priority = Some(KERNEL_THREAD_PRIORITY);
        spec.tuning.affinity = cfg.cpus.iter().map(|&c| Some(c)).collect();
        spec.tuning.phase_offsets_ns = vec![0; cfg.cpus.len()];
    }
}

/// The thread that reads the trace into `recs` until the end (and the
/// grace after it), a break or a stop; then it tells the timerlat_fd
/// readers (`done`) and writes the trace's details into the result.
struct SampleReader {
    reader: Reader,
    pairer: Pairer,
    sink: LevelSink,
    duration: Option<u64>,
    inst: PathBuf,
    /// Where the samples came from, for the details.
    source: String,
    /// Set when this reader ends: rtlat's timerlat_fd readers (user) end too.
    done: Arc<AtomicBool>,
    /// What rtlat's timerlat_fd readers met.
    problems: Arc<Mutex<Vec<String>>>,
    read_error: Option<String>,
    late_trace: bool,
    analysis: Option<BreakAnalysis>,
}

impl SampleReader {
    fn new(
        cfg: &TimerConfig,
        user: bool,
        (recs, taps): (Vec<Recorder>, Vec<Option<Arc<Tap>>>),
        reader: Reader,
        (inst, source): (PathBuf, String),
        (done, problems): (Arc<AtomicBool>, Arc<Mutex<Vec<String>>>),
    ) -> SampleReader {
        let n = cfg.cpus.len();
        SampleReader {
            reader,
            pairer: Pairer::new(&cfg.cpus, cfg.period_ns, user),
            sink: LevelSink {
                recs,
                levels: levels(user).len(),
                top: top(user),
                cpus: cfg.cpus.clone(),
                start: 0,
                end: u64::MAX,
                period: cfg.period_ns,
                threshold: cfg.control.break_threshold_ns.unwrap_or(u64::MAX),
                counts: vec![0; n],
                loops: cfg.control.loops.unwrap_or(u64::MAX),
                brk: None,
                brk_sample: None,
                last_irq: vec![None; n],
                taps,
            },
            duration: cfg.control.duration_ns,
            inst,
            source,
            done,
            problems,
            read_error: None,
            late_trace: false,
            analysis: None,
        }
    }

    /// What is waiting in the trace, into the pairer; `Ok(true)` when more
    /// may be waiting.
    fn read(&mut self) -> std::io::Result<bool> {
        let (pairer, sink) = (&mut self.pairer, &mut self.sink);
        match &mut self.reader {
            Reader::Text(pipe) => pipe.drain(|l| {
                if let Some(line) = lines::parse(l) {
                    pairer.feed(&line, sink);
                }
            }),
            Reader::Raw(pipes, fmt, noise) => read_raw(
                pipes,
                fmt,
                noise.as_mut().as_mut(),
                pairer,
                sink,
                &mut self.analysis,
            ),
        }
    }
}

impl Tracer for SampleReader {
    fn name(&self) -> String {
        "rtlat-timerlat".into()
    }

    fn begin(&mut self, start: u64) {
        self.sink.start = start;
        self.sink.end = self.duration.map_or(u64::MAX, |d| start + d);
    }

    fn round(&mut self, now: u64, stop: &StopFlag) -> Round {
        let end = self.sink.end;
        let done_loops = self.sink.counts.iter().all(|&c| c >= self.sink.loops);
        let caught_up = now >= end && self.pairer.reached(end);
        if stop.is_set() || caught_up || now >= end.saturating_add(GRACE_NS) || done_loops {
            if now >= end.saturating_add(GRACE_NS) && !self.pairer.reached(end) {
                self.late_trace = true;
            }
            return Round::Done;
        }
        let more = match self.read() {
            Ok(more) => more,
            Err(e) => {
                self.read_error = Some(e.to_string());
                return Round::Done;
            }
        };
        if self.sink.brk.is_some() {
            stop.set();
            return Round::Done;
        }
        if more {
            Round::More
        } else {
            // Read in batches: a reader that wakes for every event costs
            // the measured CPUs more (rtla reads once a second).
            Round::Pause(std::time::Duration::from_millis(50))
        }
    }

    fn end(mut self: Box<Self>) -> (Option<BreakEvent>, Finish) {
        // rtlat's timerlat_fd readers (user) end with this reader.
        self.done.store(true, Ordering::Release);
        for r in &mut self.sink.recs {
            r.finish();
        }
        for t in self.sink.taps.iter().flatten() {
            t.close();
        }
        let mut d = std::mem::take(&mut self.pairer.details);
        d.trace_short_of_end = self.late_trace;
        d.break_analysis = self.analysis.take();
        d.source = std::mem::take(&mut self.source);
        for &c in &self.sink.cpus {
            let (o, dropped) = tracefs::cpu_losses(&self.inst, c);
            d.ring_buffer_overruns += o;
            d.dropped_events += dropped;
        }
        if let Some(e) = self.read_error.take() {
            d.restore_problems
                .push(format!("reading trace_pipe failed: {e}"));
        }
        let brk = self.sink.brk.take();
        (brk, finisher(d, Arc::clone(&self.problems)))
    }
}

/// At the end of the run: the trace's details into the result, tracefs
/// restored, and the notes on what the trace missed.
fn finisher(mut d: ContextDetails, problems: Arc<Mutex<Vec<String>>>) -> Finish {
    Box::new(move |result: &mut RunResult, restore: &[String]| {
        d.restore_problems.extend_from_slice(restore);
        if let Ok(p) = problems.lock() {
            for p in p.iter() {
                result.notes.push(format!("timerlat_fd: {p}"));
            }
        }
        if let Some(a) = &d.break_analysis {
            result.notes.push(a.line());
        }
        if d.trace_short_of_end {
            result.notes.push(
                "timerlat: 2 s after the end the trace had not reached it on every CPU: the last periods are missing from the counts".into(),
            );
        }
        if d.unmatched_irq + d.unmatched_thread + d.id_gaps + d.lost_events > 0 {
            result.notes.push(format!(
                "timerlat: {} IRQ and {} thread samples without their pair, {} ids missing, {} events lost",
                d.unmatched_irq, d.unmatched_thread, d.id_gaps, d.lost_events
            ));
        }
        result.details = crate::result::details::Details::to_map(&d);
    })
}

/// Trace the osnoise events in the instance for the analysis of a break
/// (`None`, with a note, where the kernel has none).
fn noise_events(
    root: &std::path::Path,
    inst: &std::path::Path,
    cpus: &[usize],
    notes: &mut Vec<String>,
) -> Option<Recent> {
    let files = noise::EVENTS
        .map(|e| tracefs::read(root, &format!("events/osnoise/{e}/format")).unwrap_or_default());
    let Some(fmt) = noise::NoiseLayout::parse(files.each_ref().map(|f| f.as_str())) else {
        notes.push(
            "--break-threshold: no osnoise events in this kernel, so the break is not analysed"
                .into(),
        );
        return None;
    };
    let on: Vec<&str> = noise::EVENTS
        .into_iter()
        .filter(|e| tracefs::write(inst, &format!("events/osnoise/{e}/enable"), "1").is_ok())
        .collect();
    notes.push(format!(
        "--break-threshold: what runs on the measured CPUs is traced ({}) to analyse a break as rtla timerlat -a does",
        on.join(", ")
    ));
    Some(Recent::new(fmt, cpus))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_kernel_option_and_the_version() {
        let none = Capabilities::default();
        assert!(refuse(&none, &[Ctx::Irq])
            .unwrap()
            .to_string()
            .contains("CONFIG_TIMERLAT_TRACER"));
        let generic = Capabilities {
            root: Some("/sys/kernel/tracing".into()),
            hrtimer_events: true,
            ..Default::default()
        };
        let e = refuse(&generic, &[Ctx::Irq]).unwrap().to_string();
        assert!(
            e.contains("CONFIG_TIMERLAT_TRACER") && e.contains("linux-image-rt-amd64"),
            "{e}"
        );
        let rt61 = Capabilities {
            timerlat: true,
            ..generic.clone()
        };
        assert!(refuse(&rt61, &[Ctx::Irq, Ctx::Thread]).is_none());
        assert!(refuse(&rt61, &[Ctx::User])
            .unwrap()
            .to_string()
            .contains("Linux 6.5"));
        assert_eq!(rt61.contexts(), vec!["irq", "thread"]);
        // 6.12: timerlat_fd, so user too.
        let rt612 = Capabilities {
            timerlat_fd: true,
            ..rt61.clone()
        };
        assert!(refuse(&rt612, &ALL).is_none());
        assert_eq!(rt612.contexts(), vec!["irq", "thread", "user"]);
        assert!(generic.contexts().is_empty());
    }
}
