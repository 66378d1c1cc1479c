//! What every benchmark does around its measuring threads: collect their
//! recorders on a non-real-time thread, print live output, rewrite the result
//! file atomically, and assemble the final result.

use crate::bench::runtime::{self, RtConfig, Runtime, SignalWatch, StopFlag};
use crate::cli::{LoadOpts, OutputArgs};
use crate::error::{exit, Error, Result};
use crate::load::{LoadOptions, LoadSpec, RunningLoads};
use crate::output::live::Live;
use crate::result::{
    self, BreakEvent, Phase, RunResult, Series, SeriesPoint, ThreadResult, Thresholds, Tool, Tuning,
};
use crate::stats::recorder::Totals;
use crate::stats::{Collector, Histogram, IntervalStats, Summary};
use crate::sys::{self, clock::Clock};
use crate::sysinfo::SystemInfo;
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread;

/// Stack of a measuring thread (locked under mlockall, so kept small).
const THREAD_STACK: usize = 256 * 1024;
/// Time between the end of setup and the start of the measurement.
const START_DELAY_NS: u64 = 20_000_000;
/// How often the reporter checks for the end of the run.
const POLL_NS: u64 = 50_000_000;

/// Points kept per series before neighbours merge (and the interval doubles).
pub const SERIES_POINTS: usize = 4096;

/// One measured series: a thread (timer), a pair (switch), a metric (net).
pub struct Channel {
    pub name: String,
    pub cpu: Option<usize>,
    pub collector: Collector,
    pub series: SeriesBuilder,
    /// The latest finished interval, for live output.
    pub last: Option<IntervalStats>,
}

impl Channel {
    pub fn new(name: String, cpu: Option<usize>, collector: Collector, interval_ns: u64) -> Self {
        Channel {
            name,
            cpu,
            collector,
            series: SeriesBuilder::new(interval_ns),
            last: None,
        }
    }

    /// Drain the recorder; returns the intervals finished since the last call.
    pub fn collect(&mut self, scratch: &mut Vec<IntervalStats>) {
        scratch.clear();
        self.collector.collect(scratch);
        for iv in scratch.iter() {
            self.series.push(iv);
        }
        if let Some(iv) = scratch.last() {
            self.last = Some(*iv);
        }
    }

    pub fn summary(&self) -> Summary {
        Summary::from_parts(self.collector.totals(), self.collector.histogram())
    }
}

/// Per-interval statistics in constant memory.
#[derive(Debug, Clone)]
pub struct SeriesBuilder {
    base_ns: u64,
    /// Each point covers 2^shift base intervals.
    shift: u32,
    points: Vec<IntervalStats>,
}

impl SeriesBuilder {
    pub fn new(base_ns: u64) -> Self {
        SeriesBuilder {
            base_ns,
            shift: 0,
            points: Vec::new(),
        }
    }

    pub fn push(&mut self, iv: &IntervalStats) {
        let coarse = iv.index >> self.shift;
        match self.points.last_mut() {
            Some(last) if last.index == coarse => last.merge(iv),
            _ => self.points.push(IntervalStats {
                index: coarse,
                ..*iv
            }),
        }
        if self.points.len() > SERIES_POINTS {
            self.shift += 1;
            let mut merged: Vec<IntervalStats> = Vec::with_capacity(SERIES_POINTS / 2 + 1);
            for p in &self.points {
                let idx = p.index >> 1;
                match merged.last_mut() {
                    Some(m) if m.index == idx => m.merge(p),
                    _ => merged.push(IntervalStats { index: idx, ..*p }),
                }
            }
            self.points = merged;
        }
    }

    pub fn to_series(&self) -> Series {
        let interval_ns = self.base_ns << self.shift;
        Series {
            interval_ns,
            points: self
                .points
                .iter()
                .map(|p| SeriesPoint {
                    t_ns: p.index * interval_ns,
                    samples: p.samples,
                    min_ns: p.min,
                    avg_ns: p.avg(),
                    max_ns: p.max,
                    overruns: p.overruns,
                })
                .collect(),
        }
    }
}

/// Where and how often the result file is written.
pub struct Saver {
    pub path: Option<PathBuf>,
    pub every_ns: u64,
    pub last_error: Option<String>,
}

impl Saver {
    /// Write `result`; a failure is remembered (and reported once) but never stops the measurement.
    pub fn save(&mut self, result: &RunResult) {
        let Some(path) = &self.path else { return };
        match result.save(path) {
            Ok(()) => self.last_error = None,
            Err(e) => {
                let msg = format!(
                    "cannot write {}: {e}; check the path and free space (the measurement goes on)",
                    path.display()
                );
                if self.last_error.as_deref() != Some(msg.as_str()) {
                    eprintln!("rtlat: {msg}");
                }
                self.last_error = Some(msg);
            }
        }
    }

    /// The final write; its failure decides the exit code.
    pub fn save_final(&mut self, result: &RunResult) -> Result<()> {
        self.save(result);
        match &self.last_error {
            Some(msg) => Err(Error::io(msg.clone())),
            None => Ok(()),
        }
    }
}

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
    pub label: Option<String>,
    pub config: serde_json::Value,
    pub rt: RtConfig,
    pub tuning: Tuning,
    pub notes: Vec<String>,
    pub loads: Vec<serde_json::Value>,
    /// Benchmark-specific figures known before the run (more can be added to the result after).
    pub details: serde_json::Map<String, serde_json::Value>,
    pub duration_ns: Option<u64>,
    pub loops: Option<u64>,
    /// Split the statistics into an `idle` and a `load` phase at this time (ns after start).
    pub idle_first_ns: Option<u64>,
    /// Loads to run beside the measurement (`--load`).
    pub load_plan: Option<LoadPlan>,
    pub max_latency_ns: Option<u64>,
    pub break_threshold_ns: Option<u64>,
    pub json: Option<PathBuf>,
    pub quiet: bool,
    pub interval_ns: u64,
    pub save_every_ns: u64,
    /// Simulated samples: no real-time setup, reporter collects often.
    pub synthetic: bool,
    /// Called once after the workers ended and the statistics are final, before
    /// the summary is printed and the file saved: add `details`, notes, etc.
    pub finish: Option<Finisher>,
}

/// A benchmark's last word on its result (see [`RunSpec::finish`]).
pub type Finisher = Box<dyn FnOnce(&mut RunResult) + Send>;

/// Validated `--load` options.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    pub spec: LoadSpec,
    pub options: LoadOptions,
}

impl RunSpec {
    /// Take the shared `--load`, `--load-cpus`, `--load-target`, `--idle-first` options.
    pub fn with_loads(mut self, opts: &LoadOpts) -> Result<Self> {
        let Some(text) = &opts.load else {
            if opts.idle_first.is_some() {
                return Err(Error::usage(
                    "--idle-first needs --load: give the load to start after the idle phase",
                ));
            }
            if opts.load_cpus.is_some() || opts.load_target.is_some() {
                return Err(Error::usage(
                    "--load-cpus/--load-target need --load: give the loads to run",
                ));
            }
            return Ok(self);
        };
        if let (Some(idle), Some(total)) = (opts.idle_first, self.duration_ns) {
            if idle >= total {
                return Err(Error::usage(format!(
                    "--idle-first ({}) must be shorter than --duration ({}) to leave a load phase",
                    crate::units::human_duration(idle),
                    crate::units::human_duration(total)
                )));
            }
        }
        self.load_plan = Some(LoadPlan {
            spec: crate::load::parse_spec(text)?,
            options: crate::load::options_from(opts)?,
        });
        self.idle_first_ns = opts.idle_first;
        Ok(self)
    }

    pub fn new(
        benchmark: &'static str,
        out: &OutputArgs,
        command_line: Vec<String>,
        rt: RtConfig,
    ) -> Self {
        RunSpec {
            benchmark,
            command_line,
            label: out.label.clone(),
            config: serde_json::Value::Null,
            tuning: rt.tuning(Vec::new(), Vec::new()),
            rt,
            notes: Vec::new(),
            loads: Vec::new(),
            details: serde_json::Map::new(),
            duration_ns: None,
            loops: None,
            idle_first_ns: None,
            load_plan: None,
            max_latency_ns: out.max_latency,
            break_threshold_ns: None,
            json: out.json.clone(),
            quiet: out.quiet,
            interval_ns: out.interval,
            save_every_ns: out.save_every,
            synthetic: false,
            finish: None,
        }
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

/// How a measuring thread ended.
#[derive(Debug, Default)]
pub struct WorkerEnd {
    pub cpu_time_ns: u64,
    pub brk: Option<BreakEvent>,
}

/// The outcome of a run: the result and the exit code it calls for.
pub struct Outcome {
    pub result: RunResult,
    pub exit_code: i32,
}

/// Run `workers` under the real-time runtime while the calling (non-RT)
/// thread reports, saves, and finally summarises. `clock` is the clock the
/// workers' start time is given on.
pub fn execute(
    spec: RunSpec,
    mut channels: Vec<Channel>,
    workers: Vec<Worker>,
    clock: libc::clockid_t,
) -> Result<Outcome> {
    let stop = StopFlag::default();
    let signals = SignalWatch::start(stop.clone())?;
    let mut result = RunResult {
        schema: result::SCHEMA_NAME.into(),
        schema_version: result::SCHEMA_VERSION,
        tool: Tool::this(),
        benchmark: spec.benchmark.into(),
        label: spec.label.clone(),
        command_line: spec.command_line.clone(),
        start_time_utc: String::new(),
        duration_ns: 0,
        complete: false,
        end_reason: "running".into(),
        config: spec.config.clone(),
        system: SystemInfo::collect(),
        tuning: spec.tuning.clone(),
        threads: Vec::new(),
        total: Default::default(),
        thresholds: Thresholds {
            max_latency_ns: spec.max_latency_ns,
            break_threshold_ns: spec.break_threshold_ns,
            ..Default::default()
        },
        loads: spec.loads.clone(),
        notes: spec.notes.clone(),
        measuring_cpu_time_ns: 0,
        phases: Vec::new(),
        details: spec.details.clone(),
    };
    let runtime = if spec.synthetic {
        None
    } else {
        Some(Runtime::setup(&spec.rt, workers.len())?)
    };

    // Each worker sets itself up, reports, and waits for the common start time.
    let n = workers.len();
    let mut handles = Vec::with_capacity(n);
    let mut starts = Vec::with_capacity(n);
    let (ready_tx, ready_rx) = mpsc::channel::<Result<()>>();
    for w in workers {
        let (start_tx, start_rx) = mpsc::channel::<Option<u64>>();
        starts.push(start_tx);
        let ready = ready_tx.clone();
        let stop = stop.clone();
        let rt = spec.rt.clone();
        let synthetic = spec.synthetic;
        let Worker { name, cpu, body } = w;
        let handle = thread::Builder::new()
            .name(name)
            .stack_size(THREAD_STACK)
            .spawn(move || -> WorkerEnd {
                let set = if synthetic {
                    Ok(())
                } else {
                    runtime::enter_rt_thread(&rt, cpu)
                };
                let failed = set.is_err();
                let _ = ready.send(set);
                if failed {
                    return WorkerEnd::default();
                }
                match start_rx.recv() {
                    Ok(Some(start)) => body(start, &stop),
                    _ => WorkerEnd::default(),
                }
            })
            .map_err(|e| Error::env(format!("cannot start a measuring thread: {e}")))?;
        handles.push(handle);
    }
    drop(ready_tx);
    let mut setup_error = None;
    for _ in 0..n {
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
    if let Some(e) = setup_error {
        for s in &starts {
            let _ = s.send(None);
        }
        for h in handles {
            let _ = h.join();
        }
        return Err(e);
    }

    // Loads start after the real-time setup and before the first sample
    // (or, with an idle phase first, when the idle phase ends).
    let mut loads: Option<RunningLoads> = None;
    if let (Some(plan), None) = (&spec.load_plan, spec.idle_first_ns) {
        match RunningLoads::start(&plan.spec, &plan.options) {
            Ok(l) => loads = Some(l),
            Err(e) => {
                for s in &starts {
                    let _ = s.send(None);
                }
                for h in handles {
                    let _ = h.join();
                }
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
    if let Some(at) = spec.idle_first_ns {
        for c in &channels {
            c.collector.set_phase_boundary(at);
        }
    }
    for s in &starts {
        let _ = s.send(Some(start));
    }

    let mut live = Live::new(spec.quiet, spec.interval_ns);
    let mut saver = Saver {
        path: spec.json.clone(),
        every_ns: spec.save_every_ns,
        last_error: None,
    };
    saver.save(&result);
    if !spec.quiet {
        println!("{}", crate::output::text::start_line(&result));
    }
    let mono = Clock::Monotonic.id();
    let mono_start = sys::clock::now_ns(mono) + delay;
    // A simulation runs faster than real time: collect it often.
    let tick_ns = if spec.synthetic {
        2_000_000
    } else {
        spec.interval_ns
    };
    let mut next_tick = mono_start + tick_ns;
    let mut next_save = mono_start + spec.save_every_ns;
    let mut load_at = match (&spec.load_plan, spec.idle_first_ns) {
        (Some(_), Some(idle)) => mono_start + idle,
        _ => u64::MAX,
    };
    while !handles.iter().all(|h| h.is_finished()) {
        let now = sys::clock::now_ns(mono);
        if now >= load_at {
            load_at = u64::MAX;
            if let Some(plan) = &spec.load_plan {
                match RunningLoads::start(&plan.spec, &plan.options) {
                    Ok(l) => loads = Some(l),
                    Err(e) => {
                        // The idle phase is kept; the run ends with the reason.
                        eprintln!("rtlat: {e}");
                        result
                            .notes
                            .push(format!("loads failed to start after the idle phase: {e}"));
                        stop.set();
                    }
                }
            }
        }
        if now >= next_tick {
            let elapsed = now.saturating_sub(mono_start);
            let remaining = spec.duration_ns.map(|d| d.saturating_sub(elapsed));
            tick(&mut channels, &mut live, elapsed, remaining);
            next_tick += tick_ns * (1 + (now - next_tick) / tick_ns);
        }
        if now >= next_save {
            result.duration_ns = now.saturating_sub(mono_start);
            fill_result(&mut result, &channels, spec.idle_first_ns);
            if let Some(l) = &loads {
                result.loads = l.records();
            }
            saver.save(&result);
            next_save += spec.save_every_ns * (1 + (now - next_save) / spec.save_every_ns);
        }
        sys::clock::sleep_until(
            mono,
            (now + POLL_NS).min(next_tick).min(next_save).min(load_at),
        );
    }
    let end_mono = sys::clock::now_ns(mono);

    let mut brk: Option<BreakEvent> = None;
    for h in handles {
        match h.join() {
            Ok(end) => {
                result.measuring_cpu_time_ns += end.cpu_time_ns;
                if let Some(b) = end.brk {
                    if brk.as_ref().is_none_or(|x| b.at_ns < x.at_ns) {
                        brk = Some(b);
                    }
                }
            }
            Err(_) => result
                .notes
                .push("a measuring thread panicked; its samples so far are kept".into()),
        }
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
    fill_result(&mut result, &channels, spec.idle_first_ns);
    result.duration_ns = if spec.synthetic {
        // Simulated time: the span the series covers.
        spec.duration_ns.unwrap_or_else(|| {
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
    } else {
        end_mono.saturating_sub(mono_start)
    };
    if let Some(load) = result.phases.get_mut(1) {
        load.end_ns = result.duration_ns.max(load.start_ns);
    }
    result.end_reason = if brk.is_some() {
        "break"
    } else if caught.is_some() {
        "signal"
    } else if spec.loops.is_some() {
        "loops"
    } else {
        "duration"
    }
    .into();
    result.complete = true;
    let exceeded = spec.max_latency_ns.is_some_and(|m| result.total.max_ns > m);
    result.thresholds.max_latency_exceeded = exceeded;
    result.thresholds.break_event = brk;
    if let Some(finish) = spec.finish {
        finish(&mut result);
    }
    let exit_code = if exceeded || result.thresholds.break_event.is_some() {
        exit::THRESHOLD
    } else {
        exit::SUCCESS
    };
    print!("{}", crate::output::text::summary(&result));
    saver.save_final(&result)?;
    Ok(Outcome { result, exit_code })
}
