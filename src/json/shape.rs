//! Shared machinery of the JSON folds (`json.rs` for one document,
//! `ndjson.rs` for one value per line): parsing one value with reused
//! simd-json buffers, the key inventory (which also finds duplicate keys),
//! the bounded sample renderer, and the budget fitting that turns all of
//! it into `{"header": {...}, "sample": [...]}`.
//!
//! Invariants:
//! - Nothing here recurses over the input's nesting: simd-json's stage 2
//!   uses a heap stack, and every walk over a tape below (inventory,
//!   duplicate scan, renderer, path finder) is a loop with an explicit
//!   stack or a linear scan, so a value 100,000 levels deep cannot
//!   overflow the thread's stack.
//! - Numbers are printed as they were written whenever the tape could not
//!   hold them exactly: `prescan` finds integers outside i64/u64 and
//!   floats that f64 would round (more than 15 significant digits),
//!   overflow or flush to zero, keeps their source text and overwrites them
//!   in the parse buffer with a same-length `0`/`0.0` (simd-json rejects
//!   integers past 64 bits); the renderer prints the kept text in their
//!   place. Samples are kept as source text and re-parsed this way, so
//!   they show every number as written.
//! - `assemble` never returns more characters (Unicode scalar values)
//!   than the budget when the budget is at least the contract's minimum
//!   (1,000): it degrades the key inventory, then the optional header
//!   fields, then the samples, measuring the final string each time.
//! - Every output is re-parsed by `check_output` before it is returned;
//!   strings are escaped strictly (control characters, DEL, C1 and
//!   bidirectional controls as `\uXXXX`, so the envelope is also safe on a
//!   terminal), and no NaN or infinity can be printed: a number past
//!   f64's range is shown as a string of its exact text.
//! - Memory: the inventory tracks at most [`TOP_KEY_CAP`] distinct
//!   top-level keys and [`NESTED_KEY_CAP`] nested paths, to
//!   [`MAX_KEY_DEPTH`] keys deep (the header says when a cap was hit);
//!   samples are kept up to `SAMPLE_STORE_BYTES`, so streaming folds stay
//!   bounded.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use simd_json::tape::{Node, Tape};
use simd_json::StaticNode;

use crate::text::utf8::{count_chars, count_lead_bytes};

/// Deepest nesting `--format json` folds; deeper documents fall back to
/// the text envelope with this limit as the reason. The walks here do not
/// need it (none recurses); it keeps a pathological document from
/// producing a sample that is nothing but brackets.
pub const MAX_DEPTH: usize = 1024;
/// Distinct top-level keys tracked by the inventory.
pub const TOP_KEY_CAP: usize = 1000;
/// Distinct nested key paths tracked by the inventory (separate from the
/// top-level cap, so maps keyed by ids cannot crowd out a rare top-level
/// key).
pub const NESTED_KEY_CAP: usize = 1000;
/// Nested key paths are tracked down to this many keys (`a.b.c.d`).
pub const MAX_KEY_DEPTH: u8 = 4;
/// Duplicate-key and invalid-line examples kept for the header.
pub const EXAMPLES: usize = 5;
/// Smallest string cap tried when shortening a sample.
const MIN_STRING_CAP: usize = 12;
/// Longest key name shown in an inventory path before it is shortened.
const KEY_NAME_CHARS: usize = 80;
/// Longest path shown in the header before it is shortened.
pub const PATH_CHARS: usize = 200;

// ---------------------------------------------------------------------------
// Hashing: keys come from the input, one lookup per key per item, so the
// std SipHash would dominate the NDJSON hot path. The inventory caps bound
// the damage a crafted set of colliding keys could do.

/// FxHash (the rustc hasher): fast, not DoS-resistant (see above).
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let r = chunks.remainder();
        if !r.is_empty() {
            let mut w = [0u8; 8];
            w[..r.len()].copy_from_slice(r);
            self.add(u64::from_le_bytes(w));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

// ---------------------------------------------------------------------------
// Small helpers.

/// Characters (Unicode scalar values) of a `str`.
#[inline]
pub(crate) fn str_chars(s: &str) -> usize {
    count_lead_bytes(s.as_bytes()) as usize
}

/// JSON whitespace.
#[inline]
pub(crate) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// `bytes` without leading and trailing JSON whitespace.
pub(crate) fn trim_ws(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|&b| !is_ws(b)).unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|&b| !is_ws(b)).map_or(start, |p| p + 1);
    &bytes[start..end.max(start)]
}

pub(crate) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Key equality without a library call for the usual short keys.
#[inline]
fn same_key(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if a.len() > 16 {
        return a == b;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Nodes a value occupies on the tape, itself included.
#[inline]
pub(crate) fn extent(nodes: &[Node<'_>], i: usize) -> usize {
    match nodes.get(i) {
        Some(Node::Object { count, .. }) | Some(Node::Array { count, .. }) => count + 1,
        _ => 1,
    }
}

// One shortening rule and one cut marker for all of outbox (text::shorten).
pub(crate) use crate::text::shorten::{shorten_text, split_keep};

fn cut_marker(cut: usize) -> String {
    crate::text::shorten::cut_marker(cut as u64)
}

/// JSON-escapes `s`, handing the pieces to `sink`. Control characters
/// (C0, DEL and C1, which include terminal escapes such as U+009B) are
/// written as `\u00XX` so the envelope is safe to print to a terminal.
fn escape_into<E>(s: &str, mut sink: impl FnMut(&str) -> Result<(), E>) -> Result<(), E> {
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    let mut ubuf = [0u8; 6];
    while i < bytes.len() {
        let b = bytes[i];
        let (esc, width): (&str, usize) = match b {
            b'"' => ("\\\"", 1),
            b'\\' => ("\\\\", 1),
            b'\n' => ("\\n", 1),
            b'\r' => ("\\r", 1),
            b'\t' => ("\\t", 1),
            0x08 => ("\\b", 1),
            0x0c => ("\\f", 1),
            0x00..=0x1f | 0x7f => (u_escape(&mut ubuf, u32::from(b)), 1),
            0xc2 if matches!(bytes.get(i + 1), Some(0x80..=0x9f)) => {
                let c = u32::from(bytes[i + 1]);
                (u_escape(&mut ubuf, c), 2)
            }
            // Bidirectional controls and line separators (U+061C, U+200E/F,
            // U+2028-202E, U+2066-2069) can reorder or break what a
            // terminal shows: escaped like the text envelope does.
            0xd8 if bytes.get(i + 1) == Some(&0x9c) => (u_escape(&mut ubuf, 0x061c), 2),
            0xe2 if matches!(
                (bytes.get(i + 1), bytes.get(i + 2)),
                (Some(0x80), Some(0x8e | 0x8f | 0xa8..=0xae)) | (Some(0x81), Some(0xa6..=0xa9))
            ) =>
            {
                let c = 0x2000 | (u32::from(bytes[i + 1] & 0x3f) << 6) | u32::from(bytes[i + 2] & 0x3f);
                (u_escape(&mut ubuf, c), 3)
            }
            _ => {
                i += 1;
                continue;
            }
        };
        sink(&s[start..i])?;
        sink(esc)?;
        i += width;
        start = i;
    }
    sink(&s[start..])
}

fn u_escape(buf: &mut [u8; 6], c: u32) -> &str {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let h = |shift: u32| HEX[((c >> shift) & 0xf) as usize];
    *buf = [b'\\', b'u', h(12), h(8), h(4), h(0)];
    // All bytes are ASCII.
    std::str::from_utf8(buf).unwrap_or("\\u0000")
}

/// `s` as a JSON string literal.
pub(crate) fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    let _ = escape_into::<()>(s, |p| {
        out.push_str(p);
        Ok(())
    });
    out.push('"');
    out
}

// ---------------------------------------------------------------------------
// Numbers the tape cannot hold exactly.

/// A number whose source text is kept because the tape would lose it.
#[derive(Debug, Clone)]
pub(crate) struct SpecialNumber {
    /// Position among all number tokens of the value (0-based).
    pub ordinal: u64,
    pub text: Box<str>,
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// High bit set in each byte of `w` equal to `c`. Borrows can only mark
/// bytes above a true match, so the lowest mark is exact.
#[inline]
fn bytes_equal(w: u64, c: u8) -> u64 {
    let x = w ^ (LO * u64::from(c));
    x.wrapping_sub(LO) & !x & HI
}

/// Skips the string starting at `buf[i] == b'"'`; returns the index after
/// its closing quote (or the end of `buf` when it is unterminated).
#[inline]
pub(crate) fn skip_string(buf: &[u8], mut i: usize) -> usize {
    let n = buf.len();
    i += 1;
    loop {
        // Most strings are short: test 8 bytes at a time for `"` or `\`
        // (SWAR), and hand what is left of a long one to memchr.
        let swar_end = i.saturating_add(64);
        while i + 8 <= n && i < swar_end {
            let mut w = [0u8; 8];
            w.copy_from_slice(&buf[i..i + 8]);
            let w = u64::from_le_bytes(w);
            let m = bytes_equal(w, b'"') | bytes_equal(w, b'\\');
            if m == 0 {
                i += 8;
                continue;
            }
            i += (m.trailing_zeros() / 8) as usize;
            if buf[i] == b'"' {
                return i + 1;
            }
            i += 2;
        }
        if i >= n {
            return n;
        }
        if i + 8 > n {
            while i < n {
                match buf[i] {
                    b'"' => return i + 1,
                    b'\\' => i += 2,
                    _ => i += 1,
                }
            }
            return n;
        }
        match memchr::memchr2(b'"', b'\\', &buf[i..]) {
            Some(k) if buf[i + k] == b'\\' => i += k + 2,
            Some(k) => return i + k + 1,
            None => return n,
        }
    }
}

/// Bytes the structure scans stop at: quote, brackets, comma.
pub(crate) static STRUCTURAL: [bool; 256] = {
    let mut t = [false; 256];
    t[b'"' as usize] = true;
    t[b'[' as usize] = true;
    t[b']' as usize] = true;
    t[b'{' as usize] = true;
    t[b'}' as usize] = true;
    t[b',' as usize] = true;
    t
};

/// One pass over the bytes, skipping strings: finds numbers the tape
/// cannot hold exactly, keeps their text and neutralises them in `buf`
/// with a same-length `0` (integers) or `0.0` (floats) so simd-json
/// accepts them. Malformed number tokens are left for the parser to
/// reject. Only runs when the fast path failed on a number, on samples,
/// and on the output check.
pub(crate) fn prescan(buf: &mut [u8]) -> Vec<SpecialNumber> {
    let n = buf.len();
    let mut specials = Vec::new();
    let mut ordinal = 0u64;
    let mut i = 0;
    while i < n {
        match buf[i] {
            b'"' => i = skip_string(buf, i),
            b'-' | b'0'..=b'9' => {
                let start = i;
                i += 1;
                while i < n && matches!(buf[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') {
                    i += 1;
                }
                let tok = &mut buf[start..i];
                if let Some(float) = special_kind(tok) {
                    let text = String::from_utf8_lossy(tok).into();
                    specials.push(SpecialNumber { ordinal, text });
                    neutralise(tok, float);
                }
                ordinal += 1;
            }
            _ => i += 1,
        }
    }
    specials
}

/// JSON number grammar: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn valid_number(t: &[u8]) -> bool {
    let mut i = 0;
    let digits = |i: &mut usize| {
        let s = *i;
        while *i < t.len() && t[*i].is_ascii_digit() {
            *i += 1;
        }
        *i > s
    };
    if t.first() == Some(&b'-') {
        i += 1;
    }
    match t.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return false,
    }
    if t.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i) {
            return false;
        }
    }
    if matches!(t.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(t.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(&mut i) {
            return false;
        }
    }
    i == t.len()
}

/// `Some(is_float)` when the tape cannot hold `t` exactly.
fn special_kind(t: &[u8]) -> Option<bool> {
    let float = t.iter().any(|b| matches!(b, b'.' | b'e' | b'E'));
    if !float {
        let digits = t.len() - usize::from(t.first() == Some(&b'-'));
        if digits <= 18 || !valid_number(t) {
            return None;
        }
        let s = std::str::from_utf8(t).ok()?;
        let fits = if t[0] == b'-' { s.parse::<i64>().is_ok() } else { s.parse::<u64>().is_ok() };
        return (!fits).then_some(false);
    }
    let mantissa_end = t.iter().position(|b| matches!(b, b'e' | b'E')).unwrap_or(t.len());
    let mantissa = &t[..mantissa_end];
    let significant = mantissa.iter().filter(|b| b.is_ascii_digit()).skip_while(|&&b| b == b'0').count();
    let has_exp = mantissa_end < t.len();
    if significant <= 15 && !has_exp {
        return None;
    }
    if !valid_number(t) {
        return None;
    }
    if significant > 15 {
        return Some(true);
    }
    let v: f64 = std::str::from_utf8(t).ok()?.parse().ok()?;
    let underflow = v == 0.0 && mantissa.iter().any(|b| matches!(b, b'1'..=b'9'));
    (!v.is_finite() || underflow).then_some(true)
}

fn neutralise(tok: &mut [u8], float: bool) {
    tok.fill(b' ');
    tok[0] = b'0';
    if float && tok.len() >= 3 {
        tok[1] = b'.';
        tok[2] = b'0';
    }
}

/// Source text of special numbers, by tape node index.
#[derive(Debug, Default)]
pub(crate) struct Specials {
    by_node: Vec<(usize, Box<str>)>,
}

impl Specials {
    /// Matches the pre-scan's number ordinals with the tape's number
    /// nodes (both are in document order).
    pub(crate) fn build(nodes: &[Node<'_>], found: Vec<SpecialNumber>) -> Specials {
        let mut by_node = Vec::with_capacity(found.len());
        if found.is_empty() {
            return Specials { by_node };
        }
        let mut found = found.into_iter().peekable();
        let mut ordinal = 0u64;
        for (idx, node) in nodes.iter().enumerate() {
            if let Node::Static(StaticNode::I64(_) | StaticNode::U64(_) | StaticNode::F64(_)) = node {
                while let Some(s) = found.next_if(|s| s.ordinal <= ordinal) {
                    if s.ordinal == ordinal {
                        by_node.push((idx, s.text));
                    }
                }
                ordinal += 1;
            }
        }
        Specials { by_node }
    }

    fn get(&self, node: usize) -> Option<&str> {
        if self.by_node.is_empty() {
            return None;
        }
        self.by_node.binary_search_by_key(&node, |(i, _)| *i).ok().map(|k| &*self.by_node[k].1)
    }
}

// ---------------------------------------------------------------------------
// Value types.

pub(crate) const TYPE_NAMES: [&str; 7] = ["null", "boolean", "integer", "number", "string", "array", "object"];

#[inline]
pub(crate) fn type_of(node: &Node<'_>) -> usize {
    match node {
        Node::Static(StaticNode::Null) => 0,
        Node::Static(StaticNode::Bool(_)) => 1,
        Node::Static(StaticNode::F64(_)) => 3,
        Node::Static(_) => 2,
        Node::String(_) => 4,
        Node::Array { .. } => 5,
        Node::Object { .. } => 6,
    }
}

/// `{"object": 5000, "null": 1}`: the non-zero counts.
pub(crate) fn type_counts_j(counts: &[u64; 7]) -> J {
    J::Obj(
        counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(t, &c)| (TYPE_NAMES[t].to_string(), J::Int(i128::from(c))))
            .collect(),
    )
}

// ---------------------------------------------------------------------------
// Key inventory.

const ROOT: u32 = 0;
const NONE: u32 = u32::MAX;
/// Member positions remembered per object path (see `Entry::order`).
const ORDER_CAP: usize = 256;

#[derive(Debug, Clone)]
struct Entry {
    parent: u32,
    name: Box<str>,
    /// The step into an array's elements (`[]`), not a key.
    hop: bool,
    /// Keys on the path (hops not counted).
    depth: u8,
    /// Items carrying this path at least once.
    items: u64,
    last_item: u64,
    /// Serial of the last object this key was seen in (duplicate check).
    seen_in: u64,
    /// Occurrences by value type.
    types: [u64; 7],
    children: FxMap<Box<str>, u32>,
    hop_child: u32,
    /// Child ids by member position in the last object seen here. Records
    /// of one stream mostly share a key order, so a string compare with
    /// the cached child replaces a hash lookup.
    order: Vec<u32>,
}

impl Entry {
    fn new(parent: u32, name: &str, hop: bool, depth: u8) -> Entry {
        Entry {
            parent,
            name: name.into(),
            hop,
            depth,
            items: 0,
            last_item: 0,
            seen_in: 0,
            types: [0; 7],
            children: FxMap::default(),
            hop_child: NONE,
            order: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Frame {
    entry: u32,
    remaining: usize,
    object: bool,
    /// Object frames: next member position, serial, tape index, and
    /// whether a key went untracked (then its duplicates need a check).
    pos: usize,
    serial: u64,
    node: usize,
    unchecked: bool,
}

/// Which keys an item carries, counted over every item: top-level keys and
/// nested paths (`user.name`, `tags[].id`), with value types. Finds
/// duplicate keys on the way.
#[derive(Debug, Clone)]
pub(crate) struct Inventory {
    entries: Vec<Entry>,
    top_keys: usize,
    nested_keys: usize,
    untracked_top: u64,
    untracked_nested: u64,
    pub items: u64,
    pub item_types: [u64; 7],
    serial: u64,
    stack: Vec<Frame>,
    scratch: Vec<usize>,
}

impl Default for Inventory {
    fn default() -> Self {
        Inventory {
            entries: vec![Entry::new(NONE, "", false, 0)],
            top_keys: 0,
            nested_keys: 0,
            untracked_top: 0,
            untracked_nested: 0,
            items: 0,
            item_types: [0; 7],
            serial: 0,
            stack: Vec::new(),
            scratch: Vec::new(),
        }
    }
}

/// How much of the inventory the header shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InvLevel {
    /// Every key with its item count and type counts.
    Full,
    /// Every key with its item count only.
    Counts,
    /// The first `n` keys by priority (top-level first), counts only.
    Top(usize),
}

impl Inventory {
    fn frame(&mut self, entry: u32, remaining: usize, object: bool, node: usize) -> Frame {
        self.serial += 1;
        Frame { entry, remaining, object, pos: 0, serial: self.serial, node, unchecked: false }
    }

    /// Adds one item: `nodes` starts at the item's root node and holds its
    /// whole extent. Calls `dup(object_node, key)` for each repeated key
    /// of each object in the item (each repeat once).
    pub(crate) fn add_item(&mut self, nodes: &[Node<'_>], dup: &mut dyn FnMut(usize, &str)) {
        let Some(root) = nodes.first() else { return };
        self.items += 1;
        let item = self.items;
        self.item_types[type_of(root)] += 1;
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        match *root {
            Node::Object { len, .. } => {
                let f = self.frame(ROOT, len, true, 0);
                stack.push(f);
            }
            Node::Array { len, .. } => {
                let hop = self.hop(ROOT);
                if hop == NONE {
                    self.skipped_duplicates(nodes, 0, dup);
                } else {
                    let f = self.frame(hop, len, false, 0);
                    stack.push(f);
                }
            }
            _ => {}
        }
        let mut i = 1;
        while let Some(top) = stack.last_mut() {
            if top.remaining == 0 {
                let done = *top;
                stack.pop();
                if done.unchecked {
                    self.untracked_duplicates(nodes, done, dup);
                }
                continue;
            }
            top.remaining -= 1;
            let entry = if top.object {
                let Some(Node::String(key)) = nodes.get(i) else { break }; // malformed: stop
                let pos = top.pos;
                top.pos += 1;
                let (parent, serial, node) = (top.entry, top.serial, top.node);
                i += 1;
                let e = self.child_at(parent, pos, key);
                if e == NONE {
                    if let Some(t) = stack.last_mut() {
                        t.unchecked = true;
                    }
                } else {
                    let en = &mut self.entries[e as usize];
                    if en.seen_in == serial {
                        dup(node, key);
                    } else {
                        en.seen_in = serial;
                    }
                }
                e
            } else {
                top.entry
            };
            let Some(value) = nodes.get(i) else { break };
            if entry == NONE {
                self.skipped_duplicates(nodes, i, dup);
                i += extent(nodes, i);
                continue;
            }
            let e = &mut self.entries[entry as usize];
            e.types[type_of(value)] += 1;
            if e.last_item != item {
                e.last_item = item;
                e.items += 1;
            }
            match *value {
                Node::Object { len, .. } if self.entries[entry as usize].depth < MAX_KEY_DEPTH => {
                    let f = self.frame(entry, len, true, i);
                    stack.push(f);
                    i += 1;
                }
                Node::Array { len, .. } => {
                    let hop = self.hop(entry);
                    if hop == NONE {
                        self.skipped_duplicates(nodes, i, dup);
                        i += extent(nodes, i);
                    } else {
                        let f = self.frame(hop, len, false, i);
                        stack.push(f);
                        i += 1;
                    }
                }
                Node::Object { .. } => {
                    self.skipped_duplicates(nodes, i, dup);
                    i += extent(nodes, i);
                }
                _ => i += 1,
            }
        }
        self.stack = stack;
    }

    /// Duplicates inside a subtree the inventory does not walk.
    fn skipped_duplicates(&mut self, nodes: &[Node<'_>], at: usize, dup: &mut dyn FnMut(usize, &str)) {
        let end = (at + extent(nodes, at)).min(nodes.len());
        scan_duplicates(&nodes[at..end], &mut self.scratch, |obj, key| dup(at + obj, key));
    }

    /// Duplicates among an object's untracked keys (tracked keys were
    /// checked as they came: a key is tracked in every occurrence or none,
    /// since the caps never loosen).
    fn untracked_duplicates(&mut self, nodes: &[Node<'_>], f: Frame, dup: &mut dyn FnMut(usize, &str)) {
        let mut scratch = std::mem::take(&mut self.scratch);
        let children = &self.entries[f.entry as usize].children;
        object_duplicates(nodes, f.node, &mut scratch, |obj, key| {
            if !children.contains_key(key) {
                dup(obj, key);
            }
        });
        self.scratch = scratch;
    }

    /// The entry for the key at member position `pos` of an object under
    /// `parent`: the cached one when the key matches, else a lookup.
    #[inline]
    fn child_at(&mut self, parent: u32, pos: usize, key: &str) -> u32 {
        if let Some(&c) = self.entries[parent as usize].order.get(pos) {
            if c != NONE && same_key(self.entries[c as usize].name.as_bytes(), key.as_bytes()) {
                return c;
            }
        }
        let c = self.child(parent, key);
        if c != NONE && pos < ORDER_CAP {
            let order = &mut self.entries[parent as usize].order;
            if order.len() <= pos {
                order.resize(pos + 1, NONE);
            }
            order[pos] = c;
        }
        c
    }

    /// The entry for `key` under `parent`, created when new and allowed by
    /// the caps; `NONE` when untracked.
    fn child(&mut self, parent: u32, key: &str) -> u32 {
        let p = &self.entries[parent as usize];
        if let Some(&id) = p.children.get(key) {
            return id;
        }
        let depth = p.depth + 1;
        if depth > MAX_KEY_DEPTH {
            return NONE;
        }
        if parent == ROOT {
            if self.top_keys >= TOP_KEY_CAP {
                self.untracked_top += 1;
                return NONE;
            }
            self.top_keys += 1;
        } else {
            if self.nested_keys >= NESTED_KEY_CAP {
                self.untracked_nested += 1;
                return NONE;
            }
            self.nested_keys += 1;
        }
        let id = self.entries.len() as u32;
        self.entries.push(Entry::new(parent, key, false, depth));
        self.entries[parent as usize].children.insert(key.into(), id);
        id
    }

    /// The `[]` step under `parent` (counts against the nested cap).
    fn hop(&mut self, parent: u32) -> u32 {
        let p = &self.entries[parent as usize];
        if p.hop_child != NONE {
            return p.hop_child;
        }
        if p.depth >= MAX_KEY_DEPTH || self.nested_keys >= NESTED_KEY_CAP {
            return NONE;
        }
        let depth = p.depth;
        self.nested_keys += 1;
        let id = self.entries.len() as u32;
        self.entries.push(Entry::new(parent, "[]", true, depth));
        self.entries[parent as usize].hop_child = id;
        id
    }

    /// Distinct key paths tracked (the `[]` steps are not keys).
    pub(crate) fn key_count(&self) -> usize {
        self.entries.iter().skip(1).filter(|e| !e.hop).count()
    }

    /// A statement when a cap stopped tracking, else `None`.
    pub(crate) fn capped_note(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.untracked_top > 0 {
            parts.push(format!(
                "more than {TOP_KEY_CAP} distinct top-level keys: {} occurrences of further keys were not tracked",
                self.untracked_top
            ));
        }
        if self.untracked_nested > 0 {
            parts.push(format!(
                "more than {NESTED_KEY_CAP} distinct nested paths: {} occurrences of further nested keys were not tracked",
                self.untracked_nested
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    fn path(&self, id: u32) -> String {
        let mut chain = Vec::new();
        let mut cur = id;
        while cur != ROOT && cur != NONE {
            let e = &self.entries[cur as usize];
            chain.push(cur);
            cur = e.parent;
        }
        let mut out = String::new();
        for &c in chain.iter().rev() {
            let e = &self.entries[c as usize];
            if e.hop {
                out.push_str("[]");
            } else {
                push_key_segment(&mut out, &e.name);
            }
        }
        shorten_text(&out, PATH_CHARS)
    }

    /// The `keys` object, one key per line, and how many keys it shows.
    pub(crate) fn render_keys(&self, level: InvLevel) -> (String, usize) {
        let ids: Vec<u32> = (1..self.entries.len() as u32).filter(|&i| !self.entries[i as usize].hop).collect();
        let keep: Vec<u32> = match level {
            InvLevel::Full | InvLevel::Counts => ids,
            InvLevel::Top(n) => {
                // Top-level keys first, then nested paths, each in order of
                // first appearance; shown in order of first appearance.
                let mut chosen: Vec<u32> = ids
                    .iter()
                    .copied()
                    .filter(|&i| self.entries[i as usize].depth == 1)
                    .chain(ids.iter().copied().filter(|&i| self.entries[i as usize].depth > 1))
                    .take(n)
                    .collect();
                chosen.sort_unstable();
                chosen
            }
        };
        if keep.is_empty() {
            return ("{}".to_string(), 0);
        }
        let mut out = String::from("{");
        let mut seen: HashSet<String> = HashSet::new();
        for (k, &id) in keep.iter().enumerate() {
            let e = &self.entries[id as usize];
            let mut path = self.path(id);
            // Shortened names could collide; an object's keys must not.
            let mut n = 2;
            while seen.contains(&path) {
                path = format!("{} (#{n})", self.path(id));
                n += 1;
            }
            out.push_str(if k == 0 { "\n" } else { ",\n" });
            out.push_str(&json_string(&path));
            out.push(':');
            match level {
                InvLevel::Full => {
                    out.push_str(&format!("{{\"count\":{},\"types\":", e.items));
                    write_j(&mut out, &type_counts_j(&e.types));
                    out.push('}');
                }
                _ => out.push_str(&e.items.to_string()),
            }
            seen.insert(path);
        }
        out.push_str("\n}");
        (out, keep.len())
    }
}

// ---------------------------------------------------------------------------
// Duplicate keys and paths.

/// Calls `found(object_node, key)` for every repeated key of every object
/// in `nodes` (each repeat once). Linear: each object's members are
/// checked pairwise when few, by sorting when many.
pub(crate) fn scan_duplicates<'i>(nodes: &[Node<'i>], scratch: &mut Vec<usize>, mut found: impl FnMut(usize, &'i str)) {
    for (p, node) in nodes.iter().enumerate() {
        if matches!(node, Node::Object { len, .. } if *len >= 2) {
            object_duplicates(nodes, p, scratch, &mut found);
        }
    }
}

/// The repeated keys of the one object at `p`.
pub(crate) fn object_duplicates<'i>(
    nodes: &[Node<'i>],
    p: usize,
    scratch: &mut Vec<usize>,
    mut found: impl FnMut(usize, &'i str),
) {
    let Some(Node::Object { len, .. }) = nodes.get(p) else { return };
    scratch.clear();
    let mut j = p + 1;
    for _ in 0..*len {
        if j >= nodes.len() {
            break;
        }
        scratch.push(j);
        j += 1 + extent(nodes, j + 1);
    }
    let key = |k: usize| match nodes.get(k) {
        Some(Node::String(s)) => *s,
        _ => "",
    };
    if scratch.len() <= 8 {
        for a in 1..scratch.len() {
            let ka = key(scratch[a]);
            if scratch[..a].iter().any(|&b| key(b) == ka) {
                found(p, ka);
            }
        }
    } else {
        scratch.sort_by(|&a, &b| key(a).cmp(key(b)).then(a.cmp(&b)));
        for w in 1..scratch.len() {
            if key(scratch[w]) == key(scratch[w - 1]) {
                found(p, key(scratch[w]));
            }
        }
    }
}

/// `.key`, or `["odd key"]` when the key is empty or holds characters
/// that would make a path ambiguous.
pub(crate) fn key_segment(name: &str) -> String {
    let name = shorten_text(name, KEY_NAME_CHARS);
    let simple = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '$' | '@'));
    if simple {
        format!(".{name}")
    } else {
        format!("[{}]", json_string(&name))
    }
}

/// Appends one key to an inventory path (no leading dot at the start).
fn push_key_segment(out: &mut String, name: &str) {
    let seg = key_segment(name);
    out.push_str(if out.is_empty() { seg.strip_prefix('.').unwrap_or(&seg) } else { &seg });
}

/// `root` followed by the path of the node at `target`, e.g.
/// `$.data.items[3].user`; found by descending from `nodes[0]`
/// (iteratively; used for a handful of reports).
pub(crate) fn path_to(nodes: &[Node<'_>], target: usize, root: &str) -> String {
    let mut out = String::from(root);
    let mut cur = 0;
    while cur < target {
        let (len, object) = match nodes.get(cur) {
            Some(Node::Object { len, .. }) => (*len, true),
            Some(Node::Array { len, .. }) => (*len, false),
            _ => break,
        };
        let mut j = cur + 1;
        let mut descended = false;
        for k in 0..len {
            let v = if object { j + 1 } else { j };
            let end = v + extent(nodes, v);
            if target >= j && target < end {
                match nodes.get(j) {
                    Some(Node::String(name)) if object => out.push_str(&key_segment(name)),
                    _ => out.push_str(&format!("[{k}]")),
                }
                cur = v;
                descended = true;
                break;
            }
            j = end;
        }
        if !descended {
            break;
        }
    }
    shorten_text(&out, PATH_CHARS)
}

/// Duplicate keys found so far: a count and the first few paths.
#[derive(Debug, Clone, Default)]
pub(crate) struct Dups {
    pub count: u64,
    pub first: Vec<String>,
}

impl Dups {
    /// Records a repeat of `key` in the object at `obj`; `root` names the
    /// value `nodes` starts at (built only for the examples kept).
    pub(crate) fn report(&mut self, nodes: &[Node<'_>], obj: usize, key: &str, root: impl FnOnce() -> String) {
        self.count += 1;
        if self.first.len() < EXAMPLES {
            let p = format!("{}{}", path_to(nodes, obj, &root()), key_segment(key));
            self.first.push(shorten_text(&p, PATH_CHARS));
        }
    }

    /// The header field, when there is anything to say.
    pub(crate) fn field(&self) -> Option<Field> {
        (self.count > 0).then(|| {
            let first = self.first.iter().map(|s| J::Str(s.clone())).collect();
            let v = J::Obj(vec![("count".into(), J::int(self.count)), ("first".into(), J::Arr(first))]);
            Field::new("duplicate_keys", v, Class::Important)
        })
    }
}

// ---------------------------------------------------------------------------
// Parsing one value with reused buffers.

/// Which way a value is being parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attempt {
    /// As written (the fast path).
    Plain,
    /// With numbers past 64 bits neutralised (simd-json rejects them).
    Numbers,
    /// With invalid UTF-8 read as U+FFFD, numbers neutralised.
    Repaired,
}

/// A parsed value, lent to the caller's closure.
pub(crate) struct Parsed<'a, 'n> {
    pub nodes: &'a [Node<'n>],
    pub specials: &'a Specials,
    /// The text that was parsed: the input, or its UTF-8 repair.
    pub source: &'a [u8],
    pub repaired: bool,
}

/// Why a value did not parse: the byte offset in the text and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError {
    pub index: usize,
    pub message: String,
}

impl ParseError {
    fn simd(e: &simd_json::Error) -> ParseError {
        ParseError { index: e.index(), message: simd_message(e) }
    }
}

/// simd-json 0.17 hands a number with 19 or more digits to a slow path
/// that skips its check of what follows, so `[1234567890123456789x]` and
/// `1.12345678901234567890.` parse. Stage 1 marks where every scalar
/// starts; this re-checks the long numbers among them (grammar, then a
/// delimiter), so nothing invalid gets through. Returns the offending
/// offset.
fn long_number_garbage(src: &[u8], structurals: &[u32]) -> Option<usize> {
    for &s in structurals {
        let i = s as usize;
        if !matches!(src.get(i), Some(b'-' | b'0'..=b'9')) {
            continue;
        }
        let mut j = i + 1;
        while j < src.len() && matches!(src[j], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') {
            j += 1;
        }
        if j - i < 18 {
            continue;
        }
        if !valid_number(&src[i..j]) {
            return Some(i);
        }
        if j < src.len() && !matches!(src[j], b' ' | b'\t' | b'\n' | b'\r' | b',' | b']' | b'}') {
            return Some(j);
        }
    }
    None
}

/// simd-json parses in place, so each value is copied into one scratch
/// buffer and parsed into one tape, both reused: after warm-up a value
/// costs no allocation.
pub(crate) struct ValueParser {
    scratch: Vec<u8>,
    repaired: Vec<u8>,
    buffers: simd_json::Buffers,
    tape: Option<Tape<'static>>,
}

impl ValueParser {
    pub(crate) fn new() -> ValueParser {
        ValueParser { scratch: Vec::new(), repaired: Vec::new(), buffers: simd_json::Buffers::default(), tape: None }
    }

    /// Parses `text` (one JSON value) and hands it to `f`. A number past
    /// 64 bits makes it retry with `prescan`; with `repair`, invalid
    /// UTF-8 makes it retry with U+FFFD in its place.
    pub(crate) fn parse<R>(
        &mut self,
        text: &[u8],
        repair: bool,
        f: impl FnOnce(Parsed<'_, '_>) -> R,
    ) -> Result<R, ParseError> {
        let mut attempt = Attempt::Plain;
        loop {
            self.scratch.clear();
            let found = match attempt {
                Attempt::Plain => {
                    self.scratch.extend_from_slice(text);
                    Vec::new()
                }
                Attempt::Numbers => {
                    self.scratch.extend_from_slice(text);
                    prescan(&mut self.scratch)
                }
                Attempt::Repaired => {
                    self.repaired.clear();
                    for chunk in text.utf8_chunks() {
                        self.repaired.extend_from_slice(chunk.valid().as_bytes());
                        if !chunk.invalid().is_empty() {
                            self.repaired.extend_from_slice("\u{FFFD}".as_bytes());
                        }
                    }
                    self.scratch.extend_from_slice(&self.repaired);
                    prescan(&mut self.scratch)
                }
            };
            let mut tape: Tape<'_> = self.tape.take().map_or_else(|| Tape(Vec::new()), Tape::reset);
            match simd_json::fill_tape(&mut self.scratch, &mut self.buffers, &mut tape) {
                Ok(()) => {
                    let repaired = attempt == Attempt::Repaired;
                    let source: &[u8] = if repaired { &self.repaired } else { text };
                    if let Some(index) = long_number_garbage(source, self.buffers.structural_indexes()) {
                        self.tape = Some(tape.reset());
                        return Err(ParseError { index, message: "invalid number".into() });
                    }
                    let specials = Specials::build(&tape.0, found);
                    let r = f(Parsed { nodes: &tape.0, specials: &specials, source, repaired });
                    self.tape = Some(tape.reset());
                    return Ok(r);
                }
                Err(e) => {
                    self.tape = Some(tape.reset());
                    attempt = match (attempt, e.error()) {
                        (Attempt::Plain, simd_json::ErrorType::InvalidNumber) => Attempt::Numbers,
                        (Attempt::Plain | Attempt::Numbers, simd_json::ErrorType::InvalidUtf8) if repair => {
                            Attempt::Repaired
                        }
                        _ => return Err(ParseError::simd(&e)),
                    };
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Samples kept as text.

/// A sample record longer than this is kept pre-shortened.
pub const SAMPLE_RAW_BYTES: usize = 1 << 20;
/// Characters a pre-shortened sample keeps (far above any usual budget).
const PRE_SHORTEN_CHARS: usize = 256 << 10;
/// Total source bytes kept for the first samples.
pub const SAMPLE_STORE_BYTES: usize = 16 << 20;

/// A sample kept for the envelope: valid JSON text (the value as written,
/// so numbers keep their digits, or a pre-shortened rendering of a huge
/// one) and where it came from (NDJSON line, or item index).
#[derive(Debug, Clone, Default)]
pub(crate) struct Stored {
    pub at: u64,
    pub text: Vec<u8>,
}

impl Stored {
    /// Keeps `p` in `self.text` (reusing its allocation).
    pub(crate) fn keep(&mut self, at: u64, p: &Parsed<'_, '_>) {
        self.at = at;
        self.text.clear();
        if p.source.len() <= SAMPLE_RAW_BYTES {
            self.text.extend_from_slice(p.source);
            return;
        }
        let item = Item { nodes: p.nodes, base: 0, specials: p.specials };
        match render_fitting(&item, PRE_SHORTEN_CHARS) {
            Some(r) => self.text.extend_from_slice(r.text.as_bytes()),
            None => self.text.extend_from_slice(b"null"),
        }
    }
}

/// Stored samples parsed back into tapes for rendering.
pub(crate) struct Reparsed<'a> {
    at: Vec<u64>,
    tapes: Vec<Option<Tape<'a>>>,
    specials: Vec<Specials>,
}

impl<'a> Reparsed<'a> {
    /// `bufs` are copies of the stored texts (parsing rewrites them).
    pub(crate) fn new(stored: &[&Stored], bufs: &'a mut [Vec<u8>]) -> Reparsed<'a> {
        let found: Vec<Vec<SpecialNumber>> = bufs.iter_mut().map(|b| prescan(b)).collect();
        let tapes: Vec<Option<Tape<'a>>> = bufs.iter_mut().map(|b| simd_json::to_tape(b).ok()).collect();
        let specials = tapes
            .iter()
            .zip(found)
            .map(|(t, f)| t.as_ref().map_or_else(Specials::default, |t| Specials::build(&t.0, f)))
            .collect();
        Reparsed { at: stored.iter().map(|s| s.at).collect(), tapes, specials }
    }

    /// Sample `k`, unless its text failed to parse (it cannot: it was
    /// parsed once already, or rendered by this module).
    pub(crate) fn sample(&self, k: usize) -> Option<Sample<'_, 'a>> {
        let tape = self.tapes.get(k)?.as_ref()?;
        Some(Sample { item: Item { nodes: &tape.0, base: 0, specials: &self.specials[k] }, line: self.at[k] })
    }
}

// ---------------------------------------------------------------------------
// Bounded rendering of samples.

/// The output would pass its limit.
#[derive(Debug)]
pub(crate) struct Overflow;

/// A `String` that refuses to grow past `limit` characters.
pub(crate) struct Bounded {
    pub s: String,
    pub chars: usize,
    limit: usize,
}

impl Bounded {
    pub(crate) fn new(limit: usize) -> Bounded {
        Bounded { s: String::new(), chars: 0, limit }
    }

    #[inline]
    fn push(&mut self, t: &str) -> Result<(), Overflow> {
        let n = str_chars(t);
        if self.chars + n > self.limit {
            return Err(Overflow);
        }
        self.s.push_str(t);
        self.chars += n;
        Ok(())
    }

    fn push_escaped(&mut self, s: &str) -> Result<(), Overflow> {
        escape_into(s, |p| self.push(p))
    }
}

/// One value to sample: a tape slice starting at its root node.
#[derive(Clone, Copy)]
pub(crate) struct Item<'t, 'i> {
    pub nodes: &'t [Node<'i>],
    /// Index of `nodes[0]` in the whole tape (for [`Specials`]).
    pub base: usize,
    pub specials: &'t Specials,
}

/// Shortening applied to a rendering: strings longer than `string`
/// characters are cut in the middle; containers show at most `container`
/// elements.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Caps {
    pub string: Option<usize>,
    pub container: Option<usize>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CutStats {
    pub strings: u64,
    pub containers: u64,
}

impl CutStats {
    fn is_cut(&self) -> bool {
        self.strings + self.containers > 0
    }
}

struct RFrame {
    object: bool,
    remaining: usize,
    omitted: usize,
    end: usize,
    first: bool,
}

fn render_str(out: &mut Bounded, s: &str, cap: Option<usize>, stats: &mut CutStats) -> Result<(), Overflow> {
    out.push("\"")?;
    match cap {
        Some(cap) if s.len() > cap => {
            let n = str_chars(s);
            let marker = cut_marker(n.saturating_sub(cap));
            // Cut only when it makes the string shorter.
            if n > cap + str_chars(&marker) {
                let (head, tail) = split_keep(s, cap.div_ceil(2), cap / 2);
                out.push_escaped(head)?;
                out.push(&marker)?;
                out.push_escaped(tail)?;
                stats.strings += 1;
            } else {
                out.push_escaped(s)?;
            }
        }
        _ => out.push_escaped(s)?,
    }
    out.push("\"")
}

fn render_static(out: &mut Bounded, v: &StaticNode, special: Option<&str>) -> Result<(), Overflow> {
    if let Some(raw) = special {
        // Past f64's range (1e400) the literal is grammatical JSON, but
        // common parsers (serde_json, Go) reject the whole document and
        // JavaScript reads Infinity: such a number is shown as a string of
        // its exact text instead. Big integers and long floats stay numbers.
        let overflows = raw.parse::<f64>().is_ok_and(|v| v.is_infinite());
        if overflows {
            return out.push(&json_string(raw));
        }
        return out.push(raw);
    }
    #[allow(unreachable_patterns)]
    match *v {
        StaticNode::Null => out.push("null"),
        StaticNode::Bool(b) => out.push(if b { "true" } else { "false" }),
        StaticNode::I64(x) => out.push(&x.to_string()),
        StaticNode::U64(x) => out.push(&x.to_string()),
        // serde_json prints finite floats with ryu (shortest round trip);
        // a non-finite value cannot come from valid JSON, and is never
        // printed as NaN/inf.
        StaticNode::F64(x) if x.is_finite() => out.push(&serde_json::to_string(&x).unwrap_or_else(|_| "null".into())),
        _ => out.push("null"),
    }
}

/// Renders `item` compactly into `out`, applying `caps`; stops with
/// `Overflow` as soon as `out` would pass its limit, so a huge item costs
/// no more than the limit.
pub(crate) fn render(item: &Item<'_, '_>, caps: Caps, out: &mut Bounded) -> Result<CutStats, Overflow> {
    let nodes = item.nodes;
    let mut stats = CutStats::default();
    let mut stack: Vec<RFrame> = Vec::new();
    let mut i = 0;
    loop {
        let Some(node) = nodes.get(i) else { return Ok(stats) };
        match *node {
            Node::String(s) => {
                render_str(out, s, caps.string, &mut stats)?;
                i += 1;
            }
            Node::Static(ref v) => {
                render_static(out, v, item.specials.get(item.base + i))?;
                i += 1;
            }
            Node::Object { len, count } | Node::Array { len, count } => {
                let object = matches!(node, Node::Object { .. });
                out.push(if object { "{" } else { "[" })?;
                let shown = caps.container.map_or(len, |c| c.min(len));
                stack.push(RFrame { object, remaining: shown, omitted: len - shown, end: i + count + 1, first: true });
                i += 1;
            }
        }
        // Close finished containers and position on the next value.
        loop {
            let Some(top) = stack.last_mut() else { return Ok(stats) };
            if top.remaining == 0 {
                if top.omitted > 0 {
                    if !top.first {
                        out.push(",")?;
                    }
                    stats.containers += 1;
                    if top.object {
                        out.push(&format!("\"…\":\"[{} more keys cut]\"", top.omitted))?;
                    } else {
                        out.push(&format!("\"…[{} more items cut]\"", top.omitted))?;
                    }
                }
                out.push(if top.object { "}" } else { "]" })?;
                i = top.end;
                stack.pop();
                continue;
            }
            top.remaining -= 1;
            if !top.first {
                out.push(",")?;
            }
            top.first = false;
            if top.object {
                let key = match nodes.get(i) {
                    Some(Node::String(k)) => *k,
                    _ => "",
                };
                render_str(out, key, caps.string, &mut stats)?;
                out.push(":")?;
                i += 1;
            }
            break;
        }
    }
}

/// A rendered sample.
#[derive(Debug, Clone)]
pub(crate) struct Rendered {
    pub text: String,
    pub chars: usize,
    pub cuts: CutStats,
}

pub(crate) fn try_render(item: &Item<'_, '_>, caps: Caps, limit: usize) -> Option<Rendered> {
    let mut b = Bounded::new(limit);
    let cuts = render(item, caps, &mut b).ok()?;
    Some(Rendered { chars: b.chars, text: b.s, cuts })
}

/// Largest `x` in `lo..=hi` for which `f` succeeds (assuming larger `x`
/// only fails more), with its result.
fn search<R>(lo: usize, hi: usize, f: impl Fn(usize) -> Option<R>) -> Option<R> {
    let mut best = f(lo)?;
    let (mut lo, mut hi) = (lo, hi);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        match f(mid) {
            Some(r) => {
                best = r;
                lo = mid;
            }
            None => hi = mid - 1,
        }
    }
    Some(best)
}

/// `item` within `room` characters: whole when it fits; else with the
/// longest string cap that fits; else with strings at the minimum cap and
/// the most container elements that fit. `None` when nothing fits.
pub(crate) fn render_fitting(item: &Item<'_, '_>, room: usize) -> Option<Rendered> {
    if let Some(r) = try_render(item, Caps::default(), room) {
        return Some(r);
    }
    let strings = |cap| try_render(item, Caps { string: Some(cap), container: None }, room);
    if let Some(r) = search(MIN_STRING_CAP, room.max(MIN_STRING_CAP), strings) {
        return Some(r);
    }
    let containers = |cap| try_render(item, Caps { string: Some(MIN_STRING_CAP), container: Some(cap) }, room);
    search(0, room / 2, containers)
}

// ---------------------------------------------------------------------------
// Header values.

/// A tiny ordered JSON value for building the header.
#[derive(Debug, Clone)]
pub(crate) enum J {
    Null,
    Bool(bool),
    Int(i128),
    Str(String),
    /// Already valid JSON text.
    Raw(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    pub(crate) fn str(s: impl Into<String>) -> J {
        J::Str(s.into())
    }
    pub(crate) fn int(n: impl Into<i128>) -> J {
        J::Int(n.into())
    }
}

pub(crate) fn write_j(out: &mut String, j: &J) {
    match j {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Int(n) => out.push_str(&n.to_string()),
        J::Str(s) => out.push_str(&json_string(s)),
        J::Raw(r) => out.push_str(r),
        J::Arr(v) => {
            out.push('[');
            for (k, x) in v.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                write_j(out, x);
            }
            out.push(']');
        }
        J::Obj(v) => {
            out.push('{');
            for (k, (name, x)) in v.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                out.push_str(&json_string(name));
                out.push(':');
                write_j(out, x);
            }
            out.push('}');
        }
    }
}

/// How readily a header field is dropped when the budget is tight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Class {
    /// Always printed.
    Essential,
    /// Dropped only at the last resort.
    Important,
    /// Dropped as soon as the key inventory has to be cut.
    Optional,
}

pub(crate) struct Field {
    pub key: &'static str,
    pub value: J,
    pub class: Class,
}

impl Field {
    pub(crate) fn new(key: &'static str, value: J, class: Class) -> Field {
        Field { key, value, class }
    }
}

/// The header fields every fold starts with (label, id, sizes, store).
pub(crate) fn common_fields(ctx: &crate::json::FoldContext<'_>, strategy: &str) -> Vec<Field> {
    use Class::Essential as E;
    let facts = ctx.facts;
    let mut f = vec![
        Field::new("label", J::str(shorten_text(&facts.label, 64)), E),
        Field::new("id", J::str(shorten_text(&facts.id, 100)), E),
        Field::new("strategy", J::str(strategy), E),
    ];
    if let Some(d) = facts.detected {
        f.push(Field::new("detected", J::str(d), E));
    }
    f.push(Field::new("bytes", J::int(ctx.bytes), E));
    f.push(Field::new("chars", J::int(ctx.chars), E));
    match &facts.full_output {
        // Whole: a shortened path is a path that does not exist.
        Some(p) => f.push(Field::new("full_output", J::str(p), E)),
        None => {
            f.push(Field::new("full_output", J::Null, E));
            let why = facts.spill_error.as_deref().unwrap_or("the full output could not be stored");
            f.push(Field::new("spill_error", J::str(shorten_text(why, 200)), E));
        }
    }
    f.push(Field::new("budget", J::int(ctx.budget as u64), E));
    if let Some(c) = &facts.command {
        f.push(Field::new("command", J::str(facts.command_text().unwrap_or_default()), E));
        f.push(Field::new("exit_status", c.exit_status.map_or(J::Null, J::int), E));
        if let Some(sig) = facts.killed_by_signal_name() {
            f.push(Field::new("killed_by_signal", J::str(sig), E));
        }
        if let Some(ms) = c.duration_ms {
            f.push(Field::new("duration_ms", J::int(ms), E));
        }
        if c.timed_out {
            f.push(Field::new("timed_out", J::Bool(true), E));
        }
    }
    if let Some(s) = facts.stream {
        f.push(Field::new("stream", J::str(s.as_str()), E));
    }
    f
}

// ---------------------------------------------------------------------------
// Assembly under the budget.

/// One sample candidate, with where it came from.
pub(crate) struct Sample<'t, 'i> {
    pub item: Item<'t, 'i>,
    /// NDJSON: its line number (1-based).
    pub line: u64,
}

/// Everything a fold hands to `assemble`.
pub(crate) struct Envelope<'a, 't, 'i> {
    /// Header fields before the sample block, in output order.
    pub fields: Vec<Field>,
    pub inventory: &'a Inventory,
    /// Candidates in input order (at most `samples_max` are used).
    pub firsts: Vec<Sample<'t, 'i>>,
    /// NDJSON: the last record, reserved before the first ones.
    pub last: Option<Sample<'t, 'i>>,
    pub samples_max: usize,
    pub sample_policy: String,
    /// NDJSON: print `sample_lines`.
    pub with_lines: bool,
    pub budget: usize,
}

struct Picked {
    /// (line, rendered) in output order.
    shown: Vec<(u64, Rendered)>,
    cuts: CutStats,
    /// The first shown sample is uncut.
    whole_first: bool,
}

impl Envelope<'_, '_, '_> {
    fn pick(&self, room: usize) -> Picked {
        const SEP: usize = 2; // ",\n" (or the "\n" after "[")
        let mut left = room;
        let mut firsts = Vec::new();
        let mut last = None;
        if self.samples_max > 0 {
            if let Some(s) = &self.last {
                let share = if self.firsts.is_empty() { left } else { left / 2 };
                if let Some(r) = render_fitting(&s.item, share.saturating_sub(SEP)) {
                    left = left.saturating_sub(r.chars + SEP);
                    last = Some((s.line, r));
                }
            }
            for (k, s) in self.firsts.iter().take(self.samples_max).enumerate() {
                let limit = left.saturating_sub(SEP);
                if let Some(r) = try_render(&s.item, Caps::default(), limit) {
                    left = left.saturating_sub(r.chars + SEP);
                    firsts.push((s.line, r));
                    continue;
                }
                if k == 0 {
                    if let Some(r) = render_fitting(&s.item, limit) {
                        firsts.push((s.line, r));
                    }
                }
                break;
            }
        }
        firsts.extend(last);
        let mut cuts = CutStats::default();
        for (_, r) in &firsts {
            cuts.strings += r.cuts.strings;
            cuts.containers += r.cuts.containers;
        }
        let whole_first = firsts.first().is_some_and(|(_, r)| !r.cuts.is_cut());
        Picked { shown: firsts, cuts, whole_first }
    }

    fn build(&self, level: InvLevel, max_class: Class, keys: &(String, usize), picked: &Picked) -> String {
        let mut h = String::with_capacity(1024 + keys.0.len());
        h.push_str("{\"header\":{");
        let mut first = true;
        let mut field = |h: &mut String, key: &str, value: &J| {
            if !first {
                h.push(',');
            }
            first = false;
            h.push_str(&json_string(key));
            h.push(':');
            write_j(h, value);
        };
        for f in self.fields.iter().filter(|f| f.class <= max_class) {
            field(&mut h, f.key, &f.value);
        }
        field(&mut h, "sample_policy", &J::str(self.sample_policy.clone()));
        field(&mut h, "samples_shown", &J::int(picked.shown.len() as u64));
        if self.with_lines {
            let lines = picked.shown.iter().map(|(l, _)| J::int(*l)).collect();
            field(&mut h, "sample_lines", &J::Arr(lines));
        }
        if picked.cuts.is_cut() {
            let mut cuts = vec![
                ("strings_shortened".into(), J::int(picked.cuts.strings)),
                ("containers_cut".into(), J::int(picked.cuts.containers)),
            ];
            if picked.cuts.containers > 0 {
                let how =
                    "a cut array ends with \"…[N more items cut]\", a cut object with \"…\":\"[N more keys cut]\"";
                cuts.push(("containers_note".into(), J::str(how)));
            }
            let cuts = J::Obj(cuts);
            field(&mut h, "sample_cuts", &cuts);
        }
        let total = self.inventory.key_count();
        field(&mut h, "key_count", &J::int(total as u64));
        let note = match level {
            InvLevel::Full => None,
            InvLevel::Counts => Some("values are item counts; value types omitted to fit the budget".to_string()),
            InvLevel::Top(_) => Some(format!(
                "{} of {total} keys shown (item counts only) to fit the budget; read full_output for the rest",
                keys.1
            )),
        };
        if let Some(n) = note {
            field(&mut h, "keys_note", &J::Str(n));
        }
        if let Some(c) = self.inventory.capped_note() {
            field(&mut h, "keys_capped", &J::Str(c));
        }
        if !first {
            h.push(',');
        }
        h.push_str("\"keys\":");
        h.push_str(&keys.0);
        h.push_str("},\n\"sample\":[");
        for (k, (_, r)) in picked.shown.iter().enumerate() {
            h.push_str(if k == 0 { "\n" } else { ",\n" });
            h.push_str(&r.text);
        }
        h.push_str(if picked.shown.is_empty() { "]}\n" } else { "\n]}\n" });
        h
    }
}

/// Builds the envelope within `env.budget` characters (trailing newline
/// included). Degrades, in order: value types in the key inventory, the
/// optional header fields, keys (top-level ones kept longest), the
/// important fields; samples take what the header leaves. A level is
/// accepted when its first sample is whole or the samples got at least an
/// eighth of the budget.
pub(crate) fn assemble(env: &Envelope<'_, '_, '_>) -> String {
    let budget = env.budget;
    let total_keys = env.inventory.key_count();
    let mut levels = vec![(InvLevel::Full, Class::Optional), (InvLevel::Counts, Class::Optional)];
    let mut k = total_keys / 2;
    while k > 0 {
        levels.push((InvLevel::Top(k), Class::Important));
        k /= 2;
    }
    levels.push((InvLevel::Top(0), Class::Important));
    levels.push((InvLevel::Top(0), Class::Essential));
    let wants_samples = env.samples_max > 0 && (!env.firsts.is_empty() || env.last.is_some());
    let empty = Picked { shown: Vec::new(), cuts: CutStats::default(), whole_first: false };
    let mut smallest: Option<String> = None;
    for &(level, class) in &levels {
        // The last level with the important fields takes what fits; the
        // essential-only one is for a header that cannot fit otherwise.
        let settle = level == InvLevel::Top(0);
        let keys = env.inventory.render_keys(level);
        let bare = env.build(level, class, &keys, &empty);
        let bare_chars = count_chars(bare.as_bytes()) as usize;
        if bare_chars > budget {
            if smallest.as_ref().is_none_or(|s| s.len() > bare.len()) {
                smallest = Some(bare);
            }
            continue;
        }
        if !wants_samples {
            return bare;
        }
        // The header grows with what is picked (counts, line numbers):
        // shrink the room by any overshoot and pick again.
        let mut room = budget - bare_chars;
        for _ in 0..8 {
            let picked = env.pick(room);
            let out = env.build(level, class, &keys, &picked);
            let chars = count_chars(out.as_bytes()) as usize;
            if chars <= budget {
                if picked.whole_first || room >= budget / 8 || settle {
                    return out;
                }
                break;
            }
            room = room.saturating_sub(chars - budget);
        }
        if settle {
            return bare;
        }
    }
    smallest.unwrap_or_else(|| "{\"header\":{},\"sample\":[]}\n".to_string())
}

/// Re-parses `out` (strict JSON, big numbers allowed) and checks that it
/// fits `budget`. Returns what is wrong otherwise.
pub(crate) fn check_output(out: &str, budget: usize) -> Result<(), String> {
    let chars = str_chars(out);
    if chars > budget {
        return Err(format!("{chars} chars, over the budget of {budget}"));
    }
    let mut buf = out.as_bytes().to_vec();
    prescan(&mut buf);
    match simd_json::to_tape(&mut buf) {
        Ok(t) if matches!(t.0.first(), Some(Node::Object { .. })) => Ok(()),
        Ok(_) => Err("not an object".into()),
        Err(e) => Err(format!("does not re-parse: {e}")),
    }
}

// ---------------------------------------------------------------------------
// Error positions.

/// 1-based line and column (in characters) of byte `offset`.
pub(crate) fn locate(bytes: &[u8], offset: usize) -> (u64, u64) {
    let offset = offset.min(bytes.len());
    let before = &bytes[..offset];
    let line = 1 + memchr::memchr_iter(b'\n', before).count() as u64;
    let start = memchr::memrchr(b'\n', before).map_or(0, |p| p + 1);
    (line, 1 + count_chars(&before[start..]))
}

/// serde_json's (line, byte column) turned into a character column.
fn char_column(bytes: &[u8], line: usize, byte_col: usize) -> u64 {
    let start =
        if line <= 1 { 0 } else { memchr::memchr_iter(b'\n', bytes).nth(line - 2).map_or(bytes.len(), |p| p + 1) };
    let end = (start + byte_col.saturating_sub(1)).min(bytes.len());
    1 + count_chars(&bytes[start..end.max(start)])
}

/// A parse error located for a reader: message, line, column (1-based,
/// column in characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Located {
    pub message: String,
    pub line: u64,
    pub column: u64,
}

/// Explains why `bytes` is not JSON. serde_json's messages and positions
/// are the clearest, so it re-reads the document (only on failure; its
/// recursion limit keeps the stack safe). When it hits that limit or finds
/// nothing wrong, `fallback` (a byte offset and a message, from simd-json
/// or the structure scan) is used.
pub(crate) fn diagnose(bytes: &[u8], fallback: (usize, String)) -> Located {
    match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
        Err(e) if !e.to_string().starts_with("recursion limit exceeded") => {
            let full = e.to_string();
            let message = full.rfind(" at line ").map_or(full.as_str(), |p| &full[..p]).to_string();
            Located {
                message: shorten_text(&message, 160),
                line: e.line().max(1) as u64,
                column: char_column(bytes, e.line(), e.column()),
            }
        }
        _ => {
            let (line, column) = locate(bytes, fallback.0);
            Located { message: shorten_text(&fallback.1, 160), line, column }
        }
    }
}

/// A reader's words for a simd-json error.
pub(crate) fn simd_message(e: &simd_json::Error) -> String {
    match e.error() {
        simd_json::ErrorType::Eof => "unexpected end of input".to_string(),
        simd_json::ErrorType::InputTooLarge => "value larger than 4 GiB (simd-json's limit)".to_string(),
        other => format!("simd-json: {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specials_are_found_and_neutralised() {
        let doc = r#"{"a":"9999999999999999999999","b":[340282366920938463463374607431768211455,-1,1e400,0.1000000000000000055511151231257827,1.5,-9223372036854775809,18446744073709551615]}"#;
        let mut b = doc.as_bytes().to_vec();
        let found = prescan(&mut b);
        let texts: Vec<&str> = found.iter().map(|s| &*s.text).collect();
        assert_eq!(
            texts,
            [
                "340282366920938463463374607431768211455",
                "1e400",
                "0.1000000000000000055511151231257827",
                "-9223372036854775809"
            ]
        );
        let ords: Vec<u64> = found.iter().map(|s| s.ordinal).collect();
        assert_eq!(ords, [0, 2, 3, 5]);
        let tape = simd_json::to_tape(&mut b).expect("parses after neutralising");
        let sp = Specials::build(&tape.0, found);
        let item = Item { nodes: &tape.0, base: 0, specials: &sp };
        let r = try_render(&item, Caps::default(), 10_000).expect("fits");
        // Every number as written, except one past f64's range: its exact
        // text as a string, so common parsers accept the envelope.
        assert_eq!(r.text, doc.replace(",1e400,", ",\"1e400\","));
        serde_json::from_str::<serde_json::Value>(&r.text).expect("serde_json parses it");
    }

    #[test]
    fn invalid_numbers_are_left_for_the_parser() {
        let mut b = b"[012345678901234567890123, 1.e5]".to_vec();
        assert!(prescan(&mut b).is_empty());
        assert!(simd_json::to_tape(&mut b).is_err());
    }

    #[test]
    fn strings_are_skipped_exactly() {
        let b = br#""a\"b\\" x"#;
        assert_eq!(skip_string(b, 0), 8);
        // Every length and escape position, against a plain loop.
        for len in 0..200 {
            for esc in [None, Some(0), Some(7), Some(8), Some(63), Some(64), Some(150)] {
                let mut v = vec![b'"'];
                let mut body = vec![b'x'; len];
                if let Some(e) = esc.filter(|&e| e + 1 < len) {
                    body[e] = b'\\';
                    body[e + 1] = b'"';
                }
                v.extend_from_slice(&body);
                v.extend_from_slice(b"\" tail");
                let mut j = 1;
                let expect = loop {
                    match v[j] {
                        b'"' => break j + 1,
                        b'\\' => j += 2,
                        _ => j += 1,
                    }
                };
                assert_eq!(skip_string(&v, 0), expect, "len {len} esc {esc:?}");
            }
        }
        // An escape at the very end does not read past the buffer.
        assert_eq!(skip_string(b"\"abc\\", 0), 5);
        assert_eq!(skip_string(b"\"abc", 0), 4);
    }

    #[test]
    fn value_parser_retries_numbers_and_utf8() {
        let mut p = ValueParser::new();
        let r =
            p.parse(b"[1, 99999999999999999999999]", false, |v| (v.nodes.len(), v.specials.get(2).map(str::to_string)));
        assert_eq!(r.unwrap(), (3, Some("99999999999999999999999".to_string())));
        assert!(p.parse(b"[\"\xff\"]", false, |_| ()).is_err());
        let r = p.parse(b"[\"\xff\"]", true, |v| (v.repaired, String::from_utf8_lossy(v.source).into_owned()));
        assert_eq!(r.unwrap(), (true, "[\"\u{FFFD}\"]".to_string()));
        assert!(p.parse(b"[1,", true, |_| ()).is_err());
        // Still usable after errors.
        assert_eq!(p.parse(b"{\"a\":[]}", false, |v| v.nodes.len()).unwrap(), 3);
    }

    #[test]
    fn long_numbers_with_trailing_garbage_are_rejected() {
        let mut p = ValueParser::new();
        for bad in [
            "[1234567890123456789x]",
            "-1234567890123456789x",
            "1.1234567890123456789012345678901.",
            "[1.00000000000000000000e5x ,1]",
            "[1.12345678901234567890123y]",
        ] {
            assert!(p.parse(bad.as_bytes(), true, |_| ()).is_err(), "{bad}");
        }
        for good in ["[1234567890123456789 ]", "1.1234567890123456789012345678901", "[1.00000000000000000000e5,1]"] {
            assert!(p.parse(good.as_bytes(), true, |_| ()).is_ok(), "{good}");
        }
    }

    #[test]
    fn escaping_is_strict_and_terminal_safe() {
        assert_eq!(json_string("a\"b\\c\n\u{1b}[31m\u{9b}\u{7f}é"), r#""a\"b\\c\n\u001b[31m\u009b\u007fé""#);
        let s = json_string("\u{0}\u{1f}");
        assert_eq!(s, r#""\u0000\u001f""#);
    }

    #[test]
    fn shorten_text_fits_and_marks() {
        let s = "x".repeat(1000);
        let t = shorten_text(&s, 50);
        assert!(str_chars(&t) <= 50, "{t}");
        assert!(t.contains("chars cut]"));
        let j = "日本語".repeat(100);
        let t = shorten_text(&j, 40);
        assert!(str_chars(&t) <= 40);
        assert_eq!(shorten_text("short", 40), "short");
    }

    #[test]
    fn render_cuts_strings_then_containers() {
        let doc = format!(r#"{{"big":"{}","list":[{}]}}"#, "長".repeat(5000), vec!["1"; 3000].join(","));
        let mut b = doc.into_bytes();
        let tape = simd_json::to_tape(&mut b).unwrap();
        let sp = Specials::default();
        let item = Item { nodes: &tape.0, base: 0, specials: &sp };
        let r = render_fitting(&item, 800).expect("fits somehow");
        assert!(r.chars <= 800);
        assert!(r.cuts.strings == 1 && r.cuts.containers >= 1, "{:?}", r.cuts);
        assert!(r.text.contains("chars cut]"));
        assert!(r.text.contains("more items cut]"));
        serde_json::from_str::<serde_json::Value>(&r.text).expect("valid");
    }

    fn inventory_of(doc: &str) -> (Inventory, Vec<String>) {
        let mut b = doc.as_bytes().to_vec();
        let tape = simd_json::to_tape(&mut b).unwrap();
        let nodes = &tape.0;
        let mut inv = Inventory::default();
        let mut dups = Dups::default();
        let len = match nodes[0] {
            Node::Array { len, .. } => len,
            _ => 0,
        };
        let mut j = 1;
        for k in 0..len {
            let e = extent(nodes, j);
            let item = &nodes[j..j + e];
            inv.add_item(item, &mut |obj, key| dups.report(item, obj, key, || format!("$[{k}]")));
            j += e;
        }
        (inv, dups.first)
    }

    #[test]
    fn inventory_counts_every_item_and_nested_paths() {
        let (inv, dups) = inventory_of(
            r#"[{"id":1,"user":{"name":"a"},"tags":[{"k":1},{"k":2}]},{"id":2,"odd.key":null},{"id":"3"},{"user":{"name":"b"},"id":4}]"#,
        );
        assert!(dups.is_empty());
        let (keys, shown) = inv.render_keys(InvLevel::Full);
        assert_eq!(shown, 6, "{keys}");
        let v: serde_json::Value = serde_json::from_str(&keys).unwrap();
        assert_eq!(v["id"]["count"], 4);
        assert_eq!(v["id"]["types"]["integer"], 3);
        assert_eq!(v["id"]["types"]["string"], 1);
        assert_eq!(v["user.name"]["count"], 2);
        assert_eq!(v["tags[].k"]["count"], 1);
        assert_eq!(v["tags[].k"]["types"]["integer"], 2);
        assert_eq!(v["[\"odd.key\"]"]["types"]["null"], 1);
        let (top, n) = inv.render_keys(InvLevel::Top(2));
        assert_eq!(n, 2);
        assert!(top.contains("\"id\":4") && top.contains("\"user\":2"), "{top}");
    }

    #[test]
    fn inventory_finds_duplicates_at_every_depth() {
        let deep = r#"{"a":{"b":{"c":{"d":{"e":{"x":1,"x":2}}}}}}"#;
        let doc = format!(r#"[{{"k":1,"k":2,"n":{{"m":1,"m":2}},"l":[{{"z":0,"z":0}}]}},{{"k":1}},{deep}]"#);
        let (_, dups) = inventory_of(&doc);
        assert_eq!(dups, ["$[0].k", "$[0].n.m", "$[0].l[0].z", "$[2].a.b.c.d.e.x"]);
    }

    #[test]
    fn duplicates_past_the_key_cap_are_still_found() {
        let keys: Vec<String> = (0..TOP_KEY_CAP + 5).map(|k| format!("\"k{k}\":1")).collect();
        let doc = format!("[{{{},\"k1003\":2,\"k3\":2}}]", keys.join(","));
        let (inv, dups) = inventory_of(&doc);
        assert_eq!(dups, ["$[0].k3", "$[0].k1003"]);
        assert!(inv.capped_note().unwrap().contains("more than 1000 distinct top-level keys"));
    }

    #[test]
    fn duplicates_and_paths() {
        let doc = r#"{"a":{"x":1,"x":2},"b":[0,{"k":1,"j":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"k":10}]}"#;
        let mut b = doc.as_bytes().to_vec();
        let tape = simd_json::to_tape(&mut b).unwrap();
        let mut found = Vec::new();
        scan_duplicates(&tape.0, &mut Vec::new(), |obj, key| {
            found.push(format!("{}{}", path_to(&tape.0, obj, "$"), key_segment(key)))
        });
        assert_eq!(found, ["$.a.x", "$.b[1].k"]);
    }

    #[test]
    fn locate_counts_characters() {
        let b = "{\n  \"日本\": x".as_bytes();
        let off = b.iter().position(|&c| c == b'x').unwrap();
        assert_eq!(locate(b, off), (2, 9));
    }
}
