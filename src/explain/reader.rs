//! The `--explain` reader ([`super::setup`] sets the tracing up): a
//! SCHED_OTHER thread that takes the measuring threads' intervals from
//! their taps and explains the worst of each thread (and every one above
//! the break threshold) as soon as the trace has passed its end. The trace
//! is read on demand: the kernel keeps each CPU's events in its buffer
//! (overwrite mode), and the reader reads it only while an interval waits
//! to be explained, decoding from a margin before that interval on
//! ([`crate::trace::window`]); the noise totals, which attribute every interval,
//! read it all along. Memory is bounded: rings of a fixed number of
//! events, trimmed to what a coming interval can still need.

use super::attribute::{attribute_heard, runtime_steal, Interval, NOT_READ, OVERWRITTEN};
use super::best::Best;
pub use super::details::ExplainDetails;
use super::events::{Decoder, Ev, RUNTIME};
use super::pace::{self, RoundPace, MARGIN_NS};
use super::steal::{Steal, TICK_NS};
use super::timeline::Ring;
use super::together::{Due, Witness};
use crate::result::totals::CpuTotals;
use crate::result::Explained;
use crate::stats::tap::Tap;
use crate::stats::tap::TapReader;
use crate::trace::ringpage::{self, walk_page, Item};
use crate::trace::window::{self, From};
use crate::trace::Pages;
use crate::trace::Round;
use std::collections::VecDeque;
use std::sync::Arc;

/// Events kept per CPU (32 bytes each).
const RING_EVENTS: usize = 1 << 15;
/// Intervals waiting for the trace per thread, at most.
const WAITING: usize = 1 << 14;
/// Intervals above the break threshold explained, at most.
const BREAKS: usize = 100;
/// Events a page of the kernel's buffer holds, at most: its 4080 bytes of
/// data over the smallest event recorded (a 4-byte header, the 8 bytes
/// every event has, a 4-byte field).
const PAGE_EVENTS: usize = 255;
/// Pages read from a CPU's buffer per round, at most: no more events than
/// half a ring holds, so that a round never pushes out the events of an
/// interval that began in the round before (it is explained once the
/// trace passes its end, after the round). A backlog is read in rounds
/// back to back.
const PAGES: usize = RING_EVENTS / 2 / PAGE_EVENTS;
/// Pages read per round from a CPU that is not measured, whose wake-ups
/// of the measuring threads are kept and nothing else.
const REMOTE_PAGES: usize = 256;
/// How long an interval waits for the trace to pass its end, from its end
/// or from when the reader took it, whichever is later.
const PATIENCE_NS: u64 = 200_000_000;
/// Other measuring CPUs heard on a long interval, at most: enough to tell
/// a stop of the whole machine from one CPU's, few enough that the cost
/// does not grow with the machine.
const WITNESSES: usize = 3;
/// A busy loop's latest stalls kept per thread, at most, for the
/// witnesses.
const STALLS: usize = 4096;

/// Where the earliest interval the threads on `cpu` may still explain
/// begins: the first waiting, else the end of the last taken (`None`: no
/// thread there).
fn needed_from(watches: &[Watch], threads: &[Thread], cpu: usize) -> Option<u64> {
    watches
        .iter()
        .zip(threads)
        .filter(|(w, _)| w.cpu == cpu)
        .map(|(_, t)| t.waiting.front().map_or(t.frontier, |w| w.0))
        .min()
}

/// A measuring thread watched: its series name, CPU and tap, and its
/// period when it has one (its CPU then records an event every period).
pub(super) struct Watch {
    pub name: String,
    pub cpu: usize,
    pub tap: Arc<Tap>,
    pub period_ns: Option<u64>,
}

/// One watched thread's progress in the reader.
#[derive(Default)]
struct Thread {
    reader: TapReader,
    /// Candidate intervals (start, latency, when the reader took them,
    /// whose) waiting for the trace.
    waiting: VecDeque<(u64, u64, u64, i32)>,
    /// The end of the latest interval taken: no later interval starts
    /// before it.
    frontier: u64,
    /// Its worst intervals explained.
    best: Best,
    /// When every interval is attributed: its latest intervals (start,
    /// end), its busy loop's stalls as a witness of other CPUs'.
    stalls: Vec<(u64, u64)>,
}

pub(super) struct TraceReader {
    pipes: Box<dyn Pages>,
    dec: Decoder,
    cpus: Vec<usize>,
    rings: Vec<Ring>,
    steal: Steal,
    /// The scheduler's accounting is traced: it gives an interval's steal
    /// ([`runtime_steal`]), and /proc/stat, whose generation costs the
    /// reader more than anything else it does in a quiet round, is read
    /// once.
    by_runtime: bool,
    watches: Vec<Watch>,
    threads: Vec<Thread>,
    breaks: Vec<Explained>,
    worst: usize,
    threshold: u64,
    own: &'static str,
    pending: Option<&'static str>,
    /// The wake-ups traced on other CPUs; the watched threads' wake-ups,
    /// wherever traced: (time, pid, kernel priority).
    pub(super) remote: Option<Box<dyn Pages>>,
    woken: VecDeque<(u64, i32, i32)>,
    start: u64,
    details: ExplainDetails,
    read_error: Option<String>,
    /// The watched threads may be woken by another measuring CPU (`switch
    /// --placement cross`): every measuring CPU's trace is read while an
    /// interval waits. Otherwise only the CPUs where one waits are read.
    pub(super) across: bool,
    /// When the taps were all closed (the run's end), on CLOCK_MONOTONIC.
    ended_at: Option<u64>,
    /// When the rounds were and what they read: the next pause.
    pace: RoundPace,
    /// Per CPU (as `cpus`) when every interval is attributed; else empty.
    pub(super) totals: Vec<CpuTotals>,
    /// A page held while reading from a point on ([`window::read_from`]).
    held: Vec<u8>,
    /// Per CPU (as `cpus`), the gap in its events that means it did not
    /// run: two periods of its measuring thread (`None`: none periodic).
    gaps: Vec<Option<u64>>,
}

impl TraceReader {
    pub(super) fn new(
        pipes: Box<dyn Pages>,
        dec: Decoder,
        cpus: Vec<usize>,
        watches: Vec<Watch>,
        (worst, threshold, own, pending): (usize, Option<u64>, &'static str, Option<&'static str>),
    ) -> TraceReader {
        let start = 0;
        let details = ExplainDetails {
            events: dec.enabled.clone(),
            missing: dec.missing.clone(),
            monotonic_start_ns: start,
            ..ExplainDetails::default()
        };
        TraceReader {
            rings: cpus.iter().map(|_| Ring::new(RING_EVENTS)).collect(),
            steal: Steal::new(&cpus),
            by_runtime: dec.enabled.iter().any(|e| e == RUNTIME),
            threads: watches.iter().map(|_| Thread::default()).collect(),
            pipes,
            dec,
            cpus,
            watches,
            breaks: Vec::new(),
            worst,
            threshold: threshold.unwrap_or(u64::MAX),
            own,
            pending,
            remote: None,
            woken: VecDeque::new(),
            start,
            details,
            read_error: None,
            across: false,
            ended_at: None,
            pace: RoundPace::new(start),
            totals: Vec::new(),
            held: Vec::with_capacity(rustix::param::page_size()),
            gaps: Vec::new(),
        }
        .with_gaps()
    }

    fn with_gaps(mut self) -> TraceReader {
        self.gaps = self
            .cpus
            .iter()
            .map(|&c| {
                let periods = self.watches.iter().filter(|w| w.cpu == c);
                periods.filter_map(|w| w.period_ns).max().map(|p| 2 * p)
            })
            .collect();
        self
    }

    /// The rings heard as witnesses of the `ci`th CPU's intervals: up to
    /// [`WITNESSES`] other CPUs with a periodic thread (or, when every
    /// interval is attributed, a busy loop), the next ones in order.
    fn witnesses_of(&self, ci: usize) -> impl Iterator<Item = usize> + '_ {
        let n = self.cpus.len();
        (1..n)
            .map(move |k| (ci + k) % n)
            .filter(|&j| self.gaps[j].is_some() || self.every())
            .take(WITNESSES)
    }

    /// What tells that the `j`th CPU did not run, for an interval of
    /// `lat`: a gap of two periods, or its loop's stalls.
    fn due_of(&self, j: usize, lat: u64) -> Option<Due<'_>> {
        if let Some(g) = self.gaps[j] {
            return (lat >= g).then_some(Due::Gap(g));
        }
        let cpu = self.cpus[j];
        let k = self.watches.iter().position(|w| w.cpu == cpu)?;
        Some(Due::Stalls(&self.threads[k].stalls))
    }

    /// Where the `i`th CPU's trace (and its loop's stalls) is wanted from
    /// as a witness: the start of the earliest interval waiting on a CPU it
    /// witnesses, long enough for its silence to say something.
    fn heard_from(&self, i: usize) -> Option<u64> {
        let gap = match self.gaps[i] {
            Some(g) => g,
            // A busy loop's stalls witness any interval.
            None if self.every() => 0,
            None => return None,
        };
        (0..self.cpus.len())
            .filter(|&ci| ci != i && self.witnesses_of(ci).any(|j| j == i))
            .flat_map(|ci| {
                let cpu = self.cpus[ci];
                self.watches
                    .iter()
                    .zip(&self.threads)
                    .filter(move |(w, _)| w.cpu == cpu)
                    .filter_map(move |(_, t)| t.waiting.iter().find(|w| w.1 >= gap))
                    .map(|w| w.0)
            })
            .min()
    }

    /// Where the `i`th CPU's events may still be needed from: its own
    /// threads' intervals, or those it witnesses.
    fn needed(&self, i: usize) -> Option<u64> {
        let own = needed_from(&self.watches, &self.threads, self.cpus[i]);
        match (own, self.heard_from(i)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// One round of the reader ([`crate::trace::Tracer::round`]): the
    /// intervals the taps handed over, the trace read where they want it,
    /// those ready explained.
    pub(super) fn round(&mut self, now: u64) -> Round {
        let closed = self.watches.iter().all(|w| w.tap.is_closed());
        let taken = self.take_intervals(now);
        // Read on demand: the kernel keeps its buffers (overwrite mode)
        // until an interval wants explaining; every interval when all are
        // attributed.
        let wanted = self.every() || self.threads.iter().any(|t| !t.waiting.is_empty());
        let (backlog, pages) = if wanted {
            let got = self.read_trace(now);
            self.read_remote();
            self.pace.read(now, got);
            got
        } else {
            (false, 0)
        };
        if !self.by_runtime {
            self.steal.sample(now);
        }
        self.explain_ready(now);
        self.trim();
        if self.read_error.is_some() {
            return Round::Done;
        }
        if closed {
            let since = *self.ended_at.get_or_insert(now);
            let waiting = self.threads.iter().any(|t| !t.waiting.is_empty());
            if !waiting || now.saturating_sub(since) > 2 * PATIENCE_NS {
                return Round::Done;
            }
        }
        if backlog {
            self.pace.round(now);
            return Round::More;
        }
        let quiet = !self.every()
            && taken.is_none_or(|(n, _)| n == 0)
            && self.threads.iter().all(|t| t.waiting.is_empty());
        let pause = self.pace.pause(now, quiet, self.every(), pages, taken);
        Round::Pause(std::time::Duration::from_millis(pause))
    }

    /// The run started at `start` (CLOCK_MONOTONIC): cases are placed
    /// from there.
    pub(super) fn started(&mut self, start: u64) {
        self.start = start;
        self.pace = RoundPace::new(start);
        // Whether the machine counts steal at all, said in the result.
        self.steal.sample(start);
        self.details.monotonic_start_ns = start;
    }

    /// Every interval is attributed (the noise totals): the trace is read
    /// all along.
    fn every(&self) -> bool {
        !self.totals.is_empty()
    }

    /// Where the trace of the `i`th CPU is wanted from: a margin before
    /// the earliest interval it may still explain (`None`: from wherever
    /// its ring ends, when every interval is attributed or the ring
    /// reaches that point).
    fn wanted_from(&self, i: usize) -> Option<u64> {
        if self.every() {
            return None;
        }
        let first = self.needed(i)?;
        let from = first.saturating_sub(MARGIN_NS);
        let reached = self.rings[i].span().is_some_and(|(_, last)| last >= from);
        (!reached).then_some(from)
    }

    /// Whether the `i`th CPU's trace is left unread this round: threads
    /// are watched there and no interval of theirs waits (nor, with
    /// `across`, of any thread). Its kernel buffer keeps the events
    /// (overwrite mode) for an interval to come, read from a margin before
    /// it.
    fn unwanted(&self, i: usize) -> bool {
        let cpu = self.cpus[i];
        let mut pairs = self.watches.iter().zip(&self.threads);
        let watched = self.watches.iter().any(|w| w.cpu == cpu);
        let waits = pairs.any(|(w, t)| (self.across || w.cpu == cpu) && !t.waiting.is_empty());
        !self.every() && watched && !waits && self.heard_from(i).is_none()
    }

    /// Every CPU's pages into its ring, from where it is wanted
    /// ([`Self::wanted_from`]); whether more were waiting than a round
    /// reads, and the most pages one CPU had.
    fn read_trace(&mut self, now: u64) -> (bool, u64) {
        let mut backlog = false;
        let mut most = 0;
        let Some(page_fmt) = self.dec.page else {
            return (false, 0);
        };
        let tids = self.tids();
        let mut woke: Vec<(u64, i32, i32)> = Vec::new();
        for i in 0..self.pipes.len() {
            if self.unwanted(i) {
                continue;
            }
            let from = self.wanted_from(i);
            let (dec, ring, lost) = (
                &mut self.dec,
                &mut self.rings[i],
                &mut self.details.lost_events,
            );
            let got = window::read_from(
                &mut *self.pipes,
                i,
                &page_fmt,
                from,
                PAGES,
                &mut self.held,
                |page, at| {
                    let count_lost = match at {
                        From::Next => true,
                        From::Fresh { lost_matters } => {
                            ring.forget();
                            lost_matters
                        }
                    };
                    walk_page(&page_fmt, page, |item| {
                        let ts = match item {
                            Item::Event { ts_ns, .. } => ts_ns,
                            Item::Lost(_) if !count_lost => return,
                            Item::Lost(_) => ring.span().map_or(0, |s| s.1),
                        };
                        if let Some(ev) = dec.decode(&item) {
                            match ev {
                                Ev::Lost(n) => *lost += n,
                                Ev::Stack(pid) => {
                                    ring.push_stack(ts, pid, &dec.frames);
                                    return;
                                }
                                // Another measuring CPU's thread woken here.
                                Ev::Wakeup { pid, prio } if tids.contains(&pid) => {
                                    woke.push((ts, pid, prio));
                                }
                                _ => {}
                            }
                            match item {
                                Item::Event { data, .. } => match ringpage::task_of(data) {
                                    Some(task) => ring.push_by(ts, task, ev, |p| dec.prio_of(p)),
                                    None => ring.push(ts, ev),
                                },
                                Item::Lost(_) => ring.push(ts, ev),
                            }
                        }
                    });
                },
            );
            match got {
                Ok(r) => {
                    if r.pages < PAGES {
                        // Emptied: every event before the round began is read.
                        self.rings[i].read_to = now;
                    }
                    backlog |= r.pages == PAGES;
                    most = most.max(r.pages as u64);
                    self.details.pages_skipped += r.skipped as u64;
                }
                Err(e) => {
                    self.read_error = Some(e.to_string());
                    break;
                }
            }
        }
        self.note_wakeups(woke);
        (backlog, most)
    }

    /// The watched threads' ids (known once they run).
    pub(super) fn tids(&self) -> Vec<i32> {
        self.watches.iter().filter_map(|w| w.tap.writer()).collect()
    }

    /// Wake-ups of the watched threads, into the time-ordered list the
    /// intervals take theirs from (wherever the wake-up was traced).
    fn note_wakeups(&mut self, mut got: Vec<(u64, i32, i32)>) {
        got.sort_unstable();
        for w in got {
            let at = self.woken.partition_point(|x| x.0 <= w.0);
            self.woken.insert(at, w);
        }
        while self.woken.len() > RING_EVENTS {
            self.woken.pop_front();
        }
    }

    /// The wake-ups of the watched threads that the other CPUs traced,
    /// from where the earliest CPU's trace is wanted: older pages would
    /// bring back the names of tasks since gone (a task's comm is the
    /// latest its events gave).
    fn read_remote(&mut self) {
        let from = if self.every() {
            None
        } else {
            (0..self.cpus.len())
                .filter(|&i| !self.unwanted(i))
                .map(|i| self.wanted_from(i))
                .min()
                .flatten()
        };
        let (Some(pipes), Some(page_fmt)) = (&mut self.remote, self.dec.page) else {
            return;
        };
        let tids = self
            .watches
            .iter()
            .filter_map(|w| w.tap.writer())
            .collect::<Vec<_>>();
        let mut got: Vec<(u64, i32, i32)> = Vec::new();
        for i in 0..pipes.len() {
            let dec = &mut self.dec;
            let read = window::read_from(
                &mut **pipes,
                i,
                &page_fmt,
                from,
                REMOTE_PAGES,
                &mut self.held,
                |page, _| {
                    walk_page(&page_fmt, page, |item| {
                        if let Item::Event { ts_ns, .. } = item {
                            match dec.decode(&item) {
                                Some(Ev::Wakeup { pid, prio }) if tids.contains(&pid) => {
                                    got.push((ts_ns, pid, prio));
                                }
                                _ => {}
                            }
                        }
                    });
                },
            );
            if let Err(e) = read {
                self.read_error = Some(e.to_string());
                break;
            }
        }
        self.note_wakeups(got);
    }

    /// The taps' new intervals: the candidates wait for the trace.
    /// The intervals of the thread that had the most for its room, and that
    /// room (see [`pace::ROUND_SHARE`]).
    fn take_intervals(&mut self, now: u64) -> Option<(u64, u64)> {
        let mut busiest: Option<(u64, u64)> = None;
        for (w, t) in self.watches.iter().zip(&mut self.threads) {
            let before = self.details.intervals;
            let (worst, threshold) = (self.worst, self.threshold);
            let n = &mut self.details.intervals;
            let ci = self.cpus.iter().position(|&c| c == w.cpu);
            let mut total = ci.and_then(|i| self.totals.get_mut(i));
            // The threads of a tap that names them are chosen by its writer.
            let chosen = w.tap.names_threads();
            w.tap.drain_of(&mut t.reader, |s, lat, tid| {
                *n += 1;
                t.frontier = t.frontier.max(s + lat);
                let floor = if chosen || t.best.len() + t.waiting.len() < worst {
                    0
                } else {
                    t.best.least()
                };
                if total.is_some() {
                    if t.stalls.len() == STALLS {
                        t.stalls.drain(..STALLS / 2);
                    }
                    t.stalls.push((s, s + lat));
                }
                let wanted = total.is_some() || lat > floor || lat > threshold;
                if wanted && t.waiting.len() < WAITING {
                    t.waiting.push_back((s, lat, now, tid));
                } else if let Some(c) = total.as_deref_mut() {
                    c.skip(lat);
                }
            });
            // Once its worst are known, the thread need hand over only what
            // could be among them or above the break threshold: the cost
            // of the rest is a compare in the thread, none here.
            if total.is_none() && !chosen && t.best.len() >= worst {
                let floor = t.best.least();
                w.tap.set_floor(floor.min(threshold).saturating_add(1));
            }
            let n = self.details.intervals - before;
            let mut room = w.tap.capacity();
            if !self.totals.is_empty() {
                room = room.min(WAITING);
            }
            let room = (room / pace::ROUND_SHARE) as u64;
            if busiest.is_none_or(|(bn, br)| n * br > bn * room) {
                busiest = Some((n, room));
            }
        }
        busiest
    }

    /// Explain the waiting intervals the trace has passed (or waited for
    /// long enough).
    fn explain_ready(&mut self, now: u64) {
        for k in 0..self.watches.len() {
            let cpu = self.watches[k].cpu;
            let Some(ci) = self.cpus.iter().position(|&c| c == cpu) else {
                continue;
            };
            while let Some(&(s, lat, taken, tid)) = self.threads[k].waiting.front() {
                let end = s + lat;
                // The trace past the end, and /proc/stat read a tick after it.
                let seen = self.rings[ci].known_to() >= end && now >= end + 2 * TICK_NS;
                // Patience from when the reader had it: it may take an
                // interval after a long pause.
                if !seen && now < end.max(taken) + PATIENCE_NS {
                    break;
                }
                self.threads[k].waiting.pop_front();
                self.explain_one(k, ci, tid, s, lat);
                if !self.totals.is_empty() {
                    // Every interval is attributed: keep each walk short.
                    self.trim();
                }
            }
        }
    }

    fn explain_one(&mut self, k: usize, ci: usize, tid: i32, s: u64, lat: u64) {
        let t = &self.threads[k];
        // A tap naming its threads keeps the worst of each of them.
        let each = self.watches[k].tap.names_threads();
        let keep = t.best.wants(tid, lat, self.worst, each);
        let brk = lat > self.threshold && self.breaks.len() < BREAKS;
        if !keep && !brk && self.totals.is_empty() {
            return;
        }
        let iv = Interval {
            start: s,
            end: s + lat,
            tid,
            own: self.own,
            pending: self.pending,
            woken_at: self
                .woken
                .iter()
                .find(|w| w.1 == tid && w.0 > s && w.0 <= s + lat)
                .map(|w| (w.0, w.2)),
        };
        let cpu = self.cpus[ci];
        // To the nanosecond from the scheduler's accounting; else from
        // /proc/stat, a tick either side (the counter moves in ticks, late).
        let steal = runtime_steal(&self.rings[ci], iv).unwrap_or_else(|| {
            self.steal
                .between(cpu, iv.start.saturating_sub(TICK_NS), iv.end + TICK_NS)
        });
        let witnesses: Vec<Witness> = self
            .witnesses_of(ci)
            .filter_map(|j| {
                let due = self.due_of(j, lat)?;
                let (cpu, ring) = (self.cpus[j], &self.rings[j]);
                Some(Witness { cpu, ring, due })
            })
            .collect();
        let heard = (cpu, witnesses.as_slice());
        let case = Explained {
            thread: self.watches[k].name.clone(),
            cpu: Some(cpu),
            at_ns: s.saturating_sub(self.start),
            latency_ns: lat,
            parts: attribute_heard(&self.rings[ci], &self.dec, iv, steal, heard),
        };
        self.details.explained += 1;
        let lost = case
            .parts
            .first()
            .is_some_and(|p| p.name == OVERWRITTEN || p.name == NOT_READ);
        self.details.overwritten += u64::from(lost);
        match self.totals.get_mut(ci) {
            // Not rebuilt: counted apart, as an interval not attributed.
            Some(c) if lost => c.skip(lat),
            Some(c) => c.add(&case.parts),
            None => {}
        }
        if brk {
            self.breaks.push(case.clone());
        }
        if keep {
            self.threads[k].best.keep(case, tid, self.worst, each);
        }
    }

    /// Forget the events no coming interval can need.
    fn trim(&mut self) {
        for ci in 0..self.rings.len() {
            let keep_from = self.needed(ci).unwrap_or(0);
            self.rings[ci].trim_before(keep_from);
        }
        let keep_from = self
            .threads
            .iter()
            .map(|t| t.waiting.front().map_or(t.frontier, |w| w.0))
            .min()
            .unwrap_or(0);
        while self.woken.front().is_some_and(|w| w.0 < keep_from) {
            self.woken.pop_front();
        }
        for t in &mut self.threads {
            let old = t.stalls.partition_point(|&(_, e)| e < keep_from);
            t.stalls.drain(..old);
        }
    }

    pub(super) fn finish(mut self) -> (Vec<Explained>, ExplainDetails) {
        let mut all: Vec<Explained> = Vec::new();
        for t in &mut self.threads {
            all.append(&mut t.best.take());
        }
        for b in self.breaks {
            if !all
                .iter()
                .any(|a| a.thread == b.thread && a.at_ns == b.at_ns)
            {
                all.push(b);
            }
        }
        all.sort_by_key(|a| std::cmp::Reverse(a.latency_ns));
        self.details.tap_lost = self.threads.iter().map(|t| t.reader.lost).sum();
        self.details.intervals += self.threads.iter().map(|t| t.reader.passed).sum::<u64>();
        self.details.steal = self.steal.seen;
        self.details.totals = std::mem::take(&mut self.totals);
        for t in &mut self.details.totals {
            t.sort();
        }
        if let Some(e) = self.read_error {
            self.details
                .restore_problems
                .push(format!("reading trace_pipe_raw failed: {e}"));
        }
        (all, self.details)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::events::tests::{decode_fixture, fixture};
    use crate::trace::ringpage::{MISSED_EVENTS, MISSED_STORED};
    use crate::trace::tracefs::RawPipes;
    use std::path::Path;

    /// A reader of the pages under `dir` (`per_cpu/cpuN/trace_pipe_raw`,
    /// plain files read as the kernel's pipes are) with the layouts of
    /// fixture `root`, after one round of reading.
    fn read_once(root: &Path, dir: &Path, cpu: usize) -> (TraceReader, u64) {
        let pipes = RawPipes::open(dir, &[cpu]).expect("pages");
        let mut r = TraceReader::new(
            Box::new(pipes),
            Decoder::load(root),
            vec![cpu],
            Vec::new(),
            (1, None, "own", None),
        );
        let (backlog, pages) = r.read_trace(u64::MAX);
        assert!(!backlog);
        assert!(r.read_error.is_none(), "{:?}", r.read_error);
        (r, pages)
    }

    fn pages_of(root: &Path, cpu: usize) -> Vec<u8> {
        std::fs::read(root.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"))).expect("pages")
    }

    #[test]
    fn the_reader_rings_every_recorded_event_in_order() {
        let (root, cpu) = fixture("busy");
        let (r, pages) = read_once(&root, &root, cpu);
        let (_, want) = decode_fixture(&root, cpu);
        let got: Vec<(u64, Ev)> = r.rings[0].events().copied().collect();
        let want: Vec<(u64, Ev)> = want.into_iter().map(|(t, e, _)| (t, e)).collect();
        assert_eq!(got, want);
        assert_eq!(
            pages as usize,
            pages_of(&root, cpu).len() / rustix::param::page_size()
        );
        assert_eq!(r.details.lost_events, 0);
    }

    /// A tap naming its threads (`rtlat watch`'s) keeps the worst of each
    /// thread, not the CPU's: a thread whose wake-ups are all shorter than
    /// another's on the same CPU keeps its own.
    #[test]
    fn a_tap_of_threads_keeps_the_worst_of_each_thread() {
        let (root, cpu) = fixture("busy");
        let pipes = RawPipes::open(&root, &[cpu]).expect("pages");
        let tap = Arc::new(Tap::of_threads(64));
        let watch = Watch {
            name: format!("cpu{cpu}"),
            cpu,
            tap: Arc::clone(&tap),
            period_ns: None,
        };
        let dec = Decoder::load(&root);
        let mut r = TraceReader::new(
            Box::new(pipes),
            dec,
            vec![cpu],
            vec![watch],
            (2, None, "own", None),
        );
        r.started(0);
        for (k, lat) in [900u64, 800, 700, 600].into_iter().enumerate() {
            tap.push_of(1_000 + k as u64 * 10_000, lat, 5);
        }
        for (k, lat) in [90u64, 80, 70].into_iter().enumerate() {
            tap.push_of(50_000 + k as u64 * 10_000, lat, 7);
        }
        tap.close();
        // Long after them: each has waited its patience.
        let now = 10 * PATIENCE_NS;
        r.round(now);
        r.round(now + 2 * PATIENCE_NS);
        let (cases, _) = r.finish();
        let mut got: Vec<u64> = cases.iter().map(|c| c.latency_ns).collect();
        got.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(got, [900, 800, 90, 80]);
    }

    /// The kernel's own count of an overwritten buffer: the CPU's `overrun`.
    #[test]
    fn events_the_kernel_overwrote_are_counted() {
        let (root, cpu) = fixture("overrun");
        let stats = std::fs::read_to_string(root.join(format!("per_cpu/cpu{cpu}/stats"))).unwrap();
        let (overrun, _) = crate::trace::tracefs::parse_stats(&stats);
        let (r, _) = read_once(&root, &root, cpu);
        assert!(overrun > 0);
        assert_eq!(r.details.lost_events, overrun);
        assert_eq!(
            r.rings[0].events().next().map(|e| e.1),
            Some(Ev::Lost(overrun))
        );
    }

    /// Recorded pages given the missed-events flags as the kernel sets
    /// them (`ring_buffer_read_page`): the count stored after the data
    /// where it fits (`RB_MISSED_STORED`), else only the flag, an unknown
    /// number counted as one.
    #[test]
    fn missed_events_flags_of_a_page_are_counted() {
        let (root, cpu) = fixture("busy");
        let fmt = Decoder::load(&root).page.expect("header_page");
        let size = rustix::param::page_size();
        let mut pages = pages_of(&root, cpu);
        let n_pages = pages.len() / size;
        let commit_at = |p: usize| p * size + fmt.commit.offset;
        let len_of = |pages: &[u8], p: usize| {
            let c = crate::trace::ringpage::get(pages, commit_at(p), fmt.commit.size).unwrap();
            (c & crate::trace::ringpage::LENGTH_MASK) as usize
        };
        let roomy = |pages: &[u8], p: usize| size - fmt.data - len_of(pages, p) >= 8;
        let stored = (0..n_pages)
            .find(|&p| roomy(&pages, p))
            .expect("a page with room");
        let bare = (0..n_pages)
            .find(|&p| !roomy(&pages, p))
            .expect("a full page");
        // `local_add(RB_MISSED_EVENTS)` adds (int)(1 << 31): sign-extended.
        let flag = |pages: &mut Vec<u8>, p: usize, add: u64| {
            let at = commit_at(p);
            let c = u64::from_ne_bytes(pages[at..at + 8].try_into().unwrap());
            pages[at..at + 8].copy_from_slice(&c.wrapping_add(add).to_ne_bytes());
        };
        let missed = MISSED_EVENTS as u32 as i32 as i64 as u64;
        let len = len_of(&pages, stored);
        let count_at = stored * size + fmt.data + len;
        pages[count_at..count_at + 8].copy_from_slice(&12_345u64.to_ne_bytes());
        flag(&mut pages, stored, MISSED_STORED);
        flag(&mut pages, stored, missed);
        flag(&mut pages, bare, missed);
        assert_eq!(len_of(&pages, stored), len, "the length is kept");

        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, &pages).unwrap();
        let (r, _) = read_once(&root, dir.path(), cpu);
        assert_eq!(r.details.lost_events, 12_345 + 1);

        // The same events, each loss marked before the first event of its page.
        let (plain, _) = read_once(&root, &root, cpu);
        let got: Vec<Ev> = r.rings[0].events().map(|e| e.1).collect();
        let mut want: Vec<Ev> = plain.rings[0].events().map(|e| e.1).collect();
        let per_page: Vec<usize> = pages
            .chunks(size)
            .map(|page| {
                let mut n = 0;
                walk_page(&fmt, page, |i| {
                    n += usize::from(matches!(i, Item::Event { .. }))
                });
                n
            })
            .collect();
        let mut marks = [(stored, Ev::Lost(12_345)), (bare, Ev::Lost(1))];
        marks.sort_by_key(|m| std::cmp::Reverse(m.0));
        for (p, ev) in marks {
            want.insert(per_page[..p].iter().sum(), ev);
        }
        assert_eq!(got, want);
    }
}
