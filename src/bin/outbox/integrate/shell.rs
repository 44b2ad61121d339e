//! `outbox init bash|zsh|fish`: shell code that wraps chosen commands in
//! `outbox --`, for shells run by agents.
//!
//! Invariants of the generated code:
//! - It never changes what a person sees at a terminal or what a pipeline
//!   receives: a wrapper envelopes only when `OUTBOX_WRAP=1` is set *and* its
//!   stdout is the very file the shell's stdout was when the init code ran
//!   (same device and inode, taken with `stat -L` on a duplicate of fd 1,
//!   and on Linux the same append flag of the open file description, from
//!   `/proc/self/fdinfo`). In a pipeline (`grep x f | wc -l`), a redirect
//!   (`> f`), or a command substitution, stdout is something else and the
//!   real tool runs untouched; so is `grep x f >> out` where the shell's own
//!   stdout is `out` (opened without append). A redirect that opens the
//!   shell's own stdout file again with the same flags is told apart by
//!   outbox itself (`reopen.rs`: the wrappers pass the shell's pids, and
//!   `kcmp` compares open file descriptions); outbox then runs the real
//!   tool in its place.
//! - A redirection of stderr the user wrote keeps working: the wrapper
//!   merges stderr into the envelope only when the command's stderr is the
//!   shell's stderr as recorded at init (or its stdout, `2>&1`); otherwise
//!   (`2>/dev/null`, `2>err.log`) it runs `outbox --stderr inherit`, which
//!   leaves stderr where the user sent it.
//! - `command grep …` and `OUTBOX_WRAP=0 grep …` always reach the real tool.
//! - A wrapper is defined only for a command found on PATH when the init code
//!   runs, so `command -v rg` still tells a script whether rg exists.
//! - A function the user already has is never replaced: a wrapper would call
//!   the binary instead, even with OUTBOX_WRAP unset (a user's `ls() {…}`,
//!   Claude Code's `rg`). When init runs, a function of that name not
//!   defined by outbox means no wrapper for it; one defined by outbox (init
//!   run twice) is redefined. In fish, the functions fish itself ships
//!   (`grep` and `ls`, which add colours at a terminal) are kept under
//!   `__outbox_fish_NAME` and called whenever the wrapper does not
//!   envelope. Aliases need nothing: an alias expands to the command name,
//!   which then reaches the wrapper (or the real tool).
//! - outbox is called by its absolute path, so PATH does not matter, and a
//!   wrapper whose outbox binary has gone falls back to the real tool.
//! - Multi-purpose tools (git, cargo, ...) are wrapped only for subcommands
//!   whose output grows with what they inspect (`git log`, not `git commit`,
//!   which opens an editor); arguments that make a tool interactive
//!   (`pytest --pdb`) leave it unwrapped.
//! - The code is plain enough for non-interactive shells (`bash -c`), `set -u`
//!   and `set -e`: no aliases, no arrays, every expansion defaulted.
//!
//! The command list and the subcommand rule are shared with `outbox hook`
//! (hook/mod.rs), so both integrations wrap the same invocations.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

/// Help shown after `outbox init --help`.
const INIT_AFTER_HELP: &str = "\
Wrapped by default (each only if found on PATH when the code runs):
  find grep rg ls tree du pytest
  git    only: log diff show blame grep ls-files ls-tree reflog shortlog
  cargo  only: build check test clippy doc bench tree
Left unwrapped as interactive: pytest --pdb/--trace, find -ok/-okdir,
git grep -O/--open-files-in-pager. Also known (add them with --commands default,go,...):
  go (build test vet list), npm (test ls), make.

The wrappers envelope only when OUTBOX_WRAP=1 is set and the command's stdout
is the shell's own stdout: in a pipeline, a redirect or $(...) the real tool
runs untouched. To reach the real tool: `command grep ...` or
`OUTBOX_WRAP=0 grep ...`. A function of the same name that exists when the
code runs (yours) is left alone, not wrapped; aliases keep working. stderr
joins the envelope only when it is the shell's own: a redirected stderr
(2>/dev/null, 2>err.log) stays where it was sent (outbox --stderr inherit).

Agents (a hook instead of shell code; see `outbox hook --help`):
  outbox init --agent claude-code      also codex, gemini, cursor, copilot, opencode
  outbox init --detect                 every agent that looks installed here
  add --dry-run to see the change, --undo to take it out again

Setup:
  bash/zsh:  eval \"$(outbox init bash)\"        (in ~/.bashrc or ~/.zshrc)
  fish:      outbox init fish | source           (in config.fish)
  agents:    export OUTBOX_WRAP=1 in the agent's environment.";

#[derive(Debug, Clone, Args)]
#[command(after_help = INIT_AFTER_HELP)]
#[command(group(clap::ArgGroup::new("agents").args(["agent", "detect"]).multiple(false)))]
pub struct InitArgs {
    /// Shell to print code for (or use --agent / --detect).
    #[arg(value_enum, required_unless_present_any = ["agent", "detect"], conflicts_with_all = ["agent", "detect"])]
    pub shell: Option<ShellKind>,

    /// Write the hook of this agent into its settings (claude-code, codex,
    /// gemini, cursor, copilot, opencode); keeps the user's other settings
    /// and a backup of the file as it was.
    #[arg(long, value_enum, value_name = "NAME", conflicts_with = "detect")]
    pub agent: Option<crate::integrate::hook::Agent>,

    /// Set up every agent that looks installed here (its settings directory
    /// or its command exists).
    #[arg(long)]
    pub detect: bool,

    /// With --agent/--detect: show the change, write nothing.
    #[arg(long, requires = "agents")]
    pub dry_run: bool,

    /// With --agent/--detect: take outbox's hook out again (the file as it
    /// was, byte for byte, when it has not been edited since).
    #[arg(long, requires = "agents")]
    pub undo: bool,

    /// With --agent: the settings file to change instead of the agent's
    /// usual one.
    #[arg(long, value_name = "FILE", requires = "agent")]
    pub file: Option<std::path::PathBuf>,

    /// Commands to wrap, comma-separated. `default` is the default list;
    /// NAME wraps NAME (with its known subcommand rule, if any);
    /// NAME:SUB+SUB wraps only those subcommands; -NAME removes NAME.
    /// Example: --commands default,-ls,make,go:test
    #[arg(long, value_name = "LIST", default_value = "default")]
    pub commands: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShellKind {
    Bash,
    Zsh,
    Fish,
}

/// A known tool: which invocations grow with what they inspect.
struct Known {
    name: &'static str,
    /// Wrapped subcommands; empty: every invocation.
    subs: &'static [&'static str],
    /// Options before the subcommand that take a separate value.
    takes: &'static [&'static str],
    /// Arguments that make the tool interactive: never wrapped.
    never: &'static [&'static str],
    /// In the default list.
    default: bool,
}

const KNOWN: &[Known] = &[
    Known { name: "find", subs: &[], takes: &[], never: &["-ok", "-okdir"], default: true },
    Known { name: "grep", subs: &[], takes: &[], never: &[], default: true },
    Known { name: "rg", subs: &[], takes: &[], never: &[], default: true },
    Known { name: "ls", subs: &[], takes: &[], never: &[], default: true },
    Known { name: "tree", subs: &[], takes: &[], never: &[], default: true },
    Known { name: "du", subs: &[], takes: &[], never: &[], default: true },
    Known {
        name: "git",
        subs: &["log", "diff", "show", "blame", "grep", "ls-files", "ls-tree", "reflog", "shortlog"],
        takes: &["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"],
        never: &["-O", "--open-files-in-pager"],
        default: true,
    },
    Known {
        name: "cargo",
        subs: &["build", "check", "test", "clippy", "doc", "bench", "tree"],
        takes: &["--color", "--config", "-Z", "-C"],
        never: &[],
        default: true,
    },
    Known { name: "pytest", subs: &[], takes: &[], never: &["--pdb", "--trace"], default: true },
    Known { name: "go", subs: &["build", "test", "vet", "list"], takes: &["-C"], never: &[], default: false },
    Known { name: "npm", subs: &["test", "ls"], takes: &["--prefix"], never: &[], default: false },
    Known { name: "make", subs: &[], takes: &[], never: &[], default: false },
];

/// Names a wrapper must never shadow: shell builtins and keywords the
/// generated code or ordinary scripts rely on, and outbox itself.
const RESERVED: &[&str] = &[
    ".",
    "[",
    "alias",
    "and",
    "begin",
    "bg",
    "break",
    "builtin",
    "case",
    "cd",
    "command",
    "contains",
    "continue",
    "coproc",
    "count",
    "declare",
    "do",
    "done",
    "echo",
    "elif",
    "else",
    "emit",
    "end",
    "esac",
    "eval",
    "exec",
    "exit",
    "export",
    "false",
    "fg",
    "fi",
    "for",
    "function",
    "functions",
    "hash",
    "if",
    "in",
    "jobs",
    "kill",
    "let",
    "local",
    "not",
    "or",
    "outbox",
    "printf",
    "read",
    "readonly",
    "return",
    "select",
    "set",
    "shift",
    "source",
    "stat",
    "status",
    "string",
    "switch",
    "test",
    "then",
    "time",
    "trap",
    "true",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "until",
    "wait",
    "while",
];

/// One wrapped command and the rule for which invocations are wrapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wrapped {
    pub name: String,
    /// Wrapped subcommands; empty: every invocation.
    pub subs: Vec<String>,
    /// Options before the subcommand that take a separate value.
    pub takes: Vec<String>,
    /// Arguments that leave the invocation unwrapped.
    pub never: Vec<String>,
}

impl Wrapped {
    fn from_known(k: &Known) -> Wrapped {
        let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        Wrapped { name: k.name.into(), subs: own(k.subs), takes: own(k.takes), never: own(k.never) }
    }

    /// Whether an invocation with `args` (after the command name) is
    /// wrapped. The generated shell helpers implement the same rule: no
    /// argument is in `never`, and when `subs` is set, the first word that
    /// is not an option (skipping the values of `takes` options) is one of
    /// them.
    pub fn wants<S: AsRef<str>>(&self, args: &[S]) -> bool {
        let mut sub_found = self.subs.is_empty();
        let mut skip = false;
        for a in args.iter().map(AsRef::as_ref) {
            if self.never.iter().any(|n| n == a) {
                return false;
            }
            if sub_found {
                continue;
            }
            if skip {
                skip = false;
                continue;
            }
            if a.starts_with('-') || a.starts_with('+') {
                skip = self.takes.iter().any(|t| t == a);
            } else if self.subs.iter().any(|s| s == a) {
                sub_found = true;
            } else {
                return false;
            }
        }
        sub_found
    }
}

/// The default list (see `outbox init --help`).
pub fn default_commands() -> Vec<Wrapped> {
    KNOWN.iter().filter(|k| k.default).map(Wrapped::from_known).collect()
}

/// Parses `--commands`: `default`, `NAME`, `NAME:SUB+SUB`, `-NAME`,
/// comma-separated; a later entry for a name replaces an earlier one.
pub fn parse_commands(list: &str) -> Result<Vec<Wrapped>, String> {
    let mut out: Vec<Wrapped> = Vec::new();
    let put = |w: Wrapped, out: &mut Vec<Wrapped>| {
        out.retain(|o| o.name != w.name);
        out.push(w);
    };
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if item == "default" {
            for w in default_commands() {
                put(w, &mut out);
            }
            continue;
        }
        if let Some(name) = item.strip_prefix('-') {
            check_name(name)?;
            out.retain(|o| o.name != name);
            continue;
        }
        let (name, subs) = match item.split_once(':') {
            Some((n, s)) => (n, Some(s)),
            None => (item, None),
        };
        check_name(name)?;
        let mut w = match KNOWN.iter().find(|k| k.name == name) {
            Some(k) => Wrapped::from_known(k),
            None => Wrapped { name: name.into(), subs: vec![], takes: vec![], never: vec![] },
        };
        if let Some(subs) = subs {
            let subs: Vec<String> = subs.split('+').filter(|s| !s.is_empty()).map(String::from).collect();
            if subs.is_empty() {
                return Err(format!(
                    "'{item}' names no subcommand: write NAME:SUB+SUB, or NAME alone to wrap every call"
                ));
            }
            for s in &subs {
                if !is_word(s) {
                    return Err(format!("'{s}' in '{item}' is not a plain subcommand name (letters, digits, . _ -)"));
                }
            }
            w.subs = subs;
        }
        put(w, &mut out);
    }
    Ok(out)
}

fn is_word(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'+'))
}

fn check_name(name: &str) -> Result<(), String> {
    if !is_word(name) {
        return Err(format!(
            "'{name}' is not a command name outbox can wrap: use letters, digits and . _ - + (no path)"
        ));
    }
    if RESERVED.contains(&name) {
        return Err(format!("'{name}' is a shell builtin or keyword (or outbox itself) and cannot be wrapped"));
    }
    Ok(())
}

/// Quotes `s` as one word for POSIX shells (bash, zsh, sh): unchanged when
/// it holds only characters no shell treats specially, else in single
/// quotes.
pub fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(b, b'_' | b'-' | b'.' | b'/' | b':' | b',' | b'+' | b'=' | b'@' | b'%')
        })
        && !s.starts_with('=');
    if plain {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Quotes `s` for fish, where `\` and `'` are special inside single quotes.
fn quote_fish(s: &str) -> String {
    format!("'{}'", s.replace('\\', r"\\").replace('\'', r"\'"))
}

/// The absolute path of the running outbox, as the generated code calls it.
pub fn self_path() -> anyhow::Result<String> {
    let exe =
        std::env::current_exe().map_err(|e| anyhow::anyhow!("cannot find the path of the outbox executable: {e}"))?;
    let exe = exe.canonicalize().unwrap_or(exe);
    match exe.into_os_string().into_string() {
        Ok(s) => Ok(s),
        Err(p) => anyhow::bail!(
            "the path of outbox ({}) is not valid UTF-8; install outbox under a UTF-8 path",
            p.to_string_lossy()
        ),
    }
}

/// Prints the init code for `args.shell`, or sets up agents' hooks.
pub fn run(args: &InitArgs) -> anyhow::Result<ExitCode> {
    let Some(shell) = args.shell else { return run_agents(args) };
    let commands = parse_commands(&args.commands).map_err(|e| anyhow::anyhow!("--commands: {e}"))?;
    let code = generate(shell, &commands, &self_path()?);
    let mut out = std::io::stdout().lock();
    match out.write_all(code.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(anyhow::anyhow!("cannot write the init code to stdout: {e}")),
    }
}

/// `--agent NAME` / `--detect`, with `--dry-run` and `--undo`.
fn run_agents(args: &InitArgs) -> anyhow::Result<ExitCode> {
    use crate::integrate::install::{self, Action};
    let action = if args.undo { Action::Undo } else { Action::Install };
    let agents = match args.agent {
        Some(a) => vec![a],
        None => {
            let found = install::detect();
            if found.is_empty() {
                outbox::say!(
                    "no agent found here (looked for ~/.claude, ~/.codex, ~/.gemini, ~/.cursor, ~/.copilot, \
~/.config/opencode and their commands on PATH); name one with --agent"
                );
                return Ok(ExitCode::FAILURE);
            }
            found
        }
    };
    let mut report = String::new();
    let mut failed = false;
    for agent in agents {
        match install::apply(agent, args.file.as_deref(), action, args.dry_run) {
            Ok(r) => report.push_str(&r),
            Err(e) => {
                failed = true;
                outbox::say!("error: {}: {e}", agent.name());
            }
        }
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(report.as_bytes()).and_then(|_| out.flush());
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// The shell code wrapping `commands`, calling outbox at `exe`.
pub fn generate(shell: ShellKind, commands: &[Wrapped], exe: &str) -> String {
    match shell {
        ShellKind::Bash | ShellKind::Zsh => generate_posix(shell, commands, exe),
        ShellKind::Fish => generate_fish(commands, exe),
    }
}

fn names(commands: &[Wrapped]) -> String {
    commands.iter().map(|w| w.name.as_str()).collect::<Vec<_>>().join(" ")
}

fn generate_posix(shell: ShellKind, commands: &[Wrapped], exe: &str) -> String {
    let (shell_name, found) = match shell {
        ShellKind::Zsh => ("zsh", "whence -p"),
        _ => ("bash", "type -P"),
    };
    let exe_q = quote(exe);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"# outbox shell integration for {shell_name}, printed by `outbox init {shell_name}`.
# Wraps: {list}
# A wrapper runs the command as `outbox -- CMD ...` (bounded envelope, the
# command's exit status, the full output kept) only when OUTBOX_WRAP=1 and its
# stdout is this shell's stdout as of now; in a pipeline, a redirect or $(...)
# the real tool runs untouched. Escapes: `command grep ...`, `OUTBOX_WRAP=0 grep ...`.

# Prints DEVICE:INODE of what $1 (/dev/fd/3) refers to (GNU stat, then BSD
# stat), then on Linux whether fd 3's open file description appends: `>> f`
# onto the very file that is the shell's stdout opens another description,
# and the real tool must write there, not an envelope.
__outbox_stat() {{
  command stat -L -c %d:%i "$1" 2>/dev/null || command stat -L -f %d:%i "$1" 2>/dev/null || :
  if [ -r /proc/self/fdinfo/3 ]; then
    local __outbox_k __outbox_v
    while read -r __outbox_k __outbox_v; do
      case $__outbox_k in flags:) echo "append=$(( (8#$__outbox_v >> 10) & 1 ))" ;; esac
    done </proc/self/fdinfo/3
  fi
}}
# fd 3 is a duplicate of the shell's stdout: inside $(...) fd 1 is the capture.
{{ __outbox_stdout=$(__outbox_stat /dev/fd/3); }} 3>&1
{{ __outbox_stderr=$(__outbox_stat /dev/fd/3); }} 3>&2

# True when wrapping is asked for and stdout is still the shell's stdout.
__outbox_wrap_ok() {{
  [ "${{OUTBOX_WRAP-}}" = 1 ] && [ -n "${{__outbox_stdout-}}" ] && [ -x {exe_q} ] || return 1
  local __outbox_id
  {{ __outbox_id=$(__outbox_stat /dev/fd/3); }} 3>&1
  [ "$__outbox_id" = "$__outbox_stdout" ]
}}

# True when stderr is the shell's stderr (or its stdout: 2>&1), so it joins
# the envelope; a stderr the user redirected (2>/dev/null, 2>err.log) is left
# where it was sent (outbox --stderr inherit).
__outbox_err_ok() {{
  local __outbox_id
  {{ __outbox_id=$(__outbox_stat /dev/fd/3); }} 3>&2
  [ -n "$__outbox_id" ] || return 1
  [ "$__outbox_id" = "${{__outbox_stderr-}}" ] || [ "$__outbox_id" = "${{__outbox_stdout-}}" ]
}}

# True when a wrapper may be defined for $1: no function of that name, or one
# defined by outbox (this code run again). A function of the user's own (say
# `ls() {{ ... }}`) is left alone, unwrapped, so it keeps working. Aliases need
# nothing: an alias expands to the command name, which reaches the wrapper.
__outbox_may_wrap() {{
  typeset -f "$1" >/dev/null 2>&1 || return 0
  local body
  body=$(typeset -f "$1")
  case $body in *__outbox_wrap_ok*) return 0 ;; esac
  return 1
}}

# __outbox_want SUBS TAKES NEVER ARGS...: true unless an argument is in NEVER,
# or SUBS is set and the first non-option argument (values of TAKES options
# skipped) is not in SUBS.
__outbox_want() {{
  local subs=" $1 " takes=" $2 " never=" $3 " sub= skip= a
  [ -n "$1" ] || sub=any
  shift 3
  for a in "$@"; do
    if [ -n "$a" ]; then
      case $never in *" $a "*) return 1 ;; esac
    fi
    [ -z "$sub" ] || continue
    if [ -n "$skip" ]; then skip=; continue; fi
    case $a in
      -*|+*) case $takes in *" $a "*) skip=1 ;; esac ;;
      *) case $subs in *" $a "*) sub=$a ;; *) return 1 ;; esac ;;
    esac
  done
  [ -n "$sub" ]
}}
"#,
        list = names(commands),
    );
    for w in commands {
        let name = &w.name;
        let cond = if w.subs.is_empty() && w.never.is_empty() {
            "__outbox_wrap_ok".to_string()
        } else {
            format!(
                "__outbox_wrap_ok && __outbox_want {} {} {} \"$@\"",
                quote_list(&w.subs),
                quote_list(&w.takes),
                quote_list(&w.never)
            )
        };
        // `function NAME` rather than `NAME()`: an alias of the same name
        // would otherwise be expanded inside the definition.
        let _ = write!(
            s,
            r#"
if {found} {name} >/dev/null 2>&1 && __outbox_may_wrap {name}; then
  function {name} {{
    if {cond}; then
      if __outbox_err_ok; then
        OUTBOX_SHELL_PIDS="$$ ${{BASHPID-}}" {exe_q} -- {name} "$@"
      else
        OUTBOX_SHELL_PIDS="$$ ${{BASHPID-}}" {exe_q} --stderr inherit -- {name} "$@"
      fi
    else
      command {name} "$@"
    fi
  }}
fi
"#
        );
    }
    s
}

/// A space-separated list as one quoted shell word ('' when empty).
fn quote_list(v: &[String]) -> String {
    if v.is_empty() {
        "''".into()
    } else {
        quote(&v.join(" "))
    }
}

fn generate_fish(commands: &[Wrapped], exe: &str) -> String {
    let exe_q = quote_fish(exe);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"# outbox shell integration for fish, printed by `outbox init fish`.
# Wraps: {list}
# A wrapper runs the command as `outbox -- CMD ...` (bounded envelope, the
# command's exit status, the full output kept) only when OUTBOX_WRAP=1 and its
# stdout is this shell's stdout as of now; in a pipeline, a redirect or (...)
# the real tool runs untouched. Escapes: `command grep ...`, `OUTBOX_WRAP=0 grep ...`.

# Prints DEVICE:INODE of fd 3 (GNU stat, then BSD stat), then on Linux
# whether its open file description appends (O_APPEND, octal 02000: `>> f`
# onto the very file that is the shell's stdout is another description), on
# one line.
function __outbox_fd3_id
    begin
        command stat -L -c %d:%i /dev/fd/3 2>/dev/null; or command stat -L -f %d:%i /dev/fd/3 2>/dev/null
        # awk, not fish's `test`: only an external command has fd 3.
        command awk '$1 == "flags:" {{ d = substr($2, length($2) - 3, 1); print "append=" (d ~ /[2367]/) }}' /proc/self/fdinfo/3 2>/dev/null
    end | string join ' '
end
# fish does not pass extra descriptors into (...), hence `| read`.
set -g __outbox_stdout ''
begin
    __outbox_fd3_id | read -g __outbox_stdout
end 3>&1
set -g __outbox_stderr ''
begin
    __outbox_fd3_id | read -g __outbox_stderr
end 3>&2

# True when wrapping is asked for and stdout is still the shell's stdout.
function __outbox_wrap_ok
    test "$OUTBOX_WRAP" = 1; and test -n "$__outbox_stdout"; and test -x {exe_q}; or return 1
    set -l id ''
    begin
        __outbox_fd3_id | read id
    end 3>&1
    test "$id" = "$__outbox_stdout"
end

# True when stderr is the shell's stderr (or its stdout: 2>&1), so it joins
# the envelope; a stderr the user redirected (2>/dev/null, 2>err.log) is left
# where it was sent (outbox --stderr inherit).
function __outbox_err_ok
    set -l id ''
    begin
        __outbox_fd3_id | read id
    end 3>&2
    test -n "$id"; and contains -- $id $__outbox_stderr $__outbox_stdout
end

# True when a wrapper may be defined for $name: no function of that name, one
# defined by outbox (this code run again), or one fish ships (grep, ls: they
# add colours at a terminal), kept as __outbox_fish_$name and called whenever
# the wrapper does not envelope. A function of the user's own is left alone,
# unwrapped, so it keeps working.
function __outbox_may_wrap --argument-names name
    functions -q __outbox_fish_$name; and return 0
    functions -q $name; or return 0
    string match -q '*__outbox_wrap_ok*' -- (functions $name); and return 0
    if string match -q -- "$__fish_data_dir/functions/*" (functions --details $name)
        functions -c $name __outbox_fish_$name
        return 0
    end
    return 1
end

# __outbox_want SUBS TAKES NEVER ARGS...: true unless an argument is in NEVER,
# or SUBS is set and the first non-option argument (values of TAKES options
# skipped) is not in SUBS.
function __outbox_want --argument-names subs takes never
    set -l subl (string split -n ' ' -- $subs)
    set -l takel (string split -n ' ' -- $takes)
    set -l neverl (string split -n ' ' -- $never)
    set -l sub ''
    test -n "$subs"; or set sub any
    set -l skip 0
    for a in $argv[4..-1]
        if test -n "$a"; and contains -- $a $neverl
            return 1
        end
        test -z "$sub"; or continue
        if test $skip = 1
            set skip 0
            continue
        end
        switch $a
            case '-*' '+*'
                contains -- $a $takel; and set skip 1
            case '*'
                contains -- $a $subl; or return 1
                set sub $a
        end
    end
    test -n "$sub"
end
"#,
        list = names(commands),
    );
    for w in commands {
        let name = &w.name;
        let cond = if w.subs.is_empty() && w.never.is_empty() {
            "__outbox_wrap_ok".to_string()
        } else {
            format!(
                "__outbox_wrap_ok; and __outbox_want {} {} {} $argv",
                quote_fish(&w.subs.join(" ")),
                quote_fish(&w.takes.join(" ")),
                quote_fish(&w.never.join(" "))
            )
        };
        let _ = write!(
            s,
            r#"
if command -sq {name}; and __outbox_may_wrap {name}
    function {name}
        if {cond}
            if __outbox_err_ok
                OUTBOX_SHELL_PIDS=$fish_pid {exe_q} -- {name} $argv
            else
                OUTBOX_SHELL_PIDS=$fish_pid {exe_q} --stderr inherit -- {name} $argv
            end
        else if functions -q __outbox_fish_{name}
            __outbox_fish_{name} $argv
        else
            command {name} $argv
        end
    end
end
"#
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git() -> Wrapped {
        parse_commands("git").unwrap().remove(0)
    }

    #[test]
    fn git_subcommands() {
        let g = git();
        assert!(g.wants(&["log", "--stat"]));
        assert!(g.wants(&["-C", "repo", "log"]));
        assert!(g.wants(&["--no-pager", "diff"]));
        assert!(g.wants(&["-c", "color.ui=never", "show", "HEAD"]));
        assert!(!g.wants(&["commit", "-m", "log"]));
        assert!(!g.wants(&["-C", "log", "commit"]), "the value of -C is not the subcommand");
        assert!(!g.wants::<&str>(&[]));
        assert!(!g.wants(&["--version"]));
        assert!(!g.wants(&["grep", "-O", "x"]));
    }

    #[test]
    fn plain_commands_and_never() {
        let all = default_commands();
        let find = all.iter().find(|w| w.name == "find").unwrap();
        assert!(find.wants(&[".", "-name", "*.rs"]));
        assert!(find.wants::<&str>(&[]));
        assert!(!find.wants(&[".", "-ok", "rm", "{}", ";"]));
        let grep = all.iter().find(|w| w.name == "grep").unwrap();
        assert!(grep.wants(&["", "file"]), "an empty argument is not special");
        let pytest = all.iter().find(|w| w.name == "pytest").unwrap();
        assert!(!pytest.wants(&["-x", "--pdb"]));
    }

    #[test]
    fn command_lists() {
        let d = parse_commands("default").unwrap();
        assert_eq!(d, default_commands());
        let names = |l: &str| parse_commands(l).unwrap().into_iter().map(|w| w.name).collect::<Vec<_>>();
        assert_eq!(names("grep,find"), ["grep", "find"]);
        assert!(!names("default,-ls").contains(&"ls".to_string()));
        assert!(names("default,make").contains(&"make".to_string()));
        let g = parse_commands("git:log+diff").unwrap().remove(0);
        assert_eq!(g.subs, ["log", "diff"]);
        assert!(g.takes.contains(&"-C".to_string()), "known options are kept");
        assert!(parse_commands("cd").is_err());
        assert!(parse_commands("a/b").is_err());
        assert!(parse_commands("x;y").is_err());
        assert!(parse_commands("git:").is_err());
        assert_eq!(parse_commands("").unwrap(), vec![]);
    }

    #[test]
    fn help_matches_the_table() {
        let plain: Vec<&str> = KNOWN.iter().filter(|k| k.default && k.subs.is_empty()).map(|k| k.name).collect();
        assert!(INIT_AFTER_HELP.contains(&format!("  {}\n", plain.join(" "))), "plain defaults");
        for k in KNOWN.iter().filter(|k| !k.subs.is_empty()) {
            let line = if k.default {
                format!("  {:<6} only: {}\n", k.name, k.subs.join(" "))
            } else {
                format!("{} ({})", k.name, k.subs.join(" "))
            };
            assert!(INIT_AFTER_HELP.contains(&line), "missing from the help: {line:?}");
        }
        for k in KNOWN {
            for n in k.never {
                assert!(INIT_AFTER_HELP.contains(n.trim_start_matches('-')), "never-argument {n} of {}", k.name);
            }
        }
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("/usr/bin/outbox"), "/usr/bin/outbox");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("$HOME"), "'$HOME'");
        assert_eq!(quote_fish(r"a\b'c"), r"'a\\b\'c'");
    }
}
