//! Small byte tests that several layouts share: what a path looks like,
//! whitespace-separated fields, a directory's part of a path.

/// Whether the line holds a tab, a colon or a space, found in one SIMD
/// pass (`memchr3`): most lines of a path listing hold none, and then
/// need no closer look.
#[derive(Debug, Clone, Copy)]
pub struct Facts {
    /// The first tab, colon or space.
    first: Option<usize>,
}

impl Facts {
    pub fn of(line: &[u8]) -> Facts {
        Facts { first: memchr::memchr3(b'\t', b':', b' ', line) }
    }

    /// Plain: no tab, colon or space at all.
    pub fn plain(self) -> bool {
        self.first.is_none()
    }
}

/// Whether `line` holds `: ` (a label or a message, not a file name).
pub fn colon_space(line: &[u8], f: Facts) -> bool {
    let Some(at) = f.first else { return false };
    memchr::memchr_iter(b':', &line[at..]).any(|k| line.get(at + k + 1) == Some(&b' '))
}

/// Whether the line holds a tab.
pub fn has_tab(line: &[u8], f: Facts) -> bool {
    f.first.is_some_and(|at| memchr::memchr(b'\t', &line[at..]).is_some())
}

/// Whether `p` reads as a path as listings print them: it starts with
/// `./`, `../`, `/` or `~/` (then spaces are allowed: `./My Docs/a.txt`),
/// or it is one token holding a `/` or a `.` (`src/lib.rs`, `README.md`,
/// `.gitignore`). Never a flag (`-x`), a URL, a tab, a control character,
/// or a token ending with `:` (a heading).
pub fn path_ish(p: &[u8]) -> bool {
    path_ish_with(p, Facts::of(p))
}

/// [`path_ish`] with the facts of `p` already found.
pub fn path_ish_with(p: &[u8], f: Facts) -> bool {
    if p.is_empty() || p.len() > 4096 || p[0] <= b' ' || p[0] == b'-' || p.last() == Some(&b':') {
        return false;
    }
    if p == b"." || p == b".." {
        return true;
    }
    // Terminal colours and other control bytes: a log's, not a name's.
    if control(p) {
        return false;
    }
    let anchored = p.starts_with(b"./") || p.starts_with(b"../") || p.starts_with(b"/") || p.starts_with(b"~/");
    if !f.plain() {
        // Only such lines are looked at closely.
        // A URL, or grep's `path:N:text` and `path:N` (not a name, and
        // left to the matches layout so that the paths one stops reading).
        let url_or_match = memchr::memchr_iter(b':', p).any(|k| {
            let r = &p[k + 1..];
            let d = digits_len(r);
            r.starts_with(b"//") || (d > 0 && (d == r.len() || r[d] == b':'))
        });
        if url_or_match {
            return false;
        }
        let space = memchr::memchr(b' ', p).is_some();
        if anchored {
            return !p.ends_with(b" ");
        }
        if space {
            return false;
        }
    } else if anchored {
        return true;
    }
    // A slash, or a dot that is not the last byte (`a.rs`, not `etc.`).
    memchr::memchr2(b'/', b'.', &p[..p.len() - 1]).is_some()
}

/// Whether `p` holds a control byte (tab included). Written without an
/// early exit so that the compiler makes it a vector loop: it runs on every
/// line of a path listing.
fn control(p: &[u8]) -> bool {
    p.iter().fold(false, |a, &b| a | (b < 0x20) | (b == 0x7f))
}

/// Where ` -> ` (a symbolic link's target) starts.
pub fn arrow(line: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b'>', line)
        .find(|&k| k >= 2 && line[k - 2..k] == *b" -" && line.get(k + 1) == Some(&b' '))
        .map(|k| k - 2)
}

/// The directory part of a path, with its final `/` (empty for a bare
/// name).
pub fn parent(path: &[u8]) -> &[u8] {
    match memchr::memrchr(b'/', path) {
        Some(k) => &path[..=k],
        None => &[],
    }
}

/// Whitespace-separated fields (spaces and tabs), as spans.
pub fn fields(line: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < line.len() && (line[i] == b' ' || line[i] == b'\t') {
            i += 1;
        }
        if i >= line.len() {
            return None;
        }
        let s = i;
        while i < line.len() && line[i] != b' ' && line[i] != b'\t' {
            i += 1;
        }
        Some((s, i))
    })
}

/// Whether every byte is ASCII digits (and there is one).
pub fn all_digits(b: &[u8]) -> bool {
    !b.is_empty() && b.iter().all(u8::is_ascii_digit)
}

/// Leading ASCII digits: how many.
pub fn digits_len(b: &[u8]) -> usize {
    b.iter().position(|c| !c.is_ascii_digit()).unwrap_or(b.len())
}

/// Whether every byte is a lower-case hex digit, and there are `min` to
/// `max` of them.
pub fn hex(b: &[u8], min: usize, max: usize) -> bool {
    (min..=max).contains(&b.len()) && b.iter().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

/// `a == b` for slices of one length, compared eight bytes at a time in
/// line: a path is a few dozen bytes, and a call to `bcmp` for it was a
/// twentieth of the scan of a `find` or a `grep -rn` listing.
#[inline]
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len();
    if n < 8 {
        return a == b;
    }
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("eight bytes"));
    (0..n / 8).all(|i| word(a, i * 8) == word(b, i * 8)) && word(a, n - 8) == word(b, n - 8)
}

/// Whether the line is empty or only blanks.
pub fn blank(line: &[u8]) -> bool {
    line.iter().all(|&b| b == b' ' || b == b'\t')
}

/// The leading blanks (spaces and tabs): how many. The whole line when
/// it is [`blank`].
#[inline]
pub fn indent(line: &[u8]) -> usize {
    line.iter().position(|&b| b != b' ' && b != b'\t').unwrap_or(line.len())
}

/// Whether a line's text (what follows `path:` or `path:N:`) is a
/// compiler's diagnostic rather than a matched line: a column then `: `
/// (`12: error`, `5: E302`), or a space and a severity word (` error:`,
/// ` warning[…]`); grep puts the matched line right after the colon.
pub fn diagnostic(rest: &[u8]) -> bool {
    let d = digits_len(rest);
    if d > 0 && rest[d..].starts_with(b": ") {
        return true;
    }
    let Some(r) = rest.strip_prefix(b" ") else { return false };
    const WORDS: [&[u8]; 8] =
        [b"error", b"warning", b"note", b"fatal", b"info", b"hint", b"remark", b"\xe3\x82\xa8\xe3\x83\xa9\xe3\x83\xbc"];
    WORDS.iter().any(|w| {
        r.len() >= w.len()
            && r[..w.len()].eq_ignore_ascii_case(w)
            && r.get(w.len()).is_none_or(|c| matches!(c, b':' | b'[' | b' ' | b'('))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_as_listings_print_them() {
        for p in ["./src/lib.rs", "/usr/share/doc", "src/lib.rs", "README.md", ".gitignore", ".", "./My Docs/a b.txt"] {
            assert!(path_ish(p.as_bytes()), "{p}");
        }
        for p in ["", "-la", "hello world", "done", "http://x.org/a", "./a:", "x\ty", "12", "error: x", "src/a.rs "]
            .into_iter()
            .chain(["\x1b[1msrc/a.rs", "./a\x07b", "a.rs\x7f", "~/\x1b[0m"])
            .chain(["./src/a.rs:12:use x;", "a.1:97:警告", "src/a.rs:3"])
        {
            assert!(!path_ish(p.as_bytes()), "{p}");
        }
        assert_eq!(parent(b"a/b/c.rs"), b"a/b/");
        assert_eq!(parent(b"c.rs"), b"");
        let f: Vec<_> = fields(b" 12  ab\tc ").collect();
        assert_eq!(f, [(1, 3), (5, 7), (8, 9)]);
    }

    #[test]
    fn one_pass_facts_agree_with_plain_searches() {
        for l in ["a: b", "a:b", "x\ty", "./a b", "ok", "http://x", "lnk -> target", "a->b"] {
            let b = l.as_bytes();
            let f = Facts::of(b);
            assert_eq!(colon_space(b, f), l.contains(": "), "{l}");
            assert_eq!(has_tab(b, f), l.contains('\t'), "{l}");
            assert_eq!(arrow(b), l.find(" -> "), "{l}");
        }
    }

    #[test]
    fn same_bytes_finds_a_difference_wherever_it_is() {
        for len in 0..20 {
            let a: Vec<u8> = (0..len as u8).map(|i| b'a' + i).collect();
            assert!(same_bytes(&a, &a.clone()));
            for at in 0..len {
                let mut b = a.clone();
                b[at] ^= 0x80;
                assert!(!same_bytes(&a, &b), "at {at} of {len}");
            }
        }
    }

    #[test]
    fn compiler_diagnostics_are_told_from_matched_text() {
        assert!(diagnostic(b"5: error: x"));
        assert!(diagnostic(b" error: expected"));
        assert!(diagnostic(b" warning[E0308]: x"));
        assert!(diagnostic(" エラー: x".as_bytes()));
        assert!(!diagnostic(b"    let error = 5;"));
        assert!(!diagnostic(b"fn errors()"));
        assert!(!diagnostic(b"error_code = 5"));
        assert!(!diagnostic(b"error here"));
        assert!(!diagnostic(b"12:34"));
    }
}
