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

use crate::bench::explaining::Ask;
use crate::bench::threads::Threads;
use crate::engine::RunSpec;
use crate::error::{Error, Outcome, Result};
use crate::result::details::switch::{PairDetails, SwitchDetails};
use crate::result::details::Details;
use crate::result::Benchmark;
use crate::result::RunResult;
use crate::sys::{
    self,
    ipc::{self, Mechanism},
    process::{self, Child},
};
use shared::{PairLink, STAGE_WAIT};
use std::sync::{Arc, Mutex};
use threads::{wakee, waker, WakerPlan, CLOCK};

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
    // Tracing is set up (and can fail) before anything is measured or forked.
    let ask = Ask {
        pending: Some("the waker's wake call"),
        across: cfg.placement == Placement::Cross,
        stacks: cfg.explain_stacks,
        ..Ask::new(cfg.explain, &cfg.cpus, "own wake-up path")
    };
    let mut threads = Threads::begin(&ask, cfg.control.interval_ns)?;
    if cfg.via == Mechanism::Signal {
        ipc::block_wake_signal()
            .map_err(|e| Error::env(format!("cannot block the wake signal: {e}")).because(e))?;
    }
    let delay = cfg.wakee_delay_ns.unwrap_or(0);
    let links = cfg
        .pairs
        .iter()
        .map(|_| PairLink::new(cfg.via, cfg.processes, cfg.warm, delay).map(Arc::new))
        .collect::<Result<Vec<_>>>()?;
    let mut children = if cfg.processes {
        fork_wakees(cfg, &links)?
    } else {
        Vec::new()
    };
    let (mut spec, line) = spec(cfg, argv)?;
    let tallies: Arc<Mutex<Vec<PairDetails>>> = Arc::new(Mutex::new(Vec::new()));
    for (plan, link) in cfg.pairs.iter().zip(&links) {
        pair_threads(cfg, (plan, link), &tallies, &mut threads);
    }
    let said = Arc::new(Mutex::new(None));
    spec.finish = Some(finisher(
        cfg,
        tallies,
        links.clone(),
        (line, Arc::clone(&said)),
    ));
    let outcome = threads.execute(spec, CLOCK);
    reap(&mut children, outcome.is_ok());
    let outcome = outcome?;
    // What was measured and what was lost, and why: as `report` says it.
    if let Some(line) = said.lock().ok().and_then(|mut s| s.take()) {
        crate::outln!("{line}");
    }
    Ok(outcome.outcome)
}

/// The run: each pair's wakee CPU and phase, the mechanism in the details.
fn spec(cfg: &SwitchConfig, argv: Vec<String>) -> Result<(RunSpec, SwitchDetails)> {
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
    Ok((spec, line))
}

/// Reap the wakee processes after a run that `ran` (or not: an early
/// error), whatever happens (or leave one alone once a wait failed).
fn reap(children: &mut [Child], ran: bool) {
    for c in children {
        let _ = if ran {
            // The waker's last ring told the wakee process to exit; reap it (or kill it).
            c.finish(1_000_000_000)
        } else {
            c.kill() // no waker ran: nobody will ring it
        };
    }
}

/// The threads of a pair: its series (the wakee's wake-up, explained with
/// `--explain`), the waker, whose tally goes to `tallies` when it ends, and
/// the wakee unless it is a process.
fn pair_threads(
    cfg: &SwitchConfig,
    (plan, link): (&PairPlan, &Arc<PairLink>),
    tallies: &Arc<Mutex<Vec<PairDetails>>>,
    threads: &mut Threads,
) {
    let mut rec = threads.series(&plan.name, Some(plan.wakee_cpu));
    let wplan = WakerPlan {
        period: cfg.period_ns,
        yield_after: plan.waker_cpu == plan.wakee_cpu
            && cfg.waker_priority.is_some()
            && cfg.waker_priority == cfg.wakee_priority,
        phase: plan.phase_ns,
        duration: cfg.control.duration_ns,
        loops: cfg.control.loops,
        sched: (cfg.waker_sched != cfg.setup.rt.sched).then_some(cfg.waker_sched),
        waker_cpu: plan.waker_cpu,
        wakee_cpu: plan.wakee_cpu,
    };
    let tap = threads.watch(&plan.name, Some(plan.wakee_cpu), Some(cfg.period_ns));
    let (l, t, name) = (Arc::clone(link), Arc::clone(tallies), plan.name.clone());
    let thread = format!("{}-waker", plan.name);
    threads.worker(thread, Some(plan.waker_cpu), move |start, stop| {
        let (mut tally, moved) = waker(&l, &mut rec, &wplan, (start, stop), tap.as_deref());
        tally.name.clone_from(&name);
        if let Ok(mut v) = t.lock() {
            v.push(tally);
        }
        moved.map(|m| m.lost(&name))
    });
    if !cfg.processes {
        let l = Arc::clone(link);
        let thread = format!("{}-wakee", plan.name);
        threads.worker(thread, Some(plan.wakee_cpu), move |_, _| wakee(&l));
    }
}

/// The run's finisher: the pairs' tallies and lost wakes into the result.
fn finisher(
    cfg: &SwitchConfig,
    tallies: Arc<Mutex<Vec<PairDetails>>>,
    links: Vec<Arc<PairLink>>,
    (line, said): (SwitchDetails, Arc<Mutex<Option<String>>>),
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
        if let Ok(mut s) = said.lock() {
            *s = Some(crate::render::describe::switch_line(&details, r));
        }
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
