//! Processes and threads of the load generators: fork/exec with guaranteed
//! clean-up (the child dies with the thread that forked it), forked message
//! tasks (hackbench), reaping with CPU time, CPU clocks of other threads and
//! processes, shared counters, timer slack and a buffer children do not inherit.
//!
//! Children of a multi-threaded process may only make raw system calls between
//! fork(2) and execve(2)/_exit(2): everything they need is prepared before the
//! fork, and the code they run lives here, allocation-free.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU32, Ordering};

pub type Pid = libc::pid_t;

/// Largest hackbench message a forked receiver reads at once (its buffer is on its stack).
pub const MAX_MESSAGE: usize = 64 * 1024;

/// A command prepared for execve(2) before any fork: the child only reads it.
pub struct ExecImage {
    path: CString,
    _args: Vec<CString>,
    argv: Vec<*const libc::c_char>,
    _env: Vec<CString>,
    envp: Vec<*const libc::c_char>,
}

// SAFETY: the raw pointers point into the CStrings the image owns (heap
// allocations that never move or change); nothing is shared mutably.
unsafe impl Send for ExecImage {}
// SAFETY: as above; the image is read-only after construction.
unsafe impl Sync for ExecImage {}

fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL byte"))
}

impl ExecImage {
    /// `path` is executed with `args` (args[0] included) and the environment `env`.
    pub fn new(path: &OsStr, args: &[OsString], env: &[(OsString, OsString)]) -> io::Result<Self> {
        let path = cstring(path.as_bytes())?;
        let args: Vec<CString> = args
            .iter()
            .map(|a| cstring(a.as_bytes()))
            .collect::<io::Result<_>>()?;
        let env: Vec<CString> = env
            .iter()
            .map(|(k, v)| {
                let mut kv = k.as_bytes().to_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                cstring(&kv)
            })
            .collect::<io::Result<_>>()?;
        let argv = args
            .iter()
            .map(|a| a.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect();
        let envp = env
            .iter()
            .map(|a| a.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect();
        Ok(ExecImage {
            path,
            _args: args,
            argv,
            _env: env,
            envp,
        })
    }
}

/// What every load child does first, with raw system calls only: die with the
/// thread that forked it, leave if that thread is already gone, and run at
/// SCHED_OTHER whatever its parent ran at.
///
/// # Safety
/// Call only in a freshly forked child.
unsafe fn child_prologue(parent: Pid) {
    // SAFETY: prctl/getppid/sched_setscheduler/_exit are plain system calls, async-signal-safe.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        // The parent may have died before the prctl: then nobody would kill us.
        if libc::getppid() != parent {
            libc::_exit(0);
        }
        let param = super::sched::sched_param(0);
        // The raw syscall: musl's sched_setscheduler() wrapper always fails with ENOSYS.
        libc::syscall(
            libc::SYS_sched_setscheduler,
            0,
            libc::SCHED_OTHER,
            &param as *const libc::sched_param,
        );
    }
}

/// Fork and exec `image` with stdin, stdout and stderr on `null` (/dev/null).
/// The child receives SIGKILL when the calling thread ends (PR_SET_PDEATHSIG),
/// runs at SCHED_OTHER with no blocked signals and stays in the caller's
/// process group. `parent` is this process's pid. Exit status 127: exec failed.
pub fn spawn_exec(image: &ExecImage, null: BorrowedFd<'_>, parent: Pid) -> io::Result<Pid> {
    let null = null.as_raw_fd();
    // SAFETY: sigset_t is plain data; sigemptyset initialises it (before the fork).
    let mut empty: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `empty` is a valid sigset_t.
    unsafe { libc::sigemptyset(&mut empty) };
    // SAFETY: fork has no memory-safety preconditions; the child below makes raw
    // system calls only and leaves through execve or _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(super::last_error());
    }
    if pid == 0 {
        // SAFETY: we are the freshly forked child; every call is a raw,
        // async-signal-safe system call on data prepared before the fork.
        unsafe {
            child_prologue(parent);
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            libc::dup2(null, 0);
            libc::dup2(null, 1);
            libc::dup2(null, 2);
            libc::execve(
                image.path.as_ptr(),
                image.argv.as_ptr(),
                image.envp.as_ptr(),
            );
            libc::_exit(127);
        }
    }
    Ok(pid)
}

/// Name the calling thread (from the main thread: the process, as ps shows it); 15 bytes at most.
pub fn set_thread_name(name: &CStr) {
    // SAFETY: prctl only reads the NUL-terminated name (the kernel truncates it to 15 bytes).
    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
}

/// What a forked hackbench task does until it is killed.
pub enum Task<'a> {
    /// Write `message` to every fd of `out`, round robin, forever.
    Sender { out: &'a [RawFd], message: &'a [u8] },
    /// Read `input` forever and count whole messages of `message_size` bytes in `counter`.
    Receiver {
        input: RawFd,
        message_size: usize,
        counter: &'a AtomicU32,
    },
}

/// Fork a child (in the caller's process group, dying with the calling thread,
/// at SCHED_OTHER) that runs `task` until killed; it exits on its own only when
/// its peers are gone (1: write failed, 0: end of input).
/// `name` becomes the child's command name (ps, top), 15 bytes at most; its
/// stdin and stdout are `null` (/dev/null), so it holds no pipe of its parent's.
pub fn fork_task(
    task: &Task<'_>,
    name: &CStr,
    null: BorrowedFd<'_>,
    parent: Pid,
) -> io::Result<Pid> {
    let null = null.as_raw_fd();
    if let Task::Receiver { message_size, .. } = task {
        if *message_size == 0 || *message_size > MAX_MESSAGE {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
    }
    // SAFETY: fork has no memory-safety preconditions; the child runs the
    // allocation-free loops below and leaves through _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(super::last_error());
    }
    if pid == 0 {
        // SAFETY: freshly forked child (see child_prologue); prctl only reads the NUL-terminated name.
        unsafe {
            child_prologue(parent);
            libc::prctl(libc::PR_SET_NAME, name.as_ptr());
            libc::dup2(null, 0);
            libc::dup2(null, 1);
        }
        let code = match task {
            Task::Sender { out, message } => sender_loop(out, message),
            Task::Receiver {
                input,
                message_size,
                counter,
            } => receiver_loop(*input, *message_size, counter),
        };
        // SAFETY: _exit ends the child without running the parent's destructors or atexit handlers.
        unsafe { libc::_exit(code) };
    }
    Ok(pid)
}

fn write_all(fd: RawFd, mut buf: &[u8]) -> bool {
    while !buf.is_empty() {
        // SAFETY: `buf` is valid for reads of its length.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return false;
        }
        buf = &buf[n as usize..];
    }
    true
}

fn sender_loop(out: &[RawFd], message: &[u8]) -> i32 {
    loop {
        for &fd in out {
            if !write_all(fd, message) {
                return 1;
            }
        }
    }
}

fn receiver_loop(input: RawFd, message_size: usize, counter: &AtomicU32) -> i32 {
    let mut buf = [0u8; MAX_MESSAGE];
    let mut pending = 0usize;
    let mut messages = counter.load(Ordering::Relaxed);
    loop {
        // SAFETY: `buf` is valid for writes of `message_size` <= MAX_MESSAGE bytes.
        let n = unsafe { libc::read(input, buf.as_mut_ptr().cast(), message_size) };
        if n == 0 {
            return 0;
        }
        if n < 0 {
            if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return 1;
        }
        pending += n as usize;
        while pending >= message_size {
            pending -= message_size;
            messages = messages.wrapping_add(1);
        }
        counter.store(messages, Ordering::Relaxed);
    }
}

/// A pipe: (read end, write end), both close-on-exec.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds: [libc::c_int; 2] = [-1; 2];
    // SAFETY: `fds` is valid for writes of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(super::last_error());
    }
    // SAFETY: pipe2 succeeded: both descriptors are new and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exit status {c}"),
            Exit::Signal(s) => write!(f, "killed by signal {s}"),
        }
    }
}

/// A reaped child: how it ended and the CPU time (user + system) it used.
#[derive(Debug, Clone, Copy)]
pub struct Reaped {
    pub exit: Exit,
    pub cpu_ns: u64,
}

fn decode(status: libc::c_int, ru: &libc::rusage) -> Reaped {
    let exit = if libc::WIFSIGNALED(status) {
        Exit::Signal(libc::WTERMSIG(status))
    } else {
        Exit::Code(libc::WEXITSTATUS(status))
    };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    Reaped {
        exit,
        cpu_ns: tv(ru.ru_utime) + tv(ru.ru_stime),
    }
}

fn wait4(pid: Pid, flags: libc::c_int) -> io::Result<Option<Reaped>> {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: rusage is plain data; zeroed is valid.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `status` and `ru` are valid, writable.
        let rc = unsafe { libc::wait4(pid, &mut status, flags, &mut ru) };
        if rc < 0 {
            let e = super::last_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        if rc == 0 {
            return Ok(None);
        }
        return Ok(Some(decode(status, &ru)));
    }
}

/// Wait for the child `pid` to end and reap it.
pub fn reap(pid: Pid) -> io::Result<Reaped> {
    wait4(pid, 0).map(|r| r.expect("a blocking wait4 returns a child"))
}

/// Reap the child `pid` if it has ended.
pub fn try_reap(pid: Pid) -> io::Result<Option<Reaped>> {
    wait4(pid, libc::WNOHANG)
}

/// Block until the child `pid` has ended, leaving it unreaped (a zombie), so
/// its pid cannot be reused until [`reap`]: another thread may still signal it safely.
pub fn wait_ended(pid: Pid) -> io::Result<()> {
    loop {
        // SAFETY: siginfo_t is plain data; zeroed is valid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is valid and writable.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let e = super::last_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// Send `sig` to the process `pid`.
pub fn kill(pid: Pid, sig: i32) -> io::Result<()> {
    // SAFETY: kill has no memory-safety preconditions.
    if unsafe { libc::kill(pid, sig) } != 0 {
        return Err(super::last_error());
    }
    Ok(())
}

/// Send `sig` to every process of the process group `pgid`.
pub fn kill_group(pgid: Pid, sig: i32) -> io::Result<()> {
    if pgid <= 1 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: killpg has no memory-safety preconditions; pgid > 1 never means "every process".
    if unsafe { libc::killpg(pgid, sig) } != 0 {
        return Err(super::last_error());
    }
    Ok(())
}

/// The process group of the calling process.
pub fn process_group() -> Pid {
    // SAFETY: getpgrp has no preconditions.
    unsafe { libc::getpgrp() }
}

fn clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// CPU time used so far by the (live, unreaped) process `pid`, in ns.
pub fn process_cpu_ns(pid: Pid) -> Option<u64> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `clock` is valid and writable.
    if unsafe { libc::clock_getcpuclockid(pid, &mut clock) } != 0 {
        return None;
    }
    clock_ns(clock)
}

/// CPU time used so far by the live thread `thread` of this process, in ns
/// (`JoinHandleExt::as_pthread_t` of a thread not yet joined).
pub fn thread_cpu_ns(thread: std::os::unix::thread::RawPthread) -> Option<u64> {
    // std's RawPthread is an integer; libc's pthread_t is a pointer on musl.
    let thread = thread as usize as libc::pthread_t;
    let mut clock: libc::clockid_t = 0;
    // SAFETY: the caller passes the pthread_t of a thread that has not been joined
    // (std keeps it valid until join); `clock` is writable.
    if unsafe { libc::pthread_getcpuclockid(thread, &mut clock) } != 0 {
        return None;
    }
    clock_ns(clock)
}

/// Let the calling thread's timers expire exactly when asked (no coalescing):
/// SCHED_OTHER threads otherwise get 50 µs of slack.
pub fn set_timer_slack_ns(ns: u64) -> io::Result<()> {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes a number; no pointers.
    if unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong) } != 0 {
        return Err(super::last_error());
    }
    Ok(())
}

/// Zero-initialised `AtomicU32` counters in memory shared with forked children.
pub struct SharedCounters {
    ptr: *mut AtomicU32,
    len: usize,
}

// SAFETY: the mapping is only accessed through atomics.
unsafe impl Send for SharedCounters {}
// SAFETY: as above.
unsafe impl Sync for SharedCounters {}

impl SharedCounters {
    pub fn new(len: usize) -> io::Result<Self> {
        let bytes = (len.max(1) * std::mem::size_of::<AtomicU32>()).next_multiple_of(4096);
        // SAFETY: an anonymous shared mapping; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(super::last_error());
        }
        Ok(SharedCounters { ptr: p.cast(), len })
    }

    pub fn get(&self, i: usize) -> &AtomicU32 {
        assert!(i < self.len, "counter {i} out of {}", self.len);
        // SAFETY: in bounds (checked); the mapping is zeroed, page aligned and
        // lives as long as `self`; a zero u32 is a valid AtomicU32.
        unsafe { &*self.ptr.add(i) }
    }

    fn bytes(&self) -> usize {
        (self.len.max(1) * std::mem::size_of::<AtomicU32>()).next_multiple_of(4096)
    }
}

impl Drop for SharedCounters {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping created in `new`; no reference outlives `self`.
        unsafe { libc::munmap(self.ptr.cast(), self.bytes()) };
    }
}

/// A private, zeroed buffer of `u64` words that forked children do not inherit
/// (MADV_DONTFORK: a fork neither copies its page tables nor makes it
/// copy-on-write) and that is kept on small pages (MADV_NOHUGEPAGE), so
/// walking it misses in the TLB as a working set of that size should.
pub struct PrivateBuffer {
    ptr: *mut u64,
    words: usize,
}

// SAFETY: the buffer is owned memory like a Vec<u64>.
unsafe impl Send for PrivateBuffer {}

impl PrivateBuffer {
    pub fn new(bytes: usize) -> io::Result<Self> {
        let bytes = bytes.max(8).next_multiple_of(4096);
        // SAFETY: an anonymous private mapping; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(super::last_error());
        }
        // SAFETY: advice on the mapping just created; failure only loses the advice.
        unsafe {
            libc::madvise(p, bytes, libc::MADV_DONTFORK);
            libc::madvise(p, bytes, libc::MADV_NOHUGEPAGE);
        }
        Ok(PrivateBuffer {
            ptr: p.cast(),
            words: bytes / 8,
        })
    }

    pub fn words(&mut self) -> &mut [u64] {
        // SAFETY: the mapping holds `words` zero-initialised u64s, is exclusively
        // borrowed through `self` and lives as long as it.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.words) }
    }
}

impl Drop for PrivateBuffer {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping created in `new`; no borrow outlives `self`.
        unsafe { libc::munmap(self.ptr.cast(), self.words * 8) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn this_pid() -> Pid {
        std::process::id() as Pid
    }

    #[test]
    fn exec_runs_and_is_reaped_with_its_status() {
        let null = std::fs::File::open("/dev/null").unwrap();
        let img = ExecImage::new(
            OsStr::new("/bin/sh"),
            &["sh".into(), "-c".into(), "exit 3".into()],
            &[],
        )
        .unwrap();
        let pid = spawn_exec(&img, null.as_fd(), this_pid()).unwrap();
        wait_ended(pid).unwrap();
        // Still a zombie: signalling it is harmless.
        kill(pid, 0).unwrap();
        let r = reap(pid).unwrap();
        assert_eq!(r.exit, Exit::Code(3));
        let missing = ExecImage::new(OsStr::new("/nonexistent/x"), &["x".into()], &[]).unwrap();
        let pid = spawn_exec(&missing, null.as_fd(), this_pid()).unwrap();
        assert_eq!(reap(pid).unwrap().exit, Exit::Code(127));
    }

    #[test]
    fn forked_receiver_counts_messages_and_is_killed() {
        let counters = SharedCounters::new(1).unwrap();
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let rx = fork_task(
            &Task::Receiver {
                input: b.as_raw_fd(),
                message_size: 100,
                counter: counters.get(0),
            },
            c"rtlat-test",
            std::fs::File::open("/dev/null").unwrap().as_fd(),
            this_pid(),
        )
        .unwrap();
        let msg = [7u8; 100];
        for _ in 0..50 {
            assert!(write_all(a.as_raw_fd(), &msg));
        }
        let t0 = std::time::Instant::now();
        while counters.get(0).load(Ordering::Relaxed) < 50 {
            assert!(t0.elapsed().as_secs() < 10, "receiver counted too few");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(process_cpu_ns(rx).is_some());
        kill(rx, libc::SIGKILL).unwrap();
        assert_eq!(reap(rx).unwrap().exit, Exit::Signal(libc::SIGKILL));
        assert_eq!(counters.get(0).load(Ordering::Relaxed), 50);
    }

    #[test]
    fn private_buffer_is_zeroed_and_writable() {
        let mut b = PrivateBuffer::new(1 << 20).unwrap();
        let w = b.words();
        assert_eq!(w.len(), (1 << 20) / 8);
        assert!(w.iter().all(|&x| x == 0));
        w[w.len() - 1] = 5;
        assert_eq!(w[w.len() - 1], 5);
    }
}
