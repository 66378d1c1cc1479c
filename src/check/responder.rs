//! The kernel responder of kmod/ (`irq target --reply-from thread|kthread|irq`):
//! is it loaded or installed, and which reply modes this kernel allows.
//! [`probe`] looks; [`factor`] judges what it found (pure, tested).

use super::Factor;
use crate::sys::responder::BUILD_HINT;
use crate::sys::responder::{Responder, DEVICE, VERSION};
use std::io;
use std::path::{Path, PathBuf};

const NAME: &str = "kernel responder";

/// What the probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// `/dev/rtlat-responder` answered.
    Loaded { version: u32, preempt_rt: bool },
    /// Loaded, but another process has it open.
    Busy,
    /// Loaded, but this process may not open it.
    NoAccess(String),
    /// Not loaded; a module file for the running kernel is installed here.
    Installed(PathBuf),
    /// Neither loaded nor installed.
    Absent,
}

/// Look at the device, then at the running kernel's module directories
/// (`updates/`, where DKMS installs, and `extra/`). Harmless: it only opens
/// the device and asks for its state.
pub fn probe() -> Found {
    match Responder::open(Path::new(DEVICE)) {
        Ok(dev) => match dev.info() {
            Ok(i) => Found::Loaded {
                version: i.version,
                preempt_rt: i.preempt_rt,
            },
            Err(e) => Found::NoAccess(format!("{DEVICE} does not answer: {e}")),
        },
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Found::Busy,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
            let base = Path::new("/lib/modules").join(release.trim());
            ["updates", "extra"]
                .iter()
                .find_map(|d| find_module(&base.join(d), 4))
                .map_or(Found::Absent, Found::Installed)
        }
        Err(e) => Found::NoAccess(format!("{DEVICE}: {e}")),
    }
}

/// `rtlat_responder.ko` (or `.ko.xz`, `.ko.zst`…) under `dir`, `depth` levels down at most.
fn find_module(dir: &Path, depth: u32) -> Option<PathBuf> {
    let mut subdirs = Vec::new();
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        if e.file_name()
            .to_str()
            .is_some_and(|n| n.starts_with("rtlat_responder.ko"))
        {
            return Some(p);
        }
        if depth > 0 && e.file_type().is_ok_and(|t| t.is_dir()) {
            subdirs.push(p);
        }
    }
    subdirs.into_iter().find_map(|d| find_module(&d, depth - 1))
}

/// The verdict on what the probe found.
pub fn factor(found: &Found) -> Factor {
    match found {
        Found::Loaded { version, .. } if *version != VERSION => Factor::warn(
            NAME,
            format!("{DEVICE} speaks interface version {version}, this rtlat {VERSION}"),
        )
        .fix("build and load the module of this rtlat's kmod/ (docs/irq.md)"),
        Found::Loaded { preempt_rt, .. } => {
            let irq = if *preempt_rt {
                "irq refused on PREEMPT_RT (hard handlers run in threads there)"
            } else {
                "irq only on a GPIO chip that cannot sleep (memory-mapped, not I2C/SPI expanders or gpio-sim), refused at start otherwise"
            };
            Factor::good(
                NAME,
                format!("loaded ({DEVICE}): --reply-from user, thread, kthread; {irq}"),
            )
        }
        Found::Busy => Factor::info(
            NAME,
            format!("loaded, {DEVICE} in use (another rtlat replies from the kernel)"),
        ),
        Found::NoAccess(why) => {
            Factor::info(NAME, format!("loaded, but not usable by this user: {why}"))
                .fix("run irq target --reply-from thread|kthread|irq as root")
        }
        Found::Installed(p) => Factor::info(
            NAME,
            format!(
                "installed ({}), not loaded: --reply-from user only until it is",
                p.display()
            ),
        )
        .fix("modprobe rtlat_responder"),
        Found::Absent => Factor::info(
            NAME,
            "not installed: irq target --reply-from user only (thread, kthread and irq need kmod/)",
        )
        .fix(BUILD_HINT),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Verdict;
    use super::*;

    #[test]
    fn modes_follow_the_kernel_and_the_module() {
        let f = factor(&Found::Loaded {
            version: VERSION,
            preempt_rt: false,
        });
        assert_eq!(f.verdict, Verdict::Good);
        assert!(f
            .detail
            .contains("thread, kthread; irq only on a GPIO chip that cannot sleep"));
        let rt = factor(&Found::Loaded {
            version: VERSION,
            preempt_rt: true,
        });
        assert!(
            rt.detail.contains("irq refused on PREEMPT_RT"),
            "{}",
            rt.detail
        );
        let old = factor(&Found::Loaded {
            version: VERSION + 1,
            preempt_rt: false,
        });
        assert_eq!(old.verdict, Verdict::Warn);
        assert!(old.fix.is_some());
    }

    #[test]
    fn missing_or_unloaded_modules_name_the_fix() {
        let absent = factor(&Found::Absent);
        assert_eq!(absent.verdict, Verdict::Info);
        // The full build names DKMS and kmod/; the board build, which has
        // no rtlat source beside it, building against the board's kernel.
        let fix = absent.fix.as_deref().unwrap();
        assert!(fix.contains("scripts/kmod-build.sh"), "{fix}");
        assert_eq!(
            fix.contains("dkms install"),
            cfg!(feature = "host-tools"),
            "{fix}"
        );
        let inst = factor(&Found::Installed(PathBuf::from(
            "/lib/modules/6.1.0-57-amd64/updates/dkms/rtlat_responder.ko.xz",
        )));
        assert_eq!(inst.fix.as_deref(), Some("modprobe rtlat_responder"));
        assert!(inst.detail.contains("updates/dkms"));
        assert!(factor(&Found::NoAccess("Permission denied".into()))
            .fix
            .unwrap()
            .contains("root"));
    }

    #[test]
    fn an_installed_module_is_found_below_updates() {
        let d = tempfile::tempdir().unwrap();
        let sub = d.path().join("updates/dkms");
        std::fs::create_dir_all(&sub).unwrap();
        assert_eq!(find_module(&d.path().join("updates"), 4), None);
        std::fs::write(sub.join("rtlat_responder.ko.xz"), b"").unwrap();
        assert_eq!(
            find_module(&d.path().join("updates"), 4),
            Some(sub.join("rtlat_responder.ko.xz"))
        );
    }
}
