//! `loopback`: one board drives an output wired to its own input.
//!
//! Per measured edge: t0 = clock just before the write; irq = kernel event
//! timestamp − t0; user = time the thread holds the event − t0; wake = user −
//! irq. Between t0 and the read nothing runs but the write and the wait.

use super::account::EdgeAccount;
use super::drive::{Driven, Recorders};

/// The record step of the drive loop: irq, user and wake of the edge (`recs`
/// holds irq, user, wake, or only user when the backend has no kernel
/// timestamps).
#[inline(always)]
pub(crate) fn record(recs: &mut Recorders, d: Driven<'_>, acct: &mut EdgeAccount) -> bool {
    let (e, t0, at, overruns) = (d.edge, d.t0, d.at, d.overruns);
    let user = e.user_ns.saturating_sub(t0);
    let [first, rest @ ..] = recs.0.as_mut_slice() else {
        return true;
    };
    match (e.kernel_ns, rest) {
        (Some(k), [user_rec, wake_rec, ..]) => {
            if k >= t0 && k <= e.user_ns {
                let irq = k - t0;
                first.record(irq, at, overruns);
                user_rec.record(user, at, overruns);
                wake_rec.record(user - irq, at, overruns);
            } else {
                acct.r.timestamp_errors += 1;
                user_rec.record(user, at, overruns);
            }
        }
        _ => first.record(user, at, overruns),
    }
    true
}

#[cfg(test)]
mod tests {
    use super::super::config::Measured;
    use super::super::drive::{drive, DrivePlan};
    use super::super::testing::{run_role, Totals, VClock, Wire};
    use super::*;

    fn plan(count: u64, measured: Measured) -> DrivePlan {
        DrivePlan {
            start: 1_000,
            period: 10_000,
            end: u64::MAX,
            count,
            timeout: 5_000,
            measured,
        }
    }

    fn run(wire: &mut Wire, p: &DrivePlan) -> (EdgeAccount, Vec<Totals>) {
        run_role(|w, c, s| drive(w, c, s, record), wire, p, 3)
    }

    #[test]
    fn every_edge_gives_irq_user_and_wake() {
        let mut wire = Wire::fresh(300, 200, true);
        let (acct, t) = run(&mut wire, &plan(10, Measured::Both));
        assert_eq!(acct.r.edges_driven, 10);
        assert_eq!(acct.r.missed, 0);
        assert_eq!(acct.r.lost_events, 0);
        for (tot, _) in &t {
            assert_eq!(tot.samples, 10);
        }
        assert_eq!((t[0].0.min, t[0].0.max), (300, 300));
        assert_eq!((t[1].0.min, t[1].0.max), (500, 500));
        assert_eq!((t[2].0.min, t[2].0.max), (200, 200));
        // Both edges measured: the levels alternate, on the period grid.
        assert_eq!(wire.levels(), [true, false].repeat(5));
        let times: Vec<u64> = wire.drives.iter().skip(1).map(|d| d.0).collect();
        assert!(times.windows(2).all(|w| w[1] - w[0] == 10_000), "{times:?}");
    }

    #[test]
    fn rising_only_returns_to_idle_unmeasured() {
        let mut wire = Wire::fresh(100, 100, true);
        let (acct, t) = run(&mut wire, &plan(5, Measured::Rising));
        assert_eq!(t[0].0.samples, 5);
        assert_eq!(acct.r.edges_seen, 10);
        assert_eq!(acct.r.missed_idle, 0);
        assert_eq!(wire.levels(), [true, false].repeat(5));
    }

    #[test]
    fn a_lost_event_is_missed_and_seen_as_a_seqno_gap() {
        let mut wire = Wire::fresh(100, 100, true);
        // Drive 1 rests the wire; drive 4 is the third measured edge.
        wire.drop = vec![4];
        let (acct, t) = run(&mut wire, &plan(6, Measured::Both));
        assert_eq!(acct.r.missed, 1);
        assert_eq!(acct.r.lost_events, 1);
        assert_eq!(t[1].0.samples, 5);
        assert_eq!(acct.r.edges_driven, 6);
    }

    #[test]
    fn an_edge_slower_than_the_period_counts_overruns() {
        let clock = VClock::default();
        // 25 us from write to read with a 10 us period: two periods pass each time.
        let mut wire = Wire::new(clock, 20_000, 5_000, true);
        let mut p = plan(4, Measured::Both);
        p.timeout = 100_000;
        let (acct, t) = run(&mut wire, &p);
        assert_eq!(t[1].0.samples, 4);
        assert_eq!(acct.r.overruns, 8);
        // The last edge's overrun is not followed by a sample.
        assert_eq!(t[1].0.overruns, 6);
    }
}
