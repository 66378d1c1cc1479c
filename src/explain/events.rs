//! The tracepoints `--explain` records, their layouts read from tracefs
//! `format` files, and their binary records decoded into [`Ev`]s small
//! enough to keep thousands per CPU. Names (IRQ handlers, task comms) are
//! kept once in tables beside the events.

use crate::trace::ringpage::{self, Field, Item, Page};
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
    /// `ftrace:kernel_stack`, recorded by a `stacktrace` trigger: the
    /// kernel stack of task `pid` (the one on the CPU); its return
    /// addresses, innermost first, are in [`Decoder::frames`] until the
    /// next one is decoded.
    Stack(i32),
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
    Stack {
        pid: Field,
        size: Field,
        caller: Field,
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
    RUNTIME,
];

/// The scheduler's accounting of a task's time on the CPU.
pub const RUNTIME: &str = "sched/sched_stat_runtime";

/// The event a `stacktrace` trigger records (no `enable` file: it is
/// recorded only by the trigger).
pub const STACK: &str = "ftrace/kernel_stack";

/// The most return addresses kept of one stack.
const FRAMES: usize = 64;

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
    /// Task id → kernel priority, from the same.
    prios: IdMap<i32>,
    /// The events enabled (relative to `events/`), and those missing here.
    pub enabled: Vec<String>,
    pub missing: Vec<String>,
    /// How long an idle-state exit of the measuring CPUs may take at most;
    /// `None`: not known (nothing is judged).
    pub idle_limit: Option<IdleLimit>,
    /// The layout of [`STACK`] is known: stacks can be decoded.
    pub stacks: bool,
    /// The return addresses of the last [`Ev::Stack`] decoded, innermost
    /// first.
    pub frames: Vec<u64>,
}

/// An idle stretch longer than `ns` is no idle-state exit: the CPU was
/// not running at all (a virtual CPU the host stopped, `virtualized`) or
/// nothing recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdleLimit {
    pub ns: u64,
    pub virtualized: bool,
}

impl IdleLimit {
    /// A hundred times the longest exit latency the enabled cpuidle states
    /// of `cpus` declare (under `root`, `/` but in tests), and 100 us at
    /// least (a CPU without cpuidle states halts and wakes in microseconds).
    pub fn of(root: &Path, cpus: &[usize], virtualized: bool) -> IdleLimit {
        let mut longest_us = 0u64;
        for cpu in cpus {
            let dir = root.join(format!("sys/devices/system/cpu/cpu{cpu}/cpuidle"));
            let Ok(states) = std::fs::read_dir(&dir) else {
                continue;
            };
            for s in states.flatten() {
                let file = |f: &str| std::fs::read_to_string(s.path().join(f)).unwrap_or_default();
                if file("disable").trim() == "1" {
                    continue;
                }
                longest_us = longest_us.max(file("latency").trim().parse().unwrap_or(0));
            }
        }
        IdleLimit {
            ns: (longest_us * 100_000).max(100_000),
            virtualized,
        }
    }
}

impl Decoder {
    /// Read the layouts under `root` (a tracefs mount or a captured tree).
    pub fn load(root: &Path) -> Decoder {
        let read = |rel: &str| crate::trace::tracefs::read(root, rel).unwrap_or_default();
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
        d.stacks = d.add(STACK, &read(&format!("events/{STACK}/format")));
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
            "kernel_stack" => (|| {
                Some(Kind::Stack {
                    pid: f("common_pid")?,
                    size: f("size")?,
                    caller: f("caller")?,
                })
            })(),
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
                if let Ev::Switch {
                    prev,
                    prev_prio,
                    next,
                    next_prio,
                } = ev
                {
                    self.comm(prev, data, f[4]);
                    self.comm(next, data, f[5]);
                    self.prio(prev, prev_prio);
                    self.prio(next, next_prio);
                }
                ev
            }
            Kind::Wakeup { pid, prio, comm } => {
                let (pid, prio) = (int(pid)?, int(prio)?);
                self.comm(pid, data, comm);
                self.prio(pid, prio);
                Ev::Wakeup { pid, prio }
            }
            Kind::Idle { state } => Ev::Idle(g(state)? as u32),
            Kind::Nmi { delta } => Ev::Nmi(g(delta)?.min(i64::MAX as u64)),
            Kind::Runtime { pid, runtime } => Ev::Runtime {
                pid: int(pid)?,
                ns: g(runtime)?,
            },
            Kind::Stack { pid, size, caller } => {
                // The record holds `size` addresses, however many the
                // format's array declares (the kernel sizes it to the
                // stack); an address is the kernel's `unsigned long`.
                let n = (g(size)? as u32 as usize).min(FRAMES);
                let word = (caller.size / 8).clamp(4, 8);
                self.frames.clear();
                self.frames.extend(
                    (0..n)
                        .map_while(|i| {
                            g(Field {
                                offset: caller.offset + i * word,
                                size: word,
                            })
                        })
                        .take_while(|&a| a != 0 && a != u64::MAX >> (64 - 8 * word)),
                );
                Ev::Stack(int(pid)?)
            }
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

    fn prio(&mut self, pid: i32, prio: i32) {
        if self.prios.len() >= COMMS {
            self.prios.clear();
        }
        self.prios.insert(pid, prio);
    }

    /// The kernel priority task `pid` last had in a switch or wake-up
    /// (that of a task of normal priority when none was seen).
    pub fn prio_of(&self, pid: i32) -> i32 {
        self.prios.get(&pid).copied().unwrap_or(120)
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
pub(crate) mod tests {
    use super::*;

    const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

    fn format(name: &str, id: u16, fields: &str) -> String {
        format!("name: {name}\nID: {id}\nformat:\n{COMMON}{fields}")
    }

    fn item(data: &[u8]) -> Item<'_> {
        Item::Event { ts_ns: 1, data }
    }

    #[test]
    fn only_irq_vectors_events_are_vectors_and_the_idle_task_is_named() {
        let mut d = Decoder::default();
        let field = "\tfield:int vector;\toffset:8;\tsize:4;\tsigned:1;\n";
        // An event of another system with an _entry name is no vector.
        assert!(!d.add("other/thing_entry", &format("thing_entry", 98, field)));
        assert!(d.vectors.is_empty());
        assert!(d.add(
            "irq_vectors/reschedule_entry",
            &format("reschedule_entry", 97, field)
        ));
        assert_eq!(d.vectors, ["reschedule"]);
        assert_eq!(d.comm_of(0), "swapper");
        assert_eq!(d.comm_of(3), "?");
        d.comms.insert(0, "idle".into());
        assert_eq!(d.comm_of(0), "idle");
    }

    /// `events/ftrace/kernel_stack/format` of Linux 6.18 (x86_64).
    const KERNEL_STACK: &str = "name: kernel_stack\nID: 4\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:int size;\toffset:8;\tsize:4;\tsigned:1;\n\tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;\n\nprint fmt: \"\\t=> %ps\\n\", (void *)REC->caller[0]\n";

    /// A kernel_stack record of task `pid` holding `frames`, `size` saying
    /// `n` of them.
    fn stack_record(pid: i32, n: i32, frames: &[u64]) -> Vec<u8> {
        let mut b = vec![4, 0, 0x0d, 1];
        b.extend_from_slice(&pid.to_ne_bytes());
        b.extend_from_slice(&n.to_ne_bytes());
        b.extend_from_slice(&[0; 4]);
        for f in frames {
            b.extend_from_slice(&f.to_ne_bytes());
        }
        b
    }

    #[test]
    fn a_kernel_stack_decodes_every_frame_its_size_gives() {
        let mut d = Decoder::default();
        assert!(d.add(STACK, KERNEL_STACK));
        // More frames than the format's array declares: the kernel sizes
        // the record to the stack.
        let frames: Vec<u64> = (0..12).map(|i| 0xffff_ffff_8100_0000 + i * 0x10).collect();
        let rec = stack_record(4242, 12, &frames);
        assert_eq!(d.decode(&item(&rec)), Some(Ev::Stack(4242)));
        assert_eq!(d.frames, frames);
        // `size` is believed only as far as the record goes, and a zero
        // address ends the stack.
        let rec = stack_record(7, 40, &frames[..3]);
        assert_eq!(d.decode(&item(&rec)), Some(Ev::Stack(7)));
        assert_eq!(d.frames, frames[..3]);
        let rec = stack_record(7, 3, &[frames[0], 0, frames[2]]);
        d.decode(&item(&rec));
        assert_eq!(d.frames, frames[..1]);
        // A kernel without the event: no stacks.
        let mut none = Decoder::default();
        assert!(!none.add(STACK, ""));
        assert!(!none.stacks);
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
        // A task renamed (exec, prctl): its latest comm counts.
        sw[8..11].copy_from_slice(b"cat");
        d.decode(&item(&sw));
        assert_eq!(d.comm_of(77), "cat");

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

    /// A recorded fixture under tests/fixtures/trace/ (a tracefs-shaped
    /// tree: scripts/record-trace-fixture.py) and its one CPU.
    pub(crate) fn fixture(name: &str) -> (std::path::PathBuf, usize) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/trace")
            .join(name);
        let cpu = std::fs::read_dir(root.join("per_cpu"))
            .expect("per_cpu")
            .filter_map(|e| {
                e.ok()?
                    .file_name()
                    .to_str()?
                    .strip_prefix("cpu")?
                    .parse()
                    .ok()
            })
            .next()
            .expect("a per_cpu/cpuN directory");
        (root, cpu)
    }

    /// One event as the kernel's text views render it: `options/raw` gives
    /// the pid, CPU, time in ns and type id; the default view the CPU, the
    /// time in µs, the event's name and its printed fields.
    #[derive(Debug)]
    pub(crate) struct Text {
        pub pid: i32,
        pub cpu: usize,
        pub ts_ns: u64,
        pub ty: u16,
        pub text_cpu: usize,
        pub text_ts: String,
        pub name: String,
        pub fields: String,
    }

    fn body(text: &str) -> impl Iterator<Item = &str> {
        text.lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
    }

    /// `TASK-PID [CPU] FLAGS SECS.USECS: NAME: FIELDS` (TASK may hold spaces).
    fn text_line(l: &str) -> (usize, String, String, String) {
        let open = (0..l.len())
            .find(|&i| {
                l[i..].starts_with('[')
                    && l[i + 1..].find(']').is_some_and(|j| {
                        j > 0 && l[i + 1..i + 1 + j].bytes().all(|b| b.is_ascii_digit())
                    })
            })
            .unwrap_or_else(|| panic!("no [CPU] in {l:?}"));
        let close = open + l[open..].find(']').unwrap();
        let cpu = l[open + 1..close].parse().unwrap();
        let rest = l[close + 1..].trim_start();
        let (_flags, rest) = rest.split_once(' ').unwrap();
        let (ts, rest) = rest.trim_start().split_once(": ").unwrap();
        let (name, fields) = rest.split_once(": ").unwrap();
        (cpu, ts.to_string(), name.to_string(), fields.to_string())
    }

    /// The fixture's text views, zipped event by event.
    pub(crate) fn texts(root: &Path, cpu: usize) -> Vec<Text> {
        let read =
            |f: &str| std::fs::read_to_string(root.join(format!("per_cpu/cpu{cpu}/{f}"))).expect(f);
        let (text, raw) = (read("trace"), read("trace-raw"));
        assert_eq!(body(&text).count(), body(&raw).count(), "the two views");
        body(&text)
            .zip(body(&raw))
            .map(|(t, r)| {
                let w: Vec<&str> = r.split_whitespace().collect();
                assert_eq!((w.len(), w[3]), (5, "type:"), "{r:?}");
                let (text_cpu, text_ts, name, fields) = text_line(t);
                Text {
                    pid: w[0].parse().unwrap(),
                    cpu: w[1].parse().unwrap(),
                    ts_ns: w[2].parse().unwrap(),
                    ty: w[4].parse().unwrap(),
                    text_cpu,
                    text_ts,
                    name,
                    fields,
                }
            })
            .collect()
    }

    /// The values of `keys` in printed fields `k1=v1 k2=v2 …`, in order;
    /// a value may hold spaces (`comm=opt cgu.3`).
    fn values<'a>(fields: &'a str, keys: &[&str]) -> Vec<&'a str> {
        let mut at = Vec::new();
        let mut from = 0;
        for k in keys {
            let pat = format!("{k}=");
            let i = (from..fields.len())
                .find(|&i| {
                    fields[i..].starts_with(&pat) && (i == 0 || fields[..i].ends_with([' ', '[']))
                })
                .unwrap_or_else(|| panic!("no {k} in {fields:?}"));
            at.push((i, i + pat.len()));
            from = i + pat.len();
        }
        (0..keys.len())
            .map(|n| {
                let end = at.get(n + 1).map_or(fields.len(), |x| x.0);
                fields[at[n].1..end]
                    .trim_end()
                    .trim_end_matches(['=', '>', '['])
                    .trim_end()
            })
            .collect()
    }

    /// `prev_state` as sched_switch's print fmt renders it.
    fn state_text(state: u64) -> String {
        let mut s = ["S", "D", "T", "t", "X", "Z", "P", "I"]
            .iter()
            .enumerate()
            .filter(|(i, _)| state & (1 << i) != 0)
            .map(|(_, n)| *n)
            .collect::<Vec<_>>()
            .join("|");
        if s.is_empty() {
            s.push('R');
        }
        if state & 0x100 != 0 {
            s.push('+');
        }
        s
    }

    /// A page item decoded: its time, event and bytes.
    pub(crate) type Decoded = (u64, Ev, Vec<u8>);

    /// Every item of the fixture's pages, decoded in order by explain's
    /// decoder: (time, event, the event's bytes).
    pub(crate) fn decode_fixture(root: &Path, cpu: usize) -> (Decoder, Vec<Decoded>) {
        decode_pages(root, cpu, |p| p.to_vec())
    }

    /// [`decode_fixture`] of the pages as `rewrite` gives them.
    fn decode_pages(
        root: &Path,
        cpu: usize,
        rewrite: impl Fn(&[u8]) -> Vec<u8>,
    ) -> (Decoder, Vec<Decoded>) {
        let mut dec = Decoder::load(root);
        let page_fmt = dec.page.expect("header_page");
        let pages =
            std::fs::read(root.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"))).expect("pages");
        let size = rustix::param::page_size();
        assert_eq!(pages.len() % size, 0, "whole pages");
        let mut out = Vec::new();
        for page in pages.chunks(size) {
            ringpage::walk_page(&page_fmt, &rewrite(page), |item| {
                let (ts, data) = match item {
                    Item::Event { ts_ns, data } => (ts_ns, data.to_vec()),
                    Item::Lost(_) => (0, Vec::new()),
                };
                let ev = dec
                    .decode(&item)
                    .unwrap_or_else(|| panic!("an event of type {:?} not decoded", type_of(&data)));
                out.push((ts, ev, data));
            });
        }
        (dec, out)
    }

    /// A recorded page with every small event written in the long form
    /// (`type_len` 0, its length in the word after the header), as the
    /// kernel writes events of more than 112 bytes and every event where
    /// 64-bit access must be aligned; time records kept as they are. The
    /// page grows past 4 KB where needed (a larger sub-buffer).
    fn long_form(page: &[u8]) -> Vec<u8> {
        let word = |b: &[u8], at: usize| u32::from_ne_bytes(b[at..at + 4].try_into().unwrap());
        let commit = u64::from_ne_bytes(page[8..16].try_into().unwrap());
        let data = &page[16..16 + (commit & ringpage::LENGTH_MASK) as usize];
        let mut out = Vec::new();
        let mut at = 0;
        while at + 4 <= data.len() {
            let head = word(data, at);
            let size = match head & 0x1f {
                29 if head >> 5 == 0 => break,
                29 | 0 => word(data, at + 4) as usize + 4,
                30 | 31 => 8,
                n => {
                    let payload = &data[at + 4..at + 4 + n as usize * 4];
                    out.extend_from_slice(&(head & !0x1f).to_ne_bytes());
                    out.extend_from_slice(&(payload.len() as u32 + 4).to_ne_bytes());
                    out.extend_from_slice(payload);
                    at += 4 + payload.len();
                    continue;
                }
            };
            out.extend_from_slice(&data[at..at + size]);
            at += size;
        }
        let mut p = page[..16].to_vec();
        p[8..16]
            .copy_from_slice(&(commit & !ringpage::LENGTH_MASK | out.len() as u64).to_ne_bytes());
        p.extend_from_slice(&out);
        p.resize(p.len() + 8, 0);
        p
    }

    fn type_of(data: &[u8]) -> Option<u16> {
        ringpage::type_of(data)
    }

    const SWITCH: [&str; 7] = [
        "prev_comm",
        "prev_pid",
        "prev_prio",
        "prev_state",
        "next_comm",
        "next_pid",
        "next_prio",
    ];

    /// The fields explain reads of one event, as the text prints them
    /// (`replay` has decoded the events up to this one).
    fn same_fields(
        at: &str,
        t: &Text,
        ev: Ev,
        data: &[u8],
        replay: &Decoder,
        prev_state: Field,
        cpu: usize,
    ) {
        let f = &t.fields;
        match (t.name.as_str(), ev) {
            (
                "sched_switch",
                Ev::Switch {
                    prev,
                    prev_prio,
                    next,
                    next_prio,
                },
            ) => {
                let state = ringpage::get(data, prev_state.offset, prev_state.size).unwrap();
                let got = vec![
                    replay.comm_of(prev),
                    prev.to_string(),
                    prev_prio.to_string(),
                    state_text(state),
                    replay.comm_of(next),
                    next.to_string(),
                    next_prio.to_string(),
                ];
                assert_eq!(got, values(f, &SWITCH), "{at}");
            }
            ("sched_wakeup", Ev::Wakeup { pid, prio }) => {
                let v = values(f, &["comm", "pid", "prio", "target_cpu"]);
                assert_eq!(
                    (replay.comm_of(pid), pid.to_string(), prio.to_string()),
                    (v[0].to_string(), v[1].to_string(), v[2].to_string()),
                    "{at}"
                );
            }
            ("sched_stat_runtime", Ev::Runtime { pid, ns }) => {
                let v = values(f, &["comm", "pid", "runtime"]);
                assert_eq!(
                    (pid.to_string(), format!("{ns} [ns]")),
                    (v[1].to_string(), v[2].to_string()),
                    "{at}"
                );
            }
            ("irq_handler_entry", Ev::IrqEntry(irq)) => {
                let v = values(f, &["irq", "name"]);
                assert_eq!(
                    (irq.to_string(), replay.irqs[&irq].as_str()),
                    (v[0].to_string(), v[1]),
                    "{at}"
                );
            }
            ("irq_handler_exit", Ev::IrqExit(irq)) => {
                assert_eq!(irq.to_string(), values(f, &["irq", "ret"])[0], "{at}");
            }
            ("softirq_entry", Ev::SoftirqEntry(v)) | ("softirq_exit", Ev::SoftirqExit(v)) => {
                let x = values(f, &["vec", "action"]);
                assert_eq!(
                    (v.to_string(), softirq_name(v)),
                    (x[0].to_string(), x[1].trim_end_matches(']').to_string()),
                    "{at}"
                );
            }
            ("cpu_idle", Ev::Idle(state)) => {
                let v = values(f, &["state", "cpu_id"]);
                assert_eq!(
                    (u64::from(state), v[1]),
                    (
                        v[0].parse::<u32>().unwrap().into(),
                        cpu.to_string().as_str()
                    ),
                    "{at}"
                );
            }
            ("nmi_handler", Ev::Nmi(ns)) => {
                assert_eq!(
                    ns.to_string(),
                    values(f, &["handler", "delta_ns", "handled"])[1],
                    "{at}"
                );
            }
            (vector, Ev::VectorEntry(i)) => {
                assert_eq!(
                    format!("{}_entry", replay.vectors[usize::from(i)]),
                    vector,
                    "{at}"
                );
            }
            (vector, Ev::VectorExit(i)) => {
                assert_eq!(
                    format!("{}_exit", replay.vectors[usize::from(i)]),
                    vector,
                    "{at}"
                );
            }
            (other, ev) => panic!("{at}: {other} decoded as {ev:?}"),
        }
    }

    fn check_exact(name: &str) -> (Vec<Decoded>, Decoder, Vec<Text>) {
        let (root, cpu) = fixture(name);
        check_exact_as(name, decode_fixture(&root, cpu))
    }

    fn check_exact_as(
        name: &str,
        (dec, items): (Decoder, Vec<Decoded>),
    ) -> (Vec<Decoded>, Decoder, Vec<Text>) {
        let (root, cpu) = fixture(name);
        let texts = texts(&root, cpu);
        let events: Vec<&Decoded> = items
            .iter()
            .filter(|(_, e, _)| !matches!(e, Ev::Lost(_)))
            .collect();
        // Count equality: nothing dropped, nothing invented.
        assert_eq!(events.len(), texts.len(), "{name}: events decoded");
        let stats = std::fs::read_to_string(root.join(format!("per_cpu/cpu{cpu}/stats"))).unwrap();
        let entries: usize = stats
            .lines()
            .find_map(|l| l.strip_prefix("entries:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(events.len(), entries, "{name}: the buffer's entries");
        let switch_fmt =
            std::fs::read_to_string(root.join("events/sched/sched_switch/format")).unwrap();
        let prev_state = ringpage::field(&switch_fmt, "prev_state").unwrap();
        // The comms as they stood when each event was decoded.
        let mut replay = Decoder::load(&root);
        let mut last = 0;
        for (n, ((ts, ev, data), t)) in events.into_iter().zip(&texts).enumerate() {
            let at = format!("{name} event {n} ({t:?})");
            replay.decode(&Item::Event { ts_ns: *ts, data });
            assert_eq!(*ts, t.ts_ns, "{at}: time");
            assert!(*ts >= last, "{at}: time goes back");
            last = *ts;
            let us = (ts + 500) / 1000;
            assert_eq!(
                format!("{}.{:06}", us / 1_000_000, us % 1_000_000),
                t.text_ts,
                "{at}: time in µs"
            );
            assert_eq!((t.cpu, t.text_cpu), (cpu, cpu), "{at}: CPU");
            assert_eq!(type_of(data), Some(t.ty), "{at}: type");
            assert_eq!(
                ringpage::get(data, 4, 4).map(|p| p as u32 as i32),
                Some(t.pid),
                "{at}: common_pid"
            );
            same_fields(&at, t, *ev, data, &replay, prev_state, cpu);
        }
        (items, dec, texts)
    }

    /// Every event of the recorded pages as the kernel's own text of the
    /// same buffer has it: time to the ns, CPU, type, pid, and the fields
    /// explain reads.
    #[test]
    fn recorded_pages_decode_exactly_as_the_kernel_renders_them() {
        let (items, dec, texts) = check_exact("busy");
        assert!(dec.missing.is_empty(), "{:?}", dec.missing);
        assert!(!items.iter().any(|(_, e, _)| matches!(e, Ev::Lost(_))));
        // The fixture holds every kind of event the CPU had, not a few.
        for kind in [
            "sched_switch",
            "sched_wakeup",
            "sched_stat_runtime",
            "irq_handler_entry",
            "irq_handler_exit",
            "softirq_entry",
            "softirq_exit",
            "local_timer_entry",
            "local_timer_exit",
        ] {
            assert!(texts.iter().any(|t| t.name == kind), "no {kind} recorded");
        }
        // A gap of more than the 27 bits of an event's delta: a time-extend
        // record was decoded.
        assert!(texts.windows(2).any(|w| w[1].ts_ns - w[0].ts_ns >= 1 << 27));
    }

    /// The pages of a buffer that overwrote: the first one read says how
    /// many events were lost, which is the CPU's `overrun` count.
    #[test]
    fn an_overwritten_buffer_decodes_exactly_and_counts_its_lost_events() {
        let (items, _, _) = check_exact("overrun");
        let (root, cpu) = fixture("overrun");
        let stats = std::fs::read_to_string(root.join(format!("per_cpu/cpu{cpu}/stats"))).unwrap();
        let (overrun, _) = crate::trace::tracefs::parse_stats(&stats);
        assert!(overrun > 0);
        let lost: Vec<u64> = items
            .iter()
            .filter_map(|(_, e, _)| match e {
                Ev::Lost(n) => Some(*n),
                _ => None,
            })
            .collect();
        assert_eq!(lost, vec![overrun]);
        assert!(matches!(items[0].1, Ev::Lost(_)), "before the first event");
    }

    /// The same events in the long form decode as the kernel rendered them.
    #[test]
    fn long_form_events_decode_exactly_too() {
        let (root, cpu) = fixture("busy");
        let (items, _, _) = check_exact_as("busy", decode_pages(&root, cpu, long_form));
        let (_, short) = decode_fixture(&root, cpu);
        assert_eq!(items.len(), short.len());
        assert!(
            long_form(
                &std::fs::read(root.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"))).unwrap()
                    [..4096]
            )
            .len()
                > 4096,
            "the rewrite made the events longer"
        );
    }
}
