//! `rtlat net ping --serve-on ssh://board`: `rtlat net serve` started on the
//! board for the run (listening on the address pinged, its bulk sink with
//! `--bulk`), stopped at its end, its own result kept in the ping's.

use super::PingConfig;
use crate::bench::partner::Partner;
use crate::error::Result;
use crate::result::RunResult;
use serde_json::{json, Value};

/// The server the run pings (`--serve-on`), started on its board.
pub(super) fn start(cfg: &PingConfig) -> Result<Partner> {
    let args = || {
        let mut args: Vec<String> = ["net", "serve", "--listen"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.push(cfg.peer.to_string());
        args.extend(["--timestamps".into(), cfg.common.timestamps.name().into()]);
        if cfg.bulk.is_none() {
            args.push("--no-sink".into());
        }
        args
    };
    // Its start line: the reflector is answering.
    Partner::start(cfg.serve_on.as_ref(), "server", args, "rtlat net:")
}

/// A series of a result as `{name, samples, min_ns, avg_ns, max_ns}`.
fn series_of(result: &Value) -> Vec<Value> {
    let threads = result["threads"].as_array().cloned().unwrap_or_default();
    threads
        .iter()
        .map(|t| {
            let s = &t["summary"];
            json!({
                "name": t["name"],
                "samples": s["samples"],
                "min_ns": s["min_ns"],
                "avg_ns": s["avg_ns"],
                "max_ns": s["max_ns"],
            })
        })
        .collect()
}

/// Record the server's own result in `r` (`details.server`, a note).
pub(super) fn merge(server: &Value, target: &str, r: &mut RunResult) {
    let requests = server["notes"]
        .as_array()
        .and_then(|n| {
            n.iter()
                .filter_map(Value::as_str)
                .find(|n| n.starts_with("requests:"))
        })
        .unwrap_or("requests: not recorded")
        .to_string();
    r.notes.push(format!(
        "rtlat net serve ran on {target} for this run (started and stopped by ping); its {requests}; its own series are in details.server"
    ));
    r.details.insert(
        "server".into(),
        json!({
            "target": target,
            "end_reason": server["end_reason"],
            "duration_ns": server["duration_ns"],
            "details": server["details"],
            "series": series_of(server),
            "notes": server["notes"],
        }),
    );
}
