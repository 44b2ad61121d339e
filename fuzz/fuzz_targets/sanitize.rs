//! `display()` on any bytes: never panics; its text holds no raw control
//! char (tab excepted), no C1, no bidi control; its marks agree with its
//! text; `prefix(n)` and `suffix(n)` never exceed n display chars. And
//! passthrough's `safe_copy()` of the same bytes: no unsafe char raw (a
//! `\r` only before `\n`), no line that imitates a marker, the same lines
//! as the input, and plain text unchanged.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use outbox::render::envelope::safe_copy;
use outbox::text::sanitize::{display, display_len, display_str, is_unsafe_char};
use outbox::text::secrets::MARKER_OPEN;
use outbox_fuzz::{imitates_marker, is_forbidden_char, lossy_chars};

#[derive(Arbitrary, Debug)]
struct Case {
    cuts: Vec<u16>,
    raw: Vec<u8>,
}

fuzz_target!(|c: Case| {
    let d = display(&c.raw);
    if let Some(bad) = d.text.chars().find(|&ch| is_forbidden_char(ch) || ch == '\n') {
        panic!("raw {bad:?} in display text {:?}", d.text);
    }
    let n = d.chars();
    assert_eq!(n, d.text.chars().count(), "chars() is the text's char count");
    assert_eq!(display_len(&c.raw), n);
    assert_eq!(d.input_chars() as u64, lossy_chars(&c.raw), "input_chars() is the lossy count");
    assert!(d.ansi_stripped as usize <= d.input_chars());

    // Sanitising is idempotent on text that has no backslash escapes to
    // re-escape: the display of the display is itself. Not when something
    // was masked: a marker shown again is taken for an imitation and
    // escaped (issue 29; the `mask` target checks masking).
    let masked = d.text.contains(MARKER_OPEN);
    if !masked {
        let again = display_str(&d.text);
        assert_eq!(again.text, d.text, "display of display text");
    }

    let mut cuts: Vec<usize> = c.cuts.iter().map(|&k| k as usize % (n + 2)).collect();
    cuts.extend([0, 1, n.saturating_sub(1), n, n + 1]);
    for k in cuts {
        let (p, pin, pdisp) = d.prefix(k);
        assert!(pdisp <= k, "prefix({k}) shows {pdisp}");
        assert_eq!(p.chars().count(), pdisp, "prefix({k}) count");
        assert!(d.text.starts_with(p), "prefix({k}) is a prefix");
        assert!(pin <= d.input_chars());
        let (s, sin, sdisp) = d.suffix(k);
        assert!(sdisp <= k, "suffix({k}) shows {sdisp}");
        assert_eq!(s.chars().count(), sdisp, "suffix({k}) count");
        assert!(d.text.ends_with(s), "suffix({k}) is a suffix");
        assert!(sin <= d.input_chars());
        if k >= n {
            assert_eq!((p, pin), (d.text.as_str(), d.input_chars()), "prefix({k}) of a text of {n} is all");
            assert_eq!((s, sin), (d.text.as_str(), d.input_chars()), "suffix({k}) of a text of {n} is all");
        }
    }

    let mut e = d.clone();
    e.escape_first();
    assert_eq!(e.chars(), e.text.chars().count(), "escape_first keeps the marks in step");
    if let Some(bad) = e.text.chars().find(|&ch| is_forbidden_char(ch)) {
        panic!("raw {bad:?} after escape_first");
    }

    let safe = safe_copy(&c.raw);
    let bytes = safe.as_bytes();
    for (i, ch) in safe.char_indices() {
        let crlf = ch == '\r' && bytes.get(i + 1) == Some(&b'\n');
        assert!(!is_forbidden_char(ch) || crlf, "raw {ch:?} in safe copy {safe:?}");
    }
    for line in safe.split('\n') {
        assert!(!imitates_marker(line.strip_suffix('\r').unwrap_or(line)), "marker imitation {line:?}");
    }
    assert_eq!(safe.matches('\n').count(), c.raw.iter().filter(|&&b| b == b'\n').count(), "lines kept");
    if let Ok(text) = std::str::from_utf8(&c.raw) {
        // A `\r` belongs to the terminator only before a `\n`: the last
        // piece (no `\n` after it) keeps its `\r`, which is a lone CR.
        let pieces: Vec<&str> = text.split('\n').collect();
        let last = pieces.len() - 1;
        let plain = pieces.iter().enumerate().all(|(i, l)| {
            let l = if i < last { l.strip_suffix('\r').unwrap_or(l) } else { l };
            !l.chars().any(|ch| ch != '\t' && is_unsafe_char(ch)) && !imitates_marker(l)
        });
        if plain && !safe.contains(MARKER_OPEN) {
            assert_eq!(safe, text, "plain text passes unchanged");
        }
    }
});
