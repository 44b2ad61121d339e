//! `outbox pack`: Markdown notes packed into a budget by whole `## ` sections.
//!
//! Reference notes handed to an agent are usually cut by line, and the cut
//! is silent. This module cuts by section instead and names every drop.
//!
//! ```text
//!  bytes ─► scan():   `## ` headings outside fences and comments         outline.rs
//!        ─► index:    a few bytes a section: start, line, marker, date  index.rs, column.rs
//!        ─► Plan:     claim the budget by priority; too-large sections  plan.rs, parts.rs
//!                     by their parts; kept spans in file order
//!        ─► report:   what was kept, dropped, kept in parts; the        report.rs
//!                     stderr lines
//!        ─► run():    one file at a time: safe read, stdout, report     command.rs, files.rs
//!        (pack() here: a Plan turned into bytes and a full report, for the library and tests)
//! ```
//!
//! Invariants (checked by the property test at the bottom and the fuzz
//! target):
//! - The output is the preamble followed by a subsequence of the pieces of
//!   the file, each byte for byte as in the input (CRLF, invalid UTF-8 and
//!   all), in file order. A piece is a whole `## ` section or, for one too
//!   large to keep whole, its heading part or a whole subsection (below). A
//!   piece is never sliced; each one is either whole in the output or named
//!   as dropped in the report.
//! - The output fits the budget, except when the preamble and the pinned
//!   sections alone do not: those are instructions, kept whole, and the
//!   overrun is reported.
//! - A piece that was dropped did not fit in what was left once packing
//!   ended (nothing is dropped that could still have been kept).
//!
//! A section too large to keep whole is not lost whole when it has
//! subsections (issue 17: a book chapter whose body sits under one `## `
//! heading). Once every `## ` section that fits whole is claimed, each
//! one that did not, in the same claiming order, is packed by its parts:
//! its marker, heading line and the text before its first subsection
//! (kept together or not at all), then its subsections (`### `, or the
//! next level used), each whole, then, for one that still does not fit,
//! its own parts, and so on down the heading levels. Inside a section the
//! parts are claimed as the sections are: marked `pinned` first, then
//! `fresh` newest first, then the rest in file order; but only a `## `
//! section marked pinned (or named by `--keep`) is kept past the budget,
//! as the contract says. Every part left out is named in the report as
//! `Section > Subsection`. Headings inside code fences and HTML comments
//! are not headings, so a part never splits a fence or a comment.

use std::convert::Infallible;

use crate::notes::plan::Plan;
// The tests below read the outline `pack` packs by.
#[cfg(test)]
use crate::notes::outline::outline;

pub use crate::notes::report::{Class, PackReport, SectionOutcome};

pub use crate::notes::command::{
    parse_keep, parse_pack_budget, run, PackFilesOptions, DEFAULT_BUDGET, INSTRUCTION_RATIO,
};

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

/// What to pack into, and what to keep regardless.
#[derive(Debug, Clone)]
pub struct PackOptions {
    pub budget: usize,
    pub unit: Unit,
    /// Title substrings (case-insensitive) of sections to keep as pinned.
    pub keep: Vec<String>,
}

/// The packed bytes and how they were chosen.
#[derive(Debug, Clone)]
pub struct Packed {
    pub output: Vec<u8>,
    pub report: PackReport,
}

/// Packs one file's bytes into `opts.budget`. Pure: no I/O. The report
/// holds every section, titles and all; `outbox pack` prints from the
/// [`Plan`] instead, which holds a few bytes a section.
pub fn pack(input: &[u8], opts: &PackOptions) -> Packed {
    let plan = Plan::new(input, opts);
    let mut len = 0;
    let _ = plan.write_output(input, |b| -> Result<(), Infallible> {
        len += b.len();
        Ok(())
    });
    let mut output = Vec::with_capacity(len);
    let _ = plan.write_output(input, |b| -> Result<(), Infallible> {
        output.extend_from_slice(b);
        Ok(())
    });
    Packed { output, report: plan.into_report(input) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notes::outline::{Outline, UTF8_BOM};
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

    /// A section of `n` bytes: `title` heading, then `body` lines.
    fn sized(heading: &str, n: usize) -> String {
        let mut s = format!("{heading}\n");
        while s.len() + 2 <= n {
            s.push_str(&"x".repeat((n - s.len() - 1).min(70)));
            s.push('\n');
        }
        s
    }

    #[test]
    fn oversized_section_is_packed_by_its_subsections() {
        // Issue 17: a chapter whose body sits under one `## ` heading.
        let doc = format!(
            "# Book\n{}{}{}{}{}",
            sized("## Chapter", 40),
            sized("### One", 300),
            sized("### Two", 900),
            sized("### Three", 300),
            sized("## After", 100)
        );
        let p = pack(doc.as_bytes(), &opts(800));
        let out = String::from_utf8(p.output.clone()).unwrap();
        // The `## ` heading line is kept with the subsections that fit.
        assert!(out.starts_with("# Book\n## Chapter\n"), "{out}");
        assert!(out.contains("### One\n") && out.contains("### Three\n") && out.contains("## After\n"));
        assert!(!out.contains("### Two"));
        assert_eq!(p.report.used, 7 + 40 + 300 + 300 + 100);
        assert_eq!(dropped_titles(&p), ["Two"]);
        let lines = p.report.stderr_lines("book.md");
        assert_eq!(
            lines[0],
            format!("[outbox pack] book.md: {}/800 bytes, dropped 1 sections: Chapter > Two", p.report.used)
        );
        assert!(lines[1].contains("Chapter (1540 bytes) did not fit whole: kept its heading and 2 of 3"), "{lines:?}");
        // Whole sections are claimed first: `After` before any part.
        let p = pack(doc.as_bytes(), &opts(7 + 100 + 40 + 300));
        assert_eq!(kept_titles(&p), ["After"]);
        assert_eq!(p.report.sections[0].parts.len(), 4);
        assert_eq!(dropped_titles(&p), ["Two", "Three"]);
    }

    #[test]
    fn parts_go_down_the_heading_levels_and_follow_markers() {
        let doc = format!(
            "{}{}{}{}<!-- notes-priority: fresh -->\n{}{}",
            sized("## Ch", 20),
            sized("### A", 100),
            sized("#### A1", 200),
            sized("#### A2", 500),
            sized("### B 2024-01-01", 100),
            sized("### C", 100)
        );
        // Whole parts first (the fresh B, then C), then A by its parts.
        let p = pack(doc.as_bytes(), &opts(20 + 131 + 100 + 100 + 200));
        let out = String::from_utf8(p.output.clone()).unwrap();
        assert!(out.contains("### A\n") && out.contains("#### A1") && !out.contains("#### A2"), "{out}");
        assert!(out.contains("### B 2024") && out.contains("### C"), "{out}");
        let names = &p.report.stderr_lines("n")[0];
        assert!(names.ends_with("dropped 1 sections: Ch > A > A2"), "{names}");
        // Room for one of B and C: the fresh one, though it comes first.
        let p = pack(doc.as_bytes(), &opts(20 + 131 + 50));
        let names = &p.report.stderr_lines("n")[0];
        assert!(names.ends_with("dropped 2 sections: Ch > A, Ch > C"), "{names}");
        // A heading whose subsections all fail to fit is not kept alone.
        let p = pack(doc.as_bytes(), &opts(60));
        assert!(p.output.is_empty(), "{:?}", String::from_utf8_lossy(&p.output));
        assert_eq!(dropped_titles(&p), ["Ch"]);
    }

    #[test]
    fn packed_output_never_holds_an_unclosed_comment() {
        let doc = format!(
            "{}<!--\n## Old title\n{}-->\n{}{}",
            sized("## Keep", 50),
            "old text\n".repeat(30),
            sized("## Other", 50),
            sized("## Last", 50)
        );
        let p = pack(doc.as_bytes(), &opts(120));
        assert_eq!(kept_titles(&p), ["Other", "Last"]);
        let out = String::from_utf8(p.output).unwrap();
        assert_eq!(out.matches("<!--").count(), out.matches("-->").count(), "{out}");
        assert!(!out.contains("Old title"));
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
            // Sections too large to keep whole may be kept in parts.
            for span in p.report.kept_spans() {
                expect.extend_from_slice(&input[span]);
            }
            prop_assert_eq!(p.output, expect);
            // The pieces of each section tile it.
            for s in &p.report.sections {
                let mut at = s.span.start;
                for (_, piece) in s.pieces() {
                    prop_assert_eq!(piece.span.start, at);
                    at = piece.span.end;
                }
                prop_assert_eq!(at, s.span.end);
            }
            for s in p.report.dropped() {
                prop_assert!(p.report.used.saturating_add(s.size) > budget);
            }
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
