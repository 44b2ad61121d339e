//! Character counting in the contract's unit: Unicode scalar values of the
//! lossy UTF-8 decoding, where each maximal invalid subpart counts as one
//! U+FFFD (the WHATWG / `String::from_utf8_lossy` rule).
//!
//! The counter is streaming: a block may end inside a multi-byte sequence,
//! so up to three bytes of an incomplete-but-valid prefix are carried into
//! the next block. The common case (a block that is valid UTF-8) never
//! decodes: it validates with SIMD and counts the bytes that start a
//! character.

/// Count of characters in `bytes` that are valid UTF-8 (or any bytes: the
/// result is then the count of non-continuation bytes).
#[inline]
pub fn count_lead_bytes(bytes: &[u8]) -> u64 {
    count_bytes(bytes).lead
}

/// What one pass over a byte string counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ByteCounts {
    /// Bytes that are not UTF-8 continuation bytes (characters, for valid
    /// UTF-8).
    pub lead: u64,
    /// `\n` bytes: the scanner's line count comes from the same pass.
    pub newlines: u64,
    /// Whether a NUL byte was seen ("is this binary?").
    pub nul: bool,
    /// Whether every byte is ASCII (then valid UTF-8 without a check).
    pub ascii: bool,
}

/// Lead bytes, newlines and NUL in one pass: the scanner used to walk each
/// block once for newlines and once for characters.
#[inline]
pub fn count_bytes(bytes: &[u8]) -> ByteCounts {
    count_marking(bytes, &mut [])
}

/// As [`count_bytes`], and where the newlines are: each `\n`'s bit (bit
/// `i % 64` of word `i / 64`, as in `newlines::NewlineMap`) is set in
/// `marks`, which is empty (nothing is marked) or zeroed with a word for
/// every 64 bytes. Marking in the counting pass costs a store a block
/// where a pass of its own would read the bytes again.
#[inline]
pub fn count_marking(bytes: &[u8], marks: &mut [u64]) -> ByteCounts {
    #[cfg(target_arch = "x86_64")]
    if bytes.len() >= 64 && avx2() {
        // SAFETY: AVX2 was detected at run time.
        return unsafe { count_avx2(bytes, marks) };
    }
    count_swar(bytes, marks)
}

/// Whether AVX2 may be used: detected, and not turned off with
/// `OUTBOX_SIMD=none` (which tests the word-at-a-time path on any machine).
#[cfg(target_arch = "x86_64")]
fn avx2() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        std::is_x86_feature_detected!("avx2") && std::env::var_os("OUTBOX_SIMD").is_none_or(|v| v != "none")
    })
}

/// ORs `bits`, the marks of the bytes from `at` on, into `marks` (nothing
/// when `marks` is empty). The bits stay within one word: `at` is a
/// multiple of their count.
#[inline]
fn mark(marks: &mut [u64], at: usize, bits: u64) {
    if let Some(word) = marks.get_mut(at / 64) {
        *word |= bits << (at % 64);
    }
}

/// `count_marking`, 64 bytes a round of two 32-byte instructions. Matches
/// are summed in byte lanes (a compare yields -1, subtracted) and folded
/// into 64-bit totals every 127 rounds, before a lane can overflow: no
/// per-word popcount chain, so the loop runs at load speed.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn count_avx2(bytes: &[u8], marks: &mut [u64]) -> ByteCounts {
    use std::arch::x86_64::*;
    // A continuation byte is one below -64 as a signed byte.
    let limit = _mm256_set1_epi8(-64);
    let newline = _mm256_set1_epi8(b'\n' as i8);
    let zero = _mm256_setzero_si256();
    let mut nul = zero;
    let mut high = zero;
    let (mut cont, mut lines) = (0u64, 0u64);
    let mut blocks = bytes.chunks_exact(64);
    let total_blocks = blocks.len();
    let mut done = 0;
    while done < total_blocks {
        // A lane gains at most two a round: 254 fit in a byte.
        let round = (total_blocks - done).min(127);
        let (mut c, mut n) = (zero, zero);
        for (i, b) in blocks.by_ref().take(round).enumerate() {
            let lo = _mm256_loadu_si256(b.as_ptr() as *const __m256i);
            let hi = _mm256_loadu_si256(b[32..].as_ptr() as *const __m256i);
            let (nl_lo, nl_hi) = (_mm256_cmpeq_epi8(lo, newline), _mm256_cmpeq_epi8(hi, newline));
            c = _mm256_sub_epi8(c, _mm256_add_epi8(_mm256_cmpgt_epi8(limit, lo), _mm256_cmpgt_epi8(limit, hi)));
            n = _mm256_sub_epi8(n, _mm256_add_epi8(nl_lo, nl_hi));
            nul = _mm256_or_si256(nul, _mm256_cmpeq_epi8(_mm256_min_epu8(lo, hi), zero));
            high = _mm256_or_si256(high, _mm256_or_si256(lo, hi));
            let (m_lo, m_hi) = (_mm256_movemask_epi8(nl_lo) as u32, _mm256_movemask_epi8(nl_hi) as u32);
            mark(marks, (done + i) * 64, m_lo as u64 | (m_hi as u64) << 32);
        }
        done += round;
        cont += sum_lanes(_mm256_sad_epu8(c, zero));
        lines += sum_lanes(_mm256_sad_epu8(n, zero));
    }
    let rest = count_swar(blocks.remainder(), marks.get_mut(total_blocks..).unwrap_or_default());
    let blocks_len = (total_blocks * 64) as u64;
    ByteCounts {
        lead: blocks_len - cont + rest.lead,
        newlines: lines + rest.newlines,
        nul: rest.nul || _mm256_movemask_epi8(nul) != 0,
        ascii: rest.ascii && _mm256_movemask_epi8(high) == 0,
    }
}

/// The four 64-bit lanes of a `_mm256_sad_epu8` result, added.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sum_lanes(v: std::arch::x86_64::__m256i) -> u64 {
    use std::arch::x86_64::*;
    let lo = _mm256_castsi256_si128(v);
    let hi = _mm256_extracti128_si256::<1>(v);
    let s = _mm_add_epi64(lo, hi);
    (_mm_cvtsi128_si64(s) + _mm_extract_epi64::<1>(s)) as u64
}

fn count_swar(bytes: &[u8], marks: &mut [u64]) -> ByteCounts {
    // SWAR: a continuation byte is 0b10xx_xxxx, i.e. bit 7 set and bit 6
    // clear; shifting left by one lines bit 6 up under bit 7 of each byte.
    // A zero byte is found with the classic (x - 0x01..) & !x & 0x80.. test
    // (exact when only "is there one" is asked); newlines are XORed to zero
    // and found with the exact form (((x & 0x7f..) + 0x7f..) | x) & 0x80..
    // clear.
    const HI: u64 = 0x8080_8080_8080_8080;
    const LO: u64 = 0x0101_0101_0101_0101;
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const NL: u64 = 0x0a0a_0a0a_0a0a_0a0a;
    let mut cont: u64 = 0;
    let mut lines: u64 = 0;
    let mut zero: u64 = 0;
    let mut high: u64 = 0;
    let mut words = bytes.chunks_exact(8);
    for (i, w) in words.by_ref().enumerate() {
        let x = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        high |= x & HI;
        cont += (x & !(x << 1) & HI).count_ones() as u64;
        zero |= x.wrapping_sub(LO) & !x & HI;
        let y = x ^ NL;
        let nl = !(((y & LOW7) + LOW7) | y) & HI;
        lines += nl.count_ones() as u64;
        mark(marks, i * 8, gather_high_bits(nl));
    }
    let rest = words.remainder();
    let rest_at = bytes.len() - rest.len();
    cont += rest.iter().filter(|&&b| (b as i8) < -64).count() as u64;
    for (k, _) in rest.iter().enumerate().filter(|&(_, &b)| b == b'\n') {
        lines += 1;
        mark(marks, rest_at + k, 1);
    }
    ByteCounts {
        lead: bytes.len() as u64 - cont,
        newlines: lines,
        nul: zero != 0 || rest.contains(&0),
        ascii: high == 0 && rest.is_ascii(),
    }
}

/// The high bits of `x`'s bytes as eight bits, byte 0's lowest (SSE2's
/// movemask, in a word): each byte's bit is shifted by the multiplier to a
/// distinct place in the top byte, and no two partial products overlap.
fn gather_high_bits(x: u64) -> u64 {
    ((x >> 7 & 0x0101_0101_0101_0101).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

/// Lossy character count of a complete byte string (no carry).
pub fn count_chars(bytes: &[u8]) -> u64 {
    if simdutf8::basic::from_utf8(bytes).is_ok() {
        return count_lead_bytes(bytes);
    }
    let mut n = 0u64;
    for chunk in bytes.utf8_chunks() {
        n += count_lead_bytes(chunk.valid().as_bytes());
        if !chunk.invalid().is_empty() {
            n += 1;
        }
    }
    n
}

/// Streaming lossy character counter.
#[derive(Debug, Default, Clone)]
pub struct CharCounter {
    carry: [u8; 4],
    carry_len: usize,
    chars: u64,
    nul: bool,
}

impl CharCounter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a NUL byte has been seen (the input is binary).
    pub fn saw_nul(&self) -> bool {
        self.nul
    }

    /// Characters counted so far, not including a pending carry.
    pub fn chars(&self) -> u64 {
        self.chars
    }

    /// Feeds the next bytes of the stream; returns how many characters
    /// they completed.
    pub fn feed(&mut self, bytes: &[u8]) -> u64 {
        self.feed_lines(bytes).0
    }

    /// As [`CharCounter::feed`], and how many `\n` bytes `bytes` holds,
    /// counted in the same pass over valid UTF-8.
    pub fn feed_lines(&mut self, bytes: &[u8]) -> (u64, u64) {
        self.feed_marking(bytes, &mut [])
    }

    /// As [`CharCounter::feed_lines`], and marks where the newlines are
    /// (see [`count_marking`]).
    pub fn feed_marking(&mut self, bytes: &[u8], marks: &mut [u64]) -> (u64, u64) {
        let before = self.chars;
        if bytes.is_empty() {
            return (0, 0);
        }
        // Counted first, and all of `bytes`: an ASCII block (most logs)
        // needs no validation, and the bytes that complete a carried
        // sequence are continuation bytes, which add to no count (only
        // `ascii` is then false, and the rest is validated).
        let counts = count_marking(bytes, marks);
        let mut rest = bytes;
        if self.carry_len > 0 {
            rest = &bytes[self.resolve_carry(bytes)..];
            if self.carry_len > 0 {
                // Still incomplete: the whole input went into the carry.
                return (self.chars - before, counts.newlines);
            }
        }
        if counts.ascii {
            self.add(counts);
            return (self.chars - before, counts.newlines);
        }
        match simdutf8::compat::from_utf8(rest) {
            Ok(_) => self.add(counts),
            Err(e) if e.error_len().is_none() => {
                // The block's counts less its incomplete end (at most three
                // bytes, no newline, no NUL): a block of CJK text ends inside
                // a character two times in three, and counting it again
                // cost a pass.
                let end = &rest[e.valid_up_to()..];
                self.add(ByteCounts { lead: counts.lead - count_swar(end, &mut []).lead, ..counts });
                self.set_carry(end);
            }
            Err(_) => {
                self.nul |= counts.nul;
                self.feed_invalid(rest)
            }
        }
        (self.chars - before, counts.newlines)
    }

    /// The counts of valid UTF-8.
    fn add(&mut self, c: ByteCounts) {
        self.chars += c.lead;
        self.nul |= c.nul;
    }

    /// Ends the stream: a pending incomplete sequence is one U+FFFD.
    pub fn finish(&mut self) -> u64 {
        if self.carry_len > 0 {
            self.carry_len = 0;
            self.chars += 1;
        }
        self.chars
    }

    fn feed_invalid(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.utf8_chunks().peekable();
        while let Some(chunk) = chunks.next() {
            self.chars += count_lead_bytes(chunk.valid().as_bytes());
            let bad = chunk.invalid();
            if bad.is_empty() {
                continue;
            }
            let is_last = chunks.peek().is_none();
            if is_last && is_incomplete_prefix(bad) {
                self.set_carry(bad);
            } else {
                self.chars += 1;
            }
        }
    }

    fn set_carry(&mut self, rest: &[u8]) {
        debug_assert!(rest.len() <= 3);
        self.carry[..rest.len()].copy_from_slice(rest);
        self.carry_len = rest.len();
    }

    /// Extends the carried prefix with bytes from the new block until it is
    /// complete or broken; returns how many bytes of `bytes` it consumed.
    fn resolve_carry(&mut self, bytes: &[u8]) -> usize {
        for (i, &b) in bytes.iter().enumerate() {
            self.carry[self.carry_len] = b;
            let candidate = &self.carry[..self.carry_len + 1];
            match std::str::from_utf8(candidate) {
                Ok(_) => {
                    self.chars += 1;
                    self.carry_len = 0;
                    return i + 1;
                }
                Err(e) if e.error_len().is_none() => self.carry_len += 1,
                Err(_) => {
                    // The carried bytes form one maximal invalid subpart;
                    // the byte that broke it starts afresh.
                    self.chars += 1;
                    self.carry_len = 0;
                    return i;
                }
            }
        }
        bytes.len()
    }
}

/// True when `bytes` is a prefix of some valid UTF-8 sequence, i.e. more
/// input could complete it.
fn is_incomplete_prefix(bytes: &[u8]) -> bool {
    matches!(std::str::from_utf8(bytes), Err(e) if e.error_len().is_none() && e.valid_up_to() == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(bytes: &[u8]) -> u64 {
        String::from_utf8_lossy(bytes).chars().count() as u64
    }

    #[test]
    fn counts_match_lossy_decoding_for_every_split() {
        let samples: &[&[u8]] = &[
            b"",
            b"plain ascii\n",
            "日本語のテキスト\n".as_bytes(),
            b"\xe2\x82",
            b"a\xe2\x82b",
            b"\xf0\x9f\x98\x80\xf0\x9f",
            b"\xe0\x80\x80",
            b"\xed\xa0\x80x",
            b"\xff\xfe\xfd",
            b"\xf4\x90\x80\x80",
            b"x\xc3",
            b"\xc3\x28\xe2\x28\xa1",
        ];
        for s in samples {
            for split in 0..=s.len() {
                for split2 in split..=s.len() {
                    let mut c = CharCounter::new();
                    c.feed(&s[..split]);
                    c.feed(&s[split..split2]);
                    c.feed(&s[split2..]);
                    assert_eq!(c.finish(), reference(s), "{s:?} split at {split},{split2}");
                }
            }
            assert_eq!(count_chars(s), reference(s));
        }
    }

    #[test]
    fn nul_is_seen_in_words_and_in_the_remainder() {
        for at in [0, 5, 31, 32, 40, 99] {
            let mut v = vec![b'a'; 100];
            v[at] = 0;
            let mut c = CharCounter::new();
            c.feed(&v);
            assert!(c.saw_nul(), "NUL at {at}");
        }
        let mut c = CharCounter::new();
        c.feed(&[b'a'; 100]);
        c.feed("é\u{1}".as_bytes());
        assert!(!c.saw_nul());
    }

    #[test]
    fn simd_and_word_counts_agree() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        // Past 127 blocks, where the SIMD lanes are folded into totals.
        for len in [0usize, 7, 8, 31, 32, 63, 64, 65, 96, 127, 300, 1000, 127 * 64, 127 * 64 + 1, 20_000] {
            for round in 0..30 {
                let mut bytes: Vec<u8> = (0..len)
                    .map(|_| {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        // Mostly text, some continuation bytes, rarely NUL.
                        [b'a', 0x80, 0xbf, 0xc3, 0xe3, b'\n', 0x7f, 0xff, 0x8a, (rng >> 40) as u8][(rng % 10) as usize]
                    })
                    .collect();
                // Every other round ASCII, but for one byte in one round of
                // three (at its end, past the SIMD words, or anywhere).
                if round % 2 == 0 {
                    bytes.iter_mut().for_each(|b| *b &= 0x7f);
                    if round % 3 == 0 && len > 0 {
                        bytes[(rng as usize) % len] = 0xc3;
                    }
                }
                let plain = ByteCounts {
                    lead: bytes.iter().filter(|&&b| (b as i8) >= -64).count() as u64,
                    newlines: bytes.iter().filter(|&&b| b == b'\n').count() as u64,
                    nul: bytes.contains(&0),
                    ascii: bytes.is_ascii(),
                };
                assert_eq!(count_bytes(&bytes), plain, "{bytes:?}");
                assert_eq!(count_swar(&bytes, &mut []), plain, "{bytes:?}");
                let want = newline_marks(&bytes);
                let mut marks = vec![0; len.div_ceil(64)];
                assert_eq!(count_marking(&bytes, &mut marks), plain, "{bytes:?}");
                assert_eq!(marks, want, "{bytes:?}");
                marks.fill(0);
                assert_eq!(count_swar(&bytes, &mut marks), plain, "{bytes:?}");
                assert_eq!(marks, want, "{bytes:?}");
            }
        }
        let mut nul_late = vec![b'x'; 200];
        nul_late[150] = 0;
        assert_eq!(count_bytes(&nul_late), ByteCounts { lead: 200, newlines: 0, nul: true, ascii: true });
        // Every byte a newline: each lane reaches 254 before it is folded.
        let all = vec![b'\n'; 127 * 64 * 3 + 17];
        assert_eq!(count_bytes(&all).newlines, all.len() as u64);
    }

    #[test]
    fn newlines_are_counted_with_the_characters_on_every_path() {
        let samples: &[&[u8]] = &[
            b"one\ntwo\n",
            "日本\n語\n".as_bytes(),
            b"bad \xff\n\nbyte\n",
            b"cut \xe2\x82\nx\n",
            b"\xe2\n\xe2\x82\xac\n",
        ];
        for s in samples {
            let want = s.iter().filter(|&&b| b == b'\n').count() as u64;
            for split in 0..=s.len() {
                let mut c = CharCounter::new();
                let (c1, n1) = c.feed_lines(&s[..split]);
                let (c2, n2) = c.feed_lines(&s[split..]);
                assert_eq!(n1 + n2, want, "{s:?} split at {split}");
                let total = c.finish();
                assert_eq!(total, reference(s), "{s:?} split at {split}");
                // Only a sequence left open at the end is counted by finish.
                assert!(total - (c1 + c2) <= 1, "{s:?} split at {split}");
            }
        }
    }

    #[test]
    fn byte_at_a_time() {
        let s = b"\xf0\x9f\x98\x80 \xe2\x82\xac \xf0\x9f\x98 \xc0\xaf end\xe2";
        let mut c = CharCounter::new();
        for b in s.iter() {
            c.feed(std::slice::from_ref(b));
        }
        assert_eq!(c.finish(), reference(s));
    }

    /// The marks of `bytes`' newlines, byte by byte.
    fn newline_marks(bytes: &[u8]) -> Vec<u64> {
        let mut marks = vec![0u64; bytes.len().div_ceil(64)];
        for (i, _) in bytes.iter().enumerate().filter(|&(_, &b)| b == b'\n') {
            marks[i / 64] |= 1 << (i % 64);
        }
        marks
    }

    #[test]
    fn gathered_bits_are_a_movemask() {
        for m in 0..=255u64 {
            let spread = (0..8).filter(|k| m >> k & 1 == 1).fold(0u64, |x, k| x | 0x80 << (8 * k));
            assert_eq!(gather_high_bits(spread), m);
            // The bytes' other bits do not leak in.
            assert_eq!(gather_high_bits(spread | 0x7f7f_7f7f_7f7f_7f7f), m);
        }
    }

    #[test]
    fn a_carried_sequence_leaves_the_marks_whole() {
        // The first block ends inside `€` (e2 82 ac): the next one starts
        // with the byte that completes it, and its marks start at its
        // first byte all the same.
        let first = b"x\xe2\x82";
        for second in [&b"\xac\nline\n"[..], b"\n\xac\n", b"\xacp\xff\n", b"\xac"] {
            let mut second = second.to_vec();
            second.extend(b"abc\n".repeat(40));
            let mut c = CharCounter::new();
            c.feed(first);
            let mut marks = vec![0; second.len().div_ceil(64)];
            let (_, lines) = c.feed_marking(&second, &mut marks);
            assert_eq!(marks, newline_marks(&second), "{second:?}");
            assert_eq!(lines, second.iter().filter(|&&b| b == b'\n').count() as u64);
            let mut whole = first.to_vec();
            whole.extend_from_slice(&second);
            assert_eq!(c.finish(), reference(&whole), "{second:?}");
        }
    }
}
