//! The validated settings of a switch run: the wake line, the pairs and
//! where their sides run, and the priorities of wakers and wakees.

use crate::engine::RunControl;
use crate::engine::Setup;
use crate::sys::{ipc::Mechanism, sched::Sched};
use serde::{Serialize, Serializer};

/// Where the two sides of a pair run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// Waker and wakee on the same CPU: every wake is a context switch.
    Same,
    /// The wakee on the next CPU of the list: every wake crosses CPUs.
    Cross,
}

impl Placement {
    pub fn name(self) -> &'static str {
        match self {
            Placement::Same => "same",
            Placement::Cross => "cross",
        }
    }
}

/// One pair: its name, where its sides run, and its offset within the period.
#[derive(Debug, Clone, Serialize)]
pub struct PairPlan {
    pub name: String,
    pub waker_cpu: usize,
    pub wakee_cpu: usize,
    pub phase_ns: u64,
}

impl PairPlan {
    /// One pair per CPU of `cpus`, its waker on that CPU and its wakee there
    /// too or on the next CPU of the list; pair i of n wakes i·period/n into
    /// the period, so pairs never wake together.
    pub fn layout(cpus: &[usize], placement: Placement, period_ns: u64) -> Vec<PairPlan> {
        let n = cpus.len();
        cpus.iter()
            .enumerate()
            .map(|(i, &cpu)| PairPlan {
                name: format!("pair{i}"),
                waker_cpu: cpu,
                wakee_cpu: match placement {
                    Placement::Same => cpu,
                    Placement::Cross => cpus[(i + 1) % n],
                },
                phase_ns: period_ns * i as u64 / n as u64,
            })
            .collect()
    }
}

/// The priorities of a run whose wakees run at `sched`: the wakee's, the
/// waker's (`waker_priority`, else one below the wakee's) and the waker's
/// policy. Both are None under a policy without static priorities.
pub fn priorities(sched: Sched, waker_priority: Option<i32>) -> (Option<i32>, Option<i32>, Sched) {
    match sched {
        Sched::Fifo(p) | Sched::Rr(p) => {
            let w = waker_priority.unwrap_or((p - 1).max(1));
            let s = if matches!(sched, Sched::Fifo(_)) {
                Sched::Fifo(w)
            } else {
                Sched::Rr(w)
            };
            (Some(p), Some(w), s)
        }
        other => (None, None, other),
    }
}

/// Validated settings of a switch run.
#[derive(Debug, Clone, Serialize)]
pub struct SwitchConfig {
    #[serde(serialize_with = "mechanism_name")]
    pub via: Mechanism,
    /// Wakees are forked processes (else threads).
    pub processes: bool,
    /// Each wake is preceded by the arming handshake (same CPU, wakee priority >= waker's, not --cold).
    pub warm: bool,
    pub placement: Placement,
    pub cpus: Vec<usize>,
    pub pairs: Vec<PairPlan>,
    pub period_ns: u64,
    /// Static priority of the wakees and of the wakers (null under SCHED_OTHER).
    pub wakee_priority: Option<i32>,
    pub waker_priority: Option<i32>,
    /// The worst wakes explained per pair (`--explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<usize>,
    /// `--explain-stacks`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explain_stacks: bool,
    #[serde(flatten)]
    pub control: RunControl,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wakee_delay_ns: Option<u64>,
    #[serde(skip)]
    pub setup: Setup,
    #[serde(skip)]
    pub waker_sched: Sched,
}

fn mechanism_name<S: Serializer>(m: &Mechanism, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(m.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cross_pairs_wake_the_next_cpu_at_spread_phases() {
        let p: Vec<(usize, usize, u64)> = PairPlan::layout(&[0, 1, 3], Placement::Cross, 900)
            .iter()
            .map(|p| (p.waker_cpu, p.wakee_cpu, p.phase_ns))
            .collect();
        assert_eq!(p, vec![(0, 1, 0), (1, 3, 300), (3, 0, 600)]);
        let same = PairPlan::layout(&[2], Placement::Same, 900);
        assert_eq!((same[0].waker_cpu, same[0].wakee_cpu), (2, 2));
        assert_eq!(same[0].name, "pair0");
    }

    #[test]
    fn the_waker_runs_one_below_the_wakee_unless_told() {
        assert_eq!(
            priorities(Sched::Fifo(80), None),
            (Some(80), Some(79), Sched::Fifo(79))
        );
        assert_eq!(
            priorities(Sched::Rr(1), None),
            (Some(1), Some(1), Sched::Rr(1))
        );
        assert_eq!(
            priorities(Sched::Fifo(80), Some(90)),
            (Some(80), Some(90), Sched::Fifo(90))
        );
        assert_eq!(priorities(Sched::Other, None), (None, None, Sched::Other));
    }
}
