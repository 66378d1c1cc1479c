//! `timers`: an interrupt storm. N threads each wake on an absolute periodic
//! timer, phases spread over the period and timer slack 1 ns (SCHED_OTHER
//! threads otherwise get 50 µs of slack, which lets the kernel merge expiries).

use super::spec::{LoadKind, TimersParams};
use super::worker::{Body, Pool, WorkerCtx};
use super::{Load, LoadContext, Progress, RateUnit};
use crate::error::Result;
use crate::sys::{self, clock};
use serde_json::{Map, Value};

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
    fn name(&self) -> &'static str {
        "timers"
    }
    fn params(&self) -> Map<String, Value> {
        let mut p = LoadKind::Timers(self.params.clone()).params();
        p.insert("timer_slack_ns".into(), 1.into());
        p
    }
    fn workers(&self) -> usize {
        self.params.threads
    }
    fn rate_unit(&self) -> RateUnit {
        RateUnit::Ops
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
    fn progress(&mut self) -> Progress {
        Progress::of(self.pool.as_mut().map(Pool::totals).unwrap_or_default())
    }
    fn stop(&mut self) -> Progress {
        Progress::of(self.pool.as_mut().map(Pool::stop).unwrap_or_default())
    }
}
