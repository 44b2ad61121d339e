//! Property tests of the scanner and the renderer against a naive model of
//! the contract: any split of the input into blocks gives the same envelope;
//! the envelope never exceeds the budget; its counts equal an independent
//! count; the first and last lines are present.

use outbox::reference::{self, model};
use outbox::render::envelope::{self, Budgets};
use outbox::render::facts::RunFacts;
use outbox::stream::scan::ScanConfig;
use outbox::stream::signal;
use outbox::text::sanitize::display;
use proptest::prelude::*;

pub fn render(data: &[u8], splits: &[usize], b: &Budgets, user_signal: Option<&str>) -> String {
    let re = signal::matcher(user_signal).unwrap();
    let cfg = ScanConfig { budget: b.budget, tail_lines: b.tail_lines, tail_budget: b.tail_budget, signal: re.clone() };
    let ends: Vec<usize> = splits.iter().scan(0, |at, &s| Some(*at + s).inspect(|&e| *at = e)).collect();
    let sc = reference::scan_blocks(cfg, reference::blocks_at(data, &ends));
    envelope::render(&sc.result(), b, &facts(), &re)
}

fn facts() -> RunFacts {
    RunFacts {
        label: "t".into(),
        id: "t-000000000000".into(),
        full_output: Some("/store/t-000000000000".into()),
        ..RunFacts::default()
    }
}

pub fn header(out: &str) -> serde_json::Value {
    let mut it = out.lines();
    assert_eq!(it.next(), Some("<<<OUTBOX-HEADER"));
    let v = serde_json::from_str(it.next().unwrap()).expect("header is JSON");
    assert_eq!(it.next(), Some("OUTBOX-HEADER"));
    v
}

fn piece() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        "[a-z ]{0,12}".prop_map(|s| s.into_bytes()),
        Just(b"\n".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"error".to_vec()),
        Just(b" FAILED ".to_vec()),
        Just("日本語エラー".as_bytes().to_vec()),
        Just(vec![0xe2, 0x82]),
        Just(vec![0xff]),
        Just(vec![0xf0, 0x9f, 0x98, 0x80]),
        Just(b"\x1b[31m".to_vec()),
        Just(b"\x07\t".to_vec()),
        Just(b"--- tail 1/1 lines ---".to_vec()),
        (1usize..6000).prop_map(|n| vec![b'x'; n]),
    ]
}

fn input() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(piece(), 0..200).prop_map(|v| v.concat())
}

fn budgets() -> impl Strategy<Value = Budgets> {
    (1000usize..20000, 0usize..5000, 0usize..3000, 1usize..60).prop_map(|(budget, tail_budget, head_budget, tail)| {
        Budgets { budget, tail_budget, head_budget, tail_lines: tail, ..Budgets::default() }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn any_block_split_gives_the_same_envelope(data in input(), splits in prop::collection::vec(1usize..700, 0..40), b in budgets()) {
        let whole = render(&data, &[], &b, None);
        let split = render(&data, &splits, &b, None);
        prop_assert_eq!(whole, split);
        let bytewise = render(&data, &vec![1; data.len().min(3000)], &b, None);
        prop_assert_eq!(render(&data, &[], &b, None), bytewise);
    }

    /// `whole_budget` is computed, not searched for: at that budget the
    /// envelope shows the same lines as at an unbounded one (only the
    /// header's figures differ), and it stays within it.
    #[test]
    fn whole_budget_shows_what_an_unbounded_budget_shows(data in input(), b in budgets()) {
        let re = signal::matcher(None).unwrap();
        let cfg = ScanConfig { budget: 1 << 20, tail_lines: b.tail_lines, tail_budget: b.tail_budget, signal: re.clone() };
        let sc = reference::scan_blocks(cfg, [&data[..]]);
        let sc = sc.result();
        let info = facts();
        let n = envelope::whole_budget(&sc, &b, &info);
        let body = |text: &str| text.splitn(4, '\n').nth(3).unwrap_or_default().to_string();
        let at = |budget| envelope::render(&sc, &Budgets { budget, ..b.clone() }, &info, &re);
        let whole = at(n);
        prop_assert!(whole.chars().count() <= n);
        prop_assert_eq!(body(&whole), body(&at(usize::MAX / 2)));
    }

    #[test]
    fn envelope_within_budget_counts_exact_ends_present(data in input(), splits in prop::collection::vec(1usize..5000, 0..10), b in budgets()) {
        let out = render(&data, &splits, &b, None);
        prop_assert!(out.chars().count() <= b.budget, "{} > {}", out.chars().count(), b.budget);
        let re = signal::matcher(None).unwrap();
        let m = model(&data, &re);
        let h = header(&out);
        prop_assert_eq!(h["chars"].as_u64(), Some(m.chars));
        prop_assert_eq!(h["bytes"].as_u64(), Some(m.bytes));
        prop_assert_eq!(h["lines"].as_u64(), Some(m.lines.len() as u64));
        prop_assert_eq!(h["signal_hits"].as_u64(), Some(m.hits));
        let shown = h["signal_lines_shown"].as_u64().unwrap();
        prop_assert!(shown <= m.hits);
        // A section with nothing to show is not printed: the signal lines
        // may all be in the head and the tail.
        let marker = format!("--- signal lines ({shown} of {} shown) ---", m.hits);
        prop_assert!(out.contains(&marker) || shown == m.hits, "missing {}", marker);
        prop_assert!(m.hits > 0 || !out.contains("--- signal lines"));
        if shown < m.hits {
            // (It may go on to say how many hits have shapes past the group table.)
            let omitted = format!("--- {} more signal lines omitted; read full_output", m.hits - shown);
            prop_assert!(out.contains(&omitted), "missing {}", omitted);
        }
        if let Some(last) = m.lines.last() {
            let d = display(last).text;
            let end: String = d.chars().rev().take(10).collect::<Vec<_>>().into_iter().rev().collect();
            prop_assert!(out.contains(&end), "last line end {:?} missing", end);
        }
        // The tail is the input's last T lines, contiguous and in order:
        // each shown, or counted by the fold marker that stands for it.
        let t = h["tail_lines_included"].as_u64().unwrap() as usize;
        let asked = (b.tail_lines as u64).min(m.lines.len() as u64);
        let marker = format!("\n--- tail {t}/{asked} lines ---\n");
        prop_assert_eq!(out.contains(&marker), !m.lines.is_empty());
        let tail_text = out.split_once(&marker).map(|x| x.1).unwrap_or("");
        let mut at = m.lines.len() - t;
        for line in tail_text.split_terminator('\n') {
            if let Some((n, from, _)) = crate::fold::fold_count(line) {
                prop_assert_eq!(from as usize, at + 1, "fold {:?} out of place", line);
                at += n as usize;
                continue;
            }
            let want = display(&m.lines[at]).text;
            let last = at + 1 == m.lines.len();
            prop_assert!(last || line == want || line.starts_with("\\x"), "tail line {} is {:?}, want {:?}", at + 1, line, want);
            at += 1;
        }
        prop_assert_eq!(at, m.lines.len());
        if m.lines.len() > 1 {
            let d = display(&m.lines[0]).text;
            // A shortened line 1 keeps at least ~9 display chars of its
            // start, cut before an escape that would not fit whole.
            let start: String = d.chars().take(4).collect();
            // Escaped marker imitations change the first char.
            let start_tail: String = d.chars().skip(1).take(3).collect();
            prop_assert!(out.contains(&start) || out.contains(&start_tail), "first line start {:?} missing", start);
        }
    }
}

#[test]
fn a_line_longer_than_every_buffer_keeps_its_end() {
    let mut data = b"first line\n".to_vec();
    data.extend(std::iter::repeat_n(b'y', 3 << 20));
    data.extend_from_slice(b" BUILD FAILED: 3 errors\n");
    let b = Budgets::default();
    let out = render(&data, &[65536; 64], &b, None);
    assert!(out.chars().count() <= b.budget);
    assert!(out.contains("BUILD FAILED: 3 errors\n"));
    assert!(out.contains("first line\n"));
    let h = header(&out);
    assert_eq!(h["signal_hits"], 1);
    assert_eq!(h["lines"], 2);
    let cut = out.split("…[").nth(1).unwrap().split(" chars cut]…").next().unwrap();
    let cut: u64 = cut.parse().unwrap();
    let line = out.lines().find(|l| l.contains("chars cut")).unwrap();
    let shown_y = line.matches('y').count() as u64;
    assert_eq!(cut + shown_y, 3 << 20, "cut + shown = the line's chars");
}

/// One list of characters unsafe to print (`sanitize::is_unsafe_char`): the
/// JSON folds escape exactly those (their escaper works on bytes for
/// speed), the text envelope's lines and header too.
#[test]
fn every_printer_escapes_the_one_list_of_unsafe_characters() {
    use outbox::stream::ingest::BlockSink;
    use outbox::text::sanitize::is_unsafe_char;
    let ranges = [0u32..0x300, 0x600..0x700, 0x2000..0x2100, 0xfe00..0xff00];
    for c in ranges.into_iter().flatten().filter_map(char::from_u32) {
        if matches!(c, '"' | '\\') {
            continue;
        }
        let doc = serde_json::to_string(&vec![format!("a{c}b")]).unwrap();
        let mut col = outbox::json::JsonCollector::new(1 << 20);
        col.feed(doc.as_bytes());
        let out = col.fold(&reference::fold_context(4000), None).expect("folds");
        assert_eq!(!out.contains(&format!("a{c}b")), is_unsafe_char(c), "JSON fold and U+{:04X}", c as u32);
        let shown = display(format!("a{c}b").as_bytes()).text;
        assert_eq!(
            shown != format!("a{c}b") && c != '\t',
            is_unsafe_char(c) && c != '\t',
            "line and U+{:04X}",
            c as u32
        );
    }
}

fn hostile() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        "[a-z \t]{0,8}".prop_map(|s| s.into_bytes()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"--- ".to_vec()),
        Just(b" ---".to_vec()),
        Just(b"<<<OUTBOX-HEADER".to_vec()),
        Just(b"OUTBOX-HEADER".to_vec()),
        Just(b"\x1b[31m".to_vec()),
        Just(b"\x1b]52;c;ZXZpbA==\x07".to_vec()),
        Just(b"\x1b]8;;http://x/\x1b\\".to_vec()),
        Just("\u{202e}\u{9b}\u{85}\u{2028}".as_bytes().to_vec()),
        Just(b"\xff\xc3".to_vec()),
        Just("日本語".as_bytes().to_vec()),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    /// Passthrough's safe copy: nothing unsafe raw (a `\r` only as part of
    /// a CRLF), no line that passes for a marker, every line kept.
    #[test]
    fn safe_copy_is_safe_and_keeps_the_lines(data in hostile()) {
        use outbox::text::sanitize::is_unsafe_char;
        let safe = envelope::safe_copy(&data);
        let bytes = safe.as_bytes();
        for (i, ch) in safe.char_indices() {
            let crlf = ch == '\r' && bytes.get(i + 1) == Some(&b'\n');
            prop_assert!(ch == '\t' || ch == '\n' || crlf || !is_unsafe_char(ch), "raw {:?} in {:?}", ch, safe);
        }
        for line in safe.split('\n') {
            let line = line.strip_suffix('\r').unwrap_or(line);
            prop_assert!(!line.starts_with("<<<OUTBOX-HEADER") && !line.starts_with("OUTBOX-HEADER"), "{:?}", line);
            prop_assert!(!(line.starts_with("--- ") && line.trim_end().ends_with(" ---")), "{:?}", line);
        }
        prop_assert_eq!(safe.matches('\n').count(), data.iter().filter(|&&b| b == b'\n').count());
    }
}
