//! Command-line surface: clap derive arguments, and their conversion into
//! the library's own options ([`RunOptions`], [`ShowOptions`], ...), built
//! once. Only this binary knows clap.
//!
//! Every budget is in characters (Unicode scalar values of the lossy UTF-8
//! decoding); sizes in bytes accept K/M/G suffixes (powers of 1024).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use outbox::notes::check::{parse_required, CheckOptions};
use outbox::notes::pack::{parse_keep, parse_pack_budget, PackFilesOptions, Unit, DEFAULT_BUDGET};
use outbox::session::{self, RunOptions, MIN_BUDGET};
use outbox::store::{parse_line_range, GcOptions, LineRange, LsOptions, ShowOptions};
use outbox::stream::signal;
use outbox::text::size::parse_size;

const AFTER_HELP: &str = "\
Examples:
  cargo build 2>&1 | outbox                  envelope a build log
  outbox -- git log --stat                   run a command, keep its exit status
  find / -xdev 2>&1 | outbox --label find    label the stored copy
  curl -s api/items | outbox --format json   fold a JSON payload, still valid JSON
  outbox show stdin-3f2a9c1b7d4e --lines 100:200
  eval \"$(outbox init bash)\"                 wrap find/grep/git log for agents (OUTBOX_WRAP=1)

Exit status: 0 on success; 1 when outbox failed or the full output could not
be kept (the envelope is still printed); in wrap mode the command's status
(128+N for signal N), 125 when the command succeeded but outbox failed,
126 when it could not be run, 127 when it was not found; 128+N when outbox
itself is interrupted by signal N.";

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
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub envelope: EnvelopeArgs,

    /// Wrap mode: run CMD with ARGS in its own process group, envelope its
    /// stdout and stderr (merged in the order written), and exit with its
    /// status. SIGINT/SIGTERM are forwarded to the command's group. Commands
    /// that read the terminal cannot be wrapped.
    #[arg(last = true, value_name = "CMD [ARGS]...", allow_hyphen_values = true)]
    pub wrap: Vec<OsString>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print a stored original exactly, or some of its lines.
    Show(ShowArgs),
    /// List the entries in the store.
    Ls(LsArgs),
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
}

#[derive(Debug, Clone, Args)]
pub struct EnvelopeArgs {
    /// Label of the stored copy (sanitised to [A-Za-z0-9._-], 64 chars at
    /// most). Default: "stdin", or the command's name in wrap mode.
    #[arg(long, value_name = "NAME")]
    pub label: Option<OsString>,

    /// Store directory. Default: $OUTBOX_DIR, else $XDG_CACHE_HOME/outbox,
    /// else ~/.cache/outbox.
    #[arg(long, value_name = "DIR", global = true)]
    pub dir: Option<PathBuf>,

    /// Regex (Rust syntax) that marks a signal line; REPLACES the default
    /// signal patterns (the tool families' and the generic ones), as it
    /// always has. Families still detect and give verdicts. To add a
    /// pattern to the defaults instead, use --signal-add.
    #[arg(long, value_name = "REGEX")]
    pub signal: Option<String>,

    /// Number of last lines asked for in the tail (at least 1: the last line
    /// is always kept).
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = parse_tail)]
    pub tail: usize,

    /// Total characters the output may use, header and markers included.
    #[arg(long, value_name = "CHARS", default_value_t = 14_000, value_parser = parse_budget)]
    pub budget: usize,

    /// Characters reserved first for the tail block.
    #[arg(long, value_name = "CHARS", default_value_t = 3_000)]
    pub tail_budget: usize,

    /// Characters reserved for the head block before signal lines are
    /// placed; what signal lines leave over extends the head.
    #[arg(long, value_name = "CHARS", default_value_t = 1_000)]
    pub head_budget: usize,

    /// Size against which the header's spill_ratio_chars is computed.
    #[arg(long, value_name = "CHARS", default_value_t = 100_000)]
    pub spill_limit: u64,

    /// auto: small text passes through unchanged; always: envelope even
    /// small input; never: print the input unchanged (still stored).
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = EnvelopeMode::Auto)]
    pub envelope: EnvelopeMode,

    /// Input format.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Format::Text)]
    pub format: Format,

    /// JSON: number of whole items kept as samples.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub samples: usize,

    /// JSON: largest document read into memory for folding (K/M/G
    /// suffixes); past it, the text envelope is used and says so.
    #[arg(long, value_name = "BYTES", default_value = "1G", value_parser = parse_size)]
    pub json_max_bytes: u64,

    /// Wrap mode: by default stdout and stderr share one pipe, so the
    /// envelope and the stored copy hold them in the order they were
    /// written. separate reads them apart: a stored copy of each, and (when
    /// they do not pass through) an envelope of each, stdout's first, each
    /// header saying its "stream"; needs --budget 2000 or more.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = StderrMode::Merged)]
    pub stderr: StderrMode,

    /// Show bytes, lines and rate on stderr while reading (only when stderr
    /// is a terminal).
    #[arg(long)]
    pub progress: bool,

    /// Memory-map a regular file on stdin in 4 MiB windows instead of
    /// reading it with large read(2) calls. Off by default: on the machines
    /// measured, page faults made it slower and less steady than read(2).
    #[arg(long)]
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
}

fn parse_budget(s: &str) -> Result<usize, String> {
    let n = parse_size(s)?;
    let n = usize::try_from(n).map_err(|_| "budget too large".to_string())?;
    if n < MIN_BUDGET {
        return Err(format!(
            "{n} is too small: the header and markers alone need up to about 900 characters; use at least {MIN_BUDGET}"
        ));
    }
    Ok(n)
}

fn parse_tail(s: &str) -> Result<usize, String> {
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
    /// Entry id, as printed in the envelope header (`id`) or by `outbox ls`.
    pub id: String,

    /// Print only lines A to B, 1-based and both included, exactly as
    /// stored (terminators too). `A:` runs to the end, `:B` starts at the
    /// first line, `N` is one line.
    #[arg(long, value_name = "A:B", value_parser = parse_line_range)]
    pub lines: Option<LineRange>,

    /// Print the lines that match REGEX (Rust regex syntax; `(?i)` for any
    /// case) as `LINENO: TEXT`, control characters escaped. With --lines,
    /// only lines in that range are searched.
    #[arg(long, value_name = "REGEX")]
    pub grep: Option<String>,
}

/// `outbox ls` options.
#[derive(Debug, Clone, Args)]
pub struct LsArgs {
    /// Print a JSON array (one object per entry, newest first) for scripts.
    #[arg(long)]
    pub json: bool,
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

/// `outbox pack --unit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UnitArg {
    /// Bytes of the file as stored (what a byte-limited window sees).
    Bytes,
    /// Characters: Unicode scalar values of the lossy UTF-8 decoding (what
    /// a character-limited window sees; Japanese text is 3 bytes a char).
    Chars,
}

// ---------------------------------------------------------------------------
// From arguments to the library's options

impl EnvelopeArgs {
    /// The run's options, resolved once: the signal pattern compiled, the
    /// label decoded.
    pub fn options(&self) -> anyhow::Result<RunOptions> {
        let signal = signal::matcher(self.signal.as_deref())
            .map_err(|e| anyhow::anyhow!("--signal is not a valid regex: {e}"))?;
        Ok(RunOptions {
            label: self.label.as_ref().map(|l| l.to_string_lossy().into_owned()),
            dir: self.dir.clone(),
            signal,
            tail: self.tail,
            budget: self.budget,
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
            },
            progress: self.progress,
            mmap: self.mmap,
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
        ShowOptions { id: a.id, lines: a.lines, grep: a.grep }
    }
}

impl From<LsArgs> for LsOptions {
    fn from(a: LsArgs) -> LsOptions {
        LsOptions { json: a.json }
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
    fn budgets() {
        assert!(parse_budget("10").is_err());
    }
}
