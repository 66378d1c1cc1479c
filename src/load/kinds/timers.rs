//! `timers`: an interrupt storm. N threads each wake on an absolute periodic
//! timer, phases spread over the period and timer slack 1 ns (SCHED_OTHER
//! threads otherwise get 50 µs of slack, which lets the kernel merge expiries).

use crate::error::Result;
use crate::load::args::{object, set, ArgResult, Args, LoadShape, MAX_WORKERS};
use crate::load::worker::{Body, Pool, Reading, WorkerCtx};
use crate::load::{About, Load, LoadContext, Progress};
use crate::sys::{self, clock};
use serde_json::{json, Map, Value};

/// `timers[:N][:PERIOD]`: N threads, each woken every PERIOD.
#[derive(Debug, Clone, PartialEq)]
pub struct TimersParams {
    pub threads: usize,
    pub period_ns: u64,
}

pub const DEFAULT_TIMER_THREADS: usize = 8;
pub const DEFAULT_TIMER_PERIOD_NS: u64 = 100_000;

impl TimersParams {
    /// Every parameter, for the result.
    pub fn to_map(&self) -> Map<String, Value> {
        object(json!({"threads": self.threads, "period_ns": self.period_ns}))
    }
}

pub const KIND: LoadShape = LoadShape::new("timers", "timers:8 or timers:8:50us")
    .counting("thread count")
    .periodic();

pub fn parse(mut a: Args<'_>) -> ArgResult<TimersParams> {
    for (k, v) in std::mem::take(&mut a.keys) {
        match k {
            "threads" | "workers" => a.set_count(k, v, MAX_WORKERS)?,
            "period" => set(
                &mut a.period,
                crate::units::parse_duration_ns(v).map_err(|e| format!("period: {e}"))?,
                "period",
            )?,
            _ => return Err(a.unknown_key(k, "threads, period")),
        }
    }
    let period_ns = a.period.unwrap_or(DEFAULT_TIMER_PERIOD_NS);
    if !(1_000..=1_000_000_000).contains(&period_ns) {
        return Err("the timer period must be 1us to 1s".into());
    }
    Ok(TimersParams {
        threads: a.count.unwrap_or(DEFAULT_TIMER_THREADS),
        period_ns,
    })
}

pub struct TimersLoad {
    params: TimersParams,
    pool: Option<Pool>,
}

impl TimersLoad {
    pub fn new(params: TimersParams) -> Self {
        TimersLoad { params, pool: None }
    }
}

fn body(ctx: &WorkerCtx, period: u64, phase: u64) -> std::result::Result<(), String> {
    sys::process::set_timer_slack_ns(1).map_err(|e| format!("cannot set the timer slack: {e}"))?;
    let c = libc::CLOCK_MONOTONIC;
    let mut next = clock::now_ns(c) + period + phase;
    let mut wakeups = 0u64;
    while !ctx.stopping() {
        clock::sleep_until(c, next);
        wakeups += 1;
        ctx.tally.publish(wakeups, 0);
        next += period;
        let now = clock::now_ns(c);
        if now >= next {
            // Late by a period or more: skip the missed expiries, stay on the grid.
            next += (now - next) / period * period + period;
        }
    }
    Ok(())
}

impl Load for TimersLoad {
    fn about(&self) -> About {
        About::ops("timers", self.params.threads, self.params.to_map()).with("timer_slack_ns", 1)
    }
    fn start(&mut self, ctx: &LoadContext) -> Result<()> {
        let (n, period) = (self.params.threads as u64, self.params.period_ns);
        let bodies: Vec<Body> = (0..n)
            .map(|i| {
                let phase = period * i / n;
                Box::new(move |ctx: &WorkerCtx| body(ctx, period, phase)) as Body
            })
            .collect();
        self.pool = Some(Pool::start("ld-tmr", ctx.cpus.as_deref(), bodies));
        Ok(())
    }
    fn read(&mut self, reading: Reading) -> Progress {
        Progress::of(Pool::read(&mut self.pool, reading))
    }
}
