//! Silence together: stretches of an interval in which neither its CPU nor
//! any other measuring CPU recorded an event, although each of those had a
//! thread due to run in it. A CPU whose own periodic thread records a
//! wake-up every period cannot be quiet for two of them while it runs, and
//! a CPU whose busy loop (`noise`) stalled with nothing recorded did not
//! run either: when every measuring CPU is quiet at once, none of them ran
//! (a virtual machine's host stopped them all), whatever task the
//! interval's CPU was running when it went quiet.

use super::timeline::Ring;

/// Another measuring CPU's trace, heard as a witness.
pub struct Witness<'a> {
    pub cpu: usize,
    pub ring: &'a Ring,
    pub due: Due<'a>,
}

/// What tells that a witness's silence means it did not run.
pub enum Due<'a> {
    /// A gap in its events at least this long: two periods of its
    /// measuring thread.
    Gap(u64),
    /// Its busy loop's own stalls (start, end): a silence inside one.
    Stalls(&'a [(u64, u64)]),
}

/// The stretches of [start, end) of at least `min_ns` in which `ring` and
/// every witness whose events cover the stretch recorded nothing (with one
/// witness at least covering it), and the CPUs of those witnesses.
pub fn silent_together(
    ring: &Ring,
    (start, end): (u64, u64),
    witnesses: &[Witness],
    min_ns: u64,
) -> (Vec<(u64, u64)>, Vec<usize>) {
    let mut found = Vec::new();
    let mut cpus = Vec::new();
    if witnesses.is_empty() {
        return (found, cpus);
    }
    for (a, b) in gaps(ring, start, end, 0) {
        if b - a < min_ns {
            continue;
        }
        let mut common = Some((a, b));
        let mut heard = Vec::new();
        for w in witnesses {
            let Some((first, last)) = w.ring.span() else {
                continue;
            };
            if first > a || last < b {
                // Not read over the stretch: says nothing.
                continue;
            }
            let longest = quiet(w, a, b).max_by_key(|&(x, y)| y - x);
            common = match (common, longest) {
                (Some((x, y)), Some((p, q))) if p.max(x) < q.min(y) => Some((p.max(x), q.min(y))),
                _ => None,
            };
            if common.is_none() {
                break;
            }
            heard.push(w.cpu);
        }
        if let Some((x, y)) = common.filter(|&(x, y)| !heard.is_empty() && y - x >= min_ns) {
            found.push((x, y));
            for c in heard {
                if !cpus.contains(&c) {
                    cpus.push(c);
                }
            }
        }
    }
    cpus.sort_unstable();
    (found, cpus)
}

/// The stretches of [a, b) in which witness `w` did not run.
fn quiet<'a>(w: &'a Witness, a: u64, b: u64) -> Box<dyn Iterator<Item = (u64, u64)> + 'a> {
    match w.due {
        Due::Gap(g) => Box::new(gaps(w.ring, a, b, g).into_iter()),
        Due::Stalls(stalls) => {
            Box::new(gaps(w.ring, a, b, 0).into_iter().flat_map(move |(x, y)| {
                stalls
                    .iter()
                    .map(move |&(s, e)| (s.max(x), e.min(y)))
                    .filter(|&(p, q)| p < q)
            }))
        }
    }
}

/// The gaps between `ring`'s consecutive events (from the last one at or
/// before `start` to the first at or after `end`) of at least `min_ns`, cut
/// to [start, end). Past the ring's last event nothing is known: no gap.
fn gaps(ring: &Ring, start: u64, end: u64, min_ns: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut prev: Option<u64> = None;
    for &(ts, _) in ring.events() {
        if let Some(p) = prev {
            let (x, y) = (p.max(start), ts.min(end));
            if ts > start && ts - p >= min_ns.max(1) && x < y {
                out.push((x, y));
            }
        }
        if ts >= end {
            break;
        }
        prev = Some(ts);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::attribute::tests::{ring, sw};
    use super::super::attribute::{attribute_heard, Interval};
    use super::super::events::{Decoder, Ev, IdleLimit};
    use super::*;

    /// A CPU whose periodic thread (pid 6) wakes every 1 ms from 0 to
    /// 30 ms, except in [from, to).
    fn periodic(from: u64, to: u64) -> Ring {
        let mut evs = Vec::new();
        for ms in 0..30u64 {
            let t = ms * 1_000_000 + 1_000;
            if t < from || t >= to {
                evs.push((t, Ev::Wakeup { pid: 6, prio: 19 }));
                evs.push((t + 5_000, sw(6, 19)));
                evs.push((t + 20_000, sw(0, 120)));
            }
        }
        ring(&evs)
    }

    /// A task (http 88) runs on CPU 0 from 0; nothing is recorded from
    /// 2 ms to 14 ms; the measuring thread (pid 5), due at 2.5 ms, runs at
    /// 14.01 ms.
    fn quiet_cpu() -> (Ring, Interval, Decoder) {
        let r = ring(&[
            (0, sw(88, 120)),
            (2_000_000, Ev::Runtime { pid: 88, ns: 10 }),
            (14_000_000, Ev::Wakeup { pid: 5, prio: 19 }),
            (14_010_000, sw(5, 19)),
        ]);
        let iv = Interval {
            start: 2_500_000,
            end: 14_010_000,
            tid: 5,
            own: "own wake-up path",
            pending: None,
            woken_at: None,
        };
        let mut dec = Decoder::default();
        dec.comms.insert(88, "http".into());
        dec.idle_limit = Some(IdleLimit {
            ns: 1_000_000,
            virtualized: true,
        });
        (r, iv, dec)
    }

    fn of(parts: &[crate::result::Part], kind: &str) -> u64 {
        parts.iter().filter(|p| p.kind == kind).map(|p| p.ns).sum()
    }

    #[test]
    fn a_stop_of_every_cpu_is_the_hosts_not_the_task_that_ran() {
        let (r, iv, mut dec) = quiet_cpu();
        let other = periodic(2_000_000, 14_000_000);
        let heard = [Witness {
            cpu: 1,
            ring: &other,
            due: Due::Gap(2_000_000),
        }];
        let parts = attribute_heard(&r, &dec, iv, 0, (0, &heard));
        // The witness was quiet from its last event (1.021 ms) to its next
        // (14.001 ms): the common silence is the interval up to 14 ms.
        assert_eq!(of(&parts, "hypervisor"), 11_500_000, "{parts:?}");
        assert_eq!(of(&parts, "irqs-off"), 0, "{parts:?}");
        assert!(
            parts[0].name.contains("CPUs 0-1 silent together"),
            "{parts:?}"
        );
        assert_eq!(parts.iter().map(|p| p.ns).sum::<u64>(), iv.end - iv.start);
        dec.idle_limit = dec.idle_limit.map(|l| IdleLimit {
            virtualized: false,
            ..l
        });
        let parts = attribute_heard(&r, &dec, iv, 0, (0, &heard));
        assert_eq!(
            of(&parts, "unexplained"),
            11_500_000,
            "bare metal: {parts:?}"
        );
        assert!(
            parts[0].name.starts_with("unexplained (no event"),
            "{parts:?}"
        );
    }

    #[test]
    fn a_cpu_that_kept_recording_leaves_the_task_its_time() {
        let (r, iv, dec) = quiet_cpu();
        let busy = periodic(0, 0);
        let heard = [Witness {
            cpu: 1,
            ring: &busy,
            due: Due::Gap(2_000_000),
        }];
        let parts = attribute_heard(&r, &dec, iv, 0, (0, &heard));
        assert_eq!(of(&parts, "hypervisor"), 0, "{parts:?}");
        assert_eq!(of(&parts, "irqs-off"), 11_500_000, "{parts:?}");
    }

    #[test]
    fn a_witness_says_nothing_where_it_was_not_read_or_not_due() {
        let (r, iv, dec) = quiet_cpu();
        // Read only up to 10 ms: it does not cover the silence.
        let short = ring(&[
            (0, Ev::Wakeup { pid: 6, prio: 19 }),
            (10_000_000, Ev::Wakeup { pid: 6, prio: 19 }),
        ]);
        // Quiet for 12 ms, but its thread is due every 10 ms: a 20 ms gap
        // would be needed.
        let slow = periodic(2_000_000, 14_000_000);
        for (w, gap_ns) in [(&short, 2_000_000), (&slow, 20_000_000)] {
            let heard = [Witness {
                cpu: 1,
                ring: w,
                due: Due::Gap(gap_ns),
            }];
            let parts = attribute_heard(&r, &dec, iv, 0, (0, &heard));
            assert_eq!(of(&parts, "hypervisor"), 0, "{parts:?}");
            assert_eq!(of(&parts, "irqs-off"), 11_500_000, "{parts:?}");
        }
    }

    #[test]
    fn a_busy_loop_that_stalled_in_silence_is_a_witness() {
        let (r, iv, dec) = quiet_cpu();
        // A loop that records nothing while it runs: only its stalls say
        // whether it ran.
        let silent = ring(&[(0, sw(7, 120)), (20_000_000, Ev::IrqEntry(3))]);
        let stalled = [(2_200_000, 13_900_000)];
        let heard = [Witness {
            cpu: 1,
            ring: &silent,
            due: Due::Stalls(&stalled),
        }];
        let parts = attribute_heard(&r, &dec, iv, 0, (0, &heard));
        assert_eq!(of(&parts, "hypervisor"), 11_400_000, "{parts:?}");
        // Its loop ran all along: it says nothing.
        let heard = [Witness {
            cpu: 1,
            ring: &silent,
            due: Due::Stalls(&[]),
        }];
        let parts = attribute_heard(&r, &dec, iv, 0, (0, &heard));
        assert_eq!(of(&parts, "hypervisor"), 0, "{parts:?}");
    }

    #[test]
    fn every_witness_must_be_quiet() {
        let (r, iv, dec) = quiet_cpu();
        let quiet = periodic(2_000_000, 14_000_000);
        let busy = periodic(0, 0);
        let heard = [
            Witness {
                cpu: 1,
                ring: &quiet,
                due: Due::Gap(2_000_000),
            },
            Witness {
                cpu: 2,
                ring: &busy,
                due: Due::Gap(2_000_000),
            },
        ];
        let parts = attribute_heard(&r, &dec, iv, 0, (0, &heard));
        assert_eq!(of(&parts, "hypervisor"), 0, "{parts:?}");
    }
}
