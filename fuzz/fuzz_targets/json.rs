//! The JSON folder (`--format json`) on generated and mangled documents:
//! never panics; an `Ok` is strict JSON (serde_json) of the promised shape
//! within the budget, safe for a terminal; a document serde_json accepts
//! is folded, not sent to the text fallback; no fallback is an internal error.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use outbox::json::{FoldContext, JsonCollector};
use outbox::stream::ingest::BlockSink;
use outbox_fuzz::{
    boundaries, check_fold_json, is_forbidden_char, json_depth, lossy_chars, strict_json, JVal, WrapFacts,
};

#[derive(Arbitrary, Debug)]
enum Mangle {
    None,
    Pretty,
    Bom,
    Truncate(u16),
    Insert(u16, Vec<u8>),
    TrailingText(Vec<u8>),
    Raw(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct Case {
    budget: u16,
    samples: u8,
    max_bytes: Option<u16>,
    kept: bool,
    wrap: Option<WrapFacts>,
    sizes: Vec<u16>,
    mangle: Mangle,
    doc: JVal,
}

fuzz_target!(|c: Case| {
    let mut data = c.doc.to_json().into_bytes();
    match &c.mangle {
        Mangle::None => {}
        Mangle::Pretty => {
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&data) {
                data = serde_json::to_vec_pretty(&v).unwrap_or(data);
            }
        }
        Mangle::Bom => {
            data.splice(0..0, *b"\xef\xbb\xbf");
        }
        Mangle::Truncate(k) => data.truncate(*k as usize % (data.len() + 1)),
        Mangle::Insert(k, b) => {
            let at = *k as usize % (data.len() + 1);
            data.splice(at..at, b.iter().copied());
        }
        Mangle::TrailingText(b) => data.extend_from_slice(b),
        Mangle::Raw(b) => data = b.clone(),
    }
    let budget = 1000 + c.budget as usize;
    let max_bytes = c.max_bytes.map_or(1 << 30, |m| m as u64);
    let mut col = JsonCollector::new(max_bytes);
    let mut pos = 0;
    for end in boundaries(data.len(), &c.sizes, &[]) {
        col.feed(&data[pos..end]);
        pos = end;
    }
    let facts = WrapFacts::facts(c.wrap.as_ref(), c.kept);
    let ctx = FoldContext {
        facts: &facts,
        bytes: data.len() as u64,
        chars: lossy_chars(&data),
        budget,
        samples: c.samples as usize % 20,
    };
    match col.fold(&ctx, None) {
        Ok(out) => {
            let n = out.chars().count();
            assert!(n <= budget, "fold over budget: {n} > {budget}");
            let v = check_fold_json(&out);
            assert!(v["header"].is_object(), "no header object");
            if let Some(w) = &c.wrap {
                assert_eq!(v["header"]["exit_status"], serde_json::json!(w.exit_status), "wrap facts kept");
                assert!(v["header"]["command"].is_string(), "the command is in the header");
            }
            assert!(v["sample"].is_array(), "no sample array");
            if let Some(bad) = out.chars().find(|&ch| is_forbidden_char(ch) || ch == '\r') {
                panic!("raw {bad:?} in the folded JSON");
            }
        }
        Err(f) => {
            assert!(!f.reason.starts_with("internal error"), "{f}");
            // A document serde_json accepts (BOM skipped, invalid UTF-8
            // read as U+FFFD, as the folder does) is folded, unless it is
            // over --json-max-bytes or deeper than the folder's limit.
            let body = data.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&data);
            let text = String::from_utf8_lossy(body);
            let fits = (data.len() as u64) <= max_bytes && json_depth(body) <= 1024;
            if fits && !text.trim().is_empty() && strict_json(&text).is_ok() {
                panic!("valid JSON was not folded: {f}");
            }
        }
    }
});
