//! What the explained worst cases of a result were made of, and what
//! changed between two results: the parts of every explained case summed
//! by cause for each thread, as a mean per explained case and as a share of
//! the thread's explained time. A cause is a part's kind and name without
//! the task's pid and priority (`thread rtlat-hog`, `softirq NET_RX`), so
//! that two runs name it alike.

use crate::result::explained::Part;
use crate::result::RunResult;
use std::collections::BTreeMap;

/// One thread's explained cases, by cause.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ThreadCauses {
    pub cases: u64,
    /// Their latencies summed.
    pub total_ns: u64,
    pub by_cause: BTreeMap<String, u64>,
}

impl ThreadCauses {
    /// The mean of `cause` per explained case, and its share of the time.
    fn of(&self, cause: &str) -> (f64, f64) {
        let ns = self.by_cause.get(cause).copied().unwrap_or(0) as f64;
        (
            ns / self.cases.max(1) as f64,
            ns / self.total_ns.max(1) as f64,
        )
    }
}

/// A result's explained cases, per thread.
pub type Causes = BTreeMap<String, ThreadCauses>;

/// The cause a part stands for: its kind and name, the task's pid and
/// priority left out (`rtlat-hog 6150 FIFO 90` is `rtlat-hog`).
pub fn cause_of(p: &Part) -> String {
    let name = match p.kind.as_str() {
        "thread" | "preempt-off" | "irqs-off" | "throttled" => {
            p.name.split_whitespace().next().unwrap_or_default()
        }
        _ => p.name.as_str(),
    };
    if name.is_empty() || name == p.kind {
        p.kind.clone()
    } else {
        format!("{} {name}", p.kind)
    }
}

/// `r`'s explained cases by thread and cause (empty without `--explain`).
pub fn of(r: &RunResult) -> Causes {
    let mut out = Causes::new();
    for case in &r.explained {
        let t = out.entry(case.thread.clone()).or_default();
        t.cases += 1;
        t.total_ns += case.latency_ns;
        for p in &case.parts {
            *t.by_cause.entry(cause_of(p)).or_default() += p.ns;
        }
    }
    out
}

/// A cause of one thread, before and after.
#[derive(Debug, Clone, PartialEq)]
pub struct CauseChange {
    pub thread: String,
    pub cause: String,
    /// Mean ns per explained case, before and after.
    pub before_ns: f64,
    pub after_ns: f64,
    /// Share of the thread's explained time, before and after.
    pub before_share: f64,
    pub after_share: f64,
}

/// Every cause of the threads both results explained, the one whose
/// share grew most first.
pub fn changes(before: &Causes, after: &Causes) -> Vec<CauseChange> {
    let mut out = Vec::new();
    for (thread, a) in after {
        let Some(b) = before.get(thread) else {
            continue;
        };
        let causes: std::collections::BTreeSet<&String> =
            a.by_cause.keys().chain(b.by_cause.keys()).collect();
        for cause in causes {
            let ((before_ns, before_share), (after_ns, after_share)) = (b.of(cause), a.of(cause));
            out.push(CauseChange {
                thread: thread.clone(),
                cause: cause.clone(),
                before_ns,
                after_ns,
                before_share,
                after_share,
            });
        }
    }
    out.sort_by(|x, y| {
        let grew = |c: &CauseChange| c.after_share - c.before_share;
        grew(y).total_cmp(&grew(x))
    });
    out
}

fn us(ns: f64) -> String {
    format!("{:.1} us", ns / 1000.0)
}

/// `softirq NET_RX on cpu1 grew from 3.0 us to 38.0 us a case (2 % -> 61 %
/// of the explained time)`: the cause that grew most, or `None` when no
/// share grew (or a result explained nothing).
pub fn grew_most(before: &RunResult, after: &RunResult) -> Option<String> {
    let c = changes(&of(before), &of(after)).into_iter().next()?;
    (c.after_share > c.before_share).then(|| {
        format!(
            "{} on {} grew from {} to {} a case ({:.0} % -> {:.0} % of the explained time)",
            c.cause,
            c.thread,
            us(c.before_ns),
            us(c.after_ns),
            100.0 * c.before_share,
            100.0 * c.after_share
        )
    })
}

/// The lines of `compare`: per thread both explained, the causes whose
/// share moved by a point or more, most grown first.
pub fn lines(before: (&str, &RunResult), after: (&str, &RunResult)) -> Vec<String> {
    let all = changes(&of(before.1), &of(after.1));
    if all.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!(
        "causes of the explained worst cases, {} -> {} (mean a case, share of the explained time):",
        before.0, after.0
    )];
    for c in all
        .iter()
        .filter(|c| (c.after_share - c.before_share).abs() >= 0.01)
    {
        out.push(format!(
            "  {} {}: {} ({:.0} %) -> {} ({:.0} %)",
            c.thread,
            c.cause,
            us(c.before_ns),
            100.0 * c.before_share,
            us(c.after_ns),
            100.0 * c.after_share
        ));
    }
    if out.len() == 1 {
        out.push("  no cause's share moved by a point or more".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Explained;

    fn part(kind: &str, name: &str, ns: u64) -> Part {
        Part {
            kind: kind.into(),
            name: name.into(),
            ns,
            stack: Vec::new(),
        }
    }

    fn case(thread: &str, parts: Vec<Part>) -> Explained {
        Explained {
            thread: thread.into(),
            cpu: Some(1),
            at_ns: 0,
            latency_ns: parts.iter().map(|p| p.ns).sum(),
            parts,
        }
    }

    fn result(cases: Vec<Explained>) -> RunResult {
        let mut r = crate::render::testdata::empty();
        r.explained = cases;
        r
    }

    #[test]
    fn a_cause_is_named_without_its_pid_and_priority() {
        assert_eq!(
            cause_of(&part("thread", "rtlat-hog 6150 FIFO 90", 1)),
            "thread rtlat-hog"
        );
        assert_eq!(
            cause_of(&part("preempt-off", "rustc 5035", 1)),
            "preempt-off rustc"
        );
        assert_eq!(cause_of(&part("softirq", "NET_RX", 1)), "softirq NET_RX");
        assert_eq!(cause_of(&part("hypervisor", "hypervisor", 1)), "hypervisor");
    }

    #[test]
    fn the_cause_that_grew_is_named() {
        let before = result(vec![
            case(
                "cpu1",
                vec![
                    part("thread", "hog 10 FIFO 90", 90_000),
                    part("softirq", "NET_RX", 3_000),
                ],
            ),
            case(
                "cpu1",
                vec![
                    part("thread", "hog 10 FIFO 90", 80_000),
                    part("softirq", "NET_RX", 3_000),
                ],
            ),
        ]);
        let after = result(vec![
            case(
                "cpu1",
                vec![
                    part("thread", "hog 77 FIFO 90", 90_000),
                    part("softirq", "NET_RX", 40_000),
                ],
            ),
            case(
                "cpu1",
                vec![
                    part("softirq", "NET_RX", 36_000),
                    part("thread", "hog 77 FIFO 90", 10_000),
                ],
            ),
            case("cpu0", vec![part("softirq", "NET_RX", 99_000)]),
        ]);
        let line = grew_most(&before, &after).expect("a cause grew");
        assert!(
            line.starts_with("softirq NET_RX on cpu1 grew from 3.0 us to 38.0 us a case"),
            "{line}"
        );
        let c = changes(&of(&before), &of(&after));
        // cpu0 was not explained before: it is not compared.
        assert!(c.iter().all(|c| c.thread == "cpu1"));
        let hog = c
            .iter()
            .find(|c| c.cause == "thread hog")
            .expect("the hog, by name");
        assert!(hog.after_share < hog.before_share);
        let text = lines(("a", &before), ("b", &after)).join("\n");
        assert!(
            text.contains("cpu1 softirq NET_RX: 3.0 us (3 %) -> 38.0 us"),
            "{text}"
        );
        // Nothing explained: nothing to say.
        assert_eq!(grew_most(&result(Vec::new()), &after), None);
        assert!(lines(("a", &result(Vec::new())), ("b", &after)).is_empty());
    }
}
