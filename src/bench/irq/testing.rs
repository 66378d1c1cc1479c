//! A scripted wire in virtual time for the role loops' unit tests.

use super::account::EdgeAccount;
use super::backend::{Edge, EdgeBackend};
use super::drive::{DrivePlan, DriveSession, Recorders, Timebase};
use crate::engine::StopFlag;
use crate::stats::recorder;
use std::cell::Cell;
use std::collections::VecDeque;
use std::io;
use std::rc::Rc;

#[derive(Clone, Default)]
pub struct VClock(pub Rc<Cell<u64>>);

impl Timebase for VClock {
    fn now(&self) -> u64 {
        self.0.get()
    }
    fn sleep_until(&mut self, t: u64) {
        if t > self.0.get() {
            self.0.set(t);
        }
    }
}

/// A wire whose edges arrive `irq` ns after a drive and are read `wake` ns later.
/// `drop` lists drive numbers (1-based) whose event the kernel "loses".
pub struct Wire {
    pub clock: VClock,
    pub irq: u64,
    pub wake: u64,
    pub level: bool,
    pub drives: Vec<(u64, bool)>,
    pub pending: VecDeque<Edge>,
    pub seqno: u32,
    pub drop: Vec<usize>,
    /// Edges that arrive on their own: (time, level).
    pub incoming: VecDeque<(u64, bool)>,
    pub echo: bool,
}

impl Wire {
    pub fn new(clock: VClock, irq: u64, wake: u64, echo: bool) -> Self {
        Wire {
            clock,
            irq,
            wake,
            level: false,
            drives: Vec::new(),
            pending: VecDeque::new(),
            seqno: 0,
            drop: Vec::new(),
            incoming: VecDeque::new(),
            echo,
        }
    }

    /// A wire on a fresh virtual clock.
    pub fn fresh(irq: u64, wake: u64, echo: bool) -> Self {
        Wire::new(VClock::default(), irq, wake, echo)
    }

    /// The levels driven after the first (resting) drive.
    pub fn levels(&self) -> Vec<bool> {
        self.drives.iter().skip(1).map(|d| d.1).collect()
    }
}

impl EdgeBackend for Wire {
    fn drive(&mut self, high: bool) -> io::Result<()> {
        let now = self.clock.now();
        self.drives.push((now, high));
        if self.echo && high != self.level {
            self.level = high;
            self.seqno += 1;
            if !self.drop.contains(&self.drives.len()) {
                self.pending.push_back(Edge {
                    rising: high,
                    kernel_ns: Some(now + self.irq),
                    user_ns: now + self.irq + self.wake,
                    seqno: Some(self.seqno),
                });
            }
        }
        Ok(())
    }
    fn wait_edge(&mut self, deadline_ns: u64) -> io::Result<Option<Edge>> {
        if let Some(&(at, high)) = self.incoming.front() {
            if at + self.irq <= deadline_ns.max(self.clock.now()) {
                self.incoming.pop_front();
                self.seqno += 1;
                self.pending.push_back(Edge {
                    rising: high,
                    kernel_ns: Some(at + self.irq),
                    user_ns: at + self.irq + self.wake,
                    seqno: Some(self.seqno),
                });
            }
        }
        match self.pending.front() {
            Some(e) if e.user_ns <= deadline_ns.max(self.clock.now()) => {
                let e = self.pending.pop_front().expect("front");
                self.clock.sleep_until(e.user_ns);
                Ok(Some(e))
            }
            _ => {
                self.clock.sleep_until(deadline_ns);
                Ok(None)
            }
        }
    }
    fn input_level(&mut self) -> io::Result<bool> {
        Ok(false)
    }
    fn kernel_timestamps(&self) -> bool {
        true
    }
}

/// A recorder's totals and histogram after a run.
pub type Totals = (recorder::Totals, crate::stats::Histogram);

/// Drain a recorder's collector and return its totals.
pub fn totals(mut col: crate::stats::Collector) -> Totals {
    col.collect(&mut Vec::new());
    (*col.totals(), col.histogram().clone())
}

/// A role's measuring loop.
pub type Measure = fn(&mut Wire, &mut VClock, DriveSession<'_>) -> io::Result<()>;

/// Run a role's loop over `wire` with `series` recorders, from a low wire.
pub fn run_role(
    measure: Measure,
    wire: &mut Wire,
    p: &DrivePlan,
    series: usize,
) -> (EdgeAccount, Vec<Totals>) {
    let (recs, cols): (Vec<_>, Vec<_>) = (0..series).map(|_| recorder::pair(1_000_000_000)).unzip();
    let mut recs = Recorders(recs);
    let mut acct = EdgeAccount::default();
    acct.set_level(false);
    let mut clock = wire.clock.clone();
    measure(
        wire,
        &mut clock,
        DriveSession {
            plan: p,
            recs: &mut recs,
            acct: &mut acct,
            stop: &StopFlag::default(),
            tap: None,
        },
    )
    .unwrap();
    recs.finish();
    (acct, cols.into_iter().map(totals).collect())
}
