//! `--format json`, `ndjson` and `auto` through the real binary: the output
//! is one valid JSON document within the budget that counts every item and
//! names every key; input that is not JSON falls back to the text envelope
//! with the reason, exit status 0, and the spill is always byte-identical.

use serde_json::Value;

use crate::util::{chars, run, Store};

/// Records with Japanese strings; a key only in one record far down, one
/// nested key only in the middle.
fn records(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let mut r = format!(
                r#"{{"id":{i},"name":"山田 太郎 {i}","city":"東京都渋谷区","tags":["a","b"],"score":{}.25,"active":{}"#,
                i % 100,
                i % 3 == 0
            );
            if i == n - 2 {
                r.push_str(r#","rare_far_down":"唯一""#);
            }
            if i == n / 2 {
                r.push_str(r#","meta":{"only_here":null}"#);
            }
            r.push('}');
            r
        })
        .collect()
}

fn document(n: usize) -> Vec<u8> {
    format!(
        r#"{{"source":"テスト","page":{{"next":null,"total":{n}}},"data":{{"items":[{}]}}}}"#,
        records(n).join(",\n")
    )
    .into_bytes()
}

/// Runs outbox and checks what every JSON envelope must satisfy: exit 0,
/// one valid JSON document within the budget, sizes, and a byte-identical
/// spill. Returns the parsed output.
fn folded(store: &Store, args: &[&str], data: &[u8], budget: usize) -> Value {
    let out = run(store, args, data);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let n = chars(&out.stdout);
    assert!(n <= budget, "{n} chars > budget {budget}");
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("output is not JSON ({e}):\n{text}"));
    let h = &v["header"];
    assert_eq!(h["bytes"].as_u64(), Some(data.len() as u64));
    assert_eq!(h["chars"].as_u64(), Some(chars(data) as u64));
    assert_eq!(h["budget"].as_u64(), Some(budget as u64));
    let path = h["full_output"].as_str().expect("full_output is a path");
    assert_eq!(std::fs::read(path).expect("spill readable"), data, "spill is byte-identical");
    assert!(h["id"].as_str().is_some_and(|id| path.ends_with(id)), "{h}");
    v
}

/// Runs outbox on input that must fall back to the text envelope; returns
/// the whole stdout and its header.
fn fallback(store: &Store, args: &[&str], data: &[u8]) -> (String, Value) {
    let out = run(store, args, data);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("<<<OUTBOX-HEADER"), "not the text envelope:\n{text}");
    let h: Value = serde_json::from_str(lines.next().unwrap_or("")).expect("header parses");
    assert_eq!(h["strategy"], "text-envelope");
    let path = h["full_output"].as_str().expect("full_output is a path");
    assert_eq!(std::fs::read(path).expect("spill readable"), data, "nothing is lost");
    (text, h)
}

/// Every string anywhere in `v`, for finding a statement without tying
/// the test to the key the core files it under.
fn strings(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(strings).collect::<Vec<_>>().join("\n"),
        Value::Object(o) => o.iter().map(|(k, v)| format!("{k}: {}", strings(v))).collect::<Vec<_>>().join("\n"),
        other => other.to_string(),
    }
}

#[test]
fn metadata_object_with_thousands_of_records() {
    let store = Store::new();
    let data = document(4000);
    let v = folded(&store, &["--format", "json"], &data, 14_000);
    let h = &v["header"];
    assert_eq!(h["strategy"], "json-shape");
    assert_eq!(h["folded_path"], "$.data.items");
    assert_eq!(h["item_count"], 4000);
    for key in ["id", "name", "city", "tags", "score", "active"] {
        assert_eq!(h["keys"][key]["count"], 4000, "{key}");
    }
    assert_eq!(h["keys"]["rare_far_down"]["count"], 1);
    assert_eq!(h["keys"]["meta.only_here"]["types"]["null"], 1);
    assert_eq!(h["top_level_keys"]["page"], "object");
    assert_eq!(h["top_level_scalars"]["source"], "テスト");
    let sample = v["sample"].as_array().unwrap();
    assert_eq!(sample.len(), 8);
    assert_eq!(h["samples_shown"], 8);
    for (k, item) in sample.iter().enumerate() {
        assert_eq!(item["id"], k, "whole items in input order");
        assert_eq!(item["name"], format!("山田 太郎 {k}"));
    }
}

#[test]
fn samples_flag_and_small_budgets() {
    let store = Store::new();
    let data = document(500);
    let v = folded(&store, &["--format", "json", "--samples", "2"], &data, 14_000);
    assert_eq!(v["sample"].as_array().unwrap().len(), 2);
    for budget in [1_000, 1_500, 4_000] {
        let b = budget.to_string();
        let v = folded(&store, &["--format", "json", "--budget", &b], &data, budget);
        assert_eq!(v["header"]["item_count"], 500);
    }
}

#[test]
fn one_record_far_larger_than_the_budget() {
    let store = Store::new();
    let data = format!(r#"[{{"id":7,"log":"{}","tail":"end"}}]"#, "ログ".repeat(100_000)).into_bytes();
    let v = folded(&store, &["--format", "json", "--budget", "2000"], &data, 2_000);
    assert_eq!(v["header"]["item_count"], 1);
    let item = &v["sample"][0];
    assert_eq!(item["id"], 7);
    assert_eq!(item["tail"], "end");
    let log = item["log"].as_str().unwrap();
    assert!(log.contains("chars cut]"), "{log}");
}

#[test]
fn big_integers_are_kept_as_written() {
    let store = Store::new();
    let big = "340282366920938463463374607431768211455";
    let mut items: Vec<String> = (0..400).map(|i| format!(r#"{{"n":{i}}}"#)).collect();
    items[0] = format!(r#"{{"n":{big}}}"#);
    let data = format!("[{}]", items.join(",")).into_bytes();
    let out = run(&store, &["--format", "json", "--budget", "1000"], &data);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(big), "{text}");
}

#[test]
fn invalid_json_falls_back_with_line_and_column() {
    let store = Store::new();
    let mut data = document(2000); // half of it is still over the budget
    data.truncate(data.len() / 2);
    let (_, h) = fallback(&store, &["--format", "json"], &data);
    let said = strings(&h);
    assert!(said.contains("EOF while parsing"), "{said}");
    assert!(said.contains("line") && said.contains("column"), "{said}");

    let mut data = document(300);
    data.extend_from_slice(b"\ntrailing garbage");
    let (_, h) = fallback(&store, &["--format", "json"], &data);
    assert!(strings(&h).contains("trailing characters"), "{h}");
}

#[test]
fn hostile_documents_never_crash() {
    let store = Store::new();
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let (_, h) = fallback(&store, &["--format", "json"], deep.as_bytes());
    assert!(strings(&h).contains("nested deeper than 1024"), "{h}");
    let (_, _) = fallback(&store, &["--format", "json"], "{\"a\":".repeat(50_000).as_bytes());

    // A scalar, an empty array, a BOM, duplicate keys, invalid UTF-8: all
    // fold (with --envelope always, as they are small), and say so.
    let cases: [(&[u8], &str); 5] = [
        (b"\"just a string\"", "single string"),
        (b"[]", "empty array"),
        (b"\xEF\xBB\xBF[1,2,3]", "byte order mark"),
        (b"[{\"a\":1,\"a\":2}]", "$[0].a"),
        (b"[\"bad \xff byte\"]", "invalid UTF-8"),
    ];
    for (data, statement) in cases {
        let v = folded(&store, &["--format", "json", "--envelope", "always", "--budget", "1000"], data, 1_000);
        assert!(strings(&v["header"]).contains(statement), "{statement}: {v}");
    }
}

#[test]
fn json_max_bytes_falls_back_to_text() {
    let store = Store::new();
    let data = document(300);
    let (_, h) = fallback(&store, &["--format", "json", "--json-max-bytes", "1K"], &data);
    assert!(strings(&h).contains("--json-max-bytes"), "{h}");
}

fn stream(n: usize) -> Vec<u8> {
    let mut s = String::new();
    for (i, r) in records(n).iter().enumerate() {
        s.push_str(r);
        s.push('\n');
        if i % 997 == 5 {
            s.push_str("{\"id\": oops}\n");
        }
        if i % 1999 == 9 {
            s.push('\n');
        }
    }
    s.push_str("{\"id\":-1,\"key_only_at_the_end\":true}\n");
    s.into_bytes()
}

#[test]
fn ndjson_stream_with_invalid_lines_and_a_late_key() {
    let store = Store::new();
    let n = 6000;
    let data = stream(n);
    let v = folded(&store, &["--format", "ndjson"], &data, 14_000);
    let h = &v["header"];
    assert_eq!(h["strategy"], "ndjson-shape");
    assert_eq!(h["record_count"], n + 1);
    assert_eq!(h["item_count"], n + 1);
    let invalid = (0..n).filter(|i| i % 997 == 5).count();
    assert_eq!(h["invalid_lines"]["count"], invalid);
    assert_eq!(h["invalid_lines"]["first"][0]["line"], 7);
    assert!(h["invalid_lines"]["first"][0]["column"].is_u64());
    assert_eq!(h["blank_lines"], (0..n).filter(|i| i % 1999 == 9).count());
    assert_eq!(h["keys"]["key_only_at_the_end"]["count"], 1);
    assert_eq!(h["keys"]["rare_far_down"]["count"], 1);
    let sample = v["sample"].as_array().unwrap();
    assert_eq!(sample.first().unwrap()["id"], 0);
    assert_eq!(sample.last().unwrap()["key_only_at_the_end"], true, "the last record is kept");
}

#[test]
fn auto_detects_and_says_so() {
    let store = Store::new();
    let v = folded(&store, &["--format", "auto"], &document(400), 14_000);
    assert_eq!(v["header"]["detected"], "json");
    assert_eq!(v["header"]["strategy"], "json-shape");

    let v = folded(&store, &["--format", "auto"], &stream(400), 14_000);
    assert_eq!(v["header"]["detected"], "ndjson");
    assert_eq!(v["header"]["strategy"], "ndjson-shape");

    let text: Vec<u8> = (0..3000).flat_map(|i| format!("[{i}] plain log line\n").into_bytes()).collect();
    let (_, h) = fallback(&store, &["--format", "auto"], &text);
    assert_eq!(h["strategy"], "text-envelope");
}
