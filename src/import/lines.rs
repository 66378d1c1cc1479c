//! What every parser shares: the bounded line reader, the whole-input reader
//! for JSON, parse errors with their line, and the tools' number forms.
//!
//! Every input is bounded (lines at 64 KiB, JSON files at 64 MiB), so hostile
//! input fails with a line number instead of exhausting memory.

use std::io::{BufRead, Read};

/// Longest accepted input line.
pub const MAX_LINE: usize = 64 << 10;
/// Largest accepted JSON input.
pub const MAX_JSON: u64 = 64 << 20;

/// Where the input is wrong: a 1-based line (0: the input as a whole) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub msg: String,
}

impl ParseError {
    pub fn at(line: usize, msg: impl Into<String>) -> Self {
        ParseError {
            line,
            msg: msg.into(),
        }
    }
}

pub type Parsed<T> = std::result::Result<T, ParseError>;

/// A short, printable quotation of input text.
pub fn found(s: &str) -> String {
    let clean: String = s
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    let t = clean.trim();
    if t.is_empty() {
        "an empty line".into()
    } else if t.chars().count() > 40 {
        format!("'{}…'", t.chars().take(40).collect::<String>())
    } else {
        format!("'{t}'")
    }
}

/// Lines of text with their numbers, bounded in length, ANSI colour codes removed.
pub struct Lines<R> {
    reader: R,
    number: usize,
    buf: Vec<u8>,
    cut: bool,
    unit: Option<SourceUnit>,
}

/// The unit of a tool's values when its output does not say it (cyclictest
/// prints µs, or ns with `-N`, and names neither), as `rtlat import --unit` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceUnit {
    Us,
    Ns,
}

impl SourceUnit {
    /// ns per unit.
    pub fn ns(self) -> u64 {
        match self {
            SourceUnit::Us => 1000,
            SourceUnit::Ns => 1,
        }
    }

    /// The unit's name as rtlat prints it.
    pub fn name(self) -> &'static str {
        match self {
            SourceUnit::Us => "µs",
            SourceUnit::Ns => "ns",
        }
    }

    /// The unit of cyclictest's values and where it comes from: `given`
    /// (`--unit`), else the command line skipped above the output (`-N`:
    /// ns), else µs.
    pub fn of_output(given: Option<SourceUnit>, preamble: &Preamble) -> (SourceUnit, String) {
        match (given, preamble.command("cyclictest")) {
            (Some(u), _) => (u, format!("in {}, as --unit says", u.name())),
            (None, Some(words)) => {
                let u = SourceUnit::of_cyclictest(&words);
                let with = if u == SourceUnit::Ns {
                    "with"
                } else {
                    "without"
                };
                let said = format!(
                    "in {}, as the command line above the output says ({with} -N)",
                    u.name()
                );
                (u, said)
            }
            (None, None) => (
                SourceUnit::Us,
                "read as µs: nothing in the output says ns (-N); give --unit ns if the run had -N"
                    .into(),
            ),
        }
    }

    /// The unit a skipped command line (`words`, from [`Preamble::command`]) sets:
    /// ns with cyclictest's `-N`/`--nsecs`, else µs.
    pub fn of_cyclictest(words: &[String]) -> SourceUnit {
        let ns = words.iter().skip(1).any(|w| {
            w == "--nsecs"
                || (w.starts_with('-') && !w.starts_with("--") && {
                    // Short options bundle (`-mqN`); an option's value (-i1000) ends the bundle.
                    let flags: String = w[1..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphabetic())
                        .collect();
                    flags.contains('N')
                })
        });
        if ns {
            SourceUnit::Ns
        } else {
            SourceUnit::Us
        }
    }
}

impl<R: BufRead> Lines<R> {
    pub fn new(reader: R) -> Self {
        Lines {
            reader,
            number: 0,
            buf: Vec::new(),
            cut: false,
            unit: None,
        }
    }

    /// These lines, whose values are in `unit` when their format does not say.
    pub fn with_unit(mut self, unit: Option<SourceUnit>) -> Self {
        self.unit = unit;
        self
    }

    /// The unit given for the values (`--unit`), if any.
    pub fn unit(&self) -> Option<SourceUnit> {
        self.unit
    }

    /// Whether the last line returned had no line end: the input stops inside
    /// it (a cut file), since the tools end every line they print.
    pub fn cut(&self) -> bool {
        self.cut
    }

    /// The next line (without its end), or `None` at the end of the input.
    pub fn next_line(&mut self) -> Parsed<Option<(usize, String)>> {
        self.buf.clear();
        self.number += 1;
        let n = (&mut self.reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| ParseError::at(self.number, format!("cannot read: {e}")))?;
        if n == 0 {
            return Ok(None);
        }
        if self.buf.len() > MAX_LINE && self.buf.last() != Some(&b'\n') {
            return Err(ParseError::at(
                self.number,
                format!(
                    "expected a line of text, found more than {MAX_LINE} bytes without a line end"
                ),
            ));
        }
        self.cut = self.buf.last() != Some(&b'\n');
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        let text = std::str::from_utf8(&self.buf).map_err(|_| {
            ParseError::at(self.number, "expected text, found bytes that are not UTF-8")
        })?;
        Ok(Some((self.number, strip_ansi(text))))
    }
}

/// The lines before a tool's output that are not part of it (the shell prompt
/// and command of a pasted output): skipped, remembered for a note, bounded.
#[derive(Debug, Default)]
pub struct Preamble {
    /// The first few skipped lines, as they were.
    lines: Vec<String>,
    count: usize,
}

/// How many lines before the output are skipped before the input is refused.
pub const PREAMBLE_LINES: usize = 20;

impl Preamble {
    /// Skip line `n` (`text`), or refuse it with `expected` once too many lines came before the output.
    pub fn skip(&mut self, n: usize, text: &str, expected: &str) -> Parsed<()> {
        self.count += 1;
        if self.count > PREAMBLE_LINES {
            return Err(ParseError::at(
                n,
                format!(
                    "expected {expected} within the first {PREAMBLE_LINES} lines, found {}",
                    found(text)
                ),
            ));
        }
        if self.lines.len() < 3 {
            self.lines.push(text.to_string());
        }
        Ok(())
    }

    /// The skipped lines as a note, if any.
    pub fn note(&self) -> Option<String> {
        (self.count > 0).then(|| {
            format!(
                "{} line(s) before the output were not part of it and were skipped: {}{}",
                self.count,
                self.lines
                    .iter()
                    .map(|l| found(l))
                    .collect::<Vec<_>>()
                    .join(", "),
                if self.count > self.lines.len() {
                    ", …"
                } else {
                    ""
                }
            )
        })
    }

    /// The words of a skipped command line that runs `tool` (`root@board:~# rtla timerlat hist -b 10`).
    pub fn command(&self, tool: &str) -> Option<Vec<String>> {
        self.lines.iter().find_map(|c| {
            let words: Vec<&str> = c.split_whitespace().collect();
            let at = words
                .iter()
                .position(|w| w.rsplit('/').next() == Some(tool))?;
            Some(words[at..].iter().map(|w| w.to_string()).collect())
        })
    }
}

/// Remove terminal colour sequences (`ESC [ … m`), which sockperf writes into its logs.
pub fn strip_ansi(s: &str) -> String {
    if !s.contains('\x1b') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            chars.next();
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Read a whole (JSON) input, refusing more than [`MAX_JSON`] bytes and non-UTF-8.
pub fn read_bounded(reader: &mut dyn Read) -> Parsed<String> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_JSON + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ParseError::at(0, format!("cannot read: {e}")))?;
    if bytes.len() as u64 > MAX_JSON {
        return Err(ParseError::at(
            0,
            format!("expected a JSON file of at most {} MiB", MAX_JSON >> 20),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        ParseError::at(line, "expected text, found bytes that are not UTF-8")
    })
}

/// A number of µs as printed by the tools (`12`, `-0.512`, `28.333`) in ns,
/// rounded; negative values are returned as such for the caller to judge.
pub fn parse_us(s: &str) -> Option<i64> {
    let v: f64 = s.trim().parse().ok()?;
    if !v.is_finite() || v.abs() > 9.0e12 {
        return None;
    }
    Some((v * 1000.0).round() as i64)
}

/// A non-negative integer.
pub fn parse_u64(s: &str) -> Option<u64> {
    let t = s.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// A field that `parse` must accept, else an error naming `what` and the `form` it takes
/// (`"in µs (e.g. 12.345)"`, `"as a whole number"`) and quoting what was found.
pub fn field<T>(
    line: usize,
    s: &str,
    parse: impl Fn(&str) -> Option<T>,
    what: &str,
    form: &str,
) -> Parsed<T> {
    parse(s)
        .ok_or_else(|| ParseError::at(line, format!("expected {what} {form}, found {}", found(s))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cyclictest_command_lines_tell_ns_by_their_n_flag() {
        let unit = |c: &str| {
            let words: Vec<String> = c.split_whitespace().map(String::from).collect();
            SourceUnit::of_cyclictest(&words)
        };
        assert_eq!(unit("cyclictest -m -p80 -N -l 10"), SourceUnit::Ns);
        assert_eq!(unit("cyclictest -mqN -i1000"), SourceUnit::Ns);
        assert_eq!(unit("cyclictest --nsecs -q"), SourceUnit::Ns);
        assert_eq!(unit("cyclictest -m -p80 -i1000 -h200 -q"), SourceUnit::Us);
        // A long option or a value is not the flag; the program name neither.
        assert_eq!(unit("cyclictest --policy=NORMAL -D1m"), SourceUnit::Us);
        assert_eq!(unit("/opt/N/cyclictest -q"), SourceUnit::Us);
    }

    #[test]
    fn lines_are_bounded_and_numbered() {
        let text = b"a\r\nb\n\x1b[2;35mc\x1b[0m\n";
        let mut l = Lines::new(&text[..]);
        assert_eq!(l.next_line().unwrap(), Some((1, "a".to_string())));
        assert_eq!(l.next_line().unwrap(), Some((2, "b".to_string())));
        assert_eq!(l.next_line().unwrap(), Some((3, "c".to_string())));
        assert_eq!(l.next_line().unwrap(), None);
        let long = vec![b'x'; MAX_LINE + 10];
        let mut l = Lines::new(&long[..]);
        assert_eq!(l.next_line().unwrap_err().line, 1);
        let bad = b"ok\n\xff\xfe\n";
        let mut l = Lines::new(&bad[..]);
        l.next_line().unwrap();
        assert!(l.next_line().unwrap_err().msg.contains("UTF-8"));
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_us("28.333"), Some(28_333));
        assert_eq!(parse_us("-0.512"), Some(-512));
        assert_eq!(parse_us("nan"), None);
        assert_eq!(parse_u64("00042"), Some(42));
        assert_eq!(parse_u64("-1"), None);
        assert_eq!(parse_u64("99999999999999999999999"), None);
        // Digits only: Rust's own parser would take a sign.
        assert_eq!(parse_u64("+5"), None);
        assert_eq!(parse_u64(""), None);
        assert_eq!(parse_u64(" 7 "), Some(7));
        // Beyond 9·10¹² µs (about 104 days) a figure is refused, and so is infinity.
        assert_eq!(parse_us("9e12"), Some(9_000_000_000_000_000));
        assert_eq!(parse_us("-9e12"), Some(-9_000_000_000_000_000));
        assert_eq!(parse_us("9.000001e12"), None);
        assert_eq!(parse_us("inf"), None);
        let e = field(7, "x1", parse_u64, "the overruns", "as a whole number").unwrap_err();
        assert_eq!(e.line, 7);
        assert_eq!(e.msg, "expected the overruns as a whole number, found 'x1'");
    }
}
