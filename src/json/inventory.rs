//! The key inventory: which keys the items carry, counted over every item
//! (top-level keys and nested paths such as `user.name`, `tags[].id`), with
//! the value types seen. It also finds duplicate keys on the way.
//!
//! Invariants:
//! - Nothing here recurses over the input's nesting: the walk over a tape
//!   is a loop with an explicit stack, so a value 100,000 levels deep
//!   cannot overflow the thread's stack.
//! - Memory: at most [`TOP_KEY_CAP`] distinct top-level keys and
//!   [`NESTED_KEY_CAP`] nested paths are tracked, to [`MAX_KEY_DEPTH`]
//!   keys deep (the header says when a cap was hit), so streaming folds
//!   stay bounded; duplicates are still found past the caps.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use simd_json::tape::Node;
use simd_json::StaticNode;

use crate::json::dups::{object_duplicates, push_key_segment, scan_duplicates, PATH_CHARS};
use crate::json::parse::extent;
use crate::json::value::{json_string, shorten_text, write_j, J};

/// Distinct top-level keys tracked by the inventory.
pub const TOP_KEY_CAP: usize = 1000;
/// Distinct nested key paths tracked by the inventory (separate from the
/// top-level cap, so maps keyed by ids cannot crowd out a rare top-level
/// key).
pub const NESTED_KEY_CAP: usize = 1000;
/// Nested key paths are tracked down to this many keys (`a.b.c.d`).
pub const MAX_KEY_DEPTH: u8 = 4;

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
            // A key that is itself a credential is masked like a value.
            let name = crate::text::secrets::mask_str(&self.path(id)).into_owned();
            let mut path = name.clone();
            // Shortened names could collide; an object's keys must not.
            let mut n = 2;
            while seen.contains(&path) {
                path = format!("{name} (#{n})");
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::dups::Dups;

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
}
