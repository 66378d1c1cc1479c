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

use crate::bench::threads::{writing, Slot, Threads};
use crate::engine::{Finisher, RunSpec, StopFlag};
use crate::error::{Error, Outcome, Result};
use crate::result::details::irq::{IrqDetails, ResponderCounts};
use crate::result::details::Details;
use crate::result::Benchmark;
use crate::result::RunResult;
use crate::stats::tap::Tap;

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

/// `--explain`'s tracing of the measuring CPU, which needs the kernel's
/// event timestamps.
fn begin_explain(cfg: &IrqConfig, kernel_ts: bool) -> Result<Threads> {
    if cfg.explain.is_some() && cfg.cpu.is_some() && !kernel_ts {
        return Err(Error::env(
            "--explain needs the kernel's event timestamps, which this backend does not give: use --backend gpio",
        ));
    }
    Threads::begin_on(
        cfg.cpu,
        (cfg.explain, cfg.explain_stacks),
        "own wake-up path",
        Some("edge on its way to the reader"),
        cfg.control.interval_ns,
    )
}

/// Run `rtlat irq` end to end.
pub fn run(cfg: &IrqConfig, command_line: Vec<String>) -> Result<Outcome> {
    // host --target: the board answers before the first edge is driven.
    let partner = peer::start(cfg)?;
    let mut backend = open_backend(cfg)?;
    let kernel_ts = backend.kernel_timestamps();
    let start_level = backend
        .input_level()
        .map_err(|e| Error::env(format!("cannot read the watched line: {e}")).because(e))?;
    let mut spec = spec(cfg, kernel_ts, command_line)?;
    // Tracing is set up (and can fail) before anything is measured.
    let mut threads = begin_explain(cfg, kernel_ts)?;
    let ended = Slot::default();
    measuring_thread(cfg, (backend, start_level), ended.clone(), &mut threads);
    let (role, fin) = (cfg.role, ended.clone());
    let own: Finisher = Box::new(move |result: &mut RunResult| {
        if let Some(end) = fin.get() {
            finish_result(result, role, &end);
        }
    });
    let on = cfg.clone();
    spec.finish = Some(partner.finisher(own, move |t, board, r| peer::merge(t, &on, board, r)));
    let outcome = threads.execute(spec, cfg.clock_id())?;
    let end = ended.get().unwrap_or_default();
    print_end(role, &end);
    if let Some(e) = end.error {
        return Ok(Outcome::EnvironmentFailed(e));
    }
    Ok(partner.outcome(outcome.outcome))
}

/// The run: the role, where the replies come from, what is measured and
/// what is not (the notes).
fn spec(cfg: &IrqConfig, kernel_ts: bool, command_line: Vec<String>) -> Result<RunSpec> {
    let mut spec = RunSpec::new(Benchmark::Irq, cfg, &cfg.setup, &cfg.control, command_line)?
        .threads(vec![cfg.cpu], vec![0]);
    spec.notes = notes(cfg, kernel_ts);
    spec.details.insert("role".into(), cfg.role.name().into());
    if cfg.role == Role::Target {
        spec.details
            .insert("reply_from".into(), cfg.reply_from.name().into());
    }
    Ok(spec)
}

/// The measuring thread: the role's series, each a recorder for it and a
/// channel for the reporter, the wake-up of each measured edge (from the
/// kernel's event timestamp to the thread holding the event) explained
/// with `--explain`, and how it ended into `ended`.
fn measuring_thread(
    cfg: &IrqConfig,
    (mut backend, start_level): (Box<dyn EdgeBackend + Send>, bool),
    ended: Slot<Ended>,
    threads: &mut Threads,
) {
    let names = series_names(cfg.role, backend.kernel_timestamps(), cfg.reply_from);
    let mut recs = Recorders(names.iter().map(|n| threads.series(n, cfg.cpu)).collect());
    let explained = if cfg.role == Role::Loopback {
        "wake"
    } else {
        "kernel_to_user"
    };
    let every = Some(cfg.period_ns.unwrap_or(DEFAULT_PERIOD_NS));
    let tap = threads.watch(explained, cfg.cpu, every);
    let name = format!("rtlat-irq-{}", cfg.role.name());
    let (cpu, cfg) = (cfg.cpu, cfg.clone());
    threads.worker(name, cpu, move |start, stop| {
        let at = (start_level, start, stop);
        ended.put(measure(
            &cfg,
            backend.as_mut(),
            (&mut recs, tap.as_deref()),
            at,
        ));
    });
}

/// The measuring thread's life from the run's start: the role's loop on
/// `backend` into `recs` (and `tap`, `--explain`), from the watched line at
/// `start_level`; how it ended.
fn measure(
    cfg: &IrqConfig,
    backend: &mut (dyn EdgeBackend + Send),
    (recs, tap): (&mut Recorders, Option<&Tap>),
    (start_level, start, stop): (bool, u64, &StopFlag),
) -> Ended {
    let plan = plan_of(cfg, start);
    let mut acct = EdgeAccount::default();
    acct.set_level(start_level);
    let mut time = RealTime(cfg.clock_id());
    let res = writing(tap, || {
        backend.begin(start).and_then(|()| {
            let s = DriveSession {
                plan: &plan,
                recs: &mut *recs,
                acct: &mut acct,
                stop,
                tap,
            };
            match cfg.role {
                Role::Loopback => drive(backend, &mut time, s, loopback::record),
                Role::Target if cfg.reply_from != ReplyFrom::User => {
                    responder::measure(backend, &mut time, s)
                }
                Role::Target => target::measure(backend, &mut time, s),
                Role::Host => drive(backend, &mut time, s, host::record),
            }
        })
    });
    recs.finish();
    Ended {
        counts: acct.r,
        responder: backend.responder_counts(),
        error: res
            .err()
            .map(|e| format!("edge backend failed during the run: {e}")),
    }
}
