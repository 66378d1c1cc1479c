//! A run under qemu-user says so: its result carries a note and the
//! system's `emulation`, its text output the note, `report` and `compare`
//! mark it, and `check` names the emulator. A native run carries none of
//! it. scripts/cross.sh runs this test under qemu-arm and qemu-ppc (the
//! `emulated` profile of .config/nextest.toml), every tier natively.

use crate::util::*;

case!(
    an_emulated_run_is_marked_and_a_native_one_is_not,
    [Measuring],
    |t| {
        let emulated = emulator().is_some();
        let (out, r) = t.run_json(
            t.rtlat().arg("timer").args(UNPRIVILEGED).args([
                "--cpus",
                "0",
                "--duration",
                "1s",
                "--quiet",
            ]),
            "r.json",
            0,
        );
        let notes: Vec<&str> = r["notes"]
            .as_array()
            .expect("notes")
            .iter()
            .filter_map(|n| n.as_str())
            .filter(|n| n.starts_with("emulated: ran under "))
            .collect();
        assert_eq!(notes.len(), usize::from(emulated), "{:?}", r["notes"]);
        let how = r["system"]["emulation"].as_str();
        assert_eq!(how.is_some(), emulated, "{}", r["system"]);
        if let Some(how) = how {
            assert!(how.starts_with("qemu-user ("), "{how}");
            assert!(notes[0].contains(how), "{notes:?}");
        }
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            text.contains("note: emulated: ran under"),
            emulated,
            "{text}"
        );

        // Reading result files is the full build's (host-tools).
        if cfg!(feature = "host-tools") {
            let report = t
                .rtlat()
                .args(["report", "r.json"])
                .output()
                .expect("report");
            assert_exit(&report, 0, "report");
            let report = String::from_utf8_lossy(&report.stdout);
            assert_eq!(report.contains("(emulated)"), emulated, "{report}");

            let compare = t
                .rtlat()
                .args(["compare", "r.json", "r.json"])
                .output()
                .expect("compare");
            assert_exit(&compare, 0, "compare");
            let compare = String::from_utf8_lossy(&compare.stdout);
            // Each row's label, and the line that says what the mark means.
            assert_eq!(
                compare.matches("(emulated)").count(),
                if emulated { 5 } else { 0 },
                "{compare}"
            );
        }

        // check exits 3 when something would stop a measurement (an
        // unprivileged user): the emulation line is there either way.
        let check = t.rtlat().arg("check").output().expect("check");
        let check = String::from_utf8_lossy(&check.stdout);
        let line = check
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some("emulation"))
            .unwrap_or_else(|| panic!("no emulation line: {check}"));
        if emulated {
            assert!(
                line.starts_with("WARN") && line.contains("running under qemu-user"),
                "{line}"
            );
        } else {
            assert!(line.starts_with("GOOD"), "{line}");
        }
    }
);
