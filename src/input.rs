//! Every input rtlat reads from a file, a pipe or standard input passes
//! through here: result files (`report`, `compare`), other tools' output
//! (`import`), suite manifests and suite TOML files. One limit for all of
//! them, [`MAX_INPUT_BYTES`], so an endless input (`/dev/zero`, a FIFO fed
//! forever) ends with one clear error instead of taking all memory; and one
//! bound on the names people give and read ([`MAX_NAME_CHARS`]: labels,
//! board, step and thread names).

use crate::error::{Error, Result};
use std::io::{BufRead, Read};
use std::path::Path;

/// The most rtlat reads from any one input. A result file holds histograms
/// of at most 7424 buckets and 4096 series points per thread: a few MiB per
/// thread, pretty-printed, so even a result of a few hundred CPUs fits.
pub const MAX_INPUT_BYTES: u64 = 256 << 20;

/// The longest label, board, step or thread name accepted, in characters.
pub const MAX_NAME_CHARS: usize = 256;

/// The error a [`Bounded`] reader returns once its input goes past the
/// limit (inside an `io::Error` of kind `InvalidData`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge {
    pub limit: u64,
}

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "more than {} MiB, the most rtlat reads from one input",
            self.limit >> 20
        )
    }
}

impl std::error::Error for TooLarge {}

/// Whether `e` is a [`Bounded`] reader's refusal.
pub fn too_large(e: &std::io::Error) -> Option<TooLarge> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<TooLarge>())
        .copied()
}

/// A reader that fails with [`TooLarge`] as soon as its input holds more
/// than `limit` bytes (it reads one byte past the limit to tell an input of
/// exactly `limit` bytes from a longer one).
#[derive(Debug)]
pub struct Bounded<R> {
    inner: R,
    left: u64,
    limit: u64,
}

impl<R: Read> Bounded<R> {
    /// `inner` bounded at [`MAX_INPUT_BYTES`].
    pub fn new(inner: R) -> Self {
        Self::with_limit(inner, MAX_INPUT_BYTES)
    }

    pub fn with_limit(inner: R, limit: u64) -> Self {
        Bounded {
            inner,
            left: limit,
            limit,
        }
    }
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let room = usize::try_from(self.left.saturating_add(1)).unwrap_or(usize::MAX);
        let want = buf.len().min(room);
        let n = self.inner.read(&mut buf[..want])?;
        if n as u64 > self.left {
            self.left = 0;
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                TooLarge { limit: self.limit },
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// Everything `reader` holds, at most [`MAX_INPUT_BYTES`].
pub fn read_all(reader: impl Read) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    Bounded::new(reader).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The message for a failed read of `path`: the limit named when it was hit.
pub fn read_error(path: &Path, e: &std::io::Error) -> String {
    match too_large(e) {
        Some(t) => format!("{}: {t}; give a smaller file", path.display()),
        None => format!("cannot read {}: {e}", path.display()),
    }
}

/// The bytes of the file at `path`, at most [`MAX_INPUT_BYTES`]; any
/// failure is a usage error (exit 2) naming the file. Reads whatever the
/// path opens (a FIFO, `/dev/stdin`): the bound holds for all of them.
pub fn read_file(path: &Path) -> Result<Vec<u8>> {
    let file =
        std::fs::File::open(path).map_err(|e| Error::usage(read_error(path, &e)).because(e))?;
    read_all(file).map_err(|e| Error::usage(read_error(path, &e)).because(e))
}

/// The text of the file at `path` ([`read_file`]), refused when not UTF-8.
pub fn read_text(path: &Path) -> Result<String> {
    utf8(path, read_file(path)?)
}

/// The text of a JSON file at `path`, bounded as [`read_text`]; an input
/// that does not start (after white space) with `{` is refused at its first
/// bytes as not `what` ("an rtlat result"), without reading the rest
/// (`/dev/zero`, a binary file).
pub fn read_json_object(path: &Path, what: &str) -> Result<String> {
    let file =
        std::fs::File::open(path).map_err(|e| Error::usage(read_error(path, &e)).because(e))?;
    let mut reader = std::io::BufReader::new(Bounded::new(file));
    let mut skipped = 0u64;
    loop {
        let buf = reader
            .fill_buf()
            .map_err(|e| Error::usage(read_error(path, &e)).because(e))?;
        if buf.is_empty() {
            return Err(Error::usage(format!(
                "{}: empty, not {what}",
                path.display()
            )));
        }
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(at) if buf[at] == b'{' => break,
            Some(at) => {
                return Err(Error::usage(format!(
                    "{}: not {what} (byte {} is 0x{:02x}, not the '{{' a JSON object starts with)",
                    path.display(),
                    skipped + at as u64 + 1,
                    buf[at]
                )))
            }
            None => {
                let n = buf.len();
                skipped += n as u64;
                reader.consume(n);
            }
        }
    }
    let mut bytes = Vec::new();
    reader
        .read_to_end(&mut bytes)
        .map_err(|e| Error::usage(read_error(path, &e)).because(e))?;
    utf8(path, bytes)
}

/// `bytes` as text, refused (naming the line) when not UTF-8.
fn utf8(path: &Path, bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        Error::usage(format!(
            "{}:{line}: expected text, found bytes that are not UTF-8",
            path.display()
        ))
    })
}

/// A name people give or read (`what`: "label", "step name" …): at most
/// [`MAX_NAME_CHARS`] characters. The message quotes only the start of it.
pub fn check_name(what: &str, name: &str) -> std::result::Result<(), String> {
    let n = name.chars().count();
    if n > MAX_NAME_CHARS {
        let start: String = name
            .chars()
            .take(20)
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        return Err(format!(
            "{what} '{start}…' is {n} characters long; the most is {MAX_NAME_CHARS}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bounded_reader_takes_the_limit_and_refuses_one_byte_more() {
        let mut out = Vec::new();
        Bounded::with_limit(&[7u8; 10][..], 10)
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out.len(), 10);
        let e = Bounded::with_limit(&[7u8; 11][..], 10)
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert_eq!(too_large(&e), Some(TooLarge { limit: 10 }));
        // An endless input ends at the limit.
        let e = Bounded::with_limit(std::io::repeat(0), 1 << 20)
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert!(e.to_string().contains("the most rtlat reads"), "{e}");
        assert!(too_large(&std::io::Error::other("x")).is_none());
    }

    #[test]
    fn names_are_bounded_in_characters() {
        assert!(check_name("label", &"é".repeat(MAX_NAME_CHARS)).is_ok());
        let e = check_name("label", &"x".repeat(MAX_NAME_CHARS + 1)).unwrap_err();
        assert!(e.contains("257 characters") && e.contains("256"), "{e}");
    }
}
