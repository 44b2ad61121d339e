//! What `outbox pack` decided about one file, and the lines that tell it
//! on stderr: sizes, what was dropped (whole sections, and parts of a
//! section kept in parts, named `Section > Subsection`), overruns and
//! warnings.
//!
//! Invariants: every piece left out is counted in the first line, and the
//! first [`MAX_NAMED`] of them are named there (a file of a million
//! headings must not print an eight-megabyte line), each name at most
//! [`MAX_NAME_CHARS`]; the rest are counted (`... and 999980 more`). Names
//! are made safe for a terminal. The other lines are capped the same way.

use std::ops::Range;

use crate::notes::pack::Unit;

/// Dropped pieces named on the report's first line; the rest are counted.
pub const MAX_NAMED: usize = 20;
/// A name longer than this (a heading that is a paragraph) is shortened.
pub const MAX_NAME_CHARS: usize = 120;
/// Lines about sections kept in parts, and warnings, printed per file.
pub const MAX_NOTE_LINES: usize = 20;

/// Why a section was placed where it was in the claiming order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Pinned by its marker or `--keep`: kept whatever the budget. Only a
    /// `## ` section is `Pinned`; a part of one (see
    /// [`SectionOutcome::parts`]) marked pinned is claimed first, as
    /// `Normal`.
    Pinned,
    Fresh,
    Normal,
}

/// What became of one section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionOutcome {
    pub title: String,
    /// 1-based line of the heading.
    pub line: usize,
    pub span: Range<usize>,
    /// Size in the report's unit.
    pub size: usize,
    pub class: Class,
    /// Kept whole.
    pub kept: bool,
    /// When the section did not fit whole but its heading did: its pieces
    /// in file order, tiling `span`. The first is the heading with the text
    /// before the first subsection (kept, with an empty `parts`); each other
    /// is a subsection, itself kept, dropped or in parts. Empty otherwise.
    pub parts: Vec<SectionOutcome>,
}

impl SectionOutcome {
    /// The pieces that are kept whole or dropped whole (a section in parts
    /// replaced by its parts), in file order, with the titles of the
    /// sections they are in, outermost first.
    pub fn pieces(&self) -> Vec<(Vec<&str>, &SectionOutcome)> {
        let mut out = Vec::new();
        let mut stack: Vec<(Vec<&str>, &SectionOutcome)> = vec![(Vec::new(), self)];
        while let Some((path, s)) = stack.pop() {
            if s.parts.is_empty() {
                out.push((path, s));
                continue;
            }
            for (k, part) in s.parts.iter().enumerate().rev() {
                let mut inner = path.clone();
                // The head piece is the section itself, not a part of it.
                if k > 0 {
                    inner.push(s.title.as_str());
                }
                stack.push((inner, part));
            }
        }
        out
    }
}

/// Everything `pack` decided, for the stderr report and for tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackReport {
    pub unit: Unit,
    pub budget: usize,
    /// Size of the output in `unit`.
    pub used: usize,
    /// Size of the preamble in `unit` (always kept).
    pub preamble: usize,
    /// In file order. A file without headings is one pseudo-section titled
    /// `(whole file)`, and then `no_headings` is set.
    pub sections: Vec<SectionOutcome>,
    pub no_headings: bool,
    /// For each `--keep`, whether it matched a section of this file.
    pub keep_matched: Vec<bool>,
    /// Problems in the file worth a line on stderr (unknown markers).
    pub warnings: Vec<String>,
}

impl PackReport {
    /// How far the preamble and pinned sections alone went past the budget.
    pub fn overrun(&self) -> usize {
        self.used.saturating_sub(self.budget)
    }

    /// What was left out, whole sections and parts of sections alike.
    pub fn dropped(&self) -> impl Iterator<Item = &SectionOutcome> {
        self.pieces().into_iter().filter(|(_, s)| !s.kept).map(|(_, s)| s)
    }

    /// Every piece (see [`SectionOutcome::pieces`]) of every section.
    pub fn pieces(&self) -> Vec<(Vec<&str>, &SectionOutcome)> {
        self.sections.iter().flat_map(SectionOutcome::pieces).collect()
    }

    /// The byte spans in the output after the preamble, in file order.
    pub fn kept_spans(&self) -> Vec<Range<usize>> {
        self.pieces().into_iter().filter(|(_, s)| s.kept).map(|(_, s)| s.span.clone()).collect()
    }

    /// The stderr lines for `file` (already made safe to print): the drop
    /// line always, first; then an overrun or no-heading note, warnings.
    pub fn stderr_lines(&self, file: &str) -> Vec<String> {
        let unit = self.unit.name();
        // One section at a time: the pieces of a million sections are
        // never held at once, only the first few names.
        let mut names: Vec<String> = Vec::new();
        let mut dropped = 0usize;
        for section in &self.sections {
            for (within, s) in section.pieces().into_iter().filter(|(_, s)| !s.kept) {
                dropped += 1;
                if names.len() < MAX_NAMED {
                    let mut name: Vec<String> = within.iter().map(|t| display_text(t)).collect();
                    name.push(display_title(s));
                    names.push(name.join(" > "));
                }
            }
        }
        let mut line =
            format!("[outbox pack] {file}: {}/{} {unit}, dropped {dropped} sections", self.used, self.budget);
        if !names.is_empty() {
            line.push_str(": ");
            line.push_str(&names.join(", "));
        }
        if dropped > names.len() {
            line.push_str(&format!(", ... and {} more", dropped - names.len()));
        }
        let mut out = vec![line];
        if self.no_headings {
            out.push(format!(
                "[outbox pack] {file}: no `## ` heading outside code fences, so it cannot be packed by section: \
                 treated as one unit ({}); add `## ` headings to pack it by section",
                if self.sections.iter().all(|s| s.kept) { "it fits, kept whole" } else { "too large, dropped whole" }
            ));
        }
        if self.overrun() > 0 {
            let pinned: Vec<&SectionOutcome> = self.sections.iter().filter(|s| s.class == Class::Pinned).collect();
            let pinned_size: usize = pinned.iter().map(|s| s.size).sum();
            let mut what = Vec::new();
            if self.preamble > 0 {
                what.push(format!("the preamble ({} {unit})", self.preamble));
            }
            if !pinned.is_empty() {
                what.push(format!("{} pinned/--keep section(s) ({pinned_size} {unit})", pinned.len()));
            }
            out.push(format!(
                "[outbox pack] {file}: over budget by {} {unit}: {} kept whole, because instructions are never \
                 cut; raise --budget or unpin a section",
                self.overrun(),
                what.join(" and ")
            ));
        }
        let in_parts = self.sections.iter().filter(|s| !s.parts.is_empty());
        for s in in_parts.clone().take(MAX_NOTE_LINES) {
            let pieces = s.pieces();
            let kept = pieces.iter().filter(|(_, p)| p.kept).count() - 1;
            out.push(format!(
                "[outbox pack] {file}: {} ({} {unit}) did not fit whole: kept its heading and {kept} of {} parts \
                 below it (subsections, each whole)",
                display_title(s),
                s.size,
                pieces.len() - 1
            ));
        }
        let more = in_parts.count().saturating_sub(MAX_NOTE_LINES);
        if more > 0 {
            out.push(format!("[outbox pack] {file}: ... and {more} more sections kept in parts"));
        }
        out.extend(self.warnings.iter().take(MAX_NOTE_LINES).map(|w| format!("[outbox pack] {file}: {w}")));
        if self.warnings.len() > MAX_NOTE_LINES {
            out.push(format!("[outbox pack] {file}: ... and {} more warnings", self.warnings.len() - MAX_NOTE_LINES));
        }
        out
    }
}

fn display_title(s: &SectionOutcome) -> String {
    if s.title.is_empty() {
        format!("(untitled, line {})", s.line)
    } else {
        display_text(&s.title)
    }
}

/// A title as printed: escaped, and shortened in the middle past
/// [`MAX_NAME_CHARS`].
fn display_text(title: &str) -> String {
    let text = crate::text::sanitize::display_str(title).text;
    let n = text.chars().count();
    if n <= MAX_NAME_CHARS {
        return text;
    }
    let keep = (MAX_NAME_CHARS - 1) / 2;
    let head: String = text.chars().take(keep).collect();
    let tail: String = text.chars().skip(n - keep).collect();
    format!("{head}…{tail}")
}
