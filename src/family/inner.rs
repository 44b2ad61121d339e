//! Where a search for a pattern can begin, found from a literal inside it.
//!
//! A pattern the cache reruns on every line of a mask (`family::cache`)
//! such as `\b[1-9]\d* (?:failed|errors?)\b` begins with digits: the regex
//! engine's prefilter stops at every digit 1 to 9 of a line (a timestamp
//! holds a dozen) and runs its automaton from each. What follows the digits
//! (` failed`, ` error`) is rarer, and only digits can come before it; the
//! engine's own inner-literal strategy is not taken, as it also has to find
//! the *leftmost* match and cannot prove that from such a pattern, while a
//! recheck only asks whether there is one.
//!
//! Split the pattern's top-level concatenation into `P` then `S`, where
//! every match of `S` begins with one of a few literals (regex-syntax's
//! prefix extraction), and let `C` hold every byte `P` can consume. Let `i`
//! be where the line's leftmost literal begins and `s` the start of the run
//! of `C` bytes that ends at `i`. A match is `P` over `[a, j)` then `S` from
//! `j`, so a literal begins at `j`, and `j ≥ i`. Either `a ≥ i ≥ s`, or
//! `a < i ≤ j`: then the bytes `[a, i)` were consumed by `P`, are in `C`,
//! and lie in that run, so `a ≥ s`. Hence the line matches if and only if a
//! search from `s` finds a match (look-arounds still see the bytes before
//! `s`), and a line without any of the literals does not match. Any `i`
//! before the leftmost literal would do as well: a prefilter that may stop
//! short of a literal (never past one) is enough.

use regex_automata::{util::prefilter::Prefilter, MatchKind, Span};
use regex_syntax::hir::{literal::Extractor, Hir, HirKind};

use super::cache::ByteSet;

/// Literals shorter than this find too many places to start from: a
/// pattern whose best are shorter is searched as it is.
const MIN_LEN: usize = 3;

/// A pattern's inner literals and the bytes that can come before them in
/// a match (see the module doc).
pub struct InnerStart {
    /// The literals are all long enough that a few are searched with Teddy
    /// and one with memmem. An Aho-Corasick searcher picked a memchr for
    /// the space that ` failed` and ` errors` begin with, and walked its
    /// automaton from every space of a line.
    literals: Prefilter,
    before: ByteSet,
}

impl InnerStart {
    /// None when no part of the pattern after its first piece begins with
    /// literals of `MIN_LEN` bytes, or when its own first literals are as
    /// long (the engine's prefilter then starts at them already), or when
    /// what comes before those literals may hold a space.
    pub fn new(h: &Hir) -> Option<InnerStart> {
        let mut h = h;
        while let HirKind::Capture(c) = h.kind() {
            h = &c.sub;
        }
        let HirKind::Concat(xs) = h.kind() else { return None };
        // Longer literals are rarer; on a tie the earlier split keeps the
        // run walked back over short.
        let (k, lits) = (0..xs.len())
            .filter_map(|k| Some((k, prefixes(&xs[k..])?)))
            .max_by_key(|(k, lits)| (shortest(lits).min(8), std::cmp::Reverse(*k)))?;
        if k == 0 || shortest(&lits) < MIN_LEN {
            return None;
        }
        let mut before = ByteSet::default();
        xs[..k].iter().for_each(|x| consumed(x, &mut before));
        // A run that may hold spaces reaches back over whole words, mostly
        // to the line's start (`"GET /x HTTP/1.1" 503`): the search would
        // begin where the engine's does, after a search of its own.
        if before.contains(b' ') {
            return None;
        }
        Some(InnerStart { literals: Prefilter::new(MatchKind::LeftmostFirst, &lits)?, before })
    }

    /// Where a search for a match in `line` can begin; None when the line
    /// cannot match.
    pub fn start(&self, line: &[u8]) -> Option<usize> {
        let i = self.literals.find(line, Span::from(0..line.len()))?.start;
        Some(i - line[..i].iter().rev().take_while(|&&b| self.before.contains(b)).count())
    }
}

/// Literals of which every match of the concatenation `xs` begins with
/// one; None when there is no such finite set or one of them is empty.
fn prefixes(xs: &[Hir]) -> Option<Vec<Vec<u8>>> {
    let mut seq = Extractor::new().extract(&Hir::concat(xs.to_vec()));
    seq.dedup();
    let lits: Vec<Vec<u8>> = seq.literals()?.iter().map(|l| l.as_bytes().to_vec()).collect();
    (!lits.is_empty() && lits.iter().all(|l| !l.is_empty())).then_some(lits)
}

fn shortest(lits: &[Vec<u8>]) -> usize {
    lits.iter().map(Vec::len).min().unwrap_or(0)
}

/// Adds to `set` every byte a match of `h` can consume.
fn consumed(h: &Hir, set: &mut ByteSet) {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(l) => l.0.iter().for_each(|&b| set.add_range(b, b)),
        // Every byte of a character above ASCII is 0x80 or above.
        HirKind::Class(c) => set.add_class(c, (0x80, 0xff)),
        HirKind::Capture(c) => consumed(&c.sub, set),
        HirKind::Repetition(r) => consumed(&r.sub, set),
        HirKind::Concat(xs) | HirKind::Alternation(xs) => xs.iter().for_each(|x| consumed(x, set)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(p: &str) -> Hir {
        regex_syntax::ParserBuilder::new().utf8(false).build().parse(p).unwrap()
    }

    fn regex(p: &str) -> regex_automata::meta::Regex {
        regex_automata::meta::Builder::new()
            .syntax(regex_automata::util::syntax::Config::new().utf8(false))
            .build(p)
            .unwrap()
    }

    /// The answer through [`InnerStart`] against the regex's own.
    fn agrees(p: &str, lines: &[&[u8]]) {
        let inner = InnerStart::new(&parse(p)).unwrap_or_else(|| panic!("{p}: no inner literals"));
        let re = regex(p);
        for line in lines {
            let via = inner.start(line).is_some_and(|s| re.is_match(regex_automata::Input::new(line).range(s..)));
            assert_eq!(via, re.is_match(*line), "{p} on {:?}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn a_count_before_a_word() {
        let lines: &[&[u8]] = &[
            b"3 failed",
            b"0 failed",
            b"10 failed",
            b"01 failed",
            b"x01 failed, 2 errors",
            b"a1 failed",
            b"_1 failed",
            b"-1 failed",
            b"1 failedx",
            b"1 failed_",
            b"1 failures",
            b"1 failuresx 2 error",
            b" failed",
            b"failed 1",
            b"2026-12-02T10:07:07Z ERROR worker=8 request 736670751 failed: upstream timeout",
            b"2026-12-02T10:07:07Z 0 failed, 0 errors",
            b"0 failed 0 failed 7 failing",
            b"1 FAILED",
            b"\xc3\xa91 failed",
            b"1 failed\xc3\xa9",
            b"\xff1 failed\xff",
            b"1 error",
            b"",
        ];
        agrees(r"\b[1-9]\d* (?:failed|failures?|errors?|failing)\b", lines);
        agrees(r"(?-u:\b[1-9]\d* (?:failed|failures?|errors?|failing)\b)", lines);
        agrees(r"(?mR)(?-u:\b[1-9][0-9]* (?i:failed|errors?)\b)", lines);
        // What comes before the literals may be any word character: the
        // run walked back reaches the line's start.
        agrees(r"\w+\d (?:failed|errors?)", lines);
        // Literals made of bytes that may come before them too.
        let lines: &[&[u8]] =
            &[b"abcabc1", b"abc1", b"zabc", b"-abcxabc2", b"abc-abc7", b"ABCabc3", b"abcab", b"9abc", b"abc\xffabc4"];
        agrees(r"[a-z0-9]+abc\d", lines);
        agrees(r"(?i)(?:^|:)[a-z0-9]*abc\d", lines);
    }

    #[test]
    fn patterns_that_begin_with_their_literals_are_left_to_the_engine() {
        assert!(InnerStart::new(&parse(r#"" 5\d\d\b"#)).is_none());
        assert!(InnerStart::new(&parse(r"\berrors?: [1-9]")).is_none());
        // Nothing long enough after the digits.
        assert!(InnerStart::new(&parse(r"\b[1-9]\d* (?:x|y)")).is_none());
        assert!(InnerStart::new(&parse(r"\d+ \w+")).is_none());
        assert!(InnerStart::new(&parse(r#""[A-Z]+ \S+ HTTP/[.0-9]+" 5\d\d\b"#)).is_none());
    }
}
