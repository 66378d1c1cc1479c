//! Child processes and threads: one [`Child`] type for every fork of rtlat —
//! the load generators' fork/exec ([`spawn_exec`]) and forked message tasks
//! (hackbench, [`fork_task`]), and the forked wakees of `rtlat switch
//! --processes` ([`fork_child`]) — each dying with the thread that forked it,
//! reaped with its CPU time, killed and reaped when dropped; CPU clocks of
//! other threads and processes, process groups, timer slack.
//!
//! Children of a multi-threaded process may only make raw system calls between
//! fork(2) and execve(2)/_exit(2): everything they need is prepared before the
//! fork, and the code they run lives here, allocation-free. Only
//! [`fork_child`], which refuses unless the process is single-threaded, runs
//! arbitrary code in its child.

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
pub fn spawn_exec(image: &ExecImage, null: BorrowedFd<'_>, parent: Pid) -> io::Result<Child> {
    let null = null.as_raw_fd();
    // Built before the fork.
    let empty = super::signals::sigset(&[]);
    // SAFETY: the child makes raw, async-signal-safe system calls only, on data
    // prepared before the fork, and leaves through execve or _exit.
    unsafe {
        fork_with(|| {
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
            127
        })
    }
}

/// fork(2): the child runs `child` and exits (_exit: no destructors, no atexit
/// handlers) with the code it returns; the parent gets the [`Child`].
///
/// # Safety
/// In a multi-threaded process the child is a copy with only the calling
/// thread: `child` may then make async-signal-safe calls only (no allocation,
/// no lock), on data prepared before the fork.
unsafe fn fork_with<F: FnOnce() -> i32>(child: F) -> io::Result<Child> {
    // SAFETY: fork has no memory-safety preconditions; the caller vouches for the child.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(super::last_error());
    }
    if pid == 0 {
        let code = child();
        // SAFETY: _exit ends the child at once, skipping the parent's destructors and atexit handlers.
        unsafe { libc::_exit(code) };
    }
    Ok(Child::forked(pid))
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
) -> io::Result<Child> {
    let null = null.as_raw_fd();
    if let Task::Receiver { message_size, .. } = task {
        if *message_size == 0 || *message_size > MAX_MESSAGE {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
    }
    // SAFETY: the child makes raw system calls (see child_prologue; prctl only
    // reads the NUL-terminated name) and runs the allocation-free loops below.
    unsafe {
        fork_with(|| {
            child_prologue(parent);
            libc::prctl(libc::PR_SET_NAME, name.as_ptr());
            libc::dup2(null, 0);
            libc::dup2(null, 1);
            match task {
                Task::Sender { out, message } => sender_loop(out, message),
                Task::Receiver {
                    input,
                    message_size,
                    counter,
                } => receiver_loop(*input, *message_size, counter),
            }
        })
    }
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

impl Exit {
    /// As a shell reports it: the exit status, or 128 + the signal that killed it.
    pub fn code(self) -> i32 {
        match self {
            Exit::Code(c) => c,
            Exit::Signal(s) => 128 + s,
        }
    }
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

/// Where a [`Child`] is.
#[derive(Debug, Clone, Copy)]
enum State {
    Running,
    Reaped(Reaped),
    /// A wait for it failed (e.g. ECHILD): never waited for or signalled again.
    Gone,
}

/// A forked child process of ours: every fork of rtlat ([`spawn_exec`],
/// [`fork_task`], [`fork_child`]) returns one. Unless it was reaped, dropping
/// it kills (SIGKILL) and reaps it, so no child outlives its owner.
#[derive(Debug)]
pub struct Child {
    pid: Pid,
    state: State,
}

impl Child {
    fn forked(pid: Pid) -> Child {
        Child {
            pid,
            state: State::Running,
        }
    }

    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Not reaped yet (nor lost to a failed wait).
    pub fn running(&self) -> bool {
        matches!(self.state, State::Running)
    }

    fn wait(&mut self, flags: libc::c_int) -> io::Result<Option<Reaped>> {
        match self.state {
            State::Reaped(r) => Ok(Some(r)),
            State::Gone => Err(io::Error::from_raw_os_error(libc::ECHILD)),
            State::Running => match wait4(self.pid, flags) {
                Ok(r) => {
                    if let Some(r) = r {
                        self.state = State::Reaped(r);
                    }
                    Ok(r)
                }
                Err(e) => {
                    self.state = State::Gone;
                    Err(e)
                }
            },
        }
    }

    /// Wait for the child to end and reap it.
    pub fn reap(&mut self) -> io::Result<Reaped> {
        self.wait(0)
            .map(|r| r.expect("a blocking wait4 returns a child"))
    }

    /// Reap the child if it has ended.
    pub fn try_reap(&mut self) -> io::Result<Option<Reaped>> {
        self.wait(libc::WNOHANG)
    }

    /// Block until the child has ended, leaving it unreaped (a zombie), so its
    /// pid cannot be reused until [`reap`](Child::reap): another thread may
    /// still signal [`pid`](Child::pid) safely.
    pub fn wait_ended(&mut self) -> io::Result<()> {
        if !self.running() {
            return Ok(());
        }
        loop {
            // SAFETY: siginfo_t is plain data; zeroed is valid.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: `info` is valid and writable.
            let rc = unsafe {
                libc::waitid(
                    libc::P_PID,
                    self.pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT,
                )
            };
            if rc == 0 {
                return Ok(());
            }
            let e = super::last_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                self.state = State::Gone;
                return Err(e);
            }
        }
    }

    /// SIGKILL and reap the child (unless it was reaped already).
    pub fn kill(&mut self) -> io::Result<Reaped> {
        if self.running() {
            // Unreaped, so its pid cannot have been recycled.
            let _ = kill(self.pid, libc::SIGKILL);
        }
        self.reap()
    }

    /// Wait up to `timeout_ns` for the child to exit, then kill it.
    pub fn finish(&mut self, timeout_ns: u64) -> io::Result<Reaped> {
        let mono = libc::CLOCK_MONOTONIC;
        let end = super::clock::now_ns(mono) + timeout_ns;
        loop {
            if let Some(r) = self.try_reap()? {
                return Ok(r);
            }
            let now = super::clock::now_ns(mono);
            if now >= end {
                break;
            }
            super::clock::sleep_until(mono, (now + 1_000_000).min(end));
        }
        self.kill()
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.running() {
            let _ = self.kill();
        }
    }
}

/// Number of threads of this process, from /proc/self/status.
pub fn thread_count() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Fork a child that runs `body` and exits with the code it returns (101 if it
/// panics), without running the parent's destructors: unlike the load
/// children, it may run any code (it sets itself up, allocates, …). The child
/// receives SIGKILL if the calling thread dies. Refused unless this process
/// has one thread: a child of a multi-threaded process could inherit a lock
/// held by a thread that does not exist in it.
pub fn fork_child<F: FnOnce() -> i32>(body: F) -> io::Result<Child> {
    match thread_count() {
        Some(1) => {}
        n => {
            return Err(io::Error::other(format!(
                "fork refused: the process already runs {} threads (an emulator such as qemu-user adds its own)",
                n.map_or_else(|| "an unknown number of".into(), |n| n.to_string())
            )))
        }
    }
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let child = || {
        // SAFETY: getppid has no preconditions.
        if super::signals::die_with_parent().is_err() || unsafe { libc::getppid() } != parent {
            1
        } else {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(101)
        }
    };
    // SAFETY: the process is single-threaded (checked above), so the child is a
    // complete copy that may run any code.
    unsafe { fork_with(child) }
}

/// Send `sig` to the process `pid`.
pub fn kill(pid: Pid, sig: i32) -> io::Result<()> {
    // SAFETY: kill has no memory-safety preconditions.
    if unsafe { libc::kill(pid, sig) } != 0 {
        return Err(super::last_error());
    }
    Ok(())
}

/// The child `cmd` will start receives SIGKILL when the thread that spawns
/// it ends (PR_SET_PDEATHSIG), so a killed `rtlat suite` leaves no step or
/// ssh client running; a child whose parent is already gone does not start.
pub fn die_with_spawner(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
    // SAFETY: the hook runs in the forked child before exec and makes only
    // async-signal-safe system calls (prctl, getppid); it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() as u32 != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    /// Under qemu-user (scripts/cross.sh) a child forked from the test
    /// harness's many threads runs qemu's translator, which can wait forever
    /// on a lock another thread held at the fork: these tests skip there.
    fn forks_hang_under_qemu(test: &str) -> bool {
        let emulated = std::env::var_os("RTLAT_TEST_EMULATOR").is_some();
        if emulated {
            eprintln!("skipped {test} under qemu-user: a child forked from a multi-threaded qemu-user process can deadlock in the emulator");
        }
        emulated
    }

    fn this_pid() -> Pid {
        std::process::id() as Pid
    }

    #[test]
    fn exec_runs_and_is_reaped_with_its_status() {
        if forks_hang_under_qemu("exec_runs_and_is_reaped_with_its_status") {
            return;
        }
        let null = std::fs::File::open("/dev/null").unwrap();
        let img = ExecImage::new(
            OsStr::new("/bin/sh"),
            &["sh".into(), "-c".into(), "exit 3".into()],
            &[],
        )
        .unwrap();
        let mut child = spawn_exec(&img, null.as_fd(), this_pid()).unwrap();
        child.wait_ended().unwrap();
        // Still a zombie: signalling it is harmless.
        kill(child.pid(), 0).unwrap();
        let r = child.reap().unwrap();
        assert_eq!(r.exit, Exit::Code(3));
        assert!(!child.running());
        let missing = ExecImage::new(OsStr::new("/nonexistent/x"), &["x".into()], &[]).unwrap();
        let mut child = spawn_exec(&missing, null.as_fd(), this_pid()).unwrap();
        assert_eq!(child.reap().unwrap().exit, Exit::Code(127));
    }

    #[test]
    fn forked_receiver_counts_messages_and_is_killed() {
        if forks_hang_under_qemu("forked_receiver_counts_messages_and_is_killed") {
            return;
        }
        let counters = crate::sys::shm::SharedWords::new(1).unwrap();
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut rx = fork_task(
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
        assert!(process_cpu_ns(rx.pid()).is_some());
        assert_eq!(rx.try_reap().unwrap().map(|r| r.exit), None);
        assert_eq!(rx.kill().unwrap().exit, Exit::Signal(libc::SIGKILL));
        assert_eq!(Exit::Signal(libc::SIGKILL).code(), 137);
        assert_eq!(counters.get(0).load(Ordering::Relaxed), 50);
    }

    #[test]
    fn a_dropped_child_is_killed_and_reaped() {
        if forks_hang_under_qemu("a_dropped_child_is_killed_and_reaped") {
            return;
        }
        let img = ExecImage::new(
            OsStr::new("/bin/sh"),
            &["sh".into(), "-c".into(), "sleep 30".into()],
            &[],
        )
        .unwrap();
        let null = std::fs::File::open("/dev/null").unwrap();
        let child = spawn_exec(&img, null.as_fd(), this_pid()).unwrap();
        let pid = child.pid();
        drop(child);
        // Reaped: no such child any more.
        // SAFETY: waitpid with WNOHANG and a null status pointer only asks.
        let rc = unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        assert_eq!(rc, -1);
    }

    #[test]
    fn fork_is_refused_in_a_multithreaded_process() {
        // The test harness runs tests on threads: the process is never single-threaded here.
        let _keep =
            std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_millis(200)));
        assert!(fork_child(|| 0).is_err());
    }
}
