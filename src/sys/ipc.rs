//! Wake-up mechanisms between threads and processes (`rtlat switch --via`).
//! Their shared memory is [`SharedWords`]; the forked wakees are
//! [`super::process::fork_child`] children.
//!
//! A [`Doorbell`] is one wake line: one side [`ring`](Doorbell::ring)s it
//! (never blocking), the other [`wait`](Doorbell::wait)s on it (blocking, no
//! timeout: the waker always rings a last time at the end of a run) or
//! [`wait_until`](Doorbell::wait_until) a deadline. Every mechanism counts:
//! a ring made before the wait is kept, and each ring ends exactly one wait.

use rustix::event::EventfdFlags;
use rustix::pipe::PipeFlags;
use rustix::thread::futex;
use std::ffi::CString;
use std::io;
use std::num::NonZeroU32;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

use super::clock::SecNs;
use super::last_error;
use super::shm::SharedWords;

/// The signal of `--via signal` lines: the first real-time signal, which
/// queues (one delivery per ring, like every other line); blocked in every
/// thread and taken with sigwaitinfo.
pub fn wake_signal() -> i32 {
    libc::SIGRTMIN()
}

/// The wake mechanisms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// A futex word: atomic increment + FUTEX_WAKE / FUTEX_WAIT.
    Futex,
    /// eventfd(2): write / read of an 8-byte counter.
    Eventfd,
    /// A pipe: one byte written / read.
    Pipe,
    /// A POSIX unnamed semaphore (sem_post / sem_wait), process-shared with processes.
    PosixSem,
    /// A System V semaphore (semop +1 / −1).
    SysvSem,
    /// A POSIX message queue (mq_send / mq_receive of an 8-byte message).
    Mqueue,
    /// A real-time signal sent to the waiting thread (tgkill) and taken with sigwaitinfo.
    Signal,
}

impl Mechanism {
    pub const ALL: [Mechanism; 7] = [
        Mechanism::Futex,
        Mechanism::Eventfd,
        Mechanism::Pipe,
        Mechanism::PosixSem,
        Mechanism::SysvSem,
        Mechanism::Mqueue,
        Mechanism::Signal,
    ];

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Futex => "futex",
            Mechanism::Eventfd => "eventfd",
            Mechanism::Pipe => "pipe",
            Mechanism::PosixSem => "posix-sem",
            Mechanism::SysvSem => "sysv-sem",
            Mechanism::Mqueue => "mqueue",
            Mechanism::Signal => "signal",
        }
    }
}

enum Line {
    Futex {
        word: SharedWords,
        private: bool,
    },
    Eventfd(OwnedFd),
    Pipe {
        rd: OwnedFd,
        wr: OwnedFd,
    },
    PosixSem(SharedWords),
    SysvSem(libc::c_int),
    Mqueue {
        tx: libc::mqd_t,
        rx: libc::mqd_t,
    },
    /// Words 0/1: thread group and thread id of the wakee.
    Signal(SharedWords),
}

/// One wake line between a waker and a wakee (threads, or a process and its child).
pub struct Doorbell {
    line: Line,
}

static MQ_SEQ: AtomicU32 = AtomicU32::new(0);

impl Doorbell {
    /// Create a wake line. With `across_processes`, everything it uses lives in
    /// shared memory or kernel objects a child forked afterwards inherits.
    pub fn new(m: Mechanism, across_processes: bool) -> io::Result<Doorbell> {
        let line = match m {
            Mechanism::Futex => Line::Futex {
                word: SharedWords::new(1)?,
                private: !across_processes,
            },
            Mechanism::Eventfd => Line::Eventfd(rustix::event::eventfd(
                0,
                EventfdFlags::CLOEXEC | EventfdFlags::SEMAPHORE,
            )?),
            Mechanism::Pipe => {
                let (rd, wr) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC)?;
                // The write end never blocks: a full pipe means the wakee is far behind anyway.
                rustix::io::ioctl_fionbio(&wr, true)?;
                Line::Pipe { rd, wr }
            }
            Mechanism::PosixSem => {
                let map = SharedWords::sized_for::<libc::sem_t>()?;
                let pshared = libc::c_int::from(across_processes);
                // SAFETY: the mapping is large enough and aligned for a sem_t, and not yet shared.
                if unsafe { libc::sem_init(map.as_ptr::<libc::sem_t>(), pshared, 0) } != 0 {
                    return Err(last_error());
                }
                Line::PosixSem(map)
            }
            Mechanism::SysvSem => {
                // SAFETY: semget has no memory-safety preconditions.
                let id = unsafe { libc::semget(libc::IPC_PRIVATE, 1, libc::IPC_CREAT | 0o600) };
                if id < 0 {
                    return Err(last_error());
                }
                Line::SysvSem(id)
            }
            Mechanism::Mqueue => {
                // SAFETY: getpid has no preconditions.
                let pid = unsafe { libc::getpid() };
                let seq = MQ_SEQ.fetch_add(1, Ordering::Relaxed);
                let name = CString::new(format!("/rtlat-{pid}-{seq}"))
                    .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
                // SAFETY: mq_attr is plain data; zero is valid for every field.
                let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
                // Room for every ring that can be pending at once (arm, wake, stop).
                attr.mq_maxmsg = 4;
                attr.mq_msgsize = MQ_MSG as _;
                // SAFETY: `name` is a valid C string, `attr` a valid mq_attr; the variadic
                // arguments are the mode and the attribute pointer O_CREAT requires.
                let rx = unsafe {
                    libc::mq_open(
                        name.as_ptr(),
                        libc::O_RDONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
                        0o600 as libc::mode_t,
                        &attr as *const libc::mq_attr,
                    )
                };
                if rx < 0 {
                    return Err(last_error());
                }
                // SAFETY: `name` is a valid C string naming the queue created above.
                let tx = unsafe {
                    libc::mq_open(
                        name.as_ptr(),
                        libc::O_WRONLY | libc::O_NONBLOCK | libc::O_CLOEXEC,
                    )
                };
                let err = last_error();
                // Unlinked at once: the descriptors (inherited by a child) keep it alive,
                // and nothing is left behind if rtlat is killed.
                // SAFETY: `name` is a valid C string.
                unsafe { libc::mq_unlink(name.as_ptr()) };
                if tx < 0 {
                    // SAFETY: `rx` is a descriptor we opened.
                    unsafe { libc::mq_close(rx) };
                    return Err(err);
                }
                Line::Mqueue { tx, rx }
            }
            Mechanism::Signal => Line::Signal(SharedWords::new(2)?),
        };
        Ok(Doorbell { line })
    }

    /// Called by the waiting side (thread or child process) before its first wait.
    pub fn attach_waiter(&self) {
        if let Line::Signal(ids) = &self.line {
            // SAFETY: getpid has no preconditions.
            let tgid = unsafe { libc::getpid() };
            let tid = super::sched::gettid();
            ids.words()[0].store(tgid as u32, Ordering::Relaxed);
            ids.words()[1].store(tid as u32, Ordering::Release);
        }
    }

    /// Wake the wakee. Never blocks; returns false if the ring could not be posted.
    #[inline(always)]
    pub fn ring(&self) -> bool {
        match &self.line {
            Line::Futex { word, private } => {
                let w = &word.words()[0];
                w.fetch_add(1, Ordering::Release);
                futex::wake(w, futex_flags(*private), 1).is_ok()
            }
            Line::Eventfd(fd) => rustix::io::write(fd, &1u64.to_ne_bytes()) == Ok(8),
            Line::Pipe { wr, .. } => rustix::io::write(wr, &[1u8]) == Ok(1),
            Line::PosixSem(map) => {
                // SAFETY: the mapping holds a sem_t initialised in `new` and not yet destroyed.
                unsafe { libc::sem_post(map.as_ptr::<libc::sem_t>()) == 0 }
            }
            Line::SysvSem(id) => semop(*id, 1, libc::IPC_NOWAIT as libc::c_short) == 0,
            Line::Mqueue { tx, .. } => {
                let msg = [0u8; MQ_MSG];
                // SAFETY: `msg` is MQ_MSG readable bytes; `tx` is an open, non-blocking queue.
                unsafe { libc::mq_send(*tx, msg.as_ptr() as *const libc::c_char, MQ_MSG, 0) == 0 }
            }
            Line::Signal(ids) => {
                let tid = ids.words()[1].load(Ordering::Acquire) as libc::c_long;
                let tgid = ids.words()[0].load(Ordering::Relaxed) as libc::c_long;
                if tid == 0 {
                    return false;
                }
                // SAFETY: tgkill takes plain integers; a stale id only yields ESRCH.
                unsafe {
                    libc::syscall(libc::SYS_tgkill, tgid, tid, wake_signal() as libc::c_long) == 0
                }
            }
        }
    }

    /// Block until rung. `token` is the wakee's own count of rings taken (used by
    /// the futex line; start it at 0). Interruptions are retried.
    #[inline(always)]
    pub fn wait(&self, token: &mut u32) -> io::Result<()> {
        loop {
            let done: io::Result<()> = match &self.line {
                Line::Futex { word, private } => {
                    // The word counts rings; the token counts the rings taken.
                    let w = &word.words()[0];
                    let v = w.load(Ordering::Acquire);
                    if v != *token {
                        *token = token.wrapping_add(1);
                        return Ok(());
                    }
                    match futex::wait(w, futex_flags(*private), v, None) {
                        // Woken, changed or interrupted: look at the word again.
                        Ok(()) | Err(rustix::io::Errno::AGAIN) => continue,
                        Err(e) => Err(e.into()),
                    }
                }
                Line::Eventfd(fd) => rustix::io::read(fd, &mut [0u8; 8])
                    .map(drop)
                    .map_err(io::Error::from),
                Line::Pipe { rd, .. } => rustix::io::read(rd, &mut [0u8; 1])
                    .map(drop)
                    .map_err(io::Error::from),
                Line::PosixSem(map) => {
                    // SAFETY: the mapping holds an initialised sem_t.
                    checked((unsafe { libc::sem_wait(map.as_ptr::<libc::sem_t>()) }) as isize)
                }
                Line::SysvSem(id) => checked(semop(*id, -1, 0) as isize),
                Line::Mqueue { rx, .. } => checked(mq_take(*rx, None)),
                Line::Signal(_) => {
                    let set = wake_set();
                    // SAFETY: `set` is an initialised sigset_t; the info pointer may be null.
                    checked((unsafe { libc::sigwaitinfo(&set, std::ptr::null_mut()) }) as isize)
                }
            };
            match done {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }
}

impl Doorbell {
    /// Like [`wait`](Doorbell::wait), but give up at the absolute CLOCK_MONOTONIC
    /// time `deadline_ns`: returns true when rung, false at the deadline.
    pub fn wait_until(&self, token: &mut u32, deadline_ns: u64) -> io::Result<bool> {
        let mono = libc::CLOCK_MONOTONIC;
        loop {
            let now = super::clock::now_ns(mono);
            let left = deadline_ns.saturating_sub(now);
            let rel = libc::timespec::from_ns(left);
            let rc: isize = match &self.line {
                Line::Futex { word, private } => {
                    let w = &word.words()[0];
                    let v = w.load(Ordering::Acquire);
                    if v != *token {
                        *token = token.wrapping_add(1);
                        return Ok(true);
                    }
                    if left == 0 {
                        return Ok(false);
                    }
                    futex_wait_until(w, v, deadline_ns, !*private);
                    continue;
                }
                Line::Eventfd(fd) | Line::Pipe { rd: fd, .. } => {
                    let mut p = libc::pollfd {
                        fd: fd.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    // SAFETY: `p` is one valid pollfd, `rel` a valid timespec; no signal mask.
                    let n = unsafe { libc::ppoll(&mut p, 1, &rel, std::ptr::null()) };
                    if n == 0 {
                        return Ok(false);
                    }
                    if n > 0 {
                        // Readable: the read takes one ring without blocking.
                        return self.wait(token).map(|()| true);
                    }
                    n as isize
                }
                Line::PosixSem(map) => {
                    let abs =
                        libc::timespec::from_ns(super::clock::now_ns(libc::CLOCK_REALTIME) + left);
                    // SAFETY: the mapping holds an initialised sem_t; `abs` is a valid timespec.
                    (unsafe { libc::sem_timedwait(map.as_ptr::<libc::sem_t>(), &abs) }) as isize
                }
                Line::SysvSem(id) => {
                    let mut b = libc::sembuf {
                        sem_num: 0,
                        sem_op: -1,
                        sem_flg: 0,
                    };
                    // SAFETY: `b` is one valid sembuf, `rel` a valid relative timeout.
                    (unsafe { semtimedop(*id, &mut b, 1, &rel) }) as isize
                }
                Line::Mqueue { rx, .. } => {
                    let abs =
                        libc::timespec::from_ns(super::clock::now_ns(libc::CLOCK_REALTIME) + left);
                    mq_take(*rx, Some(&abs))
                }
                Line::Signal(_) => {
                    let set = wake_set();
                    // SAFETY: `set` and `rel` are initialised; the info pointer may be null.
                    (unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &rel) }) as isize
                }
            };
            if rc >= 0 {
                return Ok(true);
            }
            let e = last_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ETIMEDOUT) | Some(libc::EAGAIN) => return Ok(false),
                _ => return Err(e),
            }
        }
    }
}

extern "C" {
    /// semop with a relative timeout (glibc and musl provide it; the libc crate does not declare it).
    fn semtimedop(
        semid: libc::c_int,
        sops: *mut libc::sembuf,
        nsops: libc::size_t,
        timeout: *const libc::timespec,
    ) -> libc::c_int;
}

impl Drop for Doorbell {
    fn drop(&mut self) {
        match &self.line {
            Line::PosixSem(map) => {
                // SAFETY: the sem_t was initialised in `new`; no thread waits on it any more.
                unsafe { libc::sem_destroy(map.as_ptr::<libc::sem_t>()) };
            }
            Line::SysvSem(id) => {
                // SAFETY: IPC_RMID takes no argument beyond the id.
                unsafe { libc::semctl(*id, 0, libc::IPC_RMID) };
            }
            Line::Mqueue { tx, rx } => {
                // SAFETY: both descriptors were opened in `new` and are closed once.
                unsafe {
                    libc::mq_close(*tx);
                    libc::mq_close(*rx);
                }
            }
            _ => {}
        }
    }
}

/// Message size of the queues (the message carries nothing; its arrival is the wake).
const MQ_MSG: usize = 8;

/// Futex flags of a line: private to this process unless shared with a child.
#[inline(always)]
fn futex_flags(private: bool) -> futex::Flags {
    if private {
        futex::Flags::PRIVATE
    } else {
        futex::Flags::empty()
    }
}

/// Block while `word` holds `val`, until woken or until the absolute
/// CLOCK_MONOTONIC time `deadline_ns`. Returns on a wake, a timeout, an
/// interruption or a changed value: callers re-check the word. `shared`: the
/// word lives in memory shared with another process.
#[inline(always)]
fn futex_wait_until(word: &AtomicU32, val: u32, deadline_ns: u64, shared: bool) {
    let deadline = rustix::time::Timespec::from_ns(deadline_ns);
    // FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC timeout and a
    // bitset (all bits: any waker).
    let _ = futex::wait_bitset(
        word,
        futex_flags(!shared),
        val,
        Some(&deadline),
        NonZeroU32::MAX,
    );
}

/// A libc return value as a result: negative means the error in `errno`.
#[inline(always)]
fn checked(rc: isize) -> io::Result<()> {
    if rc >= 0 {
        Ok(())
    } else {
        Err(last_error())
    }
}

#[inline(always)]
fn semop(id: libc::c_int, op: libc::c_short, flags: libc::c_short) -> libc::c_int {
    let mut b = libc::sembuf {
        sem_num: 0,
        sem_op: op,
        sem_flg: flags,
    };
    // SAFETY: `b` is one valid sembuf.
    unsafe { libc::semop(id, &mut b, 1) }
}

/// Take one message from `rx`, waiting until the absolute CLOCK_REALTIME time
/// `abs` (`None`: for ever). mq_receive is this call with no timeout.
#[inline(always)]
fn mq_take(rx: libc::mqd_t, abs: Option<&libc::timespec>) -> isize {
    let mut msg = [0u8; MQ_MSG];
    let abs = abs.map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `msg` is MQ_MSG writable bytes, the queue's message size; `abs` is null or a valid timespec.
    (unsafe {
        libc::mq_timedreceive(
            rx,
            msg.as_mut_ptr() as *mut libc::c_char,
            MQ_MSG,
            std::ptr::null_mut(),
            abs,
        )
    }) as isize
}

fn wake_set() -> libc::sigset_t {
    super::signals::sigset(&[wake_signal()])
}

/// Block [`wake_signal`] in the calling thread and the threads and children it
/// creates afterwards, so it is only ever taken by sigwaitinfo.
pub fn block_wake_signal() -> io::Result<()> {
    super::signals::block(&[wake_signal()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Every mechanism delivers each ring exactly once between two threads,
    /// including a ring made before the wakee waits.
    #[test]
    fn every_mechanism_wakes_a_thread_once_per_ring() {
        block_wake_signal().expect("block");
        for m in Mechanism::ALL {
            let bell = Arc::new(Doorbell::new(m, false).expect("doorbell"));
            let seen = Arc::new(AtomicU32::new(0));
            let ready = Arc::new(AtomicU32::new(0));
            let done = Arc::new(AtomicU32::new(0));
            let (b, s, r, d) = (
                Arc::clone(&bell),
                Arc::clone(&seen),
                Arc::clone(&ready),
                Arc::clone(&done),
            );
            let t = std::thread::spawn(move || {
                block_wake_signal().expect("block");
                b.attach_waiter();
                r.store(1, Ordering::Release);
                let mut token = 0;
                while d.load(Ordering::Acquire) == 0 {
                    b.wait(&mut token).expect("wait");
                    s.fetch_add(1, Ordering::AcqRel);
                }
            });
            while ready.load(Ordering::Acquire) == 0 {
                std::thread::yield_now();
            }
            for i in 1..=3 {
                assert!(bell.ring(), "{}: ring failed", m.name());
                let t0 = std::time::Instant::now();
                while seen.load(Ordering::Acquire) < i {
                    assert!(
                        t0.elapsed().as_secs() < 5,
                        "{}: wake {i} not delivered",
                        m.name()
                    );
                    std::thread::yield_now();
                }
                // No second return for one ring.
                std::thread::sleep(std::time::Duration::from_millis(20));
                assert_eq!(
                    seen.load(Ordering::Acquire),
                    i,
                    "{}: spurious wake",
                    m.name()
                );
            }
            done.store(1, Ordering::Release);
            assert!(bell.ring());
            t.join().expect("wakee");
        }
    }

    /// A timed wait ends at its deadline without a ring, and at once with one.
    #[test]
    fn every_mechanism_waits_until_a_deadline() {
        block_wake_signal().expect("block");
        let mono = libc::CLOCK_MONOTONIC;
        for m in Mechanism::ALL {
            let bell = Doorbell::new(m, false).expect("doorbell");
            bell.attach_waiter();
            let mut token = 0;
            let t0 = crate::sys::clock::now_ns(mono);
            let rung = bell.wait_until(&mut token, t0 + 5_000_000).expect("wait");
            let t1 = crate::sys::clock::now_ns(mono);
            assert!(!rung, "{}: woken without a ring", m.name());
            assert!(t1 >= t0 + 4_000_000, "{}: returned early", m.name());
            assert!(bell.ring());
            assert!(bell.ring());
            let far = crate::sys::clock::now_ns(mono) + 5_000_000_000;
            // Two rings end exactly two waits.
            assert!(
                bell.wait_until(&mut token, far).expect("wait"),
                "{}",
                m.name()
            );
            assert!(
                bell.wait_until(&mut token, far).expect("wait"),
                "{}",
                m.name()
            );
            let t2 = crate::sys::clock::now_ns(mono);
            assert!(
                t2 - t1 < 1_000_000_000,
                "{}: a ring was not taken",
                m.name()
            );
            let soon = crate::sys::clock::now_ns(mono) + 2_000_000;
            assert!(
                !bell.wait_until(&mut token, soon).expect("wait"),
                "{}: a third wake",
                m.name()
            );
        }
    }
}
