//! The one writer of every output file (`--json`, `import -o`, `report
//! --svg/--html`, `compare --svg`, `load --json`).
//!
//! An output is a regular file (or nothing yet), standard output (`-` or
//! `/dev/stdout`) or `/dev/null`. A FIFO, socket or any other device is
//! refused before any work (exit 2): nothing may read it, and a run must
//! never wait on it.
//!
//! A regular file is replaced atomically: a temporary file in the same
//! directory, fsync, rename — a reader (or a crash) sees the old file or the
//! new one, never a mix. Every file rtlat creates beside an output (the
//! temporary file, the writability probe) has an unpredictable name and is
//! created with O_EXCL|O_NOFOLLOW: a link planted in a shared directory is
//! never followed, so it can never make root write another file. A link at
//! the output's own name is followed (the link stays a link, its target is
//! replaced) when its owner is this user or the directory's: a link another
//! user planted in a sticky directory such as /tmp is refused, as the
//! kernel's `fs.protected_symlinks` refuses it.
//!
//! A regular output is locked from the check before any work to the last
//! write ([`Output`]): a second rtlat writing the same file is refused
//! before it measures (exit 4, naming the writer).

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// How a destination is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A regular file (or none yet) at this path, replaced atomically.
    Replace(PathBuf),
    /// The null device, written in place (through this path).
    InPlace(PathBuf),
    /// Standard output (`-`, `/dev/stdout`), written in place.
    Stdout,
}

/// Why a path cannot be an output whatever its permissions (exit 2).
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

fn refused(why: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, Refused(why.into()))
}

/// The refusal of something that is neither a regular file nor the null device.
fn not_a_file(kind: std::fs::FileType) -> io::Error {
    let what = if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    };
    refused(format!(
        "is {what}; results go only to a regular file, - (standard output) or /dev/null"
    ))
}

/// Whether `meta` is the null device (wherever its node is).
fn is_null_device(meta: &std::fs::Metadata) -> bool {
    meta.file_type().is_char_device() && meta.rdev() == libc::makedev(1, 3)
}

impl Destination {
    /// What `path` names now; a link is followed to what it points at.
    pub fn of(path: &Path) -> io::Result<Destination> {
        if path.as_os_str() == "-" || path == Path::new("/dev/stdout") {
            return Ok(Destination::Stdout);
        }
        let meta = match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Destination::Replace(path.to_path_buf()))
            }
            other => other?,
        };
        if meta.file_type().is_symlink() {
            check_link_owner(path, &meta)?;
            return match std::fs::metadata(path) {
                // A link to a regular file: replace the file it points at.
                Ok(m) if m.is_file() => Ok(Destination::Replace(std::fs::canonicalize(path)?)),
                Ok(m) if m.is_dir() => Err(is_a_directory()),
                Ok(m) if is_null_device(&m) => Ok(Destination::InPlace(path.to_path_buf())),
                Ok(m) => Err(not_a_file(m.file_type())),
                // A dangling link: create what it points at.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    let target = std::fs::read_link(path)?;
                    let base = path.parent().unwrap_or(Path::new("."));
                    Ok(Destination::Replace(base.join(target)))
                }
                Err(e) => Err(e),
            };
        }
        let kind = meta.file_type();
        if kind.is_dir() {
            Err(is_a_directory())
        } else if kind.is_file() {
            Ok(Destination::Replace(path.to_path_buf()))
        } else if is_null_device(&meta) {
            Ok(Destination::InPlace(path.to_path_buf()))
        } else {
            Err(not_a_file(kind))
        }
    }

    /// Whether a rewrite during a run makes sense: a file is rewritten whole
    /// each time; standard output would receive every copy, so it gets only
    /// the final one.
    pub fn takes_rewrites(&self) -> bool {
        matches!(self, Destination::Replace(_))
    }

    /// Check before any work that the destination can be written: the
    /// directory exists and takes a new file, the null device opens.
    pub fn check(&self) -> io::Result<()> {
        match self {
            Destination::Replace(path) => {
                let (dir, name) = split(path);
                let (probe, _) = create_beside(dir, &name, "check")?;
                std::fs::remove_file(&probe)
            }
            Destination::InPlace(path) => open_in_place(path).map(drop),
            Destination::Stdout => Ok(()),
        }
    }

    /// Write the whole content, `fill` streaming it (a newline is added at the end).
    pub fn write_with(
        &self,
        fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
    ) -> io::Result<()> {
        let file = match self {
            Destination::Replace(path) => return replace(path, fill),
            Destination::InPlace(path) => open_in_place(path)?,
            Destination::Stdout => File::from(rustix::io::dup(io::stdout())?),
        };
        let mut w = BufWriter::new(file);
        fill(&mut w)?;
        w.write_all(b"\n")?;
        w.flush()
    }
}

/// Refuse to follow a link another user planted in a sticky directory
/// (/tmp): the rule of the kernel's `fs.protected_symlinks`, which a path
/// resolved by rtlat itself (to replace the link's target) would bypass.
fn check_link_owner(path: &Path, link: &std::fs::Metadata) -> io::Result<()> {
    let (dir, _) = split(path);
    let dir = std::fs::metadata(dir)?;
    let sticky = dir.mode() & libc::S_ISVTX != 0;
    let me = rustix::process::geteuid().as_raw();
    if sticky && link.uid() != me && link.uid() != dir.uid() {
        return Err(refused(
            "is a symbolic link another user owns in a shared directory; name the file itself",
        ));
    }
    Ok(())
}

/// A destination checked before any work, with its lock: no other rtlat
/// writes the same file while this is held.
#[derive(Debug)]
pub struct Output {
    dest: Destination,
    _lock: Option<Lock>,
}

impl std::ops::Deref for Output {
    type Target = Destination;
    fn deref(&self) -> &Destination {
        &self.dest
    }
}

/// Set once an output is standard output: text for people goes to stderr.
static STDOUT_IS_OUTPUT: AtomicBool = AtomicBool::new(false);

/// Print `text` on stdout, or on stderr once standard output carries an
/// output (`--json -`), which must stay only that. A closed stdout (`rtlat
/// … | head -1`) is not an error and never a panic: the rest of the text is
/// dropped, as cat and ripgrep do, and the run goes on (its result file is
/// still written).
pub fn print(text: &str) {
    if STDOUT_IS_OUTPUT.load(Ordering::Relaxed) {
        let mut err = io::stderr().lock();
        let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
        return;
    }
    let mut out = io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// `println!` through [`print`]: never panics on a closed stdout.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::outfile::print(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// Room a new file needs at least when its size is not known yet (a result
/// file of one thread is larger).
pub const MIN_ROOM: u64 = 16 << 10;

/// The destination of an output file, checked and locked before any work:
/// exit 2 when it cannot be an output, exit 4 with the fix when it cannot be
/// written, when another rtlat writes it, or when its file system has less
/// than [`MIN_ROOM`] free. Keep the [`Output`] until the last write.
pub fn checked(path: &Path) -> crate::error::Result<Output> {
    checked_with_room(path, MIN_ROOM)
}

/// [`checked`], with room for at least `bytes` (e.g. the first save of a
/// result; standard output and /dev/null are not checked for room).
pub fn checked_with_room(path: &Path, bytes: u64) -> crate::error::Result<Output> {
    (|| {
        let dest = Destination::of(path)?;
        if dest == Destination::Stdout {
            STDOUT_IS_OUTPUT.store(true, Ordering::Relaxed);
        }
        let lock = match &dest {
            Destination::Replace(p) => Some(Lock::take(p)?),
            _ => None,
        };
        dest.check()?;
        dest.check_room(bytes)?;
        Ok(Output { dest, _lock: lock })
    })()
    .map_err(|e| write_error(path, e))
}

impl Destination {
    /// ENOSPC when a new file of `bytes` (written beside the old one, as an
    /// atomic replacement is) does not fit in the directory's file system;
    /// EFBIG when the file size limit (`ulimit -f`) is below it.
    fn check_room(&self, bytes: u64) -> io::Result<()> {
        let Destination::Replace(path) = self else {
            return Ok(());
        };
        let limit = rustix::process::getrlimit(rustix::process::Resource::Fsize).current;
        if limit.is_some_and(|l| l < bytes) {
            return Err(io::Error::from_raw_os_error(libc::EFBIG));
        }
        let st = rustix::fs::statvfs(split(path).0)?;
        // Root may use the blocks reserved for it.
        let blocks = if rustix::process::geteuid().is_root() {
            st.f_bfree
        } else {
            st.f_bavail
        };
        if blocks.saturating_mul(st.f_frsize.max(1)) < bytes {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        Ok(())
    }
}

/// The one error line of an output file that cannot be written (exit 4), or
/// that cannot be an output at all (exit 2).
pub fn write_error(path: &Path, e: io::Error) -> crate::error::Error {
    if let Some(r) = e.get_ref().and_then(|r| r.downcast_ref::<Refused>()) {
        return crate::error::Error::usage(format!("{} {r}", path.display()));
    }
    if let Some(b) = e.get_ref().and_then(|r| r.downcast_ref::<Busy>()) {
        return crate::error::Error::io(format!("cannot write {}: {b}", path.display()));
    }
    let fix = crate::error::limit_fix(&e).unwrap_or(match e.kind() {
        io::ErrorKind::NotFound => "create the directory first",
        io::ErrorKind::PermissionDenied => "choose a writable place",
        _ if e.raw_os_error() == Some(libc::ELOOP) => "remove the link planted beside it",
        _ if e.raw_os_error() == Some(libc::ENOSPC) => "free some space",
        _ => "check the path and free space",
    });
    crate::error::Error::io(format!("cannot write {}: {e}; {fix}", path.display())).because(e)
}

/// The directory an option (`suite --out`, `man DIR`) names to write into,
/// created if it does not exist; its parent must (as an output file's
/// directory must: rtlat creates no path of directories).
pub fn make_dir(dir: &Path, option: &str) -> crate::error::Result<()> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => {
            let parent_missing = dir
                .parent()
                .is_some_and(|p| !p.as_os_str().is_empty() && !p.is_dir());
            let fix = match e.kind() {
                io::ErrorKind::NotFound if parent_missing => "create its parent directory first",
                io::ErrorKind::AlreadyExists => "it is a file: name a directory",
                _ => "choose a writable place",
            };
            Err(crate::error::Error::io(format!(
                "cannot create {option} {}: {e}; {fix}",
                dir.display()
            ))
            .because(e))
        }
    }
}

/// A directory held by one rtlat at a time (a suite's `--out`), through
/// the lock file `.NAME.lock` inside it, taken as an output's is.
#[derive(Debug)]
pub struct DirLock {
    _lock: Lock,
}

/// Lock the suite directory `dir` through `.NAME.lock`, or fail at once
/// (exit 4) naming the rtlat that holds it; `option` names the directory's
/// option in the error.
pub fn lock_dir(dir: &Path, name: &str, option: &str) -> crate::error::Result<DirLock> {
    let say = |holder: Option<String>| {
        let who = holder.map_or_else(
            || "another rtlat".to_string(),
            |p| format!("another rtlat (pid {p})"),
        );
        format!("{who} is running a suite into it; wait for it to end or choose another {option}")
    };
    match Lock::take_saying(&dir.join(name), say) {
        Ok(lock) => Ok(DirLock { _lock: lock }),
        Err(e) => {
            let why = match e.get_ref().and_then(|r| r.downcast_ref::<Busy>()) {
                Some(b) => b.0.clone(),
                None => format!("{e}; choose a writable {option}"),
            };
            Err(crate::error::Error::io(format!("{option} {}: {why}", dir.display())).because(e))
        }
    }
}

/// Refuse (exit 2) two options of one command naming the same output
/// (`options`: each option's name and its path): the same path as given,
/// standard output twice, or one existing file under two names.
pub fn refuse_same_output(options: &[(&str, &Path)]) -> crate::error::Result<()> {
    let id = |p: &Path| match Destination::of(p) {
        Ok(Destination::Stdout) => Some((0, 0)),
        Ok(Destination::InPlace(_)) => None,
        _ => std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino())),
    };
    for (i, (a, pa)) in options.iter().enumerate() {
        for (b, pb) in &options[i + 1..] {
            let same_id = id(pa).is_some() && id(pa) == id(pb);
            if same_id || (pa == pb && !matches!(Destination::of(pa), Ok(Destination::InPlace(_))))
            {
                return Err(crate::error::Error::usage(format!(
                    "{a} {} and {b} {} are the same output; give each its own file",
                    pa.display(),
                    pb.display()
                )));
            }
        }
    }
    Ok(())
}

/// Refuse (exit 2) a command whose output is one of its inputs: writing it
/// would destroy what is being read. Files are compared by device and inode,
/// links resolved; outputs and inputs that do not exist yet cannot clash.
pub fn refuse_inputs<'a>(
    outputs: impl IntoIterator<Item = &'a Path>,
    inputs: impl IntoIterator<Item = &'a Path> + Clone,
) -> crate::error::Result<()> {
    let id = |p: &Path| -> Option<(u64, u64)> {
        let m = if p.as_os_str() == "-" {
            return None;
        } else {
            std::fs::metadata(p).ok()?
        };
        m.is_file().then(|| (m.dev(), m.ino()))
    };
    for out in outputs {
        let Some(o) = id(out) else { continue };
        for input in inputs.clone() {
            if id(input) == Some(o) {
                return Err(crate::error::Error::usage(format!(
                    "{} is also an input of this command ({}); write to another file",
                    out.display(),
                    input.display()
                )));
            }
        }
    }
    Ok(())
}

/// Write `path` (see the module doc); `fill` streams the content.
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    Destination::of(path)?.write_with(fill)
}

/// Write `bytes` to `path` (see the module doc), then a newline.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(path, |w| w.write_all(bytes))
}

/// A directory named where a file is wanted: not an output at all (exit 2,
/// as any output that is not a regular file).
fn is_a_directory() -> io::Error {
    refused("is a directory; name a file in it, e.g. DIR/result.json")
}

fn split(path: &Path) -> (&Path, String) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "result".into());
    // Room in NAME_MAX (255) for the dot and suffix of the files beside it.
    while name.len() > 200 {
        name.pop();
    }
    (dir, name)
}

/// A random suffix for the name of a file beside an output: another user
/// cannot guess it to plant something there first.
fn random_suffix() -> io::Result<String> {
    let mut bytes = [0u8; 8];
    match rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty()) {
        Ok(n) if n == bytes.len() => {}
        // No getrandom(2) (or a short read): the same pool through its device.
        _ => io::Read::read_exact(&mut File::open("/dev/urandom")?, &mut bytes)?,
    }
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Create `.NAME.WHATxxxxxxxxxxxxxxxx` in `dir`: a new file (O_EXCL), never
/// through a link (O_NOFOLLOW), under a name nobody can guess; another name
/// is tried if one exists.
fn create_beside(dir: &Path, name: &str, what: &str) -> io::Result<(PathBuf, File)> {
    create_beside_with(dir, name, what, random_suffix)
}

/// [`create_beside`] with the suffixes `suffix` gives, one a try: the
/// tests give names they planted something at first.
fn create_beside_with(
    dir: &Path,
    name: &str,
    what: &str,
    mut suffix: impl FnMut() -> io::Result<String>,
) -> io::Result<(PathBuf, File)> {
    let mut tries = 0;
    loop {
        let path = dir.join(format!(".{name}.{what}{}", suffix()?));
        let made = OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path);
        match made {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 16 => tries += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Open the null device for writing without truncating or replacing it.
fn open_in_place(path: &Path) -> io::Result<File> {
    let f = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    // What was opened is checked again: the path may have changed since.
    if !is_null_device(&f.metadata()?) {
        return Err(not_a_file(f.metadata()?.file_type()));
    }
    rustix::io::ioctl_fionbio(&f, false)?;
    Ok(f)
}

/// The atomic replacement of a regular file.
fn replace(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    let (dir, name) = split(path);
    let (tmp, file) = create_beside(dir, &name, "tmp")?;
    let result = (|| {
        let mut w = BufWriter::new(file);
        fill(&mut w)?;
        w.write_all(b"\n")?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Another rtlat holds the lock of an output (exit 4).
#[derive(Debug)]
struct Busy(String);

impl std::fmt::Display for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Busy {}

/// An advisory lock (flock) on `.NAME.lock` beside a regular output. The
/// output itself cannot carry it: each write replaces its inode. The lock
/// file is opened without following a link and never written; it is
/// removed when the lock is let go.
#[derive(Debug)]
struct Lock {
    path: PathBuf,
    _file: File,
}

impl Lock {
    /// Take the lock of the output `out`, or fail at once naming its holder.
    fn take(out: &Path) -> io::Result<Lock> {
        Lock::take_saying(out, |holder| busy_message(out, holder))
    }

    /// [`Lock::take`], `busy` saying what the holder (its pid, if known) does.
    fn take_saying(out: &Path, busy: impl Fn(Option<String>) -> String) -> io::Result<Lock> {
        let (dir, name) = split(out);
        let path = dir.join(format!(".{name}.lock"));
        loop {
            let file = OpenOptions::new()
                .write(true)
                .create(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
                .open(&path)?;
            let meta = file.metadata()?;
            if !meta.is_file() {
                return Err(refused(format!(
                    "cannot be locked: {} is not a regular file; remove it",
                    path.display()
                )));
            }
            let op = rustix::fs::FlockOperation::NonBlockingLockExclusive;
            if let Err(e) = rustix::fs::flock(&file, op) {
                if e != rustix::io::Errno::WOULDBLOCK {
                    return Err(e.into());
                }
                return Err(io::Error::other(Busy(busy(holder(&meta)))));
            }
            // Locked; unless the holder before removed the file meanwhile
            // (then a new one may be locked by someone else): try again.
            match std::fs::symlink_metadata(&path) {
                Ok(now) if now.dev() == meta.dev() && now.ino() == meta.ino() => {
                    return Ok(Lock { path, _file: file })
                }
                _ => continue,
            }
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Removed while still locked: a waiter that opened it sees it gone.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The pid holding the lock file `meta` (from /proc/locks), if known.
fn holder(meta: &std::fs::Metadata) -> Option<String> {
    let id = format!(
        "{:02x}:{:02x}:{}",
        libc::major(meta.dev()),
        libc::minor(meta.dev()),
        meta.ino()
    );
    std::fs::read_to_string("/proc/locks")
        .ok()
        .and_then(|locks| {
            locks
                .lines()
                .filter(|l| !l.contains("->"))
                .find(|l| l.split_whitespace().nth(5) == Some(id.as_str()))
                .and_then(|l| l.split_whitespace().nth(4).map(str::to_owned))
        })
}

/// Who holds the lock of the output `out` (`holder`), in a sentence.
fn busy_message(out: &Path, holder: Option<String>) -> String {
    let who = match holder {
        Some(pid) if pid == std::process::id().to_string() => {
            return format!(
                "{} is named twice as an output; name each output once",
                out.display()
            )
        }
        Some(pid) => format!("another rtlat (pid {pid})"),
        None => "another rtlat".to_string(),
    };
    format!(
        "{who} is writing {}; wait for it to end or choose another file",
        out.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_new_path_and_a_file_are_replaced_and_no_temporary_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        write(&p, b"{\"a\":1}").unwrap();
        write(&p, b"{\"a\":2}").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"a\":2}\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_symlink_stays_a_link_and_its_target_gets_the_content() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.json");
        std::fs::write(&target, "old").unwrap();
        let link = dir.path().join("link.json");
        symlink("target.json", &link).unwrap();
        write(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new\n");
        // A dangling link creates its target.
        let dangling = dir.path().join("dangling.json");
        symlink("made.json", &dangling).unwrap();
        write(&dangling, b"x").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("made.json")).unwrap(),
            "x\n"
        );
    }

    #[test]
    fn only_the_null_device_is_written_in_place_and_never_replaced() {
        let null = Path::new("/dev/null");
        assert_eq!(
            Destination::of(null).unwrap(),
            Destination::InPlace(null.into())
        );
        write(null, b"{}").unwrap();
        assert!(std::fs::metadata(null)
            .unwrap()
            .file_type()
            .is_char_device());
        assert_eq!(
            Destination::of(Path::new("-")).unwrap(),
            Destination::Stdout
        );
        let zero = Path::new("/dev/zero");
        if zero.exists() {
            let e = Destination::of(zero).unwrap_err();
            assert!(e.to_string().contains("is a device"), "{e}");
            let shown = write_error(zero, e);
            assert_eq!(shown.exit_code(), crate::error::exit::USAGE);
        }
    }

    #[test]
    fn a_fifo_is_refused_and_never_opened() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let e = Destination::of(&fifo).unwrap_err();
        assert!(e.to_string().contains("is a FIFO"), "{e}");
        assert!(write(&fifo, b"x").is_err());
        let e = checked(&fifo).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::exit::USAGE);
        assert!(e.message().contains("regular file"), "{}", e.message());
    }

    #[test]
    fn files_beside_an_output_get_new_unguessable_names() {
        let dir = tempfile::tempdir().unwrap();
        let (a, _) = create_beside(dir.path(), "r.json", "tmp").unwrap();
        let (b, _) = create_beside(dir.path(), "r.json", "tmp").unwrap();
        assert_ne!(a, b);
        let name = a.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(".r.json.tmp") && name.len() == ".r.json.tmp".len() + 16);
        // A long name still leaves room for the suffix.
        let long = "x".repeat(255);
        create_beside(dir.path(), &split(&dir.path().join(&long)).1, "tmp").unwrap();
    }

    /// The planted name of the tests below, and the fresh one after it.
    const PLANTED: &str = "00000000000000aa";
    const FRESH: &str = "00000000000000bb";

    /// Suffixes `PLANTED`, then `FRESH`.
    fn planted_then_fresh() -> impl FnMut() -> io::Result<String> {
        let mut given = 0;
        move || {
            given += 1;
            Ok(if given == 1 { PLANTED } else { FRESH }.to_string())
        }
    }

    #[test]
    fn a_link_or_file_planted_at_the_temporary_name_is_never_opened() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let planted = |what: &str| dir.path().join(format!(".r.json.{what}{PLANTED}"));
        let fresh = |what: &str| dir.path().join(format!(".r.json.{what}{FRESH}"));
        let kind = |p: &Path| std::fs::symlink_metadata(p).unwrap().file_type();

        // A link to a file: without O_EXCL and O_NOFOLLOW, the victim would
        // be opened and written. Either flag alone refuses it (with
        // O_CREAT|O_EXCL, open(2) never follows a link at the name); without
        // O_EXCL, the plants after it are opened.
        symlink(&victim, planted("tmp")).unwrap();
        // A dangling link: without them, its target would be created.
        symlink("made", planted("check")).unwrap();
        // A hard link to the victim: without O_EXCL, it would be written.
        std::fs::hard_link(&victim, planted("hard")).unwrap();
        // A FIFO, its read end held open so that a wrong open cannot block.
        let fifo = planted("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let _reader = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();

        for what in ["tmp", "check", "hard", "fifo"] {
            let (path, mut file) =
                create_beside_with(dir.path(), "r.json", what, planted_then_fresh()).unwrap();
            // The planted name was refused and the next one created anew.
            assert_eq!(path, fresh(what), "{what}");
            assert!(kind(&path).is_file(), "{what}");
            assert_eq!(
                file.metadata().unwrap().ino(),
                std::fs::metadata(&path).unwrap().ino()
            );
            file.write_all(b"written").unwrap();
            drop(file);
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "written", "{what}");
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(kind(&planted("tmp")).is_symlink());
        assert_eq!(std::fs::read_link(planted("tmp")).unwrap(), victim);
        assert!(kind(&planted("check")).is_symlink());
        assert!(
            !dir.path().join("made").exists(),
            "a dangling link was followed"
        );
        assert_eq!(
            std::fs::read_to_string(planted("hard")).unwrap(),
            "precious"
        );
        assert!(kind(&fifo).is_fifo());

        // Every name tried is planted: a few tries, then the error of a name
        // that exists, nothing followed.
        let mut tries = 0;
        let e = create_beside_with(dir.path(), "r.json", "tmp", || {
            tries += 1;
            Ok(PLANTED.to_string())
        })
        .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
        assert_eq!(tries, 17);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[test]
    fn a_link_planted_at_the_lock_name_is_refused_naming_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let lock = dir.path().join(".r.json.lock");
        symlink(&victim, &lock).unwrap();
        let out = dir.path().join("r.json");
        // Run aside: a lock that followed the link would loop for ever.
        let (tx, rx) = std::sync::mpsc::channel();
        let p = out.clone();
        std::thread::spawn(move || tx.send(checked(&p).map(drop)).unwrap());
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the lock followed the planted link");
        let e = got.unwrap_err();
        assert_eq!(e.exit_code(), crate::error::exit::IO);
        assert!(
            e.message().contains("remove the link planted beside it"),
            "{}",
            e.message()
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(std::fs::symlink_metadata(&lock)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(!out.exists());
    }

    #[test]
    fn a_second_writer_of_one_output_is_refused_until_the_first_is_done() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        let first = checked(&p).unwrap();
        let e = checked(&p).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::exit::IO);
        assert!(e.message().contains("r.json"), "{}", e.message());
        drop(first);
        let again = checked(&p).unwrap();
        drop(again);
        // Nothing is left beside the output.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn an_output_that_is_an_input_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("r.json");
        std::fs::write(&input, "{}").unwrap();
        let link = dir.path().join("link.json");
        symlink(&input, &link).unwrap();
        let other = dir.path().join("other.json");
        let e = refuse_inputs([link.as_path()], [other.as_path(), input.as_path()]).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::exit::USAGE);
        refuse_inputs([other.as_path()], [input.as_path()]).unwrap();
    }

    #[test]
    fn a_directory_or_a_missing_directory_is_refused_before_any_work() {
        let dir = tempfile::tempdir().unwrap();
        let e = Destination::of(dir.path()).unwrap_err();
        let e = write_error(dir.path(), e);
        assert_eq!(e.exit_code(), crate::error::exit::USAGE, "{e}");
        assert!(e.to_string().contains("is a directory"), "{e}");
        let missing = dir.path().join("no/such/dir/r.json");
        let d = Destination::of(&missing).unwrap();
        assert_eq!(d.check().unwrap_err().kind(), io::ErrorKind::NotFound);
    }
}
