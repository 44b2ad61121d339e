//! One input line as the scanner hands it over, and as the tail ring and the
//! signal keeper keep it.
//!
//! A line longer than twice the keeper's `piece` is kept as its first and
//! last `piece` bytes plus exact byte and character counts, so memory never
//! depends on line length while the end of the line (the verdict) survives.

use crate::text::utf8::count_chars;

/// A complete line's content (terminator and a `\r` before it removed).
#[derive(Debug, Clone, Copy)]
pub enum LineBody<'a> {
    Whole(&'a [u8]),
    /// A line too long to keep whole: its two ends and its true size.
    Cut {
        prefix: &'a [u8],
        suffix: &'a [u8],
        bytes: u64,
        chars: u64,
    },
}

impl LineBody<'_> {
    pub fn bytes(&self) -> u64 {
        match self {
            LineBody::Whole(b) => b.len() as u64,
            LineBody::Cut { bytes, .. } => *bytes,
        }
    }
}

/// An owned line, reusing its allocation when overwritten.
#[derive(Debug, Clone, Default)]
pub struct StoredLine {
    pub lineno: u64,
    data: Vec<u8>,
    /// When cut: `data[..split]` is the prefix, `data[split..]` the suffix.
    split: Option<usize>,
    bytes: u64,
    chars: Option<u64>,
}

impl StoredLine {
    pub fn new(lineno: u64, body: LineBody, piece: usize) -> StoredLine {
        let mut s = StoredLine::default();
        s.set(lineno, body, piece);
        s
    }

    /// Overwrites this line, keeping at most `2 * piece` bytes.
    pub fn set(&mut self, lineno: u64, body: LineBody, piece: usize) {
        self.lineno = lineno;
        self.data.clear();
        match body {
            LineBody::Whole(b) if b.len() <= 2 * piece => {
                self.data.extend_from_slice(b);
                self.split = None;
                self.bytes = b.len() as u64;
                self.chars = None;
            }
            LineBody::Whole(b) => {
                let (p, s) = ends(b, b, piece);
                self.keep_cut(p, s, b.len() as u64, count_chars(b));
            }
            LineBody::Cut { prefix, suffix, bytes, chars } => {
                let (p, s) = ends(prefix, suffix, piece);
                self.keep_cut(p, s, bytes, chars);
            }
        }
    }

    fn keep_cut(&mut self, prefix: &[u8], suffix: &[u8], bytes: u64, chars: u64) {
        self.data.extend_from_slice(prefix);
        self.data.extend_from_slice(suffix);
        self.split = Some(prefix.len());
        self.bytes = bytes;
        self.chars = Some(chars);
    }

    pub fn body(&self) -> LineBody<'_> {
        match self.split {
            None => LineBody::Whole(&self.data),
            Some(k) => LineBody::Cut {
                prefix: &self.data[..k],
                suffix: &self.data[k..],
                bytes: self.bytes,
                chars: self.chars.unwrap_or(0),
            },
        }
    }

    /// Bytes held in memory.
    pub fn held(&self) -> usize {
        self.data.len()
    }

    /// Bytes of the line in the input.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn take_buffer(self) -> Vec<u8> {
        self.data
    }

    pub fn with_buffer(mut buf: Vec<u8>) -> StoredLine {
        buf.clear();
        StoredLine { data: buf, ..StoredLine::default() }
    }
}

/// Bytes past a piece that `ends` (below) looks at to move a cut to a character
/// boundary. A caller that keeps a long line's ends itself (the scanner's
/// open line) keeps this many more than a piece at each end, so the cut
/// comes out as it would from the whole line.
pub const CUT_SLACK: usize = 3;

/// At most `piece` bytes from the start of `prefix` and from the end of
/// `suffix`, moved to character boundaries (looking up to [`CUT_SLACK`]
/// bytes past the piece) so neither end shows a broken character that the
/// input did not have.
fn ends<'a>(prefix: &'a [u8], suffix: &'a [u8], piece: usize) -> (&'a [u8], &'a [u8]) {
    let mut p = prefix.len().min(piece);
    if p < prefix.len() {
        let mut back = 0;
        while p > 0 && back < 3 && is_continuation(prefix[p]) {
            p -= 1;
            back += 1;
        }
    }
    let mut s = suffix.len().saturating_sub(piece);
    let mut fwd = 0;
    while s > 0 && s < suffix.len() && fwd < 3 && is_continuation(suffix[s]) {
        s += 1;
        fwd += 1;
    }
    (&prefix[..p], &suffix[s..])
}

fn is_continuation(b: u8) -> bool {
    (b as i8) < -64
}
