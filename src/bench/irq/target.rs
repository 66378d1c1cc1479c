//! `target`: the board under test answers every trigger edge at once.
//!
//! The reply line mirrors the trigger line: a rising trigger edge drives the
//! reply high, a falling one low. Per measured edge: kernel_to_user = time
//! the thread holds the event − kernel timestamp; user_to_reply = reply
//! written − event held (rtlat's own share of the response).

use super::backend::EdgeBackend;
use super::drive::{DriveSession, Timebase};
use std::io;

/// The answering loop. `recs` holds kernel_to_user and user_to_reply (or
/// only user_to_reply without kernel timestamps).
pub(crate) fn measure<B: EdgeBackend + ?Sized, T: Timebase>(
    b: &mut B,
    t: &mut T,
    s: DriveSession<'_>,
) -> io::Result<()> {
    let (plan, recs, acct, stop) = (s.plan, s.recs, s.acct, s.stop);
    // The reply starts where the trigger is.
    if let Some(level) = acct.last_level() {
        b.drive(level)?;
    }
    let mut n: u64 = 0;
    while let Some(e) = plan.next_edge(b, t, stop, n)? {
        b.drive(e.rising)?;
        let replied = t.now();
        acct.on_edge(&e);
        // Edges from before the start (setup time) are answered, not measured.
        let before_start = e.kernel_ns.unwrap_or(e.user_ns) < plan.start;
        if !plan.measured.includes(e.rising) || before_start {
            continue;
        }
        let at = e.user_ns.saturating_sub(plan.start);
        let own = replied.saturating_sub(e.user_ns);
        match (e.kernel_ns, recs.0.as_mut_slice()) {
            (Some(k), [k2u, u2r, ..]) => {
                if k <= e.user_ns {
                    k2u.record(e.user_ns - k, at, 0);
                    super::drive::hand(s.tap, &e);
                } else {
                    acct.r.timestamp_errors += 1;
                }
                u2r.record(own, at, 0);
            }
            (_, [u2r, ..]) => u2r.record(own, at, 0),
            _ => {}
        }
        n += 1;
        acct.r.answered += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::account::EdgeAccount;
    use super::super::config::Measured;
    use super::super::drive::DrivePlan;
    use super::super::testing::{run_role, VClock, Wire};
    use super::*;

    fn run(wire: &mut Wire, p: &DrivePlan) -> (EdgeAccount, Vec<crate::stats::recorder::Totals>) {
        let (acct, t) = run_role(measure, wire, p, 2);
        (acct, t.into_iter().map(|(tot, _)| tot).collect())
    }

    fn plan(count: u64, measured: Measured) -> DrivePlan {
        DrivePlan {
            start: 0,
            period: 0,
            end: 10_000_000,
            count,
            timeout: 0,
            measured,
        }
    }

    /// A target's wire bringing `edges` trigger edges, rising first, 10 µs apart.
    fn triggered(edges: u64) -> Wire {
        let mut wire = Wire::fresh(400, 300, false);
        for i in 0..edges {
            wire.incoming.push_back((1_000 + i * 10_000, i % 2 == 0));
        }
        wire
    }

    #[test]
    fn every_trigger_edge_is_mirrored_on_the_reply() {
        let mut wire = triggered(8);
        let (acct, t) = run(&mut wire, &plan(8, Measured::Both));
        assert_eq!(acct.r.answered, 8);
        assert_eq!(acct.r.lost_events, 0);
        assert_eq!((t[0].samples, t[0].min, t[0].max), (8, 300, 300));
        assert_eq!(t[1].samples, 8);
        // Initial rest drive, then one reply per edge with the trigger's level.
        assert_eq!(wire.levels(), [true, false].repeat(4));
    }

    #[test]
    fn only_selected_edges_are_measured_but_all_are_answered() {
        let mut wire = triggered(6);
        let (acct, t) = run(&mut wire, &plan(3, Measured::Rising));
        assert_eq!(acct.r.answered, 3);
        assert_eq!(t[0].samples, 3);
        // 3 rising and 2 falling edges answered before the count was reached.
        assert_eq!(wire.drives.len(), 1 + 5);
    }

    #[test]
    fn the_end_time_stops_an_idle_target() {
        let clock = VClock::default();
        let mut wire = Wire::new(clock.clone(), 400, 300, false);
        let (acct, _) = run(&mut wire, &plan(100, Measured::Both));
        assert_eq!(acct.r.answered, 0);
        assert!(clock.now() >= 10_000_000);
    }
}
