//! Reading a CPU's trace from a point on: the pages of its kernel buffer
//! that end before that point are read (the kernel gives them oldest first)
//! but not decoded. With the buffer in overwrite mode and read only when an
//! interval wants explaining, the reader's cost follows the worst cases,
//! not the rate of events.

use crate::trace::ringpage::{get, page_time, Page, MISSED_EVENTS};
use crate::trace::Pages;
use std::io;

/// Where a page handed on stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum From {
    /// It follows the page handed on before it (or the last read's).
    Next,
    /// The first after pages that were skipped or never read: what came
    /// before it is unknown. `lost_matters`: events lost just before it
    /// (overwritten by the kernel) were after the point, so wanted.
    Fresh { lost_matters: bool },
}

/// What one call read of a CPU's buffer.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    /// Pages read, decoded or not.
    pub pages: usize,
    /// Pages read but not handed on (they end before the point).
    pub skipped: usize,
}

/// Reads at most `max` pages of the `i`th CPU of `pipes`; hands each page
/// that may hold an event at or after `from` (every page when `None`) to
/// `page`, in order. A page that begins before `from` is held until the
/// next one shows whether it reaches past it; `held` is its buffer (a
/// page's size, allocated once by the caller).
pub fn read_from<P: Pages + ?Sized>(
    pipes: &mut P,
    i: usize,
    fmt: &Page,
    from: Option<u64>,
    max: usize,
    held: &mut Vec<u8>,
    mut page: impl FnMut(&[u8], From),
) -> io::Result<Read> {
    let mut got = Read::default();
    let mut from = from;
    held.clear();
    for _ in 0..max {
        let Some((_, p)) = pipes.read(i)? else {
            break;
        };
        got.pages += 1;
        let Some(cut) = from else {
            page(p, From::Next);
            continue;
        };
        if page_time(fmt, p).is_some_and(|t| t <= cut) {
            // Begins before the point: it reaches past it only if it is
            // the last one that does so.
            got.skipped += usize::from(!held.is_empty());
            held.clear();
            held.extend_from_slice(p);
            continue;
        }
        if held.is_empty() {
            // The oldest page there is begins after the point: events the
            // kernel overwrote before it were wanted.
            page(p, fresh(fmt, p, got.skipped, true));
        } else {
            page(held, fresh(fmt, held, got.skipped, false));
            held.clear();
            page(p, From::Next);
        }
        from = None;
    }
    if !held.is_empty() {
        // The newest page read begins before the point: the events at and
        // after it are on it.
        page(held, fresh(fmt, held, got.skipped, false));
        held.clear();
    }
    Ok(got)
}

/// How the first page handed on follows what was handed on before: after
/// skipped pages, or events the kernel overwrote, it begins anew.
fn fresh(fmt: &Page, p: &[u8], skipped: usize, after_point: bool) -> From {
    let lost = get(p, fmt.commit.offset, fmt.commit.size).is_some_and(|c| c & MISSED_EVENTS != 0);
    if skipped == 0 && !lost {
        From::Next
    } else {
        From::Fresh {
            lost_matters: lost && after_point,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::tracefs::RawPipes;

    const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

    /// A CPU's buffer as plain pages beginning at `times` (the flag of
    /// events lost before a page where `lost`), read as the kernel's pipe.
    fn pipes(times: &[(u64, bool)]) -> (tempfile::TempDir, RawPipes) {
        let dir = tempfile::tempdir().unwrap();
        let size = rustix::param::page_size();
        let mut bytes = Vec::new();
        for &(t, lost) in times {
            let mut p = vec![0u8; size];
            p[..8].copy_from_slice(&t.to_ne_bytes());
            let commit = 8 | if lost { MISSED_EVENTS } else { 0 };
            p[8..16].copy_from_slice(&commit.to_ne_bytes());
            // The page's time again in its data, to tell pages apart.
            p[16..24].copy_from_slice(&t.to_ne_bytes());
            bytes.extend_from_slice(&p);
        }
        let cpu = dir.path().join("per_cpu/cpu0");
        std::fs::create_dir_all(&cpu).unwrap();
        std::fs::write(cpu.join("trace_pipe_raw"), bytes).unwrap();
        let pipes = RawPipes::open(dir.path(), &[0]).unwrap();
        (dir, pipes)
    }

    /// The pages `read_from` hands on (by their time) and how.
    fn handed(times: &[(u64, bool)], from: Option<u64>) -> (Vec<(u64, From)>, Read) {
        let fmt = Page::parse(HEADER_PAGE).unwrap();
        let (_dir, mut p) = pipes(times);
        let mut held = Vec::new();
        let mut out = Vec::new();
        let read = read_from(&mut p, 0, &fmt, from, 64, &mut held, |page, at| {
            out.push((get(page, 16, 8).unwrap(), at));
        })
        .unwrap();
        (out, read)
    }

    const FRESH: From = From::Fresh {
        lost_matters: false,
    };

    #[test]
    fn pages_ending_before_the_point_are_read_but_not_handed_on() {
        let pages = [(10, false), (20, false), (30, false), (40, false)];
        let (got, read) = handed(&pages, Some(25));
        // 20 begins before 25 but may reach past it: handed on, fresh.
        assert_eq!(got, [(20, FRESH), (30, From::Next), (40, From::Next)]);
        assert_eq!((read.pages, read.skipped), (4, 1));
        // A point on a page's own start: that page is the first.
        let (got, _) = handed(&pages, Some(30));
        assert_eq!(got[0], (30, FRESH));
    }

    #[test]
    fn every_page_is_handed_on_without_a_point() {
        let pages = [(10, true), (20, false)];
        let (got, read) = handed(&pages, None);
        assert_eq!(got, [(10, From::Next), (20, From::Next)]);
        assert_eq!((read.pages, read.skipped), (2, 0));
    }

    #[test]
    fn a_point_past_every_page_hands_on_the_newest() {
        let pages = [(10, false), (20, false), (30, false)];
        let (got, read) = handed(&pages, Some(100));
        assert_eq!(got, [(30, FRESH)]);
        assert_eq!(read.skipped, 2);
    }

    #[test]
    fn events_overwritten_after_the_point_were_wanted() {
        // The oldest page there is begins after the point, and the kernel
        // says it overwrote events before it: those were wanted.
        let (got, _) = handed(&[(30, true), (40, false)], Some(25));
        assert_eq!(
            got,
            [(30, From::Fresh { lost_matters: true }), (40, From::Next)]
        );
        // Without the flag nothing was lost: it follows the last read.
        let (got, _) = handed(&[(30, false)], Some(25));
        assert_eq!(got, [(30, From::Next)]);
        // Overwritten before a page that begins before the point: not
        // wanted, but what came before it is unknown.
        let (got, _) = handed(&[(20, true), (30, false)], Some(25));
        assert_eq!(got, [(20, FRESH), (30, From::Next)]);
    }
}
