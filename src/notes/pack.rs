//! `outbox pack`: Markdown notes packed into a budget by whole `## ` sections.
//!
//! Reference notes handed to an agent are usually cut by line, and the cut
//! is silent. This module cuts by section instead and names every drop.
//!
//! ```text
//!  bytes ─► outline(): preamble + sections (byte spans, titles, markers, dates)
//!        ─► pack():    claim the budget by priority, emit kept spans in file order
//!        ─► run():     one file at a time: safe read, stdout, one report line on stderr
//! ```
//!
//! Invariants (checked by the property test at the bottom):
//! - The output is the preamble followed by a subsequence of the sections, each
//!   byte for byte as in the input (CRLF, invalid UTF-8 and all), in file
//!   order. A section is never sliced; each one is either whole in the output
//!   or named as dropped in the report.
//! - The output fits the budget, except when the preamble and the pinned
//!   sections alone do not: those are instructions, kept whole, and the
//!   overrun is reported.
//! - A section that was dropped did not fit in what was left once packing
//!   ended (nothing is dropped that could still have been kept).
//!
//! Parsing rules: a section starts at a line whose text (after at most three
//! spaces) is `##` followed by a space, a tab or the end of the line; `###`
//! and deeper headings stay inside their section. Lines inside fenced code
//! blocks (three or more backticks or tildes, closed by a fence of the same
//! character at least as long; an unclosed fence runs to the end of the file,
//! as in CommonMark) are never headings. A priority marker is an HTML comment
//! on the line directly before the heading: `<!-- notes-priority: pinned -->`
//! or `<!-- notes-priority: fresh -->`; the marker line belongs to the section
//! it marks, so it travels (or is dropped) with it. The parser is the one
//! `outbox check` uses too, so both agree on what a heading is.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

/// Budget per file when `--budget` is not given: about 5,000 tokens of
/// English, enough for a working set of notes without crowding out the
/// instruction it supports.
pub const DEFAULT_BUDGET: usize = 20_000;

/// Largest file read as notes. Notes are read whole into memory; anything
/// this large is not a notes file, and refusing it keeps a stray argument
/// (a disk image, /proc/kcore) from exhausting memory.
pub const MAX_NOTES_BYTES: u64 = 1 << 30;

/// The packed notes may be at most this many times the instruction's length
/// before `--instruction` warns.
pub const INSTRUCTION_RATIO: usize = 3;

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// What the budget counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unit {
    /// Bytes of the file as stored (what a byte-limited window sees).
    #[default]
    Bytes,
    /// Characters: Unicode scalar values of the lossy UTF-8 decoding (what
    /// a character-limited window sees; Japanese text is 3 bytes a char).
    Chars,
}

impl Unit {
    /// Size of `bytes` in this unit.
    pub fn measure(self, bytes: &[u8]) -> usize {
        match self {
            Unit::Bytes => bytes.len(),
            // A count never exceeds the byte length, which fits in usize.
            Unit::Chars => crate::text::utf8::count_chars(bytes) as usize,
        }
    }

    /// The word used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Bytes => "bytes",
            Unit::Chars => "chars",
        }
    }
}

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

// ---------------------------------------------------------------------------
// Parsing

/// How a section asked to be treated, from the marker line before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marker {
    None,
    Pinned,
    Fresh,
    /// A `notes-priority` marker with a value we do not know (kept so the
    /// report can point at the typo instead of ignoring it silently).
    Unknown(String),
}

/// A calendar date from a title, ordered oldest to newest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date {
    pub year: u16,
    pub month: u8,
    pub day: u8,
}

/// One `## ` section: its marker line (if any), heading and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Bytes of the section in the input, from its marker line (or heading)
    /// up to the next section or the end of the input.
    pub span: Range<usize>,
    /// 1-based line number of the heading.
    pub line: usize,
    /// The heading text: lossy UTF-8, trimmed, closing `#`s removed.
    pub title: String,
    pub marker: Marker,
    /// The first valid YYYY-MM-DD date in the title.
    pub date: Option<Date>,
}

/// A Markdown file split into a preamble and sections that tile it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outline {
    /// Text before the first section (a UTF-8 byte-order mark included).
    pub preamble: Range<usize>,
    /// Contiguous, in file order, the last one ending at the input's end.
    pub sections: Vec<Section>,
}

/// Lines as (start, end of text, end with terminator). The text excludes
/// `\n` and a `\r` before it, so CRLF files parse like LF files while the
/// spans still cover every byte.
fn lines(input: &[u8], from: usize) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
    let mut pos = from;
    std::iter::from_fn(move || {
        if pos >= input.len() {
            return None;
        }
        let start = pos;
        let (text_end, end) = match memchr::memchr(b'\n', &input[start..]) {
            Some(i) => (start + i, start + i + 1),
            None => (input.len(), input.len()),
        };
        let text_end = if text_end > start && input[text_end - 1] == b'\r' { text_end - 1 } else { text_end };
        pos = end;
        Some((start, text_end, end))
    })
}

/// Strips up to three leading spaces (four make an indented code block).
fn strip_indent(line: &[u8]) -> Option<&[u8]> {
    let n = line.iter().take_while(|&&b| b == b' ').count();
    (n <= 3).then(|| &line[n..])
}

fn trim_ascii_ws(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|b| !matches!(b, b' ' | b'\t')).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !matches!(b, b' ' | b'\t')).map_or(start, |i| i + 1);
    &s[start..end]
}

/// The title of a level-2 ATX heading line (without its line terminator),
/// or `None` when `line` is not one.
pub fn heading_title(line: &[u8]) -> Option<&[u8]> {
    let rest = strip_indent(line)?.strip_prefix(b"##")?;
    match rest.first() {
        None => Some(rest),
        Some(b' ' | b'\t') => {
            let t = trim_ascii_ws(rest);
            // `## Title ##`: the closing run goes only when a space precedes
            // it, so `## C#` keeps its `#`.
            let body = t.iter().rposition(|&b| b != b'#').map_or(&t[..0], |i| &t[..=i]);
            if body.len() == t.len() {
                Some(t)
            } else if body.is_empty() || matches!(body.last(), Some(b' ' | b'\t')) {
                Some(trim_ascii_ws(body))
            } else {
                Some(t)
            }
        }
        Some(_) => None,
    }
}

/// An opening code fence: (fence character, run length).
fn fence_open(line: &[u8]) -> Option<(u8, usize)> {
    let rest = strip_indent(line)?;
    let ch = *rest.first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let n = rest.iter().take_while(|&&b| b == ch).count();
    // A backtick info string may not contain a backtick (that is inline
    // code, not a fence).
    if n < 3 || (ch == b'`' && rest[n..].contains(&b'`')) {
        return None;
    }
    Some((ch, n))
}

fn fence_closes(line: &[u8], ch: u8, len: usize) -> bool {
    let Some(rest) = strip_indent(line) else { return false };
    let n = rest.iter().take_while(|&&b| b == ch).count();
    n >= len && trim_ascii_ws(&rest[n..]).is_empty()
}

/// `<!-- notes-priority: VALUE -->`, spacing and case free.
fn parse_marker(line: &[u8]) -> Marker {
    let text = String::from_utf8_lossy(trim_ascii_ws(line));
    let Some(inner) = text.strip_prefix("<!--").and_then(|t| t.strip_suffix("-->")) else {
        return Marker::None;
    };
    let inner = inner.trim();
    let key = "notes-priority";
    if inner.len() < key.len() || !inner.is_char_boundary(key.len()) || !inner[..key.len()].eq_ignore_ascii_case(key) {
        return Marker::None;
    }
    let Some(value) = inner[key.len()..].trim_start().strip_prefix(':') else {
        return Marker::None;
    };
    match value.trim().to_ascii_lowercase().as_str() {
        "pinned" => Marker::Pinned,
        "fresh" => Marker::Fresh,
        other => Marker::Unknown(other.to_string()),
    }
}

/// The first valid `YYYY-MM-DD` in `title` that is not part of a longer
/// run of digits.
pub fn find_date(title: &str) -> Option<Date> {
    let b = title.as_bytes();
    let digits = |r: Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let num = |r: Range<usize>| b[r].iter().fold(0u16, |n, &d| n * 10 + u16::from(d - b'0'));
    (0..b.len().saturating_sub(9)).find_map(|i| {
        let shape =
            digits(i..i + 4) && b[i + 4] == b'-' && digits(i + 5..i + 7) && b[i + 7] == b'-' && digits(i + 8..i + 10);
        let bounded = (i == 0 || !b[i - 1].is_ascii_digit()) && !matches!(b.get(i + 10), Some(c) if c.is_ascii_digit());
        if !shape || !bounded {
            return None;
        }
        let (year, month, day) = (num(i..i + 4), num(i + 5..i + 7), num(i + 8..i + 10));
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        let days = match month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return None,
        };
        (1..=days).contains(&day).then_some(Date { year, month: month as u8, day: day as u8 })
    })
}

/// Splits `input` into a preamble and `## ` sections. Never fails: any
/// bytes are Markdown to it.
pub fn outline(input: &[u8]) -> Outline {
    let from = if input.starts_with(UTF8_BOM) { UTF8_BOM.len() } else { 0 };
    let mut sections: Vec<Section> = Vec::new();
    let mut fence: Option<(u8, usize)> = None;
    // The previous line when it could be a marker: outside a fence, not a
    // fence line, not a heading.
    let mut prev: Option<Range<usize>> = None;
    for (no, (start, text_end, _)) in lines(input, from).enumerate() {
        let text = &input[start..text_end];
        if let Some((ch, len)) = fence {
            if fence_closes(text, ch, len) {
                fence = None;
            }
            prev = None;
            continue;
        }
        if let Some(f) = fence_open(text) {
            fence = Some(f);
            prev = None;
            continue;
        }
        let Some(raw_title) = heading_title(text) else {
            prev = Some(start..text_end);
            continue;
        };
        let (marker, span_start) = match prev.take() {
            Some(p) => match parse_marker(&input[p.clone()]) {
                Marker::None => (Marker::None, start),
                m => (m, p.start),
            },
            None => (Marker::None, start),
        };
        if let Some(last) = sections.last_mut() {
            last.span.end = span_start;
        }
        let title = String::from_utf8_lossy(raw_title).into_owned();
        let date = find_date(&title);
        sections.push(Section { span: span_start..input.len(), line: no + 1, title, marker, date });
    }
    let preamble_end = sections.first().map_or(input.len(), |s| s.span.start);
    Outline { preamble: 0..preamble_end, sections }
}

// ---------------------------------------------------------------------------
// Packing

/// What to pack into, and what to keep regardless.
#[derive(Debug, Clone)]
pub struct PackOptions {
    pub budget: usize,
    pub unit: Unit,
    /// Title substrings (case-insensitive) of sections to keep as pinned.
    pub keep: Vec<String>,
}

/// Why a section was placed where it was in the claiming order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Pinned by its marker or `--keep`: kept whatever the budget.
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
    pub kept: bool,
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

    pub fn dropped(&self) -> impl Iterator<Item = &SectionOutcome> {
        self.sections.iter().filter(|s| !s.kept)
    }

    /// The stderr lines for `file` (already made safe to print): the drop
    /// line always, first; then an overrun or no-heading note, warnings.
    pub fn stderr_lines(&self, file: &str) -> Vec<String> {
        let unit = self.unit.name();
        let names: Vec<String> = self.dropped().map(display_title).collect();
        let mut line =
            format!("[outbox pack] {file}: {}/{} {unit}, dropped {} sections", self.used, self.budget, names.len());
        if !names.is_empty() {
            line.push_str(": ");
            line.push_str(&names.join(", "));
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
        out.extend(self.warnings.iter().map(|w| format!("[outbox pack] {file}: {w}")));
        out
    }
}

fn display_title(s: &SectionOutcome) -> String {
    if s.title.is_empty() {
        format!("(untitled, line {})", s.line)
    } else {
        crate::text::sanitize::display_str(&s.title).text
    }
}

/// The packed bytes and how they were chosen.
#[derive(Debug, Clone)]
pub struct Packed {
    pub output: Vec<u8>,
    pub report: PackReport,
}

/// Packs one file's bytes into `opts.budget`. Pure: no I/O.
pub fn pack(input: &[u8], opts: &PackOptions) -> Packed {
    let outline = outline(input);
    let unit = opts.unit;
    let keep: Vec<String> = opts.keep.iter().map(|k| k.to_lowercase()).collect();
    let mut keep_matched = vec![false; keep.len()];
    let mut warnings = Vec::new();

    if outline.sections.is_empty() {
        // Nothing to choose between: the whole file fits or it does not.
        let size = unit.measure(input);
        let kept = size <= opts.budget;
        let whole = SectionOutcome {
            title: "(whole file)".into(),
            line: 1,
            span: 0..input.len(),
            size,
            class: Class::Normal,
            kept,
        };
        let report = PackReport {
            unit,
            budget: opts.budget,
            used: if kept { size } else { 0 },
            preamble: 0,
            sections: vec![whole],
            no_headings: true,
            keep_matched,
            warnings,
        };
        return Packed { output: if kept { input.to_vec() } else { Vec::new() }, report };
    }

    let mut outcomes: Vec<SectionOutcome> = Vec::with_capacity(outline.sections.len());
    for s in &outline.sections {
        let lower = s.title.to_lowercase();
        let mut by_keep = false;
        for (k, hit) in keep.iter().zip(keep_matched.iter_mut()) {
            if lower.contains(k.as_str()) {
                *hit = true;
                by_keep = true;
            }
        }
        let class = match &s.marker {
            _ if by_keep => Class::Pinned,
            Marker::Pinned => Class::Pinned,
            Marker::Fresh => Class::Fresh,
            Marker::None => Class::Normal,
            Marker::Unknown(v) => {
                warnings.push(format!(
                    "line {}: unknown `notes-priority: {v}` before section {:?}, treated as normal; use pinned or fresh",
                    s.line.saturating_sub(1),
                    crate::text::sanitize::display_str(&s.title).text
                ));
                Class::Normal
            }
        };
        let size = unit.measure(&input[s.span.clone()]);
        outcomes.push(SectionOutcome {
            title: s.title.clone(),
            line: s.line,
            span: s.span.clone(),
            size,
            class,
            kept: false,
        });
    }

    // Claiming order: pinned (file order), fresh (newest first: dated before
    // undated, then later in the file first), the rest (file order).
    let mut fresh: Vec<usize> = (0..outcomes.len()).filter(|&i| outcomes[i].class == Class::Fresh).collect();
    fresh.sort_by(|&a, &b| outline.sections[b].date.cmp(&outline.sections[a].date).then(b.cmp(&a)));
    let pinned = (0..outcomes.len()).filter(|&i| outcomes[i].class == Class::Pinned);
    let normal = (0..outcomes.len()).filter(|&i| outcomes[i].class == Class::Normal);
    let order: Vec<usize> = pinned.chain(fresh).chain(normal).collect();

    let preamble = unit.measure(&input[outline.preamble.clone()]);
    let mut used = preamble;
    for i in order {
        let o = &mut outcomes[i];
        if o.class == Class::Pinned || used.checked_add(o.size).is_some_and(|u| u <= opts.budget) {
            o.kept = true;
            used = used.saturating_add(o.size);
        }
    }

    let mut output = Vec::with_capacity(input.len());
    output.extend_from_slice(&input[outline.preamble]);
    for o in outcomes.iter().filter(|o| o.kept) {
        output.extend_from_slice(&input[o.span.clone()]);
    }
    let report = PackReport {
        unit,
        budget: opts.budget,
        used,
        preamble,
        sections: outcomes,
        no_headings: false,
        keep_matched,
        warnings,
    };
    Packed { output, report }
}

// ---------------------------------------------------------------------------
// Reading files safely

/// Why a notes file could not be used. The messages say what to do.
#[derive(Debug)]
pub enum NotesError {
    Missing,
    Empty,
    /// Not a regular file: what it is instead ("a directory", "a FIFO", ...).
    NotRegular(&'static str),
    TooLarge(u64),
    Io(io::Error),
}

impl std::fmt::Display for NotesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotesError::Missing => {
                write!(f, "no such file; check the path (relative paths start at the current directory)")
            }
            NotesError::Empty => write!(f, "the file is empty; write the notes or leave the file out"),
            NotesError::NotRegular(kind) => write!(f, "{kind}, not a regular file; pass a Markdown notes file"),
            NotesError::TooLarge(n) => {
                write!(f, "{n} bytes, more than the {MAX_NOTES_BYTES} bytes a notes file may have; split it")
            }
            NotesError::Io(e) => write!(f, "cannot be read ({e}); check its permissions"),
        }
    }
}

fn kind_of(ft: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a FIFO";
        }
        if ft.is_socket() {
            return "a socket";
        }
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
    }
    if ft.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// Reads a whole notes file, refusing anything but a non-empty regular file.
///
/// The type is checked with `stat` before opening, because opening a FIFO
/// for reading blocks until a writer appears and a device like /dev/zero
/// never ends. The open is non-blocking and the type is checked again on the
/// open handle, so a file swapped for a FIFO in between cannot hang us.
pub fn read_notes(path: &Path) -> Result<Vec<u8>, NotesError> {
    let io_err =
        |e: io::Error| if e.kind() == io::ErrorKind::NotFound { NotesError::Missing } else { NotesError::Io(e) };
    let meta = std::fs::metadata(path).map_err(io_err)?;
    if !meta.is_file() {
        return Err(NotesError::NotRegular(kind_of(meta.file_type())));
    }
    let mut opts = OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let file: File = opts.open(path).map_err(io_err)?;
    let meta = file.metadata().map_err(NotesError::Io)?;
    if !meta.is_file() {
        return Err(NotesError::NotRegular(kind_of(meta.file_type())));
    }
    if meta.len() > MAX_NOTES_BYTES {
        return Err(NotesError::TooLarge(meta.len()));
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    // The size may lie (procfs says 0, a file may grow): cap the read too.
    file.take(MAX_NOTES_BYTES + 1).read_to_end(&mut buf).map_err(NotesError::Io)?;
    if buf.len() as u64 > MAX_NOTES_BYTES {
        return Err(NotesError::TooLarge(buf.len() as u64));
    }
    if buf.is_empty() {
        return Err(NotesError::Empty);
    }
    Ok(buf)
}

/// A path as it may be printed: lossy, control characters escaped.
pub fn display_path(path: &Path) -> String {
    crate::text::sanitize::display_str(&path.to_string_lossy()).text
}

/// Best-effort line on stderr. A report that cannot be written must not
/// turn into a panic (as `eprintln!` would) or hide the packed output.
pub(crate) fn note(line: &str) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

// ---------------------------------------------------------------------------
// The command

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
        let packed = pack(&bytes, &opts);
        for (all, hit) in keep_matched.iter_mut().zip(&packed.report.keep_matched) {
            *all |= *hit;
        }
        packed_total = packed_total.saturating_add(packed.report.used);
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
            out.write_all(&packed.output).map_err(out_err)?;
            if args.files.len() > 1 && !packed.output.is_empty() && !packed.output.ends_with(b"\n") {
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
        for line in packed.report.stderr_lines(&shown) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn titles(o: &Outline) -> Vec<&str> {
        o.sections.iter().map(|s| s.title.as_str()).collect()
    }

    fn opts(budget: usize) -> PackOptions {
        PackOptions { budget, unit: Unit::Bytes, keep: vec![] }
    }

    fn kept_titles(p: &Packed) -> Vec<&str> {
        p.report.sections.iter().filter(|s| s.kept).map(|s| s.title.as_str()).collect()
    }

    fn dropped_titles(p: &Packed) -> Vec<&str> {
        p.report.dropped().map(|s| s.title.as_str()).collect()
    }

    #[test]
    fn outline_splits_preamble_and_sections() {
        let doc = b"# Notes\nintro\n\n## One\na\n### Sub stays\nb\n## Two ##\nc\n";
        let o = outline(doc);
        assert_eq!(&doc[o.preamble.clone()], b"# Notes\nintro\n\n");
        assert_eq!(titles(&o), ["One", "Two"]);
        assert_eq!(&doc[o.sections[0].span.clone()], b"## One\na\n### Sub stays\nb\n");
        assert_eq!(&doc[o.sections[1].span.clone()], b"## Two ##\nc\n");
        assert_eq!(o.sections[0].line, 4);
        assert_eq!(o.sections[1].line, 8);
    }

    #[test]
    fn heading_shapes() {
        assert_eq!(heading_title(b"## A"), Some(&b"A"[..]));
        assert_eq!(heading_title(b"   ##\tA  "), Some(&b"A"[..]));
        assert_eq!(heading_title(b"##"), Some(&b""[..]));
        assert_eq!(heading_title(b"## C#"), Some(&b"C#"[..]));
        assert_eq!(heading_title(b"## Foo ###"), Some(&b"Foo"[..]));
        assert_eq!(heading_title(b"## ##"), Some(&b""[..]));
        assert_eq!(heading_title(b"    ## indented code"), None);
        assert_eq!(heading_title(b"### deeper"), None);
        assert_eq!(heading_title(b"##nospace"), None);
        assert_eq!(heading_title(b"# top"), None);
        assert_eq!(heading_title(b"> ## quoted"), None);
    }

    #[test]
    fn fenced_headings_are_not_headings() {
        let doc = b"## Real\n```sh\n## not a heading\n```\n~~~~\n## nor this\n~~~\n## still fenced\n~~~~\n## After\n";
        let o = outline(doc);
        assert_eq!(titles(&o), ["Real", "After"]);
        // A shorter or different closing fence does not close it.
        let doc = b"## A\n````\n```\n## in\n~~~~\n## in too\n````\n## B\n";
        assert_eq!(titles(&outline(doc)), ["A", "B"]);
        // Backticks in a backtick info string: inline code, not a fence.
        let doc = b"## A\n``` x ` y\n## B\n";
        assert_eq!(titles(&outline(doc)), ["A", "B"]);
        // An unclosed fence runs to the end, as in CommonMark.
        let doc = b"## A\n```\n## hidden\n";
        assert_eq!(titles(&outline(doc)), ["A"]);
    }

    #[test]
    fn crlf_and_bom_and_no_final_newline() {
        let doc = b"\xEF\xBB\xBF## First\r\nbody\r\n<!-- notes-priority: pinned -->\r\n## Second\r\nend";
        let o = outline(doc);
        assert_eq!(o.preamble, 0..3);
        assert_eq!(titles(&o), ["First", "Second"]);
        assert_eq!(o.sections[1].marker, Marker::Pinned);
        assert_eq!(&doc[o.sections[0].span.clone()], b"## First\r\nbody\r\n");
        assert_eq!(&doc[o.sections[1].span.clone()], b"<!-- notes-priority: pinned -->\r\n## Second\r\nend");
    }

    #[test]
    fn markers_travel_with_their_section() {
        let doc = b"pre\n<!-- notes-priority: fresh -->\n## A\n<!--notes-priority:PINNED-->\n## B\n<!-- notes-priority: hot -->\n## C\n<!-- other -->\n## D\n";
        let o = outline(doc);
        assert_eq!(&doc[o.preamble.clone()], b"pre\n");
        let markers: Vec<&Marker> = o.sections.iter().map(|s| &s.marker).collect();
        assert_eq!(markers, [&Marker::Fresh, &Marker::Pinned, &Marker::Unknown("hot".into()), &Marker::None]);
        assert_eq!(&doc[o.sections[0].span.clone()], b"<!-- notes-priority: fresh -->\n## A\n");
        // An ordinary comment stays in the section before it.
        assert_eq!(&doc[o.sections[2].span.clone()], b"<!-- notes-priority: hot -->\n## C\n<!-- other -->\n");
        // A marker separated by a blank line does not count.
        let o = outline(b"<!-- notes-priority: pinned -->\n\n## A\n");
        assert_eq!(o.sections[0].marker, Marker::None);
        assert_eq!(o.preamble, 0..33);
    }

    #[test]
    fn dates_in_titles() {
        let d = |y, m, day| Some(Date { year: y, month: m, day });
        assert_eq!(find_date("Update 2024-05-01: deploy"), d(2024, 5, 1));
        assert_eq!(find_date("2024-02-29"), d(2024, 2, 29));
        assert_eq!(find_date("2023-02-29 then 2023-03-01"), d(2023, 3, 1));
        assert_eq!(find_date("12024-05-01"), None);
        assert_eq!(find_date("2024-13-01"), None);
        assert_eq!(find_date("2024-5-1"), None);
        assert_eq!(find_date("日付 2024-05-01"), d(2024, 5, 1));
        assert_eq!(find_date(""), None);
    }

    #[test]
    fn non_utf8_and_empty_input() {
        let o = outline(b"");
        assert_eq!(o.preamble, 0..0);
        assert!(o.sections.is_empty());
        let doc = b"\xff\xfe\n## T\xffitle\n\x00\x80\n";
        let o = outline(doc);
        assert_eq!(titles(&o), ["T\u{fffd}itle"]);
        let p = pack(doc, &opts(5));
        assert_eq!(p.output, b"\xff\xfe\n");
        assert_eq!(dropped_titles(&p), ["T\u{fffd}itle"]);
    }

    #[test]
    fn pack_priority_pinned_then_fresh_newest_then_file_order() {
        let doc = "pre\n\
                   ## Old 1\naaaaaaaaaa\n\
                   <!-- notes-priority: fresh -->\n## Update 2024-01-02\nbbbbbbbbbb\n\
                   <!-- notes-priority: pinned -->\n## Rules\ncccccccccc\n\
                   <!-- notes-priority: fresh -->\n## Update 2024-03-04\ndddddddddd\n\
                   ## Old 2\neeeeeeeeee\n";
        let size = |t: &str| {
            let o = outline(doc.as_bytes());
            let s = o.sections.iter().find(|s| s.title == t).unwrap();
            s.span.len()
        };
        // Room for preamble, pinned and exactly one fresh: the newest wins
        // although it comes later in the file.
        let budget = 4 + size("Rules") + size("Update 2024-03-04");
        let p = pack(doc.as_bytes(), &opts(budget));
        assert_eq!(kept_titles(&p), ["Rules", "Update 2024-03-04"]);
        assert_eq!(dropped_titles(&p), ["Old 1", "Update 2024-01-02", "Old 2"]);
        assert_eq!(p.report.used, budget);
        // With room for one more ordinary section, the first in file order.
        let p = pack(doc.as_bytes(), &opts(budget + size("Update 2024-01-02") + size("Old 1")));
        assert_eq!(kept_titles(&p), ["Old 1", "Update 2024-01-02", "Rules", "Update 2024-03-04"]);
        assert_eq!(String::from_utf8(p.output).unwrap(), doc.replace("## Old 2\neeeeeeeeee\n", ""));
    }

    #[test]
    fn fresh_without_dates_later_is_newer_and_dated_go_first() {
        let doc = b"<!-- notes-priority: fresh -->\n## a\nxx\n<!-- notes-priority: fresh -->\n## b\nxx\n<!-- notes-priority: fresh -->\n## c 2020-01-01\nxx\n";
        let sizes: Vec<usize> = outline(doc).sections.iter().map(|s| s.span.len()).collect();
        let p = pack(doc, &opts(sizes[2]));
        assert_eq!(kept_titles(&p), ["c 2020-01-01"]);
        let p = pack(doc, &opts(sizes[2] + sizes[1]));
        assert_eq!(kept_titles(&p), ["b", "c 2020-01-01"]);
        assert_eq!(dropped_titles(&p), ["a"]);
    }

    #[test]
    fn too_big_section_is_skipped_and_smaller_later_one_still_fits() {
        let doc = b"## big\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n## small\ny\n";
        let p = pack(doc, &opts(20));
        assert_eq!(kept_titles(&p), ["small"]);
        assert_eq!(p.output, b"## small\ny\n");
    }

    #[test]
    fn pinned_and_keep_survive_any_budget_and_report_overrun() {
        let doc =
            b"preamble\n<!-- notes-priority: pinned -->\n## Rules\nnever do X\n## Rollback plan\nrevert\n## Other\nz\n";
        let mut o = opts(3);
        o.keep = vec!["ROLLBACK".into(), "nothing".into()];
        let p = pack(doc, &o);
        assert_eq!(kept_titles(&p), ["Rules", "Rollback plan"]);
        assert_eq!(dropped_titles(&p), ["Other"]);
        assert_eq!(p.report.keep_matched, [true, false]);
        assert_eq!(p.report.used, doc.len() - b"## Other\nz\n".len());
        assert_eq!(p.report.overrun(), p.report.used - 3);
        let lines = p.report.stderr_lines("n.md");
        assert_eq!(lines[0], format!("[outbox pack] n.md: {}/3 bytes, dropped 1 sections: Other", p.report.used));
        assert!(lines[1].contains("over budget by"), "{lines:?}");
        assert!(lines[1].contains("2 pinned/--keep section(s)"), "{lines:?}");
    }

    #[test]
    fn no_heading_file_is_one_unit() {
        let doc = b"just text\n```\n## fenced\n```\n";
        let p = pack(doc, &opts(100));
        assert!(p.report.no_headings);
        assert_eq!(p.output, doc);
        assert_eq!(
            p.report.stderr_lines("f")[0],
            format!("[outbox pack] f: {}/100 bytes, dropped 0 sections", doc.len())
        );
        let p = pack(doc, &opts(5));
        assert!(p.output.is_empty());
        let lines = p.report.stderr_lines("f");
        assert_eq!(lines[0], "[outbox pack] f: 0/5 bytes, dropped 1 sections: (whole file)");
        assert!(lines[1].contains("cannot be packed by section"), "{lines:?}");
        assert!(lines[1].contains("dropped whole"), "{lines:?}");
    }

    #[test]
    fn chars_unit_counts_characters() {
        // Preamble 4 chars; "## 一\n日本語の本文\n" 12 chars (30 bytes);
        // "## 二\n日本語\n" 9 chars (19 bytes).
        let doc = "前書き\n## 一\n日本語の本文\n## 二\n日本語\n".as_bytes();
        let chars = |budget| PackOptions { budget, unit: Unit::Chars, keep: vec![] };
        let p = pack(doc, &chars(13));
        assert_eq!(p.report.preamble, 4);
        assert_eq!(kept_titles(&p), ["二"]);
        assert_eq!(p.report.stderr_lines("j.md")[0], "[outbox pack] j.md: 13/13 chars, dropped 1 sections: 一");
        assert_eq!(Unit::Chars.measure(&p.output), 13);
        // In bytes the same budget holds nothing but the 10-byte preamble.
        let p = pack(doc, &opts(13));
        assert_eq!(kept_titles(&p), Vec::<&str>::new());
        assert_eq!(p.report.used, 10);
        // A budget smaller than the preamble: kept anyway, overrun reported.
        let p = pack(doc, &chars(3));
        assert_eq!(p.report.overrun(), 1);
        assert_eq!(p.output, "前書き\n".as_bytes());
    }

    #[test]
    fn unknown_marker_is_warned_about() {
        let p = pack(b"<!-- notes-priority: pined -->\n## A\nx\n", &opts(100));
        let lines = p.report.stderr_lines("n.md");
        assert_eq!(lines.len(), 2);
        assert!(lines[1].contains("unknown `notes-priority: pined`"), "{lines:?}");
    }

    #[test]
    fn titles_are_made_safe_for_the_terminal() {
        let p = pack(b"## bad\x1b[31m red\n## \n", &opts(0));
        assert_eq!(
            p.report.stderr_lines("n")[0],
            "[outbox pack] n: 0/0 bytes, dropped 2 sections: bad red, (untitled, line 2)"
        );
    }

    #[test]
    fn read_notes_refuses_what_is_not_a_notes_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(p("ok.md"), b"## A\n").unwrap();
        std::fs::write(p("empty.md"), b"").unwrap();
        assert_eq!(read_notes(&p("ok.md")).unwrap(), b"## A\n");
        assert!(matches!(read_notes(&p("empty.md")), Err(NotesError::Empty)));
        assert!(matches!(read_notes(&p("nope.md")), Err(NotesError::Missing)));
        assert!(matches!(read_notes(dir.path()), Err(NotesError::NotRegular("a directory"))));
        assert!(matches!(read_notes(Path::new("/dev/zero")), Err(NotesError::NotRegular("a character device"))));
        let fifo = p("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo has no other preconditions.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(read_notes(&fifo), Err(NotesError::NotRegular("a FIFO"))));
        assert!(NotesError::NotRegular("a FIFO").to_string().contains("pass a Markdown notes file"));
    }

    // --- property test ---------------------------------------------------

    #[derive(Debug, Clone)]
    struct GenSection {
        title: String,
        marker: Option<&'static str>,
        date: Option<(u16, u8, u8)>,
        body: Vec<String>,
        fenced_heading: bool,
    }

    fn gen_section() -> impl Strategy<Value = GenSection> {
        (
            "[A-Za-z][A-Za-z ]{0,12}|[一-龯]{1,4}",
            prop_oneof![4 => Just(None), 1 => Just(Some("pinned")), 2 => Just(Some("fresh"))],
            proptest::option::of((2000u16..2030, 1u8..13, 1u8..29)),
            proptest::collection::vec("[a-z 日本語é]{0,30}", 0..4),
            any::<bool>(),
        )
            .prop_map(|(title, marker, date, body, fenced_heading)| GenSection {
                title: title.trim().to_string(),
                marker,
                date,
                body,
                fenced_heading,
            })
    }

    fn render(pre: &[String], secs: &[GenSection], eol: &str) -> (String, Vec<String>) {
        let mut doc = String::new();
        for l in pre {
            doc.push_str(l);
            doc.push_str(eol);
        }
        let mut titles = Vec::new();
        for s in secs {
            if let Some(m) = s.marker {
                doc.push_str(&format!("<!-- notes-priority: {m} -->{eol}"));
            }
            let title = match s.date {
                Some((y, m, d)) => format!("{} {y:04}-{m:02}-{d:02}", s.title),
                None => s.title.clone(),
            };
            doc.push_str(&format!("## {title}{eol}"));
            titles.push(title);
            for l in &s.body {
                doc.push_str(l);
                doc.push_str(eol);
            }
            if s.fenced_heading {
                doc.push_str(&format!("```{eol}## fenced {eol}```{eol}"));
            }
        }
        (doc, titles)
    }

    /// Fragments that steer arbitrary bytes toward the parser's edge cases.
    fn fragment() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            Just(b"## ".to_vec()),
            Just(b"##".to_vec()),
            Just(b"```".to_vec()),
            Just(b"~~~~".to_vec()),
            Just(b"\n".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(b"\r".to_vec()),
            Just(b"   ".to_vec()),
            Just(b"<!-- notes-priority: pinned -->".to_vec()),
            Just(b"<!-- notes-priority: fresh -->".to_vec()),
            Just(b"2024-02-29".to_vec()),
            Just(UTF8_BOM.to_vec()),
            proptest::collection::vec(any::<u8>(), 0..6),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        #[test]
        fn any_bytes_pack_without_panic_and_spans_tile_the_input(
            parts in proptest::collection::vec(fragment(), 0..40),
            budget in 0usize..200,
            chars in any::<bool>(),
        ) {
            let input: Vec<u8> = parts.concat();
            let unit = if chars { Unit::Chars } else { Unit::Bytes };
            let p = pack(&input, &PackOptions { budget, unit, keep: vec!["a".into()] });
            let o = outline(&input);
            let mut at = o.preamble.end;
            for s in &o.sections {
                prop_assert_eq!(s.span.start, at);
                prop_assert!(s.span.end > s.span.start);
                at = s.span.end;
            }
            prop_assert_eq!(at, input.len());
            prop_assert_eq!(unit.measure(&p.output), p.report.used);
            let mut expect = if p.report.no_headings { Vec::new() } else { input[o.preamble.clone()].to_vec() };
            for s in p.report.sections.iter().filter(|s| s.kept) {
                expect.extend_from_slice(&input[s.span.clone()]);
            }
            prop_assert_eq!(p.output, expect);
            let _ = p.report.stderr_lines("f");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        #[test]
        fn packing_keeps_whole_sections_in_order_within_budget(
            pre in proptest::collection::vec("[a-z #]{0,20}", 0..3),
            secs in proptest::collection::vec(gen_section(), 0..12),
            budget in 0usize..600,
            crlf in any::<bool>(),
            chars in any::<bool>(),
            keep in proptest::option::of("[a-z]{1,2}"),
        ) {
            // A preamble line must not itself be a heading or a fence.
            let pre: Vec<String> = pre.into_iter().filter(|l| !l.trim_start().starts_with('#')).collect();
            let eol = if crlf { "\r\n" } else { "\n" };
            let (doc, titles) = render(&pre, &secs, eol);
            let input = doc.as_bytes();
            let unit = if chars { Unit::Chars } else { Unit::Bytes };
            let keep: Vec<String> = keep.into_iter().collect();
            let p = pack(input, &PackOptions { budget, unit, keep: keep.clone() });
            let r = &p.report;

            if secs.is_empty() {
                prop_assert!(r.no_headings);
                prop_assert_eq!(&p.output[..], if unit.measure(input) <= budget { input } else { &b""[..] });
                return Ok(());
            }
            // The parser found exactly the generated sections, fenced ones not.
            let found: Vec<&str> = r.sections.iter().map(|s| s.title.as_str()).collect();
            prop_assert_eq!(&found, &titles.iter().map(String::as_str).collect::<Vec<_>>());

            // Output = preamble + kept sections, whole, in file order.
            let o = outline(input);
            let mut expect = input[o.preamble.clone()].to_vec();
            for s in r.sections.iter().filter(|s| s.kept) {
                expect.extend_from_slice(&input[s.span.clone()]);
            }
            prop_assert_eq!(&p.output, &expect);
            // Spans tile the input: nothing lost between sections.
            let mut at = o.preamble.end;
            for s in &r.sections {
                prop_assert_eq!(s.span.start, at);
                at = s.span.end;
            }
            prop_assert_eq!(at, input.len());

            // Every section is kept or named in the drop line.
            let line = &r.stderr_lines("f")[0];
            let dropped = r.dropped().count();
            let dropped_word = format!("dropped {dropped} sections");
            prop_assert!(line.contains(&dropped_word), "{}", line);
            for s in r.dropped() {
                prop_assert!(line.contains(s.title.as_str()), "{} not in {}", s.title, line);
            }

            // Budget: kept unless only pinned material and the preamble overrun.
            prop_assert_eq!(unit.measure(&p.output), r.used);
            let pinned_size: usize = r.sections.iter().filter(|s| s.class == Class::Pinned).map(|s| s.size).sum();
            if r.used > budget {
                prop_assert_eq!(r.used, r.preamble + pinned_size);
            }
            for (g, s) in secs.iter().zip(&r.sections) {
                let by_keep = keep.iter().any(|k| s.title.to_lowercase().contains(k.as_str()));
                if g.marker == Some("pinned") || by_keep {
                    prop_assert!(s.kept && s.class == Class::Pinned);
                }
            }
            // Nothing dropped that would still have fitted.
            for s in r.dropped() {
                prop_assert!(r.used + s.size > budget);
            }
        }
    }
}
