//! Which threads a watch follows: the selection (`--pid`, `--comm`,
//! `--cgroup`, or every real-time thread), the threads of `/proc` it names at the start,
//! whether a thread first seen in the trace belongs to it, and the
//! kernel's event filters that keep the rest out of the trace buffers.

use crate::error::{Error, Result};
use serde::Serialize;
use std::path::Path;

/// The threads a watch follows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Selection {
    /// These task ids (a process id stands for its threads at the start).
    Pids(Vec<i32>),
    /// Threads whose name matches this glob (`*` and `?`), also those that
    /// start during the run.
    Comm(String),
    /// The threads in this cgroup at the start: its path as
    /// `/proc/PID/cgroup` shows it, or its directory.
    Cgroup(String),
    /// Every SCHED_FIFO, SCHED_RR and SCHED_DEADLINE thread, also those
    /// that start during the run.
    RealTime,
}

/// Where the cgroup hierarchies are mounted, and where a hybrid layout
/// keeps cgroup v2.
const CGROUP_ROOTS: [&str; 2] = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"];

/// The file listing the thread ids of cgroup `path`: `cgroup.threads` (v2)
/// or `tasks` (v1), of `path` itself when it is a cgroup's directory, else
/// relative to the mount points. The first candidate when none exists.
fn cgroup_threads(path: &str) -> std::path::PathBuf {
    let rel = path.trim_start_matches('/');
    let dirs = std::iter::once(Path::new(path).to_path_buf())
        .chain(CGROUP_ROOTS.iter().map(|r| Path::new(r).join(rel)));
    let mut files = dirs.flat_map(|d| [d.join("cgroup.threads"), d.join("tasks")]);
    let first = Path::new(CGROUP_ROOTS[0]).join(rel).join("cgroup.threads");
    files.find(|f| f.is_file()).unwrap_or(first)
}

/// A thread found in `/proc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub tid: i32,
    pub comm: String,
}

/// The kernel's priority below which a task is real-time or deadline
/// (`prio` of the sched events: 0–98 real-time, -1 deadline).
const RT_PRIO: i32 = 100;

impl Selection {
    /// `pid 12 13`, `comm cyclic*`, `real-time`.
    pub fn describe(&self) -> String {
        match self {
            Selection::Pids(p) => format!(
                "pid {}",
                p.iter().map(i32::to_string).collect::<Vec<_>>().join(" ")
            ),
            Selection::Comm(g) => format!("comm {g}"),
            Selection::Cgroup(g) => format!("cgroup {g}"),
            Selection::RealTime => "real-time".into(),
        }
    }

    /// Whether threads that start during the run can join.
    pub fn grows(&self) -> bool {
        matches!(self, Selection::Comm(_) | Selection::RealTime)
    }

    /// Whether a thread first seen in the trace, named `comm` and of
    /// kernel priority `prio`, belongs to the selection.
    pub fn admits(&self, comm: &str, prio: i32) -> bool {
        match self {
            Selection::Pids(_) | Selection::Cgroup(_) => false,
            Selection::Comm(g) => glob(g, comm),
            Selection::RealTime => prio < RT_PRIO,
        }
    }

    /// The threads of `proc` (`/proc` but in tests) selected now. A pid
    /// that names no thread is a usage error.
    pub fn scan(&self, proc: &Path) -> Result<Vec<Candidate>> {
        let mut out = Vec::new();
        match self {
            Selection::Pids(pids) => {
                for &p in pids {
                    let found = threads_of(proc, p);
                    if found.is_empty() {
                        return Err(Error::usage(format!(
                            "--pid {p}: no process or thread has this id; give the id of a running one (ps -eLo pid,tid,comm)"
                        )));
                    }
                    for c in found {
                        if !out.contains(&c) {
                            out.push(c);
                        }
                    }
                }
            }
            Selection::Cgroup(g) => {
                let file = cgroup_threads(g);
                let text = std::fs::read_to_string(&file).map_err(|e| {
                    Error::usage(format!(
                        "--cgroup {g}: {} cannot be read ({e}); give a cgroup's path as /proc/PID/cgroup shows it, such as /system.slice/app.service",
                        file.display()
                    ))
                })?;
                out.extend(text.lines().filter_map(|l| {
                    let tid: i32 = l.trim().parse().ok()?;
                    Some(Candidate {
                        tid,
                        comm: comm_of(proc, tid, tid)?,
                    })
                }));
                if out.is_empty() {
                    return Err(Error::env(format!(
                        "--cgroup {g}: no thread is in it; start the application first"
                    )));
                }
            }
            _ => {
                let Ok(procs) = std::fs::read_dir(proc) else {
                    return Ok(out);
                };
                for p in procs.flatten() {
                    let Some(pid) = p.file_name().to_str().and_then(|n| n.parse().ok()) else {
                        continue;
                    };
                    for c in tasks(proc, pid) {
                        let policy = policy_of(proc, pid, c.tid);
                        let rt = matches!(policy, Some(1 | 2 | 6));
                        let wanted = match self {
                            Selection::Comm(g) => glob(g, &c.comm),
                            _ => rt,
                        };
                        if wanted {
                            out.push(c);
                        }
                    }
                }
            }
        }
        out.sort_by_key(|c| c.tid);
        Ok(out)
    }

    /// The filter of each event (relative to `events/`) that keeps out
    /// what the selection does not want; `function` the address of the
    /// sleepers' timer callback when known.
    pub fn filters(&self, tids: &[i32], function: Option<u64>) -> Vec<(&'static str, String)> {
        let any = |field: &str, ids: &[i32]| -> String {
            ids.iter()
                .map(|t| format!("{field} == {t}"))
                .collect::<Vec<_>>()
                .join(" || ")
        };
        let both = |a: String, b: String| format!("({a}) || ({b})");
        let (waking, switch, started, exit) = match self {
            Selection::Pids(_) | Selection::Cgroup(_) => (
                any("pid", tids),
                both(any("prev_pid", tids), any("next_pid", tids)),
                Some(any("common_pid", tids)),
                any("pid", tids),
            ),
            Selection::Comm(g) => (
                format!("comm ~ \"{g}\""),
                format!("prev_comm ~ \"{g}\" || next_comm ~ \"{g}\""),
                // `comm` of an event without such a field: the current task's.
                Some(format!("comm ~ \"{g}\"")),
                format!("comm ~ \"{g}\""),
            ),
            Selection::RealTime => (
                format!("prio < {RT_PRIO}"),
                format!("prev_prio < {RT_PRIO} || next_prio < {RT_PRIO}"),
                None,
                format!("prio < {RT_PRIO}"),
            ),
        };
        let by_function = function.map(|f| format!("function == 0x{f:x}"));
        let start = match (started, &by_function) {
            (Some(s), Some(f)) => Some(format!("({s}) && {f}")),
            (s, f) => s.or_else(|| f.clone()),
        };
        let mut out = vec![
            ("sched/sched_waking", waking),
            ("sched/sched_switch", switch),
            ("sched/sched_process_exit", exit),
        ];
        out.extend(start.map(|s| ("timer/hrtimer_start", s)));
        out.extend(by_function.map(|f| ("timer/hrtimer_expire_entry", f)));
        out
    }
}

/// Whether `name` matches `pattern`, where `*` is any run of characters
/// and `?` any one (the kernel filter's `~` reads them alike).
pub fn glob(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut i, mut j) = (0, 0);
    let mut back: Option<(usize, usize)> = None;
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            back = Some((i, j));
            i += 1;
        } else if let Some((bi, bj)) = back {
            i = bi + 1;
            j = bj + 1;
            back = Some((bi, bj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

/// A `--comm` pattern the kernel's filter takes as it is: no quote or
/// backslash, no character class, at most a comm's 15 characters of text.
pub fn check_pattern(g: &str) -> std::result::Result<(), String> {
    if g.is_empty() {
        return Err("--comm is empty; give a thread name or a pattern such as 'cyclic*'".into());
    }
    if let Some(c) = g.chars().find(|c| matches!(c, '"' | '\\' | '[' | ']')) {
        return Err(format!(
            "--comm '{g}' holds '{c}'; a pattern is plain text with * (any run) and ? (any one character)"
        ));
    }
    if g.chars().filter(|&c| c != '*').count() > 15 {
        return Err(format!(
            "--comm '{g}' is longer than a thread name (15 characters) can be"
        ));
    }
    Ok(())
}

/// The threads `id` names under `proc`: a process's every thread, or one
/// thread; none when it does not exist.
fn threads_of(proc: &Path, id: i32) -> Vec<Candidate> {
    let status = std::fs::read_to_string(proc.join(format!("{id}/status"))).unwrap_or_default();
    let tgid: Option<i32> = status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok());
    match tgid {
        Some(t) if t == id => tasks(proc, id),
        Some(t) => comm_of(proc, t, id)
            .map(|comm| vec![Candidate { tid: id, comm }])
            .unwrap_or_default(),
        None => Vec::new(),
    }
}

/// Every thread of process `pid`.
fn tasks(proc: &Path, pid: i32) -> Vec<Candidate> {
    let Ok(dir) = std::fs::read_dir(proc.join(format!("{pid}/task"))) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|t| {
            let tid: i32 = t.file_name().to_str()?.parse().ok()?;
            Some(Candidate {
                tid,
                comm: comm_of(proc, pid, tid)?,
            })
        })
        .collect()
}

fn comm_of(proc: &Path, pid: i32, tid: i32) -> Option<String> {
    let c = std::fs::read_to_string(proc.join(format!("{pid}/task/{tid}/comm"))).ok()?;
    Some(c.trim_end_matches('\n').to_string())
}

/// The scheduling policy of a thread (`stat`'s 41st field: 1 FIFO, 2 RR,
/// 6 DEADLINE).
fn policy_of(proc: &Path, pid: i32, tid: i32) -> Option<u32> {
    let stat = std::fs::read_to_string(proc.join(format!("{pid}/task/{tid}/stat"))).ok()?;
    // The comm in parentheses may hold spaces: fields count after its end.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(41 - 3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_the_kernel_filter_does() {
        for (p, n, want) in [
            ("cyclictest", "cyclictest", true),
            ("cyclic*", "cyclictest", true),
            ("*test", "cyclictest", true),
            ("c?clic*t", "cyclictest", true),
            ("*", "", true),
            ("cyclic", "cyclictest", false),
            ("*x*", "cyclictest", false),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "aXbYcZ", false),
        ] {
            assert_eq!(glob(p, n), want, "{p} {n}");
        }
        assert!(check_pattern("cyclic*").is_ok());
        for bad in ["", "a\"b", "x[12]", "abcdefghijklmnopq"] {
            assert!(check_pattern(bad).is_err(), "{bad}");
        }
    }

    /// A fake `/proc` of process 10 (threads 10, 11: FIFO and OTHER) and
    /// process 20 (thread 20, DEADLINE).
    fn fake_proc() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (pid, tid, comm, policy) in [
            (10, 10, "app", 1),
            (10, 11, "app worker", 0),
            (20, 20, "dl", 6),
        ] {
            let t = d.path().join(format!("{pid}/task/{tid}"));
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("comm"), format!("{comm}\n")).unwrap();
            // 52 fields; the 41st is the policy, the comm holds a space.
            let mut f: Vec<String> = (3..=52).map(|i| i.to_string()).collect();
            f[41 - 3] = policy.to_string();
            std::fs::write(t.join("stat"), format!("{tid} ({comm}) {}", f.join(" "))).unwrap();
            let status = format!("Name:\t{comm}\nTgid:\t{pid}\nPid:\t{tid}\n");
            std::fs::write(d.path().join(format!("{pid}/status")), &status).unwrap();
            let own = d.path().join(format!("{tid}"));
            std::fs::create_dir_all(&own).unwrap();
            std::fs::write(own.join("status"), status).unwrap();
        }
        d
    }

    #[test]
    fn the_proc_scan_selects_by_policy_name_or_id() {
        let d = fake_proc();
        let tids = |s: Selection| -> Vec<i32> {
            s.scan(d.path()).unwrap().iter().map(|c| c.tid).collect()
        };
        assert_eq!(tids(Selection::RealTime), [10, 20]);
        assert_eq!(tids(Selection::Comm("app*".into())), [10, 11]);
        assert_eq!(tids(Selection::Pids(vec![10])), [10, 11], "a process");
        assert_eq!(tids(Selection::Pids(vec![11])), [11], "one thread");
        let e = Selection::Pids(vec![99]).scan(d.path()).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::exit::USAGE);
        assert!(e.to_string().contains("--pid 99"), "{e}");
    }

    #[test]
    fn a_cgroup_selects_the_threads_it_holds_at_the_start() {
        let d = fake_proc();
        let cg = tempfile::tempdir().unwrap();
        let threads = cg.path().join("cgroup.threads");
        // 99 ended since the kernel listed it.
        std::fs::write(&threads, "10\n20\n99\n").unwrap();
        let sel = Selection::Cgroup(cg.path().display().to_string());
        let got: Vec<i32> = sel.scan(d.path()).unwrap().iter().map(|c| c.tid).collect();
        assert_eq!(got, [10, 20]);
        assert!(!sel.grows() && !sel.admits("app", 0));
        assert_eq!(sel.filters(&[10], None)[0].1, "pid == 10");
        std::fs::write(&threads, "").unwrap();
        let e = sel.scan(d.path()).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::exit::ENVIRONMENT);
        let e = Selection::Cgroup("/no/such.slice".into())
            .scan(d.path())
            .unwrap_err();
        assert_eq!(e.exit_code(), crate::error::exit::USAGE);
        assert!(
            e.to_string().contains("/sys/fs/cgroup/no/such.slice"),
            "{e}"
        );
    }

    #[test]
    fn filters_keep_out_what_the_selection_does_not_want() {
        let f = Selection::Pids(vec![5]).filters(&[5, 6], Some(0xff));
        assert_eq!(f[0], ("sched/sched_waking", "pid == 5 || pid == 6".into()));
        assert_eq!(
            f[1].1,
            "(prev_pid == 5 || prev_pid == 6) || (next_pid == 5 || next_pid == 6)"
        );
        assert_eq!(
            f[3],
            (
                "timer/hrtimer_start",
                "(common_pid == 5 || common_pid == 6) && function == 0xff".into()
            )
        );
        assert_eq!(
            f[4],
            ("timer/hrtimer_expire_entry", "function == 0xff".into())
        );
        let f = Selection::RealTime.filters(&[], None);
        assert_eq!(f.len(), 3, "no timer filter without the function: {f:?}");
        assert_eq!(f[0].1, "prio < 100");
        assert!(Selection::RealTime.admits("x", -1), "deadline");
        assert!(!Selection::RealTime.admits("x", 120));
        assert!(Selection::Comm("cy*".into()).admits("cyclictest", 120));
        assert!(!Selection::Pids(vec![1]).admits("x", 0));
    }
}
