//! `--explain` as a benchmark asks for it: the one set-up path of every
//! benchmark, the taps of its measuring threads (sized here, once), and the
//! run with the reader beside them. Without the `kernel-trace` feature (the
//! board build) nothing is traced: the command line refuses `--explain`
//! there, and the run goes straight to the engine.

use crate::engine::{Channel, Finished, RunSpec, Worker};
use crate::error::Result;
use crate::stats::tap::Tap;
use std::sync::Arc;

/// What a benchmark asks of `--explain`.
pub struct Ask<'a> {
    /// How many of each thread's worst intervals to explain
    /// (`--explain-worst`); `None`: no `--explain`.
    pub worst: Option<usize>,
    /// The measuring CPUs.
    pub cpus: &'a [usize],
    /// Every interval above this is explained too (`--break-threshold`).
    pub threshold: Option<u64>,
    /// The thread's own time in an interval (`own wake-up path`).
    pub own: &'static str,
    /// The intervals start before the thread's wake-up is due: what the
    /// time before it is (`reply on its way to the socket`).
    pub pending: Option<&'static str>,
}

impl<'a> Ask<'a> {
    /// `--explain` on `cpus`, `own` naming the thread's own time.
    pub fn new(worst: Option<usize>, cpus: &'a [usize], own: &'static str) -> Ask<'a> {
        Ask {
            worst,
            cpus,
            threshold: None,
            own,
            pending: None,
        }
    }
}

/// Room in a tap for 2 s of intervals, one every `every_ns` (unknown:
/// 2 s at 32 768/s): what may come between two of the reader's rounds.
pub fn room(every_ns: Option<u64>) -> usize {
    match every_ns {
        Some(p) => (2_000_000_000 / p.max(1)).clamp(1 << 10, 1 << 16) as usize,
        None => 1 << 16,
    }
}

/// A run's `--explain`, on or off.
#[derive(Default)]
pub struct Explaining {
    #[cfg(feature = "kernel-trace")]
    explain: Option<crate::explain::Explain>,
}

impl Explaining {
    /// Sets the tracing up (before anything is measured: it can fail),
    /// its notes added to `notes`.
    pub fn begin(ask: &Ask, notes: &mut Vec<String>) -> Result<Explaining> {
        let Some(worst) = ask.worst else {
            return Ok(Explaining::default());
        };
        Self::on(ask, worst, notes)
    }

    #[cfg(feature = "kernel-trace")]
    fn on(ask: &Ask, worst: usize, notes: &mut Vec<String>) -> Result<Explaining> {
        let mut e = crate::explain::Explain::begin(ask.cpus, worst, ask.threshold, ask.own)?;
        if let Some(p) = ask.pending {
            e = e.pending(p)?;
        }
        notes.extend(e.notes.iter().cloned());
        Ok(Explaining { explain: Some(e) })
    }

    #[cfg(not(feature = "kernel-trace"))]
    fn on(_: &Ask, _: usize, _: &mut Vec<String>) -> Result<Explaining> {
        Err(crate::error::Error::usage(
            "--explain is not in this build (the kernel-trace feature): use the full build",
        ))
    }

    /// The tap of a measuring thread named `name` on `cpu` that hands
    /// over an interval every `every_ns` at most (`None` when `--explain`
    /// is off).
    pub fn watch(&mut self, name: &str, cpu: usize, every_ns: Option<u64>) -> Option<Arc<Tap>> {
        #[cfg(feature = "kernel-trace")]
        if let Some(e) = self.explain.as_mut() {
            return Some(e.watch(name, cpu, room(every_ns)));
        }
        let _ = (name, cpu, every_ns);
        None
    }

    /// The run, with the reader beside the workers when `--explain` is on.
    pub fn execute(
        self,
        spec: RunSpec,
        channels: Vec<Channel>,
        workers: Vec<Worker>,
        clock: libc::clockid_t,
    ) -> Result<Finished> {
        #[cfg(feature = "kernel-trace")]
        return crate::explain::execute(self.explain, spec, channels, workers, clock);
        #[cfg(not(feature = "kernel-trace"))]
        return crate::engine::execute(spec, channels, workers, clock);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tap_holds_two_seconds_of_intervals_within_bounds() {
        assert_eq!(room(Some(1_000_000)), 2000);
        assert_eq!(room(Some(100_000)), 20_000);
        // At least 1024, at most 65 536, and 65 536 when the rate is unknown.
        assert_eq!(room(Some(27_000_000)), 1024);
        assert_eq!(room(Some(10_000)), 1 << 16);
        assert_eq!(room(Some(0)), 1 << 16);
        assert_eq!(room(None), 1 << 16);
    }

    #[test]
    fn without_explain_nothing_is_traced() {
        let mut notes = Vec::new();
        let mut e = Explaining::begin(&Ask::new(None, &[0], "own"), &mut notes).expect("off");
        assert!(e.watch("cpu0", 0, Some(1_000_000)).is_none());
        assert!(notes.is_empty());
    }
}
