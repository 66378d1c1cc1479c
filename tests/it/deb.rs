//! Debian packages (scripts/deb.sh, cargo-deb): the amd64 package installs
//! rtlat, its man pages and bash completion and removes them again; the arm64
//! and armhf packages are built for their architecture.
//!
//! The packages are built in a target directory of their own (the one
//! `cargo test` holds is locked while the tests run): the first run builds
//! rtlat in release mode, later runs reuse it.

use crate::util::{in_ci, require_root, skip};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Build the packages of `arches` with scripts/deb.sh; their paths, or why not.
/// One build at a time: the builds share target/deb-assets/ and the target
/// directory, and each may install cargo-deb.
fn build(arches: &[&str]) -> Result<Vec<PathBuf>, String> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("deb-target");
    let out = Command::new("sh")
        .arg(root.join("scripts/deb.sh"))
        .args(arches)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!("{text}{}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(arches
        .iter()
        .map(|a| {
            let line = text
                .lines()
                .rev()
                .find(|l| l.starts_with("deb: ") && l.ends_with(&format!("_{a}.deb")))
                .unwrap_or_else(|| panic!("deb.sh named no {a} package:\n{text}"));
            PathBuf::from(line.trim_start_matches("deb: "))
        })
        .collect())
}

/// Without cargo-deb and no network to install it, skip (fail under CI).
fn built_or_skip(test: &str, arches: &[&str]) -> Option<Vec<PathBuf>> {
    match build(arches) {
        Ok(debs) => Some(debs),
        Err(why) => {
            assert!(!in_ci(), "{test}: scripts/deb.sh failed:\n{why}");
            skip(test, &format!("scripts/deb.sh failed: {why}"));
            None
        }
    }
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

#[test]
fn the_amd64_package_installs_and_removes_rtlat_its_pages_and_completion() {
    let name = "deb::the_amd64_package_installs_and_removes_rtlat_its_pages_and_completion";
    if !require_root(name) {
        return;
    }
    if Command::new("dpkg").arg("--version").output().is_err() {
        skip(name, "not a Debian system (no dpkg)");
        return;
    }
    let Some(debs) = built_or_skip(name, &["amd64"]) else {
        return;
    };
    let deb = debs[0].to_str().unwrap();
    let info = String::from_utf8(dpkg(&["-I", deb]).stdout).unwrap();
    assert!(info.contains("Architecture: amd64"), "{info}");
    assert!(info.contains("Package: rtlat"), "{info}");

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

#[test]
fn arm64_and_armhf_packages_are_built_for_their_architecture() {
    let name = "deb::arm64_and_armhf_packages_are_built_for_their_architecture";
    if std::env::var_os("RTLAT_SKIP_CROSS").is_some_and(|v| v == "1") {
        skip(name, "RTLAT_SKIP_CROSS=1");
        return;
    }
    let Some(debs) = built_or_skip(name, &["arm64", "armhf"]) else {
        return;
    };
    for (deb, arch, machine) in [
        (&debs[0], "arm64", "ARM aarch64"),
        (&debs[1], "armhf", "ARM, EABI5"),
    ] {
        let info = String::from_utf8(dpkg(&["--info", deb.to_str().unwrap()]).stdout).unwrap();
        assert!(info.contains(&format!("Architecture: {arch}")), "{info}");
        // The binary inside is that architecture's.
        let dir = tempfile::tempdir().unwrap();
        dpkg(&["-x", deb.to_str().unwrap(), dir.path().to_str().unwrap()]);
        let file = Command::new("file")
            .arg(dir.path().join("usr/bin/rtlat"))
            .output()
            .unwrap();
        let what = String::from_utf8_lossy(&file.stdout);
        assert!(what.contains(machine), "{arch}: {what}");
        assert!(dir
            .path()
            .join("usr/share/bash-completion/completions/rtlat")
            .exists());
        let pages = std::fs::read_dir(dir.path().join("usr/share/man/man1"))
            .unwrap()
            .count();
        assert!(pages > 5, "{arch}: {pages} man pages");
    }
}
