//! What one run is asked to do, resolved once from the command line (or a
//! test) before anything is read. The binary builds it from clap's
//! arguments; nothing here knows clap.

use std::path::PathBuf;

use regex::bytes::Regex;

use crate::stream::signal;

/// Smallest budget that holds a header, the markers and a useful tail.
pub const MIN_BUDGET: usize = 1_000;

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
}

/// One run's options. `Default` is the documented behaviour of a bare
/// `outbox`, so tests, benches and fuzz targets never retype it.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Label of the stored copy, before sanitising; None for the default.
    pub label: Option<String>,
    /// Store directory; None for `$OUTBOX_DIR` or the per-user cache.
    pub dir: Option<PathBuf>,
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
    /// Memory-map a regular file on stdin.
    pub mmap: bool,
    /// Tool families and signal options (`--family`, `--signal-add`,
    /// `--no-signal`; `--signal` replaces the default signal patterns).
    pub families: crate::family::FamilyOptions,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            label: None,
            dir: None,
            signal: signal::matcher(None).expect("the default signal pattern compiles"),
            tail: 20,
            budget: 14_000,
            tail_budget: 3_000,
            head_budget: 1_000,
            spill_limit: 100_000,
            envelope: EnvelopeMode::Auto,
            format: Format::Text,
            samples: 8,
            json_max_bytes: 1 << 30,
            stderr: StderrMode::Merged,
            progress: false,
            mmap: false,
            families: crate::family::FamilyOptions::default(),
        }
    }
}
