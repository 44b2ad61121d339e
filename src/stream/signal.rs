//! Signal lines: the matcher, and the bounded keeper that decides which of
//! the matching lines can be shown.
//!
//! Every hit is counted. What is kept is bounded by count and by bytes:
//! - a *group* per distinct shape (see [`shape`]: numbers and ids folded,
//!   paths kept, so `error at 12` and `error at 13` are one shape), in a
//!   fixed table: its
//!   count, its first line numbers, its first and its last line. Lines of
//!   shapes first seen once the table is full are counted in `ungrouped`;
//! - the most recent hits (nearest the verdict), in a ring;
//! - a *spread*: a bounded sample of hits evenly spread over line numbers,
//!   however long the input grows (at most one hit per `stride` lines;
//!   when the sample is full the stride doubles and every other sample
//!   goes), so a long input is represented over its whole length, not by
//!   its start.
//!
//! At render time the envelope picks, in this priority: errors before
//! warnings, and within a severity: the first hit, the few last ones, then
//! groups (rarest shapes first) with a spread sample after every three (in
//! an order that halves the largest gap first), then the last of each shape,
//! then the other recent ones; and prints the chosen ones in input order.
//!
//! With family knowledge (see `crate::family`) each kept line also carries
//! its severity, its *block* (the bounded lines after it that belong to it)
//! and its location; the scanner attaches the block when it closes.

use std::collections::{HashMap, HashSet, VecDeque};

use regex::bytes::Regex;

use crate::family::Severity;
use crate::stream::line::{LineBody, StoredLine};

/// The default signal pattern (case-insensitive, Unicode word boundaries).
pub const DEFAULT_SIGNAL: &str = r"\b(error|failed|failure|fatal|panic|exception)\b";

/// Characters a signal line may take before it is shortened in the middle.
pub const SIGNAL_LINE_CHARS: usize = 300;
/// Bytes kept from each end of a long signal line (enough for 300 chars).
const PIECE: usize = 4 * SIGNAL_LINE_CHARS / 2;

/// Builds the line matcher: the default, or the user's regex, in
/// multi-line mode so `^`/`$` mean the ends of a line, as the contract
/// defines lines: `\n` ends one, and a `\r` belongs to the terminator only
/// right before it. The regex crate's CRLF mode would also end a line at a
/// lone `\r` (`^error` matched `a\rerror`), so instead every `$` is
/// rewritten to `\r?$` (in `\n`-only multi-line mode) on the parsed
/// pattern, never on its text.
pub fn matcher(user: Option<&str>) -> Result<Regex, regex::Error> {
    let (pat, fold) = match user {
        Some(p) => (p, false),
        None => (DEFAULT_SIGNAL, true),
    };
    let pat = crate::family::anchors::contract_lines(pat, fold)?;
    regex::bytes::RegexBuilder::new(&pat).size_limit(64 << 20).dfa_size_limit(64 << 20).build()
}

/// A kept signal line with what belongs to it.
#[derive(Debug, Clone)]
pub struct Kept {
    pub line: StoredLine,
    pub severity: Severity,
    /// The lines after it that belong to it, each ending with `\n`.
    pub block: Vec<u8>,
    /// Their line numbers (consecutive, except a location line found
    /// past the block's bounds).
    pub block_linenos: Vec<u64>,
    pub location: Option<String>,
    /// Set while `location` is not yet looked for: the block rule to look
    /// with (see `SignalKeeper::attach_block`).
    pub location_rule: Option<usize>,
    /// The lead line that belongs to it (shown before it), with its number.
    pub lead: Option<(u64, Vec<u8>)>,
    /// The file a lead line named, for a location that names none.
    pub file: Option<String>,
}

impl Kept {
    fn new(lineno: u64, body: LineBody, severity: Severity) -> Kept {
        Kept {
            line: StoredLine::new(lineno, body, PIECE),
            severity,
            block: Vec::new(),
            block_linenos: Vec::new(),
            location: None,
            location_rule: None,
            lead: None,
            file: None,
        }
    }

    fn set(&mut self, lineno: u64, body: LineBody, severity: Severity) {
        self.line.set(lineno, body, PIECE);
        self.severity = severity;
        self.block.clear();
        self.block_linenos.clear();
        self.location = None;
        self.location_rule = None;
        self.lead = None;
        self.file = None;
    }

    /// The block's lines, with their line numbers.
    pub fn block_lines(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.block_linenos
            .iter()
            .zip(self.block.split_inclusive(|&b| b == b'\n'))
            .map(|(n, l)| (*n, l.strip_suffix(b"\n").unwrap_or(l)))
    }
}

/// All the hits of one shape: counted whole, kept by their ends.
#[derive(Debug)]
pub struct Group {
    pub shape: u64,
    /// Hits of this shape in the whole input.
    pub count: u64,
    /// Line numbers of the first `FIRST_LINENOS` hits.
    pub first_linenos: Vec<u64>,
    pub first: Kept,
    /// The latest hit, once there are two.
    pub last: Option<Kept>,
}

impl Group {
    pub fn last_lineno(&self) -> u64 {
        self.last.as_ref().unwrap_or(&self.first).line.lineno
    }
}

/// Line numbers a group remembers from its start.
const FIRST_LINENOS: usize = 3;
/// Spread samples kept: enough to show every part of a long input at any
/// budget that has room for a few dozen signal lines.
const SPREAD_CAP: usize = 64;
/// Groups listed before each spread sample, when not all fit.
const GROUPS_PER_SAMPLE: usize = 3;
/// Shapes remembered in input order for the run history.
const SHAPES_REMEMBERED: usize = 64;

#[derive(Debug)]
pub struct SignalKeeper {
    hits: u64,
    by_severity: [u64; 2],
    /// Line numbers of the first hits: enough to tell which lines of the
    /// head arena are signal lines (a line there has at least 2 bytes).
    early: Vec<u64>,
    early_cap: usize,
    recent: VecDeque<Kept>,
    recent_cap: usize,
    /// (line number, shape) of the latest hits, as many as the tail can
    /// show lines: which of the tail's lines are signal lines, beyond the
    /// few `recent` keeps whole.
    last_hits: VecDeque<(u64, u64)>,
    last_hits_cap: usize,
    /// In order of first appearance; never evicted, so a group's count is
    /// every hit of its shape.
    groups: Vec<Group>,
    group_of: HashMap<u64, usize>,
    groups_cap: usize,
    /// Hits whose shape came after the table was full.
    ungrouped: u64,
    /// The group of the latest hit (None: ungrouped).
    latest_group: Option<usize>,
    /// At most one hit per `1 << spread_shift` lines, in input order.
    spread: Vec<Kept>,
    spread_shift: u32,
    /// The first shapes seen, in input order (for the run history).
    shape_order: Vec<u64>,
}

impl SignalKeeper {
    /// `recent` most recent hits are kept, and up to `groups` shapes.
    pub fn new(recent: usize, groups: usize) -> SignalKeeper {
        SignalKeeper {
            hits: 0,
            by_severity: [0; 2],
            early: Vec::new(),
            early_cap: 0,
            recent: VecDeque::with_capacity(recent),
            recent_cap: recent.max(1),
            last_hits: VecDeque::new(),
            last_hits_cap: recent.max(1),
            groups: Vec::new(),
            group_of: HashMap::new(),
            groups_cap: groups.max(1),
            ungrouped: 0,
            latest_group: None,
            spread: Vec::new(),
            spread_shift: 0,
            shape_order: Vec::new(),
        }
    }

    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Hashes of the first distinct signal shapes (digits folded), in
    /// input order, at most 64: what the run history compares between runs.
    pub fn shapes(&self) -> &[u64] {
        &self.shape_order
    }

    /// Remember the line numbers of the first `n` hits (see
    /// [`SignalKeeper::is_early_hit`]).
    pub fn remember_early(&mut self, n: usize) {
        self.early_cap = n;
    }

    /// Remembers the line numbers and shapes of the last `n` hits (the
    /// most lines the tail can show).
    pub fn remember_last(&mut self, n: usize) {
        self.last_hits_cap = n.max(1);
    }

    /// The shape of line `lineno` when it is one of the last hits
    /// remembered (see `remember_last`).
    pub fn last_hit_shape(&self, lineno: u64) -> Option<u64> {
        self.last_hits.binary_search_by_key(&lineno, |h| h.0).ok().map(|i| self.last_hits[i].1)
    }

    /// Whether `lineno` is a signal line, for lines among the first
    /// `remember_early` hits; None past them.
    pub fn is_early_hit(&self, lineno: u64) -> Option<bool> {
        if self.early.binary_search(&lineno).is_ok() {
            return Some(true);
        }
        (self.early.len() < self.early_cap || self.early.last().is_some_and(|&l| l > lineno)).then_some(false)
    }

    /// Signal lines counted per severity.
    pub fn count(&self, s: Severity) -> u64 {
        self.by_severity[s as usize]
    }

    /// The shape groups, in order of first appearance.
    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// The group of a shape, when the table holds it.
    pub fn group(&self, shape: u64) -> Option<&Group> {
        self.group_of.get(&shape).map(|&i| &self.groups[i])
    }

    /// Hits whose shape was first seen when the table was full: counted,
    /// never grouped.
    pub fn ungrouped(&self) -> u64 {
        self.ungrouped
    }

    /// Shapes the table holds at most.
    pub fn groups_cap(&self) -> usize {
        self.groups_cap
    }

    pub fn offer(&mut self, lineno: u64, body: LineBody) {
        self.offer_with(lineno, body, Severity::Error);
    }

    pub fn offer_with(&mut self, lineno: u64, body: LineBody, severity: Severity) {
        self.hits += 1;
        self.by_severity[severity as usize] += 1;
        if self.early.len() < self.early_cap {
            self.early.push(lineno);
        }
        let sh = shape(body);
        if self.last_hits.len() == self.last_hits_cap {
            self.last_hits.pop_front();
        }
        self.last_hits.push_back((lineno, sh));
        self.group_hit(lineno, body, severity, sh);
        self.spread_hit(lineno, body, severity);
        if self.recent.len() == self.recent_cap {
            let mut old = self.recent.pop_front().expect("full ring");
            old.set(lineno, body, severity);
            self.recent.push_back(old);
        } else {
            self.recent.push_back(Kept::new(lineno, body, severity));
        }
    }

    fn group_hit(&mut self, lineno: u64, body: LineBody, severity: Severity, sh: u64) {
        let i = match self.group_of.get(&sh) {
            Some(&i) => i,
            None if self.groups.len() < self.groups_cap => {
                self.group_of.insert(sh, self.groups.len());
                self.groups.push(Group {
                    shape: sh,
                    count: 1,
                    first_linenos: vec![lineno],
                    first: Kept::new(lineno, body, severity),
                    last: None,
                });
                if self.shape_order.len() < SHAPES_REMEMBERED {
                    self.shape_order.push(sh);
                }
                self.latest_group = Some(self.groups.len() - 1);
                return;
            }
            None => {
                self.ungrouped += 1;
                self.latest_group = None;
                return;
            }
        };
        let g = &mut self.groups[i];
        g.count += 1;
        if g.first_linenos.len() < FIRST_LINENOS {
            g.first_linenos.push(lineno);
        }
        match g.last.as_mut() {
            Some(k) => k.set(lineno, body, severity),
            None => g.last = Some(Kept::new(lineno, body, severity)),
        }
        self.latest_group = Some(i);
    }

    /// Keeps the first hit of each `stride`-line bucket; when the sample is
    /// full, doubles the stride and keeps the first hit of each new bucket
    /// (which is always one already kept).
    fn spread_hit(&mut self, lineno: u64, body: LineBody, severity: Severity) {
        let bucket = |l: u64, shift: u32| l.checked_shr(shift).unwrap_or(0);
        if self
            .spread
            .last()
            .is_some_and(|k| bucket(k.line.lineno, self.spread_shift) == bucket(lineno, self.spread_shift))
        {
            return;
        }
        self.spread.push(Kept::new(lineno, body, severity));
        while self.spread.len() > SPREAD_CAP {
            self.spread_shift += 1;
            let shift = self.spread_shift;
            let mut prev = None;
            self.spread.retain(|k| {
                let b = bucket(k.line.lineno, shift);
                let keep = prev != Some(b);
                prev = Some(b);
                keep
            });
        }
    }

    /// Attaches a closed block (and its location) to every kept copy of
    /// the hit on `lineno`, which is the latest hit. Finding a location
    /// runs several regexes, so `location` is called only when the hit is
    /// kept for good (a group's first line, a spread sample). A copy that a
    /// later hit may replace (a group's last line, the recent ring) keeps
    /// the rule instead, for `pending_locations` at the end: with one
    /// signal line in ten, looking up every group's last line took 16% of
    /// the scan. Returns the location when it was looked up.
    pub fn attach_block(
        &mut self,
        lineno: u64,
        block: &[u8],
        linenos: &[u64],
        rule: usize,
        lead: (Option<&(u64, Vec<u8>)>, Option<&str>),
        location: impl FnOnce() -> Option<String>,
    ) -> Option<String> {
        let first_of_group = self.latest_group.is_some_and(|i| self.groups[i].first.line.lineno == lineno);
        let lasting = first_of_group || self.spread.last().is_some_and(|k| k.line.lineno == lineno);
        let location = if lasting { location() } else { None };
        let group = self.latest_group.map(|i| &mut self.groups[i]);
        let group_copies = group.into_iter().flat_map(|g| std::iter::once(&mut g.first).chain(g.last.as_mut()));
        let copies = group_copies.chain(self.spread.last_mut()).chain(self.recent.back_mut());
        for k in copies.filter(|k| k.line.lineno == lineno) {
            k.block.clear();
            k.block.extend_from_slice(block);
            k.block_linenos.clear();
            k.block_linenos.extend_from_slice(linenos);
            k.location = location.clone();
            k.location_rule = (!lasting).then_some(rule);
            k.lead = lead.0.cloned();
            k.file = lead.1.filter(|_| !lasting).map(str::to_string);
        }
        location
    }

    /// The kept hits whose location was left for the end (see
    /// `attach_block`), with the rule to find it.
    pub fn pending_locations(&mut self) -> impl Iterator<Item = &mut Kept> + '_ {
        let lasts = self.groups.iter_mut().filter_map(|g| g.last.as_mut());
        self.recent.iter_mut().chain(lasts).filter(|k| k.location_rule.is_some())
    }

    /// The most recent hits (a superset of the signal lines among the
    /// tail's lines).
    pub fn recent(&self) -> impl Iterator<Item = &Kept> + '_ {
        self.recent.iter().chain(self.groups.first().map(|g| &g.first))
    }

    /// Line numbers of the most recent hits (a superset of the signal
    /// lines among the tail's lines).
    pub fn recent_linenos(&self) -> impl Iterator<Item = u64> + '_ {
        self.recent().map(|l| l.line.lineno)
    }

    pub fn first_lineno(&self) -> Option<u64> {
        self.first().map(|k| k.line.lineno)
    }

    /// The first hit (always in the table: the table is empty then).
    pub fn first(&self) -> Option<&Kept> {
        self.groups.first().map(|g| &g.first)
    }

    /// Kept lines in priority order (see the module doc), each once.
    pub fn by_priority(&self) -> Vec<&StoredLine> {
        self.kept_by_priority().into_iter().map(|k| &k.line).collect()
    }

    /// Every kept entry in priority order.
    pub fn kept_by_priority(&self) -> Vec<&Kept> {
        self.kept_between(0, u64::MAX)
    }

    /// Kept entries on lines after `after` and before `before`, each once,
    /// in priority order: errors first, then warnings, each in the order
    /// of the module doc. A group is represented by its first line in the
    /// range, else its last, else a spread sample of its shape.
    pub fn kept_between(&self, after: u64, before: u64) -> Vec<&Kept> {
        let inside = |k: &&Kept| k.line.lineno > after && k.line.lineno < before;
        let mut groups: Vec<&Group> = self.groups.iter().collect();
        // Rare shapes first: a frequent one is told by its count anyway.
        groups.sort_by_key(|g| (g.count, g.first.line.lineno));
        // A group's first line in the range, else its last, else a spread
        // sample of its shape.
        let sampled: Vec<(u64, &Kept)> = self.spread.iter().filter(inside).map(|k| (shape(k.line.body()), k)).collect();
        let exemplars = groups.iter().filter_map(|g| {
            let of_shape = sampled.iter().filter(|s| s.0 == g.shape).map(|s| s.1);
            std::iter::once(&g.first).chain(g.last.as_ref()).filter(inside).chain(of_shape).next()
        });
        let spread = spread_order(self.spread.len()).map(|i| &self.spread[i]);
        // A spread sample after every few groups: groups tell the most per
        // line, samples where in the input the hits are.
        let mixed = interleave(exemplars, spread, GROUPS_PER_SAMPLE);
        let lasts = groups.iter().filter_map(|g| g.last.as_ref());
        let candidates = self
            .first()
            .into_iter()
            .chain(self.recent.iter().rev().take(4))
            .chain(mixed)
            .chain(lasts)
            .chain(self.recent.iter().rev());
        let mut taken: HashSet<u64> = HashSet::new();
        let mut all: Vec<&Kept> = candidates.filter(inside).filter(|l| taken.insert(l.line.lineno)).collect();
        all.sort_by_key(|k| std::cmp::Reverse(k.severity));
        all
    }
}

/// `per` items of `a`, then one of `b`, and so on; then what remains of
/// either.
fn interleave<'a>(
    a: impl Iterator<Item = &'a Kept>,
    b: impl Iterator<Item = &'a Kept>,
    per: usize,
) -> impl Iterator<Item = &'a Kept> {
    let (mut a, mut b) = (a.fuse(), b.fuse());
    let mut turn = 0;
    std::iter::from_fn(move || {
        turn = (turn + 1) % (per + 1);
        if turn != 0 {
            a.next().or_else(|| b.next())
        } else {
            b.next().or_else(|| a.next())
        }
    })
}

/// Indices `0..n` in bit-reversed order (0, n/2, n/4, 3n/4, ...): any
/// prefix of it is spread over the whole range, so whatever number of
/// samples fits, they cover the input evenly.
fn spread_order(n: usize) -> impl Iterator<Item = usize> {
    let bits = usize::BITS - n.saturating_sub(1).leading_zeros();
    (0..1usize << bits)
        .map(move |i| i.reverse_bits().checked_shr(usize::BITS - bits).unwrap_or(0))
        .filter(move |&i| i < n)
}

/// A line's shape: `text::shape` of its first 256 bytes (numbers,
/// versions and hex ids folded, paths kept literal), so `error at line 9`
/// and `error at line 13` are one shape, as are register dumps that differ
/// in their values, while lines naming different files stay apart.
pub fn shape(body: LineBody) -> u64 {
    let head = match body {
        LineBody::Whole(b) => b,
        LineBody::Cut { prefix, .. } => prefix,
    };
    crate::text::shape::hash(&head[..head.len().min(256)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_matcher_is_case_insensitive_and_word_bounded() {
        let re = matcher(None).unwrap();
        assert!(re.is_match(b"BUILD FAILED"));
        assert!(re.is_match(b"error: x"));
        assert!(!re.is_match(b"errors: 0"));
        assert!(!re.is_match(b"terror"));
        assert!(!re.is_match(b"thread 'main' panicked"));
        assert!(re.is_match(b"panic: oops"));
    }

    #[test]
    fn keeps_first_last_and_distinct_shapes() {
        let mut k = SignalKeeper::new(3, 10);
        k.offer(1, LineBody::Whole(b"error: first"));
        for i in 2..100u64 {
            let s = format!("error at {i}");
            k.offer(i, LineBody::Whole(s.as_bytes()));
        }
        k.offer(100, LineBody::Whole(b"fatal: different"));
        assert_eq!(k.hits(), 100);
        let p: Vec<u64> = k.by_priority().iter().map(|l| l.lineno).collect();
        assert_eq!(p[0], 1);
        assert_eq!(p[1], 100);
        assert!(p.contains(&2), "the first of the repeated shape: {p:?}");
        let g = k.group(shape(LineBody::Whole(b"error at 7"))).unwrap();
        assert_eq!((g.count, g.first_linenos.clone(), g.last_lineno()), (98, vec![2, 3, 4], 99));
        assert_eq!(k.groups().len(), 3);
    }

    #[test]
    fn shapes_past_the_table_are_counted_not_grouped() {
        let mut k = SignalKeeper::new(2, 2);
        for (i, l) in ["error a", "error b", "error c", "error a", "error d"].iter().enumerate() {
            k.offer(i as u64 + 1, LineBody::Whole(l.as_bytes()));
        }
        assert_eq!(k.hits(), 5);
        assert_eq!(k.ungrouped(), 2);
        assert_eq!(k.groups().iter().map(|g| g.count).sum::<u64>(), 3);
    }

    /// The spread keeps at most one hit per stride and stays spread over
    /// the whole input as it grows, in bounded memory.
    #[test]
    fn spread_covers_the_whole_input() {
        let mut k = SignalKeeper::new(2, 16);
        for i in 1..=1_000_000u64 {
            if i % 7 == 0 {
                k.offer(i, LineBody::Whole(b"error x"));
            }
        }
        assert!(k.spread.len() <= SPREAD_CAP && k.spread.len() > SPREAD_CAP / 2, "{}", k.spread.len());
        let tenths: HashSet<u64> = k.spread.iter().map(|s| s.line.lineno / 100_000).collect();
        assert_eq!(tenths.len(), 10);
        // Any prefix of the display order is spread too.
        let first: Vec<u64> = spread_order(k.spread.len()).take(8).map(|i| k.spread[i].line.lineno / 250_000).collect();
        assert_eq!(first.iter().collect::<HashSet<_>>().len(), 4, "{first:?}");
    }

    #[test]
    fn spread_order_is_a_bit_reversed_permutation() {
        assert_eq!(spread_order(0).count(), 0);
        assert_eq!(spread_order(1).collect::<Vec<_>>(), [0]);
        assert_eq!(spread_order(5).collect::<Vec<_>>(), [0, 4, 2, 1, 3]);
        let mut all: Vec<usize> = spread_order(37).collect();
        all.sort();
        assert_eq!(all, (0..37).collect::<Vec<_>>());
    }

    /// `^`/`$` end a line only at `\n` (a `\r` belongs to the terminator
    /// only before it); with the regex crate's CRLF mode a lone `\r` ended
    /// a line too.
    #[test]
    fn line_anchors_follow_the_contracts_line_ends() {
        let start = matcher(Some("^error")).unwrap();
        assert!(!start.is_match(b"a\rerror"));
        assert!(start.is_match(b"ok\nerror here"));
        assert!(start.is_match(b"ok\r\nerror here"));
        let end = matcher(Some("error$")).unwrap();
        assert!(end.is_match(b"error\r\n"));
        assert!(end.is_match(b"error\nmore"));
        assert!(end.is_match(b"an error"));
        assert!(!end.is_match(b"error\rmore\n"));
        let default = matcher(None).unwrap();
        assert!(default.is_match(b"BUILD FAILED"));
        assert!(!default.is_match(b"errors"));
        assert!(matcher(Some("(")).is_err());
        assert!(matcher(Some(r"(?-u:\xff)x")).unwrap().is_match(b"\xffx"));
    }
}
