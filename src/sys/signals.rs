//! SIGINT/SIGTERM/SIGHUP: blocked in every thread, received by one waiter
//! thread.
//!
//! The process blocks these signals before it spawns any thread, so
//! measuring threads inherit the blocked mask and are never interrupted. A
//! dedicated, non-real-time thread waits for them with sigwait(2) and raises
//! a flag: the run stops and saves its result. SIGHUP (the terminal or ssh
//! session that started the run closed) ends a run like SIGTERM, unless the
//! process was started with SIGHUP ignored (`nohup`): then it stays ignored
//! and the run goes on.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

/// The set of `signals`.
#[inline]
pub(crate) fn sigset(signals: &[libc::c_int]) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t.
    unsafe {
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
    }
    set
}

/// Block `signals` in the calling thread (and the threads and children it creates later).
pub(crate) fn block(signals: &[libc::c_int]) -> io::Result<()> {
    let set = sigset(signals);
    // SAFETY: `set` is initialised; the old-mask pointer may be null.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// Whether SIGHUP was ignored when the process started (`nohup`). A blocked
/// signal is queued even when ignored, so it must stay out of the waited set
/// for `nohup` to keep its meaning.
fn hangup_ignored() -> bool {
    static IGNORED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *IGNORED.get_or_init(|| {
        // SAFETY: sigaction is plain data, filled in by the call below.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a null new action only reads the current one into `old`.
        let rc = unsafe { libc::sigaction(libc::SIGHUP, std::ptr::null(), &mut old) };
        rc == 0 && old.sa_sigaction == libc::SIG_IGN
    })
}

/// The signals that end a run: SIGINT, SIGTERM, and SIGHUP unless ignored.
fn term_signals() -> &'static [libc::c_int] {
    if hangup_ignored() {
        &[libc::SIGINT, libc::SIGTERM]
    } else {
        &[libc::SIGINT, libc::SIGTERM, libc::SIGHUP]
    }
}

fn term_set() -> libc::sigset_t {
    sigset(term_signals())
}

/// Block the signals that end a run (SIGINT, SIGTERM, SIGHUP) in the calling
/// thread (and threads it spawns later).
pub fn block_termination() -> io::Result<()> {
    block(term_signals())
}

/// Wait for a signal that ends a run (they must be blocked); returns the signal number.
pub fn wait_termination() -> i32 {
    let set = term_set();
    let mut sig: libc::c_int = 0;
    loop {
        // SAFETY: `set` is initialised and `sig` is writable.
        if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
            return sig;
        }
    }
}

/// A signal that ends a run, pending for the process or the calling thread
/// (which must block them), taken without waiting.
fn take_pending() -> Option<i32> {
    let set = term_set();
    let now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `set` and `now` are initialised; the siginfo pointer may be null.
    let sig = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &now) };
    (sig > 0).then_some(sig)
}

/// Send `sig` to one thread of this process (used to wake the waiter thread
/// at the end of a run without disturbing any other thread).
/// `thread` is `JoinHandleExt::as_pthread_t` of a thread not yet joined.
pub fn raise_to_thread(thread: std::os::unix::thread::RawPthread, sig: i32) {
    // std's RawPthread is an integer; libc's pthread_t is a pointer on musl.
    let thread = thread as usize as libc::pthread_t;
    // SAFETY: `thread` is a live thread of this process (its JoinHandle is held by the caller).
    unsafe { libc::pthread_kill(thread, sig) };
}

/// Send `sig` to this process (a blocked signal stays pending until a
/// thread waits for it).
pub fn raise_to_process(sig: i32) {
    // SAFETY: kill(2) on our own pid with a valid signal number; no pointers.
    unsafe { libc::kill(libc::getpid(), sig) };
}

extern "C" fn ignore(_: libc::c_int) {}

/// Let a file size limit (`ulimit -f`) fail a write with EFBIG, reported
/// like any failed write with the temporary file removed, instead of
/// SIGXFSZ killing the process. A handler that does nothing, not SIG_IGN:
/// exec resets it, so children keep the default.
pub fn survive_file_size_limit() -> io::Result<()> {
    // SAFETY: sigaction is plain data, zeroed then filled; `ignore` is an
    // async-signal-safe function that touches nothing.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = ignore as extern "C" fn(libc::c_int) as libc::sighandler_t;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(libc::SIGXFSZ, &sa, std::ptr::null_mut()) != 0 {
            return Err(super::last_error());
        }
    }
    Ok(())
}

/// Block every signal that can be blocked in the calling thread: the main
/// thread once the work runs on another, so that signals meant for the
/// process reach the threads that handle them.
pub fn block_all_here() -> io::Result<()> {
    // SAFETY: sigset_t is plain data; sigfillset initialises it before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t; the old-mask pointer may be null.
    let rc = unsafe {
        libc::sigfillset(&mut set);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut())
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// Ask the kernel to send SIGKILL to this process when its parent dies.
pub fn die_with_parent() -> io::Result<()> {
    // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number; no pointers.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) } != 0 {
        return Err(super::last_error());
    }
    Ok(())
}

pub const SIGINT: i32 = libc::SIGINT;
pub const SIGTERM: i32 = libc::SIGTERM;
pub const SIGHUP: i32 = libc::SIGHUP;

/// The name of a signal that ends a run (`SIGINT`, `SIGTERM`, `SIGHUP`).
pub fn name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        _ => "SIGTERM",
    }
}

/// A stop request shared by all threads of a run: set by SIGINT/SIGTERM/SIGHUP, a
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

/// Watches for SIGINT/SIGTERM/SIGHUP on a non-real-time thread.
pub struct SignalWatch {
    caught: Arc<AtomicI32>,
    stop: StopFlag,
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SignalWatch {
    /// Block SIGINT/SIGTERM/SIGHUP process-wide (call before spawning threads) and
    /// start the watcher, which sets `stop` when one arrives.
    pub fn start(stop: StopFlag) -> io::Result<SignalWatch> {
        block_termination()?;
        let caught = Arc::new(AtomicI32::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let (c, d, flag) = (Arc::clone(&caught), Arc::clone(&done), stop.clone());
        let thread = std::thread::Builder::new()
            .name("rtlat-signals".into())
            .spawn(move || loop {
                let sig = wait_termination();
                if d.load(Ordering::SeqCst) {
                    return;
                }
                c.store(sig, Ordering::SeqCst);
                flag.set();
            })?;
        Ok(SignalWatch {
            caught,
            stop,
            done,
            thread: Some(thread),
        })
    }

    /// The signal that ended the run, if one did: one the watcher took, or
    /// one still pending because the watcher has not run since it came (a
    /// loaded machine; a run that ends at once on a signal sent before it).
    pub fn caught(&self) -> Option<i32> {
        if self.caught.load(Ordering::SeqCst) == 0 {
            if let Some(sig) = take_pending() {
                self.caught.store(sig, Ordering::SeqCst);
                self.stop.set();
            }
        }
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
            raise_to_thread(t.as_pthread_t(), SIGTERM);
            let _ = t.join();
        }
    }
}
