//! Worker threads of the thread-based loads: started at SCHED_OTHER, counted
//! without 64-bit atomics, watched for death, stopped and joined.

use crate::stats::seqlock::SeqCell;
use crate::sys;
use serde::Serialize;
use std::os::unix::thread::JoinHandleExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A worker that failed to start or died: never silently missing from a record.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    pub worker: usize,
    /// `failed to start` or `died`.
    pub what: &'static str,
    pub reason: String,
}

impl Failure {
    pub fn start(worker: usize, reason: impl Into<String>) -> Self {
        Failure {
            worker,
            what: "failed to start",
            reason: reason.into(),
        }
    }
    pub fn died(worker: usize, reason: impl Into<String>) -> Self {
        Failure {
            worker,
            what: "died",
            reason: reason.into(),
        }
    }
}

/// Published by one worker: operations done and CPU time of the children it
/// reaped (ns). Single writer (the worker), readable from any thread.
#[derive(Default)]
pub struct Tally(SeqCell<2>);

impl Tally {
    #[inline]
    pub fn publish(&self, ops: u64, child_cpu_ns: u64) {
        self.0.write(&[ops, child_cpu_ns]);
    }
    pub fn read(&self) -> (u64, u64) {
        let ([ops, child], _) = self.0.read();
        (ops, child)
    }
}

/// What a worker body sees.
pub struct WorkerCtx {
    pub index: usize,
    pub stop: Arc<AtomicBool>,
    pub tally: Arc<Tally>,
}

impl WorkerCtx {
    #[inline]
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// The body of one worker: runs until `ctx.stopping()`; an `Err` means it died.
pub type Body = Box<dyn FnOnce(&WorkerCtx) -> Result<(), String> + Send>;

struct End {
    cpu_ns: u64,
    /// `Err((started, reason))` when the worker could not start or died.
    result: Result<(), (bool, String)>,
}

struct Slot {
    index: usize,
    tally: Arc<Tally>,
    handle: Option<JoinHandle<End>>,
    cpu_ns: u64,
}

/// Totals of a pool (or of a load) at one moment.
#[derive(Debug, Clone, Default)]
pub struct PoolTotals {
    pub ops: u64,
    pub cpu_ns: u64,
    pub started: usize,
    pub failed: Vec<Failure>,
}

/// N worker threads of one load.
pub struct Pool {
    stop: Arc<AtomicBool>,
    slots: Vec<Slot>,
    failed: Vec<Failure>,
    spawn_failed: usize,
    stopping: bool,
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = p.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".into()
    }
}

/// Which figures of its pool a load reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// The totals so far ([`Pool::totals`]).
    SoFar,
    /// The final totals, the pool stopped ([`Pool::stop`]).
    Final,
}

impl Pool {
    /// The figures of a load's pool (nothing before it started).
    pub fn read(pool: &mut Option<Pool>, reading: Reading) -> PoolTotals {
        match (pool, reading) {
            (None, _) => PoolTotals::default(),
            (Some(p), Reading::SoFar) => p.totals(),
            (Some(p), Reading::Final) => p.stop(),
        }
    }

    /// Start one thread per body, named `{name}{i}`, each at SCHED_OTHER and,
    /// with `cpus`, confined to them. Threads that cannot be created are recorded.
    pub fn start(name: &str, cpus: Option<&[usize]>, bodies: Vec<Body>) -> Pool {
        let stop = Arc::new(AtomicBool::new(false));
        let mut slots = Vec::new();
        let mut failed = Vec::new();
        for (index, body) in bodies.into_iter().enumerate() {
            let tally = Arc::new(Tally::default());
            let ctx = WorkerCtx {
                index,
                stop: Arc::clone(&stop),
                tally: Arc::clone(&tally),
            };
            let cpus = cpus.map(<[usize]>::to_vec);
            let spawned = std::thread::Builder::new()
                .name(format!("{name}{index}"))
                .stack_size(256 << 10)
                .spawn(move || {
                    let result = catch_unwind(AssertUnwindSafe(|| {
                        // Loads never run at real-time priority, whatever their creator ran at.
                        sys::sched::set_current(sys::sched::Sched::Other)
                            .map_err(|e| (false, format!("cannot set SCHED_OTHER: {e}")))?;
                        if let Some(cpus) = &cpus {
                            sys::sched::confine_current(cpus).map_err(|e| {
                                (false, format!("cannot confine to the load CPUs: {e}"))
                            })?;
                        }
                        body(&ctx).map_err(|e| (true, e))
                    }))
                    .unwrap_or_else(|p| Err((true, panic_message(p.as_ref()))));
                    End {
                        cpu_ns: sys::thread_cpu_time_ns(),
                        result,
                    }
                });
            match spawned {
                Ok(handle) => slots.push(Slot {
                    index,
                    tally,
                    handle: Some(handle),
                    cpu_ns: 0,
                }),
                Err(e) => failed.push(Failure::start(
                    index,
                    format!("cannot create a thread: {e}"),
                )),
            }
        }
        Pool {
            stop,
            slots,
            spawn_failed: failed.len(),
            failed,
            stopping: false,
        }
    }

    /// Ask every worker to stop (they end at their next check); [`Pool::stop`] joins them.
    pub fn request_stop(&mut self) {
        self.stopping = true;
        self.stop.store(true, Ordering::Relaxed);
    }

    fn join(&mut self, i: usize) {
        let stopping = self.stopping;
        let slot = &mut self.slots[i];
        let Some(handle) = slot.handle.take() else {
            return;
        };
        match handle.join() {
            Ok(end) => {
                slot.cpu_ns = end.cpu_ns;
                match end.result {
                    Err((false, reason)) => self.failed.push(Failure::start(slot.index, reason)),
                    Err((true, reason)) => self.failed.push(Failure::died(slot.index, reason)),
                    Ok(()) if !stopping => self.failed.push(Failure::died(
                        slot.index,
                        "ended before the load was stopped",
                    )),
                    Ok(()) => {}
                }
            }
            Err(p) => self
                .failed
                .push(Failure::died(slot.index, panic_message(p.as_ref()))),
        }
    }

    /// The totals now; workers that ended early are joined and recorded as failed.
    pub fn totals(&mut self) -> PoolTotals {
        for i in 0..self.slots.len() {
            let finished = self.slots[i]
                .handle
                .as_ref()
                .is_some_and(JoinHandle::is_finished);
            if finished {
                self.join(i);
            } else if let Some(ns) = self.slots[i]
                .handle
                .as_ref()
                // Not stored: pthread_t is a pointer (not Send) on musl.
                .and_then(|h| sys::process::thread_cpu_ns(h.as_pthread_t()))
            {
                self.slots[i].cpu_ns = ns;
            }
        }
        let mut t = PoolTotals {
            failed: self.failed.clone(),
            ..PoolTotals::default()
        };
        // Threads that could not be created have no slot; those whose setup failed do.
        let never_started = self
            .failed
            .iter()
            .filter(|f| f.what == "failed to start")
            .count();
        t.started = (self.slots.len() + self.spawn_failed).saturating_sub(never_started);
        for s in &self.slots {
            let (ops, child_cpu) = s.tally.read();
            t.ops += ops;
            t.cpu_ns += s.cpu_ns + child_cpu;
        }
        t
    }

    /// Stop and join every worker; the final totals.
    pub fn stop(&mut self) -> PoolTotals {
        self.request_stop();
        for i in 0..self.slots.len() {
            self.join(i);
        }
        self.totals()
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.request_stop();
        for i in 0..self.slots.len() {
            self.join(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn counts_records_deaths_and_stops() {
        let bodies: Vec<Body> = vec![
            Box::new(|ctx: &WorkerCtx| {
                let mut n = 0;
                while !ctx.stopping() {
                    n += 1;
                    ctx.tally.publish(n, 0);
                    std::thread::sleep(Duration::from_millis(1));
                }
                Ok(())
            }),
            Box::new(|_: &WorkerCtx| Err("boom".into())),
            Box::new(|_: &WorkerCtx| panic!("kaput")),
        ];
        let mut pool = Pool::start("t", None, bodies);
        std::thread::sleep(Duration::from_millis(50));
        let t = pool.totals();
        assert!(t.ops > 0);
        assert_eq!(t.started, 3);
        let t = pool.stop();
        assert_eq!(t.failed.len(), 2, "{:?}", t.failed);
        assert!(t
            .failed
            .iter()
            .any(|f| f.reason == "boom" && f.what == "died"));
        assert!(t.failed.iter().any(|f| f.reason.contains("kaput")));
        assert!(t.cpu_ns > 0);
    }
}
