//! Pairing timerlat samples by (CPU, `#id`) and placing them on the timer's
//! period grid, so that every period is a sample or a counted skip.

use super::noise::BreakAnalysis;
use crate::bench::timer::lines::{Ctx, TraceLine};
use serde::{Deserialize, Serialize};

/// The figures of a contexts run beside its series (`details`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextDetails {
    /// Where the samples came from.
    pub source: String,
    /// IRQ and thread samples of the same (CPU, #id).
    pub matched_pairs: u64,
    /// IRQ samples whose thread sample never came (and the reverse).
    pub unmatched_irq: u64,
    pub unmatched_thread: u64,
    /// Matched pairs with the IRQ latency above the thread's (expected 0).
    pub irq_above_thread: u64,
    /// Periods the kernel thread was too late for (skipped by the kernel).
    pub skipped_periods: u64,
    /// `#id` values missing between samples (lost samples).
    pub id_gaps: u64,
    /// `[LOST N EVENTS]` notices of trace_pipe.
    pub lost_events: u64,
    /// `overrun` and `dropped events` of the instance's per-CPU stats.
    pub ring_buffer_overruns: u64,
    pub dropped_events: u64,
    /// With `user` (timerlat_fd): user-return samples with the thread
    /// sample of their activation, without it, and pairs with the thread's
    /// latency above the user's (expected 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched_user: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmatched_user: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_above_user: Option<u64>,
    /// What ran on the CPU before the sample that crossed
    /// `--break-threshold` (the osnoise events, as `rtla timerlat -a`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_analysis: Option<BreakAnalysis>,
    /// The trace had not passed the end of the run 2 s after it: the last
    /// periods of some CPU are neither samples nor counted (expected false).
    #[serde(default)]
    pub trace_short_of_end: bool,
    /// tracefs settings that could not be restored (expected none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restore_problems: Vec<String>,
}

impl crate::result::details::Details for ContextDetails {}

/// Periods a series has no sample for: `count` timer expiries, `first` and
/// every period after it (trace clock, ns).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Skipped {
    pub first: u64,
    pub count: u64,
}

/// Where the pairing puts a sample: the CPU index, the context, the latency,
/// the timer expiry it belongs to (trace clock), and the expiries of the
/// same series before it that have no sample.
pub trait Sink {
    fn record(&mut self, cpu: usize, ctx: Ctx, latency_ns: u64, expiry_ns: u64, skipped: Skipped);
}

/// The last sample of one series of one CPU.
#[derive(Debug, Default, Clone, Copy)]
struct Last {
    id: Option<u64>,
    expiry: Option<u64>,
}

#[derive(Debug, Default, Clone, Copy)]
struct PerCpu {
    /// An IRQ sample waiting for its thread sample: (id, latency, expiry).
    pending: Option<(u64, u64, u64)>,
    irq: Last,
    thread: Last,
    user: Last,
    /// The last thread sample, for the user-return sample of the same id:
    /// (id, latency, expiry).
    last_thread: Option<(u64, u64, u64)>,
}

/// Pairs timerlat samples by (CPU, #id) and derives the periods without a
/// sample from the timer's expiries: the kernel arms the timer on a fixed
/// grid (start + k·period) and skips the expiries its thread was too late
/// for, so the expiries between two samples of a series (sample time −
/// latency) are the periods that series missed, whether the kernel skipped
/// them or their samples were lost.
#[derive(Debug)]
pub struct Pairer {
    period_ns: u64,
    /// CPU number → index into the selected CPUs.
    index: Vec<Option<usize>>,
    cpus: Vec<PerCpu>,
    /// A user thread reads timerlat_fd: user-return samples follow the thread's.
    user: bool,
    pub details: ContextDetails,
}

/// Step `last` to the sample (`id`, `expiry`): the `#id` values missing and
/// the expiries without a sample since the previous one.
fn step(last: &mut Last, id: u64, expiry: u64, period: u64) -> (u64, Skipped) {
    let gap = match last.id {
        Some(l) if id > l + 1 => id - l - 1,
        _ => 0,
    };
    let skipped = match last.expiry {
        Some(prev) if expiry > prev => {
            let periods = (expiry - prev + period / 2) / period;
            Skipped {
                first: prev + period,
                count: periods.saturating_sub(1),
            }
        }
        _ => Skipped::default(),
    };
    *last = Last {
        id: Some(id),
        expiry: Some(expiry),
    };
    (gap, skipped)
}

impl Pairer {
    pub fn new(cpus: &[usize], period_ns: u64, user: bool) -> Self {
        let max = cpus.iter().copied().max().unwrap_or(0);
        let mut index = vec![None; max + 1];
        for (i, &c) in cpus.iter().enumerate() {
            index[c] = Some(i);
        }
        Pairer {
            period_ns: period_ns.max(1),
            index,
            cpus: vec![PerCpu::default(); cpus.len()],
            user,
            details: ContextDetails {
                matched_user: user.then_some(0),
                unmatched_user: user.then_some(0),
                thread_above_user: user.then_some(0),
                ..Default::default()
            },
        }
    }

    fn irq_sample(&mut self, i: usize, id: u64, lat: u64, expiry: u64, sink: &mut impl Sink) {
        let (gap, skipped) = step(&mut self.cpus[i].irq, id, expiry, self.period_ns);
        self.details.id_gaps += gap;
        sink.record(i, Ctx::Irq, lat, expiry, skipped);
    }

    fn lone_irq(&mut self, i: usize, sink: &mut impl Sink) {
        if let Some((id, lat, expiry)) = self.cpus[i].pending.take() {
            self.details.unmatched_irq += 1;
            self.irq_sample(i, id, lat, expiry, sink);
        }
    }

    /// Every CPU has samples of both series from `t` on (the periods
    /// before it are all accounted for).
    pub fn reached(&self, t: u64) -> bool {
        let past = |l: &Last| l.expiry.is_some_and(|e| e >= t);
        self.cpus
            .iter()
            .all(|c| past(&c.irq) && past(&c.thread) && (!self.user || past(&c.user)))
    }

    /// Take one parsed line.
    pub fn feed(&mut self, line: &TraceLine<'_>, sink: &mut impl Sink) {
        match *line {
            TraceLine::Lost { events, .. } => self.details.lost_events += events,
            TraceLine::Timerlat {
                cpu,
                ts_ns,
                id,
                ctx,
                latency_ns,
            } => {
                let Some(i) = self.index.get(cpu).copied().flatten() else {
                    return;
                };
                let expiry = ts_ns.saturating_sub(latency_ns);
                match ctx {
                    Ctx::Irq => {
                        self.lone_irq(i, sink);
                        self.cpus[i].pending = Some((id, latency_ns, expiry));
                    }
                    Ctx::Thread => {
                        // The expiry as the IRQ sample gives it when there is
                        // one: written in the handler, it lags its clock read
                        // by less than the thread's (which may be preempted).
                        let expiry = match self.cpus[i].pending {
                            Some((pid, irq_lat, irq_expiry)) if pid == id => {
                                self.cpus[i].pending = None;
                                self.details.matched_pairs += 1;
                                if irq_lat > latency_ns {
                                    self.details.irq_above_thread += 1;
                                }
                                self.irq_sample(i, id, irq_lat, irq_expiry, sink);
                                irq_expiry
                            }
                            _ => {
                                self.lone_irq(i, sink);
                                self.details.unmatched_thread += 1;
                                expiry
                            }
                        };
                        let (gap, skipped) =
                            step(&mut self.cpus[i].thread, id, expiry, self.period_ns);
                        self.details.id_gaps += gap;
                        // Expiries without an activation: skipped by the kernel.
                        self.details.skipped_periods += skipped.count.saturating_sub(gap);
                        self.cpus[i].last_thread = Some((id, latency_ns, expiry));
                        sink.record(i, Ctx::Thread, latency_ns, expiry, skipped);
                    }
                    Ctx::User if self.user => {
                        // The return to user space of the activation the
                        // thread sample of the same id began.
                        let d = &mut self.details;
                        let expiry = match self.cpus[i].last_thread.take() {
                            Some((tid, tlat, texp)) if tid == id => {
                                *d.matched_user.get_or_insert(0) += 1;
                                if tlat > latency_ns {
                                    *d.thread_above_user.get_or_insert(0) += 1;
                                }
                                texp
                            }
                            _ => {
                                *d.unmatched_user.get_or_insert(0) += 1;
                                expiry
                            }
                        };
                        let (_, skipped) = step(&mut self.cpus[i].user, id, expiry, self.period_ns);
                        sink.record(i, Ctx::User, latency_ns, expiry, skipped);
                    }
                    Ctx::User => {}
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = 1_000_000;

    #[derive(Default)]
    struct Got(Vec<(usize, Ctx, u64, u64, Skipped)>);
    impl Sink for Got {
        fn record(&mut self, cpu: usize, ctx: Ctx, lat: u64, expiry: u64, s: Skipped) {
            self.0.push((cpu, ctx, lat, expiry, s));
        }
    }

    /// Sample `#id` of the timer expiry at period `k`, `latency_ns` late.
    fn tl(cpu: usize, id: u64, k: u64, ctx: Ctx, latency_ns: u64) -> TraceLine<'static> {
        TraceLine::Timerlat {
            cpu,
            ts_ns: 5 * P + k * P + latency_ns,
            id,
            ctx,
            latency_ns,
        }
    }

    fn skip(k: u64, count: u64) -> Skipped {
        Skipped {
            first: 5 * P + k * P,
            count,
        }
    }

    #[test]
    fn pairs_by_cpu_and_id_and_counts_what_is_missing() {
        // CPUs 1 and 3 selected; samples interleaved across CPUs.
        let mut p = Pairer::new(&[1, 3], P, false);
        let mut got = Got::default();
        for l in [
            tl(1, 1, 1, Ctx::Irq, 100),
            tl(3, 1, 1, Ctx::Irq, 150),
            tl(1, 1, 1, Ctx::Thread, 900),
            tl(3, 1, 1, Ctx::Thread, 800),
            // CPU 1: thread sample of #2 lost; #3 late by 2.5 periods, so
            // the kernel skips the expiries 4 and 5: #4 is at 6.
            tl(1, 2, 2, Ctx::Irq, 110),
            tl(1, 3, 3, Ctx::Irq, 120),
            tl(1, 3, 3, Ctx::Thread, 2_500_000),
            tl(1, 4, 6, Ctx::Irq, 90),
            tl(1, 4, 6, Ctx::Thread, 950),
            // CPU 3: ids 2..4 lost entirely (expiries 2..4).
            tl(3, 5, 5, Ctx::Irq, 130),
            tl(3, 5, 5, Ctx::Thread, 700),
            // A CPU that is not selected.
            tl(0, 1, 1, Ctx::Irq, 5),
            TraceLine::Lost { cpu: 3, events: 7 },
        ] {
            p.feed(&l, &mut got);
        }
        let d = &p.details;
        assert_eq!(d.matched_pairs, 5);
        assert_eq!((d.unmatched_irq, d.unmatched_thread), (1, 0));
        assert_eq!(d.skipped_periods, 2);
        // CPU 1 thread: #1 → #3 (one missing); CPU 3: #1 → #5 in both series.
        assert_eq!(d.id_gaps, 1 + 3 + 3);
        assert_eq!(d.lost_events, 7);
        assert_eq!(d.irq_above_thread, 0);
        let none = Skipped::default();
        let cpu1: Vec<_> = got.0.iter().filter(|s| s.0 == 0).collect();
        let e = |k: u64| 5 * P + k * P;
        assert_eq!(
            cpu1,
            vec![
                &(0, Ctx::Irq, 100, e(1), none),
                &(0, Ctx::Thread, 900, e(1), none),
                &(0, Ctx::Irq, 110, e(2), skip(2, 0)),
                &(0, Ctx::Irq, 120, e(3), skip(3, 0)),
                &(0, Ctx::Thread, 2_500_000, e(3), skip(2, 1)),
                &(0, Ctx::Irq, 90, e(6), skip(4, 2)),
                &(0, Ctx::Thread, 950, e(6), skip(4, 2)),
            ]
        );
        // Every period of each CPU is a sample or a skipped expiry, per series.
        for (cpu, periods) in [(0, 6), (1, 5)] {
            for ctx in [Ctx::Irq, Ctx::Thread] {
                let n: u64 = got
                    .0
                    .iter()
                    .filter(|s| s.0 == cpu && s.1 == ctx)
                    .map(|s| 1 + s.4.count)
                    .sum();
                assert_eq!(n, periods, "cpu {cpu} {ctx:?}");
            }
        }
        assert!(got.0.iter().all(|s| s.0 < 2));
        // CPU 3's samples end at expiry 5, CPU 1's at 6.
        assert!(p.reached(e(5)));
        assert!(!p.reached(e(6)));
        assert!(!Pairer::new(&[0], P, false).reached(0));
    }

    #[test]
    fn expiries_round_to_the_period_grid() {
        // Trace times in µs and a little trace delay: still whole periods.
        let mut last = Last::default();
        assert_eq!(step(&mut last, 1, 10 * P + 3_000, P).1.count, 0);
        assert_eq!(step(&mut last, 2, 11 * P - 2_000, P).1.count, 0);
        let (gap, s) = step(&mut last, 3, 15 * P + 4_000, P);
        assert_eq!((gap, s.count, s.first), (0, 3, 12 * P - 2_000));
    }

    #[test]
    fn an_irq_above_its_thread_is_counted() {
        let mut p = Pairer::new(&[0], P, false);
        let mut got = Got::default();
        p.feed(&tl(0, 1, 1, Ctx::Irq, 500), &mut got);
        p.feed(&tl(0, 1, 1, Ctx::Thread, 400), &mut got);
        p.feed(&tl(0, 2, 2, Ctx::Thread, 400), &mut got);
        assert_eq!(p.details.irq_above_thread, 1);
        assert_eq!(p.details.unmatched_thread, 1);
    }

    #[test]
    fn user_return_samples_follow_their_thread_sample() {
        let mut p = Pairer::new(&[0], P, true);
        let mut got = Got::default();
        for l in [
            tl(0, 1, 1, Ctx::Irq, 100),
            tl(0, 1, 1, Ctx::Thread, 400),
            tl(0, 1, 1, Ctx::User, 900),
            // #2: the user-return sample is lost; #3's thread above its user.
            tl(0, 2, 2, Ctx::Irq, 100),
            tl(0, 2, 2, Ctx::Thread, 400),
            tl(0, 3, 3, Ctx::Irq, 100),
            tl(0, 3, 3, Ctx::Thread, 700),
            tl(0, 3, 3, Ctx::User, 600),
            // A user sample without its thread sample.
            tl(0, 4, 4, Ctx::Irq, 100),
            tl(0, 4, 4, Ctx::User, 800),
        ] {
            p.feed(&l, &mut got);
        }
        let d = &p.details;
        assert_eq!(
            (d.matched_user, d.unmatched_user, d.thread_above_user),
            (Some(2), Some(1), Some(1))
        );
        let user: Vec<_> = got.0.iter().filter(|s| s.1 == Ctx::User).collect();
        let e = |k: u64| 5 * P + k * P;
        assert_eq!(
            user,
            vec![
                &(0, Ctx::User, 900, e(1), Skipped::default()),
                &(0, Ctx::User, 600, e(3), skip(2, 1)),
                &(0, Ctx::User, 800, e(4), skip(4, 0)),
            ]
        );
        // The user series decides whether the trace has reached a time.
        // Every series of the CPU (user too) has reached #3's expiry, not #4's.
        assert!(p.reached(e(3)) && !p.reached(e(4)));
        assert!(Pairer::new(&[0], P, false).details.matched_user.is_none());
    }
}
