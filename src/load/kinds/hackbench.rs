//! `hackbench`: the scheduler and IPC load of rt-tests' hackbench. Each group
//! has `fds` receivers, each with its own socketpair (or pipe), and `fds`
//! senders that write `size`-byte messages (default 100) to every receiver of
//! their group, round robin. As in rt-tests, tasks are processes by default
//! (`mode=thread` for threads). Unlike rt-tests, which stops after `loops`
//! messages, the load runs until stopped; the rate counts messages received.

use crate::error::{Error, Result};
use crate::load::args::{key_count, key_size, object, set, ArgResult, Args, LoadShape};
use crate::load::worker::{Body, Failure, Pool, PoolTotals, Reading, WorkerCtx};
use crate::load::{About, Load, LoadContext, Progress};
use crate::sys::process::{self, Exit, Pid, Task};
use crate::sys::shm::SharedWords;
use serde_json::{json, Map, Value};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ipc {
    Socket,
    Pipe,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskMode {
    Process,
    Thread,
}

/// `hackbench[:GROUPS][:fds=N][:size=BYTES][:ipc=socket|pipe][:mode=process|thread]`.
#[derive(Debug, Clone, PartialEq)]
pub struct HackbenchParams {
    pub groups: usize,
    /// Senders and receivers per group (rt-tests `-f`).
    pub fds: usize,
    /// Message size in bytes (rt-tests `-s`).
    pub message: usize,
    pub ipc: Ipc,
    pub mode: TaskMode,
}

impl HackbenchParams {
    /// Every parameter, for the result.
    pub fn to_map(&self) -> Map<String, Value> {
        object(json!({
            "groups": self.groups, "fds": self.fds, "message_bytes": self.message,
            "ipc": match self.ipc { Ipc::Socket => "socket", Ipc::Pipe => "pipe" },
            "mode": match self.mode { TaskMode::Process => "process", TaskMode::Thread => "thread" },
        }))
    }
}

pub const KIND: LoadShape =
    LoadShape::new("hackbench", "hackbench:4 or hackbench:4:fds=10").counting("group count");

pub fn parse(mut a: Args<'_>) -> ArgResult<HackbenchParams> {
    let (mut fds, mut message, mut ipc, mut mode) = (None, None, None, None);
    for (k, v) in std::mem::take(&mut a.keys) {
        match k {
            "groups" => a.set_count(k, v, 1000)?,
            "fds" => set(&mut fds, key_count(k, v, 1000)?, k)?,
            "size" => {
                let s = key_size(k, v)?;
                if s == 0 || s > process::MAX_MESSAGE as u64 {
                    return Err(format!("size={v}: messages are 1 byte to 64K"));
                }
                set(&mut message, s as usize, k)?
            }
            "ipc" => match v {
                "socket" => set(&mut ipc, Ipc::Socket, k)?,
                "pipe" => set(&mut ipc, Ipc::Pipe, k)?,
                _ => return Err(format!("ipc='{v}': use ipc=socket or ipc=pipe")),
            },
            "mode" => match v {
                "process" => set(&mut mode, TaskMode::Process, k)?,
                "thread" => set(&mut mode, TaskMode::Thread, k)?,
                _ => return Err(format!("mode='{v}': use mode=process or mode=thread")),
            },
            _ => return Err(a.unknown_key(k, "groups, fds, size, ipc, mode")),
        }
    }
    let groups = a.count.unwrap_or(10);
    let fds = fds.unwrap_or(20);
    if groups * fds * 2 > 20_000 {
        return Err(format!(
            "{groups} groups of {fds} senders and {fds} receivers is more than 20000 tasks"
        ));
    }
    let pid_max = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok());
    if let Some(pid_max) = pid_max.filter(|&m| groups * fds * 2 > m / 2) {
        return Err(format!(
            "{groups} groups of {fds} senders and {fds} receivers need {} tasks, more than half of this system's pid_max ({pid_max}); use fewer groups or fds",
            groups * fds * 2
        ));
    }
    Ok(HackbenchParams {
        groups,
        fds,
        message: message.unwrap_or(100),
        ipc: ipc.unwrap_or(Ipc::Socket),
        mode: mode.unwrap_or(TaskMode::Process),
    })
}

pub struct HackbenchLoad {
    params: HackbenchParams,
    run: Option<Run>,
}

enum Run {
    Processes(Processes),
    Threads { senders: Pool, receivers: Pool },
}

/// A forked task (killed and reaped when dropped).
struct Child {
    index: usize,
    process: process::Child,
    receiver: Option<usize>,
    cpu_ns: u64,
}

struct Processes {
    counters: SharedWords,
    /// Per receiver: the last counter value read and the running total (the counters wrap).
    seen: Vec<(u32, u64)>,
    children: Vec<Child>,
    failed: Vec<Failure>,
}

impl HackbenchLoad {
    pub fn new(params: HackbenchParams) -> Self {
        HackbenchLoad { params, run: None }
    }
}

/// A connected pair: (read end, write end).
fn channel(ipc: Ipc) -> std::io::Result<(OwnedFd, OwnedFd)> {
    match ipc {
        Ipc::Socket => {
            let (a, b) = std::os::unix::net::UnixStream::pair()?;
            Ok((a.into(), b.into()))
        }
        Ipc::Pipe => process::pipe(),
    }
}

impl Processes {
    fn start(p: &HackbenchParams) -> Result<Processes> {
        let receivers = p.groups * p.fds;
        let counters = SharedWords::new(receivers).map_err(|e| {
            Error::env(format!("hackbench: cannot map shared counters: {e}")).because(e)
        })?;
        let mut run = Processes {
            counters,
            seen: vec![(0, 0); receivers],
            children: Vec::new(),
            failed: Vec::new(),
        };
        let me = std::process::id() as Pid;
        let null = File::options()
            .read(true)
            .write(true)
            .open("/dev/null")
            .map_err(|e| Error::env(format!("hackbench: cannot open /dev/null: {e}")).because(e))?;
        let message = vec![0x5au8; p.message];
        let mut index = 0;
        for g in 0..p.groups {
            let mut ins = Vec::new();
            let mut outs = Vec::new();
            for _ in 0..p.fds {
                let (r, w) = channel(p.ipc)
                    .map_err(|e| Error::env(format!("hackbench: cannot create a channel: {e}; raise 'ulimit -n' or use fewer groups")).because(e))?;
                ins.push(r);
                outs.push(w);
            }
            for (r, input) in ins.iter().enumerate() {
                let receiver = g * p.fds + r;
                let task = Task::Receiver {
                    input: input.as_raw_fd(),
                    message_size: p.message,
                    counter: run.counters.get(receiver),
                };
                let forked = process::fork_task(&task, c"rtlat-hackbench", null.as_fd(), me);
                run.add(index, forked, Some(receiver));
                index += 1;
            }
            let out: Vec<i32> = outs.iter().map(AsRawFd::as_raw_fd).collect();
            for _ in 0..p.fds {
                let task = Task::Sender {
                    out: &out,
                    message: &message,
                };
                let forked = process::fork_task(&task, c"rtlat-hackbench", null.as_fd(), me);
                run.add(index, forked, None);
                index += 1;
            }
            // The children hold their copies; later groups need not inherit these.
            drop((ins, outs));
        }
        Ok(run)
    }

    fn add(
        &mut self,
        index: usize,
        forked: std::io::Result<process::Child>,
        receiver: Option<usize>,
    ) {
        match forked {
            Ok(process) => self.children.push(Child {
                index,
                process,
                receiver,
                cpu_ns: 0,
            }),
            Err(e) => self
                .failed
                .push(Failure::start(index, format!("fork failed: {e}"))),
        }
    }

    fn totals(&mut self, stopping: bool) -> PoolTotals {
        for c in self.children.iter_mut().filter(|c| c.process.running()) {
            if stopping {
                if let Ok(r) = c.process.kill() {
                    c.cpu_ns = r.cpu_ns;
                }
                continue;
            }
            match c.process.try_reap() {
                Ok(Some(r)) => {
                    c.cpu_ns = r.cpu_ns;
                    let what = if c.receiver.is_some() {
                        "receiver"
                    } else {
                        "sender"
                    };
                    let reason = match r.exit {
                        Exit::Code(1) => format!("{what} lost its peers"),
                        e => format!("{what} ended: {e}"),
                    };
                    self.failed.push(Failure::died(c.index, reason));
                }
                Ok(None) => {
                    if let Some(ns) = process::process_cpu_ns(c.process.pid()) {
                        c.cpu_ns = ns;
                    }
                }
                Err(_) => {} // no longer running: never waited for again
            }
        }
        let mut ops = 0;
        for (i, (last, total)) in self.seen.iter_mut().enumerate() {
            let now = self
                .counters
                .get(i)
                .load(std::sync::atomic::Ordering::Relaxed);
            *total += now.wrapping_sub(*last) as u64;
            *last = now;
            ops += *total;
        }
        PoolTotals {
            ops,
            cpu_ns: self.children.iter().map(|c| c.cpu_ns).sum(),
            started: self.children.len(),
            failed: self.failed.clone(),
        }
    }
}

fn sender(
    ctx: &WorkerCtx,
    outs: Arc<Vec<File>>,
    message: usize,
) -> std::result::Result<(), String> {
    let data = vec![0x5au8; message];
    while !ctx.stopping() {
        for mut f in outs.iter() {
            f.write_all(&data)
                .map_err(|e| format!("sender lost its peers: {e}"))?;
        }
    }
    Ok(())
}

fn receiver(ctx: &WorkerCtx, mut input: File, message: usize) -> std::result::Result<(), String> {
    let mut buf = vec![0u8; message];
    let (mut pending, mut messages) = (0usize, 0u64);
    loop {
        match input.read(&mut buf) {
            // All senders are gone: the load is stopping.
            Ok(0) => return Ok(()),
            Ok(n) => {
                pending += n;
                messages += (pending / message) as u64;
                pending %= message;
                ctx.tally.publish(messages, 0);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("receiver failed: {e}")),
        }
    }
}

fn start_threads(p: &HackbenchParams, cpus: Option<&[usize]>) -> Result<Run> {
    let mut senders: Vec<Body> = Vec::new();
    let mut receivers: Vec<Body> = Vec::new();
    let message = p.message;
    for _ in 0..p.groups {
        let mut outs = Vec::new();
        for _ in 0..p.fds {
            let (r, w) = channel(p.ipc)
                .map_err(|e| Error::env(format!("hackbench: cannot create a channel: {e}; raise 'ulimit -n' or use fewer groups")).because(e))?;
            let input = File::from(r);
            receivers.push(Box::new(move |ctx: &WorkerCtx| {
                receiver(ctx, input, message)
            }));
            outs.push(File::from(w));
        }
        let outs = Arc::new(outs);
        for _ in 0..p.fds {
            let outs = Arc::clone(&outs);
            senders.push(Box::new(move |ctx: &WorkerCtx| sender(ctx, outs, message)));
        }
    }
    // Receivers first, so no sender writes into a channel nobody reads.
    let receivers = Pool::start("ld-hbr", cpus, receivers);
    let senders = Pool::start("ld-hbs", cpus, senders);
    Ok(Run::Threads { senders, receivers })
}

fn merge(r: PoolTotals, s: PoolTotals) -> PoolTotals {
    let mut failed = r.failed;
    failed.extend(s.failed);
    PoolTotals {
        ops: r.ops,
        cpu_ns: r.cpu_ns + s.cpu_ns,
        started: r.started + s.started,
        failed,
    }
}

impl Load for HackbenchLoad {
    fn about(&self) -> About {
        let workers = self.params.groups * self.params.fds * 2;
        About::ops("hackbench", workers, self.params.to_map())
    }
    fn start(&mut self, ctx: &LoadContext) -> Result<()> {
        self.run = Some(match self.params.mode {
            TaskMode::Process => Run::Processes(Processes::start(&self.params)?),
            TaskMode::Thread => start_threads(&self.params, ctx.cpus.as_deref())?,
        });
        Ok(())
    }
    fn read(&mut self, reading: Reading) -> Progress {
        let last = reading == Reading::Final;
        Progress::of(match &mut self.run {
            None => PoolTotals::default(),
            Some(Run::Processes(p)) => p.totals(last),
            Some(Run::Threads { senders, receivers }) if last => {
                // Senders stop first; their channels then close and the receivers read to the end.
                let s = senders.stop();
                let r = receivers.stop();
                merge(r, s)
            }
            Some(Run::Threads { senders, receivers }) => {
                merge(receivers.totals(), senders.totals())
            }
        })
    }
}
