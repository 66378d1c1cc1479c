//! `rtlat irq host --target ssh://board`: `rtlat irq target` started on the
//! board for the run with the host's backend and edge options (and
//! `--target-arg`s), stopped at its end; its own series (kernel → user,
//! user → reply) merged into the host's result as `target/…` threads.

use super::config::{Backend, IrqConfig, DEFAULT_PERIOD_NS};
use crate::bench::partner::Partner;
use crate::error::Result;
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

/// The target the host drives (`--target`), started on its board.
pub(super) fn start(cfg: &IrqConfig) -> Result<Partner> {
    // Its start line: it is answering.
    let args = || target_args(cfg);
    Partner::start(cfg.target.as_ref(), "target", args, "rtlat irq:")
}

/// Merge the target's own result into `r`: its series as `target/…`
/// threads, its details in `details.target`, a note.
pub(super) fn merge(target: &Value, cfg: &IrqConfig, board: &str, r: &mut RunResult) {
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
}
