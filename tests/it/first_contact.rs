//! What a new user meets first: a mistyped command line gets one line
//! naming what was meant (the full build, which has clap's suggestions)
//! and the help of the subcommand it is about; a number without a unit
//! gets only values the option takes (every missing privilege named in
//! one refusal: errors.rs); an output path follows one rule; the README's
//! exit codes are what rtlat does (a CPU taken offline mid-run: hotplug.rs).

use crate::util::*;

/// The one line a refused command line prints, after its exit 2.
fn refusal(args: &[&str]) -> String {
    let out = rtlat().args(args).output().expect("run");
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    err
}

#[test]
fn a_mistyped_name_is_suggested_and_its_subcommand_help_named() {
    let suggests = cfg!(feature = "host-tools");
    for (args, meant, help) in [
        (&["timr"][..], "'timer'", "'rtlat --help'"),
        (
            &["timer", "--duraton", "1s"],
            "'--duration'",
            "'rtlat timer --help'",
        ),
        (&["net", "pong"], "'ping'", "'rtlat net --help'"),
        (
            &["net", "ping", "--rat", "5"],
            "'--rate'",
            "'rtlat net ping --help'",
        ),
    ] {
        let err = refusal(args);
        assert!(err.contains(help), "{args:?}: {err}");
        assert_eq!(err.contains(meant), suggests, "{args:?}: {err}");
    }
}

#[test]
fn unit_suggestions_are_values_the_option_takes() {
    for (option, value) in [("--period", "1000"), ("--period", "5"), ("--duration", "5")] {
        let err = refusal(&["timer", option, value]);
        assert!(err.contains("'rtlat timer --help'"), "{err}");
        let offered = err
            .split("write it as ")
            .nth(1)
            .and_then(|l| l.split(" (see").next())
            .unwrap_or_default()
            .replace(" or ", ", ");
        let offered: Vec<&str> = offered.split(", ").filter(|s| !s.is_empty()).collect();
        assert!(!offered.is_empty(), "{err}");
        for v in offered {
            // Each value offered passes the parser: with --help appended,
            // clap prints help (exit 0) only when every value parsed.
            let out = rtlat()
                .args(["timer", option, v, "--help"])
                .output()
                .expect("run");
            assert_eq!(out.status.code(), Some(0), "{option} {v} refused: {err}");
        }
    }
}

/// README.md's exit-code table: each code and its meaning.
fn exit_table() -> Vec<(i32, String)> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let table = readme
        .split("## Exit codes")
        .nth(1)
        .expect("an Exit codes section");
    table
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            let mut cells = l.trim_matches('|').splitn(2, '|');
            let code = cells.next()?.trim().parse().ok()?;
            Some((code, cells.next()?.trim().to_string()))
        })
        .collect()
}

case!(
    the_readme_exit_codes_are_what_rtlat_does,
    [Native("runs the binary many times")],
    |t| {
        let table = exit_table();
        let codes: Vec<i32> = table.iter().map(|r| r.0).collect();
        assert_eq!(codes, [0, 1, 2, 3, 4], "{table:?}");
        let json = t.path("r.json");
        let json = json.to_str().expect("path");
        let dir = t.dir().to_str().expect("path").to_string();
        let missing = format!("{dir}/no/such/dir/r.json");
        let quick = ["timer", "--synthetic", "1", "--loops", "2000", "--quiet"];
        // Each case: the words of the table's row it falls under, and its run.
        let cases: Vec<(&str, Vec<&str>)> = vec![
            ("success", [&quick[..], &["--json", json]].concat()),
            (
                "`--max-latency`",
                [&quick[..], &["--max-latency", "1us"]].concat(),
            ),
            ("invalid option or value", vec!["timer", "--period", "abc"]),
            (
                "an output that is not a regular file",
                [&quick[..], &["--json", &dir]].concat(),
            ),
            (
                "device",
                vec![
                    "irq",
                    "loopback",
                    "--chip",
                    "gpiochip99",
                    "--out",
                    "1",
                    "--in",
                    "2",
                ],
            ),
            (
                "the result file could not be written (path",
                [&quick[..], &["--json", &missing]].concat(),
            ),
        ];
        for (words, args) in cases {
            let row = table
                .iter()
                .find(|(_, meaning)| meaning.contains(words))
                .unwrap_or_else(|| panic!("no row of the table says {words:?}"));
            let out = t.rtlat().args(&args).output().expect("run");
            assert_eq!(
                out.status.code(),
                Some(row.0),
                "{args:?} ({words}): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
);

case!(an_output_goes_into_a_directory_that_exists, [], |t| {
    // A directory where a file is wanted is no output (exit 2); a file in
    // a missing directory, or a directory to write into whose parent is
    // missing, cannot be written (exit 4): rtlat makes no path of
    // directories, only the one directory an option names.
    let dir = t.dir().to_str().expect("path").to_string();
    let missing = t.path("no/such");
    let out = t
        .rtlat()
        .args([
            "timer",
            "--synthetic",
            "1",
            "--loops",
            "10",
            "--quiet",
            "--json",
            &dir,
        ])
        .output()
        .expect("run");
    assert!(error_line(&out, 2, "--json DIR").contains("is a directory"));
    let out = t
        .rtlat()
        .arg("man")
        .arg(missing.join("man"))
        .output()
        .expect("run");
    assert!(error_line(&out, 4, "man in a missing directory").contains("create its parent"));
    assert!(!missing.exists(), "no parent was made");
    let out = t
        .rtlat()
        .arg("man")
        .arg(t.path("man"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    assert!(t.path("man").is_dir());
});
