//! Kernel addresses named from `/proc/kallsyms`: `zap_pte_range+0x1f2`,
//! `resp_spin+0x2a [rtlat_responder]`. The file is read once, at the end
//! of a run, for the addresses its stacks hold only, unless the core
//! kernel's symbols kept earlier in this boot ([`super::symcache`]) name
//! every frame; where the kernel hides its addresses (`kptr_restrict`,
//! not root) the addresses stay hexadecimal.

use super::symcache::{Core, Gather, Kept};
use crate::result::Explained;
use std::io::BufRead;

/// The kernel's symbol table.
pub const KALLSYMS: &str = "/proc/kallsyms";

/// The kernel's symbol table to read, empty where it cannot be opened.
pub fn kallsyms() -> Box<dyn BufRead> {
    match std::fs::File::open(KALLSYMS) {
        Ok(f) => Box::new(std::io::BufReader::new(f)),
        Err(_) => Box::new(std::io::empty()),
    }
}

/// An address and the symbol it lies in (start, `name [module]`).
type Named = (u64, Option<(u64, String)>);

/// The symbol `name` starting at `start` to the addresses of `at` in
/// [`start`, `end`) it is closer to than the one they have.
fn give(at: &mut [Named], start: u64, end: u64, name: &str) {
    let from = at.partition_point(|x| x.0 < start);
    for x in at[from..].iter_mut().take_while(|x| x.0 < end) {
        if x.1.as_ref().is_none_or(|b| b.0 < start) {
            x.1 = Some((start, name.to_string()));
        }
    }
}

/// A hexadecimal number of at most 16 digits.
fn hex(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    digits.iter().try_fold(0u64, |v, &d| {
        let n = (d as char).to_digit(16)?;
        Some(v << 4 | u64::from(n))
    })
}

/// The names of some addresses.
#[derive(Debug, Default)]
pub struct Symbols {
    /// The addresses asked for, sorted, and the text symbol each lies in
    /// (its start, name and module), when one was found below it.
    at: Vec<Named>,
    /// The table gave no address (every one zero): hidden from this user.
    pub hidden: bool,
}

impl Symbols {
    /// The symbols of `addrs` in the table `kallsyms` (lines `ADDR TYPE
    /// NAME [MODULE]`, in any order), read a line at a time: each address
    /// lies in the text symbol that starts closest below it.
    pub fn of(kallsyms: impl BufRead, addrs: impl IntoIterator<Item = u64>) -> Symbols {
        Symbols::gathering(kallsyms, addrs, None)
    }

    /// [`Symbols::of`], the core kernel's text symbols gathered into
    /// `core` on the way.
    fn gathering(
        mut kallsyms: impl BufRead,
        addrs: impl IntoIterator<Item = u64>,
        mut core: Option<&mut Gather>,
    ) -> Symbols {
        let mut at: Vec<Named> = addrs.into_iter().map(|a| (a, None)).collect();
        at.sort_unstable_by_key(|x| x.0);
        at.dedup_by_key(|x| x.0);
        let mut any = false;
        let mut line = Vec::new();
        // The text symbol before, given the addresses up to the one that
        // follows it: the table is sorted but where a module's symbols
        // begin, where the one before is given every address above it.
        let mut prev: Option<u64> = None;
        let mut prev_name = String::new();
        loop {
            line.clear();
            if !matches!(kallsyms.read_until(b'\n', &mut line), Ok(n) if n > 0) {
                break;
            }
            // Bytes, not text: a hundred thousand lines are read at the end
            // of every run with stacks.
            let mut w = line
                .split(|&b| b == b' ' || b == b'\t' || b == b'\n')
                .filter(|w| !w.is_empty());
            let (Some(addr), Some(ty), Some(name)) = (w.next(), w.next(), w.next()) else {
                continue;
            };
            let Some(start) = hex(addr) else {
                continue;
            };
            any |= start != 0;
            if start == 0 || !matches!(ty, b"t" | b"T" | b"w" | b"W") {
                continue;
            }
            let module = w.next();
            if let Some(g) = core.as_deref_mut() {
                g.add(start, &String::from_utf8_lossy(name), module.is_some());
            }
            match prev {
                // An alias of the symbol before: either name will do.
                Some(p) if p == start => continue,
                Some(p) => give(
                    &mut at,
                    p,
                    if start > p { start } else { u64::MAX },
                    &prev_name,
                ),
                None => {}
            }
            prev = Some(start);
            prev_name.clear();
            prev_name.push_str(&String::from_utf8_lossy(name));
            if let Some(module) = module {
                prev_name.push(' ');
                prev_name.push_str(&String::from_utf8_lossy(module));
            }
        }
        if let Some(p) = prev {
            give(&mut at, p, u64::MAX, &prev_name);
        }
        Symbols { at, hidden: !any }
    }

    /// `name+0xoff [module]`, or the address in hexadecimal.
    pub fn name(&self, addr: u64) -> String {
        let found = self
            .at
            .binary_search_by_key(&addr, |x| x.0)
            .ok()
            .and_then(|i| self.at[i].1.as_ref());
        match found {
            Some((start, named)) => {
                let (name, module) = named.split_once(' ').unwrap_or((named, ""));
                let mut s = format!("{name}+{:#x}", addr - start);
                if !module.is_empty() {
                    s.push(' ');
                    s.push_str(module);
                }
                s
            }
            None => format!("{addr:#x}"),
        }
    }
}

/// The core kernel's symbols kept from an earlier run of this boot.
pub enum Keep<'a> {
    /// None to use, none to keep.
    Not,
    /// The table kept: frames all in the core kernel are named from it.
    Table(&'a Kept),
    /// None yet: the table gathered from /proc/kallsyms goes to this.
    Save(&'a dyn Fn(&Core)),
}

/// Name the frames of the cases' stacks (recorded as hexadecimal
/// addresses) from the table text `kallsyms`, or from the core kernel's
/// table `kept` where every frame lies in it; whether any stack was left
/// unnamed because the table hides its addresses.
pub fn name_stacks<R: BufRead>(
    cases: &mut [Explained],
    kallsyms: impl FnOnce() -> R,
    kept: Keep,
) -> bool {
    let frames = || {
        cases
            .iter()
            .flat_map(|c| &c.parts)
            .flat_map(|p| &p.stack)
            .filter_map(|f| u64::from_str_radix(f.strip_prefix("0x")?, 16).ok())
    };
    if frames().next().is_none() {
        return false;
    }
    let mut addrs: Vec<u64> = frames().collect();
    addrs.sort_unstable();
    addrs.dedup();
    let symbols = match kept {
        Keep::Table(core) if addrs.iter().all(|&a| core.covers(a)) => Symbols {
            at: addrs.iter().map(|&a| (a, core.symbol(a))).collect(),
            hidden: false,
        },
        Keep::Table(_) | Keep::Not => Symbols::of(kallsyms(), addrs),
        Keep::Save(save) => {
            let mut g = Gather::default();
            let symbols = Symbols::gathering(kallsyms(), addrs, Some(&mut g));
            if let Some(core) = g.finish().filter(|_| !symbols.hidden) {
                save(&core);
            }
            symbols
        }
    };
    if symbols.hidden {
        return true;
    }
    for f in cases
        .iter_mut()
        .flat_map(|c| &mut c.parts)
        .flat_map(|p| &mut p.stack)
    {
        if let Some(a) = f
            .strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
        {
            *f = symbols.name(a);
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "\
ffffffff81000000 T _stext
ffffffff815ff8d0 T unmap_page_range
ffffffff81600400 t zap_p4d_range
ffffffff82a00000 D some_data
ffffffff81214942 t unmap_page_range.cold
ffffffffc0201000 t resp_spin\t[rtlat_responder]
ffffffffc0201100 t resp_ioctl\t[rtlat_responder]
";

    #[test]
    fn an_address_is_named_by_the_text_symbol_below_it() {
        let addrs = [
            0xffff_ffff_815f_f9a2,
            0xffff_ffff_8160_0400,
            0xffff_ffff_8121_4950,
            0xffff_ffff_c020_102a,
            0xffff_ffff_82a0_0010,
            0x1000,
        ];
        let s = Symbols::of(TABLE.as_bytes(), addrs);
        assert!(!s.hidden);
        assert_eq!(s.name(addrs[0]), "unmap_page_range+0xd2");
        assert_eq!(s.name(addrs[1]), "zap_p4d_range+0x0");
        // Out of order in the file, and the closest start below wins.
        assert_eq!(s.name(addrs[2]), "unmap_page_range.cold+0xe");
        assert_eq!(s.name(addrs[3]), "resp_spin+0x2a [rtlat_responder]");
        // Data symbols are no function; nothing below: the address itself.
        assert_eq!(s.name(addrs[4]), "zap_p4d_range+0x13ffc10");
        assert_eq!(s.name(addrs[5]), "0x1000");
        // An address not asked for is not named.
        assert_eq!(s.name(0xffff_ffff_8100_0001), "0xffffffff81000001");
    }

    #[test]
    fn a_table_of_zero_addresses_is_hidden_and_names_nothing() {
        let hidden = "0000000000000000 T _stext\n0000000000000000 t resp_spin\t[rtlat_responder]\n";
        let s = Symbols::of(hidden.as_bytes(), [0xffff_ffff_8100_0010]);
        assert!(s.hidden);
        assert_eq!(s.name(0xffff_ffff_8100_0010), "0xffffffff81000010");
        assert!(Symbols::of(&b""[..], []).hidden);
        assert_eq!(hex(b"ffffffffC0201000"), Some(0xffff_ffff_c020_1000));
        assert_eq!(hex(b"fffffffffffffffff"), None);
        assert_eq!(hex(b"0x10"), None);
        assert_eq!(hex(b""), None);
    }

    #[test]
    fn the_stacks_of_cases_are_named_or_left_with_a_note() {
        let part = |stack: &[&str]| crate::result::Part {
            kind: "preempt-off".into(),
            name: "python3 12".into(),
            ns: 5,
            stack: stack.iter().map(|s| s.to_string()).collect(),
        };
        let case = |parts| Explained {
            thread: "cpu1".into(),
            cpu: Some(1),
            at_ns: 0,
            latency_ns: 5,
            parts,
        };
        let mut cases = vec![case(vec![part(&[
            "0xffffffff815ff8d8",
            "0xffffffffc0201002",
        ])])];
        assert!(!name_stacks(&mut cases, || TABLE.as_bytes(), Keep::Not));
        assert_eq!(
            cases[0].parts[0].stack,
            ["unmap_page_range+0x8", "resp_spin+0x2 [rtlat_responder]"]
        );
        let mut hid = vec![case(vec![part(&["0xffffffff815ff8d8"])])];
        assert!(name_stacks(
            &mut hid,
            || &b"0000000000000000 T _stext\n"[..],
            Keep::Not
        ));
        assert_eq!(hid[0].parts[0].stack, ["0xffffffff815ff8d8"]);
        // A table of the core kernel's text is kept from the read, and
        // names the next run's frames without /proc/kallsyms while they
        // all lie in it.
        let with_etext = format!("{TABLE}ffffffff8225b140 T _etext\n");
        let saved = std::cell::RefCell::new(None);
        let save = |c: &Core| *saved.borrow_mut() = Some(c.clone());
        let mut first = vec![case(vec![part(&["0xffffffff815ff8d8"])])];
        assert!(!name_stacks(
            &mut first,
            || with_etext.as_bytes(),
            Keep::Save(&save)
        ));
        let core = saved.borrow_mut().take().expect("a core table kept");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kallsyms-core");
        std::fs::write(&path, core.bytes("boot")).expect("written");
        let core = Kept::open_at(&path, "boot").expect("the table kept");
        let mut next = vec![case(vec![part(&[
            "0xffffffff815ff8e0",
            "0xffffffff81214950",
        ])])];
        assert!(!name_stacks(
            &mut next,
            || -> &[u8] { panic!("read") },
            Keep::Table(&core)
        ));
        assert_eq!(
            next[0].parts[0].stack,
            ["unmap_page_range+0x10", "unmap_page_range.cold+0xe"]
        );
        // A module's frame: the kernel's table is read.
        let mut module = vec![case(vec![part(&[
            "0xffffffff815ff8e0",
            "0xffffffffc0201002",
        ])])];
        assert!(!name_stacks(
            &mut module,
            || with_etext.as_bytes(),
            Keep::Table(&core)
        ));
        assert_eq!(
            module[0].parts[0].stack[1],
            "resp_spin+0x2 [rtlat_responder]"
        );
        // Without stacks the table is not even read.
        let mut none = vec![case(vec![part(&[])])];
        assert!(!name_stacks(
            &mut none,
            || -> &[u8] { panic!("read") },
            Keep::Not
        ));
    }
}
