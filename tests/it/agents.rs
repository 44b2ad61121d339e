//! Every agent's hook: its documented payloads in, the documented answers
//! out byte for byte (tests/fixtures/hooks), the rewritten commands run by
//! bash and zsh, and `outbox init --agent` writing and undoing each
//! agent's settings.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hooks")
}

fn outbox_path() -> String {
    Path::new(util::bin()).canonicalize().unwrap().display().to_string()
}

/// The hook's stdout for `payload`, with outbox's path as `@OUTBOX@`.
fn answer(agent: &str, payload: &[u8], home: &Path) -> String {
    let mut c = Command::new(util::bin());
    c.args(["hook", agent]).env("HOME", home).env("OUTBOX_DIR", home.join("store"));
    let out = util::run_cmd(c, payload);
    assert_eq!(out.status.code(), Some(0), "{agent}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().replace(&outbox_path(), "@OUTBOX@")
}

fn cases() -> Vec<(String, String, PathBuf)> {
    let mut v: Vec<(String, String, PathBuf)> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".payload.json"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().trim_end_matches(".payload.json").to_string();
            let agent = name.split('.').next().unwrap().to_string();
            (agent, name, p)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn documented_payloads_get_the_documented_answers() {
    let home = tempfile::tempdir().unwrap();
    let cases = cases();
    let agents: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(agents.len(), 6, "{agents:?}");
    for (agent, name, payload) in &cases {
        let want = std::fs::read_to_string(fixtures().join(format!("{name}.answer.json"))).unwrap();
        let got = answer(agent, &std::fs::read(payload).unwrap(), home.path());
        assert_eq!(got, want, "{name}");
        if name.ends_with(".rewrite") {
            assert!(got.contains("--trailer"), "{name} rewrites");
        } else {
            assert!(!got.contains("--trailer"), "{name} leaves the call alone");
        }
    }
}

/// The command in an agent's answer (wherever its protocol puts it).
fn rewritten_command(v: &Value) -> Option<String> {
    let c = v["hookSpecificOutput"]["updatedInput"]["command"]
        .as_str()
        .or(v["hookSpecificOutput"]["tool_input"]["command"].as_str())
        .or(v["updated_input"]["command"].as_str())
        .or(v["modifiedArgs"]["command"].as_str())
        .or(v["args"]["command"].as_str())?;
    Some(c.to_string())
}

/// The command each rewrite fixture asked to run.
fn original_command(v: &Value) -> String {
    let s = v["tool_input"]["command"].as_str().or(v["args"]["command"].as_str()).map(str::to_string);
    s.unwrap_or_else(|| {
        let args: Value = serde_json::from_str(v["toolArgs"].as_str().unwrap()).unwrap();
        args["command"].as_str().unwrap().to_string()
    })
}

/// Stand-ins for the tools the fixtures call, as shell functions: the
/// rewrite must run the shell's own function of that name, as the original
/// line does.
const PRELUDE: &str = r#"
grep() { i=0; while [ $i -lt 400 ]; do i=$((i+1)); echo "src/a.rs:$i: // TODO item $i"; done; }
cargo() { i=0; while [ $i -lt 500 ]; do i=$((i+1)); echo "test t$i ... ok"; done; echo "error: 1 test failed" >&2; echo "test result: FAILED. 499 passed; 1 failed"; return 101; }
go() { i=0; while [ $i -lt 300 ]; do i=$((i+1)); echo "ok   example.com/pkg$i 0.01s"; done; echo "FAIL example.com/broken"; return 1; }
sort() { i=0; while [ $i -lt 300 ]; do i=$((i+1)); echo "word$i"; done; }
git() { i=0; while [ $i -lt 300 ]; do i=$((i+1)); echo "commit $i: change $i"; done; }
pytest() { i=0; while [ $i -lt 300 ]; do i=$((i+1)); echo "tests/test_$i.py ."; done; echo "==== 1 failed, 299 passed ===="; return 1; }
"#;

#[test]
fn every_agents_rewrite_runs_in_bash_and_zsh() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join("store")).unwrap();
    std::fs::create_dir(home.path().join("backend")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(home.path().join("store"), std::fs::Permissions::from_mode(0o700)).unwrap();
    for (agent, name, payload) in cases().into_iter().filter(|c| c.1.ends_with(".rewrite")) {
        let raw = std::fs::read(&payload).unwrap();
        let answer = answer(&agent, &raw, home.path()).replace("@OUTBOX@", &outbox_path());
        let new = rewritten_command(&serde_json::from_str(&answer).unwrap()).unwrap();
        let old = original_command(&serde_json::from_slice(&raw).unwrap());
        for shell in ["bash", "zsh"] {
            if !crate::shell::have_shell(shell, "agents::every_agents_rewrite_runs_in_bash_and_zsh") {
                continue;
            }
            let run = |line: &str| {
                let mut c = Command::new(shell);
                c.arg("-c")
                    .arg(format!("{PRELUDE}\n{line}\necho \"status=$?\""))
                    .current_dir(home.path())
                    .env("OUTBOX_DIR", home.path().join("store"));
                let out = util::run_cmd(c, b"");
                String::from_utf8_lossy(&out.stdout).into_owned()
            };
            let (want, got) = (run(&old), run(&new));
            let status = |s: &str| s.lines().last().unwrap_or("").to_string();
            assert_eq!(status(&got), status(&want), "{shell} {name}: {new}\n{got}");
            let shown: std::collections::HashSet<&str> = got.lines().collect();
            if old.contains("| head") || old.contains("| tail") {
                // The cut's lines, and more: the whole output or its envelope.
                for l in want.lines() {
                    assert!(shown.contains(l), "{shell} {name}: {l:?} missing from\n{got}");
                }
            } else {
                assert!(got.starts_with("<<<OUTBOX-HEADER\n") || got == want, "{shell} {name}: {got}");
            }
        }
    }
}

/// A scratch HOME with the agents' settings as a user might have them.
fn home_with_settings() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let put = |rel: &str, text: &str| {
        let p = home.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    put(
        ".claude/settings.json",
        "{\n    \"model\": \"opus\",\n    \"permissions\": {\"allow\": [\"Bash(npm test)\"]},\n    \"hooks\": {\"PreToolUse\": [{\"matcher\": \"Write\", \"hooks\": [{\"type\": \"command\", \"command\": \"./lint.sh\"}]}]}\n}",
    );
    put(".gemini/settings.json", "{\"theme\": \"GitHub\", \"hooks\": {}}\n");
    put(".cursor/hooks.json", "{\"version\": 1, \"hooks\": {\"stop\": [{\"command\": \"./audit.sh\"}]}}");
    home
}

fn init(home: &Path, cwd: &Path, args: &[&str]) -> std::process::Output {
    let mut c = Command::new(util::bin());
    c.arg("init").args(args).env("HOME", home).env_remove("XDG_CONFIG_HOME").env_remove("CODEX_HOME").current_dir(cwd);
    util::run_cmd(c, b"")
}

/// Every file under `dir`, with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn init_writes_each_agents_settings_and_undo_restores_them_byte_for_byte() {
    for agent in ["claude-code", "codex", "gemini", "cursor", "copilot", "opencode"] {
        let home = home_with_settings();
        let repo = tempfile::tempdir().unwrap();
        let before = (snapshot(home.path()), snapshot(repo.path()));
        // --dry-run shows the change and writes nothing.
        let dry = init(home.path(), repo.path(), &["--agent", agent, "--dry-run"]);
        assert_eq!(dry.status.code(), Some(0), "{agent}: {}", String::from_utf8_lossy(&dry.stderr));
        assert!(String::from_utf8_lossy(&dry.stdout).contains("\n+"), "{agent}: a diff");
        assert_eq!((snapshot(home.path()), snapshot(repo.path())), before, "{agent}: --dry-run wrote nothing");
        let first = init(home.path(), repo.path(), &["--agent", agent]);
        assert_eq!(first.status.code(), Some(0), "{agent}: {}", String::from_utf8_lossy(&first.stderr));
        let after = (snapshot(home.path()), snapshot(repo.path()));
        assert_ne!(after, before, "{agent}: something was written");
        // Idempotent.
        let again = init(home.path(), repo.path(), &["--agent", agent]);
        assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to change"), "{agent}");
        assert_eq!((snapshot(home.path()), snapshot(repo.path())), after, "{agent}: the second init changed nothing");
        // The hook it wrote is outbox's, and the user's settings are kept.
        let all: String =
            after.0.iter().chain(after.1.iter()).map(|(_, b)| String::from_utf8_lossy(b).into_owned()).collect();
        assert!(all.contains(&format!("hook {agent}")), "{agent}: {all}");
        for kept in ["opus", "Bash(npm test)", "./lint.sh", "GitHub", "./audit.sh"] {
            assert!(all.contains(kept), "{agent}: {kept} lost");
        }
        let undo = init(home.path(), repo.path(), &["--agent", agent, "--undo"]);
        assert_eq!(undo.status.code(), Some(0), "{agent}: {}", String::from_utf8_lossy(&undo.stderr));
        assert_eq!((snapshot(home.path()), snapshot(repo.path())), before, "{agent}: --undo restores byte for byte");
    }
}

#[test]
fn undo_after_the_user_edited_keeps_their_edits() {
    let home = home_with_settings();
    let cwd = tempfile::tempdir().unwrap();
    init(home.path(), cwd.path(), &["--agent", "claude-code"]);
    let path = home.path().join(".claude/settings.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    v["theme"] = "dark".into();
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    let undo = init(home.path(), cwd.path(), &["--agent", "claude-code", "--undo"]);
    assert!(String::from_utf8_lossy(&undo.stdout).contains("kept your edits"), "{undo:?}");
    let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(v["theme"], "dark");
    assert!(!v.to_string().contains("hook claude-code"));
    assert_eq!(v["hooks"]["PreToolUse"][0]["matcher"], "Write");
}

#[test]
fn a_broken_settings_file_is_not_touched() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join(".claude/settings.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "{ \"model\": ").unwrap();
    let out = init(home.path(), home.path(), &["--agent", "claude-code"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not valid JSON"));
    assert_eq!(std::fs::read(&path).unwrap(), b"{ \"model\": ");
}

#[test]
fn detect_finds_the_agents_that_are_here() {
    let home = home_with_settings();
    let cwd = tempfile::tempdir().unwrap();
    let mut c = Command::new(util::bin());
    c.args(["init", "--detect", "--dry-run"])
        .env("HOME", home.path())
        .env("PATH", "/nonexistent")
        .current_dir(cwd.path());
    let out = util::run_cmd(c, b"");
    let text = String::from_utf8_lossy(&out.stdout);
    for a in ["claude-code:", "gemini:", "cursor:"] {
        assert!(text.contains(a), "{a} in {text}");
    }
    for a in ["codex:", "copilot:", "opencode:"] {
        assert!(!text.contains(a), "{a} in {text}");
    }
}

/// The OpenCode plugin, run by node as OpenCode would call it: a bash call
/// gets outbox's command, anything else is left as it was.
#[test]
fn the_opencode_plugin_applies_the_answer() {
    if Command::new("node").arg("--version").output().is_err() {
        outbox::text::stderr::say_raw(format_args!(
            "skipped: agents::the_opencode_plugin_applies_the_answer needs node"
        ));
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let out = init(home.path(), home.path(), &["--agent", "opencode"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let plugin = home.path().join(".config/opencode/plugin/outbox.js");
    let module = home.path().join("outbox.mjs");
    std::fs::copy(&plugin, &module).unwrap();
    let script = format!(
        r#"const m = await import({module});
const hooks = await m.OutboxPlugin({{}});
const a = {{ args: {{ command: "git log --stat", description: "d" }} }};
await hooks["tool.execute.before"]({{ tool: "bash", sessionID: "s", callID: "c" }}, a);
const b = {{ args: {{ command: "echo $(date)" }} }};
await hooks["tool.execute.before"]({{ tool: "bash", sessionID: "s", callID: "c" }}, b);
const r = {{ args: {{ filePath: "/x" }} }};
await hooks["tool.execute.before"]({{ tool: "read", sessionID: "s", callID: "c" }}, r);
console.log(JSON.stringify([a.args, b.args, r.args]));"#,
        module = Value::String(module.display().to_string())
    );
    let mut c = Command::new("node");
    c.args(["--input-type=module", "-e", &script]).env("OUTBOX_DIR", home.path().join("store"));
    let ran = util::run_cmd(c, b"");
    assert_eq!(ran.status.code(), Some(0), "{}", String::from_utf8_lossy(&ran.stderr));
    let v: Value = serde_json::from_slice(&ran.stdout).unwrap();
    let cmd = v[0]["command"].as_str().unwrap();
    assert!(cmd.starts_with("{ git log --stat 2>&1 && printf") && cmd.contains("--trailer"), "{cmd}");
    assert_eq!(v[0]["description"], "d");
    assert_eq!(v[1]["command"], "echo $(date)");
    assert_eq!(v[2], serde_json::json!({"filePath": "/x"}));
}
