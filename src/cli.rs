//! Command-line surface: clap derive options.
//!
//! Every budget is in characters (Unicode scalar values of the lossy UTF-8
//! decoding); sizes in bytes accept K/M/G suffixes (powers of 1024).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    Show(crate::store::ShowArgs),
    /// List the entries in the store.
    Ls(crate::store::LsArgs),
    /// Remove expired entries and stale temporary files from the store.
    Gc(crate::store::GcArgs),
    /// Pack Markdown notes into a budget by whole `## ` sections.
    Pack(crate::sections::PackArgs),
    /// Preflight: check that notes files exist, are non-empty and have the
    /// required headings.
    Check(crate::check::CheckArgs),
    /// Print shell code (bash, zsh, fish) that runs find, grep, git log, ...
    /// through outbox when OUTBOX_WRAP=1 and their output is not piped or
    /// redirected.
    Init(crate::shell::InitArgs),
    /// Agent hooks: `outbox hook claude-code` rewrites matching Bash tool
    /// calls to `outbox -- CMD`.
    Hook(crate::hook::HookArgs),
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

    /// Regex (Rust syntax) that marks a signal line; replaces the default
    /// case-insensitive \b(error|failed|failure|fatal|panic|exception)\b.
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
}

/// Smallest budget that holds a header, the markers and a useful tail.
pub const MIN_BUDGET: usize = 1_000;

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

/// Parses `1234`, `64K`, `16M`, `1G` (powers of 1024; `KB`/`KiB` also
/// accepted).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit() && c != '_').unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num: u64 = num
        .replace('_', "")
        .parse()
        .map_err(|_| format!("'{s}' is not a size: use a number with an optional K, M or G suffix"))?;
    let mult: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        "T" | "TB" | "TIB" => 1 << 40,
        other => return Err(format!("unknown size suffix '{other}' in '{s}': use K, M or G")),
    };
    num.checked_mul(mult).ok_or_else(|| format!("'{s}' is too large"))
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
    fn sizes() {
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("14_000"), Ok(14000));
        assert!(parse_size("12Q").is_err());
        assert!(parse_budget("10").is_err());
    }
}
