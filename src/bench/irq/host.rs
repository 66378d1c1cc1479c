//! `host`: the log host drives the trigger and times the target's reply.
//!
//! Per measured edge: roundtrip = kernel timestamp of the reply edge on the
//! host's input − t0 (clock just before the trigger write). A reply that does
//! not come within the timeout is missed; one that comes later is read as
//! stale before the next edge and counted as unexpected.

use super::account::EdgeAccount;
use super::drive::{Driven, Recorders};

/// The record step of the drive loop: roundtrip = the reply's timestamp − t0
/// (`recs` holds roundtrip); returns whether a sample was recorded.
#[inline(always)]
pub(crate) fn record(recs: &mut Recorders, d: Driven<'_>, acct: &mut EdgeAccount) -> bool {
    let seen = d.edge.kernel_ns.unwrap_or(d.edge.user_ns);
    if seen < d.t0 {
        acct.r.timestamp_errors += 1;
        return false;
    }
    if let Some(rec) = recs.0.first_mut() {
        rec.record(seen - d.t0, d.at, d.overruns);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::super::config::Measured;
    use super::super::drive::{drive, DrivePlan};
    use super::super::testing::{run_role, VClock, Wire};
    use super::*;

    #[test]
    fn every_reply_is_a_round_trip_and_a_missing_one_is_missed() {
        let clock = VClock::default();
        let mut wire = Wire::new(clock, 700, 100, true);
        wire.drop = vec![3];
        let p = DrivePlan {
            start: 0,
            period: 10_000,
            end: u64::MAX,
            count: 5,
            timeout: 5_000,
            measured: Measured::Both,
        };
        let (acct, t) = run_role(|w, c, s| drive(w, c, s, record), &mut wire, &p, 1);
        let tot = &t[0].0;
        assert_eq!(acct.r.edges_driven, 5);
        assert_eq!(acct.r.missed, 1);
        assert_eq!((tot.samples, tot.min, tot.max), (4, 700, 700));
    }
}
