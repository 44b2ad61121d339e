//! The section packer on any bytes, budget, unit and --keep list: never
//! panics; the output is the preamble then whole kept sections (or whole
//! kept parts of a section too large to keep whole) in file order; the spans tile the input; the budget holds unless the preamble
//! and pinned sections alone overrun it; nothing dropped would have fitted.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use outbox::notes::outline::{outline, Marker};
use outbox::notes::pack::{pack, Class, PackOptions, Unit};

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Frag {
    H2,
    H2Bare,
    H3,
    Backticks,
    Tildes,
    Nl,
    Crlf,
    Cr,
    Indent,
    Pinned,
    Fresh,
    Unknown,
    Date,
    BadDate,
    Bom,
    Word,
    Japanese,
    Hashes,
    H4,
    CommentOpen,
    CommentClose,
}

impl Frag {
    fn bytes(self) -> &'static [u8] {
        match self {
            Frag::H2 => b"## ",
            Frag::H2Bare => b"##",
            Frag::H3 => b"### ",
            Frag::Backticks => b"```",
            Frag::Tildes => b"~~~~",
            Frag::Nl => b"\n",
            Frag::Crlf => b"\r\n",
            Frag::Cr => b"\r",
            Frag::Indent => b"   ",
            Frag::Pinned => b"<!-- notes-priority: pinned -->",
            Frag::Fresh => b"<!-- notes-priority: fresh -->",
            Frag::Unknown => b"<!--notes-priority:HOT-->",
            Frag::Date => b"2024-02-29",
            Frag::BadDate => b"2023-02-29",
            Frag::Bom => b"\xef\xbb\xbf",
            Frag::Word => b"rollback",
            Frag::Japanese => "日本語".as_bytes(),
            Frag::Hashes => b" ##",
            Frag::H4 => b"#### ",
            Frag::CommentOpen => b"<!--",
            Frag::CommentClose => b"-->",
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Part {
    Frag(Frag),
    Bytes(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct Case {
    budget: u16,
    huge_budget: bool,
    chars: bool,
    keep: Vec<String>,
    parts: Vec<Part>,
}

fuzz_target!(|c: Case| {
    let mut input = Vec::new();
    for p in &c.parts {
        match p {
            Part::Frag(f) => input.extend_from_slice(f.bytes()),
            Part::Bytes(b) => input.extend_from_slice(b),
        }
    }
    let unit = if c.chars { Unit::Chars } else { Unit::Bytes };
    let budget = if c.huge_budget { usize::MAX - c.budget as usize } else { c.budget as usize };
    // As the command line gives them: trimmed, never empty.
    let keep: Vec<String> = c.keep.iter().map(|k| k.trim().to_string()).filter(|k| !k.is_empty()).collect();
    let p = pack(&input, &PackOptions { budget, unit, keep: keep.clone() });
    let r = &p.report;
    let o = outline(&input);

    // The outline tiles the input.
    assert_eq!(o.preamble.start, 0);
    let mut at = o.preamble.end;
    let mut prev_line = 0;
    for s in &o.sections {
        assert_eq!(s.span.start, at, "sections are contiguous");
        assert!(s.span.end > s.span.start, "sections are not empty");
        assert!(s.line > prev_line, "heading lines increase");
        prev_line = s.line;
        assert!(!s.title.contains('\n'), "a title is one line");
        at = s.span.end;
    }
    assert_eq!(at, input.len(), "the last section ends at the end");

    assert_eq!(r.budget, budget);
    assert_eq!(r.keep_matched.len(), keep.len());
    assert_eq!(unit.measure(&p.output), r.used, "report.used measures the output");
    let _ = r.stderr_lines("notes.md");

    if o.sections.is_empty() {
        assert!(r.no_headings);
        assert_eq!(r.sections.len(), 1);
        let fits = unit.measure(&input) <= budget;
        assert_eq!(p.output, if fits { input.clone() } else { Vec::new() });
        assert_eq!(r.sections[0].kept, fits);
        assert!(r.used <= budget);
        return;
    }
    assert!(!r.no_headings);
    assert_eq!(r.sections.len(), o.sections.len());

    // Output = preamble + kept sections, whole, in file order; a section
    // too large to keep whole may be kept in parts, which tile it.
    let mut expect = input[o.preamble.clone()].to_vec();
    for span in r.kept_spans() {
        expect.extend_from_slice(&input[span]);
    }
    for (s, os) in r.sections.iter().zip(&o.sections) {
        assert_eq!(s.span, os.span);
        assert_eq!(s.title, os.title);
        assert_eq!(s.size, unit.measure(&input[s.span.clone()]));
        assert!(s.parts.is_empty() || !s.kept, "a section kept whole has no parts");
        let mut at = s.span.start;
        for (_, piece) in s.pieces() {
            assert_eq!(piece.span.start, at, "the parts of a section tile it");
            assert_eq!(piece.size, unit.measure(&input[piece.span.clone()]));
            at = piece.span.end;
        }
        assert_eq!(at, s.span.end);
        let by_keep = keep.iter().any(|k| s.title.to_lowercase().contains(&k.to_lowercase()));
        if os.marker == Marker::Pinned || by_keep {
            assert!(s.kept && s.class == Class::Pinned, "pinned section {:?} not kept", s.title);
        }
    }
    assert_eq!(p.output, expect, "output is the preamble and the kept sections");
    assert_eq!(r.preamble, unit.measure(&input[o.preamble.clone()]));

    // Budget: kept unless only pinned material and the preamble overrun.
    let pinned: usize = r.sections.iter().filter(|s| s.class == Class::Pinned).map(|s| s.size).sum();
    if r.used > budget {
        assert_eq!(r.used, r.preamble + pinned, "over budget with unpinned sections kept");
    }
    for s in r.dropped() {
        assert!(r.used.saturating_add(s.size) > budget, "dropped {:?} would have fitted", s.title);
    }
    for (k, hit) in keep.iter().zip(&r.keep_matched) {
        let any = r.sections.iter().any(|s| s.title.to_lowercase().contains(&k.to_lowercase()));
        assert_eq!(*hit, any, "keep_matched for {k:?}");
    }
    let line = &r.stderr_lines("notes.md")[0];
    assert!(line.contains(&format!("dropped {} sections", r.dropped().count())), "{line}");
});
