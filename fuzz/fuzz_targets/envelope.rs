//! The envelope renderer on any input, budgets and run facts: never longer
//! than the budget in chars, a header that parses as JSON with exact counts,
//! the end of the last line present, the markers consistent, and nothing
//! printed raw that a terminal would interpret.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use outbox::render::facts::{CommandInfo, RunFacts};
use outbox::store::{entry_id, sanitize_label};
use outbox::stream::line::LineBody;
use outbox::text::sanitize::display;
use outbox_fuzz::{
    displayed_end, header, imitates_marker, is_forbidden_char, last_chars, model, render, scan, FuzzBudgets, Input,
    SignalChoice,
};

/// Facts about the run, bounded as the application bounds them.
#[derive(Arbitrary, Debug)]
struct Facts {
    label: String,
    kept: bool,
    /// `filter.rs` puts I/O error messages here: short, but may hold a path.
    spill_error: Option<String>,
    interrupted: Option<bool>,
    /// Wrap mode: the command, truncated to 200 chars by the application.
    command: Option<String>,
    exit_status: Option<i32>,
    killed: Option<bool>,
    duration_ms: Option<u64>,
    /// "reading the input failed after N bytes: ..."
    read_error: Option<String>,
}

#[derive(Arbitrary, Debug)]
struct Case {
    budgets: FuzzBudgets,
    signal: SignalChoice,
    facts: Facts,
    input: Input,
}

fn cap(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

fn run_info(f: &Facts) -> RunFacts {
    let label = sanitize_label(&f.label, "stdin");
    let id = entry_id(&label, &[0xab; 32]);
    let sig = |b: bool| if b { libc_sigint() } else { libc_sigterm() };
    RunFacts {
        full_output: f.kept.then(|| format!("/home/user/.cache/outbox/{id}")),
        // Messages of io errors on a store path: bounded here to 200 chars.
        spill_error: if f.kept { None } else { Some(cap(f.spill_error.as_deref().unwrap_or("disk full"), 200)) },
        label,
        id,
        command: f.command.as_deref().map(|c| CommandInfo {
            command: cap(c, 200),
            exit_status: f.exit_status,
            killed_by_signal: f.killed.map(sig),
            duration_ms: f.duration_ms,
            // An odd duration stands for a run `--timeout` ended.
            timed_out: f.duration_ms.is_some_and(|d| d & 1 == 1),
            timeout_ms: f.duration_ms.map(|d| d / 2),
        }),
        interrupted: f.interrupted.map(sig),
        notes: f
            .read_error
            .iter()
            .map(|e| format!("reading the input failed after 123 bytes: {}", cap(e, 100)))
            .collect(),
        ..RunFacts::default()
    }
}

/// SIGINT and SIGTERM, as the header names them.
fn libc_sigint() -> i32 {
    2
}
fn libc_sigterm() -> i32 {
    15
}

fuzz_target!(|c: Case| {
    let (data, _) = c.input.build();
    let re = c.signal.regex();
    let b = c.budgets.budgets();
    let info = run_info(&c.facts);
    let sc = scan(&data, &[], c.budgets.scan_config(&re));
    let out = render(&sc, &b, &info, &re);
    let m = model(&data, &re);

    let n = out.chars().count();
    assert!(n <= b.budget, "envelope over budget: {n} > {}", b.budget);
    assert!(out.ends_with('\n'), "envelope ends with a newline");

    // Nothing raw that a terminal interprets: not in the lines, and not in
    // the header.
    let header_json = out.split('\n').nth(1).unwrap_or("");
    if let Some(bad) = header_json.chars().find(|&ch| is_forbidden_char(ch)) {
        panic!("raw {:?} in the header", bad);
    }
    let body = out.splitn(4, '\n').nth(3).unwrap_or("");
    if let Some(bad) = body.chars().find(|&ch| is_forbidden_char(ch)) {
        panic!("raw {:?} in the envelope body", bad);
    }
    // U+FFFD only where the input had invalid UTF-8 or U+FFFD itself.
    let facts_fffd = [&c.facts.spill_error, &c.facts.read_error, &c.facts.command]
        .iter()
        .any(|s| s.as_deref().is_some_and(|s| s.contains('\u{fffd}')));
    if !facts_fffd && std::str::from_utf8(&data).is_ok_and(|s| !s.contains('\u{fffd}')) {
        assert!(!body.contains('\u{fffd}'), "U+FFFD from valid input");
    }

    let h = header(&out);
    assert_eq!(h["chars"].as_u64(), Some(m.chars), "header chars");
    assert_eq!(h["bytes"].as_u64(), Some(m.bytes), "header bytes");
    assert_eq!(h["lines"].as_u64(), Some(m.lines.len() as u64), "header lines");
    assert_eq!(h["signal_hits"].as_u64(), Some(m.hits), "header signal_hits");
    assert_eq!(h["unterminated_last_line"].as_bool(), Some(m.unterminated));
    assert_eq!(h["binary"].as_bool(), Some(m.binary));
    assert_eq!(h["budget"].as_u64(), Some(b.budget as u64));

    let shown = h["signal_lines_shown"].as_u64().expect("signal_lines_shown");
    assert!(shown <= m.hits, "signal_lines_shown {shown} > hits {}", m.hits);
    // A section with nothing to show is not printed: then every signal
    // line is in the head or the tail.
    let marker = format!("\n--- signal lines ({shown} of {} shown) ---\n", m.hits);
    assert!(out.contains(&marker) || shown == m.hits, "missing {marker:?}");
    assert!(m.hits > 0 || !out.contains("\n--- signal lines ("), "a signal section without hits");
    if shown < m.hits {
        // (It may go on to say how many hits have shapes past the groups.)
        let omitted = format!("\n--- {} more signal lines omitted; read full_output", m.hits - shown);
        assert!(out.contains(&omitted), "missing {omitted:?}");
    }

    // The tail: the input's last T lines (T may pass the N asked for when
    // room is left), each shown or counted by the fold marker standing
    // for it.
    let asked = (b.tail_lines as u64).min(m.lines.len() as u64);
    let t = h["tail_lines_included"].as_u64().expect("tail_lines_included");
    let dropped = h["tail_lines_dropped"].as_u64().expect("tail_lines_dropped");
    assert_eq!(dropped, asked.saturating_sub(t), "tail dropped = asked - included");
    let marker = format!("\n--- tail {t}/{asked} lines ---\n");
    if m.lines.is_empty() {
        return;
    }
    let (_, tail_text) = out.rsplit_once(&marker).unwrap_or_else(|| panic!("missing {marker:?}"));
    let shown_tail: Vec<&str> = tail_text.split_terminator('\n').collect();
    let mut at = m.lines.len() - t as usize;
    for line in &shown_tail {
        if let Some((n, from)) = fold_count(line) {
            assert_eq!(from as usize, at + 1, "fold {line:?} out of place");
            at += n as usize;
            continue;
        }
        let raw = &m.lines[at];
        let want = display(raw).text;
        let last = at + 1 == m.lines.len();
        assert!(
            last || *line == want || line.starts_with("\\x") || redrawn(raw),
            "tail line {} is {line:?}, want {want:?}",
            at + 1
        );
        at += 1;
    }
    assert_eq!(at, m.lines.len(), "tail lines and folds cover the input's end");

    // The last line is always there, and its end survives (unless it is
    // redrawn: then its last frame is shown).
    let last = m.lines.last().expect("not empty");
    if !redrawn(last) {
        let cut = sc.result().tail.lines().last().is_some_and(|l| matches!(l.body(), LineBody::Cut { .. }));
        let d = display(last).text;
        let k = d.chars().count();
        let end = if cut {
            displayed_end(last)
        } else {
            last_chars(&d, if imitates_marker(&d) { 10.min(k.saturating_sub(1)) } else { 10 })
        };
        let newest = shown_tail.last().copied().unwrap_or("");
        assert!(newest.ends_with(&end), "last line end {end:?} missing; newest tail line is {newest:?}");
    }

    // The head: contiguous from line 1, each whole unless line 1 is cut.
    let hl = h["head_lines_included"].as_u64().expect("head_lines_included");
    let head_marker_start = format!("--- head {hl} lines (");
    assert!(hl == 0 || out.contains(&head_marker_start), "missing head marker for {hl} lines");
    // Line 1 gets room whenever it is not itself in the tail.
    if m.lines.len() as u64 > t {
        assert!(hl >= 1, "line 1 missing: neither in the head nor in the tail");
        let d = display(&m.lines[0]).text;
        let start: String = d.chars().take(8).collect();
        let start_esc: String = d.chars().skip(1).take(7).collect();
        assert!(out.contains(&start) || out.contains(&start_esc), "first line start {start:?} missing");
    }
});

/// (lines, first line) of a fold marker `--- N similar lines A-B folded ---`.
fn fold_count(line: &str) -> Option<(u64, u64)> {
    let rest = line.strip_prefix("--- ")?.strip_suffix(" folded ---")?;
    let (n, rest) = rest.split_once(" similar line")?;
    let range = rest.trim_start_matches('s').trim_start();
    let (from, _) = range.split_once('-')?;
    Some((n.parse().ok()?, from.parse().ok()?))
}

/// Whether a line is shown as a terminal finally displays it (carriage
/// returns, erase-line, backspace: see `text::redraw`), not as escaped
/// text.
fn redrawn(line: &[u8]) -> bool {
    line.iter().any(|&b| b == b'\r' || b == 0x08 || b == 0x1b)
}
