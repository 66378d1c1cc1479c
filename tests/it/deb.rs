//! Debian packages (scripts/deb.sh, cargo-deb): the amd64 package, of the
//! static build, installs rtlat, its man pages and bash completion and
//! removes them again; the arm64
//! and armhf packages are built for their architecture.
//!
//! The packages are made before the tests, from the release binaries that
//! scripts/cross.sh built once (`scripts/deb.sh --no-build`), in the
//! directory that `RTLAT_DEBS` names (scripts/test.sh sets it): no release
//! build runs inside the test binary.

use crate::util::Need;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The packages' directory, a need of every test here.
const DEBS: Need = Need::File("RTLAT_DEBS", "scripts/deb.sh");

/// The package of `arch` in `RTLAT_DEBS` (the tests need [`DEBS`]).
fn package(arch: &str) -> PathBuf {
    let dir = PathBuf::from(std::env::var_os("RTLAT_DEBS").expect("RTLAT_DEBS"));
    let suffix = format!("_{arch}.deb");
    let found = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("RTLAT_DEBS {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().ends_with(&suffix));
    found.unwrap_or_else(|| panic!("no rtlat_*{suffix} in {}", dir.display()))
}

fn dpkg(args: &[&str]) -> std::process::Output {
    let out = Command::new("dpkg").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "dpkg {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

case!(
    the_amd64_package_installs_and_removes_rtlat_its_pages_and_completion,
    [DEBS, Root, Program("dpkg", "dpkg")],
    |t| {
        let deb = package("amd64");
        let deb = deb.to_str().unwrap();
        let info = String::from_utf8(dpkg(&["-I", deb]).stdout).unwrap();
        assert!(info.contains("Architecture: amd64"), "{info}");
        assert!(info.contains("Package: rtlat"), "{info}");
        // The static build: it depends on no library.
        let depends = info.lines().find_map(|l| l.trim().strip_prefix("Depends:"));
        assert!(depends.is_none_or(|d| d.trim().is_empty()), "{info}");
        dpkg(&["-x", deb, t.dir().to_str().unwrap()]);
        let file = Command::new("file")
            .arg(t.path("usr/bin/rtlat"))
            .output()
            .unwrap();
        let what = String::from_utf8_lossy(&file.stdout);
        assert!(
            what.contains("x86-64")
                && what.contains("static")
                && !what.contains("dynamically linked"),
            "{what}"
        );

        let bin = Path::new("/usr/bin/rtlat");
        let completion = Path::new("/usr/share/bash-completion/completions/rtlat");
        let readme = Path::new("/usr/share/doc/rtlat/README.Debian");
        dpkg(&["-i", deb]);
        // Checked, then removed whatever the checks found.
        let installed = std::panic::catch_unwind(|| {
            let v = Command::new(bin).arg("--version").output().unwrap();
            assert_eq!(
                String::from_utf8_lossy(&v.stdout).trim(),
                format!("rtlat {}", env!("CARGO_PKG_VERSION"))
            );
            let man = Command::new("man")
                .arg("rtlat-timer")
                .env("MANPAGER", "cat")
                .env("MANWIDTH", "100")
                .output()
                .unwrap();
            let page = String::from_utf8_lossy(&man.stdout);
            assert!(
                man.status.success(),
                "man rtlat-timer: {}",
                String::from_utf8_lossy(&man.stderr)
            );
            assert!(
                page.contains("rtlat-timer") && page.contains("--metrics-listen"),
                "{page}"
            );
            let script = std::fs::read_to_string(completion).unwrap();
            assert!(script.contains("complete") && script.contains("--metrics-listen"));
            let hint = std::fs::read_to_string(readme).unwrap();
            assert!(hint.contains("setcap cap_sys_nice,cap_ipc_lock+ep /usr/bin/rtlat"));
            let files = String::from_utf8(dpkg(&["-L", "rtlat"]).stdout).unwrap();
            files
                .lines()
                .find(|l| l.contains("/man1/rtlat-timer.1"))
                .map(str::to_string)
        });
        dpkg(&["-r", "rtlat"]);
        let page = installed
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
            .expect("no rtlat-timer.1 in the package");
        for gone in [bin, completion, readme, Path::new(&page)] {
            assert!(!gone.exists(), "{} is left after dpkg -r", gone.display());
        }
    }
);

case!(
    arm64_and_armhf_packages_are_built_for_their_architecture,
    [DEBS],
    |t| {
        for (arch, machine) in [("arm64", "ARM aarch64"), ("armhf", "ARM, EABI5")] {
            let deb = package(arch);
            let info = String::from_utf8(dpkg(&["--info", deb.to_str().unwrap()]).stdout).unwrap();
            assert!(info.contains(&format!("Architecture: {arch}")), "{info}");
            // The binary inside is that architecture's.
            let dir = t.path(arch);
            dpkg(&["-x", deb.to_str().unwrap(), dir.to_str().unwrap()]);
            let file = Command::new("file")
                .arg(dir.join("usr/bin/rtlat"))
                .output()
                .unwrap();
            let what = String::from_utf8_lossy(&file.stdout);
            assert!(what.contains(machine), "{arch}: {what}");
            assert!(dir
                .join("usr/share/bash-completion/completions/rtlat")
                .exists());
            let pages = std::fs::read_dir(dir.join("usr/share/man/man1"))
                .unwrap()
                .count();
            assert!(pages > 5, "{arch}: {pages} man pages");
        }
    }
);
