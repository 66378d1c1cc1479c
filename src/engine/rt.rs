//! Real-time setup shared by every benchmark: applied before the first
//! sample and recorded in the result.

use crate::error::{Error, Result};
use crate::result::{DeadlineParams, Policy, Tuning};
use crate::sys::{self, pm::DmaLatency, sched::Sched};
use std::io;

pub const DEFAULT_PRIORITY: i32 = 80;
/// Stack each measuring thread touches before its first sample: every
/// page of it is then resident and locked for the whole run. The measuring
/// loops use a few kilobytes below the thread's entry (their clock reads,
/// sleeps and wake calls go to the kernel's own stack): 16 KiB covers them
/// with room to spare, where 64 KiB held 48 KiB per thread for nothing.
pub const PREFAULT_STACK: usize = 16 * 1024;

/// Heap the reporter may need besides its series (see [`reporter_heap`]):
/// small, because the per-series terms below grow the reserve with the run
/// and every byte of it is held resident under mlockall.
const HEAP_RESERVE_BASE: usize = 32 << 10;
/// Reporter heap per measured series, besides its points: the histograms a
/// save merges and records.
const HEAP_RESERVE_PER_CHANNEL: usize = 64 << 10;
/// Reporter heap per series point and copy of it in the result (a result
/// point, and the allocator's share).
const HEAP_RESERVE_PER_POINT: usize = 56;

/// The fix named whenever real-time privileges are missing.
pub const PRIVILEGE_FIX: &str =
    "run as root, or grant the capabilities: sudo setcap cap_sys_nice,cap_ipc_lock+ep $(command -v rtlat)";

/// What this process lacks of the real-time settings `cfg` asks for, each
/// with its own way out: probed by doing it for a moment (memory locked and
/// unlocked, the DMA latency device opened, the policy set on a thread
/// that then ends), so that one refusal can name them all.
pub fn missing(cfg: &RtConfig) -> Vec<String> {
    let mut lacking = Vec::new();
    if cfg.mlock {
        match sys::mem::lock_all() {
            Ok(()) => sys::mem::unlock_all(),
            Err(e)
                if e.raw_os_error()
                    .is_some_and(|c| c == libc::EPERM || c == libc::ENOMEM) =>
            {
                lacking.push(format!(
                    "locked memory (mlockall: {e}; or raise 'ulimit -l', or pass --no-mlock)"
                ));
            }
            Err(_) => {}
        }
    }
    if cfg.dma_latency.is_some() {
        if let Err(e) = sys::probe::can_hold_dma_latency() {
            if e.kind() == io::ErrorKind::PermissionDenied {
                let device = sys::pm::DEVICE;
                lacking.push(format!("{device} ({e}; or pass --dma-latency off)"));
            }
        }
    }
    if cfg.sched != Sched::Other {
        if let Err(e) = sys::probe::can_use(cfg.sched) {
            if e.raw_os_error() == Some(libc::EPERM) {
                lacking.push(format!(
                    "the real-time policy {} ({e}; or use --policy other, unprivileged and not real-time)",
                    cfg.policy_name()
                ));
            }
        }
    }
    lacking
}

/// One refusal naming every privilege the run lacks ([`missing`]).
pub fn refuse_missing(cfg: &RtConfig) -> Result<()> {
    let lacking = missing(cfg);
    if lacking.is_empty() {
        return Ok(());
    }
    Err(Error::env(format!(
        "not permitted: {}; {PRIVILEGE_FIX}",
        lacking.join("; ")
    )))
}

/// Validated real-time settings.
#[derive(Debug, Clone)]
pub struct RtConfig {
    pub sched: Sched,
    pub mlock: bool,
    pub dma_latency: Option<i32>,
}

impl Default for RtConfig {
    /// Unprivileged: what a configuration built in code (tests) starts from.
    fn default() -> Self {
        RtConfig::unprivileged()
    }
}

impl RtConfig {
    /// The unprivileged configuration used for synthetic runs and tests.
    pub fn unprivileged() -> Self {
        RtConfig {
            sched: Sched::Other,
            mlock: false,
            dma_latency: None,
        }
    }

    pub fn policy(&self) -> Policy {
        match self.sched {
            Sched::Fifo(_) => Policy::Fifo,
            Sched::Rr(_) => Policy::Rr,
            Sched::Deadline { .. } => Policy::Deadline,
            Sched::Other => Policy::Other,
        }
    }

    pub fn policy_name(&self) -> &'static str {
        self.policy().name()
    }

    /// Threads can be pinned to one CPU, except under SCHED_DEADLINE, which the
    /// kernel only admits for tasks whose affinity spans the whole root domain.
    pub fn can_pin(&self) -> bool {
        !matches!(self.sched, Sched::Deadline { .. })
    }

    /// The tuning record for the result, given each thread's CPU and phase.
    pub fn tuning(&self, affinity: Vec<Option<usize>>, phase_offsets_ns: Vec<u64>) -> Tuning {
        Tuning {
            mlock: Some(self.mlock),
            dma_latency_us: Some(self.dma_latency),
            policy: Some(self.policy()),
            priority: Some(match self.sched {
                Sched::Fifo(p) | Sched::Rr(p) => p,
                _ => 0,
            }),
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

/// The heap the reporter needs at its peak (a save of the result when every
/// series holds all its points), pre-faulted under mlockall so that its
/// resident size stays flat for the whole run: sized from the run, not fixed.
/// `channels` series of `points` points each (the interval count of the run,
/// at most the series' budget); a save holds one copy of each in the result,
/// three with an idle phase first (`phases` 2: the whole run and each phase).
pub fn reporter_heap(channels: usize, points: usize, phases: usize) -> usize {
    let points = points.min(crate::stats::series::SERIES_POINTS + 1);
    let copies = 2 * phases.max(1) - 1;
    HEAP_RESERVE_BASE
        + channels * (HEAP_RESERVE_PER_CHANNEL + points * HEAP_RESERVE_PER_POINT * copies)
}

/// Process-wide state held for the run: locked memory and the PM QoS request.
#[derive(Debug)]
pub struct Runtime {
    _dma: Option<DmaLatency>,
    locked: bool,
}

impl Runtime {
    /// Lock memory and hold the DMA latency request. Call after all buffers
    /// exist. `reserve` bytes of heap are kept resident for the reporter
    /// (see [`reporter_heap`]).
    pub fn setup(cfg: &RtConfig, reserve: usize) -> Result<Runtime> {
        let locked = if cfg.mlock {
            sys::mem::reserve_heap(reserve);
            sys::mem::lock_all().map_err(|e| {
                Error::env(format!(
                    "cannot lock memory (mlockall: {e}); {PRIVILEGE_FIX}, or raise 'ulimit -l', or pass --no-mlock"
                ))
                .because(e)
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
                Error::env(format!("cannot hold {} ({e}); {fix}", sys::pm::DEVICE)).because(e)
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
            .because(e)
        })?;
    }
    sys::sched::set_current(cfg.sched).map_err(|e| {
        let what = match cfg.sched {
            Sched::Deadline { .. } => "SCHED_DEADLINE",
            Sched::Fifo(_) => "SCHED_FIFO",
            Sched::Rr(_) => "SCHED_RR",
            Sched::Other => "SCHED_OTHER",
        };
        let msg = match e.raw_os_error() {
            Some(libc::EPERM) => format!(
                "not permitted to use {what} ({e}); {PRIVILEGE_FIX}; or use --policy other (unprivileged, not real-time)"
            ),
            Some(libc::EBUSY) => format!(
                "SCHED_DEADLINE admission refused ({e}): not enough bandwidth; lower --dl-runtime or raise --period"
            ),
            _ => format!("cannot set {what}: {e}"),
        };
        Error::env(msg).because(e)
    })?;
    sys::mem::prefault_stack(PREFAULT_STACK);
    Ok(())
}
