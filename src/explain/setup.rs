//! `--explain`'s set-up: the tracepoints of the measuring CPUs in rtlat's
//! tracefs instance, the taps of the threads watched, and the reader
//! ([`super::reader`]) with what it writes into the result.

use super::events::{Decoder, IdleLimit, REQUIRED};
use super::reader::{ExplainDetails, TraceReader, Watch};
use crate::engine::StopFlag;
use crate::error::{Error, Result};
use crate::result::totals::CpuTotals;
use crate::result::{BreakEvent, RunResult};
use crate::stats::tap::Tap;
use crate::sys::sched::{self, Sched};
use crate::sys::tracefs::Capabilities;
use crate::trace::instance::{self, tracefs_error};
use crate::trace::tracefs::{self, RawPipes, Session};
use crate::trace::{Finish, Round, Tracer, Tracing};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Wrapped {
    explain: ExplainDetails,
}

impl crate::result::details::Details for Wrapped {}

/// An explain run's tracing, from its set-up to its restore.
pub struct Explain {
    pipes: RawPipes,
    dec: Decoder,
    cpus: Vec<usize>,
    watches: Vec<Watch>,
    worst: usize,
    threshold: Option<u64>,
    own: &'static str,
    totals: bool,
    across: bool,
    pending: Option<&'static str>,
    /// The wake-ups other CPUs did of the measuring CPUs' threads.
    remote: Option<RawPipes>,
    /// The instance the events are recorded in.
    inst: PathBuf,
    /// `--explain-stacks`: the trigger that records the kernel stacks.
    trigger: Option<Trigger>,
    /// Where the reader runs, when not on the CPUs not traced.
    reader_cpus: Option<Vec<usize>>,
    pub notes: Vec<String>,
    /// Declared last, so dropped after the pipes: tracefs refuses to
    /// remove an instance while its `trace_pipe_raw` is open (EBUSY).
    session: Session,
}

/// Why this system cannot explain, as the one-line error naming the fix.
fn refuse(caps: &Capabilities, dec: Option<&Decoder>) -> Option<Error> {
    let Some(root) = &caps.root else {
        return Some(Error::env(
            "--explain needs tracefs (/sys/kernel/tracing), which is not mounted or not readable: run as root",
        ));
    };
    let dec = dec?;
    let lacking: Vec<&str> = REQUIRED
        .iter()
        .copied()
        .filter(|e| dec.missing.iter().any(|m| m == e))
        .collect();
    if dec.page.is_none() || !lacking.is_empty() {
        return Some(Error::env(format!(
            "--explain needs the {} trace events and events/header_page under {}, which this kernel does not offer: use a kernel built with CONFIG_FTRACE (every distribution kernel has them)",
            REQUIRED.join(" and "),
            root.display()
        )));
    }
    None
}

impl Explain {
    /// Record the events of `cpus`; explain the `worst` intervals of each
    /// thread and every one above `threshold`; `own` names the thread's own
    /// time in an interval (`own wake-up path`, `own computation`).
    pub fn begin(
        cpus: &[usize],
        worst: usize,
        threshold: Option<u64>,
        own: &'static str,
    ) -> Result<Explain> {
        Self::open(None, cpus, worst, threshold, own)
    }

    /// [`Explain::begin`] inside the tracefs `session` of a run that
    /// traces in an instance of its own already (`timer --context`): the
    /// events go to a second instance, `rtlat-PID-explain`, and the session
    /// (both instances) is restored by the explain run's finisher too.
    pub fn beside(
        session: Session,
        cpus: &[usize],
        worst: usize,
        threshold: Option<u64>,
        own: &'static str,
    ) -> Result<Explain> {
        Self::open(Some(session), cpus, worst, threshold, own)
    }

    fn open(
        session: Option<Session>,
        cpus: &[usize],
        worst: usize,
        threshold: Option<u64>,
        own: &'static str,
    ) -> Result<Explain> {
        let caps = Capabilities::probe_or_mount();
        if let Some(e) = refuse(&caps, None) {
            return Err(e);
        }
        let root = caps.root.clone().unwrap_or_default();
        let mut dec = Decoder::load(&root);
        if let Some(e) = refuse(&caps, Some(&dec)) {
            return Err(e);
        }
        let virtualized = crate::sysinfo::virtualization().is_some();
        let limit = IdleLimit::of(std::path::Path::new("/"), cpus, virtualized);
        dec.idle_limit = Some(limit);
        let beside = session.is_some();
        let (mut session, mut notes) = match session {
            Some(s) => (s, Vec::new()),
            None => Session::begin(&root, tracefs::Uses::Instances).map_err(Error::env)?,
        };
        let mask = tracefs::cpumask(cpus);
        let mut settings: Vec<(String, &str)> = vec![("tracing_cpumask".into(), mask.as_str())];
        for e in &dec.enabled {
            settings.push((format!("events/{e}/enable"), "1"));
        }
        let refs: Vec<(&str, &str)> = settings.iter().map(|(a, b)| (a.as_str(), *b)).collect();
        let (inst, name) = if beside {
            let name = format!("rtlat-{}-explain", std::process::id());
            (instance::open_as(&mut session, &name, &refs)?, name)
        } else {
            instance::open(&mut session, &root, &refs, &mut notes)?
        };
        let pipes =
            RawPipes::open(&inst, cpus).map_err(|e| tracefs_error("open trace_pipe_raw", e))?;
        notes.push(format!(
            "--explain: the worst {worst} intervals of each thread{} split into their causes, from the scheduling, IRQ, softirq, irq_vectors, idle and NMI events of the measuring CPUs in tracefs instance {name}, and the hypervisor's steal from the scheduler's runtime accounting (or the steal column of /proc/stat); its reader thread (SCHED_OTHER) is in the CPU time",
            if threshold.is_some() { " and every one above --break-threshold" } else { "" }
        ));
        notes.push(format!(
            "--explain: an idle stretch over {} (a hundred times the longest exit latency the measuring CPUs' idle states declare) is no idle-state exit: {}",
            crate::units::human_duration(limit.ns),
            if virtualized {
                "the host did not run the virtual CPU (\"hypervisor (unaccounted)\")"
            } else {
                "nothing recorded ran (\"unexplained (no event)\")"
            }
        ));
        if !dec.missing.is_empty() {
            notes.push(format!(
                "--explain could not see {} (not in this kernel's tracefs): their time shows under the part they interrupted",
                dec.missing.join(", ")
            ));
        }
        Ok(Explain {
            session,
            pipes,
            dec,
            cpus: cpus.to_vec(),
            watches: Vec::new(),
            worst: worst.max(1),
            threshold,
            own,
            totals: false,
            across: false,
            pending: None,
            remote: None,
            inst,
            trigger: None,
            reader_cpus: None,
            notes,
        })
    }

    /// `--explain-stacks`: the kernel stack of the task on a measuring CPU
    /// each time one of its threads is woken there while a task runs (a
    /// `stacktrace` trigger on the threads' `sched_wakeup`, set once their
    /// ids are known), kept on the part of that task.
    pub fn stacks(&mut self) -> Result<()> {
        if !self.dec.stacks {
            return Err(Error::env(format!(
                "--explain-stacks needs the {} event of stacktrace triggers, which this kernel's tracefs does not offer (CONFIG_STACKTRACE)",
                super::events::STACK
            )));
        }
        self.trigger = Some(Trigger {
            inst: self.inst.clone(),
            tids: Vec::new(),
            error: None,
        });
        self.notes.push(format!(
            "--explain-stacks: the kernel stack of the task on the CPU when a measuring thread was woken there (a stacktrace trigger on sched_wakeup, {}), symbols from {}",
            TRIGGER,
            super::symbols::KALLSYMS
        ));
        Ok(())
    }

    /// The watched threads may be woken by one another across the
    /// measuring CPUs: while an interval waits, every measuring CPU's trace
    /// is read, not only its own CPU's.
    pub fn read_across(&mut self) {
        self.across = true;
    }

    /// Run the reader on `cpus` (all traced: the threads it explains keep
    /// to others).
    pub fn reader_on(&mut self, cpus: Vec<usize>) {
        self.reader_cpus = Some(cpus);
    }

    /// Attribute every interval the threads hand over, not only the worst,
    /// and sum them per CPU by cause (`details.explain.totals`).
    pub fn total_every_interval(&mut self) {
        self.totals = true;
    }

    /// The intervals start before the thread's wake-up is due (a packet's
    /// arrival, a wake call): `name` is what the CPU's time before the
    /// wake-up was when no IRQ or softirq took it ([`Interval::pending`]).
    /// Such a wake-up often comes from another CPU, where the kernel traces
    /// it: those of the measuring CPUs' threads are read there too.
    pub fn pending(mut self, name: &'static str) -> Result<Explain> {
        self.pending = Some(name);
        let others: Vec<usize> = crate::sysinfo::online_cpus()
            .into_iter()
            .filter(|c| !self.cpus.contains(c))
            .collect();
        if others.is_empty() {
            return Ok(self);
        }
        let mask = tracefs::cpumask(&others);
        let filter = self
            .cpus
            .iter()
            .map(|c| format!("target_cpu == {c}"))
            .collect::<Vec<_>>()
            .join(" || ");
        let name = format!("rtlat-{}-wakeups", std::process::id());
        let settings = [
            ("buffer_size_kb", "256"),
            ("tracing_cpumask", mask.as_str()),
            ("events/sched/sched_wakeup/filter", filter.as_str()),
            ("events/sched/sched_wakeup/enable", "1"),
        ];
        let inst = instance::open_as(&mut self.session, &name, &settings)?;
        self.notes.push(format!(
            "--explain: the wake-ups that CPU(s) {} do of the measuring threads are read from tracefs instance {name}",
            crate::units::format_cpu_list(&others)
        ));
        self.remote = Some(
            RawPipes::open(&inst, &others).map_err(|e| tracefs_error("open trace_pipe_raw", e))?,
        );
        Ok(self)
    }

    /// The tap of a measuring thread named `name` on `cpu`, room for
    /// `capacity` intervals between the reader's rounds; `period_ns` when
    /// it wakes periodically.
    pub fn watch(
        &mut self,
        name: &str,
        cpu: usize,
        capacity: usize,
        period_ns: Option<u64>,
    ) -> Arc<Tap> {
        self.watch_tap(name, cpu, Tap::new(capacity), period_ns)
    }

    /// The tap of the threads another reader follows on `cpu` (`rtlat
    /// watch`'s), each record naming its thread; room for `capacity`.
    pub fn watch_threads(&mut self, name: &str, cpu: usize, capacity: usize) -> Arc<Tap> {
        self.watch_tap(name, cpu, Tap::of_threads(capacity), None)
    }

    fn watch_tap(&mut self, name: &str, cpu: usize, tap: Tap, period_ns: Option<u64>) -> Arc<Tap> {
        let tap = Arc::new(tap);
        self.watches.push(Watch {
            name: name.to_string(),
            cpu,
            tap: Arc::clone(&tap),
            period_ns,
        });
        tap
    }

    /// The reader ([`TraceReader`]) among `tracing`'s, and the session
    /// kept until the run's end.
    pub fn add_to(self, tracing: &mut Tracing) {
        let Explain {
            session,
            pipes,
            dec,
            cpus,
            watches,
            worst,
            threshold,
            own,
            totals,
            across,
            pending,
            remote,
            trigger,
            reader_cpus,
            ..
        } = self;
        let others: Vec<usize> = reader_cpus.unwrap_or_else(|| {
            crate::sysinfo::online_cpus()
                .into_iter()
                .filter(|c| !cpus.contains(c))
                .collect()
        });
        let sums = totals.then(|| cpus.iter().map(|&c| CpuTotals::new(c)).collect());
        let mut r = TraceReader::new(
            Box::new(pipes),
            dec,
            cpus,
            watches,
            (worst, threshold, own, pending),
        );
        r.remote = remote.map(|p| Box::new(p) as Box<dyn crate::trace::Pages>);
        r.totals = sums.unwrap_or_default();
        r.across = across;
        tracing.keep(session);
        tracing.add(Box::new(Reader { r, others, trigger }));
    }
}

/// Where the stacktrace trigger goes, relative to the instance.
const TRIGGER: &str = "events/sched/sched_wakeup/trigger";

/// The stacktrace trigger on the wake-ups of the measuring threads, by
/// thread id: only those that find a task on the CPU (not the idle task),
/// where the stack tells what that task was doing. The unwinding runs in
/// the wake-up's own path, before the thread runs: what it costs is paid
/// only where a task already held the CPU.
struct Trigger {
    inst: PathBuf,
    /// The threads the trigger is set for.
    tids: Vec<i32>,
    /// Why it could not be set.
    error: Option<String>,
}

/// The trigger for the wake-ups of `tids`.
fn trigger_for(tids: &[i32]) -> String {
    let pids: Vec<String> = tids.iter().map(|t| format!("pid == {t}")).collect();
    format!("stacktrace if ({}) && common_pid != 0", pids.join(" || "))
}

impl Trigger {
    /// Set the trigger for `tids`, the threads known so far.
    fn follow(&mut self, tids: &[i32]) {
        if tids.is_empty() || tids == self.tids || self.error.is_some() {
            return;
        }
        let set = || -> std::io::Result<()> {
            if !self.tids.is_empty() {
                tracefs::write(&self.inst, TRIGGER, "!stacktrace")?;
            }
            tracefs::write(&self.inst, TRIGGER, &trigger_for(tids))
        };
        match set() {
            Ok(()) => self.tids = tids.to_vec(),
            Err(e) => self.error = Some(e.to_string()),
        }
    }
}

/// `--explain`'s reader thread.
struct Reader {
    r: TraceReader,
    /// The CPUs not measured, where the reader keeps to.
    others: Vec<usize>,
    trigger: Option<Trigger>,
}

impl Tracer for Reader {
    fn name(&self) -> String {
        "rtlat-explain".into()
    }

    fn begin(&mut self, start: u64) {
        // The reader must not compete with the threads it watches, nor add
        // its own switches and cache misses to their CPUs' (with every CPU
        // measured there is nowhere else to go).
        let _ = sched::set_current(Sched::Other);
        if !self.others.is_empty() {
            let _ = sched::confine_current(&self.others);
        }
        self.r.started(start);
    }

    fn round(&mut self, now: u64, _stop: &StopFlag) -> Round {
        if let Some(t) = self.trigger.as_mut() {
            t.follow(&self.r.tids());
        }
        self.r.round(now)
    }

    fn end(self: Box<Self>) -> (Option<BreakEvent>, Finish) {
        let (mut cases, mut d) = self.r.finish();
        let mut stack_notes = Vec::new();
        if let Some(t) = &self.trigger {
            if let Some(e) = &t.error {
                stack_notes.push(format!(
                    "--explain-stacks: the stacktrace trigger could not be set: {e}"
                ));
            }
            // The core kernel's symbols of an earlier run of this boot,
            // else kept from this one's read of /proc/kallsyms.
            let core = super::symcache::Kept::open();
            let save = |c: &super::symcache::Core| {
                let _ = c.save();
            };
            let kept = match &core {
                Some(c) => super::symbols::Keep::Table(c),
                None => super::symbols::Keep::Save(&save),
            };
            if super::symbols::name_stacks(&mut cases, super::symbols::kallsyms, kept) {
                stack_notes.push(format!(
                    "--explain-stacks: {} hides the kernel's addresses from this user (kptr_restrict): the stacks are hexadecimal addresses",
                    super::symbols::KALLSYMS
                ));
            }
        }
        let finish = Box::new(move |result: &mut RunResult, problems: &[String]| {
            result.notes.append(&mut stack_notes);
            d.restore_problems.extend_from_slice(problems);
            if d.lost_events > 0 {
                result.notes.push(format!(
                    "--explain: the kernel's trace buffers lost {} events; an interval they fell in may be explained wrongly",
                    d.lost_events
                ));
            }
            if d.overwritten > 0 {
                result.notes.push(format!(
                    "--explain: the reader fell behind: {} explained interval(s) lost their events to newer ones before it read them, or waited too long for them, shown as \"{}\" or \"{}\"",
                    d.overwritten,
                    super::attribute::OVERWRITTEN,
                    super::attribute::NOT_READ
                ));
            }
            result.explained = cases;
            let w = Wrapped { explain: d };
            result
                .details
                .extend(crate::result::details::Details::to_map(&w));
        });
        (None, finish)
    }
}
