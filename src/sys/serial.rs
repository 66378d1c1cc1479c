//! Serial-port modem-control lines (irqbench's method): drive RTS/DTR with
//! TIOCMBIS/TIOCMBIC, read the lines with TIOCMGET, sleep until CTS/DSR/DCD/RI
//! change with TIOCMIWAIT, count changes with TIOCGICOUNT; and a per-thread
//! alarm that interrupts TIOCMIWAIT, which has no timeout of its own.

use std::io::{self, IsTerminal};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Once;

use super::clock::SecNs;

pub const RTS: i32 = libc::TIOCM_RTS;
pub const DTR: i32 = libc::TIOCM_DTR;
pub const CTS: i32 = libc::TIOCM_CTS;
pub const DSR: i32 = libc::TIOCM_DSR;
pub const DCD: i32 = libc::TIOCM_CAR;
pub const RI: i32 = libc::TIOCM_RNG;

/// `struct serial_icounter_struct` (include/uapi/linux/serial.h).
#[repr(C)]
#[derive(Default)]
struct IcounterRaw {
    cts: libc::c_int,
    dsr: libc::c_int,
    rng: libc::c_int,
    dcd: libc::c_int,
    rx: libc::c_int,
    tx: libc::c_int,
    frame: libc::c_int,
    overrun: libc::c_int,
    parity: libc::c_int,
    brk: libc::c_int,
    buf_overrun: libc::c_int,
    reserved: [libc::c_int; 9],
}

/// How often each input line changed since the port was opened (driver counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ModemCounts {
    pub cts: u32,
    pub dsr: u32,
    pub rng: u32,
    pub dcd: u32,
}

impl ModemCounts {
    /// The count of the line with TIOCM bit `bit`.
    pub fn of(&self, bit: i32) -> u32 {
        match bit {
            CTS => self.cts,
            DSR => self.dsr,
            RI => self.rng,
            _ => self.dcd,
        }
    }
}

/// An open serial port used for its modem-control lines only.
#[derive(Debug)]
pub struct ModemPort {
    fd: OwnedFd,
}

impl ModemPort {
    /// Open `path` read-write, without making it the controlling terminal.
    pub fn open(path: &Path) -> io::Result<ModemPort> {
        // std adds O_CLOEXEC.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
            .open(path)?;
        if !file.is_terminal() {
            return Err(io::Error::from_raw_os_error(libc::ENOTTY));
        }
        Ok(ModemPort { fd: file.into() })
    }

    /// Raise (`on`) or drop the output lines in `bits` (TIOCMBIS/TIOCMBIC).
    #[inline]
    pub fn set(&self, bits: i32, on: bool) -> io::Result<()> {
        let req = if on { libc::TIOCMBIS } else { libc::TIOCMBIC };
        let v: libc::c_int = bits;
        // SAFETY: TIOCMBIS/TIOCMBIC read one int through the pointer, which is valid.
        if unsafe { libc::ioctl(self.fd.as_raw_fd(), req, &v) } != 0 {
            return Err(super::last_error());
        }
        Ok(())
    }

    /// The modem lines now (TIOCMGET), as TIOCM_* bits.
    #[inline]
    pub fn get(&self) -> io::Result<i32> {
        let mut v: libc::c_int = 0;
        // SAFETY: TIOCMGET writes one int through the pointer, which is valid and writable.
        if unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::TIOCMGET, &mut v) } != 0 {
            return Err(super::last_error());
        }
        Ok(v)
    }

    /// Sleep until one of the input lines in `mask` changes (TIOCMIWAIT).
    /// A signal (see [`Alarm`]) ends the wait with `ErrorKind::Interrupted`.
    #[inline]
    pub fn wait_change(&self, mask: i32) -> io::Result<()> {
        // SAFETY: TIOCMIWAIT takes its mask by value and touches no memory of ours.
        if unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::TIOCMIWAIT, mask as libc::c_ulong) } != 0
        {
            return Err(super::last_error());
        }
        Ok(())
    }

    /// Change counts of the input lines (TIOCGICOUNT); not every driver has them.
    #[inline]
    pub fn counts(&self) -> io::Result<ModemCounts> {
        let mut raw = IcounterRaw::default();
        // SAFETY: TIOCGICOUNT fills a serial_icounter_struct, which `raw` is (repr(C), same layout).
        if unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::TIOCGICOUNT, &mut raw) } != 0 {
            return Err(super::last_error());
        }
        Ok(ModemCounts {
            cts: raw.cts as u32,
            dsr: raw.dsr as u32,
            rng: raw.rng as u32,
            dcd: raw.dcd as u32,
        })
    }
}

/// The signal an [`Alarm`] sends: a real-time signal nothing else in rtlat uses.
fn alarm_signal() -> libc::c_int {
    (libc::SIGRTMIN() + 4).min(libc::SIGRTMAX())
}

extern "C" fn on_alarm(_: libc::c_int) {}

static HANDLER: Once = Once::new();

/// A timer that interrupts a blocking call of the thread that made it: at the
/// deadline it sends that thread a signal whose handler does nothing and is
/// installed without SA_RESTART, so the call fails with EINTR.
#[derive(Debug)]
pub struct Alarm {
    timer: libc::timer_t,
}

// SAFETY: a timer_t is a process-wide kernel timer id, valid from any thread.
unsafe impl Send for Alarm {}

impl Alarm {
    /// Create the alarm for the calling thread on `clock`.
    pub fn for_this_thread(clock: libc::clockid_t) -> io::Result<Alarm> {
        let sig = alarm_signal();
        let mut failed = None;
        HANDLER.call_once(|| {
            // SAFETY: sigaction is plain old data; zeroed is a valid value.
            let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
            sa.sa_sigaction = on_alarm as *const () as libc::sighandler_t;
            sa.sa_flags = 0;
            // SAFETY: `sa` is valid; the handler is async-signal-safe (it does nothing).
            unsafe {
                libc::sigemptyset(&mut sa.sa_mask);
                if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                    failed = Some(super::last_error());
                }
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        // SAFETY: sigset_t is plain old data; zeroed then emptied is valid.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is valid and writable; pthread_sigmask only changes this thread's mask.
        unsafe {
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
        // SAFETY: sigevent is plain old data; zeroed is a valid value.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = sig;
        sev.sigev_notify_thread_id = super::sched::gettid();
        let mut timer: libc::timer_t = std::ptr::null_mut();
        // SAFETY: `sev` and `timer` are valid; the kernel writes the timer id into `timer`.
        if unsafe { libc::timer_create(clock, &mut sev, &mut timer) } != 0 {
            return Err(super::last_error());
        }
        Ok(Alarm { timer })
    }

    /// Fire at the absolute time `deadline_ns`, then every `repeat_ns` until disarmed.
    #[inline]
    pub fn arm(&self, deadline_ns: u64, repeat_ns: u64) -> io::Result<()> {
        let spec = libc::itimerspec {
            it_interval: libc::timespec::from_ns(repeat_ns),
            it_value: libc::timespec::from_ns(deadline_ns.max(1)),
        };
        // SAFETY: `self.timer` is a live timer; `spec` is valid; the old value is not wanted.
        let rc = unsafe {
            libc::timer_settime(self.timer, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(super::last_error());
        }
        Ok(())
    }

    /// Stop the alarm.
    #[inline]
    pub fn disarm(&self) {
        // SAFETY: an all-zero itimerspec is valid and disarms the timer.
        let spec: libc::itimerspec = unsafe { std::mem::zeroed() };
        // SAFETY: `self.timer` is a live timer; `spec` is valid.
        unsafe { libc::timer_settime(self.timer, 0, &spec, std::ptr::null_mut()) };
    }
}

impl Drop for Alarm {
    fn drop(&mut self) {
        // SAFETY: the timer is live and deleted exactly once.
        unsafe { libc::timer_delete(self.timer) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_port_is_not_found_and_a_file_is_not_a_tty() {
        let e = ModemPort::open(Path::new("/dev/rtlat-no-such-tty")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let f = tempfile::NamedTempFile::new().unwrap();
        let e = ModemPort::open(f.path()).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTTY));
    }

    #[test]
    fn the_alarm_interrupts_a_blocking_call_of_its_thread() {
        let c = libc::CLOCK_MONOTONIC;
        let alarm = Alarm::for_this_thread(c).unwrap();
        let t0 = super::super::clock::now_ns(c);
        alarm.arm(t0 + 20_000_000, 0).unwrap();
        // A blocking read on a pipe nobody writes to: the alarm must end it.
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let mut b = [0u8; 1];
        // SAFETY: `b` is valid for one byte.
        let rc = unsafe { libc::read(fds[0], b.as_mut_ptr().cast(), 1) };
        let err = io::Error::last_os_error();
        alarm.disarm();
        // SAFETY: both descriptors are ours and closed once.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        assert_eq!(rc, -1);
        assert_eq!(err.kind(), io::ErrorKind::Interrupted);
        let waited = super::super::clock::now_ns(c) - t0;
        assert!(waited >= 20_000_000, "woke after {waited} ns");
    }
}
