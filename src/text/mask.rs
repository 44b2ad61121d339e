//! A line's mask key: the line exactly, except that each maximal run of
//! ASCII digits is one marker. It keys the classification cache
//! (`family::cache`), so it is computed for every signal line: on a server
//! log, a third of all lines.
//!
//! The masked line is a byte stream: a run is the byte `0xff`, and the
//! line's own `0xfe`/`0xff` bytes are escaped as `0xfe` and one more byte,
//! so two masks never make one stream. The stream is built into a small
//! buffer on the stack, then hashed 16 bytes per multiply. Three ways build
//! it, chosen at run time, all giving the same bytes (a test holds it):
//!
//! - AVX-512 (VBMI2): 64 bytes per step, the digits found with one compare,
//!   run starts turned into `0xff` and the rest of each run squeezed out
//!   with one compress;
//! - BMI2: eight bytes per step with `pext`;
//! - portable: eight digit-free bytes per step, the others byte by byte.
//!
//! Building first and hashing after keeps the hash's multiplies off the
//! building's critical path: fed into the hash word by word, as before, the
//! stream cost a multiply's latency per eight bytes.

/// The key of a line's mask, with what the same pass learns about the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mask {
    pub key: u64,
    /// Bit `d`: the line holds the digit `d` as a whole run of one (the
    /// `0` of `errors: 0`), which a cached classification's rechecks ask.
    pub lone_digits: u16,
}

/// The key of a line's mask: equal for lines that differ only in their
/// digits (which digits, and how many in each run).
pub fn mask_key(line: &[u8]) -> u64 {
    mask(line).0.key
}

/// The mask of a line without an escape byte (`0x1b`), None for one with:
/// the classifier strips colour codes from such a line first, and looking
/// for them in the same pass saves a search of every line.
pub fn plain_mask(line: &[u8]) -> Option<Mask> {
    let (mask, escape) = mask(line);
    (!escape).then_some(mask)
}

/// How the stream is built on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    Words,
    #[cfg(target_arch = "x86_64")]
    Bmi2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

/// The widest path detected, narrowed by `OUTBOX_SIMD` (`avx2`: no
/// AVX-512; `none`: portable only), as for the other SIMD searches.
fn path() -> Path {
    static PATH: std::sync::OnceLock<Path> = std::sync::OnceLock::new();
    *PATH.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            let allowed = std::env::var("OUTBOX_SIMD").unwrap_or_default();
            let bmi2 = std::is_x86_feature_detected!("bmi2") && std::is_x86_feature_detected!("popcnt");
            let avx512 = std::is_x86_feature_detected!("avx512bw") && std::is_x86_feature_detected!("avx512vbmi2");
            if bmi2 && avx512 && allowed.is_empty() {
                return Path::Avx512;
            }
            if bmi2 && allowed != "none" {
                return Path::Bmi2;
            }
        }
        Path::Words
    })
}

/// The mask, and whether the line holds an escape byte.
fn mask(line: &[u8]) -> (Mask, bool) {
    mask_by(path(), line)
}

fn mask_by(path: Path, line: &[u8]) -> (Mask, bool) {
    match path {
        Path::Words => mask_words(line),
        // SAFETY: the path is taken only where its features were detected
        // (`path`, and the tests' `paths`).
        #[cfg(target_arch = "x86_64")]
        Path::Bmi2 => unsafe { mask_bmi2(line) },
        #[cfg(target_arch = "x86_64")]
        Path::Avx512 => unsafe { mask_avx512(line) },
    }
}

const LANES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x80 * LANES;

/// Whether some byte of `x` is zero.
fn zero_byte(x: u64) -> bool {
    x.wrapping_sub(LANES) & !x & HIGH != 0
}

/// Whether `w` holds the escape byte.
fn escape_in(w: u64) -> bool {
    zero_byte(w ^ (0x1b * LANES))
}

/// Whether `w` holds a byte `0xfe` or `0xff` (escaped in the stream, two
/// bytes for one: the byte path; never in UTF-8 text).
fn high_in(w: u64) -> bool {
    zero_byte(!w & (0xfe * LANES))
}

/// Eight ASCII bytes, none a digit.
fn plain_word(w: u64) -> bool {
    w & HIGH == 0 && digit_bytes(w) == 0
}

/// The high bit of each byte of `w` that is an ASCII digit. With the high
/// bits cleared the sums carry into no other byte: the high bit of `x +
/// 0x50` is set from b'0' up, that of `x + 0x46` above b'9'; bytes from
/// 0x80 up are never digits.
fn digit_bytes(w: u64) -> u64 {
    let low = w & !HIGH;
    low.wrapping_add(0x50 * LANES) & !low.wrapping_add(0x46 * LANES) & !w & HIGH
}

/// The masking pass's state between bytes, words and blocks.
struct Masking {
    out: Stream,
    /// The last byte was a digit: the run goes on.
    run: bool,
    /// The run going on is one digit so far: that digit.
    single: Option<u8>,
    lone: u16,
    escape: bool,
}

impl Masking {
    fn new() -> Masking {
        Masking { out: Stream::new(), run: false, single: None, lone: 0, escape: false }
    }

    /// The run before ends here, or goes on (`next_is_digit`).
    fn settle(&mut self, next_is_digit: bool) {
        if let Some(d) = self.single.take() {
            if !next_is_digit {
                self.lone |= 1 << (d - b'0');
            }
        }
    }

    fn byte(&mut self, b: u8) {
        self.escape |= b == 0x1b;
        if b.is_ascii_digit() {
            let starts = !self.run;
            self.settle(true);
            if starts {
                self.single = Some(b);
                self.out.push(0xff);
            }
            self.run = true;
            return;
        }
        self.settle(false);
        self.run = false;
        if b >= 0xfe {
            self.out.push(0xfe);
            self.out.push(b - 0xfd);
        } else {
            self.out.push(b);
        }
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.out.make_room();
        bytes.iter().for_each(|&b| self.byte(b));
    }

    /// Eight bytes without a digit.
    fn plain(&mut self, w: u64) {
        self.settle(false);
        self.out.word(w, 8);
        self.run = false;
    }

    /// A step over `chunk` (at most 64 bytes) whose digits are the bits of
    /// `d`: settles the run before it, notes the lone digits of runs that
    /// end inside it and the run going on at its last byte (settled by the
    /// next step, or by `finish`). Returns the run starts (each becomes the
    /// marker) and the bytes kept (all but a run's later digits).
    fn step(&mut self, chunk: &[u8], d: u64) -> (u64, u64) {
        self.settle(d & 1 != 0);
        let starts = d & !((d << 1) | u64::from(self.run));
        let last = chunk.len() as u32 - 1;
        let mut ones = starts & !(d >> 1) & ((1 << last) - 1);
        while ones != 0 {
            self.lone |= 1 << (chunk[ones.trailing_zeros() as usize] - b'0');
            ones &= ones - 1;
        }
        if starts >> last & 1 != 0 {
            self.single = Some(chunk[last as usize]);
        }
        self.run = d >> last & 1 != 0;
        (starts, (!d | starts) & (u64::MAX >> (63 - last)))
    }

    /// By reference: the buffer is not copied out to be hashed.
    fn finish(&mut self) -> (Mask, bool) {
        self.settle(false);
        (Mask { key: self.out.finish(), lone_digits: self.lone }, self.escape)
    }
}

/// [`mask`] a word at a time without BMI2.
fn mask_words(line: &[u8]) -> (Mask, bool) {
    let mut m = Masking::new();
    let mut words = line.chunks_exact(8);
    for c in &mut words {
        m.out.make_room();
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        if plain_word(w) {
            m.escape |= escape_in(w);
            m.plain(w);
        } else {
            c.iter().for_each(|&b| m.byte(b));
        }
    }
    m.bytes(words.remainder());
    m.finish()
}

/// [`mask`] with `pext`: per eight bytes, the digits' bit mask, the run
/// starts turned into `0xff`, the other digits squeezed out, and the
/// packed bytes appended at once. Server log lines are mostly words
/// holding digits (times, pids, addresses), which the portable path takes
/// byte by byte.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2,popcnt")]
fn mask_bmi2(line: &[u8]) -> (Mask, bool) {
    use std::arch::x86_64::{_pdep_u64, _pext_u64};
    let mut m = Masking::new();
    let mut words = line.chunks_exact(8);
    for c in &mut words {
        m.out.make_room();
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        if high_in(w) {
            c.iter().for_each(|&b| m.byte(b));
            continue;
        }
        m.escape |= escape_in(w);
        let d = _pext_u64(digit_bytes(w), HIGH);
        if d == 0 {
            m.plain(w);
            continue;
        }
        let (starts, keep) = m.step(c, d);
        let marks = _pdep_u64(starts, LANES) * 0xff;
        let packed = _pext_u64(w | marks, _pdep_u64(keep, LANES) * 0xff);
        m.out.word(packed, keep.count_ones() as usize);
    }
    m.bytes(words.remainder());
    m.finish()
}

/// [`mask`] 64 bytes per step: masked compares find the digits, escape
/// bytes and bytes to escape; `vpcompressb` packs the kept bytes, run
/// starts already turned into `0xff`. The last step loads only the line's
/// bytes (a masked load reads nothing past them).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi2,bmi2,popcnt")]
fn mask_avx512(line: &[u8]) -> (Mask, bool) {
    use std::arch::x86_64::*;
    let mut m = Masking::new();
    let zero = _mm512_set1_epi8(b'0' as i8);
    let ten = _mm512_set1_epi8(10);
    let escape = _mm512_set1_epi8(0x1b);
    let high = _mm512_set1_epi8(0xfe_u8 as i8);
    let marker = _mm512_set1_epi8(-1);
    for chunk in line.chunks(64) {
        m.out.make_room();
        let valid = u64::MAX >> (64 - chunk.len());
        // SAFETY: the load is masked to the chunk's bytes, all in `line`.
        let v = unsafe { _mm512_maskz_loadu_epi8(valid, chunk.as_ptr().cast()) };
        if _mm512_mask_cmpge_epu8_mask(valid, v, high) != 0 {
            chunk.iter().for_each(|&b| m.byte(b));
            continue;
        }
        m.escape |= _mm512_mask_cmpeq_epi8_mask(valid, v, escape) != 0;
        let d = _mm512_mask_cmplt_epu8_mask(valid, _mm512_sub_epi8(v, zero), ten);
        let (starts, keep) = m.step(chunk, d);
        let packed = _mm512_maskz_compress_epi8(keep, _mm512_mask_mov_epi8(v, starts, marker));
        m.out.block(packed, keep.count_ones() as usize);
    }
    m.finish()
}

/// Stream bytes the buffer holds before they are hashed; lines up to this
/// long (most) are hashed in one go at the end.
const ROOM: usize = 192;
/// Past `ROOM`: one step's output, at most 64 bytes (a block stored
/// whole) or two bytes for each of 64 (the byte path's escapes).
const SLACK: usize = 128;

/// The masked stream: a buffer on the stack, hashed [`Fold`] by fold
/// when it fills and at the end.
struct Stream {
    /// Past `ROOM + SLACK`: the 32 bytes `finish` reads past the end.
    buf: [u8; ROOM + SLACK + 32],
    len: usize,
    hash: Fold,
}

impl Stream {
    fn new() -> Stream {
        Stream { buf: [0; ROOM + SLACK + 32], len: 0, hash: Fold::new() }
    }

    /// Hashes what fills whole folds when the buffer holds `ROOM` bytes or
    /// more, so the next step's output fits.
    #[inline(always)]
    fn make_room(&mut self) {
        if self.len >= ROOM {
            self.drain();
        }
    }

    /// Lines longer than `ROOM` only.
    #[cold]
    #[inline(never)]
    fn drain(&mut self) {
        let whole = self.len - self.len % 32;
        self.hash.folds(&self.buf[..whole]);
        self.buf.copy_within(whole..self.len, 0);
        self.len -= whole;
    }

    fn push(&mut self, b: u8) {
        self.buf[self.len] = b;
        self.len += 1;
    }

    /// The low `n` bytes of `w` (written whole, the rest overwritten next).
    fn word(&mut self, w: u64, n: usize) {
        self.buf[self.len..self.len + 8].copy_from_slice(&w.to_le_bytes());
        self.len += n;
    }

    /// The first `n` bytes of `v` (written whole, the rest overwritten next).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn block(&mut self, v: std::arch::x86_64::__m512i, n: usize) {
        let to = &mut self.buf[self.len..self.len + 64];
        // SAFETY: `to` is 64 bytes of the buffer, what the store writes.
        unsafe { std::arch::x86_64::_mm512_storeu_si512(to.as_mut_ptr().cast(), v) };
        self.len += n;
    }

    /// The buffer's 32 bytes past the last whole fold are read whatever
    /// `len` is (the bytes past it masked off): no copy of the rest.
    fn finish(&mut self) -> u64 {
        let whole = self.len - self.len % 32;
        self.hash.folds(&self.buf[..whole]);
        let rest = self.buf[whole..whole + 32].try_into().expect("32 bytes");
        self.hash.finish(rest, self.len - whole)
    }
}

/// A multiply-fold hash: 16 bytes per 64×64→128-bit multiply, the halves
/// of the product xored, in two lanes (32 bytes per step) so that one
/// multiply's latency overlaps the other's. The length goes into the last
/// step, so streams that differ only by trailing zero bytes differ.
struct Fold {
    lanes: [u64; 2],
    len: u64,
}

const SEED: u64 = 0xcc4f_09e0_6617_f987;
const MIX_A: u64 = 0xfaa8_54e8_6a3c_7a75;
const MIX_B: u64 = 0xab08_f459_b9e2_f01f;
const MIX_LEN: u64 = 0x2419_7075_d408_48ab;

fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    p as u64 ^ (p >> 64) as u64
}

fn halves(c: &[u8]) -> (u64, u64) {
    let a = u64::from_le_bytes(c[..8].try_into().expect("8 bytes"));
    let b = u64::from_le_bytes(c[8..16].try_into().expect("8 bytes"));
    (a, b)
}

impl Fold {
    fn new() -> Fold {
        Fold { lanes: [SEED, SEED ^ MIX_LEN], len: 0 }
    }

    /// `bytes.len()` is a multiple of 32.
    fn folds(&mut self, bytes: &[u8]) {
        self.len += bytes.len() as u64;
        let [mut x, mut y] = self.lanes;
        for c in bytes.chunks_exact(32) {
            let (a, b) = halves(&c[..16]);
            let (p, q) = halves(&c[16..]);
            x = fold(a ^ MIX_A, b ^ x);
            y = fold(p ^ MIX_B, q ^ y);
        }
        self.lanes = [x, y];
    }

    /// The hash, with the stream's last `n` bytes (fewer than 32), the
    /// first `n` of `rest`.
    fn finish(&mut self, rest: &[u8; 32], n: usize) -> u64 {
        let word = |i: usize| {
            let w = u64::from_le_bytes(rest[8 * i..8 * i + 8].try_into().expect("8 bytes"));
            let keep = n.saturating_sub(8 * i).min(8);
            if keep == 8 {
                w
            } else {
                w & ((1u64 << (8 * keep)) - 1)
            }
        };
        let len = self.len + n as u64;
        let [x, y] = self.lanes;
        let x = fold(word(0) ^ MIX_A, word(1) ^ x);
        let y = fold(word(2) ^ MIX_B, word(3) ^ y);
        fold(x ^ len.rotate_left(32) ^ MIX_B, y ^ len ^ MIX_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mask_folds_digit_runs_only() {
        assert_eq!(mask_key(b"a1b22c"), mask_key(b"a333b4c"));
        assert_ne!(mask_key(b"a1b"), mask_key(b"a#b"));
        assert_ne!(mask_key(b"a1b"), mask_key(b"a1 b"));
        assert_ne!(mask_key(b"a1b"), mask_key(b"ab"));
        assert_ne!(mask_key(b"ab\0"), mask_key(b"ab"));
        assert_ne!(mask_key(b"1"), mask_key(b""));
        // A line's own 0xff is not a run; a run across a word's edge is one.
        assert_ne!(mask_key(b"a\xffb"), mask_key(b"a1b"));
        assert_ne!(mask_key(b"a\xfe\x01b"), mask_key(b"a\xffb"));
        assert_eq!(mask_key(b"abcdefg12345678xyzabcdef"), mask_key(b"abcdefg1xyzabcdef"));
        assert_ne!(mask_key(b"abcdefgh1xyzabcd"), mask_key(b"abcdefgh1 xyzabcd"));
        // Across a block's edge and the buffer's refills.
        let long = |digits: usize| {
            let mut l = b"x".repeat(63);
            l.extend(std::iter::repeat_n(b'7', digits));
            l.extend_from_slice(&b"y".repeat(500));
            l
        };
        assert_eq!(mask_key(&long(1)), mask_key(&long(90)));
        assert_ne!(mask_key(&long(1)), mask_key(&long(0)));
    }

    /// The masked form as a list: `None` for a run of digits.
    fn masked(l: &[u8]) -> Vec<Option<u8>> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < l.len() {
            if l[i].is_ascii_digit() {
                while i < l.len() && l[i].is_ascii_digit() {
                    i += 1;
                }
                out.push(None);
            } else {
                out.push(Some(l[i]));
                i += 1;
            }
        }
        out
    }

    /// Two lines have one mask key exactly when their masked forms are
    /// equal, whatever the word and block edges.
    #[test]
    fn the_mask_key_follows_the_masked_form() {
        let alphabet = b"ab1 2\xff\xfe\x80";
        let mut x = 0x1234_5677_u32;
        let lines: Vec<Vec<u8>> = (0..6000)
            .map(|n| {
                let plain = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-abcdefghijklmnop";
                let mut l: Vec<u8> = plain[..n % 69].to_vec();
                l.extend((0..(n / 17) % 9).map(|_| alphabet[xorshift(&mut x) as usize % alphabet.len()]));
                l.extend_from_slice(&plain[..(n / 3) % 11]);
                l
            })
            .collect();
        for (i, a) in lines.iter().enumerate().step_by(7) {
            for b in &lines[i..(i + 60).min(lines.len())] {
                assert_eq!(masked(a) == masked(b), mask_key(a) == mask_key(b), "{a:?} / {b:?}");
            }
        }
    }

    /// Every path this CPU can run.
    fn paths() -> Vec<Path> {
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut v = vec![Path::Words];
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("bmi2") && std::is_x86_feature_detected!("popcnt") {
                v.push(Path::Bmi2);
                if std::is_x86_feature_detected!("avx512bw") && std::is_x86_feature_detected!("avx512vbmi2") {
                    v.push(Path::Avx512);
                }
            }
        }
        v
    }

    /// Every path hashes the same stream and finds the same lone digits and
    /// escapes: lines of every byte class and length (past the buffer's
    /// room), runs across word and block edges.
    #[test]
    fn the_paths_agree() {
        let alphabet = b"ab1 2\xff\xfe\x80\xfd9\x00/:\x1b0";
        let lone = |l: &[u8]| {
            let mut set = 0u16;
            for (i, &b) in l.iter().enumerate() {
                let digit = |k: Option<usize>| k.and_then(|k| l.get(k)).is_some_and(u8::is_ascii_digit);
                if b.is_ascii_digit() && !digit(i.checked_sub(1)) && !digit(Some(i + 1)) {
                    set |= 1 << (b - b'0');
                }
            }
            set
        };
        let paths = paths();
        let mut x = 0x0bad_cafe_u32;
        for n in 0..20000usize {
            let len = if n % 10 == 0 { n % 700 } else { n % 150 };
            // Some lines drawn from fewer classes: long plain or digit runs.
            let classes = if n % 3 == 0 { 4 } else { alphabet.len() };
            let line: Vec<u8> = (0..len).map(|_| alphabet[xorshift(&mut x) as usize % classes]).collect();
            let (m, escape) = mask_words(&line);
            assert_eq!(escape, line.contains(&0x1b));
            assert_eq!(m.lone_digits, lone(&line), "{line:?}");
            for &p in &paths {
                assert_eq!(mask_by(p, &line), (m, escape), "{p:?} {line:?}");
            }
            assert_eq!(plain_mask(&line).is_none(), escape);
        }
        let digits: Vec<u8> = (0..200).map(|i| if i % 3 == 0 { b'x' } else { b'7' }).collect();
        for from in 0..70 {
            for &p in &paths {
                assert_eq!(mask_by(p, &digits[from..]), mask_words(&digits[from..]), "{p:?}");
            }
        }
    }

    fn xorshift(x: &mut u32) -> u32 {
        *x ^= *x << 13;
        *x ^= *x >> 17;
        *x ^= *x << 5;
        *x
    }
}
