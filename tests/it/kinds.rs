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
