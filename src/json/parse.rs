//! Parsing one JSON value with reused simd-json buffers (`ValueParser`),
//! the small byte helpers every fold shares, and error positions for a
//! reader (`locate`, `diagnose`).
//!
//! Invariants: after warm-up a value costs no allocation; every byte of
//! the value is validated (simd-json, plus a re-check of the long numbers
//! its slow path lets through); a number past 64 bits or invalid UTF-8
//! makes the parser retry, never fail, when it can be represented.

use simd_json::tape::{Node, Tape};

use crate::json::scan::{prescan, valid_number, Specials};
use crate::json::value::shorten_text;
use crate::text::utf8::count_chars;

/// Deepest nesting `--format json` folds; deeper documents fall back to
/// the text envelope with this limit as the reason. The walks here do not
/// need it (none recurses); it keeps a pathological document from
/// producing a sample that is nothing but brackets.
pub const MAX_DEPTH: usize = 1024;

/// JSON whitespace.
#[inline]
pub(crate) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// `bytes` without leading and trailing JSON whitespace.
pub(crate) fn trim_ws(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|&b| !is_ws(b)).unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|&b| !is_ws(b)).map_or(start, |p| p + 1);
    &bytes[start..end.max(start)]
}

pub(crate) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Nodes a value occupies on the tape, itself included.
#[inline]
pub(crate) fn extent(nodes: &[Node<'_>], i: usize) -> usize {
    match nodes.get(i) {
        Some(Node::Object { count, .. }) | Some(Node::Array { count, .. }) => count + 1,
        _ => 1,
    }
}

/// Which way a value is being parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attempt {
    /// As written (the fast path).
    Plain,
    /// With numbers past 64 bits neutralised (simd-json rejects them).
    Numbers,
    /// With invalid UTF-8 read as U+FFFD, numbers neutralised.
    Repaired,
}

/// A parsed value, lent to the caller's closure.
pub(crate) struct Parsed<'a, 'n> {
    pub nodes: &'a [Node<'n>],
    pub specials: &'a Specials,
    /// The text that was parsed: the input, or its UTF-8 repair.
    pub source: &'a [u8],
    pub repaired: bool,
}

/// Why a value did not parse: the byte offset in the text and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError {
    pub index: usize,
    pub message: String,
}

impl ParseError {
    fn simd(e: &simd_json::Error) -> ParseError {
        ParseError { index: e.index(), message: simd_message(e) }
    }
}

/// simd-json 0.17 hands a number with 19 or more digits to a slow path
/// that skips its check of what follows, so `[1234567890123456789x]` and
/// `1.12345678901234567890.` parse. Stage 1 marks where every scalar
/// starts; this re-checks the long numbers among them (grammar, then a
/// delimiter), so nothing invalid gets through. Returns the offending
/// offset.
fn long_number_garbage(src: &[u8], structurals: &[u32]) -> Option<usize> {
    for &s in structurals {
        let i = s as usize;
        if !matches!(src.get(i), Some(b'-' | b'0'..=b'9')) {
            continue;
        }
        let mut j = i + 1;
        while j < src.len() && matches!(src[j], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') {
            j += 1;
        }
        if j - i < 18 {
            continue;
        }
        if !valid_number(&src[i..j]) {
            return Some(i);
        }
        if j < src.len() && !matches!(src[j], b' ' | b'\t' | b'\n' | b'\r' | b',' | b']' | b'}') {
            return Some(j);
        }
    }
    None
}

/// simd-json parses in place, so each value is copied into one scratch
/// buffer and parsed into one tape, both reused: after warm-up a value
/// costs no allocation.
pub(crate) struct ValueParser {
    scratch: Vec<u8>,
    repaired: Vec<u8>,
    buffers: simd_json::Buffers,
    tape: Option<Tape<'static>>,
}

impl ValueParser {
    pub(crate) fn new() -> ValueParser {
        ValueParser { scratch: Vec::new(), repaired: Vec::new(), buffers: simd_json::Buffers::default(), tape: None }
    }

    /// Parses `text` (one JSON value) and hands it to `f`. A number past
    /// 64 bits makes it retry with `prescan`; with `repair`, invalid
    /// UTF-8 makes it retry with U+FFFD in its place.
    pub(crate) fn parse<R>(
        &mut self,
        text: &[u8],
        repair: bool,
        f: impl FnOnce(Parsed<'_, '_>) -> R,
    ) -> Result<R, ParseError> {
        let mut attempt = Attempt::Plain;
        loop {
            self.scratch.clear();
            let found = match attempt {
                Attempt::Plain => {
                    self.scratch.extend_from_slice(text);
                    Vec::new()
                }
                Attempt::Numbers => {
                    self.scratch.extend_from_slice(text);
                    prescan(&mut self.scratch)
                }
                Attempt::Repaired => {
                    self.repaired.clear();
                    for chunk in text.utf8_chunks() {
                        self.repaired.extend_from_slice(chunk.valid().as_bytes());
                        if !chunk.invalid().is_empty() {
                            self.repaired.extend_from_slice("\u{FFFD}".as_bytes());
                        }
                    }
                    self.scratch.extend_from_slice(&self.repaired);
                    prescan(&mut self.scratch)
                }
            };
            let mut tape: Tape<'_> = self.tape.take().map_or_else(|| Tape(Vec::new()), Tape::reset);
            match simd_json::fill_tape(&mut self.scratch, &mut self.buffers, &mut tape) {
                Ok(()) => {
                    let repaired = attempt == Attempt::Repaired;
                    let source: &[u8] = if repaired { &self.repaired } else { text };
                    if let Some(index) = long_number_garbage(source, self.buffers.structural_indexes()) {
                        self.tape = Some(tape.reset());
                        return Err(ParseError { index, message: "invalid number".into() });
                    }
                    let specials = Specials::build(&tape.0, found);
                    let r = f(Parsed { nodes: &tape.0, specials: &specials, source, repaired });
                    self.tape = Some(tape.reset());
                    return Ok(r);
                }
                Err(e) => {
                    self.tape = Some(tape.reset());
                    attempt = match (attempt, e.error()) {
                        (Attempt::Plain, simd_json::ErrorType::InvalidNumber) => Attempt::Numbers,
                        (Attempt::Plain | Attempt::Numbers, simd_json::ErrorType::InvalidUtf8) if repair => {
                            Attempt::Repaired
                        }
                        _ => return Err(ParseError::simd(&e)),
                    };
                }
            }
        }
    }
}

/// 1-based line and column (in characters) of byte `offset`.
pub(crate) fn locate(bytes: &[u8], offset: usize) -> (u64, u64) {
    let offset = offset.min(bytes.len());
    let before = &bytes[..offset];
    let line = 1 + memchr::memchr_iter(b'\n', before).count() as u64;
    let start = memchr::memrchr(b'\n', before).map_or(0, |p| p + 1);
    (line, 1 + count_chars(&before[start..]))
}

/// serde_json's (line, byte column) turned into a character column.
fn char_column(bytes: &[u8], line: usize, byte_col: usize) -> u64 {
    let start =
        if line <= 1 { 0 } else { memchr::memchr_iter(b'\n', bytes).nth(line - 2).map_or(bytes.len(), |p| p + 1) };
    let end = (start + byte_col.saturating_sub(1)).min(bytes.len());
    1 + count_chars(&bytes[start..end.max(start)])
}

/// A parse error located for a reader: message, line, column (1-based,
/// column in characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Located {
    pub message: String,
    pub line: u64,
    pub column: u64,
}

/// Explains why `bytes` is not JSON. serde_json's messages and positions
/// are the clearest, so it re-reads the document (only on failure; its
/// recursion limit keeps the stack safe). When it hits that limit or finds
/// nothing wrong, `fallback` (a byte offset and a message, from simd-json
/// or the structure scan) is used.
pub(crate) fn diagnose(bytes: &[u8], fallback: (usize, String)) -> Located {
    match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
        Err(e) if !e.to_string().starts_with("recursion limit exceeded") => {
            let full = e.to_string();
            let message = full.rfind(" at line ").map_or(full.as_str(), |p| &full[..p]).to_string();
            Located {
                message: shorten_text(&message, 160),
                line: e.line().max(1) as u64,
                column: char_column(bytes, e.line(), e.column()),
            }
        }
        _ => {
            let (line, column) = locate(bytes, fallback.0);
            Located { message: shorten_text(&fallback.1, 160), line, column }
        }
    }
}

/// A reader's words for a simd-json error.
pub(crate) fn simd_message(e: &simd_json::Error) -> String {
    match e.error() {
        simd_json::ErrorType::Eof => "unexpected end of input".to_string(),
        simd_json::ErrorType::InputTooLarge => "value larger than 4 GiB (simd-json's limit)".to_string(),
        other => format!("simd-json: {other:?}"),
    }
}

/// Replaces invalid UTF-8 by U+FFFD (one per maximal invalid sequence,
/// so character positions do not move) and says so in `notes`.
pub(crate) fn repair_utf8(bytes: &[u8], notes: &mut Vec<String>) -> Option<Vec<u8>> {
    if simdutf8::basic::from_utf8(bytes).is_ok() {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() + 16);
    let mut bad = 0u64;
    let mut first_bad: Option<usize> = None;
    let mut offset = 0;
    for chunk in bytes.utf8_chunks() {
        out.extend_from_slice(chunk.valid().as_bytes());
        offset += chunk.valid().len();
        if !chunk.invalid().is_empty() {
            first_bad.get_or_insert(offset);
            bad += 1;
            out.extend_from_slice("\u{FFFD}".as_bytes());
            offset += chunk.invalid().len();
        }
    }
    let (line, column) = locate(bytes, first_bad.unwrap_or(0));
    notes.push(format!(
        "{bad} invalid UTF-8 sequence(s) were read as U+FFFD (first at line {line}, column {column}); full_output keeps the original bytes"
    ));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_parser_retries_numbers_and_utf8() {
        let mut p = ValueParser::new();
        let r =
            p.parse(b"[1, 99999999999999999999999]", false, |v| (v.nodes.len(), v.specials.get(2).map(str::to_string)));
        assert_eq!(r.unwrap(), (3, Some("99999999999999999999999".to_string())));
        assert!(p.parse(b"[\"\xff\"]", false, |_| ()).is_err());
        let r = p.parse(b"[\"\xff\"]", true, |v| (v.repaired, String::from_utf8_lossy(v.source).into_owned()));
        assert_eq!(r.unwrap(), (true, "[\"\u{FFFD}\"]".to_string()));
        assert!(p.parse(b"[1,", true, |_| ()).is_err());
        // Still usable after errors.
        assert_eq!(p.parse(b"{\"a\":[]}", false, |v| v.nodes.len()).unwrap(), 3);
    }

    #[test]
    fn long_numbers_with_trailing_garbage_are_rejected() {
        let mut p = ValueParser::new();
        for bad in [
            "[1234567890123456789x]",
            "-1234567890123456789x",
            "1.1234567890123456789012345678901.",
            "[1.00000000000000000000e5x ,1]",
            "[1.12345678901234567890123y]",
        ] {
            assert!(p.parse(bad.as_bytes(), true, |_| ()).is_err(), "{bad}");
        }
        for good in ["[1234567890123456789 ]", "1.1234567890123456789012345678901", "[1.00000000000000000000e5,1]"] {
            assert!(p.parse(good.as_bytes(), true, |_| ()).is_ok(), "{good}");
        }
    }

    #[test]
    fn locate_counts_characters() {
        let b = "{\n  \"日本\": x".as_bytes();
        let off = b.iter().position(|&c| c == b'x').unwrap();
        assert_eq!(locate(b, off), (2, 9));
    }
}
