//! Text from result files made safe for a terminal and for line-based
//! formats: every text renderer (the text report and summary, the text,
//! Markdown and CSV tables, the notes) passes what it did not write itself
//! through [`printable`], so a label, board, step or thread name cannot
//! move the cursor, recolour or clear the terminal, or start a row of its
//! own. (HTML and SVG escape through `svg::writer::escape`.)

use std::borrow::Cow;

/// Whether `c` must not reach a terminal or a table as it is: control
/// characters (C0, DEL, C1: escape sequences, line ends, backspace), the
/// Unicode line and paragraph separators, and the bidirectional controls
/// that reorder what a terminal shows.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// `s` with each character of [`hidden`] written as an escape (`\n`, `\r`,
/// `\t`, `\x1b`, `\u{202e}`): visible, on one line, and telling what was
/// there. Text without such characters is returned as it is.
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(hidden) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if hidden(c) && (c as u32) < 0x100 => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if hidden(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// [`printable`] as an owned string.
pub fn printable_string(s: &str) -> String {
    printable(s).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_written_as_escapes() {
        assert!(matches!(printable("cpu0 µs"), Cow::Borrowed(_)));
        assert_eq!(printable("a\x1b[2Jb"), "a\\x1b[2Jb");
        assert_eq!(printable("x\ny\r\tz"), "x\\ny\\r\\tz");
        assert_eq!(printable("\u{7f}\u{9b}"), "\\x7f\\x9b");
        assert_eq!(printable("ab\u{202e}cd\u{2028}"), "ab\\u{202e}cd\\u{2028}");
        for s in ["\x00\x07\x08", "ok\u{2066}", "\u{85}"] {
            assert!(!printable(s).chars().any(hidden), "{s:?}");
        }
    }
}
