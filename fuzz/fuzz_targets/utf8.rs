//! The streaming character counter, fed in arbitrary splits, counts what
//! `String::from_utf8_lossy` decodes, and the newlines in the same pass
//! (marking where they are when asked); so does the one-shot `count_chars`.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use outbox::text::utf8::{count_bytes, count_chars, count_lead_bytes, count_marking, ByteCounts, CharCounter};
use outbox_fuzz::lossy_chars;

#[derive(Arbitrary, Debug)]
struct Case {
    /// Block sizes (0 feeds an empty block); the rest is one block.
    sizes: Vec<u8>,
    data: Vec<u8>,
}

fuzz_target!(|c: Case| {
    let want = lossy_chars(&c.data);
    assert_eq!(count_chars(&c.data), want, "count_chars");
    let leads = c.data.iter().filter(|&&b| (b as i8) >= -64).count() as u64;
    let nul = c.data.contains(&0);
    let lines = |t: &[u8]| t.iter().filter(|&&b| b == b'\n').count() as u64;
    let plain = |t: &[u8], lead| ByteCounts { lead, newlines: lines(t), nul: t.contains(&0), ascii: t.is_ascii() };
    assert_eq!(count_bytes(&c.data), plain(&c.data, leads), "count_bytes");
    assert_eq!(count_lead_bytes(&c.data), leads, "count_lead_bytes");
    let marks_of = |t: &[u8]| {
        let mut m = vec![0u64; t.len().div_ceil(64)];
        t.iter().enumerate().filter(|&(_, &b)| b == b'\n').for_each(|(i, _)| m[i / 64] |= 1 << (i % 64));
        m
    };
    let mut marks = vec![0u64; c.data.len().div_ceil(64)];
    assert_eq!(count_marking(&c.data, &mut marks), plain(&c.data, leads), "count_marking");
    assert_eq!(marks, marks_of(&c.data), "count_marking's marks");
    // Every alignment of the SWAR words.
    for k in 1..c.data.len().min(40) {
        let t = &c.data[k..];
        let leads = t.iter().filter(|&&b| (b as i8) >= -64).count() as u64;
        assert_eq!(count_bytes(t), plain(t, leads), "at offset {k}");
    }

    let mut cc = CharCounter::new();
    let mut completed = 0u64;
    let mut newlines = 0u64;
    let mut pos = 0;
    for &s in &c.sizes {
        let end = (pos + s as usize).min(c.data.len());
        let piece = &c.data[pos..end];
        let mut marks = vec![0u64; piece.len().div_ceil(64)];
        let (chars, lines) = cc.feed_marking(piece, &mut marks);
        assert_eq!(marks, marks_of(piece), "feed_marking's marks at {pos}");
        completed += chars;
        newlines += lines;
        pos = end;
        // Never more than the lossy count of what was fed, plus nothing
        // carried beyond one incomplete sequence.
        assert_eq!(cc.saw_nul(), c.data[..pos].contains(&0), "saw_nul after {pos} bytes");
        let so_far = lossy_chars(&c.data[..pos]);
        assert!(cc.chars() <= so_far, "counted {} > {so_far} after {pos} bytes", cc.chars());
        assert!(cc.chars() + 1 >= so_far, "counted {} < {so_far} - 1 after {pos} bytes", cc.chars());
    }
    let (chars, lines_left) = cc.feed_lines(&c.data[pos..]);
    completed += chars;
    assert_eq!(completed, cc.chars(), "feed() return values add up to chars()");
    assert_eq!(newlines + lines_left, lines(&c.data), "feed_lines() newline counts add up");
    assert_eq!(cc.saw_nul(), nul, "saw_nul");
    let total = cc.finish();
    assert_eq!(total, want, "streaming count vs lossy count");
    assert_eq!(cc.chars(), want);
    assert_eq!(cc.finish(), want, "finish is idempotent");
});
