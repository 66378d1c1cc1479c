//! cyclictest `--json=FILE`: written once at the end, hand-printed (keys
//! `"cmdline:"` and `"rt_test_version:"` with a colon inside, `-nan` averages
//! for threads without cycles), per thread `histogram` (bucket → count, only
//! with `-h N`), `cycles`, `min`, `max`, `avg`, `cpu`, `node`. No overflow
//! count: samples beyond the histogram are `cycles` minus its sum. Values are
//! µs, or ns with `-N` (`resolution_in_ns: 1`).

use super::json::{self, Node};
use super::{dates::parse_rfc2822, system, Imported, ParseError, Parsed, ThreadBuild};
use super::{detect, ImportFormat, Reader};
use crate::result::rfc3339_utc;
use crate::result::EndReason;

/// The value of an option in a command line: `-i1000`, `-i 1000`, `--interval=1000`, `--interval 1000`.
pub fn option<'a>(tokens: &[&'a str], short: &str, long: &str) -> Option<&'a str> {
    for (i, t) in tokens.iter().enumerate() {
        let next = || tokens.get(i + 1).copied();
        if !long.is_empty() {
            if let Some(v) = t.strip_prefix(long) {
                if let Some(v) = v.strip_prefix('=') {
                    return Some(v);
                }
                if v.is_empty() {
                    return next();
                }
            }
        }
        if !short.is_empty() {
            if let Some(v) = t.strip_prefix(short) {
                if v.is_empty() {
                    return next().filter(|n| !n.starts_with('-'));
                }
                if !t.starts_with("--") && v.bytes().all(|c| c.is_ascii_digit()) {
                    return Some(v);
                }
            }
        }
    }
    None
}

/// Whether a flag is present (`-m` or `--mlockall`, also inside `-mq`-style clusters of one-letter flags).
pub fn flag(tokens: &[&str], short: char, long: &str) -> bool {
    tokens.iter().skip(1).any(|t| {
        *t == long
            || (t.starts_with('-')
                && !t.starts_with("--")
                && t.len() > 1
                && t[1..].chars().all(|c| c.is_ascii_alphabetic())
                && t[1..].contains(short))
    })
}

/// cyclictest's `-D` duration: seconds, or with a suffix m, h, d.
fn duration_secs(v: &str) -> Option<u64> {
    let (num, mult) = match v.chars().last()? {
        's' => (&v[..v.len() - 1], 1),
        'm' => (&v[..v.len() - 1], 60),
        'h' => (&v[..v.len() - 1], 3600),
        'd' => (&v[..v.len() - 1], 86_400),
        _ => (v, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

/// Settings cyclictest's command line tells: period, priority, policy, mlock, loops, duration, histogram size.
pub struct Settings {
    pub period_us: u64,
    pub priority: i32,
    pub policy: String,
    pub mlock: bool,
    pub affinity: bool,
    pub loops: Option<u64>,
    pub duration_s: Option<u64>,
    pub histogram: Option<u64>,
    pub nsecs: bool,
    /// The option that leaves power management and /dev/cpu_dma_latency
    /// alone: `--laptop`, or `--default-system` (rteval passes it when it
    /// sets the idle states itself).
    pub pm_untouched: Option<&'static str>,
    /// `-d`: each thread's interval is this much longer than the one before
    /// (500 µs by default; cyclictest sets it to 0 with a histogram).
    pub distance_us: u64,
}

pub fn settings(cmdline: &str) -> Settings {
    let t: Vec<&str> = cmdline.split_whitespace().collect();
    let num = |short: &str, long: &str| option(&t, short, long).and_then(|v| v.parse::<u64>().ok());
    let priority = num("-p", "--priority").unwrap_or(0).min(99) as i32;
    let policy = option(&t, "", "--policy")
        .map(|p| match p {
            "fifo" => "fifo",
            "rr" => "rr",
            _ => "other",
        })
        .unwrap_or(if priority > 0 { "fifo" } else { "other" })
        .to_string();
    Settings {
        period_us: num("-i", "--interval").unwrap_or(1000),
        priority,
        policy,
        mlock: flag(&t, 'm', "--mlockall"),
        affinity: flag(&t, 'a', "--affinity") || option(&t, "-a", "--affinity").is_some(),
        loops: num("-l", "--loops").filter(|&l| l > 0),
        duration_s: option(&t, "-D", "--duration").and_then(duration_secs),
        histogram: num("-h", "--histogram").or_else(|| num("-H", "--histofall")),
        distance_us: if num("-h", "--histogram")
            .or_else(|| num("-H", "--histofall"))
            .is_some()
        {
            0
        } else {
            num("-d", "--distance").unwrap_or(500)
        },
        nsecs: flag(&t, 'N', "--nsecs"),
        pm_untouched: ["--laptop", "--default-system"]
            .into_iter()
            .find(|o| t.contains(o)),
    }
}

fn opt_str(root: &Node, keys: &[&str], what: &str) -> Parsed<Option<String>> {
    root.get_any(keys)
        .map(|n| n.str(what).map(str::to_string))
        .transpose()
}
/// cyclictest --json output.
pub static FORMAT: ImportFormat = ImportFormat {
    name: "cyclictest-json",
    tool: "cyclictest",
    describe: "cyclictest --json output",
    detect: |head| {
        ["thread", "cmdline:", "rt_test_version:"]
            .iter()
            .any(|k| detect::json_has_key(head, k))
    },
    read: Reader::Text(parse),
};

pub fn parse(text: &str) -> Parsed<Imported> {
    let root = json::parse(text)?;
    root.members("the cyclictest result")?;
    let mut imp = Imported::new(crate::result::Benchmark::Timer);
    let cmdline = opt_str(&root, &["cmdline:", "cmdline"], "cmdline")?.unwrap_or_default();
    let version = opt_str(
        &root,
        &["rt_test_version:", "rt_test_version"],
        "rt_test_version",
    )?;
    let set = settings(&cmdline);
    let resolution = root
        .get("resolution_in_ns")
        .map(|n| n.u64("resolution_in_ns"))
        .transpose()?;
    let ns = resolution == Some(1) || set.nsecs;
    let scale: u64 = if ns { 1 } else { 1000 };
    if ns {
        imp.precision_ns = 1;
        imp.unit = "ns";
    }
    if let Some(si) = root.get("sysinfo") {
        sysinfo(si, &mut imp.system)?;
    }
    let (builds, longest) = threads(&root, &set, scale)?;
    if let Some(n) = root
        .get("num_threads")
        .map(|n| n.u64("num_threads"))
        .transpose()?
    {
        if n as usize != builds.len() {
            imp.notes.push(format!(
                "num_threads says {n} but the file has {} thread entries",
                builds.len()
            ));
        }
    }
    let rc = run_span(&root, &set, longest, &mut imp)?;
    imp.command_line = cmdline.split_whitespace().map(str::to_string).collect();
    record_settings(&mut imp, &set, builds.len(), version.as_deref(), rc);
    if root.get("start_time").is_none() {
        imp.notes
            .push("no start_time in the input: the start is unknown".into());
    }
    imp.notes.push(
        "cyclictest does not record when the maximum happened (where it happened is unknown)"
            .into(),
    );
    imp.threads = builds;
    Ok(imp)
}

/// The `sysinfo` object: uname's fields and whether the kernel is PREEMPT_RT.
fn sysinfo(si: &Node, s: &mut crate::sysinfo::SystemInfo) -> Parsed<()> {
    system::uname(si, s)?;
    s.realtime_sysfs = si
        .get("realtime")
        .map(|n| n.u64("realtime"))
        .transpose()?
        .map(|v| v == 1);
    if s.realtime_sysfs == Some(true) {
        s.preempt_model = "PREEMPT_RT".into();
    }
    Ok(())
}

/// The `thread` object: a build per thread, named by CPU when every thread has
/// its own, and the most cycles any thread ran.
fn threads(root: &Node, set: &Settings, scale: u64) -> Parsed<(Vec<ThreadBuild>, u64)> {
    let threads = root.field("thread", "the cyclictest result")?;
    let members = threads.members("\"thread\"")?;
    let mut builds = Vec::new();
    let mut cpus = Vec::new();
    let mut longest = 0u64;
    for (key, t) in members {
        let (b, cpu, cycles) = thread(key, t, set, scale)?;
        longest = longest.max(cycles);
        cpus.push(cpu);
        builds.push(b);
    }
    if builds.is_empty() {
        return Err(ParseError::at(
            threads.line,
            "expected at least one thread in \"thread\"",
        ));
    }
    // Name threads by CPU when every thread has its own.
    let mut distinct: Vec<usize> = cpus.iter().flatten().copied().collect();
    distinct.sort_unstable();
    distinct.dedup();
    if set.affinity && distinct.len() == builds.len() && cpus.iter().all(|c| c.is_some()) {
        for (b, c) in builds.iter_mut().zip(&cpus) {
            if let Some(c) = c {
                b.name = format!("cpu{c}");
            }
        }
    }
    Ok((builds, longest))
}

/// Thread `key` of the `thread` object: its build, its CPU and its cycles.
fn thread(
    key: &str,
    t: &Node,
    set: &Settings,
    scale: u64,
) -> Parsed<(ThreadBuild, Option<usize>, u64)> {
    let what = format!("thread \"{key}\"");
    t.members(&what)?;
    let cycles = t.field("cycles", &what)?.u64("cycles")?;
    let cpu = t
        .get("cpu")
        .map(|n| n.i64("cpu"))
        .transpose()?
        .filter(|&c| c >= 0)
        .map(|c| c as usize);
    let mut b = ThreadBuild::new(
        format!("thread{key}"),
        if set.affinity { cpu } else { None },
    );
    b.count = Some(cycles);
    let highest = b.add_json(t, &what, scale, |bucket| {
        format!(
            "expected a bucket number as key in the histogram of {what}, found \"{}\"",
            super::found(bucket).trim_matches('\'')
        )
    })?;
    let limit = set.histogram.or(highest.map(|h: u64| h.saturating_add(1)));
    b.overflow_at_ns = limit.map(|l| l.saturating_mul(scale));
    if b.recorded() > cycles {
        return Err(ParseError::at(
            t.line,
            format!(
                "expected at most {cycles} samples (cycles) in the histogram of {what}, found {}",
                b.recorded()
            ),
        ));
    }
    Ok((b, cpu, cycles))
}

/// When the run started, how long it ran and why it ended; returns its `return_code`.
fn run_span(root: &Node, set: &Settings, longest: u64, imp: &mut Imported) -> Parsed<Option<i64>> {
    let start = root
        .get("start_time")
        .map(|n| n.str("start_time"))
        .transpose()?
        .and_then(parse_rfc2822);
    let end = root
        .get("end_time")
        .map(|n| n.str("end_time"))
        .transpose()?
        .and_then(parse_rfc2822);
    if let Some(s) = start.filter(|&s| s >= 0) {
        imp.start_time_utc = rfc3339_utc(s as u64, 0);
    }
    let period_ns = set.period_us.saturating_mul(1000);
    imp.duration_ns = Some(match (start, end) {
        (Some(s), Some(e)) if e >= s => {
            // start_time and end_time are whole seconds.
            imp.duration_precision_ns = Some(1_000_000_000);
            (e - s) as u64 * 1_000_000_000
        }
        _ => longest.saturating_mul(period_ns),
    });
    imp.end_reason = if set.loops.is_some() {
        EndReason::Loops
    } else if set.duration_s.is_some() {
        EndReason::Duration
    } else {
        EndReason::Signal
    };
    let rc = root
        .get("return_code")
        .map(|n| n.i64("return_code"))
        .transpose()?;
    if rc.is_some_and(|c| c != 0) {
        imp.end_reason = EndReason::Error;
    }
    Ok(rc)
}

/// The run's settings from its command line, version and return code: config, tuning and their notes.
pub fn record_settings(
    imp: &mut Imported,
    set: &Settings,
    builds_len: usize,
    version: Option<&str>,
    rc: Option<i64>,
) {
    let period_ns = set.period_us.saturating_mul(1000);
    imp.config.insert("period_ns".into(), period_ns.into());
    if builds_len > 1 && set.distance_us > 0 {
        let periods: Vec<u64> = (0..builds_len as u64)
            .map(|i| {
                set.period_us
                    .saturating_add(i.saturating_mul(set.distance_us))
                    .saturating_mul(1000)
            })
            .collect();
        let why = format!(
            "cyclictest's -d distance, {} µs{}",
            set.distance_us,
            if set.distance_us == 500 {
                " by default"
            } else {
                ""
            }
        );
        super::cyclictest_hist::thread_periods(imp, periods, &why);
    }
    if let Some(v) = version {
        imp.config
            .insert("tool".into(), format!("cyclictest {v}").into());
    }
    if let Some(l) = set.loops {
        imp.config.insert("loops".into(), l.into());
    }
    if let Some(h) = set.histogram {
        imp.config.insert("histogram_buckets".into(), h.into());
    }
    if let Some(c) = rc {
        imp.config.insert("return_code".into(), c.into());
    }
    imp.tuning.policy = crate::result::Policy::from_name(&set.policy);
    imp.tuning.priority = Some(if matches!(set.policy.as_str(), "fifo" | "rr") {
        set.priority
    } else {
        0
    });
    imp.tuning.mlock = Some(set.mlock);
    imp.tuning.dma_latency_us = Some(set.pm_untouched.is_none().then_some(0));
    imp.notes.push(if let Some(o) = set.pm_untouched {
        format!("cyclictest ran with {o}: /dev/cpu_dma_latency was left alone")
    } else {
        "cyclictest holds /dev/cpu_dma_latency at 0 by default (recorded as such; it is not in its output)".into()
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_in_every_spelling() {
        let t: Vec<&str> = "cyclictest -m -p80 -i 200 --histogram=400 -l2000 -a -D 1m"
            .split(' ')
            .collect();
        assert_eq!(option(&t, "-p", "--priority"), Some("80"));
        assert_eq!(option(&t, "-i", "--interval"), Some("200"));
        assert_eq!(option(&t, "-h", "--histogram"), Some("400"));
        assert_eq!(option(&t, "-l", "--loops"), Some("2000"));
        assert!(flag(&t, 'm', "--mlockall"));
        assert!(!flag(&t, 'q', "--quiet"));
        let s = settings("cyclictest -mq -p 80 -h 200 -D 1m -a");
        assert!(s.mlock);
        assert_eq!(
            (s.priority, s.histogram, s.duration_s),
            (80, Some(200), Some(60))
        );
        assert_eq!(s.policy, "fifo");
        assert!(s.affinity);
        assert_eq!(s.pm_untouched, None);
        let s = settings("cyclictest -qmu -h 3500 -p95 -t2 -a0-1 --default-system");
        assert_eq!(s.pm_untouched, Some("--default-system"));
        let s = settings("cyclictest --policy=rr --priority=5 -N");
        assert_eq!((s.policy.as_str(), s.priority, s.nsecs), ("rr", 5, true));
    }
}
