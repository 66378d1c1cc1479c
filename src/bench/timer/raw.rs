//! Decoding the binary per-CPU ring-buffer pages of `trace_pipe_raw` into
//! timerlat samples: cheaper for the measured system than the text
//! `trace_pipe`, which the kernel formats event by event. Every offset comes
//! from `events/header_page` and the event's `format` file (a PREEMPT_RT
//! kernel adds `common_preempt_lazy_count`, moving the fields).

use super::lines::{Ctx, TraceLine};

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

/// What decoding timerlat samples needs, read from tracefs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerlatLayout {
    pub page: Page,
    /// The timerlat event: its type id and fields.
    pub id: u16,
    pub seqnum: Field,
    pub context: Field,
    pub latency: Field,
}

/// A field of a size the decoder reads.
fn ok(x: Field) -> bool {
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

impl TimerlatLayout {
    /// From the texts of `events/header_page` and `events/ftrace/timerlat/format`.
    pub fn parse(header_page: &str, timerlat: &str) -> Option<TimerlatLayout> {
        let f = TimerlatLayout {
            page: Page::parse(header_page)?,
            id: event_id(timerlat)?,
            seqnum: field(timerlat, "seqnum")?,
            context: field(timerlat, "context")?,
            latency: field(timerlat, "timer_latency")?,
        };
        (ok(f.seqnum) && ok(f.context) && ok(f.latency)).then_some(f)
    }
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

const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;
const LENGTH_MASK: u64 = (1 << 30) - 1;
const TS_SHIFT: u32 = 27;
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;

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

/// The timerlat sample or loss notice of one item of CPU `cpu`'s page.
pub fn decode_item<'a>(fmt: &TimerlatLayout, cpu: usize, item: &Item<'_>) -> Option<TraceLine<'a>> {
    match *item {
        Item::Lost(events) => Some(TraceLine::Lost { cpu, events }),
        Item::Event { ts_ns, data: ev } => {
            if type_of(ev) != Some(fmt.id) {
                return None;
            }
            let f = |x: Field| get(ev, x.offset, x.size);
            let (id, c, lat) = (f(fmt.seqnum)?, f(fmt.context)?, f(fmt.latency)?);
            let ctx = match c {
                0 => Ctx::Irq,
                1 => Ctx::Thread,
                2 => Ctx::User,
                _ => return None,
            };
            Some(TraceLine::Timerlat {
                cpu,
                ts_ns,
                id,
                ctx,
                latency_ns: lat,
            })
        }
    }
}

/// Decode one page of CPU `cpu` into timerlat samples and loss notices;
/// returns the bytes of event data it held.
pub fn decode_page(
    fmt: &TimerlatLayout,
    cpu: usize,
    page: &[u8],
    mut out: impl FnMut(TraceLine<'_>),
) -> usize {
    walk_page(&fmt.page, page, |item| {
        if let Some(l) = decode_item(fmt, cpu, &item) {
            out(l);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Debian 12's 6.1 PREEMPT_RT files (the RT kernel's extra common field).
    const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";
    const TIMERLAT_RT: &str = "name: timerlat\nID: 15\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\tfield:unsigned char common_preempt_lazy_count;\toffset:8;\tsize:1;\tsigned:0;\n\n\tfield:unsigned int seqnum;\toffset:12;\tsize:4;\tsigned:0;\n\tfield:int context;\toffset:16;\tsize:4;\tsigned:1;\n\tfield:u64 timer_latency;\toffset:24;\tsize:8;\tsigned:0;\n\nprint fmt: \"seq:%u\"\n";

    fn event(fmt: &TimerlatLayout, seq: u32, ctx: i32, lat: u64) -> Vec<u8> {
        let mut e = vec![0u8; 32];
        e[0..2].copy_from_slice(&fmt.id.to_ne_bytes());
        e[fmt.seqnum.offset..fmt.seqnum.offset + 4].copy_from_slice(&seq.to_ne_bytes());
        e[fmt.context.offset..fmt.context.offset + 4].copy_from_slice(&ctx.to_ne_bytes());
        e[fmt.latency.offset..fmt.latency.offset + 8].copy_from_slice(&lat.to_ne_bytes());
        e
    }

    fn push(data: &mut Vec<u8>, type_len: u32, delta: u32, rest: &[u8]) {
        data.extend_from_slice(&(type_len | (delta << 5)).to_ne_bytes());
        data.extend_from_slice(rest);
    }

    #[test]
    fn formats_are_read_from_the_files() {
        let f = TimerlatLayout::parse(HEADER_PAGE, TIMERLAT_RT).unwrap();
        assert_eq!(f.id, 15);
        assert_eq!(f.page.commit, Field { offset: 8, size: 8 });
        assert_eq!(f.page.data, 16);
        assert_eq!(
            f.seqnum,
            Field {
                offset: 12,
                size: 4
            }
        );
        assert_eq!(
            f.latency,
            Field {
                offset: 24,
                size: 8
            }
        );
        assert!(TimerlatLayout::parse(HEADER_PAGE, "name: timerlat\n").is_none());
    }

    #[test]
    fn a_page_gives_its_samples_with_their_times_and_losses() {
        let f = TimerlatLayout::parse(HEADER_PAGE, TIMERLAT_RT).unwrap();
        let mut data = Vec::new();
        // #7 irq at +100 ns (a short event: type_len 8 = 32 bytes).
        push(&mut data, 8, 100, &event(&f, 7, 0, 174_070));
        // A time extend of 2^27 + 5 ns, then #7 thread (a long event, type_len 0).
        push(&mut data, TYPE_TIME_EXTEND, 5, &1u32.to_ne_bytes());
        let mut long = 36u32.to_ne_bytes().to_vec();
        long.extend_from_slice(&event(&f, 7, 1, 1_555_560));
        push(&mut data, 0, 10, &long);
        // Another event type, skipped.
        let mut other = vec![0u8; 8];
        other[0] = 99;
        push(&mut data, 2, 1, &other);
        // Padding that is a discarded event (12 bytes of it), then the end.
        push(&mut data, TYPE_PADDING, 1, &[8, 0, 0, 0, 0, 0, 0, 0]);
        push(&mut data, TYPE_PADDING, 0, &[]);
        let len = data.len() as u64;
        let mut page = Vec::new();
        page.extend_from_slice(&1_000_000u64.to_ne_bytes());
        page.extend_from_slice(&(len | MISSED_EVENTS | MISSED_STORED).to_ne_bytes());
        page.extend_from_slice(&data);
        page.extend_from_slice(&4u64.to_ne_bytes()); // 4 events lost before this page
        page.resize(4096, 0);
        let mut got = Vec::new();
        let n = decode_page(&f, 3, &page, |l| got.push(format!("{l:?}")));
        assert_eq!(n, len as usize);
        let t0 = 1_000_000 + 100;
        let t1 = t0 + (1 << 27) + 5 + 10;
        assert_eq!(
            got,
            vec![
                format!("{:?}", TraceLine::Lost { cpu: 3, events: 4 }),
                format!(
                    "{:?}",
                    TraceLine::Timerlat {
                        cpu: 3,
                        ts_ns: t0,
                        id: 7,
                        ctx: Ctx::Irq,
                        latency_ns: 174_070
                    }
                ),
                format!(
                    "{:?}",
                    TraceLine::Timerlat {
                        cpu: 3,
                        ts_ns: t1,
                        id: 7,
                        ctx: Ctx::Thread,
                        latency_ns: 1_555_560
                    }
                ),
            ]
        );
    }

    #[test]
    fn garbage_does_not_panic() {
        let f = TimerlatLayout::parse(HEADER_PAGE, TIMERLAT_RT).unwrap();
        let mut page = vec![0xffu8; 4096];
        decode_page(&f, 0, &page, |_| {});
        page[8..16].copy_from_slice(&4080u64.to_ne_bytes());
        decode_page(&f, 0, &page, |_| {});
        decode_page(&f, 0, &page[..10], |_| {});
    }
}
