//! `outbox init --agent NAME` (or `--detect`): puts `outbox hook NAME` into
//! the agent's own settings, and `--undo` takes it out again.
//!
//! | agent       | file                                   | entry |
//! |-------------|----------------------------------------|-------|
//! | claude-code | ~/.claude/settings.json                | hooks.PreToolUse[] {matcher Bash} |
//! | codex       | $CODEX_HOME/hooks.json (~/.codex)      | hooks.PreToolUse[] {matcher Bash} |
//! | gemini      | ~/.gemini/settings.json                | hooks.BeforeTool[] {matcher run_shell_command} |
//! | cursor      | ~/.cursor/hooks.json                   | hooks.preToolUse[] {matcher Shell} |
//! | copilot     | .github/hooks/outbox.json (repository) | a file of its own |
//! | opencode    | ~/.config/opencode/plugin/outbox.js    | a plugin file of its own |
//!
//! Invariants:
//! - The user's other settings are kept: JSON keys stay in their order
//!   (settings.rs), other hooks stay where they are, and outbox's entry is
//!   found again by its command (`... hook NAME`), so running init twice
//!   changes nothing (idempotent) and a moved binary is updated in place.
//! - Before the first change, the file as it was is kept beside it
//!   (`FILE.outbox-backup`, or `FILE.outbox-none` when there was no file),
//!   and never overwritten by a later init: `--undo` puts it back byte for
//!   byte while the file is as outbox left it. When the user has edited the
//!   file since, `--undo` removes only outbox's entry and keeps their
//!   edits (and the backup), and says so.
//! - A file that is not valid JSON is never rewritten: init stops and says
//!   where.
//! - Files are replaced by renaming a complete temporary file over them,
//!   keeping their permissions.
//! - `--dry-run` writes nothing and shows the change as a line diff.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::hook::Agent;
use super::settings::{obj, Json};
use super::shell;

/// What one agent's set-up writes.
struct Target {
    agent: Agent,
    path: PathBuf,
}

/// Every agent, in the order `--detect` reports them.
const AGENTS: [Agent; 6] =
    [Agent::ClaudeCode, Agent::Codex, Agent::Gemini, Agent::Cursor, Agent::Copilot, Agent::Opencode];

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Install,
    Undo,
}

/// Installs (or removes) the hook of `agent`; `file` overrides where its
/// settings are. Returns the report lines.
pub fn apply(agent: Agent, file: Option<&Path>, action: Action, dry_run: bool) -> anyhow::Result<String> {
    let exe = shell::self_path()?;
    let target = Target { agent, path: file.map_or_else(|| default_path(agent), |f| Ok(f.to_path_buf()))? };
    match action {
        Action::Install => install(&target, &exe, dry_run),
        Action::Undo => undo(&target, &exe, dry_run),
    }
}

/// Agents that look installed here: their settings directory exists or
/// their command is on PATH.
pub fn detect() -> Vec<Agent> {
    let home = home().ok();
    AGENTS
        .into_iter()
        .filter(|&a| {
            let (dir, bins): (Option<PathBuf>, &[&str]) = match a {
                Agent::ClaudeCode => (home.as_ref().map(|h| h.join(".claude")), &["claude"]),
                Agent::Codex => (Some(codex_home()).flatten(), &["codex"]),
                Agent::Gemini => (home.as_ref().map(|h| h.join(".gemini")), &["gemini"]),
                Agent::Cursor => (home.as_ref().map(|h| h.join(".cursor")), &["cursor-agent", "cursor"]),
                Agent::Copilot => (home.as_ref().map(|h| h.join(".copilot")), &["copilot"]),
                Agent::Opencode => (config_home().map(|c| c.join("opencode")), &["opencode"]),
            };
            dir.is_some_and(|d| d.is_dir()) || bins.iter().any(|b| on_path(b))
        })
        .collect()
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| !d.as_os_str().is_empty() && d.join(name).is_file()))
}

fn home() -> anyhow::Result<PathBuf> {
    match std::env::var_os("HOME") {
        Some(h) if Path::new(&h).is_absolute() => Ok(PathBuf::from(h)),
        _ => anyhow::bail!("HOME is not set to an absolute path; give the settings file with --file"),
    }
}

/// `$XDG_CONFIG_HOME` when absolute (the XDG rule), else `~/.config`.
fn config_home() -> Option<PathBuf> {
    match std::env::var_os("XDG_CONFIG_HOME") {
        Some(x) if Path::new(&x).is_absolute() => Some(PathBuf::from(x)),
        _ => home().ok().map(|h| h.join(".config")),
    }
}

fn codex_home() -> Option<PathBuf> {
    match std::env::var_os("CODEX_HOME") {
        Some(x) if Path::new(&x).is_absolute() => Some(PathBuf::from(x)),
        _ => home().ok().map(|h| h.join(".codex")),
    }
}

/// Where `agent` reads its hooks from (user-wide, except Copilot CLI,
/// which reads them from the repository).
fn default_path(agent: Agent) -> anyhow::Result<PathBuf> {
    Ok(match agent {
        Agent::ClaudeCode => home()?.join(".claude/settings.json"),
        Agent::Codex => codex_home().ok_or_else(|| anyhow::anyhow!("no CODEX_HOME or HOME"))?.join("hooks.json"),
        Agent::Gemini => home()?.join(".gemini/settings.json"),
        Agent::Cursor => home()?.join(".cursor/hooks.json"),
        Agent::Copilot => std::env::current_dir()?.join(".github/hooks/outbox.json"),
        Agent::Opencode => config_home()
            .ok_or_else(|| anyhow::anyhow!("no XDG_CONFIG_HOME or HOME"))?
            .join("opencode/plugin/outbox.js"),
    })
}

/// The hook command as the agent runs it.
fn hook_command(agent: Agent, exe: &str) -> String {
    format!("{} hook {}", shell::quote(exe), agent.name())
}

/// Whether `s` is a hook command outbox wrote for `agent` (any path).
fn is_ours(agent: Agent, s: &str) -> bool {
    s.contains("outbox") && s.trim_end().ends_with(&format!(" hook {}", agent.name()))
}

/// Backup beside `path`: the file as it was before outbox first changed it.
fn backup_path(path: &Path) -> PathBuf {
    sibling(path, ".outbox-backup")
}

/// Marker beside `path`: there was no file before outbox wrote it.
fn none_path(path: &Path) -> PathBuf {
    sibling(path, ".outbox-none")
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// The file's text with outbox's hook in it.
fn with_hook(agent: Agent, current: Option<&str>, exe: &str, path: &Path) -> anyhow::Result<String> {
    let cmd = hook_command(agent, exe);
    match agent {
        Agent::Copilot => {
            let entry = obj(&[
                ("type", Json::string("command")),
                ("bash", Json::string(&cmd)),
                ("timeoutSec", Json::Leaf(30.into())),
            ]);
            let mut root = parse(current, path)?;
            root.entry("version", Json::Leaf(1.into()));
            add_to_list(&mut root, "preToolUse", entry, agent, path)?;
            Ok(root.to_text())
        }
        Agent::Opencode => Ok(opencode_plugin(exe)),
        _ => {
            let mut root = parse(current, path)?;
            let command = |extra: &[(&str, Json)]| {
                let mut m = vec![("type", Json::string("command")), ("command", Json::string(&cmd))];
                m.extend(extra.iter().cloned());
                obj(&m)
            };
            let (event, entry) = match agent {
                Agent::ClaudeCode | Agent::Codex => (
                    "PreToolUse",
                    obj(&[("matcher", Json::string("Bash")), ("hooks", Json::Array(vec![command(&[])]))]),
                ),
                Agent::Gemini => (
                    "BeforeTool",
                    obj(&[
                        ("matcher", Json::string("run_shell_command")),
                        ("hooks", Json::Array(vec![command(&[("name", Json::string("outbox"))])])),
                    ]),
                ),
                _ => {
                    root.entry("version", Json::Leaf(1.into()));
                    ("preToolUse", obj(&[("command", Json::string(&cmd)), ("matcher", Json::string("Shell"))]))
                }
            };
            add_to_list(&mut root, event, entry, agent, path)?;
            Ok(root.to_text())
        }
    }
}

/// The file's text without outbox's hook; None when nothing of the user's
/// would be left (a file of outbox's own).
fn without_hook(agent: Agent, current: &str, path: &Path) -> anyhow::Result<Option<String>> {
    if agent == Agent::Opencode {
        return Ok(None);
    }
    let mut root = parse(Some(current), path)?;
    let event = match agent {
        Agent::ClaudeCode | Agent::Codex => "PreToolUse",
        Agent::Gemini => "BeforeTool",
        _ => "preToolUse",
    };
    if let Some(hooks) = root.entry("hooks", Json::object()) {
        if let Some(Json::Array(list)) = hooks.entry(event, Json::Array(Vec::new())) {
            list.retain(|e| !e.any_string(&|s| is_ours(agent, s)));
        }
        if hooks.get(event).is_some_and(Json::is_empty_container) {
            hooks.remove(event);
        }
    }
    if root.get("hooks").is_some_and(Json::is_empty_container) {
        root.remove("hooks");
    }
    if agent == Agent::Copilot && root.get("hooks").is_none() {
        return Ok(None);
    }
    Ok(Some(root.to_text()))
}

fn parse(current: Option<&str>, path: &Path) -> anyhow::Result<Json> {
    let root = match current {
        None => Json::object(),
        Some(t) => Json::parse(t).map_err(|e| {
            anyhow::anyhow!(
                "{} is not valid JSON ({e}); fix it or give another file with --file; nothing was changed",
                path.display()
            )
        })?,
    };
    if !matches!(root, Json::Object(_)) {
        anyhow::bail!("{} does not hold a JSON object; nothing was changed", path.display());
    }
    Ok(root)
}

/// Puts `entry` in `hooks.EVENT` (an array), replacing outbox's own entry
/// for `agent` when there is one.
fn add_to_list(root: &mut Json, event: &str, entry: Json, agent: Agent, path: &Path) -> anyhow::Result<()> {
    let bad = || anyhow::anyhow!("{}: `hooks.{event}` is not a list; nothing was changed", path.display());
    let hooks = root.entry("hooks", Json::object()).ok_or_else(bad)?;
    if !matches!(hooks, Json::Object(_)) {
        anyhow::bail!("{}: `hooks` is not an object; nothing was changed", path.display());
    }
    let Some(Json::Array(list)) = hooks.entry(event, Json::Array(Vec::new())) else { return Err(bad()) };
    match list.iter().position(|e| e.any_string(&|s| is_ours(agent, s))) {
        Some(i) => list[i] = entry,
        None => list.push(entry),
    }
    Ok(())
}

/// The OpenCode plugin: before each bash call it asks `outbox hook
/// opencode` and applies the answer's command.
fn opencode_plugin(exe: &str) -> String {
    let exe = Value::String(exe.to_string()).to_string();
    include_str!("opencode.js").replace("\"@OUTBOX@\"", &exe)
}

fn read(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(
            String::from_utf8(b)
                .map_err(|_| anyhow::anyhow!("{} is not UTF-8 text; nothing was changed", path.display()))?,
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
    }
}

/// Writes `text` to `path` by renaming a complete file over it (keeping
/// its mode), creating the directories it needs.
fn write(path: &Path, text: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let tmp = sibling(path, ".outbox-tmp");
    let mode = std::fs::metadata(path).map(|m| m.permissions().mode() & 0o7777).unwrap_or(0o644);
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text)?;
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        anyhow::bail!("cannot write {}: {e}", path.display());
    }
    Ok(())
}

fn install(t: &Target, exe: &str, dry_run: bool) -> anyhow::Result<String> {
    let current = read(&t.path)?;
    let new = with_hook(t.agent, current.as_deref(), exe, &t.path)?;
    let shown = t.path.display();
    if current.as_deref() == Some(new.as_str()) {
        return Ok(format!("{}: {shown} already runs outbox; nothing to change\n", t.agent.name()));
    }
    if dry_run {
        return Ok(format!("{}: would change {shown}:\n{}", t.agent.name(), diff(current.as_deref(), Some(&new))));
    }
    let (backup, none) = (backup_path(&t.path), none_path(&t.path));
    // The first change keeps the original; later ones leave it alone.
    if !backup.exists() && !none.exists() {
        match &current {
            // A copy keeps the file's bytes and its permissions.
            Some(_) => {
                std::fs::copy(&t.path, &backup).map_err(|e| {
                    anyhow::anyhow!("cannot keep a backup at {}: {e}; nothing was changed", backup.display())
                })?;
            }
            None => write(&none, b"")?,
        }
    }
    write(&t.path, new.as_bytes())?;
    let kept = if backup.exists() {
        format!("the file as it was is kept at {}", backup.display())
    } else {
        "there was no file before".to_string()
    };
    Ok(format!(
        "{}: wrote {shown} ({kept}); `outbox init --agent {} --undo` takes it out\n",
        t.agent.name(),
        t.agent.name()
    ))
}

fn undo(t: &Target, exe: &str, dry_run: bool) -> anyhow::Result<String> {
    let current = read(&t.path)?;
    let (backup, none) = (backup_path(&t.path), none_path(&t.path));
    let (name, shown) = (t.agent.name(), t.path.display());
    let original: Option<Option<String>> = if backup.exists() {
        Some(Some(read(&backup)?.unwrap_or_default()))
    } else if none.exists() {
        Some(None)
    } else {
        None
    };
    if let Some(orig) = &original {
        // As outbox left it (whatever the path of outbox was): put the
        // original back, byte for byte.
        let as_left = match &current {
            None => true,
            Some(c) => as_left(t.agent, c, orig.as_deref(), exe, &t.path),
        };
        if as_left {
            if dry_run {
                return Ok(format!("{name}: would restore {shown}:\n{}", diff(current.as_deref(), orig.as_deref())));
            }
            match orig {
                Some(text) => write(&t.path, text.as_bytes())?,
                None if current.is_some() => {
                    std::fs::remove_file(&t.path).map_err(|e| anyhow::anyhow!("cannot remove {shown}: {e}"))?
                }
                None => {}
            }
            let _ = std::fs::remove_file(&backup);
            let _ = std::fs::remove_file(&none);
            return Ok(format!("{name}: restored {shown} as it was before outbox\n"));
        }
    }
    // Edited since outbox changed it, or no backup: take out outbox's entry
    // only, and keep the rest.
    let Some(cur) = current else {
        return Ok(format!("{name}: {shown} does not exist; nothing to undo\n"));
    };
    if !mentions(t.agent, &cur) {
        return Ok(format!("{name}: {shown} has no outbox hook; nothing to undo\n"));
    }
    let new = without_hook(t.agent, &cur, &t.path)?;
    if dry_run {
        return Ok(format!("{name}: would change {shown}:\n{}", diff(Some(&cur), new.as_deref())));
    }
    match &new {
        Some(text) => write(&t.path, text.as_bytes())?,
        None => std::fs::remove_file(&t.path).map_err(|e| anyhow::anyhow!("cannot remove {shown}: {e}"))?,
    }
    let mut msg = format!("{name}: took the outbox hook out of {shown}");
    if original.is_some() {
        // A later init must take a fresh backup of the edited file.
        let _ = std::fs::remove_file(&none);
        if backup.exists() {
            let old = sibling(&t.path, ".outbox-original");
            let _ = std::fs::rename(&backup, &old);
            let _ = write!(msg, " and kept your edits since; the file as it was before outbox is at {}", old.display());
        }
    }
    msg.push('\n');
    Ok(msg)
}

/// Whether `current` is what installing into `original` made, apart from
/// the path of outbox in the hook (which may have moved since).
fn as_left(agent: Agent, current: &str, original: Option<&str>, exe: &str, path: &Path) -> bool {
    if !mentions(agent, current) {
        return false;
    }
    let made = match with_hook(agent, original, exe, path) {
        Ok(m) => m,
        Err(_) => return false,
    };
    match (without_hook(agent, current, path), without_hook(agent, &made, path)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Whether `text` holds outbox's hook for `agent`.
fn mentions(agent: Agent, text: &str) -> bool {
    match agent {
        Agent::Opencode => text.contains("outbox hook opencode") || text.contains("\"hook\", \"opencode\""),
        _ => Json::parse(text).is_ok_and(|j| j.any_string(&|s| is_ours(agent, s))),
    }
}

/// A line diff of `before` and `after` (None: no file), every line shown
/// with ` `, `-` or `+`.
fn diff(before: Option<&str>, after: Option<&str>) -> String {
    let a: Vec<&str> = before.map(|t| t.lines().collect()).unwrap_or_default();
    let b: Vec<&str> = after.map(|t| t.lines().collect()).unwrap_or_default();
    let mut out = String::new();
    if before.is_none() {
        out.push_str("(no file before)\n");
    }
    if a.len() * b.len() > 4_000_000 {
        a.iter().for_each(|l| out.push_str(&format!("-{l}\n")));
        b.iter().for_each(|l| out.push_str(&format!("+{l}\n")));
    } else {
        // Longest common subsequence, then walk it.
        let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
        for i in (0..a.len()).rev() {
            for j in (0..b.len()).rev() {
                lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            if i < a.len() && j < b.len() && a[i] == b[j] {
                let _ = writeln!(out, " {}", a[i]);
                i += 1;
                j += 1;
            } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
                let _ = writeln!(out, "+{}", b[j]);
                j += 1;
            } else {
                let _ = writeln!(out, "-{}", a[i]);
                i += 1;
            }
        }
    }
    if after.is_none() {
        out.push_str("(file removed)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXE: &str = "/usr/local/bin/outbox";

    #[test]
    fn merges_keep_other_settings_and_are_idempotent() {
        let p = Path::new("/x/settings.json");
        let user = r#"{"model": "opus", "hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "lint"}]}], "Stop": []}, "env": {"A": "1"}}"#;
        let once = with_hook(Agent::ClaudeCode, Some(user), EXE, p).unwrap();
        let twice = with_hook(Agent::ClaudeCode, Some(&once), EXE, p).unwrap();
        assert_eq!(once, twice);
        let v: Value = serde_json::from_str(&once).unwrap();
        assert_eq!(v["model"], "opus");
        assert_eq!(v["env"]["A"], "1");
        assert_eq!(v["hooks"]["PreToolUse"][0]["matcher"], "Write");
        assert_eq!(v["hooks"]["PreToolUse"][1]["hooks"][0]["command"], "/usr/local/bin/outbox hook claude-code");
        assert!(once.find("\"model\"").unwrap() < once.find("\"hooks\"").unwrap(), "order kept");
        // A moved binary is updated in place.
        let moved = with_hook(Agent::ClaudeCode, Some(&once), "/opt/outbox", p).unwrap();
        let v: Value = serde_json::from_str(&moved).unwrap();
        assert_eq!(v["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
        assert_eq!(v["hooks"]["PreToolUse"][1]["hooks"][0]["command"], "/opt/outbox hook claude-code");
        // Out again: the user's entry stays.
        let out = without_hook(Agent::ClaudeCode, &once, p).unwrap().unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["hooks"]["PreToolUse"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn every_agent_gets_its_own_shape() {
        let p = Path::new("/x/f");
        let get = |a: Agent| serde_json::from_str::<Value>(&with_hook(a, None, EXE, p).unwrap()).unwrap();
        assert_eq!(get(Agent::Codex)["hooks"]["PreToolUse"][0]["matcher"], "Bash");
        assert_eq!(get(Agent::Gemini)["hooks"]["BeforeTool"][0]["matcher"], "run_shell_command");
        let c = get(Agent::Cursor);
        assert_eq!((c["version"].clone(), c["hooks"]["preToolUse"][0]["matcher"].clone()), (1.into(), "Shell".into()));
        let g = get(Agent::Copilot);
        assert_eq!(g["hooks"]["preToolUse"][0]["bash"], "/usr/local/bin/outbox hook copilot");
        let js = with_hook(Agent::Opencode, None, "/a \"b\"/outbox", p).unwrap();
        assert!(js.contains(r#"const OUTBOX = "/a \"b\"/outbox";"#), "{js}");
    }

    #[test]
    fn broken_files_are_left_alone() {
        let p = Path::new("/x/settings.json");
        assert!(with_hook(Agent::ClaudeCode, Some("{ nope"), EXE, p)
            .unwrap_err()
            .to_string()
            .contains("not valid JSON"));
        assert!(with_hook(Agent::ClaudeCode, Some("[]"), EXE, p).is_err());
        assert!(with_hook(Agent::ClaudeCode, Some(r#"{"hooks": []}"#), EXE, p).is_err());
        assert!(with_hook(Agent::ClaudeCode, Some(r#"{"hooks": {"PreToolUse": {}}}"#), EXE, p).is_err());
    }

    #[test]
    fn diffs() {
        assert_eq!(diff(Some("a\nb\n"), Some("a\nc\nb\n")), " a\n+c\n b\n");
        assert_eq!(diff(None, Some("x\n")), "(no file before)\n+x\n");
    }
}
