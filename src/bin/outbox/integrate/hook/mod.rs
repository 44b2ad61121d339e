//! `outbox hook AGENT`: the pre-command hooks of Claude Code, Codex CLI,
//! Gemini CLI, Cursor, Copilot CLI and OpenCode, so an agent's shell
//! commands whose output grows (find, grep, git log, cargo test, anything
//! cut with `| head`/`| tail`) are enveloped by outbox without any shell
//! setup.
//!
//! Each agent's payload and answer are in agents.rs; what is rewritten is
//! decided once, for all of them: the line grammar (line.rs, on the
//! whitelist tokenizer of words.rs) and the command list shared with the
//! shell wrappers (shell.rs). Printing nothing (Cursor: `{}`) and exiting 0
//! means "no opinion": the command runs as it was.
//!
//! Invariants:
//! - Only a line the grammar proves simple is rewritten: `[cd DIR &&]
//!   [NAME=value...] CMD ARGS [2>&1] [| head -N | tail -N]`, with plain
//!   words, single quotes, double quotes without `$ \` \\ !`, and globs in
//!   arguments. Anything else (`$` in any form, backslashes, other
//!   operators and redirections, braces, comments, newlines) gets no answer
//!   at all: no rewrite and no permission decision.
//! - A rewrite never changes what runs, only where its output goes: the
//!   line's text stays in front, byte for byte, so the agent's shell runs
//!   its own function, alias or builtin of that name, expands the globs and
//!   changes directory as it would have.
//! - The rewritten line's exit status is the original line's, whatever
//!   the store's state: it travels in the pipe (trailer.rs).
//! - Only the invocations the shell wrappers would wrap are rewritten (same
//!   list and subcommand rule, shell.rs), plus a few filters when their
//!   output is cut; commands already run by outbox, background commands,
//!   and `OUTBOX_WRAP=0 CMD` are left alone.
//! - No permission is granted unless asked for with `--permission allow`
//!   (Codex's allow is required for its rewrite and grants nothing).

use std::io::{Read, Write};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use serde_json::Value;

use crate::integrate::shell::{self, Wrapped};

pub mod agents;
pub mod line;
mod words;

/// Largest hook payload read (a shell tool call is a few KiB).
const MAX_PAYLOAD: u64 = 16 << 20;

/// Commands rewritten by default: the shell wrappers' list, and the build
/// tools whose logs agents read most.
pub const DEFAULT_COMMANDS: &str = "default,make,go,npm";

const HOOK_AFTER_HELP: &str = "\
Set up with `outbox init --agent NAME` (or --detect), which writes the hook
into the agent's settings; `outbox init --agent NAME --undo` takes it out.

Rewritten, for every agent alike: a line that is provably
  [cd DIR &&] [NAME=value ...] CMD ARGS [2>&1] [| head -N | tail -N]
with CMD from --commands (see `outbox init --help`; sort, uniq, cat, jq, awk,
sed, cut, wc and diff too when their output is cut), plain words,
'single-quoted' and \"double-quoted\" strings without $ ` \\ !, and globs in
the arguments. `grep -rn foo src | head -50` becomes
  { grep -rn foo src && printf '\\nN:0\\n' || printf '\\nN:%s\\n' $?;
    [[ -o pipefail ]] && printf 'N:p\\n'; } | /path/to/outbox --label grep
    --cut head:50 --trailer N
(N a few hex digits): the agent's shell still runs its own function or alias
named grep, the envelope shows at least the 50 lines head would have shown and
what head hid, and the line's exit status is the original line's (pipefail
respected) whether or not the store can be written. Left alone, with no
answer at all: anything else ($ in any form, backslashes, other pipelines,
lists and redirections, substitutions, braces, comments, newlines),
background commands, interactive invocations, commands already run by outbox,
OUTBOX_WRAP=0 CMD.

Permissions (--permission): Claude Code applies a rewrite together with a
decision, so one is sent: ask (its default here) shows the rewritten command
for confirmation; allow runs it without a prompt, and since Claude Code checks
its rules against the rewritten command, a deny rule written for the original
(Bash(git log:*)) stops blocking it. Codex applies a rewrite only with allow,
which grants nothing there (its own approvals still apply). Cursor: ask by
default. Gemini, Copilot and OpenCode: none by default.";

#[derive(Debug, Clone, Args)]
#[command(after_help = HOOK_AFTER_HELP)]
pub struct HookArgs {
    /// Which agent's hook protocol to speak.
    #[arg(value_enum)]
    pub agent: Agent,

    /// Commands to rewrite, as for `outbox init --commands`.
    #[arg(long, value_name = "LIST", default_value = DEFAULT_COMMANDS)]
    pub commands: String,

    /// Permission decision sent with a rewrite. ask: the user confirms the
    /// rewritten command; allow: no prompt (see Permissions below); none: no
    /// decision. Default: what the agent needs (see below).
    #[arg(long, value_enum, value_name = "DECISION")]
    pub permission: Option<Permission>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Agent {
    /// Claude Code's PreToolUse hook (Bash tool).
    ClaudeCode,
    /// OpenAI Codex CLI's PreToolUse hook (Bash).
    Codex,
    /// Gemini CLI's BeforeTool hook (run_shell_command).
    Gemini,
    /// Cursor's preToolUse hook (Shell).
    Cursor,
    /// GitHub Copilot CLI's preToolUse hook (bash).
    Copilot,
    /// OpenCode, through the plugin `outbox init --agent opencode` writes.
    Opencode,
}

impl Agent {
    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Cursor => "cursor",
            Agent::Copilot => "copilot",
            Agent::Opencode => "opencode",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Permission {
    None,
    Allow,
    Ask,
}

/// Reads the hook payload on stdin and prints the answer, if any.
pub fn run(args: &HookArgs) -> anyhow::Result<ExitCode> {
    let commands = shell::parse_commands(&args.commands).map_err(|e| anyhow::anyhow!("--commands: {e}"))?;
    let mut raw = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_PAYLOAD + 1)
        .read_to_end(&mut raw)
        .map_err(|e| anyhow::anyhow!("cannot read the hook payload on stdin: {e}"))?;
    if raw.len() as u64 > MAX_PAYLOAD {
        anyhow::bail!("the hook payload is larger than {MAX_PAYLOAD} bytes; not a hook payload");
    }
    let payload: Value = serde_json::from_slice(&raw).map_err(|e| {
        anyhow::anyhow!("the hook payload on stdin is not JSON ({e}); is this a {} hook?", args.agent.name())
    })?;
    let permission = args.permission.unwrap_or_else(|| agents::default_permission(args.agent));
    let out = decide(args.agent, &payload, &commands, &shell::self_path()?, permission)
        .or_else(|| agents::no_answer(args.agent));
    let Some(out) = out else {
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
pub fn decide(agent: Agent, payload: &Value, commands: &[Wrapped], exe: &str, permission: Permission) -> Option<Value> {
    let call = agents::call(agent, payload)?;
    let rewritten = rewrite(&call.command, commands, exe)?;
    Some(agents::answer(agent, &call, &rewritten, permission))
}

/// Commands rewritten only when their output is cut by `| head`/`| tail`:
/// they read their input or files and end, and the cut already shows that
/// the reader expects more output than it wants.
const CUT_ONLY: &[&str] = &["sort", "uniq", "cat", "tac", "nl", "jq", "diff", "awk", "sed", "cut", "wc"];

/// `command` rewritten so that its output goes through outbox, or None to
/// leave it alone. The line grammar (line.rs) decides what is read at all;
/// the command list decides which commands are worth it.
///
/// The text stays in front as typed (the `cd`, assignments, globs, the
/// command), so the agent's shell runs its own function, alias or builtin
/// of that name (Claude Code defines `rg`, and in newer versions `grep` and
/// `find`, as functions running its bundled tools; `outbox -- rg` would
/// exec another binary or none), and `cd` still changes the shell's
/// directory. The command's stderr joins the envelope unless the line cut
/// only stdout (`CMD | head`). Its exit status follows its output into the
/// pipe as a trailer (trailer.rs), so the line's status is what the
/// original line's would have been, with no file written anywhere:
///
/// ```text
/// grep -rn foo src | head -50
/// { grep -rn foo src && printf '\nN:0\n' || printf '\nN:%s\n' $?; [[ -o pipefail ]] && printf 'N:p\n'; }
///   | /path/to/outbox --label grep --cut head:50 --trailer N
/// ```
///
/// `&&`/`||` rather than `; printf $?`, so a shell with `set -e` still
/// reports the status; the pipefail line only for a cut, whose original
/// status depends on it.
pub fn rewrite(command: &str, commands: &[Wrapped], exe: &str) -> Option<String> {
    let text = command.trim_matches(|c| c == ' ' || c == '\t');
    let line = line::parse(text)?;
    if line.assigned.iter().any(|n| n.starts_with("OUTBOX")) {
        // `OUTBOX_WRAP=0 CMD` is the way to reach the command untouched.
        return None;
    }
    let args: Vec<&str> = line.args.iter().map(|a| a.value.as_str()).collect();
    let listed = commands.iter().find(|w| w.name == line.name);
    let wanted = match listed {
        Some(w) => w.wants(&args),
        None => line.cut.is_some() && CUT_ONLY.contains(&line.name.as_str()),
    };
    if !wanted {
        return None;
    }
    let nonce = nonce(text);
    let merge = if line.cut.is_none() && !line.merges_stderr { " 2>&1" } else { "" };
    let pipefail = match line.cut {
        Some(_) => format!("; [[ -o pipefail ]] && printf '{nonce}:p\\n'"),
        None => String::new(),
    };
    let cut = line.cut.map(|c| format!(" --cut {}", c.option())).unwrap_or_default();
    Some(format!(
        "{cd}{{ {cmd}{merge} && printf '\\n{nonce}:0\\n' || printf '\\n{nonce}:%s\\n' $?{pipefail}; }} | \
{exe} --label {name}{cut} --trailer {nonce}",
        cd = line.cd,
        cmd = line.command,
        exe = shell::quote(exe),
        name = shell::quote(&line.name),
    ))
}

/// The trailer's nonce: four hex digits of a hash of the line, so the same
/// line is always rewritten the same way (answers can be compared byte for
/// byte) and a command's output does not end with it by accident.
fn nonce(line: &str) -> String {
    let h = blake3::hash(line.as_bytes());
    h.as_bytes()[..2].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const EXE: &str = "/opt/outbox/bin/outbox";

    fn cmds() -> Vec<Wrapped> {
        shell::parse_commands(DEFAULT_COMMANDS).unwrap()
    }

    fn rw(cmd: &str) -> Option<String> {
        rewrite(cmd, &cmds(), EXE)
    }

    /// What `text` (a command named `name`, typed as `line`) is rewritten
    /// to; `merge`: stderr joins.
    fn piped(line: &str, cd: &str, text: &str, name: &str, merge: bool, cut: Option<&str>) -> String {
        let n = nonce(line);
        let merge = if merge { " 2>&1" } else { "" };
        let (pf, cut) = match cut {
            Some(c) => (format!("; [[ -o pipefail ]] && printf '{n}:p\\n'"), format!(" --cut {c}")),
            None => (String::new(), String::new()),
        };
        format!(
            "{cd}{{ {text}{merge} && printf '\\n{n}:0\\n' || printf '\\n{n}:%s\\n' $?{pf}; }} | \
/opt/outbox/bin/outbox --label {name}{cut} --trailer {n}"
        )
    }

    #[test]
    fn rewrites_simple_commands() {
        let plain = |l: &str, text: &str, name: &str| piped(l, "", text, name, true, None);
        assert_eq!(rw("grep -rn foo src"), Some(plain("grep -rn foo src", "grep -rn foo src", "grep")));
        assert_eq!(rw("  find . -name '*.rs'  "), Some(plain("find . -name '*.rs'", "find . -name '*.rs'", "find")));
        let l = "git log --oneline 2>&1";
        assert_eq!(rw(l), Some(piped(l, "", l, "git", false, None)));
        assert_eq!(
            rw("git -C repo diff HEAD~1"),
            Some(plain("git -C repo diff HEAD~1", "git -C repo diff HEAD~1", "git"))
        );
        assert_eq!(rw("grep 'x | y; z' f"), Some(plain("grep 'x | y; z' f", "grep 'x | y; z' f", "grep")));
        assert_eq!(rw("git 'log'"), Some(plain("git 'log'", "git 'log'", "git")), "the subcommand rule reads values");
        assert_eq!(rw("grep -n x src/*.rs"), Some(plain("grep -n x src/*.rs", "grep -n x src/*.rs", "grep")));
    }

    #[test]
    fn rewrites_the_lines_agents_type() {
        let l = "grep -rn foo src | head -50";
        assert_eq!(rw(l), Some(piped(l, "", "grep -rn foo src", "grep", false, Some("head:50"))));
        let l = "cargo test 2>&1 | tail -30";
        assert_eq!(rw(l), Some(piped(l, "", "cargo test 2>&1", "cargo", false, Some("tail:30"))));
        let l = "cd sub && make";
        assert_eq!(rw(l), Some(piped(l, "cd sub && ", "make", "make", true, None)));
        let l = "LC_ALL=C sort big.txt | head";
        assert_eq!(rw(l), Some(piped(l, "", "LC_ALL=C sort big.txt", "sort", false, Some("head:10"))));
        let l = "cd crates/core && RUST_LOG=debug cargo test -q 2>&1 | tail -n 40";
        assert_eq!(
            rw(l),
            Some(piped(l, "cd crates/core && ", "RUST_LOG=debug cargo test -q 2>&1", "cargo", false, Some("tail:40")))
        );
        assert_eq!(rw("sort big.txt"), None, "a filter is rewritten only when its output is cut");
        assert_eq!(rw("yes | head -3"), None, "nor is an endless producer");
    }

    #[test]
    fn the_line_stays_short() {
        for l in [
            "grep -rn foo src",
            "grep -rn foo src | head -50",
            "cargo test 2>&1 | tail -30",
            "cd sub && make",
            "LC_ALL=C sort big.txt | head",
        ] {
            let out = rw(l).unwrap();
            assert!(out.len() <= l.len() + 160, "{} more chars for {l:?}: {out}", out.len() - l.len());
        }
    }

    #[test]
    fn leaves_the_rest_alone() {
        for cmd in [
            "grep x f | wc -l",
            "grep x f > out.txt",
            "grep x f 2>/dev/null",
            "grep x < f",
            "cd src && cd .. && grep -rn x .",
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
            "git l* | head",
            "less file",
            "vim file",
            "top",
            "pytest --pdb",
            r"find . -ok rm {} \;",
            "outbox -- grep x f",
            "/opt/outbox/bin/outbox -- grep x f",
            "OUTBOX_WRAP=0 grep x f",
            "OUTBOX_WRAP=1 grep x f",
            "command grep x f",
            "\"grep\" x f",
            "g'rep' x f",
            "$GREP x f",
            "",
            "2>&1",
            "FOO=1",
            "grep x f | head -c 100",
            "tail -f log | head",
            "cat /dev/urandom | head -c 10",
        ] {
            assert_eq!(rw(cmd), None, "{cmd:?} must not be rewritten");
        }
        let once = rw("grep -rn foo src | head -50").unwrap();
        assert_eq!(rw(&once), None, "a rewritten line is not rewritten again");
    }

    #[test]
    fn claude_code_payloads() {
        let cmds = cmds();
        let p = json!({
            "session_id": "abc", "transcript_path": "/t.jsonl", "cwd": "/repo",
            "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": "git log -p", "description": "Show history", "timeout": 60000}
        });
        let a = Agent::ClaudeCode;
        let out = decide(a, &p, &cmds, EXE, Permission::None).unwrap();
        let spec = &out["hookSpecificOutput"];
        assert_eq!(spec["hookEventName"], "PreToolUse");
        assert_eq!(spec["updatedInput"]["command"], piped("git log -p", "", "git log -p", "git", true, None));
        assert_eq!(spec["updatedInput"]["description"], "Show history");
        assert_eq!(spec["updatedInput"]["timeout"], 60000);
        assert!(spec.get("permissionDecision").is_none());
        let out = decide(a, &p, &cmds, EXE, Permission::Ask).unwrap();
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "ask");
        let out = decide(a, &p, &cmds, EXE, Permission::Allow).unwrap();
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "allow");

        let mut bg = p.clone();
        bg["tool_input"]["run_in_background"] = json!(true);
        assert!(decide(a, &bg, &cmds, EXE, Permission::None).is_none());
        let mut other = p.clone();
        other["tool_name"] = json!("Read");
        assert!(decide(a, &other, &cmds, EXE, Permission::None).is_none());
        let mut post = p.clone();
        post["hook_event_name"] = json!("PostToolUse");
        assert!(decide(a, &post, &cmds, EXE, Permission::None).is_none());
    }

    #[test]
    fn exe_with_spaces_is_quoted() {
        let out = rewrite("ls -R", &cmds(), "/my apps/outbox").unwrap();
        assert!(out.contains("; } | '/my apps/outbox' --label ls "), "{out}");
    }
}
