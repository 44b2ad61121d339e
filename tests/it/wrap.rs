//! Wrap mode through the real binary: exit statuses (the command's, 128+N,
//! 127, 126, 125), merged order, passthrough, metadata, signals forwarded
//! to the process group, and background processes that hold the pipe.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::util::{self, Store};

/// A private store: mode 0700, which the store insists on (tempfile makes
/// directories with the umask's mode).
fn private_store() -> Store {
    use std::os::unix::fs::PermissionsExt;
    let store = Store::new();
    std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    store
}

fn outbox(store: &Store, args: &[&str]) -> Command {
    let mut cmd = Command::new(util::bin());
    cmd.args(args).env("OUTBOX_DIR", store.path());
    cmd
}

/// Runs `outbox ARGS` with empty stdin.
fn wrap(store: &Store, args: &[&str]) -> Output {
    util::run_cmd(outbox(store, args), b"")
}

fn header(stdout: &[u8]) -> serde_json::Value {
    let s = String::from_utf8_lossy(stdout);
    let mut it = s.lines();
    assert_eq!(it.next(), Some("<<<OUTBOX-HEADER"), "no header in:\n{s}");
    let v = serde_json::from_str(it.next().unwrap()).expect("header parses as JSON");
    assert_eq!(it.next(), Some("OUTBOX-HEADER"));
    v
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The metadata of the only entry in the store.
fn only_meta(store: &Store) -> serde_json::Value {
    let metas: Vec<_> = store.entries().into_iter().filter(|p| p.to_string_lossy().ends_with(".meta")).collect();
    assert_eq!(metas.len(), 1, "{metas:?}");
    serde_json::from_slice(&std::fs::read(&metas[0]).unwrap()).unwrap()
}

fn spawn(mut cmd: Command) -> Child {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn outbox")
}

#[test]
fn large_output_and_exit_3() {
    let store = private_store();
    let out = wrap(&store, &["--", "sh", "-c", "seq 1 100000; echo 'build FAILED' >&2; exit 3"]);
    assert_eq!(out.status.code(), Some(3), "stderr: {}", stderr(&out));
    let h = header(&out.stdout);
    assert_eq!(h["exit_status"], 3);
    assert_eq!(h["command"], "sh -c 'seq 1 100000; echo '\\''build FAILED'\\'' >&2; exit 3'");
    assert_eq!(h["label"], "sh");
    assert_eq!(h["lines"], 100_001);
    assert!(h["duration_ms"].is_u64());
    assert!(h.get("killed_by_signal").is_none());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.trim_end().ends_with("build FAILED"), "the verdict is the last line:\n{text}");
    // The spill holds the exact merged bytes, and the metadata the facts.
    let spill = std::fs::read(h["full_output"].as_str().unwrap()).unwrap();
    let mut expected: String = (1..=100_000).map(|i| format!("{i}\n")).collect();
    expected.push_str("build FAILED\n");
    assert_eq!(spill, expected.as_bytes());
    let meta = only_meta(&store);
    assert_eq!(meta["exit_status"], 3);
    assert_eq!(meta["complete"], true);
    assert!(meta["command"].as_str().unwrap().starts_with("sh -c "));
    assert!(meta["duration_ms"].is_u64());
}

#[test]
fn killed_by_a_signal() {
    let store = private_store();
    let out = wrap(&store, &["--", "sh", "-c", "seq 1 50000; kill -KILL $$"]);
    assert_eq!(out.status.code(), Some(128 + 9), "stderr: {}", stderr(&out));
    let h = header(&out.stdout);
    assert_eq!(h["killed_by_signal"], "SIGKILL");
    assert_eq!(h["exit_status"], 137);
    assert_eq!(only_meta(&store)["signal"], 9);
}

#[test]
fn small_output_passes_through_and_keeps_the_status() {
    let store = private_store();
    let out = wrap(&store, &["--", "sh", "-c", "echo hi; exit 4"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(out.stdout, b"hi\n");
    assert_eq!(only_meta(&store)["exit_status"], 4);
}

#[test]
fn stdout_and_stderr_merge_in_arrival_order() {
    let store = private_store();
    let script = "for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; done";
    let out = wrap(&store, &["--", "sh", "-c", script]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let want: String = (1..=5).map(|i| format!("out{i}\nerr{i}\n")).collect();
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
    assert!(out.stderr.is_empty(), "nothing of the command's goes to outbox's stderr");
}

/// `--stderr inherit` (the shell wrappers' choice when the user redirected
/// 2>): the command's stderr is outbox's own, untouched; only stdout is
/// captured, stored and enveloped.
#[test]
fn stderr_inherit_leaves_stderr_alone() {
    let store = private_store();
    let script = "echo out; echo err >&2";
    let mut cmd = outbox(&store, &["--stderr", "inherit", "--", "sh", "-c", script]);
    cmd.stderr(Stdio::null()).stdout(Stdio::piped()).stdin(Stdio::null());
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, b"out\n", "2>/dev/null: only stdout is printed");
    let out = wrap(&store, &["--stderr", "inherit", "--", "sh", "-c", script]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"out\n");
    assert_eq!(out.stderr, b"err\n", "stderr reaches outbox's stderr as written");
    for meta in metas_by_label(&store).values() {
        assert_eq!(meta["bytes"], 4, "only stdout is stored: {meta}");
    }
    // Large output: the envelope says it holds stdout alone.
    let out = wrap(&store, &["--stderr", "inherit", "--", "sh", "-c", "seq 1 50000; echo 'error: x' >&2"]);
    assert_eq!(out.stderr, b"error: x\n");
    let h = header(&out.stdout);
    assert_eq!(h["stream"], "stdout");
    assert_eq!(h["lines"], 50000);
    assert_eq!(h["label"], "sh");
}

#[test]
fn stdin_is_inherited() {
    let store = private_store();
    let out = util::run_cmd(outbox(&store, &["--", "cat"]), b"a\nb\n");
    assert_eq!(out.stdout, b"a\nb\n");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn command_not_found_is_127() {
    let store = private_store();
    let out = wrap(&store, &["--", "outbox-no-such-command-7f3a"]);
    assert_eq!(out.status.code(), Some(127));
    assert!(stderr(&out).contains("outbox: outbox-no-such-command-7f3a: command not found"), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert!(store.entries().is_empty(), "nothing is stored for a command that never ran");
}

#[test]
fn not_executable_is_126() {
    use std::os::unix::fs::PermissionsExt;
    let store = private_store();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = wrap(&store, &["--", script.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(126), "{}", stderr(&out));
    assert!(stderr(&out).contains("permission denied"), "{}", stderr(&out));
    // A directory cannot be run either.
    let out = wrap(&store, &["--", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(126), "{}", stderr(&out));
    // A script whose interpreter is missing was found: 126, not 127.
    let bad = dir.path().join("bad.sh");
    std::fs::write(&bad, "#!/nonexistent/interpreter\n").unwrap();
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = wrap(&store, &["--", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(126), "{}", stderr(&out));
}

#[test]
fn outbox_failure_is_125_unless_the_command_failed() {
    let store = private_store();
    let blocker = store.path().join("not-a-dir");
    std::fs::write(&blocker, "").unwrap();
    let bad_store = blocker.join("store");
    let run = |script: &str| {
        let mut cmd = outbox(&store, &["--", "sh", "-c", script]);
        cmd.env("OUTBOX_DIR", &bad_store);
        util::run_cmd(cmd, b"")
    };
    let ok = run("echo hi");
    assert_eq!(ok.status.code(), Some(125), "{}", stderr(&ok));
    assert!(stderr(&ok).contains("could not be kept"), "{}", stderr(&ok));
    let failed = run("echo hi; exit 2");
    assert_eq!(failed.status.code(), Some(2), "the command's status wins");
}

/// The metadata of every entry, by label.
fn metas_by_label(store: &Store) -> std::collections::BTreeMap<String, serde_json::Value> {
    store
        .entries()
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".meta"))
        .map(|p| serde_json::from_slice::<serde_json::Value>(&std::fs::read(p).unwrap()).unwrap())
        .map(|m| (m["label"].as_str().unwrap().to_string(), m))
        .collect()
}

/// Temporary spill files in the store.
fn temp_files(store: &Store) -> usize {
    store.entries().iter().filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(".tmp-")).count()
}

/// The envelopes printed with `--stderr separate`: (header, whole text).
fn envelopes(stdout: &[u8]) -> Vec<(serde_json::Value, String)> {
    let s = String::from_utf8_lossy(stdout).into_owned();
    s.split("<<<OUTBOX-HEADER\n")
        .skip(1)
        .map(|part| {
            let text = format!("<<<OUTBOX-HEADER\n{part}");
            (header(text.as_bytes()), text)
        })
        .collect()
}

#[test]
fn separate_small_streams_pass_through_to_their_own_descriptors() {
    let store = private_store();
    let out = wrap(&store, &["--stderr", "separate", "--", "sh", "-c", "echo out1; echo err1 >&2; echo out2; exit 4"]);
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(out.stdout, b"out1\nout2\n");
    assert_eq!(out.stderr, b"err1\n");
    let metas = metas_by_label(&store);
    assert_eq!(metas.keys().collect::<Vec<_>>(), ["sh", "sh.stderr"]);
    assert_eq!(metas["sh"]["strategy"], "passthrough");
    assert_eq!(metas["sh.stderr"]["bytes"], 5);
    assert_eq!(metas["sh.stderr"]["exit_status"], 4);
}

#[test]
fn separate_large_streams_get_one_envelope_each_within_the_budget() {
    let store = private_store();
    // stdout is large and quiet, stderr small with every line a signal:
    // stderr is shown whole, stdout gets the rest of the budget.
    let script = "seq 1 100000; seq 1 50 | sed 's/^/error: case /' >&2; exit 3";
    let out = wrap(&store, &["--stderr", "separate", "--budget", "8000", "--", "sh", "-c", script]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(text.chars().count() <= 8000, "{} chars", text.chars().count());
    let env = envelopes(&out.stdout);
    assert_eq!(env.len(), 2, "{text}");
    let (ho, to) = &env[0];
    let (he, te) = &env[1];
    assert_eq!(ho["stream"], "stdout");
    assert_eq!(he["stream"], "stderr");
    assert_eq!(ho["lines"], 100000);
    assert_eq!(he["lines"], 50);
    assert_eq!(ho["exit_status"], 3);
    assert_eq!(he["exit_status"], 3);
    assert_eq!(ho["budget"].as_u64().unwrap() + he["budget"].as_u64().unwrap(), 8000);
    // The order between the streams is gone, but each keeps its own.
    let body = |text: &str| text.splitn(4, '\n').nth(3).unwrap().to_string();
    assert!(to.ends_with("\n100000\n") && !body(to).contains("error: case"), "{to}");
    for i in 1..=50 {
        assert!(te.contains(&format!("error: case {i}\n")), "stderr line {i} missing:\n{te}");
    }
    assert_eq!(he["signal_hits"], 50);
    // Each stream is stored on its own, byte for byte.
    let metas = metas_by_label(&store);
    let stored = |label: &str| std::fs::read(metas[label]["id"].as_str().map(|id| store.path().join(id)).unwrap());
    let want_out: String = (1..=100000).map(|i| format!("{i}\n")).collect();
    assert_eq!(stored("sh").unwrap(), want_out.as_bytes());
    let want_err: String = (1..=50).map(|i| format!("error: case {i}\n")).collect();
    assert_eq!(stored("sh.stderr").unwrap(), want_err.as_bytes());
    assert_eq!(ho["full_output"].as_str().unwrap(), store.path().join(ho["id"].as_str().unwrap()).to_str().unwrap());
}

#[test]
fn separate_two_large_streams_share_the_budget_evenly() {
    let store = private_store();
    let script = "seq 1 50000; seq 1 50000 | sed 's/^/warn /' >&2";
    let out = wrap(&store, &["--stderr", "separate", "--", "sh", "-c", script]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let env = envelopes(&out.stdout);
    assert_eq!(env.len(), 2);
    assert_eq!(env[0].0["budget"], 7000);
    assert_eq!(env[1].0["budget"], 7000);
    assert!(env[0].1.ends_with("\n50000\n"), "stdout's verdict is at its end");
    assert!(env[1].1.ends_with("\nwarn 50000\n"), "and stderr's at its end");
}

/// A command printing a large JSON document on stdout.
const JSON_CMD: &str = "printf '{\"items\": ['; seq 1 20000 | sed 's/.*/{\"id\": &},/'; echo '{\"id\": 0}]}'";

#[test]
fn format_json_folds_a_wrapped_commands_document_and_records_the_command() {
    let store = private_store();
    let script = format!("{JSON_CMD}; exit 5");
    let out = wrap(&store, &["--format", "json", "--", "sh", "-c", &script]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let h = &v["header"];
    assert_eq!(h["strategy"], "json-shape");
    assert_eq!(h["item_count"], 20001);
    assert_eq!(h["exit_status"], 5);
    assert!(h["command"].as_str().unwrap().starts_with("sh -c "), "{h}");
    assert!(h["duration_ms"].is_u64());
    assert!(h.get("stream").is_none());
    assert_eq!(only_meta(&store)["strategy"], "json-shape");
}

#[test]
fn format_json_with_stderr_merged_falls_back_and_says_why() {
    let store = private_store();
    let script = format!("{JSON_CMD}; echo 'warning: slow' >&2");
    let out = wrap(&store, &["--format", "json", "--", "sh", "-c", &script]);
    assert_eq!(out.status.code(), Some(0));
    let h = header(&out.stdout);
    assert_eq!(h["strategy"], "text-envelope");
    assert!(h["json_error"]["reason"].is_string(), "{h}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("--stderr separate keeps it out"));
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("warning: slow\n"));
}

#[test]
fn format_json_with_stderr_separate_folds_stdout_and_envelopes_stderr() {
    let store = private_store();
    let script = format!("{JSON_CMD}; echo 'warning: slow' >&2; exit 1");
    let out = wrap(&store, &["--format", "json", "--stderr", "separate", "--", "sh", "-c", &script]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(text.chars().count() <= 14_000);
    // stdout is the document alone; stderr's envelope is on stderr.
    let v: serde_json::Value = serde_json::from_str(&text).expect("stdout is one JSON document");
    let err = stderr(&out);
    let rest = err.split_once("<<<OUTBOX-HEADER\n").expect("stderr's envelope is on stderr").1;
    assert_eq!(v["header"]["stream"], "stdout");
    assert_eq!(v["header"]["exit_status"], 1);
    assert_eq!(v["header"]["item_count"], 20001);
    let (h, _) = &envelopes(format!("<<<OUTBOX-HEADER\n{rest}").as_bytes())[0];
    assert_eq!(h["stream"], "stderr");
    assert_eq!(h["strategy"], "text-envelope", "stderr is always text");
    assert!(rest.ends_with("warning: slow\n"));
    let b = v["header"]["budget"].as_u64().unwrap() + h["budget"].as_u64().unwrap();
    assert_eq!(b, 14_000);
}

#[test]
fn separate_needs_room_for_two_envelopes() {
    let store = private_store();
    let out = wrap(&store, &["--stderr", "separate", "--budget", "1999", "--", "echo", "hi"]);
    assert_eq!(out.status.code(), Some(125));
    assert!(stderr(&out).contains("--budget 2000"), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "the command was not run");
}

/// A bad command line is a usage error, 2 (it used to be 1, as if outbox
/// had failed at its work), with the usage and a line that says how.
#[test]
fn separate_without_a_command_is_refused() {
    let store = private_store();
    for mode in ["separate", "inherit"] {
        let out = util::run_cmd(outbox(&store, &["--stderr", mode]), b"hello\n");
        assert_eq!(out.status.code(), Some(2), "{mode}");
        assert!(stderr(&out).contains("needs a command"), "{}", stderr(&out));
        assert!(stderr(&out).contains(&format!("outbox --stderr {mode} -- CMD")), "{}", stderr(&out));
        assert!(out.stdout.is_empty());
    }
}

/// An invalid --signal pattern is a usage error, 2, in both modes (it was
/// 1, and 125 in wrap mode), and the command is not run.
#[test]
fn an_invalid_signal_regex_is_a_usage_error() {
    let store = private_store();
    let out = util::run_cmd(outbox(&store, &["--signal", "(unclosed"]), b"x\n");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--signal is not a valid regex"), "{}", stderr(&out));
    let out = wrap(&store, &["--signal", "(unclosed", "--", "echo", "ran"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "the command was not run");
}

#[test]
fn separate_with_envelope_never_copies_each_stream_to_its_own_descriptor() {
    let store = private_store();
    let script = "seq 1 30000; seq 1 20000 >&2; exit 1";
    let out = wrap(&store, &["--stderr", "separate", "--envelope", "never", "--", "sh", "-c", script]);
    assert_eq!(out.status.code(), Some(1));
    let want = |n: usize| (1..=n).map(|i| format!("{i}\n")).collect::<String>().into_bytes();
    assert_eq!(out.stdout, want(30000));
    assert_eq!(out.stderr, want(20000));
    assert_eq!(metas_by_label(&store).len(), 2);
}

#[test]
fn separate_sigint_prints_both_envelopes_and_keeps_both_entries() {
    let store = private_store();
    let script = "trap 'exit 7' INT; seq 1 20000; seq 1 30000 >&2; while :; do sleep 0.1; done";
    let t = Instant::now();
    let mut child = spawn(outbox(&store, &["--stderr", "separate", "--", "sh", "-c", script]));
    std::thread::sleep(Duration::from_millis(700));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = wait_with_deadline(&mut child, Duration::from_secs(10));
    assert!(t.elapsed() < Duration::from_secs(6), "took {:?}", t.elapsed());
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let env = envelopes(&out.stdout);
    assert_eq!(env.len(), 2, "{}", String::from_utf8_lossy(&out.stdout));
    for (h, _) in &env {
        assert_eq!(h["interrupted"], "SIGINT");
    }
    let metas = metas_by_label(&store);
    assert_eq!(metas.len(), 2);
    assert!(metas.values().all(|m| m["complete"] == false), "{metas:?}");
    assert_eq!(temp_files(&store), 0, "no temporary files left");
}

#[test]
fn a_background_process_holding_the_pipe_does_not_hold_outbox() {
    // Merged: it holds the one pipe. Separate: it holds only stderr's.
    for (mode, script) in [("merged", "sleep 30 & echo $!"), ("separate", "sleep 30 >/dev/null & echo $!")] {
        let store = private_store();
        let t = Instant::now();
        let out = wrap(&store, &["--stderr", mode, "--", "sh", "-c", script]);
        let took = t.elapsed();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if let Ok(pid) = text.trim().parse::<i32>() {
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        assert!(took < Duration::from_secs(5), "{mode}: took {took:?}");
        assert_eq!(out.status.code(), Some(0), "{mode}");
        assert!(text.trim().parse::<i32>().is_ok(), "{mode}: output passes through: {text:?}");
        assert!(stderr(&out).contains("background process"), "{mode}: {}", stderr(&out));
    }
}

#[test]
fn a_background_process_that_keeps_writing_is_cut_off() {
    let store = private_store();
    let t = Instant::now();
    let out = wrap(&store, &["--", "sh", "-c", "(while :; do echo tick; sleep 0.05; done) & echo started"]);
    let took = t.elapsed();
    assert!(took < Duration::from_secs(9), "took {took:?}");
    assert_eq!(out.status.code(), Some(0));
    // The background loop may print before "started"; both are kept.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l == "started"), "{text}");
    assert!(text.lines().filter(|l| *l == "tick").count() > 5, "{text}");
    assert!(stderr(&out).contains("kept writing"), "{}", stderr(&out));
}

#[test]
fn sigint_reaches_the_group_and_the_envelope_is_printed() {
    let store = private_store();
    // The trap runs once the forwarded SIGINT has also ended `sleep`, which
    // is in the same process group.
    let script = "trap 'echo got-int; exit 7' INT; seq 1 20000; echo ready >&2; while :; do sleep 0.1; done";
    let t = Instant::now();
    let mut child = spawn(outbox(&store, &["--", "sh", "-c", script]));
    std::thread::sleep(Duration::from_millis(700));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = wait_with_deadline(&mut child, Duration::from_secs(10));
    assert!(t.elapsed() < Duration::from_secs(6), "took {:?}", t.elapsed());
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let h = header(&out.stdout);
    assert_eq!(h["interrupted"], "SIGINT");
    assert_eq!(h["exit_status"], 7, "the command saw the signal and exited by its trap");
    assert_eq!(only_meta(&store)["complete"], false);
}

/// SIGHUP (the terminal or ssh session went away) is handled as SIGTERM:
/// forwarded to the group, an envelope of what arrived, an incomplete
/// entry, 128+1, no temporary file. It used to kill outbox outright.
#[test]
fn sighup_is_forwarded_and_the_envelope_is_printed() {
    let store = private_store();
    let script = "trap 'echo got-hup; exit 7' HUP; seq 1 20000; while :; do sleep 0.1; done";
    let mut child = spawn(outbox(&store, &["--", "sh", "-c", script]));
    let t = Instant::now();
    while temp_files(&store) == 0 {
        assert!(t.elapsed() < Duration::from_secs(10), "no temporary spill file appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    let out = wait_with_deadline(&mut child, Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(129), "{}", stderr(&out));
    let h = header(&out.stdout);
    assert_eq!(h["interrupted"], "SIGHUP");
    assert_eq!(h["exit_status"], 7, "the command saw the signal and exited by its trap");
    assert_eq!(only_meta(&store)["complete"], false);
    assert_eq!(temp_files(&store), 0);
}

/// `--timeout`: the command's whole group is ended when it expires; the
/// envelope (forced even for small output, as for an interruption) holds
/// what arrived and says `timed_out`, the entry is kept, outbox exits 124,
/// and nothing of the command is left running.
#[test]
fn timeout_ends_the_group_and_exits_124() {
    let store = private_store();
    let marker = "605.123";
    let script = format!("echo start; sleep {marker}; :");
    let t = Instant::now();
    let out = wrap(&store, &["--timeout", "1", "--", "sh", "-c", &script]);
    let took = t.elapsed();
    assert!(took < Duration::from_secs(10), "took {took:?}");
    eprintln!("--timeout 1: outbox returned after {took:?}");
    assert_eq!(out.status.code(), Some(124), "{}", stderr(&out));
    let h = header(&out.stdout);
    assert_eq!(h["timed_out"], true);
    assert_eq!(h["killed_by_signal"], "SIGTERM");
    assert!(String::from_utf8_lossy(&out.stdout).contains("\nstart\n"), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(stderr(&out).contains("--timeout 1s"), "{}", stderr(&out));
    let meta = only_meta(&store);
    assert_eq!(std::fs::read(store.path().join(meta["id"].as_str().unwrap())).unwrap(), b"start\n");
    let left = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains(marker))
        .count();
    assert_eq!(left, 0, "a process of the command is left");
}

/// A command that ignores SIGTERM gets SIGKILL after the grace; one that
/// ends in time is not touched and keeps its status.
#[test]
fn timeout_escalates_to_sigkill_and_spares_a_command_that_ends_in_time() {
    let store = private_store();
    let t = Instant::now();
    let out = wrap(
        &store,
        &["--timeout", "500ms", "--", "sh", "-c", "trap '' TERM; echo start; while :; do sleep 0.1; done"],
    );
    assert!(t.elapsed() < Duration::from_secs(15), "took {:?}", t.elapsed());
    assert_eq!(out.status.code(), Some(124), "{}", stderr(&out));
    assert_eq!(header(&out.stdout)["killed_by_signal"], "SIGKILL");
    assert!(stderr(&out).contains("SIGKILL"), "{}", stderr(&out));
    let out = wrap(&store, &["--timeout", "1m", "--", "sh", "-c", "echo quick; exit 3"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(out.stdout, b"quick\n", "no timeout, small output passes through");
}

/// A folded JSON document's header says `timed_out` too.
#[test]
fn timeout_is_stated_in_a_json_fold() {
    let store = private_store();
    let script = "echo '{\"items\": [1, 2, 3]}'; sleep 30";
    let out = wrap(&store, &["--format", "json", "--timeout", "300ms", "--", "sh", "-c", script]);
    assert_eq!(out.status.code(), Some(124), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(v["header"]["timed_out"], true, "{v}");
    assert_eq!(v["header"]["item_count"], 3);
}

/// `--timeout` without a command is a usage error.
#[test]
fn timeout_needs_a_command() {
    let store = private_store();
    let out = util::run_cmd(outbox(&store, &["--timeout", "5"]), b"x\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--timeout needs a command"), "{}", stderr(&out));
    let out = wrap(&store, &["--timeout", "soon", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn sigterm_to_a_command_that_ignores_it_escalates_to_sigkill() {
    let store = private_store();
    let script = "trap '' TERM; echo started; while :; do sleep 0.1; done";
    let t = Instant::now();
    let mut child = spawn(outbox(&store, &["--", "sh", "-c", script]));
    std::thread::sleep(Duration::from_millis(500));
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = wait_with_deadline(&mut child, Duration::from_secs(15));
    let took = t.elapsed();
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(out.status.code(), Some(128 + 15), "{}", stderr(&out));
    assert!(stderr(&out).contains("SIGKILL"), "{}", stderr(&out));
    let h = header(&out.stdout);
    assert_eq!(h["killed_by_signal"], "SIGKILL");
}

/// The first SIGINT is forwarded to a command that ignores it, so outbox
/// waits out the grace period with its spill still a temporary file; the
/// second ends outbox at once (128+N), removing the temporary files (one
/// per stream with `--stderr separate`) and keeping no entry.
#[test]
fn a_second_signal_ends_at_once_and_leaves_no_temporary_file() {
    for mode in ["merged", "separate"] {
        let store = private_store();
        let script = "trap '' INT; seq 1 20000; seq 1 20000 >&2; echo ready >&2; while :; do sleep 0.1; done";
        let mut child = spawn(outbox(&store, &["--stderr", mode, "--", "sh", "-c", script]));
        let temps = || temp_files(&store);
        let want = if mode == "separate" { 2 } else { 1 };
        let t = Instant::now();
        while temps() < want {
            assert!(t.elapsed() < Duration::from_secs(5), "{mode}: no temporary spill file appeared");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(300));
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        // outbox now waits up to SIGNAL_GRACE (5 s) for the command.
        std::thread::sleep(Duration::from_millis(500));
        assert!(child.try_wait().unwrap().is_none(), "{mode}: outbox waits for the command after one signal");
        let second = Instant::now();
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let out = wait_with_deadline(&mut child, Duration::from_secs(10));
        assert!(second.elapsed() < Duration::from_secs(2), "{mode}: took {:?}", second.elapsed());
        assert_eq!(out.status.code(), Some(130), "{mode}: {}", stderr(&out));
        assert_eq!(temps(), 0, "{mode}: temporary files left: {:?}", store.entries());
        assert!(metas_by_label(&store).is_empty(), "{mode}: no entry is kept");
        // The command ignored SIGINT; the second signal sent its group
        // SIGKILL (faults.rs checks that it is gone).
    }
}

/// A wrapped command runs in its own process group, so reading the
/// terminal stops it (SIGTTIN); the reaper says so and kills it instead of
/// letting outbox wait forever. With `--stderr separate --envelope never`
/// the stderr copy used to hold stderr locked for the whole run, so the
/// reaper's message, and with it the kill, waited for the command: a hang.
#[test]
fn a_command_that_reads_the_terminal_is_killed_not_waited_for() {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    for extra in [&[][..], &["--stderr", "separate", "--envelope", "never"][..]] {
        let store = private_store();
        let (_master, slave) = util::pty();
        let tty = slave.as_raw_fd();
        let mut cmd = outbox(&store, extra);
        // The pause lets outbox's readers start before the command stops:
        // the hang needed the stderr copy to hold the lock first.
        cmd.args(["--", "sh", "-c", "echo to-err >&2; sleep 0.5; read x; echo never"]);
        cmd.stdin(Stdio::from(slave.try_clone().unwrap())).stdout(Stdio::piped()).stderr(Stdio::piped());
        // outbox in a session of its own whose controlling terminal is the
        // pty, as at an interactive shell.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setsid() < 0 || libc::ioctl(tty, libc::TIOCSCTTY as _, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().expect("spawn outbox");
        drop(cmd);
        drop(slave);
        let out = wait_with_deadline(&mut child, Duration::from_secs(15));
        let err = stderr(&out);
        assert!(err.contains("tried to use the terminal"), "{extra:?}: {err}");
        assert_eq!(out.status.code(), Some(128 + 9), "{extra:?}: killed by SIGKILL: {err}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("never"), "{extra:?}");
    }
}

/// Collects a child's output, killing it if it outlives `limit`.
fn wait_with_deadline(child: &mut Child, limit: Duration) -> Output {
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > limit {
            let _ = child.kill();
            panic!("outbox did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    use std::io::Read;
    child.stdout.take().unwrap().read_to_end(&mut stdout).unwrap();
    child.stderr.take().unwrap().read_to_end(&mut stderr).unwrap();
    Output { status: child.wait().unwrap(), stdout, stderr }
}

/// The summary says how the command ended: a crash, a failing status or a
/// timeout must not read like a clean run ("no error or warning lines").
#[test]
fn the_summary_says_how_the_command_ended() {
    let store = private_store();
    let summary = |out: &Output| {
        let s = String::from_utf8_lossy(&out.stdout).into_owned();
        s.lines().find(|l| l.starts_with("--- summary: ")).unwrap_or_else(|| panic!("no summary in {s}")).to_string()
    };
    let cases: &[(&[&str], i32, &str)] = &[
        (&["--", "sh", "-c", "seq 1 30000; kill -SEGV $$"], 139, "; killed by SIGSEGV ---"),
        (&["--", "sh", "-c", "seq 1 30000; exit 3"], 3, "; exit status 3 ---"),
        (&["--", "sh", "-c", "seq 1 30000"], 0, "; exit status 0 ---"),
        (&["--timeout", "1500ms", "--", "sh", "-c", "seq 1 30000; sleep 60"], 124, "; timed out after 1.5s ---"),
        // A small output forced into an envelope says it too.
        (&["--envelope", "always", "--", "sh", "-c", "echo hi; kill -ABRT $$"], 134, "; killed by SIGABRT ---"),
        // A listing's summary (its own words) says it too.
        (
            &[
                "--",
                "sh",
                "-c",
                "i=0; while [ $i -lt 3000 ]; do echo ./src/dir$((i % 40))/file$i.rs; i=$((i+1)); done; exit 1",
            ],
            1,
            "; exit status 1 ---",
        ),
    ];
    for (args, code, ending) in cases {
        let out = wrap(&store, args);
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {}", stderr(&out));
        assert!(summary(&out).ends_with(ending), "{args:?}: {}", summary(&out));
    }
}

/// `--format json --stderr separate`: stdout is one JSON document (as
/// `| jq .` needs), stderr's envelope goes to stderr.
#[test]
fn json_with_separate_stderr_keeps_stdout_one_document() {
    let store = private_store();
    let script = "printf '['; i=0; while [ $i -lt 3000 ]; do printf '{\"id\":%d,\"name\":\"item %d\"},' $i $i; \
                  i=$((i+1)); done; printf '{\"id\":-1}]\\n'; seq 1 20000 >&2; exit 2";
    for format in ["json", "auto"] {
        let out = wrap(&store, &["--format", format, "--stderr", "separate", "--", "sh", "-c", script]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{format}: stdout is not one JSON document ({e}): {}", String::from_utf8_lossy(&out.stdout))
        });
        assert_eq!(doc["header"]["item_count"], 3001, "{doc}");
        let err = stderr(&out);
        assert!(err.contains("<<<OUTBOX-HEADER\n") && err.contains("\"stream\":\"stderr\""), "{err}");
        assert!(err.ends_with("20000\n"), "{err}");
    }
}
