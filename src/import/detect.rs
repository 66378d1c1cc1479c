//! Which tool wrote an input, told from its first lines: each [`ImportFormat`]
//! recognises its own markers, and an input is imported without `--from` only
//! when exactly one format claims it.

use super::{ImportFormat, FORMATS};

/// How much of the input detection looks at.
pub const HEAD: usize = 64 << 10;

/// The one format whose markers `head` carries; `None` when none or several do.
pub fn detect(head: &str) -> Option<&'static ImportFormat> {
    let mut claimed = FORMATS.iter().copied().filter(|f| (f.detect)(head));
    match (claimed.next(), claimed.next()) {
        (Some(f), None) => Some(f),
        _ => None,
    }
}

/// Whether `head` is a JSON object with a member `"key"` (the tools print one member a line).
pub fn json_has_key(head: &str, key: &str) -> bool {
    head.trim_start().starts_with('{')
        && head.lines().any(|l| {
            l.trim_start()
                .strip_prefix('"')
                .and_then(|r| r.strip_prefix(key))
                .is_some_and(|r| r.starts_with('"'))
        })
}

/// Whether a line of `head` (leading blanks ignored) starts with one of `prefixes`.
pub fn line_starts_with(head: &str, prefixes: &[&str]) -> bool {
    head.lines()
        .map(str::trim_start)
        .any(|l| prefixes.iter().any(|p| l.starts_with(p)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::fuzz::{fixture, FIXTURES};

    #[test]
    fn every_fixture_is_told_apart() {
        for (format, file) in FIXTURES {
            let text = fixture(file);
            let head = String::from_utf8_lossy(&text[..text.len().min(HEAD)]);
            assert_eq!(detect(&head).map(|f| f.name), Some(format), "{file}");
        }
    }

    #[test]
    fn unknown_or_ambiguous_inputs_are_not_guessed() {
        assert!(detect("").is_none());
        assert!(detect("hello\nworld\n").is_none());
        assert!(detect("{\"schema\": \"rtlat-result\"}").is_none());
        assert!(detect("RTD|  1|  2|  3\nsockperf: x\n").is_none());
        assert!(json_has_key("{\n  \"thread\": {}\n}", "thread"));
        assert!(!json_has_key("{\n  \"threads\": {}\n}", "thread"));
    }
}
