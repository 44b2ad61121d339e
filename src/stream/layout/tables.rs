//! The bounded tables a layout's rollup is counted in, so memory never
//! grows with the input:
//! - [`Table`]: counts per key (a directory, a file, an author) in at most
//!   `cap` rows; when full, the half with the smallest counts goes, and a
//!   row made later records as its `error` how much it may have missed (the
//!   largest count evicted so far): counts are exact until the first
//!   eviction, then under the truth by at most `error` (lossy counting);
//! - [`TopK`]: the `cap` items with the largest values (ties: the first);
//! - [`Spread`]: a sample of at most `cap` items spread evenly over line
//!   numbers however long the input grows (one per stride of lines; when
//!   full, the stride doubles and every other item goes), as the signal
//!   keeper's spread;
//! - [`Distinct`]: a count of distinct keys, exact up to `K`, then estimated
//!   from the `K` smallest hashes (k minimum values; about 1.6% off at
//!   `K` = 4096).

use std::collections::{BinaryHeap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use crate::stream::line::{LineBody, StoredLine};

/// Bytes kept from each end of a long line an item or a sample holds:
/// enough to show 300 characters.
pub const PIECE: usize = 600;

/// Bytes of a label (a path, an author) a row keeps.
pub const LABEL_BYTES: usize = 200;

/// A well-mixed 64-bit hash of bytes (FNV-1a, then splitmix64's
/// finaliser so the high bits are as random as the low ones).
pub fn hash(bytes: &[u8]) -> u64 {
    finish(fnv(FNV_START, bytes))
}

/// The FNV-1a state before any byte.
pub const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// The FNV-1a state after `bytes`, from `state`: the state of a string's
/// prefix goes on into the rest, so a path's hash can go on from its
/// directory's.
pub fn fnv(mut state: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        state ^= u64::from(b);
        state = state.wrapping_mul(0x0100_0000_01b3);
    }
    state
}

/// [`hash`] from the FNV-1a state after the whole string.
pub fn finish(mut h: u64) -> u64 {
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// Keys here are already [`hash`]es: the map uses them as they are
/// (SipHash over a well-mixed u64 would only cost time).
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

type Keyed = BuildHasherDefault<KeyHasher>;

/// One key's figures.
#[derive(Debug, Clone, Default)]
pub struct Row {
    pub key: u64,
    /// The key as printed (at most `LABEL_BYTES`).
    pub label: Vec<u8>,
    pub count: u64,
    pub sum: u64,
    pub max: u64,
    /// A figure of the key's own (a directory's own `du` line, a file's
    /// hunks).
    pub own: Option<u64>,
    pub plus: u64,
    pub minus: u64,
    /// Counts may be under the truth by up to this (see the module doc).
    pub error: u64,
}

/// Counts per key in at most `cap` rows (see the module doc).
#[derive(Debug)]
pub struct Table {
    rows: Vec<Row>,
    index: HashMap<u64, usize, Keyed>,
    cap: usize,
    /// The largest count evicted so far.
    floor: u64,
    /// Label buffers of evicted rows, reused by new ones.
    spare: Vec<Vec<u8>>,
}

impl Table {
    pub fn new(cap: usize) -> Table {
        Table { rows: Vec::new(), index: HashMap::default(), cap: cap.max(2), floor: 0, spare: Vec::new() }
    }

    /// The row of `key`, made (with `label`) when missing.
    pub fn row(&mut self, key: u64, label: &[u8]) -> &mut Row {
        if let Some(&i) = self.index.get(&key) {
            return &mut self.rows[i];
        }
        if self.rows.len() >= self.cap {
            self.evict();
        }
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(&label[..label.len().min(LABEL_BYTES)]);
        let label = buf;
        self.index.insert(key, self.rows.len());
        self.rows.push(Row { key, label, error: self.floor, ..Row::default() });
        self.rows.last_mut().expect("just pushed")
    }

    /// Drops the half with the smallest counts: amortised over the `cap /
    /// 2` rows made before the next eviction.
    fn evict(&mut self) {
        let keep = self.cap / 2;
        self.rows.select_nth_unstable_by(keep, |a, b| b.count.cmp(&a.count).then(a.key.cmp(&b.key)));
        self.floor = self.floor.max(self.rows[keep..].iter().map(|r| r.count).max().unwrap_or(0));
        self.spare.extend(self.rows.drain(keep..).map(|r| r.label));
        self.index.clear();
        self.index.extend(self.rows.iter().enumerate().map(|(i, r)| (r.key, i)));
    }

    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    pub fn get(&self, key: u64) -> Option<&Row> {
        self.index.get(&key).map(|&i| &self.rows[i])
    }

    /// Whether every count is exact (nothing was ever evicted).
    pub fn exact(&self) -> bool {
        self.floor == 0
    }

    /// The `n` rows with the largest `by`, largest first (ties: by label).
    pub fn top(&self, n: usize, by: impl Fn(&Row) -> u64) -> Vec<&Row> {
        let mut v: Vec<&Row> = self.rows.iter().collect();
        v.sort_by(|a, b| by(b).cmp(&by(a)).then_with(|| a.label.cmp(&b.label)));
        v.truncate(n);
        v
    }

    /// Folds every row into one row of `key` (see `paths`: the listing's
    /// root moved up, and all rows so far are under one new top-level).
    pub fn merge_all(&mut self, key: u64, label: &[u8]) {
        let mut merged = Row { key, label: label[..label.len().min(LABEL_BYTES)].to_vec(), ..Row::default() };
        for r in self.rows.drain(..) {
            merged.count += r.count;
            merged.sum = merged.sum.saturating_add(r.sum);
            merged.max = merged.max.max(r.max);
            merged.plus += r.plus;
            merged.minus += r.minus;
            merged.error += r.error;
        }
        self.index.clear();
        if merged.count > 0 {
            self.index.insert(key, 0);
            self.rows.push(merged);
        }
    }
}

/// One of the largest items.
#[derive(Debug, Clone, Default)]
pub struct Item {
    pub value: u64,
    /// The line (its two ends when long, with its true size).
    pub line: StoredLine,
    /// Its key (a path) as printed, at most `LABEL_BYTES`.
    pub label: Vec<u8>,
}

/// The `cap` largest items (see the module doc).
#[derive(Debug)]
pub struct TopK {
    cap: usize,
    items: Vec<Item>,
    /// Index of the smallest item once full.
    min: usize,
}

impl TopK {
    pub fn new(cap: usize) -> TopK {
        TopK { cap: cap.max(1), items: Vec::new(), min: 0 }
    }

    /// Whether a value would enter (cheap: most lines stop here).
    pub fn wants(&self, value: u64) -> bool {
        self.items.len() < self.cap || value > self.items[self.min].value
    }

    /// Offers line `lineno` with its key `label`.
    pub fn offer(&mut self, value: u64, lineno: u64, line: &[u8], label: &[u8]) {
        if !self.wants(value) {
            return;
        }
        let label = &label[..label.len().min(LABEL_BYTES)];
        if self.items.len() < self.cap {
            let line = StoredLine::new(lineno, LineBody::Whole(line), PIECE);
            self.items.push(Item { value, line, label: label.to_vec() });
        } else {
            let it = &mut self.items[self.min];
            it.value = value;
            it.line.set(lineno, LineBody::Whole(line), PIECE);
            it.label.clear();
            it.label.extend_from_slice(label);
        }
        if self.items.len() == self.cap {
            self.min = (0..self.items.len())
                .min_by_key(|&i| (self.items[i].value, std::cmp::Reverse(self.items[i].line.lineno)))
                .unwrap_or(0);
        }
    }

    /// Largest first; equal values in input order.
    pub fn sorted(&self) -> Vec<&Item> {
        let mut v: Vec<&Item> = self.items.iter().collect();
        v.sort_by(|a, b| b.value.cmp(&a.value).then(a.line.lineno.cmp(&b.line.lineno)));
        v
    }
}

/// A sampled line and a figure that belongs to it.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    pub line: StoredLine,
    pub figure: u64,
}

/// A sample spread over line numbers (see the module doc).
#[derive(Debug)]
pub struct Spread {
    cap: usize,
    shift: u32,
    items: Vec<Sample>,
}

impl Spread {
    pub fn new(cap: usize) -> Spread {
        Spread { cap: cap.max(2), shift: 0, items: Vec::new() }
    }

    fn bucket(&self, lineno: u64) -> u64 {
        lineno.checked_shr(self.shift).unwrap_or(0)
    }

    /// Whether a line would be kept (cheap: most lines stop here).
    pub fn wants(&self, lineno: u64) -> bool {
        self.items.last().is_none_or(|s| self.bucket(s.line.lineno) != self.bucket(lineno))
    }

    /// Keeps the line when its stride has no item yet; true when kept.
    pub fn offer(&mut self, lineno: u64, line: &[u8], figure: u64) -> bool {
        if !self.wants(lineno) {
            return false;
        }
        self.items.push(Sample { line: StoredLine::new(lineno, LineBody::Whole(line), PIECE), figure });
        while self.items.len() > self.cap {
            self.shift += 1;
            let shift = self.shift;
            let mut prev = None;
            self.items.retain(|s| {
                let b = s.line.lineno.checked_shr(shift).unwrap_or(0);
                let keep = prev != Some(b);
                prev = Some(b);
                keep
            });
        }
        self.items.last().is_some_and(|s| s.line.lineno == lineno)
    }

    pub fn last_mut(&mut self) -> Option<&mut Sample> {
        self.items.last_mut()
    }

    pub fn items(&self) -> &[Sample] {
        &self.items
    }
}

/// Indices `0..n` in an order whose every prefix is spread over the whole
/// range (bit-reversed: 0, n/2, n/4, 3n/4, ...).
pub fn spread_order(n: usize) -> impl Iterator<Item = usize> {
    let bits = usize::BITS - n.saturating_sub(1).leading_zeros();
    (0..1usize << bits)
        .map(move |i| i.reverse_bits().checked_shr(usize::BITS - bits).unwrap_or(0))
        .filter(move |&i| i < n)
}

/// Distinct keys counted in bounded memory (see the module doc).
#[derive(Debug)]
pub struct Distinct {
    k: usize,
    /// The `k` smallest hashes seen, as a max-heap and a set.
    heap: BinaryHeap<u64>,
    set: HashSet<u64, Keyed>,
}

impl Distinct {
    pub fn new(k: usize) -> Distinct {
        Distinct { k: k.max(16), heap: BinaryHeap::new(), set: HashSet::default() }
    }

    pub fn insert(&mut self, h: u64) {
        if self.set.contains(&h) {
            return;
        }
        if self.heap.len() < self.k {
            self.heap.push(h);
            self.set.insert(h);
        } else if self.heap.peek().is_some_and(|&m| h < m) {
            let m = self.heap.pop().expect("full");
            self.set.remove(&m);
            self.heap.push(h);
            self.set.insert(h);
        }
    }

    /// The count, and whether it is exact.
    pub fn count(&self) -> (u64, bool) {
        if self.heap.len() < self.k {
            return (self.heap.len() as u64, true);
        }
        let kth = *self.heap.peek().expect("full") as f64 / u64::MAX as f64;
        (((self.k - 1) as f64 / kth.max(f64::MIN_POSITIVE)).round() as u64, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_exact_until_it_overflows_then_bounded() {
        let mut t = Table::new(8);
        for i in 0..6u64 {
            for _ in 0..=i {
                t.row(i, format!("k{i}").as_bytes()).count += 1;
            }
        }
        assert!(t.exact());
        assert_eq!(t.top(2, |r| r.count).iter().map(|r| r.count).collect::<Vec<_>>(), [6, 5]);
        // Many rare keys push the table over: the frequent ones survive.
        for i in 100..200u64 {
            t.row(i, b"rare").count += 1;
            t.row(5, b"k5").count += 1;
        }
        assert!(!t.exact());
        let top = t.get(5).unwrap();
        assert_eq!(top.count, 106);
        assert!(t.rows().len() <= 8);
    }

    #[test]
    fn top_k_keeps_the_largest_first_on_ties() {
        let mut k = TopK::new(3);
        for (i, v) in [5u64, 1, 9, 5, 7, 2, 9].iter().enumerate() {
            k.offer(*v, i as u64 + 1, format!("v{v}").as_bytes(), b"");
        }
        let got: Vec<(u64, u64)> = k.sorted().iter().map(|i| (i.value, i.line.lineno)).collect();
        assert_eq!(got, [(9, 3), (9, 7), (7, 5)]);
    }

    #[test]
    fn a_spread_stays_spread_and_bounded() {
        let mut s = Spread::new(16);
        for l in 1..=100_000u64 {
            s.offer(l, b"x", 0);
        }
        assert!(s.items().len() <= 16 && s.items().len() >= 8);
        let tenths: HashSet<u64> = s.items().iter().map(|i| (i.line.lineno - 1) / 12_500).collect();
        assert!(tenths.len() >= 7, "{tenths:?}");
        assert_eq!(spread_order(5).collect::<Vec<_>>(), [0, 4, 2, 1, 3]);
    }

    #[test]
    fn a_hash_goes_on_from_its_prefix_state() {
        let path = b"./copy0/ja/man6/bcd.6.gz";
        for cut in 0..=path.len() {
            let (dir, rest) = path.split_at(cut);
            assert_eq!(finish(fnv(fnv(FNV_START, dir), rest)), hash(path), "cut at {cut}");
        }
        assert_ne!(hash(b"./a/"), hash(b"./b/"));
    }

    #[test]
    fn distinct_is_exact_then_close() {
        let mut d = Distinct::new(256);
        for i in 0..200u64 {
            d.insert(hash(&i.to_le_bytes()));
            d.insert(hash(&i.to_le_bytes()));
        }
        assert_eq!(d.count(), (200, true));
        for i in 0..100_000u64 {
            d.insert(hash(&i.to_le_bytes()));
        }
        let (n, exact) = d.count();
        assert!(!exact);
        assert!((n as f64 / 100_000.0 - 1.0).abs() < 0.2, "{n}");
    }
}
