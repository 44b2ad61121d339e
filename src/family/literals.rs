//! Required literals: for each pattern, a few strings of which every match
//! contains one (`^\S+:\d+: error: ` needs ` error: `). Their alternation
//! is a regex made only of literals, which the regex crate searches with
//! SIMD (Teddy / memchr) at several GB/s; only the lines it hits are run
//! through the combined regex. One pattern without a usable literal (a
//! required string weaker than `MIN_STRENGTH`) turns this off and the combined
//! regex is searched over whole blocks, as before: slower, never wrong.

use regex_syntax::hir::{Class, Hir, HirKind, Look};

/// Literals weaker than this (see `strength`: `in ` is 5, `error` 10,
/// `\nE   ` 10) find too many candidate lines to help.
const MIN_STRENGTH: u32 = 7;
/// Cap on a pattern's set of strings (cross products grow fast).
const MAX_SET: usize = 64;

/// A literal: its bytes, and per byte whether ASCII case is ignored (the
/// byte is then lower case).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Lit(Vec<(u8, bool)>);

impl Lit {
    fn cat(&self, o: &Lit) -> Lit {
        let mut v = self.0.clone();
        v.extend_from_slice(&o.0);
        Lit(v)
    }
}

/// The exact strings `h` can match, when they are few.
fn exact(h: &Hir) -> Option<Vec<Lit>> {
    match h.kind() {
        // `^` follows a newline (the scanner checks the first line of each
        // block, which has none before it, on its own). In CRLF mode `^`
        // also follows a lone `\r` inside a line; such a line is found only
        // through another literal (documented: progress-bar redraws).
        HirKind::Look(Look::StartLF | Look::StartCRLF) => Some(vec![Lit(vec![(b'\n', false)])]),
        HirKind::Empty | HirKind::Look(_) => Some(vec![Lit(Vec::new())]),
        HirKind::Literal(l) => Some(vec![Lit(l.0.iter().map(|&b| (b, false)).collect())]),
        HirKind::Class(c) => class(c),
        HirKind::Capture(c) => exact(&c.sub),
        HirKind::Concat(xs) => {
            let mut acc = vec![Lit(Vec::new())];
            for x in xs {
                let e = exact(x)?;
                acc = acc.iter().flat_map(|a| e.iter().map(move |b| a.cat(b))).collect();
                if acc.len() > MAX_SET {
                    return None;
                }
            }
            Some(acc)
        }
        HirKind::Alternation(xs) => {
            let mut acc = Vec::new();
            for x in xs {
                acc.extend(exact(x)?);
                if acc.len() > MAX_SET {
                    return None;
                }
            }
            Some(acc)
        }
        HirKind::Repetition(r) => match (r.min, r.max) {
            (1, Some(1)) => exact(&r.sub),
            (0, Some(1)) => {
                let mut v = exact(&r.sub)?;
                v.push(Lit(Vec::new()));
                Some(v)
            }
            (n, Some(m)) if n == m && n <= 8 => power(&exact(&r.sub)?, n),
            _ => None,
        },
    }
}

/// Every string of `n` items of `set` in a row, when few.
fn power(set: &[Lit], n: u32) -> Option<Vec<Lit>> {
    let mut acc = vec![Lit(Vec::new())];
    for _ in 0..n {
        acc = acc.iter().flat_map(|a| set.iter().map(move |b| a.cat(b))).collect();
        if acc.len() > MAX_SET {
            return None;
        }
    }
    Some(acc)
}

/// A small class as its strings; `[eE]` becomes one case-free byte.
fn class(c: &Class) -> Option<Vec<Lit>> {
    const MAX: usize = 10;
    let mut items: Vec<Vec<u8>> = Vec::new();
    match c {
        Class::Bytes(b) => {
            for r in b.ranges() {
                if (r.end() - r.start()) as usize + items.len() >= MAX {
                    return None;
                }
                items.extend((r.start()..=r.end()).map(|b| vec![b]));
            }
        }
        Class::Unicode(u) => {
            for r in u.ranges() {
                if (r.end() as u32 - r.start() as u32) as usize + items.len() >= MAX {
                    return None;
                }
                for c in (r.start() as u32)..=(r.end() as u32) {
                    let c = char::from_u32(c)?;
                    items.push(c.to_string().into_bytes());
                }
            }
        }
    }
    if items.len() == 2
        && items.iter().all(|i| i.len() == 1 && i[0].is_ascii_alphabetic())
        && items[0][0].eq_ignore_ascii_case(&items[1][0])
    {
        return Some(vec![Lit(vec![(items[0][0].to_ascii_lowercase(), true)])]);
    }
    Some(items.into_iter().map(|i| Lit(i.into_iter().map(|b| (b, false)).collect())).collect())
}

/// How selective a literal is: letters and spaces are everywhere in text,
/// punctuation, capitals and line starts much less.
fn strength(l: &Lit) -> u32 {
    l.0.iter()
        .map(|&(b, ci)| match b {
            b' ' => 1,
            b'a'..=b'z' if ci => 2,
            b'a'..=b'z' | b'0'..=b'9' => 2,
            b'A'..=b'Z' => 3,
            _ => 4,
        })
        .sum()
}

fn score(v: &[Lit]) -> (u32, std::cmp::Reverse<usize>) {
    // A line-start literal with two bytes after the newline costs a table
    // lookup, not a search: prefer it.
    let bonus = |l: &Lit| if l.0.first() == Some(&(b'\n', false)) && l.0.len() >= 3 { 12 } else { 0 };
    (v.iter().map(|l| strength(l) + bonus(l)).min().unwrap_or(0), std::cmp::Reverse(v.len()))
}

/// Strings of which every match of `h` contains one, each byte with whether
/// ASCII case is ignored (the byte is then lower case); a `\n` stands for
/// the start of a line.
pub fn required_strings(h: &Hir) -> Option<Vec<Vec<(u8, bool)>>> {
    Some(required(h)?.into_iter().map(|l| l.0).collect())
}

/// Like [`required_strings`], but choosing, where a pattern offers several
/// sets, one whose strings hold a digit beside other bytes (`" 5` of
/// `" 5\d\d\b` rather than ` HTTP/`): for a pattern that tells lines apart
/// by their digits, the string that is absent from most lines.
pub fn digit_required_strings(h: &Hir) -> Option<Vec<Vec<(u8, bool)>>> {
    Some(required_by(h, &digit_score)?.into_iter().map(|l| l.0).collect())
}

fn digit_score(v: &[Lit]) -> (u32, std::cmp::Reverse<usize>) {
    let digit = |l: &Lit| l.0.len() >= 2 && l.0.iter().any(|(b, _)| b.is_ascii_digit());
    let bonus = if !v.is_empty() && v.iter().all(digit) { 32 } else { 0 };
    let (s, n) = score(v);
    (s + bonus, n)
}

/// Strings of which every match of `h` contains one.
fn required(h: &Hir) -> Option<Vec<Lit>> {
    required_by(h, &score)
}

type Score = dyn Fn(&[Lit]) -> (u32, std::cmp::Reverse<usize>);

/// [`required`], choosing among a concatenation's sets by `score`.
fn required_by(h: &Hir, score: &Score) -> Option<Vec<Lit>> {
    required_longer(h, score).map(|(req, _)| req)
}

/// Required strings, and beside them the same strings made longer where
/// the pattern says what comes right after them: `: [CRWI]\d+` needs
/// `: C`, and more exactly `: C0`…`: W9`. The first pass picks its
/// fingerprints from the first (fewer, shorter strings share windows) and
/// checks a fingerprint's hit against the second (`00000: connection`
/// holds `: c` but no `: c0`). Each longer string holds the string it was
/// made from, so it holds that string's fingerprint.
type Longer = (Vec<Lit>, Vec<Lit>);

fn required_longer(h: &Hir, score: &Score) -> Option<Longer> {
    if let Some(e) = exact(h) {
        if e.iter().all(|l| !l.0.is_empty()) {
            return Some((e.clone(), e));
        }
    }
    let same = |v: Vec<Lit>| (v.clone(), v);
    match h.kind() {
        HirKind::Capture(c) => required_longer(&c.sub, score),
        HirKind::Repetition(r) if r.min >= 1 => {
            // `={70}` needs `========` (eight in a row at least).
            let rep = exact(&r.sub).and_then(|e| power(&e, r.min.min(8)));
            match rep {
                Some(v) if v.iter().all(|l| !l.0.is_empty()) => Some(same(v)),
                _ => required_longer(&r.sub, score),
            }
        }
        HirKind::Alternation(xs) => {
            let mut acc: Longer = (Vec::new(), Vec::new());
            for x in xs {
                let (req, longer) = required_longer(x, score)?;
                acc.0.extend(req);
                acc.1.extend(longer);
            }
            Some(acc)
        }
        HirKind::Concat(xs) => {
            let mut best: Option<Longer> = None;
            let mut consider = |v: Longer| {
                if v.0.iter().all(|l| !l.0.is_empty()) && best.as_ref().is_none_or(|b| score(&v.0) > score(&b.0)) {
                    best = Some(v);
                }
            };
            // Runs of adjacent exact children, joined; other children
            // offer their own required strings.
            let mut run: Option<Vec<Lit>> = None;
            for x in xs {
                match exact(x) {
                    Some(e) => {
                        run = match run.take() {
                            None => Some(e),
                            Some(r) if r.len() * e.len() > MAX_SET => {
                                // Too many together: keep what the run had,
                                // start again from here.
                                consider(same(r));
                                Some(e)
                            }
                            Some(r) => Some(r.iter().flat_map(|a| e.iter().map(move |b| a.cat(b))).collect()),
                        };
                    }
                    None => {
                        if let Some(r) = run.take() {
                            // A repetition of at least one exact item right
                            // after the run: its first item follows the run.
                            let item = match x.kind() {
                                HirKind::Repetition(rep) if rep.min >= 1 => exact(&rep.sub),
                                _ => None,
                            };
                            let longer = match item {
                                Some(e) if r.len() * e.len() <= MAX_SET => {
                                    r.iter().flat_map(|a| e.iter().map(move |b| a.cat(b))).collect()
                                }
                                _ => r.clone(),
                            };
                            consider((r, longer));
                        }
                        if let Some(req) = required_longer(x, score) {
                            consider(req);
                        }
                    }
                }
            }
            if let Some(r) = run {
                consider(same(r));
            }
            best
        }
        _ => None,
    }
}

/// The first pass: short fingerprints searched anywhere (ASCII case
/// ignored), and the first two bytes of lines that a pattern anchored at a
/// line's start can begin, at the very start or after leading blanks
/// (`^E {3}` makes `E ` a start; `^\s+Compiling ` makes `Co` one after
/// blanks).
#[derive(Debug, Clone)]
pub struct FirstPass {
    /// Fingerprints: ASCII lower case, at most `FINGERPRINT` bytes, none
    /// containing another; may be empty.
    pub floating: Vec<Vec<u8>>,
    /// The required strings the fingerprints were chosen from, made
    /// longer where the pattern allows (see `required_longer`; ASCII lower
    /// case): a fingerprint's hit is checked against them.
    pub literals: Vec<Vec<u8>>,
    /// Line starts that make a line a candidate.
    pub starts: LineStarts,
}

/// Bytes of a literal kept as its fingerprint: the most selective window
/// of a required string is enough to name candidate lines (the combined
/// regex checks them), and short fingerprints share SIMD buckets well.
pub const FINGERPRINT: usize = 4;

/// 65,536 bits per table: bit `a << 8 | b` set when a line starting with
/// the (ASCII-lower-cased) bytes `a b` is a candidate; `indented` is looked
/// up after a line's leading blanks.
#[derive(Debug, Clone)]
pub struct LineStarts {
    at: Vec<u64>,
    indented: Vec<u64>,
}

/// Blanks a line may start with before an indented start.
fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\x0b' | b'\x0c' | b'\r')
}

impl LineStarts {
    fn new() -> LineStarts {
        LineStarts { at: vec![0u64; 1024], indented: vec![0u64; 1024] }
    }

    fn key(a: u8, b: u8) -> usize {
        (a.to_ascii_lowercase() as usize) << 8 | b.to_ascii_lowercase() as usize
    }

    fn set(table: &mut [u64], a: u8, b: Option<u8>) {
        let mut one = |b: u8| {
            let k = LineStarts::key(a, b);
            table[k >> 6] |= 1 << (k & 63);
        };
        match b {
            Some(b) => one(b),
            None => (0..=255u8).for_each(one),
        }
    }

    fn get(table: &[u64], line: &[u8]) -> bool {
        let k = LineStarts::key(line.first().copied().unwrap_or(0), line.get(1).copied().unwrap_or(0));
        table[k >> 6] >> (k & 63) & 1 == 1
    }

    /// No line is a candidate by its start.
    pub fn empty() -> LineStarts {
        LineStarts::new()
    }

    /// Lines starting with `a b` (ASCII case ignored) are candidates;
    /// `indented` after leading blanks.
    pub fn add(&mut self, a: u8, b: u8, indented: bool) {
        LineStarts::set(if indented { &mut self.indented } else { &mut self.at }, a, Some(b));
    }

    /// Whether a candidate line can start with the byte `c`.
    pub fn may_start(&self, c: u8) -> bool {
        let row = |t: &[u64], a: u8| {
            let k = (a.to_ascii_lowercase() as usize) << 8;
            t[k >> 6..(k >> 6) + 4].iter().any(|&w| w != 0)
        };
        row(&self.at, c) || (is_blank(c) && self.indented.iter().any(|&w| w != 0))
    }

    /// Whether a line starting with `line` can be a candidate by its start.
    pub fn contains(&self, line: &[u8]) -> bool {
        if LineStarts::get(&self.at, line) {
            return true;
        }
        match line.iter().position(|&b| !is_blank(b)) {
            Some(0) | None => false,
            Some(i) => LineStarts::get(&self.indented, &line[i..]),
        }
    }
}

/// Where a pattern anchored at the line start can begin.
#[derive(Default)]
struct Keys {
    at: Vec<(u8, Option<u8>)>,
    indented: Vec<(u8, Option<u8>)>,
}

/// The line-start keys of `h` when every match of it starts at a line's
/// start (after blanks, maybe after colour codes, which make a line a
/// candidate on their own: see `Classifier`).
fn line_keys(h: &Hir, keys: &mut Keys) -> bool {
    match h.kind() {
        HirKind::Capture(c) => line_keys(&c.sub, keys),
        HirKind::Alternation(xs) => xs.iter().all(|x| line_keys(x, keys)),
        HirKind::Concat(xs) => {
            if !matches!(xs.first().map(Hir::kind), Some(HirKind::Look(Look::StartLF | Look::StartCRLF))) {
                return false;
            }
            let mut rest = &xs[1..];
            let (mut at, mut indented) = (true, false);
            while let Some((x, more)) = rest.split_first() {
                match x.kind() {
                    HirKind::Repetition(r) if r.min == 0 && needs_escape(&r.sub) => {}
                    HirKind::Repetition(r) if blank_class(&r.sub) && !indented => {
                        indented = true;
                        at = r.min == 0;
                    }
                    _ => break,
                }
                rest = more;
            }
            let Some(strings) = prefix_strings(rest) else { return false };
            for s in strings {
                let lead = s.iter().take_while(|&&b| is_blank(b)).count();
                let t = &s[lead..];
                // A line start of one known byte (`^\d+ tests`) would make
                // every line starting with it a candidate: the pattern's
                // required literal names fewer.
                let (Some(&a), Some(&b)) = (t.first(), t.get(1)) else { return false };
                let key = (a, Some(b));
                if lead > 0 || indented {
                    keys.indented.push(key);
                }
                if lead == 0 && at {
                    keys.at.push(key);
                }
            }
            true
        }
        _ => false,
    }
}

/// Whether every match of `h` contains an escape byte.
fn needs_escape(h: &Hir) -> bool {
    required(h).is_some_and(|v| v.iter().all(|l| l.0.iter().any(|&(b, _)| b == 0x1b)))
}

/// Whether `h` is a class of blanks only (`\s`, `[ \t]`, ` `).
fn blank_class(h: &Hir) -> bool {
    match h.kind() {
        HirKind::Literal(l) => l.0.len() == 1 && is_blank(l.0[0]),
        HirKind::Class(Class::Bytes(c)) => {
            c.ranges().iter().all(|r| (r.start()..=r.end()).all(|b| is_blank(b) || b == b'\n'))
        }
        HirKind::Class(Class::Unicode(c)) => c
            .ranges()
            .iter()
            .all(|r| (r.start()..=r.end()).all(|ch| ch.is_ascii() && (is_blank(ch as u8) || ch == '\n'))),
        _ => false,
    }
}

/// The strings a concatenation starts with, each at least two bytes long
/// past its leading blanks where the pattern says so, or one byte when
/// nothing exact follows it.
fn prefix_strings(xs: &[Hir]) -> Option<Vec<Vec<u8>>> {
    let long_enough = |v: &[Lit]| v.iter().all(|l| l.0.iter().skip_while(|&&(b, _)| is_blank(b)).count() >= 2);
    let mut acc = vec![Lit(Vec::new())];
    for x in xs {
        if long_enough(&acc) {
            break;
        }
        // `={3,}` starts with `==` (and nothing after it is known).
        let (e, last) = match (exact(x), x.kind()) {
            (Some(e), _) => (e, false),
            (None, HirKind::Repetition(r)) if r.min >= 1 => match exact(&r.sub).and_then(|e| power(&e, r.min.min(2))) {
                Some(e) => (e, true),
                None => break,
            },
            _ => break,
        };
        if acc.len() * e.len() > MAX_SET {
            break;
        }
        acc = acc.iter().flat_map(|a| e.iter().map(move |b| a.cat(b))).collect();
        if last {
            break;
        }
    }
    let out: Vec<Vec<u8>> = acc.into_iter().map(|l| l.0.into_iter().map(|(b, _)| b).collect()).collect();
    out.iter().all(|s| s.iter().any(|&b| !is_blank(b))).then_some(out)
}

/// The first pass for `patterns`, or None when one of them has no usable
/// literal. Fingerprints are matched without regard to ASCII case.
pub fn first_pass(patterns: &[String]) -> Option<FirstPass> {
    let mut floating: Vec<Vec<u8>> = Vec::new();
    let mut literals: Vec<Vec<u8>> = Vec::new();
    let mut starts = LineStarts::new();
    for p in patterns {
        let hir = regex_syntax::ParserBuilder::new().utf8(false).build().parse(p).ok()?;
        let mut keys = Keys::default();
        if line_keys(&hir, &mut keys) {
            keys.at.iter().for_each(|&(a, b)| LineStarts::set(&mut starts.at, a, b));
            keys.indented.iter().for_each(|&(a, b)| LineStarts::set(&mut starts.indented, a, b));
            continue;
        }
        let (req, longer) = required_longer(&hir, &score)?;
        if req.iter().any(|l| strength(l) < MIN_STRENGTH) {
            return None;
        }
        literals.extend(
            longer
                .iter()
                .filter(|l| l.0.first() != Some(&(b'\n', false)))
                .map(|l| l.0.iter().map(|&(b, _)| b.to_ascii_lowercase()).collect::<Vec<u8>>()),
        );
        for l in req {
            if l.0.first() == Some(&(b'\n', false)) {
                match (l.0.get(1), l.0.get(2)) {
                    (Some(&(a, _)), b) => LineStarts::set(&mut starts.at, a, b.map(|&(b, _)| b)),
                    _ => return None,
                }
                continue;
            }
            floating.push(l.0.iter().map(|&(b, _)| b.to_ascii_lowercase()).collect());
        }
    }
    literals.sort();
    literals.dedup();
    Some(FirstPass { floating: cover(&floating), literals, starts })
}

/// Roughly how often a byte is seen in lower-cased text (logs, prose,
/// code): the fingerprint chosen for a literal is its rarest window.
pub fn frequency(b: u8) -> f64 {
    match b {
        b' ' => 0.14,
        b'e' => 0.09,
        b't' => 0.07,
        b'a' | b'o' => 0.065,
        b'i' | b'n' => 0.06,
        b's' | b'r' => 0.055,
        b'h' | b'l' => 0.035,
        b'd' | b'c' => 0.03,
        b'u' | b'm' => 0.025,
        b'f' | b'p' | b'g' => 0.018,
        b'w' | b'y' | b'b' => 0.013,
        b'v' | b'k' => 0.008,
        b'a'..=b'z' => 0.002,
        b'0'..=b'9' | b'.' => 0.01,
        // Control bytes appear only through `\s` classes, in many
        // variants: a window holding one covers little.
        0..=0x1f => 0.01,
        b',' | b':' | b'-' | b'/' => 0.006,
        0xc0..=0xff => 0.03,
        0x80..=0xbf => 0.01,
        _ => 0.003,
    }
}

/// Fingerprints for `lits` (lower-cased): each literal contains one, and
/// together they are few and rare. Greedy weighted set cover: the window
/// (`FINGERPRINT` bytes, or a whole shorter literal) with the lowest
/// frequency per literal it newly covers is taken until all are covered,
/// so `error:`, `errors` and `[error]` share `erro`.
fn cover(lits: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut lits: Vec<&[u8]> = lits.iter().map(Vec::as_slice).filter(|l| !l.is_empty()).collect();
    lits.sort();
    lits.dedup();
    let words = lits.len().div_ceil(64);
    let mut candidates: std::collections::HashMap<&[u8], Vec<u64>> = std::collections::HashMap::new();
    for (i, l) in lits.iter().enumerate() {
        let width = l.len().min(FINGERPRINT);
        for w in l.windows(width) {
            candidates.entry(w).or_insert_with(|| vec![0; words])[i / 64] |= 1 << (i % 64);
        }
    }
    // A short window covers every literal that contains it.
    for (w, set) in candidates.iter_mut().filter(|(w, _)| w.len() < FINGERPRINT) {
        for (i, l) in lits.iter().enumerate() {
            if l.windows(w.len()).any(|x| x == *w) {
                set[i / 64] |= 1 << (i % 64);
            }
        }
    }
    let mut candidates: Vec<(&[u8], Vec<u64>, f64)> =
        candidates.into_iter().map(|(w, set)| (w, set, w.iter().map(|&b| frequency(b)).product())).collect();
    candidates.sort_by(|a, b| a.0.cmp(b.0));
    let mut uncovered: Vec<u64> =
        (0..words).map(|k| if (k + 1) * 64 <= lits.len() { !0 } else { (1u64 << (lits.len() % 64)) - 1 }).collect();
    let mut out = Vec::new();
    while uncovered.iter().any(|&w| w != 0) {
        let gain = |set: &[u64]| set.iter().zip(&uncovered).map(|(a, b)| (a & b).count_ones()).sum::<u32>();
        let best = candidates
            .iter()
            .filter_map(|(w, set, f)| {
                let g = gain(set);
                (g > 0).then(|| (f / g as f64, *w, set))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .expect("every literal has its own windows");
        out.push(best.1.to_vec());
        for (u, s) in uncovered.iter_mut().zip(best.2) {
            *u &= !s;
        }
    }
    out
}

/// The literals of [`first_pass`] as one regex string (tests).
pub fn prefilter(patterns: &[String]) -> Option<String> {
    first_pass(patterns).map(|f| {
        let escaped: Vec<String> =
            f.floating.iter().map(|l| l.iter().map(|b| format!("\\x{b:02x}")).collect()).collect();
        escaped.join("|")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lits(p: &str) -> Option<String> {
        prefilter(&[p.to_string()])
    }

    #[test]
    fn fingerprints_are_rare_windows_of_required_strings() {
        // ` error: ` is required; its rarest four bytes are `ror:`.
        assert_eq!(lits(r"(?-u:^\S+:\d+:(?:\d+:)? (?:fatal )?error: )").as_deref(), Some(r"\x72\x6f\x72\x3a"));
        // Case variants share one fingerprint (the search ignores case).
        assert_eq!(lits(r"(?-u:(?i)\bfailed\b)").as_deref(), Some(r"\x66\x61\x69\x6c"));
        // One window covers literals that share it.
        let f = first_pass(&[r"(?-u:warning\b)".to_string(), r"(?-u:\d+ warnings)".to_string()]).unwrap();
        assert_eq!(f.floating.len(), 1, "{:?}", f.floating);
        assert!(lits(r"(?-u:^\s+\d+)").is_none());
        assert!(lits(r"(?-u:ab)").is_none(), "too weak");
        assert!(lits(r"(?-u:(?:=+ )?.*in [\d.]+s)").is_none(), "too weak: `in `");
    }

    #[test]
    fn a_hit_is_checked_against_longer_strings_where_the_pattern_says_what_follows() {
        let f = first_pass(&[r"(?-u:^\S+:\d+:\d+: [CRWI]\d+: )".to_string()]).unwrap();
        let show = |v: &[Vec<u8>]| v.iter().map(|l| String::from_utf8_lossy(l).into_owned()).collect::<Vec<_>>();
        // Fingerprints from `: C`…; checked against `: c0`…`: w9`.
        let mut fps = show(&f.floating);
        fps.sort();
        assert_eq!(fps, [": c", ": i", ": r", ": w"]);
        assert_eq!(f.literals.len(), 40, "{:?}", show(&f.literals));
        assert!(f.literals.iter().all(|l| l.len() == 4 && l[3].is_ascii_digit()), "{:?}", show(&f.literals));
        // Nothing follows, or what follows is not one exact item: as found.
        let f = first_pass(&[r"(?-u:undefined reference to \S+)".to_string()]).unwrap();
        assert_eq!(show(&f.literals), ["undefined reference to "]);
    }

    #[test]
    fn anchored_patterns_become_line_starts() {
        let starts = |p: &str| {
            let f = first_pass(&[p.to_string()]).unwrap();
            assert!(f.floating.is_empty(), "{p}: {:?}", f.floating);
            f.starts
        };
        let e = starts(r"(?m)(?-u:^E {3})");
        assert!(e.contains(b"E       assert 1 == 2"));
        assert!(!e.contains(b"2026-12-02 INFO"));
        // Indented: after any blanks, not at the very start.
        let c = starts(r"(?m)(?-u:^\s+(?:Compiling|Checking) \S)");
        assert!(c.contains(b"   Compiling foo v0.1.0"));
        assert!(c.contains(b"\tchecking"));
        assert!(!c.contains(b"Compiling"));
        assert!(!c.contains(b"   Running"));
        let both = starts(r"(?m)(?-u:^ *at )");
        assert!(both.contains(b"at x") && both.contains(b"    at x"));
        // `={3,}` starts with `==`; colour codes before a start are allowed.
        assert!(starts(r"(?m)(?-u:^={3,} FAILURES)").contains(b"=== FAILURES ==="));
        assert!(starts(r"(?m)(?-u:^(?:\x1b\[[0-9;]*m)*error\[)").contains(b"error[E0308]"));
        // One known byte is too little: the required literal is used.
        let f = first_pass(&[r"(?m)(?-u:^\d+ tests completed)".to_string()]).unwrap();
        assert!(!f.floating.is_empty());
    }
}

#[cfg(test)]
mod probe {
    #[test]
    #[ignore]
    fn print_shipped_literals() {
        let all = crate::family::spec::embedded();
        let srcs: Vec<String> = all
            .iter()
            .flat_map(|f| {
                f.detect
                    .iter()
                    .chain(f.signal.iter().map(|s| &s.pattern))
                    .chain(f.verdict.iter().map(|v| &v.pattern))
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .map(|p| format!("(?mR)(?-u:{p})"))
            .collect();
        for p in &srcs {
            if super::prefilter(std::slice::from_ref(p)).is_none() {
                println!("weak: {p}");
            }
        }
        let fp = super::first_pass(&srcs).unwrap();
        println!("bench line start candidate: {}", fp.starts.contains(b"2026-12-02T10:05:07 INFO"));
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                if fp.starts.contains(&[a, b]) && a.is_ascii_digit() {
                    println!("start {:?}", String::from_utf8_lossy(&[a, b]));
                }
            }
        }
        let Some(l) = super::prefilter(&srcs) else { return };
        let n = l.split('|').count();
        println!("{n} literals: {l}");
        for w in l.split('|') {
            if w.len() < 14 {
                println!("short: {w}");
            }
        }
        let re = regex::bytes::Regex::new(&format!("(?-u:{l})")).unwrap();
        let line = b"2026-12-02T10:05:07 INFO worker=3 request served in 12 ms\n2026-12-02T10:05:08 INFO worker=4 request served in 13 ms\n";
        println!(
            "bench line hit: {:?}",
            re.find(line).map(|m| String::from_utf8_lossy(&line[m.start()..m.end()]).into_owned())
        );
    }
}
#[cfg(test)]
mod probe2 {
    #[test]
    #[ignore]
    fn print_floating_per_pattern() {
        let all = crate::family::spec::embedded();
        for f in &all {
            for p in
                f.detect.iter().chain(f.signal.iter().map(|s| &s.pattern)).chain(f.verdict.iter().map(|v| &v.pattern))
            {
                let src = crate::family::anchors::contract_lines(
                    &format!("(?mR)(?-u:{})", p.replace("{A}", r"(?:\x1b\[[0-9;]*m)*")),
                    false,
                )
                .unwrap();
                let fp = super::first_pass(std::slice::from_ref(&src)).unwrap();
                if !fp.floating.is_empty() {
                    println!(
                        "{:>10} {:60} {:?}",
                        f.name,
                        p,
                        fp.floating.iter().map(|l| String::from_utf8_lossy(l).into_owned()).collect::<Vec<_>>()
                    );
                }
            }
        }
    }
}
