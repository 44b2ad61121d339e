//! The document fold for a document too large to hold: past
//! [`IN_MEMORY_BYTES`] the collector keeps only a count, and the fold reads
//! the stored copy twice, streaming, in blocks of [`READ_BLOCK`]:
//!
//! 1. the tokenizer (`stream`) checks the whole document and finds its
//!    shape: the root, the deepest nesting, the largest array reached
//!    through object keys only (with its path), the root object's keys with
//!    their types and short scalars;
//! 2. it reads again, and each item of the folded array (or the root, when
//!    no array holds a quarter of the document) is copied out on its own
//!    and parsed by the same `ValueParser` as the in-memory fold, feeding
//!    the same inventory and samples. A string longer than
//!    [`STRING_HEAD`] bytes inside an item over [`ITEM_MAX`] is copied
//!    only in part, with a marker (`…[N bytes cut]`); an item still over
//!    [`ITEM_MAX`] is counted with its type, its keys not inventoried (the
//!    header says how many).
//!
//! Memory: one block, one item of at most [`ITEM_MAX`] and its tape, the
//! bounded inventory and samples, whatever the document's size (a 1 GiB
//! document folds in a few tens of MiB). The header is the in-memory
//! fold's (`document::render_fold`), and the output is checked by parsing
//! it. Duplicate keys are looked for inside the items only.

use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use crate::json::document::{render_fold, Folded, Head};
use crate::json::dups::{push_key_segment, Dups};
use crate::json::inventory::{Inventory, TYPE_NAMES};
use crate::json::parse::{ValueParser, BOM, MAX_DEPTH};
use crate::json::sample::{Stored, SAMPLE_STORE_BYTES};
use crate::json::stream::{Kind, Sink, StreamError, Tokenizer};
use crate::json::value::{shorten_text, J};
use crate::json::{Fallback, FoldContext};

/// Documents up to this size are folded in memory (`document`).
pub const IN_MEMORY_BYTES: u64 = 8 << 20;
/// Largest item parsed on its own (its tape costs several times its size).
pub const ITEM_MAX: usize = 1 << 20;
/// Bytes kept of a long string inside an item over [`ITEM_MAX`].
pub const STRING_HEAD: usize = 256;
/// Read size of both passes.
const READ_BLOCK: usize = 64 << 10;
/// A top-level scalar shown in the header is at most this long.
const TOP_SCALAR_BYTES: u64 = 80;
/// Top-level members remembered from pass 1 (50 keys are shown).
const TOP_MEMBERS: usize = 1000;

/// Folds the document stored at `path` (`size` bytes, as read).
pub(crate) fn fold_file(path: &Path, size: u64, ctx: &FoldContext) -> Result<String, Fallback> {
    let cannot = |e: std::io::Error| Fallback::new(format!("the stored copy could not be read back to fold it: {e}"));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() || meta.len() != size {
        return Err(Fallback::new("the stored copy is not the size that was read: not folded"));
    }
    let mut notes = Vec::new();
    let mut head3 = [0u8; 3];
    let skip = if file.read_at(&mut head3, 0).map_err(cannot)? == 3 && head3 == BOM {
        notes.push("a UTF-8 byte order mark (BOM) at the start was skipped".into());
        3
    } else {
        0
    };
    notes.push(format!(
        "{size} bytes, more than the {} MiB folded in memory: read from the stored copy in two streaming passes; \
         duplicate keys are looked for inside the items only",
        IN_MEMORY_BYTES >> 20
    ));

    // Pass 1: valid? what shape?
    let mut shape = Shape::default();
    let max_depth = pass(&file, skip, &mut shape).map_err(|e| fallback(&file, skip, e))?;
    let root = shape.root.unwrap_or(Kind::Null);
    let doc_len = size - skip;
    let target = match root {
        Kind::Array => Some(Target { start: shape.root_start, depth: 0, path: Vec::new() }),
        Kind::Object => shape.best.filter(|b| 4 * (b.end - b.start) >= doc_len).map(|b| Target {
            start: b.start,
            depth: b.depth,
            path: b.path,
        }),
        _ => None,
    };
    let path = match &target {
        Some(t) => {
            let mut p = String::from("$");
            for &(a, b) in &t.path {
                push_key_segment(&mut p, &read_key(&file, a, b));
            }
            p
        }
        None => "$".into(),
    };
    let top = (root == Kind::Object).then(|| top_level(&file, &shape.top, shape.top_more));

    // Pass 2: the items.
    let mut items = Items::new(&target, ctx.samples, &path);
    pass(&file, skip, &mut items).map_err(|e| fallback(&file, skip, e))?;
    let Items { inv, dups, stored, cut_strings, counted_only, repaired, .. } = items;
    if repaired > 0 {
        notes.push(format!(
            "{repaired} item{} held invalid UTF-8, read as U+FFFD (the stored copy keeps the bytes)",
            if repaired == 1 { "" } else { "s" }
        ));
    }
    if cut_strings > 0 {
        notes.push(format!(
            "{cut_strings} string{} longer than {STRING_HEAD} bytes inside items over {} MiB read only in part \
             (…[N bytes cut])",
            if cut_strings == 1 { "" } else { "s" },
            ITEM_MAX >> 20
        ));
    }
    if counted_only > 0 {
        notes.push(format!(
            "{counted_only} item{} over {} MiB even with long strings cut: counted with {} type, {} keys not in the \
             inventory",
            if counted_only == 1 { "" } else { "s" },
            ITEM_MAX >> 20,
            if counted_only == 1 { "its" } else { "their" },
            if counted_only == 1 { "its" } else { "their" },
        ));
    }
    let item_count = inv.items;
    let head = Head {
        path,
        folded_type: if target.is_some() { "array" } else { TYPE_NAMES[root.type_index()] },
        root: root.type_index(),
        top,
    };
    let folded = Folded { head, folded: target.is_some(), item_count, max_depth, inv, dups, stored, notes };
    render_fold(ctx, folded)
}

/// One streaming pass over the document after `skip` bytes; returns the
/// deepest nesting.
fn pass(file: &File, skip: u64, sink: &mut impl Block) -> Result<usize, StreamError> {
    let mut t = Tokenizer::new();
    let mut buf = vec![0u8; READ_BLOCK];
    let mut off = skip;
    loop {
        let n = match file.read_at(&mut buf, off) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(StreamError::Invalid(off - skip, format!("reading the stored copy failed: {e}"))),
        };
        if n == 0 {
            break;
        }
        sink.begin(off - skip);
        t.feed(&buf[..n], sink)?;
        sink.flush(&buf[..n]);
        off += n as u64;
    }
    t.finish(sink)?;
    sink.flush(&[]);
    Ok(t.max_depth)
}

/// A sink that also sees each block once the tokenizer is done with it.
trait Block: Sink {
    fn begin(&mut self, _base: u64) {}
    fn flush(&mut self, _block: &[u8]) {}
}

/// The folded array: where it starts, how deep, and its key path.
struct Target {
    start: u64,
    depth: usize,
    path: Vec<(u64, u64)>,
}

#[derive(Debug, Clone)]
struct Best {
    start: u64,
    end: u64,
    depth: usize,
    path: Vec<(u64, u64)>,
}

/// A member of the root object: its key, type and (short scalars) value.
#[derive(Debug, Clone)]
struct Member {
    key: (u64, u64),
    kind: Kind,
    scalar: Option<(u64, u64)>,
}

/// Pass 1.
#[derive(Default)]
struct Shape {
    root: Option<Kind>,
    root_start: u64,
    /// Open containers: (object, reached through objects only, start).
    open: Vec<(bool, bool, u64)>,
    /// The current key at each depth.
    keys: Vec<(u64, u64)>,
    best: Option<Best>,
    top: Vec<Member>,
    top_more: usize,
    /// The current root member is in `top`.
    last_top: bool,
}

impl Sink for Shape {
    fn start(&mut self, depth: usize, kind: Kind, at: u64) {
        if depth == 0 {
            self.root = Some(kind);
            self.root_start = at;
        }
        if depth == 1 && self.root == Some(Kind::Object) {
            let key = self.keys.get(1).copied().unwrap_or_default();
            self.last_top = self.top.len() < TOP_MEMBERS;
            if self.last_top {
                let scalar = (!matches!(kind, Kind::Object | Kind::Array)).then_some((at, at));
                self.top.push(Member { key, kind, scalar });
            } else {
                self.top_more += 1;
            }
        }
        if matches!(kind, Kind::Object | Kind::Array) {
            let through = match self.open.last() {
                None => true,
                Some(&(object, through, _)) => object && through,
            };
            self.open.push((kind == Kind::Object, through, at));
        }
    }

    fn end(&mut self, depth: usize, kind: Kind, end: u64) {
        if matches!(kind, Kind::Object | Kind::Array) {
            let Some((_, through, start)) = self.open.pop() else { return };
            let larger = self.best.as_ref().is_none_or(|b| end - start > b.end - b.start);
            if kind == Kind::Array && through && depth >= 1 && larger {
                let path = self.keys.get(1..=depth).map(<[_]>::to_vec).unwrap_or_default();
                self.best = Some(Best { start, end, depth, path });
            }
        } else if depth == 1 && self.root == Some(Kind::Object) && self.last_top {
            if let Some(m) = self.top.last_mut() {
                // Integer or number is known at its end.
                m.kind = kind;
                m.scalar = m.scalar.filter(|&(at, _)| end - at <= TOP_SCALAR_BYTES).map(|(at, _)| (at, end));
            }
        }
    }

    fn key(&mut self, depth: usize, at: u64, end: u64) {
        if self.keys.len() <= depth {
            self.keys.resize(depth + 1, (0, 0));
        }
        self.keys[depth] = (at, end);
    }
}

impl Block for Shape {}

/// What pass 2 is told inside a block, replayed with the block in hand.
#[derive(Debug, Clone, Copy)]
enum Event {
    ItemStart(u64),
    ItemEnd(u64, Kind),
    StrStart(u64),
    StrEnd(u64),
}

/// Pass 2: each item copied out (long strings cut when it is large) and
/// parsed.
struct Items<'a> {
    /// Items are the values at this depth inside the target (the root
    /// itself when there is no target).
    item_depth: usize,
    target_start: Option<u64>,
    inside: bool,
    events: Vec<Event>,
    base: u64,
    // The item being copied.
    copying: bool,
    buf: Vec<u8>,
    copied_to: u64,
    over: bool,
    string: Option<(u64, usize)>,
    string_cut: bool,
    // What was learnt.
    parser: ValueParser,
    inv: Inventory,
    dups: Dups,
    stored: Vec<Stored>,
    stored_bytes: usize,
    samples: usize,
    path: &'a str,
    cut_strings: u64,
    counted_only: u64,
    repaired: u64,
}

impl<'a> Items<'a> {
    fn new(target: &Option<Target>, samples: usize, path: &'a str) -> Items<'a> {
        Items {
            item_depth: target.as_ref().map_or(0, |t| t.depth + 1),
            target_start: target.as_ref().map(|t| t.start),
            inside: target.is_none(),
            events: Vec::new(),
            base: 0,
            copying: false,
            buf: Vec::new(),
            copied_to: 0,
            over: false,
            string: None,
            string_cut: false,
            parser: ValueParser::new(),
            inv: Inventory::default(),
            dups: Dups::default(),
            stored: Vec::new(),
            stored_bytes: 0,
            samples,
            path,
            cut_strings: 0,
            counted_only: 0,
            repaired: 0,
        }
    }

    /// Appends the item's bytes up to `to` (within `block`), or only
    /// advances when the item is over the cap.
    fn copy_until(&mut self, block: &[u8], to: u64) {
        let end = to.min(self.base + block.len() as u64);
        if end <= self.copied_to {
            return;
        }
        if !self.over {
            let from = (self.copied_to.max(self.base) - self.base) as usize;
            self.buf.extend_from_slice(&block[from..(end - self.base) as usize]);
            if self.buf.len() > ITEM_MAX {
                self.over = true;
                self.buf = Vec::new();
            }
        }
        self.copied_to = end;
    }

    /// Copies what the block holds of the item up to `upto`. Once the
    /// item is large (past a quarter of the cap), a string longer than
    /// [`STRING_HEAD`] keeps its head only: small items are parsed whole.
    fn copy_block(&mut self, block: &[u8], upto: u64) {
        self.copy_until(block, upto);
        let Some((_, pos)) = self.string else { return };
        let head = pos + 1 + STRING_HEAD;
        if !self.over && self.buf.len() > head && (self.string_cut || self.buf.len() > ITEM_MAX / 4) {
            self.buf.truncate(head);
            self.string_cut = true;
        }
    }

    fn end_string(&mut self, block: &[u8], end: u64) {
        let Some((s, pos)) = self.string else { return };
        self.copy_block(block, end);
        self.string = None;
        if !std::mem::take(&mut self.string_cut) {
            return;
        }
        self.cut_strings += 1;
        if self.over {
            return;
        }
        // The head up to a whole character and escape (the closing quote
        // went with the cut), then the marker.
        let body = &self.buf[pos + 1..];
        let kept = safe_prefix(&body[..body.len().min(STRING_HEAD)]);
        self.buf.truncate(pos + 1 + kept);
        let cut = (end - s).saturating_sub(2 + kept as u64);
        self.buf.extend_from_slice(format!("…[{cut} bytes cut]\"").as_bytes());
    }

    fn end_item(&mut self, kind: Kind) {
        self.copying = false;
        if self.over {
            self.counted_only += 1;
            self.inv.items += 1;
            self.inv.item_types[kind.type_index()] += 1;
            self.over = false;
            return;
        }
        let k = self.inv.items;
        let (inv, dups, stored, path) = (&mut self.inv, &mut self.dups, &mut self.stored, self.path);
        let (samples, stored_bytes) = (self.samples, &mut self.stored_bytes);
        let mut repaired = false;
        let parsed = self.parser.parse(&self.buf, true, |p| {
            repaired = p.repaired;
            inv.add_item(p.nodes, &mut |obj, key| dups.report(p.nodes, obj, key, || format!("{path}[{k}]")));
            if stored.len() < samples && *stored_bytes < SAMPLE_STORE_BYTES {
                let mut s = Stored::default();
                s.keep(k, &p);
                *stored_bytes += s.text.len();
                stored.push(s);
            }
        });
        if parsed.is_err() {
            // The tokenizer accepted it; a cut that broke it is counted.
            self.counted_only += 1;
            self.inv.items += 1;
            self.inv.item_types[kind.type_index()] += 1;
        }
        self.repaired += u64::from(repaired);
        self.buf.clear();
    }
}

impl Sink for Items<'_> {
    fn start(&mut self, depth: usize, kind: Kind, at: u64) {
        if self.target_start == Some(at) {
            self.inside = true;
            return;
        }
        if !self.inside {
            return;
        }
        if depth == self.item_depth {
            self.events.push(Event::ItemStart(at));
        }
        if kind == Kind::String && depth >= self.item_depth {
            self.events.push(Event::StrStart(at));
        }
    }

    fn end(&mut self, depth: usize, kind: Kind, end: u64) {
        if !self.inside {
            return;
        }
        if kind == Kind::String && depth >= self.item_depth {
            self.events.push(Event::StrEnd(end));
        }
        if depth == self.item_depth {
            self.events.push(Event::ItemEnd(end, kind));
        } else if self.target_start.is_some() && depth + 1 == self.item_depth {
            // The target closed.
            self.inside = false;
        }
    }
}

impl Block for Items<'_> {
    fn begin(&mut self, base: u64) {
        self.base = base;
    }

    fn flush(&mut self, block: &[u8]) {
        for ev in std::mem::take(&mut self.events) {
            match ev {
                Event::ItemStart(at) => {
                    self.copying = true;
                    self.over = false;
                    self.buf.clear();
                    self.copied_to = at;
                }
                Event::StrStart(at) if self.copying => {
                    self.copy_until(block, at);
                    self.string = Some((at, self.buf.len()));
                    self.string_cut = false;
                }
                Event::StrEnd(end) if self.copying => self.end_string(block, end),
                Event::ItemEnd(end, kind) if self.copying => {
                    self.copy_block(block, end);
                    self.end_item(kind);
                }
                _ => {}
            }
        }
        if self.copying {
            let end = self.base + block.len() as u64;
            self.copy_block(block, end);
        }
    }
}

/// The longest prefix of a string's bytes that ends between characters
/// and escapes (so the cut string is still valid JSON and UTF-8).
fn safe_prefix(s: &[u8]) -> usize {
    let mut i = 0;
    while i < s.len() {
        let len = match s[i] {
            b'\\' if s.get(i + 1) == Some(&b'u') => 6,
            b'\\' => 2,
            b if b < 0x80 => 1,
            b if b >= 0xF0 => 4,
            b if b >= 0xE0 => 3,
            b if b >= 0xC0 => 2,
            _ => 1, // a stray continuation byte: invalid anyway
        };
        if i + len > s.len() {
            break;
        }
        i += len;
    }
    i
}

/// A key's text (decoded; a very long one shortened).
fn read_key(file: &File, at: u64, end: u64) -> String {
    let len = (end - at).min(4096) as usize;
    let mut buf = vec![0u8; len];
    if file.read_exact_at(&mut buf, at).is_err() {
        return String::new();
    }
    match serde_json::from_slice::<String>(&buf) {
        Ok(s) => s,
        Err(_) => String::from_utf8_lossy(buf.get(1..).unwrap_or_default()).into_owned(),
    }
}

/// The header's `top_level_keys` and `top_level_scalars`, from pass 1.
fn top_level(file: &File, members: &[Member], more: usize) -> (J, J) {
    let mut keys: Vec<(String, J)> = Vec::new();
    let mut scalars: Vec<(String, J)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut omitted = more;
    for m in members {
        let name = shorten_text(&read_key(file, m.key.0, m.key.1), 80);
        if !seen.insert(name.clone()) {
            continue;
        }
        if keys.len() >= 50 {
            omitted += 1;
            continue;
        }
        keys.push((name.clone(), J::str(TYPE_NAMES[m.kind.type_index()])));
        if let Some((a, b)) = m.scalar.filter(|_| scalars.len() < 20) {
            let mut raw = vec![0u8; (b - a) as usize];
            if file.read_exact_at(&mut raw, a).is_ok() {
                let v = match m.kind {
                    Kind::String => serde_json::from_slice::<String>(&raw).ok().map(J::Str),
                    _ => std::str::from_utf8(&raw).ok().map(|t| J::Raw(t.to_string())),
                };
                if let Some(v) = v {
                    scalars.push((name, v));
                }
            }
        }
    }
    if omitted > 0 {
        keys.push(("…".into(), J::Str(format!("{omitted} more keys not listed"))));
    }
    (J::Obj(keys), J::Obj(scalars))
}

/// The fallback for a document that is not JSON, with its line and column
/// (in characters), counted by reading up to the offset.
fn fallback(file: &File, skip: u64, e: StreamError) -> Fallback {
    let (offset, reason) = match e {
        StreamError::Invalid(at, m) => (at, format!("not valid JSON: {m}")),
        StreamError::TooDeep(at) => (
            at,
            format!(
                "JSON nested deeper than {MAX_DEPTH} levels: not folded (the limit keeps the fold predictable); shown as text"
            ),
        ),
    };
    let (mut line, mut column) = (1u64, 1u64);
    let mut buf = vec![0u8; READ_BLOCK];
    let mut off = skip;
    let end = skip + offset;
    while off < end {
        let want = ((end - off) as usize).min(READ_BLOCK);
        let Ok(n) = file.read_at(&mut buf[..want], off) else { break };
        if n == 0 {
            break;
        }
        for &b in &buf[..n] {
            if b == b'\n' {
                line += 1;
                column = 1;
            } else if b & 0xC0 != 0x80 {
                column += 1;
            }
        }
        off += n as u64;
    }
    Fallback::at(reason, line, column)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::fold_context as ctx;
    use serde_json::Value;

    fn fold_text(doc: &[u8], budget: usize) -> Result<Value, Fallback> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("doc");
        std::fs::write(&p, doc).unwrap();
        let out = fold_file(&p, doc.len() as u64, &ctx(budget))?;
        assert!(out.chars().count() <= budget);
        Ok(serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}")))
    }

    #[test]
    fn the_streaming_fold_agrees_with_the_in_memory_one() {
        let items: Vec<String> =
            (0..3000).map(|i| format!(r#"{{"id":{i},"name":"n{i}","tags":["a"],"x":{}.5}}"#, i % 7)).collect();
        let doc = format!(r#"{{"meta":{{"v":1}},"status":"ok","data":{{"items":[{}]}}}}"#, items.join(","));
        let v = fold_text(doc.as_bytes(), 14_000).unwrap();
        let h = &v["header"];
        assert_eq!(h["folded_path"], "$.data.items");
        assert_eq!(h["item_count"], 3000);
        assert_eq!(h["keys"]["id"]["count"], 3000);
        assert_eq!(h["top_level_keys"]["meta"], "object");
        assert_eq!(h["top_level_scalars"]["status"], "ok");
        assert_eq!(v["sample"][0]["name"], "n0");
        let mem = crate::json::document::tests_fold(doc.as_bytes(), 14_000);
        let m: Value = serde_json::from_str(&mem).unwrap();
        for k in ["folded_path", "item_count", "item_types", "max_depth", "keys", "top_level_keys", "top_level_scalars"]
        {
            assert_eq!(h[k], m["header"][k], "{k}");
        }
        assert_eq!(v["sample"], m["sample"]);
    }

    #[test]
    fn a_huge_string_is_read_in_part_and_the_output_stays_json() {
        let big = "é".repeat(3 << 20);
        let doc = format!(r#"[{{"id":1,"blob":"{big}","ok":true}},{{"id":2}}]"#);
        let v = fold_text(doc.as_bytes(), 2_000).unwrap();
        assert_eq!(v["header"]["item_count"], 2);
        assert_eq!(v["header"]["keys"]["blob"]["count"], 1);
        assert_eq!(v["sample"][0]["ok"], true);
        let s = v["sample"][0]["blob"].as_str().unwrap();
        assert!(s.starts_with('é') && s.contains("cut"), "{s}");
        // A root string, and an item too large even with strings cut.
        let doc = format!(r#""{big}""#);
        let v = fold_text(doc.as_bytes(), 2_000).unwrap();
        assert_eq!(v["header"]["folded_type"], "string");
        let nums: Vec<String> = (0..400_000).map(|i| i.to_string()).collect();
        let doc = format!(r#"[[{}], 1]"#, nums.join(","));
        let v = fold_text(doc.as_bytes(), 2_000).unwrap();
        assert_eq!(v["header"]["item_count"], 2);
        assert_eq!(v["header"]["item_types"]["array"], 1);
    }

    #[test]
    fn invalid_documents_fall_back_with_their_position() {
        let e = fold_text(b"[1,\n 2,\n x]", 2_000).unwrap_err();
        assert_eq!((e.line, e.column), (Some(3), Some(2)), "{e}");
        assert!(e.reason.starts_with("not valid JSON"), "{e}");
        let e = fold_text(b"{\"a\":1}\n{\"a\":2}\n", 2_000).unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
    }

    #[test]
    fn safe_prefixes_end_between_characters_and_escapes() {
        assert_eq!(safe_prefix(b"ab\\u00"), 2);
        assert_eq!(safe_prefix(b"ab\\"), 2);
        assert_eq!(safe_prefix("aé".as_bytes()), 3);
        assert_eq!(safe_prefix(&"aé".as_bytes()[..2]), 1);
    }
}
