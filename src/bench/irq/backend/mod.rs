//! Edge backends: where the edges of a run come from and which line is
//! driven. One trait, three implementations: the GPIO character device, the
//! modem lines of a serial port, and an in-process simulated wire.

mod gpio;
mod serial;
mod sim;

pub(crate) use gpio::kernel_line;

use super::config::{Backend, IrqConfig, ReplyFrom, Role, DEFAULT_PERIOD_NS};
use crate::error::Result;
use std::io;

/// One edge seen on the watched line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Edge {
    /// A rising edge: the line is now high.
    pub rising: bool,
    /// The kernel's timestamp of the edge (run clock); `None` when the backend has none (serial).
    pub kernel_ns: Option<u64>,
    /// When the measuring thread held the event: right after the read returned.
    pub user_ns: u64,
    /// The kernel's sequence number of the event on its line, when the backend has one.
    pub seqno: Option<u32>,
}

/// A source of edges on a watched line and a line to drive. The measuring
/// thread calls `drive` and `wait_edge` in its hot loop: neither allocates.
pub trait EdgeBackend {
    /// Called on the measuring thread once it is set up, with the run's start
    /// time; buffers and per-thread resources are made ready here.
    fn begin(&mut self, _start_ns: u64) -> io::Result<()> {
        Ok(())
    }
    /// Drive the output line high or low.
    fn drive(&mut self, high: bool) -> io::Result<()>;
    /// The next edge on the watched line, waiting until `deadline_ns` at most
    /// (run clock, absolute); `None` when none came in time.
    fn wait_edge(&mut self, deadline_ns: u64) -> io::Result<Option<Edge>>;
    /// The current level of the watched line (before the run).
    fn input_level(&mut self) -> io::Result<bool>;
    /// Whether edges carry kernel timestamps (`Edge::kernel_ns`); not unless
    /// the backend says so.
    fn kernel_timestamps(&self) -> bool {
        false
    }
    /// Replies issued by the kernel (the responder module): when the reply to
    /// the edge `wait_edge` returned last was issued; `None` for rtlat's own.
    fn kernel_reply_ns(&self) -> Option<u64> {
        None
    }
    /// Replies issued by the kernel: the responder's counters now.
    fn responder_counts(&self) -> Option<crate::result::details::irq::ResponderCounts> {
        None
    }
}

/// Open the backend the configuration names (before memory is locked), for
/// replies issued by rtlat itself (`--reply-from user`).
pub fn open(cfg: &IrqConfig) -> Result<Box<dyn EdgeBackend + Send>> {
    debug_assert!(cfg.reply_from == ReplyFrom::User);
    Ok(match cfg.backend {
        Backend::Gpio => Box::new(gpio::GpioBackend::open(cfg)?),
        Backend::Serial => Box::new(serial::SerialBackend::open(cfg)?),
        Backend::Sim => {
            let mode = match cfg.role {
                Role::Target => sim::SimSource::Source {
                    period_ns: cfg.period_ns.unwrap_or(DEFAULT_PERIOD_NS),
                },
                _ => sim::SimSource::Echo,
            };
            Box::new(sim::SimBackend::new(
                cfg.clock_id(),
                mode,
                cfg.sim.unwrap_or_default(),
            ))
        }
    })
}
