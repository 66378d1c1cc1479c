//! `rtlat net ping --serve-on ssh://board`: `rtlat net serve` started on the
//! board for the run (listening on the address pinged, its bulk sink with
//! `--bulk`), stopped at its end, its own result kept in the ping's.

use super::PingConfig;
use crate::error::Result;
use crate::remote::peer::{Fetched, Peer};
use crate::result::RunResult;
use serde_json::{json, Value};

/// Start the server the run pings, if `--serve-on` asks for one.
pub(super) fn start(cfg: &PingConfig) -> Result<Option<Peer>> {
    let Some(board) = &cfg.serve_on else {
        return Ok(None);
    };
    let mut args: Vec<String> = ["net", "serve", "--listen"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.push(cfg.peer.to_string());
    args.extend(["--timestamps".into(), cfg.common.timestamps.name().into()]);
    if cfg.bulk.is_none() {
        args.push("--no-sink".into());
    }
    // Its start line: the reflector is answering.
    Peer::start(board, &args, "rtlat net:").map(Some)
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

/// Stop the server and record its own result in `r` (`details.server`, a
/// note); the trouble with it, if any.
pub(super) fn finish(peer: Peer, target: &str, r: &mut RunResult) -> Option<String> {
    let Fetched { result, trouble } = peer.stop();
    let Some(server) = result else {
        let why = trouble.unwrap_or_default();
        r.notes.push(format!("the server on {target}: {why}"));
        return Some(why);
    };
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
            "series": series_of(&server),
            "notes": server["notes"],
        }),
    );
    if let Some(t) = &trouble {
        r.notes.push(format!("the server on {target}: {t}"));
    }
    trouble
}
