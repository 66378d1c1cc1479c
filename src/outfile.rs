//! The one writer of every output file (`--json`, `import -o`, `report
//! --svg/--html`, `compare --svg`, `load --json`).
//!
//! A path that names a regular file, or nothing yet, is replaced atomically:
//! a temporary file in the same directory, fsync, rename — a reader (or a
//! crash) sees the old file or the new one, never a mix. A symbolic link is
//! followed and its target replaced the same way; the link stays a link.
//! Anything else — a character device such as `/dev/null`, a FIFO, a socket,
//! `/dev/stdout` — is opened and written in place, never replaced: rtlat runs
//! as root and must not turn a device node into a regular file.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// How a destination is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A regular file (or none yet) at this path, replaced atomically.
    Replace(PathBuf),
    /// A device, FIFO or socket, written in place (through this path).
    InPlace(PathBuf),
}

impl Destination {
    /// What `path` names now; a link is followed to what it points at.
    pub fn of(path: &Path) -> io::Result<Destination> {
        let meta = match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Destination::Replace(path.to_path_buf()))
            }
            other => other?,
        };
        if meta.file_type().is_symlink() {
            return match std::fs::metadata(path) {
                // A link to a regular file: replace the file it points at.
                Ok(m) if m.is_file() => Ok(Destination::Replace(std::fs::canonicalize(path)?)),
                Ok(m) if m.is_dir() => Err(is_a_directory()),
                // A link to a device, FIFO or socket (`/dev/stdout`): write through it.
                Ok(_) => Ok(Destination::InPlace(path.to_path_buf())),
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
        } else {
            Ok(Destination::InPlace(path.to_path_buf()))
        }
    }

    /// Whether a rewrite during a run makes sense: a file is rewritten whole
    /// each time; a device or FIFO would receive every copy, so it gets only
    /// the final one.
    pub fn takes_rewrites(&self) -> bool {
        matches!(self, Destination::Replace(_))
    }

    /// Check before any work that the destination can be written: the
    /// directory exists and takes a new file, a device opens. A FIFO is not
    /// opened (its reader would see the end of its input): it must have a
    /// reader when the result is written.
    pub fn check(&self) -> io::Result<()> {
        match self {
            Destination::Replace(path) => {
                let (dir, name) = split(path);
                let probe = dir.join(format!(".{name}.check{}", std::process::id()));
                File::create(&probe)?;
                std::fs::remove_file(&probe)
            }
            Destination::InPlace(path) => {
                if std::fs::metadata(path)?.file_type().is_fifo() {
                    return Ok(());
                }
                open_in_place(path).map(drop)
            }
        }
    }

    /// Write the whole content, `fill` streaming it (a newline is added at the end).
    pub fn write_with(
        &self,
        fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
    ) -> io::Result<()> {
        match self {
            Destination::Replace(path) => replace(path, fill),
            Destination::InPlace(path) => {
                let mut w = BufWriter::new(open_in_place(path)?);
                fill(&mut w)?;
                w.write_all(b"\n")?;
                w.flush()
            }
        }
    }
}

/// Print `text` on stdout. A closed stdout (`rtlat … | head -1`) is not an
/// error and never a panic: the rest of the text is dropped, as cat and
/// ripgrep do, and the run goes on (its result file is still written).
pub fn print(text: &str) {
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

/// The destination of an output file, checked before any work: exit 4 with
/// the fix when it cannot be written, or when its file system has less than
/// [`MIN_ROOM`] free.
pub fn checked(path: &Path) -> crate::error::Result<Destination> {
    checked_with_room(path, MIN_ROOM)
}

/// [`checked`], with room for at least `bytes` (e.g. the first save of a
/// result; a device or FIFO is not checked for room).
pub fn checked_with_room(path: &Path, bytes: u64) -> crate::error::Result<Destination> {
    Destination::of(path)
        .and_then(|d| d.check().map(|()| d))
        .and_then(|d| d.check_room(bytes).map(|()| d))
        .map_err(|e| write_error(path, e))
}

impl Destination {
    /// ENOSPC when a new file of `bytes` (written beside the old one, as an
    /// atomic replacement is) does not fit in the directory's file system.
    fn check_room(&self, bytes: u64) -> io::Result<()> {
        let Destination::Replace(path) = self else {
            return Ok(());
        };
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

/// The one error line of an output file that cannot be written (exit 4).
pub fn write_error(path: &Path, e: io::Error) -> crate::error::Error {
    let fix = match e.kind() {
        io::ErrorKind::NotFound => "create the directory first",
        io::ErrorKind::PermissionDenied => "choose a writable place",
        _ if e.raw_os_error() == Some(libc::EISDIR) => "name a file, not a directory",
        _ if e.raw_os_error() == Some(libc::ENXIO) => "start the FIFO's reader first",
        _ if e.raw_os_error() == Some(libc::ENOSPC) => "free some space",
        _ => "check the path and free space",
    };
    crate::error::Error::io(format!("cannot write {}: {e}; {fix}", path.display())).because(e)
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

fn is_a_directory() -> io::Error {
    io::Error::from_raw_os_error(libc::EISDIR)
}

fn split(path: &Path) -> (&Path, String) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "result".into());
    (dir, name)
}

/// Open a device, FIFO or socket for writing without truncating or replacing
/// it; a FIFO without a reader fails at once (ENXIO) instead of blocking.
fn open_in_place(path: &Path) -> io::Result<File> {
    let f = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    // Written with ordinary blocking writes once open.
    rustix::io::ioctl_fionbio(&f, false)?;
    Ok(f)
}

/// The atomic replacement of a regular file.
fn replace(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    let (dir, name) = split(path);
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    let result = (|| {
        let mut w = BufWriter::new(File::create(&tmp)?);
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
    fn devices_are_written_in_place_and_never_replaced() {
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
        let full = Path::new("/dev/full");
        if full.exists() {
            let e = write(full, &[b' '; 65536]).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
            assert!(std::fs::metadata(full)
                .unwrap()
                .file_type()
                .is_char_device());
        }
    }

    #[test]
    fn a_fifo_without_a_reader_fails_at_once_and_one_with_a_reader_gets_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let d = Destination::of(&fifo).unwrap();
        assert!(!d.takes_rewrites());
        d.check().expect("a FIFO is not opened by the check");
        let alone = d.write_with(|w| w.write_all(b"x")).unwrap_err();
        assert_eq!(alone.raw_os_error(), Some(libc::ENXIO));
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
        };
        // The reader opens the FIFO; write as soon as it is there.
        let mut tries = 0;
        while let Err(e) = d.write_with(|w| w.write_all(b"{\"ok\":true}")) {
            assert_eq!(e.raw_os_error(), Some(libc::ENXIO));
            tries += 1;
            assert!(tries < 500, "the reader never opened the FIFO");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(reader.join().unwrap(), "{\"ok\":true}\n");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
    }

    #[test]
    fn a_directory_or_a_missing_directory_is_refused_before_any_work() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            Destination::of(dir.path()).unwrap_err().raw_os_error(),
            Some(libc::EISDIR)
        );
        let missing = dir.path().join("no/such/dir/r.json");
        let d = Destination::of(&missing).unwrap();
        assert_eq!(d.check().unwrap_err().kind(), io::ErrorKind::NotFound);
    }
}
