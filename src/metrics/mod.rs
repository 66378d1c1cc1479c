//! `--metrics-listen ADDR:PORT`: a run's live state for Prometheus.
//!
//! The reporter thread (not real-time) hands [`Server::publish`] the same
//! collected statistics the live view shows, once per interval; the endpoint's
//! own thread (SCHED_OTHER, one poll loop, see [`http`]) renders the latest
//! snapshot per request in the text exposition format (see [`text`]). The
//! measuring threads never see the endpoint: they publish lock-free to the
//! reporter as always, and only the reporter and the endpoint share a lock.

pub mod http;
pub mod text;

use crate::error::{Error, Result};
use crate::result::RunResult;
use crate::stats::recorder::Totals;
use crate::stats::Histogram;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use text::{LoadRate, SeriesSnapshot, Snapshot};

/// A series' maximum and its culprit, as the endpoint shows it.
type MaxBy = Option<(u64, String)>;

/// Stack of the endpoint's thread (locked under mlockall, so kept small).
const STACK: usize = 128 * 1024;

/// What the reporter and the endpoint share.
struct Shared {
    /// The labels of `rtlat_info`.
    info: Vec<(&'static str, String)>,
    snapshot: Mutex<Arc<Snapshot>>,
}

impl http::MetricsSource for Shared {
    fn metrics(&self, open: bool) -> String {
        let snap = Arc::clone(&self.snapshot.lock().unwrap_or_else(|e| e.into_inner()));
        // The board build serves no exemplar (no culprit without the
        // trace): its exposition is the text format alone.
        text::render(&self.info, &snap, open && crate::KERNEL_TRACE)
    }
}

/// The running endpoint; dropping it stops its thread.
pub struct Server {
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// The address it listens on (the actual port when 0 was asked).
    pub addr: SocketAddr,
}

/// The `rtlat_info` labels of a run.
fn info_labels(run: &RunResult) -> Vec<(&'static str, String)> {
    let sys = &run.system;
    let mut info = vec![
        ("benchmark", run.benchmark.name().to_string()),
        ("host", sys.hostname.clone().unwrap_or_default()),
        ("kernel", sys.kernel_release.clone().unwrap_or_default()),
        ("preempt", sys.preempt_model.clone()),
        ("version", run.tool.version.clone()),
    ];
    if let Some(label) = &run.label {
        info.push(("label", label.clone()));
    }
    info
}

impl Server {
    /// Listen on `addr` and serve `run`'s metrics (empty until the first
    /// [`Server::publish`]).
    pub fn start(addr: SocketAddr, run: &RunResult) -> Result<Server> {
        let listener = TcpListener::bind(addr)
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|e| {
                Error::env(format!(
                    "cannot listen on {addr} for --metrics-listen: {e}; give a free port on an address of this machine"
                ))
                .because(e)
            })?;
        let addr = listener.local_addr().unwrap_or(addr);
        let shared = Arc::new(Shared {
            info: info_labels(run),
            snapshot: Mutex::new(Arc::new(Snapshot::default())),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (shared, stop) = (Arc::clone(&shared), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("rtlat-metrics".into())
                .stack_size(STACK)
                .spawn(move || {
                    // Never real-time, whatever the thread that started it was.
                    let _ = crate::sys::sched::set_current(crate::sys::sched::Sched::Other);
                    http::serve(&listener, &*shared, &stop);
                })
                .map_err(|e| {
                    Error::env(format!("cannot start the metrics thread: {e}")).because(e)
                })?
        };
        Ok(Server {
            shared,
            stop,
            thread: Some(thread),
            addr,
        })
    }

    /// Replace the served state: every series' collected statistics, the
    /// maximum of its latest finished interval and the culprit of its
    /// maximum where known, the loads' records (`name`, `achieved_rate`,
    /// `rate_unit`), the time since the start.
    pub fn publish<'a>(
        &self,
        series: impl IntoIterator<Item = (&'a str, &'a Totals, &'a Histogram, Option<u64>, MaxBy)>,
        loads: &[serde_json::Value],
        elapsed_ns: u64,
    ) {
        let snap = Snapshot {
            series: series
                .into_iter()
                .map(|(name, t, h, last, max_by)| SeriesSnapshot {
                    interval_max_ns: last,
                    max_by,
                    ..SeriesSnapshot::new(name, t, h)
                })
                .collect(),
            loads: loads
                .iter()
                .filter_map(|r| {
                    Some(LoadRate {
                        name: r["name"].as_str()?.to_string(),
                        unit: r["rate_unit"].as_str().unwrap_or("ops/s").to_string(),
                        rate: r["achieved_rate"].as_f64()?,
                    })
                })
                .collect(),
            elapsed_ns,
        };
        *self
            .shared
            .snapshot
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Arc::new(snap);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
