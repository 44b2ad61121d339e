//! `--format ndjson`: fold one JSON value per line, streaming, into
//! `{"header": {...}, "sample": [...]}`.
//!
//! Each line goes through the shared `ValueParser` (one reused scratch
//! buffer, simd-json buffers and tape: no allocation per line after
//! warm-up unless a record brings a key never seen before), then the key
//! inventory, which also finds duplicate keys (`inventory.rs`).
//!
//! Bounded memory, whatever the input size:
//! - a line that straddles blocks is carried, up to [`MAX_LINE_BYTES`];
//!   a longer line is counted as invalid and skipped, not buffered;
//! - samples: the first `--samples` records as their source text (at most
//!   `SAMPLE_STORE_BYTES` in all) and the last record; a huge record is
//!   kept pre-shortened;
//! - invalid lines: a count, and the first `EXAMPLES` (5) with line, column,
//!   message and the start of the line; blank lines are counted, skipped;
//! - the inventory caps distinct keys (see `inventory.rs`).
//!
//! Lines end at `\n`; a `\r` before it is JSON whitespace. Invalid UTF-8
//! in a line is read as U+FFFD and stated. The output does not depend on
//! how the input was split into blocks.

use crate::json::assemble::{assemble, check_output, Envelope};
use crate::json::dups::{Dups, EXAMPLES};
use crate::json::inventory::{type_counts_j, Inventory};
use crate::json::parse::{diagnose, trim_ws, Located, ParseError, ValueParser, BOM};
use crate::json::sample::{Reparsed, Stored, SAMPLE_STORE_BYTES};
use crate::json::value::{common_fields, json_string, shorten_text, Class, Field, J};
use crate::json::FoldContext;

/// Longest line carried across blocks and parsed.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// An invalid line, for the header.
#[derive(Debug, Clone)]
struct InvalidLine {
    line: u64,
    column: Option<u64>,
    error: String,
    text: String,
}

/// What was learnt from the records so far.
#[derive(Debug, Clone, Default)]
struct Stats {
    samples_max: usize,
    lines: u64,
    records: u64,
    blank: u64,
    invalid: u64,
    invalid_first: Vec<InvalidLine>,
    bom: bool,
    repaired_lines: u64,
    repaired_first: Vec<u64>,
    dups: Dups,
    inventory: Inventory,
    firsts: Vec<Stored>,
    stored_bytes: usize,
    last: Option<Stored>,
    unterminated: bool,
}

/// Streaming NDJSON fold; feed it blocks, then [`NdjsonFolder::render`].
pub struct NdjsonFolder {
    stats: Stats,
    parser: ValueParser,
    /// The start of a line whose end has not arrived yet.
    carry: Vec<u8>,
    /// The current line passed `MAX_LINE_BYTES`: drop bytes to its end.
    skipping: bool,
}

impl NdjsonFolder {
    pub fn new(samples: usize) -> Self {
        NdjsonFolder {
            stats: Stats { samples_max: samples, ..Stats::default() },
            parser: ValueParser::new(),
            carry: Vec::new(),
            skipping: false,
        }
    }

    /// The envelope for everything fed so far; a final line without `\n`
    /// counts as a line. Always valid JSON within `ctx.budget` (budgets of
    /// at least 1,000 characters).
    pub fn render(&self, ctx: &FoldContext) -> String {
        if self.carry.is_empty() && !self.skipping {
            return self.stats.render(ctx);
        }
        // Finish a copy: `render` takes `&self`, and the pending line must
        // still be counted.
        let mut done =
            NdjsonFolder { stats: self.stats.clone(), parser: ValueParser::new(), carry: Vec::new(), skipping: false };
        done.stats.unterminated = true;
        if self.skipping {
            done.stats.long_line();
        } else {
            done.line(&self.carry);
        }
        done.stats.render(ctx)
    }

    /// Valid records seen so far.
    pub fn record_count(&self) -> u64 {
        self.stats.records
    }

    fn line(&mut self, raw: &[u8]) {
        let st = &mut self.stats;
        st.lines += 1;
        let line = st.lines;
        let mut text = raw;
        if line == 1 {
            if let Some(rest) = text.strip_prefix(BOM) {
                text = rest;
                st.bom = true;
            }
        }
        let text = trim_ws(text);
        if text.is_empty() {
            st.blank += 1;
            return;
        }
        let parsed = self.parser.parse(text, true, |p| {
            st.records += 1;
            if p.repaired {
                st.repaired_lines += 1;
                if st.repaired_first.len() < EXAMPLES {
                    st.repaired_first.push(line);
                }
            }
            let dups = &mut st.dups;
            st.inventory
                .add_item(p.nodes, &mut |obj, key| dups.report(p.nodes, obj, key, || format!("line {line}: $")));
            if st.samples_max == 0 {
                return;
            }
            if st.firsts.len() < st.samples_max && st.stored_bytes < SAMPLE_STORE_BYTES {
                let mut s = Stored::default();
                s.keep(line, &p);
                st.stored_bytes += s.text.len();
                st.firsts.push(s);
            } else {
                st.last.get_or_insert_with(Stored::default).keep(line, &p);
            }
        });
        if let Err(e) = parsed {
            st.invalid_line(line, raw, &e);
        }
    }
}

impl crate::stream::ingest::BlockSink for NdjsonFolder {
    fn feed(&mut self, block: &[u8]) {
        let mut rest = block;
        while let Some(k) = memchr::memchr(b'\n', rest) {
            let line = &rest[..k];
            rest = &rest[k + 1..];
            if self.skipping {
                self.skipping = false;
                self.carry.clear();
                self.stats.long_line();
            } else if self.carry.is_empty() {
                if line.len() > MAX_LINE_BYTES {
                    self.stats.long_line();
                } else {
                    self.line(line);
                }
            } else if self.carry.len() + line.len() > MAX_LINE_BYTES {
                self.carry.clear();
                self.stats.long_line();
            } else {
                let mut whole = std::mem::take(&mut self.carry);
                whole.extend_from_slice(line);
                self.line(&whole);
                whole.clear();
                self.carry = whole;
            }
        }
        if !rest.is_empty() && !self.skipping {
            if self.carry.len() + rest.len() > MAX_LINE_BYTES {
                // Free the carried start: the line will not be parsed.
                self.carry = Vec::new();
                self.skipping = true;
            } else {
                self.carry.extend_from_slice(rest);
            }
        }
    }
}

impl Stats {
    fn long_line(&mut self) {
        self.lines += 1;
        self.invalid += 1;
        if self.invalid_first.len() < EXAMPLES {
            self.invalid_first.push(InvalidLine {
                line: self.lines,
                column: None,
                error: format!("line longer than {} MiB: not parsed", MAX_LINE_BYTES >> 20),
                text: String::new(),
            });
        }
    }

    fn invalid_line(&mut self, line: u64, raw: &[u8], e: &ParseError) {
        self.invalid += 1;
        if self.invalid_first.len() >= EXAMPLES {
            return;
        }
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let raw = if line == 1 { raw.strip_prefix(BOM).unwrap_or(raw) } else { raw };
        let lead = raw.iter().take_while(|&&b| crate::json::parse::is_ws(b)).count();
        let Located { message, column, .. } = diagnose(raw, (lead + e.index, e.message.clone()));
        let excerpt = String::from_utf8_lossy(&raw[..raw.len().min(4096)]);
        self.invalid_first.push(InvalidLine {
            line,
            column: Some(column),
            error: message,
            text: shorten_text(&excerpt, 60),
        });
    }

    fn render(&self, ctx: &FoldContext) -> String {
        // Re-parse the stored samples (as written: numbers keep their text).
        let stored: Vec<&Stored> = self.firsts.iter().chain(self.last.as_ref()).collect();
        let mut bufs: Vec<Vec<u8>> = stored.iter().map(|s| s.text.clone()).collect();
        let reparsed = Reparsed::new(&stored, &mut bufs);
        let firsts = (0..self.firsts.len()).filter_map(|k| reparsed.sample(k)).collect();
        let last = self.last.as_ref().and_then(|_| reparsed.sample(self.firsts.len()));

        use Class::{Essential as E, Important as I};
        let mut fields = common_fields(ctx, "ndjson-shape");
        fields.push(Field::new("record_count", J::int(self.records), E));
        fields.push(Field::new("item_count", J::int(self.records), E));
        fields.push(Field::new("lines", J::int(self.lines), E));
        fields.push(Field::new("blank_lines", J::int(self.blank), E));
        let mut invalid = vec![("count".to_string(), J::int(self.invalid))];
        if !self.invalid_first.is_empty() {
            let first = self
                .invalid_first
                .iter()
                .map(|l| {
                    let mut o = vec![("line".to_string(), J::int(l.line))];
                    if let Some(c) = l.column {
                        o.push(("column".into(), J::int(c)));
                    }
                    o.push(("error".into(), J::Str(l.error.clone())));
                    if !l.text.is_empty() {
                        o.push(("text".into(), J::Str(l.text.clone())));
                    }
                    J::Obj(o)
                })
                .collect();
            invalid.push(("first".into(), J::Arr(first)));
        }
        fields.push(Field::new("invalid_lines", J::Obj(invalid), if self.invalid > 0 { I } else { E }));
        fields.push(Field::new("item_types", type_counts_j(&self.inventory.item_types), E));
        if self.unterminated {
            fields.push(Field::new("unterminated_last_line", J::Bool(true), I));
        }
        fields.extend(self.dups.field());
        let mut notes = Vec::new();
        if self.bom {
            notes.push(J::str("a UTF-8 byte order mark (BOM) at the start was skipped"));
        }
        if self.repaired_lines > 0 {
            let lines: Vec<String> = self.repaired_first.iter().map(u64::to_string).collect();
            notes.push(J::Str(format!(
                "{} line(s) held invalid UTF-8, read as U+FFFD (first: line {}); full_output keeps the original bytes",
                self.repaired_lines,
                lines.join(", ")
            )));
        }
        if self.records == 0 {
            notes.push(J::str("no line holds a valid JSON value"));
        }
        if !notes.is_empty() {
            fields.push(Field::new("notes", J::Arr(notes), I));
        }
        let policy = format!(
            "first {} records in input order, then the last one; fewer when the budget requires; a string too long for it is cut in the middle (…[N chars cut]…)",
            self.samples_max
        );
        let env = Envelope {
            fields,
            inventory: &self.inventory,
            firsts,
            last,
            samples_max: self.samples_max,
            sample_policy: policy,
            with_lines: true,
            budget: ctx.budget,
        };
        let out = assemble(&env);
        match check_output(&out, ctx.budget) {
            Ok(()) => out,
            Err(e) => minimal(ctx, self.records, &e),
        }
    }
}

/// The last resort when the assembled envelope failed its own check: the
/// counts and the store path, nothing from the input.
fn minimal(ctx: &FoldContext, records: u64, problem: &str) -> String {
    let full = ctx.facts.full_output.as_deref().map_or_else(|| "null".to_string(), json_string);
    format!(
        "{{\"header\":{{\"label\":{},\"id\":{},\"strategy\":\"ndjson-shape\",\"bytes\":{},\"chars\":{},\"full_output\":{full},\"record_count\":{records},\"item_count\":{records},\"error\":{}}},\"sample\":[]}}\n",
        json_string(&shorten_text(&ctx.facts.label, 64)),
        json_string(&shorten_text(&ctx.facts.id, 100)),
        ctx.bytes,
        ctx.chars,
        json_string(&format!("internal error: the envelope failed its own check ({}); read full_output", shorten_text(problem, 100))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::ingest::BlockSink;
    use serde_json::Value;

    use crate::reference::fold_context as ctx;

    fn fold_split(input: &[u8], splits: &[usize], samples: usize, budget: usize) -> String {
        let mut f = NdjsonFolder::new(samples);
        let mut at = 0;
        for &s in splits {
            let end = (at + s).min(input.len());
            f.feed(&input[at..end]);
            at = end;
        }
        f.feed(&input[at..]);
        f.render(&ctx(budget))
    }

    fn fold(input: &[u8], budget: usize) -> String {
        fold_split(input, &[], 8, budget)
    }

    fn parsed(out: &str, budget: usize) -> Value {
        assert!(out.chars().count() <= budget, "{} > {budget}", out.chars().count());
        serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
    }

    fn stream(n: usize) -> String {
        let mut s = String::new();
        for i in 0..n {
            if i % 1000 == 17 {
                s.push_str("{\"id\": 17, broken\n");
            }
            if i % 1500 == 3 {
                s.push_str("   \r\n");
            }
            s.push_str(&format!(r#"{{"id":{i},"msg":"ログ行 {i}","level":"info","ctx":{{"host":"h{}"}}}}"#, i % 7));
            if i == n - 1 {
                s.pop();
                s.push_str(r#","only_last":[1,2]}"#);
            }
            s.push('\n');
        }
        s
    }

    #[test]
    fn invalid_lines_and_a_key_only_in_the_last_line() {
        let input = stream(5000);
        let out = fold(input.as_bytes(), 14_000);
        let v = parsed(&out, 14_000);
        let h = &v["header"];
        assert_eq!(h["strategy"], "ndjson-shape");
        assert_eq!(h["record_count"], 5000);
        assert_eq!(h["item_count"], 5000);
        assert_eq!(h["invalid_lines"]["count"], 5);
        assert_eq!(h["blank_lines"], 4);
        assert_eq!(h["invalid_lines"]["first"][0]["line"], 19);
        assert_eq!(h["invalid_lines"]["first"][0]["column"], 12);
        assert!(h["invalid_lines"]["first"][0]["error"].as_str().unwrap().contains("key must be a string"));
        assert_eq!(h["keys"]["only_last"]["count"], 1);
        assert_eq!(h["keys"]["ctx.host"]["count"], 5000);
        let samples = v["sample"].as_array().unwrap();
        assert_eq!(samples.len(), 9);
        assert_eq!(samples[0]["id"], 0);
        assert_eq!(samples[8]["only_last"], serde_json::json!([1, 2]));
        let lines = h["sample_lines"].as_array().unwrap();
        assert_eq!(lines.last().unwrap().as_u64().unwrap(), h["lines"].as_u64().unwrap());
    }

    #[test]
    fn few_records_are_not_repeated_and_unterminated_line_counts() {
        let out = fold(b"{\"a\":1}\n{\"a\":2}", 1_000);
        let v = parsed(&out, 1_000);
        assert_eq!(v["header"]["record_count"], 2);
        assert_eq!(v["header"]["unterminated_last_line"], true);
        assert_eq!(v["sample"], serde_json::json!([{"a":1},{"a":2}]));
    }

    #[test]
    fn bom_big_numbers_bad_utf8_and_duplicates() {
        let input =
            b"\xEF\xBB\xBF{\"n\":340282366920938463463374607431768211455}\n{\"s\":\"x\xffy\"}\n{\"d\":1,\"d\":2}\n";
        let out = fold(input, 2_000);
        let v = parsed(&out, 2_000);
        assert!(out.contains("340282366920938463463374607431768211455"));
        assert_eq!(v["header"]["record_count"], 3);
        assert_eq!(v["header"]["invalid_lines"]["count"], 0);
        assert_eq!(v["sample"][1]["s"], "x\u{FFFD}y");
        let notes = v["header"]["notes"].to_string();
        assert!(notes.contains("BOM") && notes.contains("line 2"), "{notes}");
        assert_eq!(v["header"]["duplicate_keys"]["first"][0], "line 3: $.d");
    }

    #[test]
    fn empty_and_all_invalid() {
        let v = parsed(&fold(b"", 1_000), 1_000);
        assert_eq!(v["header"]["record_count"], 0);
        let v = parsed(&fold(b"not json\nnor this\n\n", 1_000), 1_000);
        assert_eq!(v["header"]["invalid_lines"]["count"], 2);
        assert_eq!(v["header"]["blank_lines"], 1);
        assert_eq!(v["header"]["invalid_lines"]["first"][1]["text"], "nor this");
    }

    #[test]
    fn deep_and_huge_lines_stay_in_budget() {
        let deep = format!("{}{}\n{{\"a\":1}}\n", "[".repeat(100_000), "]".repeat(100_000));
        let v = parsed(&fold(deep.as_bytes(), 1_000), 1_000);
        assert_eq!(v["header"]["record_count"], 2);
        let huge = format!("{{\"blob\":\"{}\"}}\n{{\"b\":2}}\n", "語".repeat(600_000));
        let out = fold(huge.as_bytes(), 3_000);
        let v = parsed(&out, 3_000);
        assert!(v["sample"][0]["blob"].as_str().unwrap().contains("chars cut]"));
    }

    #[test]
    fn line_past_the_cap_is_counted_not_buffered() {
        let mut f = NdjsonFolder::new(2);
        f.feed(b"{\"a\":\"");
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..65 {
            f.feed(&chunk);
        }
        assert!(f.carry.capacity() <= MAX_LINE_BYTES + (1 << 20));
        f.feed(b"\"}\n{\"b\":1}\n");
        let v = parsed(&f.render(&ctx(1_000)), 1_000);
        assert_eq!(v["header"]["record_count"], 1);
        assert_eq!(v["header"]["invalid_lines"]["count"], 1);
        assert!(v["header"]["invalid_lines"]["first"][0]["error"].as_str().unwrap().contains("longer than 64 MiB"));
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]
            #[test]
            fn block_splits_do_not_change_the_output(splits in proptest::collection::vec(1usize..400, 0..40), n in 1usize..60) {
                let input = stream(n);
                let input = format!("\u{FEFF}{input}{{\"bad\n{{\"x\":\"\u{65e5}\u{672c}\"}}");
                let whole = fold_split(input.as_bytes(), &[], 3, 2_000);
                let split = fold_split(input.as_bytes(), &splits, 3, 2_000);
                prop_assert_eq!(&whole, &split);
                let bytewise = fold_split(input.as_bytes(), &vec![1; input.len()], 3, 2_000);
                prop_assert_eq!(&whole, &bytewise);
            }

            #[test]
            fn budget_is_never_exceeded(budget in 1_000usize..16_000, n in 1usize..400, samples in 0usize..12, long in 0usize..40_000) {
                let mut input = stream(n);
                if long > 0 {
                    input = input.replacen("ログ行 0", &"長".repeat(long), 1);
                }
                let out = fold_split(input.as_bytes(), &[], samples, budget);
                prop_assert!(out.chars().count() <= budget);
                let v: Value = serde_json::from_str(&out).expect("parses");
                prop_assert_eq!(v["header"]["record_count"].as_u64(), Some(n as u64));
            }
        }
    }
}
