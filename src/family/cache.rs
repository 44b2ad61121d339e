//! Classifying once per mask: what the classifier concluded about a line is
//! kept by the line's *mask* (`text::mask::mask_key`: the line with each
//! maximal run of ASCII digits as one marker) and reused for the next line
//! of that mask, where it cannot differ.
//!
//! # When a pattern cannot tell two lines of one mask apart
//!
//! Two lines of one mask differ only in their digit runs: which digits, and
//! how many (at least one) in each. A pattern is *mask-invariant* when it
//! matches both or neither; [`invariant`] decides it from the pattern's
//! syntax tree (regex-syntax's HIR) with a sufficient rule:
//!
//! 1. no literal holds an ASCII digit (`0 failed` tells `0` from `3`);
//! 2. every class holds all ten ASCII digits or none (`[1-9]` tells `0`
//!    from `1`);
//! 3. every class that holds the digits is the whole body of a repetition
//!    with a minimum of at most one and no maximum (`\d+`, `\S*`, `.+`): an
//!    *absorber* (`\d{3}` counts digits; a lone `\d` takes exactly one);
//! 4. no two absorbers can be next to each other in a match (nothing but
//!    empty-matching pieces between them, also across an alternation's
//!    branches and a repetition's turns: `\d+\d+` needs two digits);
//! 5. no `\B` (it holds between two digits, which a one-digit run lacks).
//!
//! Why it suffices: take a match of the pattern in one line and any digit
//! run inside it. Only classes that hold the digits consume digits (1, 2),
//! and each is an absorber's body (3); the run's digits are consumed by one
//! absorber's turns (4: any other absorber would have to follow it with
//! nothing consumed between, since everything else consumes non-digits). In
//! the other line the run has k ≥ 1 digits: the same absorber takes k
//! turns instead (it allows any number from one up, 3), and every other
//! step of the match is unchanged. Assertions see the same neighbours: a
//! digit is a word character and no line end, whatever its value, so `^`,
//! `$` and `\b` hold where they held; a match that began or ended inside a
//! run begins or ends at the run's edge instead, where only `\B` could tell
//! the difference (5). So the pattern matches the other line too.
//!
//! A pattern that is not invariant (`\b0 (?:errors?|failed)\b`, `[1-9]\d*
//! failed`, `" 5\d\d\b`) is never answered from the cache: a cached answer
//! holds only while the line's own matches of those patterns are the ones
//! the cached line had. Most lines need not run them at all: every match of
//! such a pattern holds one of its required strings (`literals::required`),
//! and where a string occurs in a line, its *masked* form (each run of
//! digits as one marker) occurs in the line's masked form: the string's
//! inner digit runs are whole runs of the line, those at its ends parts of
//! runs, and both become the marker. The masked line is the same for every
//! line of a mask, so an entry keeps the patterns whose masked strings
//! occur in it (`0 failed` is looked for as a digit run then ` failed`),
//! with their result on the cached line; a hit reruns only those, and any
//! difference sends the line through the whole classification.
//!
//! A pattern whose every match begins at the line's start is rerun only
//! when the mask's first byte is one its matches can begin with
//! ([`first_bytes`]): lines of one mask share their first byte, or all
//! begin with a digit run, so a mask that begins otherwise (a date before
//! ruff's `^UP\d{3}`) can match it in none of its lines.
//!
//! What stays per line: the counts (every hit, every line of family
//! evidence), verdict captures (`3 failed` is read on each line), a kind's
//! captured code, success spans (a line where one matched is classified
//! whole). The cache is a fixed table (`SLOTS` entries, the newest wins a
//! slot): memory does not grow with the input. Keys are 64-bit hashes; two
//! masks share one with a chance of about one in 2^64 per pair.

use regex_syntax::hir::{Class, Hir, HirKind, Look};

/// Whether the pattern matches every line of a mask alike (see the module
/// doc for the rule and why it suffices).
pub fn invariant(hir: &Hir) -> bool {
    facts(hir).ok
}

/// What the rule needs to know of a piece of a pattern.
#[derive(Debug, Clone, Copy)]
struct Facts {
    /// The piece follows rules 1 to 5 inside itself.
    ok: bool,
    /// It can match the empty string.
    nullable: bool,
    /// A match of it can begin, or end, inside an absorber.
    starts_absorbing: bool,
    ends_absorbing: bool,
}

const BAD: Facts = Facts { ok: false, nullable: false, starts_absorbing: false, ends_absorbing: false };

/// How a class stands to the ASCII digits.
#[derive(PartialEq)]
enum Digits {
    None,
    All,
    Some,
}

fn digits(c: &Class) -> Digits {
    let held = (b'0'..=b'9')
        .filter(|&d| match c {
            Class::Bytes(b) => b.ranges().iter().any(|r| (r.start()..=r.end()).contains(&d)),
            Class::Unicode(u) => u.ranges().iter().any(|r| (r.start()..=r.end()).contains(&(d as char))),
        })
        .count();
    match held {
        0 => Digits::None,
        10 => Digits::All,
        _ => Digits::Some,
    }
}

/// The body of a repetition, through capture groups.
fn body(h: &Hir) -> &Hir {
    match h.kind() {
        HirKind::Capture(c) => body(&c.sub),
        _ => h,
    }
}

fn facts(h: &Hir) -> Facts {
    match h.kind() {
        HirKind::Empty => Facts { ok: true, nullable: true, starts_absorbing: false, ends_absorbing: false },
        HirKind::Literal(l) => Facts { ok: !l.0.iter().any(u8::is_ascii_digit), nullable: l.0.is_empty(), ..BAD },
        HirKind::Class(c) => Facts { ok: digits(c) == Digits::None, ..BAD },
        HirKind::Look(look) => {
            let ok = !matches!(look, Look::WordAsciiNegate | Look::WordUnicodeNegate);
            Facts { ok, nullable: true, starts_absorbing: false, ends_absorbing: false }
        }
        HirKind::Capture(c) => facts(&c.sub),
        HirKind::Repetition(r) => {
            if let HirKind::Class(c) = body(&r.sub).kind() {
                return match digits(c) {
                    Digits::None => Facts { ok: true, nullable: r.min == 0, ..BAD },
                    Digits::All if r.min <= 1 && r.max.is_none() => {
                        Facts { ok: true, nullable: r.min == 0, starts_absorbing: true, ends_absorbing: true }
                    }
                    _ => BAD,
                };
            }
            let f = facts(&r.sub);
            // Turns follow each other: the end of one touches the start of
            // the next.
            let turns = r.max != Some(1) && r.max != Some(0);
            let touching = turns && f.ends_absorbing && f.starts_absorbing;
            Facts { ok: f.ok && !touching, nullable: r.min == 0 || f.nullable, ..f }
        }
        HirKind::Alternation(xs) => {
            let fs: Vec<Facts> = xs.iter().map(facts).collect();
            Facts {
                ok: fs.iter().all(|f| f.ok),
                nullable: fs.iter().any(|f| f.nullable),
                starts_absorbing: fs.iter().any(|f| f.starts_absorbing),
                ends_absorbing: fs.iter().any(|f| f.ends_absorbing),
            }
        }
        HirKind::Concat(xs) => {
            let mut ok = true;
            let mut nullable = true;
            let mut starts_absorbing = false;
            // Whether what came so far can end inside an absorber.
            let mut trailing = false;
            for f in concat_facts(xs) {
                ok &= f.ok && !(trailing && f.starts_absorbing);
                if nullable {
                    starts_absorbing |= f.starts_absorbing;
                }
                trailing = f.ends_absorbing || (f.nullable && trailing);
                nullable &= f.nullable;
            }
            Facts { ok, nullable, starts_absorbing, ends_absorbing: trailing }
        }
    }
}

/// Whether every match of the pattern begins at the start of the line it
/// is searched in (a line holds no `\n`, so a multi-line `^` holds only
/// there): such a pattern can be searched anchored. `\r` ends a line for
/// a CRLF-aware `^`, so that one does not count.
pub fn anchored(hir: &Hir) -> bool {
    let prefix = hir.properties().look_set_prefix();
    prefix.contains(Look::Start) || prefix.contains(Look::StartLF)
}

/// The bytes a match of `h` can begin with, as a 256-bit set, or None when
/// a match can be empty. Zero-width assertions consume nothing; a Unicode
/// class above ASCII may begin with any lead byte of UTF-8 (more than it
/// can, never less).
pub fn first_bytes(h: &Hir) -> Option<ByteSet> {
    let (set, nullable) = starts(h);
    (!nullable).then_some(set)
}

/// A set of bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ByteSet([u64; 4]);

impl ByteSet {
    fn add(&mut self, b: u8) {
        self.0[usize::from(b >> 6)] |= 1 << (b & 63);
    }
    pub fn add_range(&mut self, lo: u8, hi: u8) {
        for b in lo..=hi {
            self.add(b);
        }
    }
    /// The bytes of `c`: a byte class's own; a Unicode class's ASCII
    /// ranges, and `above_ascii` for any character above ASCII (the bytes
    /// the caller needs of its encoding: lead bytes only, or all).
    pub fn add_class(&mut self, c: &Class, above_ascii: (u8, u8)) {
        match c {
            Class::Bytes(c) => c.ranges().iter().for_each(|r| self.add_range(r.start(), r.end())),
            Class::Unicode(c) => {
                for r in c.ranges() {
                    let (lo, hi) = (u32::from(r.start()), u32::from(r.end()));
                    if lo < 0x80 {
                        self.add_range(lo as u8, hi.min(0x7f) as u8);
                    }
                    if hi >= 0x80 {
                        self.add_range(above_ascii.0, above_ascii.1);
                    }
                }
            }
        }
    }
    fn class_is_empty(c: &Class) -> bool {
        match c {
            Class::Bytes(c) => c.ranges().is_empty(),
            Class::Unicode(c) => c.ranges().is_empty(),
        }
    }
    fn union(&mut self, o: ByteSet) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a |= b;
        }
    }
    pub fn contains(&self, b: u8) -> bool {
        self.0[usize::from(b >> 6)] & (1 << (b & 63)) != 0
    }
}

/// Whether an anchored pattern whose matches begin with `first` can match
/// a line whose masked form begins with `masked0` (None: an empty line).
/// Lines of one mask share their first byte, or all begin with a digit
/// run ([`MARK`], which a line's own `0xff` also reads as).
pub fn may_start(first: &ByteSet, masked0: Option<u8>) -> bool {
    match masked0 {
        None => false,
        Some(MARK) => first.contains(MARK) || (b'0'..=b'9').any(|d| first.contains(d)),
        Some(b) => first.contains(b),
    }
}

/// The first bytes of `h`'s matches, and whether it matches the empty
/// string.
fn starts(h: &Hir) -> (ByteSet, bool) {
    let mut set = ByteSet::default();
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => (set, true),
        HirKind::Literal(l) => match l.0.first() {
            Some(&b) => {
                set.add(b);
                (set, false)
            }
            None => (set, true),
        },
        HirKind::Class(c) => {
            // Above ASCII, the lead bytes of UTF-8 (a Unicode class matches
            // only whole encoded characters).
            set.add_class(c, (0xc2, 0xf4));
            (set, ByteSet::class_is_empty(c))
        }
        HirKind::Capture(c) => starts(&c.sub),
        HirKind::Repetition(r) => {
            let (sub, nullable) = starts(&r.sub);
            (sub, nullable || r.min == 0)
        }
        HirKind::Concat(xs) => {
            for x in xs {
                let (sub, nullable) = starts(x);
                set.union(sub);
                if !nullable {
                    return (set, false);
                }
            }
            (set, true)
        }
        HirKind::Alternation(xs) => {
            let mut any_nullable = false;
            for x in xs {
                let (sub, nullable) = starts(x);
                set.union(sub);
                any_nullable |= nullable;
            }
            (set, any_nullable)
        }
    }
}

/// The facts of a concatenation's pieces, in order, where one digit
/// followed by a repetition from zero of a class that holds the digits
/// (`\d[\d.]*`) counts as one absorber: the digit takes a run's first
/// digit, the repetition its others, however many (rule 3 as for `\d+`).
fn concat_facts(xs: &[Hir]) -> Vec<Facts> {
    let one_digit = |h: &Hir| matches!(body(h).kind(), HirKind::Class(c) if digits(c) == Digits::All);
    let digits_from_zero = |h: &Hir| match h.kind() {
        HirKind::Repetition(r) if r.min == 0 && r.max.is_none() => {
            matches!(body(&r.sub).kind(), HirKind::Class(c) if digits(c) == Digits::All)
        }
        _ => false,
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < xs.len() {
        if i + 1 < xs.len() && one_digit(&xs[i]) && digits_from_zero(&xs[i + 1]) {
            out.push(Facts { ok: true, nullable: false, starts_absorbing: true, ends_absorbing: true });
            i += 2;
        } else {
            out.push(facts(&xs[i]));
            i += 1;
        }
    }
    out
}

/// Masked strings (see [`masked`]), each with whether ASCII case is
/// ignored (then it is lower case).
pub type Pieces = Vec<(Vec<u8>, bool)>;

/// The masked forms of the strings of which every match of a pattern holds
/// one (see the module doc); None when some match may hold none, or when
/// a string is nothing but digits.
pub fn pieces(hir: &Hir) -> Option<Pieces> {
    let lits = super::literals::required_strings(&mark_digit_runs(hir))?;
    let mut out = Vec::new();
    for lit in lits {
        // `^` reads as a newline before the line: what follows it is
        // enough (anywhere in the line is more, never less).
        let lit = match lit.iter().rposition(|&(b, _)| b == b'\n') {
            Some(k) => &lit[k + 1..],
            None => &lit[..],
        };
        let ci = lit.iter().any(|&(_, ci)| ci);
        let bytes: Vec<u8> = lit.iter().map(|&(b, _)| if ci { b.to_ascii_lowercase() } else { b }).collect();
        let mut piece = Vec::new();
        masked(&bytes, &mut piece);
        if piece.iter().all(|&b| b == MARK) {
            return None;
        }
        out.push((piece, ci));
    }
    out.sort();
    out.dedup();
    Some(out)
}

/// `h` with each stretch of a concatenation that consumes only digits, at
/// least one (`[1-9]\d*`), as the literal [`MARK`], where its neighbours
/// consume no digits: what it matched is then a whole digit run, a
/// [`MARK`] of the masked line. Its required strings then name the run
/// (`\xff failed` for `[1-9]\d* failed`), so a mask without a run before
/// ` failed` is not a candidate.
fn mark_digit_runs(h: &Hir) -> Hir {
    rebuild_concats(h, &|xs| {
        let mut out = Vec::new();
        let mut i = 0;
        while i < xs.len() {
            let mut j = i;
            while j < xs.len() && only_digits(&xs[j]) {
                j += 1;
            }
            let consumes = xs[i..j].iter().any(|x| x.properties().minimum_len().unwrap_or(0) > 0);
            let free = |k: Option<&Hir>| k.is_none_or(|x| !holds_digit(x));
            if j > i && consumes && free(i.checked_sub(1).map(|k| &xs[k])) && free(xs.get(j)) {
                out.push(Hir::literal(vec![MARK]));
                i = j;
            } else {
                out.push(mark_digit_runs(&xs[i]));
                i += 1;
            }
        }
        Hir::concat(out)
    })
}

/// `h` rebuilt with every concatenation, wherever it sits (in a group, an
/// alternation, a repetition), replaced by what `concat` makes of its
/// pieces; `concat` recurses into the pieces it keeps.
fn rebuild_concats(h: &Hir, concat: &dyn Fn(&[Hir]) -> Hir) -> Hir {
    match h.kind() {
        HirKind::Capture(c) => rebuild_concats(&c.sub, concat),
        HirKind::Alternation(xs) => Hir::alternation(xs.iter().map(|x| rebuild_concats(x, concat)).collect()),
        HirKind::Repetition(r) => Hir::repetition(regex_syntax::hir::Repetition {
            sub: Box::new(rebuild_concats(&r.sub, concat)),
            ..r.clone()
        }),
        HirKind::Concat(xs) => concat(xs),
        _ => h.clone(),
    }
}

/// The digit strings of which every match of `h` holds one as a whole
/// digit run of the line (`0` of `\b(?:errors?|failed)\s*[:=]\s*0\b`): a
/// line without such a run cannot match, whatever its mask. None when the
/// pattern's digits are not all of that kind.
pub fn whole_runs(h: &Hir) -> Option<Vec<Vec<u8>>> {
    let req = super::literals::digit_required_strings(&mark_whole_runs(h))?;
    let mut out = Vec::new();
    for s in req {
        let bytes: Vec<u8> = s.iter().map(|&(b, _)| b).collect();
        let open = bytes.iter().position(|&b| b == WHOLE)?;
        let len = bytes[open + 1..].iter().position(|&b| b == WHOLE)?;
        out.push(bytes[open + 1..open + 1 + len].to_vec());
    }
    out.sort();
    out.dedup();
    Some(out)
}

/// Brackets a literal digit string that is a whole run in [`mark_whole_runs`].
const WHOLE: u8 = 0xfe;

/// `h` with each literal digit string of a concatenation that must be a
/// whole digit run ([`bounded`] on both sides) as that string between two
/// [`WHOLE`] bytes.
fn mark_whole_runs(h: &Hir) -> Hir {
    rebuild_concats(h, &|xs| {
        let out = xs
            .iter()
            .enumerate()
            .map(|(i, x)| match x.kind() {
                HirKind::Literal(l)
                    if !l.0.is_empty()
                        && l.0.iter().all(u8::is_ascii_digit)
                        && bounded(xs[..i].iter().rev())
                        && bounded(xs[i + 1..].iter()) =>
                {
                    let mut v = vec![WHOLE];
                    v.extend_from_slice(&l.0);
                    v.push(WHOLE);
                    Hir::literal(v)
                }
                _ => mark_whole_runs(x),
            })
            .collect();
        Hir::concat(out)
    })
}

/// Whether the pieces of a concatenation on one side of a digit string,
/// nearest first, bound it: past pieces that may match nothing and hold no
/// digit comes a word boundary, a line's edge, or a piece that matches at
/// least one byte and holds no digit.
fn bounded<'a>(mut side: impl Iterator<Item = &'a Hir>) -> bool {
    side.find_map(|x| match x.kind() {
        HirKind::Look(l) => {
            use Look::*;
            matches!(l, WordAscii | WordUnicode | Start | End | StartLF | EndLF).then_some(true)
        }
        _ if holds_digit(x) => Some(false),
        _ if x.properties().minimum_len().unwrap_or(0) > 0 => Some(true),
        _ => None,
    })
    .unwrap_or(false)
}

/// Whether `line` holds `digits` as a whole run of ASCII digits.
pub fn holds_whole_run(line: &[u8], digits: &[u8]) -> bool {
    memchr::memmem::find_iter(line, digits).any(|at| {
        let before = at.checked_sub(1).map(|k| line[k]);
        let after = line.get(at + digits.len()).copied();
        !before.is_some_and(|b| b.is_ascii_digit()) && !after.is_some_and(|b| b.is_ascii_digit())
    })
}

/// Whether every string `h` matches is ASCII digits (an empty one too).
fn only_digits(h: &Hir) -> bool {
    match h.kind() {
        HirKind::Literal(l) => l.0.iter().all(u8::is_ascii_digit),
        HirKind::Class(c) => digits(c) != Digits::None && class_is_digits(c),
        HirKind::Capture(c) => only_digits(&c.sub),
        HirKind::Repetition(r) => only_digits(&r.sub),
        HirKind::Concat(xs) | HirKind::Alternation(xs) => xs.iter().all(only_digits),
        HirKind::Empty | HirKind::Look(_) => false,
    }
}

/// Whether a class holds nothing but ASCII digits.
fn class_is_digits(c: &Class) -> bool {
    match c {
        Class::Bytes(b) => b.ranges().iter().all(|r| r.start().is_ascii_digit() && r.end().is_ascii_digit()),
        Class::Unicode(u) => u.ranges().iter().all(|r| r.start().is_ascii_digit() && r.end().is_ascii_digit()),
    }
}

/// Whether some string `h` matches holds an ASCII digit.
fn holds_digit(h: &Hir) -> bool {
    match h.kind() {
        HirKind::Literal(l) => l.0.iter().any(u8::is_ascii_digit),
        HirKind::Class(c) => digits(c) != Digits::None,
        HirKind::Capture(c) => holds_digit(&c.sub),
        HirKind::Repetition(r) => r.max != Some(0) && holds_digit(&r.sub),
        HirKind::Concat(xs) | HirKind::Alternation(xs) => xs.iter().any(holds_digit),
        HirKind::Empty | HirKind::Look(_) => false,
    }
}

/// What a digit run becomes in a masked line.
pub const MARK: u8 = 0xff;

/// `line` with each maximal run of ASCII digits as one [`MARK`] (a `0xff`
/// of the line itself reads as a run too: that can only make a piece seem
/// present, which costs a rerun, never a wrong answer).
pub fn masked(line: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while i < line.len() {
        if line[i].is_ascii_digit() {
            while i < line.len() && line[i].is_ascii_digit() {
                i += 1;
            }
            out.push(MARK);
        } else {
            out.push(line[i]);
            i += 1;
        }
    }
}

/// Whether the masked line `masked` holds one of `pieces`.
pub fn holds_piece(pieces: &[(Vec<u8>, bool)], masked: &[u8]) -> bool {
    pieces.iter().any(|(p, ci)| {
        if *ci {
            masked.windows(p.len()).any(|w| w.eq_ignore_ascii_case(p))
        } else {
            memchr::memmem::find(masked, p).is_some()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inv(p: &str) -> bool {
        let hir = regex_syntax::ParserBuilder::new().utf8(false).build().parse(p).unwrap();
        invariant(&hir)
    }

    #[test]
    fn the_rule_on_examples() {
        for p in [
            r"^\S+\(\d+,\d+\): error TS\d+:",
            r"^error(?:\[E\d+\])?:",
            r"(?i)\bfailed(?: to\b|:|[.!]?\s*$)",
            r"(?:^|[^\w./-])(?:ERROR|FATAL)(?:$|[^\w./=-])",
            r"^\s+\d+:\d+\s+error\s{2,}(?:.*\s{2,}(?P<kind>[\w-]+)$)?",
            r"\bKilled process \d+",
            r"(?i)\bfailed(?: to\b|:| in \d[\d.]*\s?(?:ms|s)\b)",
            r"x\d\S*y",
        ] {
            assert!(inv(p), "{p} is invariant");
        }
        for p in [
            r"\b0 (?:errors?|failed)\b",
            r"\b[1-9]\d* failed",
            r#"" 5\d\d\b"#,
            r"\d{4}",
            r"x\dy",
            r"\d+\d+",
            r"\w+\d*",
            r"(?:\d+|a)\d+",
            r"(?:\d+x?)+",
            r"\B\d+",
            // A lone digit before a repetition that needs one more.
            r"x\d[\d.]+y",
            r"x\d\d*\d+",
            // One character of any kind: a digit here or there.
            r"error\s{2,}\S",
        ] {
            // Some tell digits apart; the others the rule cannot prove.
            assert!(!inv(p), "{p} is not proven invariant");
        }
    }

    #[test]
    fn pieces_are_masked_strings() {
        let hir = |p: &str| regex_syntax::ParserBuilder::new().utf8(false).build().parse(p).unwrap();
        let p = pieces(&hir(r"(?i)\b0 (?:errors?|failed)\b")).unwrap();
        assert!(p.iter().all(|(s, _)| !s.iter().any(u8::is_ascii_digit)), "{p:?}");
        let m = |s: &[u8]| {
            let mut v = Vec::new();
            masked(s, &mut v);
            v
        };
        assert!(holds_piece(&p, &m(b"13 FAILED now")));
        assert!(!holds_piece(&p, &m(b"all good")));
        // ` failed` after no digit run: `0 failed` cannot be in the line.
        assert!(!holds_piece(&p, &m(b"12:00 job failed")));
        assert!(pieces(&hir(r"\d+")).is_none());
        // A whole run before ` failed`: the masked piece names it.
        let p = pieces(&hir(r"\b[1-9][0-9]* (?:failed|errors?)\b")).unwrap();
        assert!(p.iter().all(|(s, _)| s.starts_with(&[MARK, b' '])), "{p:?}");
        assert!(holds_piece(&p, &m(b"3 failed, 2 passed")));
        assert!(!holds_piece(&p, &m(b"12:00 connect() failed (113: refused)")));
        // A neighbour that may take digits of the run too: left alone.
        let p = pieces(&hir(r"[.0-9][0-9]+x")).unwrap_or_default();
        assert!(p.iter().all(|(s, _)| s != &[MARK, b'x'] || holds_piece(&p, &m(b"1.23x"))), "{p:?}");
        // A literal digit string that must be a whole run.
        let zero = r"(?i)\b(?:errors?|failed)\s*[:=]\s*0\b";
        assert_eq!(whole_runs(&hir(zero)), Some(vec![b"0".to_vec()]));
        assert!(holds_whole_run(b"errors: 0, took 30 ms", b"0"));
        assert!(!holds_whole_run(b"2026-12-03 21:30:49 errors: 10", b"0"));
        // A lone digit at every place, and a digit on either side.
        for n in 1..40 {
            for at in 0..n {
                let mut line = vec![b'x'; n];
                line[at] = b'0';
                assert!(holds_whole_run(&line, b"0"), "{n} {at}");
                for side in [at.wrapping_sub(1), at + 1] {
                    if let Some(b) = line.get_mut(side) {
                        *b = b'7';
                        assert!(!holds_whole_run(&line, b"0"), "{n} {at} {side}");
                        line[side] = b'\xff';
                        assert!(holds_whole_run(&line, b"0"), "{n} {at} {side}");
                        line[side] = b'x';
                    }
                }
                line[at] = b'1';
                assert!(!holds_whole_run(&line, b"0"));
            }
        }
        // Not bounded on the left (a nullable piece, then the start of the
        // pattern): `10` holds a match of `\s*0\b`.
        assert_eq!(whole_runs(&hir(r"\s*0\b")), None);
        assert_eq!(whole_runs(&hir(r"x\d*0\b")), None);
        let p = pieces(&hir(r"^E {3}x")).unwrap();
        assert_eq!(p, vec![(b"E   x".to_vec(), false)]);
    }

    /// An anchored pattern's first bytes decide whether a mask's lines can
    /// match it at all: ruff's codes and yamllint's indented lines against
    /// a line that begins with a date.
    #[test]
    fn first_bytes_tell_which_anchored_patterns_a_mask_can_match() {
        let starts = |p: &str| first_bytes(&regex_syntax::ParserBuilder::new().utf8(false).build().parse(p).unwrap());
        let ruff = starts(r"(?m)^(?:UP|PL[CERW]|RUF)\d{3,4} ").unwrap();
        assert!(may_start(&ruff, Some(b'U')) && may_start(&ruff, Some(b'P')));
        assert!(!may_start(&ruff, Some(MARK)) && !may_start(&ruff, Some(b'u')) && !may_start(&ruff, None));
        let yaml = starts(r"(?m)^\s+\d+:\d+\s+error").unwrap();
        assert!(may_start(&yaml, Some(b' ')) && !may_start(&yaml, Some(MARK)));
        let glog = starts(r"^(?:0[1-9]|1[0-2])-\d\d").unwrap();
        assert!(may_start(&glog, Some(MARK)) && !may_start(&glog, Some(b'I')));
        let ci = starts(r"(?i)^error").unwrap();
        assert!(may_start(&ci, Some(b'e')) && may_start(&ci, Some(b'E')));
        // Matches that may be empty, or begin after optional pieces.
        assert_eq!(starts(r"^\s*"), None);
        let opt = starts(r"^(?:\[\d+\] )?[EF]\d").unwrap();
        assert!(may_start(&opt, Some(b'[')) && may_start(&opt, Some(b'E')) && !may_start(&opt, Some(b'W')));
        let uni = starts(r"^(?:エラー|[é])").unwrap();
        assert!(may_start(&uni, Some(0xe3)) && !may_start(&uni, Some(b'e')));
    }
}
