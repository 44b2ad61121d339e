//! The gap inventory: which line templates (`text::template`) the input holds
//! past its head arena, as a bounded top-k summary, so the gap marker can
//! say what the lines it does not show are.
//!
//! The summary is Space-Saving over a fixed table of `TABLE` shapes: a
//! shape not in a full table takes the place of the smallest entry and
//! inherits its count as its error, so a count is never under the truth
//! and over it by at most its entry's `error` (itself at most the total
//! counted divided by `TABLE`).
//!
//! Hashing every line would slow the scanner down several times, so only
//! the first `EXACT_BYTES` after the arena are counted line by line
//! (exactly); past them the scanner samples one point in each `STRIDE`
//! bytes, at a pseudo-random place in it (so a periodic log cannot alias
//! with the stride), and the line under a point counts for `STRIDE / its
//! length` lines: each line is expected to count once whatever its length
//! (a Horvitz-Thompson estimate), and such counts are marked approximate.
//! Points are placed by absolute byte offset, so the result does not
//! depend on how the input is split into blocks.

use memchr::{memchr, memchr_iter, memrchr};

use crate::stream::line::LineBody;
use crate::text::template;

/// Shapes the summary holds.
pub const TABLE: usize = 64;
/// Bytes after the head arena whose lines are all counted.
pub const EXACT_BYTES: u64 = 256 << 10;
/// One sampled point per this many bytes past them.
pub const STRIDE: u64 = 16 << 10;
/// Bytes of a line that decide its shape (and are kept as its example).
pub const SHAPE_BYTES: usize = 256;

/// One shape of the summary.
#[derive(Debug, Clone)]
pub struct Entry {
    pub shape: u64,
    /// Lines counted (estimated when `sampled`); over the truth by at most
    /// `error`.
    pub count: f64,
    pub error: f64,
    /// Some of the count comes from sampled points.
    pub sampled: bool,
    /// Sampled lines counted since the entry took its place, and what they
    /// counted for: an estimate from n samples is off by about 1/sqrt(n)
    /// of itself, so one sample of a rare shape says little.
    pub samples: u32,
    pub sampled_count: f64,
    /// The first `SHAPE_BYTES` of a line of this shape.
    pub example: Vec<u8>,
}

impl Entry {
    /// Whether the count is exact (no sampling, no inherited error).
    pub fn exact(&self) -> bool {
        !self.sampled && self.error == 0.0
    }

    /// About how far the sampled part of the count may be off (one
    /// standard error of a count of independent samples).
    pub fn sampling_error(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.sampled_count / f64::from(self.samples).sqrt()
        }
    }
}

#[derive(Debug)]
pub struct GapInventory {
    /// Lines ending at or before this offset are in the head arena.
    arena: u64,
    /// Absolute offset of the next line's start.
    offset: u64,
    table: Vec<Entry>,
    /// Lines past `EXACT_BYTES` were seen: counts of the part past them are
    /// estimates, and a shape no point fell on may still be there.
    sampled: bool,
    /// A shape took another's place: a shape not in the table may have
    /// been counted and dropped.
    evicted: bool,
}

impl GapInventory {
    /// An inventory of the lines that do not end inside the first `arena`
    /// bytes.
    pub fn new(arena: u64) -> GapInventory {
        GapInventory { arena, offset: 0, table: Vec::with_capacity(TABLE), sampled: false, evicted: false }
    }

    /// Whether every line past the arena was counted, each under its own
    /// shape: then an entry's count is the truth and a shape without an
    /// entry has no line past the arena.
    pub fn is_exact(&self) -> bool {
        !self.sampled && !self.evicted
    }

    /// How many lines past the arena a shape without an entry may have:
    /// one dropped from a full table had at most the smallest count kept
    /// (Space-Saving's bound).
    pub fn dropped(&self) -> f64 {
        match self.evicted {
            true => self.table.iter().map(|e| e.count).fold(f64::INFINITY, f64::min),
            false => 0.0,
        }
    }

    /// How many lines of `len` bytes (terminator included) past the exact
    /// region a shape no sampled point fell on may still have: about one
    /// point's worth (fewer than one point expected, one point counting for
    /// `STRIDE / len` lines).
    pub fn missed(&self, len: usize) -> f64 {
        match self.sampled {
            true => STRIDE as f64 / len.max(1) as f64,
            false => 0.0,
        }
    }

    /// The summary's entries, in no order.
    pub fn entries(&self) -> &[Entry] {
        &self.table
    }

    /// The byte offset past which lines are sampled instead of counted.
    fn exact_end(&self) -> u64 {
        self.arena.saturating_add(EXACT_BYTES)
    }

    /// Complete lines, each ending with `\n`, following what was seen.
    pub fn region(&mut self, region: &[u8]) {
        let base = self.offset;
        let end = base + region.len() as u64;
        self.offset = end;
        if end <= self.arena {
            return;
        }
        // Lines that end past the arena: from after the last `\n` before it.
        let mut pos = match self.arena.checked_sub(base) {
            Some(q) if q > 0 => memrchr(b'\n', &region[..q as usize]).map_or(0, |k| k + 1),
            _ => 0,
        };
        let exact_end = self.exact_end();
        if base + (pos as u64) < exact_end {
            let from = pos;
            for nl in memchr_iter(b'\n', &region[from..]) {
                let nl = from + nl;
                let line = &region[pos..nl];
                self.add(strip_cr(line), 1.0, false);
                pos = nl + 1;
                if base + pos as u64 >= exact_end {
                    break;
                }
            }
        }
        if pos == region.len() {
            return;
        }
        self.sampled = true;
        // Sampled: the line under each point.
        let mut at = point_from(base + pos as u64);
        while at < end {
            let p = (at - base) as usize;
            let s = memrchr(b'\n', &region[pos..p]).map_or(pos, |k| pos + k + 1);
            let e = p + memchr(b'\n', &region[p..]).expect("a region ends with a newline") + 1;
            let (s_abs, e_abs) = (base + s as u64, base + e as u64);
            let points = points_in(s_abs, e_abs);
            let line = strip_cr(&region[s..e - 1]);
            self.add(line, weight(points, e_abs - s_abs), true);
            pos = e;
            at = point_from(e_abs);
        }
    }

    /// One complete line handed over on its own (`body` without its
    /// terminator, `len` with it).
    pub fn line(&mut self, body: LineBody, len: u64) {
        let (s, e) = (self.offset, self.offset + len);
        self.offset = e;
        if e <= self.arena || len == 0 {
            return;
        }
        let head = match body {
            LineBody::Whole(b) => b,
            LineBody::Cut { prefix, .. } => prefix,
        };
        if s < self.exact_end() {
            self.add(head, 1.0, false);
            return;
        }
        self.sampled = true;
        let points = points_in(s, e);
        if points > 0 {
            self.add(head, weight(points, len), true);
        }
    }

    /// Space-Saving's update, weighted.
    fn add(&mut self, line: &[u8], w: f64, sampled: bool) {
        let line = &line[..line.len().min(SHAPE_BYTES)];
        let h = line_shape(line);
        let (samples, sampled_count) = if sampled { (1, w) } else { (0, 0.0) };
        if let Some(e) = self.table.iter_mut().find(|e| e.shape == h) {
            e.count += w;
            e.sampled |= sampled;
            e.samples += samples;
            e.sampled_count += sampled_count;
            return;
        }
        if self.table.len() < TABLE {
            let example = line.to_vec();
            self.table.push(Entry { shape: h, count: w, error: 0.0, sampled, samples, sampled_count, example });
            return;
        }
        self.evicted = true;
        let min = self.table.iter_mut().min_by(|a, b| a.count.total_cmp(&b.count)).expect("a full table");
        min.shape = h;
        min.error = min.count;
        min.count += w;
        min.sampled = sampled;
        min.samples = samples;
        min.sampled_count = sampled_count;
        min.example.clear();
        min.example.extend_from_slice(line);
    }
}

/// A line's template key as the inventory sees it (its first
/// `SHAPE_BYTES`): the key the signal kinds use, so the gap and the signal
/// section count lines alike.
pub fn line_shape(line: &[u8]) -> u64 {
    template::key(&line[..line.len().min(SHAPE_BYTES)])
}

/// The line without the `\r` of a CRLF.
fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// What one line under `points` points of a line of `len` bytes counts for.
fn weight(points: u64, len: u64) -> f64 {
    (points * STRIDE) as f64 / len.max(1) as f64
}

/// The sampled point of the `j`th stride: a fixed pseudo-random place in it.
fn point(j: u64) -> u64 {
    // splitmix64's finaliser.
    let mut z = j.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    j * STRIDE + z % STRIDE
}

/// The first point at or after `at`.
fn point_from(at: u64) -> u64 {
    let j = at / STRIDE;
    if point(j) >= at {
        point(j)
    } else {
        point(j + 1)
    }
}

/// Points in `[s, e)`.
fn points_in(s: u64, e: u64) -> u64 {
    let (first, last) = (s / STRIDE, (e - 1) / STRIDE);
    let inner = (last - first).saturating_sub(1);
    let ends = if first == last {
        (s..e).contains(&point(first)) as u64
    } else {
        (point(first) >= s) as u64 + (point(last) < e) as u64
    };
    inner + ends
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(inv: &mut GapInventory, data: &[u8], ends: &[usize]) {
        let mut from = 0;
        for &to in ends.iter().chain([&data.len()]) {
            inv.region(&data[from..to]);
            from = to;
        }
    }

    fn count<'a>(inv: &'a GapInventory, line: &[u8]) -> Option<&'a Entry> {
        inv.entries().iter().find(|e| e.shape == line_shape(line))
    }

    #[test]
    fn small_input_is_counted_exactly_past_the_arena() {
        let mut data = Vec::new();
        for i in 0..1000 {
            data.extend_from_slice(format!("   Compiling crate{i} v0.{i}.0\n").as_bytes());
            if i % 100 == 0 {
                data.extend_from_slice(b"warning: unused\r\n");
            }
        }
        let mut inv = GapInventory::new(27 * 10);
        feed(&mut inv, &data, &[]);
        let c = count(&inv, b"   Compiling crate1 v0.1.0").unwrap();
        assert!(c.exact() && inv.is_exact());
        assert_eq!((inv.missed(20), inv.dropped()), (0.0, 0.0));
        // Ten lines end inside the arena: crate0 (27 bytes), the first
        // warning (17), crate1 to crate8 (27 each) make 260 bytes.
        assert_eq!(c.count, 991.0);
        assert_eq!(count(&inv, b"warning: unused").unwrap().count, 9.0);
    }

    #[test]
    fn sampled_counts_are_close_and_split_independent() {
        let mut data = Vec::new();
        let mut i = 0u64;
        while data.len() < 24 << 20 {
            let line = if i.is_multiple_of(10) {
                format!("2026-12-03 ERROR db timeout after {i} ms on a much longer line of text\n")
            } else {
                format!("   Compiling crate{i} v0.1.0\n")
            };
            data.extend_from_slice(line.as_bytes());
            i += 1;
        }
        let whole = {
            let mut inv = GapInventory::new(0);
            feed(&mut inv, &data, &[]);
            inv.entries().iter().map(|e| (e.shape, e.count)).collect::<Vec<_>>()
        };
        let mut inv = GapInventory::new(0);
        // Regions end at newlines.
        let ends: Vec<usize> = memchr_iter(b'\n', &data).step_by(997).map(|k| k + 1).collect();
        feed(&mut inv, &data, &ends);
        assert_eq!(whole, inv.entries().iter().map(|e| (e.shape, e.count)).collect::<Vec<_>>());
        let compiling = count(&inv, b"   Compiling crate1 v0.1.0").unwrap();
        let errors = count(&inv, b"2026-12-03 ERROR db timeout after 1 ms on a much longer line of text").unwrap();
        assert!(!compiling.exact() && compiling.error == 0.0 && !inv.is_exact());
        // A shape no point fell on may hold about one point's worth.
        assert_eq!(inv.missed(64), (STRIDE / 64) as f64);
        let (want_c, want_e) = ((i - i / 10) as f64, (i / 10) as f64);
        assert!((compiling.count / want_c - 1.0).abs() < 0.05, "{} vs {want_c}", compiling.count);
        assert!((errors.count / want_e - 1.0).abs() < 0.05, "{} vs {want_e}", errors.count);
    }

    #[test]
    fn a_line_counts_once_whatever_its_length() {
        let mut inv = GapInventory::new(0);
        let len = 100 * STRIDE + 123;
        inv.line(
            LineBody::Cut { prefix: b"xxxx", suffix: b"xxxx", bytes: len - 1, chars: len - 1, elided_crs: 0 },
            len,
        );
        inv.line(
            LineBody::Cut { prefix: b"xxxx", suffix: b"xxxx", bytes: len - 1, chars: len - 1, elided_crs: 0 },
            len,
        );
        let c = count(&inv, b"xxxx").unwrap();
        assert!((c.count - 2.0).abs() < 0.05, "{}", c.count);
    }

    #[test]
    fn a_full_table_keeps_the_frequent_shapes_with_a_bounded_error() {
        let mut data = Vec::new();
        for i in 0..5000 {
            data.extend_from_slice(format!("frequent {i}\nrare{}\n", i % 1000).as_bytes());
        }
        let mut inv = GapInventory::new(0);
        feed(&mut inv, &data, &[]);
        let f = count(&inv, b"frequent 1").unwrap();
        assert!(f.count >= 5000.0 && f.count - f.error <= 5000.0);
        assert!(f.error <= 10_000.0 / TABLE as f64);
        // Digits fold: the rare lines above are one shape. Spelled in
        // letters, they are a thousand, and lose their places.
        assert!(inv.is_exact());
        let letters = |i: usize| {
            format!(
                "{}{}{}",
                (b'a' + (i / 100) as u8) as char,
                (b'a' + (i / 10 % 10) as u8) as char,
                (b'a' + (i % 10) as u8) as char
            )
        };
        let mut inv = GapInventory::new(0);
        let data: String = (0..5000).map(|i| format!("frequent {i}\nrare {}\n", letters(i % 1000))).collect();
        feed(&mut inv, data.as_bytes(), &[]);
        assert!(!inv.is_exact());
        let smallest = inv.entries().iter().map(|e| e.count).fold(f64::INFINITY, f64::min);
        assert!(smallest >= 1.0 && inv.dropped() == smallest && inv.missed(8) == 0.0);
    }

    #[test]
    fn points_are_counted_in_any_range() {
        let brute =
            |s: u64, e: u64| (s / STRIDE..=e / STRIDE + 1).filter(|&j| (s..e).contains(&point(j))).count() as u64;
        for (s, e) in [(0, 1), (0, STRIDE), (5, 3 * STRIDE + 7), (STRIDE - 1, STRIDE + 1), (10 * STRIDE, 40 * STRIDE)] {
            assert_eq!(points_in(s, e), brute(s, e), "{s}..{e}");
        }
        assert!(point_from(STRIDE * 3) >= STRIDE * 3 && point_from(STRIDE * 3) < STRIDE * 5);
    }
}
