//! A line's template: the constant words of its message with the variable
//! tokens masked, in the spirit of log-template miners such as Drain, so
//! that lines of one message are one *kind* whatever file, node, number or
//! value they name. Two levels, each a 64-bit key:
//!
//! 1. The **mask** ([`mask_key`](crate::text::mask::mask_key)): the line exactly, except that each
//!    maximal run of ASCII digits is one marker. It is computed once per
//!    signal line, cheaply, and keys the classification cache
//!    (`family::cache`): what a family pattern can tell apart within one
//!    mask is decided from the pattern's syntax tree (only digits vary).
//! 2. The **template** ([`key`], spelled by [`spell`]): the words of the
//!    line with every variable token replaced by `<*>`. A word is variable
//!    when it holds a digit (numbers, versions, ids, hex, addresses, times,
//!    node names such as `R12-M1-NB-C:J09-U01`), a `/` or `\` (paths,
//!    URLs), or looks like a file or host name (`calc.py`, `example.com`:
//!    a last dot followed by one to four lower-case letters or digits); a
//!    quoted string (`'…'`, `"…"`, `` `…` ``) is masked whole, quotes kept.
//!    Words are split at blanks and at `( ) [ ] { } < > , ; = |`; a run of
//!    blanks counts as one space. Two lines about different files are one
//!    template: `error in src/a.rs` and `error in lib/b.rs`.
//!
//! The template depends on a line's digits only through where its digit
//! runs are, so it is a function of the mask: lines with one mask have one
//! template (a property test holds it), which lets the cache keep the
//! template with the classification.
//!
//! Folding runs of like lines in the head and tail keeps its own, finer
//! key (`text::shape`: paths kept literal), because a fold hides the lines
//! between its two exemplars: lines naming different files never fold
//! together. A kind hides nothing: its lines are counted and numbered, and
//! more than one of them is shown as room allows.

use std::ops::Range;

/// What a masked token is spelled as.
pub const MASK: &str = "<*>";

/// Byte classes of the template's tokenizer.
const BLANK: u8 = 1;
/// Splits words and is kept literally: `( ) [ ] { } < > , ; = |`.
const HARD: u8 = 2;
/// `'`, `"` and `` ` ``: open a quoted string where one can start.
const QUOTE: u8 = 4;
const DIGIT: u8 = 8;
const ALPHA: u8 = 16;
/// `/` and `\`: a word holding one is a path.
const SLASH: u8 = 32;
/// Trailing punctuation kept outside a masked word (`src/a.rs:10:` is
/// `<*>:`).
const TRAIL: u8 = 64;

static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = match c {
            b' ' | b'\t' => BLANK,
            b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'<' | b'>' | b',' | b';' | b'=' | b'|' => HARD,
            b'\'' | b'"' | b'`' => QUOTE,
            b'0'..=b'9' => DIGIT,
            b'a'..=b'z' | b'A'..=b'Z' => ALPHA,
            b'/' | b'\\' => SLASH,
            b':' | b'.' | b'!' | b'?' => TRAIL,
            _ => 0,
        };
        b += 1;
    }
    t
};

fn class(b: u8) -> u8 {
    CLASS[b as usize]
}

/// A letter, digit or `_`: a quote next to one is an apostrophe (`can't`).
fn wordish(b: u8) -> bool {
    class(b) & (ALPHA | DIGIT) != 0 || b == b'_'
}

/// What stands for a span of the line in its template; the value is the
/// tag the key hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    /// A variable token.
    Mask = 1,
    /// A run of blanks.
    Space = 2,
}

/// Walks the template of `line`: `emit` gets each span that a marker
/// stands for, in order; the bytes between spans are kept as they are.
/// Handing out spans rather than literal pieces lets [`key`] hash each
/// stretch between markers as one slice.
fn walk(line: &[u8], mut emit: impl FnMut(Range<usize>, Marker)) {
    let n = line.len();
    let mut i = 0;
    while i < n {
        let c = class(line[i]);
        if c == BLANK {
            let start = i;
            while i < n && class(line[i]) == BLANK {
                i += 1;
            }
            emit(start..i, Marker::Space);
            continue;
        }
        if c == QUOTE {
            if let Some(end) = quoted_end(line, i) {
                emit(i + 1..end, Marker::Mask);
                i = end + 1;
                continue;
            }
        }
        if c & (HARD | QUOTE) != 0 {
            i += 1;
            continue;
        }
        let start = i;
        let mut seen = 0;
        // Where the word ends without its trailing punctuation, kept as the
        // scan goes: a loop back over the tail is a branch mispredicted on
        // the words that have one.
        let mut core = i;
        while i < n && class(line[i]) & (BLANK | HARD | QUOTE) == 0 {
            let c = class(line[i]);
            seen |= c;
            i += 1;
            if c != TRAIL {
                core = i;
            }
        }
        let variable = seen & (DIGIT | SLASH) != 0
            // Only a word with a dot (a TRAIL byte) can name a file: most
            // words skip the look.
            || seen & TRAIL != 0 && names_a_file(&line[start..core]);
        if core > start && variable {
            emit(start..core, Marker::Mask);
        }
    }
}

/// Where the string quoted by `line[at]` ends: the next same quote not
/// followed by a letter or digit, when `line[at]` can open one (it follows
/// the line's start or a byte that is not a letter or digit).
fn quoted_end(line: &[u8], at: usize) -> Option<usize> {
    if at > 0 && wordish(line[at - 1]) {
        return None;
    }
    let q = line[at];
    let mut j = at + 1;
    while let Some(k) = memchr::memchr(q, &line[j..]) {
        let end = j + k;
        if line.get(end + 1).is_none_or(|&b| !wordish(b)) {
            return Some(end);
        }
        j = end + 1;
    }
    None
}

/// `calc.py`, `example.com`: a stem, a last dot, then one to four lower-case
/// letters or digits (digit-free here: a word with a digit is already
/// variable). `java.lang.NullPointerException` and `Foo.Bar` stay words.
fn names_a_file(word: &[u8]) -> bool {
    // Only a dot among the last five bytes can start an extension: looking
    // there alone is cheaper on short words than a call to memrchr.
    let Some(k) = word.iter().rev().take(5).position(|&b| b == b'.') else { return false };
    let dot = word.len() - 1 - k;
    let ext = &word[dot + 1..];
    dot > 0 && !ext.is_empty() && ext.iter().all(u8::is_ascii_lowercase) && wordish(word[dot - 1])
}

/// The template's key: equal for lines of one template.
pub fn key(line: &[u8]) -> u64 {
    let mut h = Hasher::new();
    let mut lit = 0;
    walk(line, |span, m| {
        h.bytes(line, lit..span.start);
        h.marker(m as u64);
        lit = span.end;
    });
    h.bytes(line, lit..line.len());
    h.finish()
}

/// The template spelled for a reader: masked tokens as `<*>`, blanks as one
/// space (not made safe to print: see `text::sanitize`).
pub fn spell(line: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len());
    let mut lit = 0;
    walk(line, |span, m| {
        out.extend_from_slice(&line[lit..span.start]);
        out.extend_from_slice(match m {
            Marker::Mask => MASK.as_bytes(),
            Marker::Space => b" ",
        });
        lit = span.end;
    });
    out.extend_from_slice(&line[lit..]);
    out
}

/// The template as a kind's name: [`spell`] without the leading masked
/// tokens, blanks and punctuation (a log line's time stamp, node and
/// thread), so the name starts at the message.
pub fn name(line: &[u8]) -> Vec<u8> {
    let s = spell(line);
    let mut rest = &s[..];
    loop {
        let before = rest.len();
        rest = rest.strip_prefix(MASK.as_bytes()).unwrap_or(rest);
        while let Some((&b, r)) = rest.split_first() {
            if b.is_ascii_alphanumeric() || b >= 0x80 || b"<'\"`[({".contains(&b) {
                break;
            }
            rest = r;
        }
        if rest.len() == before {
            break;
        }
    }
    if rest.is_empty() {
        s.trim_ascii().to_vec()
    } else {
        rest.trim_ascii_end().to_vec()
    }
}

/// The key of a kind named by a code a family captured (`E0308`): never
/// equal to a template's key for the same bytes.
pub fn code_key(code: &[u8]) -> u64 {
    let mut h = Hasher::new();
    h.marker(3);
    h.bytes(code, 0..code.len());
    h.finish()
}

/// A word-at-a-time multiply-xorshift hash over a stream of bytes and
/// markers. A marker is folded in as a value no byte sequence produces at
/// that point (it ends the current word with a distinct tag), so `a#b`
/// and `a1b` never hash alike through the marker.
struct Hasher {
    h: u64,
    word: u64,
    fill: u32,
    len: u64,
}

const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl Hasher {
    fn new() -> Hasher {
        Hasher { h: 0x5851_f42d_4c95_7f2d, word: 0, fill: 0, len: 0 }
    }

    fn step(&mut self, w: u64) {
        let h = (self.h ^ w).wrapping_mul(K);
        self.h = h ^ (h >> 29);
    }

    /// Folds in `src[span]`, all the bytes between two markers (or the
    /// ends): eight at a time, the last up to seven left pending for the
    /// marker or [`finish`](Self::finish).
    #[inline]
    fn bytes(&mut self, src: &[u8], span: Range<usize>) {
        debug_assert_eq!(self.fill, 0, "one slice between markers");
        self.len += span.len() as u64;
        let end = span.end;
        let mut chunks = src[span].chunks_exact(8);
        for c in &mut chunks {
            self.step(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let r = chunks.remainder().len();
        self.word = tail(src, end, r);
        self.fill = r as u32;
    }

    fn marker(&mut self, m: u64) {
        // The pending bytes, their count and the marker in one step: the
        // count tells `ab` + marker from `ab\0` + marker.
        self.step(self.word ^ (u64::from(self.fill) << 56) ^ (m << 60) ^ 0x00a5_0000_0000_0000);
        self.step(m.wrapping_mul(K));
        self.word = 0;
        self.fill = 0;
        self.len += 1;
    }

    fn finish(mut self) -> u64 {
        self.step(self.word ^ (u64::from(self.fill) << 56));
        self.step(self.len.wrapping_mul(K));
        self.h
    }
}

/// The `r < 8` bytes of `src` that end at `end`, little-endian, read as
/// one word (inside `src`) rather than byte by byte.
fn tail(src: &[u8], end: usize, r: usize) -> u64 {
    let at = end - r;
    if let Some(w) = end.checked_sub(8).and_then(|s| src[s..end].first_chunk()) {
        // Two shifts, as one by 64 (no bytes) would overflow: no branch on
        // `r`, which varies from one stretch to the next.
        u64::from_le_bytes(*w) >> 1 >> (63 - 8 * r)
    } else if let Some(w) = src[at..].first_chunk() {
        u64::from_le_bytes(*w) & ((1 << (8 * r)) - 1)
    } else {
        let mut w = [0; 8];
        w[..r].copy_from_slice(&src[at..end]);
        u64::from_le_bytes(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(line: &str) -> String {
        String::from_utf8(spell(line.as_bytes())).unwrap()
    }

    #[test]
    fn variable_tokens_are_masked() {
        assert_eq!(
            t("- 1117838570 2005.06.03 R02-M1-N0-C:J12-U11 RAS KERNEL INFO instruction cache parity error corrected"),
            "- <*> <*> <*> RAS KERNEL INFO instruction cache parity error corrected"
        );
        assert_eq!(
            t("src/a.ts(12,5): error TS2322: Type 'string' is not assignable to type 'number'."),
            "<*>(<*>,<*>): error <*>: Type '<*>' is not assignable to type '<*>'."
        );
        assert_eq!(t("warning: unused variable: `unused_limit`"), "warning: unused variable: `<*>`");
        assert_eq!(
            t("ERROR connect to 10.0.0.1:5432 failed after 3 tries"),
            "ERROR connect to <*> failed after <*> tries"
        );
        assert_eq!(t("Traceback in calc.py, see https://x.org/a"), "Traceback in <*>, see <*>");
        assert_eq!(t("java.lang.NullPointerException: boom"), "java.lang.NullPointerException: boom");
        assert_eq!(t("it can't be   done"), "it can't be done");
        assert_eq!(t("key=0x1fed0000 ok"), "key=<*> ok");
        assert_eq!(t(""), "");
    }

    #[test]
    fn lines_of_one_message_about_different_files_are_one_template() {
        assert_eq!(key(b"error: cannot open src/a.rs: denied"), key(b"error: cannot open lib/b/c.rs: denied"));
        assert_eq!(
            key(b"R12-M1-NB-C:J09-U01 ddr error"),
            key(b"R23-M0-N4-C:J12-U11 ddr error"),
            "node names differ only in the node"
        );
        assert_ne!(key(b"error: cannot open x"), key(b"error: cannot read x"));
        assert_ne!(key(b"a <*> b"), key(b"a 1 b"), "a literal <*> is not a mask");
    }

    #[test]
    fn a_kinds_name_starts_at_the_message() {
        let n = |s: &str| String::from_utf8(name(s.as_bytes())).unwrap();
        assert_eq!(n("2026-01-02 10:00:01,123 [main] ERROR db: timeout"), "[main] ERROR db: timeout");
        assert_eq!(n("- 1117838570 2005.06.03 R02-M1 RAS KERNEL FATAL x"), "RAS KERNEL FATAL x");
        assert_eq!(n("12 34"), "<*> <*>");
        assert_eq!(n("'quoted' first"), "'<*>' first");
    }

    fn xorshift(x: &mut u32) -> u32 {
        *x ^= *x << 13;
        *x ^= *x >> 17;
        *x ^= *x << 5;
        *x
    }

    /// The template is a function of the mask: rewriting every digit run
    /// (other digits, other lengths) changes neither.
    #[test]
    fn one_mask_has_one_template() {
        let alphabet = b"aZx0197 /\\._-:'\"`()[],=|\t\xff!?";
        let mut x = 0x2545_f491_u32;
        for len in 0..3000usize {
            let line: Vec<u8> = (0..len % 61).map(|_| alphabet[xorshift(&mut x) as usize % alphabet.len()]).collect();
            let mut other = Vec::new();
            let mut i = 0;
            while i < line.len() {
                if line[i].is_ascii_digit() {
                    while i < line.len() && line[i].is_ascii_digit() {
                        i += 1;
                    }
                    let run = 1 + xorshift(&mut x) as usize % 4;
                    other.extend((0..run).map(|_| b'0' + (xorshift(&mut x) % 10) as u8));
                } else {
                    other.push(line[i]);
                    i += 1;
                }
            }
            assert_eq!(crate::text::mask::mask_key(&line), crate::text::mask::mask_key(&other));
            assert_eq!(
                spell(&line),
                spell(&other),
                "{:?} / {:?}",
                String::from_utf8_lossy(&line),
                String::from_utf8_lossy(&other)
            );
            assert_eq!(key(&line), key(&other));
        }
    }

    /// `key` and `spell` against the tokenizer and hash they replaced, on
    /// random lines of the pieces the tokenizer tells apart, and on edges.
    #[test]
    fn key_and_spelling_are_the_reference() {
        #[rustfmt::skip]
        let parts: &[&[u8]] = &[
            b"a", b"Zq", b"error", b"abcdefgh", b"abcdefghijklmnop", b"0", b"42", b"x86_64", b"-", b"_",
            b" ", b"  ", b"\t", b"'", b"\"", b"`", b"/", b"\\", b"(", b"]", b"{", b"<", b",", b";", b"=", b"|",
            b":", b".", b"!?", b".py", b".json", b".xhtml", b"\xc3\xa9", b"\xff\xfe", b"\0",
        ];
        let same = |l: &[u8]| {
            assert_eq!(key(l), reference::key(l), "{:?}", String::from_utf8_lossy(l));
            assert_eq!(spell(l), reference::spell(l), "{:?}", String::from_utf8_lossy(l));
        };
        let mut x = 0x9e37_79b9_u32;
        for _ in 0..3000 {
            let len = xorshift(&mut x) as usize % 700;
            let mut line = Vec::new();
            while line.len() < len {
                line.extend(parts[xorshift(&mut x) as usize % parts.len()]);
            }
            // Cut short too, so that the stretches between markers end at
            // every offset from a word boundary, and at the line's end.
            for cut in [len, len / 2, len / 3] {
                same(&line[..cut]);
            }
        }
        let edges: [&[u8]; 15] = [
            b"",
            b" \t  \t ",
            b"say 'unterminated",
            b"abcdefgh",
            b"abcdefghijklmnop",
            b"abcdefgh abcdefghijklmnop:",
            b"abcdefg 1 abcdefghi",
            b"ab (abcdefgh) 'x' abcdefghijklmnopq;",
            b"1234567 abcdefg",
            b"\0\0\0\0\0\0\0\0 \0",
            b"a.py b.COM c.html d.xhtml e. .f g.h.i",
            b"\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7",
            b"it's `x` \"a\"b\" c",
            b"<*> a <*>",
            b"x",
        ];
        for l in edges {
            // Every start within the first word: each piece at every offset.
            for start in 0..l.len().min(9) {
                same(&l[start..]);
            }
        }
        assert_eq!(code_key(b"E0308"), {
            let mut h = Hasher::new();
            h.marker(3);
            reference::bytes(&mut h, b"E0308");
            h.finish()
        });
    }

    /// The tokenizer and key as they were before [`walk`] handed out spans
    /// and [`Hasher::bytes`] took one slice between markers: literal pieces,
    /// hashed byte by byte into the pending word. [`key`] must stay
    /// bit-identical to it (kinds are counted and ordered by the key).
    mod reference {
        use super::super::*;

        /// One piece of a template, in order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Piece<'a> {
            /// Bytes kept as they are.
            Lit(&'a [u8]),
            /// A variable token.
            Mask,
            /// A run of blanks.
            Space,
        }

        /// `calc.py`, `example.com`: a stem, a last dot, then one to four lower-case
        /// letters or digits (digit-free here: a word with a digit is already
        /// variable). `java.lang.NullPointerException` and `Foo.Bar` stay words.
        fn names_a_file(word: &[u8]) -> bool {
            let Some(dot) = memchr::memrchr(b'.', word) else { return false };
            let ext = &word[dot + 1..];
            dot > 0
                && (1..=4).contains(&ext.len())
                && ext.iter().all(|b| b.is_ascii_lowercase())
                && wordish(word[dot - 1])
        }

        /// Walks the template of `line`, piece by piece.
        fn walk<'a>(line: &'a [u8], mut emit: impl FnMut(Piece<'a>)) {
            let n = line.len();
            let mut i = 0;
            while i < n {
                let c = class(line[i]);
                if c == BLANK {
                    while i < n && class(line[i]) == BLANK {
                        i += 1;
                    }
                    emit(Piece::Space);
                    continue;
                }
                if c == QUOTE {
                    if let Some(end) = quoted_end(line, i) {
                        emit(Piece::Lit(&line[i..=i]));
                        emit(Piece::Mask);
                        emit(Piece::Lit(&line[end..=end]));
                        i = end + 1;
                        continue;
                    }
                }
                if c & (HARD | QUOTE) != 0 {
                    emit(Piece::Lit(&line[i..=i]));
                    i += 1;
                    continue;
                }
                let start = i;
                let mut seen = 0;
                while i < n && class(line[i]) & (BLANK | HARD | QUOTE) == 0 {
                    seen |= class(line[i]);
                    i += 1;
                }
                let word = &line[start..i];
                let mut core = word.len();
                while core > 0 && class(word[core - 1]) == TRAIL {
                    core -= 1;
                }
                let variable = core > 0 && (seen & (DIGIT | SLASH) != 0 || names_a_file(&word[..core]));
                if variable {
                    emit(Piece::Mask);
                    if core < word.len() {
                        emit(Piece::Lit(&word[core..]));
                    }
                } else {
                    emit(Piece::Lit(word));
                }
            }
        }

        /// The template's key: equal for lines of one template.
        pub fn key(line: &[u8]) -> u64 {
            let mut h = Hasher::new();
            walk(line, |p| match p {
                Piece::Lit(b) => bytes(&mut h, b),
                Piece::Mask => h.marker(1),
                Piece::Space => h.marker(2),
            });
            h.finish()
        }

        /// The template spelled for a reader: masked tokens as `<*>`, blanks as one
        /// space (not made safe to print: see `text::sanitize`).
        pub fn spell(line: &[u8]) -> Vec<u8> {
            let mut out = Vec::with_capacity(line.len());
            walk(line, |p| match p {
                Piece::Lit(b) => out.extend_from_slice(b),
                Piece::Mask => out.extend_from_slice(MASK.as_bytes()),
                Piece::Space => out.push(b' '),
            });
            out
        }

        /// `Hasher::bytes` as it was: any slice, the pending word filled
        /// first, a byte at a time.
        pub fn bytes(h: &mut Hasher, mut b: &[u8]) {
            h.len += b.len() as u64;
            if h.fill > 0 {
                while h.fill < 8 {
                    let Some((&x, rest)) = b.split_first() else { return };
                    h.word |= u64::from(x) << (8 * h.fill);
                    h.fill += 1;
                    b = rest;
                }
                h.step(h.word);
                h.word = 0;
                h.fill = 0;
            }
            let mut chunks = b.chunks_exact(8);
            for c in &mut chunks {
                h.step(u64::from_le_bytes(c.try_into().expect("8 bytes")));
            }
            for (k, &x) in chunks.remainder().iter().enumerate() {
                h.word |= u64::from(x) << (8 * k);
            }
            h.fill = chunks.remainder().len() as u32;
        }
    }
}
