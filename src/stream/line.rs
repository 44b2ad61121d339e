//! One input line as the scanner hands it over, and as the tail ring and the
//! signal keeper keep it.
//!
//! A line longer than twice the keeper's `piece` is kept as its first and
//! last `piece` bytes plus exact byte and character counts, so memory never
//! depends on line length while the end of the line (the verdict) survives.

use crate::text::utf8::count_chars;

/// A complete line's content (terminator and a `\r` before it removed).
#[derive(Debug, Clone, Copy)]
pub enum LineBody<'a> {
    Whole(&'a [u8]),
    /// A line too long to keep whole: its two ends and its true size.
    Cut {
        prefix: &'a [u8],
        suffix: &'a [u8],
        bytes: u64,
        chars: u64,
        /// Carriage returns in the part not kept (counted by the scanner
        /// as the line streamed past, and by `StoredLine` when it drops
        /// more), so a redrawn line can say how often it was redrawn.
        elided_crs: u64,
    },
}

impl LineBody<'_> {
    pub fn bytes(&self) -> u64 {
        match self {
            LineBody::Whole(b) => b.len() as u64,
            LineBody::Cut { bytes, .. } => *bytes,
        }
    }
}

/// An owned line, reusing its allocation when overwritten.
#[derive(Debug, Clone, Default)]
pub struct StoredLine {
    pub lineno: u64,
    data: Vec<u8>,
    /// When cut: `data[..split]` is the prefix, `data[split..]` the suffix.
    split: Option<usize>,
    bytes: u64,
    chars: Option<u64>,
    elided_crs: u64,
}

impl StoredLine {
    pub fn new(lineno: u64, body: LineBody, piece: usize) -> StoredLine {
        let mut s = StoredLine::default();
        s.set(lineno, body, piece);
        s
    }

    /// Overwrites this line, keeping at most `2 * piece` bytes (a long
    /// line redrawn in place: its final frames, see [`redrawn_ends`]).
    pub fn set(&mut self, lineno: u64, body: LineBody, piece: usize) {
        self.lineno = lineno;
        self.data.clear();
        let (prefix, suffix, elided) = match body {
            LineBody::Whole(b) => (b, b, 0),
            LineBody::Cut { prefix, suffix, elided_crs, .. } => (prefix, suffix, elided_crs),
        };
        let (bytes, chars) = match body {
            LineBody::Whole(b) if b.len() <= 2 * piece && redrawn_ends(body).is_none() => {
                self.data.extend_from_slice(b);
                self.split = None;
                self.bytes = b.len() as u64;
                self.chars = None;
                self.elided_crs = 0;
                return;
            }
            LineBody::Whole(b) => (b.len() as u64, count_chars(b)),
            LineBody::Cut { bytes, chars, .. } => (bytes, chars),
        };
        let (p, s) = redrawn_ends(body).unwrap_or_else(|| ends(prefix, suffix, piece));
        // What is dropped: the middle of a whole line, the inner parts of
        // two ends kept before.
        let dropped = match body {
            LineBody::Whole(b) => crs(&b[p.len()..b.len() - s.len()]),
            LineBody::Cut { .. } => {
                let from = ends_overlap(prefix.len(), suffix.len(), bytes).min(suffix.len() - s.len());
                crs(&prefix[p.len()..]) + crs(&suffix[from..suffix.len() - s.len()])
            }
        };
        self.keep_cut(p, s, bytes, chars, elided + dropped);
    }

    fn keep_cut(&mut self, prefix: &[u8], suffix: &[u8], bytes: u64, chars: u64, elided_crs: u64) {
        self.data.extend_from_slice(prefix);
        self.data.extend_from_slice(suffix);
        self.split = Some(prefix.len());
        self.bytes = bytes;
        self.chars = Some(chars);
        self.elided_crs = elided_crs;
    }

    pub fn body(&self) -> LineBody<'_> {
        match self.split {
            None => LineBody::Whole(&self.data),
            Some(k) => LineBody::Cut {
                prefix: &self.data[..k],
                suffix: &self.data[k..],
                bytes: self.bytes,
                chars: self.chars.unwrap_or(0),
                elided_crs: self.elided_crs,
            },
        }
    }

    /// Bytes held in memory.
    pub fn held(&self) -> usize {
        self.data.len()
    }

    /// Bytes of the line in the input.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn take_buffer(self) -> Vec<u8> {
        self.data
    }

    pub fn with_buffer(mut buf: Vec<u8>) -> StoredLine {
        buf.clear();
        StoredLine { data: buf, ..StoredLine::default() }
    }
}

/// A line redrawn in place is kept as its final frames once it is longer
/// than this: `git clone` draws `Receiving objects` two thousand times in
/// one physical line of 140 KB, of which a terminal (and the envelope)
/// shows one frame. Kept whole, such a line outweighs every other line the
/// tail could keep and is the first to go.
pub const REDRAWN_LONG: usize = 4 << 10;
/// Bytes kept of a long redrawn line's start (its first frames: how often
/// it was redrawn is counted in what is kept, a lower bound) and at most
/// of its end, from a carriage return (its last frames).
const REDRAWN_START: usize = 512;
const REDRAWN_END: usize = 2 << 10;

/// A long line redrawn at its end (a `\r` followed by more text in its
/// last `REDRAWN_END` bytes): its first bytes and its last frames, from a
/// carriage return on, so the line settles (`text::redraw`) to what a
/// terminal finally shows. None for any other line.
pub fn redrawn_ends<'a>(body: LineBody<'a>) -> Option<(&'a [u8], &'a [u8])> {
    let (prefix, suffix) = match body {
        LineBody::Whole(b) if b.len() > REDRAWN_LONG => (b, b),
        LineBody::Cut { prefix, suffix, .. } => (prefix, suffix),
        LineBody::Whole(_) => return None,
    };
    let end = &suffix[suffix.len().saturating_sub(REDRAWN_END)..];
    let cr = memchr::memchr(b'\r', end).filter(|&k| k + 1 < end.len())?;
    let (start, _) = ends(prefix, prefix, REDRAWN_START);
    Some((start, &end[cr..]))
}

/// Bytes a line of `content` keeps in memory with pieces of `piece` bytes.
pub fn kept_bytes(content: &[u8], piece: usize) -> usize {
    match redrawn_ends(LineBody::Whole(content)) {
        Some((p, s)) => p.len() + s.len(),
        None => content.len().min(2 * piece),
    }
}

/// Bytes past a piece that `ends` (below) looks at to move a cut to a character
/// boundary. A caller that keeps a long line's ends itself (the scanner's
/// open line) keeps this many more than a piece at each end, so the cut
/// comes out as it would from the whole line.
pub const CUT_SLACK: usize = 3;

/// At most `piece` bytes from the start of `prefix` and from the end of
/// `suffix`, moved to character boundaries (looking up to [`CUT_SLACK`]
/// bytes past the piece) so neither end shows a broken character that the
/// input did not have.
fn ends<'a>(prefix: &'a [u8], suffix: &'a [u8], piece: usize) -> (&'a [u8], &'a [u8]) {
    let mut p = prefix.len().min(piece);
    if p < prefix.len() {
        let mut back = 0;
        while p > 0 && back < 3 && is_continuation(prefix[p]) {
            p -= 1;
            back += 1;
        }
    }
    let mut s = suffix.len().saturating_sub(piece);
    let mut fwd = 0;
    while s > 0 && s < suffix.len() && fwd < 3 && is_continuation(suffix[s]) {
        s += 1;
        fwd += 1;
    }
    (&prefix[..p], &suffix[s..])
}

/// How many of a cut line's first suffix bytes repeat the end of its
/// prefix (the two ends of a line not much longer than the scanner's cap
/// overlap), so that what both hold is counted once.
pub(crate) fn ends_overlap(prefix: usize, suffix: usize, bytes: u64) -> usize {
    let suffix_start = bytes.saturating_sub(suffix as u64);
    (prefix as u64).saturating_sub(suffix_start).min(suffix as u64) as usize
}

/// Carriage returns in `b`.
fn crs(b: &[u8]) -> u64 {
    memchr::memchr_iter(b'\r', b).count() as u64
}

fn is_continuation(b: u8) -> bool {
    (b as i8) < -64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_redrawn_line_keeps_its_final_frames() {
        let frames: Vec<String> = (0..=2000).map(|i| format!("Receiving objects: {:3}% ({i}/2000)", i / 20)).collect();
        let line = frames.join("\r");
        let kept = StoredLine::new(7, LineBody::Whole(line.as_bytes()), 12_000);
        assert!(kept.held() <= REDRAWN_START + REDRAWN_END, "{}", kept.held());
        assert_eq!(kept.bytes(), line.len() as u64);
        let LineBody::Cut { prefix, suffix, chars, elided_crs, .. } = kept.body() else { panic!("kept whole") };
        // Every carriage return is accounted for: in the kept ends or
        // counted in the middle.
        let kept_crs = prefix.iter().chain(suffix).filter(|&&b| b == b'\r').count() as u64;
        assert_eq!(kept_crs + elided_crs, 2000);
        assert!(prefix.starts_with(b"Receiving objects:   0% (0/2000)\r"));
        assert!(suffix.starts_with(b"\r") && suffix.ends_with(b"100% (2000/2000)"));
        assert_eq!(chars, line.len() as u64);
        assert_eq!(kept_bytes(line.as_bytes(), 12_000), kept.held());
        // Already cut to its ends by the scanner: the same.
        let cut = LineBody::Cut {
            prefix: &line.as_bytes()[..12_000],
            suffix: &line.as_bytes()[line.len() - 12_000..],
            bytes: line.len() as u64,
            chars: line.len() as u64,
            elided_crs: 0,
        };
        assert_eq!(StoredLine::new(7, cut, 12_000).body().bytes(), line.len() as u64);
        assert!(StoredLine::new(7, cut, 12_000).held() <= REDRAWN_START + REDRAWN_END);
    }

    #[test]
    fn overlapping_ends_count_their_common_bytes_once() {
        // A 10-byte line kept as its first 6 and last 6 bytes: 2 in common.
        assert_eq!(ends_overlap(6, 6, 10), 2);
        assert_eq!(ends_overlap(4, 4, 10), 0);
        assert_eq!(ends_overlap(12, 6, 10), 6);
    }

    #[test]
    fn other_lines_are_kept_as_before() {
        let plain = "x".repeat(30_000);
        assert_eq!(StoredLine::new(1, LineBody::Whole(plain.as_bytes()), 1000).held(), 2000);
        let short = "50%\r100%";
        assert!(matches!(StoredLine::new(1, LineBody::Whole(short.as_bytes()), 1000).body(), LineBody::Whole(_)));
        // A carriage return only in the middle: not redrawn at its end.
        let middle = format!("{}\r{}", "a".repeat(5000), "b".repeat(5000));
        assert_eq!(redrawn_ends(LineBody::Whole(middle.as_bytes())), None);
        assert_eq!(kept_bytes(middle.as_bytes(), 100), 200);
    }
}
