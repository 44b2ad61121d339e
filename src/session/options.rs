//! What one run is asked to do, resolved once from the command line (or a
//! test) before anything is read. The binary builds it from clap's
//! arguments; nothing here knows clap.

use std::path::PathBuf;

use regex::bytes::Regex;

use crate::store::StoreEnv;
use crate::stream::{defaults, signal};

pub use crate::stream::defaults::MIN_BUDGET;

/// When to print the envelope instead of the input itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EnvelopeMode {
    /// Pass small text through, envelope the rest.
    #[default]
    Auto,
    /// Always print the envelope.
    Always,
    /// Print the input unchanged whatever its size (as tee does); still
    /// keep the spill.
    Never,
}

/// How to read the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Lines of text: head, signal lines, tail.
    #[default]
    Text,
    /// One JSON document, folded into a smaller valid JSON document.
    Json,
    /// One JSON value per line, folded streaming.
    Ndjson,
    /// Decide from the first bytes of the input.
    Auto,
}

/// Where a wrapped command's stderr goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StderrMode {
    /// Merged with stdout in arrival order.
    #[default]
    Merged,
    /// Kept apart: two stored entries, two envelopes.
    Separate,
    /// Not captured: the command writes to outbox's own stderr; only
    /// stdout is stored and enveloped.
    Inherit,
}

/// One run's options. `Default` is the documented behaviour of a bare
/// `outbox`, so tests, benches and fuzz targets never retype it.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Label of the stored copy, before sanitising; None for the default.
    pub label: Option<String>,
    /// The store's directory, TTL and cap, read from the environment once
    /// by the caller.
    pub store: StoreEnv,
    /// What marks a signal line, compiled once.
    pub signal: Regex,
    /// Last lines asked for in the tail (at least 1).
    pub tail: usize,
    /// Total characters the output may use.
    pub budget: usize,
    /// Characters reserved first for the tail block.
    pub tail_budget: usize,
    /// Characters reserved for the head before signal lines are placed.
    pub head_budget: usize,
    /// Size against which `spill_ratio_chars` is computed.
    pub spill_limit: u64,
    pub envelope: EnvelopeMode,
    pub format: Format,
    /// JSON: whole items kept as samples.
    pub samples: usize,
    /// JSON: largest document read into memory for folding.
    pub json_max_bytes: u64,
    pub stderr: StderrMode,
    /// Draw a progress meter on stderr when it is a terminal.
    pub progress: bool,
    /// `CMD | outbox`: a file the piped command's exit status is written
    /// to before its output ends (the agent hook's rewrite).
    pub status_file: Option<PathBuf>,
    /// The first lines the reader asked for (the `| head -N` an agent hook
    /// replaced): their characters are reserved in the head, within the
    /// budget.
    pub keep_head_lines: Option<usize>,
    /// The last lines the reader asked for (`| tail -N`): their characters
    /// are reserved in the tail, within the budget.
    pub keep_tail_lines: Option<usize>,
    /// The harness that reads the output (sets the boundary).
    pub harness: Harness,
    /// The reader's cut-off in characters, when given.
    pub boundary: Option<u64>,
    /// Tool families and signal options (`--family`, `--signal-add`,
    /// `--no-signal`; `--signal` replaces the default signal patterns).
    pub families: crate::family::FamilyOptions,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            label: None,
            store: StoreEnv::default(),
            signal: signal::matcher(None).expect("the default signal pattern compiles"),
            tail: defaults::TAIL_LINES,
            budget: defaults::BUDGET,
            tail_budget: defaults::TAIL_BUDGET,
            head_budget: defaults::HEAD_BUDGET,
            spill_limit: defaults::SPILL_LIMIT,
            envelope: EnvelopeMode::Auto,
            format: Format::Text,
            samples: defaults::SAMPLES,
            json_max_bytes: defaults::JSON_MAX_BYTES,
            stderr: StderrMode::Merged,
            progress: false,
            families: crate::family::FamilyOptions::default(),
            status_file: None,
            keep_head_lines: None,
            keep_tail_lines: None,
            harness: Harness::None,
            boundary: None,
        }
    }
}

/// An agent harness whose cut-off outbox should respect: it sets the
/// budget (unless one is given) and the boundary the history measures
/// against. Sources of each figure are in docs/store.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Harness {
    #[default]
    None,
    /// Claude Code's Bash tool: 30,000 characters inline, past that a
    /// preview of the start.
    ClaudeCode,
    /// Codex CLI: 10,000 "tokens" of tool output, counted as bytes / 4.
    Codex,
    /// Gemini CLI: tool output past 40,000 characters is truncated.
    Gemini,
}

impl Harness {
    pub fn name(self) -> &'static str {
        match self {
            Harness::None => "none",
            Harness::ClaudeCode => "claude-code",
            Harness::Codex => "codex",
            Harness::Gemini => "gemini",
        }
    }

    /// The budget this harness shows whole. Codex counts bytes: 10,000
    /// characters are at most 40,000 bytes of UTF-8, so the envelope stays
    /// within its 10,000 tokens whatever the script.
    pub fn budget(self) -> Option<usize> {
        match self {
            Harness::None => None,
            Harness::ClaudeCode => Some(30_000),
            Harness::Codex => Some(10_000),
            Harness::Gemini => Some(40_000),
        }
    }

    /// Where the harness starts cutting, and what it counts.
    pub fn boundary(self) -> Option<(u64, crate::history::series::Unit)> {
        use crate::history::series::Unit;
        match self {
            Harness::None => None,
            Harness::ClaudeCode => Some((30_000, Unit::Chars)),
            Harness::Codex => Some((40_000, Unit::Bytes)),
            Harness::Gemini => Some((40_000, Unit::Chars)),
        }
    }
}
