//! `rtlat irq host --target ssh://board`: `rtlat irq target` started on the
//! board for the run with the host's backend and edge options (and
//! `--target-arg`s), stopped at its end; its own series (kernel → user,
//! user → reply) merged into the host's result as `target/…` threads.

use super::config::{Backend, IrqConfig, DEFAULT_PERIOD_NS};
use crate::error::Result;
use crate::remote::peer::{Fetched, Peer};
use crate::result::{RunResult, ThreadResult};
use serde_json::{json, Value};

/// A configuration value as it is spelled on the command line.
fn spelled(v: impl serde::Serialize) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// The board's command line: `irq target` with the host's backend and edges.
pub(super) fn target_args(cfg: &IrqConfig) -> Vec<String> {
    let mut a: Vec<String> = vec!["irq".into(), "target".into()];
    a.extend(["--backend".into(), spelled(cfg.backend)]);
    a.extend(["--edge".into(), spelled(cfg.edge)]);
    if cfg.backend != Backend::Serial {
        a.extend(["--event-clock".into(), spelled(cfg.event_clock)]);
    }
    if let (Backend::Sim, Some(sim)) = (cfg.backend, cfg.sim) {
        // A simulated target makes its own edges: at the host's pace.
        let period = cfg.period_ns.unwrap_or(DEFAULT_PERIOD_NS);
        for (opt, v) in [
            ("--period", format!("{period}ns")),
            ("--sim-delay", format!("{}ns", sim.delay_ns)),
            ("--sim-jitter", format!("{}ns", sim.jitter_ns)),
            ("--sim-seed", sim.seed.to_string()),
        ] {
            a.extend([opt.to_string(), v]);
        }
    }
    a.extend(cfg.target_args.iter().cloned());
    a
}

/// Start the target the host drives, if `--target` asks for one.
pub(super) fn start(cfg: &IrqConfig) -> Result<Option<Peer>> {
    let Some(board) = &cfg.target else {
        return Ok(None);
    };
    // Its start line: it is answering.
    Peer::start(board, &target_args(cfg), "rtlat irq:").map(Some)
}

/// Stop the target and merge its own result into `r`: its series as
/// `target/…` threads, its details in `details.target`, a note; the trouble
/// with it, if any.
pub(super) fn finish(peer: Peer, cfg: &IrqConfig, r: &mut RunResult) -> Option<String> {
    let board = cfg
        .target
        .as_ref()
        .map(|b| b.ssh.target.to_string())
        .unwrap_or_default();
    let Fetched { result, trouble } = peer.stop();
    let Some(target) = result else {
        let why = trouble.unwrap_or_default();
        r.notes.push(format!("the target on {board}: {why}"));
        return Some(why);
    };
    let threads: Vec<ThreadResult> =
        serde_json::from_value(target["threads"].clone()).unwrap_or_default();
    let mut names = Vec::new();
    for mut t in threads {
        t.name = format!("target/{}", t.name);
        names.push(t.name.clone());
        r.threads.push(t);
    }
    let e = &target["details"];
    let account = format!(
        "edges: {} seen, {} answered, {} lost",
        e["edges_seen"], e["answered"], e["lost_events"]
    );
    r.notes.push(format!(
        "rtlat irq target ran on {board} for this run (started and stopped by host): {account}; its series are {} (the total is the host's own)",
        names.join(", ")
    ));
    if cfg.backend == Backend::Sim {
        r.notes.push(
            "--backend sim: the two sides share no wire (each simulates its own), so the target answers its own simulated edges at the host's pace and the host's roundtrip does not include the target's response".into(),
        );
    }
    r.details.insert(
        "target".into(),
        json!({
            "target": board,
            "end_reason": target["end_reason"],
            "duration_ns": target["duration_ns"],
            "details": target["details"],
            "notes": target["notes"],
        }),
    );
    if let Some(t) = &trouble {
        r.notes.push(format!("the target on {board}: {t}"));
    }
    trouble
}
