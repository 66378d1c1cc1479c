//! The tracepoints a watch records and their binary records decoded:
//! `sched_waking`, `sched_switch`, `sched_process_exit`, `hrtimer_start`
//! and `hrtimer_expire_entry`, their layouts read from tracefs `format`
//! files; and the address of the kernel's sleeper callback
//! (`hrtimer_wakeup`), which tells a thread's own sleep from its other timers.

use crate::trace::ringpage::{self as raw, Field, Item, Page};
use std::path::Path;

/// The events enabled, relative to `events/`.
pub const EVENTS: [&str; 5] = [
    "sched/sched_waking",
    "sched/sched_switch",
    "sched/sched_process_exit",
    "timer/hrtimer_start",
    "timer/hrtimer_expire_entry",
];

/// A task name as the kernel keeps it (NUL-padded).
pub type Comm = [u8; 16];

/// A task as `sched_switch` names it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tracked {
    pub pid: i32,
    /// The kernel's priority: below 100 real-time (99 - its RT priority).
    pub prio: i32,
    pub comm: Comm,
}

/// One decoded event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Happening {
    Waking {
        pid: i32,
        prio: i32,
        comm: Comm,
    },
    Switch {
        prev: Tracked,
        prev_state: u64,
        next: Tracked,
    },
    Exit {
        pid: i32,
    },
    /// A timer started by task `pid`, expiring at `soft` on CLOCK_MONOTONIC.
    TimerStart {
        pid: i32,
        timer: u64,
        function: u64,
        soft: u64,
    },
    TimerExpire {
        timer: u64,
    },
    /// Events the kernel's buffer lost before this point.
    Lost(u64),
}

/// Where each event's fields lie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchLayout {
    pub page: Page,
    waking: (u16, [Field; 3]),
    switch: (u16, [Field; 7]),
    exit: (u16, Field),
    start: (u16, [Field; 4]),
    expire: (u16, Field),
}

impl WatchLayout {
    /// The layouts under tracefs `root`.
    pub fn load(root: &Path) -> Option<WatchLayout> {
        let read = |rel: &str| crate::trace::tracefs::read(root, rel).unwrap_or_default();
        let format = |ev: &str| read(&format!("events/{ev}/format"));
        WatchLayout::parse(
            &read("events/header_page"),
            &EVENTS.map(format).each_ref().map(String::as_str),
        )
    }

    /// The layouts from the header page and the [`EVENTS`]' format texts.
    pub fn parse(header_page: &str, formats: &[&str; 5]) -> Option<WatchLayout> {
        let [waking, switch, exit, start, expire] = *formats;
        let id = raw::event_id;
        let f = |text: &str, name: &str| raw::field(text, name);
        Some(WatchLayout {
            page: Page::parse(header_page)?,
            waking: (
                id(waking)?,
                [f(waking, "pid")?, f(waking, "prio")?, f(waking, "comm")?],
            ),
            switch: (
                id(switch)?,
                [
                    f(switch, "prev_pid")?,
                    f(switch, "prev_prio")?,
                    f(switch, "prev_comm")?,
                    f(switch, "prev_state")?,
                    f(switch, "next_pid")?,
                    f(switch, "next_prio")?,
                    f(switch, "next_comm")?,
                ],
            ),
            exit: (id(exit)?, f(exit, "pid")?),
            start: (
                id(start)?,
                [
                    f(start, "common_pid")?,
                    f(start, "hrtimer")?,
                    f(start, "function")?,
                    f(start, "softexpires")?,
                ],
            ),
            expire: (id(expire)?, f(expire, "hrtimer")?),
        })
    }

    /// The event of one page item; `None` for another event or a short record.
    pub fn decode(&self, item: &Item<'_>) -> Option<Happening> {
        let data = match *item {
            Item::Lost(n) => return Some(Happening::Lost(n)),
            Item::Event { data, .. } => data,
        };
        let ty = raw::type_of(data)?;
        let g = |x: Field| raw::get(data, x.offset, x.size);
        let int = |x: Field| g(x).map(|v| v as u32 as i32);
        let comm = |x: Field| -> Option<Comm> {
            let mut c = [0u8; 16];
            let b = data.get(x.offset..x.offset + x.size.min(16))?;
            c[..b.len()].copy_from_slice(b);
            Some(c)
        };
        Some(if ty == self.waking.0 {
            let [pid, prio, c] = self.waking.1;
            Happening::Waking {
                pid: int(pid)?,
                prio: int(prio)?,
                comm: comm(c)?,
            }
        } else if ty == self.switch.0 {
            let [pp, pprio, pc, state, np, nprio, nc] = self.switch.1;
            Happening::Switch {
                prev: Tracked {
                    pid: int(pp)?,
                    prio: int(pprio)?,
                    comm: comm(pc)?,
                },
                prev_state: g(state)?,
                next: Tracked {
                    pid: int(np)?,
                    prio: int(nprio)?,
                    comm: comm(nc)?,
                },
            }
        } else if ty == self.exit.0 {
            Happening::Exit {
                pid: int(self.exit.1)?,
            }
        } else if ty == self.start.0 {
            let [pid, timer, function, soft] = self.start.1;
            Happening::TimerStart {
                pid: int(pid)?,
                timer: g(timer)?,
                function: g(function)?,
                soft: g(soft)?,
            }
        } else if ty == self.expire.0 {
            Happening::TimerExpire {
                timer: g(self.expire.1)?,
            }
        } else {
            return None;
        })
    }
}

/// A comm's text (up to its NUL).
pub fn comm_text(c: &Comm) -> String {
    let end = c.iter().position(|&b| b == 0).unwrap_or(c.len());
    String::from_utf8_lossy(&c[..end]).into_owned()
}

/// The address of `hrtimer_wakeup`, the callback of every sleeper's timer
/// (clock_nanosleep, nanosleep, futex and poll timeouts), from a kallsyms
/// text read line by line (the whole is megabytes); `None` where addresses
/// are hidden (they read as zero).
pub fn sleeper_callback(kallsyms: impl std::io::BufRead) -> Option<u64> {
    kallsyms.lines().map_while(Result::ok).find_map(|l| {
        let mut w = l.split_whitespace();
        let (addr, kind, name) = (w.next()?, w.next()?, w.next()?);
        (name == "hrtimer_wakeup" && matches!(kind, "t" | "T"))
            .then(|| u64::from_str_radix(addr, 16).ok())
            .flatten()
            .filter(|&a| a != 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";
    const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

    /// A format text of event `id` with `fields` (type name, offset, size).
    fn format(id: u16, fields: &[(&str, usize, usize)]) -> String {
        let mut t = format!("name: x\nID: {id}\nformat:\n{COMMON}");
        for (decl, off, size) in fields {
            t.push_str(&format!(
                "\tfield:{decl};\toffset:{off};\tsize:{size};\tsigned:1;\n"
            ));
        }
        t
    }

    /// Linux 6.18's layouts of the five events.
    fn layout() -> WatchLayout {
        let waking = format(
            375,
            &[
                ("char comm[16]", 8, 16),
                ("pid_t pid", 24, 4),
                ("int prio", 28, 4),
            ],
        );
        let switch = format(
            372,
            &[
                ("char prev_comm[16]", 8, 16),
                ("pid_t prev_pid", 24, 4),
                ("int prev_prio", 28, 4),
                ("long prev_state", 32, 8),
                ("char next_comm[16]", 40, 16),
                ("pid_t next_pid", 56, 4),
                ("int next_prio", 60, 4),
            ],
        );
        let exit = format(369, &[("char comm[16]", 8, 16), ("pid_t pid", 24, 4)]);
        let start = format(
            460,
            &[
                ("void * hrtimer", 8, 8),
                ("void * function", 16, 8),
                ("s64 expires", 24, 8),
                ("s64 softexpires", 32, 8),
            ],
        );
        let expire = format(459, &[("void * hrtimer", 8, 8), ("s64 now", 16, 8)]);
        WatchLayout::parse(HEADER_PAGE, &[&waking, &switch, &exit, &start, &expire])
            .expect("layout")
    }

    fn put(b: &mut [u8], at: usize, v: &[u8]) {
        b[at..at + v.len()].copy_from_slice(v);
    }

    fn ev(data: &[u8]) -> Option<Happening> {
        layout().decode(&Item::Event { ts_ns: 1, data })
    }

    #[test]
    fn each_event_decodes_from_its_format() {
        let mut b = vec![0u8; 64];
        put(&mut b, 0, &375u16.to_ne_bytes());
        put(&mut b, 8, b"cyclictest");
        put(&mut b, 24, &4242i32.to_ne_bytes());
        put(&mut b, 28, &19i32.to_ne_bytes());
        let Some(Happening::Waking { pid, prio, comm }) = ev(&b) else {
            panic!("{:?}", ev(&b))
        };
        assert_eq!(
            (pid, prio, comm_text(&comm)),
            (4242, 19, "cyclictest".into())
        );

        let mut b = vec![0u8; 64];
        put(&mut b, 0, &372u16.to_ne_bytes());
        put(&mut b, 8, b"hog");
        put(&mut b, 24, &7i32.to_ne_bytes());
        put(&mut b, 28, &9i32.to_ne_bytes());
        put(&mut b, 32, &1u64.to_ne_bytes());
        put(&mut b, 40, b"app");
        put(&mut b, 56, &8i32.to_ne_bytes());
        put(&mut b, 60, &(-1i32).to_ne_bytes());
        assert_eq!(
            ev(&b),
            Some(Happening::Switch {
                prev: Tracked {
                    pid: 7,
                    prio: 9,
                    comm: *b"hog\0\0\0\0\0\0\0\0\0\0\0\0\0",
                },
                prev_state: 1,
                next: Tracked {
                    pid: 8,
                    prio: -1,
                    comm: *b"app\0\0\0\0\0\0\0\0\0\0\0\0\0",
                },
            })
        );

        let mut b = vec![0u8; 48];
        put(&mut b, 0, &460u16.to_ne_bytes());
        put(&mut b, 4, &8i32.to_ne_bytes());
        put(&mut b, 8, &0xabcu64.to_ne_bytes());
        put(&mut b, 16, &0xfffu64.to_ne_bytes());
        put(&mut b, 24, &999u64.to_ne_bytes());
        put(&mut b, 32, &900u64.to_ne_bytes());
        assert_eq!(
            ev(&b),
            Some(Happening::TimerStart {
                pid: 8,
                timer: 0xabc,
                function: 0xfff,
                soft: 900
            })
        );
        put(&mut b, 0, &459u16.to_ne_bytes());
        assert_eq!(ev(&b), Some(Happening::TimerExpire { timer: 0xabc }));
        put(&mut b, 0, &369u16.to_ne_bytes());
        put(&mut b, 24, &5i32.to_ne_bytes());
        assert_eq!(ev(&b), Some(Happening::Exit { pid: 5 }));
        put(&mut b, 0, &1u16.to_ne_bytes());
        assert_eq!(ev(&b), None, "another event");
        assert_eq!(ev(&b[..3]), None, "a short record");
        assert_eq!(layout().decode(&Item::Lost(4)), Some(Happening::Lost(4)));
    }

    #[test]
    fn the_sleepers_callback_is_found_unless_addresses_are_hidden() {
        let text = "ffffffff8142de20 t __pfx_hrtimer_wakeup\nffffffff8142de30 t hrtimer_wakeup\n";
        assert_eq!(
            sleeper_callback(text.as_bytes()),
            Some(0xffff_ffff_8142_de30)
        );
        let hidden = "0000000000000000 t hrtimer_wakeup\n";
        assert_eq!(sleeper_callback(hidden.as_bytes()), None);
        assert_eq!(sleeper_callback(&b""[..]), None);
    }
}
