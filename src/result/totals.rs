//! Totals by cause: every interval a CPU's threads hand over (not only the
//! worst), attributed and summed per cause, for a benchmark where all of
//! them count — `noise`, whose every gap above the threshold is time taken
//! from the loop. Bounded: at most [`CAUSES`] causes are kept apart; a new
//! cause past them takes the place of the smallest, whose time goes to
//! `other`, so a large cause stays named however many short-lived tasks
//! (a build's compilers, one cause per pid) came before it.

use super::explained::short;
use super::Part;
use serde::{Deserialize, Serialize};

/// Causes kept apart per CPU; the smallest of the rest add up under `other`.
pub const CAUSES: usize = 32;

/// One CPU's explained intervals, summed by cause.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTotals {
    pub cpu: usize,
    /// Intervals attributed, and their time (the sum of `parts`).
    pub intervals: u64,
    pub ns: u64,
    /// Intervals handed over that the reader could not attribute (it fell
    /// behind by more than its queue), and their time.
    #[serde(default)]
    pub skipped: u64,
    #[serde(default)]
    pub skipped_ns: u64,
    /// By cause, largest first once the run is over.
    pub parts: Vec<Part>,
}

/// A part as a cause summed over intervals: its one interval's stack left
/// out.
fn cause(p: &Part) -> Part {
    Part {
        kind: p.kind.clone(),
        name: p.name.clone(),
        ns: p.ns,
        stack: Vec::new(),
    }
}

impl CpuTotals {
    pub fn new(cpu: usize) -> CpuTotals {
        CpuTotals {
            cpu,
            parts: Vec::with_capacity(CAUSES + 1),
            ..CpuTotals::default()
        }
    }

    /// Add one attributed interval's parts.
    pub fn add(&mut self, parts: &[Part]) {
        self.intervals += 1;
        for p in parts {
            self.ns += p.ns;
            let at = self
                .parts
                .iter()
                .position(|q| q.kind == p.kind && q.name == p.name);
            match at {
                Some(i) => self.parts[i].ns += p.ns,
                None if self.kept() < CAUSES => self.parts.push(cause(p)),
                None => self.displace(p),
            }
        }
    }

    /// Causes kept apart (all but `other`).
    fn kept(&self) -> usize {
        self.parts.iter().filter(|q| q.kind != "other").count()
    }

    /// A new cause when the table is full: it takes the smallest cause's
    /// place if it is at least as large, and the smaller of the two goes to
    /// `other`.
    fn displace(&mut self, p: &Part) {
        let smallest = (0..self.parts.len())
            .filter(|&i| self.parts[i].kind != "other")
            .min_by_key(|&i| self.parts[i].ns);
        let moved = match smallest {
            Some(i) if self.parts[i].ns <= p.ns => {
                std::mem::replace(&mut self.parts[i], cause(p)).ns
            }
            _ => p.ns,
        };
        let o = self.other();
        self.parts[o].ns += moved;
    }

    /// An interval that could not be attributed.
    pub fn skip(&mut self, ns: u64) {
        self.skipped += 1;
        self.skipped_ns += ns;
    }

    /// The index of the `other` cause, made when first needed.
    fn other(&mut self) -> usize {
        match self.parts.iter().position(|q| q.kind == "other") {
            Some(i) => i,
            None => {
                self.parts.push(Part {
                    kind: "other".into(),
                    name: "other causes".into(),
                    ns: 0,
                    ..Part::default()
                });
                self.parts.len() - 1
            }
        }
    }

    /// Largest first.
    pub fn sort(&mut self) {
        self.parts.sort_by(|a, b| {
            b.ns.cmp(&a.ns)
                .then_with(|| a.kind.cmp(&b.kind))
                .then_with(|| a.name.cmp(&b.name))
        });
    }

    /// `12.3 ms in 41 gaps: 61 % irq virtio0-input, 30 % hypervisor, …`
    /// (causes of at least 1 %, largest first once sorted).
    pub fn line(&self, what: &str) -> String {
        let mut s = format!("{} in {} {what}", short(self.ns), self.intervals);
        let shares: Vec<String> = self
            .parts
            .iter()
            .filter(|p| self.ns > 0 && p.ns * 100 >= self.ns)
            .map(|p| {
                format!(
                    "{:.0} % {}",
                    p.ns as f64 * 100.0 / self.ns as f64,
                    p.label()
                )
            })
            .collect();
        if !shares.is_empty() {
            s.push_str(": ");
            s.push_str(&shares.join(", "));
        }
        if self.skipped > 0 {
            s.push_str(&format!(
                "; {} more ({}) not attributed (the reader fell behind)",
                self.skipped,
                short(self.skipped_ns)
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(kind: &str, name: &str, ns: u64) -> Part {
        Part {
            kind: kind.into(),
            name: name.into(),
            ns,
            stack: Vec::new(),
        }
    }

    #[test]
    fn causes_add_up_and_the_many_fall_under_other() {
        let mut t = CpuTotals::new(1);
        t.add(&[
            part("irq", "virtio0-input", 600),
            part("hypervisor", "hypervisor", 300),
        ]);
        t.add(&[part("irq", "virtio0-input", 100)]);
        for i in 0..40 {
            t.add(&[part("thread", &format!("t {i}"), 1)]);
        }
        t.sort();
        assert_eq!(t.intervals, 42);
        assert_eq!(t.ns, 1_040);
        assert_eq!(t.parts.iter().map(|p| p.ns).sum::<u64>(), t.ns);
        assert!(t.parts.len() <= CAUSES + 1);
        assert_eq!(t.parts[0], part("irq", "virtio0-input", 700));
        let other = t.parts.iter().find(|p| p.kind == "other").map(|p| p.ns);
        assert_eq!(other, Some(40 - (CAUSES as u64 - 2)));
        // A large cause after the table is full is still named.
        let mut late = t.clone();
        late.add(&[part("softirq", "NET_RX", 50)]);
        late.sort();
        assert_eq!(late.parts[2], part("softirq", "NET_RX", 50));
        assert_eq!(late.parts.iter().map(|p| p.ns).sum::<u64>(), late.ns);
        assert!(late.parts.len() <= CAUSES + 1);
        t.skip(5_000);
        let line = t.line("gaps");
        assert!(
            line.starts_with("1.0 us in 42 gaps: 67 % irq virtio0-input, 29 % hypervisor"),
            "{line}"
        );
        assert!(
            line.ends_with("; 1 more (5.0 us) not attributed (the reader fell behind)"),
            "{line}"
        );
    }
}
