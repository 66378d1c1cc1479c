//! `cpu`: computation on N workers (integer and floating point, no memory traffic).

use crate::error::Result;
use crate::load::args::{object, ArgResult, Args, LoadShape};
use crate::load::worker::{Body, Pool, Reading, WorkerCtx};
use crate::load::{About, Load, LoadContext, Progress};
use serde_json::{json, Map, Value};

/// `cpu[:N]` [default: one worker per load CPU].
#[derive(Debug, Clone, PartialEq)]
pub struct CpuParams {
    pub workers: Option<usize>,
}

impl CpuParams {
    /// Every parameter, for the result.
    pub fn to_map(&self) -> Map<String, Value> {
        object(json!({"workers": self.workers}))
    }
}

pub const KIND: LoadShape = LoadShape::new("cpu", "cpu:2");

pub fn parse(mut a: Args<'_>) -> ArgResult<CpuParams> {
    a.workers_only("workers")?;
    Ok(CpuParams { workers: a.count })
}

/// Iterations of the kernel in one counted operation.
pub const ROUND: u32 = 4096;

pub struct CpuLoad {
    params: CpuParams,
    workers: usize,
    pool: Option<Pool>,
}

impl CpuLoad {
    pub fn new(params: CpuParams) -> Self {
        CpuLoad {
            workers: params.workers.unwrap_or(0),
            params,
            pool: None,
        }
    }
}

/// One round: a xorshift generator feeding a floating-point recurrence, so both
/// the integer and the FP units work and nothing can be folded at compile time.
#[inline(never)]
pub fn round(seed: u64) -> u64 {
    let mut x = seed | 1;
    let mut f = 1.0f64;
    for _ in 0..ROUND {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        f = f * 1.000_001 + (x & 0xff) as f64 * 1e-9;
        if f > 1e6 {
            f = f.sqrt();
        }
    }
    x ^ f.to_bits()
}

fn body(ctx: &WorkerCtx) -> std::result::Result<(), String> {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ ctx.index as u64;
    let mut ops = 0u64;
    while !ctx.stopping() {
        seed = std::hint::black_box(round(seed));
        ops += 1;
        ctx.tally.publish(ops, 0);
    }
    Ok(())
}

impl Load for CpuLoad {
    fn about(&self) -> About {
        About::ops("cpu", self.workers, self.params.to_map())
            .with("workers", self.workers)
            .with("iterations_per_op", ROUND)
    }
    fn start(&mut self, ctx: &LoadContext) -> Result<()> {
        if self.params.workers.is_none() {
            self.workers = ctx.load_cpus().len().max(1);
        }
        let bodies: Vec<Body> = (0..self.workers).map(|_| Box::new(body) as Body).collect();
        self.pool = Some(Pool::start("ld-cpu", ctx.cpus.as_deref(), bodies));
        Ok(())
    }
    fn read(&mut self, reading: Reading) -> Progress {
        Progress::of(Pool::read(&mut self.pool, reading))
    }
}
