//! Signal lines: the matcher, and the bounded keeper that decides which of
//! the matching lines can be shown.
//!
//! Every hit is counted. What is kept is bounded by count and by bytes:
//! - the first signal line (where trouble started);
//! - the most recent ones (nearest the verdict), in a ring;
//! - the first occurrence of each distinct *shape* (the line with digits
//!   folded, so `error at 0x1f` and `error at 0x2a` are one shape), so a
//!   thousand repeats of one error cannot crowd out a different one.
//!
//! At render time the envelope picks, in this priority: errors before
//! warnings, and within a severity: first, last, the few before the last,
//! distinct shapes in input order, then the other recent ones; and prints
//! the chosen ones in input order.
//!
//! With family knowledge (see `crate::family`) each kept line also carries
//! its severity, its *block* (the bounded lines after it that belong to it)
//! and its location; the scanner attaches the block when it closes.

use std::collections::{HashSet, VecDeque};

use regex::bytes::Regex;

use crate::family::Severity;
use crate::stream::line::{LineBody, StoredLine};

/// The default signal pattern (case-insensitive, Unicode word boundaries).
pub const DEFAULT_SIGNAL: &str = r"\b(error|failed|failure|fatal|panic|exception)\b";

/// Characters a signal line may take before it is shortened in the middle.
pub const SIGNAL_LINE_CHARS: usize = 300;
/// Bytes kept from each end of a long signal line (enough for 300 chars).
const PIECE: usize = 4 * SIGNAL_LINE_CHARS / 2;

/// Builds the line matcher: the default, or the user's regex, in
/// multi-line mode so `^`/`$` mean the ends of a line, as the contract
/// defines lines: `\n` ends one, and a `\r` belongs to the terminator only
/// right before it. The regex crate's CRLF mode would also end a line at a
/// lone `\r` (`^error` matched `a\rerror`), so instead every `$` is
/// rewritten to `\r?$` (in `\n`-only multi-line mode) on the parsed
/// pattern, never on its text.
pub fn matcher(user: Option<&str>) -> Result<Regex, regex::Error> {
    let (pat, fold) = match user {
        Some(p) => (p, false),
        None => (DEFAULT_SIGNAL, true),
    };
    let pat = crate::family::anchors::contract_lines(pat, fold)?;
    regex::bytes::RegexBuilder::new(&pat).size_limit(64 << 20).dfa_size_limit(64 << 20).build()
}

/// A kept signal line with what belongs to it.
#[derive(Debug, Clone)]
pub struct Kept {
    pub line: StoredLine,
    pub severity: Severity,
    /// The lines after it that belong to it, each ending with `\n`.
    pub block: Vec<u8>,
    /// Their line numbers (consecutive, except a location line found
    /// past the block's bounds).
    pub block_linenos: Vec<u64>,
    pub location: Option<String>,
}

impl Kept {
    fn new(lineno: u64, body: LineBody, severity: Severity) -> Kept {
        Kept {
            line: StoredLine::new(lineno, body, PIECE),
            severity,
            block: Vec::new(),
            block_linenos: Vec::new(),
            location: None,
        }
    }

    fn set(&mut self, lineno: u64, body: LineBody, severity: Severity) {
        self.line.set(lineno, body, PIECE);
        self.severity = severity;
        self.block.clear();
        self.block_linenos.clear();
        self.location = None;
    }

    /// The block's lines, with their line numbers.
    pub fn block_lines(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.block_linenos
            .iter()
            .zip(self.block.split_inclusive(|&b| b == b'\n'))
            .map(|(n, l)| (*n, l.strip_suffix(b"\n").unwrap_or(l)))
    }
}

#[derive(Debug)]
pub struct SignalKeeper {
    hits: u64,
    by_severity: [u64; 2],
    /// Line numbers of the first hits: enough to tell which lines of the
    /// head arena are signal lines (a line there has at least 2 bytes).
    early: Vec<u64>,
    early_cap: usize,
    first: Option<Kept>,
    recent: VecDeque<Kept>,
    recent_cap: usize,
    distinct: Vec<Kept>,
    distinct_cap: usize,
    seen: HashSet<u64>,
    seen_cap: usize,
    /// The first shapes seen, in input order (for the run history).
    shape_order: Vec<u64>,
}

/// Shapes remembered in input order for the run history.
const SHAPES_REMEMBERED: usize = 64;

impl SignalKeeper {
    /// `recent` most recent hits are kept, and up to `distinct` shapes.
    pub fn new(recent: usize, distinct: usize) -> SignalKeeper {
        SignalKeeper {
            hits: 0,
            by_severity: [0; 2],
            early: Vec::new(),
            early_cap: 0,
            first: None,
            recent: VecDeque::with_capacity(recent),
            recent_cap: recent.max(1),
            distinct: Vec::new(),
            distinct_cap: distinct,
            seen: HashSet::new(),
            seen_cap: 1 << 16,
            shape_order: Vec::new(),
        }
    }

    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Hashes of the first distinct signal shapes (digits folded), in
    /// input order, at most 64: what the run history compares between runs.
    pub fn shapes(&self) -> &[u64] {
        &self.shape_order
    }

    /// Remember the line numbers of the first `n` hits (see
    /// [`SignalKeeper::is_early_hit`]).
    pub fn remember_early(&mut self, n: usize) {
        self.early_cap = n;
    }

    /// Whether `lineno` is a signal line, for lines among the first
    /// `remember_early` hits; None past them.
    pub fn is_early_hit(&self, lineno: u64) -> Option<bool> {
        if self.early.binary_search(&lineno).is_ok() {
            return Some(true);
        }
        (self.early.len() < self.early_cap || self.early.last().is_some_and(|&l| l > lineno)).then_some(false)
    }

    /// Signal lines counted per severity.
    pub fn count(&self, s: Severity) -> u64 {
        self.by_severity[s as usize]
    }

    pub fn offer(&mut self, lineno: u64, body: LineBody) {
        self.offer_with(lineno, body, Severity::Error);
    }

    pub fn offer_with(&mut self, lineno: u64, body: LineBody, severity: Severity) {
        self.hits += 1;
        self.by_severity[severity as usize] += 1;
        if self.early.len() < self.early_cap {
            self.early.push(lineno);
        }
        if self.first.is_none() {
            self.first = Some(Kept::new(lineno, body, severity));
            self.seen.insert(shape(body));
            self.shape_order.push(shape(body));
            return;
        }
        let sh = shape(body);
        if self.distinct.len() < self.distinct_cap && self.seen.len() < self.seen_cap && self.seen.insert(sh) {
            self.distinct.push(Kept::new(lineno, body, severity));
            if self.shape_order.len() < SHAPES_REMEMBERED {
                self.shape_order.push(sh);
            }
        }
        if self.recent.len() == self.recent_cap {
            let mut old = self.recent.pop_front().expect("full ring");
            old.set(lineno, body, severity);
            self.recent.push_back(old);
        } else {
            self.recent.push_back(Kept::new(lineno, body, severity));
        }
    }

    /// Attaches a closed block (and its location) to every kept copy of
    /// the hit on `lineno`, which is the latest hit.
    pub fn attach_block(&mut self, lineno: u64, block: &[u8], linenos: &[u64], location: Option<&str>) {
        let copies = self.first.iter_mut().chain(self.distinct.last_mut()).chain(self.recent.back_mut());
        for k in copies.filter(|k| k.line.lineno == lineno) {
            k.block.clear();
            k.block.extend_from_slice(block);
            k.block_linenos.clear();
            k.block_linenos.extend_from_slice(linenos);
            k.location = location.map(str::to_string);
        }
    }

    /// Line numbers of the most recent hits (a superset of the signal
    /// lines among the tail's lines).
    pub fn recent_linenos(&self) -> impl Iterator<Item = u64> + '_ {
        self.recent.iter().map(|l| l.line.lineno).chain(self.first.iter().map(|l| l.line.lineno))
    }

    pub fn first_lineno(&self) -> Option<u64> {
        self.first.as_ref().map(|l| l.line.lineno)
    }

    /// Kept lines in priority order (see the module doc), each once.
    pub fn by_priority(&self) -> Vec<&StoredLine> {
        self.kept_by_priority().into_iter().map(|k| &k.line).collect()
    }

    /// Kept entries in priority order: errors first, then warnings, each
    /// in the order of the module doc.
    pub fn kept_by_priority(&self) -> Vec<&Kept> {
        let candidates = self
            .first
            .iter()
            .chain(self.recent.iter().rev().take(4))
            .chain(self.distinct.iter())
            .chain(self.recent.iter().rev());
        let mut taken: HashSet<u64> = HashSet::new();
        let mut all: Vec<&Kept> = candidates.filter(|l| taken.insert(l.line.lineno)).collect();
        all.sort_by_key(|k| std::cmp::Reverse(k.severity));
        all
    }
}

/// A cheap hash of the line's first bytes with ASCII digits folded.
/// A line's shape: a hash of its first 256 bytes with digits folded.
pub fn shape(body: LineBody) -> u64 {
    let head = match body {
        LineBody::Whole(b) => b,
        LineBody::Cut { prefix, .. } => prefix,
    };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in head.iter().take(256) {
        let b = if b.is_ascii_digit() { b'0' } else { b };
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_matcher_is_case_insensitive_and_word_bounded() {
        let re = matcher(None).unwrap();
        assert!(re.is_match(b"BUILD FAILED"));
        assert!(re.is_match(b"error: x"));
        assert!(!re.is_match(b"errors: 0"));
        assert!(!re.is_match(b"terror"));
        assert!(!re.is_match(b"thread 'main' panicked"));
        assert!(re.is_match(b"panic: oops"));
    }

    #[test]
    fn keeps_first_last_and_distinct_shapes() {
        let mut k = SignalKeeper::new(3, 10);
        k.offer(1, LineBody::Whole(b"error: first"));
        for i in 2..100u64 {
            let s = format!("error at {i}");
            k.offer(i, LineBody::Whole(s.as_bytes()));
        }
        k.offer(100, LineBody::Whole(b"fatal: different"));
        assert_eq!(k.hits(), 100);
        let p: Vec<u64> = k.by_priority().iter().map(|l| l.lineno).collect();
        assert_eq!(p[0], 1);
        assert_eq!(p[1], 100);
        assert!(p.contains(&2), "the first of the repeated shape: {p:?}");
        assert!(p.len() <= 1 + 3 + 10);
    }

    /// `^`/`$` end a line only at `\n` (a `\r` belongs to the terminator
    /// only before it); with the regex crate's CRLF mode a lone `\r` ended
    /// a line too.
    #[test]
    fn line_anchors_follow_the_contracts_line_ends() {
        let start = matcher(Some("^error")).unwrap();
        assert!(!start.is_match(b"a\rerror"));
        assert!(start.is_match(b"ok\nerror here"));
        assert!(start.is_match(b"ok\r\nerror here"));
        let end = matcher(Some("error$")).unwrap();
        assert!(end.is_match(b"error\r\n"));
        assert!(end.is_match(b"error\nmore"));
        assert!(end.is_match(b"an error"));
        assert!(!end.is_match(b"error\rmore\n"));
        let default = matcher(None).unwrap();
        assert!(default.is_match(b"BUILD FAILED"));
        assert!(!default.is_match(b"errors"));
        assert!(matcher(Some("(")).is_err());
        assert!(matcher(Some(r"(?-u:\xff)x")).unwrap().is_match(b"\xffx"));
    }
}
