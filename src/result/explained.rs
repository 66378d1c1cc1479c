//! A worst case explained (`--explain`): one late interval of a measuring
//! thread split into the parts of the CPU's time that made it late.

use serde::{Deserialize, Serialize};

/// One share of an explained interval.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Part {
    /// `idle`, `irq`, `vector`, `softirq`, `nmi`, `thread`, `preempt-off`,
    /// `irqs-off`, `throttled` (runnable on an idle CPU: RT throttling),
    /// `hypervisor`, `self` (the thread's own wake-up path) or
    /// `unexplained`.
    pub kind: String,
    /// The handler, vector, thread (`comm pid prio`) or cause.
    pub name: String,
    pub ns: u64,
    /// With `--explain-stacks`, on the part of the task that held the CPU:
    /// the kernel stack recorded on the CPU when the measuring thread was
    /// woken, innermost first (`zap_pte_range+0x1f2`, `resp_spin+0x2a
    /// [rtlat_responder]`; hexadecimal addresses where the kernel hides its
    /// symbols). Above the task's own frames, those of the interrupt that
    /// did the wake-up and of the tracing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
}

/// Frames that enter the kernel from an interrupt or exception: below the
/// last of them, the interrupted task's (x86's `asm_*` entries, arm64's
/// `el1h_64_irq`, 32-bit Arm's `__irq_svc`, PowerPC's `*_common_virt`).
fn is_entry(name: &str) -> bool {
    name.starts_with("asm_")
        || name.starts_with("el1h_64_")
        || name.starts_with("el0t_64_")
        || name.starts_with("__irq_")
        || name.ends_with("_common_virt")
}

/// Frames of the tracing that recorded a stack and of the wake-up it was
/// recorded at: above what the task that woke the thread was doing.
fn is_machinery(name: &str) -> bool {
    [
        "trace_",
        "__trace",
        "ftrace_",
        "stack_trace_",
        "__traceiter_",
        "ttwu_",
        "try_to_wake_up",
        "wake_up_",
        "__wake_up",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// A frame's function name: `zap_pte_range` of `zap_pte_range+0x1f2 [mod]`.
pub fn frame_name(frame: &str) -> &str {
    frame.split(['+', ' ']).next().unwrap_or(frame)
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
            .map(|p| {
                let mut s = format!("{} {}", p.label(), short(p.ns));
                if let Some(frames) = p.innermost(3) {
                    s.push_str(&format!(" [{frames}]"));
                }
                s
            })
            .collect();
        if v.is_empty() {
            v.push("nothing recorded".into());
        }
        v.join(", ")
    }
}

impl Part {
    /// The frames of [`Part::stack`] of the task itself, innermost first:
    /// those below the interrupt that recorded it, or, recorded in the
    /// task's own context, below the tracing and wake-up frames. Empty when
    /// the task was in user space.
    pub fn task_frames(&self) -> &[String] {
        let names = || self.stack.iter().map(|f| frame_name(f));
        let from = match names().rposition(is_entry) {
            Some(i) => i + 1,
            None => names().take_while(|n| is_machinery(n)).count(),
        };
        &self.stack[from..]
    }

    /// `zap_pte_range < unmap_page_range < exit_mmap`: the `n` innermost
    /// functions of the task's frames, past the lock release an interrupt
    /// that waited for it came in at (`_raw_spin_unlock_irqrestore`).
    pub fn innermost(&self, n: usize) -> Option<String> {
        let names: Vec<&str> = self
            .task_frames()
            .iter()
            .map(|f| frame_name(f))
            .skip_while(|f| f.starts_with("_raw_") && f.contains("unlock"))
            .take(n)
            .collect();
        (!names.is_empty()).then(|| names.join(" < "))
    }

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
            stack: Vec::new(),
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

    #[test]
    fn a_stack_shows_the_task_frames_below_the_interrupt_and_the_tracing() {
        let frames = |s: &[&str]| s.iter().map(|f| f.to_string()).collect::<Vec<_>>();
        let irq = [
            "trace_event_raw_event_sched_wakeup_template+0x9c",
            "__traceiter_sched_wakeup+0x2f",
            "try_to_wake_up+0x2a5",
            "hrtimer_wakeup+0x22",
            "__hrtimer_run_queues+0x131",
            "hrtimer_interrupt+0xfe",
            "asm_sysvec_apic_timer_interrupt+0x1a",
        ];
        let task = [
            "_raw_spin_unlock_irqrestore+0x19",
            "zap_pte_range+0x1f2",
            "unmap_page_range+0x3e5",
            "exit_mmap+0xd8",
            "mmput+0x5e",
        ];
        let mut p = Part {
            kind: "preempt-off".into(),
            name: "rustc 17009".into(),
            ns: 5_100_000,
            stack: frames(&[&irq[..], &task[..]].concat()),
        };
        assert_eq!(p.task_frames(), frames(&task));
        let e = Explained {
            thread: "cpu1".into(),
            cpu: Some(1),
            at_ns: 0,
            latency_ns: 5_200_000,
            parts: vec![p.clone()],
        };
        assert_eq!(
            e.parts_line(4),
            "preemption off in rustc 17009 5.1 ms [zap_pte_range < unmap_page_range < exit_mmap]"
        );
        // Interrupted in user space: no frame of the task's.
        p.stack = frames(&irq);
        assert!(p.task_frames().is_empty());
        // Recorded in the task's own context (a wake-up it made): below
        // the tracing and the wake-up.
        p.stack = frames(&[
            "trace_event_raw_event_sched_wakeup_template+0x9c",
            "try_to_wake_up+0x2a5",
            "wake_up_q+0x4a",
            "futex_wake+0x15d",
            "do_futex+0x11a",
        ]);
        assert_eq!(
            p.task_frames(),
            frames(&["futex_wake+0x15d", "do_futex+0x11a"])
        );
        assert_eq!(frame_name("resp_spin+0x2a [rtlat_responder]"), "resp_spin");
    }
}
