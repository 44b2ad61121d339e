//! Line anchors as the contract defines lines: `\n` ends one, and a `\r`
//! belongs to the terminator only right before it. The regex crate's CRLF
//! mode (`R`) also ends a line at a lone `\r` (`^error` matched
//! `a\rerror`), so patterns are compiled in `\n`-only multi-line mode with
//! every `$` rewritten to `\r?$` on the parsed pattern, never on its text.

use regex_syntax::hir::{Hir, HirKind, Look, Repetition};

/// The pattern `p` (optionally starting with the `(?mR)` flags the family
/// sources carry) rewritten to the contract's line ends; `fold` makes it
/// case-insensitive.
pub fn contract_lines(p: &str, fold: bool) -> Result<String, regex::Error> {
    let p = p.strip_prefix("(?mR)").unwrap_or(p);
    let hir = regex_syntax::ParserBuilder::new()
        .multi_line(true)
        .case_insensitive(fold)
        .utf8(false)
        .build()
        .parse(p)
        .map_err(|e| regex::Error::Syntax(e.to_string()))?;
    Ok(line_ends(hir).to_string())
}

/// `hir` with every end-of-line assertion allowed to follow a `\r` (the
/// `\r` of a CRLF terminator).
fn line_ends(hir: Hir) -> Hir {
    match hir.into_kind() {
        HirKind::Look(Look::EndLF) => {
            let cr = Repetition { min: 0, max: Some(1), greedy: true, sub: Box::new(Hir::literal(*b"\r")) };
            Hir::concat(vec![Hir::repetition(cr), Hir::look(Look::EndLF)])
        }
        HirKind::Repetition(mut r) => {
            r.sub = Box::new(line_ends(*r.sub));
            Hir::repetition(r)
        }
        HirKind::Capture(mut c) => {
            c.sub = Box::new(line_ends(*c.sub));
            Hir::capture(c)
        }
        HirKind::Concat(v) => Hir::concat(v.into_iter().map(line_ends).collect()),
        HirKind::Alternation(v) => Hir::alternation(v.into_iter().map(line_ends).collect()),
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(l) => Hir::literal(l.0),
        HirKind::Class(c) => Hir::class(c),
        HirKind::Look(l) => Hir::look(l),
    }
}
