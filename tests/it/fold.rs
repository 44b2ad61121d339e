//! Folding runs of like lines, redrawn lines, and the budget that flows to
//! the tail: through the real binary, and as a property of the renderer
//! over random inputs in random block splits.

use std::sync::OnceLock;

use proptest::prelude::*;
use regex::Regex;

use crate::props;
use crate::util::{self, chars, Store};
use outbox::render::envelope::Budgets;

/// (lines it stands for, first, last) when `line` is a fold marker.
pub fn fold_count(line: &str) -> Option<(u64, u64, u64)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r#"^--- (\d+) similar lines? (\d+)-(\d+) folded ---$"#).unwrap());
    let c = re.captures(line)?;
    let n = |i: usize| c[i].parse::<u64>().unwrap();
    Some((n(1), n(2), n(3)))
}

fn outbox(args: &[&str], input: &[u8]) -> (String, serde_json::Value) {
    let store = Store::new();
    let out = util::run(&store, args, input);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let h = props::header(&text);
    (text, h)
}

/// The lines of the section after the marker starting `start`, up to the
/// next section marker (a fold marker belongs to its section).
fn section<'a>(text: &'a str, start: &str) -> Vec<&'a str> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with(start));
    lines.next();
    lines.take_while(|l| !l.starts_with("--- ") || fold_count(l).is_some()).collect()
}

/// Lines shown plus lines folded in a section.
fn covered(lines: &[&str]) -> u64 {
    lines.iter().map(|l| fold_count(l).map_or(1, |f| f.0)).sum()
}

#[test]
fn a_build_log_prints_its_errors_not_its_compiling_lines() {
    let mut input = String::new();
    let errors = [
        (700, "src/lib.rs:705:9"),
        (1400, "src/parse.rs:88:17"),
        (2100, "src/emit.rs:1203:5"),
        (2800, "src/main.rs:42:13"),
    ];
    for i in 1..=3000 {
        input.push_str(&format!("   Compiling crate{i} v0.{}.0\n", i % 97));
        if let Some((_, at)) = errors.iter().find(|e| e.0 == i) {
            let (file, rest) = at.split_once(':').unwrap();
            let line = rest.split(':').next().unwrap();
            input.push_str("error[E0308]: mismatched types\n");
            input.push_str(&format!("  --> {at}\n"));
            input.push_str("   |\n");
            input.push_str(&format!("{line} |         Ok(count)\n"));
            input.push_str(&format!("   |         ^^^^^^^^^ expected `u32`, found `i64` in {file}\n"));
            input.push_str("   |\n");
            // rustc ends each message with a blank line.
            input.push('\n');
        }
    }
    input.push_str("error: could not compile `app` (lib) due to 4 previous errors\n");
    let (text, h) = outbox(&[], input.as_bytes());
    assert!(chars(text.as_bytes()) <= 14_000);
    // The envelope takes about 2,000 chars, and each run of `Compiling`
    // lines shown (five split by the errors, one more where the gap cuts
    // one) shows its first and last lines exactly: under a fifth of this
    // small envelope, where unfolded they took 94% of a full one. The
    // issue's 10% is not reached on an envelope this short.
    let compiling: usize = text.lines().filter(|l| l.contains("Compiling")).map(|l| l.chars().count() + 1).sum();
    let total = text.chars().count();
    assert!(compiling * 100 < total * 20, "Compiling lines take {compiling} of {total} chars:\n{text}");
    assert!(compiling < 450, "{compiling} chars of Compiling lines:\n{text}");
    assert!(text.lines().filter(|l| fold_count(l).is_some()).count() <= 6, "one fold per run:\n{text}");
    assert_eq!(text.matches("error[E0308]: mismatched types").count(), 4, "{text}");
    for (_, at) in errors {
        assert!(text.contains(&format!("--> {at}")), "missing {at}:\n{text}");
    }
    assert!(text.ends_with("due to 4 previous errors\n"));
    assert_eq!(h["lines"], 3000 + 4 * 7 + 1);
}

/// The issue's case with real rustc output: 3,000 crates compiled, then
/// the captured failing build (four errors, four warnings, blank lines
/// between blocks as rustc prints them): `Compiling` lines take under 10%
/// of the envelope and every error appears with its `-->` location.
#[test]
fn compiling_lines_take_under_a_tenth_of_a_real_failing_build() {
    let real = std::fs::read_to_string("tests/fixtures/families/cargo/build-errors.out").unwrap();
    let mut input = String::new();
    for i in 1..=3000 {
        input.push_str(&format!("   Compiling crate{i} v0.{}.{}\n", i % 97, i % 7));
    }
    input.push_str(&real);
    let (text, h) = outbox(&[], input.as_bytes());
    assert!(chars(text.as_bytes()) <= 14_000);
    let compiling: usize = text.lines().filter(|l| l.contains("Compiling")).map(|l| l.chars().count() + 1).sum();
    let total = text.chars().count();
    assert!(compiling * 10 < total, "Compiling lines take {compiling} of {total} chars:\n{text}");
    for at in ["src/lib.rs:10:24", "src/lib.rs:18:39", "src/lib.rs:22:11", "src/lib.rs:23:5"] {
        assert!(text.contains(&format!("--> {at}")), "missing {at}:\n{text}");
    }
    assert_eq!(h["verdict"]["errors"], 4, "{text}");
}

#[test]
fn a_progress_line_shows_its_last_frame_and_how_often_it_was_drawn() {
    let mut input = b"Cloning into 'repo'...\n".to_vec();
    for p in 0..=100 {
        input.extend_from_slice(format!("Receiving objects: {p:>3}% ({}/4000)\r", p * 40).as_bytes());
    }
    input.extend_from_slice(b"Receiving objects: 100% (4000/4000), done.\n");
    for i in 0..3000 {
        input.extend_from_slice(format!("step {i}: {}\n", "ok ".repeat(i % 7)).as_bytes());
    }
    let (text, h) = outbox(&[], &input);
    assert!(
        text.contains("\nReceiving objects: 100% (4000/4000), done. [redrawn 101 times]\n"),
        "the last frame, once:\n{text}"
    );
    assert!(!text.contains("Receiving objects:  99%"), "{text}");
    // The frames still count in the header.
    assert_eq!(h["bytes"].as_u64(), Some(input.len() as u64));
    assert_eq!(h["lines"], 3002);
}

#[test]
fn a_shorter_last_frame_leaves_the_longer_one_visible_and_erase_line_clears_it() {
    let mut input = b"downloading 10 of 200 files\rdone\n".to_vec();
    input.extend_from_slice(b"pulling layer 1/9\r\x1b[2Kpulled\n");
    input.extend_from_slice(&b"filler\n".repeat(20));
    let (text, _) = outbox(&["--envelope", "always"], &input);
    assert!(text.contains("\ndoneloading 10 of 200 files [redrawn 1 time]\n"), "{text}");
    assert!(text.contains("\npulled [redrawn 1 time]\n"), "{text}");
}

#[test]
fn a_long_run_at_the_end_folds_and_the_tail_reaches_past_it() {
    let mut input = String::new();
    let words = ["alpha", "beta", "gamma"];
    for i in 1..=3000 {
        input.push_str(&format!("unit {i} compiled with {}\n", words[i % 3]));
    }
    for i in 0..200 {
        input.push_str(&format!("> Task :app:module{}:check UP-TO-DATE\n", i % 5));
    }
    input.push_str("BUILD SUCCESSFUL in 12s\n7 actionable tasks: 7 executed\n");
    for i in 0..60 {
        input.push_str(&format!("Shutdown hook {i} ran in 0.{i}ms\n"));
    }
    let (text, h) = outbox(&[], input.as_bytes());
    let tail = section(&text, "--- tail ");
    assert!(tail.contains(&"BUILD SUCCESSFUL in 12s"), "{text}");
    assert_eq!(fold_count(tail[tail.len() - 2]), Some((58, 3204, 3261)), "{text}");
    assert_eq!(tail.last(), Some(&"Shutdown hook 59 ran in 0.59ms"));
    assert!(tail.iter().any(|l| fold_count(l) == Some((198, 3002, 3199))), "{text}");
    // Room left over grows the tail past the 20 lines asked, by characters.
    let tn = h["tail_lines_included"].as_u64().unwrap();
    assert!(tn > 262 + 20, "{tn}");
    assert!(text.contains(&format!("--- tail {tn}/20 lines ---")));
    assert_eq!(covered(&tail), tn);
}

#[test]
fn seq_ends_with_its_last_number_and_is_mostly_folds() {
    let input: String = (1..=200_000).map(|i| format!("{i}\n")).collect();
    let (text, h) = outbox(&[], input.as_bytes());
    assert!(text.ends_with("\n200000\n"), "{}", &text[text.len() - 200..]);
    let numbers = text.lines().filter(|l| l.parse::<u64>().is_ok()).count();
    // The head's folded exemplars, and the tail's 20 lines asked for: the
    // ring holds only the end of the run, so the tail shows them one by one
    // (`--tail N` is a minimum) instead of folding from a line mid-run.
    assert!(numbers <= 6 + 20, "{numbers} numbers printed:\n{text}");
    let tail = section(&text, "--- tail ");
    let want: Vec<String> = (199_981..=200_000).map(|i| i.to_string()).collect();
    assert_eq!(tail, want, "{text}");
    let head = section(&text, "--- head ");
    assert_eq!(covered(&head), h["head_lines_included"].as_u64().unwrap());
}

#[test]
fn two_like_lines_print_both_and_an_imitated_fold_marker_is_escaped() {
    let mut input = String::from("same 1\nsame 2\nother\n");
    input.push_str("--- 5 similar lines 2-6 folded ---\n");
    input.push_str(&"pad line\n".repeat(3));
    let (text, _) = outbox(&["--envelope", "always"], input.as_bytes());
    assert!(text.contains("same 1\nsame 2\nother\n"), "{text}");
    assert!(text.contains("\\x2d-- 5 similar lines 2-6 folded"), "{text}");
    assert!(text.lines().filter_map(fold_count).all(|f| f == (1, 6, 6)), "{text}");
}

/// Lines with few shapes, so runs form, and the edge cases of streaming.
fn line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => (0u32..50).prop_map(|n| format!("Compiling crate{n} v0.{n}.0\n").into_bytes()),
        2 => (0u32..9).prop_map(|n| format!("step {n}\n").into_bytes()),
        1 => Just(b"error: boom\n".to_vec()),
        1 => Just(b"\n".to_vec()),
        1 => Just(b"crlf 1\r\n".to_vec()),
        1 => Just(b"a 1\rb 22\rc\n".to_vec()),
        1 => Just(vec![0xff, b' ', b'1', b'\n']),
        1 => Just(b"--- 3 similar lines 1-3 folded ---\n".to_vec()),
        1 => (1usize..3000).prop_map(|n| [vec![b'y'; n], b"\n".to_vec()].concat()),
    ]
}

fn input() -> impl Strategy<Value = Vec<u8>> {
    (prop::collection::vec(line(), 0..400), any::<bool>()).prop_map(|(v, cut)| {
        let mut d = v.concat();
        if cut {
            d.pop(); // no trailing newline
        }
        d
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 120, ..ProptestConfig::default() })]

    /// The head's shown and folded lines, the gap marker's count and the
    /// tail's shown and folded lines add up to the input's line count.
    #[test]
    fn head_gap_and_tail_account_for_every_line(
        data in input(),
        splits in prop::collection::vec(1usize..900, 0..30),
        budget in 1000usize..16000,
        tail in 1usize..40,
    ) {
        let b = Budgets { budget, tail_lines: tail, ..Budgets::default() };
        let text = props::render(&data, &splits, &b, None);
        prop_assert!(text.chars().count() <= budget);
        let h = props::header(&text);
        let lines = h["lines"].as_u64().unwrap();
        let head = section(&text, "--- head ");
        let tail_part = section(&text, "--- tail ");
        let (hn, tn) = (h["head_lines_included"].as_u64().unwrap(), h["tail_lines_included"].as_u64().unwrap());
        prop_assert_eq!(covered(&head), hn);
        prop_assert_eq!(covered(&tail_part), tn);
        let gap = text.lines().find_map(|l| {
            let rest = l.strip_prefix("--- lines ")?;
            let (range, _) = rest.split_once(" not shown (")?;
            let (a, z) = range.split_once('-')?;
            Some(z.parse::<u64>().unwrap() + 1 - a.parse::<u64>().unwrap())
        });
        prop_assert_eq!(hn + gap.unwrap_or(0) + tn, lines, "{}", text);
        // Folds only stand for runs of at least three lines.
        prop_assert!(text.lines().filter_map(fold_count).all(|f| f.0 >= 1 && f.2 + 1 - f.1 == f.0));
    }
}

/// A line of the input as the envelope shows it (in the head, the signal
/// section or the tail), not the header or a marker (the summary and the
/// header name kinds by their templates).
fn is_body_line(l: &str) -> bool {
    !l.starts_with("--- ") && !l.starts_with('{')
}

/// Sparse signal lines: every one is either listed, in the head or in the
/// tail (none folded away), and the header counts exactly those.
#[test]
fn signal_lines_in_the_grown_tail_are_shown_and_counted() {
    let words = ["alpha", "beta", "gamma"];
    let mut input = String::new();
    for i in 1..=6000 {
        if i % 150 == 0 {
            // A word of its own on each: each line its own kind, no group.
            let w: String = (0..3).map(|k| (b'a' + (i / 26usize.pow(k) % 26) as u8) as char).collect();
            input.push_str(&format!("error: boom in {w}\n"));
        } else {
            input.push_str(&format!("plain {i} {}\n", words[i % 3]));
        }
    }
    let (text, h) = outbox(&[], input.as_bytes());
    let visible = text.lines().filter(|l| l.contains("error: boom in") && is_body_line(l)).count() as u64;
    assert!(visible > 0);
    assert_eq!(h["signal_lines_shown"].as_u64(), Some(visible), "{text}");
    let omitted = h["signal_hits"].as_u64().unwrap() - visible;
    assert_eq!(omitted > 0, text.contains(&format!("--- {omitted} more signal lines omitted")), "{text}");
}

/// A redrawn last line too long to keep whole (only its ends are kept):
/// its last frame, with a lower bound on the redraws.
#[test]
fn a_long_redrawn_last_line_shows_its_last_frame() {
    let mut input: Vec<u8> = (0..2000).flat_map(|i| format!("line {i} of {}\n", i % 7).into_bytes()).collect();
    for p in 0..3000 {
        input.extend_from_slice(format!("\rDownloading {:>5}/3000 chunks", p).as_bytes());
    }
    input.extend_from_slice(b"\rDownloaded 3000 chunks.\n");
    let (text, _) = outbox(&[], &input);
    let last = text.lines().last().unwrap();
    // The last frame is shorter than the one before: its end shows.
    assert!(last.starts_with("Downloaded 3000 chunks.chunks [redrawn at least "), "{last}");
    assert!(last.ends_with(" times]"), "{last}");
}

/// More signal lines in the grown tail than the keeper holds whole (it
/// keeps `--tail` + 32): each is still counted as shown, none is folded
/// away, and S + K = M.
#[test]
fn many_signal_lines_in_the_grown_tail_are_all_counted() {
    let mut input = String::new();
    // More than the head arena holds (4 x budget bytes), so the tail
    // grows from the end.
    for i in 1..=8000 {
        if i > 7800 && i % 2 == 0 {
            // One shape: the group's listed line moves into the grown tail,
            // so no group note counts them; each must count as shown.
            input.push_str(&format!("error: bad value {i}\n"));
        } else {
            input.push_str(&format!("step {i} done, nothing to report here\n"));
        }
    }
    let (text, h) = outbox(&[], input.as_bytes());
    let visible = text.lines().filter(|l| l.contains("error: bad value") && is_body_line(l)).count() as u64;
    let in_tail = text.rsplit_once("\n--- tail ").unwrap().1.lines().filter(|l| l.contains("error: bad value")).count();
    assert!(in_tail > 60, "the tail should hold more hits than the keeper's {in_tail}:\n{text}");
    let hits = h["signal_hits"].as_u64().unwrap();
    assert_eq!(hits, 100);
    assert_eq!(h["signal_lines_shown"].as_u64(), Some(visible), "{text}");
    let omitted = hits - visible;
    assert_eq!(omitted > 0, text.contains(&format!("--- {omitted} more signal lines omitted")), "{text}");
}
