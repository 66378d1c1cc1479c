//! The core kernel's text symbols (from `_stext` to `_etext`), kept per
//! boot: they do not change while the kernel runs, and generating
//! /proc/kallsyms costs the kernel tens of ms on every read. Stacks whose
//! frames all lie in the core kernel are named from this table; a frame in
//! a module (whose symbols come and go) sends the run to /proc/kallsyms.
//!
//! The table is a file of root's (written when the first run of a boot
//! reads /proc/kallsyms), checked before use: its boot, its owner and
//! mode, and every size and offset in it. Anything amiss and it is not
//! used.

use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Where the table is kept: /run is emptied at every boot.
pub const DIR: &str = "/run/rtlat";
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
/// (text symbols without a module, ascending), gathered while it is read.
#[derive(Debug, Default)]
pub struct Gather {
    syms: Vec<(u64, Box<str>)>,
}

impl Gather {
    /// A text symbol of the table; `module`: it has one.
    pub fn add(&mut self, start: u64, name: &str, module: bool) {
        if !module {
            self.syms.push((start, name.into()));
        }
    }

    /// The table, if the symbols named the core text's bounds.
    pub fn finish(mut self) -> Option<Core> {
        let find = |n: &str| self.syms.iter().find(|s| &*s.1 == n).map(|s| s.0);
        let (stext, etext) = (find("_stext")?, find("_etext")?);
        if etext <= stext {
            return None;
        }
        self.syms.retain(|s| s.0 >= stext && s.0 < etext);
        // Stable: of aliases at one address, the first listed names it.
        self.syms.sort_by_key(|s| s.0);
        self.syms.dedup_by_key(|s| s.0);
        let mut core = Core {
            stext,
            etext,
            ..Core::default()
        };
        for (start, name) in self.syms {
            core.offsets.push(u32::try_from(core.blob.len()).ok()?);
            core.starts.push(start);
            core.blob.extend_from_slice(name.as_bytes());
        }
        Some(core)
    }
}

impl Core {
    /// Whether `addr` lies in the core kernel's text.
    pub fn covers(&self, addr: u64) -> bool {
        (self.stext..self.etext).contains(&addr)
    }

    /// The symbol `addr` lies in: its start and name.
    pub fn symbol(&self, addr: u64) -> Option<(u64, String)> {
        let i = self.starts.partition_point(|&s| s <= addr).checked_sub(1)?;
        let from = self.offsets[i] as usize;
        let to = self
            .offsets
            .get(i + 1)
            .map_or(self.blob.len(), |&o| o as usize);
        let name = String::from_utf8_lossy(self.blob.get(from..to)?).into_owned();
        Some((self.starts[i], name))
    }

    fn bytes(&self, boot: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.blob.len() + 12 * self.starts.len() + 128);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(boot.as_bytes());
        out.push(b'\n');
        for v in [
            self.stext,
            self.etext,
            self.starts.len() as u64,
            self.blob.len() as u64,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for s in &self.starts {
            out.extend_from_slice(&s.to_le_bytes());
        }
        for o in &self.offsets {
            out.extend_from_slice(&o.to_le_bytes());
        }
        out.extend_from_slice(&self.blob);
        out
    }

    /// The table in `bytes`, if written in boot `boot` and whole.
    fn parse(bytes: &[u8], boot: &str) -> Option<Core> {
        let rest = bytes.strip_prefix(MAGIC)?;
        let rest = rest.strip_prefix(boot.as_bytes())?.strip_prefix(b"\n")?;
        let mut words = rest.chunks_exact(8).map(|w| {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            u64::from_le_bytes(b)
        });
        let (stext, etext) = (words.next()?, words.next()?);
        let n = usize::try_from(words.next()?).ok()?;
        let blob_len = usize::try_from(words.next()?).ok()?;
        let body = rest.get(32..)?;
        let starts_end = n.checked_mul(8)?;
        let offsets_end = starts_end.checked_add(n.checked_mul(4)?)?;
        if body.len() != offsets_end.checked_add(blob_len)? || etext <= stext {
            return None;
        }
        let starts: Vec<u64> = body[..starts_end]
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default()))
            .collect();
        let offsets: Vec<u32> = body[starts_end..offsets_end]
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes(w.try_into().unwrap_or_default()))
            .collect();
        let ascending = starts.windows(2).all(|w| w[0] < w[1])
            && offsets.windows(2).all(|w| w[0] <= w[1])
            && offsets.last().is_none_or(|&o| o as usize <= blob_len)
            && starts.first().is_none_or(|&s| s >= stext)
            && starts.last().is_none_or(|&s| s < etext);
        ascending.then(|| Core {
            stext,
            etext,
            starts,
            offsets,
            blob: body[offsets_end..].to_vec(),
        })
    }

    /// The table kept for this boot, if there is one to trust.
    pub fn load() -> Option<Core> {
        let boot = boot_id()?;
        let path = trusted(Path::new(DIR))?.join(FILE);
        trusted(&path)?;
        Core::parse(&std::fs::read(&path).ok()?, &boot)
    }

    /// Keep the table for the runs to come of this boot (root's: only
    /// root reads the kernel's addresses).
    pub fn save(&self) -> io::Result<()> {
        let boot = boot_id().ok_or_else(|| io::Error::other("no boot id"))?;
        let dir = Path::new(DIR);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(dir)?;
        let dir = trusted(dir).ok_or_else(|| io::Error::other("not root's"))?;
        // Written aside, then renamed: a run reading it meanwhile sees the
        // old table or the new one, whole.
        let tmp = dir.join(format!("{FILE}.{}", std::process::id()));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        let written = f
            .write_all(&self.bytes(&boot))
            .and_then(|()| std::fs::rename(&tmp, dir.join(FILE)));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}

fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string(BOOT_ID).ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| id.to_string())
}

/// `path`, if it is root's, no link, and writable by root alone.
fn trusted(path: &Path) -> Option<PathBuf> {
    let m = std::fs::symlink_metadata(path).ok()?;
    (!m.file_type().is_symlink() && m.uid() == 0 && m.mode() & 0o022 == 0)
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

    #[test]
    fn the_core_text_names_its_addresses_and_nothing_outside() {
        let c = core();
        assert!(c.covers(0xffff_ffff_815f_f9a2));
        assert!(!c.covers(0xffff_ffff_c020_1002), "a module's frame");
        assert!(!c.covers(0xffff_ffff_8357_6010), "init text, freed");
        assert_eq!(
            c.symbol(0xffff_ffff_815f_f9a2),
            Some((0xffff_ffff_815f_f8d0, "unmap_page_range".to_string()))
        );
        assert_eq!(
            c.symbol(0xffff_ffff_8121_4950).map(|s| s.1),
            Some("unmap_page_range.cold".into())
        );
        // The first of two names at one address.
        assert_eq!(
            c.symbol(0xffff_ffff_8100_0004).map(|s| s.1),
            Some("_stext".into())
        );
        assert_eq!(c.symbol(0x1000), None);
        // Without its bounds there is no table.
        let mut g = Gather::default();
        g.add(0xffff_ffff_815f_f8d0, "unmap_page_range", false);
        assert_eq!(g.finish(), None);
    }

    #[test]
    fn a_kept_table_is_read_back_only_whole_and_of_its_boot() {
        let c = core();
        let bytes = c.bytes("boot-a");
        assert_eq!(Core::parse(&bytes, "boot-a"), Some(c.clone()));
        assert_eq!(Core::parse(&bytes, "boot-b"), None, "another boot's");
        for cut in [0, MAGIC.len() + 3, bytes.len() - 1] {
            assert_eq!(Core::parse(&bytes[..cut], "boot-a"), None, "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(Core::parse(&longer, "boot-a"), None);
        // Starts out of order: refused, not searched wrongly.
        let at = MAGIC.len() + "boot-a\n".len() + 32;
        let mut swapped = bytes.clone();
        swapped[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(Core::parse(&swapped, "boot-a"), None);
        // A count that would overflow the sizes.
        let mut huge = bytes;
        huge[at - 16..at - 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(Core::parse(&huge, "boot-a"), None);
    }
}
