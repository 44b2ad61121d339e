//! `--format json`: fold one JSON document into a smaller one that is
//! itself valid JSON: `{"header": {...}, "sample": [...]}`.
//!
//! A document up to [`IN_MEMORY_BYTES`] is buffered; a larger one is only
//! counted, and folded from the stored copy by two streaming passes in
//! bounded memory (`big`, which reuses the steps below item by item); past
//! `--json-max-bytes` it is not folded ([`Fallback`]). In memory, without
//! ever building a tape of the whole document:
//!
//! 1. a UTF-8 BOM is skipped and invalid UTF-8 read as U+FFFD (both stated
//!    in the header's `notes`; the stored original keeps the bytes);
//! 2. a byte scan that skips strings (`scan_structure`) checks the
//!    nesting depth (past [`MAX_DEPTH`]: fallback) and bracket matching,
//!    and finds the array to fold: a top-level array itself (which needs no
//!    scan: the element splitter checks the depth); under a top-level
//!    object, the largest array (in bytes) reached through object keys only
//!    (`$.data.items`), when it holds at least a quarter of the document
//!    (so `{"config": {...}, "tags": ["x"]}` is not folded to `tags`);
//!    otherwise the root is the one item. The same pass records the
//!    separators of that array (up to one per 64 bytes of document), so
//!    its elements are split without reading its bytes a second time;
//! 3. simd-json parses the document with that array emptied (the
//!    "wrapper": path, other top-level keys, duplicate keys), then each
//!    element on its own with reused buffers (`ValueParser`), feeding the
//!    key inventory and the sample store. Every byte is still validated:
//!    the wrapper and each element by simd-json, the separators by the
//!    splitter; an unbalanced split always leaves a piece that fails;
//! 4. `assemble` fits header and whole samples into the budget, and the
//!    result is re-parsed before it is returned.
//!
//! Peak memory is the document plus one element's tape (a full tape costs
//! 24 bytes per value, several times the document). Only when the root is
//! the one item is the whole document parsed into one tape; that costs
//! about five to seven times its size, which `--json-max-bytes` bounds. Invalid JSON is a
//! [`Fallback`] carrying serde_json's message and the 1-based line and
//! column (in characters) of the error: serde_json re-reads the document
//! only on failure, for its clearer messages; the caller prints the text
//! envelope instead.
//!
//! Nothing here recurses over the input's nesting (every walk over bytes or
//! a tape is a loop with an explicit stack or a counter); the depth limit
//! keeps pathological documents from folding into samples made of
//! brackets, not the stack safe.
//!
//! # Files
//!
//! One concern each; the arrows are the order of the steps above:
//!
//! ```text
//! document  JsonCollector and the document fold (steps 1-4)
//! big       the fold of a document too large to hold: two streaming passes over the stored copy
//!   stream    the streaming tokenizer big reads with (grammar, offsets; constant memory)
//! ndjson    the streaming NDJSON fold
//!   scan      byte scans that skip strings: structure, element split, prescan of numbers
//!   parse     ValueParser (one value, reused buffers), shared byte helpers, error positions
//!   inventory the key inventory and value types (finds duplicate keys on the way)
//!   dups      duplicate keys and the paths that name them
//!   sample    samples kept as text, and their bounded rendering
//!   value     J and Field (the header model), escaping, shortening, common fields
//!   assemble  fitting header and samples into the budget; the output check
//! ```

mod assemble;
mod big;
mod document;
mod dups;
mod inventory;
pub mod ndjson;
mod parse;
mod sample;
mod scan;
mod stream;
mod value;

pub use big::{IN_MEMORY_BYTES, ITEM_MAX};
pub use document::JsonCollector;
pub use inventory::{MAX_KEY_DEPTH, NESTED_KEY_CAP, TOP_KEY_CAP};
pub use parse::MAX_DEPTH;
pub use sample::{SAMPLE_RAW_BYTES, SAMPLE_STORE_BYTES};

use std::fmt;

use crate::json::parse::{is_ws, trim_ws, BOM};

/// What the fold needs to know: the run's facts (the one record the text
/// header is written from too) and the limits.
#[derive(Debug, Clone, Copy)]
pub struct FoldContext<'a> {
    /// Label, id, the stored copy (`full_output`, printed whole), command,
    /// stream, what `--format auto` detected.
    pub facts: &'a crate::render::facts::RunFacts,
    /// Total input bytes.
    pub bytes: u64,
    /// Total input chars (lossy UTF-8).
    pub chars: u64,
    /// Max chars of the returned string.
    pub budget: usize,
    /// `--samples`.
    pub samples: usize,
}

/// Why a document was not folded; the caller prints the text envelope and
/// puts this in its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fallback {
    pub reason: String,
    /// 1-based line of the parse error, when there is one.
    pub line: Option<u64>,
    /// 1-based column, in characters.
    pub column: Option<u64>,
}

impl Fallback {
    pub(crate) fn new(reason: impl Into<String>) -> Fallback {
        Fallback { reason: reason.into(), line: None, column: None }
    }

    pub(crate) fn at(reason: impl Into<String>, line: u64, column: u64) -> Fallback {
        Fallback { reason: reason.into(), line: Some(line), column: Some(column) }
    }
}

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)?;
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, " (line {l}, column {c})"),
            (Some(l), None) => write!(f, " (line {l})"),
            _ => Ok(()),
        }
    }
}

impl std::error::Error for Fallback {}

/// What `--format auto` decided from the first block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detected {
    Json,
    Ndjson,
    Text,
}

impl Detected {
    /// The name recorded in the header's `detected`.
    pub fn as_str(self) -> &'static str {
        match self {
            Detected::Json => "json",
            Detected::Ndjson => "ndjson",
            Detected::Text => "text",
        }
    }
}

/// Decides the format from the first block of the input.
///
/// After a BOM and whitespace, input that does not start with `[` or `{`
/// is text. When the first line is a whole JSON value and the next
/// non-blank line starts with `[` or `{`, it is NDJSON; when nothing but
/// whitespace follows, one JSON document. Otherwise the document goes on
/// past the first line: JSON when the block is a plausible start of one
/// (it parses, or ends early), text when it breaks sooner, as a log line
/// such as `[2024-01-01 12:00] started` does.
pub fn detect(prefix: &[u8]) -> Detected {
    let p = prefix.strip_prefix(BOM).unwrap_or(prefix);
    let start = p.iter().position(|&b| !is_ws(b)).unwrap_or(p.len());
    let p = &p[start..];
    if !matches!(p.first(), Some(b'[' | b'{')) {
        return Detected::Text;
    }
    // The block may end inside a UTF-8 sequence: drop the partial one.
    // Invalid bytes elsewhere are read as U+FFFD, as the folds do.
    let p = match std::str::from_utf8(p) {
        Err(e) if e.error_len().is_none() => &p[..e.valid_up_to()],
        _ => p,
    };
    let lossy = String::from_utf8_lossy(p);
    let p = lossy.as_bytes();
    if let Some(nl) = memchr::memchr(b'\n', p) {
        let first = trim_ws(&p[..nl]);
        if parses(first) {
            let next = p[nl + 1..].split(|&b| b == b'\n').map(trim_ws).find(|l| !l.is_empty());
            return match next {
                None => Detected::Json,
                Some(l) if matches!(l[0], b'[' | b'{') => Detected::Ndjson,
                Some(_) => Detected::Text,
            };
        }
    }
    match serde_json::from_slice::<serde::de::IgnoredAny>(p) {
        Ok(_) => Detected::Json,
        Err(e) if e.is_eof() || e.to_string().starts_with("recursion limit exceeded") => Detected::Json,
        Err(_) => Detected::Text,
    }
}

fn parses(line: &[u8]) -> bool {
    matches!(line.first(), Some(b'[' | b'{')) && serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detect_formats() {
        assert_eq!(detect(b"{\"a\":1}\n{\"a\":2}\n"), Detected::Ndjson);
        assert_eq!(detect(b"\xEF\xBB\xBF  [1]\n\n[2]"), Detected::Ndjson);
        assert_eq!(detect(b"{\n  \"a\": 1\n}\n"), Detected::Json);
        assert_eq!(detect(b"[1,2,3]"), Detected::Json);
        assert_eq!(detect(b"[1,2,3]\n"), Detected::Json);
        assert_eq!(detect(b"[\n {\"a\": \"\xe6\x97"), Detected::Json);
        assert_eq!(detect(b"{\"a\":\"\xff\"}\n{\"a\":2}\n"), Detected::Ndjson);
        assert_eq!(detect(b"[2024-01-01 12:00] started\n[2024-01-01 12:01] done\n"), Detected::Text);
        assert_eq!(detect(b"hello {\"a\":1}"), Detected::Text);
        assert_eq!(detect(b"{\"a\":1}\nplain text after\n"), Detected::Text);
        assert_eq!(detect(b""), Detected::Text);
        assert_eq!(detect("[".repeat(500).as_bytes()), Detected::Json);
    }
}
