//! The scanner's first pass over whole regions: where one of a few dozen
//! short fingerprints (see `literals`) occurs, ASCII case ignored.
//!
//! A bucket filter in the manner of the Teddy algorithm: the fingerprints
//! are spread over 16 buckets, and for each of the four byte positions of
//! a fingerprint two 16-entry tables (low and high nibble of the byte) say
//! which buckets that byte can belong to. With AVX2, 32 positions are
//! tested at once: each nibble is looked up with one shuffle (the tables
//! fold case: `b | 0x20`), and the four positions' bucket masks ANDed; a
//! position whose mask is not empty is then checked exactly against the
//! fingerprints of its buckets. The same pass finds the lines whose start
//! makes them candidates (a newline, then a byte some line-start key
//! begins with, then the exact table). Without AVX2 the same exact checks
//! run byte by byte behind a first-byte table.
//!
//! Folding every byte with `| 0x20` (not only letters) is what makes the
//! SIMD step one instruction; it can only add candidates (`[` and `{` look
//! alike), never lose one, and the combined regex decides every candidate
//! line.

/// Bytes of a fingerprint at most.
pub const WIDTH: usize = 4;
/// Placements of a fingerprint in its strings checked on a hit at most;
/// past them a hit counts as it is. The shipped families need 32 at most
/// for every fingerprint that has a log's false hits (`ding`, `such`,
/// `ssio`); a check stops at the first string there, shortest first.
const MAX_WHOLE: usize = 32;
const BUCKETS: usize = 16;

use super::literals::LineStarts;

#[inline]
fn fold(b: u8) -> u8 {
    b | 0x20
}

/// The first pass, ready to search: fingerprints anywhere, and line
/// starts (see `literals::LineStarts`).
#[derive(Clone)]
// The SIMD tables are read by the x86-64 paths only.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub struct Search {
    /// Each bucket's folded fingerprints (1 to `WIDTH` bytes) as
    /// little-endian words with the mask of their bytes, one table in
    /// bucket order (`words[bucket_at[b]..bucket_at[b + 1]]`): a check of
    /// four bytes is one load, an OR and a compare per fingerprint.
    words: Vec<(u32, u32)>,
    /// Per entry of `words`: the strings its fingerprint stands for, each
    /// with where the fingerprint lies in it (folded), when they are few;
    /// a hit counts only where one of them is there (see `confirming`).
    whole: Vec<Option<Box<[Placed]>>>,
    bucket_at: [u16; BUCKETS + 1],
    /// `[group * WIDTH + position]`: buckets 0–7 are group 0's bits, 8–15
    /// group 1's.
    lo: [[u8; 16]; 2 * WIDTH],
    hi: [[u8; 16]; 2 * WIDTH],
    /// Buckets whose fingerprints can start with a folded byte (the scalar
    /// path).
    first: Box<[u16; 256]>,
    starts: LineStarts,
    /// The bytes a candidate line can start with, as a SIMD set test: row
    /// `lo` of `start_rows` has bit `hi` set for the byte `hi << 4 | lo`
    /// (ASCII); any non-ASCII first byte is let through when
    /// `start_non_ascii`. Most lines are ruled out here, before the table.
    start_rows: [u8; 16],
    start_non_ascii: bool,
    /// The same sets exact, for AVX-512 VBMI's 128-entry byte lookups:
    /// `[group * WIDTH + position]` then the line starts, indexed by
    /// `folded_index` of a byte.
    exact: Box<[[u8; 128]; 2 * WIDTH + 1]>,
    simd: Simd,
}

/// A string behind a fingerprint (folded), and where in it the
/// fingerprint lies.
type Placed = (usize, Box<[u8]>);

/// The widest search this CPU runs, chosen once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
enum Simd {
    None,
    Avx2,
    Avx512,
}

/// A 7-bit index that tells folded bytes apart: `b | 0x20` always has
/// bit 5 set, so bits 6 and 7 move down one.
#[inline]
fn folded_index(b: u8) -> usize {
    ((b & 0x1f) | ((b >> 1) & 0x60)) as usize
}

impl std::fmt::Debug for Search {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Search").field("count", &self.words.len()).field("simd", &self.simd).finish()
    }
}

impl Search {
    /// The search for `fps` (each 1 to `WIDTH` bytes; may be none) and
    /// lines whose start `starts` marks.
    pub fn new(fps: &[Vec<u8>], starts: LineStarts) -> Search {
        let mut fps: Vec<Vec<u8>> =
            fps.iter().filter(|f| !f.is_empty()).map(|f| f.iter().take(WIDTH).map(|&b| fold(b)).collect()).collect();
        fps.sort();
        fps.dedup();
        let assignment = assign(&fps);
        let mut buckets: [Vec<u16>; BUCKETS] = Default::default();
        let mut lo = [[0u8; 16]; 2 * WIDTH];
        let mut hi = [[0u8; 16]; 2 * WIDTH];
        let mut first = Box::new([0u16; 256]);
        let mut exact = Box::new([[0u8; 128]; 2 * WIDTH + 1]);
        for (i, (fp, &b)) in fps.iter().zip(&assignment).enumerate() {
            buckets[b].push(i as u16);
            let (group, bit) = (b / 8, 1u8 << (b % 8));
            for j in 0..WIDTH {
                let t = group * WIDTH + j;
                match fp.get(j) {
                    Some(&c) => {
                        lo[t][(c & 15) as usize] |= bit;
                        hi[t][(c >> 4) as usize] |= bit;
                        exact[t][folded_index(c)] |= bit;
                    }
                    None => {
                        // Past a short fingerprint's end anything goes.
                        lo[t].iter_mut().for_each(|x| *x |= bit);
                        hi[t].iter_mut().for_each(|x| *x |= bit);
                        exact[t].iter_mut().for_each(|x| *x |= bit);
                    }
                }
            }
            first[fp[0] as usize] |= 1 << b;
        }
        let mut start_rows = [0u8; 16];
        let mut start_non_ascii = false;
        for c in (0..=255u8).filter(|&c| starts.may_start(c)) {
            exact[2 * WIDTH][folded_index(c)] = 1;
            if c < 0x80 {
                start_rows[(c & 15) as usize] |= 1 << (c >> 4);
            } else {
                start_non_ascii = true;
            }
        }
        // The SIMD loop looks up raw bytes: a folded byte's high nibble has
        // bit 1 set (`| 0x20`), so raw nibble `h` reads folded row `h | 2`.
        for t in hi.iter_mut() {
            *t = std::array::from_fn(|h| t[h | 2]);
        }
        let mut words = Vec::with_capacity(fps.len());
        let mut bucket_at = [0u16; BUCKETS + 1];
        for (b, ids) in buckets.iter().enumerate() {
            words.extend(ids.iter().map(|&i| fingerprint_word(&fps[i as usize])));
            bucket_at[b + 1] = words.len() as u16;
        }
        let whole = vec![None; words.len()];
        Search { words, whole, bucket_at, lo, hi, first, starts, start_rows, start_non_ascii, exact, simd: simd() }
    }

    /// The search with each fingerprint's hit checked against the strings
    /// it was chosen from (`literals`, each holding some fingerprint): a
    /// window such as `ding` of ` pending` is also in `reading`, and every
    /// such line was handed to the classifier (on a server log, a quarter
    /// of all lines, half of which held none of the strings). A hit counts
    /// where one of the strings holding the fingerprint is there, or may
    /// be (it would begin before the haystack or end past it). A
    /// fingerprint that is a whole string, or that more than `MAX_WHOLE`
    /// placements stand behind, counts as before.
    pub fn confirming(mut self, literals: &[Vec<u8>]) -> Search {
        let folded: Vec<Vec<u8>> = literals.iter().map(|l| l.iter().map(|&b| fold(b)).collect()).collect();
        for (k, &(word, mask)) in self.words.iter().enumerate() {
            let fp = &word.to_le_bytes()[..(mask.count_ones() / 8) as usize];
            let mut placed = Vec::new();
            let mut whole_string = false;
            for l in &folded {
                for o in (0..=l.len().saturating_sub(fp.len())).filter(|&o| l[o..].starts_with(fp)) {
                    whole_string |= l.len() == fp.len();
                    placed.push((o, l.clone().into_boxed_slice()));
                }
            }
            placed.sort_by_key(|(_, l)| l.len());
            self.whole[k] =
                (!whole_string && !placed.is_empty() && placed.len() <= MAX_WHOLE).then(|| placed.into_boxed_slice());
        }
        self
    }

    /// Whether a line starting with `line` is a candidate by its start.
    pub fn starts_candidate(&self, line: &[u8]) -> bool {
        self.starts.contains(line)
    }

    /// Whether a line starts at `p` (after a newline) and is a candidate.
    #[inline]
    fn line_start_at(&self, hay: &[u8], p: usize) -> bool {
        p > 0 && p < hay.len() && hay[p - 1] == b'\n' && self.starts.contains(&hay[p..])
    }

    pub fn len(&self) -> usize {
        self.words.len()
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The first position at or after `at` where a fingerprint starts or
    /// a candidate line starts (position 0 is not looked at: the caller
    /// knows what precedes `hay`).
    pub fn find(&self, hay: &[u8], at: usize) -> Option<usize> {
        if self.line_start_at(hay, at) {
            return Some(at);
        }
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut at = at;
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: the instructions were detected at run time.
            let bulk = match self.simd {
                Simd::Avx512 => unsafe { self.find_avx512(hay, at) },
                Simd::Avx2 => unsafe { self.find_avx2(hay, at) },
                Simd::None => Err(at),
            };
            match bulk {
                Ok(found) => return Some(found),
                Err(resume) => at = resume,
            }
        }
        self.find_scalar(hay, at)
    }

    fn find_scalar(&self, hay: &[u8], at: usize) -> Option<usize> {
        (at..hay.len()).find(|&p| {
            let buckets = self.first[fold(hay[p]) as usize];
            (buckets != 0 && self.confirm(hay, p, buckets)) || self.line_start_at(hay, p)
        })
    }

    /// Whether a fingerprint of one of `buckets` starts at `p`.
    #[inline]
    fn confirm(&self, hay: &[u8], p: usize, mut buckets: u16) -> bool {
        // The four bytes at `p`, folded; near the end of `hay`, the bytes
        // there are and a mask of them (a fingerprint must fit in it).
        let (w, there) = match hay.get(p..p + WIDTH) {
            Some(w) => (u32::from_le_bytes(w.try_into().expect("WIDTH bytes")), u32::MAX),
            None => {
                let mut w = [0u8; WIDTH];
                let n = hay.len().saturating_sub(p);
                w[..n].copy_from_slice(&hay[p..]);
                (u32::from_le_bytes(w), u32::MAX >> (8 * (WIDTH - n)))
            }
        };
        let w = w | 0x2020_2020;
        while buckets != 0 {
            let b = buckets.trailing_zeros() as usize;
            buckets &= buckets - 1;
            let at = self.bucket_at[b] as usize;
            let fps = &self.words[at..self.bucket_at[b + 1] as usize];
            if fps
                .iter()
                .enumerate()
                .any(|(i, &(f, mask))| mask & !there == 0 && w & mask == f && self.whole_at(hay, p, at + i))
            {
                return true;
            }
        }
        false
    }

    /// Whether one of the strings behind fingerprint `k` (found at `p`) is
    /// there, or may be.
    #[inline]
    fn whole_at(&self, hay: &[u8], p: usize, k: usize) -> bool {
        let Some(placed) = &self.whole[k] else { return true };
        placed.iter().any(|(o, l)| match p.checked_sub(*o).and_then(|s| hay.get(s..s + l.len())) {
            Some(there) => there.iter().zip(l.iter()).all(|(&a, &b)| fold(a) == b),
            None => true,
        })
    }

    /// The bulk of the search with AVX-512 VBMI, 64 positions at a time
    /// while 67 bytes are left: each byte's bucket bits come from one exact
    /// 128-entry lookup of its folded index (no nibble cross products, so
    /// fewer false candidates than the AVX2 path). `Err(p)`: go on from `p`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    unsafe fn find_avx512(&self, hay: &[u8], at: usize) -> Result<usize, usize> {
        use std::arch::x86_64::*;
        let half = |k: usize, h: usize| _mm512_loadu_si512(self.exact[k][64 * h..].as_ptr() as *const _);
        let tables: [(__m512i, __m512i); 2 * WIDTH + 1] = std::array::from_fn(|k| (half(k, 0), half(k, 1)));
        let low5 = _mm512_set1_epi8(0x1f);
        let newline = _mm512_set1_epi8(b'\n' as i8);
        let mut p = at;
        while p + 64 + WIDTH - 1 <= hay.len() {
            let base = hay.as_ptr().add(p);
            let mut g0 = _mm512_set1_epi8(-1);
            let mut g1 = _mm512_set1_epi8(-1);
            let mut newlines = 0u64;
            let mut may_start = 0u64;
            for j in 0..WIDTH {
                let v = _mm512_loadu_si512(base.add(j) as *const _);
                // folded_index: the low five bits from v, bits 5 and 6
                // from v >> 1 (bit 7 is ignored by the lookup).
                let idx = _mm512_ternarylogic_epi32::<0xCA>(low5, v, _mm512_srli_epi16(v, 1));
                g0 = _mm512_and_si512(g0, _mm512_permutex2var_epi8(tables[j].0, idx, tables[j].1));
                g1 = _mm512_and_si512(g1, _mm512_permutex2var_epi8(tables[WIDTH + j].0, idx, tables[WIDTH + j].1));
                if j == 0 {
                    newlines = _mm512_cmpeq_epi8_mask(v, newline);
                }
                if j == 1 {
                    let (a, b) = tables[2 * WIDTH];
                    let st = _mm512_permutex2var_epi8(a, idx, b);
                    may_start = _mm512_test_epi8_mask(st, st);
                }
            }
            let any = _mm512_or_si512(g0, g1);
            let fp_hits = _mm512_test_epi8_mask(any, any);
            let line_hits = newlines & may_start;
            let mut hits = fp_hits | line_hits;
            if hits != 0 {
                let mut m0 = [0u8; 64];
                let mut m1 = [0u8; 64];
                _mm512_storeu_si512(m0.as_mut_ptr() as *mut _, g0);
                _mm512_storeu_si512(m1.as_mut_ptr() as *mut _, g1);
                while hits != 0 {
                    let k = hits.trailing_zeros() as usize;
                    hits &= hits - 1;
                    let buckets = m0[k] as u16 | (m1[k] as u16) << 8;
                    if fp_hits >> k & 1 == 1 && self.confirm(hay, p + k, buckets) {
                        return Ok(p + k);
                    }
                    if line_hits >> k & 1 == 1 && self.starts.contains(&hay[p + k + 1..]) {
                        return Ok(p + k + 1);
                    }
                }
            }
            p += 64;
        }
        Err(p)
    }

    /// The bulk of the search, 32 positions at a time while 35 bytes are
    /// left; `Err(p)` hands the rest, from `p`, to the scalar path.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn find_avx2(&self, hay: &[u8], at: usize) -> Result<usize, usize> {
        use std::arch::x86_64::*;
        let table = |t: &[u8; 16]| _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr() as *const __m128i));
        let lo: [__m256i; 2 * WIDTH] = std::array::from_fn(|t| table(&self.lo[t]));
        let hi: [__m256i; 2 * WIDTH] = std::array::from_fn(|t| table(&self.hi[t]));
        let nibble = _mm256_set1_epi8(0x0f);
        let newline = _mm256_set1_epi8(b'\n' as i8);
        let zero = _mm256_setzero_si256();
        let start_rows = table(&self.start_rows);
        let bits: [u8; 16] = std::array::from_fn(|h| if h < 8 { 1 << h } else { 0 });
        let start_bits = table(&bits);
        let non_ascii = if self.start_non_ascii { -1 } else { 0 };
        let start_non_ascii = _mm256_set1_epi8(non_ascii);
        let mut p = at;
        while p + 32 + WIDTH - 1 <= hay.len() {
            let base = hay.as_ptr().add(p);
            let mut g0 = _mm256_set1_epi8(-1);
            let mut g1 = _mm256_set1_epi8(-1);
            let mut newlines = 0u32;
            let mut may_start = 0u32;
            for j in 0..WIDTH {
                // Raw bytes: the high-nibble tables were folded already.
                let v = _mm256_loadu_si256(base.add(j) as *const __m256i);
                let vl = _mm256_and_si256(v, nibble);
                let vh = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
                if j == 0 {
                    newlines = _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, newline)) as u32;
                }
                if j == 1 {
                    // Lane k holds the byte after position k: a line's
                    // first byte when position k is a newline.
                    let row = _mm256_shuffle_epi8(start_rows, vl);
                    let ascii = _mm256_and_si256(row, _mm256_shuffle_epi8(start_bits, vh));
                    let high = _mm256_and_si256(_mm256_cmpgt_epi8(zero, v), start_non_ascii);
                    let st = _mm256_or_si256(ascii, high);
                    may_start = !(_mm256_movemask_epi8(_mm256_cmpeq_epi8(st, zero)) as u32);
                }
                let m0 = _mm256_and_si256(_mm256_shuffle_epi8(lo[j], vl), _mm256_shuffle_epi8(hi[j], vh));
                let m1 =
                    _mm256_and_si256(_mm256_shuffle_epi8(lo[WIDTH + j], vl), _mm256_shuffle_epi8(hi[WIDTH + j], vh));
                g0 = _mm256_and_si256(g0, m0);
                g1 = _mm256_and_si256(g1, m1);
            }
            let any = _mm256_or_si256(g0, g1);
            let fp_hits = !(_mm256_movemask_epi8(_mm256_cmpeq_epi8(any, zero)) as u32);
            let line_hits = newlines & may_start;
            let mut hits = fp_hits | line_hits;
            if hits != 0 {
                let mut m0 = [0u8; 32];
                let mut m1 = [0u8; 32];
                _mm256_storeu_si256(m0.as_mut_ptr() as *mut __m256i, g0);
                _mm256_storeu_si256(m1.as_mut_ptr() as *mut __m256i, g1);
                while hits != 0 {
                    let k = hits.trailing_zeros() as usize;
                    hits &= hits - 1;
                    let buckets = m0[k] as u16 | (m1[k] as u16) << 8;
                    if fp_hits >> k & 1 == 1 && self.confirm(hay, p + k, buckets) {
                        return Ok(p + k);
                    }
                    // Position k is a newline: the line after it starts at
                    // k + 1, which no fingerprint at k can precede.
                    if line_hits >> k & 1 == 1 && self.starts.contains(&hay[p + k + 1..]) {
                        return Ok(p + k + 1);
                    }
                }
            }
            p += 32;
        }
        Err(p)
    }
}

fn simd() -> Simd {
    #[cfg(target_arch = "x86_64")]
    {
        // OUTBOX_SIMD=avx2 or =none tests the narrower paths on a machine
        // that has more.
        let allowed = std::env::var("OUTBOX_SIMD").unwrap_or_default();
        let avx512 = std::is_x86_feature_detected!("avx512bw") && std::is_x86_feature_detected!("avx512vbmi");
        if avx512 && allowed.is_empty() {
            return Simd::Avx512;
        }
        if std::is_x86_feature_detected!("avx2") && allowed != "none" {
            return Simd::Avx2;
        }
    }
    Simd::None
}

/// A folded fingerprint as a little-endian word, and the mask of its bytes
/// (a short one matches whatever follows it).
fn fingerprint_word(fp: &[u8]) -> (u32, u32) {
    let mut word = [0u8; WIDTH];
    let mut mask = [0u8; WIDTH];
    word[..fp.len()].copy_from_slice(fp);
    mask[..fp.len()].fill(0xff);
    (u32::from_le_bytes(word), u32::from_le_bytes(mask))
}

/// A bucket for each fingerprint: greedily the one whose tables grow least
/// (a table that accepts more nibbles lets more text positions through),
/// short fingerprints together (past their end a bucket accepts anything).
fn assign(fps: &[Vec<u8>]) -> Vec<usize> {
    #[derive(Clone, Default)]
    struct Bucket {
        lo: [u16; WIDTH],
        hi: [u16; WIDTH],
        width: usize,
        used: bool,
    }
    impl Bucket {
        /// Roughly the share of text positions the bucket lets through:
        /// per position, the weight of the bytes whose two nibbles its
        /// tables accept.
        fn accepts(&self) -> f64 {
            (0..WIDTH)
                .map(|j| {
                    if j >= self.width {
                        return 1.0;
                    }
                    let (lo, hi) = (self.lo[j], self.hi[j]);
                    let ok = |c: usize| lo >> (c & 15) & 1 == 1 && hi >> (c >> 4) & 1 == 1;
                    (0..256).filter(|&c| ok(c)).map(|c| super::literals::frequency(c as u8)).sum::<f64>()
                })
                .product()
        }
        fn with(&self, fp: &[u8]) -> Bucket {
            let mut b = self.clone();
            b.width = if b.used { b.width.min(fp.len()) } else { fp.len() };
            for (j, &c) in fp.iter().enumerate() {
                b.lo[j] |= 1 << (c & 15);
                b.hi[j] |= 1 << (c >> 4);
            }
            b.used = true;
            b
        }
    }
    let mut order: Vec<usize> = (0..fps.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(fps[i].len()));
    let mut buckets = vec![Bucket::default(); BUCKETS];
    let mut out = vec![0; fps.len()];
    for i in order {
        let best = (0..BUCKETS)
            .map(|b| {
                let grown = buckets[b].with(&fps[i]);
                let before = if buckets[b].used { buckets[b].accepts() } else { 0.0 };
                (grown.accepts() - before, b)
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .expect("there are buckets");
        buckets[best.1] = buckets[best.1].with(&fps[i]);
        out[i] = best.1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first fingerprint or candidate line start, by brute force.
    fn naive(fps: &[Vec<u8>], starts: &LineStarts, hay: &[u8], at: usize) -> Option<usize> {
        (at..hay.len()).find(|&p| {
            fps.iter().any(|f| hay.len() - p >= f.len() && f.iter().zip(&hay[p..]).all(|(&a, &b)| fold(a) == fold(b)))
                || (p > 0 && hay[p - 1] == b'\n' && starts.contains(&hay[p..]))
        })
    }

    fn all(f: &Search, hay: &[u8]) -> Vec<usize> {
        let mut out = Vec::new();
        let mut at = 0;
        while let Some(p) = f.find(hay, at) {
            out.push(p);
            at = p + 1;
        }
        out
    }

    #[test]
    fn finds_what_brute_force_finds() {
        let fps: Vec<Vec<u8>> = ["err", "warn", "fail", "[-w", "\u{30a8}\u{30e9}", "x", "segm", "(cor", "--> "]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        let mut starts = LineStarts::empty();
        starts.add(b'E', b' ', false);
        starts.add(b'a', b't', true);
        let cases = [(fps.clone(), starts.clone()), (fps, LineStarts::empty()), (Vec::new(), starts)];
        for ((fps, starts), path) in cases.iter().flat_map(|c| paths().into_iter().map(move |p| (c, p))) {
            let mut f = Search::new(fps, starts.clone());
            f.simd = path;
            let mut rng = 0x2545_f491_4f6c_dd1du64;
            let alphabet = b"errwarnfailsegm(cor--> [-W xyzERRWARN\n\n\t\xe3\x82\xa8\xe3\x83\xa9E at";
            for len in [0usize, 1, 3, 31, 32, 34, 35, 36, 64, 67, 200, 1000] {
                for _ in 0..20 {
                    let hay: Vec<u8> = (0..len)
                        .map(|_| {
                            rng ^= rng << 13;
                            rng ^= rng >> 7;
                            rng ^= rng << 17;
                            alphabet[(rng % alphabet.len() as u64) as usize]
                        })
                        .collect();
                    let mut expected = Vec::new();
                    let mut at = 0;
                    while let Some(p) = naive(fps, starts, &hay, at) {
                        expected.push(p);
                        at = p + 1;
                    }
                    assert_eq!(all(&f, &hay), expected, "{path:?} {:?}", String::from_utf8_lossy(&hay));
                }
            }
        }
    }

    /// Every search path this CPU can run.
    fn paths() -> Vec<Simd> {
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut v = vec![Simd::None];
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") {
                v.push(Simd::Avx2);
            }
            if std::is_x86_feature_detected!("avx512bw") && std::is_x86_feature_detected!("avx512vbmi") {
                v.push(Simd::Avx512);
            }
        }
        v
    }

    #[test]
    fn a_hit_counts_only_where_one_of_its_strings_is() {
        let lits = [b" pending".to_vec(), b"[error]".to_vec(), b"error:".to_vec()];
        for path in paths() {
            let mut f = Search::new(&[b"ding".to_vec(), b"rror".to_vec()], LineStarts::empty()).confirming(&lits);
            f.simd = path;
            let pad = "-".repeat(70);
            for (hay, want) in [
                ("while reading the request", None),
                ("2 PENDING jobs", Some(5)),
                ("terror x", None),
                ("x [ERROR] y", Some(4)),
                ("an error: here", Some(4)),
            ] {
                assert_eq!(f.find(hay.as_bytes(), 0), want, "{path:?} {hay:?}");
                let long = format!("{pad}{hay}{pad}");
                assert_eq!(f.find(long.as_bytes(), 0), want.map(|p| p + pad.len()), "{path:?} padded {hay:?}");
            }
            // A string that would begin before the haystack, or end past
            // it, may be there.
            for (hay, want) in [("ding x", Some(0)), ("x rror", Some(2)), ("terror", Some(2)), ("xx erro", None)] {
                assert_eq!(f.find(hay.as_bytes(), 0), want, "{path:?} {hay:?}");
            }
        }
    }

    /// Checked against their strings, the hits are fingerprint hits, and
    /// every place a string is holds one.
    #[test]
    fn every_string_is_found_and_only_fingerprints_are() {
        let lits: Vec<Vec<u8>> = ["error:", "[error]", " pending", "fail", "failed to", "(core dumped)", "e:"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        let fps: Vec<Vec<u8>> = ["rror", "ding", "fail", "(cor", "e:"].iter().map(|s| s.as_bytes().to_vec()).collect();
        let mut rng = crate::text::secrets::samples::Rng::new(7);
        // Pieces of the strings, so that fingerprints often meet them and
        // often meet other bytes.
        let pieces: [&[u8]; 16] = [
            b"rror",
            b"ding",
            b"(cor",
            b"e",
            b"E",
            b"pen",
            b" ",
            b":",
            b"[",
            b"]",
            b"fail",
            b"ed",
            b" to",
            b"e dumped)",
            b"\n",
            b"x",
        ];
        for path in paths() {
            let mut f = Search::new(&fps, LineStarts::empty()).confirming(&lits);
            f.simd = path;
            let mut rejected = 0;
            for len in [0usize, 5, 40, 67, 130, 400] {
                for _ in 0..200 {
                    let mut hay: Vec<u8> = Vec::new();
                    while hay.len() < len {
                        hay.extend_from_slice(pieces[rng.below(pieces.len())]);
                    }
                    let found = all(&f, &hay);
                    let naive_hits: Vec<usize> = {
                        let mut v = Vec::new();
                        let mut at = 0;
                        while let Some(p) = naive(&fps, &LineStarts::empty(), &hay, at) {
                            v.push(p);
                            at = p + 1;
                        }
                        v
                    };
                    assert!(
                        found.iter().all(|p| naive_hits.contains(p)),
                        "{path:?} {:?}",
                        String::from_utf8_lossy(&hay)
                    );
                    rejected += naive_hits.len() - found.len();
                    for l in &lits {
                        for s in (0..hay.len().saturating_sub(l.len() - 1))
                            .filter(|&s| hay[s..s + l.len()].eq_ignore_ascii_case(l))
                        {
                            let covered = fps.iter().any(|fp| {
                                l.len() >= fp.len()
                                    && (0..=l.len() - fp.len())
                                        .any(|o| l[o..].starts_with(fp) && found.contains(&(s + o)))
                            });
                            assert!(
                                covered,
                                "{path:?} {:?} at {s} in {:?}",
                                String::from_utf8_lossy(l),
                                String::from_utf8_lossy(&hay)
                            );
                        }
                    }
                }
            }
            assert!(rejected > 100, "{path:?}: fingerprint hits without their strings are passed over ({rejected})");
        }
    }

    #[test]
    fn case_is_ignored_and_plain_text_passes() {
        let f = Search::new(&[b"error".to_vec(), b"fatal".to_vec()], LineStarts::empty());
        let line = b"2026-12-02T10:05:07 INFO worker=3 request served in 12 ms\n".repeat(10);
        assert_eq!(f.find(&line, 0), None);
        let mut hit = line.clone();
        hit.extend_from_slice(b"x ERROR y");
        assert_eq!(f.find(&hit, 0), Some(line.len() + 2));
        assert_eq!(f.find(b"Fatal", 0), Some(0));
        assert_eq!(Search::new(&[], LineStarts::empty()).find(&line, 0), None);
    }
}

#[cfg(test)]
mod probe {
    #[test]
    #[ignore]
    fn shipped_fingerprints_on_a_plain_log() {
        let c = crate::family::Classifier::new(&crate::family::spec::embedded(), &Default::default()).unwrap();
        let f = c.literal_prefilter().unwrap().clone();
        let mut data = Vec::new();
        for i in 0..200_000usize {
            data.extend_from_slice(
                format!(
                    "2026-12-02T10:{:02}:{:02} INFO worker={} request served in {} ms\n",
                    i % 60,
                    i % 59,
                    i % 16,
                    i % 997
                )
                .as_bytes(),
            );
        }
        let t = std::time::Instant::now();
        let mut n = 0;
        let mut at = 0;
        while let Some(p) = f.find(&data, at) {
            n += 1;
            at = p + 1;
        }
        println!("{} fingerprints ({:?}), {} bytes, {n} found, {:?}", f.len(), f.simd, data.len(), t.elapsed());
        for b in 0..super::BUCKETS {
            let names: Vec<String> = f.words[f.bucket_at[b] as usize..f.bucket_at[b + 1] as usize]
                .iter()
                .map(|&(w, mask)| {
                    let bytes = w.to_le_bytes();
                    String::from_utf8_lossy(&bytes[..mask.count_ones() as usize / 8]).into_owned()
                })
                .collect();
            println!("bucket {b}: {names:?}");
        }
    }
}
