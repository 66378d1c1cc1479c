//! Signs that this binary runs under a user-mode emulator (qemu-user): the
//! kernel's architecture or the CPU `/proc/cpuinfo` describes is of another
//! family than the binary's, or binfmt_misc hands binaries like this one to
//! an interpreter. qemu-user answers uname(2) with the emulated machine, so
//! `machine` alone does not show it; the kernel's own files are the host's.

use std::io::Read;
use std::path::Path;

use super::read;

/// How many bytes of the executable a binfmt_misc magic may reach.
const HEAD_BYTES: usize = 128;

/// The emulator and what shows it, e.g. `qemu-user (binfmt_misc qemu-arm:
/// /usr/libexec/qemu-binfmt/arm-binfmt-P): an arm binary on an x86_64
/// kernel`; `None` when the binary runs on a CPU of its own architecture.
/// The board build (no `host-tools`) tells by the kernel's architecture and
/// the CPU only, without naming the interpreter: it leaves out reading
/// binfmt_misc, which only a workstation running a board's binary needs.
/// `binary_arch` is the architecture it was built for
/// (`std::env::consts::ARCH`), `exe_head` the first bytes of its file.
pub(super) fn detect_emulation(
    root: &Path,
    binary_arch: &str,
    exe_head: &[u8],
    cpuinfo: &[(String, String)],
) -> Option<String> {
    let ours = family(binary_arch);
    let mut signs = Vec::new();
    let kernel = read(root, "proc/sys/kernel/arch");
    if let Some(k) = kernel.as_deref().filter(|k| family(k) != ours) {
        signs.push(format!("a binary for {binary_arch} on a kernel for {k}"));
    }
    match cpuinfo_family(cpuinfo) {
        Some(cpu) if cpu != ours && kernel.is_none() => signs.push(format!(
            "a binary for {binary_arch}; /proc/cpuinfo describes an {cpu} CPU"
        )),
        _ => {}
    }
    let interpreter = if cfg!(feature = "host-tools") {
        binfmt_interpreter(root, exe_head)
    } else {
        None
    };
    if signs.is_empty() && interpreter.is_none() {
        return None;
    }
    let emulator = match &interpreter {
        Some((entry, path)) if is_qemu(entry) || is_qemu(path) => {
            format!("qemu-user (binfmt_misc {entry}: {path})")
        }
        Some((entry, path)) => format!("a user-mode emulator (binfmt_misc {entry}: {path})"),
        None => "a user-mode emulator such as qemu-user".to_string(),
    };
    if signs.is_empty() {
        signs.push(format!(
            "binfmt_misc hands binaries like this one (for {binary_arch}) to it"
        ));
    }
    Some(format!("{emulator}: {}", signs.join("; ")))
}

/// The first bytes of the running executable (under qemu-user, of the
/// emulated binary: qemu answers `/proc/self/exe` with it).
pub(super) fn exe_head(root: &Path) -> Vec<u8> {
    let mut head = Vec::with_capacity(HEAD_BYTES);
    if let Ok(f) = std::fs::File::open(root.join("proc/self/exe")) {
        let _ = f.take(HEAD_BYTES as u64).read_to_end(&mut head);
    }
    head
}

fn is_qemu(s: &str) -> bool {
    s.to_ascii_lowercase().contains("qemu")
}

/// The architecture family of a `uname -m`, kernel or Rust architecture
/// name: a 32-bit binary on its 64-bit kernel (armv7 on aarch64, i686 on
/// x86_64, ppc on ppc64) runs natively.
fn family(arch: &str) -> &str {
    let a = arch.trim();
    let prefixes: &[(&str, &str)] = &[
        ("x86", "x86"),
        ("i386", "x86"),
        ("i486", "x86"),
        ("i586", "x86"),
        ("i686", "x86"),
        ("amd64", "x86"),
        ("aarch64", "arm"),
        ("arm", "arm"),
        ("powerpc", "powerpc"),
        ("ppc", "powerpc"),
        ("mips", "mips"),
        ("riscv", "riscv"),
        ("s390", "s390"),
        ("loongarch", "loongarch"),
        ("sparc", "sparc"),
    ];
    prefixes
        .iter()
        .find(|(p, _)| a.starts_with(p))
        .map_or(a, |(_, f)| f)
}

/// The family of the CPU `/proc/cpuinfo` describes, from the fields only
/// one architecture's kernel writes.
fn cpuinfo_family(cpuinfo: &[(String, String)]) -> Option<&'static str> {
    let has = |key: &str| cpuinfo.iter().any(|(k, _)| k == key);
    let value = |key: &str| {
        cpuinfo
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    if value("vendor_id").is_some_and(|v| v.contains("S390")) {
        Some("s390")
    } else if has("vendor_id") && has("flags") {
        Some("x86")
    } else if has("CPU implementer") || has("CPU architecture") {
        Some("arm")
    } else if has("timebase") {
        Some("powerpc")
    } else if has("isa") && has("mmu") {
        Some("riscv")
    } else {
        None
    }
}

/// The enabled binfmt_misc entry whose magic matches `exe_head`: its name
/// and interpreter. The kernel runs such a binary through the interpreter
/// rather than itself.
fn binfmt_interpreter(root: &Path, exe_head: &[u8]) -> Option<(String, String)> {
    let dir = root.join("proc/sys/fs/binfmt_misc");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n != "register" && n != "status")
        .collect();
    names.sort();
    names.into_iter().find_map(|name| {
        let text = read(root, &format!("proc/sys/fs/binfmt_misc/{name}"))?;
        let interpreter = matches(&text, exe_head)?;
        Some((name, interpreter))
    })
}

/// The interpreter of a binfmt_misc entry (the text of its file) that is
/// enabled and whose magic, under its mask, is the bytes of `head` at its
/// offset; `None` otherwise (extension entries included).
fn matches(entry: &str, head: &[u8]) -> Option<String> {
    let mut lines = entry.lines();
    if lines.next()?.trim() != "enabled" {
        return None;
    }
    let (mut interpreter, mut offset, mut magic, mut mask) = (None, 0usize, None, None);
    for line in lines {
        let (key, value) = line.split_once(' ')?;
        match key {
            "interpreter" => interpreter = Some(value.trim().to_string()),
            "offset" => offset = value.trim().parse().ok()?,
            "magic" => magic = Some(hex(value.trim())?),
            "mask" => mask = Some(hex(value.trim())?),
            _ => {}
        }
    }
    let magic = magic?;
    let mask = mask.unwrap_or_else(|| vec![0xff; magic.len()]);
    let bytes = head.get(offset..offset.checked_add(magic.len())?)?;
    let same = magic.iter().zip(bytes).enumerate().all(|(i, (m, b))| {
        let k = mask.get(i).copied().unwrap_or(0xff);
        m & k == b & k
    });
    same.then_some(interpreter?)
}

fn hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ELF header of an armv7 PIE, as qemu-user answers /proc/self/exe.
    const ARMV7_PIE: &str = "7f454c4601010100000000000000000003002800";
    /// Of an x86_64 PIE.
    const X86_64_PIE: &str = "7f454c4602010100000000000000000003003e00";

    /// Debian's qemu-user-static entry for 32-bit ARM.
    const QEMU_ARM: &str = "enabled\ninterpreter /usr/libexec/qemu-binfmt/arm-binfmt-P\nflags: PF\noffset 0\nmagic 7f454c4601010100000000000000000002002800\nmask ffffffffffffff00fffffffffffffffffeffffff\n";

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    fn x86_cpuinfo() -> Vec<(String, String)> {
        [
            ("processor", "0"),
            ("vendor_id", "AuthenticAMD"),
            ("flags", "fpu vme"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    #[test]
    fn an_armv7_binary_under_qemu_arm_on_x86_64_is_named() {
        let root = tree(&[
            ("proc/sys/kernel/arch", "x86_64\n"),
            ("proc/sys/fs/binfmt_misc/status", "enabled\n"),
            ("proc/sys/fs/binfmt_misc/qemu-arm", QEMU_ARM),
        ]);
        let head = hex(ARMV7_PIE).unwrap();
        let e = detect_emulation(root.path(), "arm", &head, &x86_cpuinfo()).expect("emulated");
        // The board build does not read binfmt_misc: the kernel tells.
        let emulator = if cfg!(feature = "host-tools") {
            "qemu-user (binfmt_misc qemu-arm: /usr/libexec/qemu-binfmt/arm-binfmt-P)"
        } else {
            "a user-mode emulator such as qemu-user"
        };
        assert_eq!(
            e,
            format!("{emulator}: a binary for arm on a kernel for x86_64")
        );
        // Started as `qemu-arm-static -L … rtlat`, with nothing registered:
        // the kernel still tells.
        let bare = tree(&[("proc/sys/kernel/arch", "x86_64\n")]);
        let e = detect_emulation(bare.path(), "arm", &head, &x86_cpuinfo()).expect("emulated");
        assert!(
            e.starts_with(
                "a user-mode emulator such as qemu-user: a binary for arm on a kernel for x86_64"
            ),
            "{e}"
        );
        // A kernel without kernel/arch: the CPU /proc/cpuinfo describes.
        let old = tree(&[]);
        let e = detect_emulation(old.path(), "powerpc", &[], &x86_cpuinfo()).expect("emulated");
        assert!(e.ends_with("/proc/cpuinfo describes an x86 CPU"), "{e}");
        // An emulator of the same family (armv7 on an aarch64 kernel that
        // lacks AArch32): only binfmt_misc tells.
        let same = tree(&[
            ("proc/sys/kernel/arch", "aarch64\n"),
            ("proc/sys/fs/binfmt_misc/qemu-arm", QEMU_ARM),
        ]);
        let e = detect_emulation(same.path(), "arm", &head, &[]);
        if cfg!(feature = "host-tools") {
            let e = e.expect("emulated");
            assert!(e.starts_with("qemu-user (binfmt_misc qemu-arm"), "{e}");
        } else {
            assert_eq!(e, None, "the board build does not read binfmt_misc");
        }
    }

    #[test]
    fn a_native_binary_is_not_emulated() {
        let root = tree(&[
            ("proc/sys/kernel/arch", "x86_64\n"),
            ("proc/sys/fs/binfmt_misc/qemu-arm", QEMU_ARM),
            ("proc/sys/fs/binfmt_misc/register", ""),
        ]);
        let head = hex(X86_64_PIE).unwrap();
        assert_eq!(
            detect_emulation(root.path(), "x86_64", &head, &x86_cpuinfo()),
            None
        );
        // 32-bit on its 64-bit kernel runs natively.
        let arm64 = tree(&[("proc/sys/kernel/arch", "aarch64\n")]);
        let a9 = [("CPU implementer".to_string(), "0x41".to_string())];
        assert_eq!(
            detect_emulation(arm64.path(), "arm", &hex(ARMV7_PIE).unwrap(), &a9),
            None
        );
        let ppc64 = tree(&[("proc/sys/kernel/arch", "ppc64\n")]);
        assert_eq!(detect_emulation(ppc64.path(), "powerpc", &[], &[]), None);
        // A disabled entry hands nothing over.
        let off = tree(&[(
            "proc/sys/fs/binfmt_misc/qemu-arm",
            &QEMU_ARM.replacen("enabled", "disabled", 1),
        )]);
        assert_eq!(
            detect_emulation(off.path(), "arm", &hex(ARMV7_PIE).unwrap(), &[]),
            None
        );
    }

    #[test]
    fn binfmt_entries_match_under_their_mask_at_their_offset() {
        let head = hex(ARMV7_PIE).unwrap();
        assert!(matches(QEMU_ARM, &head).is_some());
        // Byte 16 (e_type) is masked with fe: executables and PIEs alike.
        let mut exec = head.clone();
        exec[16] = 2;
        assert!(matches(QEMU_ARM, &exec).is_some());
        // Another machine (e_machine 0x3e, x86-64) does not match.
        assert!(matches(QEMU_ARM, &hex(X86_64_PIE).unwrap()).is_none());
        // A header too short for the magic does not match.
        assert!(matches(QEMU_ARM, &head[..8]).is_none());
        let shifted = "enabled\ninterpreter /x\noffset 2\nmagic 4c46\n";
        assert_eq!(matches(shifted, &head).as_deref(), Some("/x"));
        assert!(matches("enabled\ninterpreter /x\nextension .exe\n", &head).is_none());
        assert!(matches("enabled\ninterpreter /x\nmagic 7g\n", &head).is_none());
    }

    #[test]
    fn families() {
        for (a, f) in [
            ("x86_64", "x86"),
            ("i686", "x86"),
            ("aarch64", "arm"),
            ("armv7l", "arm"),
            ("arm", "arm"),
            ("ppc", "powerpc"),
            ("ppc64le", "powerpc"),
            ("powerpc", "powerpc"),
            ("riscv64", "riscv"),
            ("m68k", "m68k"),
        ] {
            assert_eq!(family(a), f, "{a}");
        }
    }
}
