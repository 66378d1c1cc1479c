//! A small XML reader for the reports tools write (rteval's): elements,
//! their attributes and text, each element with its line. Comments,
//! processing instructions and CDATA are understood, the five predefined
//! entities and character references decoded; namespaces are not
//! interpreted (a prefix is part of the name). A DOCTYPE, and so any entity
//! definition, is refused; open elements are kept on a stack, not the call
//! stack: hostile input fails with its line, whatever its nesting.

use super::{found, ParseError, Parsed};

/// One element as stored: its name, attributes, direct text and children (indices).
struct Stored {
    name: String,
    attrs: Vec<(String, String)>,
    text: String,
    line: usize,
    children: Vec<usize>,
}

/// A parsed document: its elements, the root first.
pub struct Document {
    elements: Vec<Stored>,
}

/// An element of a [`Document`].
#[derive(Clone, Copy)]
pub struct Element<'a> {
    doc: &'a Document,
    i: usize,
}

impl Document {
    pub fn root(&self) -> Element<'_> {
        Element { doc: self, i: 0 }
    }

    /// The first element called `name`, in document order.
    pub fn find(&self, name: &str) -> Option<Element<'_>> {
        let i = self.elements.iter().position(|e| e.name == name)?;
        Some(Element { doc: self, i })
    }
}

impl<'a> Element<'a> {
    fn el(&self) -> &'a Stored {
        &self.doc.elements[self.i]
    }

    pub fn name(&self) -> &'a str {
        &self.el().name
    }

    /// The line where the element starts.
    pub fn line(&self) -> usize {
        self.el().line
    }

    pub fn attribute(&self, name: &str) -> Option<&'a str> {
        let e = self.el();
        e.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The element's own text (not its children's), trimmed.
    pub fn text(&self) -> &'a str {
        self.el().text.trim()
    }

    /// The child elements called `name`.
    pub fn children(self, name: &'a str) -> impl Iterator<Item = Element<'a>> + 'a {
        let doc = self.doc;
        self.el()
            .children
            .iter()
            .map(move |&i| Element { doc, i })
            .filter(move |n| n.name() == name)
    }

    pub fn child(self, name: &'a str) -> Option<Element<'a>> {
        self.children(name).next()
    }
}

/// Where the reader is: the rest of the input and its line.
struct Cursor<'a> {
    s: &'a str,
    pos: usize,
    line: usize,
}

impl<'a> Cursor<'a> {
    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    /// Move past `n` bytes (a char boundary), counting lines.
    fn skip(&mut self, n: usize) {
        let end = (self.pos + n).min(self.s.len());
        self.line += self.s[self.pos..end]
            .bytes()
            .filter(|&b| b == b'\n')
            .count();
        self.pos = end;
    }

    fn skip_blanks(&mut self) {
        let n = self.rest().len() - self.rest().trim_start().len();
        self.skip(n);
    }

    fn error(&self, msg: impl Into<String>) -> ParseError {
        ParseError::at(self.line, msg)
    }

    /// The input ended inside what `what` names.
    fn cut(&self, what: &str) -> ParseError {
        self.error(format!(
            "expected {what}, found the end of the input: the file looks cut; import the whole file"
        ))
    }

    /// Everything up to `end` (moved past), or an error naming what was open.
    fn until(&mut self, end: &str, what: &str) -> Parsed<&'a str> {
        let rest = self.rest();
        let i = rest.find(end).ok_or_else(|| self.cut(what))?;
        self.skip(i + end.len());
        Ok(&rest[..i])
    }

    /// A name: up to a blank, `/`, `>`, `=` or the end.
    fn name(&mut self, what: &str) -> Parsed<&'a str> {
        let rest = self.rest();
        let n = rest
            .find(|c: char| c.is_whitespace() || matches!(c, '/' | '>' | '=' | '<'))
            .unwrap_or(rest.len());
        let name = &rest[..n];
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.')
        {
            return Err(self.error(format!("expected {what}, found {}", found(head(rest, 20)))));
        }
        self.skip(n);
        Ok(name)
    }
}

/// The first `n` characters of `s`, for quoting.
fn head(s: &str, n: usize) -> &str {
    &s[..s.char_indices().nth(n).map_or(s.len(), |(i, _)| i)]
}

/// `text` with its entity and character references decoded.
fn decode(text: &str, at: &Cursor) -> Parsed<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 1..];
        let end = tail.find(';').filter(|&e| e <= 10).ok_or_else(|| {
            at.error(format!(
                "expected an entity reference ending in ';', found {}",
                found(head(&rest[i..], 12))
            ))
        })?;
        let name = &tail[..end];
        let c = match name {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "amp" => Some('&'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => name
                .strip_prefix("#x")
                .map(|h| u32::from_str_radix(h, 16))
                .or_else(|| name.strip_prefix('#').map(str::parse::<u32>))
                .and_then(Result::ok)
                .and_then(char::from_u32),
        };
        let c = c.ok_or_else(|| {
            at.error(format!(
                "expected a predefined entity (&lt; &gt; &amp; &quot; &apos;) or a character reference, found {}",
                found(&format!("&{name};"))
            ))
        })?;
        out.push(c);
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The attributes of a start tag, up to its `>` or `/>`; whether it closed itself.
fn attributes(c: &mut Cursor, into: &mut Vec<(String, String)>) -> Parsed<bool> {
    loop {
        c.skip_blanks();
        let rest = c.rest();
        if rest.starts_with("/>") {
            c.skip(2);
            return Ok(true);
        }
        if rest.starts_with('>') {
            c.skip(1);
            return Ok(false);
        }
        if rest.is_empty() {
            return Err(c.cut("the end of a start tag ('>')"));
        }
        let name = c.name("an attribute name, '>' or '/>'")?;
        c.skip_blanks();
        if !c.rest().starts_with('=') {
            return Err(c.error(format!("expected '=' after the attribute {name}")));
        }
        c.skip(1);
        c.skip_blanks();
        let quote = match c.rest().chars().next() {
            Some(q @ ('"' | '\'')) => q,
            Some(_) => {
                return Err(c.error(format!("expected a quoted value of the attribute {name}")))
            }
            None => return Err(c.cut("an attribute value")),
        };
        c.skip(1);
        let raw = c.until(&quote.to_string(), "the attribute value's closing quote")?;
        if raw.contains('<') {
            return Err(c.error(format!(
                "expected no '<' in the value of the attribute {name}"
            )));
        }
        let value = decode(raw, c)?;
        into.push((name.to_string(), value));
    }
}

/// Parse `input`; every error has its line and says what was expected.
pub fn parse(input: &str) -> Parsed<Document> {
    let mut c = Cursor {
        s: input,
        pos: 0,
        line: 1,
    };
    let mut elements: Vec<Stored> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    let mut closed = false;
    loop {
        let rest = c.rest();
        let Some(lt) = rest.find('<') else {
            if !open.is_empty() {
                c.skip(rest.len());
                let e = &elements[*open.last().unwrap_or(&0)];
                return Err(c.cut(&format!(
                    "</{}> (the element opened at line {})",
                    e.name, e.line
                )));
            }
            if !rest.trim().is_empty() {
                return Err(c.error(format!(
                    "expected markup, found text {}",
                    found(head(rest, 40))
                )));
            }
            break;
        };
        if lt > 0 {
            let text = &rest[..lt];
            match open.last() {
                Some(&i) => {
                    let t = decode(text, &c)?;
                    elements[i].text.push_str(&t);
                }
                None if !text.trim().is_empty() => {
                    return Err(c.error(format!(
                        "expected markup, found text {}",
                        found(head(text, 40))
                    )));
                }
                None => {}
            }
            c.skip(lt);
        }
        let rest = c.rest();
        if rest.starts_with("<!--") {
            c.skip(4);
            c.until("-->", "the end of a comment ('-->')")?;
        } else if rest.starts_with("<?") {
            c.skip(2);
            c.until("?>", "the end of a processing instruction ('?>')")?;
        } else if rest.starts_with("<![CDATA[") {
            c.skip(9);
            let at = c.line;
            let data = c.until("]]>", "the end of a CDATA section (']]>')")?;
            let &i = open
                .last()
                .ok_or_else(|| ParseError::at(at, "expected CDATA only inside an element"))?;
            elements[i].text.push_str(data);
        } else if rest.starts_with("<!") {
            return Err(c.error(format!(
                "expected no DOCTYPE or other declaration (entity definitions are not read), found {}",
                found(head(rest, 20))
            )));
        } else if let Some(after) = rest.strip_prefix("</") {
            let n = after
                .find('>')
                .ok_or_else(|| c.cut("the end of an end tag ('>')"))?;
            let name = after[..n].trim_end();
            let Some(i) = open.pop() else {
                return Err(c.error(format!(
                    "expected no end tag after the root element, found </{name}>"
                )));
            };
            if name != elements[i].name {
                return Err(c.error(format!(
                    "expected </{}> (the element opened at line {}), found {}",
                    elements[i].name,
                    elements[i].line,
                    found(&format!("</{name}>"))
                )));
            }
            c.skip(2 + n + 1);
            closed |= open.is_empty();
        } else {
            if closed {
                return Err(c.error("expected one root element, found another element after it"));
            }
            c.skip(1);
            let line = c.line;
            let name = c.name("an element name after '<'")?.to_string();
            let mut attrs = Vec::new();
            let empty = attributes(&mut c, &mut attrs)?;
            let i = elements.len();
            if let Some(&parent) = open.last() {
                elements[parent].children.push(i);
            }
            elements.push(Stored {
                name,
                attrs,
                text: String::new(),
                line,
                children: Vec::new(),
            });
            if empty {
                closed |= open.is_empty();
            } else {
                open.push(i);
            }
        }
    }
    if elements.is_empty() {
        return Err(c.error("expected an XML document (a root element), found none"));
    }
    Ok(Document { elements })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_attributes_and_text_with_their_lines() {
        let d = parse(
            "<?xml version=\"1.0\"?>\n<!-- c -->\n<r v='1 &amp; 2'>\n  <a x=\"&lt;&#65;&#x42;\">t &gt; u<![CDATA[<raw>]]></a>\n  <b/><a/>\n</r>\n",
        )
        .expect("parses");
        let r = d.root();
        assert_eq!(
            (r.name(), r.line(), r.attribute("v")),
            ("r", 3, Some("1 & 2"))
        );
        let a = r.child("a").expect("a");
        assert_eq!(
            (a.line(), a.attribute("x"), a.text()),
            (4, Some("<AB"), "t > u<raw>")
        );
        assert_eq!(r.children("a").count(), 2);
        assert_eq!(d.find("b").map(|b| b.line()), Some(5));
        assert!(r.attribute("w").is_none() && r.child("z").is_none());
    }

    #[test]
    fn malformed_input_is_refused_with_its_line() {
        for (input, line, what) in [
            ("", 1, "none"),
            ("text", 1, "markup"),
            ("<r>\n<a>\n</r>", 3, "</a> (the element opened at line 2)"),
            ("<r>\n<a>\n", 3, "looks cut"),
            ("<r a=\"1>\n", 1, "closing quote"),
            ("<r a=1/>", 1, "quoted value"),
            ("<r>&bogus;</r>", 1, "predefined entity"),
            ("<r>&#xD800;</r>", 1, "character reference"),
            ("<!DOCTYPE r [<!ENTITY a \"b\">]>\n<r/>", 1, "DOCTYPE"),
            ("<r/>\n<s/>", 2, "one root"),
            ("<r/>\n</s>", 2, "after the root"),
            ("<r>\n<1a/></r>", 2, "element name"),
            ("<r><!-- x", 1, "looks cut"),
            ("<r a=\"<\"/>", 1, "no '<'"),
        ] {
            let e = parse(input)
                .err()
                .unwrap_or_else(|| panic!("{input:?} parsed"));
            assert!(
                e.msg.contains(what) && e.msg.contains("expected"),
                "{input:?}: {}",
                e.msg
            );
            assert_eq!(e.line, line, "{input:?}: {}", e.msg);
            assert!(!e.msg.contains('\n'), "{input:?}");
        }
    }

    #[test]
    fn deep_nesting_does_not_recurse() {
        let deep = "<a>".repeat(200_000) + &"</a>".repeat(200_000);
        assert!(parse(&deep).is_ok());
        assert!(parse(&"<a>".repeat(200_000)).is_err());
    }
}
