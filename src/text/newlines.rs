//! Where the newlines of a byte string are, one bit a byte.
//!
//! The scanner's counting pass marks a region's newlines as it counts them
//! (`utf8::CharCounter::feed_marking`); the family scan then finds its
//! candidate lines' starts, ends and numbers in the map. Searching the
//! bytes again, in a short memchr call per candidate line, took a tenth of
//! the scan of a server log.

/// Bit `i % 64` of word `i / 64` is set when byte `i` is a `\n`.
#[derive(Debug, Default)]
pub struct NewlineMap {
    words: Vec<u64>,
}

impl NewlineMap {
    /// Clears the map for a string of `len` bytes: the zeroed words to
    /// mark, one for every 64 bytes.
    pub fn clear_for(&mut self, len: usize) -> &mut [u64] {
        self.words.clear();
        self.words.resize(len.div_ceil(64), 0);
        &mut self.words
    }

    /// The map of `bytes`, marked byte by byte (for tests).
    #[cfg(test)]
    pub fn of(bytes: &[u8]) -> NewlineMap {
        let mut map = NewlineMap::default();
        let words = map.clear_for(bytes.len());
        for (i, _) in bytes.iter().enumerate().filter(|&(_, &b)| b == b'\n') {
            words[i / 64] |= 1 << (i % 64);
        }
        map
    }

    /// The first newline at or after `at`.
    pub fn next(&self, at: usize) -> Option<usize> {
        let mut w = at / 64;
        let mut bits = self.words.get(w)? & (!0 << (at % 64));
        while bits == 0 {
            w += 1;
            bits = *self.words.get(w)?;
        }
        Some(w * 64 + bits.trailing_zeros() as usize)
    }

    /// The last newline before `end`.
    pub fn prev(&self, end: usize) -> Option<usize> {
        let mut w = end / 64;
        let below = (1u64 << (end % 64)) - 1;
        let mut bits = self.words.get(w).map_or(0, |&x| x & below);
        while bits == 0 {
            w = w.checked_sub(1)?;
            bits = self.words[w];
        }
        Some(w * 64 + 63 - bits.leading_zeros() as usize)
    }

    /// Every newline, in order.
    pub fn positions(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut bits = word;
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let at = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    w * 64 + at
                })
            })
        })
    }

    /// Where the line holding byte `at` starts.
    pub fn line_start(&self, at: usize) -> usize {
        self.prev(at).map_or(0, |k| k + 1)
    }

    /// Newlines in `from..to`. The x86-64 baseline has no `popcnt`, and
    /// the portable count took 2% of a server log's scan: the instruction
    /// is used where the CPU has it.
    pub fn count(&self, from: usize, to: usize) -> u64 {
        #[cfg(target_arch = "x86_64")]
        if popcnt() {
            // SAFETY: POPCNT was detected at run time.
            return unsafe { self.count_popcnt(from, to) };
        }
        self.count_in(from, to)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn count_popcnt(&self, from: usize, to: usize) -> u64 {
        self.count_in(from, to)
    }

    #[inline(always)]
    fn count_in(&self, from: usize, to: usize) -> u64 {
        if from >= to {
            return 0;
        }
        let (first, last) = (from / 64, (to - 1) / 64);
        let head = !0u64 << (from % 64);
        let tail = !0u64 >> (63 - (to - 1) % 64);
        let ones = |w: u64| u64::from(w.count_ones());
        if first == last {
            return ones(self.words[first] & head & tail);
        }
        ones(self.words[first] & head)
            + self.words[first + 1..last].iter().map(|&w| ones(w)).sum::<u64>()
            + ones(self.words[last] & tail)
    }
}

#[cfg(target_arch = "x86_64")]
fn popcnt() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::is_x86_feature_detected!("popcnt"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every answer of the map, against the bytes searched.
    fn agrees(bytes: &[u8]) {
        let map = NewlineMap::of(bytes);
        let all: Vec<usize> = memchr::memchr_iter(b'\n', bytes).collect();
        assert_eq!(map.positions().collect::<Vec<_>>(), all, "positions of {bytes:?}");
        for at in 0..=bytes.len() {
            let next = bytes[at..].iter().position(|&b| b == b'\n').map(|k| at + k);
            let prev = bytes[..at].iter().rposition(|&b| b == b'\n');
            assert_eq!(map.next(at), next, "next({at}) of {bytes:?}");
            assert_eq!(map.prev(at), prev, "prev({at}) of {bytes:?}");
            assert_eq!(map.line_start(at), prev.map_or(0, |k| k + 1), "line_start({at}) of {bytes:?}");
            for from in 0..=at {
                let want = bytes[from..at].iter().filter(|&&b| b == b'\n').count() as u64;
                assert_eq!(map.count(from, at), want, "count({from}, {at}) of {bytes:?}");
            }
        }
    }

    #[test]
    fn newlines_at_word_boundaries() {
        for len in [1, 2, 63, 64, 65, 127, 128, 129, 200] {
            for at in [0, 1, 62, 63, 64, 65, 127, 128, len - 1] {
                let mut bytes = vec![b'x'; len];
                if at < len {
                    bytes[at] = b'\n';
                }
                *bytes.last_mut().unwrap() = b'\n';
                agrees(&bytes);
            }
        }
    }

    #[test]
    fn regions_of_any_length() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        for len in (0..140).chain([191, 192, 193, 300]) {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    // One byte in nine a newline: lines of any length.
                    [b'\n', b'a'][(rng % 9).min(1) as usize]
                })
                .collect();
            agrees(&bytes);
        }
    }

    #[test]
    fn first_and_last_byte_newlines_and_only_newlines() {
        agrees(b"\nabc\n");
        agrees(b"\n");
        agrees(&[b'\n'; 64]);
        agrees(&[b'\n'; 130]);
        let mut long = vec![b'y'; 250];
        long[0] = b'\n';
        long[249] = b'\n';
        agrees(&long);
        let map = NewlineMap::of(&[b'\n'; 130]);
        assert_eq!(map.count(0, 130), 130);
        assert_eq!(map.count(1, 129), 128);
        assert_eq!((map.prev(0), map.next(130)), (None, None));
    }

    #[test]
    fn no_newline_at_all() {
        agrees(b"");
        agrees(&[b'z'; 150]);
        let map = NewlineMap::of(&[b'z'; 150]);
        assert_eq!((map.next(0), map.prev(150), map.line_start(149)), (None, None, 0));
    }
}
