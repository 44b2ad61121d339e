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
        let whole = self.no_headings.then(|| self.sections.iter().all(|s| s.kept));
        let mut tally = Tally::new(self.unit, self.used, self.budget, self.preamble, whole);
        for s in &self.sections {
            tally.section(s);
        }
        for w in &self.warnings {
            tally.warning(|| w.clone());
        }
        tally.lines(file)
    }
}

/// What the stderr lines tell, gathered one section at a time, so that
/// [`PackReport::stderr_lines`] and `outbox pack` (which never builds a
/// `PackReport`, see [`crate::notes::plan`]) print the same bytes. Only
/// what is printed is held: the first few names, and counts.
pub(crate) struct Tally {
    unit: Unit,
    used: usize,
    budget: usize,
    preamble: usize,
    /// For a file without headings: whether it was kept whole.
    whole: Option<bool>,
    dropped: usize,
    names: Vec<String>,
    pinned: usize,
    pinned_size: usize,
    in_parts: usize,
    /// (name, size, parts kept, parts) of the first sections kept in parts.
    in_parts_named: Vec<(String, usize, usize, usize)>,
    warnings: usize,
    warnings_named: Vec<String>,
}

impl Tally {
    pub(crate) fn new(unit: Unit, used: usize, budget: usize, preamble: usize, whole: Option<bool>) -> Tally {
        Tally {
            unit,
            used,
            budget,
            preamble,
            whole,
            dropped: 0,
            names: Vec::new(),
            pinned: 0,
            pinned_size: 0,
            in_parts: 0,
            in_parts_named: Vec::new(),
            warnings: 0,
            warnings_named: Vec::new(),
        }
    }

    /// A piece left out, in file order; `name` is asked only while names
    /// are still printed.
    pub(crate) fn dropped(&mut self, name: impl FnOnce() -> String) {
        self.dropped += 1;
        if self.names.len() < MAX_NAMED {
            self.names.push(name());
        }
    }

    /// A section pinned (by its marker or `--keep`) of `size`.
    pub(crate) fn pinned(&mut self, size: usize) {
        self.pinned += 1;
        self.pinned_size += size;
    }

    pub(crate) fn warning(&mut self, text: impl FnOnce() -> String) {
        self.warnings += 1;
        if self.warnings_named.len() < MAX_NOTE_LINES {
            self.warnings_named.push(text());
        }
    }

    /// Everything about one section: its dropped pieces, whether it was
    /// kept in parts, whether it was pinned.
    pub(crate) fn section(&mut self, section: &SectionOutcome) {
        for (within, s) in section.pieces().into_iter().filter(|(_, s)| !s.kept) {
            self.dropped(|| {
                let mut name: Vec<String> = within.iter().map(|t| display_text(t)).collect();
                name.push(display_title(s));
                name.join(" > ")
            });
        }
        if !section.parts.is_empty() {
            self.in_parts += 1;
            if self.in_parts_named.len() < MAX_NOTE_LINES {
                let pieces = section.pieces();
                let kept = pieces.iter().filter(|(_, p)| p.kept).count() - 1;
                self.in_parts_named.push((display_title(section), section.size, kept, pieces.len() - 1));
            }
        }
        if section.class == Class::Pinned {
            self.pinned(section.size);
        }
    }

    fn overrun(&self) -> usize {
        self.used.saturating_sub(self.budget)
    }

    pub(crate) fn lines(&self, file: &str) -> Vec<String> {
        let unit = self.unit.name();
        let names = &self.names;
        let dropped = self.dropped;
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
        if let Some(kept) = self.whole {
            out.push(format!(
                "[outbox pack] {file}: no `## ` heading outside code fences, so it cannot be packed by section: \
                 treated as one unit ({}); add `## ` headings to pack it by section",
                if kept { "it fits, kept whole" } else { "too large, dropped whole" }
            ));
        }
        if self.overrun() > 0 {
            let (pinned, pinned_size) = (self.pinned, self.pinned_size);
            let mut what = Vec::new();
            if self.preamble > 0 {
                what.push(format!("the preamble ({} {unit})", self.preamble));
            }
            if pinned > 0 {
                what.push(format!("{pinned} pinned/--keep section(s) ({pinned_size} {unit})"));
            }
            out.push(format!(
                "[outbox pack] {file}: over budget by {} {unit}: {} kept whole, because instructions are never \
                 cut; raise --budget or unpin a section",
                self.overrun(),
                what.join(" and ")
            ));
        }
        for (name, size, kept, parts) in &self.in_parts_named {
            out.push(format!(
                "[outbox pack] {file}: {name} ({size} {unit}) did not fit whole: kept its heading and {kept} of {parts} parts \
                 below it (subsections, each whole)"
            ));
        }
        let more = self.in_parts.saturating_sub(MAX_NOTE_LINES);
        if more > 0 {
            out.push(format!("[outbox pack] {file}: ... and {more} more sections kept in parts"));
        }
        out.extend(self.warnings_named.iter().map(|w| format!("[outbox pack] {file}: {w}")));
        if self.warnings > MAX_NOTE_LINES {
            out.push(format!("[outbox pack] {file}: ... and {} more warnings", self.warnings - MAX_NOTE_LINES));
        }
        out
    }
}

fn display_title(s: &SectionOutcome) -> String {
    display_name(&s.title, s.line)
}

/// A section's name as printed: its title, or its line when it has none.
pub(crate) fn display_name(title: &str, line: usize) -> String {
    if title.is_empty() {
        format!("(untitled, line {line})")
    } else {
        display_text(title)
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
