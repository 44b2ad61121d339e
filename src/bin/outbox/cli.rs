//! Command-line surface: clap derive arguments, and their conversion into
//! the library's own options ([`RunOptions`], [`ShowOptions`], ...), built
//! once. Only this binary knows clap.
//!
//! Every budget is in characters (Unicode scalar values of the lossy UTF-8
//! decoding); sizes in bytes accept K/M/G suffixes (powers of 1024).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use outbox::notes::check::{parse_required, CheckOptions};
use outbox::notes::pack::{parse_keep, parse_pack_budget, PackFilesOptions, Unit, DEFAULT_BUDGET};
use outbox::session::{self, Harness, RunOptions, MIN_BUDGET};
use outbox::store::{parse_line_range, GcOptions, LineRange, LsOptions, RmOptions, ShowOptions, StoreEnv};
use outbox::stream::defaults;
use outbox::stream::signal;
use outbox::text::size::parse_size;
use regex::bytes::Regex;

const AFTER_HELP: &str = "\
Examples:
  cargo build 2>&1 | outbox                  envelope a build log
  outbox -- git log --stat                   run a command, keep its exit status
  find / -xdev 2>&1 | outbox --label find    label the stored copy
  curl -s api/items | outbox --format json   fold a JSON payload, still valid JSON
  outbox show stdin-3f2a9c1b7d4e --lines 100:200
  outbox show last --grep 'error'            the newest stored output's error lines
  eval \"$(outbox init bash)\"                 wrap find/grep/git log for agents (OUTBOX_WRAP=1)

Exit status: 0 on success; 1 when outbox failed or the full output could not
be kept (the envelope is still printed); in wrap mode the command's status
(128+N for signal N), 124 when --timeout expired, 125 when the command
succeeded but outbox failed, 126 when it could not be run, 127 when it was
not found; 128+N when outbox itself is interrupted by signal N; 2 for a bad
command line.

Settings: --budget, --tail, --tail-budget, --head-budget, --signal, --harness
and --boundary also come from OUTBOX_BUDGET, OUTBOX_TAIL, OUTBOX_TAIL_BUDGET,
OUTBOX_HEAD_BUDGET, OUTBOX_SIGNAL, OUTBOX_HARNESS, OUTBOX_BOUNDARY and the
configuration file (`outbox config` shows each value and its source). A bad
value there is said on stderr and the next source is used: it never costs the
output.

Documentation (docs/ in the source and in the crate's package):
  docs/envelope.md      reading an envelope
  docs/options.md       every option, the configuration file, the environment
  docs/families.md      tool families
  docs/json.md          JSON and NDJSON folds
  docs/agents.md        wrap mode, shell wrappers, agent hooks
  docs/store.md         the store and the run history
  docs/notes.md         outbox pack and outbox check
  docs/performance.md   speed and memory, as measured
  docs/design.md        how it is built; platforms";

/// A streaming filter that turns huge command output into a bounded,
/// honest envelope: header, head, error lines, tail, every omission counted,
/// the exact original kept on disk.
#[derive(Debug, Parser)]
#[command(
    name = "outbox",
    version,
    about,
    long_about = "A streaming filter that turns huge command output into a bounded, honest \
envelope.\n\noutbox reads all of stdin (or a command's output in wrap mode), writes the exact \
bytes to a file in its store, and when input ends prints at most --budget characters: a JSON \
header (sizes, line count, signal count, path of the full output), the first lines, the \
error (\"signal\") lines that fit, and the last lines, which are reserved first because tools \
print their verdict last. Every omission is counted and stated. Input of at most --budget \
characters is printed unchanged.",
    after_help = AFTER_HELP,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Store directory. Default: $OUTBOX_DIR, else $XDG_CACHE_HOME/outbox,
    /// else ~/.cache/outbox. Accepted before or after a subcommand.
    // Global and outside EnvelopeArgs: the envelope's options conflict with
    // subcommands (checked in app.rs), the store's directory does not.
    #[arg(long, value_name = "DIR", global = true)]
    pub dir: Option<PathBuf>,

    #[command(flatten)]
    pub envelope: EnvelopeArgs,

    /// Wrap mode: run CMD with ARGS in its own process group, envelope its
    /// stdout and stderr (merged in the order written), and exit with its
    /// status. SIGINT/SIGTERM/SIGHUP are forwarded to the command's group;
    /// should outbox be killed, a guardian process ends that group.
    /// Commands that read the terminal cannot be wrapped.
    #[arg(last = true, value_name = "CMD [ARGS]...", allow_hyphen_values = true)]
    pub wrap: Vec<OsString>,

    /// Wrap mode: end the command's whole process group when it runs
    /// longer than DURATION (10, 10s, 500ms, 2m, 1h): SIGTERM, then SIGKILL
    /// 2s later. The envelope covers what arrived and says "timed_out";
    /// outbox exits 124, as GNU timeout does.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<Duration>,

    /// Wrap mode: when the command still runs after DURATION, print the
    /// envelope of what has arrived ("running": true, the run's id) and
    /// exit 0; the command goes on and its output is still stored. Follow
    /// it with `outbox status ID`, `outbox wait ID`, `outbox show ID`.
    /// Default with --harness claude-code: 110s (its Bash tool stops a
    /// command at 120s).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub detach_after: Option<Duration>,
}

impl Cli {
    /// Options that need a command, refused without one (exit 2).
    pub fn check(&self) -> Result<(), clap::Error> {
        let usage = |msg: String| Cli::command().error(ErrorKind::MissingRequiredArgument, msg);
        if self.command.is_some() || !self.wrap.is_empty() {
            return Ok(());
        }
        if self.envelope.trailer.is_some() && !self.wrap.is_empty() {
            return Err(usage("--trailer reads a piped command's status: CMD | outbox --trailer N".to_string()));
        }
        if self.detach_after.is_some() {
            return Err(usage(
                "--detach-after needs a command to run: outbox --detach-after 2m -- CMD [ARGS...]".to_string(),
            ));
        }
        if self.timeout.is_some() {
            return Err(usage(
                "--timeout needs a command to run: outbox --timeout DURATION -- CMD [ARGS...]".to_string(),
            ));
        }
        if self.envelope.stderr != StderrMode::Merged {
            let mode = self.envelope.stderr.to_possible_value().map(|v| v.get_name().to_string()).unwrap_or_default();
            return Err(usage(format!(
                "--stderr {mode} needs a command to run: outbox --stderr {mode} -- CMD [ARGS...] \
(`CMD | outbox` reads one stream, and the command's stderr never reaches it)"
            )));
        }
        Ok(())
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print a stored original exactly, or some of its lines.
    Show(ShowArgs),
    /// List the entries in the store.
    Ls(LsArgs),
    /// Remove entries (and their metadata) from the store.
    Rm(RmArgs),
    /// Remove expired entries and stale temporary files from the store.
    Gc(GcArgs),
    /// Pack Markdown notes into a budget by whole `## ` sections.
    Pack(PackArgs),
    /// Preflight: check that notes files exist, are non-empty and have the
    /// required headings.
    Check(CheckArgs),
    /// Print shell code (bash, zsh, fish) that runs find, grep, git log, ...
    /// through outbox when OUTBOX_WRAP=1 and their output is not piped or
    /// redirected.
    Init(crate::integrate::shell::InitArgs),
    /// Agent hooks: `outbox hook claude-code` rewrites matching Bash tool
    /// calls to `outbox -- CMD`.
    Hook(crate::integrate::hook::HookArgs),
    /// Print the settings in force (budget, tail, signal, commands) and
    /// where each came from: command line, environment, configuration
    /// file, or default.
    Config,
    /// Print a shell completion script: `outbox completions bash >
    /// ~/.local/share/bash-completion/completions/outbox`.
    Completions {
        /// Shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `outbox man | man -l -`.
    Man,
    /// Sizes of each command's runs over time: level, spread, slope, steps,
    /// and how many runs until the output crosses the boundary.
    Trend(TrendArgs),
    /// Detached runs (--detach-after): running or how they ended, bytes so
    /// far, the last signal line. Without ID: every run of the last day.
    Status(StatusArgs),
    /// Wait for a detached run to end, print its final envelope and exit
    /// with the command's status.
    Wait(WaitArgs),
    /// Per command: runs, characters produced against characters printed
    /// (kept out of the reader's window), byte-identical re-runs, envelopes
    /// against outputs printed whole.
    Stats(StatsArgs),
}

/// When to print the envelope instead of the input itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EnvelopeMode {
    /// Pass small text through unchanged, envelope the rest.
    Auto,
    /// Always print the envelope.
    Always,
    /// Print the input unchanged whatever its size (as tee does); still
    /// keep the spill.
    Never,
}

/// How to read the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Lines of text: head, signal lines, tail.
    Text,
    /// One JSON document, folded into a smaller valid JSON document.
    Json,
    /// One JSON value per line, folded streaming.
    Ndjson,
    /// Decide from the first bytes of the input (the header says what was
    /// done).
    Auto,
}

/// Where a wrapped command's stderr goes in the envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StderrMode {
    /// Merge stdout and stderr in arrival order.
    Merged,
    /// Keep them apart: two stored entries (LABEL and LABEL.stderr); both
    /// pass through to their own descriptors when together they fit the
    /// budget, else stdout's envelope then stderr's, sharing the budget.
    Separate,
    /// Leave stderr alone: the command writes to outbox's own stderr,
    /// untouched, not captured or stored; only stdout is enveloped (for
    /// shell wrappers when the user redirected 2>).
    Inherit,
}

#[derive(Debug, Clone, Args)]
pub struct EnvelopeArgs {
    /// Label of the stored copy (sanitised to [A-Za-z0-9._-], 64 chars at
    /// most). Default: "stdin", or the command's name in wrap mode.
    #[arg(long, value_name = "NAME")]
    pub label: Option<OsString>,

    /// Regex (Rust syntax) that marks a signal line; REPLACES the default
    /// signal patterns (the tool families' and the generic ones), as it
    /// always has. Families still detect and give verdicts. To add a
    /// pattern to the defaults instead, use --signal-add.
    /// Compiled once, here: an invalid pattern is a usage error.
    #[arg(long, value_name = "REGEX", value_parser = parse_signal)]
    pub signal: Option<Regex>,

    /// Number of last lines asked for in the tail, at least (at least 1: the
    /// last line is always kept); room left over shows more.
    #[arg(long, value_name = "N", default_value_t = defaults::TAIL_LINES, value_parser = parse_tail)]
    pub tail: usize,

    /// Total characters the output may use, header and markers included.
    /// [default: 14000, or the --harness preset's]
    #[arg(long, value_name = "CHARS", value_parser = parse_budget)]
    pub budget: Option<usize>,

    /// Characters reserved first for the tail block (a minimum: room left
    /// over grows the tail).
    #[arg(long, value_name = "CHARS", default_value_t = defaults::TAIL_BUDGET)]
    pub tail_budget: usize,

    /// Characters reserved for the head block before signal lines are
    /// placed (a minimum); what is left over grows the head and the tail.
    #[arg(long, value_name = "CHARS", default_value_t = defaults::HEAD_BUDGET)]
    pub head_budget: usize,

    /// Size against which the header's spill_ratio_chars is computed.
    #[arg(long, value_name = "CHARS", default_value_t = defaults::SPILL_LIMIT)]
    pub spill_limit: u64,

    /// auto: small text passes through unchanged; always: envelope even
    /// small input; never: print the input unchanged (still stored).
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = EnvelopeMode::Auto)]
    pub envelope: EnvelopeMode,

    /// Input format.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Format::Text)]
    pub format: Format,

    /// JSON: number of whole items kept as samples.
    #[arg(long, value_name = "N", default_value_t = defaults::SAMPLES)]
    pub samples: usize,

    /// JSON: largest document read into memory for folding (K/M/G
    /// suffixes); past it, the text envelope is used and says so.
    #[arg(long, value_name = "BYTES", default_value = "1G", value_parser = parse_size)]
    pub json_max_bytes: u64,

    /// Wrap mode: by default stdout and stderr share one pipe, so the
    /// envelope and the stored copy hold them in the order they were
    /// written. separate reads them apart: a stored copy of each, and (when
    /// they do not pass through) an envelope of each, stdout's first, each
    /// header saying its "stream"; needs --budget 2000 or more. With
    /// --format json, ndjson or auto, stderr's envelope goes to stderr, so
    /// stdout stays one JSON document. inherit
    /// leaves stderr as it is: only stdout is captured.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = StderrMode::Merged)]
    pub stderr: StderrMode,

    /// The agent harness that reads the output: sets the budget (unless
    /// --budget, OUTBOX_BUDGET or the configuration gives one) and the
    /// boundary the run history measures against. claude-code: 30,000
    /// chars; codex: 10,000 tokens as bytes/4 (budget 10,000 chars);
    /// gemini: 40,000 chars.
    #[arg(long, value_enum, value_name = "NAME")]
    pub harness: Option<HarnessArg>,

    /// Size in characters past which the reader cuts the output; the header
    /// says how far this command's runs are from it and how fast they
    /// approach. Default: the harness's, else --budget.
    #[arg(long, value_name = "CHARS", value_parser = parse_size)]
    pub boundary: Option<u64>,

    /// Show bytes, lines and rate on stderr while reading (only when stderr
    /// is a terminal).
    #[arg(long)]
    pub progress: bool,

    /// `CMD | outbox` only: read the piped command's exit status from FILE
    /// once input ends, and record it in the header (`exit_status`). The
    /// agent hook's rewrite writes it there before the command's output ends.
    #[arg(long, value_name = "FILE", hide = true)]
    pub status_file: Option<PathBuf>,

    /// `CMD | outbox` only, for the agent hooks' rewritten lines: the piped
    /// command's exit status arrives after its output as a trailer carrying
    /// NONCE; it is taken off the input, recorded in the header, and outbox
    /// exits as the original line would have.
    #[arg(long, value_name = "NONCE", hide = true)]
    pub trailer: Option<String>,

    /// With --trailer: the reader's cut this envelope replaces, head:N or
    /// tail:N (at least those N lines are shown, within the budget).
    #[arg(long, value_name = "head:N|tail:N", hide = true, value_parser = parse_cut, requires = "trailer")]
    pub cut: Option<crate::integrate::hook::line::Cut>,

    /// Ignored (kept so that scripts using it still run): a file on stdin
    /// is cloned into the store and read from the clone, or read like a
    /// pipe where it cannot be cloned. Mapping it was
    /// slower than reading and died of SIGBUS when the file shrank.
    #[arg(long, hide = true)]
    pub mmap: bool,

    // -- Tool families and signal options (see families/*.toml) --
    /// Tool family: auto (detect over the whole output, and from the
    /// command in wrap mode), none (generic patterns only, no family
    /// verdict), or a name: cargo, go, pytest, unittest, jest, vitest, tsc,
    /// eslint, gcc, maven, gradle, javac, npm, pnpm, docker, dotnet,
    /// rubocop, terraform, or one of yours in
    /// $XDG_CONFIG_HOME/outbox/families/*.toml.
    #[arg(long, value_name = "NAME", default_value = "auto")]
    pub family: String,

    /// Regex (Rust syntax) that ADDS a signal pattern (severity error) to
    /// the defaults; repeatable.
    #[arg(long, value_name = "REGEX")]
    pub signal_add: Vec<String>,

    /// No line is a signal (families still detect and give verdicts).
    #[arg(long, conflicts_with_all = ["signal", "signal_add"])]
    pub no_signal: bool,

    /// Credentials in what is printed (envelope, passthrough, JSON samples,
    /// the command in the header): `on` masks them by the rules in
    /// secrets/*.toml and $XDG_CONFIG_HOME/outbox/secrets/*.toml
    /// (`ghp_…[masked github-token, 40 chars]`, counted in the header's
    /// "secrets_masked"); `off` prints them as they are, and the header says
    /// "secrets_masked": "off". The stored copy always keeps the exact bytes.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = MaskArg::On)]
    pub mask: MaskArg,
}

/// `--mask`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MaskArg {
    /// Mask credentials (the default).
    On,
    /// Print credentials as they are.
    Off,
}

/// A configuration or environment value of `mask`: on/off, true/false.
pub fn parse_mask(s: &str) -> Result<MaskArg, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Ok(MaskArg::On),
        "off" | "false" | "no" | "0" => Ok(MaskArg::Off),
        _ => Err(format!("'{s}' is not on or off (true or false)")),
    }
}

pub fn parse_budget(s: &str) -> Result<usize, String> {
    let n = parse_size(s)?;
    let n = usize::try_from(n).map_err(|_| "budget too large".to_string())?;
    if n < MIN_BUDGET {
        return Err(format!(
            "{n} is too small: the header and markers alone need up to about 900 characters; use at least {MIN_BUDGET}"
        ));
    }
    Ok(n)
}

/// `show --grep`, compiled once while parsing, so a bad pattern is a usage
/// error (exit 2) like any other.
fn parse_grep(s: &str) -> Result<regex::bytes::Regex, String> {
    regex::bytes::Regex::new(s).map_err(|e| format!("not a valid regex: {e}"))
}

pub fn parse_signal(s: &str) -> Result<Regex, String> {
    signal::matcher(Some(s)).map_err(|e| format!("--signal is not a valid regex: {e}"))
}

/// `--timeout`: a number of seconds, or a number with a unit (ms, s, m, h);
/// decimals allowed (1.5m). Zero would end every command at once.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 0.001,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("'{s}' is not a duration: write e.g. 10, 10s, 500ms, 2m or 1h")),
    };
    let n: f64 = num.parse().map_err(|_| format!("'{s}' is not a duration: write e.g. 10, 10s, 500ms, 2m or 1h"))?;
    let secs = n * scale;
    if secs <= 0.0 || !secs.is_finite() {
        return Err("a timeout of 0 would end the command at once: use more than 0".into());
    }
    Duration::try_from_secs_f64(secs).map_err(|_| format!("'{s}' is too long"))
}

/// `--cut head:N` / `--cut tail:N`.
pub fn parse_cut(s: &str) -> Result<crate::integrate::hook::line::Cut, String> {
    use crate::integrate::hook::line::Cut;
    let bad = || format!("'{s}' is not a cut: write head:N or tail:N");
    let (tool, n) = s.split_once(':').ok_or_else(bad)?;
    let n: usize = n.parse().map_err(|_| bad())?;
    match tool {
        "head" => Ok(Cut::Head(n)),
        "tail" => Ok(Cut::Tail(n)),
        _ => Err(bad()),
    }
}

pub fn parse_tail(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("0 would hide the last line, which is always kept: use at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a number of lines")),
    }
}

// ---------------------------------------------------------------------------
// Subcommands' arguments

const PACK_AFTER_HELP: &str = "\
Priority (each file has its own budget):
  1. the preamble (text before the first `## ` heading): always kept
  2. pinned sections: marked `<!-- notes-priority: pinned -->` on the line
     before the heading, or named by --keep. Always kept whole, even past the
     budget (the overrun is reported): they are instructions
  3. fresh sections: marked `<!-- notes-priority: fresh -->` on the line
     before the heading; newest first: by the first YYYY-MM-DD date in the
     title, dated before undated, and otherwise later in the file is newer
  4. the rest, in file order

A section that does not fit is dropped whole and a smaller later one may
still take the room; nothing is ever sliced. Headings inside ``` or ~~~
fences are not headings. The output keeps file order and the file's bytes
(CRLF, invalid UTF-8). A marker line travels with the section it marks.

A file without any `## ` heading is one unit: printed whole when it fits the
budget, otherwise dropped and reported as `(whole file)`.

Output: the packed files, in the order given. With more than one FILE
argument, each file's output starts with a line `==> FILE <==`, and files
after the first are preceded by a blank line (as `tail` does).

Stderr, one line per file:
  [outbox pack] FILE: USED/BUDGET bytes, dropped N sections: A, B, C
(`chars` with --unit chars; `dropped 0 sections` when nothing was dropped),
plus a line for an overrun by pinned sections, a file without headings, a
skipped file, or --keep text that matched no section.

Examples:
  outbox pack notes.md                          pack into 20000 bytes
  outbox pack --budget 8K --keep Rollback a.md b.md
  outbox pack --unit chars --instruction task.md notes.md

Exit status: 0, also when a file was skipped; 1 with --strict when a file was
skipped, and when outbox itself failed.";

const CHECK_AFTER_HELP: &str = "\
Output, one line each on stdout:
  OK FILE (N bytes)
  MISSING notes file: FILE         (not found, or not a readable regular file;
                                    the reason goes to stderr)
  EMPTY notes file: FILE           (zero bytes or only whitespace)
  MISSING section: FILE -> HEADING
  STOP: N problem(s)               (last, only when something is off)

A heading matches a `## ` heading whose whole title is the same, ignoring
case, repeated spaces and a closing `##`; headings inside ``` or ~~~ code
fences do not count.

Manifest (TOML); relative paths are resolved against the manifest's directory:
  require = [\"Goal\"]              # optional: headings every file must have

  [[file]]
  path = \"notes.md\"
  require = [\"Rollback\", \"## Risks\"]   # optional: this file's own headings

  [[file]]
  path = \"../shared/context.md\"

A manifest that is missing or invalid is one problem (`MISSING manifest:` or
`INVALID manifest:`, details on stderr).

Examples:
  outbox check notes.md --require Goal --require Rollback || exit 1
  outbox check --manifest notes/manifest.toml

Exit status: 0 when all is well; 1 when anything is off.";

/// `outbox show` options.
#[derive(Debug, Clone, Args)]
pub struct ShowArgs {
    /// Which entry: its id (the envelope header's "id", or from `outbox
    /// ls`), a unique prefix of it (at least 4 hex digits), `last` for the
    /// newest entry, or a label for its newest entry. An id or a prefix wins
    /// over a label. The entry is re-hashed before it is printed; an entry
    /// altered since it was stored is an error (exit 1).
    #[arg(value_name = "ID|last|LABEL")]
    pub id: String,

    /// Print only lines A to B, 1-based and both included, exactly as
    /// stored (terminators too). `A:` runs to the end, `:B` starts at the
    /// first line, `N` is one line.
    #[arg(long, value_name = "A:B", value_parser = parse_line_range)]
    pub lines: Option<LineRange>,

    /// Print the lines that match REGEX (Rust regex syntax; `(?i)` for any
    /// case) as `LINENO: TEXT`, control characters escaped. With --lines,
    /// only lines in that range are searched.
    #[arg(long, value_name = "REGEX", value_parser = parse_grep)]
    pub grep: Option<regex::bytes::Regex>,

    /// Print the stored bytes exactly, credentials included (without it,
    /// credentials are masked as the envelope masks them). Says so on
    /// stderr.
    #[arg(long)]
    pub raw: bool,
}

/// `outbox ls` options.
#[derive(Debug, Clone, Args)]
pub struct LsArgs {
    /// Print a JSON array (one object per entry, newest first) for scripts.
    #[arg(long)]
    pub json: bool,
}

/// `outbox rm` options.
#[derive(Debug, Clone, Args)]
pub struct RmArgs {
    /// Entry ids, or unique prefixes of them (at least 4 hex digits). When
    /// one is unknown or ambiguous, nothing is removed (exit 1).
    #[arg(required = true, value_name = "ID")]
    pub ids: Vec<String>,
}

/// `outbox gc` options.
#[derive(Debug, Clone, Args)]
pub struct GcArgs {
    /// Print what would be removed; remove nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = PACK_AFTER_HELP)]
pub struct PackArgs {
    /// Markdown notes files, packed one by one in this order, each into its
    /// own budget. A missing, empty or non-regular file (directory, FIFO,
    /// device) is reported and skipped; the others are still packed.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Size each file may take once packed, in --unit (K and M suffixes are
    /// powers of 1024). 20000 bytes is about 5,000 tokens of English. The
    /// preamble and pinned sections may exceed it; the overrun is reported.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BUDGET, value_parser = parse_pack_budget)]
    pub budget: usize,

    /// Keep every section whose title contains TITLE (case-insensitive), as
    /// if it were pinned: never dropped, never cut. Repeat for more.
    #[arg(long = "keep", value_name = "TITLE", value_parser = parse_keep)]
    pub keep: Vec<String>,

    /// What the budget and the report count: bytes of the file, or
    /// characters of its lossy UTF-8 decoding.
    #[arg(long, value_enum, value_name = "UNIT", default_value_t = UnitArg::Bytes)]
    pub unit: UnitArg,

    /// Exit 1 when any file (or the --instruction file) was skipped, so a
    /// script does not go on with notes missing.
    #[arg(long)]
    pub strict: bool,

    /// The instruction the notes support: warn when all packed notes
    /// together exceed three times its length (reference material that
    /// overwhelms the instruction dilutes it).
    #[arg(long, value_name = "FILE")]
    pub instruction: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = CHECK_AFTER_HELP)]
pub struct CheckArgs {
    /// Notes files that must exist, be non-empty regular files and contain
    /// every --require heading.
    #[arg(value_name = "FILE", required_unless_present = "manifest", conflicts_with = "manifest")]
    pub files: Vec<PathBuf>,

    /// A `## ` heading every FILE must contain, with or without its `## `
    /// ("Rollback" or "## Rollback"). Repeat for more.
    #[arg(long = "require", value_name = "HEADING", value_parser = parse_required, conflicts_with = "manifest")]
    pub require: Vec<String>,

    /// A TOML file listing the notes files and the headings each must
    /// contain, used instead of FILE and --require (schema below).
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
}

/// Budget when neither a flag, the environment, the configuration nor a
/// harness gives one.
pub const DEFAULT_RUN_BUDGET: usize = defaults::BUDGET;

/// `--harness`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HarnessArg {
    /// Claude Code's Bash tool (30,000 characters inline).
    ClaudeCode,
    /// OpenAI Codex CLI (10,000 tokens of tool output, as bytes/4).
    Codex,
    /// Gemini CLI (40,000 characters).
    Gemini,
    /// No harness: the budget is 14,000 and the boundary is the budget.
    None,
}

impl HarnessArg {
    pub fn harness(self) -> Harness {
        match self {
            HarnessArg::ClaudeCode => Harness::ClaudeCode,
            HarnessArg::Codex => Harness::Codex,
            HarnessArg::Gemini => Harness::Gemini,
            HarnessArg::None => Harness::None,
        }
    }
}

/// `outbox pack --unit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UnitArg {
    /// Bytes of the file as stored (what a byte-limited window sees).
    Bytes,
    /// Characters: Unicode scalar values of the lossy UTF-8 decoding (what
    /// a character-limited window sees; Japanese text is 3 bytes a char).
    Chars,
}

/// `outbox trend` options.
#[derive(Debug, Clone, Args)]
pub struct TrendArgs {
    /// Only series whose label, command or name contains KEY.
    pub key: Option<String>,

    /// Print a JSON array instead of the table.
    #[arg(long)]
    pub json: bool,

    /// Audit: list only the series predicted to cross the boundary within
    /// N runs (or already over it); exit 1 when there is one.
    #[arg(long, value_name = "N")]
    pub within: Option<f64>,

    /// The boundary in characters. Default: --harness's, else the budget
    /// in force (OUTBOX_BOUNDARY, the configuration and OUTBOX_HARNESS
    /// apply here too).
    #[arg(long, value_name = "CHARS", value_parser = parse_size)]
    pub boundary: Option<u64>,
}

/// `outbox status` options.
#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    /// A run's id (from the envelope's header); all runs when omitted.
    pub id: Option<String>,

    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `outbox wait` options.
#[derive(Debug, Clone, Args)]
pub struct WaitArgs {
    /// The run's id (from the envelope's header).
    pub id: String,

    /// Give up after DURATION: say so and exit 124 (as --timeout does).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
}

/// `outbox stats` options.
#[derive(Debug, Clone, Args)]
pub struct StatsArgs {
    /// Only commands whose label, command or series name contains KEY.
    pub key: Option<String>,

    /// Print a JSON array instead of the table.
    #[arg(long)]
    pub json: bool,
}

// ---------------------------------------------------------------------------
// From arguments to the library's options

impl EnvelopeArgs {
    /// The run's options, resolved once: the signal pattern compiled, the
    /// label decoded.
    pub fn options(&self) -> anyhow::Result<RunOptions> {
        let harness = self.harness.map_or(Harness::None, HarnessArg::harness);
        let signal = match &self.signal {
            Some(compiled) => compiled.clone(),
            None => signal::matcher(None).map_err(|e| anyhow::anyhow!("the default --signal pattern: {e}"))?,
        };
        if self.mmap {
            outbox::say!("--mmap is ignored: a file on stdin is cloned into the store or read like a pipe");
        }
        Ok(RunOptions {
            label: self.label.as_ref().map(|l| l.to_string_lossy().into_owned()),
            // The caller fills this in from the environment (app.rs).
            store: StoreEnv::default(),
            signal,
            tail: match self.cut {
                Some(crate::integrate::hook::line::Cut::Tail(n)) => self.tail.max(n),
                _ => self.tail,
            },
            budget: self.budget.or(harness.budget()).unwrap_or(DEFAULT_RUN_BUDGET),
            harness,
            boundary: self.boundary,
            tail_budget: self.tail_budget,
            head_budget: self.head_budget,
            spill_limit: self.spill_limit,
            envelope: match self.envelope {
                EnvelopeMode::Auto => session::EnvelopeMode::Auto,
                EnvelopeMode::Always => session::EnvelopeMode::Always,
                EnvelopeMode::Never => session::EnvelopeMode::Never,
            },
            format: match self.format {
                Format::Text => session::Format::Text,
                Format::Json => session::Format::Json,
                Format::Ndjson => session::Format::Ndjson,
                Format::Auto => session::Format::Auto,
            },
            samples: self.samples,
            json_max_bytes: self.json_max_bytes,
            stderr: match self.stderr {
                StderrMode::Merged => session::StderrMode::Merged,
                StderrMode::Separate => session::StderrMode::Separate,
                StderrMode::Inherit => session::StderrMode::Inherit,
            },
            progress: self.progress,
            status_file: self.status_file.clone(),
            keep_head_lines: match self.cut {
                Some(crate::integrate::hook::line::Cut::Head(n)) => Some(n),
                _ => None,
            },
            keep_tail_lines: match self.cut {
                Some(crate::integrate::hook::line::Cut::Tail(n)) => Some(n),
                _ => None,
            },
            families: self.family_options()?,
        })
    }
}

impl EnvelopeArgs {
    /// `--family`, `--signal` (replace), `--signal-add`, `--no-signal`,
    /// checked before anything runs.
    fn family_options(&self) -> anyhow::Result<outbox::family::FamilyOptions> {
        use outbox::family::{FamilyChoice, FamilyOptions};
        let choice = FamilyChoice::parse(&self.family);
        if let FamilyChoice::Named(name) = &choice {
            let all = outbox::family::load_all();
            if !all.iter().any(|f| &f.name == name && !f.generic) {
                let names: Vec<&str> = all.iter().filter(|f| !f.generic).map(|f| f.name.as_str()).collect();
                anyhow::bail!("--family: unknown family '{name}'; known: auto, none, {}", names.join(", "));
            }
        }
        for p in &self.signal_add {
            regex::bytes::Regex::new(p).map_err(|e| anyhow::anyhow!("--signal-add is not a valid regex: {e}"))?;
        }
        Ok(FamilyOptions {
            choice,
            add: self.signal_add.clone(),
            replace: self.signal.as_ref().map(|s| s.to_string()),
            off: self.no_signal,
            legacy: false,
        })
    }
}

impl From<ShowArgs> for ShowOptions {
    fn from(a: ShowArgs) -> ShowOptions {
        ShowOptions { id: a.id, lines: a.lines, grep: a.grep, raw: a.raw }
    }
}

impl From<LsArgs> for LsOptions {
    fn from(a: LsArgs) -> LsOptions {
        LsOptions { json: a.json }
    }
}

impl From<RmArgs> for RmOptions {
    fn from(a: RmArgs) -> RmOptions {
        RmOptions { ids: a.ids }
    }
}

impl From<GcArgs> for GcOptions {
    fn from(a: GcArgs) -> GcOptions {
        GcOptions { dry_run: a.dry_run }
    }
}

impl From<PackArgs> for PackFilesOptions {
    fn from(a: PackArgs) -> PackFilesOptions {
        let unit = match a.unit {
            UnitArg::Bytes => Unit::Bytes,
            UnitArg::Chars => Unit::Chars,
        };
        PackFilesOptions {
            files: a.files,
            budget: a.budget,
            keep: a.keep,
            unit,
            strict: a.strict,
            instruction: a.instruction,
        }
    }
}

impl From<CheckArgs> for CheckOptions {
    fn from(a: CheckArgs) -> CheckOptions {
        CheckOptions { files: a.files, require: a.require, manifest: a.manifest }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn usage_errors_are_clap_errors() {
        let err =
            |args: &[&str]| crate::app::parse(["outbox"].iter().chain(args).map(std::ffi::OsString::from)).unwrap_err();
        assert!(err(&["--stderr", "separate"]).to_string().contains("needs a command"));
        assert!(err(&["--stderr", "inherit"]).to_string().contains("outbox --stderr inherit -- CMD"));
        assert!(err(&["--signal", "(x"]).to_string().contains("--signal is not a valid regex"));
        assert!(
            crate::app::parse(["outbox", "--stderr", "separate", "--", "true"].map(std::ffi::OsString::from)).is_ok()
        );
        assert!(crate::app::parse(["outbox", "--stderr", "merged"].map(std::ffi::OsString::from)).is_ok());
    }

    #[test]
    fn durations() {
        let ok = |s: &str| parse_duration(s).unwrap();
        assert_eq!(ok("10"), Duration::from_secs(10));
        assert_eq!(ok("10s"), Duration::from_secs(10));
        assert_eq!(ok("500ms"), Duration::from_millis(500));
        assert_eq!(ok("2m"), Duration::from_secs(120));
        assert_eq!(ok("1h"), Duration::from_secs(3600));
        assert_eq!(ok("1.5s"), Duration::from_millis(1500));
        for bad in ["", "0", "0s", "-1", "1d", "s", "1.2.3", "10 sec", "1e3"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        let err = crate::app::parse(["outbox", "--timeout", "5"].map(std::ffi::OsString::from)).unwrap_err();
        assert!(err.to_string().contains("--timeout needs a command"), "{err}");
        assert!(crate::app::parse(["outbox", "--timeout", "5", "--", "true"].map(std::ffi::OsString::from)).is_ok());
    }

    #[test]
    fn budgets() {
        assert!(parse_budget("10").is_err());
    }
}
