//! Real-time setup shared by every benchmark: validated from the command line,
//! applied before the first sample, and recorded in the result.

use crate::cli::{DmaArg, PolicyArg, RtArgs};
use crate::error::{Error, Result};
use crate::result::{DeadlineParams, Tuning};
use crate::sys::{self, pm::DmaLatency, sched::Sched};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub const DEFAULT_PRIORITY: i32 = 80;
/// Stack each measuring thread touches before its first sample.
pub const PREFAULT_STACK: usize = 64 * 1024;

/// Heap kept resident for the reporter under mlockall (see `sys::mem::reserve_heap`).
const HEAP_RESERVE_BASE: usize = 4 << 20;
const HEAP_RESERVE_PER_THREAD: usize = 1 << 20;

/// The fix named whenever real-time privileges are missing.
pub const PRIVILEGE_FIX: &str =
    "run as root, or grant the capabilities: sudo setcap cap_sys_nice,cap_ipc_lock+ep $(command -v rtlat)";

/// Validated real-time settings.
#[derive(Debug, Clone)]
pub struct RtConfig {
    pub sched: Sched,
    pub mlock: bool,
    pub dma_latency: Option<i32>,
}

impl RtConfig {
    /// Validate the runtime options; `period_ns` is the benchmark's period (deadline default).
    pub fn from_args(a: &RtArgs, period_ns: u64) -> Result<Self> {
        if a.priority.is_some() && matches!(a.policy, PolicyArg::Other | PolicyArg::Deadline) {
            return Err(Error::usage(
                "--priority applies to --policy fifo or rr only; drop it or choose fifo/rr",
            ));
        }
        if (a.dl_runtime.is_some() || a.dl_deadline.is_some()) && a.policy != PolicyArg::Deadline {
            return Err(Error::usage(
                "--dl-runtime/--dl-deadline apply to --policy deadline only",
            ));
        }
        let prio = a.priority.unwrap_or(DEFAULT_PRIORITY);
        let sched = match a.policy {
            PolicyArg::Fifo => Sched::Fifo(prio),
            PolicyArg::Rr => Sched::Rr(prio),
            PolicyArg::Other => Sched::Other,
            PolicyArg::Deadline => {
                let runtime_ns = a.dl_runtime.unwrap_or((period_ns / 10).max(20_000));
                let deadline_ns = a.dl_deadline.unwrap_or(period_ns);
                if !(runtime_ns <= deadline_ns && deadline_ns <= period_ns) {
                    return Err(Error::usage(format!(
                        "SCHED_DEADLINE needs runtime <= deadline <= period (got {} <= {} <= {}); adjust --dl-runtime/--dl-deadline/--period",
                        crate::units::human_duration(runtime_ns),
                        crate::units::human_duration(deadline_ns),
                        crate::units::human_duration(period_ns)
                    )));
                }
                Sched::Deadline {
                    runtime_ns,
                    deadline_ns,
                    period_ns,
                }
            }
        };
        Ok(RtConfig {
            sched,
            mlock: !a.no_mlock,
            dma_latency: match a.dma_latency {
                DmaArg::Off => None,
                DmaArg::Us(v) => Some(v),
            },
        })
    }

    /// The unprivileged configuration used for synthetic runs and tests.
    pub fn unprivileged() -> Self {
        RtConfig {
            sched: Sched::Other,
            mlock: false,
            dma_latency: None,
        }
    }

    pub fn policy_name(&self) -> &'static str {
        match self.sched {
            Sched::Fifo(_) => "fifo",
            Sched::Rr(_) => "rr",
            Sched::Deadline { .. } => "deadline",
            Sched::Other => "other",
        }
    }

    /// Threads can be pinned to one CPU, except under SCHED_DEADLINE, which the
    /// kernel only admits for tasks whose affinity spans the whole root domain.
    pub fn can_pin(&self) -> bool {
        !matches!(self.sched, Sched::Deadline { .. })
    }

    /// The tuning record for the result, given each thread's CPU and phase.
    pub fn tuning(&self, affinity: Vec<Option<usize>>, phase_offsets_ns: Vec<u64>) -> Tuning {
        Tuning {
            mlock: self.mlock,
            dma_latency_us: self.dma_latency,
            policy: self.policy_name().into(),
            priority: match self.sched {
                Sched::Fifo(p) | Sched::Rr(p) => p,
                _ => 0,
            },
            deadline: match self.sched {
                Sched::Deadline {
                    runtime_ns,
                    deadline_ns,
                    period_ns,
                } => Some(DeadlineParams {
                    runtime_ns,
                    deadline_ns,
                    period_ns,
                }),
                _ => None,
            },
            affinity,
            phase_offsets_ns,
        }
    }
}

/// Process-wide state held for the run: locked memory and the PM QoS request.
#[derive(Debug)]
pub struct Runtime {
    _dma: Option<DmaLatency>,
    locked: bool,
}

impl Runtime {
    /// Lock memory and hold the DMA latency request. Call after all buffers exist.
    /// `threads` sizes the reporter's heap reserve.
    pub fn setup(cfg: &RtConfig, threads: usize) -> Result<Runtime> {
        let locked = if cfg.mlock {
            sys::mem::reserve_heap(HEAP_RESERVE_BASE + HEAP_RESERVE_PER_THREAD * threads);
            sys::mem::lock_all().map_err(|e| {
                Error::env(format!(
                    "cannot lock memory (mlockall: {e}); {PRIVILEGE_FIX}, or raise 'ulimit -l', or pass --no-mlock"
                ))
            })?;
            true
        } else {
            false
        };
        let dma = match cfg.dma_latency {
            None => None,
            Some(v) => Some(DmaLatency::hold(v).map_err(|e| {
                if locked {
                    sys::mem::unlock_all();
                }
                let fix = if e.kind() == io::ErrorKind::NotFound {
                    "this kernel has no PM QoS device; pass --dma-latency off"
                } else {
                    "run as root (the device is root-only), or pass --dma-latency off"
                };
                Error::env(format!("cannot hold {} ({e}); {fix}", sys::pm::DEVICE))
            })?),
        };
        Ok(Runtime { _dma: dma, locked })
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if self.locked {
            sys::mem::unlock_all();
        }
    }
}

/// Apply scheduling and affinity to the calling (measuring) thread and prefault its stack.
pub fn enter_rt_thread(cfg: &RtConfig, cpu: Option<usize>) -> Result<()> {
    if let Some(cpu) = cpu {
        sys::sched::pin_current(cpu).map_err(|e| {
            Error::env(format!(
                "cannot pin a thread to CPU {cpu}: {e}; check --cpus"
            ))
        })?;
    }
    sys::sched::set_current(cfg.sched).map_err(|e| {
        let what = match cfg.sched {
            Sched::Deadline { .. } => "SCHED_DEADLINE",
            Sched::Fifo(_) => "SCHED_FIFO",
            Sched::Rr(_) => "SCHED_RR",
            Sched::Other => "SCHED_OTHER",
        };
        match e.raw_os_error() {
            Some(libc::EPERM) => Error::env(format!(
                "not permitted to use {what} ({e}); {PRIVILEGE_FIX}; or use --policy other (unprivileged, not real-time)"
            )),
            Some(libc::EBUSY) => Error::env(format!(
                "SCHED_DEADLINE admission refused ({e}): not enough bandwidth; lower --dl-runtime or raise --period"
            )),
            _ => Error::env(format!("cannot set {what}: {e}")),
        }
    })?;
    sys::mem::prefault_stack(PREFAULT_STACK);
    Ok(())
}

/// A stop request shared by all threads of a run: set by SIGINT/SIGTERM, a
/// duration limit or a break; read with one relaxed load per sample.
#[derive(Debug, Clone, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    #[inline(always)]
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Watches for SIGINT/SIGTERM on a non-real-time thread.
pub struct SignalWatch {
    caught: Arc<std::sync::atomic::AtomicI32>,
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SignalWatch {
    /// Block SIGINT/SIGTERM process-wide (call before spawning threads) and
    /// start the watcher, which sets `stop` when one arrives.
    pub fn start(stop: StopFlag) -> Result<SignalWatch> {
        sys::signals::block_termination()
            .map_err(|e| Error::env(format!("cannot block signals: {e}")))?;
        let caught = Arc::new(std::sync::atomic::AtomicI32::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let (c, d) = (Arc::clone(&caught), Arc::clone(&done));
        let thread = std::thread::Builder::new()
            .name("rtlat-signals".into())
            .spawn(move || loop {
                let sig = sys::signals::wait_termination();
                if d.load(Ordering::SeqCst) {
                    return;
                }
                c.store(sig, Ordering::SeqCst);
                stop.set();
            })
            .map_err(|e| Error::env(format!("cannot start the signal thread: {e}")))?;
        Ok(SignalWatch {
            caught,
            done,
            thread: Some(thread),
        })
    }

    /// The signal that ended the run, if one did.
    pub fn caught(&self) -> Option<i32> {
        match self.caught.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }
}

impl Drop for SignalWatch {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        // Wake the watcher (and only it) with a signal it waits for; `done` makes it exit.
        if let Some(t) = self.thread.take() {
            use std::os::unix::thread::JoinHandleExt;
            sys::signals::raise_to_thread(t.as_pthread_t(), sys::signals::SIGTERM);
            let _ = t.join();
        }
    }
}
