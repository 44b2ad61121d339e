//! Kinds of signal lines on real captured outputs (tests/fixtures/families):
//! the codes a tool prints (rustc's `E0308`, tsc's `TS2322`, eslint's rule
//! ids, gcc's `-W` flags, rubocop's cops, exception types, go test names)
//! are the kinds the families capture. The expected codes are read from
//! each fixture with the tool's own syntax, never from outbox's output.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use outbox::family::{spec, Classifier, FamilyOptions, Severity};
use outbox::stream::scan::{ScanConfig, Scanner};
use outbox::stream::signal;
use regex::Regex;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/families");

fn fixture(case: &str) -> Vec<u8> {
    std::fs::read(Path::new(FIXTURES).join(format!("{case}.out"))).unwrap_or_else(|e| panic!("{case}: {e}"))
}

/// The kinds the scanner finds, by name, with their severity and count.
fn kinds(data: &[u8]) -> Vec<(String, Severity, u64, bool)> {
    let engine = Arc::new(Classifier::new(&spec::embedded(), &FamilyOptions::default()).unwrap());
    let cfg = ScanConfig { signal: signal::matcher(None).unwrap(), ..ScanConfig::default() };
    let mut sc = Scanner::new(cfg);
    sc.set_classifier(engine);
    sc.feed(data);
    sc.finish();
    let r = sc.result();
    r.signals
        .groups()
        .iter()
        .map(|g| (String::from_utf8_lossy(&g.name()).into_owned(), g.severity, g.count, g.code.is_some()))
        .collect()
}

/// The first group of `re` on every line of the fixture (colour codes
/// removed), distinct.
fn codes(data: &[u8], re: &str) -> BTreeSet<String> {
    let re = Regex::new(re).unwrap();
    let ansi = Regex::new("\x1b\\[[0-9;]*m").unwrap();
    let text = String::from_utf8_lossy(data);
    text.lines().filter_map(|l| re.captures(&ansi.replace_all(l, "")).map(|c| c[1].to_string())).collect()
}

#[test]
fn the_tools_own_codes_are_the_kinds() {
    let cases: &[(&str, &str, Option<Severity>)] = &[
        ("cargo/build-errors", r"^error\[(E\d{4})\]", Some(Severity::Error)),
        ("cargo/build-errors-color", r"^error\[(E\d{4})\]", Some(Severity::Error)),
        ("tsc/errors", r": error (TS\d+):", Some(Severity::Error)),
        ("tsc/errors-pretty", r" - error (TS\d+):", Some(Severity::Error)),
        ("tsc/errors-tsc7", r"error (TS\d+):", Some(Severity::Error)),
        ("eslint/problems", r"^\s+\d+:\d+\s+error\s+.*\s{2,}(\S+)$", Some(Severity::Error)),
        ("eslint/problems", r"^\s+\d+:\d+\s+warning\s+.*\s{2,}(\S+)$", Some(Severity::Warning)),
        ("gcc/make-errors", r": warning: .*\[(-W[\w=+-]+)\]$", Some(Severity::Warning)),
        ("go/test-failures", r"--- FAIL: (\S+) \(", Some(Severity::Error)),
        ("rubocop/offenses", r": [CWR]: (?:\[Correctable\] )?([A-Z]\w*/\w+):", Some(Severity::Warning)),
        ("pytest/failures", r"^E\s+(\w+Error):", Some(Severity::Error)),
        ("pytest/failures", r" - (\w+Error):", Some(Severity::Error)),
        ("pytest/failures", r"\.py:\d+: (\w+Warning):", Some(Severity::Warning)),
        ("java/exception", r#"^(?:Exception in thread "\w+" |Caused by: )([\w$.]+Exception)"#, Some(Severity::Error)),
        ("python/traceback", r"^(\w+Error):", Some(Severity::Error)),
    ];
    let mut bad = Vec::new();
    for (file, re, severity) in cases {
        let data = fixture(file);
        let want = codes(&data, re);
        assert!(!want.is_empty(), "{file}: {re} finds no code in the fixture");
        let found = kinds(&data);
        for code in &want {
            let hit = found
                .iter()
                .any(|(name, sev, _, captured)| name == code && *captured && severity.is_none_or(|s| s == *sev));
            if !hit {
                bad.push(format!("{file}: no kind {code} ({severity:?}); found {found:?}"));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Lines of one kind are counted together however many files they name;
/// a kind without a code is its template.
#[test]
fn one_kind_counts_every_file_and_templates_name_the_rest() {
    let data = fixture("cargo/build-errors");
    let found = kinds(&data);
    // rustc's `warning: unused variable: `x`` has no code: its template.
    let unused = found.iter().find(|k| k.0 == "warning: unused variable: `<*>`").expect("a template kind");
    assert_eq!((unused.1, unused.2, unused.3), (Severity::Warning, 2, false));
    let data = fixture("eslint/problems");
    let want = codes(&data, r"^\s+\d+:\d+\s+warning\s+.*\s{2,}(no-unused-vars)$");
    assert_eq!(want.len(), 1);
    let lines = String::from_utf8_lossy(&data).lines().filter(|l| l.ends_with("  no-unused-vars")).count() as u64;
    let k = kinds(&data).into_iter().find(|k| k.0 == "no-unused-vars").unwrap();
    assert_eq!(k.2, lines);
}

/// Every digit run of `line` rewritten (other digits, other lengths) by
/// `seed`: a line of the same mask.
fn redigit(line: &[u8], seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::with_capacity(line.len() + 4);
    let mut i = 0;
    while i < line.len() {
        if line[i].is_ascii_digit() {
            while i < line.len() && line[i].is_ascii_digit() {
                i += 1;
            }
            // Often a 0 or a 1 (success spans, `1 failed`), else any.
            let n = 1 + next() % 3;
            for _ in 0..n {
                let d = match next() % 4 {
                    0 => 0,
                    1 => 1,
                    _ => next() % 10,
                };
                out.push(b'0' + d as u8);
            }
        } else {
            out.push(line[i]);
            i += 1;
        }
    }
    out
}

fn engine() -> &'static Classifier {
    static E: std::sync::OnceLock<Classifier> = std::sync::OnceLock::new();
    E.get_or_init(|| Classifier::new(&spec::embedded(), &FamilyOptions::default()).unwrap())
}

/// The cache answers every line of every captured output as the whole
/// classification does, also when the line comes again with other digits
/// (`3 failed` after `0 failed`), line by line, with the same family
/// evidence and verdicts.
#[test]
fn cached_and_whole_classification_agree_on_captured_outputs() {
    let c = engine();
    let mut files = Vec::new();
    for dir in std::fs::read_dir(FIXTURES).unwrap() {
        let dir = dir.unwrap().path();
        if dir.is_dir() {
            for f in std::fs::read_dir(&dir).unwrap() {
                let f = f.unwrap().path();
                if f.extension().is_some_and(|e| e == "out") {
                    files.push(f);
                }
            }
        }
    }
    assert!(files.len() > 40, "{}", files.len());
    let (mut hits, mut misses) = (0, 0);
    for f in files {
        let data = std::fs::read(&f).unwrap();
        let mut lines: Vec<Vec<u8>> = Vec::new();
        for (i, l) in data.split(|&b| b == b'\n').enumerate() {
            lines.push(l.to_vec());
            lines.push(redigit(l, i as u64 + 7));
            lines.push(l.to_vec());
        }
        match outbox::reference::cached_agrees(c, lines.iter().map(|l| &l[..])) {
            Ok((h, m)) => (hits, misses) = (hits + h, misses + m),
            Err(e) => panic!("{}: {e}", f.display()),
        }
    }
    // The lines repeated with other digits are mostly answered by the cache.
    assert!(hits > misses, "{hits} hits, {misses} misses");
}

fn token() -> impl proptest::strategy::Strategy<Value = &'static str> {
    proptest::sample::select(vec![
        "error",
        "ERROR",
        "error:",
        "warning:",
        "WARN",
        "failed",
        "FAILED",
        "0",
        "1",
        "3",
        "12",
        "007",
        " ",
        "  ",
        ":",
        "=",
        "[",
        "]",
        "(",
        ")",
        "'",
        "\"",
        "TS",
        "E",
        "errors",
        "passed",
        "test result: ",
        "ok.",
        "FAILED.",
        " passed; ",
        " failed; ",
        " ignored",
        "Found ",
        " errors in ",
        "HTTP/1.1\" ",
        "5",
        "x.py",
        "src/a.rs",
        "Exception",
        "Error: ",
        "exit code ",
        "\t",
        "=== ",
        " in 0.1s",
        "Tests run: ",
        ", Failures: ",
        "-W",
    ])
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

    /// Random lines made of signal words, numbers and punctuation, each
    /// repeated with its digits rewritten: the cache agrees with the whole
    /// classification line by line.
    #[test]
    fn cached_and_whole_classification_agree_on_random_lines(
        lines in proptest::collection::vec(proptest::collection::vec(token(), 0..12), 1..60),
        seed in 1u64..u64::MAX,
    ) {
        let c = engine();
        let mut all: Vec<Vec<u8>> = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            let line = l.concat().into_bytes();
            all.push(redigit(&line, seed.wrapping_add(i as u64)));
            all.push(line);
        }
        let r = outbox::reference::cached_agrees(c, all.iter().map(|l| &l[..]));
        proptest::prop_assert!(r.is_ok(), "{:?}", r);
    }
}

/// Real server logs (PostgreSQL with its SQLSTATE codes, nginx's error
/// log; captured by scripts/capture-server-logs.sh): at the default budget
/// every kind of error and warning has a line in the envelope, the late
/// and rare ones (3 deadlocks among 800 errors) too.
#[test]
fn every_server_log_kind_has_a_visible_line_at_the_default_budget() {
    let body = |out: &std::process::Output| -> Vec<String> {
        // The envelope's lines, the header's JSON and the markers aside.
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines().skip(3).filter(|l| !l.starts_with("--- ")).map(str::to_string).collect()
    };
    let store = crate::util::Store::new();
    let data = fixture("server/postgres");
    let out = crate::util::run(&store, &[], &data);
    let lines = body(&out);
    let sqlstates = codes(&data, r"(?:ERROR|FATAL|WARNING|PANIC):  ([0-9A-Z]{5}): ");
    assert!(sqlstates.len() >= 10, "{sqlstates:?}");
    for code in &sqlstates {
        assert!(lines.iter().any(|l| l.contains(&format!(":  {code}: "))), "{code} has no visible line");
    }
    // Warnings are counted apart from the errors, as kinds of their own.
    let warning_codes = codes(&data, r"WARNING:  ([0-9A-Z]{5}): ");
    let warnings = String::from_utf8_lossy(&data).lines().filter(|l| l.contains(" WARNING:  ")).count();
    let plural = if warning_codes.len() == 1 { "" } else { "s" };
    let summary = format!("; {warnings} warnings of {} kind{plural}", warning_codes.len());
    assert!(String::from_utf8_lossy(&out.stdout).contains(&summary), "{summary}");
    let data = fixture("server/nginx-error");
    let out = crate::util::run(&store, &[], &data);
    let lines = body(&out);
    // nginx's messages up to their first variable part.
    let messages = codes(&data, r"\[(?:error|crit|alert|emerg|warn)\] \d+#\d+: \*\d+ ([a-z ]+)");
    assert!(messages.len() >= 4, "{messages:?}");
    for m in &messages {
        assert!(lines.iter().any(|l| l.contains(m.as_str())), "{m:?} has no visible line");
    }
}

/// A real tsc run with hundreds of errors of four codes ahead of one error
/// each of thirteen more (tsc/many-errors): at the default budget every
/// code has a visible line, the late single ones too, and the summary
/// counts them all.
#[test]
fn every_tsc_code_has_a_visible_line_at_the_default_budget() {
    let store = crate::util::Store::new();
    let data = fixture("tsc/many-errors");
    let want = codes(&data, r": error (TS\d+): ");
    let errors = String::from_utf8_lossy(&data).lines().filter(|l| l.contains(": error TS")).count();
    assert!(want.len() >= 15 && errors > 300, "{} codes, {errors} errors", want.len());
    let out = crate::util::run(&store, &[], &data);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().skip(3).filter(|l| !l.starts_with("--- ")).collect();
    for code in &want {
        assert!(lines.iter().any(|l| l.contains(&format!(": error {code}: "))), "{code} has no visible line:\n{text}");
    }
    assert!(text.contains(&format!("{errors} errors of {} kinds", want.len())), "{text}");
}

/// Lines that are all different masks (a word of its own in each) make the
/// cache rest after a window of misses; lines that repeat a mask afterwards
/// bring it back. Cached and whole classification agree throughout, and
/// the repeats are answered from the cache again.
#[test]
fn the_cache_rests_on_unique_lines_and_comes_back() {
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let word = |i: usize| -> String { (0..6).map(|k| (b'a' + ((i >> (k * 4)) % 26) as u8) as char).collect() };
    for i in 0..10_000 {
        lines.push(format!("2026-12-03 ERROR {} request failed after 3 retries", word(i * 7 + 1)).into_bytes());
    }
    for i in 0..80_000 {
        lines.push(format!("2026-12-03 ERROR worker {i} failed after {} retries", i % 3 + 1).into_bytes());
    }
    let (hits, misses) = outbox::reference::cached_agrees(engine(), lines.iter().map(|l| &l[..])).unwrap();
    assert!(misses >= 4096 && hits > 10_000, "{hits} hits, {misses} misses");
}
