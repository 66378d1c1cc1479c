//! The core kernel's text symbols (from `_stext` to `_etext`), kept per
//! boot: they do not change while the kernel runs, and generating
//! /proc/kallsyms costs the kernel tens of ms on every read. Stacks whose
//! frames all lie in the core kernel are named from this table; a frame in
//! a module (whose symbols come and go) sends the run to /proc/kallsyms.
//!
//! The table is a file of root's (written when the first run of a boot
//! reads /proc/kallsyms, through [`crate::outfile`]), checked before use:
//! its boot, its owner and mode, and its sizes. It is searched where it lies, a few reads per
//! frame (its 4 MB are never held), each entry read checked: an entry out
//! of place names nothing.

use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Where the table is kept, beside the runs' tracefs state (/run is
/// emptied at every boot): a directory only root enters, since the
/// kernel's addresses are root's to see.
fn dir() -> PathBuf {
    Path::new(crate::trace::tracefs::STATE_DIR).join("symbols")
}
const FILE: &str = "kallsyms-core";
const MAGIC: &[u8] = b"rtlat core kallsyms 1\n";
/// The kernel's id of this boot.
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// The core kernel's text symbols: starts ascending, each one's name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Core {
    stext: u64,
    etext: u64,
    starts: Vec<u64>,
    /// Where each name begins in `blob`; it ends where the next begins.
    offsets: Vec<u32>,
    blob: Vec<u8>,
}

/// The symbols of the core kernel's text as /proc/kallsyms lists them
/// (text symbols without a module), gathered while it is read: their
/// starts, and their names end to end.
#[derive(Debug, Default)]
pub struct Gather {
    starts: Vec<u64>,
    /// Where each name ends in `names`.
    ends: Vec<u32>,
    names: Vec<u8>,
    stext: Option<u64>,
    etext: Option<u64>,
}

impl Gather {
    /// A text symbol of the table; `module`: it has one.
    pub fn add(&mut self, start: u64, name: &str, module: bool) {
        if module {
            return;
        }
        match name {
            "_stext" => self.stext = self.stext.or(Some(start)),
            "_etext" => self.etext = self.etext.or(Some(start)),
            _ => {}
        }
        let Ok(end) = u32::try_from(self.names.len() + name.len()) else {
            return;
        };
        self.starts.push(start);
        self.ends.push(end);
        self.names.extend_from_slice(name.as_bytes());
    }

    /// The table, if the symbols named the core text's bounds.
    pub fn finish(self) -> Option<Core> {
        let (stext, etext) = (self.stext?, self.etext?);
        if etext <= stext {
            return None;
        }
        let name = |k: usize| {
            let from = k.checked_sub(1).map_or(0, |p| self.ends[p] as usize);
            &self.names[from..self.ends[k] as usize]
        };
        // In address order; stable: of aliases at one address, the first
        // listed names it.
        let mut order: Vec<u32> = (0..self.starts.len() as u32)
            .filter(|&k| (stext..etext).contains(&self.starts[k as usize]))
            .collect();
        order.sort_by_key(|&k| self.starts[k as usize]);
        order.dedup_by_key(|k| self.starts[*k as usize]);
        let mut core = Core {
            stext,
            etext,
            starts: Vec::with_capacity(order.len()),
            offsets: Vec::with_capacity(order.len()),
            blob: Vec::new(),
        };
        for k in order {
            core.offsets.push(u32::try_from(core.blob.len()).ok()?);
            core.starts.push(self.starts[k as usize]);
            core.blob.extend_from_slice(name(k as usize));
        }
        Some(core)
    }
}

/// The longest name read from a kept table.
const NAME_MAX: usize = 512;
/// The header after the magic and the boot's line: four u64.
const HEADER: usize = 32;

impl Core {
    /// The table as kept, for boot `boot`, into `out`.
    fn write(&self, out: &mut impl Write, boot: &str) -> io::Result<()> {
        out.write_all(MAGIC)?;
        out.write_all(boot.as_bytes())?;
        out.write_all(b"\n")?;
        for v in [
            self.stext,
            self.etext,
            self.starts.len() as u64,
            self.blob.len() as u64,
        ] {
            out.write_all(&v.to_le_bytes())?;
        }
        for s in &self.starts {
            out.write_all(&s.to_le_bytes())?;
        }
        for o in &self.offsets {
            out.write_all(&o.to_le_bytes())?;
        }
        out.write_all(&self.blob)
    }

    /// The table as a file holds it ([`crate::outfile`] ends it with a
    /// newline).
    #[cfg(test)]
    pub(super) fn bytes(&self, boot: &str) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out, boot).expect("in memory");
        out.push(b'\n');
        out
    }

    /// Keep the table for the runs to come of this boot (root's: only
    /// root reads the kernel's addresses).
    pub fn save(&self) -> io::Result<()> {
        let boot = boot_id().ok_or_else(|| io::Error::other("no boot id"))?;
        let dir = dir();
        std::fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(&dir)?;
        let dir = trusted(&dir, 0o077).ok_or_else(|| io::Error::other("not root's alone"))?;
        // Replaced atomically: a run reading it meanwhile sees the old
        // table or the new one, whole.
        crate::outfile::write_with(&dir.join(FILE), |w| self.write(w, &boot))
    }
}

/// A table kept by an earlier run of this boot, searched in its file.
#[derive(Debug)]
pub struct Kept {
    file: std::fs::File,
    stext: u64,
    etext: u64,
    n: u64,
    /// Where the starts, the name offsets and the names begin in the file.
    starts_at: u64,
    offsets_at: u64,
    blob_at: u64,
    blob_len: u64,
}

impl Kept {
    /// The table kept for this boot, if there is one to trust.
    pub fn open() -> Option<Kept> {
        let path = trusted(&dir(), 0o077)?.join(FILE);
        trusted(&path, 0o022)?;
        Kept::open_at(&path, &boot_id()?)
    }

    /// The table in `path` if written in boot `boot` and of the length its
    /// header says (and the newline [`crate::outfile`] ends it with).
    pub(super) fn open_at(path: &Path, boot: &str) -> Option<Kept> {
        let mut file = std::fs::File::open(path).ok()?;
        let len = file.metadata().ok()?.len();
        let mut head = vec![0u8; MAGIC.len() + boot.len() + 1 + HEADER];
        file.read_exact(&mut head).ok()?;
        let rest = head.strip_prefix(MAGIC)?;
        let words = rest.strip_prefix(boot.as_bytes())?.strip_prefix(b"\n")?;
        let word =
            |k: usize| u64::from_le_bytes(words[8 * k..8 * k + 8].try_into().unwrap_or_default());
        let (stext, etext, n, blob_len) = (word(0), word(1), word(2), word(3));
        let starts_at = head.len() as u64;
        let offsets_at = starts_at.checked_add(n.checked_mul(8)?)?;
        let blob_at = offsets_at.checked_add(n.checked_mul(4)?)?;
        let whole = blob_at.checked_add(blob_len)?.checked_add(1)? == len && stext < etext && n > 0;
        whole.then_some(Kept {
            file,
            stext,
            etext,
            n,
            starts_at,
            offsets_at,
            blob_at,
            blob_len,
        })
    }

    fn read<const N: usize>(&self, at: u64) -> Option<[u8; N]> {
        let mut b = [0u8; N];
        self.file.read_exact_at(&mut b, at).ok()?;
        Some(b)
    }

    fn start(&self, i: u64) -> Option<u64> {
        self.read::<8>(self.starts_at + 8 * i)
            .map(u64::from_le_bytes)
    }

    fn offset(&self, i: u64) -> Option<u64> {
        if i == self.n {
            return Some(self.blob_len);
        }
        self.read::<4>(self.offsets_at + 4 * i)
            .map(|b| u64::from(u32::from_le_bytes(b)))
    }

    /// Whether `addr` lies in the core kernel's text.
    pub fn covers(&self, addr: u64) -> bool {
        (self.stext..self.etext).contains(&addr)
    }

    /// The symbol `addr` lies in: its start and name.
    pub fn symbol(&self, addr: u64) -> Option<(u64, String)> {
        // The last start at or below `addr`.
        let (mut lo, mut hi) = (0, self.n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.start(mid)? <= addr {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let i = lo.checked_sub(1)?;
        let start = self.start(i)?;
        let next = if i + 1 < self.n {
            self.start(i + 1)?
        } else {
            self.etext
        };
        let (from, to) = (self.offset(i)?, self.offset(i + 1)?);
        // An entry out of place (not in the text, not before the next, a
        // name out of the names) names nothing.
        let fits = start >= self.stext
            && start <= addr
            && addr < next
            && from < to
            && to <= self.blob_len
            && to - from <= NAME_MAX as u64;
        if !fits {
            return None;
        }
        let mut name = vec![0u8; (to - from) as usize];
        self.file
            .read_exact_at(&mut name, self.blob_at + from)
            .ok()?;
        Some((start, String::from_utf8_lossy(&name).into_owned()))
    }
}

fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string(BOOT_ID).ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| id.to_string())
}

/// `path`, if it is root's, no link, and none of the `mode_bits` set
/// (0o022: no one else writes it; 0o077: no one else enters it).
fn trusted(path: &Path, mode_bits: u32) -> Option<PathBuf> {
    let m = std::fs::symlink_metadata(path).ok()?;
    (!m.file_type().is_symlink() && m.uid() == 0 && m.mode() & mode_bits == 0)
        .then(|| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn core() -> Core {
        let mut g = Gather::default();
        for (a, n, m) in [
            (0xffff_ffff_8100_0000, "_stext", false),
            (0xffff_ffff_8100_0000, "startup_64", false),
            (0xffff_ffff_815f_f8d0, "unmap_page_range", false),
            (0xffff_ffff_8121_4942, "unmap_page_range.cold", false),
            (0xffff_ffff_8225_b140, "_etext", false),
            (0xffff_ffff_8357_6000, "_sinittext", false),
            (0xffff_ffff_c020_1000, "resp_spin", true),
        ] {
            g.add(a, n, m);
        }
        g.finish().expect("a core table")
    }

    /// `c` kept in a file for boot `boot`, and the file.
    fn kept(bytes: &[u8], boot: &str) -> (tempfile::TempDir, Option<Kept>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(FILE);
        std::fs::write(&path, bytes).expect("written");
        let k = Kept::open_at(&path, boot);
        (dir, k)
    }

    #[test]
    fn the_core_text_names_its_addresses_and_nothing_outside() {
        let (_dir, k) = kept(&core().bytes("boot-a"), "boot-a");
        let k = k.expect("the table kept");
        assert!(k.covers(0xffff_ffff_815f_f9a2));
        assert!(!k.covers(0xffff_ffff_c020_1002), "a module's frame");
        assert!(!k.covers(0xffff_ffff_8357_6010), "init text, freed");
        assert_eq!(
            k.symbol(0xffff_ffff_815f_f9a2),
            Some((0xffff_ffff_815f_f8d0, "unmap_page_range".to_string()))
        );
        // Listed out of order, found in order.
        assert_eq!(
            k.symbol(0xffff_ffff_8121_4950).map(|s| s.1),
            Some("unmap_page_range.cold".into())
        );
        // The first of two names at one address.
        assert_eq!(
            k.symbol(0xffff_ffff_8100_0004).map(|s| s.1),
            Some("_stext".into())
        );
        // The last symbol reaches to the end of the text.
        assert_eq!(
            k.symbol(0xffff_ffff_8225_b13f).map(|s| s.1),
            Some("unmap_page_range".into())
        );
        assert_eq!(k.symbol(0x1000), None);
        // Without its bounds there is no table.
        let mut g = Gather::default();
        g.add(0xffff_ffff_815f_f8d0, "unmap_page_range", false);
        assert!(g.finish().is_none());
    }

    #[test]
    fn a_kept_table_is_used_only_whole_and_of_its_boot() {
        let bytes = core().bytes("boot-a");
        assert!(kept(&bytes, "boot-b").1.is_none(), "another boot's");
        for cut in [0, MAGIC.len() + 3, bytes.len() - 1] {
            assert!(kept(&bytes[..cut], "boot-a").1.is_none(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(kept(&longer, "boot-a").1.is_none());
        // A start out of place names nothing rather than the wrong symbol.
        let at = MAGIC.len() + "boot-a\n".len() + HEADER;
        let mut swapped = bytes.clone();
        swapped[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        let (_dir, k) = kept(&swapped, "boot-a");
        let k = k.expect("its sizes are right");
        assert_eq!(k.symbol(0xffff_ffff_8100_0004), None);
        // A count past the file's length.
        let mut huge = bytes;
        huge[at - 16..at - 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(kept(&huge, "boot-a").1.is_none());
    }

    #[test]
    fn only_a_place_of_roots_alone_is_trusted() {
        use std::os::unix::fs::PermissionsExt;
        let root = rustix::process::geteuid().is_root();
        let dir = tempfile::tempdir().expect("tempdir");
        let private = dir.path().join("symbols");
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&private)
            .expect("dir");
        assert_eq!(trusted(&private, 0o077).is_some(), root, "root's, 0700");
        let set = |mode| {
            std::fs::set_permissions(&private, std::fs::Permissions::from_mode(mode))
                .expect("chmod")
        };
        set(0o755);
        assert!(trusted(&private, 0o077).is_none(), "others may enter");
        assert_eq!(
            trusted(&private, 0o022).is_some(),
            root,
            "others do not write"
        );
        set(0o777);
        assert!(trusted(&private, 0o022).is_none(), "others write");
        set(0o700);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&private, &link).expect("link");
        assert!(trusted(&link, 0o077).is_none(), "a link");
    }
}
