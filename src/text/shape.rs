//! A line's *shape*: the line with its variable parts folded, so that
//! `Compiling crate12 v0.1.3` and `Compiling crate7 v0.2.0` are one shape
//! (`Compiling crate# v#.#.#`) while lines that name different files stay
//! apart.
//!
//! Folded: every run of ASCII digits (numbers, timestamps, sizes, line
//! numbers, versions) becomes `#`, and so does a token of at least
//! `HEX_MIN` hex digits with a digit in it (commit ids, addresses, UUID
//! parts) and a `0x` hex number. Kept literal: a path-like token (one
//! holding `/` or `\` and a letter), digits included, because which file a
//! line names is what it means; and everything else. A run of spaces or tabs counts as one space, so column
//! alignment does not split a run of otherwise equal lines.
//!
//! The shape is computed in one pass without allocating (`hash`); `bytes`
//! spells it for the reader (the gap inventory, `2955 × "Compiling
//! crate# v#.#.#"`).

/// A token this long, made of hex digits with at least one digit, is an id.
const HEX_MIN: usize = 6;

/// Byte classes for the one-pass fold.
const SPACE: u8 = 1;
const ALPHA: u8 = 2;
const DIGIT: u8 = 4;
/// Joins words inside a token: `_ . - ~ + @`.
const JOIN: u8 = 8;
/// `/` and `\`: a token with one of these and a letter is a path.
const SLASH: u8 = 16;
const TOKEN: u8 = ALPHA | DIGIT | JOIN | SLASH;

static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = if c == b' ' || c == b'\t' {
            SPACE
        } else if c.is_ascii_alphabetic() {
            ALPHA
        } else if c.is_ascii_digit() {
            DIGIT
        } else if matches!(c, b'_' | b'.' | b'-' | b'~' | b'+' | b'@') {
            JOIN
        } else if c == b'/' || c == b'\\' {
            SLASH
        } else {
            0
        };
        b += 1;
    }
    t
};

/// Writes the shape of `line` to the front of `out` (at least
/// `line.len()` bytes: a shape is never longer than its line) and returns
/// its length. One pass; tokens without a digit, the most common, are
/// copied whole.
fn fold(line: &[u8], out: &mut [u8]) -> usize {
    let mut o = 0;
    let mut i = 0;
    while i < line.len() {
        let c = CLASS[line[i] as usize];
        if c & TOKEN == 0 {
            if c == SPACE {
                while i < line.len() && CLASS[line[i] as usize] == SPACE {
                    i += 1;
                }
                out[o] = b' ';
            } else {
                out[o] = line[i];
                i += 1;
            }
            o += 1;
            continue;
        }
        let start = i;
        let mut seen = 0;
        while i < line.len() && CLASS[line[i] as usize] & TOKEN != 0 {
            seen |= CLASS[line[i] as usize];
            i += 1;
        }
        let t = &line[start..i];
        // A path names letters somewhere (`src/lib2.rs`); `3/3000` and
        // `2026/12/03` are numbers. Without a digit nothing folds.
        if seen & DIGIT == 0 || seen & (SLASH | ALPHA) == SLASH | ALPHA {
            out[o..o + t.len()].copy_from_slice(t);
            o += t.len();
        } else {
            o = fold_token(t, out, o);
        }
    }
    o
}

/// A token with digits that is not a path: its words (split at `_ . - ~
/// + @ / \`) fold one by one.
fn fold_token(t: &[u8], out: &mut [u8], mut o: usize) -> usize {
    let mut i = 0;
    while i < t.len() {
        let start = i;
        while i < t.len() && CLASS[t[i] as usize] & (ALPHA | DIGIT) != 0 {
            i += 1;
        }
        o = fold_word(&t[start..i], out, o);
        if i < t.len() {
            out[o] = t[i];
            o += 1;
            i += 1;
        }
    }
    o
}

fn fold_word(w: &[u8], out: &mut [u8], mut o: usize) -> usize {
    let id = w.len() >= HEX_MIN && w.iter().all(u8::is_ascii_hexdigit) && w.iter().any(u8::is_ascii_digit);
    // `0x1fed0000`, `0XFF`: a hex number however short (register dumps).
    let hex = w.len() > 2 && matches!(w[..2], [b'0', b'x' | b'X']) && w[2..].iter().all(u8::is_ascii_hexdigit);
    if id || hex {
        out[o] = b'#';
        return o + 1;
    }
    let mut i = 0;
    while i < w.len() {
        if w[i].is_ascii_digit() {
            while i < w.len() && w[i].is_ascii_digit() {
                i += 1;
            }
            out[o] = b'#';
            o += 1;
        } else {
            out[o] = w[i];
            o += 1;
            i += 1;
        }
    }
    o
}

/// The shape's hash: equal for lines of one shape. A word-at-a-time
/// multiply-xorshift mix of the folded bytes (byte-wise FNV-1a took 12%
/// of a scan with one signal line in ten). Not stable across versions:
/// the run history sees every shape as new once after a change.
pub fn hash(line: &[u8]) -> u64 {
    let mut stack = [0u8; 256];
    let mut heap = Vec::new();
    let out: &mut [u8] = if line.len() <= stack.len() {
        &mut stack
    } else {
        heap.resize(line.len(), 0);
        &mut heap
    };
    let n = fold(line, out);
    mix(&out[..n])
}

fn mix(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let step = |h: u64, w: u64| {
        let h = (h ^ w).wrapping_mul(K);
        h ^ (h >> 29)
    };
    let mut h = (bytes.len() as u64).wrapping_mul(K) ^ 0x5851_f42d_4c95_7f2d;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        h = step(h, u64::from_le_bytes(c.try_into().expect("8 bytes")));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        h = step(h, u64::from_le_bytes(last));
    }
    step(h, K)
}

/// The shape's bytes (not made safe to print: see `text::sanitize`).
pub fn bytes(line: &[u8]) -> Vec<u8> {
    let mut out = vec![0; line.len()];
    let n = fold(line, &mut out);
    out.truncate(n);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(line: &str) -> String {
        String::from_utf8(bytes(line.as_bytes())).unwrap()
    }

    #[test]
    fn numbers_versions_timestamps_and_ids_fold() {
        assert_eq!(s("   Compiling crate12 v0.1.3"), " Compiling crate# v#.#.#");
        assert_eq!(s("2026-12-03T07:00:41Z INFO served in 12 ms"), "#-#-#T#:#:#Z INFO served in # ms");
        assert_eq!(s("commit 3f2a9c1b7e"), "commit #");
        assert_eq!(s("r23=0x1fed0000 r24=0xff"), "r#=# r#=#");
        assert_eq!(s("size 12.5MiB"), "size #.#MiB");
        assert_eq!(hash(b"Compiling a1 v0.1.0"), hash(b"Compiling a22 v10.0.3"));
    }

    #[test]
    fn paths_stay_literal_and_words_stay_apart() {
        assert_eq!(s("--> src/lib2.rs:705:9"), "--> src/lib2.rs:#:#");
        assert_ne!(hash(b"error in src/a.rs"), hash(b"error in src/b.rs"));
        // Slashes between numbers only make a fraction or a date, not a path.
        assert_eq!(s("progress 12/3000 shards, 2026/12/03"), "progress #/# shards, #/#/#");
        assert_ne!(hash(b"Compiling foo"), hash(b"Checking foo"));
        // Hex words without a digit are words.
        assert_eq!(s("deadbeef facade"), "deadbeef facade");
    }

    /// The rule written plainly, token by token, as the reference for the
    /// one-pass `fold`.
    fn reference(line: &[u8]) -> Vec<u8> {
        let is_token = |b: u8| b.is_ascii_alphanumeric() || b"_.-/\\~+@".contains(&b);
        let mut out = Vec::new();
        let mut i = 0;
        while i < line.len() {
            if line[i] == b' ' || line[i] == b'\t' {
                while i < line.len() && (line[i] == b' ' || line[i] == b'\t') {
                    i += 1;
                }
                out.push(b' ');
            } else if !is_token(line[i]) {
                out.push(line[i]);
                i += 1;
            } else {
                let start = i;
                while i < line.len() && is_token(line[i]) {
                    i += 1;
                }
                let t = &line[start..i];
                if t.iter().any(|&b| b == b'/' || b == b'\\') && t.iter().any(u8::is_ascii_alphabetic) {
                    out.extend_from_slice(t);
                    continue;
                }
                let mut j = 0;
                while j < t.len() {
                    let w0 = j;
                    while j < t.len() && t[j].is_ascii_alphanumeric() {
                        j += 1;
                    }
                    reference_word(&t[w0..j], &mut out);
                    if j < t.len() {
                        out.push(t[j]);
                        j += 1;
                    }
                }
            }
        }
        out
    }

    fn reference_word(w: &[u8], out: &mut Vec<u8>) {
        let id = w.len() >= HEX_MIN && w.iter().all(u8::is_ascii_hexdigit) && w.iter().any(u8::is_ascii_digit);
        let hex = w.len() > 2 && w[0] == b'0' && (w[1] | 0x20) == b'x' && w[2..].iter().all(u8::is_ascii_hexdigit);
        if id || hex {
            return out.push(b'#');
        }
        let mut j = 0;
        while j < w.len() {
            if w[j].is_ascii_digit() {
                while j < w.len() && w[j].is_ascii_digit() {
                    j += 1;
                }
                out.push(b'#');
            } else {
                out.push(w[j]);
                j += 1;
            }
        }
    }

    #[test]
    fn fold_agrees_with_the_plain_rule() {
        let alphabet = b"aZx0197fF /\\._-+@~:\t\xff=#";
        let mut x = 0x2545_f491_u32;
        for len in 0..2000usize {
            let line: Vec<u8> = (0..len % 97)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    alphabet[x as usize % alphabet.len()]
                })
                .collect();
            assert_eq!(bytes(&line), reference(&line), "{:?}", String::from_utf8_lossy(&line));
            assert_eq!(hash(&line), mix(&reference(&line)));
        }
        let long = b"12 abc/def ".repeat(100);
        assert_eq!(bytes(&long), reference(&long));
        assert_eq!(hash(&long), mix(&reference(&long)));
    }

    #[test]
    fn spacing_does_not_split_a_shape() {
        assert_eq!(hash(b"a  1\tb"), hash(b"a 22 b"));
        assert_eq!(s(""), "");
        assert_eq!(bytes(b"\xff\xfe 1"), b"\xff\xfe #".to_vec());
    }
}
