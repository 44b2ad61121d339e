//! The `## ` sections of a file in a few bytes each: what `outbox pack`
//! keeps for every section while it decides.
//!
//! [`outline`](crate::notes::outline::outline) gives each section an owned
//! title, a span and more, about a hundred bytes before the title's own
//! allocation; a file of two million one-line sections then costs far more
//! than the file. Here a section is where it starts, its heading's line and
//! its marker kind with the date of its title: twelve bytes (see
//! [`column`](crate::notes::column)). Its end is where the next one starts,
//! and its title is read again from the input when it is printed or
//! matched.
//!
//! Invariant: the same sections as `outline` (one scan, `scan_sections`),
//! so the spans tile the input after the preamble, in file order.

use std::borrow::Cow;
use std::ops::Range;

use crate::notes::column::Column;
use crate::notes::outline::{atx_heading, find_date, scan_sections, title_text, Date, Marker};

/// A section's marker, without the value of an unknown one (read again
/// from the marker line by [`SectionIndex::marker`] when a warning needs it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MarkerKind {
    None = 0,
    Pinned = 1,
    Fresh = 2,
    Unknown = 3,
}

/// Marker kind in the low two bits, the title's date (see [`date_key`])
/// above them.
pub(crate) type Meta = u32;

const KIND_BITS: u32 = 2;

/// A date as a number ordered as dates are, 0 for none: day in bits 0-4,
/// month 5-8, year from 9 (23 bits in all for years up to 9999).
pub(crate) fn date_key(date: Option<Date>) -> u32 {
    date.map_or(0, |d| (u32::from(d.year) << 9) | (u32::from(d.month) << 5) | u32::from(d.day))
}

/// The `## ` sections of one input.
#[derive(Debug, Clone, Default)]
pub(crate) struct SectionIndex {
    /// Where each section starts: its marker line, or its heading.
    starts: Column,
    /// The 1-based line of each heading.
    lines: Column,
    meta: Vec<Meta>,
    /// The input's length: where the last section ends.
    end: usize,
}

impl SectionIndex {
    /// Indexes `input` in one pass.
    pub(crate) fn build(input: &[u8]) -> SectionIndex {
        let mut index = SectionIndex { end: input.len(), ..SectionIndex::default() };
        scan_sections(input, |h| {
            let kind = match h.marker {
                Marker::None => MarkerKind::None,
                Marker::Pinned => MarkerKind::Pinned,
                Marker::Fresh => MarkerKind::Fresh,
                Marker::Unknown(_) => MarkerKind::Unknown,
            };
            let date = find_date(&title_text(input, h.title));
            index.starts.push(h.start);
            index.lines.push(h.line);
            index.meta.push((date_key(date) << KIND_BITS) | kind as Meta);
        });
        index
    }

    pub(crate) fn len(&self) -> usize {
        self.starts.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Everything before the first section (all of it when there is none).
    pub(crate) fn preamble(&self) -> Range<usize> {
        0..if self.is_empty() { self.end } else { self.starts.get(0) }
    }

    /// The bytes of section `i`, from its marker line or heading to the next
    /// section or the end of the input.
    pub(crate) fn span(&self, i: usize) -> Range<usize> {
        let end = if i + 1 < self.len() { self.starts.get(i + 1) } else { self.end };
        self.starts.get(i)..end
    }

    /// The 1-based line of section `i`'s heading.
    pub(crate) fn line(&self, i: usize) -> usize {
        self.lines.get(i)
    }

    pub(crate) fn marker_kind(&self, i: usize) -> MarkerKind {
        match self.meta[i] & ((1 << KIND_BITS) - 1) {
            0 => MarkerKind::None,
            1 => MarkerKind::Pinned,
            2 => MarkerKind::Fresh,
            _ => MarkerKind::Unknown,
        }
    }

    /// [`date_key`] of the first date in section `i`'s title.
    pub(crate) fn date_key(&self, i: usize) -> u32 {
        self.meta[i] >> KIND_BITS
    }

    /// Section `i`'s heading line, without its terminator. The section
    /// starts at its marker line when it has one, the line just before.
    fn heading_line<'a>(&self, input: &'a [u8], i: usize) -> &'a [u8] {
        let span = self.span(i);
        let mut at = span.start;
        if self.marker_kind(i) != MarkerKind::None {
            at += memchr::memchr(b'\n', &input[span.clone()]).map_or(span.len(), |n| n + 1);
        }
        let rest = &input[at..span.end];
        let line = memchr::memchr(b'\n', rest).map_or(rest, |n| &rest[..n]);
        line.strip_suffix(b"\r").unwrap_or(line)
    }

    /// Section `i`'s title: lossy UTF-8, trimmed, closing `#`s removed (as
    /// `Section::title`).
    pub(crate) fn title<'a>(&self, input: &'a [u8], i: usize) -> Cow<'a, str> {
        let title = atx_heading(self.heading_line(input, i)).map_or(&[][..], |(_, t)| t);
        String::from_utf8_lossy(title)
    }

    /// Section `i`'s marker, with the value of an unknown one.
    pub(crate) fn marker(&self, input: &[u8], i: usize) -> Marker {
        match self.marker_kind(i) {
            MarkerKind::None => Marker::None,
            MarkerKind::Pinned => Marker::Pinned,
            MarkerKind::Fresh => Marker::Fresh,
            MarkerKind::Unknown => {
                let start = self.span(i).start;
                let line = &input[start..];
                let line = memchr::memchr(b'\n', line).map_or(line, |n| &line[..n]);
                crate::notes::outline::parse_marker(line.strip_suffix(b"\r").unwrap_or(line))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notes::outline::outline;

    /// Every field `outline` gives a section, as the index gives it back.
    fn agrees_with_outline(input: &[u8]) {
        let o = outline(input);
        let index = SectionIndex::build(input);
        assert_eq!(index.preamble(), o.preamble);
        assert_eq!(index.len(), o.sections.len());
        for (i, s) in o.sections.iter().enumerate() {
            assert_eq!(index.span(i), s.span, "span of {i}");
            assert_eq!(index.line(i), s.line);
            assert_eq!(index.title(input, i), s.title);
            assert_eq!(index.marker(input, i), s.marker);
            assert_eq!(index.date_key(i), date_key(s.date));
        }
    }

    #[test]
    fn index_agrees_with_outline() {
        agrees_with_outline(b"");
        agrees_with_outline(b"no headings\n```\n## fenced\n```\n");
        agrees_with_outline(
            b"\xEF\xBB\xBFpre\r\n<!-- notes-priority: fresh -->\r\n## A 2024-02-29 ##\r\nx\n<!--notes-priority:HOT-->\n\
              ## B\xff\n### deep\n<!-- notes-priority: pinned -->\n##\n<!--\n## hidden\n-->\n## Last",
        );
        agrees_with_outline(b"<!-- notes-priority: fresh -->\n## only\n");
        agrees_with_outline(b"<!-- notes-priority: odd -->");
    }

    #[test]
    fn dates_keep_their_order_as_keys() {
        let d = |year, month, day| Some(Date { year, month, day });
        let dates = [None, d(0, 1, 1), d(2023, 12, 31), d(2024, 1, 1), d(2024, 2, 29), d(9999, 12, 31)];
        for w in dates.windows(2) {
            assert!(date_key(w[0]) < date_key(w[1]), "{w:?}");
        }
        assert!(date_key(d(9999, 12, 31)) < 1 << (32 - KIND_BITS));
    }
}
