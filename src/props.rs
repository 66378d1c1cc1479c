//! Property tests of every reader of input from elsewhere: arbitrary bytes
//! and mutated real files fed to each importer, to the result reader, to
//! the suite file (TOML) and suite manifest readers. Each must give a
//! valid result or a one-line error, never a panic; what it accepts must
//! pass the readers' checks and render. Inputs are at most a few KiB and
//! every reader is bounded ([`crate::input`]), so memory stays small; the
//! bounded reader itself is checked against inputs on either side of its
//! limit. Case counts are modest so that the suite stays fast in debug.

use crate::import::{by_name, parse, FORMATS};
use crate::input::{too_large, Bounded};
use crate::render::{check, load, svg, text, Loaded, Render};
use proptest::prelude::*;
use proptest::test_runner::Config;
use std::io::Read;
use std::path::{Path, PathBuf};

fn config(cases: u32) -> Config {
    Config {
        cases,
        // No regression files in the source tree; a failure prints its input.
        failure_persistence: None,
        ..Config::default()
    }
}

fn fixture(rel: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every import fixture, by format name.
const IMPORTS: [(&str, &str); 15] = [
    ("cyclictest-json", "import/cyclictest-hist.json"),
    ("cyclictest-json", "import/cyclictest.json"),
    ("cyclictest-hist", "import/cyclictest-hist.txt"),
    ("cyclictest-status", "import/cyclictest-q.txt"),
    ("cyclictest-status", "import/cyclictest-q-published.txt"),
    ("cyclictest-status", "import/cyclictest-live.txt"),
    ("cyclictest-verbose", "import/cyclictest-v.txt"),
    ("xenomai", "import/xenomai-latency.txt"),
    ("rtla-timerlat", "import/rtla-timerlat-hist.txt"),
    ("jitterdebugger", "import/jitterdebugger-results.json"),
    ("sockperf", "import/sockperf-full-log.csv"),
    ("oslat", "import/oslat.txt"),
    ("oslat", "import/oslat-2cpu-z.txt"),
    ("rtla-osnoise", "import/rtla-osnoise-hist.txt"),
    ("rtla-osnoise-top", "import/rtla-osnoise-top.txt"),
];

/// A change to a real input: bytes overwritten, a cut, a span repeated,
/// digits replaced by an absurd number.
#[derive(Debug, Clone)]
enum Edit {
    Set(usize, u8),
    Cut(usize),
    Repeat(usize, usize),
    Number(usize, &'static str),
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    let edit = prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        any::<usize>().prop_map(Edit::Cut),
        (any::<usize>(), 1usize..200).prop_map(|(i, n)| Edit::Repeat(i, n)),
        (
            any::<usize>(),
            prop::sample::select(vec![
                "10000000000000000000",
                "1e19",
                "-9223372036854775809",
                "18446744073709551616",
                "1e308",
                "-0",
                "NaN",
                "0.0000001",
            ])
        )
            .prop_map(|(i, n)| Edit::Number(i, n)),
    ];
    prop::collection::vec(edit, 1..6)
}

fn apply(input: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut v = input.to_vec();
    for e in edits {
        let at = |i: usize, v: &Vec<u8>| if v.is_empty() { 0 } else { i % v.len() };
        match *e {
            Edit::Set(i, b) => {
                let i = at(i, &v);
                if let Some(x) = v.get_mut(i) {
                    *x = b;
                }
            }
            Edit::Cut(i) => {
                let i = at(i, &v);
                v.truncate(i);
            }
            Edit::Repeat(i, n) => {
                let i = at(i, &v);
                let end = (i + n).min(v.len());
                let span = v[i..end].to_vec();
                v.splice(i..i, span);
            }
            Edit::Number(i, n) => {
                let i = at(i, &v);
                let Some(s) = (i..v.len()).find(|&k| v[k].is_ascii_digit()) else {
                    continue;
                };
                let e = (s..v.len())
                    .find(|&k| !v[k].is_ascii_digit())
                    .unwrap_or(v.len());
                v.splice(s..e, n.bytes());
            }
        }
    }
    v
}

/// What an importer gives must be a valid result that renders, or an
/// error on one line.
fn import_holds(format: &str, input: &[u8]) -> Result<(), TestCaseError> {
    let f = by_name(format).expect("a format");
    match parse(f, &mut &input[..], "input", None) {
        Ok(r) => {
            check(&r).map_err(|e| {
                TestCaseError::fail(format!("{format}: accepted an invalid result: {e}"))
            })?;
            let l = Loaded::new(PathBuf::from("input"), r);
            let _ = text::report(&l);
            let _ = svg::document(&svg::report_plots(&l));
        }
        Err(e) => {
            prop_assert!(!e.msg.is_empty() && !e.msg.contains('\n'), "{}", e.msg);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn importers_take_arbitrary_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..2048),
        which in 0..FORMATS.len(),
    ) {
        import_holds(FORMATS[which].name, &bytes)?;
    }

    #[test]
    fn importers_take_mutated_fixtures(which in 0..IMPORTS.len(), edits in edits()) {
        let (format, file) = IMPORTS[which];
        import_holds(format, &apply(&fixture(file), &edits))?;
    }

    #[test]
    fn the_result_reader_takes_mutated_results(edits in edits()) {
        let input = apply(&fixture("results/v1-timer.json"), &edits);
        result_holds(&input)?;
    }

    #[test]
    fn the_result_reader_takes_arbitrary_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        brace in any::<bool>(),
    ) {
        let mut input = if brace { b"{".to_vec() } else { Vec::new() };
        input.extend(bytes);
        result_holds(&input)?;
    }

    #[test]
    fn the_suite_file_reader_takes_mutated_and_arbitrary_text(
        edits in edits(),
        bytes in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        for input in [apply(SUITE.as_bytes(), &edits), bytes] {
            let text = String::from_utf8_lossy(&input);
            if let Ok(plan) = crate::suite::plan::parse(&text, "s.toml", "s") {
                prop_assert!(!plan.steps.is_empty());
                for s in &plan.steps {
                    prop_assert!(s.name.chars().count() <= crate::input::MAX_NAME_CHARS);
                    let _ = s.argv("x.json");
                    let _ = s.length_ns();
                }
            }
        }
    }

    #[test]
    fn the_manifest_reader_takes_arbitrary_and_mutated_bytes(
        edits in edits(),
        bytes in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        let dir = tempfile::tempdir().expect("tmp");
        let real = manifest();
        for input in [apply(&real, &edits), bytes] {
            std::fs::write(dir.path().join("suite.json"), &input).expect("write");
            match crate::suite::manifest::Manifest::read(dir.path()) {
                Ok(m) => prop_assert!(m.board.chars().count() <= crate::input::MAX_NAME_CHARS),
                Err(e) => prop_assert!(!e.message().contains('\n'), "{}", e.message()),
            }
        }
    }

    #[test]
    fn the_bounded_reader_stops_exactly_at_its_limit(len in 0usize..5000, limit in 0u64..5000) {
        let mut out = Vec::new();
        let got = Bounded::with_limit(&vec![b'x'; len][..], limit).read_to_end(&mut out);
        if len as u64 <= limit {
            prop_assert_eq!(got.ok(), Some(len));
        } else {
            let e = got.expect_err("past the limit");
            prop_assert_eq!(too_large(&e).map(|t| t.limit), Some(limit));
            prop_assert!(out.len() as u64 <= limit);
        }
    }
}

/// A suite file with every field.
const SUITE: &str = "name = \"lab\"\n\n[[step]]\nname = \"t\"\nbench = \"timer\"\nduration = \"2s\"\nload = \"cpu:1\"\nidle_first = \"1s\"\nargs = [\"--period\", \"200us\"]\noptional = true\n\n[[step]]\nname = \"n\"\nbench = \"net ping\"\nduration = \"1m\"\n";

/// A manifest as a suite writes it.
fn manifest() -> Vec<u8> {
    let plan = crate::suite::plan::parse(SUITE, "s.toml", "s").expect("suite");
    let dir = tempfile::tempdir().expect("tmp");
    let m =
        crate::suite::manifest::Manifest::open(dir.path(), &plan, "board", None).expect("manifest");
    m.save(dir.path()).expect("save");
    std::fs::read(dir.path().join("suite.json")).expect("read")
}

/// What the result reader gives: a result that passed its checks and
/// renders everywhere, or a one-line error.
fn result_holds(input: &[u8]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("r.json");
    std::fs::write(&p, input).expect("write");
    match load(&p) {
        Ok(l) => {
            check(&l.result).map_err(TestCaseError::fail)?;
            let all = [&l];
            let _ = text::TextReport.render(&all);
            let _ = crate::render::html::HtmlReport.render(&all);
            let _ = svg::SvgReport.render(&all);
            let _ = crate::render::compare::CompareTable {
                format: crate::render::compare::TableFormat::Csv,
                baseline: None,
            }
            .render(&all);
        }
        Err(e) => prop_assert!(!e.message().contains('\n'), "{}", e.message()),
    }
    Ok(())
}
