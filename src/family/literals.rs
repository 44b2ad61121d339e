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

/// Strings of which every match of `h` contains one.
fn required(h: &Hir) -> Option<Vec<Lit>> {
    if let Some(e) = exact(h) {
        if e.iter().all(|l| !l.0.is_empty()) {
            return Some(e);
        }
    }
    match h.kind() {
        HirKind::Capture(c) => required(&c.sub),
        HirKind::Repetition(r) if r.min >= 1 => {
            // `={70}` needs `========` (eight in a row at least).
            let rep = exact(&r.sub).and_then(|e| power(&e, r.min.min(8)));
            match rep {
                Some(v) if v.iter().all(|l| !l.0.is_empty()) => Some(v),
                _ => required(&r.sub),
            }
        }
        HirKind::Alternation(xs) => {
            let mut acc = Vec::new();
            for x in xs {
                acc.extend(required(x)?);
            }
            Some(acc)
        }
        HirKind::Concat(xs) => {
            let mut best: Option<Vec<Lit>> = None;
            let mut consider = |v: Vec<Lit>| {
                if v.iter().all(|l| !l.0.is_empty()) && best.as_ref().is_none_or(|b| score(&v) > score(b)) {
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
                                consider(r);
                                Some(e)
                            }
                            Some(r) => Some(r.iter().flat_map(|a| e.iter().map(move |b| a.cat(b))).collect()),
                        };
                    }
                    None => {
                        if let Some(r) = run.take() {
                            consider(r);
                        }
                        if let Some(req) = required(x) {
                            consider(req);
                        }
                    }
                }
            }
            if let Some(r) = run {
                consider(r);
            }
            best
        }
        _ => None,
    }
}

/// Literals are cut shorter (down to 6 bytes) while there are more than
/// this: fewer literals search faster.
const MAX_LITERALS: usize = 126;

/// The first pass: literals searched anywhere, and the first two bytes
/// (ASCII-lower-cased) of lines that a line-start literal (`\nE   ` for
/// `^E {3}`) can begin.
#[derive(Debug, Clone)]
pub struct FirstPass {
    /// Plain literals (case variants spelled out); may be empty.
    pub floating: Vec<Vec<u8>>,
    /// Line starts that make a line a candidate.
    pub starts: LineStarts,
}

/// 65,536 bits: bit `a << 8 | b` set when a line starting with the
/// (ASCII-lower-cased) bytes `a b` is a candidate.
#[derive(Debug, Clone)]
pub struct LineStarts(Vec<u64>);

impl LineStarts {
    fn new() -> LineStarts {
        LineStarts(vec![0u64; 1024])
    }

    fn key(a: u8, b: u8) -> usize {
        (a.to_ascii_lowercase() as usize) << 8 | b.to_ascii_lowercase() as usize
    }

    fn set(&mut self, a: u8, b: u8) {
        let k = LineStarts::key(a, b);
        self.0[k >> 6] |= 1 << (k & 63);
    }

    /// Whether a line starting with `line` can be a candidate by its start.
    pub fn contains(&self, line: &[u8]) -> bool {
        let k = LineStarts::key(line.first().copied().unwrap_or(0), line.get(1).copied().unwrap_or(0));
        self.0[k >> 6] >> (k & 63) & 1 == 1
    }
}

/// The first pass for `patterns`, or None when one of them has no usable
/// literal. A case-insensitive literal is searched as written in lower
/// case, Capitalised and UPPER case (`error`, `Error`, `ERROR`): other
/// mixes (`eRRor`) are not found by the first pass.
pub fn first_pass(patterns: &[String]) -> Option<FirstPass> {
    let mut floating: Vec<Vec<u8>> = Vec::new();
    let mut starts = LineStarts::new();
    for p in patterns {
        let hir = regex_syntax::ParserBuilder::new().utf8(false).build().parse(p).ok()?;
        let req = required(&hir)?;
        if req.iter().any(|l| strength(l) < MIN_STRENGTH) {
            return None;
        }
        for l in req {
            if l.0.first() == Some(&(b'\n', false)) {
                match (l.0.get(1), l.0.get(2)) {
                    (Some(&(a, _)), Some(&(b, _))) => starts.set(a, b),
                    (Some(&(a, _)), None) => (0..=255u8).for_each(|b| starts.set(a, b)),
                    _ => return None,
                }
                continue;
            }
            let lower: Vec<u8> = l.0.iter().map(|&(b, ci)| if ci { b.to_ascii_lowercase() } else { b }).collect();
            floating.push(lower.clone());
            if l.0.iter().any(|&(_, ci)| ci) {
                let upper: Vec<u8> = l.0.iter().map(|&(b, ci)| if ci { b.to_ascii_uppercase() } else { b }).collect();
                let mut cap = lower.clone();
                if let Some(i) = l.0.iter().position(|&(b, ci)| ci && b.is_ascii_alphabetic()) {
                    cap[i] = cap[i].to_ascii_uppercase();
                }
                floating.push(upper);
                floating.push(cap);
            }
        }
    }
    let mut best = minimal(&floating, usize::MAX);
    for k in (6..=8).rev() {
        if best.len() <= MAX_LITERALS {
            break;
        }
        best = minimal(&floating, k);
    }
    Some(FirstPass { floating: best, starts })
}

/// The literals of [`first_pass`] as one regex string (tests).
pub fn prefilter(patterns: &[String]) -> Option<String> {
    first_pass(patterns).map(|f| {
        let escaped: Vec<String> =
            f.floating.iter().map(|l| l.iter().map(|b| format!("\\x{b:02x}")).collect()).collect();
        escaped.join("|")
    })
}

/// The literals cut to `k` bytes (at a character boundary), without
/// duplicates or strings that contain a shorter one.
fn minimal(all: &[Vec<u8>], k: usize) -> Vec<Vec<u8>> {
    let mut cut: Vec<Vec<u8>> = all
        .iter()
        .map(|l| {
            let mut n = l.len().min(k);
            while n < l.len() && n > 0 && (l[n] as i8) < -64 {
                n += 1;
            }
            l[..n].to_vec()
        })
        .collect();
    cut.sort_by_key(|l| l.len());
    cut.dedup();
    let mut kept: Vec<Vec<u8>> = Vec::new();
    for l in cut {
        if !kept.iter().any(|k| l.windows(k.len()).any(|w| w == &k[..])) {
            kept.push(l);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lits(p: &str) -> Option<String> {
        prefilter(&[p.to_string()])
    }

    #[test]
    fn finds_the_longest_required_string() {
        assert_eq!(
            lits(r"(?-u:^\S+:\d+:(?:\d+:)? (?:fatal )?error: )").as_deref(),
            Some(r"\x20\x65\x72\x72\x6f\x72\x3a\x20")
        );
        assert_eq!(
            lits(r"(?-u:(?i)\bfailed\b)").as_deref(),
            Some(r"\x66\x61\x69\x6c\x65\x64|\x46\x41\x49\x4c\x45\x44|\x46\x61\x69\x6c\x65\x64")
        );
        let f = first_pass(&[r"(?m)(?-u:^E {3})".to_string()]).unwrap();
        assert!(f.floating.is_empty());
        assert!(f.starts.contains(b"E       assert 1 == 2"));
        assert!(!f.starts.contains(b"2026-12-02 INFO"));
        assert!(lits(r"(?-u:^\s+\d+)").is_none());
        assert!(lits(r"(?-u:ab)").is_none(), "too weak");
        assert!(lits(r"(?-u:(?:=+ )?.*in [\d.]+s)").is_none(), "too weak: `in `");
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
