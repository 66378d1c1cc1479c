//! What ran on a CPU before a sample crossed `--break-threshold` in a
//! `timer --context` run, as `rtla timerlat -a` tells it: the tracer's
//! `osnoise:irq_noise`, `softirq_noise`, `thread_noise` and `nmi_noise`
//! events (each recorded when that interference ends, with its duration)
//! kept per CPU for the last moments, and at the break those that overlapped
//! the way from the timer's expiry to the late sample.

use super::raw::{self, Field, Item};
use crate::bench::timer::lines::Ctx;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Noise events kept per CPU (the last few periods' worth).
const KEPT: usize = 256;

/// One interference of the analysis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interference {
    /// irq, softirq, thread or nmi.
    pub kind: String,
    /// The IRQ's name:vector, the softirq's name, the thread's comm/pid.
    pub name: String,
    pub duration_ns: u64,
    /// When it ended, ns after the timer's expiry (negative: before it).
    pub ended_ns: i64,
}

/// The analysis of the sample that crossed the threshold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakAnalysis {
    pub cpu: usize,
    /// The context of the late sample: irq, thread or user.
    pub context: String,
    pub latency_ns: u64,
    /// The IRQ latency of the same activation (for a thread or user sample).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_latency_ns: Option<u64>,
    /// Interference overlapping expiry → sample, in the order it ended.
    pub interference: Vec<Interference>,
    /// Their total per kind, ns: irq, softirq, thread, nmi.
    pub irq_ns: u64,
    pub softirq_ns: u64,
    pub thread_ns: u64,
    pub nmi_ns: u64,
}

impl BreakAnalysis {
    /// One line for the summary's notes.
    pub fn line(&self) -> String {
        let us = |ns: u64| format!("{:.1} us", ns as f64 / 1e3);
        let mut s = format!(
            "break analysis: cpu{}/{} {}",
            self.cpu,
            self.context,
            us(self.latency_ns)
        );
        if let Some(irq) = self.irq_latency_ns {
            s += &format!(
                " = timer IRQ {} + IRQ handler to the thread {}",
                us(irq),
                us(self.latency_ns.saturating_sub(irq))
            );
        }
        if self.interference.is_empty() {
            s += "; no IRQ, softirq, NMI or thread ran on that CPU in between (the delay is outside what the kernel traces: the hardware, a hypervisor, idle exit)";
            return s;
        }
        s += &format!(
            "; in between: irq {}, softirq {}, thread {}, nmi {}",
            us(self.irq_ns),
            us(self.softirq_ns),
            us(self.thread_ns),
            us(self.nmi_ns)
        );
        let mut worst: Vec<&Interference> = self.interference.iter().collect();
        worst.sort_by_key(|i| std::cmp::Reverse(i.duration_ns));
        let top: Vec<String> = worst
            .iter()
            .take(3)
            .map(|i| format!("{} {} {}", i.kind, i.name, us(i.duration_ns)))
            .collect();
        s += &format!("; longest: {}", top.join(", "));
        s
    }
}

/// Where the noise events' fields lie (from their format files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoiseLayout {
    irq: Option<(u16, Field, Field, Field)>, // id, desc (data_loc), duration, vector
    softirq: Option<(u16, Field, Field)>,    // id, duration, vector
    thread: Option<(u16, Field, Field, Field)>, // id, comm, duration, pid
    nmi: Option<(u16, Field)>,               // id, duration
}

/// The event files `NoiseLayout::parse` reads, relative to tracefs.
pub const EVENTS: [&str; 4] = ["irq_noise", "softirq_noise", "thread_noise", "nmi_noise"];

impl NoiseLayout {
    /// From the `format` files of [`EVENTS`], in that order ("" if absent).
    pub fn parse(files: [&str; 4]) -> Option<NoiseLayout> {
        let [irq, softirq, thread, nmi] = files;
        let f = raw::field;
        let id = raw::event_id;
        let fmt = NoiseLayout {
            irq: (|| {
                Some((
                    id(irq)?,
                    f(irq, "desc")?,
                    f(irq, "duration")?,
                    f(irq, "vector")?,
                ))
            })(),
            softirq: (|| Some((id(softirq)?, f(softirq, "duration")?, f(softirq, "vector")?)))(),
            thread: (|| {
                Some((
                    id(thread)?,
                    f(thread, "comm")?,
                    f(thread, "duration")?,
                    f(thread, "pid")?,
                ))
            })(),
            nmi: (|| Some((id(nmi)?, f(nmi, "duration")?)))(),
        };
        (fmt.irq.is_some() || fmt.thread.is_some()).then_some(fmt)
    }
}

fn softirq_name(v: u64) -> String {
    const NAMES: [&str; 10] = [
        "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER",
        "RCU",
    ];
    NAMES
        .get(v as usize)
        .map_or_else(|| format!("softirq{v}"), |n| (*n).to_string())
}

/// A C string of at most `len` bytes at `at`.
fn text(ev: &[u8], at: usize, len: usize) -> String {
    let b = ev.get(at..(at + len).min(ev.len())).unwrap_or(&[]);
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// One noise event: (kind, name, duration), ended at the event's time.
fn decode(fmt: &NoiseLayout, ev: &[u8]) -> Option<(&'static str, String, u64)> {
    let id = raw::type_of(ev)?;
    let get = |x: Field| raw::get(ev, x.offset, x.size);
    if let Some((_, desc, dur, vec)) = fmt.irq.filter(|t| t.0 == id) {
        // __data_loc: offset in the low 16 bits, length in the high 16.
        let loc = get(desc)?;
        let name = text(ev, (loc & 0xffff) as usize, (loc >> 16) as usize);
        return Some((
            "irq",
            format!("{name}:{}", get(vec)? as u32 as i32),
            get(dur)?,
        ));
    }
    if let Some((_, dur, vec)) = fmt.softirq.filter(|t| t.0 == id) {
        return Some(("softirq", softirq_name(get(vec)?), get(dur)?));
    }
    if let Some((_, comm, dur, pid)) = fmt.thread.filter(|t| t.0 == id) {
        let name = text(ev, comm.offset, comm.size);
        return Some((
            "thread",
            format!("{name}/{}", get(pid)? as u32 as i32),
            get(dur)?,
        ));
    }
    if let Some((_, dur)) = fmt.nmi.filter(|t| t.0 == id) {
        return Some(("nmi", "nmi".into(), get(dur)?));
    }
    None
}

/// One kept event: its kind, name, duration and end (trace clock).
type Kept = (&'static str, String, u64, u64);

/// The last noise events of each selected CPU.
#[derive(Debug)]
pub struct Recent {
    format: NoiseLayout,
    cpus: Vec<VecDeque<Kept>>,
    /// CPU number → index.
    index: Vec<Option<usize>>,
}

impl Recent {
    pub fn new(format: NoiseLayout, cpus: &[usize]) -> Recent {
        let max = cpus.iter().copied().max().unwrap_or(0);
        let mut index = vec![None; max + 1];
        for (i, &c) in cpus.iter().enumerate() {
            index[c] = Some(i);
        }
        Recent {
            format,
            cpus: cpus.iter().map(|_| VecDeque::with_capacity(KEPT)).collect(),
            index,
        }
    }

    /// Keep `item` of CPU `cpu` if it is a noise event; true if it was.
    pub fn take(&mut self, cpu: usize, item: &Item<'_>) -> bool {
        let Item::Event { ts_ns, data } = item else {
            return false;
        };
        let Some((kind, name, dur)) = decode(&self.format, data) else {
            return false;
        };
        if let Some(q) = self
            .index
            .get(cpu)
            .copied()
            .flatten()
            .map(|i| &mut self.cpus[i])
        {
            if q.len() == KEPT {
                q.pop_front();
            }
            q.push_back((kind, name, dur, *ts_ns));
        }
        true
    }

    /// The analysis of CPU `cpu`'s `ctx` sample of `latency_ns` for the
    /// timer expiry at `expiry` (trace clock).
    pub fn analyse(
        &self,
        cpu: usize,
        ctx: Ctx,
        latency_ns: u64,
        expiry: u64,
        irq_latency_ns: Option<u64>,
    ) -> BreakAnalysis {
        let mut a = BreakAnalysis {
            cpu,
            context: ctx.name().into(),
            latency_ns,
            irq_latency_ns: irq_latency_ns.filter(|_| ctx != Ctx::Irq),
            ..Default::default()
        };
        let sample = expiry + latency_ns;
        let Some(q) = self
            .index
            .get(cpu)
            .copied()
            .flatten()
            .map(|i| &self.cpus[i])
        else {
            return a;
        };
        for (kind, name, dur, end) in q {
            // Overlapping [expiry, sample]: ended after the expiry, began before the sample.
            if *end <= expiry || end.saturating_sub(*dur) >= sample {
                continue;
            }
            match *kind {
                "irq" => a.irq_ns += dur,
                "softirq" => a.softirq_ns += dur,
                "thread" => a.thread_ns += dur,
                _ => a.nmi_ns += dur,
            }
            a.interference.push(Interference {
                kind: (*kind).into(),
                name: name.clone(),
                duration_ns: *dur,
                ended_ns: *end as i64 - expiry as i64,
            });
        }
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Debian 12's 6.1 PREEMPT_RT format files (abridged to the fields).
    const IRQ: &str = "name: irq_noise\nID: 20\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:__data_loc char[] desc;\toffset:12;\tsize:4;\tsigned:1;\n\tfield:u64 start;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:u64 duration;\toffset:24;\tsize:8;\tsigned:0;\n\tfield:int vector;\toffset:32;\tsize:4;\tsigned:1;\n";
    const SOFTIRQ: &str = "name: softirq_noise\nID: 21\nformat:\n\tfield:u64 start;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:u64 duration;\toffset:24;\tsize:8;\tsigned:0;\n\tfield:int vector;\toffset:32;\tsize:4;\tsigned:1;\n";
    const THREAD: &str = "name: thread_noise\nID: 22\nformat:\n\tfield:char comm[16];\toffset:12;\tsize:16;\tsigned:0;\n\tfield:u64 start;\toffset:32;\tsize:8;\tsigned:0;\n\tfield:u64 duration;\toffset:40;\tsize:8;\tsigned:0;\n\tfield:pid_t pid;\toffset:48;\tsize:4;\tsigned:1;\n";

    fn put(ev: &mut Vec<u8>, at: usize, b: &[u8]) {
        if ev.len() < at + b.len() {
            ev.resize(at + b.len(), 0);
        }
        ev[at..at + b.len()].copy_from_slice(b);
    }

    #[test]
    fn noise_events_decode_and_the_analysis_keeps_what_overlapped() {
        let fmt = NoiseLayout::parse([IRQ, SOFTIRQ, THREAD, ""]).expect("format");
        let mut irq = Vec::new();
        put(&mut irq, 0, &20u16.to_ne_bytes());
        put(&mut irq, 12, &((11u32 << 16) | 40).to_ne_bytes());
        put(&mut irq, 24, &3_000u64.to_ne_bytes());
        put(&mut irq, 32, &236i32.to_ne_bytes());
        put(&mut irq, 40, b"local_timer\0");
        let mut soft = Vec::new();
        put(&mut soft, 0, &21u16.to_ne_bytes());
        put(&mut soft, 24, &20_000u64.to_ne_bytes());
        put(&mut soft, 32, &1i32.to_ne_bytes());
        let mut thr = Vec::new();
        put(&mut thr, 0, &22u16.to_ne_bytes());
        put(&mut thr, 12, b"kworker/1:1\0");
        put(&mut thr, 40, &700_000u64.to_ne_bytes());
        put(&mut thr, 48, &45i32.to_ne_bytes());
        let mut other = vec![0u8; 8];
        other[0] = 99;
        let mut r = Recent::new(fmt, &[1]);
        let ev = |ts_ns, data| Item::Event { ts_ns, data };
        // Expiry at 1 000 000; the thread sample 800 µs late.
        assert!(r.take(1, &ev(900_000, &soft))); // ended before the expiry
        assert!(r.take(1, &ev(1_003_000, &irq)));
        assert!(r.take(1, &ev(1_750_000, &thr)));
        assert!(r.take(1, &ev(1_790_000, &soft)));
        assert!(r.take(1, &ev(2_500_000, &irq))); // after the sample
        assert!(!r.take(1, &ev(1_000_100, &other)));
        assert!(!r.take(1, &Item::Lost(3)));
        let a = r.analyse(1, Ctx::Thread, 800_000, 1_000_000, Some(3_000));
        let names: Vec<&str> = a.interference.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["local_timer:236", "kworker/1:1/45", "TIMER"]);
        assert_eq!(
            (a.irq_ns, a.softirq_ns, a.thread_ns, a.nmi_ns),
            (3_000, 20_000, 700_000, 0)
        );
        assert_eq!(a.interference[1].ended_ns, 750_000);
        let line = a.line();
        assert!(
            line.starts_with("break analysis: cpu1/thread 800.0 us = timer IRQ 3.0 us"),
            "{line}"
        );
        assert!(
            line.contains("longest: thread kworker/1:1/45 700.0 us"),
            "{line}"
        );
        // A CPU with nothing in between says so; an IRQ sample has no IRQ part.
        let b = r.analyse(1, Ctx::Irq, 1_000, 5_000_000, Some(1_000));
        assert!(b.interference.is_empty() && b.irq_latency_ns.is_none());
        assert!(b.line().contains("outside what the kernel traces"));
        assert!(NoiseLayout::parse(["", "", "", ""]).is_none());
    }
}
