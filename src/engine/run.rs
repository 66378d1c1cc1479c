//! What every benchmark does around its measuring threads: collect their
//! recorders on a non-real-time thread, print live output, rewrite the result
//! file atomically, and assemble the final result.

use super::channel::Channel;
use super::control::{OutputConfig, RunControl, Setup};
use super::live::Live;
use super::rt::{self, RtConfig, Runtime};
use super::save::Saver;
use crate::error::{Error, Outcome, Result};
use crate::load::{LoadPlan, RunningLoads};
use crate::result::{
    self, Benchmark, BreakEvent, EndReason, Phase, RunResult, ThreadResult, Thresholds, Tool,
    Tuning,
};
use crate::stats::recorder::Totals;
use crate::stats::{Collector, Histogram, Summary};
use crate::sys::signals::{SignalWatch, StopFlag};
use crate::sys::{self, clock::Clock};
use crate::sysinfo::SystemInfo;
use serde::Serialize;
use std::sync::mpsc;
use std::thread;

/// Stack of a measuring thread (locked under mlockall, so kept small).
const THREAD_STACK: usize = 256 * 1024;
/// Time between the end of setup and the start of the measurement.
const START_DELAY_NS: u64 = 20_000_000;
/// How often the reporter checks for the end of the run.
const POLL_NS: u64 = 50_000_000;

/// Per-thread results and their merged summary, from one view of each collector.
fn thread_results<'a>(
    channels: &'a [Channel],
    view: impl Fn(&'a Collector) -> (&'a Totals, &'a Histogram),
    window: (u64, u64),
) -> (Vec<ThreadResult>, Summary) {
    let mut total_hist = Histogram::new();
    let mut totals = Totals::default();
    let threads = channels
        .iter()
        .map(|c| {
            let (t, h) = view(&c.collector);
            total_hist.merge(h);
            totals.merge(t);
            let mut series = c.series.to_series();
            series
                .points
                .retain(|p| p.t_ns >= window.0 && p.t_ns < window.1);
            ThreadResult {
                name: c.name.clone(),
                cpu: c.cpu,
                summary: Summary::from_parts(t, h),
                histogram: h.to_record(),
                series,
            }
        })
        .collect();
    if totals.samples > 0 {
        total_hist.set_extremes(totals.min, totals.max);
    }
    (threads, Summary::from_parts(&totals, &total_hist))
}

/// Fill `result.threads`, `result.total` and, when the run is split at
/// `phase_at` ns (`--idle-first`), `result.phases` from the channels.
pub fn fill_result(result: &mut RunResult, channels: &[Channel], phase_at: Option<u64>) {
    let (threads, total) = thread_results(channels, |c| (c.totals(), c.histogram()), (0, u64::MAX));
    result.threads = threads;
    result.total = total;
    if let Some(at) = phase_at {
        let end = result.duration_ns.max(at);
        result.phases = [("idle", 0, at), ("load", at, end)]
            .into_iter()
            .enumerate()
            .map(|(p, (name, start_ns, end_ns))| {
                let window = (start_ns, if p == 0 { at } else { u64::MAX });
                let (threads, total) = thread_results(channels, |c| c.phase(p), window);
                Phase {
                    name: name.into(),
                    start_ns,
                    end_ns,
                    threads,
                    total,
                }
            })
            .collect();
    }
    let lost: u64 = channels.iter().map(|c| c.collector.lost_intervals).sum();
    let note_prefix = "live intervals lost";
    result.notes.retain(|n| !n.starts_with(note_prefix));
    if lost > 0 {
        result.notes.push(format!(
            "{note_prefix}: {lost} (the reporter stalled; histograms and totals are complete, the series has gaps)"
        ));
    }
}

/// Collect every channel and print the live view.
pub fn tick(channels: &mut [Channel], live: &mut Live, elapsed_ns: u64, remaining_ns: Option<u64>) {
    let mut scratch = Vec::new();
    for (i, c) in channels.iter_mut().enumerate() {
        c.collect(&mut scratch);
        live.intervals(i, &c.name, &scratch);
    }
    live.refresh(channels, elapsed_ns, remaining_ns);
}

/// Everything about a run except its measuring threads.
pub struct RunSpec {
    pub benchmark: &'static str,
    pub command_line: Vec<String>,
    pub output: OutputConfig,
    /// When the run ends and what it must stay within.
    pub control: RunControl,
    pub config: serde_json::Value,
    pub rt: RtConfig,
    pub tuning: Tuning,
    pub notes: Vec<String>,
    pub loads: Vec<serde_json::Value>,
    /// Benchmark-specific figures known before the run (more can be added to the result after).
    pub details: serde_json::Map<String, serde_json::Value>,
    /// Loads to run beside the measurement (`--load`), possibly after an idle phase.
    pub load_plan: Option<LoadPlan>,
    /// Simulated samples: no real-time setup, reporter collects often.
    pub synthetic: bool,
    /// Called once after the workers ended and the statistics are final, before
    /// the summary is printed and the file saved: add `details`, notes, etc.
    pub finish: Option<Finisher>,
}

/// A benchmark's last word on its result (see [`RunSpec::finish`]).
pub type Finisher = Box<dyn FnOnce(&mut RunResult) + Send>;

impl RunSpec {
    /// A run of `benchmark` whose validated settings `config` become the
    /// result's `config`, with the engine's `setup` and the run `control`.
    /// Refuses an idle phase that leaves no load phase.
    pub fn new(
        benchmark: &'static str,
        config: &impl Serialize,
        setup: &Setup,
        control: &RunControl,
        command_line: Vec<String>,
    ) -> Result<Self> {
        if let Some(plan) = &setup.loads {
            if let (Some(idle), Some(total)) = (plan.idle_first_ns, control.duration_ns) {
                if idle >= total {
                    return Err(Error::usage(format!(
                        "--idle-first ({}) must be shorter than --duration ({}) to leave a load phase",
                        crate::units::human_duration(idle),
                        crate::units::human_duration(total)
                    )));
                }
            }
        }
        Ok(RunSpec {
            benchmark,
            command_line,
            output: setup.output.clone(),
            control: control.clone(),
            config: serde_json::to_value(config).unwrap_or_default(),
            tuning: setup.rt.tuning(Vec::new(), Vec::new()),
            rt: setup.rt.clone(),
            notes: Vec::new(),
            loads: Vec::new(),
            details: serde_json::Map::new(),
            load_plan: setup.loads.clone(),
            synthetic: false,
            finish: None,
        })
    }

    /// Record each measuring thread's CPU (`None`: not pinned) and wake-up
    /// offset within the period in the tuning.
    pub fn threads(mut self, affinity: Vec<Option<usize>>, phase_offsets_ns: Vec<u64>) -> Self {
        self.tuning = self.rt.tuning(affinity, phase_offsets_ns);
        self
    }

    /// When the statistics split into an idle and a load phase (ns after start).
    fn idle_first_ns(&self) -> Option<u64> {
        self.load_plan.as_ref().and_then(|p| p.idle_first_ns)
    }
}

/// A measuring thread: set up by the harness (affinity, policy, stack), then
/// `body` runs from the common start time until its own end or `stop`.
pub struct Worker {
    pub name: String,
    pub cpu: Option<usize>,
    #[allow(clippy::type_complexity)]
    pub body: Box<dyn FnOnce(u64, &StopFlag) -> WorkerEnd + Send>,
}

/// How a measuring thread ended (the engine measures its CPU time).
#[derive(Debug, Default)]
pub struct WorkerEnd {
    pub brk: Option<BreakEvent>,
}

/// A finished run: its result and how it ended.
pub struct Finished {
    pub result: RunResult,
    pub outcome: Outcome,
}

/// Run `workers` under the real-time runtime while the calling (non-RT)
/// thread reports, saves, and finally summarises. `clock` is the clock the
/// workers' start time is given on.
pub fn execute(
    spec: RunSpec,
    mut channels: Vec<Channel>,
    workers: Vec<Worker>,
    clock: libc::clockid_t,
) -> Result<Finished> {
    // A result file that cannot be written ends the run before it measures.
    let mut saver = Saver::new(spec.output.json.as_ref())?;
    let stop = StopFlag::default();
    let signals = SignalWatch::start(stop.clone()).map_err(|e| {
        Error::env(format!(
            "cannot block signals or start the signal thread: {e}"
        ))
        .because(e)
    })?;
    let mut result = first_result(&spec);
    let runtime = if spec.synthetic {
        None
    } else {
        Some(Runtime::setup(&spec.rt, workers.len())?)
    };
    let crew = Crew::spawn(workers, &spec, &stop)?;

    // Loads start after the real-time setup and before the first sample
    // (or, with an idle phase first, when the idle phase ends).
    let mut loads: Option<RunningLoads> = None;
    if let Some(plan) = spec
        .load_plan
        .as_ref()
        .filter(|p| p.idle_first_ns.is_none())
    {
        match RunningLoads::start(&plan.spec, &plan.options) {
            Ok(l) => loads = Some(l),
            Err(e) => {
                crew.abort();
                return Err(e);
            }
        }
    }

    // Go: every worker gets the same start time, a little in the future.
    let delay = if spec.synthetic { 0 } else { START_DELAY_NS };
    let start = if spec.synthetic {
        0
    } else {
        sys::clock::now_ns(clock) + delay
    };
    let (wall_s, wall_ns) = sys::clock::wall_clock();
    let wall_start = wall_s * 1_000_000_000 + wall_ns as u64 + delay;
    result.start_time_utc = result::rfc3339_utc(
        wall_start / 1_000_000_000,
        (wall_start % 1_000_000_000) as u32,
    );
    if let Some(at) = spec.idle_first_ns() {
        for c in &channels {
            c.collector.set_phase_boundary(at);
        }
    }
    crew.go(start);

    let mut live = Live::new(spec.output.quiet, spec.control.interval_ns);
    saver.save(&result);
    if !spec.output.quiet {
        crate::outln!("{}", crate::render::text::start_line(&result));
    }
    let mono = Clock::Monotonic.id();
    let mono_start = sys::clock::now_ns(mono) + delay;
    let mut report = Report {
        spec: &spec,
        channels: &mut channels,
        live: &mut live,
        saver: &mut saver,
        result: &mut result,
        loads: &mut loads,
        stop: &stop,
        mono,
        mono_start,
    };
    report.until_done(&crew);
    let end_mono = sys::clock::now_ns(mono);

    let ended = crew.join();
    result.measuring_cpu_time_ns = ended.cpu_time_ns;
    if ended.panicked {
        result
            .notes
            .push("a measuring thread panicked; its samples so far are kept".into());
    }
    // Loads stop after the last sample.
    if let Some(l) = loads.take() {
        result.loads = l.stop();
    }
    drop(runtime);
    let caught = signals.caught();
    drop(signals);

    tick(
        &mut channels,
        &mut live,
        end_mono.saturating_sub(mono_start),
        Some(0),
    );
    fill_result(&mut result, &channels, spec.idle_first_ns());
    result.duration_ns = if spec.synthetic {
        simulated_duration(&result, spec.control.duration_ns)
    } else {
        end_mono.saturating_sub(mono_start)
    };
    if let Some(load) = result.phases.get_mut(1) {
        load.end_ns = result.duration_ns.max(load.start_ns);
    }
    result.end_reason = if ended.brk.is_some() {
        EndReason::Break
    } else if caught.is_some() {
        EndReason::Signal
    } else if spec.control.loops.is_some() {
        EndReason::Loops
    } else {
        EndReason::Duration
    };
    result.complete = true;
    let exceeded = spec
        .control
        .max_latency_ns
        .is_some_and(|m| result.total.max_ns > m);
    result.thresholds.max_latency_exceeded = exceeded;
    result.thresholds.break_event = ended.brk;
    if let Some(finish) = spec.finish {
        finish(&mut result);
    }
    let outcome = if exceeded || result.thresholds.break_event.is_some() {
        Outcome::ThresholdExceeded
    } else {
        Outcome::Success
    };
    crate::outfile::print(&crate::render::text::summary(&result));
    saver.save_final(&result)?;
    Ok(Finished { result, outcome })
}

/// The result as it is written before the first sample.
fn first_result(spec: &RunSpec) -> RunResult {
    RunResult {
        schema: result::SCHEMA_NAME.into(),
        schema_version: result::SCHEMA_VERSION,
        tool: Tool::this(),
        benchmark: Benchmark::from_name(spec.benchmark)
            .unwrap_or_else(|| panic!("RunSpec names no benchmark: {}", spec.benchmark)),
        label: spec.output.label.clone(),
        command_line: spec.command_line.clone(),
        start_time_utc: String::new(),
        duration_ns: 0,
        complete: false,
        end_reason: EndReason::Running,
        config: spec.config.clone(),
        system: SystemInfo::collect(),
        tuning: spec.tuning.clone(),
        threads: Vec::new(),
        total: Default::default(),
        thresholds: Thresholds {
            max_latency_ns: spec.control.max_latency_ns,
            break_threshold_ns: spec.control.break_threshold_ns,
            ..Default::default()
        },
        loads: spec.loads.clone(),
        notes: spec.notes.clone(),
        measuring_cpu_time_ns: 0,
        phases: Vec::new(),
        details: spec.details.clone(),
    }
}

/// Simulated time: the span the series covers.
fn simulated_duration(result: &RunResult, duration_ns: Option<u64>) -> u64 {
    duration_ns.unwrap_or_else(|| {
        result
            .threads
            .iter()
            .filter_map(|t| {
                t.series
                    .points
                    .last()
                    .map(|p| p.t_ns + t.series.interval_ns)
            })
            .max()
            .unwrap_or(0)
    })
}

/// The measuring threads, from their setup to their end.
struct Crew {
    /// Each thread ends with its worker's end and the CPU time it used measuring.
    handles: Vec<thread::JoinHandle<(WorkerEnd, u64)>>,
    starts: Vec<mpsc::Sender<Option<u64>>>,
}

/// What the measuring threads left when they ended.
struct CrewEnd {
    cpu_time_ns: u64,
    /// The earliest break, if any thread broke.
    brk: Option<BreakEvent>,
    panicked: bool,
}

impl Crew {
    /// Spawn the workers; each sets itself up (affinity, policy, stack) and
    /// reports. Returns once all are ready, or the first setup error after
    /// every thread has ended.
    fn spawn(workers: Vec<Worker>, spec: &RunSpec, stop: &StopFlag) -> Result<Crew> {
        let n = workers.len();
        let mut crew = Crew {
            handles: Vec::with_capacity(n),
            starts: Vec::with_capacity(n),
        };
        let (ready_tx, ready_rx) = mpsc::channel::<Result<()>>();
        for w in workers {
            let (start_tx, start_rx) = mpsc::channel::<Option<u64>>();
            let ready = ready_tx.clone();
            let stop = stop.clone();
            let rt = spec.rt.clone();
            let synthetic = spec.synthetic;
            let Worker { name, cpu, body } = w;
            let spawned = thread::Builder::new()
                .name(name)
                .stack_size(THREAD_STACK)
                .spawn(move || -> (WorkerEnd, u64) {
                    let set = if synthetic {
                        Ok(())
                    } else {
                        rt::enter_rt_thread(&rt, cpu)
                    };
                    let failed = set.is_err();
                    let _ = ready.send(set);
                    if failed {
                        return (WorkerEnd::default(), 0);
                    }
                    match start_rx.recv() {
                        Ok(Some(start)) => {
                            let cpu0 = sys::thread_cpu_time_ns();
                            let end = body(start, &stop);
                            (end, sys::thread_cpu_time_ns().saturating_sub(cpu0))
                        }
                        _ => (WorkerEnd::default(), 0),
                    }
                });
            match spawned {
                Ok(handle) => {
                    crew.handles.push(handle);
                    crew.starts.push(start_tx);
                }
                Err(e) => {
                    crew.abort();
                    return Err(
                        Error::env(format!("cannot start a measuring thread: {e}")).because(e)
                    );
                }
            }
        }
        drop(ready_tx);
        let mut setup_error = None;
        for _ in 0..crew.handles.len() {
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    setup_error.get_or_insert(e);
                }
                Err(_) => {
                    setup_error.get_or_insert(Error::env("a measuring thread died during setup"));
                }
            }
        }
        match setup_error {
            Some(e) => {
                crew.abort();
                Err(e)
            }
            None => Ok(crew),
        }
    }

    /// Release every worker at `start`.
    fn go(&self, start: u64) {
        for s in &self.starts {
            let _ = s.send(Some(start));
        }
    }

    fn all_finished(&self) -> bool {
        self.handles.iter().all(|h| h.is_finished())
    }

    /// Tell every worker not to start, and wait for them.
    fn abort(self) {
        for s in &self.starts {
            let _ = s.send(None);
        }
        for h in self.handles {
            let _ = h.join();
        }
    }

    fn join(self) -> CrewEnd {
        let mut end = CrewEnd {
            cpu_time_ns: 0,
            brk: None,
            panicked: false,
        };
        for h in self.handles {
            match h.join() {
                Ok((w, cpu_ns)) => {
                    end.cpu_time_ns += cpu_ns;
                    if let Some(b) = w.brk {
                        if end.brk.as_ref().is_none_or(|x| b.at_ns < x.at_ns) {
                            end.brk = Some(b);
                        }
                    }
                }
                Err(_) => end.panicked = true,
            }
        }
        end
    }
}

/// The reporter's side of a running measurement: live output, interval
/// records, periodic saves, and loads started after an idle phase.
struct Report<'a> {
    spec: &'a RunSpec,
    channels: &'a mut Vec<Channel>,
    live: &'a mut Live,
    saver: &'a mut Saver,
    result: &'a mut RunResult,
    loads: &'a mut Option<RunningLoads>,
    stop: &'a StopFlag,
    mono: libc::clockid_t,
    mono_start: u64,
}

impl Report<'_> {
    /// Report until every measuring thread has ended.
    fn until_done(&mut self, crew: &Crew) {
        let spec = self.spec;
        // A simulation runs faster than real time: collect it often.
        let tick_ns = if spec.synthetic {
            2_000_000
        } else {
            spec.control.interval_ns
        };
        let save_ns = spec.control.save_every_ns;
        let mut next_tick = self.mono_start + tick_ns;
        let mut next_save = self.mono_start + save_ns;
        let mut load_at = match (&spec.load_plan, spec.idle_first_ns()) {
            (Some(_), Some(idle)) => self.mono_start + idle,
            _ => u64::MAX,
        };
        while !crew.all_finished() {
            let now = sys::clock::now_ns(self.mono);
            if now >= load_at {
                load_at = u64::MAX;
                self.start_loads_after_idle();
            }
            if now >= next_tick {
                let elapsed = now.saturating_sub(self.mono_start);
                let remaining = spec.control.duration_ns.map(|d| d.saturating_sub(elapsed));
                tick(self.channels, self.live, elapsed, remaining);
                next_tick += tick_ns * (1 + (now - next_tick) / tick_ns);
            }
            if now >= next_save {
                self.result.duration_ns = now.saturating_sub(self.mono_start);
                fill_result(self.result, self.channels, spec.idle_first_ns());
                if let Some(l) = self.loads.as_ref() {
                    self.result.loads = l.records();
                }
                self.saver.save(self.result);
                next_save += save_ns * (1 + (now - next_save) / save_ns);
            }
            sys::clock::sleep_until(
                self.mono,
                (now + POLL_NS).min(next_tick).min(next_save).min(load_at),
            );
        }
    }

    /// The idle phase is over: start the loads; if they fail, the idle phase
    /// is kept and the run ends with the reason.
    fn start_loads_after_idle(&mut self) {
        let Some(plan) = &self.spec.load_plan else {
            return;
        };
        match RunningLoads::start(&plan.spec, &plan.options) {
            Ok(l) => *self.loads = Some(l),
            Err(e) => {
                eprintln!("rtlat: {e}");
                self.result
                    .notes
                    .push(format!("loads failed to start after the idle phase: {e}"));
                self.stop.set();
            }
        }
    }
}
