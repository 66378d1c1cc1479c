//! The one snapshot helper, included (`#[path]`) by the library's render tests
//! and by the integration tests: insta snapshots in `tests/snapshots/report/`.

/// Compare `got` with the insta snapshot `tests/snapshots/report/{name}.snap`
/// (byte for byte but for trailing whitespace at its end);
/// `INSTA_UPDATE=always cargo test` (or `cargo insta review`) accepts changes.
pub fn snapshot(name: &str, got: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/snapshots/report"
    ));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!(name, got));
}
