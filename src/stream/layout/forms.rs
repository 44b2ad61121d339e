//! Small byte tests that several layouts share: what a path looks like,
//! whitespace-separated fields, a directory's part of a path.

/// Whether `p` reads as a path as listings print them: it starts with
/// `./`, `../`, `/` or `~/` (then spaces are allowed: `./My Docs/a.txt`),
/// or it is one token holding a `/` or a `.` (`src/lib.rs`, `README.md`,
/// `.gitignore`). Never a flag (`-x`), a URL, a control character, or a
/// token ending with `:` (a heading).
pub fn path_ish(p: &[u8]) -> bool {
    if p.is_empty() || p.len() > 4096 || p[0] == b'-' || p[0] == b' ' || p.last() == Some(&b':') {
        return false;
    }
    if p.iter().any(|&b| b < 0x20 || b == 0x7f) {
        return false;
    }
    if p == b"." || p == b".." {
        return true;
    }
    let anchored = p.starts_with(b"./") || p.starts_with(b"../") || p.starts_with(b"/") || p.starts_with(b"~/");
    if anchored {
        return !p.ends_with(b" ") && memchr::memmem::find(p, b"://").is_none();
    }
    if memchr::memchr(b' ', p).is_some() || memchr::memmem::find(p, b"://").is_some() {
        return false;
    }
    let has_slash = memchr::memchr(b'/', p).is_some();
    let has_dot = p[..p.len() - 1].contains(&b'.');
    has_slash || has_dot
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

/// Whether the line is empty or only blanks.
pub fn blank(line: &[u8]) -> bool {
    line.iter().all(|&b| b == b' ' || b == b'\t')
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
        for p in ["", "-la", "hello world", "done", "http://x.org/a", "./a:", "x\ty", "12", "error: x", "src/a.rs "] {
            assert!(!path_ish(p.as_bytes()), "{p}");
        }
        assert_eq!(parent(b"a/b/c.rs"), b"a/b/");
        assert_eq!(parent(b"c.rs"), b"");
        let f: Vec<_> = fields(b" 12  ab\tc ").collect();
        assert_eq!(f, [(1, 3), (5, 7), (8, 9)]);
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
