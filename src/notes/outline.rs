//! The Markdown outline the notes commands share: a file split into a
//! preamble and `## ` sections, with each section's title, priority marker
//! and date.
//!
//! Parsing rules: a section starts at a line whose text (after at most three
//! spaces) is `##` followed by a space, a tab or the end of the line; `###`
//! and deeper headings stay inside their section. Lines inside fenced code
//! blocks (three or more backticks or tildes, closed by a fence of the same
//! character at least as long; an unclosed fence runs to the end of the file,
//! as in CommonMark) are never headings, and neither are lines inside an HTML
//! comment (from a `<!--` outside an inline code span, anywhere on its line,
//! to the next `-->`; see `comment_open_after`), so a section never splits a
//! comment and a packed file never holds an unclosed `<!--`. Inside a
//! section, [`subsections`] splits by the next heading level used below it,
//! with the same rules. A priority marker is an HTML comment
//! on the line directly before the heading: `<!-- notes-priority: pinned -->`
//! or `<!-- notes-priority: fresh -->`; the marker line belongs to the section
//! it marks, so it travels (or is dropped) with it. `outbox pack` and
//! `outbox check` both use this parser, so they agree on what a heading is.
//!
//! Invariants: never fails (any bytes are Markdown to it); the preamble and
//! the sections tile the input, in file order, every byte in exactly one.

use std::ops::Range;

pub(crate) const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

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

/// One section (`## ` at the top, deeper inside [`subsections`]): its
/// marker line (if any), heading and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Bytes of the section in the input, from its marker line (or heading)
    /// up to the next section or the end of the input.
    pub span: Range<usize>,
    /// 1-based line number of the heading.
    pub line: usize,
    /// The heading's level: 2 for `## `, 3 for `### `, ...
    pub level: u8,
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

/// The level (1 to 6) and title of an ATX heading line (without its line
/// terminator), or `None` when `line` is not one.
pub fn atx_heading(line: &[u8]) -> Option<(u8, &[u8])> {
    let line = strip_indent(line)?;
    let level = line.iter().take_while(|&&b| b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &line[level..];
    let title = match rest.first() {
        None => rest,
        Some(b' ' | b'\t') => {
            let t = trim_ascii_ws(rest);
            // `## Title ##`: the closing run goes only when a space precedes
            // it, so `## C#` keeps its `#`.
            let body = t.iter().rposition(|&b| b != b'#').map_or(&t[..0], |i| &t[..=i]);
            if body.len() == t.len() {
                t
            } else if body.is_empty() || matches!(body.last(), Some(b' ' | b'\t')) {
                trim_ascii_ws(body)
            } else {
                t
            }
        }
        Some(_) => return None,
    };
    Some((level as u8, title))
}

/// The title of a level-2 ATX heading line (without its line terminator),
/// or `None` when `line` is not one.
pub fn heading_title(line: &[u8]) -> Option<&[u8]> {
    atx_heading(line).and_then(|(level, title)| (level == 2).then_some(title))
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

/// Whether an HTML comment is still open after `line`, given whether one
/// was open before it. A comment opens at `<!--` outside an inline code
/// span (a backtick run closed by a run of the same length on the line)
/// and closes at the next `-->`; `<!-->` and `<!--->` are whole comments,
/// as in CommonMark. A `<!--` opened anywhere on a line counts, not only
/// at its start: a heading inside it must not split the comment between
/// two sections, or packing could print an unclosed `<!--`.
fn comment_open_after(line: &[u8], mut open: bool) -> bool {
    let mut i = 0;
    while i < line.len() {
        if open {
            match memchr::memmem::find(&line[i..], b"-->") {
                Some(k) => {
                    i += k + 3;
                    open = false;
                }
                None => return true,
            }
        } else if line[i] == b'`' {
            let n = line[i..].iter().take_while(|&&b| b == b'`').count();
            i += n;
            // Skip to the end of the code span, when it closes on this line.
            let mut j = i;
            while j < line.len() {
                let m = line[j..].iter().take_while(|&&b| b == b'`').count();
                if m == n {
                    i = j + m;
                    break;
                }
                j += m.max(1);
            }
        } else if line[i..].starts_with(b"<!--") {
            i += 4;
            if line[i..].starts_with(b">") {
                i += 1;
            } else if line[i..].starts_with(b"->") {
                i += 2;
            } else {
                open = true;
            }
        } else {
            i += 1;
        }
    }
    open
}

/// `<!-- notes-priority: VALUE -->`, spacing and case free.
pub(crate) fn parse_marker(line: &[u8]) -> Marker {
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

/// A heading found by [`scan`], with where its section starts.
pub(crate) struct Heading {
    /// The marker line's start when there is one, else the heading's.
    pub start: usize,
    /// 1-based line number of the heading.
    pub line: usize,
    pub level: u8,
    /// The title's bytes in the input (decoded only when it is needed: a
    /// file of a million headings must not become a million strings).
    pub title: Range<usize>,
    pub marker: Marker,
}

/// Calls `visit` with each ATX heading of `input[range]` that is neither
/// inside a fenced code block nor inside an HTML comment, in order.
/// `first_line` is the 1-based number of the line at `range.start`. The
/// range must start outside any fence or comment (a section always does:
/// sections start only at headings found here).
pub(crate) fn scan(input: &[u8], range: Range<usize>, first_line: usize, mut visit: impl FnMut(Heading)) {
    let mut fence: Option<(u8, usize)> = None;
    let mut comment = false;
    // The previous line when it could be a marker: outside a fence and a
    // comment, not a fence line, not a heading.
    let mut prev: Option<Range<usize>> = None;
    let body = &input[..range.end];
    for (no, (start, text_end, _)) in lines(body, range.start).enumerate() {
        let text = &input[start..text_end];
        if let Some((ch, len)) = fence {
            if fence_closes(text, ch, len) {
                fence = None;
            }
            prev = None;
            continue;
        }
        if comment {
            comment = comment_open_after(text, true);
            prev = None;
            continue;
        }
        if let Some(f) = fence_open(text) {
            fence = Some(f);
            prev = None;
            continue;
        }
        comment = comment_open_after(text, false);
        let Some((level, raw_title)) = atx_heading(text) else {
            prev = (!comment).then_some(start..text_end);
            continue;
        };
        let (marker, span_start) = match prev.take() {
            Some(p) => match parse_marker(&input[p.clone()]) {
                Marker::None => (Marker::None, start),
                m => (m, p.start),
            },
            None => (Marker::None, start),
        };
        // The title is a subslice of `text`; its offset is where it starts.
        let at = start + (raw_title.as_ptr() as usize - text.as_ptr() as usize);
        let title = at..at + raw_title.len();
        visit(Heading { start: span_start, line: first_line + no, level, title, marker });
    }
}

/// Calls `visit` with each `## ` heading of `input` (see [`outline`]).
pub(crate) fn scan_sections(input: &[u8], mut visit: impl FnMut(Heading)) {
    let from = if input.starts_with(UTF8_BOM) { UTF8_BOM.len() } else { 0 };
    scan(input, from..input.len(), 1, |h| {
        if h.level == 2 {
            visit(h);
        }
    });
}

/// A title's bytes as text: lossy UTF-8.
pub(crate) fn title_text(input: &[u8], title: Range<usize>) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(&input[title])
}

/// Sections from headings at one level, each one ending where the next
/// begins and the last at `end`; built as the headings come.
struct Tiler<'a> {
    input: &'a [u8],
    end: usize,
    sections: Vec<Section>,
}

impl Tiler<'_> {
    fn push(&mut self, h: Heading) {
        if let Some(last) = self.sections.last_mut() {
            last.span.end = h.start;
        }
        let title = title_text(self.input, h.title).into_owned();
        let date = find_date(&title);
        let (line, level, marker) = (h.line, h.level, h.marker);
        self.sections.push(Section { span: h.start..self.end, line, level, title, marker, date });
    }
}

/// Splits `input` into a preamble and `## ` sections. Never fails: any
/// bytes are Markdown to it. `#` and `###`-or-deeper headings stay inside
/// the section (or preamble) they are in.
pub fn outline(input: &[u8]) -> Outline {
    let mut tiler = Tiler { input, end: input.len(), sections: Vec::new() };
    scan_sections(input, |h| tiler.push(h));
    let sections = tiler.sections;
    let preamble_end = sections.first().map_or(input.len(), |s| s.span.start);
    Outline { preamble: 0..preamble_end, sections }
}

/// `section` split by its subsections: the headings one level below it
/// (or, when that level is skipped, the next deeper level that is used),
/// outside code fences and comments. The preamble is the section's marker
/// line, heading and the text before its first subsection. `None` when
/// the section has no deeper heading. Used to pack a section too large to
/// keep whole; the pieces tile `section.span`.
pub fn subsections(input: &[u8], section: &Section) -> Option<Outline> {
    let marked = section.marker != Marker::None;
    subsections_of(input, section.span.clone(), section.line, section.level, marked)
}

/// [`subsections`] of the section at `span` whose heading, of `level`, is
/// on `line`, after a marker line when `marked`.
pub(crate) fn subsections_of(
    input: &[u8],
    span: Range<usize>,
    line: usize,
    level: u8,
    marked: bool,
) -> Option<Outline> {
    // The span starts at the marker line when there is one (any marker,
    // even an unknown one, belongs to its section), else at the heading.
    let first_line = line - usize::from(marked);
    let mut found: Vec<Heading> = Vec::new();
    scan(input, span.clone(), first_line, |h| {
        if h.level > level {
            found.push(h);
        }
    });
    let sub = found.iter().map(|h| h.level).min()?;
    let mut tiler = Tiler { input, end: span.end, sections: Vec::new() };
    for h in found.into_iter().filter(|h| h.level == sub) {
        tiler.push(h);
    }
    let sections = tiler.sections;
    let head_end = sections.first().map_or(span.end, |s| s.span.start);
    Some(Outline { preamble: span.start..head_end, sections })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn titles(o: &Outline) -> Vec<&str> {
        o.sections.iter().map(|s| s.title.as_str()).collect()
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
    fn headings_inside_html_comments_are_not_headings() {
        // A comment over several lines hides the headings in it, wherever
        // on its line it opens; one on a single line hides nothing after it.
        let doc = b"## A\n<!--\n## Old title\nold text\n-->\n## B\ntext <!-- note\n## Hidden\n--> after\n<!-- one line --> x\n## C\n";
        let o = outline(doc);
        assert_eq!(titles(&o), ["A", "B", "C"]);
        assert_eq!(&doc[o.sections[0].span.clone()], b"## A\n<!--\n## Old title\nold text\n-->\n");
        // `<!-->` and `<!--->` are whole comments; a `<!--` in a code span
        // or a fence opens none; an unclosed one runs to the end.
        let doc = b"## A\n<!--> x\n## B\n<!---> y\n## C\nuse `<!--` to open\n## D\n```\n<!--\n```\n## E\n<!--\n## F\n";
        assert_eq!(titles(&outline(doc)), ["A", "B", "C", "D", "E"]);
        // A comment opened on a heading line hides what follows it.
        assert_eq!(titles(&outline(b"## A <!--\n## B\n-->\n## C\n")), ["A <!--", "C"]);
        // A fence inside a comment is not a fence.
        assert_eq!(titles(&outline(b"<!--\n```\n-->\n## A\n")), ["A"]);
        // Markers still work: a one-line comment right before the heading.
        let o = outline(b"<!--\nx\n-->\n<!-- notes-priority: pinned -->\n## A\n");
        assert_eq!(o.sections[0].marker, Marker::Pinned);
    }

    #[test]
    fn atx_levels() {
        assert_eq!(atx_heading(b"# A"), Some((1, &b"A"[..])));
        assert_eq!(atx_heading(b"### A ###"), Some((3, &b"A"[..])));
        assert_eq!(atx_heading(b"###### A"), Some((6, &b"A"[..])));
        assert_eq!(atx_heading(b"####### A"), None);
        assert_eq!(atx_heading(b"###A"), None);
        assert_eq!(heading_title(b"### A"), None);
    }

    #[test]
    fn subsections_split_by_the_next_level_used() {
        let doc = b"## Big\nintro\n### One\na\n<!-- notes-priority: fresh -->\n### Two\n#### Deep\nb\n```\n### fenced\n```\n## Next\n";
        let o = outline(doc);
        let sub = subsections(doc, &o.sections[0]).expect("has subsections");
        assert_eq!(&doc[sub.preamble.clone()], b"## Big\nintro\n");
        assert_eq!(titles(&sub), ["One", "Two"]);
        assert_eq!(sub.sections[1].marker, Marker::Fresh);
        assert_eq!(sub.sections[1].line, 6);
        assert_eq!(sub.sections[1].level, 3);
        assert_eq!(sub.sections[1].span.end, o.sections[1].span.start);
        let deeper = subsections(doc, &sub.sections[1]).unwrap();
        assert_eq!(titles(&deeper), ["Deep"]);
        assert_eq!(deeper.sections[0].line, 7);
        assert_eq!(&doc[deeper.preamble.clone()], b"<!-- notes-priority: fresh -->\n### Two\n");
        // A skipped level: `####` directly under `##`.
        let doc = b"## A\n#### x\n#### y\n";
        let sub = subsections(doc, &outline(doc).sections[0]).unwrap();
        assert_eq!(titles(&sub), ["x", "y"]);
        assert!(subsections(b"## A\ntext\n", &outline(b"## A\ntext\n").sections[0]).is_none());
    }
}
