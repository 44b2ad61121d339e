//! `outbox hook claude-code`: Claude Code's PreToolUse hook protocol, so an
//! agent's Bash commands whose output grows (find, grep, git log, ...) run
//! as `outbox -- CMD` without any shell setup.
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
//! - A rewrite never changes what runs, only how its output is returned:
//!   the original text is kept byte for byte after `outbox --`, and leading
//!   `NAME=value` assignments stay in front of outbox.
//! - Anything not understood is left alone. The tokenizer is conservative:
//!   quotes are honoured, and any `| & ; < > ( ) $( \`` or newline outside
//!   quotes (pipelines, lists, redirections, substitutions, subshells) means
//!   no rewrite, except one trailing `2>&1`, dropped because wrap mode
//!   merges stderr already.
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

/// Largest hook payload read (a Bash tool call is a few KiB).
const MAX_PAYLOAD: u64 = 16 << 20;

const HOOK_AFTER_HELP: &str = "\
Claude Code setup (~/.claude/settings.json or .claude/settings.json):
  {\"hooks\": {\"PreToolUse\": [{\"matcher\": \"Bash\",
     \"hooks\": [{\"type\": \"command\", \"command\": \"outbox hook claude-code\"}]}]}}

Rewritten: a simple command from the --commands list (see `outbox init --help`),
e.g. `grep -rn foo src` becomes `/path/to/outbox -- grep -rn foo src`. Left
alone: pipelines, lists (; && ||), redirections (a trailing 2>&1 is dropped),
substitutions, background commands, interactive invocations, commands already
run by outbox, and `OUTBOX_WRAP=0 CMD ...`.

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
    let Some(out) = decide(&payload, &commands, &shell::self_path()?, args.permission) else {
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
pub fn decide(payload: &Value, commands: &[Wrapped], exe: &str, permission: Permission) -> Option<Value> {
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
    let rewritten = rewrite(command, commands, exe)?;
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

/// One shell word: where it is in the text, and its value when that is
/// known without running anything.
#[derive(Debug)]
struct Word {
    start: usize,
    end: usize,
    /// The word with quotes removed.
    value: String,
    /// Contains a `$` expansion: the value is only known at run time.
    dynamic: bool,
    /// Contains quotes or escapes.
    quoted: bool,
}

/// Splits a simple command into words; None when the text holds anything
/// but words (operators, redirections, substitutions, comments, newlines).
fn split_words(text: &str) -> Option<Vec<Word>> {
    let b = text.as_bytes();
    let mut words = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' => {
                i += 1;
                continue;
            }
            b'#' => return None,
            _ => {}
        }
        let start = i;
        let mut value = Vec::new();
        let (mut dynamic, mut quoted) = (false, false);
        while i < b.len() && !matches!(b[i], b' ' | b'\t') {
            match b[i] {
                b'\n' | b'\r' | b'|' | b'&' | b';' | b'<' | b'>' | b'(' | b')' | b'`' => return None,
                b'$' if b.get(i + 1) == Some(&b'(') => return None,
                b'$' => {
                    dynamic = true;
                    value.push(b'$');
                    i += 1;
                }
                b'\\' => {
                    let c = *b.get(i + 1)?;
                    if c == b'\n' || c == b'\r' {
                        return None;
                    }
                    quoted = true;
                    value.push(c);
                    i += 2;
                }
                b'\'' => {
                    let close = i + 1 + b[i + 1..].iter().position(|&c| c == b'\'')?;
                    value.extend_from_slice(&b[i + 1..close]);
                    quoted = true;
                    i = close + 1;
                }
                b'"' => {
                    quoted = true;
                    i += 1;
                    loop {
                        let c = *b.get(i)?;
                        match c {
                            b'"' => break,
                            b'`' => return None,
                            b'$' if b.get(i + 1) == Some(&b'(') => return None,
                            b'$' => dynamic = true,
                            b'\\' if matches!(b.get(i + 1), Some(b'"' | b'\\' | b'$' | b'`')) => {
                                i += 1;
                            }
                            b'\\' if matches!(b.get(i + 1), Some(b'\n' | b'\r')) => return None,
                            _ => {}
                        }
                        value.push(b[i]);
                        i += 1;
                    }
                    i += 1;
                }
                c => {
                    value.push(c);
                    i += 1;
                }
            }
        }
        words.push(Word { start, end: i, value: String::from_utf8_lossy(&value).into_owned(), dynamic, quoted });
    }
    Some(words)
}

/// `NAME=value` before the command: (NAME, the word).
fn assignment(w: &Word, text: &str) -> Option<String> {
    let raw = &text[w.start..w.end];
    let (name, _) = raw.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| name.to_string())
}

/// `command` run through outbox, or None to leave it alone.
pub fn rewrite(command: &str, commands: &[Wrapped], exe: &str) -> Option<String> {
    let mut text = command.trim_matches(|c| c == ' ' || c == '\t');
    if let Some(rest) = text.strip_suffix("2>&1") {
        if rest.ends_with([' ', '\t']) {
            text = rest.trim_end_matches([' ', '\t']);
        }
    }
    let words = split_words(text)?;
    let mut idx = 0;
    while let Some(w) = words.get(idx) {
        let Some(name) = assignment(w, text) else { break };
        // The escape hatch shared with the shell wrappers.
        if name == "OUTBOX_WRAP" && w.value != "OUTBOX_WRAP=1" {
            return None;
        }
        idx += 1;
    }
    let cmd = words.get(idx)?;
    if cmd.dynamic || cmd.quoted {
        return None;
    }
    let wrapped = commands.iter().find(|w| w.name == cmd.value)?;
    let args = &words[idx + 1..];
    let rule_reads_args = !wrapped.subs.is_empty() || !wrapped.never.is_empty();
    if rule_reads_args && args.iter().any(|a| a.dynamic) {
        // `git $SUB` or `pytest $OPTS`: what runs is decided later.
        return None;
    }
    let values: Vec<&str> = args.iter().map(|a| a.value.as_str()).collect();
    if !wrapped.wants(&values) {
        return None;
    }
    let prefix = words[..idx].iter().map(|w| &text[w.start..w.end]).collect::<Vec<_>>().join(" ");
    let mut out = String::with_capacity(text.len() + exe.len() + 8);
    if !prefix.is_empty() {
        out.push_str(&prefix);
        out.push(' ');
    }
    out.push_str(&shell::quote(exe));
    out.push_str(" -- ");
    out.push_str(&text[cmd.start..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXE: &str = "/opt/outbox/bin/outbox";

    fn rw(cmd: &str) -> Option<String> {
        rewrite(cmd, &shell::default_commands(), EXE)
    }

    #[test]
    fn rewrites_simple_commands() {
        assert_eq!(rw("grep -rn foo src").as_deref(), Some("/opt/outbox/bin/outbox -- grep -rn foo src"));
        assert_eq!(rw("  find . -name '*.rs'  ").as_deref(), Some("/opt/outbox/bin/outbox -- find . -name '*.rs'"));
        assert_eq!(rw("git log --oneline 2>&1").as_deref(), Some("/opt/outbox/bin/outbox -- git log --oneline"));
        assert_eq!(
            rw("LC_ALL=C grep -c \"a b\" f").as_deref(),
            Some("LC_ALL=C /opt/outbox/bin/outbox -- grep -c \"a b\" f")
        );
        assert_eq!(rw("git -C repo diff HEAD~1").as_deref(), Some("/opt/outbox/bin/outbox -- git -C repo diff HEAD~1"));
        assert_eq!(rw("grep \"$PAT\" file").as_deref(), Some("/opt/outbox/bin/outbox -- grep \"$PAT\" file"));
        assert_eq!(rw(r"grep a\|b f").as_deref(), Some(r"/opt/outbox/bin/outbox -- grep a\|b f"));
        assert_eq!(rw("grep 'x | y; z' f").as_deref(), Some("/opt/outbox/bin/outbox -- grep 'x | y; z' f"));
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
            "command grep x f",
            "\"grep\" x f",
            "$GREP x f",
            "",
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
        let out = decide(&p, &cmds, EXE, Permission::None).unwrap();
        let spec = &out["hookSpecificOutput"];
        assert_eq!(spec["hookEventName"], "PreToolUse");
        assert_eq!(spec["updatedInput"]["command"], "/opt/outbox/bin/outbox -- git log -p");
        assert_eq!(spec["updatedInput"]["description"], "Show history");
        assert_eq!(spec["updatedInput"]["timeout"], 60000);
        assert!(spec.get("permissionDecision").is_none());
        let out = decide(&p, &cmds, EXE, Permission::Ask).unwrap();
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "ask");
        let out = decide(&p, &cmds, EXE, Permission::Allow).unwrap();
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "allow");

        let mut bg = p.clone();
        bg["tool_input"]["run_in_background"] = json!(true);
        assert!(decide(&bg, &cmds, EXE, Permission::None).is_none());
        let mut other = p.clone();
        other["tool_name"] = json!("Read");
        assert!(decide(&other, &cmds, EXE, Permission::None).is_none());
        let mut post = p.clone();
        post["hook_event_name"] = json!("PostToolUse");
        assert!(decide(&post, &cmds, EXE, Permission::None).is_none());
    }

    #[test]
    fn exe_with_spaces_is_quoted() {
        let out = rewrite("ls -R", &shell::default_commands(), "/my apps/outbox").unwrap();
        assert_eq!(out, "'/my apps/outbox' -- ls -R");
    }
}
