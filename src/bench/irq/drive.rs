//! What the measuring loops share: the plan, the time base, waiting for an
//! edge, staying on the period grid, and the drive loop of the two roles
//! that drive the wire (loopback and host).

use super::account::EdgeAccount;
use super::backend::{Edge, EdgeBackend};
use super::config::Measured;
use crate::engine::StopFlag;
use crate::stats::recorder::Recorder;
use crate::stats::tap::Tap;
use crate::sys;
use std::io;

/// Longest a measuring thread blocks before it looks at the stop flag again.
pub(crate) const WAIT_SLICE_NS: u64 = 100_000_000;

/// Where the measuring loop's time comes from: the real clock in a run, a
/// scripted one in unit tests.
pub trait Timebase {
    fn now(&self) -> u64;
    fn sleep_until(&mut self, t: u64);
}

/// The run clock.
pub struct RealTime(pub libc::clockid_t);

impl Timebase for RealTime {
    #[inline(always)]
    fn now(&self) -> u64 {
        sys::clock::now_ns(self.0)
    }
    #[inline(always)]
    fn sleep_until(&mut self, t: u64) {
        sys::clock::sleep_until(self.0, t)
    }
}

/// What the measuring loops share: where to stop and when.
#[derive(Debug, Clone, Copy)]
pub struct DrivePlan {
    /// Start of the run (run clock).
    pub start: u64,
    pub period: u64,
    pub end: u64,
    pub count: u64,
    pub timeout: u64,
    pub measured: Measured,
}

impl DrivePlan {
    /// The next edge for a loop that answers edges (target, kernel
    /// responder), waited for in slices so that the stop flag and the end are
    /// seen; `None` once `done` reaches the count, the end has passed or the
    /// run is stopped.
    #[inline(always)]
    pub(crate) fn next_edge<B: EdgeBackend + ?Sized, T: Timebase>(
        &self,
        b: &mut B,
        t: &mut T,
        stop: &StopFlag,
        done: u64,
    ) -> io::Result<Option<Edge>> {
        while done < self.count && !stop.is_set() {
            let now = t.now();
            if now >= self.end {
                break;
            }
            let deadline = self.end.min(now.saturating_add(WAIT_SLICE_NS));
            if let Some(e) = b.wait_edge(deadline)? {
                return Ok(Some(e));
            }
        }
        Ok(None)
    }
}

/// What a role's loop works with besides the wire and the clock.
pub(crate) struct DriveSession<'a> {
    pub plan: &'a DrivePlan,
    /// The role's recorders, in the order of its series.
    pub recs: &'a mut Recorders,
    pub acct: &'a mut EdgeAccount,
    pub stop: &'a StopFlag,
    /// `--explain`: each measured edge's wake-up, from the kernel's event
    /// timestamp to the thread holding the event.
    pub tap: Option<&'a Tap>,
}

/// Hand the wake-up of a measured edge to `tap` (a few stores).
#[inline(always)]
pub(crate) fn hand(tap: Option<&Tap>, e: &Edge) {
    if let (Some(t), Some(k)) = (tap, e.kernel_ns) {
        if k <= e.user_ns {
            t.push(k, e.user_ns - k);
        }
    }
}

/// The recorders of one role, in the order of its series.
pub(crate) struct Recorders(pub Vec<Recorder>);

impl Recorders {
    pub(crate) fn finish(&mut self) {
        for r in &mut self.0 {
            r.finish();
        }
    }
}

/// Drain events already waiting (stale ones) without blocking; returns how many.
pub(crate) fn drain<B: EdgeBackend + ?Sized, T: Timebase>(
    b: &mut B,
    t: &T,
    acct: &mut EdgeAccount,
) -> io::Result<u64> {
    let mut n = 0;
    while let Some(e) = b.wait_edge(t.now())? {
        acct.on_edge(&e);
        n += 1;
    }
    Ok(n)
}

/// Wait until `deadline` for an edge to `want_high`, in slices so a stop
/// request is seen; other edges are accounted and skipped.
#[inline]
pub(crate) fn wait_for<B: EdgeBackend + ?Sized, T: Timebase>(
    b: &mut B,
    t: &T,
    acct: &mut EdgeAccount,
    want_high: bool,
    deadline: u64,
    stop: &StopFlag,
) -> io::Result<Option<Edge>> {
    loop {
        let now = t.now();
        let slice = deadline.min(now.saturating_add(WAIT_SLICE_NS));
        match b.wait_edge(slice)? {
            Some(e) => {
                acct.on_edge(&e);
                if e.rising == want_high {
                    return Ok(Some(e));
                }
                acct.r.unexpected_edges += 1;
            }
            None => {
                if slice >= deadline || stop.is_set() {
                    return Ok(None);
                }
            }
        }
    }
}

/// Overruns: periods that passed while an edge was handled. Moves `next`
/// past `now` on the original grid and returns how many periods were skipped.
#[inline(always)]
pub(crate) fn advance(next: &mut u64, period: u64, now: u64) -> u64 {
    *next += period;
    if now >= *next {
        let skipped = (now - *next) / period + 1;
        *next += skipped * period;
        skipped
    } else {
        0
    }
}

/// The edge a driving role awaited, handed to its recording step.
pub(crate) struct Driven<'a> {
    pub edge: &'a Edge,
    /// Clock just before the write that made the edge.
    pub t0: u64,
    /// t0 from the start of the run.
    pub at: u64,
    /// Periods skipped since the last recorded sample.
    pub overruns: u64,
}

/// The drive loop of loopback and host: on the period grid, drive the next
/// measured edge at t0 and wait for it (loopback: the echo on the input;
/// host: the target's reply) until t0 + timeout. `record` turns the awaited
/// edge into samples (in the session's recorders) and returns whether it recorded any (which resets the
/// overruns carried into the next sample); an edge that does not come is
/// missed. With `--edge rising|falling` the wire is then returned to idle,
/// unmeasured.
#[inline]
pub(crate) fn drive<B, T, F>(
    b: &mut B,
    t: &mut T,
    s: DriveSession<'_>,
    mut record: F,
) -> io::Result<()>
where
    B: EdgeBackend + ?Sized,
    T: Timebase,
    F: FnMut(&mut Recorders, Driven<'_>, &mut EdgeAccount) -> bool,
{
    let (plan, recs, acct, stop) = (s.plan, s.recs, s.acct, s.stop);
    let tap = s.tap;
    let idle = plan.measured.idle_high();
    // Rest the wire at idle and forget what happened before the start.
    b.drive(idle)?;
    if acct.last_level() != Some(idle) {
        let _ = wait_for(b, t, acct, idle, t.now().saturating_add(plan.timeout), stop)?;
    }
    drain(b, t, acct)?;
    let mut level = idle;
    let mut next = plan.start;
    let mut n: u64 = 0;
    let mut overruns: u64 = 0;
    while n < plan.count && next < plan.end && !stop.is_set() {
        t.sleep_until(next);
        acct.r.unexpected_edges += drain(b, t, acct)?;
        let want = match plan.measured {
            Measured::Both => !level,
            Measured::Rising => true,
            Measured::Falling => false,
        };
        let t0 = t.now();
        b.drive(want)?;
        level = want;
        let got = wait_for(b, t, acct, want, t0.saturating_add(plan.timeout), stop)?;
        n += 1;
        acct.r.edges_driven += 1;
        match got {
            Some(edge) => {
                let d = Driven {
                    edge: &edge,
                    t0,
                    at: t0.saturating_sub(plan.start),
                    overruns,
                };
                if record(recs, d, acct) {
                    overruns = 0;
                }
                hand(tap, &edge);
            }
            None => acct.r.missed += 1,
        }
        if plan.measured != Measured::Both {
            b.drive(idle)?;
            level = idle;
            let back = t.now().saturating_add(plan.timeout);
            if wait_for(b, t, acct, idle, back, stop)?.is_none() {
                acct.r.missed_idle += 1;
            }
        }
        let skipped = advance(&mut next, plan.period, t.now());
        overruns += skipped;
        acct.r.overruns += skipped;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advance_stays_on_the_grid() {
        let mut next = 1000;
        assert_eq!(advance(&mut next, 1000, 1500), 0);
        assert_eq!(next, 2000);
        // The edge at 2000 handled until 4500: 3000 and 4000 passed; the next is 5000.
        assert_eq!(advance(&mut next, 1000, 4500), 2);
        assert_eq!(next, 5000);
    }
}
