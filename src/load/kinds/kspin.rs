//! `kspin`: a known cause of latency. Each worker, every period, has the
//! kernel spin on its CPU for a set time with preemption off (or interrupts
//! off), through the rtlat responder module of kmod/ (`/dev/rtlat-responder`),
//! as a driver holding a spinlock would. A real-time thread woken on that
//! CPU meanwhile runs only when the section ends: what `--explain` must name.

use crate::error::Result;
use crate::load::args::{ensure, object, set, ArgResult, Args, LoadShape, MAX_WORKERS};
use crate::load::worker::{Body, Pool, Reading, WorkerCtx};
use crate::load::{About, Load, LoadContext, Progress};
use crate::sys::clock;
use crate::sys::responder::{open_device, Responder, DEVICE, SPIN_MAX_NS};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::sync::Arc;

/// What is off during a section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Off {
    Preemption,
    Interrupts,
}

impl Off {
    pub fn name(self) -> &'static str {
        match self {
            Off::Preemption => "preempt",
            Off::Interrupts => "irqs",
        }
    }
}

/// `kspin[:PERIOD][:len=LEN][:off=preempt|irqs][:N]`.
#[derive(Debug, Clone, PartialEq)]
pub struct KspinParams {
    pub workers: usize,
    pub period_ns: u64,
    pub len_ns: u64,
    pub off: Off,
}

pub const DEFAULT_KSPIN_PERIOD_NS: u64 = 100_000_000;
pub const DEFAULT_KSPIN_LEN_NS: u64 = 1_000_000;

impl KspinParams {
    /// Every parameter, for the result.
    pub fn to_map(&self) -> Map<String, Value> {
        object(json!({
            "workers": self.workers,
            "period_ns": self.period_ns,
            "len_ns": self.len_ns,
            "off": self.off.name(),
        }))
    }
}

pub const KIND: LoadShape =
    LoadShape::new("kspin", "kspin:100ms:len=2ms or kspin:len=500us:off=irqs").periodic();

pub fn parse(mut a: Args<'_>) -> ArgResult<KspinParams> {
    let (mut len, mut off) = (None, None);
    for (k, v) in std::mem::take(&mut a.keys) {
        match k {
            "workers" => a.set_count(k, v, MAX_WORKERS)?,
            "period" => set(
                &mut a.period,
                crate::units::parse_duration_ns(v).map_err(|e| format!("period: {e}"))?,
                "period",
            )?,
            "len" => set(
                &mut len,
                crate::units::parse_duration_ns(v).map_err(|e| format!("len: {e}"))?,
                "len",
            )?,
            "off" => {
                let o = match v {
                    "preempt" => Off::Preemption,
                    "irqs" => Off::Interrupts,
                    _ => return Err(format!("off={v}: say off=preempt or off=irqs")),
                };
                set(&mut off, o, "off")?;
            }
            _ => return Err(a.unknown_key(k, "workers, period, len, off")),
        }
    }
    let period_ns = a.period.unwrap_or(DEFAULT_KSPIN_PERIOD_NS);
    let len_ns = len.unwrap_or(DEFAULT_KSPIN_LEN_NS);
    ensure((1_000..=SPIN_MAX_NS).contains(&len_ns), || {
        format!("len must be 1us to {}ms", SPIN_MAX_NS / 1_000_000)
    })?;
    ensure(period_ns <= 10_000_000_000, || {
        "the period must be at most 10s".into()
    })?;
    ensure(len_ns.saturating_mul(2) <= period_ns, || {
        "len must be at most half the period (the CPU must be left to the rest)".into()
    })?;
    Ok(KspinParams {
        workers: a.count.unwrap_or(1),
        period_ns,
        len_ns,
        off: off.unwrap_or(Off::Preemption),
    })
}

pub struct KspinLoad {
    params: KspinParams,
    pool: Option<Pool>,
}

impl KspinLoad {
    pub fn new(params: KspinParams) -> Self {
        KspinLoad { params, pool: None }
    }
}

fn body(
    ctx: &WorkerCtx,
    dev: &Responder,
    p: &KspinParams,
    phase: u64,
) -> std::result::Result<(), String> {
    let c = libc::CLOCK_MONOTONIC;
    let irqs = p.off == Off::Interrupts;
    let mut next = clock::now_ns(c) + p.period_ns + phase;
    let mut sections = 0u64;
    while !ctx.stopping() {
        clock::sleep_until(c, next);
        dev.spin(p.len_ns, irqs)
            .map_err(|e| format!("the responder refused a section: {e}"))?;
        sections += 1;
        ctx.tally.publish(sections, 0);
        next += p.period_ns;
        let now = clock::now_ns(c);
        if now >= next {
            // Late by a period or more: skip the missed sections, stay on the grid.
            next += (now - next) / p.period_ns * p.period_ns + p.period_ns;
        }
    }
    Ok(())
}

impl Load for KspinLoad {
    fn about(&self) -> About {
        About::ops("kspin", self.params.workers, self.params.to_map())
    }
    fn start(&mut self, ctx: &LoadContext) -> Result<()> {
        // One opener at a time: the workers share the device.
        let dev = Arc::new(open_device(Path::new(DEVICE), "the kspin load")?);
        let n = self.params.workers as u64;
        let bodies: Vec<Body> = (0..n)
            .map(|i| {
                let (dev, p) = (Arc::clone(&dev), self.params.clone());
                let phase = p.period_ns * i / n;
                Box::new(move |ctx: &WorkerCtx| body(ctx, &dev, &p, phase)) as Body
            })
            .collect();
        self.pool = Some(Pool::start("ld-ksp", ctx.cpus.as_deref(), bodies));
        Ok(())
    }
    fn read(&mut self, reading: Reading) -> Progress {
        Progress::of(Pool::read(&mut self.pool, reading))
    }
}
