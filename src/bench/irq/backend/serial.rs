//! `--backend serial`: the modem-control lines of a serial port (irqbench's
//! method; USB-serial adapters too). RTS or DTR is driven; CTS, DSR, DCD or
//! RI is watched with TIOCMIWAIT. There are no kernel timestamps: the user
//! time is taken when TIOCMIWAIT returns. Where the driver counts line changes
//! (TIOCGICOUNT), the count is the sequence number, so changes that came and
//! went between two waits show as lost events.

use super::{Edge, EdgeBackend};
use crate::bench::irq::config::IrqConfig;
use crate::error::{Error, Result};
use crate::sys::serial::{self, Alarm, ModemPort};
use std::io;
use std::path::Path;

/// Longest single TIOCMIWAIT: bounds the cost of a change that slips in
/// between the last check and the wait (TIOCMIWAIT only sees later changes).
const WAIT_SLICE_NS: u64 = 10_000_000;

pub fn out_bit(name: &str) -> Option<i32> {
    match name.to_ascii_lowercase().as_str() {
        "rts" => Some(serial::RTS),
        "dtr" => Some(serial::DTR),
        _ => None,
    }
}

pub fn in_bit(name: &str) -> Option<i32> {
    match name.to_ascii_lowercase().as_str() {
        "cts" => Some(serial::CTS),
        "dsr" => Some(serial::DSR),
        "dcd" | "cd" => Some(serial::DCD),
        "ri" => Some(serial::RI),
        _ => None,
    }
}

pub struct SerialBackend {
    port: ModemPort,
    out_bit: i32,
    in_bit: i32,
    clock: libc::clockid_t,
    alarm: Option<Alarm>,
    level: bool,
    /// The driver's change count of the watched line, when it keeps one.
    count: Option<u32>,
    seqno: u32,
}

fn open_error(path: &Path, e: &io::Error) -> Error {
    let p = path.display();
    Error::env(match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::ENXIO) => format!(
            "no serial port {p}: check the name (ls /dev/ttyS* /dev/ttyUSB* /dev/ttyACM*) and that the adapter is plugged in"
        ),
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "no permission to open {p}: run as root, or join the group that owns it (ls -l {p}; e.g. sudo usermod -aG dialout $USER, then log in again)"
        ),
        Some(libc::EBUSY) => {
            format!("serial port {p} is busy: close the program using it (fuser {p})")
        }
        Some(libc::ENOTTY) => format!(
            "{p} is not a serial port: give a tty device such as /dev/ttyS0 or /dev/ttyUSB0"
        ),
        _ => format!("cannot open serial port {p}: {e}"),
    })
}

impl SerialBackend {
    pub fn open(cfg: &IrqConfig) -> Result<Self> {
        let path = cfg
            .port
            .as_deref()
            .ok_or_else(|| Error::usage("--backend serial needs --port DEVICE"))?;
        let out_name = cfg.out_line.as_deref().unwrap_or("rts");
        let in_name = cfg.in_line.as_deref().unwrap_or("cts");
        let out_bit = out_bit(out_name).ok_or_else(|| {
            Error::usage(format!("--out {out_name}: a serial port drives rts or dtr"))
        })?;
        let in_bit = in_bit(in_name).ok_or_else(|| {
            Error::usage(format!(
                "--in {in_name}: a serial port watches cts, dsr, dcd or ri"
            ))
        })?;
        let port = ModemPort::open(path).map_err(|e| open_error(path, &e))?;
        let bits = port.get().map_err(|e| {
            Error::env(format!(
                "{} has no modem-control lines (TIOCMGET: {e}): use a real UART or USB-serial adapter, not a pseudo-terminal",
                path.display()
            ))
        })?;
        let idle = cfg.measured().idle_high();
        port.set(out_bit, idle).map_err(|e| {
            Error::env(format!(
                "cannot drive {out_name} on {} (TIOCMBIS/TIOCMBIC: {e})",
                path.display()
            ))
        })?;
        let count = port.counts().ok().map(|c| c.of(in_bit));
        Ok(SerialBackend {
            port,
            out_bit,
            in_bit,
            clock: cfg.clock_id(),
            alarm: None,
            level: bits & in_bit != 0,
            count,
            seqno: 0,
        })
    }

    /// A change of the watched line since the last look, if there was one.
    #[inline]
    fn change(&mut self, user_ns: u64) -> io::Result<Option<Edge>> {
        let high = self.port.get()? & self.in_bit != 0;
        let changes = match self.count {
            Some(last) => {
                let now = self.port.counts()?.of(self.in_bit);
                self.count = Some(now);
                now.wrapping_sub(last)
            }
            None => u32::from(high != self.level),
        };
        self.level = high;
        if changes == 0 {
            return Ok(None);
        }
        self.seqno = self.seqno.wrapping_add(changes);
        Ok(Some(Edge {
            rising: high,
            kernel_ns: None,
            user_ns,
            seqno: self.count.map(|_| self.seqno),
        }))
    }
}

impl EdgeBackend for SerialBackend {
    fn begin(&mut self, _start_ns: u64) -> io::Result<()> {
        self.alarm = Some(Alarm::for_this_thread(self.clock)?);
        Ok(())
    }

    #[inline]
    fn drive(&mut self, high: bool) -> io::Result<()> {
        self.port.set(self.out_bit, high)
    }

    fn wait_edge(&mut self, deadline_ns: u64) -> io::Result<Option<Edge>> {
        loop {
            let now = crate::sys::clock::now_ns(self.clock);
            if let Some(e) = self.change(now)? {
                return Ok(Some(e));
            }
            if now >= deadline_ns {
                return Ok(None);
            }
            let Some(alarm) = &self.alarm else {
                return Err(io::Error::other("serial backend used before begin()"));
            };
            alarm.arm(deadline_ns.min(now + WAIT_SLICE_NS), WAIT_SLICE_NS)?;
            let waited = self.port.wait_change(self.in_bit);
            let woke = crate::sys::clock::now_ns(self.clock);
            alarm.disarm();
            match waited {
                Ok(()) => {
                    if let Some(e) = self.change(woke)? {
                        return Ok(Some(e));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    fn input_level(&mut self) -> io::Result<bool> {
        Ok(self.level)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_names() {
        assert_eq!(out_bit("RTS"), Some(serial::RTS));
        assert_eq!(out_bit("dtr"), Some(serial::DTR));
        assert_eq!(out_bit("cts"), None);
        assert_eq!(in_bit("cts"), Some(serial::CTS));
        assert_eq!(in_bit("ri"), Some(serial::RI));
        assert_eq!(in_bit("rts"), None);
    }

    #[test]
    fn open_errors_name_the_fix() {
        let p = Path::new("/dev/ttyUSB-rtlat");
        let e = open_error(p, &io::Error::from_raw_os_error(libc::ENOENT));
        assert_eq!(e.exit_code(), crate::error::exit::ENVIRONMENT);
        assert!(e.to_string().contains("ls /dev/ttyS*"), "{e}");
        let e = open_error(p, &io::Error::from_raw_os_error(libc::EACCES));
        assert!(e.to_string().contains("dialout"), "{e}");
    }
}
