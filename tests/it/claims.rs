//! What the envelope asserts is true (issue 26): the tail covers the lines
//! asked for, a count without `≈` is exact and an estimate is near, a
//! progress line's last frame is shown, a tight budget drops fields rather
//! than emptying them, a short closing block just past the head is shown.

use serde_json::Value;

use crate::util::{self, chars, Store};

/// Runs outbox on `data` with `args`; returns (stdout, header).
fn envelope(args: &[&str], data: &[u8]) -> (String, Value) {
    let store = Store::new();
    let out = util::run(&store, args, data);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("the envelope is UTF-8");
    let line = text.lines().nth(1).unwrap_or_default();
    let header = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {text}"));
    (text, header)
}

/// The lines printed after the marker that starts with `start`, fold
/// markers included, up to the next section's marker.
fn section<'a>(text: &'a str, start: &str) -> Vec<&'a str> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with(start));
    lines.next();
    lines.take_while(|l| !l.starts_with("--- ") || l.ends_with(" folded ---")).collect()
}

/// `(seq 1 20000; echo done) | outbox`: the ring holds only the end of the
/// numbers' run; the tail still shows the 20 lines asked for.
#[test]
fn the_tail_shows_the_lines_asked_for_before_a_different_last_line() {
    let mut data: String = (1..=20_000).map(|i| format!("{i}\n")).collect();
    data.push_str("done\n");
    let (text, h) = envelope(&[], data.as_bytes());
    let tail = section(&text, "--- tail ");
    let mut want: Vec<String> = (19_982..=20_000).map(|i| i.to_string()).collect();
    want.push("done".into());
    assert_eq!(tail, want, "{text}");
    assert!(text.contains("--- tail 20/20 lines ---\n"), "{text}");
    assert_eq!((h["tail_lines_included"].as_u64(), h["tail_lines_dropped"].as_u64()), (Some(20), Some(0)));
    // Asked for more, the minimum grows with it.
    let (text, _) = envelope(&["--tail", "50"], data.as_bytes());
    assert_eq!(section(&text, "--- tail ").len(), 50, "{text}");
    assert!(chars(text.as_bytes()) <= 14_000);
}

/// The gap marker's items: (count, estimated, shape text).
fn gap_items(text: &str) -> (u64, u64, Vec<(f64, bool, String)>) {
    let line = text.lines().find(|l| l.starts_with("--- lines ") && l.contains(" not shown ")).expect("a gap");
    let range = line["--- lines ".len()..].split(' ').next().unwrap();
    let (from, to) = range.split_once('-').unwrap();
    let mut items = Vec::new();
    if let Some((_, list)) = line.split_once(" lines): ") {
        let list = list.strip_suffix(" ---").unwrap();
        // Items are `N × "shape"` joined by ", "; a shape may hold ", ".
        for item in list.split("\", ") {
            let (n, shape) = item.split_once(" × \"").unwrap();
            let shape = shape.strip_suffix('"').unwrap_or(shape);
            let estimated = n.starts_with('≈');
            items.push((n.trim_start_matches('≈').parse().unwrap(), estimated, shape.to_string()));
        }
    }
    (from.parse().unwrap(), to.parse().unwrap(), items)
}

/// Checks every item of the gap marker against the true count of its shape
/// among the gap's lines: exact when it says so, within a quarter when
/// marked `≈`. Returns how many items were checked.
fn assert_gap_counts_true(text: &str, data: &[u8]) -> usize {
    use outbox::text::{sanitize::display, template};
    let (from, to, items) = gap_items(text);
    let mut truth: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    for (i, line) in data.split(|&b| b == b'\n').enumerate() {
        let n = i as u64 + 1;
        if n < from || n > to {
            continue;
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let key = display(&template::spell(&line[..line.len().min(256)])).text.trim().to_string();
        *truth.entry(key).or_default() += 1;
    }
    let mut checked = 0;
    for (count, estimated, shape) in &items {
        if shape.contains(" chars cut]") {
            continue;
        }
        let want = *truth.get(shape).unwrap_or(&0) as f64;
        if *estimated {
            assert!((count - want).abs() <= want / 4.0, "≈{count} × {shape:?}: the gap holds {want}\n{text}");
        } else {
            assert_eq!(*count, want, "{count} × {shape:?} without ≈\n{text}");
        }
        checked += 1;
    }
    checked
}

/// A patch-like log: every code line its own shape (letters, no digits),
/// a `commit` and an `index` line now and then.
fn patch_like(lines: usize) -> Vec<u8> {
    let mut out = String::new();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut word = || {
        let mut w = String::new();
        for _ in 0..8 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            w.push((b'a' + (seed % 26) as u8) as char);
        }
        w
    };
    for i in 0..lines {
        match i % 500 {
            0 => out.push_str(&format!("commit {:040x}\n", i * 7919)),
            3 => out.push_str(&format!("index {:07x}..{:07x} 100644\n", i, i * 3)),
            _ => out.push_str(&format!("+    let {} = {}({});\n", word(), word(), word())),
        }
    }
    out.into_bytes()
}

/// A count without `≈` is exact; an estimate is near. The gap of a large,
/// varied output (more shapes than the summary holds, sampled past its
/// first 256 KiB) once said `5 × "commit #"` without `≈` where it held 160.
#[test]
fn gap_counts_are_exact_or_marked_and_near() {
    let data = patch_like(120_000);
    let (text, _) = envelope(&["--no-signal"], &data);
    assert_gap_counts_true(&text, &data);
    // Few shapes in a small gap: every count exact, and each checked.
    let mut small = String::new();
    for i in 0..4000 {
        small.push_str(&format!("   Compiling crate{i} v0.{i}.0\n"));
        if i % 40 == 0 {
            small.push_str(&format!("warning: unused variable `x{i}`\n"));
        }
    }
    let (text, _) = envelope(&["--no-signal"], small.as_bytes());
    assert!(!text.contains('≈'), "{text}");
    assert_eq!(assert_gap_counts_true(&text, small.as_bytes()), 2, "{text}");
    // Many lines of few shapes, sampled: estimates, near.
    let mut big = String::new();
    for i in 0..400_000 {
        big.push_str(&format!("   Compiling crate{i} v0.1.{i}\n"));
        if i % 10 == 0 {
            big.push_str(&format!("2026-12-03 INFO request {i} served in {} ms\n", i % 977));
        }
    }
    let (text, _) = envelope(&["--no-signal"], big.as_bytes());
    assert!(text.contains('≈'), "{text}");
    assert_eq!(assert_gap_counts_true(&text, big.as_bytes()), 2, "{text}");
}

/// This repository's own history, as the issue found it.
#[test]
fn gap_counts_on_this_repositorys_history() {
    let log = std::process::Command::new("git")
        .args(["log", "-p", "--no-color", "--no-ext-diff"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    let Some(log) = log.ok().filter(|o| o.status.success() && o.stdout.len() > 1 << 20) else {
        eprintln!("skipped: no git history here");
        return;
    };
    let (text, _) = envelope(&["--no-signal"], &log.stdout);
    assert_gap_counts_true(&text, &log.stdout);
}

/// `git clone`'s progress as it reaches a pipe: `Receiving objects` redrawn
/// 2,000 times in one physical line of about 140 KB, then more lines. The
/// line's final frame is shown, not left in the gap.
#[test]
fn a_progress_line_redrawn_two_thousand_times_shows_its_final_frame() {
    let mut data = String::from("Cloning into 'linux'...\n");
    for i in 1..40 {
        data.push_str(&format!("remote: Enumerating objects: {}, done.\n", i * 1000));
    }
    let frames: Vec<String> = (0..=2000)
        .map(|i| {
            format!("Receiving objects: {:3}% ({}/200000), {:.2} MiB | 10.00 MiB/s", i / 20, i * 100, i as f64 / 40.0)
        })
        .collect();
    data.push_str(&frames.join("\r"));
    data.push_str(", done.\n");
    let deltas: Vec<String> = (0..=500).map(|i| format!("Resolving deltas: {:3}% ({i}/500)", i / 5)).collect();
    data.push_str(&deltas.join("\r"));
    data.push_str(", done.\nUpdating files: 100% (70000/70000), done.\n");
    assert!(data.len() > 140_000);
    for args in [&[][..], &["--budget", "4000"][..]] {
        let (text, h) = envelope(args, data.as_bytes());
        let tail = section(&text, "--- tail ");
        let receiving = "Receiving objects: 100% (200000/200000), 50.00 MiB | 10.00 MiB/s, done. [redrawn at least";
        assert!(tail.iter().any(|l| l.starts_with(receiving)), "{text}");
        assert!(tail.iter().any(|l| l.starts_with("Resolving deltas: 100% (500/500), done. [redrawn")), "{text}");
        // The frames dropped from the middle of what is kept are counted:
        // every redraw is told, not only those in the kept ends.
        assert!(text.contains(" done. [redrawn at least 2000 times]\n"), "{text}");
        assert!(text.contains(" done. [redrawn at least 500 times]\n"), "{text}");
        assert_eq!(tail.last(), Some(&"Updating files: 100% (70000/70000), done."));
        assert!(!text.contains("not shown"), "{text}");
        assert_eq!(h["tail_lines_dropped"], 0, "{text}");
    }
}

/// A redrawn line over the scanner's 1 MiB line cap, read block by block:
/// its final frame is shown and the redraws in its dropped middle are
/// still counted.
#[test]
fn a_progress_line_over_the_line_cap_counts_every_redraw() {
    let frames: Vec<String> =
        (0..=40_000).map(|i| format!("Downloading layer: {:6}/40000 chunks, {:8} bytes", i, i * 4096)).collect();
    let mut data = String::from("Pulling image...\n");
    data.push_str(&frames.join("\r"));
    data.push_str(", done.\nDigest: sha256 ok\n");
    assert!(data.len() > 2 << 20);
    // At a large budget the line's two kept ends overlap: what both hold
    // is counted once.
    for args in [&[][..], &["--budget", "600000"][..]] {
        let (text, h) = envelope(args, data.as_bytes());
        let tail = section(&text, "--- tail ");
        let last = "Downloading layer:  40000/40000 chunks, 163840000 bytes, done. [redrawn at least 40000 times]";
        assert!(tail.contains(&last), "{text}");
        assert_eq!(h["tail_lines_dropped"], 0, "{text}");
    }
}

/// At the smallest budget the header drops optional fields instead of
/// printing them empty, and the summary keeps at least the status.
#[test]
fn a_tight_budget_drops_fields_and_keeps_the_status() {
    let store = Store::new();
    let script = "seq 1 30000; echo 'FAILED test_x.py::test_a - assert 1 == 2'; \
                  echo '=== 1 failed, 3 passed in 0.2s ==='; exit 1";
    let cases: &[(&[&str], &str)] = &[
        (&["--budget", "1000", "--", "sh", "-c", script], "; exit status 1 ---"),
        (&["--budget", "1000", "--label", "seq", "--", "seq", "1", "100000"], "--- summary: "),
    ];
    for (args, summary_end) in cases {
        let out = util::run(&store, args, b"");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(chars(text.as_bytes()) <= 1000, "{text}");
        let h: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
        let mut empty = Vec::new();
        fn walk(v: &Value, at: String, empty: &mut Vec<String>) {
            match v {
                Value::String(s) if s.is_empty() => empty.push(at),
                Value::Object(o) => o.iter().for_each(|(k, x)| walk(x, format!("{at}.{k}"), empty)),
                _ => {}
            }
        }
        walk(&h, String::new(), &mut empty);
        assert!(empty.is_empty(), "emptied fields {empty:?}: {text}");
        let summary = text.lines().nth(3).unwrap();
        assert!(summary.starts_with("--- summary: ") && summary.len() > "--- summary:  ---".len(), "{text}");
        assert!(summary.contains(summary_end), "{text}");
        assert_ne!(h["command"], Value::Null, "the command stays, shortened: {text}");
    }
    let out = util::run(&store, &["--budget", "1000", "--", "sh", "-c", script], b"");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("--- summary: FAILED (pytest)"), "{text}");
}

/// configure's closing block: the tail's 20 lines begin inside it; its
/// first lines, right after what the head shows, are not left in the gap.
#[test]
fn a_closing_block_just_past_the_head_is_shown_whole() {
    let mut data = String::new();
    for i in 0..450usize {
        data.push_str(&format!(
            "checking for feature_{:x}... {}\n",
            i as u64 * 2654435761 % 0xffffff,
            ["no", "yes"][i % 2]
        ));
    }
    data.push_str("configure: creating ./config.status\nconfig.status: creating Makefile\n\n");
    data.push_str("Configuration summary:\n");
    for k in ["prefix", "bindir", "libdir", "compiler", "CFLAGS", "LDFLAGS", "threads", "ssl", "zlib", "zstd"] {
        data.push_str(&format!("  {k:<12}: {k}-value\n"));
    }
    for k in ["docs", "tests", "debug", "static", "shared", "pic", "lto", "sanitizers", "install", "man"] {
        data.push_str(&format!("  {k:<12}: {k}-value\n"));
    }
    data.push_str("Now type 'make' to build.\n");
    let (text, _) = envelope(&[], data.as_bytes());
    let tail = section(&text, "--- tail ");
    assert_eq!(tail.first(), Some(&"Configuration summary:"), "{text}");
    assert_eq!(tail.last(), Some(&"Now type 'make' to build."), "{text}");
    assert!(chars(text.as_bytes()) <= 14_000);
}
