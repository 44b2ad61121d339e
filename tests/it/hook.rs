//! `outbox hook claude-code` with recorded PreToolUse payloads: what is
//! rewritten, what is left alone (no output, exit 0), and that a rewritten
//! command really runs through outbox.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::util::{self, Store};

/// A private store: mode 0700, which the store insists on (tempfile makes
/// directories with the umask's mode).
fn private_store() -> Store {
    use std::os::unix::fs::PermissionsExt;
    let store = Store::new();
    std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    store
}

/// A PreToolUse payload as Claude Code sends it for the Bash tool.
fn bash_payload(command: &str) -> Value {
    json!({
        "session_id": "5f0c2a1e-8d3b-4c7a-9e21-0b6f4d2c9a10",
        "transcript_path": "/home/u/.claude/projects/-repo/5f0c2a1e.jsonl",
        "cwd": "/repo",
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_use_id": "toolu_01ABCDEF",
        "tool_input": {"command": command, "description": "Search the sources", "timeout": 120000}
    })
}

fn hook(store: &Store, args: &[&str], payload: &str) -> std::process::Output {
    let mut all = vec!["hook", "claude-code"];
    all.extend_from_slice(args);
    util::run(store, &all, payload.as_bytes())
}

fn outbox_path() -> String {
    Path::new(util::bin()).canonicalize().unwrap().display().to_string()
}

/// What the hook makes of `text`, a command named `name`: the agent's shell
/// runs it, outbox reads its output, the line's status is the command's.
fn piped(text: &str, name: &str) -> String {
    format!("{text} 2>&1 | {} --label {name}; (exit \"${{PIPESTATUS[0]-${{pipestatus[@]:0:1}}}}\")", outbox_path())
}

/// Checks that `actual` is `text` rewritten to record its status: the
/// status file is a fresh `.tmp-status-` name in `store`.
fn assert_recorded(actual: &Value, text: &str, name: &str, store: &Store) {
    let actual = actual.as_str().expect("a command string");
    let file = actual
        .split_once("echo \"$?\" > ")
        .and_then(|(_, rest)| rest.split_once("; }"))
        .map(|(f, _)| f.to_string())
        .unwrap_or_else(|| panic!("no status file in {actual}"));
    assert!(file.starts_with(&store.path().join(".tmp-status-").display().to_string()), "{file}");
    let want = format!(
        "{{ {text} 2>&1; echo \"$?\" > {file}; }} | {} --label {name} --status-file {file}; \
(exit \"$(cat {file} 2>/dev/null || echo 1; rm -f {file})\")",
        outbox_path()
    );
    assert_eq!(actual, want);
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The command the hook rewrites `text` to (with the default options).
fn rewritten(store: &Store, text: &str) -> String {
    let out = hook(store, &[], &bash_payload(text).to_string());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    v["hookSpecificOutput"]["updatedInput"]["command"].as_str().unwrap().to_string()
}

#[test]
fn rewrites_a_growing_command() {
    let store = private_store();
    let out = hook(&store, &[], &bash_payload("grep -rn 'fn main' src").to_string());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON answer");
    let spec = &v["hookSpecificOutput"];
    assert_eq!(spec["hookEventName"], "PreToolUse");
    assert_recorded(&spec["updatedInput"]["command"], "grep -rn 'fn main' src", "grep", &store);
    // updatedInput replaces the whole input: the other fields come along.
    assert_eq!(spec["updatedInput"]["description"], "Search the sources");
    assert_eq!(spec["updatedInput"]["timeout"], 120000);
    // A rewrite goes with a decision; by default the user confirms it.
    assert_eq!(spec["permissionDecision"], "ask", "no permission granted by default");
}

#[test]
fn permission_only_when_asked() {
    let store = private_store();
    let out = hook(&store, &["--permission", "allow"], &bash_payload("git log --stat").to_string());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "allow");
    assert!(v["hookSpecificOutput"]["permissionDecisionReason"].is_string());
    let out = hook(&store, &["--permission", "none"], &bash_payload("git log --stat").to_string());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["hookSpecificOutput"].get("permissionDecision").is_none());
    assert_recorded(&v["hookSpecificOutput"]["updatedInput"]["command"], "git log --stat", "git", &store);
}

#[test]
fn leaves_other_commands_alone() {
    let store = private_store();
    let wrapped = format!("{} -- grep x f", outbox_path());
    let piped_already = piped("grep x f", "grep");
    let mut payloads: Vec<Value> = [
        "grep x f | wc -l",
        "grep -c x f > counts.txt",
        "cd src && grep -rn x .",
        "git add -p",
        "git rebase -i HEAD~3",
        "git commit -m 'log'",
        "less README.md",
        "vim src/main.rs",
        "top",
        "outbox -- grep x f",
        wrapped.as_str(),
        piped_already.as_str(),
        "OUTBOX_WRAP=0 find .",
        "find . -name '*.rs' -exec grep -l x {} \\;; echo done",
        "echo $(find .)",
    ]
    .iter()
    .map(|c| bash_payload(c))
    .collect();
    let mut bg = bash_payload("cargo test");
    bg["tool_input"]["run_in_background"] = json!(true);
    payloads.push(bg);
    payloads.push(json!({
        "hook_event_name": "PreToolUse", "tool_name": "Read",
        "tool_input": {"file_path": "/repo/src/main.rs"}
    }));
    let mut post = bash_payload("grep x f");
    post["hook_event_name"] = json!("PostToolUse");
    payloads.push(post);
    for p in payloads {
        let out = hook(&store, &[], &p.to_string());
        assert_eq!(out.status.code(), Some(0), "{p}");
        assert!(out.stdout.is_empty(), "{p} was rewritten: {}", String::from_utf8_lossy(&out.stdout));
    }
}

#[test]
fn trailing_stderr_merge_is_dropped() {
    let store = private_store();
    let out = hook(&store, &[], &bash_payload("cargo test --workspace 2>&1").to_string());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_recorded(&v["hookSpecificOutput"]["updatedInput"]["command"], "cargo test --workspace", "cargo", &store);
}

#[test]
fn malformed_payload_is_a_non_blocking_error() {
    let store = private_store();
    let out = hook(&store, &[], "not json");
    // Exit 1 is a non-blocking error in the hook protocol (2 would block).
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not JSON"));
}

#[test]
fn the_rewritten_command_runs_through_outbox() {
    let store = private_store();
    let dir = tempfile::tempdir().unwrap();
    let body: String = (1..=5000).map(|i| format!("needle {i}\n")).collect();
    std::fs::write(dir.path().join("hay.txt"), body).unwrap();
    let out = hook(&store, &[], &bash_payload("grep -n needle hay.txt").to_string());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let command = v["hookSpecificOutput"]["updatedInput"]["command"].as_str().unwrap().to_string();
    let mut sh = Command::new("bash");
    sh.arg("-c").arg(&command).current_dir(dir.path()).env("OUTBOX_DIR", store.path());
    let ran = util::run_cmd(sh, b"");
    assert_eq!(ran.status.code(), Some(0), "{}", String::from_utf8_lossy(&ran.stderr));
    assert!(ran.stdout.starts_with(b"<<<OUTBOX-HEADER\n"));
    assert!(String::from_utf8_lossy(&ran.stdout).contains("5000:needle 5000"));
}

/// Lines that are not provably one simple command get no answer, even with
/// `--permission allow`: the hook must never approve what it cannot read.
#[test]
fn never_approves_what_it_cannot_prove_simple() {
    let store = private_store();
    for command in [
        // bash reads `\'` inside `$'…'` as a quote: the `;` are live.
        r"grep x $'\'' ; touch PWNED ; echo '\'",
        "grep $\"x\" f",
        "grep x \\\nf; touch PWNED",
        "grep x <<EOF\nEOF\ntouch PWNED",
        "grep x <(touch PWNED)",
        "grep x >(touch PWNED)",
        "grep x f&&touch PWNED",
        "grep x f;touch PWNED",
        "grep x f|touch PWNED",
        "grep x f>PWNED",
        "x=1 grep x f",
        "LC_ALL=C grep -n needle hay.txt",
        "grep {a,b} f",
        "grep x *",
        "grep `touch PWNED` f",
        "grep $(touch PWNED) f",
        "grep \"$(touch PWNED)\" f",
        "grep $x f",
        "grep ~ f",
        "grep x f # comment",
        "grep x\\;touch PWNED",
    ] {
        let out = hook(&store, &["--permission", "allow"], &bash_payload(command).to_string());
        assert_eq!(out.status.code(), Some(0), "{command:?}");
        assert!(out.stdout.is_empty(), "{command:?} got an answer: {}", String::from_utf8_lossy(&out.stdout));
    }
}

/// The payload of the report, run by bash as Claude Code would run an
/// approved line: it does run the hidden command, so the hook must not
/// approve it.
#[test]
fn the_quoting_payload_is_live_in_bash() {
    let dir = tempfile::tempdir().unwrap();
    let payload = r"grep x $'\'' ; touch PWNED ; echo '\'";
    let mut sh = Command::new("bash");
    sh.arg("--norc").arg("-c").arg(payload).current_dir(dir.path());
    util::run_cmd(sh, b"");
    assert!(dir.path().join("PWNED").exists(), "bash runs the touch hidden in {payload:?}");
    let store = private_store();
    let out = hook(&store, &["--permission", "allow"], &bash_payload(payload).to_string());
    assert!(out.stdout.is_empty(), "approved: {}", String::from_utf8_lossy(&out.stdout));
}

/// Claude Code's shell defines `rg` (and in newer versions `grep`, `find`)
/// as functions running its bundled tools: the rewritten line must run the
/// function, keep its status, and still have outbox keep the output.
#[test]
fn shell_functions_and_aliases_are_honoured() {
    for shell in ["bash", "zsh"] {
        if !crate::shell::have_shell(shell, "hook::shell_functions_and_aliases_are_honoured") {
            continue;
        }
        let store = private_store();
        let dir = tempfile::tempdir().unwrap();
        let line = rewritten(&store, "rg -n foo src");
        // As Claude Code runs a command: its snapshot of the user's shell
        // (functions, aliases) sourced, then the command line eval'ed.
        let aliases = if shell == "bash" { "shopt -s expand_aliases\n" } else { "" };
        std::fs::write(
            dir.path().join("snapshot"),
            format!("{aliases}rg() {{ echo from-function \"$@\"; echo to-stderr >&2; return 3; }}\nalias ls='echo from-alias'\n"),
        )
        .unwrap();
        let script = format!(
            "source ./snapshot\neval {}\necho \"status=$?\"\neval {}\necho \"status=$?\"\n",
            sh_quote(&line),
            sh_quote(&rewritten(&store, "ls -la"))
        );
        let mut sh = Command::new(shell);
        sh.arg("-c").arg(&script).current_dir(dir.path()).env("OUTBOX_DIR", store.path());
        let ran = util::run_cmd(sh, b"");
        let out = String::from_utf8_lossy(&ran.stdout);
        assert_eq!(
            out,
            "from-function -n foo src\nto-stderr\nstatus=3\nfrom-alias -la\nstatus=0\n",
            "{shell}: {script}\nstderr: {}",
            String::from_utf8_lossy(&ran.stderr)
        );
        let names: Vec<String> =
            store.entries().iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert!(names.iter().any(|n| n.starts_with("rg-")), "{shell}: the output is kept: {names:?}");
        assert!(names.iter().any(|n| n.starts_with("ls-")), "{shell}: the output is kept: {names:?}");
    }
}

/// A failing command with output large enough for an envelope: the line
/// still ends with the command's status.
#[test]
fn the_status_is_the_commands() {
    let store = private_store();
    let dir = tempfile::tempdir().unwrap();
    let body: String = (1..=5000).map(|i| format!("needle {i}\n")).collect();
    std::fs::write(dir.path().join("hay.txt"), body).unwrap();
    let line = rewritten(&store, "grep -n needle hay.txt no-such-file");
    let mut sh = Command::new("bash");
    sh.arg("-c").arg(&line).current_dir(dir.path()).env("OUTBOX_DIR", store.path());
    let ran = util::run_cmd(sh, b"");
    assert_eq!(ran.status.code(), Some(2), "{}", String::from_utf8_lossy(&ran.stderr));
    let out = String::from_utf8_lossy(&ran.stdout);
    assert!(out.starts_with("<<<OUTBOX-HEADER\n"), "{out}");
    assert!(out.contains("no-such-file"), "stderr is in the envelope: {out}");
    // outbox records the status too: the header says what the line says.
    let header: Value = serde_json::from_str(out.lines().nth(1).unwrap()).unwrap();
    assert_eq!(header["exit_status"], 2, "{header}");
    let left: Vec<_> = std::fs::read_dir(store.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(".tmp-"))
        .collect();
    assert!(left.is_empty(), "the status file is removed: {left:?}");
}
