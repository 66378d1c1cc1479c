//! What every benchmark's run wires the same way: its measuring threads,
//! each series a recorder for the thread and a channel for the reporter,
//! the `--explain` taps beside them and the run with the reader; and the
//! slots through which a thread hands how it ended to the finisher.

use crate::bench::explaining::{Ask, Explaining};
use crate::engine::{Channel, Finished, RunSpec, StopFlag, Worker, WorkerEnd};
use crate::error::Result;
use crate::stats::recorder::{self, Recorder};
use crate::stats::tap::Tap;
use std::sync::{Arc, Mutex};

/// A run's measuring threads, their series and their `--explain`, built
/// before anything is measured.
pub struct Threads {
    explain: Explaining,
    /// `--explain`'s notes: they follow the run's own.
    notes: Vec<String>,
    interval_ns: u64,
    channels: Vec<Channel>,
    workers: Vec<Worker>,
}

impl Threads {
    /// Sets `--explain` up as `ask` says (it can fail), for series
    /// collected every `interval_ns`.
    pub fn begin(ask: &Ask, interval_ns: u64) -> Result<Threads> {
        let mut notes = Vec::new();
        let explain = Explaining::begin(ask, &mut notes)?;
        Ok(Threads {
            explain,
            notes,
            interval_ns,
            channels: Vec::new(),
            workers: Vec::new(),
        })
    }

    /// [`Threads::begin`] for one measuring thread on `cpu` (nothing is
    /// explained without one): `own` is its own time in an interval,
    /// `pending` the time before its wake-up is due, `stacks` asks for
    /// `--explain-stacks`.
    pub fn begin_on(
        cpu: Option<usize>,
        (worst, stacks): (Option<usize>, bool),
        own: &'static str,
        pending: Option<&'static str>,
        interval_ns: u64,
    ) -> Result<Threads> {
        let worst = worst.filter(|_| cpu.is_some());
        let ask = Ask {
            pending,
            stacks,
            ..Ask::new(worst, cpu.as_slice(), own)
        };
        Threads::begin(&ask, interval_ns)
    }

    /// A series measured on `cpu`: its recorder, for the measuring thread.
    pub fn series(&mut self, name: &str, cpu: Option<usize>) -> Recorder {
        let (rec, col) = recorder::pair(self.interval_ns);
        self.channels
            .push(Channel::new(name.into(), cpu, col, self.interval_ns));
        rec
    }

    /// The tap of the series `name` on `cpu`, which hands over an interval
    /// every `every_ns` at most (`None` without `--explain` or a CPU).
    pub fn watch(
        &mut self,
        name: &str,
        cpu: Option<usize>,
        every_ns: Option<u64>,
    ) -> Option<Arc<Tap>> {
        cpu.and_then(|cpu| self.explain.watch(name, cpu, every_ns))
    }

    /// A measuring thread on `cpu` running `body` from the run's start; what
    /// `body` returns says how it ended (`()`: nothing to tell; a
    /// [`LostCpu`](crate::engine::LostCpu): its CPU went away).
    pub fn worker<E: Into<WorkerEnd>>(
        &mut self,
        name: String,
        cpu: Option<usize>,
        body: impl FnOnce(u64, &StopFlag) -> E + Send + 'static,
    ) {
        self.workers.push(Worker {
            name,
            cpu,
            body: Box::new(move |start: u64, stop: &StopFlag| -> WorkerEnd {
                body(start, stop).into()
            }),
        });
    }

    /// The run of `spec` with these threads, on `clock`: `--explain`'s
    /// notes after the run's own, its reader beside the workers.
    pub fn execute(self, mut spec: RunSpec, clock: libc::clockid_t) -> Result<Finished> {
        spec.notes.extend(self.notes);
        self.explain
            .execute(spec, self.channels, self.workers, clock)
    }
}

/// Runs `measure` with this thread as the writer of `tap` (`--explain`),
/// then closes the tap: no interval follows.
#[inline(always)]
pub fn writing<R>(tap: Option<&Tap>, measure: impl FnOnce() -> R) -> R {
    if let Some(t) = tap {
        t.set_writer(crate::sys::sched::gettid());
    }
    let r = measure();
    if let Some(t) = tap {
        t.close();
    }
    r
}

/// A value one part of a run hands another: a thread's end to the
/// finisher, a finisher's verdict to the run. Its lock is taken outside
/// the measuring loops only.
pub struct Slot<T>(Arc<Mutex<Option<T>>>);

impl<T> Slot<T> {
    /// A slot holding `value`.
    pub fn new(value: Option<T>) -> Slot<T> {
        Slot(Arc::new(Mutex::new(value)))
    }

    /// Put `value` in (what was there is dropped).
    pub fn put(&self, value: T) {
        if let Ok(mut g) = self.0.lock() {
            *g = Some(value);
        }
    }

    /// Take what is there out.
    pub fn take(&self) -> Option<T> {
        self.0.lock().ok().and_then(|mut g| g.take())
    }
}

impl<T: Clone> Slot<T> {
    /// A copy of what is there.
    pub fn get(&self) -> Option<T> {
        self.0.lock().ok().and_then(|g| g.clone())
    }
}

impl<T> Default for Slot<T> {
    fn default() -> Slot<T> {
        Slot::new(None)
    }
}

impl<T> Clone for Slot<T> {
    /// The same slot, for another part of the run.
    fn clone(&self) -> Slot<T> {
        Slot(Arc::clone(&self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_shared_by_its_clones() {
        let a = Slot::default();
        let b = a.clone();
        assert_eq!(b.get(), None);
        a.put(3);
        assert_eq!(b.get(), Some(3));
        assert_eq!(b.take(), Some(3));
        assert_eq!(a.take(), None);
    }

    #[test]
    fn each_series_has_its_channel_and_nothing_is_explained_off() {
        let mut t = Threads::begin_on(Some(0), (None, false), "own", None, 1_000_000).expect("off");
        let _rec = t.series("a", Some(0));
        let _rec = t.series("b", None);
        let names: Vec<_> = t
            .channels
            .iter()
            .map(|c| (c.name.as_str(), c.cpu))
            .collect();
        assert_eq!(names, [("a", Some(0)), ("b", None)]);
        assert!(t.watch("a", Some(0), Some(1_000_000)).is_none());
        assert!(t.notes.is_empty());
    }

    #[test]
    fn a_thread_without_a_cpu_is_not_explained() {
        // Asked for, but with no CPU to trace: nothing is set up.
        let mut t =
            Threads::begin_on(None, (Some(3), true), "own", Some("pending"), 1).expect("off");
        assert!(t.notes.is_empty());
        assert!(t.watch("a", None, None).is_none());
    }

    #[test]
    fn a_worker_runs_its_body_from_the_start_it_is_given() {
        let mut t = Threads::begin_on(None, (None, false), "own", None, 1).expect("off");
        let seen = Slot::default();
        let s = seen.clone();
        t.worker("w".into(), Some(1), move |start, _| s.put(start));
        let w = t.workers.pop().expect("one worker");
        assert_eq!((w.name.as_str(), w.cpu), ("w", Some(1)));
        let end = (w.body)(42, &StopFlag::default());
        assert!(end.brk.is_none());
        assert_eq!(seen.get(), Some(42));
    }

    #[test]
    fn a_tap_is_written_by_the_measuring_thread_and_closed_after() {
        let tap = Tap::new(16);
        let n = writing(Some(&tap), || {
            assert_eq!(tap.writer(), Some(crate::sys::sched::gettid()));
            assert!(!tap.is_closed());
            7
        });
        assert_eq!(n, 7);
        assert!(tap.is_closed());
    }
}
