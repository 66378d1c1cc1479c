//! The one trace layer: rtlat's tracefs sessions and instances (every
//! setting restored, also after a killed run), the raw ring-buffer pages
//! and their reading from a point in time, and the one reader loop that
//! every reader of the kernel's trace runs beside a benchmark's threads.

pub mod instance;
pub mod ringpage;
pub mod tracefs;
pub mod window;

use crate::engine::{self, Channel, Finished, RunSpec, StopFlag, Worker, WorkerEnd};
use crate::error::Result;
use crate::result::{BreakEvent, RunResult};
use crate::sys::clock::{self, Clock};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracefs::Session;

/// A source of ring-buffer pages per CPU: the kernel's `trace_pipe_raw`
/// files ([`tracefs::RawPipes`]), or recorded pages replayed.
pub trait Pages: Send {
    /// How many CPUs it reads.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The next page of the `i`th CPU, oldest first: (CPU, page); `None`
    /// when none is waiting.
    fn read(&mut self, i: usize) -> std::io::Result<Option<(usize, &[u8])>>;
}

/// Up to `per_cpu` waiting pages of each CPU of `pipes`, every item that
/// `decode` keeps (given the CPU's index in `pipes`) pushed onto `out`
/// with its time (0 for a record of lost events); the first read error
/// ends it.
pub fn read_pages<E>(
    pipes: &mut dyn Pages,
    page: &ringpage::Page,
    per_cpu: usize,
    mut decode: impl FnMut(usize, ringpage::Item<'_>) -> Option<E>,
    out: &mut Vec<(u64, E)>,
) -> std::io::Result<()> {
    for i in 0..pipes.len() {
        for _ in 0..per_cpu {
            let Some((_, buf)) = pipes.read(i)? else {
                break;
            };
            ringpage::walk_page(page, buf, |item| {
                let ts = match item {
                    ringpage::Item::Event { ts_ns, .. } => ts_ns,
                    ringpage::Item::Lost(_) => 0,
                };
                if let Some(ev) = decode(i, item) {
                    out.push((ts, ev));
                }
            });
        }
    }
    Ok(())
}

/// What one round of a reader did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Round {
    /// More is waiting: the next round at once.
    More,
    /// Caught up: the next round after this pause. Reading in batches
    /// costs the measured CPUs less than waking for every event.
    Pause(Duration),
    /// Nothing more to read: the reader ends.
    Done,
}

/// What a reader writes into the result at the end of the run, given the
/// problems restoring tracefs met (expected none).
pub type Finish = Box<dyn FnOnce(&mut RunResult, &[String]) + Send>;

/// A reader of the kernel's trace beside a run's measuring threads:
/// `--explain`, `--split`, `--context` and noise's kernel tracers. Its
/// thread runs the one reader loop ([`reader`]); the trait is what differs.
pub trait Tracer: Send {
    /// The reader thread's name.
    fn name(&self) -> String;
    /// On the reader thread, before its first round: `start` is the run's
    /// start on CLOCK_MONOTONIC (the trace's clock).
    fn begin(&mut self, start: u64);
    /// One round at `now` (CLOCK_MONOTONIC); `stop` is the run's, which a
    /// reader that finds a break sets.
    fn round(&mut self, now: u64, stop: &StopFlag) -> Round;
    /// After the last round: the break it found, and what it writes into
    /// the result once tracefs is restored. Its files close here, before
    /// the restore (tracefs keeps an instance whose pipes are open).
    fn end(self: Box<Self>) -> (Option<BreakEvent>, Finish);
}

/// The one reader loop: rounds until the tracer is done, its finish kept
/// in `slot` for the run's finisher.
fn reader(mut t: Box<dyn Tracer>, slot: Arc<Mutex<Option<Finish>>>) -> Worker {
    Worker {
        name: t.name(),
        cpu: None,
        body: Box::new(move |start: u64, stop: &StopFlag| -> WorkerEnd {
            let mono = Clock::Monotonic.id();
            t.begin(start);
            loop {
                match t.round(clock::now_ns(mono), stop) {
                    Round::More => {}
                    Round::Pause(d) => std::thread::sleep(d),
                    Round::Done => break,
                }
            }
            let (brk, finish) = t.end();
            if let Ok(mut s) = slot.lock() {
                *s = Some(finish);
            }
            WorkerEnd {
                brk,
                ..WorkerEnd::default()
            }
        }),
    }
}

/// A run's tracing: the tracefs sessions it changed and the readers that
/// run beside its measuring threads.
#[derive(Default)]
pub struct Tracing {
    sessions: Vec<Session>,
    tracers: Vec<Box<dyn Tracer>>,
}

impl Tracing {
    /// Keep `s` until the run's end, restored then (or at an early error).
    pub fn keep(&mut self, s: Session) {
        self.sessions.push(s);
    }

    /// Run `t` beside the measuring threads; readers finish in the order
    /// they were added, after the run's own finisher.
    pub fn add(&mut self, t: Box<dyn Tracer>) {
        self.tracers.push(t);
    }

    pub fn is_empty(&self) -> bool {
        self.tracers.is_empty() && self.sessions.is_empty()
    }

    /// [`engine::execute`] with the readers among the workers: at the end
    /// tracefs is restored, then each reader writes into the result;
    /// tracefs is restored whatever the outcome.
    pub fn execute(
        self,
        mut spec: RunSpec,
        channels: Vec<Channel>,
        mut workers: Vec<Worker>,
        clock: libc::clockid_t,
    ) -> Result<Finished> {
        let sessions = Arc::new(Mutex::new(self.sessions));
        let mut slots = Vec::new();
        for t in self.tracers {
            let slot: Arc<Mutex<Option<Finish>>> = Arc::default();
            workers.push(reader(t, Arc::clone(&slot)));
            slots.push(slot);
        }
        let ours = spec.finish.take();
        let at_end = Arc::clone(&sessions);
        spec.finish = Some(Box::new(move |r: &mut RunResult| {
            if let Some(f) = ours {
                f(r);
            }
            let problems = restore(&at_end);
            for slot in slots {
                if let Some(f) = slot.lock().ok().and_then(|mut s| s.take()) {
                    f(r, &problems);
                }
            }
        }));
        let outcome = engine::execute(spec, channels, workers, clock);
        // Restored already by the finisher; on an early error here.
        restore(&sessions);
        outcome
    }
}

/// Every session restored: what could not be.
fn restore(sessions: &Mutex<Vec<Session>>) -> Vec<String> {
    sessions
        .lock()
        .map(|mut s| s.iter_mut().flat_map(|s| s.restore()).collect())
        .unwrap_or_default()
}
