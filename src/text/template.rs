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
    let Some(dot) = memchr::memrchr(b'.', word) else { return false };
    let ext = &word[dot + 1..];
    dot > 0 && (1..=4).contains(&ext.len()) && ext.iter().all(|b| b.is_ascii_lowercase()) && wordish(word[dot - 1])
}

/// The template's key: equal for lines of one template.
pub fn key(line: &[u8]) -> u64 {
    let mut h = Hasher::new();
    walk(line, |p| match p {
        Piece::Lit(b) => h.bytes(b),
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
    h.bytes(code);
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

    fn bytes(&mut self, mut b: &[u8]) {
        self.len += b.len() as u64;
        if self.fill > 0 {
            while self.fill < 8 {
                let Some((&x, rest)) = b.split_first() else { return };
                self.word |= u64::from(x) << (8 * self.fill);
                self.fill += 1;
                b = rest;
            }
            self.step(self.word);
            self.word = 0;
            self.fill = 0;
        }
        let mut chunks = b.chunks_exact(8);
        for c in &mut chunks {
            self.step(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        for (k, &x) in chunks.remainder().iter().enumerate() {
            self.word |= u64::from(x) << (8 * k);
        }
        self.fill = chunks.remainder().len() as u32;
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
}
