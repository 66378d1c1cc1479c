//! `timer --context user`: rtlat's own threads, one per CPU, woken by the
//! timerlat tracer's timer through `osnoise/per_cpu/cpuN/timerlat_fd`
//! (Linux 6.5). With the kernel's `timerlat/N` threads switched off
//! (`osnoise/options` NO_OSNOISE_WORKLOAD), each `read()` of the file arms
//! the timer and sleeps; the tracer records the IRQ sample in the handler,
//! the thread sample when the reading thread runs again in the kernel, and —
//! when the thread calls `read()` again at once — the return-to-user sample
//! (`user-ret`, context 2): the whole way from the timer's expiry back to
//! user space and into the kernel once more.

use crate::engine::{StopFlag, Worker, WorkerEnd};
use crate::error::{Error, Result};
use crate::stats::tap::Tap;
use crate::sys::clock::{self, Clock};
use crate::sys::sched;
use crate::trace::instance::tracefs_error;
use crate::trace::tracefs::{self, Session};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Switch the kernel's timerlat/N threads off, so that rtlat's threads are
/// the workload (restored at the end).
pub fn user_workload(session: &mut Session, root: &Path) -> Result<()> {
    let opts = tracefs::read(root, "osnoise/options")
        .map_err(|e| tracefs_error("read osnoise/options", e))?;
    let words: Vec<&str> = opts.split_whitespace().collect();
    if words.contains(&"OSNOISE_WORKLOAD") {
        session
            .set_at_end("osnoise/options", "OSNOISE_WORKLOAD")
            .map_err(|e| tracefs_error("save osnoise/options", e))?;
        tracefs::write(root, "osnoise/options", "NO_OSNOISE_WORKLOAD")
            .map_err(|e| tracefs_error("set osnoise/options NO_OSNOISE_WORKLOAD", e))?;
    } else if !words.contains(&"NO_OSNOISE_WORKLOAD") {
        return Err(Error::env(format!(
            "--context user needs the OSNOISE_WORKLOAD option in {}/osnoise/options (Linux 6.5 or later), which this kernel does not list: use --context irq,thread",
            root.display()
        )));
    }
    Ok(())
}

fn fd_path(root: &Path, cpu: usize) -> PathBuf {
    root.join(format!("osnoise/per_cpu/cpu{cpu}/timerlat_fd"))
}

/// Open and close `cpu`'s timerlat_fd from a thread pinned there, as the
/// measuring thread will: the kernel's refusal (EBUSY: another reader such
/// as `rtla -u`) is an error before anything is measured.
pub fn probe(root: &Path, cpu: usize) -> Result<()> {
    let path = fd_path(root, cpu);
    let opened = std::thread::scope(|s| {
        s.spawn(|| -> std::io::Result<()> {
            sched::pin_current(cpu)?;
            std::fs::File::open(&path).map(drop)
        })
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("the probing thread panicked")))
    });
    opened.map_err(|e| {
        Error::env(format!(
            "cannot open {} from a thread pinned to CPU {cpu}: {e}; stop other users of the timerlat tracer (rtla timerlat -u, another rtlat)",
            path.display()
        ))
        .because(e)
    })
}

/// The thread of `cpu` (the engine pins it and gives it rtlat's policy):
/// reads its timerlat_fd until the trace reader is `done` (it has every
/// CPU's samples past the end, the user-return ones too, which only a
/// further `read()` records), or until stopped; at the latest `grace_ns`
/// after the end.
pub fn worker(
    root: &Path,
    cpu: usize,
    duration_ns: Option<u64>,
    grace_ns: u64,
    (done, taps): (Arc<AtomicBool>, Vec<Arc<Tap>>),
    problems: Arc<Mutex<Vec<String>>>,
) -> Worker {
    let path = fd_path(root, cpu);
    Worker {
        name: format!("rtlat-tlat{cpu}"),
        cpu: Some(cpu),
        body: Box::new(move |start: u64, stop: &StopFlag| -> WorkerEnd {
            // `--explain`: the samples of this CPU's thread and user levels
            // are this thread's wake-ups.
            for t in &taps {
                t.set_writer(crate::sys::sched::gettid());
            }
            let mono = Clock::Monotonic.id();
            let until = duration_ns.map_or(u64::MAX, |d| start + d + grace_ns);
            let mut fd = match std::fs::File::open(&path) {
                Ok(f) => f,
                Err(e) => {
                    if let Ok(mut p) = problems.lock() {
                        p.push(format!("cannot open {}: {e}", path.display()));
                    }
                    stop.set();
                    return WorkerEnd::default();
                }
            };
            let mut buf = [0u8; 64];
            while !stop.is_set() && !done.load(Ordering::Acquire) && clock::now_ns(mono) < until {
                match fd.read(&mut buf) {
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        if let Ok(mut p) = problems.lock() {
                            p.push(format!("reading {} failed: {e}", path.display()));
                        }
                        break;
                    }
                }
            }
            WorkerEnd::default()
        }),
    }
}
