//! The cache's rechecks against the patterns they stand for.

use super::*;

use crate::text::secrets::samples::Rng;

/// The literals of a pattern's syntax tree, which lines are made of.
fn literals(h: &regex_syntax::hir::Hir, out: &mut Vec<Vec<u8>>) {
    use regex_syntax::hir::HirKind;
    match h.kind() {
        HirKind::Literal(l) => out.push(l.0.to_vec()),
        HirKind::Capture(c) => literals(&c.sub, out),
        HirKind::Repetition(r) => literals(&r.sub, out),
        HirKind::Concat(xs) | HirKind::Alternation(xs) => xs.iter().for_each(|x| literals(x, out)),
        _ => {}
    }
}

/// Digits, word edges, case variants, line edges and bytes above ASCII,
/// around a pattern's own literals.
const WORDS: &[&[u8]] = &[
    b"0",
    b"1",
    b"9",
    b"10",
    b"007",
    b"2026-12-02T10:07:07Z",
    b" ",
    b"  ",
    b"\t",
    b"_",
    b"a",
    b"Z",
    b"-",
    b".",
    b":",
    b"=",
    b"\"",
    b"'",
    b"/",
    b"(",
    b")",
    b"[",
    b"]",
    b",",
    b"\r",
    b"\xc3\xa9",
    b"\xe6\x97\xa5",
    b"\xff",
    b"\x80",
    b" failed",
    b" FAILED",
    b" Failure",
    b" errors",
    b" error",
    b"HTTP/1.1\" ",
    b"ERROR",
    b"warning",
];

/// A string `h` may match (its look-arounds aside), picked at random.
fn sample(h: &regex_syntax::hir::Hir, rng: &mut Rng, out: &mut Vec<u8>) {
    use regex_syntax::hir::{Class, HirKind};
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(l) => out.extend_from_slice(&l.0),
        HirKind::Class(Class::Bytes(c)) if !c.ranges().is_empty() => {
            let r = c.ranges()[rng.below(c.ranges().len())];
            out.push(r.start() + rng.below(usize::from(r.end() - r.start()) + 1) as u8);
        }
        HirKind::Class(Class::Unicode(c)) if !c.ranges().is_empty() => {
            let r = c.ranges()[rng.below(c.ranges().len())];
            let n = u32::from(r.end()) - u32::from(r.start()) + 1;
            let ch = char::from_u32(u32::from(r.start()) + rng.below(n as usize) as u32).unwrap_or(r.start());
            out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
        }
        HirKind::Class(_) => {}
        HirKind::Capture(c) => sample(&c.sub, rng, out),
        HirKind::Repetition(r) => {
            let extra = r.max.map_or(3, |m| (m - r.min).min(3));
            for _ in 0..r.min + rng.below(extra as usize + 1) as u32 {
                sample(&r.sub, rng, out);
            }
        }
        HirKind::Concat(xs) => xs.iter().for_each(|x| sample(x, rng, out)),
        HirKind::Alternation(xs) => sample(&xs[rng.below(xs.len())], rng, out),
    }
}

/// Random lines for a pattern: strings it may match, with a byte changed
/// here and there (a digit, a letter's case, a word character), among
/// [`WORDS`] and the pattern's own literals, and digit runs between them.
fn lines(src: &str, n: usize, rng: &mut Rng) -> Vec<Vec<u8>> {
    let hir = regex_syntax::ParserBuilder::new().utf8(false).build().parse(src).unwrap();
    let mut words: Vec<Vec<u8>> = WORDS.iter().map(|w| w.to_vec()).collect();
    literals(&hir, &mut words);
    (0..n)
        .map(|_| {
            let mut line = Vec::new();
            for _ in 0..rng.below(6) {
                if rng.below(3) == 0 {
                    sample(&hir, rng, &mut line);
                } else {
                    line.extend_from_slice(&words[rng.below(words.len())]);
                }
                if rng.below(4) == 0 {
                    line.extend(std::iter::repeat_n(b'0' + rng.below(10) as u8, 1 + rng.below(3)));
                }
            }
            for _ in 0..rng.below(3) {
                if line.is_empty() {
                    break;
                }
                let at = rng.below(line.len());
                line[at] = match rng.below(4) {
                    0 => b'0',
                    1 => b'1' + rng.below(9) as u8,
                    2 => line[at] ^ 0x20,
                    _ => b'x',
                };
            }
            line
        })
        .collect()
}

/// Every pattern the cache reruns on its own (`Single`), asked through its
/// recheck (whole digit runs, required strings, where the search begins)
/// and as a plain regex search of the line, on lines made of digits, word
/// edges, case variants and the pattern's own literals: the answers agree.
#[test]
fn every_single_answers_as_its_regex() {
    let c = Classifier::new(&super::super::spec::embedded(), &FamilyOptions::default()).unwrap();
    let plan = c.plan();
    let mut rng = Rng::new(1);
    let mut with_inner = 0;
    for (i, src) in c.set_sources.iter().enumerate() {
        let at = plan.in_set[i];
        if at == u32::MAX || at >> 31 == 0 {
            continue;
        }
        let single = &plan.singles[(at & !(1 << 31)) as usize];
        with_inner += single.inner.is_some() as usize;
        let mut matched = 0;
        for line in lines(src, 4000, &mut rng) {
            // A line with an escape byte is classified without the cache.
            let Some(mask) = crate::text::mask::plain_mask(&line) else { continue };
            let want = single.re.is_match(&line);
            assert_eq!(single.is_match(&line, mask.lone_digits), want, "{src} on {:?}", String::from_utf8_lossy(&line));
            matched += want as usize;
        }
        // Lines that match and lines that do not, or the test says little.
        assert!((40..3960).contains(&matched), "{src}: {matched} of 4000 lines match");
    }
    // `\b[1-9]\d* (?:failed|failures?|errors?|failing)\b` at least.
    assert!(with_inner >= 1);
}

/// Every shipped pattern that has inner literals (`inner::InnerStart`),
/// not only those the cache reruns: a search from where it says a match
/// can begin answers as a search of the whole line.
#[test]
fn every_inner_start_answers_as_its_regex() {
    let c = Classifier::new(&super::super::spec::embedded(), &FamilyOptions::default()).unwrap();
    let mut rng = Rng::new(2);
    let mut with_inner = 0;
    for src in &c.set_sources {
        let hir = regex_syntax::ParserBuilder::new().utf8(false).build().parse(src).unwrap();
        let Some(inner) = super::super::inner::InnerStart::new(&hir) else { continue };
        with_inner += 1;
        let re = meta::Builder::new().syntax(syntax::Config::new().utf8(false)).build(src).unwrap();
        let mut matched = 0;
        for line in lines(src, 1000, &mut rng) {
            let want = re.is_match(&line);
            let via = inner.start(&line).is_some_and(|s| re.is_match(Input::new(&line).range(s..)));
            assert_eq!(via, want, "{src} on {:?}", String::from_utf8_lossy(&line));
            matched += want as usize;
        }
        assert!((10..990).contains(&matched), "{src}: {matched} of 1000 lines match");
    }
    assert!(with_inner >= 3);
}
