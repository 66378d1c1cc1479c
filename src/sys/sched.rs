//! Scheduling policy, priority and CPU affinity of the calling thread.

use std::io;

use rustix::thread::CpuSet;

/// A scheduling policy with its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sched {
    /// SCHED_FIFO at a priority 1..=99.
    Fifo(i32),
    /// SCHED_RR at a priority 1..=99.
    Rr(i32),
    /// SCHED_DEADLINE with runtime, deadline and period in ns.
    Deadline {
        runtime_ns: u64,
        deadline_ns: u64,
        period_ns: u64,
    },
    /// SCHED_OTHER (the unprivileged, non-real-time mode).
    Other,
}

/// `struct sched_attr` of sched_setattr(2); libc does not export it.
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

const SCHED_DEADLINE: u32 = 6;

/// Apply `sched` to the calling thread (Linux scheduling is per thread).
pub fn set_current(sched: Sched) -> io::Result<()> {
    let (policy, prio) = match sched {
        Sched::Fifo(p) => (libc::SCHED_FIFO, p),
        Sched::Rr(p) => (libc::SCHED_RR, p),
        Sched::Other => (libc::SCHED_OTHER, 0),
        Sched::Deadline {
            runtime_ns,
            deadline_ns,
            period_ns,
        } => {
            let attr = SchedAttr {
                size: std::mem::size_of::<SchedAttr>() as u32,
                sched_policy: SCHED_DEADLINE,
                sched_runtime: runtime_ns,
                sched_deadline: deadline_ns,
                sched_period: period_ns,
                ..Default::default()
            };
            // SAFETY: `attr` is a valid sched_attr whose size field matches; pid 0 is the calling thread.
            let rc =
                unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
            return if rc == 0 {
                Ok(())
            } else {
                Err(super::last_error())
            };
        }
    };
    let param = sched_param(prio);
    // The raw syscall: musl's sched_setscheduler() wrapper always fails with ENOSYS.
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_setscheduler,
            0,
            policy,
            &param as *const libc::sched_param,
        )
    };
    if rc != 0 {
        return Err(super::last_error());
    }
    Ok(())
}

/// A `sched_param` holding `priority`. Built from zeroes because musl's has
/// extra SCHED_SPORADIC fields that glibc's lacks.
pub fn sched_param(priority: i32) -> libc::sched_param {
    // SAFETY: sched_param is plain integers (and timespecs on musl); all-zero is valid.
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    param.sched_priority = priority;
    param
}

/// Pin the calling thread to one CPU.
pub fn pin_current(cpu: usize) -> io::Result<()> {
    if cpu >= CpuSet::MAX_CPU {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    confine_current(&[cpu])
}

/// Restrict the calling thread to a set of CPUs (used by non-RT helpers).
/// CPUs beyond what a `cpu_set_t` holds are ignored.
pub fn confine_current(cpus: &[usize]) -> io::Result<()> {
    let mut set = CpuSet::new();
    for &cpu in cpus.iter().filter(|&&c| c < CpuSet::MAX_CPU) {
        set.set(cpu);
    }
    // pid None: the calling thread.
    Ok(rustix::thread::sched_setaffinity(None, &set)?)
}

/// The CPUs thread `tid` may run on (`None`: no such thread, or not
/// readable).
pub fn affinity_of(tid: i32) -> Option<Vec<usize>> {
    let pid = rustix::process::Pid::from_raw(tid)?;
    let set = rustix::thread::sched_getaffinity(Some(pid)).ok()?;
    Some((0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
}

/// The CPU the calling thread runs on now.
/// (libc's sched_getcpu: it may fail, where rustix's asserts that it does not.)
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no preconditions.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as usize)
}

/// The kernel thread id of the calling thread.
pub fn gettid() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

/// Minimum and maximum static priority of SCHED_FIFO.
pub fn fifo_priority_range() -> (i32, i32) {
    // SAFETY: these calls have no preconditions.
    unsafe {
        (
            libc::sched_get_priority_min(libc::SCHED_FIFO),
            libc::sched_get_priority_max(libc::SCHED_FIFO),
        )
    }
}
