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
    #[cfg(target_arch = "x86_64")]
    if bytes.len() >= 64 && std::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 was detected at run time.
        return unsafe { count_avx2(bytes) };
    }
    count_swar(bytes)
}

/// `count_bytes`, 32 bytes an instruction. Matches are summed in byte
/// lanes (a compare yields -1, subtracted) and folded into 64-bit totals
/// every 255 rounds, before a lane can overflow: no per-word popcount
/// chain, so the loop runs at load speed.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn count_avx2(bytes: &[u8]) -> ByteCounts {
    use std::arch::x86_64::*;
    // A continuation byte is one below -64 as a signed byte.
    let limit = _mm256_set1_epi8(-64);
    let newline = _mm256_set1_epi8(b'\n' as i8);
    let zero = _mm256_setzero_si256();
    let mut nul = zero;
    let mut high = zero;
    let (mut cont, mut lines) = (0u64, 0u64);
    let mut words = bytes.chunks_exact(32);
    let total_words = words.len();
    let mut left = total_words;
    while left > 0 {
        let round = left.min(255);
        left -= round;
        let (mut c, mut n) = (zero, zero);
        for w in words.by_ref().take(round) {
            let v = _mm256_loadu_si256(w.as_ptr() as *const __m256i);
            c = _mm256_sub_epi8(c, _mm256_cmpgt_epi8(limit, v));
            n = _mm256_sub_epi8(n, _mm256_cmpeq_epi8(v, newline));
            nul = _mm256_or_si256(nul, _mm256_cmpeq_epi8(v, zero));
            high = _mm256_or_si256(high, v);
        }
        cont += sum_lanes(_mm256_sad_epu8(c, zero));
        lines += sum_lanes(_mm256_sad_epu8(n, zero));
    }
    let rest = count_swar(words.remainder());
    let words_len = (total_words * 32) as u64;
    ByteCounts {
        lead: words_len - cont + rest.lead,
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

fn count_swar(bytes: &[u8]) -> ByteCounts {
    // SWAR: a continuation byte is 0b10xx_xxxx, i.e. bit 7 set and bit 6
    // clear; shifting left by one lines bit 6 up under bit 7 of each byte.
    // A zero byte is found with the classic (x - 0x01..) & !x & 0x80.. test
    // (exact when only "is there one" is asked); newlines are XORed to zero
    // and counted with the exact form (((x & 0x7f..) + 0x7f..) | x) & 0x80..
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
    for w in words.by_ref() {
        let x = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        high |= x & HI;
        cont += (x & !(x << 1) & HI).count_ones() as u64;
        zero |= x.wrapping_sub(LO) & !x & HI;
        let y = x ^ NL;
        lines += (!(((y & LOW7) + LOW7) | y) & HI).count_ones() as u64;
    }
    let rest = words.remainder();
    cont += rest.iter().filter(|&&b| (b as i8) < -64).count() as u64;
    lines += rest.iter().filter(|&&b| b == b'\n').count() as u64;
    ByteCounts {
        lead: bytes.len() as u64 - cont,
        newlines: lines,
        nul: zero != 0 || rest.contains(&0),
        ascii: high == 0 && rest.is_ascii(),
    }
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
    pub fn feed_lines(&mut self, mut bytes: &[u8]) -> (u64, u64) {
        let before = self.chars;
        let mut newlines = 0;
        if self.carry_len > 0 {
            let used = self.resolve_carry(bytes);
            // A newline never continues a sequence, so `used` holds none;
            // counted anyway, it is at most three bytes.
            newlines += bytes[..used].iter().filter(|&&b| b == b'\n').count() as u64;
            bytes = &bytes[used..];
            if self.carry_len > 0 {
                // Still incomplete: the whole input went into the carry.
                return (self.chars - before, newlines);
            }
        }
        if bytes.is_empty() {
            return (self.chars - before, newlines);
        }
        // Counted first: an ASCII block (most logs) needs no validation.
        let counts = count_bytes(bytes);
        if counts.ascii {
            self.add(counts);
            return (self.chars - before, newlines + counts.newlines);
        }
        match simdutf8::compat::from_utf8(bytes) {
            Ok(_) => {
                self.add(counts);
                newlines += counts.newlines;
            }
            Err(e) if e.error_len().is_none() => {
                // The block's counts less its incomplete end (at most three
                // bytes, no newline, no NUL): a block of CJK text ends inside
                // a character two times in three, and counting it again
                // cost a pass.
                let rest = &bytes[e.valid_up_to()..];
                self.add(ByteCounts { lead: counts.lead - count_swar(rest).lead, ..counts });
                newlines += counts.newlines;
                self.set_carry(rest);
            }
            Err(_) => {
                self.nul |= memchr::memchr(0, bytes).is_some();
                newlines += memchr::memchr_iter(b'\n', bytes).count() as u64;
                self.feed_invalid(bytes)
            }
        }
        (self.chars - before, newlines)
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
        // Past 255 words, where the SIMD lanes are folded into totals.
        for len in [0usize, 7, 8, 31, 32, 63, 64, 65, 96, 127, 300, 1000, 255 * 32, 255 * 32 + 1, 20_000] {
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
                assert_eq!(count_swar(&bytes), plain, "{bytes:?}");
            }
        }
        let mut nul_late = vec![b'x'; 200];
        nul_late[150] = 0;
        assert_eq!(count_bytes(&nul_late), ByteCounts { lead: 200, newlines: 0, nul: true, ascii: true });
        // Every byte a newline: each lane reaches 255 before it is folded.
        let all = vec![b'\n'; 255 * 32 * 3 + 17];
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
}
