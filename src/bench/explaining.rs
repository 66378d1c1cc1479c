//! `--explain` as a benchmark asks for it: the one set-up path of every
//! benchmark, the taps of its measuring threads (sized here, once), and the
//! run with the reader beside them. Without the `kernel-trace` feature (the
//! board build) nothing is traced: the command line refuses `--explain`
//! there, and the run goes straight to the engine.

use crate::engine::{Channel, Finished, RunSpec, Worker};
use crate::error::Result;
use crate::stats::tap::Tap;
use std::sync::Arc;

/// What a benchmark asks of `--explain` (and `timer --split`).
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
    /// Every interval attributed and summed by cause per CPU, not only
    /// the worst (noise's gaps).
    pub every: bool,
    /// The threads wake one another across the measuring CPUs (`switch
    /// --placement cross`): their traces are read together.
    pub across: bool,
    /// `--explain-stacks`: the kernel stack of the task that held the CPU.
    pub stacks: bool,
    /// `timer --split`: each sample split into its IRQ and scheduling
    /// parts, the threads' period and their first wake-ups after the
    /// start. Its taps take the place of `--explain`'s.
    pub split: Option<(u64, &'a [u64])>,
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
            every: false,
            across: false,
            stacks: false,
            split: None,
        }
    }
}

pub use crate::stats::tap::room;

/// A run's readers of the kernel's trace, as its benchmark asked for
/// them; none without `--explain` and `--split`.
#[derive(Default)]
pub struct Explaining {
    on: on::Traced,
}

impl Explaining {
    /// Sets the tracing up (before anything is measured: it can fail),
    /// its notes added to `notes`.
    pub fn begin(ask: &Ask, notes: &mut Vec<String>) -> Result<Explaining> {
        if ask.worst.is_none() && ask.split.is_none() {
            return Ok(Explaining::default());
        }
        Ok(Explaining {
            on: on::Traced::begin(ask, notes)?,
        })
    }

    /// The tap of a measuring thread named `name` on `cpu` that hands
    /// over an interval every `every_ns` at most (`None` when `--explain`
    /// is off).
    pub fn watch(&mut self, name: &str, cpu: usize, every_ns: Option<u64>) -> Option<Arc<Tap>> {
        self.thread(name, Some(cpu), every_ns, 0).0
    }

    /// [`Self::watch`] for a thread that may be unpinned (`cpu` `None`),
    /// with the channels of the series it adds (`--split`'s parts, their
    /// intervals `interval_ns`).
    pub fn thread(
        &mut self,
        name: &str,
        cpu: Option<usize>,
        every_ns: Option<u64>,
        interval_ns: u64,
    ) -> (Option<Arc<Tap>>, Vec<Channel>) {
        self.on.watch(name, cpu, every_ns, interval_ns)
    }

    /// The run, with the readers beside the workers; tracefs restored
    /// whatever the outcome.
    pub fn execute(
        self,
        spec: RunSpec,
        channels: Vec<Channel>,
        workers: Vec<Worker>,
        clock: libc::clockid_t,
    ) -> Result<Finished> {
        self.on.execute(spec, channels, workers, clock)
    }
}

/// The tracing itself (the full build): the readers of `--split` and
/// `--explain`, or those a benchmark set up itself.
#[cfg(feature = "kernel-trace")]
mod on {
    use super::Ask;
    use crate::bench::split::Split;
    use crate::engine::{Channel, Finished, RunSpec, Worker};
    use crate::error::Result;
    use crate::explain::Explain;
    use crate::stats::tap::Tap;
    use crate::trace::Tracing;
    use std::sync::Arc;

    #[derive(Default)]
    pub(super) struct Traced {
        /// Readers a benchmark set up itself (noise's kernel tracers).
        tracing: Tracing,
        explain: Option<Explain>,
        split: Option<(Split, u64, Vec<u64>)>,
    }

    impl super::Explaining {
        /// A run whose readers its benchmark set up (`tracing`).
        pub fn tracing(tracing: Tracing) -> super::Explaining {
            super::Explaining {
                on: Traced {
                    tracing,
                    ..Traced::default()
                },
            }
        }
    }

    impl Traced {
        pub(super) fn begin(ask: &Ask, notes: &mut Vec<String>) -> Result<Traced> {
            let mut t = Traced::default();
            if let Some((period, phases)) = ask.split {
                let s = Split::begin(ask.cpus, period)?;
                notes.extend(s.notes.iter().cloned());
                t.split = Some((s, period, phases.to_vec()));
            }
            if let Some(worst) = ask.worst {
                let mut e = Explain::begin(ask.cpus, worst, ask.threshold, ask.own)?;
                if let Some(p) = ask.pending {
                    e = e.pending(p)?;
                }
                if ask.every {
                    e.total_every_interval();
                }
                if ask.across {
                    e.read_across();
                }
                if ask.stacks {
                    e.stacks()?;
                }
                notes.extend(e.notes.iter().cloned());
                t.explain = Some(e);
            }
            Ok(t)
        }

        pub(super) fn watch(
            &mut self,
            name: &str,
            cpu: Option<usize>,
            every_ns: Option<u64>,
            interval_ns: u64,
        ) -> (Option<Arc<Tap>>, Vec<Channel>) {
            if let Some((s, ..)) = self.split.as_mut() {
                let channels = s.channels(name, cpu, interval_ns).into();
                let i = s.watched();
                return (Some(Arc::clone(&s.taps[i])), channels);
            }
            let tap = match (self.explain.as_mut(), cpu) {
                (Some(e), Some(cpu)) => Some(e.watch(name, cpu, super::room(every_ns), every_ns)),
                _ => None,
            };
            (tap, Vec::new())
        }

        pub(super) fn execute(
            self,
            spec: RunSpec,
            channels: Vec<Channel>,
            workers: Vec<Worker>,
            clock: libc::clockid_t,
        ) -> Result<Finished> {
            let mut tracing = self.tracing;
            if let Some((s, period, phases)) = self.split {
                s.add_to(&mut tracing, period, phases);
            }
            if let Some(e) = self.explain {
                e.add_to(&mut tracing);
            }
            tracing.execute(spec, channels, workers, clock)
        }
    }
}

/// The board build traces nothing: the command line refuses what would.
#[cfg(not(feature = "kernel-trace"))]
mod on {
    use super::Ask;
    use crate::engine::{Channel, Finished, RunSpec, Worker};
    use crate::error::{Error, Result};
    use crate::stats::tap::Tap;
    use std::sync::Arc;

    /// Nothing traced; the facade's one field has this type here.
    #[derive(Default)]
    pub(super) struct NoTrace;
    pub(super) type Traced = NoTrace;

    impl NoTrace {
        pub(super) fn begin(_: &Ask, _: &mut Vec<String>) -> Result<NoTrace> {
            Err(Error::usage(
                "--explain is not in this build (the kernel-trace feature): use the full build",
            ))
        }

        pub(super) fn watch(
            &mut self,
            _: &str,
            _: Option<usize>,
            _: Option<u64>,
            _: u64,
        ) -> (Option<Arc<Tap>>, Vec<Channel>) {
            (None, Vec::new())
        }

        pub(super) fn execute(
            self,
            spec: RunSpec,
            channels: Vec<Channel>,
            workers: Vec<Worker>,
            clock: libc::clockid_t,
        ) -> Result<Finished> {
            crate::engine::execute(spec, channels, workers, clock)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_explain_nothing_is_traced() {
        let mut notes = Vec::new();
        let mut e = Explaining::begin(&Ask::new(None, &[0], "own"), &mut notes).expect("off");
        let (tap, channels) = e.thread("cpu0", Some(0), Some(1_000_000), 1_000_000_000);
        assert!(tap.is_none() && channels.is_empty());
        assert!(notes.is_empty());
    }
}
