//! `rtlat load SPEC`: the loads on their own, their rates printed every
//! interval and in a table at the end.

use super::report::table;
use super::{host, mono_ns, LoadOptions, LoadSpec, RunningLoads};
use crate::error::{Error, Outcome, Result};
use crate::sys::signals::{SignalWatch, StopFlag};
use crate::units::{format_cpu_list, human_duration};
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

fn write_json(path: &std::path::Path, doc: &Value) -> Result<()> {
    crate::outfile::write_with(path, |w| {
        serde_json::to_writer_pretty(&mut *w, doc).map_err(std::io::Error::other)
    })
    .map_err(|e| crate::outfile::write_error(path, e))
}

/// A validated `rtlat load` command.
#[derive(Debug, Clone)]
pub struct LoadCommand {
    pub spec: LoadSpec,
    pub options: LoadOptions,
    pub duration: Option<u64>,
    /// How often the achieved rates are printed (ns).
    pub interval: u64,
    pub quiet: bool,
    pub json: Option<PathBuf>,
    /// Run as the load host of another rtlat process, dying with `parent`.
    pub serve: bool,
    pub parent: Option<u32>,
}

/// `rtlat load SPEC`: start the loads, print their rates every interval and at the end.
pub fn run(args: &LoadCommand, argv: Vec<String>) -> Result<Outcome> {
    let (spec, opts) = (&args.spec, &args.options);
    if args.serve {
        return host::serve(spec, opts, args.parent);
    }
    // Checked and locked before the loads start, until the last write.
    let _output = args
        .json
        .as_deref()
        .map(crate::outfile::checked)
        .transpose()?;
    let stop = StopFlag::default();
    let watch = SignalWatch::start(stop.clone())
        .map_err(|e| Error::env(format!("cannot watch for signals: {e}")).because(e))?;
    let cpus = opts
        .cpus
        .clone()
        .unwrap_or_else(crate::sysinfo::online_cpus);
    let loads = RunningLoads::start(spec, opts)?;
    let t0 = mono_ns();
    let mut out = std::io::stdout();
    if !args.quiet {
        let until = args.duration.map_or("until interrupted".to_string(), |d| {
            format!("for {}", human_duration(d))
        });
        let _ = writeln!(
            out,
            "rtlat load: {} on CPU(s) {} at SCHED_OTHER, {until}",
            spec.text,
            format_cpu_list(&cpus)
        );
    }
    let mut next_print = t0 + args.interval;
    let reason = loop {
        std::thread::sleep(Duration::from_millis(50));
        let now = mono_ns();
        if let Some(sig) = watch.caught() {
            break crate::sys::signals::name(sig);
        }
        if args.duration.is_some_and(|d| now - t0 >= d) {
            break "duration reached";
        }
        if loads.has_ended() {
            break "the load process ended";
        }
        if now >= next_print {
            next_print += args.interval;
            if !args.quiet {
                let t = (now - t0) as f64 / 1e9;
                let _ = writeln!(out, "t={t:.1}s {}", loads.rates_line());
            }
        }
    };
    let elapsed = mono_ns() - t0;
    let records = loads.stop();
    drop(watch);
    let _ = write!(out, "{}", table(&records));
    let _ = writeln!(
        out,
        "rtlat load: stopped after {:.3}s ({reason}); rates are averages over each load's run",
        elapsed as f64 / 1e9
    );
    if let Some(path) = &args.json {
        let doc = json!({
            "command_line": argv,
            "spec": spec.text,
            "load_cpus": cpus,
            "duration_ns": elapsed,
            "ended_by": reason,
            "loads": records,
        });
        write_json(path, &doc)?;
    }
    Ok(Outcome::Success)
}
