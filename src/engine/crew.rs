//! The measuring threads of a run: each is spawned with its stack, sets
//! itself up (affinity, real-time policy, prefaulted stack), waits for the
//! common start time, runs its worker's body, and ends with the CPU time it
//! used; the crew joins them and gathers how they ended.

use super::rt::{self, RtConfig};
use crate::error::{Error, Result};
use crate::result::BreakEvent;
use crate::sys::{self, signals::StopFlag};
use std::sync::mpsc;
use std::thread;

/// Stack of a measuring thread (locked under mlockall, so kept small).
const THREAD_STACK: usize = 256 * 1024;

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
    /// The thread's CPU went away under it (taken offline, or out of the
    /// process's cpuset): the kernel moved the thread, which stopped.
    pub lost_cpu: Option<LostCpu>,
}

/// A pinned thread found on another CPU than its own: its CPU went away
/// (taken offline, or out of the process's cpuset) and the kernel moved it.
/// Found by the measuring loop, which then ends; a plain value, so that the
/// loop allocates nothing (the [`LostCpu`] is made after it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moved {
    /// The CPU the thread was pinned to, and the one it runs on now.
    pub from: usize,
    pub to: usize,
    /// When it was noticed, from the run's start.
    pub at_ns: u64,
}

impl Moved {
    /// A thread pinned to `own` (`None`: not pinned, never checked) found
    /// on `on` (`None`: not known) at `at_ns`: moved when both are known and differ.
    #[inline(always)]
    pub fn check(own: Option<usize>, on: Option<usize>, at_ns: u64) -> Option<Moved> {
        match (own, on) {
            (Some(from), Some(to)) if from != to => Some(Moved { from, to, at_ns }),
            _ => None,
        }
    }

    /// [`Moved::check`] with the CPU the calling thread runs on now (glibc's
    /// sched_getcpu: the vDSO or the rseq area, no system call).
    #[inline(always)]
    pub fn here(own: Option<usize>, at_ns: u64) -> Option<Moved> {
        own.and_then(|_| Moved::check(own, sys::sched::current_cpu(), at_ns))
    }

    /// What the run's notes say of the series `series` it ended.
    pub fn lost(self, series: &str) -> LostCpu {
        LostCpu {
            series: series.to_string(),
            cpu: self.from,
            moved_to: self.to,
            at_ns: self.at_ns,
        }
    }
}

impl From<()> for WorkerEnd {
    /// A thread that ended without anything to tell.
    fn from(_: ()) -> WorkerEnd {
        WorkerEnd::default()
    }
}

impl From<Option<LostCpu>> for WorkerEnd {
    /// A thread that ended, maybe because its CPU went away.
    fn from(lost_cpu: Option<LostCpu>) -> WorkerEnd {
        WorkerEnd {
            lost_cpu,
            ..WorkerEnd::default()
        }
    }
}

/// A measuring thread whose CPU went away mid-run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostCpu {
    /// The thread's series.
    pub series: String,
    /// The CPU it was pinned to, and the one the kernel moved it to.
    pub cpu: usize,
    pub moved_to: usize,
    /// When it noticed, from the run's start (its last sample is before).
    pub at_ns: u64,
}

impl LostCpu {
    /// The line of the result's notes and the text output.
    pub fn note(&self) -> String {
        format!(
            "{}: CPU {} went offline or left the run's CPUs at +{:.3}s (the kernel moved the thread to CPU {}): its series ends there, the thread stopped, and the sample taken on CPU {} was not recorded",
            self.series,
            self.cpu,
            self.at_ns as f64 / 1e9,
            self.moved_to,
            self.moved_to
        )
    }
}

/// The measuring threads, from their setup to their end.
pub(super) struct Crew {
    /// Each thread ends with its worker's end, the CPU time it used measuring
    /// and when its body returned (on the run's clock; None if it never started).
    handles: Vec<thread::JoinHandle<(WorkerEnd, u64, Option<u64>)>>,
    starts: Vec<mpsc::Sender<Option<u64>>>,
}

/// What the measuring threads left when they ended.
pub(super) struct CrewEnd {
    pub(super) cpu_time_ns: u64,
    /// The earliest break, if any thread broke.
    pub(super) brk: Option<BreakEvent>,
    /// The threads whose CPU went away.
    pub(super) lost_cpus: Vec<LostCpu>,
    /// When the last measuring thread ended, on the run's clock.
    pub(super) last_end: Option<u64>,
    pub(super) panicked: bool,
}

impl Crew {
    /// Spawn the workers; each sets itself up (affinity, policy, stack, as
    /// `rt` says, or not at all when the run is `synthetic`) and reports. Returns once all are ready, or the first setup error after
    /// every thread has ended.
    pub(super) fn spawn(
        workers: Vec<Worker>,
        rt: &RtConfig,
        synthetic: bool,
        stop: &StopFlag,
        clock: libc::clockid_t,
    ) -> Result<Crew> {
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
            let rt = rt.clone();
            let Worker { name, cpu, body } = w;
            let spawned = thread::Builder::new()
                .name(name)
                .stack_size(THREAD_STACK)
                .spawn(move || -> (WorkerEnd, u64, Option<u64>) {
                    let set = if synthetic {
                        Ok(())
                    } else {
                        rt::enter_rt_thread(&rt, cpu)
                    };
                    let failed = set.is_err();
                    let _ = ready.send(set);
                    if failed {
                        return (WorkerEnd::default(), 0, None);
                    }
                    match start_rx.recv() {
                        Ok(Some(start)) => {
                            let cpu0 = sys::thread_cpu_time_ns();
                            let end = body(start, &stop);
                            let at = sys::clock::now_ns(clock);
                            (
                                end,
                                sys::thread_cpu_time_ns().saturating_sub(cpu0),
                                Some(at),
                            )
                        }
                        _ => (WorkerEnd::default(), 0, None),
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
    pub(super) fn go(&self, start: u64) {
        for s in &self.starts {
            let _ = s.send(Some(start));
        }
    }

    pub(super) fn all_finished(&self) -> bool {
        self.handles.iter().all(|h| h.is_finished())
    }

    /// Tell every worker not to start, and wait for them.
    pub(super) fn abort(self) {
        for s in &self.starts {
            let _ = s.send(None);
        }
        for h in self.handles {
            let _ = h.join();
        }
    }

    pub(super) fn join(self) -> CrewEnd {
        let mut end = CrewEnd {
            cpu_time_ns: 0,
            brk: None,
            lost_cpus: Vec::new(),
            last_end: None,
            panicked: false,
        };
        for h in self.handles {
            match h.join() {
                Ok((w, cpu_ns, at)) => {
                    end.cpu_time_ns += cpu_ns;
                    end.last_end = end.last_end.max(at);
                    end.lost_cpus.extend(w.lost_cpu);
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
