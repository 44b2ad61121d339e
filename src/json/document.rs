//! The document fold: `JsonCollector` buffers the input, `fold_document`
//! runs the steps described in the module doc of [`crate::json`].

use simd_json::tape::Node;

use crate::json::assemble::{assemble, check_output, Envelope};
use crate::json::big::IN_MEMORY_BYTES;
use crate::json::dups::{path_to, scan_duplicates, Dups};
use crate::json::inventory::{type_counts_j, type_of, Inventory, TYPE_NAMES};
use crate::json::parse::{diagnose, extent, is_ws, locate, repair_utf8, Parsed, ValueParser, BOM, MAX_DEPTH};
use crate::json::sample::{render_fitting, Item, Reparsed, Stored, SAMPLE_STORE_BYTES};
use crate::json::scan::{scan_structure, split_at_commas, split_elements, ArraySpan, ScanError, Specials};
use crate::json::value::{common_fields, shorten_text, Class, Field, J};
use crate::json::{Fallback, FoldContext};

/// Buffers the document up to [`IN_MEMORY_BYTES`], then only counts (the
/// fold reads a larger one from the stored copy, streaming: `big`); past
/// `max_bytes` it is not folded at all.
#[derive(Debug)]
pub struct JsonCollector {
    buf: Vec<u8>,
    max: u64,
    seen: u64,
    over: bool,
}

impl JsonCollector {
    pub fn new(max_bytes: u64) -> Self {
        JsonCollector { buf: Vec::new(), max: max_bytes, seen: 0, over: false }
    }

    /// Folds the document; `stored` is the stored copy, read when the
    /// document was too large to hold. `Err` means: fall back to the text
    /// envelope.
    pub fn fold(self, ctx: &FoldContext, stored: Option<&std::path::Path>) -> Result<String, Fallback> {
        if self.over {
            return Err(Fallback::new(format!(
                "the document is {} bytes, more than --json-max-bytes ({}); shown as text",
                self.seen, self.max
            )));
        }
        if self.seen > IN_MEMORY_BYTES {
            return match stored {
                Some(path) => crate::json::big::fold_file(path, self.seen, ctx),
                None => Err(Fallback::new(format!(
                    "the document is {} bytes, more than the {} MiB folded in memory, and there is no stored copy to \
                     read it from; shown as text",
                    self.seen,
                    IN_MEMORY_BYTES >> 20
                ))),
            };
        }
        fold_document(&self.buf, ctx)
    }
}

impl crate::stream::ingest::BlockSink for JsonCollector {
    fn feed(&mut self, block: &[u8]) {
        self.seen = self.seen.saturating_add(block.len() as u64);
        if self.over {
            return;
        }
        if self.seen > self.max {
            // Free the memory now: the document will not be folded.
            self.over = true;
            self.buf = Vec::new();
            return;
        }
        if self.seen > IN_MEMORY_BYTES {
            // Folded from the stored copy instead (`big`).
            self.buf = Vec::new();
            return;
        }
        self.buf.extend_from_slice(block);
    }
}

/// Folds one document (the collector's buffer).
fn fold_document(raw: &[u8], ctx: &FoldContext) -> Result<String, Fallback> {
    let mut notes: Vec<String> = Vec::new();
    let body = match raw.strip_prefix(BOM) {
        Some(rest) => {
            notes.push("a UTF-8 byte order mark (BOM) at the start was skipped".into());
            rest
        }
        None => raw,
    };
    if body.iter().all(|&b| is_ws(b)) {
        return Err(Fallback::new(if body.is_empty() {
            "the input is empty: there is no JSON document to fold"
        } else {
            "the input holds only whitespace: there is no JSON document to fold"
        }));
    }
    let repaired = repair_utf8(body, &mut notes);
    let src: &[u8] = repaired.as_deref().unwrap_or(body);
    let invalid = |offset: usize, message: String| {
        let at = diagnose(src, (offset, message));
        Fallback::at(format!("not valid JSON: {}", at.message), at.line, at.column)
    };

    let too_deep = |offset: usize| {
        let (line, column) = locate(src, offset);
        Fallback::at(
            format!("JSON nested deeper than {MAX_DEPTH} levels: not folded (the limit keeps the fold predictable); shown as text"),
            line,
            column,
        )
    };
    let scan_failed = |e: ScanError| match e {
        ScanError::TooDeep(offset) => too_deep(offset),
        ScanError::Broken(offset) => invalid(offset, "brackets do not match".into()),
    };
    let start = src.iter().position(|&b| !is_ws(b)).unwrap_or(0);
    let end = src.iter().rposition(|&b| !is_ws(b)).map_or(start, |p| p + 1);
    // `max_depth` is known after the scan, or (root array) after the split.
    // `commas`: the folded array's separators, when the structure pass
    // found them (see `split_at_commas`).
    let (mut max_depth, fold_span, commas) = match src[start] {
        // A root array needs no structure pass: the element splitter checks
        // the depth, and simd-json validates every element and the rest.
        b'[' => {
            if end - start < 2 || src[end - 1] != b']' {
                return Err(invalid(end, "the array is not closed".into()));
            }
            (0, Some(ArraySpan { start, end, ordinal: 0 }), None)
        }
        b'{' => {
            let shape = scan_structure(src, MAX_DEPTH).map_err(scan_failed)?;
            (shape.max_depth, shape.best.filter(|b| 4 * (b.end - b.start) >= end - start), shape.best_commas)
        }
        _ => (0, None, None),
    };

    let mut parser = ValueParser::new();
    let mut inv = Inventory::default();
    let mut dups = Dups::default();
    let mut stored: Vec<Stored> = Vec::new();
    let mut stored_bytes = 0usize;
    let mut keep = |at: u64, p: &Parsed<'_, '_>| {
        if stored.len() < ctx.samples && stored_bytes < SAMPLE_STORE_BYTES {
            let mut s = Stored::default();
            s.keep(at, p);
            stored_bytes += s.text.len();
            stored.push(s);
        }
    };

    let (head, item_count) = match fold_span {
        Some(span) => {
            // The document with the folded array emptied: small, and
            // parsed (validated) as a whole.
            let mut wrapper = Vec::with_capacity(span.start + 1 + src.len() - (span.end - 1));
            wrapper.extend_from_slice(&src[..=span.start]);
            wrapper.extend_from_slice(&src[span.end - 1..]);
            let head = parser
                .parse(&wrapper, false, |p| {
                    let path = candidate_node(p.nodes, span.ordinal)
                        .map_or_else(|| "$".to_string(), |i| path_to(p.nodes, i, "$"));
                    scan_duplicates(p.nodes, &mut Vec::new(), |obj, key| dups.report(p.nodes, obj, key, || "$".into()));
                    Head {
                        path,
                        folded_type: "array",
                        root: p.nodes.first().map_or(0, type_of),
                        top: top_level(p.nodes, p.specials),
                    }
                })
                .map_err(|e| {
                    let at = e.index;
                    let offset = if at <= span.start { at } else { at + (span.end - 2 - span.start) };
                    invalid(offset, e.message)
                })?;
            // Then each element on its own, with reused buffers.
            let mut k = 0u64;
            let mut failed: Option<(usize, String)> = None;
            let limit = if span.start == start { MAX_DEPTH } else { usize::MAX };
            let each = |offset: usize, elem: &[u8]| {
                if elem.is_empty() {
                    failed = Some((offset, "expected a value".into()));
                    return false;
                }
                let parsed = parser.parse(elem, false, |p| {
                    inv.add_item(p.nodes, &mut |obj, key| {
                        dups.report(p.nodes, obj, key, || format!("{}[{k}]", head.path))
                    });
                    keep(k, &p);
                });
                match parsed {
                    Ok(()) => {
                        k += 1;
                        true
                    }
                    Err(e) => {
                        failed = Some((offset + e.index, e.message));
                        false
                    }
                }
            };
            // Under an object the structure pass has checked the brackets
            // and the depth; its separators save a second pass.
            let inner = match &commas {
                Some(c) => {
                    split_at_commas(src, span, c, each);
                    Ok(0)
                }
                None => split_elements(src, span, limit, each),
            };
            let inner = inner.map_err(scan_failed)?;
            if let Some((offset, message)) = failed {
                return Err(invalid(offset, message));
            }
            if span.start == start {
                max_depth = 1 + inner;
            }
            (head, k)
        }
        None => {
            // No array holds most of the document: the root is the item.
            let head = parser
                .parse(src, false, |p| {
                    inv.add_item(p.nodes, &mut |obj, key| dups.report(p.nodes, obj, key, || "$".into()));
                    keep(0, &p);
                    let root = p.nodes.first().map_or(0, type_of);
                    // The root is the item: its keys are the inventory.
                    Head { path: "$".into(), folded_type: TYPE_NAMES[root], root, top: None }
                })
                .map_err(|e| invalid(e.index, e.message))?;
            (head, 1)
        }
    };

    render_fold(ctx, Folded { head, folded: fold_span.is_some(), item_count, max_depth, inv, dups, stored, notes })
}

/// Everything a document fold learnt, in memory or streaming (`big`).
pub(crate) struct Folded {
    pub head: Head,
    /// An array was folded (else the root is the one item).
    pub folded: bool,
    pub item_count: u64,
    pub max_depth: usize,
    pub inv: Inventory,
    pub dups: Dups,
    pub stored: Vec<Stored>,
    pub notes: Vec<String>,
}

/// The header and samples fitted into the budget, and checked by parsing.
pub(crate) fn render_fold(ctx: &FoldContext, f: Folded) -> Result<String, Fallback> {
    let Folded { head, folded, item_count, max_depth, inv, dups, stored, mut notes } = f;
    match (TYPE_NAMES[head.root], folded) {
        ("array", _) if item_count == 0 => notes.push("the document is an empty array: nothing to sample".into()),
        ("object", false) => {
            notes.push("no array holds a quarter of the document, so the root object is the one item".into())
        }
        ("array" | "object", _) => {}
        (t, _) => notes.push(format!("the document is a single {t}, not an array or object: nothing to fold")),
    }

    use Class::{Essential as E, Important as I, Optional as O};
    let mut fields = common_fields(ctx, "json-shape");
    fields.push(Field::new("folded_path", J::Str(head.path.clone()), E));
    fields.push(Field::new("folded_type", J::str(head.folded_type), E));
    fields.push(Field::new("item_count", J::int(item_count), E));
    fields.push(Field::new("item_types", type_counts_j(&inv.item_types), E));
    fields.push(Field::new("max_depth", J::int(max_depth as u64), E));
    if let Some((keys, scalars)) = head.top {
        fields.push(Field::new("top_level_keys", keys, I));
        if matches!(&scalars, J::Obj(v) if !v.is_empty()) {
            fields.push(Field::new("top_level_scalars", scalars, O));
        }
    }
    fields.extend(dups.field());
    if !notes.is_empty() {
        fields.push(Field::new("notes", J::Arr(notes.into_iter().map(J::Str).collect()), I));
    }

    let stored_refs: Vec<&Stored> = stored.iter().collect();
    let mut bufs: Vec<Vec<u8>> = stored.iter().map(|s| s.text.clone()).collect();
    let reparsed = Reparsed::new(&stored_refs, &mut bufs);
    let firsts = (0..stored.len()).filter_map(|k| reparsed.sample(k)).collect();
    let policy = format!(
        "first {} whole items of {} in input order; fewer when the budget requires; a string too long for it is cut in the middle (…[N chars cut]…)",
        ctx.samples,
        shorten_text(&head.path, 60)
    );
    let env = Envelope {
        fields,
        inventory: &inv,
        firsts,
        last: None,
        samples_max: ctx.samples,
        sample_policy: policy,
        with_lines: false,
        budget: ctx.budget,
    };
    let out = assemble(&env);
    check_output(&out, ctx.budget).map_err(|e| {
        Fallback::new(format!("internal error: the folded JSON failed its own check ({e}); shown as text"))
    })?;
    Ok(out)
}

/// What the fold learnt from the part of the document around the items.
pub(crate) struct Head {
    pub path: String,
    pub folded_type: &'static str,
    /// Type index of the root.
    pub root: usize,
    /// The root object's keys with their types, and its short scalars.
    pub top: Option<(J, J)>,
}

/// The tape index of the candidate array ranked `ordinal` (see
/// [`ArraySpan`]), walking through objects only, in document order.
fn candidate_node(nodes: &[Node<'_>], ordinal: usize) -> Option<usize> {
    let len = match nodes.first()? {
        Node::Array { .. } => return (ordinal == 0).then_some(0),
        Node::Object { len, .. } => *len,
        _ => return None,
    };
    let mut seen = 0;
    let mut stack: Vec<(usize, usize)> = vec![(1, len)];
    while let Some((j, remaining)) = stack.pop() {
        if remaining == 0 || j + 1 >= nodes.len() {
            continue;
        }
        let v = j + 1;
        stack.push((v + extent(nodes, v), remaining - 1));
        match nodes[v] {
            Node::Array { .. } => {
                if seen == ordinal {
                    return Some(v);
                }
                seen += 1;
            }
            Node::Object { len, .. } => stack.push((v + 1, len)),
            _ => {}
        }
    }
    None
}

/// The root object's keys with their types (first 50) and its short
/// scalar values; `None` when the root is not an object.
fn top_level(nodes: &[Node<'_>], specials: &Specials) -> Option<(J, J)> {
    let Some(Node::Object { len, .. }) = nodes.first() else { return None };
    let mut keys: Vec<(String, J)> = Vec::new();
    let mut scalars: Vec<(String, J)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut omitted = 0usize;
    let mut j = 1;
    for _ in 0..*len {
        let (Some(Node::String(k)), Some(v)) = (nodes.get(j), nodes.get(j + 1)) else { break };
        let name = shorten_text(k, 80);
        if seen.insert(name.clone()) {
            if keys.len() < 50 {
                keys.push((name.clone(), J::str(TYPE_NAMES[type_of(v)])));
                if !matches!(v, Node::Object { .. } | Node::Array { .. }) && scalars.len() < 20 {
                    let item = Item { nodes: &nodes[j + 1..j + 2], base: j + 1, specials };
                    if let Some(r) = render_fitting(&item, 80) {
                        scalars.push((name, J::Raw(r.text)));
                    }
                }
            } else {
                omitted += 1;
            }
        }
        j += 1 + extent(nodes, j + 1);
    }
    if omitted > 0 {
        keys.push(("…".into(), J::Str(format!("{omitted} more keys not listed"))));
    }
    Some((J::Obj(keys), J::Obj(scalars)))
}

/// The in-memory fold of `doc`, for comparisons with the streaming one.
#[cfg(test)]
pub(crate) fn tests_fold(doc: &[u8], budget: usize) -> String {
    fold_document(doc, &crate::reference::fold_context(budget)).expect("folds")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::ingest::BlockSink;
    use serde_json::Value;

    use crate::reference::fold_context as ctx;

    fn fold_with(input: &[u8], c: &FoldContext) -> Result<String, Fallback> {
        let mut col = JsonCollector::new(1 << 30);
        // Arbitrary block boundaries must not matter.
        for chunk in input.chunks(7) {
            col.feed(chunk);
        }
        col.fold(c, None)
    }

    fn fold(input: &[u8], budget: usize) -> Result<String, Fallback> {
        fold_with(input, &ctx(budget))
    }

    fn parsed(out: &str, budget: usize) -> Value {
        assert!(out.chars().count() <= budget, "{} > {budget}", out.chars().count());
        serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
    }

    fn records(n: usize) -> String {
        let mut items = Vec::new();
        for i in 0..n {
            let mut rec = format!(
                r#"{{"id":{i},"name":"山田太郎{i}","city":"東京都渋谷区","tags":["a","b"],"score":{}.5"#,
                i % 100
            );
            if n >= 3 && i == n - 3 {
                rec.push_str(r#","rare_key":"only here""#);
            }
            if i == n / 2 {
                rec.push_str(r#","nested":{"deep_rare":true}"#);
            }
            rec.push('}');
            items.push(rec);
        }
        format!(
            r#"{{"meta":{{"source":"テスト","total":{n}}},"status":"ok","data":{{"items":[{}]}}}}"#,
            items.join(",\n")
        )
    }

    #[test]
    fn metadata_object_with_thousands_of_japanese_records() {
        let doc = records(5000);
        let out = fold(doc.as_bytes(), 14_000).expect("folds");
        let v = parsed(&out, 14_000);
        let h = &v["header"];
        assert_eq!(h["strategy"], "json-shape");
        assert_eq!(h["folded_path"], "$.data.items");
        assert_eq!(h["item_count"], 5000);
        assert_eq!(h["keys"]["id"]["count"], 5000);
        assert_eq!(h["keys"]["rare_key"]["count"], 1);
        assert_eq!(h["keys"]["rare_key"]["types"]["string"], 1);
        assert_eq!(h["keys"]["nested.deep_rare"]["count"], 1);
        assert_eq!(h["top_level_keys"]["meta"], "object");
        assert_eq!(h["top_level_scalars"]["status"], "ok");
        assert_eq!(h["samples_shown"], 8);
        assert_eq!(v["sample"].as_array().unwrap().len(), 8);
        assert_eq!(v["sample"][0]["name"], "山田太郎0");
        assert_eq!(v["sample"][7]["id"], 7);
        assert!(h["full_output"].is_string());
    }

    #[test]
    fn record_far_larger_than_the_budget_is_shortened() {
        let big = "本".repeat(200_000);
        let doc = format!(r#"[{{"id":1,"blob":"{big}","ok":true}}]"#);
        let out = fold(doc.as_bytes(), 2_000).expect("folds");
        let v = parsed(&out, 2_000);
        assert_eq!(v["header"]["item_count"], 1);
        assert_eq!(v["header"]["samples_shown"], 1);
        let s = v["sample"][0]["blob"].as_str().unwrap();
        assert!(s.contains("chars cut]"), "{s}");
        assert!(s.starts_with('本') && s.ends_with('本'));
        assert_eq!(v["sample"][0]["ok"], true);
        assert_eq!(v["header"]["sample_cuts"]["strings_shortened"], 1);
    }

    #[test]
    fn truncated_document_falls_back_with_position() {
        let doc = records(50);
        let cut = &doc.as_bytes()[..doc.len() / 2];
        let e = fold(cut, 14_000).unwrap_err();
        assert!(e.reason.starts_with("not valid JSON: EOF while parsing"), "{e}");
        assert!(e.line.unwrap() > 1);
        assert!(e.column.unwrap() >= 1);
        assert!(e.to_string().contains("(line "));
    }

    #[test]
    fn nesting_100000_deep_falls_back_without_overflow() {
        let doc = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let e = fold(doc.as_bytes(), 14_000).unwrap_err();
        assert!(e.reason.contains("nested deeper than 1024"), "{e}");
        assert_eq!((e.line, e.column), (Some(1), Some(1025)));
        // Truncated and deep: the same clear reason, no crash.
        let doc = "{\"a\":".repeat(100_000);
        let e = fold(doc.as_bytes(), 14_000).unwrap_err();
        assert!(e.reason.contains("nested deeper"), "{e}");
    }

    #[test]
    fn moderate_depth_folds_and_cuts() {
        let doc = format!("{}1{}", "[".repeat(1000), "]".repeat(1000));
        let out = fold(doc.as_bytes(), 1_000).expect("folds");
        let v = parsed(&out, 1_000);
        assert_eq!(v["header"]["max_depth"], 1000);
    }

    #[test]
    fn top_level_scalar() {
        let out = fold(b"  \"just a string\"  ", 1_000).expect("folds");
        let v = parsed(&out, 1_000);
        assert_eq!(v["header"]["folded_type"], "string");
        assert_eq!(v["header"]["item_count"], 1);
        assert!(v["header"]["notes"][0].as_str().unwrap().contains("single string"));
        assert_eq!(v["sample"][0], "just a string");
        let out = fold(b"42", 1_000).unwrap();
        assert_eq!(parsed(&out, 1_000)["sample"][0], 42);
    }

    #[test]
    fn empty_array_and_empty_input() {
        let out = fold(b"[]", 1_000).expect("folds");
        let v = parsed(&out, 1_000);
        assert_eq!(v["header"]["item_count"], 0);
        assert_eq!(v["header"]["samples_shown"], 0);
        assert_eq!(v["sample"], serde_json::json!([]));
        assert!(v["header"]["notes"][0].as_str().unwrap().contains("empty array"));
        assert!(fold(b"", 1_000).unwrap_err().reason.contains("empty"));
        assert!(fold(b" \n\t", 1_000).unwrap_err().reason.contains("whitespace"));
    }

    #[test]
    fn bom_is_skipped_and_stated() {
        let out = fold(b"\xEF\xBB\xBF[1,2,3]", 1_000).expect("folds");
        let v = parsed(&out, 1_000);
        assert_eq!(v["header"]["item_count"], 3);
        assert!(v["header"]["notes"][0].as_str().unwrap().contains("BOM"));
    }

    #[test]
    fn duplicate_keys_are_reported() {
        let out = fold(br#"{"items":[{"a":1,"a":2},{"b":1}],"x":1,"x":2}"#, 2_000).expect("folds");
        let v = parsed(&out, 2_000);
        let d = &v["header"]["duplicate_keys"];
        assert_eq!(d["count"], 2);
        assert_eq!(d["first"], serde_json::json!(["$.x", "$.items[0].a"]));
        // The header's own objects stay free of duplicates.
        assert_eq!(v["header"]["top_level_keys"].as_object().unwrap().len(), 2);
    }

    #[test]
    fn trailing_garbage_falls_back() {
        let e = fold(b"[1,2,3]\n garbage", 1_000).unwrap_err();
        assert!(e.reason.contains("trailing characters"), "{e}");
        assert_eq!((e.line, e.column), (Some(2), Some(2)));
        let e = fold(br#"{"a":1}{"b":2}"#, 1_000).unwrap_err();
        assert!(e.reason.contains("trailing"), "{e}");
    }

    #[test]
    fn invalid_utf8_in_a_string_is_replaced_and_stated() {
        let out = fold(b"[\"ok\",\"bad \xff\xfe here\",\"\xe6\x97\xa5\"]", 1_000).expect("folds");
        let v = parsed(&out, 1_000);
        assert_eq!(v["sample"][1], "bad \u{FFFD}\u{FFFD} here");
        assert_eq!(v["sample"][2], "日");
        let note = v["header"]["notes"][0].as_str().unwrap();
        assert!(note.contains("2 invalid UTF-8") && note.contains("column 12"), "{note}");
    }

    #[test]
    fn big_integers_are_kept_as_written() {
        let u128max = "340282366920938463463374607431768211455";
        let doc = format!(r#"[{{"n":{u128max},"f":1e400,"p":0.30000000000000000000001,"s":-12}}]"#);
        let out = fold(doc.as_bytes(), 1_000).expect("folds");
        assert!(out.contains(u128max), "{out}");
        assert!(out.contains("1e400") && out.contains("0.30000000000000000000001"), "{out}");
        crate::json::assemble::check_output(&out, 1_000).expect("strict JSON");
        // serde_json (without arbitrary_precision) refuses 1e400, which the
        // JSON grammar allows; check the rest with it.
        let v = parsed(&out.replace("1e400", "1"), 1_000);
        assert_eq!(v["header"]["keys"]["n"]["types"]["integer"], 1);
        assert_eq!(v["header"]["keys"]["f"]["types"]["number"], 1);
    }

    #[test]
    fn invalid_json_reports_line_and_column() {
        let e = fold(b"{\n  \"a\": [1, 2,, 3]\n}", 1_000).unwrap_err();
        assert_eq!((e.line, e.column), (Some(2), Some(14)), "{e}");
        let e = fold("{\"名前\": tru}".as_bytes(), 1_000).unwrap_err();
        assert_eq!((e.line, e.column), (Some(1), Some(11)), "{e}");
    }

    #[test]
    fn too_large_documents_fall_back() {
        let mut col = JsonCollector::new(10);
        col.feed(b"[1,2,3,4,");
        col.feed(b"5,6]");
        let e = col.fold(&ctx(1_000), None).unwrap_err();
        assert!(e.reason.contains("13 bytes, more than --json-max-bytes (10)"), "{e}");
    }

    #[test]
    fn small_object_without_a_dominant_array_is_one_item() {
        let doc = format!(r#"{{"config":{{"a":"{}","b":2}},"tags":["x"]}}"#, "v".repeat(3000));
        let out = fold(doc.as_bytes(), 1_500).expect("folds");
        let v = parsed(&out, 1_500);
        assert_eq!(v["header"]["folded_path"], "$");
        assert_eq!(v["header"]["item_count"], 1);
        assert_eq!(v["header"]["keys"]["config.a"]["count"], 1);
    }

    #[test]
    fn the_largest_array_reached_through_objects_is_folded() {
        let arr = |n: usize| format!("[{}]", vec!["{\"v\":1}"; n].join(","));
        // Largest by bytes, through object keys only; the first of equals
        // wins.
        let doc = format!(r#"{{"a":{},"b":{{"c":{}}},"d":{{"n":1}},"e":{}}}"#, arr(30), arr(50), arr(50));
        let v = parsed(&fold(doc.as_bytes(), 3_000).unwrap(), 3_000);
        assert_eq!(v["header"]["folded_path"], "$.b.c");
        assert_eq!(v["header"]["item_count"], 50);
        assert_eq!(v["header"]["top_level_keys"]["e"], "array");
        // Under a quarter of the document: the root is the one item.
        let doc = format!(r#"{{"a":{},"b":{},"c":{},"d":{},"e":{}}}"#, arr(20), arr(20), arr(20), arr(20), arr(21));
        let v = parsed(&fold(doc.as_bytes(), 3_000).unwrap(), 3_000);
        assert_eq!(v["header"]["folded_path"], "$");
        assert_eq!(v["header"]["keys"]["e[].v"]["count"], 1);
    }

    #[test]
    fn many_keys_shrink_the_inventory_not_the_budget() {
        let rec: Vec<String> = (0..600).map(|k| format!("\"key_number_{k}\":{k}")).collect();
        let doc = format!("[{{{}}}]", rec.join(","));
        for budget in [1_000, 3_000, 14_000] {
            let out = fold(doc.as_bytes(), budget).expect("folds");
            let v = parsed(&out, budget);
            assert_eq!(v["header"]["key_count"], 600);
            assert!(v["header"]["keys_note"].is_string(), "{out}");
        }
    }

    #[test]
    fn spill_failure_is_stated() {
        let facts = crate::render::facts::RunFacts {
            full_output: None,
            spill_error: Some("disk full".into()),
            detected: Some("json"),
            ..ctx(1_000).facts.clone()
        };
        let c = FoldContext { facts: &facts, ..ctx(1_000) };
        let out = fold_with(b"[1]", &c).unwrap();
        let v = parsed(&out, 1_000);
        assert!(v["header"]["full_output"].is_null());
        assert_eq!(v["header"]["spill_error"], "disk full");
        assert_eq!(v["header"]["detected"], "json");
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        /// Pieces of JSON, valid and not, for documents the splitter and
        /// the piecewise validation must judge exactly as a strict parser.
        #[rustfmt::skip]
        const TOKENS: &[&str] = &[
            "[", "]", "{", "}", ",", ":", " ", "\n", "\"a\"", "\"k\":", "\"b\\\"c,]\"", "\"[\"", "1", "-2.5",
            "0", "01", "1.", "true", "null", "nul", "\"", "\\", "x", "\"\t\"", "\"\u{1}\"", "\"日本\"",
            "123456789012345678901234567890", "1.12345678901234567890", "-0.000000000000000000001e-5",
            "\"\\q\"", "\"\\u0041\\n\"",
        ];

        fn token_soup() -> impl Strategy<Value = String> {
            proptest::collection::vec(0..TOKENS.len(), 1..40).prop_map(|v| v.into_iter().map(|i| TOKENS[i]).collect())
        }

        fn valid_then_mutated() -> impl Strategy<Value = String> {
            let leaf = prop_oneof![
                Just("1".to_string()),
                Just("\"s,]}\"".to_string()),
                Just("null".to_string()),
                Just("-0.5e3".to_string())
            ];
            let value = leaf.prop_recursive(6, 64, 6, |inner| {
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 0..6).prop_map(|v| format!("[{}]", v.join(","))),
                    proptest::collection::vec(inner, 0..6).prop_map(|v| {
                        let members: Vec<String> = v.iter().enumerate().map(|(k, x)| format!("\"k{k}\":{x}")).collect();
                        format!("{{{}}}", members.join(" , "))
                    }),
                ]
            });
            (value, any::<proptest::sample::Index>(), 0..TOKENS.len(), any::<bool>()).prop_map(
                |(doc, at, tok, mutate)| {
                    if !mutate || doc.is_empty() {
                        return doc;
                    }
                    let mut cut = at.index(doc.len());
                    while !doc.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    format!("{}{}{}", &doc[..cut], TOKENS[tok], &doc[cut..])
                },
            )
        }

        fn agrees_with_serde(doc: &str) -> Result<(), TestCaseError> {
            let strict = serde_json::from_str::<serde::de::IgnoredAny>(doc).is_ok();
            let ours = fold(doc.as_bytes(), 2_000);
            if let Ok(out) = &ours {
                prop_assert!(out.chars().count() <= 2_000);
                prop_assert!(crate::json::assemble::check_output(out, 2_000).is_ok());
            }
            if let Err(e) = &ours {
                prop_assert!(!e.reason.starts_with("internal"), "{}", e);
            }
            prop_assert_eq!(ours.is_ok(), strict, "{:?} -> {:?}", doc, ours.err());
            Ok(())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]
            #[test]
            fn accepts_exactly_what_a_strict_parser_accepts(doc in token_soup()) {
                agrees_with_serde(&doc)?;
            }

            #[test]
            fn mutated_documents_are_judged_exactly(doc in valid_then_mutated()) {
                agrees_with_serde(&doc)?;
            }

            /// Padded so the structure pass records the separators of the
            /// folded array (one per 64 bytes of document) and the
            /// elements are split from that record.
            #[test]
            fn padded_documents_split_from_recorded_commas_are_judged_exactly(doc in valid_then_mutated()) {
                agrees_with_serde(&format!("{doc}{}", " ".repeat(4096)))?;
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(48))]
            #[test]
            fn budget_is_never_exceeded(budget in 1_000usize..20_000, n in 1usize..300, samples in 0usize..20, long in 0usize..50_000) {
                let mut doc = records(n);
                if long > 0 {
                    doc = doc.replacen("山田太郎0", &"長".repeat(long), 1);
                }
                let mut c = ctx(budget);
                c.samples = samples;
                let out = fold_with(doc.as_bytes(), &c).expect("folds");
                prop_assert!(out.chars().count() <= budget);
                let v: Value = serde_json::from_str(&out).expect("parses");
                prop_assert_eq!(v["header"]["item_count"].as_u64(), Some(n as u64));
            }
        }
    }
}
