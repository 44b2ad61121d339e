//! Shortening free text in the middle, with the one cut marker every part
//! of outbox prints: `…[N chars cut]…`, where N counts the characters cut.
//!
//! Invariant: the result of [`shorten_text`] is never longer than asked, in
//! characters, even when the room is smaller than the marker itself (the
//! text is then cut at its end with a bare `…`, or emptied for 0).

/// The marker that stands for `n` characters cut from the middle of a line
/// or a string. One spelling for the text envelope, the JSON folds and the
/// header fields.
pub fn cut_marker(n: u64) -> String {
    format!("…[{n} chars cut]…")
}

/// Characters of `s` (Unicode scalar values).
fn chars(s: &str) -> usize {
    s.chars().count()
}

/// `s` cut to at most `max` characters: the start (the larger half) and the
/// end are kept around [`cut_marker`]. Room too small for the marker keeps
/// the first `max - 1` characters and a `…`.
pub fn shorten_text(s: &str, max: usize) -> String {
    let n = chars(s);
    if n <= max {
        return s.to_string();
    }
    // The marker for cutting all of `n` is the longest one possible.
    let marker_max = chars(&cut_marker(n as u64));
    if max <= marker_max {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        if max > 0 {
            t.push('…');
        }
        return t;
    }
    let keep = max - marker_max;
    let (head, tail) = split_keep(s, keep.div_ceil(2), keep / 2);
    format!("{head}{}{tail}", cut_marker((n - keep) as u64))
}

/// The first `head` and the last `tail` characters of `s` (never
/// overlapping).
pub fn split_keep(s: &str, head: usize, tail: usize) -> (&str, &str) {
    let head_end = s.char_indices().nth(head).map_or(s.len(), |(i, _)| i);
    let tail_start = if tail == 0 { s.len() } else { s.char_indices().nth_back(tail - 1).map_or(0, |(i, _)| i) };
    (&s[..head_end], &s[tail_start.max(head_end)..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_longer_than_asked_and_marks_the_cut() {
        let s = "x".repeat(1000);
        for max in [0, 1, 5, 17, 18, 19, 20, 50, 999, 1000] {
            let t = shorten_text(&s, max);
            assert!(chars(&t) <= max, "{max}: {t}");
        }
        let t = shorten_text(&s, 50);
        assert!(t.contains("…[") && t.contains(" chars cut]…"), "{t}");
        let cut: usize = t.split("…[").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
        assert_eq!(cut + t.matches('x').count(), 1000, "the marker counts what was cut");
        assert_eq!(shorten_text("short", 40), "short");
        assert_eq!(shorten_text("abcdef", 3), "ab…");
        assert_eq!(shorten_text("abcdef", 0), "");
        let j = "日本語".repeat(100);
        assert!(chars(&shorten_text(&j, 40)) <= 40);
    }
}
