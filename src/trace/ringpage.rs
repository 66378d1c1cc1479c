//! The binary pages of the kernel's per-CPU trace ring buffers
//! (`trace_pipe_raw`): the page header, the event headers and time deltas,
//! and the fields of an event as its `format` file places them. Every offset
//! comes from `events/header_page` and the event's `format` file (a
//! PREEMPT_RT kernel adds `common_preempt_lazy_count`, moving the fields).

/// Where one field lies in an event or page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub offset: usize,
    pub size: usize,
}

/// The layout of a ring-buffer page, from `events/header_page`:
/// `timestamp`, `commit` (length and loss flags), `data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub timestamp: Field,
    pub commit: Field,
    pub data: usize,
}

impl Page {
    pub fn parse(header_page: &str) -> Option<Page> {
        let p = Page {
            timestamp: field(header_page, "timestamp")?,
            commit: field(header_page, "commit")?,
            data: field(header_page, "data")?.offset,
        };
        (ok(p.timestamp) && ok(p.commit)).then_some(p)
    }
}

/// A field of a size the decoder reads.
pub fn ok(x: Field) -> bool {
    matches!(x.size, 1 | 2 | 4 | 8)
}

/// `field:TYPE NAME;\toffset:N;\tsize:N;` lines of a format file: NAME → field.
pub fn field(text: &str, name: &str) -> Option<Field> {
    text.lines().find_map(|l| {
        let l = l.trim();
        let decl = l.strip_prefix("field:")?.split(';').next()?;
        let fname = decl.split_whitespace().last()?;
        // `char comm[16]`: the name without its array size.
        let fname = fname.split('[').next().unwrap_or(fname);
        if fname.trim_start_matches('*') != name {
            return None;
        }
        let num = |key: &str| -> Option<usize> {
            l.split(';')
                .find_map(|p| p.trim().strip_prefix(key))
                .and_then(|v| v.trim().parse().ok())
        };
        Some(Field {
            offset: num("offset:")?,
            size: num("size:")?,
        })
    })
}

/// The `ID:` of an event's `format` file.
pub fn event_id(format: &str) -> Option<u16> {
    format
        .lines()
        .find_map(|l| l.trim().strip_prefix("ID:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The unsigned value of `size` bytes at `at` (native byte order).
pub fn get(b: &[u8], at: usize, size: usize) -> Option<u64> {
    let s = b.get(at..at + size)?;
    Some(match size {
        1 => u64::from(s[0]),
        2 => u64::from(u16::from_ne_bytes([s[0], s[1]])),
        4 => u64::from(u32::from_ne_bytes(s.try_into().ok()?)),
        8 => u64::from_ne_bytes(s.try_into().ok()?),
        _ => return None,
    })
}

pub const MISSED_EVENTS: u64 = 1 << 31;
pub const MISSED_STORED: u64 = 1 << 30;
pub const LENGTH_MASK: u64 = (1 << 30) - 1;
pub const TS_SHIFT: u32 = 27;
pub const TYPE_PADDING: u32 = 29;
pub const TYPE_TIME_EXTEND: u32 = 30;
pub const TYPE_TIME_STAMP: u32 = 31;

/// What a page holds, in order.
pub enum Item<'a> {
    /// Events were lost before this page.
    Lost(u64),
    /// One event: its time and its bytes (from `common_type` on).
    Event { ts_ns: u64, data: &'a [u8] },
}

/// The event type of an event's bytes (`common_type`).
pub fn type_of(ev: &[u8]) -> Option<u16> {
    get(ev, 0, 2).map(|t| t as u16)
}

/// The task that was running when the event was recorded (`common_pid`,
/// after the type, flags and preempt count of every event's header).
pub fn task_of(ev: &[u8]) -> Option<i32> {
    get(ev, 4, 4).map(|p| p as u32 as i32)
}

/// The time a page begins at (its header's timestamp, the base of its
/// first event's delta), read without walking its events.
pub fn page_time(fmt: &Page, page: &[u8]) -> Option<u64> {
    get(page, fmt.timestamp.offset, fmt.timestamp.size)
}

/// Walk one page; returns the bytes of event data it held (a full page
/// means more may be waiting).
pub fn walk_page(fmt: &Page, page: &[u8], mut out: impl FnMut(Item<'_>)) -> usize {
    let (Some(mut ts), Some(commit)) = (
        get(page, fmt.timestamp.offset, fmt.timestamp.size),
        get(page, fmt.commit.offset, fmt.commit.size),
    ) else {
        return 0;
    };
    let len = (commit & LENGTH_MASK) as usize;
    let data = page.get(fmt.data..).unwrap_or(&[]);
    let len = len.min(data.len());
    if commit & MISSED_EVENTS != 0 {
        let events = if commit & MISSED_STORED != 0 {
            get(data, len, 8).unwrap_or(1)
        } else {
            1
        };
        out(Item::Lost(events));
    }
    let mut at = 0;
    while at + 4 <= len {
        let Some(head) = get(data, at, 4) else { break };
        let head = head as u32;
        let type_len = head & 0x1f;
        let delta = u64::from(head >> 5);
        let array0 = get(data, at + 4, 4);
        match type_len {
            TYPE_PADDING => {
                if delta == 0 {
                    break; // the rest of the page
                }
                // A discarded event: its time_delta means nothing.
                let Some(a) = array0 else { break };
                at += a as usize + 4;
            }
            TYPE_TIME_EXTEND => {
                let Some(a) = array0 else { break };
                ts += (a << TS_SHIFT) + delta;
                at += 8;
            }
            TYPE_TIME_STAMP => {
                let Some(a) = array0 else { break };
                let abs = (a << TS_SHIFT) + delta;
                ts = (ts & !((1u64 << 59) - 1)) | abs;
                at += 8;
            }
            _ => {
                ts += delta;
                let (payload, size) = if type_len == 0 {
                    let Some(a) = array0 else { break };
                    (at + 8, a as usize + 4)
                } else {
                    (at + 4, type_len as usize * 4 + 4)
                };
                if size < 4 {
                    break;
                }
                let ev = &data[payload.min(len)..(at + size).min(len)];
                out(Item::Event {
                    ts_ns: ts,
                    data: ev,
                });
                at += size;
            }
        }
    }
    len
}
