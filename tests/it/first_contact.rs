//! What a new user meets first: a mistyped command line gets one line
//! naming what was meant (the full build, which has clap's suggestions)
//! and the help of the subcommand it is about; a number without a unit
//! gets only values the option takes (every missing privilege named in
//! one refusal: errors.rs).

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
