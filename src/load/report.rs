//! What `rtlat load` prints: achieved rates for people, one line per report
//! and the final table.

use serde_json::Value;

/// A rate for people: `812 ops/s`, `1.23 Mops/s`, `4.00 MB/s` (MB = 10^6 bytes).
pub fn human_rate(rate: f64, unit: &str) -> String {
    let base = match unit {
        "bytes/s" | "B/s" => "B/s",
        "" => "ops/s",
        other => other,
    };
    let (scaled, prefix) = if rate >= 1e9 {
        (rate / 1e9, "G")
    } else if rate >= 1e6 {
        (rate / 1e6, "M")
    } else if rate >= 1e3 {
        (rate / 1e3, "k")
    } else {
        (rate, "")
    };
    if prefix.is_empty() {
        format!("{scaled:.1} {base}")
    } else {
        format!("{scaled:.2} {prefix}{base}")
    }
}

/// One line: each load's achieved rate, and its failures if any.
pub fn rates_line_of(records: &[Value]) -> String {
    records
        .iter()
        .map(|r| {
            let name = r["name"].as_str().unwrap_or("?");
            let rate = r["achieved_rate"].as_f64().unwrap_or(0.0);
            let unit = r["rate_unit"].as_str().unwrap_or("ops/s");
            let failed = r["failed"].as_array().map_or(0, Vec::len);
            if failed > 0 {
                format!("{name} {} ({failed} failed)", human_rate(rate, unit))
            } else {
                format!("{name} {}", human_rate(rate, unit))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn table(records: &[Value]) -> String {
    let mut rows = vec![[
        "load".to_string(),
        "spec".into(),
        "workers".into(),
        "rate".into(),
        "ops".into(),
        "cpu time".into(),
        "failed".into(),
    ]];
    for r in records {
        let failed: Vec<String> = r["failed"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|f| {
                        format!(
                            "#{} {}: {}",
                            f["worker"],
                            f["what"].as_str().unwrap_or(""),
                            f["reason"].as_str().unwrap_or("")
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        rows.push([
            r["name"].as_str().unwrap_or("?").into(),
            r["spec"].as_str().unwrap_or("").into(),
            format!("{}/{}", r["started"], r["workers"]),
            human_rate(
                r["achieved_rate"].as_f64().unwrap_or(0.0),
                r["rate_unit"].as_str().unwrap_or(""),
            ),
            r["ops"].to_string(),
            format!(
                "{:.3}s",
                r["cpu_time_ns"].as_u64().unwrap_or(0) as f64 / 1e9
            ),
            if failed.is_empty() {
                "-".into()
            } else {
                failed.join("; ")
            },
        ]);
    }
    let widths: Vec<usize> = (0..7)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                if c == 6 {
                    cell.clone()
                } else {
                    format!("{cell:<w$}", w = widths[c])
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rates_are_readable() {
        assert_eq!(human_rate(812.34, "ops/s"), "812.3 ops/s");
        assert_eq!(human_rate(4_000_000.0, "bytes/s"), "4.00 MB/s");
        assert_eq!(human_rate(1_234_000.0, "ops/s"), "1.23 Mops/s");
        let line = rates_line_of(&[
            json!({"name": "exec", "achieved_rate": 10.0, "rate_unit": "ops/s", "failed": []}),
            json!({"name": "net", "achieved_rate": 2e6, "rate_unit": "bytes/s", "failed": [{"worker": 0}]}),
        ]);
        assert_eq!(line, "exec 10.0 ops/s, net 2.00 MB/s (1 failed)");
    }
}
