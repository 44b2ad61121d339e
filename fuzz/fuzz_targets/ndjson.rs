//! The NDJSON folder (`--format ndjson`): never panics; any split of the
//! input into blocks gives the same envelope; the envelope is strict JSON
//! of the promised shape within the budget; every line serde_json accepts
//! is counted as a record.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use outbox::json::ndjson::NdjsonFolder;
use outbox::json::FoldContext;
use outbox::stream::ingest::BlockSink;
use outbox_fuzz::{boundaries, check_fold_json, is_forbidden_char, lossy_chars, strict_json, JVal, WrapFacts};

#[derive(Arbitrary, Debug)]
enum Line {
    Value(JVal),
    Blank,
    Spaces,
    Raw(Vec<u8>),
    Truncated(JVal, u8),
}

#[derive(Arbitrary, Debug)]
struct Case {
    budget: u16,
    samples: u8,
    crlf: bool,
    final_newline: bool,
    bom: bool,
    wrap: Option<WrapFacts>,
    sizes: Vec<u16>,
    lines: Vec<Line>,
}

fn fold(data: &[u8], ends: &[usize], samples: usize, ctx: &FoldContext) -> (String, u64) {
    let mut f = NdjsonFolder::new(samples);
    let mut pos = 0;
    for &e in ends {
        f.feed(&data[pos..e]);
        pos = e;
    }
    f.feed(&data[pos..]);
    (f.render(ctx), f.record_count())
}

fuzz_target!(|c: Case| {
    let eol: &[u8] = if c.crlf { b"\r\n" } else { b"\n" };
    let mut data = Vec::new();
    if c.bom {
        data.extend_from_slice(b"\xef\xbb\xbf");
    }
    let mut valid = 0u64;
    for (i, l) in c.lines.iter().enumerate() {
        let start = data.len();
        match l {
            Line::Value(v) => data.extend_from_slice(v.to_json().as_bytes()),
            Line::Blank => {}
            Line::Spaces => data.extend_from_slice(b" \t "),
            Line::Raw(b) => data.extend(b.iter().map(|&x| if x == b'\n' { b' ' } else { x })),
            Line::Truncated(v, k) => {
                let s = v.to_json();
                data.extend_from_slice(&s.as_bytes()[..*k as usize % (s.len() + 1)]);
            }
        }
        let mut text = &data[start..];
        if i == 0 {
            text = text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(text);
        }
        let text = String::from_utf8_lossy(text);
        if !text.trim().is_empty() && strict_json(&text).is_ok_and(|_| outbox_fuzz::json_depth(text.as_bytes()) <= 1024)
        {
            valid += 1;
        }
        if i + 1 < c.lines.len() || c.final_newline {
            data.extend_from_slice(eol);
        }
    }

    let budget = 1000 + c.budget as usize;
    let samples = c.samples as usize % 20;
    let facts = WrapFacts::facts(c.wrap.as_ref(), true);
    let ctx = FoldContext { facts: &facts, bytes: data.len() as u64, chars: lossy_chars(&data), budget, samples };
    let (whole, records) = fold(&data, &[], samples, &ctx);
    let ends = boundaries(data.len(), &c.sizes, &[]);
    let (split, records_split) = fold(&data, &ends, samples, &ctx);
    assert_eq!(records, records_split, "record count depends on the split");
    assert_eq!(whole, split, "envelope depends on the split");

    let n = whole.chars().count();
    assert!(n <= budget, "ndjson envelope over budget: {n} > {budget}");
    let v = check_fold_json(&whole);
    assert!(v["header"].is_object(), "no header object");
    assert!(v["sample"].is_array(), "no sample array");
    // The pending unterminated line is counted by `render` only.
    let h = &v["header"];
    if let (Some(w), None) = (&c.wrap, h.get("error")) {
        assert_eq!(h["exit_status"], serde_json::json!(w.exit_status), "wrap facts kept");
        assert!(h["command"].is_string(), "the command is in the header");
    }
    if let Some(rc) = h["record_count"].as_u64() {
        assert!(rc >= records, "header record_count {rc} < {records} fed");
        assert!(rc >= valid, "{rc} records counted, but {valid} lines are valid JSON");
    }
    if let Some(lines) = h["lines"].as_u64() {
        let want = data.split(|&b| b == b'\n').count() as u64 - u64::from(data.ends_with(b"\n") || data.is_empty());
        assert_eq!(lines, want, "header lines");
    }
    if let Some(bad) = whole.chars().find(|&ch| is_forbidden_char(ch) || ch == '\r') {
        panic!("raw {bad:?} in the NDJSON envelope");
    }
});
