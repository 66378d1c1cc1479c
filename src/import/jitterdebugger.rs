//! jitterdebugger's `results.json` (in its `-o DIR`):
//!
//! ```text
//! { "version": 3,
//!   "sysinfo": { "sysname": "Linux", "nodename": "vm", "release": "…", "version": "…",
//!                "machine": "x86_64", "cpus_online": 2, "resolution_in_ns": 1000 },
//!   "cpu": { "0": { "histogram": { "7": 1, "8": 7, … }, "count": 2000,
//!                   "min": 7, "max": 4224, "avg": 22.36 }, … } }
//! ```
//!
//! The histogram has 1 µs slots up to 1 ms (ns slots with `-N`); samples
//! above are in `count` but not in the histogram.

use super::json;
use super::{detect, ImportFormat, Reader};
use super::{parse_u64, system, Imported, ParseError, Parsed, ThreadBuild};

/// jitterdebugger's histogram covers this many slots.
const SLOTS: u64 = 1000;
/// jitterdebugger's results.json.
pub static FORMAT: ImportFormat = ImportFormat {
    name: "jitterdebugger",
    tool: "jitterdebugger",
    describe: "jitterdebugger results.json",
    detect: |head| detect::json_has_key(head, "cpu") && !detect::json_has_key(head, "thread"),
    read: Reader::Text(parse),
};

pub fn parse(text: &str) -> Parsed<Imported> {
    let root = json::parse(text)?;
    root.members("the jitterdebugger result")?;
    let mut imp = Imported::new(crate::result::Benchmark::Timer);
    let mut scale = 1000u64;
    if let Some(si) = root.get("sysinfo") {
        let s = &mut imp.system;
        system::uname(si, s)?;
        if let Some(c) = si.get("cpus_online") {
            s.cpu_count = c.u64("cpus_online")?.min(1 << 20) as usize;
        }
        if let Some(r) = si.get("resolution_in_ns") {
            if r.u64("resolution_in_ns")? == 1 {
                scale = 1;
            }
        }
    }
    if scale == 1 {
        imp.precision_ns = 1;
        imp.unit = "ns";
    }
    if let Some(v) = root.get("version") {
        imp.config.insert(
            "tool".into(),
            format!("jitterdebugger (results version {})", v.u64("version")?).into(),
        );
    }
    let cpus = root.field("cpu", "the jitterdebugger result")?;
    for (key, c) in cpus.members("\"cpu\"")? {
        let what = format!("cpu \"{key}\"");
        c.members(&what)?;
        let cpu = parse_u64(key).map(|v| v as usize);
        let mut b = ThreadBuild::new(
            cpu.map(|v| format!("cpu{v}"))
                .unwrap_or_else(|| format!("thread{key}")),
            cpu,
        );
        let count = c.field("count", &what)?.u64("count")?;
        b.count = Some(count);
        let highest = b.add_json(c, &what, scale, |slot| {
            format!(
                "expected a slot number as key in the histogram of {what}, found {}",
                super::found(slot)
            )
        })?;
        if b.recorded() > count {
            return Err(ParseError::at(
                c.line,
                format!(
                    "expected at most {count} samples (count) in the histogram of {what}, found {}",
                    b.recorded()
                ),
            ));
        }
        b.overflow_at_ns = Some(
            highest
                .map(|h: u64| h.saturating_add(1))
                .unwrap_or(0)
                .max(SLOTS)
                .saturating_mul(scale),
        );
        imp.threads.push(b);
    }
    imp.tuning.policy = Some(crate::result::Policy::Fifo);
    imp.tuning.priority = Some(80);
    imp.tuning.mlock = Some(true);
    imp.tuning.dma_latency_us = Some(Some(0));
    imp.notes.push("jitterdebugger always locks memory (mlockall) and holds /dev/cpu_dma_latency at 0 (recorded as such; it is not in its output)".into());
    imp.notes.push("jitterdebugger's results.json has no period, priority or start time; its threads run SCHED_FIFO 80 unless -p was given (recorded as 80)".into());
    Ok(imp)
}
