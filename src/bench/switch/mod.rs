//! `rtlat switch`: context-switch (wake-up) latency between real-time threads,
//! or between a thread and a forked process.
//!
//! Each pair has a waker and a wakee. The waker sleeps on an absolute periodic
//! timer; at each period it reads CLOCK_MONOTONIC (t0) and wakes the wakee
//! through the chosen mechanism; the wakee reads CLOCK_MONOTONIC (t1) as soon
//! as it runs and publishes t1 in shared memory. At its next period the waker
//! records `latency = t1 − t0` (outside any measured interval) before it
//! wakes the wakee again. On one CPU (wakee priority >= waker's) each wake
//! is preceded by an arming handshake, a round trip through the same
//! mechanism after which the wakee waits on the line with warm caches
//! (`--cold` skips it; the waker waits at most half a period for it). A
//! wakee that has not completed the previous wake when a period begins is not
//! woken again: that period is lost (counted as an overrun), as is every
//! period the waker itself overslept. So every period of a run is either a
//! sample or a lost wake, and the waker never waits on a lost wakee.
//!
//! - [`config`]: the validated settings and the layout of the pairs;
//! - [`shared`]: the words a pair shares and the protocol over them, the wake lines;
//! - [`ledger`]: the waker's books (samples and lost wakes, pure logic);
//! - [`threads`]: the waker's and the wakee's loops, a wakee process's set-up;
//! - this file: the run (lines, forked wakees, workers, details, the closing line).

mod config;
mod ledger;
mod shared;
mod threads;

pub use config::{priorities, PairPlan, Placement, SwitchConfig};
pub(crate) use threads::pause;

use crate::bench::explaining::{Ask, Explaining};
use crate::engine::{Channel, RunSpec, StopFlag, Worker, WorkerEnd};
use crate::error::{Error, Outcome, Result};
use crate::result::details::switch::{PairDetails, SwitchDetails};
use crate::result::details::Details;
use crate::result::Benchmark;
use crate::result::RunResult;
use crate::stats::recorder;
use crate::sys::{
    self,
    ipc::{self, Mechanism},
    process::{self, Child},
};
use shared::{PairLink, STAGE_WAIT};
use std::sync::{Arc, Mutex};
use threads::{WakerPlan, CLOCK};

/// Fork the wakee processes and wait until each listens (or report why it could not).
fn fork_wakees(cfg: &SwitchConfig, links: &[Arc<PairLink>]) -> Result<Vec<Child>> {
    // Children inherit these masks: terminal signals stay pending (the parent ends
    // them with a last ring), and the wake signal is only taken by sigwaitinfo.
    sys::signals::block_termination()
        .map_err(|e| Error::env(format!("cannot block signals: {e}")).because(e))?;
    let mut children = Vec::with_capacity(links.len());
    for (plan, link) in cfg.pairs.iter().zip(links) {
        let (cpu, sched, mlock) = (plan.wakee_cpu, cfg.setup.rt.sched, cfg.setup.rt.mlock);
        let l = Arc::clone(link);
        let child = process::fork_child(move || threads::wakee_process(&l, cpu, sched, mlock))
            .map_err(|e| Error::env(format!("cannot fork a wakee process: {e}")).because(e))?;
        children.push(child);
    }
    let policy = cfg.setup.rt.policy_name().to_uppercase();
    let give_up = sys::clock::now_ns(CLOCK) + 5_000_000_000;
    for ((plan, link), child) in cfg.pairs.iter().zip(links).zip(children.iter_mut()) {
        loop {
            match link.shared.ready() {
                1 => break,
                2 => {
                    let (stage, e) = link
                        .shared
                        .failure()
                        .unwrap_or((0, std::io::Error::other("unknown")));
                    return Err(shared::setup_error(stage, &e, plan.wakee_cpu, &policy));
                }
                _ => {}
            }
            let ended = match child.try_reap() {
                Ok(r) => r.map(|r| r.exit.code()),
                Err(_) => Some(-1), // reaped elsewhere: gone all the same
            };
            if let Some(code) = ended {
                return Err(Error::env(format!(
                    "a wakee process exited during setup (code {code})"
                )));
            }
            let now = sys::clock::now_ns(CLOCK);
            if now > give_up {
                return Err(Error::env("a wakee process did not start within 5 s"));
            }
            sys::clock::sleep_until(CLOCK, now + 1_000_000);
        }
    }
    Ok(children)
}

/// Run the switch benchmark end to end.
pub fn run(cfg: &SwitchConfig, argv: Vec<String>) -> Result<Outcome> {
    let n = cfg.pairs.len();
    // Tracing is set up (and can fail) before anything is measured or forked.
    let ask = Ask {
        pending: Some("the waker's wake call"),
        ..Ask::new(cfg.explain, &cfg.cpus, "own wake-up path")
    };
    let mut explain_notes = Vec::new();
    let mut explain = Explaining::begin(&ask, &mut explain_notes)?;
    if cfg.via == Mechanism::Signal {
        ipc::block_wake_signal()
            .map_err(|e| Error::env(format!("cannot block the wake signal: {e}")).because(e))?;
    }
    let mut links = Vec::with_capacity(n);
    for _ in 0..n {
        let delay = cfg.wakee_delay_ns.unwrap_or(0);
        let link = PairLink::new(cfg.via, cfg.processes, cfg.warm, delay)?;
        links.push(Arc::new(link));
    }
    let mut children = if cfg.processes {
        fork_wakees(cfg, &links)?
    } else {
        Vec::new()
    };

    let mut spec = RunSpec::new(Benchmark::Switch, cfg, &cfg.setup, &cfg.control, argv)?.threads(
        cfg.pairs.iter().map(|p| Some(p.wakee_cpu)).collect(),
        cfg.pairs.iter().map(|p| p.phase_ns).collect(),
    );
    let line = SwitchDetails {
        via: cfg.via.name().into(),
        processes: cfg.processes,
        ..SwitchDetails::default()
    };
    spec.details.extend(line.to_map());
    spec.notes.extend(explain_notes);

    let tallies: Arc<Mutex<Vec<PairDetails>>> = Arc::new(Mutex::new(Vec::new()));
    let mut channels = Vec::with_capacity(n);
    let mut workers = Vec::with_capacity(2 * n);
    for (plan, link) in cfg.pairs.iter().zip(&links) {
        let (mut rec, col) = recorder::pair(cfg.control.interval_ns);
        channels.push(Channel::new(
            plan.name.clone(),
            Some(plan.wakee_cpu),
            col,
            cfg.control.interval_ns,
        ));
        let wplan = WakerPlan {
            period: cfg.period_ns,
            yield_after: plan.waker_cpu == plan.wakee_cpu
                && cfg.waker_priority.is_some()
                && cfg.waker_priority == cfg.wakee_priority,
            phase: plan.phase_ns,
            duration: cfg.control.duration_ns,
            loops: cfg.control.loops,
            sched: (cfg.waker_sched != cfg.setup.rt.sched).then_some(cfg.waker_sched),
        };
        let tap = explain.watch(&plan.name, plan.wakee_cpu, Some(cfg.period_ns));
        let (l, t, name) = (Arc::clone(link), Arc::clone(&tallies), plan.name.clone());
        workers.push(Worker {
            name: format!("{}-waker", plan.name),
            cpu: Some(plan.waker_cpu),
            body: Box::new(move |start: u64, stop: &StopFlag| -> WorkerEnd {
                let mut tally = threads::waker(&l, &mut rec, &wplan, (start, stop), tap.as_deref());
                tally.name = name;
                if let Ok(mut v) = t.lock() {
                    v.push(tally);
                }
                WorkerEnd { brk: None }
            }),
        });
        if !cfg.processes {
            let l = Arc::clone(link);
            workers.push(Worker {
                name: format!("{}-wakee", plan.name),
                cpu: Some(plan.wakee_cpu),
                body: Box::new(move |_start: u64, _stop: &StopFlag| -> WorkerEnd {
                    threads::wakee(&l);
                    WorkerEnd { brk: None }
                }),
            });
        }
    }

    spec.finish = Some(finisher(cfg, tallies, links.clone(), line));

    let outcome = explain.execute(spec, channels, workers, CLOCK);
    for c in children.iter_mut() {
        // Whatever happens, the child is reaped (or left alone once a wait failed).
        let _ = if outcome.is_ok() {
            // The waker's last ring told the wakee process to exit; reap it (or kill it).
            c.finish(1_000_000_000)
        } else {
            c.kill() // no waker ran: nobody will ring it
        };
    }
    let outcome = outcome?;
    print_lost(cfg, &SwitchDetails::of(&outcome.result).unwrap_or_default());
    Ok(outcome.outcome)
}

/// The run's finisher: the pairs' tallies and lost wakes into the result.
fn finisher(
    cfg: &SwitchConfig,
    tallies: Arc<Mutex<Vec<PairDetails>>>,
    links: Vec<Arc<PairLink>>,
    line: SwitchDetails,
) -> crate::engine::Finisher {
    let names: Vec<String> = cfg.pairs.iter().map(|p| p.name.clone()).collect();
    Box::new(move |r: &mut RunResult| {
        let mut pairs = tallies.lock().map(|v| v.clone()).unwrap_or_default();
        pairs.sort_by_key(|p| names.iter().position(|n| *n == p.name));
        let unrecorded: u64 = pairs.iter().map(|p| p.unrecorded).sum();
        let details = SwitchDetails {
            lost: Some(pairs.iter().map(|p| p.lost).sum()),
            pairs,
            ..line
        };
        r.details.extend(details.to_map());
        if unrecorded > 0 {
            r.notes.push(format!(
                "{unrecorded} lost wake(s) at the end of the run had no later sample to carry them: details.lost counts them, the summary's overruns do not"
            ));
        }
        for (name, link) in names.iter().zip(&links) {
            if let Some((STAGE_WAIT, e)) = link.shared.failure() {
                r.notes
                    .push(format!("{name}: the wakee stopped waiting: {e}"));
            }
        }
    })
}

/// One line after the summary: what was measured and what was lost, and why.
fn print_lost(cfg: &SwitchConfig, d: &SwitchDetails) {
    let sum = |f: fn(&PairDetails) -> u64| -> u64 { d.pairs.iter().map(f).sum() };
    let per_pair: Vec<String> = d
        .pairs
        .iter()
        .map(|p| format!("{} {}", p.name, p.lost))
        .collect();
    let prio = match (cfg.wakee_priority, cfg.waker_priority) {
        (Some(e), Some(w)) => format!(", wakee priority {e}, waker {w}"),
        _ => String::new(),
    };
    crate::outln!(
        "switch: via {} between {}, {} CPU, {}{prio}; lost wakes {} ({}): wakee busy {}, waker late {}",
        cfg.via.name(),
        if cfg.processes {
            "a thread and a process"
        } else {
            "threads"
        },
        cfg.placement.name(),
        if cfg.warm { "armed (warm)" } else { "cold" },
        sum(|p| p.lost),
        per_pair.join(", "),
        sum(|p| p.wakee_busy),
        sum(|p| p.waker_late),
    );
}
