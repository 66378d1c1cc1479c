//! `rtlat irq`: external interrupt latency over an edge on a wire.
//!
//! Three roles share one edge backend (GPIO character device, serial modem
//! lines, or an in-process simulated wire):
//! - `loopback`: one board drives an output wired to its own input. Per edge,
//!   t0 = clock just before the write; irq = kernel event timestamp − t0;
//!   user = time the measuring thread holds the event − t0; wake = user − irq.
//! - `target`: the board under test answers every trigger edge on a reply
//!   line at once; kernel timestamp → user, and user → reply written.
//! - `host`: the log host drives the trigger and timestamps the reply edge
//!   on its own input: the round trip; no reply within `--timeout` is missed.
//!
//! Inputs always watch both edges, so the line level is known at every event
//! and a lost event shows as a sequence-number gap or two edges of one kind
//! in a row. `--edge` selects which edges are measured; with `rising` or
//! `falling`, the opposite edge returns the wire to idle unmeasured.

mod account;
mod backend;
mod config;
mod drive;
mod host;
mod loopback;
mod peer;
pub mod responder;
mod target;
#[cfg(test)]
mod testing;

pub use account::{EdgeAccount, EdgeCounts};
pub use backend::{Edge, EdgeBackend};
pub use config::{
    Backend, Bias, EventClock, IrqConfig, Measured, ReplyFrom, Role, SimConfig, DEFAULT_PERIOD_NS,
    DEFAULT_TIMEOUT_NS,
};
use drive::{drive, DrivePlan, DriveSession, RealTime, Recorders};

use crate::bench::explaining::{Ask, Explaining};
use crate::engine::{Channel, RunSpec, StopFlag, Worker, WorkerEnd};
use crate::error::{Error, Outcome, Result};
use crate::result::details::irq::{IrqDetails, ResponderCounts};
use crate::result::details::Details;
use crate::result::Benchmark;
use crate::result::RunResult;
use crate::stats::recorder;
use std::sync::{Arc, Mutex};

/// Series names of a role: the recorders are created in this order.
fn series_names(role: Role, kernel_ts: bool, reply: ReplyFrom) -> &'static [&'static str] {
    if role == Role::Target && reply != ReplyFrom::User {
        return responder::SERIES;
    }
    match (role, kernel_ts) {
        (Role::Loopback, true) => &["irq", "user", "wake"],
        (Role::Loopback, false) => &["user"],
        (Role::Target, true) => &["kernel_to_user", "user_to_reply"],
        (Role::Target, false) => &["user_to_reply"],
        (Role::Host, _) => &["roundtrip"],
    }
}

/// The one-line edge account printed after the summary.
pub fn account_line(role: Role, r: &EdgeCounts) -> String {
    let seq = match (r.first_seqno, r.last_seqno) {
        (Some(a), Some(b)) => format!(
            " (seqno {a}..{b}{})",
            if r.lost_events == 0 {
                ", continuous"
            } else {
                ""
            }
        ),
        _ => String::new(),
    };
    let head = match role {
        Role::Target => format!("edges: {} seen, {} answered", r.edges_seen, r.answered),
        _ => format!(
            "edges: {} driven, {} seen, {} missed",
            r.edges_driven, r.edges_seen, r.missed
        ),
    };
    let mut s = format!(
        "{head}, {} lost{seq}, {} repeated, {} unexpected, {} timestamp errors",
        r.lost_events, r.repeated_edges, r.unexpected_edges, r.timestamp_errors
    );
    if r.missed_idle > 0 {
        s.push_str(&format!(", {} returns to idle missed", r.missed_idle));
    }
    s
}

/// How the measuring thread ended: its edge account, and the I/O error that
/// ended the run early, if one did.
#[derive(Debug, Clone, Default)]
struct Ended {
    counts: EdgeCounts,
    error: Option<String>,
    /// A kernel reply: the responder's counters when the measuring ended.
    responder: Option<ResponderCounts>,
}

/// The result's details for the edge account.
fn details(result: &RunResult, role: Role, end: &Ended) -> IrqDetails {
    let r = &end.counts;
    // Target: rtlat's own share of the response, event read -> reply written.
    let avg = |name: &str| {
        result
            .threads
            .iter()
            .find(|t| t.name == name)
            .filter(|t| t.summary.samples > 0)
            .map(|t| t.summary.avg_ns as f64)
    };
    let own_share_of_response = match (role, avg("kernel_to_user"), avg("user_to_reply")) {
        (Role::Target, Some(k2u), Some(u2r)) if k2u + u2r > 0.0 => Some(u2r / (k2u + u2r)),
        _ => None,
    };
    IrqDetails {
        role: role.name().into(),
        edges: r.clone(),
        seqno_continuous: r.lost_events == 0 && r.first_seqno.is_some(),
        own_share_of_response,
        responder: end.responder,
    }
}

/// Put the edge account into the result: details, notes, and the end reason
/// of a run ended by an error.
fn finish_result(result: &mut RunResult, role: Role, end: &Ended) {
    let r = &end.counts;
    let map = details(result, role, end).to_map();
    result.details.extend(map);
    let problems = r.missed + r.missed_idle + r.lost_events + r.repeated_edges;
    if problems > 0 {
        result.notes.push(format!(
            "{} edge(s) missed, {} event(s) lost by the kernel, {} repeated edge(s): see details",
            r.missed + r.missed_idle,
            r.lost_events,
            r.repeated_edges
        ));
    }
    if let Some(e) = &end.error {
        result.end_reason = crate::result::EndReason::Error;
        result.notes.push(format!("the run ended on an error: {e}"));
    }
}

/// Notes on what the run measures and what it does not.
fn notes(cfg: &IrqConfig, kernel_ts: bool) -> Vec<String> {
    let mut notes = Vec::new();
    if !kernel_ts {
        notes.push(
            "no kernel event timestamps on this backend: only user-space times are measured".into(),
        );
    }
    if cfg.role == Role::Target && cfg.reply_from != ReplyFrom::User {
        notes.push(format!(
            "the kernel responder replied (--reply-from {}): edge_to_reply = interrupt handler entry -> output set, in the kernel; rtlat only collected the records, woken after each reply",
            cfg.reply_from.name()
        ));
    }
    if cfg.event_clock == EventClock::Hte {
        notes.push("HTE timestamps are compared with CLOCK_MONOTONIC: samples outside [write, read] are counted as timestamp_errors".into());
    }
    let only = match cfg.measured() {
        Measured::Both => None,
        Measured::Rising => Some("rising"),
        Measured::Falling => Some("falling"),
    };
    if let Some(kind) = only {
        notes.push(format!(
            "only {kind} edges are measured; the opposite edge returns the wire to idle unmeasured"
        ));
    }
    notes
}

/// Open where the run's edges come from (before memory is locked): the
/// kernel responder when it issues the replies, else the configured backend.
fn open_backend(cfg: &IrqConfig) -> Result<Box<dyn EdgeBackend + Send>> {
    if cfg.reply_from != ReplyFrom::User {
        return Ok(Box::new(responder::KernelReply::open(cfg)?));
    }
    backend::open(cfg)
}

/// The run's series, each a channel for the reporter and a recorder for
/// the measuring thread.
fn series(cfg: &IrqConfig, kernel_ts: bool) -> (Vec<Channel>, Recorders) {
    let names = series_names(cfg.role, kernel_ts, cfg.reply_from);
    let mut channels = Vec::with_capacity(names.len());
    let mut recs = Vec::with_capacity(names.len());
    for name in names {
        let (rec, col) = recorder::pair(cfg.control.interval_ns);
        channels.push(Channel::new(
            (*name).into(),
            cfg.cpu,
            col,
            cfg.control.interval_ns,
        ));
        recs.push(rec);
    }
    (channels, Recorders(recs))
}

/// What the measuring loop of a run started at `start` is to do.
fn plan_of(cfg: &IrqConfig, start: u64) -> DrivePlan {
    DrivePlan {
        start,
        period: cfg.period_ns.unwrap_or(DEFAULT_PERIOD_NS),
        end: cfg
            .control
            .duration_ns
            .map(|d| start.saturating_add(d))
            .unwrap_or(u64::MAX),
        count: cfg.control.loops.unwrap_or(u64::MAX),
        timeout: cfg.timeout_ns.unwrap_or(DEFAULT_TIMEOUT_NS),
        measured: cfg.measured(),
    }
}

/// The lines printed after the summary: what happened to the edges, and
/// the kernel responder's counters when it answered.
fn print_end(role: Role, end: &Ended) {
    crate::outln!("{}", account_line(role, &end.counts));
    if let Some(c) = end.responder {
        crate::outln!(
            "kernel responder: {} edges seen, {} answered, {} coalesced, {} records dropped",
            c.responder_seen,
            c.responder_answered,
            c.responder_coalesced,
            c.responder_dropped
        );
    }
}

/// `--explain`'s tracing of the measuring CPU (its notes into `notes`)
/// and the measuring thread's tap: each measured edge's wake-up, from the
/// kernel's event timestamp to the thread holding the event.
fn begin_explain(
    cfg: &IrqConfig,
    kernel_ts: bool,
    notes: &mut Vec<String>,
) -> Result<(Explaining, Option<Arc<crate::stats::tap::Tap>>)> {
    let (Some(_), Some(cpu)) = (cfg.explain, cfg.cpu) else {
        return Ok((Explaining::default(), None));
    };
    if !kernel_ts {
        return Err(Error::env(
            "--explain needs the kernel's event timestamps, which this backend does not give: use --backend gpio",
        ));
    }
    let cpus = [cpu];
    let ask = Ask {
        pending: Some("edge on its way to the reader"),
        ..Ask::new(cfg.explain, &cpus, "own wake-up path")
    };
    let mut e = Explaining::begin(&ask, notes)?;
    let series = if cfg.role == Role::Loopback {
        "wake"
    } else {
        "kernel_to_user"
    };
    let tap = e.watch(
        series,
        cpu,
        Some(cfg.period_ns.unwrap_or(DEFAULT_PERIOD_NS)),
    );
    Ok((e, tap))
}

/// Run `rtlat irq` end to end.
pub fn run(cfg: &IrqConfig, command_line: Vec<String>) -> Result<Outcome> {
    let role = cfg.role;
    // host --target: the board answers before the first edge is driven.
    let remote = Arc::new(Mutex::new(peer::start(cfg)?));
    let remote_trouble: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let mut backend = open_backend(cfg)?;
    let kernel_ts = backend.kernel_timestamps();
    let start_level = backend
        .input_level()
        .map_err(|e| Error::env(format!("cannot read the watched line: {e}")).because(e))?;
    let clock = cfg.clock_id();

    let mut spec = RunSpec::new(Benchmark::Irq, cfg, &cfg.setup, &cfg.control, command_line)?
        .threads(vec![cfg.cpu], vec![0]);
    spec.notes = notes(cfg, kernel_ts);
    spec.details.insert("role".into(), role.name().into());
    if role == Role::Target {
        spec.details
            .insert("reply_from".into(), cfg.reply_from.name().into());
    }

    // Tracing is set up (and can fail) before anything is measured.
    let (explain, tap) = begin_explain(cfg, kernel_ts, &mut spec.notes)?;

    let report: Arc<Mutex<Option<Ended>>> = Arc::new(Mutex::new(None));
    let (channels, mut recs) = series(cfg, kernel_ts);
    let out = Arc::clone(&report);
    let plan_cfg = cfg.clone();
    let worker = Worker {
        name: format!("rtlat-irq-{}", role.name()),
        cpu: cfg.cpu,
        body: Box::new(move |start: u64, stop: &StopFlag| -> WorkerEnd {
            let plan = plan_of(&plan_cfg, start);
            let mut acct = EdgeAccount::default();
            acct.set_level(start_level);
            let mut time = RealTime(clock);
            if let Some(t) = &tap {
                t.set_writer(crate::sys::sched::gettid());
            }
            let res = backend.begin(start).and_then(|()| {
                let s = DriveSession {
                    plan: &plan,
                    recs: &mut recs,
                    acct: &mut acct,
                    stop,
                    tap: tap.as_deref(),
                };
                let b = backend.as_mut();
                match role {
                    Role::Loopback => drive(b, &mut time, s, loopback::record),
                    Role::Target if plan_cfg.reply_from != ReplyFrom::User => {
                        responder::measure(b, &mut time, s)
                    }
                    Role::Target => target::measure(b, &mut time, s),
                    Role::Host => drive(b, &mut time, s, host::record),
                }
            });
            recs.finish();
            if let Some(t) = &tap {
                t.close();
            }
            let ended = Ended {
                counts: acct.r,
                responder: backend.responder_counts(),
                error: res
                    .err()
                    .map(|e| format!("edge backend failed during the run: {e}")),
            };
            if let Ok(mut g) = out.lock() {
                *g = Some(ended);
            }
            WorkerEnd { brk: None }
        }),
    };
    let fin = Arc::clone(&report);
    let (remote_f, trouble_f, fin_cfg) = (
        Arc::clone(&remote),
        Arc::clone(&remote_trouble),
        cfg.clone(),
    );
    spec.finish = Some(Box::new(move |result: &mut RunResult| {
        if let Some(end) = fin.lock().ok().and_then(|g| g.clone()) {
            finish_result(result, role, &end);
        }
        if let Some(p) = remote_f.lock().ok().and_then(|mut g| g.take()) {
            let trouble = peer::finish(p, &fin_cfg, result);
            if let Ok(mut g) = trouble_f.lock() {
                *g = trouble;
            }
        }
    }));
    let outcome = explain.execute(spec, channels, vec![worker], clock);
    // On an early error the target never stopped: dropping it ends it.
    drop(remote.lock().ok().and_then(|mut g| g.take()));
    let outcome = outcome?;
    let end = report
        .lock()
        .ok()
        .and_then(|g| g.clone())
        .unwrap_or_default();
    print_end(role, &end);
    if let Some(e) = end.error {
        return Ok(Outcome::EnvironmentFailed(e));
    }
    match remote_trouble.lock().ok().and_then(|mut g| g.take()) {
        Some(t) => Ok(Outcome::EnvironmentFailed(t)),
        None => Ok(outcome.outcome),
    }
}
