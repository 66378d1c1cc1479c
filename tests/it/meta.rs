//! Shell completions and man pages are generated from the clap definitions.

use crate::util::*;
use std::process::Command;

/// The subcommands `rtlat --help` lists (the source of truth for pages).
fn subcommands() -> Vec<String> {
    let out = rtlat().arg("--help").output().expect("runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

case!(
    bash_accepts_the_completion_script_and_it_completes_subcommands,
    [],
    |t| {
        let out = t
            .rtlat()
            .args(["completions", "bash"])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0));
        let script = String::from_utf8(out.stdout).expect("utf-8");
        for sub in subcommands() {
            assert!(script.contains(&sub), "completion lacks '{sub}'");
        }
        let path = t.path("rtlat.bash");
        std::fs::write(&path, &script).expect("write");
        let check = Command::new("bash")
            .arg("-n")
            .arg(&path)
            .output()
            .expect("bash");
        assert!(
            check.status.success(),
            "bash -n refused the script: {}",
            String::from_utf8_lossy(&check.stderr)
        );
        let bad = t
            .rtlat()
            .args(["completions", "cmd.exe"])
            .output()
            .expect("runs");
        assert_eq!(bad.status.code(), Some(2));
    }
);

case!(every_subcommand_has_a_man_page_that_man_renders, [], |t| {
    let out = t.rtlat().arg("man").arg(t.dir()).output().expect("runs");
    assert_exit(&out, 0, "out");
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut expected = vec!["rtlat".to_string()];
    expected.extend(subcommands().into_iter().map(|s| format!("rtlat-{s}")));
    let can_render = Command::new("man").arg("--version").output().is_ok();
    if !can_render {
        assert!(!in_ci(), "CI installs man-db (scripts/packages.txt)");
        skip_check(
            "rendering the pages: man-db is not installed",
            "man pages not rendered: apt-get install man-db",
        );
    }
    for name in &expected {
        let page = t.path(format!("{name}.1"));
        assert!(page.exists(), "no page {name}.1 (listed: {listed})");
        if !can_render {
            continue;
        }
        let shown = Command::new("man")
            .arg("-l")
            .arg(&page)
            .env("MANWIDTH", "80")
            .env_remove("MAN_KEEP_FORMATTING")
            .output()
            .expect("man");
        let text = String::from_utf8_lossy(&shown.stdout);
        assert!(shown.status.success(), "man -l {name}.1 failed");
        assert!(
            text.contains("NAME") && text.contains("SYNOPSIS"),
            "{name}.1 rendered:\n{text}"
        );
        assert!(
            text.contains(name.as_str()),
            "{name}.1 does not name itself"
        );
    }
    // The timer page carries the options' help written once, in clap.
    let timer = std::fs::read_to_string(t.path("rtlat-timer.1")).expect("page");
    assert!(
        timer.contains("period") && timer.contains("dma\\-latency"),
        "{timer}"
    );
});

#[test]
fn man_pages_into_an_unwritable_place_exit_4_with_one_line() {
    let out = rtlat()
        .args(["man", "/proc/rtlat-man"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("choose a writable place"), "{err}");
}
