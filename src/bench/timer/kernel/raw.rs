//! Decoding the binary per-CPU ring-buffer pages of `trace_pipe_raw` into
//! timerlat samples: cheaper for the measured system than the text
//! `trace_pipe`, which the kernel formats event by event. The page format
//! itself is `crate::trace::ringpage`'s.

use crate::bench::timer::lines::{Ctx, TraceLine};
use crate::trace::ringpage::ok;
pub use crate::trace::ringpage::{event_id, field, get, type_of, walk_page, Field, Item, Page};

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
    use crate::trace::ringpage::{MISSED_EVENTS, MISSED_STORED, TYPE_PADDING, TYPE_TIME_EXTEND};

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
