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

/// Checks that `actual` is `text` (typed as `line`) rewritten through
/// outbox with its status carried as a trailer: the command in front as
/// typed, stderr merged, the trailer's nonce the same in both places.
fn assert_recorded(actual: &Value, line: &str, text: &str, name: &str) {
    let actual = actual.as_str().expect("a command string");
    let nonce = actual
        .rsplit_once(" --trailer ")
        .map(|(_, n)| n.to_string())
        .unwrap_or_else(|| panic!("no trailer in {actual}"));
    assert_eq!(nonce.len(), 4, "{actual}");
    let _ = line;
    let want = format!(
        "{{ {text} 2>&1 && printf '\\n{nonce}:0\\n' || printf '\\n{nonce}:%s\\n' $?; }} | {} --label {name} --trailer {nonce}",
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
    let line = "grep -rn 'fn main' src";
    assert_recorded(&spec["updatedInput"]["command"], line, line, "grep");
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
    assert_recorded(&v["hookSpecificOutput"]["updatedInput"]["command"], "git log --stat", "git log --stat", "git");
}

#[test]
fn leaves_other_commands_alone() {
    let store = private_store();
    let wrapped = format!("{} -- grep x f", outbox_path());
    let piped_already = rewritten(&store, "grep x f");
    let mut payloads: Vec<Value> = [
        "grep x f | wc -l",
        "grep -c x f > counts.txt",
        "cd src && cd .. && grep -rn x .",
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
fn a_typed_stderr_merge_is_kept_as_typed() {
    let store = private_store();
    let out = hook(&store, &[], &bash_payload("cargo test --workspace 2>&1").to_string());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let got = v["hookSpecificOutput"]["updatedInput"]["command"].as_str().unwrap();
    assert!(got.starts_with("{ cargo test --workspace 2>&1 && printf "), "{got}");
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
        "x=$(touch PWNED) grep x f",
        "LC_ALL=~/x grep -n needle hay.txt",
        "grep {a,b} f",
        "grep x *;touch PWNED",
        "grep x * | head -5 | sh",
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
    assert!(left.is_empty(), "nothing is left behind: {left:?}");
}

/// A directory where agents' lines have something to chew on: `hay.txt`
/// (3,000 numbered lines), `sub/hay.txt`, and `src/` with a few files.
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let body: String = (1..=3000).map(|i| format!("needle {i} {}\n", "x".repeat(i % 40))).collect();
    std::fs::write(dir.path().join("hay.txt"), &body).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/hay.txt"), &body[..20_000]).unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    for f in ["a.rs", "b.rs", "c.txt"] {
        std::fs::write(dir.path().join("src").join(f), &body[..body.len() / 3]).unwrap();
    }
    dir
}

/// Runs `script` with `shell` in `dir` against `store`: (stdout, stderr, status).
fn run_in(shell: &str, script: &str, dir: &Path, store: &Path) -> (String, String, Option<i32>) {
    let mut sh = Command::new(shell);
    if shell == "zsh" {
        sh.arg("-f");
    }
    sh.arg("-c").arg(script).current_dir(dir).env("OUTBOX_DIR", store);
    let ran = util::run_cmd(sh, b"");
    (
        String::from_utf8_lossy(&ran.stdout).into_owned(),
        String::from_utf8_lossy(&ran.stderr).into_owned(),
        ran.status.code(),
    )
}

/// The lines agents type, rewritten, run by bash and zsh with and without
/// pipefail: every line the original printed (head's first N, tail's last
/// N) is in what the rewrite prints, the status is the original line's,
/// and `cd` still moves the shell.
#[test]
fn the_lines_agents_type_keep_what_they_showed_and_their_status() {
    let lines = [
        "grep -rn needle src | head -50",
        "grep -rn needle src nofile 2>&1 | tail -30",
        "grep -rn needle src nofile | tail -30",
        "cd sub && grep -n needle hay.txt | tail -5",
        "LC_ALL=C sort hay.txt | head -20",
        "grep -c needle src/*.rs",
        "grep -n needle hay.txt nofile",
        "grep -n nothing-matches hay.txt | head -3",
        "ls -la src | head -3",
    ];
    for shell in ["bash", "zsh"] {
        if !crate::shell::have_shell(shell, "hook::the_lines_agents_type_keep_what_they_showed_and_their_status") {
            continue;
        }
        let store = private_store();
        let dir = workdir();
        for line in lines {
            let new = rewritten(&store, line);
            assert!(new.len() <= line.len() + 160 + outbox_path().len(), "{line:?} became {} chars", new.len());
            for pipefail in ["", "set -o pipefail\n"] {
                let script = |l: &str| format!("{pipefail}{l}\necho \"status=$?\"\npwd\n");
                let (mut want, _, _) = run_in(shell, &script(line), dir.path(), store.path());
                if want.contains("status=141\n") {
                    // Under pipefail, `head` stopping the command early
                    // (SIGPIPE) made the original 141; the rewrite cuts
                    // nothing, so the line reports the command's own status.
                    let cmd = line.split(" | head").next().unwrap();
                    let own = format!("{cmd} >/dev/null 2>&1\necho \"status=$?\"");
                    let (own, _, _) = run_in(shell, &format!("{pipefail}{own}"), dir.path(), store.path());
                    want = want.replace("status=141\n", &own);
                }
                let (got, err, _) = run_in(shell, &script(&new), dir.path(), store.path());
                let tail_of = |s: &str| s.lines().rev().take(2).map(str::to_string).collect::<Vec<_>>();
                assert_eq!(
                    tail_of(&got),
                    tail_of(&want),
                    "{shell} {pipefail:?} {line:?}: status and directory\n{new}\n{err}"
                );
                if !line.contains("| head") && !line.contains("| tail") {
                    // Not cut: what the original printed, or its envelope.
                    assert!(got == want || got.starts_with("<<<OUTBOX-HEADER\n"), "{line:?}: {got}");
                    continue;
                }
                let shown: std::collections::HashSet<&str> = got.lines().collect();
                for l in want.lines() {
                    assert!(shown.contains(l), "{shell} {pipefail:?} {line:?}: {l:?} is missing from\n{got}");
                }
            }
        }
    }
}

/// The stored copy is the command's output exactly: the status trailer is
/// taken off, also when the output ends without a newline.
#[test]
fn the_stored_copy_holds_no_trailer() {
    let store = private_store();
    let dir = workdir();
    for line in ["grep -n needle hay.txt", "cat hay.txt | head -5", "find . -name '*.rs'"] {
        let new = rewritten(&store, line);
        let (got, err, status) = run_in("bash", &new, dir.path(), store.path());
        assert_eq!(status, Some(0), "{line}: {err}");
        let cmd = line.split(" | ").next().unwrap();
        let want = Command::new("bash").arg("-c").arg(cmd).current_dir(dir.path()).output().unwrap().stdout;
        if got.starts_with("<<<OUTBOX-HEADER") {
            let header: Value = serde_json::from_str(got.lines().nth(1).unwrap()).unwrap();
            let stored = std::fs::read(header["full_output"].as_str().unwrap()).unwrap();
            assert_eq!(stored, want, "{line}");
            assert_eq!(header["exit_status"], 0);
        } else {
            assert_eq!(got.as_bytes(), want.as_slice(), "{line}: small output passes through, without the trailer");
        }
    }
    let new = rewritten(&store, "find . -name 'no newline'");
    std::fs::write(dir.path().join("no newline"), b"").unwrap();
    let (got, _, status) = run_in("bash", &new, dir.path(), store.path());
    assert_eq!((got.as_str(), status), ("./no newline\n", Some(0)));
}

/// Issue 27: the line's status is the command's with a store that cannot
/// be written (Claude Code's sandbox) or is full, in bash and zsh. Needs a
/// small tmpfs (root); says so and skips otherwise.
#[test]
fn the_status_survives_a_read_only_or_full_store() {
    let mnt = tempfile::tempdir().unwrap();
    let (ro, full) = (mnt.path().join("ro"), mnt.path().join("full"));
    std::fs::create_dir(&ro).unwrap();
    std::fs::create_dir(&full).unwrap();
    let mount = |args: &[&str]| Command::new("mount").args(args).output().is_ok_and(|o| o.status.success());
    let (ro_s, full_s) = (ro.to_str().unwrap(), full.to_str().unwrap());
    let mounted = mount(&["-t", "tmpfs", "-o", "size=64k,mode=700", "tmpfs", full_s])
        && mount(&["-t", "tmpfs", "-o", "size=64k,mode=700", "tmpfs", ro_s])
        && mount(&["-o", "remount,ro", ro_s]);
    if !mounted {
        outbox::text::stderr::say_raw(format_args!(
            "skipped: hook::the_status_survives_a_read_only_or_full_store needs to mount a tmpfs (run as root)"
        ));
        let _ = Command::new("umount").arg(ro_s).output();
        let _ = Command::new("umount").arg(full_s).output();
        return;
    }
    // Fill the small one.
    let _ = std::fs::write(full.join("fill"), vec![0u8; 128 << 10]);
    let dir = workdir();
    let cases = [
        ("grep -n needle hay.txt", 0),
        ("grep -n needle hay.txt nofile", 2),
        ("grep -n nothing hay.txt", 1),
        ("grep -n needle hay.txt nofile | tail -3", 0),
    ];
    for shell in ["bash", "zsh"] {
        if !crate::shell::have_shell(shell, "hook::the_status_survives_a_read_only_or_full_store") {
            continue;
        }
        for store in [&ro, &full] {
            for (line, status) in cases {
                let out = util::run_cmd(
                    {
                        let mut c = Command::new(util::bin());
                        c.args(["hook", "claude-code"]).env("OUTBOX_DIR", store);
                        c
                    },
                    bash_payload(line).to_string().as_bytes(),
                );
                let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{line}: {e}"));
                let new = v["hookSpecificOutput"]["updatedInput"]["command"].as_str().unwrap().to_string();
                let (got, err, code) = run_in(shell, &new, dir.path(), store);
                assert_eq!(code, Some(status), "{shell} {} {line:?}\n{err}", store.display());
                assert!(got.contains("needle") || status == 1, "{shell}: the output is still shown: {got}");
                let (_, _, pf) = run_in(shell, &format!("set -o pipefail\n{new}"), dir.path(), store);
                let want = if line.contains("| tail") { 2 } else { status };
                assert_eq!(pf, Some(want), "{shell} pipefail {} {line:?}", store.display());
            }
        }
    }
    let _ = Command::new("umount").arg(ro_s).output();
    let _ = Command::new("umount").arg(full_s).output();
}
