//! `--explain`'s tracefs set-up and its restore on the real tracefs: no
//! instance, no state file and no global setting left changed.

use crate::util::{need, Need};
use rtlat::explain::Explain;
use rtlat::sys::tracefs::Capabilities;
use rtlat::trace::tracefs;
use std::path::Path;

/// Global tracefs files a run of instances must leave as it found them.
const GLOBAL: &[&str] = &[
    "tracing_on",
    "current_tracer",
    "trace_clock",
    "buffer_size_kb",
    "buffer_total_size_kb",
    "set_event",
    "tracing_cpumask",
    "trace_options",
    "tracing_thresh",
    "events/enable",
    "events/sched/sched_switch/enable",
    "events/sched/sched_wakeup/enable",
    "events/sched/sched_wakeup/filter",
    "events/irq/enable",
    "events/power/cpu_idle/enable",
];

fn global(root: &Path) -> Vec<(&'static str, String)> {
    GLOBAL
        .iter()
        .map(|f| {
            let v = tracefs::read(root, f).unwrap_or_else(|e| format!("<{e}>"));
            (*f, v)
        })
        .collect()
}

fn instances(root: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root.join("instances"))
        .expect("instances/")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    v.sort();
    v
}

/// Why the global files may change under this test: another live rtlat
/// run's state file in /run/rtlat.
fn other_run() -> Option<String> {
    let me = std::process::id();
    std::fs::read_dir(tracefs::STATE_DIR)
        .ok()?
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .map(|t| tracefs::State::parse(&t).pid)
        .find(|&p| p != 0 && p != me && Path::new(&format!("/proc/{p}")).exists())
        .map(|p| {
            format!(
                "another rtlat run (pid {p}) uses tracefs: the global files may change under it"
            )
        })
}

// `--explain`'s set-up (its instance, and the wake-ups instance when
// another CPU is online) and its drop leave no instance, no state file
// and every global setting as it was (an unexpanded global buffer at the
// size it was to grow to, as the set-up's note says).
case!(
    explain_leaves_the_real_tracefs_as_it_found_it,
    [Root, Measuring],
    |_t| {
        let Some(root) = Capabilities::probe_or_mount().root else {
            need(Need::Provided(false, "tracefs (/sys/kernel/tracing)"));
            return;
        };
        // The tests that run rtlat with tracing take the same turn: none starts
        // an instance beside this one.
        if let Some(why) = other_run() {
            need(Need::Machine(false, &why));
            return;
        }
        let (before, listed) = (global(&root), instances(&root));
        let me = std::process::id();
        let state = Path::new(tracefs::STATE_DIR).join(format!("tracefs-{me}.state"));
        let cpus = rtlat::sysinfo::online_cpus();
        let e = Explain::begin(&cpus[..1], 1, None, "own").expect("begin");
        let e = if cpus.len() > 1 {
            e.pending("pending").expect("pending")
        } else {
            e
        };
        let inst = root.join(format!("instances/rtlat-{me}"));
        let read = |f: &str| tracefs::read(&inst, f).expect(f);
        assert!(read("trace_clock").contains("[mono]"));
        assert_eq!(read("events/sched/sched_switch/enable"), "1");
        let mask = u64::from_str_radix(&read("tracing_cpumask").replace(',', ""), 16);
        assert_eq!(mask, Ok(1 << cpus[0]), "the measured CPU only");
        assert!(state.exists());
        let wakeups = root.join(format!("instances/rtlat-{me}-wakeups"));
        assert_eq!(wakeups.is_dir(), cpus.len() > 1);
        drop(e);

        assert!(!inst.exists(), "{} left", inst.display());
        assert!(!wakeups.exists(), "{} left", wakeups.display());
        assert!(!state.exists(), "{} left", state.display());
        assert_eq!(instances(&root), listed);
        if let Some(why) = other_run() {
            need(Need::Machine(false, &why));
            return;
        }
        let want: Vec<(&str, String)> = before
            .into_iter()
            .map(|(f, v)| match tracefs::unexpanded_size(&v) {
                Some(kb) if f == "buffer_size_kb" => (f, kb.to_string()),
                _ => (f, v),
            })
            .collect();
        assert_eq!(global(&root), want);
    }
);
