//! The real-time runtime: every `unsafe` block and raw syscall of rtlat lives here.
//!
//! - [`clock`]: clock reads and absolute sleeps;
//! - [`sched`]: scheduling policy, priority and CPU affinity of the calling thread;
//! - [`mem`]: memory locking and stack prefaulting;
//! - [`net`]: UDP sockets with kernel send/receive timestamps (SO_TIMESTAMPING);
//! - [`pm`]: the `/dev/cpu_dma_latency` request held for a run;
//! - [`signals`]: blocking and waiting for SIGINT/SIGTERM/SIGHUP;
//! - [`trace`]: markers in the kernel's trace buffer (tracefs);
//! - [`tracefs`]: rtlat's own tracefs instance, its settings saved and restored, its `trace_pipe`;
//! - [`tsc`]: the x86 time-stamp counter, the cheapest clock read of a busy loop;
//! - [`process`]: the one child-process type: fork/exec and forked tasks of the loads, forked wakees, reaping;
//! - [`shm`]: anonymous mappings: words shared with forked children, a buffer they do not inherit;
//! - [`ipc`]: wake-up mechanisms (futex, eventfd, pipe, semaphores, mqueue, signal);
//! - [`probe`]: harmless probes of what the system permits (for `rtlat check`);
//! - [`responder`]: `/dev/rtlat-responder`, the kernel-side GPIO responder of kmod/.

pub mod clock;
pub mod ipc;
pub mod mem;
pub mod net;
pub mod pm;
pub mod probe;
pub mod process;
pub mod responder;
pub mod sched;
pub mod serial;
pub mod shm;
pub mod signals;
pub mod trace;
pub mod tracefs;
pub mod tsc;

use std::io;

/// The last OS error as an `io::Error`.
pub(crate) fn last_error() -> io::Error {
    io::Error::last_os_error()
}

/// Wait up to `timeout_ns` for `fd` to be readable (ppoll(2), the signal mask
/// unchanged): the events that came (`POLLIN`, `POLLERR` …), none when the
/// time ran out or a signal interrupted the wait.
#[inline]
pub(crate) fn poll_readable(fd: std::os::fd::RawFd, timeout_ns: u64) -> io::Result<i16> {
    use clock::SecNs;
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec::from_ns(timeout_ns);
    // SAFETY: `p` and `ts` are valid for the call; a null sigmask keeps the current one.
    let n = unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
    if n < 0 {
        let e = last_error();
        return match e.kind() {
            io::ErrorKind::Interrupted => Ok(0),
            _ => Err(e),
        };
    }
    Ok(p.revents)
}

/// The kernel's name for this host and release, from uname(2).
pub struct Uname {
    pub sysname: String,
    pub nodename: String,
    pub release: String,
    pub version: String,
    pub machine: String,
}

pub fn uname() -> io::Result<Uname> {
    let u = rustix::system::uname();
    let field = |c: &std::ffi::CStr| String::from_utf8_lossy(c.to_bytes()).into_owned();
    Ok(Uname {
        sysname: field(u.sysname()),
        nodename: field(u.nodename()),
        release: field(u.release()),
        version: field(u.version()),
        machine: field(u.machine()),
    })
}

/// CPU time (user + system) consumed by the calling thread, in ns.
pub fn thread_cpu_time_ns() -> u64 {
    clock::now_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time (user + system) consumed by the whole process, in ns.
pub fn process_cpu_time_ns() -> u64 {
    clock::now_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// Resident set size of this process in bytes, from /proc/self/statm.
pub fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * rustix::param::page_size().max(4096) as u64)
}
