//! The tracepoints `--explain` records, their layouts read from tracefs
//! `format` files, and their binary records decoded into [`Ev`]s small
//! enough to keep thousands per CPU. Names (IRQ handlers, task comms) are
//! kept once in tables beside the events.

use crate::sys::ringpage::{self, Field, Item, Page};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;

/// A hasher for the small integer keys looked up for every event (task
/// ids, IRQ numbers): one multiplication, where the default SipHash is a
/// large part of the reader's time. The keys come from the kernel's trace,
/// not from a peer, so there is no flooding to resist.
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_i32(&mut self, n: i32) {
        self.0 = u64::from(n as u32).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A map keyed by task id or IRQ number.
pub type IdMap<V> = HashMap<i32, V, BuildHasherDefault<IdHasher>>;

/// One recorded event of a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ev {
    IrqEntry(i32),
    IrqExit(i32),
    SoftirqEntry(u32),
    SoftirqExit(u32),
    /// An irq_vectors entry or exit: the index into [`Decoder::vectors`].
    VectorEntry(u16),
    VectorExit(u16),
    /// prev/next task id and kernel priority.
    Switch {
        prev: i32,
        prev_prio: i32,
        next: i32,
        next_prio: i32,
    },
    Wakeup {
        pid: i32,
        prio: i32,
    },
    /// `power:cpu_idle`: entering idle state N, or leaving idle (`u32::MAX`).
    Idle(u32),
    /// An NMI handler that took `delta_ns`, ending at the event's time.
    Nmi(u64),
    /// `sched:sched_stat_runtime`: the running task's time on the CPU since
    /// it was last accounted, on the scheduler's task clock (which leaves
    /// out what the hypervisor stole).
    Runtime {
        pid: i32,
        ns: u64,
    },
    /// Events lost by the kernel's buffer before this point.
    Lost(u64),
}

/// Softirq vector names, by number (`include/linux/interrupt.h`).
pub const SOFTIRQS: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// The name of softirq vector `v`.
pub fn softirq_name(v: u32) -> String {
    SOFTIRQS
        .get(v as usize)
        .map_or_else(|| format!("vector {v}"), |s| (*s).to_string())
}

/// What one event type decodes to.
#[derive(Debug, Clone, Copy)]
enum Kind {
    IrqEntry {
        irq: Field,
        name: Field,
    },
    IrqExit {
        irq: Field,
    },
    Softirq {
        vec: Field,
        entry: bool,
    },
    Vector {
        index: u16,
        entry: bool,
    },
    Switch {
        f: [Field; 6],
    },
    Wakeup {
        pid: Field,
        prio: Field,
        comm: Field,
    },
    Idle {
        state: Field,
    },
    Nmi {
        delta: Field,
    },
    Runtime {
        pid: Field,
        runtime: Field,
    },
}

/// The events to enable (relative to `events/`), and the optional ones.
pub const REQUIRED: &[&str] = &["sched/sched_switch", "sched/sched_wakeup"];
pub const OPTIONAL: &[&str] = &[
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "power/cpu_idle",
    "nmi/nmi_handler",
    "sched/sched_stat_runtime",
];

/// Every task comm seen, bounded: cleared when it grows past this.
const COMMS: usize = 1024;

/// Decodes one kernel's events; keeps the names the events refer to.
#[derive(Debug, Default)]
pub struct Decoder {
    pub page: Option<Page>,
    /// The kinds decoded, and where each event type id's is in it (1-based,
    /// 0: not decoded): a table of a byte per id up to the largest.
    kinds: Vec<Kind>,
    kind_at: Vec<u8>,
    /// irq_vectors names (`local_timer`, `reschedule` …).
    pub vectors: Vec<String>,
    /// IRQ number → handler name (`virtio0-input`).
    pub irqs: IdMap<String>,
    /// Task id → comm, from switches and wake-ups.
    pub comms: IdMap<String>,
    /// The events enabled (relative to `events/`), and those missing here.
    pub enabled: Vec<String>,
    pub missing: Vec<String>,
}

impl Decoder {
    /// Read the layouts under `root` (a tracefs mount or a captured tree).
    pub fn load(root: &Path) -> Decoder {
        let read = |rel: &str| crate::sys::tracefs::read(root, rel).unwrap_or_default();
        let mut d = Decoder {
            page: Page::parse(&read("events/header_page")),
            ..Decoder::default()
        };
        for ev in REQUIRED.iter().chain(OPTIONAL) {
            if d.add(ev, &read(&format!("events/{ev}/format"))) {
                d.enabled.push((*ev).to_string());
            } else {
                d.missing.push((*ev).to_string());
            }
        }
        let mut names: Vec<String> = std::fs::read_dir(root.join("events/irq_vectors"))
            .map(|rd| {
                rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .filter(|n| n.ends_with("_entry") || n.ends_with("_exit"))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        for n in names {
            let rel = format!("irq_vectors/{n}");
            if d.add(&rel, &read(&format!("events/{rel}/format"))) {
                d.enabled.push(rel);
            }
        }
        if d.vectors.is_empty() {
            d.missing.push("irq_vectors".into());
        }
        d
    }

    /// Learn event `rel` (`sched/sched_switch`) from its format text.
    pub fn add(&mut self, rel: &str, format: &str) -> bool {
        let Some(id) = ringpage::event_id(format) else {
            return false;
        };
        let f = |n: &str| ringpage::field(format, n);
        let name = rel.rsplit('/').next().unwrap_or(rel);
        let kind = match name {
            "irq_handler_entry" => f("irq")
                .zip(f("name"))
                .map(|(irq, name)| Kind::IrqEntry { irq, name }),
            "irq_handler_exit" => f("irq").map(|irq| Kind::IrqExit { irq }),
            "softirq_entry" | "softirq_exit" => f("vec").map(|vec| Kind::Softirq {
                vec,
                entry: name == "softirq_entry",
            }),
            "sched_switch" => (|| {
                Some(Kind::Switch {
                    f: [
                        f("prev_pid")?,
                        f("prev_prio")?,
                        f("next_pid")?,
                        f("next_prio")?,
                        f("prev_comm")?,
                        f("next_comm")?,
                    ],
                })
            })(),
            "sched_wakeup" => (|| {
                Some(Kind::Wakeup {
                    pid: f("pid")?,
                    prio: f("prio")?,
                    comm: f("comm")?,
                })
            })(),
            "cpu_idle" => f("state").map(|state| Kind::Idle { state }),
            "nmi_handler" => f("delta_ns").map(|delta| Kind::Nmi { delta }),
            "sched_stat_runtime" => f("pid")
                .zip(f("runtime"))
                .map(|(pid, runtime)| Kind::Runtime { pid, runtime }),
            v if rel.starts_with("irq_vectors/") => {
                let (base, entry) = match v.strip_suffix("_entry") {
                    Some(b) => (b, true),
                    None => (v.strip_suffix("_exit").unwrap_or(v), false),
                };
                let index = match self.vectors.iter().position(|x| x == base) {
                    Some(i) => i,
                    None => {
                        self.vectors.push(base.to_string());
                        self.vectors.len() - 1
                    }
                };
                Some(Kind::Vector {
                    index: index as u16,
                    entry,
                })
            }
            _ => None,
        };
        match kind {
            Some(k) => {
                let at = usize::from(id);
                if self.kinds.len() >= usize::from(u8::MAX) {
                    return false;
                }
                if self.kind_at.len() <= at {
                    self.kind_at.resize(at + 1, 0);
                }
                self.kinds.push(k);
                self.kind_at[at] = self.kinds.len() as u8;
                true
            }
            None => false,
        }
    }

    /// The event of one page item, or `None` for an event not recorded.
    pub fn decode(&mut self, item: &Item<'_>) -> Option<Ev> {
        let data = match *item {
            Item::Lost(n) => return Some(Ev::Lost(n)),
            Item::Event { data, .. } => data,
        };
        let at = *self.kind_at.get(usize::from(ringpage::type_of(data)?))?;
        let kind = *self.kinds.get(usize::from(at).checked_sub(1)?)?;
        let g = |x: Field| ringpage::get(data, x.offset, x.size);
        let int = |x: Field| g(x).map(|v| v as u32 as i32);
        Some(match kind {
            Kind::IrqEntry { irq, name } => {
                let irq = int(irq)?;
                self.irqs.entry(irq).or_insert_with(|| {
                    // `__data_loc`: offset (low 16 bits) and length of the string.
                    let loc = g(name).unwrap_or(0);
                    let (at, len) = ((loc & 0xffff) as usize, (loc >> 16 & 0xffff) as usize);
                    data.get(at..at + len).map_or("", cstr).to_string()
                });
                Ev::IrqEntry(irq)
            }
            Kind::IrqExit { irq } => Ev::IrqExit(int(irq)?),
            Kind::Softirq { vec, entry } => {
                let v = g(vec)? as u32;
                if entry {
                    Ev::SoftirqEntry(v)
                } else {
                    Ev::SoftirqExit(v)
                }
            }
            Kind::Vector { index, entry } => {
                if entry {
                    Ev::VectorEntry(index)
                } else {
                    Ev::VectorExit(index)
                }
            }
            Kind::Switch { f } => {
                let ev = Ev::Switch {
                    prev: int(f[0])?,
                    prev_prio: int(f[1])?,
                    next: int(f[2])?,
                    next_prio: int(f[3])?,
                };
                if let Ev::Switch { prev, next, .. } = ev {
                    self.comm(prev, data, f[4]);
                    self.comm(next, data, f[5]);
                }
                ev
            }
            Kind::Wakeup { pid, prio, comm } => {
                let pid = int(pid)?;
                self.comm(pid, data, comm);
                Ev::Wakeup {
                    pid,
                    prio: int(prio)?,
                }
            }
            Kind::Idle { state } => Ev::Idle(g(state)? as u32),
            Kind::Nmi { delta } => Ev::Nmi(g(delta)?.min(i64::MAX as u64)),
            Kind::Runtime { pid, runtime } => Ev::Runtime {
                pid: int(pid)?,
                ns: g(runtime)?,
            },
        })
    }

    fn comm(&mut self, pid: i32, data: &[u8], f: Field) {
        // A task's comm changes at exec and prctl: the latest one counts.
        let s = data.get(f.offset..f.offset + f.size).map_or("", cstr);
        if self.comms.get(&pid).is_some_and(|c| c == s) {
            return;
        }
        if self.comms.len() >= COMMS {
            self.comms.clear();
        }
        self.comms.insert(pid, s.to_string());
    }

    /// The comm of task `pid` (`swapper` for the idle task).
    pub fn comm_of(&self, pid: i32) -> String {
        match self.comms.get(&pid) {
            Some(c) => c.clone(),
            None if pid == 0 => "swapper".into(),
            None => "?".into(),
        }
    }
}

/// A NUL-terminated string of a record, or its whole bytes.
fn cstr(b: &[u8]) -> &str {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    std::str::from_utf8(&b[..end]).unwrap_or("?")
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

    fn format(name: &str, id: u16, fields: &str) -> String {
        format!("name: {name}\nID: {id}\nformat:\n{COMMON}{fields}")
    }

    fn item(data: &[u8]) -> Item<'_> {
        Item::Event { ts_ns: 1, data }
    }

    /// The layouts of Linux 6.18's files.
    #[test]
    fn switches_and_irq_names_decode_from_the_format_files() {
        let mut d = Decoder::default();
        assert!(d.add(
            "sched/sched_switch",
            &format(
                "sched_switch",
                372,
                "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n"
            )
        ));
        assert!(d.add(
            "irq/irq_handler_entry",
            &format(
                "irq_handler_entry",
                225,
                "\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n"
            )
        ));
        assert!(d.add(
            "irq_vectors/local_timer_exit",
            &format(
                "local_timer_exit",
                99,
                "\tfield:int vector;\toffset:8;\tsize:4;\tsigned:1;\n"
            )
        ));
        assert!(!d.add("sched/sched_switch", "name: x\n"));

        let mut sw = vec![0u8; 64];
        sw[0..2].copy_from_slice(&372u16.to_ne_bytes());
        sw[8..11].copy_from_slice(b"hog");
        sw[24..28].copy_from_slice(&77i32.to_ne_bytes());
        sw[28..32].copy_from_slice(&9i32.to_ne_bytes());
        sw[40..46].copy_from_slice(b"rtlat-");
        sw[56..60].copy_from_slice(&5i32.to_ne_bytes());
        sw[60..64].copy_from_slice(&19i32.to_ne_bytes());
        assert_eq!(
            d.decode(&item(&sw)),
            Some(Ev::Switch {
                prev: 77,
                prev_prio: 9,
                next: 5,
                next_prio: 19
            })
        );
        assert_eq!(
            (d.comm_of(77), d.comm_of(5)),
            ("hog".into(), "rtlat-".into())
        );

        let mut irq = vec![0u8; 32];
        irq[0..2].copy_from_slice(&225u16.to_ne_bytes());
        irq[8..12].copy_from_slice(&11i32.to_ne_bytes());
        // The name at offset 16, 14 bytes with its NUL.
        irq[12..16].copy_from_slice(&(16u32 | 14 << 16).to_ne_bytes());
        irq[16..30].copy_from_slice(b"virtio0-input\0");
        assert_eq!(d.decode(&item(&irq)), Some(Ev::IrqEntry(11)));
        assert_eq!(d.irqs[&11], "virtio0-input");

        let mut v = vec![0u8; 12];
        v[0..2].copy_from_slice(&99u16.to_ne_bytes());
        assert_eq!(d.decode(&item(&v)), Some(Ev::VectorExit(0)));
        assert_eq!(d.vectors, vec!["local_timer".to_string()]);
        assert_eq!(d.decode(&Item::Lost(3)), Some(Ev::Lost(3)));
        v[0..2].copy_from_slice(&1u16.to_ne_bytes());
        assert_eq!(d.decode(&item(&v)), None, "an event not recorded");
    }
}
