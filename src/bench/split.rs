//! `rtlat timer --split`: each of rtlat's own user-space samples split into
//! its IRQ part (the timer's expiry → its hard handler running) and its
//! scheduling part (the handler → the thread running again), from the
//! kernel's `timer:hrtimer_start` and `timer:hrtimer_expire_entry` events
//! (any kernel with the timer tracepoints; no timerlat tracer needed).
//!
//! Each measuring thread sleeps with `clock_nanosleep(TIMER_ABSTIME)`: the
//! kernel starts an hrtimer whose soft expiry is the intended wake time, by
//! the thread's task id; its `hrtimer_expire_entry` gives the handler's
//! time. The thread hands (intended time, latency) of every sample through a
//! [`Tap`]; a reader thread (SCHED_OTHER) decodes the binary per-CPU buffers
//! of rtlat's tracefs instance and matches the two sample by sample: series
//! `cpuN/irq` (handler − intended) and `cpuN/sched` (latency − IRQ part).
//! Samples or expiries left without their pair are counted, never guessed.

use crate::engine::{Channel, StopFlag};
use crate::error::{Error, Result};
use crate::result::{BreakEvent, RunResult};
use crate::stats::recorder::{self, Recorder};
use crate::stats::tap::{Tap, TapReader};
use crate::sys::sched::{self, Sched};
use crate::sys::tracefs::Capabilities;
use crate::trace::instance::{self, tracefs_error};
use crate::trace::ringpage::{self as raw, Field, Item, Page};
use crate::trace::tracefs::{self, RawPipes, Session};
use crate::trace::{Finish, Round, Tracer, Tracing};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The figures of a split run beside its series (`details.split`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitDetails {
    /// Where the parts came from.
    pub source: String,
    /// User samples with their timer expiry found in the trace.
    pub matched: u64,
    /// User samples whose expiry the trace did not hold.
    pub unmatched_samples: u64,
    /// Expiries of the measuring threads' timers without a user sample.
    pub unmatched_expiries: u64,
    /// Samples the reader fell too far behind to read.
    pub tap_lost: u64,
    /// Matched samples whose IRQ part exceeded their latency (expected 0;
    /// the scheduling part is then 0).
    pub irq_above_total: u64,
    /// Lost-event notices of the trace buffers, and the per-CPU stats.
    pub lost_events: u64,
    pub ring_buffer_overruns: u64,
    pub dropped_events: u64,
    /// tracefs settings that could not be restored (expected none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restore_problems: Vec<String>,
}

/// The details object of a split run: `{"split": {...}}`.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Wrapped {
    split: SplitDetails,
}

impl crate::result::details::Details for Wrapped {}

/// Where the two hrtimer events' fields lie, read from their format files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HrtimerLayout {
    page: Page,
    start_id: u16,
    start_pid: Field,
    start_timer: Field,
    start_soft: Field,
    expire_id: u16,
    expire_timer: Field,
    expire_now: Field,
}

impl HrtimerLayout {
    pub fn parse(header_page: &str, start: &str, expire: &str) -> Option<HrtimerLayout> {
        Some(HrtimerLayout {
            page: Page::parse(header_page)?,
            start_id: raw::event_id(start)?,
            start_pid: raw::field(start, "common_pid")?,
            start_timer: raw::field(start, "hrtimer")?,
            start_soft: raw::field(start, "softexpires")?,
            expire_id: raw::event_id(expire)?,
            expire_timer: raw::field(expire, "hrtimer")?,
            expire_now: raw::field(expire, "now")?,
        })
    }
}

/// One decoded event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    Start { pid: i32, timer: u64, soft: u64 },
    Expire { timer: u64, now: u64 },
    Lost(u64),
}

fn decode(fmt: &HrtimerLayout, item: Item<'_>) -> Option<Ev> {
    let (ev, id) = match item {
        Item::Lost(n) => return Some(Ev::Lost(n)),
        Item::Event { data, .. } => (data, raw::type_of(data)?),
    };
    let f = |x: Field| raw::get(ev, x.offset, x.size);
    if id == fmt.start_id {
        Some(Ev::Start {
            pid: f(fmt.start_pid)? as u32 as i32,
            timer: f(fmt.start_timer)?,
            soft: f(fmt.start_soft)?,
        })
    } else if id == fmt.expire_id {
        Some(Ev::Expire {
            timer: f(fmt.expire_timer)?,
            now: f(fmt.expire_now)?,
        })
    } else {
        None
    }
}

/// What a matched sample gives: thread `k`'s sample intended at
/// `intended`, `latency` in all, of which `irq` to the handler.
pub trait Parts {
    fn part(&mut self, k: usize, intended: u64, latency: u64, irq: u64);
}

/// The most samples (or expiries) kept waiting for their pair per thread.
const WAITING: usize = 1 << 16;

/// Matches one thread's samples with its timer's expiries.
#[derive(Debug, Default)]
struct Matcher {
    /// The hrtimer the thread armed last: (its address, its soft expiry).
    armed: Option<(u64, u64)>,
    /// (intended, latency) of samples, and (intended, IRQ part) of expiries,
    /// both in time order, waiting for their pair.
    samples: VecDeque<(u64, u64)>,
    expiries: VecDeque<(u64, u64)>,
}

/// The reader's state for all threads.
pub struct Splitter {
    matchers: Vec<Matcher>,
    /// The run's start: a thread's timers before it (its set-up) are not samples'.
    start: u64,
    /// Each thread's grid: its first intended wake time and the period. The
    /// kernel also starts other timers in a thread's context (the tick's, in
    /// an interrupt or on leaving idle): only a soft expiry on the grid is
    /// the thread's own sleep.
    grids: Vec<(u64, u64)>,
    tids: Vec<Option<i32>>,
    pub details: SplitDetails,
}

impl Splitter {
    /// For threads whose first wake-ups are `firsts`, `period_ns` apart.
    pub fn new(firsts: &[u64], period_ns: u64, start: u64) -> Splitter {
        let threads = firsts.len();
        Splitter {
            matchers: (0..threads).map(|_| Matcher::default()).collect(),
            start,
            grids: firsts.iter().map(|&f| (f, period_ns.max(1))).collect(),
            tids: vec![None; threads],
            details: SplitDetails::default(),
        }
    }

    pub fn set_tid(&mut self, k: usize, tid: Option<i32>) {
        self.tids[k] = tid;
    }

    fn event(&mut self, ev: Ev) {
        match ev {
            Ev::Lost(n) => self.details.lost_events += n,
            Ev::Start { pid, timer, soft } => {
                if let Some(k) = self.tids.iter().position(|&t| t == Some(pid)) {
                    let (first, period) = self.grids[k];
                    if soft >= first && (soft - first) % period == 0 {
                        self.matchers[k].armed = Some((timer, soft));
                    }
                }
            }
            Ev::Expire { timer, now } => {
                let hit = self
                    .matchers
                    .iter_mut()
                    .find(|m| m.armed.is_some_and(|(t, _)| t == timer));
                if let Some(m) = hit {
                    if let Some((_, soft)) = m.armed.take().filter(|&(_, s)| s >= self.start) {
                        m.expiries.push_back((soft, now.saturating_sub(soft)));
                        if m.expiries.len() > WAITING {
                            m.expiries.pop_front();
                            self.details.unmatched_expiries += 1;
                        }
                    }
                }
            }
        }
    }

    /// A user sample of thread `k`.
    pub fn sample(&mut self, k: usize, intended: u64, latency: u64) {
        let m = &mut self.matchers[k];
        m.samples.push_back((intended, latency));
        if m.samples.len() > WAITING {
            m.samples.pop_front();
            self.details.unmatched_samples += 1;
        }
    }

    /// Pair what can be paired: a sample and an expiry of the same intended
    /// time match; the earlier of two different ones has no pair (both
    /// streams are in time order).
    pub fn pair(&mut self, out: &mut impl Parts) {
        for (k, m) in self.matchers.iter_mut().enumerate() {
            while let (Some(&(si, lat)), Some(&(ei, irq))) = (m.samples.front(), m.expiries.front())
            {
                if si == ei {
                    if irq > lat {
                        self.details.irq_above_total += 1;
                    }
                    out.part(k, si, lat, irq.min(lat));
                    self.details.matched += 1;
                    m.samples.pop_front();
                    m.expiries.pop_front();
                } else if si < ei {
                    self.details.unmatched_samples += 1;
                    m.samples.pop_front();
                } else {
                    self.details.unmatched_expiries += 1;
                    m.expiries.pop_front();
                }
            }
        }
    }

    /// Whether the trace has reached every waiting sample.
    fn caught_up(&self) -> bool {
        self.matchers.iter().all(|m| m.samples.is_empty())
    }

    /// The end: whatever still waits has no pair.
    pub fn finish(&mut self) {
        for m in &mut self.matchers {
            self.details.unmatched_samples += m.samples.len() as u64;
            self.details.unmatched_expiries += m.expiries.len() as u64;
            m.samples.clear();
            m.expiries.clear();
        }
    }
}

/// The parts' recorders: `cpuN/irq` and `cpuN/sched` of each thread.
struct Recorders {
    recs: Vec<Recorder>,
    start: u64,
}

impl Parts for Recorders {
    fn part(&mut self, k: usize, intended: u64, latency: u64, irq: u64) {
        let at = (intended + latency).saturating_sub(self.start);
        self.recs[2 * k].record(irq, at, 0);
        self.recs[2 * k + 1].record(latency - irq, at, 0);
    }
}

/// A `--split` run's tracing, from its set-up to its restore.
pub struct Split {
    session: Session,
    instance: PathBuf,
    pipes: RawPipes,
    format: HrtimerLayout,
    cpus: Vec<usize>,
    pub taps: Vec<Arc<Tap>>,
    recs: Vec<Recorder>,
    pub notes: Vec<String>,
}

/// Why this system cannot split samples, as the one-line error naming the fix.
pub fn refuse(caps: &Capabilities) -> Option<Error> {
    match &caps.root {
        None => Some(Error::env(
            "--split needs tracefs (/sys/kernel/tracing), which is not mounted or not readable: run as root",
        )),
        Some(root) if !caps.hrtimer_events => Some(Error::env(format!(
            "--split needs the timer:hrtimer_start and timer:hrtimer_expire_entry trace events, which {} does not have: use a kernel built with CONFIG_FTRACE (every distribution kernel has them)",
            root.join("events/timer").display()
        ))),
        Some(_) => None,
    }
}

impl Split {
    /// Set up tracing for threads on `cpus` sleeping `period_ns` apart.
    pub fn begin(cpus: &[usize], period_ns: u64) -> Result<Split> {
        let caps = Capabilities::probe_or_mount();
        if let Some(e) = refuse(&caps) {
            return Err(e);
        }
        let root = caps.root.clone().unwrap_or_default();
        let read = |rel: &str| tracefs::read(&root, rel).unwrap_or_default();
        let format = HrtimerLayout::parse(
            &read("events/header_page"),
            &read("events/timer/hrtimer_start/format"),
            &read("events/timer/hrtimer_expire_entry/format"),
        )
        .ok_or_else(|| {
            Error::env(format!(
                "--split cannot read the layout of the hrtimer events from {}/events/timer/*/format and events/header_page",
                root.display()
            ))
        })?;
        let (mut session, mut notes) =
            Session::begin(&root, tracefs::Uses::Instances).map_err(Error::env)?;
        let (inst, name) = instance::open(
            &mut session,
            &root,
            &[
                ("events/timer/hrtimer_start/enable", "1"),
                ("events/timer/hrtimer_expire_entry/enable", "1"),
            ],
            &mut notes,
        )?;
        // Every CPU's buffer: a timer may expire on another CPU than the
        // measuring thread's.
        let online = crate::sysinfo::online_cpus();
        let pipes =
            RawPipes::open(&inst, &online).map_err(|e| tracefs_error("open trace_pipe_raw", e))?;
        notes.push(format!(
            "--split: each sample's IRQ part (cpuN/irq: the timer's expiry to its hard handler) and scheduling part (cpuN/sched: the handler to the thread running) from the timer:hrtimer_start/hrtimer_expire_entry events in tracefs instance {name}; its reader thread (SCHED_OTHER) is in the CPU time"
        ));
        let per_thread = crate::stats::tap::room(Some(period_ns));
        Ok(Split {
            session,
            instance: inst,
            pipes,
            format,
            cpus: online,
            taps: cpus
                .iter()
                .map(|_| Arc::new(Tap::new(per_thread)))
                .collect(),
            recs: Vec::new(),
            notes,
        })
    }

    /// The two part series of the thread named `name` on `cpu`.
    pub fn channels(&mut self, name: &str, cpu: Option<usize>, interval_ns: u64) -> [Channel; 2] {
        ["irq", "sched"].map(|part| {
            let (rec, col) = recorder::pair(interval_ns);
            self.recs.push(rec);
            let mut c = Channel::new(format!("{name}/{part}"), cpu, col, interval_ns);
            // Parts of the user samples, which the total already holds.
            c.in_total = false;
            c
        })
    }

    /// The index of the thread whose [`Self::channels`] came last: its tap.
    pub fn watched(&self) -> usize {
        (self.recs.len() / 2).saturating_sub(1)
    }

    /// The reader among `tracing`'s (threads `period_ns` apart, their
    /// first wake-ups `phases` after the start), the session kept until
    /// the run's end.
    pub fn add_to(self, tracing: &mut Tracing, period_ns: u64, phases: Vec<u64>) {
        let Split {
            session,
            instance,
            pipes,
            format,
            cpus,
            taps,
            recs,
            ..
        } = self;
        tracing.keep(session);
        tracing.add(Box::new(Reader {
            sp: Splitter::new(&[], period_ns, 0),
            readers: taps.iter().map(|_| TapReader::default()).collect(),
            parts: Recorders { recs, start: 0 },
            taps,
            pipes,
            format,
            cpus,
            instance,
            phases,
            period_ns,
            events: Vec::with_capacity(1 << 14),
            ended_at: None,
            read_error: None,
        }));
    }
}

/// `--split`'s reader thread.
struct Reader {
    sp: Splitter,
    taps: Vec<Arc<Tap>>,
    readers: Vec<TapReader>,
    parts: Recorders,
    pipes: RawPipes,
    format: HrtimerLayout,
    cpus: Vec<usize>,
    instance: PathBuf,
    phases: Vec<u64>,
    period_ns: u64,
    /// A round's events of every CPU, put in time order.
    events: Vec<(u64, Ev)>,
    /// When the taps were all closed (the run's end).
    ended_at: Option<u64>,
    read_error: Option<String>,
}

impl Reader {
    /// Every CPU's waiting pages into `events`, a few per CPU per round.
    fn read_pages(&mut self) {
        self.events.clear();
        let format = &self.format;
        let got = crate::trace::read_pages(
            &mut self.pipes,
            &format.page,
            64,
            |_, item| decode(format, item),
            &mut self.events,
        );
        if let Err(e) = got {
            self.read_error = Some(e.to_string());
        }
    }
}

impl Tracer for Reader {
    fn name(&self) -> String {
        "rtlat-split".into()
    }

    fn begin(&mut self, start: u64) {
        // The reader must not compete with the threads it watches.
        let _ = sched::set_current(Sched::Other);
        let firsts: Vec<u64> = self.phases.iter().map(|p| start + p).collect();
        self.sp = Splitter::new(&firsts, self.period_ns, start);
        self.parts.start = start;
    }

    fn round(&mut self, now: u64, _stop: &StopFlag) -> Round {
        let closed = self.taps.iter().all(|t| t.is_closed());
        for (k, t) in self.taps.iter().enumerate() {
            self.sp.set_tid(k, t.writer());
            let sp = &mut self.sp;
            t.drain(&mut self.readers[k], |i, l| sp.sample(k, i, l));
        }
        // A thread's first timer is in the trace only once its task id is
        // known here: wait for every thread to start.
        if !closed
            && self
                .taps
                .iter()
                .any(|t| t.writer().is_none() && !t.is_closed())
        {
            return Round::Pause(Duration::from_millis(1));
        }
        // Every CPU's pages, then their events in time order: a timer can
        // expire on another CPU than the one it was started on.
        self.read_pages();
        let busy = !self.events.is_empty();
        self.events.sort_by_key(|&(ts, _)| ts);
        for &(_, ev) in &self.events {
            self.sp.event(ev);
        }
        self.sp.pair(&mut self.parts);
        if self.read_error.is_some() {
            return Round::Done;
        }
        if closed {
            // After the last sample, read until the trace has reached every
            // sample, at most 1 s.
            let since = *self.ended_at.get_or_insert(now);
            if self.sp.caught_up() || now.saturating_sub(since) > 1_000_000_000 {
                return Round::Done;
            }
        }
        if busy {
            Round::More
        } else {
            Round::Pause(Duration::from_millis(50))
        }
    }

    fn end(mut self: Box<Self>) -> (Option<BreakEvent>, Finish) {
        self.sp.finish();
        for r in &mut self.parts.recs {
            r.finish();
        }
        let sp = std::mem::replace(&mut self.sp, Splitter::new(&[], 1, 0));
        let d = reader_details(
            sp.details,
            &self.readers,
            &self.cpus,
            &self.instance,
            self.read_error.take(),
        );
        (None, finisher(d))
    }
}

/// The reader's details at its end: the samples the taps lost, what the
/// trace's buffers lost, and a read error.
fn reader_details(
    mut d: SplitDetails,
    readers: &[TapReader],
    cpus: &[usize],
    instance: &Path,
    read_error: Option<String>,
) -> SplitDetails {
    d.tap_lost = readers.iter().map(|r| r.lost).sum();
    d.unmatched_samples += d.tap_lost;
    for &c in cpus {
        let (o, dropped) = tracefs::cpu_losses(instance, c);
        d.ring_buffer_overruns += o;
        d.dropped_events += dropped;
    }
    if let Some(e) = read_error {
        d.restore_problems
            .push(format!("reading trace_pipe_raw failed: {e}"));
    }
    d
}

/// At the end of the run: the reader's details into the result, with the
/// problems restoring tracefs met, and a note when many samples missed
/// their expiry.
fn finisher(mut d: SplitDetails) -> Finish {
    Box::new(move |result: &mut RunResult, problems: &[String]| {
        d.source = "timer:hrtimer_start and timer:hrtimer_expire_entry events, the binary per-CPU trace_pipe_raw buffers of rtlat's tracefs instance".into();
        d.restore_problems.extend_from_slice(problems);
        let all = d.matched + d.unmatched_samples;
        if all > 0 && d.unmatched_samples * 100 > all {
            result.notes.push(format!(
                "--split: {} of {all} samples without their timer expiry in the trace ({} lost by the reader, {} trace events lost)",
                d.unmatched_samples, d.tap_lost, d.lost_events
            ));
        }
        let w = Wrapped { split: d };
        result
            .details
            .extend(crate::result::details::Details::to_map(&w));
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Got(Vec<(usize, u64, u64, u64)>);
    impl Parts for Got {
        fn part(&mut self, k: usize, intended: u64, latency: u64, irq: u64) {
            self.0.push((k, intended, latency, irq));
        }
    }

    #[test]
    fn samples_and_expiries_match_by_intended_time_and_the_rest_is_counted() {
        // Thread 0's grid: 1000 + k·1000; thread 1's: 1500 + k·1000.
        let mut sp = Splitter::new(&[1000, 1500], 1000, 500);
        sp.set_tid(0, Some(100));
        sp.set_tid(1, Some(200));
        let start = |pid, timer, soft| Ev::Start { pid, timer, soft };
        let expire = |timer, now| Ev::Expire { timer, now };
        // Thread 0: expiries at 1000 (+3) and 3000 (+4); its sample at 2000
        // has no expiry (a lost event), the one at 1000 arrives late.
        sp.event(start(100, 0xa, 1000));
        sp.event(start(999, 0xa, 1000)); // another task: ignored
        sp.event(start(100, 0xd, 1234)); // the tick's timer, off the grid: ignored
        sp.event(expire(0xd, 1240));
        sp.event(expire(0xa, 1003));
        sp.event(expire(0xb, 1500)); // not a measuring thread's timer
        sp.event(start(100, 0xa, 3000));
        sp.event(expire(0xa, 3004));
        // Thread 1: a timer of its set-up, before the run's start: not a
        // sample's; then an expiry whose IRQ part exceeds the sample's latency.
        sp.event(start(200, 0xc, 400));
        sp.event(expire(0xc, 401));
        sp.event(start(200, 0xc, 1500));
        sp.event(expire(0xc, 1520));
        let mut got = Got::default();
        sp.pair(&mut got);
        assert!(got.0.is_empty(), "nothing pairs before the samples");
        sp.sample(0, 1000, 10);
        sp.sample(0, 2000, 11);
        sp.sample(0, 3000, 12);
        sp.sample(1, 1500, 15);
        sp.pair(&mut got);
        assert_eq!(
            got.0,
            vec![(0, 1000, 10, 3), (0, 3000, 12, 4), (1, 1500, 15, 15)]
        );
        assert_eq!(sp.details.matched, 3);
        assert_eq!(sp.details.unmatched_samples, 1);
        assert_eq!(sp.details.irq_above_total, 1);
        // A sample the trace has not reached yet waits; at the end it counts.
        sp.sample(1, 2500, 9);
        sp.pair(&mut got);
        assert!(!sp.caught_up());
        sp.event(Ev::Lost(5));
        sp.finish();
        assert_eq!(sp.details.unmatched_samples, 2);
        assert_eq!(sp.details.lost_events, 5);
        assert_eq!(sp.details.unmatched_expiries, 0);
    }

    /// Debian 12's 6.1 generic files; the host's 6.18 adds `was_armed`.
    const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";
    const START: &str = "name: hrtimer_start\nID: 460\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:void * function;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:s64 expires;\toffset:24;\tsize:8;\tsigned:1;\n\tfield:s64 softexpires;\toffset:32;\tsize:8;\tsigned:1;\n\tfield:enum hrtimer_mode mode;\toffset:40;\tsize:4;\tsigned:0;\n";
    const EXPIRE: &str = "name: hrtimer_expire_entry\nID: 459\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:s64 now;\toffset:16;\tsize:8;\tsigned:1;\n\tfield:void * function;\toffset:24;\tsize:8;\tsigned:0;\n";

    #[test]
    fn events_decode_from_the_format_files() {
        let f = HrtimerLayout::parse(HEADER_PAGE, START, EXPIRE).expect("format");
        assert_eq!((f.start_id, f.expire_id), (460, 459));
        let mut ev = vec![0u8; 48];
        ev[0..2].copy_from_slice(&460u16.to_ne_bytes());
        ev[4..8].copy_from_slice(&4242i32.to_ne_bytes());
        ev[8..16].copy_from_slice(&0xdeadu64.to_ne_bytes());
        ev[32..40].copy_from_slice(&77_000u64.to_ne_bytes());
        assert_eq!(
            decode(
                &f,
                Item::Event {
                    ts_ns: 1,
                    data: &ev
                }
            ),
            Some(Ev::Start {
                pid: 4242,
                timer: 0xdead,
                soft: 77_000
            })
        );
        let mut ex = vec![0u8; 32];
        ex[0..2].copy_from_slice(&459u16.to_ne_bytes());
        ex[8..16].copy_from_slice(&0xdeadu64.to_ne_bytes());
        ex[16..24].copy_from_slice(&77_123u64.to_ne_bytes());
        assert_eq!(
            decode(
                &f,
                Item::Event {
                    ts_ns: 2,
                    data: &ex
                }
            ),
            Some(Ev::Expire {
                timer: 0xdead,
                now: 77_123
            })
        );
        // Another event's type (either byte order): not ours.
        ex[0..2].copy_from_slice(&1u16.to_ne_bytes());
        assert_eq!(
            decode(
                &f,
                Item::Event {
                    ts_ns: 3,
                    data: &ex
                }
            ),
            None
        );
        assert_eq!(
            decode(
                &f,
                Item::Event {
                    ts_ns: 3,
                    data: &ex[..1]
                }
            ),
            None
        );
        assert!(HrtimerLayout::parse(HEADER_PAGE, START, "name: x\n").is_none());
    }
}
