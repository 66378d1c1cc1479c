//! The test harness's own check: a test that fails on purpose.
//!
//! `RTLAT_FORCE_FAIL` lists lanes of scripts/test.sh (separated by commas or
//! spaces). This test fails when the list names the lane it runs in:
//! `emulated` under qemu-user (scripts/cross.sh sets `RTLAT_TEST_EMULATOR`),
//! `native` otherwise. So a real failure can be put in a real lane, and the
//! lane must fail: `RTLAT_FORCE_FAIL=emulated scripts/cross.sh emulated`
//! (the `emulated` profile of .config/nextest.toml runs this test) and
//! `RTLAT_FORCE_FAIL=native scripts/test.sh --fast` must exit non-zero.
//! `scripts/test.sh --self-check` checks the rest of the way: the stages,
//! lanes and summary around each lane's tests.

use crate::util::emulator;

/// The lane this test runs in, as `RTLAT_FORCE_FAIL` names it.
fn lane() -> &'static str {
    if emulator().is_some() {
        "emulated"
    } else {
        "native"
    }
}

/// Whether `asked` (the value of `RTLAT_FORCE_FAIL`) names `lane`.
fn names(asked: &str, lane: &str) -> bool {
    asked.split([',', ' ']).any(|word| word == lane)
}

#[test]
fn fails_when_asked() {
    let asked = std::env::var("RTLAT_FORCE_FAIL").unwrap_or_default();
    let lane = lane();
    assert!(
        !names(&asked, lane),
        "failing on purpose: RTLAT_FORCE_FAIL={asked:?} names this lane ({lane})"
    );
}

#[test]
fn force_fail_names_whole_lanes() {
    assert!(names("emulated", "emulated"));
    assert!(names("native,emulated", "emulated"));
    assert!(names("e2e native", "native"));
    assert!(!names("", "native"));
    assert!(!names("emulated", "native"));
    assert!(!names("emulated:swallowed", "emulated"));
    assert!(!names("nativeish", "native"));
}
