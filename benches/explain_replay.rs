//! The on-demand reader of `--explain` on a machine of many CPUs, replayed
//! from recorded ring pages (tests/fixtures/trace/busy) in simulated time:
//! its CPU share with no new worst cases and as they come faster.
//!
//!     cargo bench --bench explain_replay --features replay [-- CPUS SAMPLES_PER_S SECONDS]
//!
//! Prints one row per candidate rate: the reader's share of one CPU, the
//! pages the buffers held and those read, and the intervals explained.

use rtlat::explain::replay::{replay, Machine};
use std::path::Path;

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let arg = |i: usize, d: u64| args.get(i).copied().unwrap_or(d);
    let (cpus, rate, seconds) = (arg(0, 128) as usize, arg(1, 10_000), arg(2, 60));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/trace/busy");
    println!(
        "{cpus} CPUs x {rate} samples/s, 15 events per sample, {seconds} s simulated, 2 MB buffer per CPU"
    );
    println!(
        "| new worst cases/s | reader CPU | pages written | pages read | decoded | intervals | explained | overwritten |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for candidates in [0.0, 1.0, 10.0, 100.0, 1000.0] {
        let setup = Machine {
            cpus,
            samples_per_s: rate,
            events_per_sample: 15,
            candidates_per_s: candidates,
            seconds,
            buffer_pages: 512,
        };
        let r = match replay(&root, &setup) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("explain_replay: {e}");
                std::process::exit(1);
            }
        };
        println!(
            "| {candidates} | {:.3} % | {} | {} | {} | {} | {} | {} |",
            100.0 * r.cpu_share(),
            r.pages_written,
            r.pages_read,
            r.pages_read - r.pages_skipped,
            r.intervals,
            r.explained,
            r.overwritten
        );
    }
}
