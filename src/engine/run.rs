//! What every benchmark does around its measuring threads: collect their
//! recorders on a non-real-time thread, print live output, rewrite the result
//! file atomically, and assemble the final result.

use super::channel::Channel;
use super::control::{OutputConfig, RunControl, Setup};
use super::crew::{Crew, CrewEnd, Worker};
use super::live::Live;
use super::rt::{self, RtConfig, Runtime};
use super::save::Saver;
use crate::error::{Error, Outcome, Result};
use crate::load::{LoadPlan, RunningLoads};
use crate::result::{
    self, Benchmark, BreakEvent, EndReason, Phase, RunResult, SeriesPoint, ThreadResult,
    Thresholds, Tool, Tuning,
};
use crate::stats::recorder::Totals;
use crate::stats::{Collector, Histogram, Summary};
use crate::sys::signals::{SignalWatch, StopFlag};
use crate::sys::{self, clock::Clock};
use crate::sysinfo::SystemInfo;
use serde::Serialize;

/// Time between the end of setup and the start of the measurement.
const START_DELAY_NS: u64 = 20_000_000;
/// How often the reporter checks for the end of the run.
const POLL_NS: u64 = 50_000_000;

/// Per-thread results and their merged summary, from one view of each collector.
fn thread_results<'a>(
    channels: &'a [Channel],
    view: impl Fn(&'a Collector) -> (&'a Totals, &'a Histogram),
    window: (u64, u64),
    spare: &mut Vec<Vec<SeriesPoint>>,
) -> (Vec<ThreadResult>, Summary) {
    let mut total_hist = Histogram::new();
    let mut totals = Totals::default();
    let threads = channels
        .iter()
        .filter(|c| c.in_use())
        .map(|c| {
            let (t, h) = view(&c.collector);
            if c.in_total {
                total_hist.merge(h);
                totals.merge(t);
            }
            let series = c.series.series_in(spare.pop().unwrap_or_default(), window);
            ThreadResult {
                name: c.name.clone(),
                cpu: c.cpu,
                summary: Summary::from_parts(t, h),
                histogram: h.to_record(),
                series,
                forecast: None,
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
    // The series' buffers of the previous copy hold the new one (the
    // reporter's heap holds one copy of the series, see `rt::reporter_heap`):
    // rewrites during a run leave the heap as the first one left it.
    let mut spare: Vec<Vec<SeriesPoint>> = std::mem::take(&mut result.threads)
        .into_iter()
        .chain(
            std::mem::take(&mut result.phases)
                .into_iter()
                .flat_map(|p| p.threads),
        )
        .map(|t| t.series.points)
        .collect();
    let (threads, total) = thread_results(
        channels,
        |c| (c.totals(), c.histogram()),
        (0, u64::MAX),
        &mut spare,
    );
    result.threads = threads;
    result.total = total;
    if let Some(at) = phase_at {
        let end = result.duration_ns.unwrap_or(0).max(at);
        result.phases = [("idle", 0, at), ("load", at, end)]
            .into_iter()
            .enumerate()
            .map(|(p, (name, start_ns, end_ns))| {
                let window = (start_ns, if p == 0 { at } else { u64::MAX });
                let (threads, total) = thread_results(channels, |c| c.phase(p), window, &mut spare);
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

/// Collect every channel and print the live view: interval lines up to what
/// every channel has finished (all of them when `last`), the table.
/// `elapsed_ns` is real time (None in a simulation, whose time is its own).
pub fn tick(
    channels: &mut [Channel],
    live: &mut Live,
    elapsed_ns: Option<u64>,
    remaining_ns: Option<u64>,
    last: bool,
) {
    let mut scratch = Vec::new();
    for (i, c) in channels.iter_mut().enumerate() {
        c.collect(&mut scratch);
        live.intervals(i, &scratch);
    }
    let names: Vec<&str> = channels.iter().map(|c| c.name.as_str()).collect();
    live.print_intervals(&names, elapsed_ns, last);
    live.refresh(channels, elapsed_ns.unwrap_or(0), remaining_ns);
}

/// Hand the metrics endpoint, if any, what the live view was just given.
fn publish(
    metrics: Option<&crate::metrics::Server>,
    channels: &[Channel],
    loads: &[serde_json::Value],
    elapsed_ns: u64,
) {
    if let Some(m) = metrics {
        let series = channels.iter().filter(|c| c.in_use()).map(|c| {
            let col = &c.collector;
            let last_max = c.last.map(|iv| iv.max);
            let max_by = c.max_culprit();
            (
                c.name.as_str(),
                col.totals(),
                col.histogram(),
                last_max,
                max_by,
            )
        });
        m.publish(series, loads, elapsed_ns);
    }
}

/// Everything about a run except its measuring threads.
pub struct RunSpec {
    pub benchmark: Benchmark,
    pub command_line: Vec<String>,
    pub output: OutputConfig,
    /// When the run ends and what it must stay within.
    pub control: RunControl,
    /// What the forecast at the end forecasts.
    pub forecast: crate::forecast::ForecastSettings,
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
    /// Samples come one per this period (timer, net ping): a run bounded by
    /// `loops` alone lasts about `loops` periods, which sizes its series
    /// instead of the longest series there can be.
    pub period_ns: Option<u64>,
    /// Called once after the workers ended and the statistics are final, before
    /// the summary is printed and the file saved: add `details`, notes, etc.
    pub finish: Option<Finisher>,
}

/// A benchmark's last word on its result (see [`RunSpec::finish`]).
pub type Finisher = Box<dyn FnOnce(&mut RunResult) + Send>;

/// Time a run of `loops` periods may take beyond them (start, stalls, the
/// skipped periods of an overrun): its series get room for this much more.
const LOOPS_SLACK_NS: u64 = 2_000_000_000;

impl RunSpec {
    /// How long the run lasts at most, when known: its duration, or (paced
    /// runs bounded by `loops`) twice the loops' periods and some slack.
    /// A run that outlasts it only makes the reporter's series grow (an
    /// allocation off the measuring path).
    pub fn expected_span_ns(&self) -> Option<u64> {
        let by_loops = match (self.control.loops, self.period_ns) {
            (Some(n), Some(p)) => Some(
                n.saturating_mul(p)
                    .saturating_mul(2)
                    .saturating_add(LOOPS_SLACK_NS),
            ),
            _ => None,
        };
        match (self.control.duration_ns, by_loops) {
            (Some(d), Some(l)) => Some(d.min(l)),
            (d, l) => d.or(l),
        }
    }

    /// A run of `benchmark` whose validated settings `config` become the
    /// result's `config`, with the engine's `setup` and the run `control`.
    /// Refuses an idle phase that leaves no load phase.
    pub fn new(
        benchmark: Benchmark,
        config: &impl Serialize,
        setup: &Setup,
        control: &RunControl,
        command_line: Vec<String>,
    ) -> Result<Self> {
        // Every missing privilege at once, before anything is measured.
        super::rt::refuse_missing(&setup.rt)?;
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
            forecast: setup.forecast,
            config: serde_json::to_value(config).unwrap_or_default(),
            tuning: setup.rt.tuning(Vec::new(), Vec::new()),
            rt: setup.rt.clone(),
            notes: Vec::new(),
            loads: Vec::new(),
            details: serde_json::Map::new(),
            load_plan: setup.loads.clone(),
            synthetic: false,
            period_ns: None,
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
    let mut result = first_result(&spec);
    let mut saver = Saver::new(spec.output.json.as_ref(), &result)?;
    let stop = StopFlag::default();
    let signals = SignalWatch::start(stop.clone()).map_err(|e| {
        Error::env(format!(
            "cannot block signals or start the signal thread: {e}"
        ))
        .because(e)
    })?;
    let metrics = match spec.control.metrics_listen {
        Some(addr) => Some(crate::metrics::Server::start(addr, &result)?),
        None => None,
    };
    let runtime = prepare(&spec, &mut channels)?;
    let crew = Crew::spawn(workers, &spec.rt, spec.synthetic, &stop, clock)?;

    // Loads start after the real-time setup and before the first sample
    // (or, with an idle phase first, when the idle phase ends).
    let mut loads = match start_loads(&spec) {
        Ok(l) => l,
        Err(e) => {
            crew.abort();
            return Err(e);
        }
    };

    let Start {
        mono,
        mono_start,
        start,
    } = start_times(&spec, clock, &mut result);
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
        if let Some(m) = &metrics {
            crate::outln!("metrics: http://{}/metrics", m.addr);
        }
    }
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
        metrics: metrics.as_ref(),
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
    result
        .notes
        .extend(ended.lost_cpus.iter().map(|l| l.note()));
    // Loads stop after the last sample.
    if let Some(l) = loads.take() {
        result.loads = l.stop();
    }
    drop(runtime);
    let caught = signals.caught();
    drop(signals);

    let elapsed = (!spec.synthetic).then(|| end_mono.saturating_sub(mono_start));
    tick(&mut channels, &mut live, elapsed, Some(0), true);
    fill_result(&mut result, &channels, spec.idle_first_ns());
    let duration_ns = if spec.synthetic {
        simulated_duration(&result, spec.control.duration_ns)
    } else {
        // From the common start to the last measuring thread's end (not when
        // the reporter, polling, noticed it), or to when the reporter stopped.
        let measured = ended
            .last_end
            .map(|end| end.saturating_sub(start))
            .unwrap_or_else(|| end_mono.saturating_sub(mono_start));
        measured_duration(&spec, &stop, &ended, measured)
    };
    result.duration_ns = Some(duration_ns);
    publish(metrics.as_ref(), &channels, &result.loads, duration_ns);
    if let Some(load) = result.phases.get_mut(1) {
        load.end_ns = duration_ns.max(load.start_ns);
    }
    let ending = Ending {
        control: &spec.control,
        forecast: &spec.forecast,
        finish: spec.finish,
    };
    let outcome = conclude(ending, &mut result, ended.brk, caught);
    crate::outfile::print(&crate::render::text::summary(&result));
    saver.save_final(&result)?;
    Ok(Finished { result, outcome })
}

/// Before the workers are spawned: the per-phase histograms and, for a real
/// run, the series' room and the real-time set-up (memory locked, heap
/// reserved for the reporter), so that nothing allocates while measuring.
fn prepare(spec: &RunSpec, channels: &mut [Channel]) -> Result<Option<Runtime>> {
    if spec.idle_first_ns().is_some() {
        // Before the memory is locked: the per-phase histograms.
        for c in channels.iter_mut() {
            c.collector.split_phases();
        }
    }
    if spec.synthetic {
        return Ok(None);
    }
    let points = spec.expected_span_ns().map_or(usize::MAX, |d| {
        usize::try_from(d / spec.control.interval_ns.max(1)).unwrap_or(usize::MAX)
    });
    let phases = if spec.idle_first_ns().is_some() { 2 } else { 1 };
    let points = points.saturating_add(2);
    for c in channels.iter_mut() {
        c.series.reserve_points(points);
    }
    let reserve = rt::reporter_heap(channels.len(), points, phases);
    Ok(Some(Runtime::setup(&spec.rt, reserve)?))
}

/// The loads that run from the start (none when an idle phase comes first:
/// the reporter starts them when it ends).
fn start_loads(spec: &RunSpec) -> Result<Option<RunningLoads>> {
    match spec
        .load_plan
        .as_ref()
        .filter(|p| p.idle_first_ns.is_none())
    {
        Some(plan) => RunningLoads::start(&plan.spec, &plan.options).map(Some),
        None => Ok(None),
    }
}

/// The common start of a run, on the workers' clock and on the reporter's.
struct Start {
    /// The reporter's clock (monotonic) and the start on it.
    mono: libc::clockid_t,
    mono_start: u64,
    /// The start on the run's clock (0 for a synthetic run).
    start: u64,
}

/// Every worker gets the same start time, a little in the future; the result
/// records it as wall-clock time.
fn start_times(spec: &RunSpec, clock: libc::clockid_t, result: &mut RunResult) -> Start {
    let delay = if spec.synthetic { 0 } else { START_DELAY_NS };
    // The reporter's clock is read at the same moment as the workers': the
    // first save (an fsync) must not shorten the recorded duration.
    let mono = Clock::Monotonic.id();
    let mono_start = sys::clock::now_ns(mono) + delay;
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
    Start {
        mono,
        mono_start,
        start,
    }
}

/// The span the periods of a real run covered. A run that reached its
/// --duration by itself covered exactly that (every period until the end is
/// a sample or a counted overrun); otherwise what was `measured`.
fn measured_duration(spec: &RunSpec, stop: &StopFlag, ended: &CrewEnd, measured: u64) -> u64 {
    match spec.control.duration_ns {
        Some(d) if spec.control.loops.is_none() && !stop.is_set() && ended.brk.is_none() => d,
        _ => measured,
    }
}

/// What the end of a run needs from its spec.
struct Ending<'a> {
    control: &'a RunControl,
    forecast: &'a crate::forecast::ForecastSettings,
    finish: Option<Finisher>,
}

/// Why the run ended, whether it crossed its thresholds, the benchmark's own
/// finishing touch, and the outcome that follows.
fn conclude(
    ending: Ending,
    result: &mut RunResult,
    brk: Option<BreakEvent>,
    caught: Option<i32>,
) -> Outcome {
    let control = ending.control;
    result.end_reason = if brk.is_some() {
        EndReason::Break
    } else if caught.is_some() {
        EndReason::Signal
    } else if control.loops.is_some() {
        EndReason::Loops
    } else {
        EndReason::Duration
    };
    result.complete = true;
    let exceeded = control
        .max_latency_ns
        .is_some_and(|m| result.total.max_ns > crate::stats::summary::signed(m));
    result.thresholds.max_latency_exceeded = exceeded;
    result.thresholds.break_event = brk;
    if let Some(finish) = ending.finish {
        finish(result);
    }
    crate::forecast::annotate(result, ending.forecast);
    let forecast_exceeded = control
        .max_forecast_ns
        .is_some_and(|m| crate::forecast::exceeds(result, m));
    result.thresholds.max_forecast_exceeded = forecast_exceeded;
    if exceeded || forecast_exceeded || result.thresholds.break_event.is_some() {
        Outcome::ThresholdExceeded
    } else {
        Outcome::Success
    }
}

/// The result as it is written before the first sample.
fn first_result(spec: &RunSpec) -> RunResult {
    let system = SystemInfo::collect();
    let mut notes = spec.notes.clone();
    notes.extend(system.emulation_note());
    RunResult {
        schema: result::SCHEMA_NAME.into(),
        schema_version: result::SCHEMA_VERSION,
        tool: Tool::this(),
        benchmark: spec.benchmark,
        label: spec.output.label.clone(),
        command_line: spec.command_line.clone(),
        start_time_utc: String::new(),
        duration_ns: Some(0),
        complete: false,
        end_reason: EndReason::Running,
        config: spec.config.clone(),
        system,
        tuning: spec.tuning.clone(),
        threads: Vec::new(),
        total: Default::default(),
        thresholds: Thresholds {
            max_latency_ns: spec.control.max_latency_ns,
            max_forecast_ns: spec.control.max_forecast_ns,
            break_threshold_ns: spec.control.break_threshold_ns,
            ..Default::default()
        },
        loads: spec.loads.clone(),
        notes,
        measuring_cpu_time_ns: 0,
        phases: Vec::new(),
        details: spec.details.clone(),
        explained: Vec::new(),
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
    metrics: Option<&'a crate::metrics::Server>,
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
        // Ticks fall a quarter interval after each interval's end, when every
        // thread with a shorter period has finished the interval.
        let lag = if spec.synthetic { 0 } else { tick_ns / 4 };
        let mut next_tick = self.mono_start + tick_ns + lag;
        let mut next_save = self.mono_start + save_ns;
        let mut load_at = match (&spec.load_plan, spec.idle_first_ns()) {
            (Some(_), Some(idle)) => self.mono_start + idle,
            _ => u64::MAX,
        };
        // What the channels hold is what they held at the last tick: a file
        // saved between ticks spans up to it, so that its samples over its
        // duration give the run's sample rate (which the forecast of a longer
        // run scales by).
        let mut collected_ns = 0;
        while !crew.all_finished() {
            let now = sys::clock::now_ns(self.mono);
            if now >= load_at {
                load_at = u64::MAX;
                self.start_loads_after_idle();
            }
            if now >= next_tick {
                let elapsed = now.saturating_sub(self.mono_start);
                collected_ns = elapsed;
                let remaining = spec.control.duration_ns.map(|d| d.saturating_sub(elapsed));
                let real = (!spec.synthetic).then_some(elapsed);
                tick(self.channels, self.live, real, remaining, false);
                if self.metrics.is_some() {
                    let loads = self.loads.as_ref().map(|l| l.records()).unwrap_or_default();
                    publish(self.metrics, self.channels, &loads, elapsed);
                }
                next_tick += tick_ns * (1 + (now - next_tick) / tick_ns);
            }
            if now >= next_save {
                self.result.duration_ns = Some(collected_ns);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::recorder;
    use crate::stats::SeriesBuilder;

    /// A paced run bounded by loops is sized from them; a duration bounds it too.
    #[test]
    fn the_expected_span_comes_from_the_duration_or_the_loops() {
        let spec = |duration_ns, loops, period_ns| {
            let control = RunControl {
                duration_ns,
                loops,
                ..RunControl::default()
            };
            let mut s = RunSpec::new(
                Benchmark::Timer,
                &0,
                &Setup::default(),
                &control,
                Vec::new(),
            )
            .expect("spec");
            s.period_ns = period_ns;
            s.expected_span_ns()
        };
        let s = 1_000_000_000;
        assert_eq!(spec(None, None, Some(1_000_000)), None);
        assert_eq!(
            spec(None, Some(1000), None),
            None,
            "loops of an unpaced run"
        );
        assert_eq!(spec(Some(5 * s), None, None), Some(5 * s));
        assert_eq!(spec(None, Some(3000), Some(1_000_000)), Some(8 * s));
        assert_eq!(spec(Some(5 * s), Some(3000), Some(1_000_000)), Some(5 * s));
        assert_eq!(spec(None, Some(u64::MAX), Some(1)), Some(u64::MAX));
    }

    /// A series kept apart from the total (a timer's IRQ-context latency beside
    /// its thread latency) is in the result's threads, not in its total.
    #[test]
    fn the_total_merges_only_the_series_in_it() {
        let mut channels = Vec::new();
        for (name, latency, in_total) in [("cpu0/irq", 1_000, false), ("cpu0/thread", 5_000, true)]
        {
            let (mut rec, col) = recorder::pair(1_000_000);
            for i in 0..10 {
                rec.record(latency + i, i * 1_000, 0);
            }
            rec.finish();
            let mut c = Channel::new(name.into(), Some(0), col, 1_000_000);
            c.in_total = in_total;
            let mut finished = Vec::new();
            c.collector.collect(&mut finished);
            channels.push(c);
        }
        fn all(c: &Collector) -> (&Totals, &Histogram) {
            (c.totals(), c.histogram())
        }
        let (threads, total) = thread_results(&channels, all, (0, u64::MAX), &mut Vec::new());
        assert_eq!(threads.len(), 2);
        drop(threads);
        assert_eq!(total.samples, 10, "only the thread series");
        assert_eq!(total.min_ns, 5_000);
        channels[0].in_total = true;
        let (_, total) = thread_results(&channels, all, (0, u64::MAX), &mut Vec::new());
        assert_eq!(total.samples, 20);
        assert_eq!(total.min_ns, 1_000);
    }

    /// A saved result's copy of a series is written whole at the first
    /// save, so that the reporter's memory does not grow by a point per
    /// interval for the whole run (other tests' memory may add to the
    /// figure, never take from it).
    #[test]
    fn a_saved_series_is_resident_from_the_first_save() {
        let mut s = SeriesBuilder::new(1000);
        s.reserve_points(usize::MAX);
        let before = sys::mem::rss_anon_kb();
        let points = s.series_in(Vec::new(), (0, u64::MAX)).points;
        let grown = sys::mem::rss_anon_kb().saturating_sub(before);
        let bytes = points.capacity() * std::mem::size_of::<SeriesPoint>();
        assert!(
            grown * 1024 >= bytes as u64 * 9 / 10,
            "{grown} kB of {bytes} bytes"
        );
    }
}
