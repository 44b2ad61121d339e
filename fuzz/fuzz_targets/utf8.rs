//! The streaming character counter, fed in arbitrary splits, counts what
//! `String::from_utf8_lossy` decodes; so does the one-shot `count_chars`.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use outbox::text::utf8::{count_chars, count_lead_bytes, count_lead_bytes_and_nul, CharCounter};
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
    assert_eq!(count_lead_bytes_and_nul(&c.data), (leads, nul), "count_lead_bytes_and_nul");
    assert_eq!(count_lead_bytes(&c.data), leads, "count_lead_bytes");
    // Every alignment of the SWAR words.
    for k in 1..c.data.len().min(40) {
        let t = &c.data[k..];
        let leads = t.iter().filter(|&&b| (b as i8) >= -64).count() as u64;
        assert_eq!(count_lead_bytes_and_nul(t), (leads, t.contains(&0)), "at offset {k}");
    }

    let mut cc = CharCounter::new();
    let mut completed = 0u64;
    let mut pos = 0;
    for &s in &c.sizes {
        let end = (pos + s as usize).min(c.data.len());
        completed += cc.feed(&c.data[pos..end]);
        pos = end;
        // Never more than the lossy count of what was fed, plus nothing
        // carried beyond one incomplete sequence.
        assert_eq!(cc.saw_nul(), c.data[..pos].contains(&0), "saw_nul after {pos} bytes");
        let so_far = lossy_chars(&c.data[..pos]);
        assert!(cc.chars() <= so_far, "counted {} > {so_far} after {pos} bytes", cc.chars());
        assert!(cc.chars() + 1 >= so_far, "counted {} < {so_far} - 1 after {pos} bytes", cc.chars());
    }
    completed += cc.feed(&c.data[pos..]);
    assert_eq!(completed, cc.chars(), "feed() return values add up to chars()");
    assert_eq!(cc.saw_nul(), nul, "saw_nul");
    let total = cc.finish();
    assert_eq!(total, want, "streaming count vs lossy count");
    assert_eq!(cc.chars(), want);
    assert_eq!(cc.finish(), want, "finish is idempotent");
});
