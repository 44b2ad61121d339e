//! `outbox pack` as a command: its options, then one file at a time: safe
//! read, a [`Plan`], the packed bytes to stdout, the report lines to stderr.
//! The output is written from the input slice by slice, never copied
//! whole, and the full report is never built: memory stays about the
//! file's size.
//!
//! Invariants: a file that cannot be used is reported and skipped, the
//! others are still packed; with several files each gets a `==> FILE <==`
//! header whether or not it could be read (as `tail` does); a closed
//! stdout ends the command quietly with status 0.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use crate::notes::files::{display_path, note, read_notes};
use crate::notes::pack::{PackOptions, Unit};
use crate::notes::plan::Plan;

/// Budget per file when `--budget` is not given: about 5,000 tokens of
/// English, enough for a working set of notes without crowding out the
/// instruction it supports.
pub const DEFAULT_BUDGET: usize = 20_000;

/// The packed notes may be at most this many times the instruction's length
/// before `--instruction` warns.
pub const INSTRUCTION_RATIO: usize = 3;

#[derive(Debug, Clone)]
pub struct PackFilesOptions {
    /// Markdown notes files, packed one by one in this order, each into its
    /// own budget. A missing, empty or non-regular file (directory, FIFO,
    /// device) is reported and skipped; the others are still packed.
    pub files: Vec<PathBuf>,

    /// Size each file may take once packed, in --unit (K and M suffixes are
    /// powers of 1024). 20000 bytes is about 5,000 tokens of English. The
    /// preamble and pinned sections may exceed it; the overrun is reported.
    pub budget: usize,

    /// Keep every section whose title contains TITLE (case-insensitive), as
    /// if it were pinned: never dropped, never cut. Repeat for more.
    pub keep: Vec<String>,

    /// What the budget and the report count: bytes of the file, or
    /// characters of its lossy UTF-8 decoding.
    pub unit: Unit,

    /// Exit 1 when any file (or the --instruction file) was skipped, so a
    /// script does not go on with notes missing.
    pub strict: bool,

    /// The instruction the notes support: warn when all packed notes
    /// together exceed three times its length (reference material that
    /// overwhelms the instruction dilutes it).
    pub instruction: Option<PathBuf>,
}

pub fn parse_pack_budget(s: &str) -> Result<usize, String> {
    let n = crate::text::size::parse_size(s)?;
    usize::try_from(n).map_err(|_| format!("'{s}' is too large for a budget"))
}

pub fn parse_keep(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        // An empty needle is a substring of every title: it would pin all.
        return Err("an empty --keep would keep every section; give part of a title".into());
    }
    Ok(s.trim().to_string())
}

/// Write failures on stdout, told apart so a closed pipe ends quietly.
enum Out {
    BrokenPipe,
    Failed(io::Error),
}

fn out_err(e: io::Error) -> Out {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Out::BrokenPipe
    } else {
        Out::Failed(e)
    }
}

/// `outbox pack`: packs each file, writes the result to stdout and one
/// report line per file to stderr.
pub fn run(args: &PackFilesOptions) -> anyhow::Result<ExitCode> {
    let opts = PackOptions { budget: args.budget, unit: args.unit, keep: args.keep.clone() };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut skipped = 0usize;
    let mut keep_matched = vec![false; opts.keep.len()];
    let mut packed_total = 0usize;
    let mut headers_written = 0usize;

    for path in &args.files {
        let shown = display_path(path);
        let bytes = match read_notes(path) {
            Ok(b) => b,
            Err(e) => {
                note(&format!("[outbox pack] {shown}: skipped: {e}"));
                skipped += 1;
                continue;
            }
        };
        let plan = Plan::new(&bytes, &opts);
        for (all, hit) in keep_matched.iter_mut().zip(plan.keep_matched()) {
            *all |= *hit;
        }
        packed_total = packed_total.saturating_add(plan.used());
        let written = (|| -> Result<(), Out> {
            // Headers depend on the argument count, not on which files could
            // be read, so a script's parsing does not change when one is
            // missing (as with tail).
            if args.files.len() > 1 {
                if headers_written > 0 {
                    out.write_all(b"\n").map_err(out_err)?;
                }
                writeln!(out, "==> {shown} <==").map_err(out_err)?;
                headers_written += 1;
            }
            let mut last = None;
            plan.write_output(&bytes, |piece| {
                last = piece.last().copied().or(last);
                out.write_all(piece).map_err(out_err)
            })?;
            if args.files.len() > 1 && last.is_some_and(|b| b != b'\n') {
                // Keep the next header on a line of its own.
                out.write_all(b"\n").map_err(out_err)?;
            }
            Ok(())
        })();
        match written {
            Ok(()) => {}
            Err(Out::BrokenPipe) => return Ok(ExitCode::SUCCESS),
            Err(Out::Failed(e)) => return Err(e).context("writing the packed notes to stdout"),
        }
        for line in plan.stderr_lines(&bytes, &shown) {
            note(&line);
        }
    }
    match out.flush() {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
        Err(e) => return Err(e).context("writing the packed notes to stdout"),
    }

    for (k, hit) in opts.keep.iter().zip(&keep_matched) {
        if !hit {
            note(&format!(
                "[outbox pack] --keep {:?} matched no section title in any file; check the spelling",
                crate::text::sanitize::display_str(k).text
            ));
        }
    }

    if let Some(path) = &args.instruction {
        let shown = display_path(path);
        match read_notes(path) {
            Ok(text) => {
                let len = args.unit.measure(&text);
                let unit = args.unit.name();
                if packed_total > len.saturating_mul(INSTRUCTION_RATIO) {
                    note(&format!(
                        "[outbox pack] warning: the packed notes ({packed_total} {unit}) exceed {INSTRUCTION_RATIO} times \
                         the instruction {shown} ({len} {unit}); reference material that large dilutes the \
                         instruction: lower --budget or pack fewer files"
                    ));
                }
            }
            Err(e) => {
                note(&format!("[outbox pack] --instruction {shown}: skipped, cannot compare lengths: {e}"));
                skipped += 1;
            }
        }
    }

    if args.strict && skipped > 0 {
        note(&format!("[outbox pack] {skipped} file(s) skipped; exit status 1 because of --strict"));
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
