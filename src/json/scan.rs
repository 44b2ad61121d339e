//! Byte scans that skip strings and never build a tape: `skip_string`, the
//! structure pass of a document (depth, bracket matching, the array to
//! fold), the element splitter, and `prescan`, which finds numbers the
//! tape cannot hold exactly.
//!
//! Invariants:
//! - Nothing here recurses; depth is a counter or an explicit stack.
//! - Numbers are printed as they were written whenever the tape could not
//!   hold them exactly: `prescan` finds integers outside i64/u64 and
//!   floats that f64 would round (more than 15 significant digits),
//!   overflow or flush to zero, keeps their source text and overwrites them
//!   in the parse buffer with a same-length `0`/`0.0` (simd-json rejects
//!   integers past 64 bits); the renderer prints the kept text in their
//!   place.
//! - The splitter may split unbalanced input wrongly, but then a piece
//!   fails to parse, so nothing invalid gets through.

use simd_json::tape::Node;
use simd_json::StaticNode;

use crate::json::parse::{is_ws, trim_ws};

/// A number whose source text is kept because the tape would lose it.
#[derive(Debug, Clone)]
pub(crate) struct SpecialNumber {
    /// Position among all number tokens of the value (0-based).
    pub ordinal: u64,
    pub text: Box<str>,
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// High bit set in each byte of `w` equal to `c`. Borrows can only mark
/// bytes above a true match, so the lowest mark is exact.
#[inline]
fn bytes_equal(w: u64, c: u8) -> u64 {
    let x = w ^ (LO * u64::from(c));
    x.wrapping_sub(LO) & !x & HI
}

/// Skips the string starting at `buf[i] == b'"'`; returns the index after
/// its closing quote (or the end of `buf` when it is unterminated).
#[inline]
pub(crate) fn skip_string(buf: &[u8], mut i: usize) -> usize {
    let n = buf.len();
    i += 1;
    loop {
        // Most strings are short: test 8 bytes at a time for `"` or `\`
        // (SWAR), and hand what is left of a long one to memchr.
        let swar_end = i.saturating_add(64);
        while i + 8 <= n && i < swar_end {
            let mut w = [0u8; 8];
            w.copy_from_slice(&buf[i..i + 8]);
            let w = u64::from_le_bytes(w);
            let m = bytes_equal(w, b'"') | bytes_equal(w, b'\\');
            if m == 0 {
                i += 8;
                continue;
            }
            i += (m.trailing_zeros() / 8) as usize;
            if buf[i] == b'"' {
                return i + 1;
            }
            i += 2;
        }
        if i >= n {
            return n;
        }
        if i + 8 > n {
            while i < n {
                match buf[i] {
                    b'"' => return i + 1,
                    b'\\' => i += 2,
                    _ => i += 1,
                }
            }
            return n;
        }
        match memchr::memchr2(b'"', b'\\', &buf[i..]) {
            Some(k) if buf[i + k] == b'\\' => i += k + 2,
            Some(k) => return i + k + 1,
            None => return n,
        }
    }
}

/// Bytes the structure scans stop at: quote, brackets, comma.
pub(crate) static STRUCTURAL: [bool; 256] = {
    let mut t = [false; 256];
    t[b'"' as usize] = true;
    t[b'[' as usize] = true;
    t[b']' as usize] = true;
    t[b'{' as usize] = true;
    t[b'}' as usize] = true;
    t[b',' as usize] = true;
    t
};

/// One pass over the bytes, skipping strings: finds numbers the tape
/// cannot hold exactly, keeps their text and neutralises them in `buf`
/// with a same-length `0` (integers) or `0.0` (floats) so simd-json
/// accepts them. Malformed number tokens are left for the parser to
/// reject. Only runs when the fast path failed on a number, on samples,
/// and on the output check.
pub(crate) fn prescan(buf: &mut [u8]) -> Vec<SpecialNumber> {
    let n = buf.len();
    let mut specials = Vec::new();
    let mut ordinal = 0u64;
    let mut i = 0;
    while i < n {
        match buf[i] {
            b'"' => i = skip_string(buf, i),
            b'-' | b'0'..=b'9' => {
                let start = i;
                i += 1;
                while i < n && matches!(buf[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') {
                    i += 1;
                }
                let tok = &mut buf[start..i];
                if let Some(float) = special_kind(tok) {
                    let text = String::from_utf8_lossy(tok).into();
                    specials.push(SpecialNumber { ordinal, text });
                    neutralise(tok, float);
                }
                ordinal += 1;
            }
            _ => i += 1,
        }
    }
    specials
}

/// JSON number grammar: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
pub(crate) fn valid_number(t: &[u8]) -> bool {
    let mut i = 0;
    let digits = |i: &mut usize| {
        let s = *i;
        while *i < t.len() && t[*i].is_ascii_digit() {
            *i += 1;
        }
        *i > s
    };
    if t.first() == Some(&b'-') {
        i += 1;
    }
    match t.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return false,
    }
    if t.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i) {
            return false;
        }
    }
    if matches!(t.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(t.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(&mut i) {
            return false;
        }
    }
    i == t.len()
}

/// `Some(is_float)` when the tape cannot hold `t` exactly.
fn special_kind(t: &[u8]) -> Option<bool> {
    let float = t.iter().any(|b| matches!(b, b'.' | b'e' | b'E'));
    if !float {
        let digits = t.len() - usize::from(t.first() == Some(&b'-'));
        if digits <= 18 || !valid_number(t) {
            return None;
        }
        let s = std::str::from_utf8(t).ok()?;
        let fits = if t[0] == b'-' { s.parse::<i64>().is_ok() } else { s.parse::<u64>().is_ok() };
        return (!fits).then_some(false);
    }
    let mantissa_end = t.iter().position(|b| matches!(b, b'e' | b'E')).unwrap_or(t.len());
    let mantissa = &t[..mantissa_end];
    let significant = mantissa.iter().filter(|b| b.is_ascii_digit()).skip_while(|&&b| b == b'0').count();
    let has_exp = mantissa_end < t.len();
    if significant <= 15 && !has_exp {
        return None;
    }
    if !valid_number(t) {
        return None;
    }
    if significant > 15 {
        return Some(true);
    }
    let v: f64 = std::str::from_utf8(t).ok()?.parse().ok()?;
    let underflow = v == 0.0 && mantissa.iter().any(|b| matches!(b, b'1'..=b'9'));
    (!v.is_finite() || underflow).then_some(true)
}

fn neutralise(tok: &mut [u8], float: bool) {
    tok.fill(b' ');
    tok[0] = b'0';
    if float && tok.len() >= 3 {
        tok[1] = b'.';
        tok[2] = b'0';
    }
}

/// Source text of special numbers, by tape node index.
#[derive(Debug, Default)]
pub(crate) struct Specials {
    by_node: Vec<(usize, Box<str>)>,
}

impl Specials {
    /// Matches the pre-scan's number ordinals with the tape's number
    /// nodes (both are in document order).
    pub(crate) fn build(nodes: &[Node<'_>], found: Vec<SpecialNumber>) -> Specials {
        let mut by_node = Vec::with_capacity(found.len());
        if found.is_empty() {
            return Specials { by_node };
        }
        let mut found = found.into_iter().peekable();
        let mut ordinal = 0u64;
        for (idx, node) in nodes.iter().enumerate() {
            if let Node::Static(StaticNode::I64(_) | StaticNode::U64(_) | StaticNode::F64(_)) = node {
                while let Some(s) = found.next_if(|s| s.ordinal <= ordinal) {
                    if s.ordinal == ordinal {
                        by_node.push((idx, s.text));
                    }
                }
                ordinal += 1;
            }
        }
        Specials { by_node }
    }

    pub(crate) fn get(&self, node: usize) -> Option<&str> {
        if self.by_node.is_empty() {
            return None;
        }
        self.by_node.binary_search_by_key(&node, |(i, _)| *i).ok().map(|k| &*self.by_node[k].1)
    }
}

/// An array whose ancestors are all objects (or the root array), found by
/// `scan_structure`: bytes `start..end` (`[` to `]` inclusive) and its
/// rank among such arrays in document order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ArraySpan {
    pub start: usize,
    pub end: usize,
    pub ordinal: usize,
}

#[derive(Debug)]
pub(crate) struct Structure {
    pub max_depth: usize,
    /// The largest candidate array, in bytes (first wins ties).
    pub best: Option<ArraySpan>,
    /// The offsets of the commas between `best`'s elements, when there
    /// were at most [`max_commas`] of them, so its elements can be split
    /// without a second pass over its bytes ([`split_at_commas`]).
    pub best_commas: Option<Vec<usize>>,
}

/// Element separators recorded for a `len`-byte document: one for each
/// 64 bytes, so the record stays under an eighth of the document. An array
/// of smaller elements is split by a second pass instead.
pub(crate) fn max_commas(len: usize) -> usize {
    len / 64
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum ScanError {
    TooDeep(usize),
    Broken(usize),
}

/// One pass over the bytes, skipping strings: nesting depth (stopping past
/// `limit`), bracket matching, and the largest array reachable through
/// object keys only. Scalars are left to simd-json.
pub(crate) fn scan_structure(b: &[u8], limit: usize) -> Result<Structure, ScanError> {
    struct Open {
        close: u8,
        all_objects: bool,
        start: usize,
        ordinal: Option<usize>,
    }
    let mut stack: Vec<Open> = Vec::new();
    let mut out = Structure { max_depth: 0, best: None, best_commas: None };
    let mut candidates = 0;
    // Candidates never nest (a candidate's parents are all objects, its
    // children are in an array), so one is open at a time, at this depth.
    let mut open_candidate: Option<usize> = None;
    let mut commas: Vec<usize> = Vec::new();
    let mut commas_ok = true;
    let cap = max_commas(b.len());
    let mut i = 0;
    while i < b.len() {
        if !STRUCTURAL[usize::from(b[i])] {
            i += 1;
            continue;
        }
        match b[i] {
            b'"' => {
                i = skip_string(b, i);
                continue;
            }
            c @ (b'[' | b'{') => {
                if stack.len() >= limit {
                    return Err(ScanError::TooDeep(i));
                }
                let parent_objects = stack.last().is_none_or(|p| p.all_objects);
                let array = c == b'[';
                let ordinal = (array && parent_objects).then(|| {
                    candidates += 1;
                    candidates - 1
                });
                stack.push(Open {
                    close: if array { b']' } else { b'}' },
                    all_objects: parent_objects && !array,
                    start: i,
                    ordinal,
                });
                if ordinal.is_some() {
                    open_candidate = Some(stack.len());
                    commas.clear();
                    commas_ok = true;
                }
                out.max_depth = out.max_depth.max(stack.len());
            }
            c @ (b']' | b'}') => {
                let Some(open) = stack.pop() else { return Err(ScanError::Broken(i)) };
                if open.close != c {
                    return Err(ScanError::Broken(i));
                }
                if let Some(ordinal) = open.ordinal {
                    open_candidate = None;
                    let span = ArraySpan { start: open.start, end: i + 1, ordinal };
                    if out.best.is_none_or(|b| span.end - span.start > b.end - b.start) {
                        out.best = Some(span);
                        out.best_commas = commas_ok.then(|| std::mem::take(&mut commas));
                    }
                }
            }
            b',' if open_candidate == Some(stack.len()) => {
                if commas.len() < cap {
                    commas.push(i);
                } else {
                    commas_ok = false;
                }
            }
            _ => {}
        }
        i += 1;
    }
    if !stack.is_empty() {
        return Err(ScanError::Broken(b.len()));
    }
    Ok(out)
}

/// Calls `f(offset, element)` for each element of the array `span` (each
/// trimmed of whitespace; empty when two commas meet) until `f` says stop.
/// Returns the deepest nesting inside the array (0: flat), stopping with
/// `TooDeep` when the array's contents pass `limit - 1` levels.
pub(crate) fn split_elements(
    b: &[u8],
    span: ArraySpan,
    limit: usize,
    mut f: impl FnMut(usize, &[u8]) -> bool,
) -> Result<usize, ScanError> {
    let (start, end) = (span.start + 1, (span.end - 1).min(b.len()));
    if start >= end || trim_ws(&b[start..end]).is_empty() {
        return Ok(0);
    }
    let mut emit = |from: usize, to: usize| {
        let piece = &b[from..to];
        let lead = piece.iter().take_while(|&&c| is_ws(c)).count();
        f(from + lead, trim_ws(piece))
    };
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut from = start;
    let mut i = start;
    while i < end {
        if !STRUCTURAL[usize::from(b[i])] {
            i += 1;
            continue;
        }
        match b[i] {
            b'"' => {
                i = skip_string(b, i).min(end);
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth >= limit {
                    return Err(ScanError::TooDeep(i));
                }
                deepest = deepest.max(depth);
            }
            // Unbalanced input splits wrongly, but then a piece fails to
            // parse, so nothing invalid gets through.
            b']' | b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                if !emit(from, i) {
                    return Ok(deepest);
                }
                from = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    emit(from, end);
    Ok(deepest)
}

/// [`split_elements`] for an array whose separators `scan_structure`
/// already found (`commas`, in order): the same pieces, handed to `f` the
/// same way, without reading the array's bytes again.
pub(crate) fn split_at_commas(b: &[u8], span: ArraySpan, commas: &[usize], mut f: impl FnMut(usize, &[u8]) -> bool) {
    let (start, end) = (span.start + 1, (span.end - 1).min(b.len()));
    if start >= end || trim_ws(&b[start..end]).is_empty() {
        return;
    }
    let mut emit = |from: usize, to: usize| {
        let piece = &b[from..to];
        let lead = piece.iter().take_while(|&&c| is_ws(c)).count();
        f(from + lead, trim_ws(piece))
    };
    let mut from = start;
    for &c in commas {
        if !emit(from, c) {
            return;
        }
        from = c + 1;
    }
    emit(from, end);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::sample::{try_render, Caps, Item};

    #[test]
    fn specials_are_found_and_neutralised() {
        let doc = r#"{"a":"9999999999999999999999","b":[340282366920938463463374607431768211455,-1,1e400,0.1000000000000000055511151231257827,1.5,-9223372036854775809,18446744073709551615]}"#;
        let mut b = doc.as_bytes().to_vec();
        let found = prescan(&mut b);
        let texts: Vec<&str> = found.iter().map(|s| &*s.text).collect();
        assert_eq!(
            texts,
            [
                "340282366920938463463374607431768211455",
                "1e400",
                "0.1000000000000000055511151231257827",
                "-9223372036854775809"
            ]
        );
        let ords: Vec<u64> = found.iter().map(|s| s.ordinal).collect();
        assert_eq!(ords, [0, 2, 3, 5]);
        let tape = simd_json::to_tape(&mut b).expect("parses after neutralising");
        let sp = Specials::build(&tape.0, found);
        let item = Item { nodes: &tape.0, base: 0, specials: &sp };
        let r = try_render(&item, Caps::default(), 10_000).expect("fits");
        // Every number as written, except one past f64's range: its exact
        // text as a string, so common parsers accept the envelope.
        assert_eq!(r.text, doc.replace(",1e400,", ",\"1e400\","));
        serde_json::from_str::<serde_json::Value>(&r.text).expect("serde_json parses it");
    }

    #[test]
    fn invalid_numbers_are_left_for_the_parser() {
        let mut b = b"[012345678901234567890123, 1.e5]".to_vec();
        assert!(prescan(&mut b).is_empty());
        assert!(simd_json::to_tape(&mut b).is_err());
    }

    #[test]
    fn strings_are_skipped_exactly() {
        let b = br#""a\"b\\" x"#;
        assert_eq!(skip_string(b, 0), 8);
        // Every length and escape position, against a plain loop.
        for len in 0..200 {
            for esc in [None, Some(0), Some(7), Some(8), Some(63), Some(64), Some(150)] {
                let mut v = vec![b'"'];
                let mut body = vec![b'x'; len];
                if let Some(e) = esc.filter(|&e| e + 1 < len) {
                    body[e] = b'\\';
                    body[e + 1] = b'"';
                }
                v.extend_from_slice(&body);
                v.extend_from_slice(b"\" tail");
                let mut j = 1;
                let expect = loop {
                    match v[j] {
                        b'"' => break j + 1,
                        b'\\' => j += 2,
                        _ => j += 1,
                    }
                };
                assert_eq!(skip_string(&v, 0), expect, "len {len} esc {esc:?}");
            }
        }
        // An escape at the very end does not read past the buffer.
        assert_eq!(skip_string(b"\"abc\\", 0), 5);
        assert_eq!(skip_string(b"\"abc", 0), 4);
    }

    #[test]
    fn recorded_commas_split_like_the_second_pass() {
        let pieces = |doc: &str| {
            let b = doc.as_bytes();
            let s = scan_structure(b, 1024).expect("balanced");
            let span = s.best.expect("a candidate");
            let mut two = Vec::new();
            split_elements(b, span, usize::MAX, |at, e| {
                two.push((at, e.to_vec()));
                true
            })
            .unwrap();
            let mut one = Vec::new();
            if let Some(c) = &s.best_commas {
                split_at_commas(b, span, c, |at, e| {
                    one.push((at, e.to_vec()));
                    true
                });
            }
            (s.best_commas.is_some(), one, two)
        };
        let pad = " ".repeat(400);
        for doc in [
            format!(r#"{{"a":[{{"s":"x,]}}\"[,"}}, [1,[2,3]] ,{{}}, "t,u"],"b":[1,2]}}{pad}"#),
            format!(r#"{{"a":{{"b":[ ]}}, "c":[1,,2]}}{pad}"#),
            format!(r#"{{"x":[{{"y":[5,6]}}],"z":{{"w":[7, 8,9 ]}}}}{pad}"#),
            format!(r#"{{"a":[]}}{pad}"#),
        ] {
            let (recorded, one, two) = pieces(&doc);
            assert!(recorded, "{doc}");
            assert_eq!(one, two, "{doc}");
        }
        // Past the cap (one comma per 64 bytes): not recorded.
        let (recorded, _, _) = pieces(r#"{"a":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]}"#);
        assert!(!recorded);
    }
}
