//! Signal groups, the spread of the signal lines over the whole input, and
//! the gap marker's inventory: the counts they print against independent
//! counts, in any block split.

use outbox::reference::model;
use outbox::render::envelope::{self, Budgets};
use outbox::stream::line::LineBody;
use outbox::stream::scan::{ScanConfig, Scanner};
use outbox::stream::signal;
use proptest::prelude::*;

use crate::props::{header, render};
use crate::util::{run, Store};

/// The listed signal lines: (line number, the group note's count if any,
/// exact or estimated: `≈N`, `≥N`).
fn listed(out: &str) -> Vec<(u64, Option<(u64, bool)>)> {
    let section = out.split_once("\n--- signal lines (").map_or("", |x| x.1);
    let section = section.split_once(") ---\n").map_or("", |x| x.1);
    section
        .lines()
        .take_while(|l| !l.starts_with("--- "))
        .filter_map(|l| {
            let (n, rest) = l.split_once(": ")?;
            let n = n.parse().ok()?;
            let count = rest.rsplit_once("× ").and_then(|(_, c)| {
                let c = c.split(':').next()?;
                let exact = !c.starts_with(['≈', '≥']);
                Some((c.trim_start_matches(['≈', '≥']).parse().ok()?, exact))
            });
            Some((n, count))
        })
        .collect()
}

/// (S, M) from `--- signal lines (S of M shown) ---`, and K from the
/// omitted marker (0 without one).
fn counts(out: &str) -> (u64, u64, u64) {
    // No section: every signal line is in the head or the tail (the
    // header still counts them), or there are none.
    let Some((_, m)) = out.split_once("--- signal lines (") else {
        let h = header(out);
        let m = h["signal_hits"].as_u64().unwrap_or(0);
        assert_eq!(h["signal_lines_shown"].as_u64(), Some(m), "no section, yet lines omitted:\n{out}");
        return (m, m, 0);
    };
    let (s, rest) = m.split_once(" of ").unwrap();
    let total = rest.split_once(' ').unwrap().0;
    let k = out
        .lines()
        .find_map(|l| l.strip_prefix("--- ")?.split_once(" more signal lines omitted; read full_output").map(|x| x.0));
    (s.parse().unwrap(), total.parse().unwrap(), k.map_or(0, |k| k.parse().unwrap()))
}

fn piece() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        "[a-z ]{0,12}".prop_map(|s| s.into_bytes()),
        Just(b"\n".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        (0u32..40).prop_map(|n| format!("error at {n}\n").into_bytes()),
        (0u32..3).prop_map(|n| format!("src/f{n}.ts(1,2): error TS23{n}: bad\n").into_bytes()),
        Just(b"FAILED: disk full\n".to_vec()),
        Just(vec![0xff]),
        Just(b"\x1b[31merror\x1b[0m ".to_vec()),
        (1usize..3000).prop_map(|n| vec![b'x'; n]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// S + K = M; the header agrees with S; every printed group count is
    /// the number of signal lines of that line's kind in the whole input
    /// (an estimate, `≈`, is never under it).
    #[test]
    fn group_counts_add_up(
        data in prop::collection::vec(piece(), 0..300).prop_map(|v| v.concat()),
        splits in prop::collection::vec(1usize..700, 0..30),
        budget in 1500usize..8000,
    ) {
        let b = Budgets { budget, tail_lines: 5, tail_budget: 400, head_budget: 300, ..Budgets::default() };
        let out = render(&data, &splits, &b, None);
        prop_assume!(out.starts_with("<<<OUTBOX-HEADER"));
        let re = signal::matcher(None).unwrap();
        let m = model(&data, &re);
        let (s, total, k) = counts(&out);
        prop_assert_eq!(total, m.hits);
        prop_assert_eq!(s + k, m.hits, "{}", out);
        prop_assert_eq!(header(&out)["signal_lines_shown"].as_u64(), Some(s));
        let kind = |n: u64| signal::kind_key(LineBody::Whole(&m.lines[n as usize - 1]));
        let mut grouped = 0;
        for (n, count) in listed(&out) {
            prop_assert!(m.matched[n as usize - 1], "line {} is not a signal line", n);
            if let Some((c, exact)) = count {
                let want = (0..m.lines.len()).filter(|&i| m.matched[i] && kind(i as u64 + 1) == kind(n)).count();
                if exact {
                    prop_assert_eq!(c, want as u64, "line {}", n);
                } else {
                    prop_assert!(c >= want as u64, "line {}", n);
                }
                grouped += c;
            }
        }
        prop_assert!(grouped <= s);
    }
}

/// Many lines of a few frequent shapes, and rare ones late in the input
/// (a tsc run): at a small budget every rare one is listed, and the
/// frequent ones are listed with their counts.
#[test]
fn rare_shapes_come_before_frequent_ones() {
    let mut data = String::new();
    let rare = [
        "src/z.ts(3,1): error TS2349: This expression is not callable.",
        "src/y.ts(9,2): error TS2430: Interface 'A' incorrectly extends interface 'B'.",
        "src/x.ts(4,7): error TS2686: 'React' refers to a UMD global.",
        "src/w.ts(1,21): error TS7016: Could not find a declaration file for module 'left-pad'.",
    ];
    for i in 0..3000 {
        data.push_str(&format!("src/app.ts({i},5): error TS2322: Type 'string' is not assignable to type 'number'.\n"));
        data.push_str(&format!("src/lib.ts({i},9): error TS2345: Argument of type 'X' is not assignable.\n"));
        if i % 700 == 699 {
            data.push_str(rare[i / 700]);
            data.push('\n');
        }
    }
    data.push_str("Found 6004 errors in 6 files.\n");
    let store = Store::new();
    let out = run(&store, &["--budget", "4000", "--envelope", "always"], data.as_bytes());
    let text = String::from_utf8(out.stdout).unwrap();
    for r in rare {
        let code = &r[r.find("TS").unwrap()..][..6];
        assert!(text.contains(r), "{code} missing:\n{text}");
    }
    assert!(text.contains("[TS2322 × 3000: lines ") || text.contains("[TS2345 × 3000: lines "), "{text}");
    let (s, m, k) = counts(&text);
    assert_eq!((m, s + k), (6005, 6005));
    // With a little more room, both frequent shapes are listed with their
    // counts and first and last line numbers.
    let out = run(&store, &["--budget", "6000", "--envelope", "always"], data.as_bytes());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(
            "error TS2322: Type 'string' is not assignable to type 'number'. [TS2322 × 3000: lines 1, 3, 5, …, 6003]"
        ),
        "{text}"
    );
    assert!(
        text.contains("error TS2345: Argument of type 'X' is not assignable. [TS2345 × 3000: lines 2, 4, 6, …, 6004]"),
        "{text}"
    );
    let (s, m, k) = counts(&text);
    assert_eq!((m, s + k), (6005, 6005));
}

fn scan(data: &[u8], budget: usize) -> Scanner {
    let cfg = ScanConfig { budget, tail_lines: 5, tail_budget: 300, signal: signal::matcher(None).unwrap() };
    let mut sc = Scanner::new(cfg);
    for block in data.chunks(1 << 16) {
        sc.feed(block);
    }
    sc.finish();
    sc
}

/// Signal lines evenly spread over 2 million lines: at a small budget the
/// listed ones come from every tenth of the input, not from its start.
#[test]
fn listed_signal_lines_span_the_whole_input() {
    const LINES: u64 = 2_000_000;
    let mut data = Vec::with_capacity(16 << 20);
    for i in 1..=LINES {
        if i % 1000 == 500 {
            data.extend_from_slice(format!("worker {} failed: timeout\n", i % 7).as_bytes());
        } else {
            data.extend_from_slice(format!("ok {i}\n").as_bytes());
        }
    }
    let budget = 3000;
    let sc = scan(&data, budget);
    let b = Budgets { budget, tail_lines: 5, tail_budget: 300, head_budget: 300, ..Budgets::default() };
    let re = signal::matcher(None).unwrap();
    let out = envelope::render(&sc.result(), &b, outbox::reference::run_facts(), &re);
    let lines = listed(&out);
    let tenths: std::collections::BTreeSet<u64> = lines.iter().map(|(n, _)| (n - 1) * 10 / LINES).collect();
    assert_eq!(tenths.len(), 10, "{lines:?}\n{out}");
    let (s, m, k) = counts(&out);
    assert_eq!((m, s + k), (2000, 2000));
}

/// 3,000 `Compiling` lines: the gap marker says how many of the gap's
/// lines have that shape (all of them but the head's and the tail's).
#[test]
fn the_gap_marker_names_what_the_gap_holds() {
    let mut data = String::new();
    for i in 0..3000 {
        data.push_str(&format!("   Compiling crate{i} v0.{i}.0\n"));
    }
    data.push_str("error: could not compile `app`\n");
    let b = Budgets::default();
    let out = render(data.as_bytes(), &[], &b, None);
    let marker = out.lines().find(|l| l.starts_with("--- lines ")).expect("a gap marker");
    let n: u64 = marker.split_once(" not shown (").unwrap().1.split(' ').next().unwrap().parse().unwrap();
    // Every gap line is a Compiling line, counted exactly (a small input;
    // head and tail grow over folded runs, so the gap is what they leave).
    assert!(n > 500 && n < 3000, "{marker}");
    assert!(marker.ends_with(&format!("({n} lines): {n} × \"Compiling <*> <*>\" ---")), "{marker}");
}

/// Past the exactly counted stretch the inventory samples: the count is
/// marked approximate and is close to the truth.
#[test]
fn a_large_gap_is_counted_approximately() {
    let mut data = Vec::new();
    let mut compiling = 0u64;
    let mut i = 0u64;
    while data.len() < 8 << 20 {
        if i.is_multiple_of(4) {
            data.extend_from_slice(format!("[{i}] INFO request served in {} ms\n", i % 97).as_bytes());
        } else {
            data.extend_from_slice(format!("   Compiling crate{i} v0.{}.0\n", i % 13).as_bytes());
            compiling += 1;
        }
        i += 1;
    }
    let sc = scan(&data, 14_000);
    let b = Budgets::default();
    let re = signal::matcher(None).unwrap();
    let out = envelope::render(&sc.result(), &b, outbox::reference::run_facts(), &re);
    let marker = out.lines().find(|l| l.starts_with("--- lines ")).expect("a gap marker");
    let c = marker.split_once(": ≈").expect("an estimated count").1;
    let (count, shape) = c.split_once(" × ").unwrap();
    assert!(shape.starts_with("\"Compiling <*> <*>\""), "{marker}");
    let count: f64 = count.parse().unwrap();
    assert!((count / compiling as f64 - 1.0).abs() < 0.03, "{count} vs {compiling}: {marker}");
    assert!(marker.contains("× \"[<*>] INFO request served in <*> ms\""), "{marker}");
}

/// The marker takes at most `max_chars`, never less than the plain marker.
#[test]
fn the_gap_marker_fits_its_room() {
    let mut data = String::new();
    for i in 0..3000 {
        data.push_str(&format!("   Compiling crate{i} v0.{i}.0\n\tnote: {}\n", "\x1b[1mbold\x07".repeat(i % 3)));
    }
    let sc = scan(data.as_bytes(), 14_000);
    let r = sc.result();
    let plain = envelope::gap_marker(&r, 10, 5000, 0);
    assert_eq!(plain, "--- lines 10-5000 not shown (4991 lines) ---\n");
    for max in [0, 10, plain.chars().count(), plain.chars().count() + 20, 80, 120, 200, 400] {
        let m = envelope::gap_marker(&r, 10, 5000, max);
        assert!(m.chars().count() <= max.max(plain.chars().count()), "{max}: {m}");
        assert!(m.starts_with("--- lines 10-5000 not shown (4991 lines)") && m.ends_with(" ---\n"), "{m}");
        assert!(!m.contains('\x1b') && !m.contains('\x07'), "made safe: {m:?}");
    }
    assert!(envelope::gap_marker(&r, 10, 5000, 400).contains(" × \"note: "));
}

/// Thousands of shapes seen a few times each compete for the summary's
/// table with one frequent shape: the marker names the frequent one and no
/// rare one with the count it inherited from an evicted entry.
#[test]
fn the_gap_marker_names_no_inflated_rare_shape() {
    let letters = |mut n: u64| {
        let mut w = String::new();
        for _ in 0..4 {
            w.push((b'a' + (n % 26) as u8) as char);
            n /= 26;
        }
        w
    };
    let mut data = String::new();
    let mut i = 0u64;
    while data.len() < 4 << 20 {
        data.push_str(&format!("line {i} ok\n"));
        if i.is_multiple_of(3) {
            data.push_str(&format!("event {} seen\n", letters(i / 3 % 20_000)));
        }
        i += 1;
    }
    let out = render(data.as_bytes(), &[], &Budgets::default(), None);
    let marker = out.lines().find(|l| l.starts_with("--- lines ")).expect("a gap marker");
    assert!(marker.contains(" × \"line <*> ok\""), "{marker}");
    assert!(!marker.contains("event"), "{marker}");
}

/// More kinds than the table holds: every hit is still counted (S + K =
/// M), a kind late in the input takes a place (its count marked as an
/// estimate), and the kinds with no line shown are named, then counted.
#[test]
fn kinds_past_the_table_are_estimated_and_named() {
    let mut data = String::new();
    for i in 0..300u32 {
        let w: String = (0..3).map(|k| (b'a' + (i / 26u32.pow(k) % 26) as u8) as char).collect();
        data.push_str(&format!("error in {w}\nok\n"));
    }
    let b = Budgets { budget: 1600, tail_lines: 5, tail_budget: 300, head_budget: 300, ..Budgets::default() };
    let out = render(data.as_bytes(), &[], &b, None);
    let (s, m, k) = counts(&out);
    assert_eq!((m, s + k), (300, 300));
    // The table holds budget / 16 = 100 kinds: the last one has a place.
    let sc = scan(data.as_bytes(), 1600);
    let r = sc.result();
    let last = r.signals.group(signal::kind_key(LineBody::Whole(b"error in nla"))).expect("the last kind has a place");
    assert!(!last.exact() && last.least() == 1, "{last:?}");
    let named = out.lines().find(|l| l.contains(" kinds not shown: ")).expect("kinds not shown are named");
    assert!(named.contains("\"error in ") && named.ends_with(" more ---"), "{named}");
}
