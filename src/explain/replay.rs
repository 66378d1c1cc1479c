//! Recorded ring pages replayed through the on-demand reader as a machine
//! of many CPUs would write them, in simulated time: what
//! benches/explain_replay.rs measures. Each CPU's buffer is the kernel's in
//! overwrite mode (the newest `buffer_pages` pages kept), filled at the
//! event rate asked for with a recorded page's events set evenly apart;
//! each CPU's measuring thread hands an interval per sample through its
//! tap, and a new worst one (a candidate) arrives at the rate asked for.
//! The reader's own CPU time is what is counted, per second of the
//! simulated machine.

use super::events::Decoder;
use super::reader::{TraceReader, Watch};
use crate::stats::tap::{room, Tap};
use crate::sys::clock;
use crate::trace::ringpage::{self, Page, LENGTH_MASK, MISSED_EVENTS};
use crate::trace::{Pages, Round};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The machine replayed.
#[derive(Debug, Clone, Copy)]
pub struct Machine {
    pub cpus: usize,
    /// Each CPU's measuring thread: one interval per sample.
    pub samples_per_s: u64,
    /// Trace events each CPU writes per sample (timer, switches, IRQs).
    pub events_per_sample: u64,
    /// New worst intervals per second over all CPUs.
    pub candidates_per_s: f64,
    /// Simulated time.
    pub seconds: u64,
    /// Pages each CPU's buffer keeps (512: the 2 MB explain asks for).
    pub buffer_pages: u64,
}

/// What the reader did over the simulated time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Report {
    /// The reader's CPU time, in its rounds only.
    pub reader_cpu_ns: u64,
    pub simulated_ns: u64,
    pub rounds: u64,
    /// Pages the buffers held over the run, and those the reader read.
    pub pages_written: u64,
    pub pages_read: u64,
    /// Pages read but not decoded (before the window wanted).
    pub pages_skipped: u64,
    pub intervals: u64,
    pub explained: u64,
    /// Explained intervals whose events were overwritten first.
    pub overwritten: u64,
}

impl Report {
    /// The reader's share of one CPU.
    pub fn cpu_share(&self) -> f64 {
        self.reader_cpu_ns as f64 / self.simulated_ns.max(1) as f64
    }
}

/// `page` with its events `gap` ns apart and nothing else (time records
/// and padding dropped), and how many events it holds.
fn retime(fmt: &Page, page: &[u8], gap: u32) -> (Vec<u8>, u64) {
    let word = |at: usize| ringpage::get(page, fmt.data + at, 4).map(|w| w as u32);
    let len = ringpage::get(page, fmt.commit.offset, fmt.commit.size).unwrap_or(0) & LENGTH_MASK;
    let mut out = vec![0u8; page.len()];
    let (mut at, mut to, mut events) = (0usize, 0usize, 0);
    while at + 4 <= len as usize {
        let Some(head) = word(at) else { break };
        let size = match head & 0x1f {
            ringpage::TYPE_PADDING if head >> 5 == 0 => break,
            ringpage::TYPE_PADDING => 4 + word(at + 4).unwrap_or(0) as usize,
            ringpage::TYPE_TIME_EXTEND | ringpage::TYPE_TIME_STAMP => 8,
            0 => 4 + word(at + 4).unwrap_or(0) as usize,
            n => 4 + 4 * n as usize,
        };
        let Some(bytes) = page.get(fmt.data + at..fmt.data + at + size) else {
            break;
        };
        if (head & 0x1f) < ringpage::TYPE_PADDING {
            let dst = fmt.data + to;
            out[dst..dst + size].copy_from_slice(bytes);
            let head = (head & 0x1f) | (gap << 5);
            out[dst..dst + 4].copy_from_slice(&head.to_ne_bytes());
            to += size;
            events += 1;
        }
        at += size;
    }
    let commit = fmt.commit.offset;
    out[commit..commit + 8].copy_from_slice(&(to as u64).to_ne_bytes());
    (out, events)
}

/// What the driver and the replayed buffers share.
#[derive(Debug, Default)]
struct Shared {
    now: u64,
    read: u64,
}

/// Every CPU's buffer: page `k` of a CPU is complete once the simulated
/// clock passes `(k + 1) · page_ns`.
struct Replay {
    fmt: Page,
    pages: Vec<Vec<u8>>,
    cpus: usize,
    page_ns: u64,
    keep: u64,
    /// The simulated clock, and the pages read (shared with the driver;
    /// a lock, as 32-bit PowerPC has no 64-bit atomics).
    shared: Arc<Mutex<Shared>>,
    next: Vec<u64>,
    buf: Vec<u8>,
}

impl Pages for Replay {
    fn len(&self) -> usize {
        self.cpus
    }

    fn read(&mut self, i: usize) -> std::io::Result<Option<(usize, &[u8])>> {
        let mut shared = self
            .shared
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?;
        let written = shared.now / self.page_ns;
        if self.next[i] >= written {
            return Ok(None);
        }
        // Overwrite mode: the oldest pages are gone, and the first page
        // read after them says so.
        let oldest = written.saturating_sub(self.keep);
        let missed = self.next[i] < oldest;
        let k = self.next[i].max(oldest);
        self.next[i] = k + 1;
        shared.read += 1;
        drop(shared);
        let src = &self.pages[k as usize % self.pages.len()];
        self.buf.copy_from_slice(src);
        let ts = self.fmt.timestamp.offset;
        self.buf[ts..ts + 8].copy_from_slice(&(k * self.page_ns).to_ne_bytes());
        if missed {
            let c = self.fmt.commit.offset;
            let commit = u64::from_ne_bytes(self.buf[c..c + 8].try_into().unwrap_or_default());
            self.buf[c..c + 8].copy_from_slice(&(commit | MISSED_EVENTS).to_ne_bytes());
        }
        Ok(Some((i, &self.buf)))
    }
}

/// The recorded pages of the fixture `root` (as tests/fixtures/trace/):
/// its decoder, and the pages of its first CPU with events set `gap` ns
/// apart, with the most events one holds (pages follow each other that
/// far apart, so that time never goes back).
fn recorded(root: &Path, gap: u32) -> std::io::Result<(Decoder, Vec<Vec<u8>>, u64)> {
    let dec = Decoder::load(root);
    let fmt = dec
        .page
        .ok_or_else(|| std::io::Error::other("no events/header_page"))?;
    let dir = std::fs::read_dir(root.join("per_cpu"))?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("trace_pipe_raw"))
        .find(|p| p.exists())
        .ok_or_else(|| std::io::Error::other("no per_cpu/cpuN/trace_pipe_raw"))?;
    let raw = std::fs::read(dir)?;
    let size = rustix::param::page_size();
    let (mut pages, mut most) = (Vec::new(), 0);
    for p in raw.chunks_exact(size) {
        let (page, n) = retime(&fmt, p, gap);
        if n > 0 {
            pages.push(page);
            most = most.max(n);
        }
    }
    if pages.is_empty() {
        return Err(std::io::Error::other("no events in the recorded pages"));
    }
    Ok((dec, pages, most))
}

/// Replays `machine` with the recorded pages of `root`.
pub fn replay(root: &Path, machine: &Machine) -> std::io::Result<Report> {
    let events_per_s = machine.samples_per_s * machine.events_per_sample;
    let gap = (1_000_000_000 / events_per_s.max(1)).clamp(1, (1 << 27) - 1) as u32;
    let (dec, pages, per_page) = recorded(root, gap)?;
    let fmt = dec
        .page
        .ok_or_else(|| std::io::Error::other("no page layout"))?;
    let shared = Arc::new(Mutex::new(Shared::default()));
    let page_ns = per_page.max(1) * u64::from(gap);
    let source = Replay {
        fmt,
        buf: vec![0; pages[0].len()],
        pages,
        cpus: machine.cpus,
        page_ns,
        keep: machine.buffer_pages.max(1),
        shared: Arc::clone(&shared),
        next: vec![0; machine.cpus],
    };
    let period = 1_000_000_000 / machine.samples_per_s.max(1);
    let taps: Vec<Arc<Tap>> = (0..machine.cpus)
        .map(|_| Arc::new(Tap::new(room(Some(period)))))
        .collect();
    let watches = taps
        .iter()
        .enumerate()
        .map(|(cpu, tap)| Watch {
            name: format!("cpu{cpu}"),
            cpu,
            tap: Arc::clone(tap),
            period_ns: Some(period),
        })
        .collect();
    let cpus = (0..machine.cpus).collect();
    let how = (10, None, "own wake-up path", None);
    let mut r = TraceReader::new(Box::new(source), dec, cpus, watches, how);
    let mut report = Report::default();
    let (start, end) = (0, machine.seconds * 1_000_000_000);
    r.started(start);
    let every = (1e9 / machine.candidates_per_s.max(1e-9)) as u64;
    let (mut t, mut fed, mut next_candidate, mut candidates) = (start, start, every, 0u64);
    let thread_cpu = || clock::now_ns(libc::CLOCK_THREAD_CPUTIME_ID);
    // Every CPU's samples up to `to`; a new worst one now and then.
    let mut feed = |to: u64| {
        while fed + period <= to {
            fed += period;
            for (c, tap) in taps.iter().enumerate() {
                // Steady, so that only the candidates are new worst ones.
                let mut lat = 2_000;
                if fed >= next_candidate && candidates % machine.cpus as u64 == c as u64 {
                    lat = 1_000_000 + candidates;
                    candidates += 1;
                    next_candidate += every;
                }
                tap.push(fed, lat);
            }
        }
    };
    loop {
        // A pause past the end ends at the end: the last samples are
        // handed over like the others.
        t = t.min(end);
        feed(t);
        if let Ok(mut s) = shared.lock() {
            s.now = t;
        }
        let before = thread_cpu();
        let round = r.round(t);
        let used = thread_cpu().saturating_sub(before);
        report.reader_cpu_ns += used;
        report.rounds += 1;
        if t == end {
            break;
        }
        t += match round {
            Round::Pause(d) => d.as_nanos() as u64,
            Round::More => used.max(1_000),
            Round::Done => break,
        };
    }
    for tap in &taps {
        tap.close();
    }
    let (_, details) = r.finish();
    report.simulated_ns = t.min(end) - start;
    report.pages_written = machine.cpus as u64 * (report.simulated_ns / page_ns);
    report.pages_read = shared.lock().map_or(0, |s| s.read);
    report.pages_skipped = details.pages_skipped;
    report.intervals = details.intervals;
    report.explained = details.explained;
    report.overwritten = details.overwritten;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/trace/busy")
    }

    #[test]
    fn retimed_pages_hold_the_recorded_events_evenly_apart() {
        let dec = Decoder::load(&fixture());
        let fmt = dec.page.expect("layout");
        let raw = std::fs::read(fixture().join("per_cpu/cpu1/trace_pipe_raw")).expect("pages");
        let page = &raw[..rustix::param::page_size()];
        let (mut before, mut after) = (Vec::new(), Vec::new());
        ringpage::walk_page(&fmt, page, |i| {
            if let ringpage::Item::Event { data, .. } = i {
                before.push(data.to_vec());
            }
        });
        let (out, n) = retime(&fmt, page, 5_000);
        let base = ringpage::page_time(&fmt, &out).expect("time");
        ringpage::walk_page(&fmt, &out, |i| {
            if let ringpage::Item::Event { data, ts_ns } = i {
                after.push((ts_ns - base, data.to_vec()));
            }
        });
        assert_eq!(n as usize, before.len());
        // The same events in the same order, 5 µs apart.
        let times: Vec<u64> = after.iter().map(|a| a.0).collect();
        let want: Vec<u64> = (1..=before.len() as u64).map(|k| k * 5_000).collect();
        assert_eq!(times, want);
        assert!(after.iter().map(|a| &a.1).eq(before.iter()));
    }

    #[test]
    fn without_new_worst_cases_the_reader_reads_nothing() {
        let mut s = Machine {
            cpus: 8,
            samples_per_s: 10_000,
            events_per_sample: 15,
            candidates_per_s: 0.0,
            seconds: 3,
            buffer_pages: 512,
        };
        let quiet = replay(&fixture(), &s).expect("replay");
        // The first intervals of each thread fill its worst ten; after
        // that, nothing is read.
        assert!(quiet.pages_written > 10_000, "{quiet:?}");
        assert!(quiet.pages_read * 10 < quiet.pages_written, "{quiet:?}");
        assert!(quiet.intervals > 8 * 29_000, "{quiet:?}");
        s.candidates_per_s = 20.0;
        let busy = replay(&fixture(), &s).expect("replay");
        // Each candidate reads its CPU's window: more pages, each explained.
        assert!(busy.pages_read > quiet.pages_read, "{busy:?} {quiet:?}");
        assert!(busy.explained >= 8 * 10, "{busy:?}");
        assert_eq!(busy.overwritten, 0, "{busy:?}");
    }
}
