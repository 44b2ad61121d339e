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
//! The shape is computed in one pass without allocating (`hash`); `text`
//! spells it for the reader (the gap inventory, `2955 × "Compiling
//! crate# v#.#.#"`).

/// A token this long, made of hex digits with at least one digit, is an id.
const HEX_MIN: usize = 6;

/// Bytes that continue a path-like or word token.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'/' | b'\\' | b'~' | b'+' | b'@')
}

/// Calls `emit` with the shape's bytes, in order.
fn walk(line: &[u8], mut emit: impl FnMut(&[u8])) {
    let mut i = 0;
    while i < line.len() {
        let b = line[i];
        if b == b' ' || b == b'\t' {
            while i < line.len() && (line[i] == b' ' || line[i] == b'\t') {
                i += 1;
            }
            emit(b" ");
            continue;
        }
        if !is_token_byte(b) {
            emit(&line[i..i + 1]);
            i += 1;
            continue;
        }
        let start = i;
        while i < line.len() && is_token_byte(line[i]) {
            i += 1;
        }
        token(&line[start..i], &mut emit);
    }
}

/// One token: a path stays literal; otherwise its id-like words and digit
/// runs fold.
fn token(t: &[u8], emit: &mut impl FnMut(&[u8])) {
    // A path names letters somewhere (`src/lib2.rs`); `3/3000` and
    // `2026/12/03` are numbers.
    if t.iter().any(|&b| b == b'/' || b == b'\\') && t.iter().any(u8::is_ascii_alphabetic) {
        emit(t);
        return;
    }
    let mut i = 0;
    while i < t.len() {
        // Words inside a token are split at `.`, `-`, `_`, `+`, `@`, `~`.
        let start = i;
        while i < t.len() && t[i].is_ascii_alphanumeric() {
            i += 1;
        }
        word(&t[start..i], emit);
        if i < t.len() {
            emit(&t[i..i + 1]);
            i += 1;
        }
    }
}

fn word(w: &[u8], emit: &mut impl FnMut(&[u8])) {
    let id = w.len() >= HEX_MIN && w.iter().all(u8::is_ascii_hexdigit) && w.iter().any(u8::is_ascii_digit);
    // `0x1fed0000`, `0XFF`: a hex number however short (register dumps).
    let hex = w.len() > 2 && matches!(w[..2], [b'0', b'x' | b'X']) && w[2..].iter().all(u8::is_ascii_hexdigit);
    if id || hex {
        emit(b"#");
        return;
    }
    let mut i = 0;
    while i < w.len() {
        let start = i;
        if w[i].is_ascii_digit() {
            while i < w.len() && w[i].is_ascii_digit() {
                i += 1;
            }
            emit(b"#");
        } else {
            while i < w.len() && !w[i].is_ascii_digit() {
                i += 1;
            }
            emit(&w[start..i]);
        }
    }
}

/// The shape's hash (FNV-1a over its bytes): equal for lines of one shape.
pub fn hash(line: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    walk(line, |part| {
        for &b in part {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    });
    h
}

/// The shape's bytes (not made safe to print: see `text::sanitize`).
pub fn bytes(line: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len());
    walk(line, |part| out.extend_from_slice(part));
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

    #[test]
    fn spacing_does_not_split_a_shape() {
        assert_eq!(hash(b"a  1\tb"), hash(b"a 22 b"));
        assert_eq!(s(""), "");
        assert_eq!(bytes(b"\xff\xfe 1"), b"\xff\xfe #".to_vec());
    }
}
