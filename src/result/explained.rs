//! A worst case explained (`--explain`): one late interval of a measuring
//! thread split into the parts of the CPU's time that made it late.

use serde::{Deserialize, Serialize};

/// One share of an explained interval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Part {
    /// `idle`, `irq`, `vector`, `softirq`, `nmi`, `thread`, `preempt-off`,
    /// `irqs-off`, `throttled` (runnable on an idle CPU: RT throttling),
    /// `hypervisor`, `self` (the thread's own wake-up path) or
    /// `unexplained`.
    pub kind: String,
    /// The handler, vector, thread (`comm pid prio`) or cause.
    pub name: String,
    pub ns: u64,
}

/// One explained interval; its parts add up to `latency_ns`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Explained {
    /// The measuring thread's series (`cpu0`).
    pub thread: String,
    pub cpu: Option<usize>,
    /// When the interval began, ns after the start of the run.
    pub at_ns: u64,
    pub latency_ns: u64,
    /// Largest first.
    pub parts: Vec<Part>,
}

impl Explained {
    /// The largest part.
    pub fn culprit(&self) -> Option<&Part> {
        self.parts.iter().max_by_key(|p| p.ns)
    }

    /// `hypervisor 16.6 ms, irq virtio0-input 0.2 ms`: the parts above
    /// 1 % of the latency (at most `max`), largest first.
    pub fn parts_line(&self, max: usize) -> String {
        let mut v: Vec<String> = self
            .parts
            .iter()
            .filter(|p| p.ns * 100 >= self.latency_ns || p.ns == self.latency_ns)
            .take(max)
            .map(|p| format!("{} {}", p.label(), short(p.ns)))
            .collect();
        if v.is_empty() {
            v.push("nothing recorded".into());
        }
        v.join(", ")
    }
}

impl Part {
    /// `irq virtio0-input`, `thread hog 1234 FIFO 90`, `hypervisor`.
    pub fn label(&self) -> String {
        match self.kind.as_str() {
            "irq" | "softirq" | "vector" | "thread" => format!("{} {}", self.kind, self.name),
            "preempt-off" => format!("preemption off in {}", self.name),
            "irqs-off" => format!("interrupts off in {}", self.name),
            _ => self.name.clone(),
        }
    }
}

/// `16.9 ms`, `212.4 us`, `800 ns`.
pub fn short(ns: u64) -> String {
    if ns >= 1_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else if ns >= 1_000 {
        format!("{:.1} us", ns as f64 / 1e3)
    } else {
        format!("{ns} ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_the_parts_above_one_percent_largest_first() {
        let part = |kind: &str, name: &str, ns| Part {
            kind: kind.into(),
            name: name.into(),
            ns,
        };
        let e = Explained {
            thread: "cpu0".into(),
            cpu: Some(0),
            at_ns: 4_670_000_000,
            latency_ns: 16_900_000,
            parts: vec![
                part("hypervisor", "hypervisor", 16_600_000),
                part("irq", "virtio0-input", 200_000),
                part("preempt-off", "opt 12", 99_000),
                part("self", "own wake-up path", 1_000),
            ],
        };
        assert_eq!(e.culprit().map(|p| p.kind.as_str()), Some("hypervisor"));
        assert_eq!(
            e.parts_line(4),
            "hypervisor 16.6 ms, irq virtio0-input 200.0 us"
        );
        assert_eq!(
            crate::render::text::explained_line(&e),
            "worst 16.9 ms at +4.670s on cpu0: hypervisor 16.6 ms, irq virtio0-input 200.0 us"
        );
        assert_eq!(e.parts[2].label(), "preemption off in opt 12");
        assert_eq!(short(999), "999 ns");
    }
}
