//! The text report of a result: what ran on what under which load, the
//! summary (per-thread and per-phase tables, loads, notes) and the
//! benchmark-specific details.

use super::{loads_of, machine_of, Loaded};
use crate::output::text::summary;
use std::fmt::Write;

/// The text report of one result.
pub fn report(l: &Loaded) -> String {
    let r = &l.result;
    let mut s = String::new();
    let _ = writeln!(s, "== {}: {} ({})", l.label, r.benchmark, l.path.display());
    let _ = writeln!(s, "system: {}", machine_of(r));
    let start = if r.start_time_utc.is_empty() {
        "unknown".to_string()
    } else {
        r.start_time_utc.clone()
    };
    let _ = writeln!(s, "start: {start}, load: {}", loads_of(r, true));
    s.push_str(&summary(r));
    if !r.details.is_empty() {
        let items: Vec<String> = r
            .details
            .iter()
            .map(|(k, v)| format!("{k}={}", detail_value(v)))
            .collect();
        let _ = writeln!(s, "details: {}", items.join(" "));
    }
    s
}

/// A detail value without JSON quotes for strings.
pub fn detail_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => super::one_line(&other.to_string()),
    }
}
