//! `host`: the log host drives the trigger and times the target's reply.
//!
//! Per measured edge: roundtrip = kernel timestamp of the reply edge on the
//! host's input − t0 (clock just before the trigger write). A reply that does
//! not come within the timeout is missed; one that comes later is read as
//! stale before the next edge and counted as unexpected.

use super::{advance, drain, wait_for, EdgeAccount, EdgeBackend, Plan, Recorders, Timebase};
use crate::engine::StopFlag;
use std::io;

/// The driving loop. `recs` holds roundtrip.
pub(crate) fn measure<B: EdgeBackend + ?Sized, T: Timebase>(
    b: &mut B,
    t: &mut T,
    plan: &Plan,
    recs: &mut Recorders,
    acct: &mut EdgeAccount,
    stop: &StopFlag,
) -> io::Result<()> {
    let idle = plan.measured.idle_high();
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
            super::Measured::Both => !level,
            super::Measured::Rising => true,
            super::Measured::Falling => false,
        };
        let t0 = t.now();
        b.drive(want)?;
        level = want;
        let got = wait_for(b, t, acct, want, t0.saturating_add(plan.timeout), stop)?;
        n += 1;
        acct.r.edges_driven += 1;
        match got {
            Some(e) => {
                let seen = e.kernel_ns.unwrap_or(e.user_ns);
                if seen >= t0 {
                    if let Some(rec) = recs.0.first_mut() {
                        rec.record(seen - t0, t0.saturating_sub(plan.start), overruns);
                    }
                    overruns = 0;
                } else {
                    acct.r.timestamp_errors += 1;
                }
            }
            None => acct.r.missed += 1,
        }
        if plan.measured != super::Measured::Both {
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
    use super::super::testing::{totals, VClock, Wire};
    use super::super::{Measured, Plan, Recorders};
    use super::*;
    use crate::stats::recorder;

    #[test]
    fn every_reply_is_a_round_trip_and_a_missing_one_is_missed() {
        let clock = VClock::default();
        let mut wire = Wire::new(clock, 700, 100, true);
        wire.drop = vec![3];
        let (r, c) = recorder::pair(1_000_000_000);
        let mut recs = Recorders(vec![r]);
        let mut acct = EdgeAccount::default();
        acct.set_level(false);
        let p = Plan {
            start: 0,
            period: 10_000,
            end: u64::MAX,
            count: 5,
            timeout: 5_000,
            measured: Measured::Both,
        };
        let mut t = wire.clock.clone();
        measure(
            &mut wire,
            &mut t,
            &p,
            &mut recs,
            &mut acct,
            &StopFlag::default(),
        )
        .unwrap();
        recs.finish();
        let (tot, _) = totals(c);
        assert_eq!(acct.r.edges_driven, 5);
        assert_eq!(acct.r.missed, 1);
        assert_eq!((tot.samples, tot.min, tot.max), (4, 700, 700));
    }
}
