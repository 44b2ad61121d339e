//! `outbox hook claude-code`: Claude Code's PreToolUse hook protocol, so an
//! agent's Bash commands whose output grows (find, grep, git log, ...) are
//! enveloped by outbox without any shell setup.
//!
//! Protocol (Claude Code hooks reference, PreToolUse): the hook reads one
//! JSON object on stdin (`hook_event_name`, `tool_name`, `tool_input`, ...;
//! for the Bash tool `tool_input` holds `command`, and may hold
//! `description`, `timeout`, `run_in_background`). To rewrite, it prints
//! `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput":
//! {...}, "permissionDecision": "ask"}}` and exits 0. `updatedInput`
//! replaces the whole input, so every other field is copied unchanged.
//! Printing nothing and exiting 0 means "no opinion": the command runs as
//! it was.
//!
//! The reference pairs `updatedInput` with a permission decision (`allow`
//! to approve the rewritten call, `ask` to show it to the user), and a
//! rewrite sent without one is reported not to be applied (the open request
//! anthropics/claude-code#32060 asks for exactly that). So a decision is
//! always sent, `ask` by default: `allow` would run commands such as
//! `cargo test` without the prompt the user's rules would have shown, and
//! Claude Code checks its rules against the rewritten command
//! (anthropics/claude-code#65393), so a rule written for the original no
//! longer matches. Not tried against a running Claude Code here.
//!
//! Invariants:
//! - Only a line proven to be one simple command is rewritten: the
//!   whitelist grammar of words.rs (plain words, single quotes, double
//!   quotes without `$ \` \\ !`), checked against bash and zsh by its
//!   tests. Anything else (`$` in any form, backslashes, operators,
//!   redirections but one trailing `2>&1`, globs, braces, comments,
//!   newlines, assignments before the command) gets no answer at all: no
//!   rewrite and no permission decision.
//! - A rewrite never changes what runs, only where its output goes: the
//!   original text stays in front, byte for byte, so the agent's shell runs
//!   its own function, alias or builtin of that name; then
//!   `2>&1 | outbox --label NAME`, then the command's status is made the
//!   line's status again (bash's PIPESTATUS, zsh's pipestatus).
//! - Only the invocations the shell wrappers would wrap are rewritten (same
//!   list and subcommand rule, shell.rs); commands already run by outbox,
//!   background commands, and `OUTBOX_WRAP=0 CMD` are left alone.
//! - No permission is granted unless asked for with `--permission allow`:
//!   by default the user confirms the rewritten command.

use std::io::{Read, Write};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use serde_json::{json, Value};

use crate::integrate::shell::{self, Wrapped};

mod words;

/// Largest hook payload read (a Bash tool call is a few KiB).
const MAX_PAYLOAD: u64 = 16 << 20;

const HOOK_AFTER_HELP: &str = "\
Claude Code setup (~/.claude/settings.json or .claude/settings.json):
  {\"hooks\": {\"PreToolUse\": [{\"matcher\": \"Bash\",
     \"hooks\": [{\"type\": \"command\", \"command\": \"outbox hook claude-code\"}]}]}}

Rewritten: only a line that is provably one simple command from the
--commands list (see `outbox init --help`): plain words, 'single-quoted' and
\"double-quoted\" strings without $ ` \\ !, and at most a trailing 2>&1.
`grep -rn foo src` becomes
  { grep -rn foo src 2>&1; echo \"$?\" > F; } | /path/to/outbox --label grep
    --status-file F; (exit \"$(cat F ...; rm -f F)\")
(F a fresh file in the store), so the agent's shell still runs its own
function or alias named grep, the line's exit status is grep's, and the
envelope's header records it. Left alone, with no answer at all: anything else
($ in any form, backslashes, pipelines, lists, redirections, substitutions,
globs, braces, comments, newlines, NAME=value prefixes), background commands,
interactive invocations, commands already run by outbox.

Permissions: Claude Code applies a rewrite together with a permission
decision, so one is always sent: ask (the default) shows the rewritten command
for confirmation; allow runs it without a prompt. Claude Code checks its
permission rules against the rewritten command, so rules written for the
original (allow Bash(grep:*), deny Bash(git log:*)) no longer match it: with
--permission allow a deny rule on a wrapped command stops blocking it. none
sends no decision, for Claude Code versions that apply a rewrite without one.";

#[derive(Debug, Clone, Args)]
#[command(after_help = HOOK_AFTER_HELP)]
pub struct HookArgs {
    /// Which agent's hook protocol to speak.
    #[arg(value_enum)]
    pub agent: Agent,

    /// Commands to rewrite, as for `outbox init --commands`.
    #[arg(long, value_name = "LIST", default_value = "default")]
    pub commands: String,

    /// Permission decision sent with a rewrite. ask: the user confirms the
    /// rewritten command; allow: no prompt (see Permissions below); none: no
    /// decision (Claude Code may then ignore the rewrite).
    #[arg(long, value_enum, value_name = "DECISION", default_value_t = Permission::Ask)]
    pub permission: Permission,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Agent {
    /// Claude Code's PreToolUse hook.
    ClaudeCode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Permission {
    None,
    Allow,
    Ask,
}

/// Reads the hook payload on stdin and prints the decision, if any.
pub fn run(args: &HookArgs) -> anyhow::Result<ExitCode> {
    let commands = shell::parse_commands(&args.commands).map_err(|e| anyhow::anyhow!("--commands: {e}"))?;
    let mut raw = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_PAYLOAD + 1)
        .read_to_end(&mut raw)
        .map_err(|e| anyhow::anyhow!("cannot read the hook payload on stdin: {e}"))?;
    if raw.len() as u64 > MAX_PAYLOAD {
        anyhow::bail!("the hook payload is larger than {MAX_PAYLOAD} bytes; not a PreToolUse payload");
    }
    let payload: Value = serde_json::from_slice(&raw)
        .map_err(|e| anyhow::anyhow!("the hook payload on stdin is not JSON ({e}); is this a Claude Code hook?"))?;
    let status = status_file();
    let Some(out) = decide(&payload, &commands, &shell::self_path()?, status.as_deref(), args.permission) else {
        return Ok(ExitCode::SUCCESS);
    };
    let mut stdout = std::io::stdout().lock();
    let mut text = serde_json::to_string(&out)?;
    text.push('\n');
    stdout
        .write_all(text.as_bytes())
        .and_then(|_| stdout.flush())
        .map_err(|e| anyhow::anyhow!("cannot write the hook answer to stdout: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

/// The hook's answer to `payload`, or None to leave the tool call alone.
pub fn decide(
    payload: &Value,
    commands: &[Wrapped],
    exe: &str,
    status: Option<&str>,
    permission: Permission,
) -> Option<Value> {
    let event = payload.get("hook_event_name").and_then(Value::as_str);
    if event.is_some_and(|e| e != "PreToolUse") || payload.get("tool_name")?.as_str()? != "Bash" {
        return None;
    }
    let input = payload.get("tool_input")?.as_object()?;
    if input.get("run_in_background").and_then(Value::as_bool) == Some(true) {
        // Its output is read while it runs; an envelope comes only at the end.
        return None;
    }
    let command = input.get("command")?.as_str()?;
    let rewritten = rewrite(command, commands, exe, status)?;
    let mut updated = input.clone();
    updated.insert("command".into(), Value::String(rewritten));
    let mut specific = json!({ "hookEventName": "PreToolUse", "updatedInput": updated });
    let decision = match permission {
        Permission::None => None,
        Permission::Allow => Some("allow"),
        Permission::Ask => Some("ask"),
    };
    if let Some(d) = decision {
        specific["permissionDecision"] = json!(d);
        specific["permissionDecisionReason"] =
            json!("outbox: output returned as a bounded envelope; exit status and full output kept");
    }
    Some(json!({ "hookSpecificOutput": specific }))
}

/// What the rewritten line appends after the command: the status of the
/// pipeline's first element (the command) becomes the line's status again.
/// bash names it `PIPESTATUS[0]`, zsh `pipestatus` (first element, whatever
/// KSH_ARRAYS says); the subshell sets `$?` without leaving the shell.
const KEEP_STATUS: &str = r#"(exit "${PIPESTATUS[0]-${pipestatus[@]:0:1}}")"#;

/// `command` with its output piped through outbox, or None to leave it
/// alone.
///
/// The command stays in front, as the agent's shell reads it, so a shell
/// function, alias or builtin of that name runs exactly as it would have
/// (Claude Code defines `rg`, and in newer versions `grep` and `find`, as
/// functions running its bundled tools; `outbox -- rg` would exec another
/// binary or none). Its stderr joins stdout, as in wrap mode, and the
/// line's exit status is the command's, not outbox's. With a status file
/// (a fresh `.tmp-status-` name in the store) the command's status is also
/// written there before its output ends, so outbox records it in the
/// header (`exit_status`) and the line reads it back; without one (no
/// usable store) the line keeps it through PIPESTATUS/pipestatus.
pub fn rewrite(command: &str, commands: &[Wrapped], exe: &str, status: Option<&str>) -> Option<String> {
    let mut text = command.trim_matches(|c| c == ' ' || c == '\t');
    // The one redirection understood: the rewrite merges stderr anyway.
    if let Some(rest) = text.strip_suffix("2>&1") {
        if rest.ends_with([' ', '\t']) {
            text = rest.trim_end_matches([' ', '\t']);
        }
    }
    let words = words::simple_words(text)?;
    // A first word in the list is a plain command name: `NAME=value CMD`
    // (including the escape hatch `OUTBOX_WRAP=0 CMD`), `\grep` and
    // `"grep"` are left alone.
    let (cmd, args) = words.split_first()?;
    if !cmd.plain {
        return None;
    }
    let wrapped = commands.iter().find(|w| w.name == cmd.value)?;
    if !wrapped.wants(&args.iter().map(|a| a.value.as_str()).collect::<Vec<_>>()) {
        return None;
    }
    let (exe, name) = (shell::quote(exe), shell::quote(&wrapped.name));
    Some(match status {
        // The brace group writes the status before its output ends, so
        // outbox finds it complete when input ends; the line's status is
        // read back from the same file, which is then removed.
        Some(file) => {
            let f = shell::quote(file);
            format!(
                "{{ {text} 2>&1; echo \"$?\" > {f}; }} | {exe} --label {name} --status-file {f}; \
(exit \"$(cat {f} 2>/dev/null || echo 1; rm -f {f})\")"
            )
        }
        None => format!("{text} 2>&1 | {exe} --label {name}; {KEEP_STATUS}"),
    })
}

/// A fresh file name in the store for the rewritten line's exit status
/// (`.tmp-` so gc removes one left by an interrupted line), or None when
/// the store cannot be used: the rewrite then keeps the status in the line
/// only.
pub fn status_file() -> Option<String> {
    let cwd = std::env::current_dir().ok();
    let env = outbox::store::StoreEnv::from_vars(None, |k| std::env::var_os(k), cwd.as_deref());
    let store = outbox::store::Store::open_env(&env).ok()?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos();
    let name = format!(".tmp-status-{}-{nanos:x}", std::process::id());
    store.dir().join(name).to_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXE: &str = "/opt/outbox/bin/outbox";

    fn rw(cmd: &str) -> Option<String> {
        rewrite(cmd, &shell::default_commands(), EXE, None)
    }

    /// What `text`, a command named `name`, is rewritten to.
    fn piped(text: &str, name: &str) -> String {
        format!("{text} 2>&1 | /opt/outbox/bin/outbox --label {name}; {KEEP_STATUS}")
    }

    #[test]
    fn rewrites_simple_commands() {
        assert_eq!(rw("grep -rn foo src"), Some(piped("grep -rn foo src", "grep")));
        assert_eq!(rw("  find . -name '*.rs'  "), Some(piped("find . -name '*.rs'", "find")));
        assert_eq!(rw("git log --oneline 2>&1"), Some(piped("git log --oneline", "git")));
        assert_eq!(rw("grep -c \"a b\" f"), Some(piped("grep -c \"a b\" f", "grep")));
        assert_eq!(rw("git -C repo diff HEAD~1"), Some(piped("git -C repo diff HEAD~1", "git")));
        assert_eq!(rw("grep 'x | y; z' f"), Some(piped("grep 'x | y; z' f", "grep")));
        assert_eq!(rw("git 'log'"), Some(piped("git 'log'", "git")), "the subcommand rule reads values");
    }

    #[test]
    fn leaves_the_rest_alone() {
        for cmd in [
            "grep x f | wc -l",
            "grep x f > out.txt",
            "grep x f 2>/dev/null",
            "grep x < f",
            "cd src && grep -rn x .",
            "grep x f; echo done",
            "grep x f &",
            "grep $(cat pat) f",
            "grep `cat pat` f",
            "grep \"$(cat pat)\" f",
            "grep \"$PAT\" file",
            r"grep a\|b f",
            r"grep x $'\'' ; touch PWNED ; echo '\'",
            "(grep x f)",
            "grep x f\ngrep y f",
            "grep x f # note",
            "grep 'unterminated",
            "git commit -m msg",
            "git add -p",
            "git rebase -i HEAD~3",
            "git",
            "git $SUB",
            "less file",
            "vim file",
            "top",
            "pytest --pdb",
            r"find . -ok rm {} \;",
            "outbox -- grep x f",
            "/opt/outbox/bin/outbox -- grep x f",
            "OUTBOX_WRAP=0 grep x f",
            "OUTBOX_WRAP=1 grep x f",
            "LC_ALL=C grep x f",
            "command grep x f",
            "\"grep\" x f",
            "g'rep' x f",
            "$GREP x f",
            "",
            "2>&1",
            "FOO=1",
        ] {
            assert_eq!(rw(cmd), None, "{cmd:?} must not be rewritten");
        }
    }

    #[test]
    fn payloads() {
        let cmds = shell::default_commands();
        let p = json!({
            "session_id": "abc", "transcript_path": "/t.jsonl", "cwd": "/repo",
            "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": "git log -p", "description": "Show history", "timeout": 60000}
        });
        let out = decide(&p, &cmds, EXE, None, Permission::None).unwrap();
        let spec = &out["hookSpecificOutput"];
        assert_eq!(spec["hookEventName"], "PreToolUse");
        assert_eq!(spec["updatedInput"]["command"], piped("git log -p", "git"));
        assert_eq!(spec["updatedInput"]["description"], "Show history");
        assert_eq!(spec["updatedInput"]["timeout"], 60000);
        assert!(spec.get("permissionDecision").is_none());
        let out = decide(&p, &cmds, EXE, None, Permission::Ask).unwrap();
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "ask");
        let out = decide(&p, &cmds, EXE, None, Permission::Allow).unwrap();
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "allow");

        let mut bg = p.clone();
        bg["tool_input"]["run_in_background"] = json!(true);
        assert!(decide(&bg, &cmds, EXE, None, Permission::None).is_none());
        let mut other = p.clone();
        other["tool_name"] = json!("Read");
        assert!(decide(&other, &cmds, EXE, None, Permission::None).is_none());
        let mut post = p.clone();
        post["hook_event_name"] = json!("PostToolUse");
        assert!(decide(&post, &cmds, EXE, None, Permission::None).is_none());
    }

    #[test]
    fn exe_with_spaces_is_quoted() {
        let out = rewrite("ls -R", &shell::default_commands(), "/my apps/outbox", None).unwrap();
        assert!(out.starts_with("ls -R 2>&1 | '/my apps/outbox' --label ls; "), "{out}");
    }
}
