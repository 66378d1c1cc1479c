//! A small, lenient JSON reader for other tools' hand-printed JSON.
//!
//! cyclictest and jitterdebugger print their JSON with `printf`: keys like
//! `"cmdline:"`, `nan` or `-nan` for an average of no samples, and (in some
//! versions) trailing commas. This reader accepts those, keeps the line of
//! every value for error messages, and bounds nesting so hostile input cannot
//! exhaust the stack.

use super::{found, ParseError, Parsed};

const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    /// Any number, including `nan` and `inf` as the tools print them.
    Num(f64),
    Str(String),
    Arr(Vec<Node>),
    /// Members in input order.
    Obj(Vec<(String, Node)>),
}

/// A value and the line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub line: usize,
    pub value: Value,
}

impl Node {
    /// A member of an object.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Obj(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The first of several spellings of a member (`"cmdline:"`, `"cmdline"`).
    pub fn get_any(&self, keys: &[&str]) -> Option<&Node> {
        keys.iter().find_map(|k| self.get(k))
    }

    /// A member that must be there.
    pub fn field(&self, key: &str, what: &str) -> Parsed<&Node> {
        self.get(key).ok_or_else(|| {
            ParseError::at(
                self.line,
                format!("expected \"{key}\" in {what} (the object starting here)"),
            )
        })
    }

    pub fn members(&self, what: &str) -> Parsed<&[(String, Node)]> {
        match &self.value {
            Value::Obj(m) => Ok(m),
            _ => Err(self.expected(&format!("an object for {what}"))),
        }
    }

    pub fn str(&self, what: &str) -> Parsed<&str> {
        match &self.value {
            Value::Str(s) => Ok(s),
            _ => Err(self.expected(&format!("a string for {what}"))),
        }
    }

    /// A finite number.
    pub fn num(&self, what: &str) -> Parsed<f64> {
        match &self.value {
            Value::Num(v) if v.is_finite() => Ok(*v),
            _ => Err(self.expected(&format!("a number for {what}"))),
        }
    }

    /// A whole number ≥ 0 (written as `12` or `12.0`).
    pub fn u64(&self, what: &str) -> Parsed<u64> {
        match &self.value {
            Value::Num(v) if v.is_finite() && *v >= 0.0 && v.fract() == 0.0 && *v < 1.8e19 => {
                Ok(*v as u64)
            }
            _ => Err(self.expected(&format!("a whole number ≥ 0 for {what}"))),
        }
    }

    /// A whole number, possibly negative.
    pub fn i64(&self, what: &str) -> Parsed<i64> {
        match &self.value {
            Value::Num(v) if v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e18 => Ok(*v as i64),
            _ => Err(self.expected(&format!("a whole number for {what}"))),
        }
    }

    fn expected(&self, what: &str) -> ParseError {
        let shown = match &self.value {
            Value::Null => "null".to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Num(v) => format!("{v}"),
            Value::Str(s) => found(&format!("\"{s}\"")),
            Value::Arr(_) => "an array".to_string(),
            Value::Obj(_) => "an object".to_string(),
        };
        ParseError::at(self.line, format!("expected {what}, found {shown}"))
    }
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
    line: usize,
}

/// Parse a whole document.
pub fn parse(text: &str) -> Parsed<Node> {
    let mut r = Reader {
        b: text.as_bytes(),
        pos: 0,
        line: 1,
    };
    r.skip_ws();
    if r.pos >= r.b.len() {
        return Err(ParseError::at(
            1,
            "expected a JSON document, found an empty file",
        ));
    }
    let v = r.value(0)?;
    r.skip_ws();
    if r.pos < r.b.len() {
        return Err(r.error("expected the end of the document"));
    }
    Ok(v)
}

impl Reader<'_> {
    fn skip_ws(&mut self) {
        while let Some(&c) = self.b.get(self.pos) {
            match c {
                b'\n' => {
                    self.line += 1;
                    self.pos += 1
                }
                b' ' | b'\t' | b'\r' => self.pos += 1,
                _ => break,
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn error(&self, expected: &str) -> ParseError {
        let rest = &self.b[self.pos.min(self.b.len())..];
        let end = rest
            .iter()
            .position(|&c| c == b'\n')
            .unwrap_or(rest.len())
            .min(40);
        let shown = if rest.is_empty() {
            "the end of the file".to_string()
        } else {
            found(&String::from_utf8_lossy(&rest[..end]))
        };
        ParseError::at(self.line, format!("{expected}, found {shown}"))
    }

    fn value(&mut self, depth: usize) -> Parsed<Node> {
        if depth > MAX_DEPTH {
            return Err(ParseError::at(
                self.line,
                format!("expected at most {MAX_DEPTH} levels of nesting"),
            ));
        }
        self.skip_ws();
        let line = self.line;
        let value = match self.peek() {
            Some(b'{') => self.object(depth)?,
            Some(b'[') => self.array(depth)?,
            Some(b'"') => Value::Str(self.string()?),
            Some(b't') if self.eat_word("true") => Value::Bool(true),
            Some(b'f') if self.eat_word("false") => Value::Bool(false),
            Some(b'n') if self.eat_word("null") => Value::Null,
            Some(c) if c == b'-' || c == b'+' || c == b'.' || c.is_ascii_alphanumeric() => {
                self.number()?
            }
            _ => return Err(self.error("expected a value")),
        };
        Ok(Node { line, value })
    }

    fn eat_word(&mut self, w: &str) -> bool {
        let end = self.pos + w.len();
        if self.b.get(self.pos..end) == Some(w.as_bytes())
            && !self.b.get(end).is_some_and(|c| c.is_ascii_alphanumeric())
        {
            self.pos = end;
            true
        } else {
            false
        }
    }

    fn number(&mut self) -> Parsed<Value> {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'.') {
                self.pos += 1;
            } else {
                break;
            }
        }
        let tok = std::str::from_utf8(&self.b[start..self.pos]).unwrap_or("");
        let lower = tok.to_ascii_lowercase();
        let v = match lower.trim_start_matches(['-', '+']) {
            "nan" => f64::NAN,
            "inf" | "infinity" => {
                if lower.starts_with('-') {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                }
            }
            _ => {
                let plain = tok
                    .bytes()
                    .all(|c| c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E'));
                match tok.parse::<f64>() {
                    Ok(v) if plain => v,
                    _ => {
                        self.pos = start;
                        return Err(self.error(
                            "expected a value (number, string, object, array, true, false or null)",
                        ));
                    }
                }
            }
        };
        Ok(Value::Num(v))
    }

    fn string(&mut self) -> Parsed<String> {
        let line = self.line;
        self.pos += 1; // opening quote
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(ParseError::at(
                    line,
                    "expected the end of a string (\"), found the end of the file",
                ));
            };
            self.pos += 1;
            match c {
                b'"' => break,
                b'\n' => {
                    return Err(ParseError::at(
                        line,
                        "expected the end of a string (\") on the same line",
                    ));
                }
                b'\\' => {
                    let Some(e) = self.peek() else {
                        return Err(self.error("expected an escape after \\"));
                    };
                    self.pos += 1;
                    match e {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'/' => out.push(b'/'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let hex = self
                                .b
                                .get(self.pos..self.pos + 4)
                                .and_then(|h| std::str::from_utf8(h).ok());
                            let code = hex.and_then(|h| u32::from_str_radix(h, 16).ok());
                            let Some(code) = code else {
                                return Err(self.error("expected four hex digits after \\u"));
                            };
                            self.pos += 4;
                            let ch = char::from_u32(code).unwrap_or('\u{fffd}');
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => {
                            self.pos -= 1;
                            return Err(self.error(
                                "expected a JSON escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)",
                            ));
                        }
                    }
                }
                c => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| ParseError::at(line, "expected a UTF-8 string"))
    }

    fn object(&mut self, depth: usize) -> Parsed<Value> {
        self.pos += 1;
        let mut members = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Obj(members));
                }
                Some(b'"') => {}
                _ => return Err(self.error("expected a key in quotes or '}'")),
            }
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.error(&format!("expected ':' after the key \"{key}\"")));
            }
            self.pos += 1;
            let v = self.value(depth + 1)?;
            members.push((key, v));
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {}
                _ => return Err(self.error("expected ',' or '}' after a member")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Parsed<Value> {
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.skip_ws();
            if self.peek() == Some(b']') {
                self.pos += 1;
                return Ok(Value::Arr(items));
            }
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {}
                _ => return Err(self.error("expected ',' or ']' after an element")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_tools_json_with_lines() {
        let doc = "{\n  \"cmdline:\": \"cyclictest -m\",\n  \"thread\": {\n    \"0\": {\"histogram\": {      }, \"avg\": -nan, \"max\": 12,},\n  }\n}\n";
        let v = parse(doc).unwrap();
        assert_eq!(
            v.get("cmdline:").unwrap().str("x").unwrap(),
            "cyclictest -m"
        );
        let t = v.get("thread").unwrap().get("0").unwrap();
        assert_eq!(t.line, 4);
        assert!(matches!(t.get("avg").unwrap().value, Value::Num(x) if x.is_nan()));
        assert_eq!(t.get("max").unwrap().u64("max").unwrap(), 12);
        assert!(t.get("avg").unwrap().num("avg").is_err());
    }

    #[test]
    fn errors_name_the_line_and_what_was_expected() {
        let e = parse("{\n \"a\": 1\n \"b\": 2\n}").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.msg.contains("expected ',' or '}'"), "{e:?}");
        let e = parse("{\"a\": 1").unwrap_err();
        assert!(e.msg.contains("the end of the file"), "{e:?}");
        let e = parse("{\"a\": bogus}").unwrap_err();
        assert!(e.msg.contains("expected a value"), "{e:?}");
        let e = parse(&"[".repeat(10_000)).unwrap_err();
        assert!(e.msg.contains("nesting"), "{e:?}");
        assert!(parse("").is_err());
        assert!(parse("{} x").is_err());
        let v = parse("{\"n\": -5}").unwrap();
        let e = v.get("n").unwrap().u64("cycles").unwrap_err();
        assert!(e.msg.contains("whole number ≥ 0 for cycles"), "{e:?}");
        assert_eq!(
            parse("\"\\u00b5s\"").unwrap().value,
            Value::Str("µs".into())
        );
    }
}
