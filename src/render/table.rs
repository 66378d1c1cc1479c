//! Tables as text, Markdown and CSV: one renderer for every table people read
//! (the run summary, `rtlat compare`; plain enough for the `rtlat load` table):
//! rows of cells, the header being the first row, alignment per column.

use super::printable::printable;
use std::borrow::Cow;
use std::fmt::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// How one column of a text table is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Col {
    pub align: Align,
    /// The narrowest the column is, in characters.
    pub width: usize,
    /// Widen the column to its longest cell. Without, a longer cell shifts
    /// only its own row (as `{:>9}` does).
    pub fit: bool,
    /// Spaces before the column (none before the first).
    pub gap: usize,
}

impl Col {
    /// Left-aligned, as wide as its longest cell, two spaces before.
    pub const fn left() -> Col {
        Col {
            align: Align::Left,
            width: 0,
            fit: true,
            gap: 2,
        }
    }

    /// Right-aligned, as wide as its longest cell, two spaces before.
    pub const fn right() -> Col {
        Col {
            align: Align::Right,
            ..Col::left()
        }
    }

    /// At least `width` characters wide.
    pub const fn min(self, width: usize) -> Col {
        Col { width, ..self }
    }

    /// Exactly `width` characters wide unless a cell is longer (that row shifts).
    pub const fn fixed(self, width: usize) -> Col {
        Col {
            width,
            fit: false,
            ..self
        }
    }

    /// `gap` spaces before the column.
    pub const fn gap(self, gap: usize) -> Col {
        Col { gap, ..self }
    }
}

/// Rows of cells as aligned text, one line each, trailing spaces trimmed;
/// a left-aligned last cell is not padded. Rows may be shorter than `cols`.
/// Control characters in cells are written as escapes ([`printable`]).
pub fn text(cols: &[Col], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<Cow<'_, str>>> = rows
        .iter()
        .map(|r| r.iter().map(|c| printable(c)).collect())
        .collect();
    let widths: Vec<usize> = cols
        .iter()
        .enumerate()
        .map(|(c, col)| {
            let longest = rows
                .iter()
                .filter_map(|r| r.get(c))
                .map(|v| v.chars().count())
                .max()
                .unwrap_or(0);
            if col.fit {
                col.width.max(longest)
            } else {
                col.width
            }
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, v) in row.iter().map(|v| v.as_ref()).enumerate() {
            let col = cols.get(c).copied().unwrap_or(Col::left());
            if c > 0 {
                line.push_str(&" ".repeat(col.gap));
            }
            let pad = widths
                .get(c)
                .copied()
                .unwrap_or(0)
                .saturating_sub(v.chars().count());
            match col.align {
                Align::Left => {
                    line.push_str(v);
                    if c + 1 < row.len() {
                        line.push_str(&" ".repeat(pad));
                    }
                }
                Align::Right => {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(v);
                }
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A Markdown cell: control characters as escapes, `\\` and `|` escaped.
fn md_cell(s: &str) -> String {
    printable(s).replace('\\', "\\\\").replace('|', "\\|")
}

/// A GitHub-flavoured Markdown table: the first row is the header.
pub fn markdown(aligns: &[Align], rows: &[Vec<String>]) -> String {
    let mut o = String::new();
    let line = |o: &mut String, cells: &[String]| {
        let cells: Vec<String> = cells.iter().map(|c| md_cell(c)).collect();
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    };
    let Some((head, body)) = rows.split_first() else {
        return o;
    };
    line(&mut o, head);
    let sep: Vec<&str> = (0..head.len())
        .map(|c| match aligns.get(c) {
            Some(Align::Right) => "---:",
            _ => "---",
        })
        .collect();
    let _ = writeln!(o, "| {} |", sep.join(" | "));
    for r in body {
        line(&mut o, r);
    }
    o
}

/// A CSV field (RFC 4180): control characters as escapes, so that no
/// field holds a line end; quoted, with `"` doubled, when it holds `,` or
/// `"` or starts or ends with a space.
fn csv_field(s: &str) -> String {
    let s = printable(s);
    if s.contains([',', '"']) || s.starts_with(' ') || s.ends_with(' ') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.into_owned()
    }
}

/// Comma-separated values, fields quoted where needed.
pub fn csv(rows: &[Vec<String>]) -> String {
    let mut o = String::new();
    for r in rows {
        let cells: Vec<String> = r.iter().map(|c| csv_field(c)).collect();
        let _ = writeln!(o, "{}", cells.join(","));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(r: &[&[&str]]) -> Vec<Vec<String>> {
        r.iter()
            .map(|r| r.iter().map(|c| c.to_string()).collect())
            .collect()
    }

    #[test]
    fn text_aligns_fits_and_trims() {
        let t = text(
            &[Col::left(), Col::right(), Col::left()],
            &rows(&[
                &["name", "n", "note"],
                &["a", "1234", ""],
                &["bb", "5", "x"],
            ]),
        );
        assert_eq!(t, "name     n  note\na     1234\nbb       5  x\n");
    }

    #[test]
    fn fixed_columns_shift_only_the_long_row() {
        let cols = [Col::left().min(3), Col::right().fixed(3).gap(1)];
        let t = text(&cols, &rows(&[&["a", "1"], &["b", "12345"]]));
        assert_eq!(t, "a     1\nb   12345\n");
    }

    #[test]
    fn fields_are_quoted_where_needed() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(md_cell("a|b"), "a\\|b");
        let md = markdown(
            &[Align::Left, Align::Right],
            &rows(&[&["k", "v"], &["a", "1"]]),
        );
        assert_eq!(md, "| k | v |\n| --- | ---: |\n| a | 1 |\n");
    }
}
