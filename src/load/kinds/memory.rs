//! `memory`: cache and TLB thrash (the "calibrator" load). Each worker walks
//! its own working set (default 32 MiB, on small pages) one cache line per
//! access with a stride of a page plus a line (4160 bytes): every access lands
//! on another page and another cache set, the accesses are independent (the
//! CPU overlaps their misses) and each one is a read-modify-write, so lines are
//! dirtied and written back. The rate counts cache lines touched, in bytes/s.

use crate::error::{Error, Result};
use crate::load::args::{ensure, key_size, object, set, ArgResult, Args, LoadShape, MAX_WORKERS};
use crate::load::worker::{Body, Failure, Pool, Reading, WorkerCtx};
use crate::load::{About, Load, LoadContext, Progress};
use crate::sys::shm::PrivateBuffer;
use serde_json::{json, Map, Value};

/// `memory[:N][:SIZE][:stride=BYTES]`: N workers, each over its own SIZE working set.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryParams {
    pub workers: usize,
    pub size: u64,
    pub stride: u64,
}

pub const DEFAULT_MEMORY_SIZE: u64 = 32 << 20;
pub const DEFAULT_STRIDE: u64 = 4096 + 64;

impl MemoryParams {
    /// Every parameter, for the result.
    pub fn to_map(&self) -> Map<String, Value> {
        object(
            json!({"workers": self.workers, "size_bytes": self.size, "stride_bytes": self.stride}),
        )
    }
}

pub const KIND: LoadShape =
    LoadShape::new("memory", "memory:2, memory:32M or memory:2:64M").sized();

pub fn parse(mut a: Args<'_>) -> ArgResult<MemoryParams> {
    let mut stride = None;
    for (k, v) in std::mem::take(&mut a.keys) {
        match k {
            "workers" => a.set_count(k, v, MAX_WORKERS)?,
            "size" => set(&mut a.size, key_size(k, v)?, "size")?,
            "stride" => set(&mut stride, key_size(k, v)?, k)?,
            _ => return Err(a.unknown_key(k, "workers, size, stride")),
        }
    }
    let size = a.size.unwrap_or(DEFAULT_MEMORY_SIZE);
    ensure(size >= 64 << 10, || {
        format!("the working set must be at least 64K (got {size} bytes)")
    })?;
    ensure(size <= 1 << 40, || {
        "the working set is larger than 1 TiB".into()
    })?;
    let stride = stride.unwrap_or(DEFAULT_STRIDE);
    ensure((64..size).contains(&stride), || {
        format!("stride={stride}: the stride must be at least 64 bytes and below the size")
    })?;
    Ok(MemoryParams {
        workers: a.count.unwrap_or(1),
        size,
        stride,
    })
}

pub const LINE: u64 = 64;
const BATCH: u64 = 4096;

pub struct MemoryLoad {
    params: MemoryParams,
    pool: Option<Pool>,
    alloc_failed: Vec<Failure>,
}

impl MemoryLoad {
    pub fn new(params: MemoryParams) -> Self {
        MemoryLoad {
            params,
            pool: None,
            alloc_failed: Vec::new(),
        }
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Walk `words` with `stride` bytes between accesses until stopped.
fn walk(ctx: &WorkerCtx, words: &mut [u64], stride: u64) {
    let lines = (words.len() as u64 * 8 / LINE) as usize;
    let step = ((stride / LINE) as usize).clamp(1, lines - 1);
    // With a step that shares a factor with the line count, a cycle misses lines:
    // start the next cycle one line further.
    let cycles = gcd(step as u64, lines as u64) as usize;
    let cycle_len = lines / cycles;
    let per_line = (LINE / 8) as usize;
    let (mut idx, mut base, mut left) = (0usize, 0usize, cycle_len);
    let mut ops = 0u64;
    while !ctx.stopping() {
        for _ in 0..BATCH {
            let w = &mut words[idx * per_line];
            *w = w.wrapping_add(1);
            idx += step;
            if idx >= lines {
                idx -= lines;
            }
            left -= 1;
            if left == 0 {
                base = (base + 1) % cycles;
                idx = base;
                left = cycle_len;
            }
        }
        ops += BATCH;
        ctx.tally.publish(ops, 0);
    }
    std::hint::black_box(&words);
}

/// Bytes of memory the kernel says can be allocated without swapping.
fn available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

impl Load for MemoryLoad {
    fn about(&self) -> About {
        About::bytes("memory", self.params.workers, self.params.to_map()).with("line_bytes", LINE)
    }
    fn start(&mut self, ctx: &LoadContext) -> Result<()> {
        let total = self.params.size.saturating_mul(self.params.workers as u64);
        if let Some(avail) = available_bytes() {
            if total > avail / 10 * 9 {
                return Err(Error::env(format!(
                    "memory load: {} worker(s) x {} bytes exceed the memory available ({avail} bytes); use a smaller size or fewer workers",
                    self.params.workers, self.params.size
                )));
            }
        }
        let mut bodies: Vec<Body> = Vec::new();
        for i in 0..self.params.workers {
            match PrivateBuffer::new(self.params.size as usize) {
                Ok(mut buf) => {
                    let stride = self.params.stride;
                    bodies.push(Box::new(move |ctx: &WorkerCtx| {
                        walk(ctx, buf.words(), stride);
                        Ok(())
                    }));
                }
                Err(e) => self.alloc_failed.push(Failure::start(
                    i,
                    format!("cannot map {} bytes: {e}", self.params.size),
                )),
            }
        }
        self.pool = Some(Pool::start("ld-mem", ctx.cpus.as_deref(), bodies));
        Ok(())
    }
    fn read(&mut self, reading: Reading) -> Progress {
        let mut t = Pool::read(&mut self.pool, reading);
        t.failed.extend(self.alloc_failed.iter().cloned());
        let bytes = t.ops * LINE;
        Progress::of(t).with_bytes(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn the_walk_touches_every_line_once_per_pass() {
        for (size, stride) in [(1u64 << 16, 4160u64), (3 << 14, 128), (1 << 16, 64)] {
            let stop = Arc::new(AtomicBool::new(false));
            let tally = Arc::new(crate::load::worker::Tally::default());
            let ctx = WorkerCtx {
                index: 0,
                stop: Arc::clone(&stop),
                tally: Arc::clone(&tally),
            };
            let lines = size / LINE;
            // One batch is a whole number of passes when lines divides BATCH.
            let mut words = vec![0u64; (size / 8) as usize];
            let s2 = Arc::clone(&stop);
            let t2 = Arc::clone(&tally);
            // Stop after the first batch.
            let watcher = std::thread::spawn(move || {
                while t2.read().0 == 0 {
                    std::thread::yield_now();
                }
                s2.store(true, std::sync::atomic::Ordering::Relaxed);
            });
            walk(&ctx, &mut words, stride);
            watcher.join().unwrap();
            let ops = tally.read().0;
            assert_eq!(ops % BATCH, 0);
            let touched: u64 = words.iter().step_by(8).sum();
            assert_eq!(touched, ops, "every access is counted");
            let passes = ops / lines;
            let min = words.iter().step_by(8).min().unwrap();
            assert!(
                *min >= passes,
                "size {size} stride {stride}: a line was skipped"
            );
        }
    }
}
