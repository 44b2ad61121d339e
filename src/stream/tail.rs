//! The last lines of the input, bounded in lines and in bytes.
//!
//! Only the lines that could still be printed are kept: the asked number of
//! lines within what the tail budget could ever show (a character is at
//! most four bytes), and more while the envelope could still show them
//! when the other parts leave room: up to `room` bytes before the newest
//! line (a full budget of one-byte characters; text of wider characters
//! grows the tail less far) and no more lines than `room` (a shown line
//! costs at least one character; a folded run is kept line by line, so
//! this bounds memory, not what a fold can stand for). Pushing every line
//! of a block would cost time in proportion to the input: the walk back
//! over a block stops at these bounds. The newest line is always kept, cut
//! to its two ends when long. A block's complete lines
//! are pushed from its end backwards, so the cost per block is the size of
//! the tail, not of the block.

use std::collections::VecDeque;

use memchr::memrchr;

use crate::stream::line::{LineBody, StoredLine};

#[derive(Debug)]
pub struct TailRing {
    lines: VecDeque<StoredLine>,
    spare: Vec<Vec<u8>>,
    max_lines: usize,
    /// Bytes kept from each end of a long line.
    piece: usize,
    /// Bytes of the lines older than the newest one worth keeping.
    older_cap: usize,
    /// Bytes held by all kept lines, one more each for its terminator.
    held: usize,
    /// Reused by `push_region` for the line bounds it walks back over.
    scratch: Vec<(usize, usize)>,
}

impl TailRing {
    /// Keeps at least `min_lines` lines (when their bytes allow), and
    /// lines up to `room` characters of the envelope; a long line keeps the
    /// ends `piece_for(tail_budget)` gives.
    pub fn new(min_lines: usize, tail_budget: usize, room: usize) -> TailRing {
        TailRing {
            lines: VecDeque::new(),
            spare: Vec::new(),
            max_lines: min_lines.max(room),
            piece: piece_for(tail_budget),
            older_cap: tail_budget.max(64).saturating_mul(4).max(room),
            held: 0,
            scratch: Vec::new(),
        }
    }

    pub fn push(&mut self, lineno: u64, body: LineBody) {
        if self.max_lines == 0 {
            return;
        }
        let buf = self.spare.pop().unwrap_or_default();
        let line = {
            let mut l = StoredLine::with_buffer(buf);
            l.set(lineno, body, self.piece);
            l
        };
        self.held += line.held() + 1;
        self.lines.push_back(line);
        self.evict();
    }

    /// Pushes the complete lines of `region` (which ends with `\n`); the
    /// first of them is line `first`.
    pub fn push_region(&mut self, region: &[u8], first: u64, count: u64) {
        if self.max_lines == 0 || region.is_empty() {
            return;
        }
        // Walk back over the lines that could survive eviction: the newest
        // always, older ones until the line cap, or until their bytes (as
        // `held` will count them, underestimated) certainly pass the byte
        // cap; `evict` then decides exactly, as it does for single pushes,
        // so the result does not depend on how the input was split.
        let mut starts = std::mem::take(&mut self.scratch);
        starts.clear();
        let mut end = region.len() - 1; // index of the '\n' ending the line
        let mut older = 0;
        let reached_start = loop {
            let start = memrchr(b'\n', &region[..end]).map_or(0, |k| k + 1);
            if !starts.is_empty() {
                if starts.len() >= self.max_lines || older > self.older_cap {
                    break false;
                }
                let content = strip_cr(&region[start..end]);
                older +=
                    crate::stream::line::kept_bytes(content, self.piece).min((2 * self.piece).saturating_sub(8)) + 1;
            }
            starts.push((start, end));
            if start == 0 {
                break true;
            }
            end = start - 1;
        };
        if !reached_start {
            // Lines before the region can no longer join the kept ones
            // without a gap.
            while let Some(old) = self.lines.pop_front() {
                self.spare.push(old.take_buffer());
            }
            self.held = 0;
        }
        let last = first + count - 1;
        let n = starts.len() as u64;
        for (i, &(s, e)) in starts.iter().rev().enumerate() {
            let lineno = last + 1 - n + i as u64;
            self.push(lineno, LineBody::Whole(strip_cr(&region[s..e])));
        }
        self.scratch = starts;
    }

    fn evict(&mut self) {
        let newest = self.lines.back().map_or(0, |l| l.held() + 1);
        while self.lines.len() > self.max_lines || (self.lines.len() > 1 && self.held - newest > self.older_cap) {
            let old = self.lines.pop_front().expect("non-empty");
            self.held -= old.held() + 1;
            self.spare.push(old.take_buffer());
        }
    }

    /// Kept lines, oldest first.
    pub fn lines(&self) -> impl DoubleEndedIterator<Item = &StoredLine> + ExactSizeIterator {
        self.lines.iter()
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

/// Bytes kept from each end of a long tail line: enough for the whole tail
/// budget, and at least 4 x 512 so an escape sequence (at most
/// `sanitize::MAX_SEQUENCE` chars) cannot span into a kept end's last
/// characters. The scanner keeps at least as much of an open line.
pub fn piece_for(tail_budget: usize) -> usize {
    tail_budget.max(512).saturating_mul(4)
}

/// The line's content without the `\r` of a CRLF terminator.
pub fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linenos(t: &TailRing) -> Vec<u64> {
        t.lines().map(|l| l.lineno).collect()
    }

    #[test]
    fn keeps_last_n_lines_across_regions() {
        let mut t = TailRing::new(3, 3000, 0);
        t.push_region(b"a\nb\nc\nd\n", 1, 4);
        assert_eq!(linenos(&t), vec![2, 3, 4]);
        t.push_region(b"e\n", 5, 1);
        assert_eq!(linenos(&t), vec![3, 4, 5]);
        let last = t.lines().last().unwrap();
        assert!(matches!(last.body(), LineBody::Whole(b"e")));
    }

    #[test]
    fn bytes_bound_older_lines_but_never_the_newest() {
        let mut t = TailRing::new(100, 100, 0); // older cap 400 bytes
        let long = vec![b'x'; 1000];
        for i in 1..=20 {
            t.push(i, LineBody::Whole(&long));
        }
        assert!(t.len() <= 2, "{}", t.len());
        assert_eq!(t.lines().last().unwrap().lineno, 20);
        assert_eq!(t.lines().last().unwrap().bytes(), 1000);
    }

    #[test]
    fn room_keeps_more_lines_than_asked_up_to_its_bytes() {
        let mut t = TailRing::new(2, 100, 4000); // older cap 4000 bytes
        let line = vec![b'y'; 99];
        for i in 1..=100 {
            t.push(i, LineBody::Whole(&line));
        }
        // 40 older lines of 100 bytes fill the cap, the newest is apart.
        assert_eq!(t.len(), 41);
        let mut split = TailRing::new(2, 100, 4000);
        let region: Vec<u8> = (0..100).flat_map(|_| [&line[..], b"\n"].concat()).collect();
        split.push_region(&region[..5000], 1, 50);
        split.push_region(&region[5000..], 51, 50);
        assert_eq!(linenos(&split), linenos(&t));
        // Short lines: the room bounds their number.
        let mut n = TailRing::new(2, 100, 1000); // older cap 1000 bytes
        n.push_region(&b"1\n".repeat(5000), 1, 5000);
        assert_eq!(n.len(), 501);
        assert_eq!(n.lines().last().unwrap().lineno, 5000);
    }

    #[test]
    fn crlf_is_stripped() {
        let mut t = TailRing::new(5, 3000, 0);
        t.push_region(b"one\r\ntwo\r\n", 1, 2);
        let v: Vec<_> = t
            .lines()
            .map(|l| match l.body() {
                LineBody::Whole(b) => b.to_vec(),
                _ => vec![],
            })
            .collect();
        assert_eq!(v, vec![b"one".to_vec(), b"two".to_vec()]);
    }
}
