//! Each agent's pre-command hook protocol: where the shell command is in
//! its payload, and how it is told to run another one instead. What is
//! rewritten is decided once, for all of them (line.rs, `rewrite`).
//!
//! Sources (read from each agent's own documentation; the fixtures in
//! tests/fixtures/hooks/ are its examples, and their README says where each
//! one came from):
//! - Claude Code, PreToolUse: `tool_name` "Bash", `tool_input.command`;
//!   answer `hookSpecificOutput.updatedInput` (the whole input) with a
//!   `permissionDecision`.
//! - Codex CLI, PreToolUse: `tool_name` "Bash", `tool_input.command`;
//!   answer `hookSpecificOutput.updatedInput`, which Codex applies only
//!   beside `permissionDecision: "allow"` (openai/codex#20527, May 2026;
//!   earlier releases refuse `updatedInput` and run the original). A
//!   pre-hook's allow waives none of Codex's own approvals (#20702).
//! - Gemini CLI, BeforeTool: `tool_name` "run_shell_command",
//!   `tool_input.command`; answer `hookSpecificOutput.tool_input`, which is
//!   merged over the model's arguments.
//! - Cursor, preToolUse: `tool_name` "Shell", `tool_input.command`; answer
//!   `updated_input` with a `permission`; Cursor wants JSON on every path,
//!   so "no opinion" is `{}`. Its older beforeShellExecution event can only
//!   allow or deny (no rewrite): it gets `{}`.
//! - Copilot CLI, preToolUse: `toolName` "bash", `toolArgs` (an object, or
//!   the same as a JSON string in older releases), or with the PascalCase
//!   event name `tool_name`/`tool_input`; answer `modifiedArgs`.
//! - OpenCode: no command hook; a plugin's `tool.execute.before(input,
//!   output)` (opencode.rs writes it) sends `{"tool", "sessionID",
//!   "callID", "args"}` and applies the answer's `args`.

use serde_json::{json, Map, Value};

use super::{Agent, Permission};

/// The reason shown beside a permission decision.
const REASON: &str = "outbox: output returned as a bounded envelope; exit status and full output kept";

/// A shell tool call found in a payload.
pub struct Call {
    /// The command line to run.
    pub command: String,
    /// The tool's arguments, as they came (the answer copies them).
    args: Map<String, Value>,
    /// Where the command is in `args`: `command`, or the last element of a
    /// `command` array (`["bash", "-lc", LINE]`).
    in_array: bool,
}

/// The shell call in `payload`, or None when it is not one this hook
/// rewrites (another tool, another event, a background run).
pub fn call(agent: Agent, payload: &Value) -> Option<Call> {
    let event = payload.get("hook_event_name").and_then(Value::as_str);
    let tool = |key: &str| payload.get(key).and_then(Value::as_str);
    let (args, background) = match agent {
        Agent::ClaudeCode | Agent::Codex => {
            if event.is_some_and(|e| e != "PreToolUse") || tool("tool_name")? != "Bash" {
                return None;
            }
            (payload.get("tool_input")?.as_object()?.clone(), "run_in_background")
        }
        Agent::Gemini => {
            if event.is_some_and(|e| e != "BeforeTool") || tool("tool_name")? != "run_shell_command" {
                return None;
            }
            (payload.get("tool_input")?.as_object()?.clone(), "is_background")
        }
        Agent::Cursor => {
            if event.is_some_and(|e| e != "preToolUse") || tool("tool_name")? != "Shell" {
                return None;
            }
            (payload.get("tool_input")?.as_object()?.clone(), "is_background")
        }
        Agent::Copilot => {
            let (name, args) = match tool("toolName") {
                Some(n) => (n, payload.get("toolArgs")?),
                None => (tool("tool_name")?, payload.get("tool_input")?),
            };
            if event.is_some_and(|e| !e.eq_ignore_ascii_case("preToolUse")) || name != "bash" {
                return None;
            }
            let args = match args {
                Value::String(s) => serde_json::from_str::<Value>(s).ok()?.as_object()?.clone(),
                v => v.as_object()?.clone(),
            };
            if args.get("mode").and_then(Value::as_str) == Some("async") {
                return None;
            }
            (args, "detach")
        }
        Agent::Opencode => {
            if tool("tool")? != "bash" {
                return None;
            }
            (payload.get("args")?.as_object()?.clone(), "run_in_background")
        }
    };
    // Output read while it runs: an envelope comes only at the end.
    if args.get(background).and_then(Value::as_bool) == Some(true) {
        return None;
    }
    match args.get("command")? {
        Value::String(s) => Some(Call { command: s.clone(), args, in_array: false }),
        // Codex's exec argv: a shell's `-c`/`-lc` and the line.
        Value::Array(a) if a.len() == 3 && matches!(a[1].as_str(), Some("-c" | "-lc")) => {
            let shell = a[0].as_str()?;
            let base = shell.rsplit('/').next().unwrap_or(shell);
            if !matches!(base, "bash" | "zsh") {
                return None;
            }
            Some(Call { command: a[2].as_str()?.to_string(), args, in_array: true })
        }
        _ => None,
    }
}

/// The permission decision sent when none is asked for: what each
/// protocol needs for the rewrite to be applied, and never a grant the
/// user did not make (Codex's allow grants nothing, see above).
pub fn default_permission(agent: Agent) -> Permission {
    match agent {
        Agent::ClaudeCode | Agent::Cursor => Permission::Ask,
        Agent::Codex => Permission::Allow,
        Agent::Gemini | Agent::Copilot | Agent::Opencode => Permission::None,
    }
}

/// The answer that makes the agent run `rewritten` instead.
pub fn answer(agent: Agent, call: &Call, rewritten: &str, permission: Permission) -> Value {
    let mut updated = call.args.clone();
    if call.in_array {
        if let Some(Value::Array(a)) = updated.get_mut("command") {
            a[2] = Value::String(rewritten.to_string());
        }
    } else {
        updated.insert("command".into(), Value::String(rewritten.to_string()));
    }
    let decision = match permission {
        Permission::None => None,
        Permission::Allow => Some("allow"),
        Permission::Ask => Some("ask"),
    };
    match agent {
        Agent::ClaudeCode | Agent::Codex => {
            // Codex applies updatedInput only with allow.
            let decision = if agent == Agent::Codex { Some("allow") } else { decision };
            let mut specific = json!({ "hookEventName": "PreToolUse", "updatedInput": updated });
            if let Some(d) = decision {
                specific["permissionDecision"] = json!(d);
                specific["permissionDecisionReason"] = json!(REASON);
            }
            json!({ "hookSpecificOutput": specific })
        }
        Agent::Gemini => {
            // Merged over the model's arguments: the command is enough.
            let mut out = json!({ "hookSpecificOutput": {
                "hookEventName": "BeforeTool",
                "tool_input": { "command": updated["command"].clone() },
            }});
            // Gemini's decisions are allow and deny: ask leaves its own
            // confirmation in charge.
            if decision == Some("allow") {
                out["decision"] = json!("allow");
                out["reason"] = json!(REASON);
            }
            out
        }
        Agent::Cursor => {
            let mut out = json!({ "updated_input": updated });
            if let Some(d) = decision {
                out["permission"] = json!(d);
                out["user_message"] = json!(REASON);
            }
            out
        }
        Agent::Copilot => {
            let mut out = json!({ "modifiedArgs": updated });
            if let Some(d) = decision {
                out["permissionDecision"] = json!(d);
                out["permissionDecisionReason"] = json!(REASON);
            }
            out
        }
        Agent::Opencode => json!({ "args": updated }),
    }
}

/// What the hook prints when it leaves the call alone: nothing, except for
/// Cursor, which expects JSON on every path.
pub fn no_answer(agent: Agent) -> Option<Value> {
    (agent == Agent::Cursor).then(|| json!({}))
}
