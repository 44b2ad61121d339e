//! The text envelope through the real binary: pass-through, counts against
//! an independent count, budgets, boundaries, and the spill's byte identity.

use std::process::{Command, Stdio};

use outbox::stream::defaults::BUDGET;

use crate::util::{self, chars, run, Store};

fn is_entry(p: &std::path::Path) -> bool {
    outbox::store::is_entry_name(&p.file_name().unwrap().to_string_lossy())
}

fn header(stdout: &[u8]) -> serde_json::Value {
    let s = String::from_utf8(stdout.to_vec()).expect("envelope is UTF-8");
    let mut it = s.lines();
    assert_eq!(it.next(), Some("<<<OUTBOX-HEADER"), "no header in:\n{s}");
    let v: serde_json::Value = serde_json::from_str(it.next().unwrap()).expect("header parses as JSON");
    assert_eq!(it.next(), Some("OUTBOX-HEADER"));
    v
}

/// Independent line count: `\n`-separated, a final unterminated line counts.
fn line_count(data: &[u8]) -> u64 {
    let nl = data.iter().filter(|&&b| b == b'\n').count() as u64;
    nl + (!data.is_empty() && !data.ends_with(b"\n")) as u64
}

/// Runs outbox with `args` on `data` and checks what every envelope must
/// satisfy; returns (stdout, header).
fn envelope(store: &Store, args: &[&str], data: &[u8], budget: usize) -> (String, serde_json::Value) {
    let out = run(store, args, data);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(chars(&out.stdout) <= budget, "{} chars > budget {budget}", chars(&out.stdout));
    let h = header(&out.stdout);
    assert_eq!(h["chars"].as_u64().unwrap(), chars(data) as u64);
    assert_eq!(h["bytes"].as_u64().unwrap(), data.len() as u64);
    assert_eq!(h["lines"].as_u64().unwrap(), line_count(data));
    let path = h["full_output"].as_str().expect("full_output is a path");
    assert_eq!(std::fs::read(path).unwrap(), data, "spill is byte-identical");
    (text, h)
}

#[test]
fn small_text_passes_through_unchanged() {
    let store = Store::new();
    let data = b"hello \x1b[31mred\x1b[0m\nno newline at end";
    let out = run(&store, &[], data);
    assert_eq!(out.status.code(), Some(0));
    // Made safe as the envelope's lines are: colour codes are stripped from
    // what is printed (not from the stored copy, checked below).
    assert_eq!(out.stdout, b"hello red\nno newline at end");
    let kept: Vec<_> = store.entries().into_iter().filter(|p| is_entry(p)).collect();
    assert_eq!(kept.len(), 1);
    assert_eq!(std::fs::read(&kept[0]).unwrap(), data);
}

#[test]
fn input_at_the_budget_passes_just_over_is_enveloped() {
    let store = Store::new();
    let at = "é".repeat(999) + "\n"; // 1000 chars, 1999 bytes
    let out = run(&store, &["--budget", "1000"], at.as_bytes());
    assert_eq!(out.stdout, at.as_bytes());
    let over = "é".repeat(1000) + "\n";
    let (_, h) = envelope(&store, &["--budget", "1000"], over.as_bytes(), 1000);
    assert_eq!(h["chars"], 1001);
}

#[test]
fn empty_input_is_stated_when_the_envelope_is_forced() {
    let store = Store::new();
    let (text, h) = envelope(&store, &["--envelope", "always"], b"", BUDGET);
    assert!(text.contains("--- empty input: no bytes were read ---"));
    assert_eq!(h["lines"], 0);
}

/// Empty output is quiet: nothing printed, no entry kept, status 0 (and in
/// wrap mode the command's), so `grep -q` and searches with no hit under
/// the wrappers print no 500-character envelope about nothing.
#[test]
fn empty_input_prints_nothing_and_keeps_no_entry() {
    let store = Store::new();
    let out = run(&store, &[], b"");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    let kept: Vec<_> = std::fs::read_dir(store.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "gc-stamp")
        .collect();
    assert!(kept.is_empty(), "no entry and no temporary file: {kept:?}");
    for (cmd, status) in [("exit 0", 0), ("exit 3", 3), ("grep -q nothing /dev/null", 1)] {
        let out = run(&store, &["--", "sh", "-c", cmd], b"");
        assert_eq!(out.status.code(), Some(status), "{cmd}");
        assert!(out.stdout.is_empty(), "{cmd}: {}", String::from_utf8_lossy(&out.stdout));
    }
    assert!(store.entries().iter().all(|p| p.file_name().unwrap() == "gc-stamp"), "{:?}", store.entries());
}

#[test]
fn binary_input_is_enveloped_and_stated() {
    let store = Store::new();
    let (text, h) = envelope(&store, &[], b"PK\x03\x04\x00\x00binary\n", BUDGET);
    assert_eq!(h["binary"], true);
    assert!(text.contains("--- binary input"));
    assert!(text.contains("\\x00"), "NUL shown escaped");
}

#[test]
fn crlf_invalid_utf8_and_unterminated_last_line() {
    let store = Store::new();
    let mut data = Vec::new();
    for i in 0..3000 {
        data.extend_from_slice(format!("row {i} \u{fffd}").as_bytes());
        data.extend_from_slice(b"\xff\xe2\x82 ok\r\n");
    }
    data.extend_from_slice(b"FAILED: last line without newline");
    let (text, h) = envelope(&store, &[], &data, BUDGET);
    assert_eq!(h["unterminated_last_line"], true);
    assert_eq!(h["signal_hits"], 1);
    assert!(text.ends_with("FAILED: last line without newline\n"));
    assert!(!text.contains('\r'), "CR belongs to the terminator");
}

#[test]
fn many_error_lines_are_all_counted() {
    let store = Store::new();
    let mut data = String::new();
    for i in 0..100_000 {
        data.push_str(&format!("src/mod{i}.rs:{i}: error: mismatched types\n"));
    }
    data.push_str("error: could not compile `x` due to 100000 previous errors\n");
    let (text, h) = envelope(&store, &[], data.as_bytes(), BUDGET);
    let hits = h["signal_hits"].as_u64().unwrap();
    assert_eq!(hits, 100_001);
    // Each line names another file, with one message: one kind, whose
    // listed line stands for all of its lines with their count.
    let shown = h["signal_lines_shown"].as_u64().unwrap();
    assert_eq!(shown, hits, "{text}");
    assert!(text.contains(&format!("--- signal lines ({shown} of {hits} shown) ---")));
    assert!(text.contains("error: mismatched types [× 100000: lines "), "{text}");
    assert!(text.contains("src/mod0.rs:0: error"), "the first signal line is kept");
    assert!(text.ends_with("due to 100000 previous errors\n"));
}

#[test]
fn build_log_with_long_error_lines() {
    let store = Store::new();
    let mut data = String::new();
    for i in 0..400 {
        data.push_str(&format!("   Compiling crate{i} v0.1.0\n"));
        if i % 10 == 0 {
            data.push_str(&format!("error[E0308]: {} at src/lib.rs:{i}\n", "mismatched types ".repeat(60)));
        }
    }
    data.push_str("BUILD FAILED: 40 errors\n");
    let (text, h) = envelope(&store, &[], data.as_bytes(), BUDGET);
    assert_eq!(h["signal_hits"], 41);
    let listed: Vec<&str> = text.lines().filter(|l| l.contains(": error[E0308]")).collect();
    assert!(!listed.is_empty());
    for line in &listed {
        // The line itself, without its group's count: whole (it names
        // its file) or shortened in the middle, its start kept.
        let line = line.split(" [× ").next().unwrap();
        assert!(line.contains("at src/lib.rs:") || line.contains("chars cut"), "{line}");
        assert!(line.contains(": error[E0308]: mismatched types mismatched types"));
    }
    // The room the other lines leave widens them past the 300-char cap.
    assert!(listed.iter().any(|l| l.chars().count() > 300 + 8), "{text}");
    assert!(text.chars().count() <= BUDGET);
    assert!(text.ends_with("BUILD FAILED: 40 errors\n"));
    assert!(text.contains("   Compiling crate0 v0.1.0\n"));
}

#[test]
fn find_wc_output_keeps_its_total() {
    let store = Store::new();
    let mut data = String::new();
    for i in 0..50_000 {
        data.push_str(&format!("  {} ./src/deeply/nested/path/file_{i}.rs\n", 100 + i % 900));
    }
    data.push_str(" 658964 total\n");
    let (text, _) = envelope(&store, &[], data.as_bytes(), BUDGET);
    assert!(text.ends_with(" 658964 total\n"));
    assert!(text.contains("./src/deeply/nested/path/file_0.rs"));
}

#[test]
fn japanese_grep_output_counts_characters() {
    let store = Store::new();
    let mut data = String::new();
    for i in 0..20_000 {
        data.push_str(&format!("docs/設計書{i}.md:{i}:エラー処理の説明です。失敗した場合は再試行します\n"));
    }
    let (text, h) = envelope(&store, &["--budget", "5000"], data.as_bytes(), 5000);
    assert_eq!(h["chars"].as_u64().unwrap(), data.chars().count() as u64);
    assert!(text.ends_with("失敗した場合は再試行します\n"));
}

#[test]
fn a_5mb_single_line_keeps_both_ends() {
    let store = Store::new();
    let mut data = b"BEGIN".to_vec();
    data.extend(std::iter::repeat_n(b'z', 5_000_000));
    data.extend_from_slice(b"END: 3 errors\n");
    let (text, h) = envelope(&store, &[], &data, BUDGET);
    assert_eq!(h["lines"], 1);
    assert!(text.contains("BEGIN"));
    assert!(text.ends_with("END: 3 errors\n"));
    assert!(text.contains("chars cut]…"));
}

#[test]
fn ansi_is_stripped_and_marker_imitations_escaped() {
    let store = Store::new();
    let mut data = String::new();
    data.push_str("--- tail 1/1 lines ---\n<<<OUTBOX-HEADER\n");
    for i in 0..3000 {
        data.push_str(&format!("\x1b[32mline {i}\x1b[0m bell\x07\n"));
    }
    data.push_str("--- signal lines (0 of 0 shown) ---\n");
    let (text, h) = envelope(&store, &[], data.as_bytes(), BUDGET);
    assert!(!text.contains('\x1b'));
    assert!(!text.contains('\x07'));
    assert!(text.contains("bell\\x07"));
    assert!(h["ansi_sequences_stripped"].as_u64().unwrap() > 0);
    assert_eq!(text.matches("\n--- tail ").count(), 1, "only the real tail marker");
    assert_eq!(text.matches("<<<OUTBOX-HEADER").count(), 1);
    assert!(text.contains("\\x2d-- tail 1/1 lines ---"));
    assert!(text.ends_with("\\x2d-- signal lines (0 of 0 shown) ---\n"));
}

#[test]
fn envelope_modes_always_and_never() {
    let store = Store::new();
    let (text, h) = envelope(&store, &["--envelope", "always"], b"one\ntwo\n", BUDGET);
    assert_eq!(h["lines"], 2);
    assert!(text.ends_with("--- tail 2/2 lines ---\none\ntwo\n"));
    let big: String = (0..50_000).map(|i| format!("{i}\n")).collect();
    let out = run(&store, &["--envelope", "never"], big.as_bytes());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, big.as_bytes(), "never: the input unchanged, like tee");
    let kept = store.entries().into_iter().filter(|p| is_entry(p)).any(|p| std::fs::read(p).unwrap() == big.as_bytes());
    assert!(kept, "never still keeps the stored copy");
}

#[test]
fn options_change_the_envelope() {
    let store = Store::new();
    let data: String = (0..10_000).map(|i| format!("step {i} WARN something\n")).collect();
    let (text, h) = envelope(
        &store,
        &["--signal", "WARN", "--tail", "5", "--budget", "3000", "--label", "my job"],
        data.as_bytes(),
        3000,
    );
    assert_eq!(h["signal_hits"], 10_000);
    assert_eq!(h["label"], "my_job");
    assert!(h["id"].as_str().unwrap().starts_with("my_job-"));
    // `--tail 5` is a minimum: what the signal lines leave may grow it.
    let tail = text.lines().find(|l| l.starts_with("--- tail ")).unwrap();
    assert!(tail.ends_with("/5 lines ---") && !tail.starts_with("--- tail 0/"), "{tail}");
    assert_eq!(h["spill_ratio_chars"].as_f64().unwrap(), (data.len() as f64 / 100_000.0 * 100.0).round() / 100.0);
}

#[test]
fn bad_regex_is_a_clear_error() {
    let store = Store::new();
    let out = run(&store, &["--signal", "(unclosed"], b"x\n");
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--signal is not a valid regex"));
    let out = run(&store, &["--budget", "10"], b"x\n");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn closed_reader_exits_quietly_with_spill_complete() {
    let store = Store::new();
    let data: Vec<u8> = (0..200_000).flat_map(|i| format!("{i}\n").into_bytes()).collect();
    let script = format!("set -o pipefail; cat | {} | head -c 10 >/dev/null", util::bin());
    let out = util::run_cmd(
        {
            let mut c = Command::new("bash");
            c.arg("-c").arg(script).env("OUTBOX_DIR", store.path());
            c
        },
        &data,
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let kept: Vec<_> = store.entries().into_iter().filter(|p| is_entry(p)).collect();
    assert_eq!(std::fs::read(&kept[0]).unwrap(), data);
}

/// SPEC, text envelope 1: never stop early. With `--envelope never` the
/// input is copied to stdout as it arrives; when the reader goes away the
/// copy stops, but reading does not: the producer sees no SIGPIPE (bash's
/// pipefail would turn it into a failure) and the stored copy is whole.
#[test]
fn closed_reader_of_the_raw_copy_does_not_stop_the_input() {
    let store = Store::new();
    let data: Vec<u8> = (0..400_000).flat_map(|i| format!("{i}\n").into_bytes()).collect();
    let script = format!("set -o pipefail; cat | {} --envelope never | head -c 10 >/dev/null", util::bin());
    let out = util::run_cmd(
        {
            let mut c = Command::new("bash");
            c.arg("-c").arg(script).env("OUTBOX_DIR", store.path());
            c
        },
        &data,
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let kept: Vec<_> = store.entries().into_iter().filter(|p| is_entry(p)).collect();
    assert_eq!(kept.len(), 1);
    assert!(std::fs::read(&kept[0]).unwrap() == data, "the stored copy is whole");
}

#[test]
fn full_stdout_is_reported_with_the_spill_path() {
    let store = Store::new();
    let data: Vec<u8> = (0..100_000).flat_map(|i| format!("{i}\n").into_bytes()).collect();
    let mut cmd = Command::new(util::bin());
    cmd.env("OUTBOX_DIR", store.path());
    let devfull = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    cmd.stdout(Stdio::from(devfull)).stdin(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&data).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot write to stdout") && err.contains(store.path().to_str().unwrap()), "{err}");
}

#[test]
fn unusable_store_still_prints_the_envelope() {
    let store = Store::new();
    let file = store.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let data: Vec<u8> = (0..5000).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
    let out = run(&store, &["--dir", file.join("sub").to_str().unwrap()], &data);
    assert_eq!(out.status.code(), Some(1));
    let h = header(&out.stdout);
    assert!(h["full_output"].is_null());
    assert!(h["spill_error"].as_str().unwrap().len() > 5);
    assert_eq!(h["lines"], 5000);
    assert!(String::from_utf8_lossy(&out.stdout).contains("--- full output NOT kept"));
}

#[test]
fn regular_file_on_stdin_is_read_whole() {
    let store = Store::new();
    let path = store.path().join("input.log");
    let data: Vec<u8> = (0..600_000).flat_map(|i| format!("line {i} of a log\n").into_bytes()).collect();
    std::fs::write(&path, &data).unwrap();
    for args in [&[][..], &["--mmap"][..]] {
        let mut cmd = Command::new(util::bin());
        cmd.args(args).env("OUTBOX_DIR", store.path()).stdin(std::fs::File::open(&path).unwrap());
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let h = header(&out.stdout);
        assert_eq!(h["bytes"].as_u64().unwrap(), data.len() as u64);
        assert_eq!(h["lines"], 600_000);
        assert_eq!(std::fs::read(h["full_output"].as_str().unwrap()).unwrap(), data);
    }
}

/// Typed alone at a terminal, outbox waits for input a person may not know
/// it wants: it says so on the terminal, then works as usual. Piped, it
/// says nothing (every other test). Writing this test found that Ctrl-D
/// after a line did not end the input: the reader handed over the line on
/// the read that returned 0, then read again, and a terminal's end of
/// input happens once (a pipe's is sticky), so outbox waited for more.
#[test]
fn at_a_terminal_it_says_it_reads_standard_input() {
    use std::io::{Read, Write};
    let store = Store::new();
    let (mut master, slave) = util::pty();
    let mut cmd = Command::new(util::bin());
    cmd.env("OUTBOX_DIR", store.path())
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .stdout(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn outbox");
    drop(cmd); // our copies of the slave: the terminal hangs up when outbox exits
               // A line, then Ctrl-D at the start of the next: end of input.
    master.write_all(b"hello\n\x04").unwrap();
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        // Ends with EIO once the last slave descriptor is closed.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    let t = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > std::time::Duration::from_secs(10) {
            let _ = child.kill();
            panic!("outbox did not see the end of input (Ctrl-D) within 10 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let terminal = reader.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{terminal}");
    assert_eq!(out.stdout, b"hello\n", "small input passes through");
    assert!(terminal.contains("reading standard input from the terminal; end it with Ctrl-D"), "{terminal:?}");
}

/// The header keys the contract names, with values that agree with the
/// body: `head_lines_included` is the number of lines under the head
/// marker, and the tail's shown and dropped lines add up to the lines asked
/// for (here some are dropped: 50 asked, room for fewer, and the head's
/// reservation takes all the room the tail could otherwise grow into).
/// Neighbouring lines differ in shape, so none are folded.
#[test]
fn header_has_every_key_the_contract_names_and_they_agree_with_the_body() {
    let store = Store::new();
    let words = ["alpha", "beta", "gamma"];
    let data: Vec<u8> =
        (1..=5000).flat_map(|i| format!("line {i} of the {} log\n", words[i % 3]).into_bytes()).collect();
    let args = ["--tail", "50", "--tail-budget", "400", "--head-budget", "100000"];
    let (text, h) = envelope(&store, &args, &data, BUDGET);
    for key in [
        "label",
        "id",
        "chars",
        "bytes",
        "lines",
        "spill_ratio_chars",
        "signal_hits",
        "signal_lines_shown",
        "full_output",
        "head_lines_included",
        "tail_lines_included",
        "tail_lines_dropped",
        "unterminated_last_line",
        "strategy",
    ] {
        assert!(h.get(key).is_some_and(|v| !v.is_null()), "header lacks {key}: {h}");
    }
    assert_eq!(h["strategy"], "text-envelope");
    let lines: Vec<&str> = text.lines().collect();
    let head_at = lines.iter().position(|l| l.starts_with("--- head ")).unwrap();
    let under_head = lines[head_at + 1..].iter().take_while(|l| !l.starts_with("--- ")).count() as u64;
    assert_eq!(h["head_lines_included"].as_u64(), Some(under_head));
    let (shown, dropped) = (h["tail_lines_included"].as_u64().unwrap(), h["tail_lines_dropped"].as_u64().unwrap());
    assert!(dropped > 0, "400 chars hold fewer than 50 lines: {h}");
    assert_eq!(shown + dropped, 50);
    assert!(text.contains(&format!("\n--- tail {shown}/50 lines ---\n")), "{text}");
    let tail_at = lines.iter().position(|l| l.starts_with("--- tail ")).unwrap();
    assert_eq!((lines.len() - tail_at - 1) as u64, shown);
    assert_eq!(lines.last(), Some(&"line 5000 of the gamma log"));
}

/// `--progress` draws on a terminal (with a percentage and the time left
/// for a regular file on stdin) and clears its line before the envelope.
#[test]
fn progress_draws_on_a_terminal_and_says_how_much_of_a_file_is_read() {
    use std::io::Read;
    let store = Store::new();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("input.txt");
    let data: String = (0..200_000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(&path, &data).unwrap();
    let (mut master, slave) = util::pty();
    let mut cmd = Command::new(util::bin());
    cmd.args(["--progress", "--budget", "2000"])
        .env("OUTBOX_DIR", store.path())
        .stdin(Stdio::from(std::fs::File::open(&path).unwrap()))
        .stderr(Stdio::from(slave))
        .stdout(Stdio::piped());
    let child = cmd.spawn().expect("spawn outbox");
    drop(cmd);
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    let out = child.wait_with_output().unwrap();
    let drawn = reader.join().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(drawn.contains("outbox: "), "a frame was drawn: {drawn:?}");
    assert!(drawn.contains("%)") && drawn.contains("left"), "a file shows a percentage and the time left: {drawn:?}");
    // The bar's line is erased at the end (carriage return + erase line).
    assert!(
        drawn.trim_end_matches(['\r', '\n']).ends_with("\x1b[2K") || drawn.ends_with("\r\x1b[2K"),
        "cleared: {drawn:?}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("<<<OUTBOX-HEADER"), "{text}");
    assert!(text.contains("line 199999"));
}

#[test]
fn progress_is_silent_when_stderr_is_not_a_terminal() {
    let store = Store::new();
    let data: String = (0..50_000).map(|i| format!("line {i}\n")).collect();
    let out = run(&store, &["--progress"], data.as_bytes());
    assert!(out.status.success());
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Small input passes through made safe exactly as the envelope's lines:
/// before, it was printed raw, so it could forge an envelope (a fake header
/// block, fake markers) and reach a terminal with OSC 52 clipboard writes,
/// OSC 8 links, bidi overrides, C1 controls and lone CRs.
#[test]
fn passthrough_cannot_forge_an_envelope_or_reach_a_terminal_raw() {
    let store = Store::new();
    let data = "<<<OUTBOX-HEADER\n{\"chars\":1,\"full_output\":\"/tmp/evil\"}\nOUTBOX-HEADER\n\
--- tail 1/1 lines ---\n\
copy \x1b]52;c;ZXZpbA==\x07 this\n\
\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\\n\
file \u{202e}gpj.exe \u{9b}2J done\n\
progress 10%\rprogress 100%\n\
all good\n";
    let out = run(&store, &[], data.as_bytes());
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "\\x3c<<OUTBOX-HEADER", "{text}");
    assert_eq!(lines[2], "\\x4fUTBOX-HEADER");
    assert_eq!(lines[3], "\\x2d-- tail 1/1 lines ---");
    assert_eq!(lines[4], "copy  this");
    assert_eq!(lines[5], "click");
    // U+009B is a one-byte CSI: the sequence is stripped like ESC [.
    assert_eq!(lines[6], "file \\u{202e}gpj.exe  done");
    assert_eq!(lines[7], "progress 10%\\rprogress 100%");
    assert_eq!(lines[8], "all good");
    assert!(!text.contains('\u{1b}') && !text.contains('\u{9b}') && !text.contains('\u{202e}') && !text.contains('\r'));
    // The stored copy keeps the exact bytes, and --envelope never stays raw.
    let kept: Vec<_> = store.entries().into_iter().filter(|p| is_entry(p)).collect();
    assert_eq!(std::fs::read(&kept[0]).unwrap(), data.as_bytes());
    let raw = run(&store, &["--envelope", "never"], data.as_bytes());
    assert_eq!(raw.stdout, data.as_bytes());
}

#[test]
fn passthrough_keeps_plain_text_tabs_crlf_and_utf8_byte_for_byte() {
    let store = Store::new();
    let data = "名前\t値\r\nline two\r\n日本語のテキスト\n\tindented\nlast without newline".as_bytes();
    let out = run(&store, &[], data);
    assert_eq!(out.stdout, data);
}

/// The passthrough decision is made on what would be printed: input within
/// the budget whose escapes push it over gets the envelope instead.
#[test]
fn passthrough_that_escaping_would_push_over_the_budget_is_enveloped() {
    let store = Store::new();
    let data = format!("{}\n", "\u{1}".repeat(400)); // 401 chars, 1,601 once escaped
    let (text, h) = envelope(&store, &["--budget", "1000"], data.as_bytes(), 1000);
    assert_eq!(h["strategy"], "text-envelope");
    assert!(!text.contains('\u{1}'));
    let fits = format!("{}\n", "\u{1}".repeat(200)); // 801 chars once escaped
    let out = run(&store, &["--budget", "1000"], fits.as_bytes());
    assert_eq!(out.stdout, format!("{}\n", "\\x01".repeat(200)).as_bytes());
}

/// A store directory nested `depth` levels of 100-char names deep.
fn deep_dir(store: &Store, depth: usize) -> std::path::PathBuf {
    let mut d = store.path().to_path_buf();
    for i in 0..depth {
        d.push(format!("{i}{}", "d".repeat(99)));
    }
    d
}

/// A long store path used to break the budget (a 500-char path at
/// `--budget 1000` printed 1,051 chars) and the JSON header cut it to 300
/// chars in the middle, printing a path that does not exist. Now both print
/// the real path, within the budget the header states, raised from
/// `--budget` only as far as the path needs (and said on stderr).
#[test]
fn long_store_paths_are_printed_whole_within_the_stated_budget() {
    let store = Store::new();
    let text: Vec<u8> = (1..=5000).flat_map(|i| format!("{i}\n").into_bytes()).collect();
    let json: Vec<u8> =
        format!("[{}]", (0..2000).map(|i| format!("{{\"id\":{i}}}")).collect::<Vec<_>>().join(",")).into_bytes();
    for depth in [4, 9] {
        let dir = deep_dir(&store, depth);
        let dir_arg = dir.to_str().unwrap();
        assert!(dir_arg.len() > 400 + 500 * (depth / 9), "{}", dir_arg.len());
        for (args, data) in [(vec!["--budget", "1000"], &text), (vec!["--budget", "1000", "--format", "json"], &json)] {
            let mut all = vec!["--dir", dir_arg];
            all.extend(args.iter().copied());
            let out = run(&store, &all, data);
            assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
            let printed = String::from_utf8(out.stdout.clone()).unwrap();
            let h: serde_json::Value = match printed.strip_prefix("<<<OUTBOX-HEADER\n") {
                Some(rest) => serde_json::from_str(rest.lines().next().unwrap()).unwrap(),
                None => serde_json::from_str::<serde_json::Value>(&printed).unwrap()["header"].clone(),
            };
            let path = h["full_output"].as_str().expect("a path");
            assert!(std::path::Path::new(path).is_file(), "full_output {path} does not exist");
            assert_eq!(std::fs::read(path).unwrap(), *data);
            let budget = h["budget"].as_u64().unwrap() as usize;
            assert!(chars(&out.stdout) <= budget, "{} chars > stated budget {budget}", chars(&out.stdout));
            if depth == 9 {
                assert!(budget > 1000, "a 900-char path does not fit 1,000");
                assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("uses a budget of {budget}")));
            }
        }
    }
}

/// A store path that is not UTF-8 cannot be printed as `full_output`: such
/// a store is refused like an unusable one (it used to print a lossy path
/// that does not exist).
#[test]
fn a_store_path_that_is_not_utf8_is_refused() {
    use std::os::unix::ffi::OsStrExt;
    let store = Store::new();
    let dir = store.path().join(std::ffi::OsStr::from_bytes(b"caf\xe9"));
    let mut cmd = Command::new(util::bin());
    cmd.arg("--dir").arg(&dir).arg("--envelope").arg("always");
    let out = util::run_cmd(cmd, b"hello\n");
    assert_eq!(out.status.code(), Some(1));
    let h = header(&out.stdout);
    assert!(h["full_output"].is_null());
    assert!(h["spill_error"].as_str().unwrap().contains("not valid UTF-8"), "{h}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not valid UTF-8"));
}

/// A budget of 2^62 or more wrapped the head arena (4 bytes a char) to a
/// few bytes, so small input was no longer passed through.
#[test]
fn a_huge_budget_still_passes_small_input_through() {
    let store = Store::new();
    for budget in ["4611686018427387904", "18446744073709551615"] {
        let out = run(&store, &["--budget", budget], b"hello\nworld\n");
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.stdout, b"hello\nworld\n", "--budget {budget}");
    }
}

/// `--signal` anchors end a line only at `\n` (a `\r` belongs to the
/// terminator only before it): `^error` used to match after a lone CR.
#[test]
fn signal_anchors_do_not_treat_a_lone_cr_as_a_line_end() {
    let store = Store::new();
    let (_, h) = envelope(&store, &["--envelope", "always", "--signal", "^error"], b"a\rerror\nok\n", BUDGET);
    assert_eq!(h["signal_hits"], 0, "{h}");
    let (_, h) = envelope(&store, &["--envelope", "always", "--signal", "error$"], b"ok\r\nerror\r\nend\r\n", BUDGET);
    assert_eq!(h["signal_hits"], 1, "{h}");
}
