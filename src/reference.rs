//! The naive reference model of the text contract, for the property tests,
//! the integration tests and the fuzz targets: read everything into memory,
//! split it into lines, test each line alone. Slow and obviously right on
//! purpose; the scanner must agree with it for any split of the input.
//! Beside it, the fixtures those tests share: feeding a scanner in given
//! blocks, and a fold context. Not used by the tool itself.

use regex::bytes::Regex;

use crate::json::FoldContext;
use crate::render::facts::RunFacts;
use crate::stream::scan::{ScanConfig, Scanner};

/// A new scanner fed `blocks` in order, finished.
pub fn scan_blocks<'a>(cfg: ScanConfig, blocks: impl IntoIterator<Item = &'a [u8]>) -> Scanner {
    let mut sc = Scanner::new(cfg);
    for b in blocks {
        sc.feed(b);
    }
    sc.finish();
    sc
}

/// `data` cut at the increasing offsets `ends` (the rest is one more block).
pub fn blocks_at<'a>(data: &'a [u8], ends: &[usize]) -> Vec<&'a [u8]> {
    let mut v = Vec::with_capacity(ends.len() + 1);
    let mut pos = 0;
    for &e in ends {
        let e = e.clamp(pos, data.len());
        v.push(&data[pos..e]);
        pos = e;
    }
    v.push(&data[pos..]);
    v
}

/// The run facts of [`fold_context`]: label `t`, a stored copy, no run
/// facts.
pub fn run_facts() -> &'static RunFacts {
    static FACTS: std::sync::LazyLock<RunFacts> = std::sync::LazyLock::new(|| RunFacts {
        label: "t".into(),
        id: "t-0123456789ab".into(),
        full_output: Some("/store/t-0123456789ab".into()),
        ..RunFacts::default()
    });
    &FACTS
}

/// A fold context for tests and benches: [`run_facts`], 8 samples.
pub fn fold_context(budget: usize) -> FoldContext<'static> {
    FoldContext { facts: run_facts(), bytes: 0, chars: 0, budget, samples: crate::stream::defaults::SAMPLES }
}

/// What the contract says the header counts and the tail holds.
#[derive(Debug, Clone)]
pub struct Model {
    pub chars: u64,
    pub bytes: u64,
    /// Lines without their terminator (`\n`, or `\r\n`).
    pub lines: Vec<Vec<u8>>,
    /// Per line: whether the signal matches it alone.
    pub matched: Vec<bool>,
    pub hits: u64,
    pub unterminated: bool,
    pub binary: bool,
}

pub fn model(data: &[u8], re: &Regex) -> Model {
    let mut lines: Vec<Vec<u8>> = data.split(|&b| b == b'\n').map(|l| l.to_vec()).collect();
    if data.ends_with(b"\n") || data.is_empty() {
        lines.pop();
    }
    for l in &mut lines {
        if l.ends_with(b"\r") {
            l.pop();
        }
    }
    // A final unterminated line keeps a trailing \r: it is not a CRLF.
    if !data.ends_with(b"\n") && data.ends_with(b"\r") {
        if let Some(l) = lines.last_mut() {
            l.push(b'\r');
        }
    }
    let matched: Vec<bool> = lines.iter().map(|l| re.is_match(l)).collect();
    let hits = matched.iter().filter(|&&m| m).count() as u64;
    Model {
        chars: lossy_chars(data),
        bytes: data.len() as u64,
        lines,
        matched,
        hits,
        unterminated: !data.is_empty() && !data.ends_with(b"\n"),
        binary: data.contains(&0),
    }
}

/// Characters as `String::from_utf8_lossy` counts them.
pub fn lossy_chars(b: &[u8]) -> u64 {
    String::from_utf8_lossy(b).chars().count() as u64
}

/// Classifies `lines` in order twice, with the classification cache and
/// without it (`family::cache`), and says where they first differ: a
/// line's class or kind, or at the end a family's evidence or verdict.
pub fn cached_agrees<'a>(
    c: &crate::family::Classifier,
    lines: impl IntoIterator<Item = &'a [u8]>,
) -> Result<(u64, u64), String> {
    let (mut cached, mut whole) = (c.tally(), c.tally());
    whole.set_caching(false);
    let mut errors = 0;
    for (i, line) in lines.into_iter().enumerate() {
        let lineno = i as u64 + 1;
        let a = c.classify(lineno, line, &mut cached);
        let b = c.classify(lineno, line, &mut whole);
        if a != b {
            return Err(format!("line {lineno} {:?}: cached {a:?}, whole {b:?}", String::from_utf8_lossy(line)));
        }
        if a.is_some_and(|k| k.kind) && cached.kind() != whole.kind() {
            return Err(format!("line {lineno}: kind {:?} against {:?}", cached.kind(), whole.kind()));
        }
        errors += a.is_some_and(|k| k.severity == crate::family::Severity::Error) as u64;
    }
    for f in 0..c.family_count() {
        let name = c.family_name(f);
        if cached.evidence(f) != whole.evidence(f) {
            return Err(format!("{name}: evidence {} against {}", cached.evidence(f), whole.evidence(f)));
        }
        if c.verdict(&cached, f, errors) != c.verdict(&whole, f, errors) {
            return Err(format!(
                "{name}: verdict {:?} against {:?}",
                c.verdict(&cached, f, errors),
                c.verdict(&whole, f, errors)
            ));
        }
    }
    Ok(cached.cache_counts())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_belongs_to_the_terminator_but_a_final_cr_to_the_line() {
        let re = Regex::new("x").unwrap();
        let m = model(b"ax\r\nb\n\xffc\r", &re);
        assert_eq!(m.lines, vec![b"ax".to_vec(), b"b".to_vec(), b"\xffc\r".to_vec()]);
        assert_eq!((m.hits, m.chars, m.bytes, m.unterminated, m.binary), (1, 9, 9, true, false));
        assert!(model(b"", &re).lines.is_empty());
    }

    #[test]
    fn blocks_at_cuts_at_each_end_and_keeps_the_rest() {
        let v = blocks_at(b"abcdef", &[2, 2, 5, 9]);
        assert_eq!(v, vec![&b"ab"[..], b"", b"cde", b"f", b""]);
        assert_eq!(v.concat(), b"abcdef");
    }
}
