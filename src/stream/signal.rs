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
//! At render time the envelope picks, in this priority: first, last, the few
//! before the last, distinct shapes in input order, then the other recent
//! ones; and prints the chosen ones in input order.

use std::collections::{HashSet, VecDeque};

use regex::bytes::Regex;
use regex_syntax::hir::{Hir, HirKind, Look, Repetition};

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
    let hir = regex_syntax::ParserBuilder::new()
        .multi_line(true)
        .case_insensitive(fold)
        .utf8(false)
        .build()
        .parse(pat)
        .map_err(|e| regex::Error::Syntax(e.to_string()))?;
    regex::bytes::RegexBuilder::new(&line_ends(hir).to_string()).size_limit(64 << 20).dfa_size_limit(64 << 20).build()
}

/// `hir` with every end-of-line assertion allowed to follow a `\r` (the
/// `\r` of a CRLF terminator).
fn line_ends(hir: Hir) -> Hir {
    match hir.into_kind() {
        HirKind::Look(Look::EndLF) => {
            let cr = Repetition { min: 0, max: Some(1), greedy: true, sub: Box::new(Hir::literal(*b"\r")) };
            Hir::concat(vec![Hir::repetition(cr), Hir::look(Look::EndLF)])
        }
        HirKind::Repetition(mut r) => {
            r.sub = Box::new(line_ends(*r.sub));
            Hir::repetition(r)
        }
        HirKind::Capture(mut c) => {
            c.sub = Box::new(line_ends(*c.sub));
            Hir::capture(c)
        }
        HirKind::Concat(v) => Hir::concat(v.into_iter().map(line_ends).collect()),
        HirKind::Alternation(v) => Hir::alternation(v.into_iter().map(line_ends).collect()),
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(l) => Hir::literal(l.0),
        HirKind::Class(c) => Hir::class(c),
        HirKind::Look(l) => Hir::look(l),
    }
}

#[derive(Debug)]
pub struct SignalKeeper {
    hits: u64,
    first: Option<StoredLine>,
    recent: VecDeque<StoredLine>,
    recent_cap: usize,
    distinct: Vec<StoredLine>,
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

    pub fn offer(&mut self, lineno: u64, body: LineBody) {
        self.hits += 1;
        if self.first.is_none() {
            self.first = Some(StoredLine::new(lineno, body, PIECE));
            self.seen.insert(shape(body));
            self.shape_order.push(shape(body));
            return;
        }
        let sh = shape(body);
        if self.distinct.len() < self.distinct_cap && self.seen.len() < self.seen_cap && self.seen.insert(sh) {
            self.distinct.push(StoredLine::new(lineno, body, PIECE));
            if self.shape_order.len() < SHAPES_REMEMBERED {
                self.shape_order.push(sh);
            }
        }
        if self.recent.len() == self.recent_cap {
            let mut old = self.recent.pop_front().expect("full ring");
            old.set(lineno, body, PIECE);
            self.recent.push_back(old);
        } else {
            self.recent.push_back(StoredLine::new(lineno, body, PIECE));
        }
    }

    /// Line numbers of the most recent hits (a superset of the signal
    /// lines among the tail's lines).
    pub fn recent_linenos(&self) -> impl Iterator<Item = u64> + '_ {
        self.recent.iter().map(|l| l.lineno).chain(self.first.iter().map(|l| l.lineno))
    }

    pub fn first_lineno(&self) -> Option<u64> {
        self.first.as_ref().map(|l| l.lineno)
    }

    /// Kept lines in priority order (see the module doc), each once.
    pub fn by_priority(&self) -> Vec<&StoredLine> {
        let candidates = self
            .first
            .iter()
            .chain(self.recent.iter().rev().take(4))
            .chain(self.distinct.iter())
            .chain(self.recent.iter().rev());
        let mut taken: HashSet<u64> = HashSet::new();
        candidates.filter(|l| taken.insert(l.lineno)).collect()
    }
}

/// A cheap hash of the line's first bytes with ASCII digits folded.
fn shape(body: LineBody) -> u64 {
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
