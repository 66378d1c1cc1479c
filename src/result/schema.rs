//! The JSON Schema of the result file, generated from the types above:
//! `docs/result-schema.json` is this module's output, checked by the test
//! `schema_is_up_to_date` and rewritten with
//! `RTLAT_UPDATE_SCHEMA=1 cargo test --lib schema_is_up_to_date`.
//!
//! The schema describes what rtlat writes (schemars' serialize contract): a
//! field is required unless it is left out when empty (`label`, `phases`,
//! `details`, `deadline`). Constants, enumerations and bounds the types cannot
//! express are `#[schemars(…)]` attributes on the fields.

use super::RunResult;

/// Where the schema is kept, relative to the crate.
pub const SCHEMA_PATH: &str = "docs/result-schema.json";

/// The schema of [`RunResult`] (JSON Schema 2020-12).
pub fn schema() -> serde_json::Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<RunResult>();
    schema.to_value()
}

/// The schema as the checked-in file holds it: pretty JSON and a final newline.
pub fn schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&schema()).expect("a schema is JSON");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::path::Path;

    #[test]
    fn schema_is_up_to_date() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(SCHEMA_PATH);
        let want = schema_text();
        if std::env::var_os("RTLAT_UPDATE_SCHEMA").is_some() {
            std::fs::write(&path, &want).expect("write the schema");
        }
        let got = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            got == want,
            "{SCHEMA_PATH} is not the schema of the result types; regenerate it with\n  RTLAT_UPDATE_SCHEMA=1 cargo test --lib schema_is_up_to_date"
        );
    }

    /// The object schema at `pointer`, following `$ref`s into `$defs`.
    fn object<'a>(root: &'a Value, pointer: &str) -> &'a Value {
        let mut v = root
            .pointer(pointer)
            .unwrap_or_else(|| panic!("{pointer} in the schema"));
        loop {
            if let Some(r) = v.get("$ref").and_then(Value::as_str) {
                v = root.pointer(&r[1..]).expect("a $ref into the schema");
            } else if let Some(any) = v.get("anyOf").and_then(Value::as_array) {
                // Option<T> of a struct: T or null.
                v = any.iter().find(|s| s.get("$ref").is_some()).expect("T");
            } else {
                return v;
            }
        }
    }

    fn required(root: &Value, pointer: &str) -> Vec<String> {
        let mut r: Vec<String> = object(root, pointer)["required"]
            .as_array()
            .unwrap_or_else(|| panic!("{pointer} has required fields"))
            .iter()
            .map(|v| v.as_str().expect("a name").to_string())
            .collect();
        r.sort();
        r
    }

    fn sorted(names: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        v.sort();
        v
    }

    /// The generated schema requires the fields and constants a reader relies on.
    #[test]
    fn required_fields_and_constants() {
        let s = schema();
        let props = "/properties";
        assert_eq!(
            required(&s, ""),
            sorted(&[
                "schema",
                "schema_version",
                "tool",
                "benchmark",
                "command_line",
                "start_time_utc",
                "duration_ns",
                "complete",
                "end_reason",
                "config",
                "system",
                "tuning",
                "threads",
                "total",
                "thresholds",
                "loads",
                "notes",
                "measuring_cpu_time_ns",
            ])
        );
        assert_eq!(
            required(&s, &format!("{props}/tool")),
            sorted(&["name", "version"])
        );
        assert_eq!(
            required(&s, &format!("{props}/tuning")),
            // dma_latency_us: absent when the source of an import does not say (null is "off").
            sorted(&[
                "mlock",
                "policy",
                "priority",
                "affinity",
                "phase_offsets_ns"
            ])
        );
        assert_eq!(
            required(&s, &format!("{props}/threads/items")),
            sorted(&["name", "cpu", "summary", "histogram", "series"])
        );
        assert_eq!(
            required(&s, &format!("{props}/total")),
            sorted(&[
                "samples",
                "min_ns",
                "avg_ns",
                "max_ns",
                "stddev_ns",
                "percentiles",
                "overruns",
                "max_sample",
                "max_at_ns",
            ])
        );
        let h = object(&s, "/$defs/ThreadResult/properties/histogram");
        assert_eq!(h["properties"]["scheme"]["const"], "log-linear-ns-v1");
        assert_eq!(
            required(&s, "/$defs/Thresholds/properties/break_event").len(),
            6
        );
        assert_eq!(s["properties"]["schema"]["const"], "rtlat-result");
        assert_eq!(s["properties"]["schema_version"]["const"], 1);
        assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
    }
}
