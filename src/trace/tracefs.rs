//! A run's tracefs session: every setting rtlat changes saved and restored
//! (also after a killed run, from a state file under /run/rtlat/), and the
//! instance's text `trace_pipe` and binary `trace_pipe_raw` files.

use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Where a run writes what it changed, so that the next run can undo it.
pub const STATE_DIR: &str = "/run/rtlat";

/// The tracefs settings a run changed, restored on [`Session::restore`] or drop.
#[derive(Debug)]
pub struct Session {
    root: PathBuf,
    /// Global files (relative to the root) and their values before the run.
    saved: Vec<(String, String)>,
    /// Instances this run created (relative to the root).
    instances: Vec<String>,
    state_file: PathBuf,
    restored: bool,
    /// What the run uses beside its own instances.
    uses: Uses,
}

/// What a run's tracing needs of the machine's tracefs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Uses {
    /// Global settings or a tracer that is one for the whole machine
    /// (timerlat, osnoise): one such run at a time.
    #[default]
    Global,
    /// Only instances of its own (events, their buffers): any number of
    /// such runs at once, beside one `Global` run too.
    Instances,
}

/// What a killed run's state file asks to undo.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct State {
    pub pid: u32,
    pub saved: Vec<(String, String)>,
    pub instances: Vec<String>,
    /// A file without the `instances-only` line is a global run's.
    pub uses: Uses,
}

impl State {
    /// The state file's text: `pid N`, `instances-only` (for a run that
    /// uses nothing but its instances), `instance REL`, `set REL<TAB>VALUE`
    /// lines.
    pub fn to_text(&self) -> String {
        let mut t = format!("pid {}\n", self.pid);
        if self.uses == Uses::Instances {
            t.push_str("instances-only\n");
        }
        for i in &self.instances {
            t.push_str(&format!("instance {i}\n"));
        }
        for (f, v) in &self.saved {
            t.push_str(&format!("set {f}\t{}\n", v.replace('\n', " ")));
        }
        t
    }

    pub fn parse(text: &str) -> State {
        let mut s = State::default();
        for line in text.lines() {
            if let Some(p) = line.strip_prefix("pid ") {
                s.pid = p.trim().parse().unwrap_or(0);
            } else if line == "instances-only" {
                s.uses = Uses::Instances;
            } else if let Some(i) = line.strip_prefix("instance ") {
                s.instances.push(i.to_string());
            } else if let Some(kv) = line.strip_prefix("set ") {
                if let Some((k, v)) = kv.split_once('\t') {
                    s.saved.push((k.to_string(), v.to_string()));
                }
            }
        }
        s
    }
}

/// A file's value as the kernel prints it, without the trailing newline.
/// Every read asks for 4 KiB: Linux 6.1's `osnoise/cpus` fails a read whose
/// buffer is not larger than the whole value with EINVAL, even at its end
/// (`fs::read_to_string` asks for the few bytes left after a first read).
fn read_value(path: &Path) -> io::Result<String> {
    let mut file = fs::File::open(path)?;
    let mut text = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => text.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let text = String::from_utf8_lossy(&text);
    Ok(text
        .trim_end_matches(|c: char| c.is_whitespace() || c == '\0')
        .to_string())
}

/// The choice a file of choices reads back as selected (`trace_clock`:
/// `local [global] counter …` is `global`); any other value as it is.
fn selected(value: &str) -> &str {
    value
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap_or(value)
}

/// Write `value` and a newline, as `echo` does: some files need the newline
/// to end the value (Linux 6.1's `osnoise/cpus` copies the bytes into an
/// unterminated buffer and parses until a newline: without one, EINVAL).
fn write_value(path: &Path, value: &str) -> io::Result<()> {
    fs::write(path, format!("{value}\n"))
}

/// A relative path that stays inside tracefs (a state file is input too).
fn safe_rel(rel: &str) -> bool {
    !rel.is_empty() && !rel.starts_with('/') && !rel.split('/').any(|c| c == "..")
}

/// Undo `state` under `root`: instances first (their tracer stops), then the
/// global values. Returns what could not be undone.
fn undo(root: &Path, state: &State) -> Vec<String> {
    let mut problems = Vec::new();
    for i in state.instances.iter().rev().filter(|i| safe_rel(i)) {
        let dir = root.join(i);
        if !dir.exists() {
            continue;
        }
        let _ = write_value(&dir.join("tracing_on"), "0");
        let _ = write_value(&dir.join("current_tracer"), "nop");
        for ev in ["timer/hrtimer_start", "timer/hrtimer_expire_entry"] {
            let _ = write_value(&dir.join("events").join(ev).join("enable"), "0");
        }
        if let Err(e) = fs::remove_dir(&dir) {
            problems.push(format!("cannot remove {}: {e}", dir.display()));
        }
    }
    for (rel, value) in state.saved.iter().rev().filter(|(r, _)| safe_rel(r)) {
        let path = root.join(rel);
        if read_value(&path).ok().as_deref() == Some(value.as_str()) {
            continue;
        }
        if let Err(e) = write_value(&path, value) {
            problems.push(format!(
                "cannot restore {} to {value:?}: {e}",
                path.display()
            ));
        }
    }
    problems
}

fn alive(pid: u32) -> bool {
    pid != 0 && Path::new("/proc").join(pid.to_string()).exists()
}

impl Session {
    /// Start changing tracefs under `root` for a run that `uses` what it
    /// says: first undo what runs killed before they could restore left
    /// behind; refuse a [`Uses::Global`] run while another live one holds
    /// the global settings (runs of their own instances only never wait).
    pub fn begin(root: &Path, uses: Uses) -> Result<(Session, Vec<String>), String> {
        Self::begin_in(Path::new(STATE_DIR), root, uses)
    }

    /// [`Session::begin`] with the runs' state files in `dir`.
    fn begin_in(dir: &Path, root: &Path, uses: Uses) -> Result<(Session, Vec<String>), String> {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut notes = Vec::new();
        let me = std::process::id();
        for entry in fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))? {
            let Ok(entry) = entry else { continue };
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with("tracefs-") || !name.ends_with(".state") {
                continue;
            }
            let state = State::parse(&fs::read_to_string(entry.path()).unwrap_or_default());
            if state.pid == me {
                continue;
            }
            if alive(state.pid) {
                if uses == Uses::Global && state.uses == Uses::Global {
                    return Err(format!(
                        "another rtlat run (pid {}) is using the kernel tracers; wait for it to end",
                        state.pid
                    ));
                }
                continue;
            }
            let problems = undo(root, &state);
            notes.push(format!(
                "restored the tracefs settings a killed rtlat run (pid {}) left{}",
                state.pid,
                if problems.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", problems.join("; "))
                }
            ));
            // What could not be undone (an instance still busy) is tried
            // again by the next run: its state file stays until then.
            if problems.is_empty() {
                let _ = fs::remove_file(entry.path());
            }
        }
        let s = Session {
            root: root.to_path_buf(),
            saved: Vec::new(),
            instances: Vec::new(),
            state_file: dir.join(format!("tracefs-{me}.state")),
            restored: false,
            uses,
        };
        s.persist()
            .map_err(|e| format!("cannot write {}: {e}", s.state_file.display()))?;
        Ok((s, notes))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn persist(&self) -> io::Result<()> {
        let state = State {
            pid: std::process::id(),
            saved: self.saved.clone(),
            instances: self.instances.clone(),
            uses: self.uses,
        };
        let tmp = self.state_file.with_extension("tmp");
        fs::write(&tmp, state.to_text())?;
        fs::rename(&tmp, &self.state_file)
    }

    /// Write a global tracefs file, its previous value saved first.
    pub fn set(&mut self, rel: &str, value: &str) -> io::Result<()> {
        let path = self.root.join(rel);
        if !self.saved.iter().any(|(r, _)| r == rel) {
            let old = read_value(&path)?;
            self.saved
                .push((rel.to_string(), selected(&old).to_string()));
            self.persist()?;
        }
        write_value(&path, value)
    }

    /// Have a global file hold `value` at the end without writing it now.
    pub fn set_at_end(&mut self, rel: &str, value: &str) -> io::Result<()> {
        self.saved.retain(|(r, _)| r != rel);
        self.saved.push((rel.to_string(), value.to_string()));
        self.persist()
    }

    /// Create `instances/NAME` (removed at the end) and return its directory.
    pub fn instance(&mut self, name: &str) -> io::Result<PathBuf> {
        let rel = format!("instances/{name}");
        self.instances.push(rel.clone());
        self.persist()?;
        let dir = self.root.join(&rel);
        fs::create_dir(&dir)?;
        Ok(dir)
    }

    /// Undo every change; returns what could not be undone.
    pub fn restore(&mut self) -> Vec<String> {
        if self.restored {
            return Vec::new();
        }
        self.restored = true;
        let state = State {
            pid: 0,
            saved: std::mem::take(&mut self.saved),
            instances: std::mem::take(&mut self.instances),
            uses: self.uses,
        };
        let problems = undo(&self.root, &state);
        if problems.is_empty() {
            let _ = fs::remove_file(&self.state_file);
        }
        problems
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.restore();
    }
}

/// Write `value` into a file of an instance rtlat created (no saving needed:
/// the instance goes away at the end).
pub fn write(dir: &Path, rel: &str, value: &str) -> io::Result<()> {
    write_value(&dir.join(rel), value)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.join(rel).display())))
}

/// Read a tracefs file (without its trailing newline).
pub fn read(dir: &Path, rel: &str) -> io::Result<String> {
    read_value(&dir.join(rel))
}

/// The instance's text `trace_pipe`, read without blocking, split into lines.
pub struct Pipe {
    file: fs::File,
    buf: Vec<u8>,
    /// Bytes of `buf` that are a line not yet complete.
    pending: usize,
}

impl Pipe {
    pub fn open(instance: &Path) -> io::Result<Pipe> {
        let file = fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(instance.join("trace_pipe"))?;
        Ok(Pipe {
            file,
            buf: vec![0; 1 << 16],
            pending: 0,
        })
    }

    /// Read once and hand each complete line to `f`; `Ok(true)` when the
    /// read was large enough that more is likely waiting (the kernel hands
    /// out at most a page of text per read), `Ok(false)` when the caller
    /// can sleep.
    pub fn drain(&mut self, mut f: impl FnMut(&str)) -> io::Result<bool> {
        if self.pending == self.buf.len() {
            // A line longer than the buffer: drop it.
            self.pending = 0;
        }
        let n = match self.file.read(&mut self.buf[self.pending..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(true),
            Err(e) => return Err(e),
        };
        let end = self.pending + n;
        let mut from = 0;
        while let Some(nl) = self.buf[from..end].iter().position(|&b| b == b'\n') {
            f(&String::from_utf8_lossy(&self.buf[from..from + nl]));
            from += nl + 1;
        }
        self.buf.copy_within(from..end, 0);
        self.pending = end - from;
        Ok(n >= 2048)
    }
}

/// The instance's per-CPU binary `trace_pipe_raw` files, read without
/// blocking, one ring-buffer page at a time.
pub struct RawPipes {
    files: Vec<(usize, fs::File)>,
    page: Vec<u8>,
}

impl RawPipes {
    pub fn open(instance: &Path, cpus: &[usize]) -> io::Result<RawPipes> {
        let mut files = Vec::new();
        for &c in cpus {
            let path = instance.join(format!("per_cpu/cpu{c}/trace_pipe_raw"));
            let f = fs::OpenOptions::new()
                .read(true)
                .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
                .open(&path)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
            files.push((c, f));
        }
        Ok(RawPipes {
            files,
            page: vec![0; rustix::param::page_size()],
        })
    }
}

impl super::Pages for RawPipes {
    fn len(&self) -> usize {
        self.files.len()
    }

    fn read(&mut self, i: usize) -> io::Result<Option<(usize, &[u8])>> {
        let (cpu, file) = &mut self.files[i];
        match file.read(&mut self.page) {
            Ok(0) => Ok(None),
            Ok(n) => Ok(Some((*cpu, &self.page[..n]))),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

/// The size in KB the global buffer grows to at its first use, when that has
/// not happened yet: `buffer_size_kb` reads `7 (expanded: 1408)` until then.
pub fn unexpanded_size(buffer_size_kb: &str) -> Option<&str> {
    let rest = buffer_size_kb.split_once("(expanded:")?.1;
    let n = rest.trim().trim_end_matches(')').trim();
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(n)
}

/// Ring-buffer losses of one CPU from `per_cpu/cpuN/stats`: (overrun, dropped events).
pub fn cpu_losses(instance: &Path, cpu: usize) -> (u64, u64) {
    let text =
        fs::read_to_string(instance.join(format!("per_cpu/cpu{cpu}/stats"))).unwrap_or_default();
    parse_stats(&text)
}

/// `overrun: N` and `dropped events: N` of a stats file.
pub fn parse_stats(text: &str) -> (u64, u64) {
    let get = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (get("overrun:"), get("dropped events:"))
}

/// `cpus` as tracefs writes a CPU mask (`tracing_cpumask`): 32-bit hex
/// words, highest first, separated by commas.
pub fn cpumask(cpus: &[usize]) -> String {
    let words = cpus.iter().max().map_or(1, |&m| m / 32 + 1);
    let mut w = vec![0u32; words];
    for &c in cpus {
        w[c / 32] |= 1 << (c % 32);
    }
    w.iter()
        .rev()
        .map(|x| format!("{x:08x}"))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    impl Session {
        /// A session on a fake tracefs tree under `root` (no other run's
        /// state undone), its state file at `state_file`.
        pub(crate) fn fake(root: &Path, state_file: PathBuf) -> Session {
            Session {
                root: root.to_path_buf(),
                saved: Vec::new(),
                instances: Vec::new(),
                state_file,
                restored: false,
                uses: Uses::Global,
            }
        }
    }

    /// Every regular file under `dir` (not below one of `skip`) and its bytes.
    pub(crate) fn files(dir: &Path, skip: &[&Path]) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            for e in fs::read_dir(&d).expect("read_dir") {
                let p = e.expect("entry").path();
                if skip.iter().any(|s| p.starts_with(s)) {
                    continue;
                }
                if p.is_dir() {
                    todo.push(p);
                } else {
                    out.push((p.clone(), fs::read(&p).expect("read")));
                }
            }
        }
        out.sort();
        out
    }

    /// A fake tracefs tree with the global files of a freshly booted
    /// kernel, where the buffer has not grown yet.
    pub(crate) fn fake_tracefs() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        for (f, v) in [
            ("tracing_on", "1"),
            ("current_tracer", "nop"),
            (
                "trace_clock",
                "[local] global counter uptime perf mono mono_raw boot",
            ),
            ("buffer_size_kb", "7 (expanded: 1408)"),
            ("tracing_cpumask", "3"),
            ("set_event", ""),
            ("events/sched/sched_switch/enable", "0"),
        ] {
            let p = dir.path().join(f);
            fs::create_dir_all(p.parent().unwrap()).expect("mkdir");
            fs::write(p, format!("{v}\n")).expect("write");
        }
        fs::create_dir(dir.path().join("instances")).expect("mkdir");
        dir
    }

    /// Restored on drop as by `restore`: the global files as they were
    /// (a value saved for the end written), the instance's tracer stopped
    /// and its removal tried; a fake instance directory holds plain files
    /// and cannot go, which is reported and keeps the state file for the
    /// next run to retry.
    #[test]
    fn a_dropped_session_restores_the_fake_tracefs() {
        let root = fake_tracefs();
        let state = root.path().join("state");
        let before = files(root.path(), &[&state]);
        let inst = {
            let mut s = Session::fake(root.path(), state.clone());
            s.set("tracing_on", "0").expect("set");
            s.set("trace_clock", "mono").expect("set");
            s.set_at_end("buffer_size_kb", "1408").expect("set_at_end");
            let inst = s.instance("rtlat-test").expect("instance");
            write(&inst, "tracing_on", "1").expect("write");
            let persisted = State::parse(&fs::read_to_string(&state).expect("state"));
            assert_eq!(persisted.instances, ["instances/rtlat-test"]);
            assert_eq!(
                persisted.saved,
                [
                    ("tracing_on".to_string(), "1".to_string()),
                    ("trace_clock".to_string(), "local".to_string()),
                    ("buffer_size_kb".to_string(), "1408".to_string())
                ]
            );
            assert_eq!(read(root.path(), "trace_clock").unwrap(), "mono");
            inst
        };
        let after = files(root.path(), &[&state]);
        let changed: Vec<_> = before
            .iter()
            .filter_map(|(path, b)| {
                let a = &after.iter().find(|x| &x.0 == path).expect("a file gone").1;
                (a != b).then(|| (path.clone(), String::from_utf8_lossy(a).into_owned()))
            })
            .collect();
        // The fake's files of choices read back as written: the choice.
        assert_eq!(
            changed,
            [
                (root.path().join("buffer_size_kb"), "1408\n".to_string()),
                (root.path().join("trace_clock"), "local\n".to_string())
            ]
        );
        assert_eq!(after.len(), before.len() + 2, "the instance's files");
        assert_eq!(read(&inst, "tracing_on").unwrap(), "0");
        assert_eq!(read(&inst, "current_tracer").unwrap(), "nop");
        assert!(
            state.exists(),
            "kept for the next run: the instance is left"
        );
        let left = State::parse(&fs::read_to_string(&state).unwrap());
        assert_eq!(left.instances, ["instances/rtlat-test"]);
    }

    #[test]
    fn cpu_masks_are_hex_words_of_32_cpus() {
        assert_eq!(cpumask(&[0]), "00000001");
        assert_eq!(cpumask(&[1, 3]), "0000000a");
        assert_eq!(cpumask(&[0, 33]), "00000002,00000001");
    }

    #[test]
    fn state_round_trips_and_refuses_paths_outside_tracefs() {
        let s = State {
            pid: 42,
            saved: vec![
                ("osnoise/cpus".into(), "0-1".into()),
                ("osnoise/timerlat_period_us".into(), "1000".into()),
            ],
            instances: vec!["instances/rtlat-42".into()],
            uses: Uses::Global,
        };
        assert_eq!(State::parse(&s.to_text()), s);
        assert!(safe_rel("osnoise/cpus"));
        assert!(!safe_rel("../../etc/passwd"));
        assert!(!safe_rel("/etc/passwd"));
    }

    #[test]
    fn undo_restores_values_and_removes_instances() {
        let root = std::env::temp_dir().join(format!("rtlat-tracefs-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("osnoise")).unwrap();
        fs::create_dir_all(root.join("instances/rtlat-1")).unwrap();
        fs::write(root.join("osnoise/cpus"), "1\n").unwrap();
        let state = State {
            pid: 1,
            saved: vec![("osnoise/cpus".into(), "0-1".into())],
            instances: vec!["instances/rtlat-1".into()],
            uses: Uses::Global,
        };
        // A plain directory with files in it cannot be removed: reported, not hidden.
        let problems = undo(&root, &state);
        assert_eq!(
            fs::read_to_string(root.join("osnoise/cpus")).unwrap(),
            "0-1\n"
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn unexpanded_buffer_size_is_read() {
        assert_eq!(unexpanded_size("7 (expanded: 1408)"), Some("1408"));
        assert_eq!(unexpanded_size("1408"), None);
        assert_eq!(unexpanded_size("7 (expanded: x)"), None);
    }

    #[test]
    fn set_at_end_is_written_only_by_restore() {
        let root = std::env::temp_dir().join(format!("rtlat-tracefs-end-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).unwrap();
        fs::write(root.join("buffer_size_kb"), "7 (expanded: 1408)\n").unwrap();
        let mut s = Session {
            root: root.clone(),
            saved: Vec::new(),
            instances: Vec::new(),
            state_file: root.join("state"),
            restored: false,
            uses: Uses::Global,
        };
        s.set_at_end("buffer_size_kb", "1408").unwrap();
        let persisted = State::parse(&fs::read_to_string(root.join("state")).unwrap());
        assert_eq!(
            persisted.saved,
            vec![("buffer_size_kb".into(), "1408".into())]
        );
        assert_eq!(
            fs::read_to_string(root.join("buffer_size_kb")).unwrap(),
            "7 (expanded: 1408)\n"
        );
        fs::write(root.join("buffer_size_kb"), "7\n").unwrap();
        assert!(s.restore().is_empty());
        assert_eq!(
            fs::read_to_string(root.join("buffer_size_kb")).unwrap(),
            "1408\n"
        );
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_file_of_choices_is_saved_as_its_choice() {
        assert_eq!(selected("local [global] counter uptime"), "global");
        assert_eq!(selected("0-3"), "0-3");
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join("trace_clock"), "local [global] mono\n").expect("write");
        let mut s = Session {
            root: dir.path().to_path_buf(),
            saved: Vec::new(),
            instances: Vec::new(),
            state_file: dir.path().join("state"),
            restored: false,
            uses: Uses::Global,
        };
        s.set("trace_clock", "mono").expect("set");
        assert_eq!(s.saved, [("trace_clock".to_string(), "global".to_string())]);
        s.restore();
        assert_eq!(
            read_value(&dir.path().join("trace_clock")).ok().as_deref(),
            Some("global")
        );
    }

    #[test]
    fn stats_give_overruns_and_dropped_events() {
        let text = "entries: 12\noverrun: 3\ncommit overrun: 0\nbytes: 100\noldest event ts:  1.0\nnow ts:  2.0\ndropped events: 5\nread events: 7\n";
        assert_eq!(parse_stats(text), (3, 5));
        assert_eq!(parse_stats(""), (0, 0));
    }

    /// A state file of run `pid` in `dir`, using `uses`, that made
    /// instance `inst` under `root`.
    fn plant(dir: &Path, root: &Path, pid: u32, uses: Uses, inst: &str) {
        fs::create_dir_all(root.join(inst)).unwrap();
        let st = State {
            pid,
            saved: Vec::new(),
            instances: vec![inst.to_string()],
            uses,
        };
        fs::write(dir.join(format!("tracefs-{pid}.state")), st.to_text()).unwrap();
    }

    #[test]
    fn runs_of_their_own_instances_coexist_and_global_ones_take_turns() {
        let t = tempfile::tempdir().unwrap();
        let (dir, root) = (t.path().join("run"), t.path().join("tracefs"));
        fs::create_dir_all(&dir).unwrap();
        // pid 1 is alive: a live run of each kind.
        plant(&dir, &root, 1, Uses::Global, "instances/rtlat-1");
        let err = Session::begin_in(&dir, &root, Uses::Global).unwrap_err();
        assert!(err.contains("another rtlat run (pid 1)"), "{err}");
        let (mut s, notes) = Session::begin_in(&dir, &root, Uses::Instances).unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        assert!(
            root.join("instances/rtlat-1").exists(),
            "a live run's instance is left alone"
        );
        s.restore();
        fs::remove_file(dir.join("tracefs-1.state")).unwrap();
        plant(&dir, &root, 1, Uses::Instances, "instances/rtlat-1");
        let (mut s, _) = Session::begin_in(&dir, &root, Uses::Global).unwrap();
        let (mut s2, _) = Session::begin_in(&dir, &root, Uses::Instances).unwrap();
        s2.restore();
        s.restore();
        assert!(root.join("instances/rtlat-1").exists());
    }

    #[test]
    fn a_killed_runs_instance_is_removed_at_the_next_start() {
        let t = tempfile::tempdir().unwrap();
        let (dir, root) = (t.path().join("run"), t.path().join("tracefs"));
        fs::create_dir_all(&dir).unwrap();
        // No process has this pid (above pid_max's largest value).
        let dead = 4_194_305;
        let state = dir.join(format!("tracefs-{dead}.state"));
        plant(&dir, &root, dead, Uses::Instances, "instances/rtlat-dead");
        let (mut s, notes) = Session::begin_in(&dir, &root, Uses::Instances).unwrap();
        s.restore();
        // Undone: its tracing stopped. A plain directory keeps the files
        // undo wrote, as a busy instance refuses to go: its state stays,
        // for the next run to try again.
        let inst = root.join("instances/rtlat-dead");
        assert_eq!(fs::read_to_string(inst.join("tracing_on")).unwrap(), "0\n");
        assert!(
            notes[0].contains(&format!("killed rtlat run (pid {dead})")),
            "{notes:?}"
        );
        assert!(notes[0].contains("cannot remove"), "{notes:?}");
        assert!(state.exists());
        // Once it is gone, the next run forgets its state.
        fs::remove_dir_all(&inst).unwrap();
        let (mut s, notes) = Session::begin_in(&dir, &root, Uses::Instances).unwrap();
        s.restore();
        assert!(!state.exists(), "{notes:?}");
        assert!(!notes[0].contains("cannot"), "{notes:?}");
    }

    #[test]
    fn a_state_file_says_whether_its_run_used_only_its_instances() {
        let st = State {
            pid: 7,
            saved: vec![("trace_clock".into(), "local".into())],
            instances: vec!["instances/rtlat-7".into()],
            uses: Uses::Instances,
        };
        assert_eq!(State::parse(&st.to_text()), st);
        let old = "pid 7\ninstance instances/rtlat-7\n";
        assert_eq!(State::parse(old).uses, Uses::Global);
    }
}
