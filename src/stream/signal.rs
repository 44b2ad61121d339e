//! Signal lines: the matcher, and the bounded keeper that decides which of
//! the matching lines can be shown.
//!
//! Every hit is counted. What is kept is bounded by count and by bytes:
//! - a *group* per *kind* and severity (see [`Kind`]: the code a family
//!   captured, `E0308`, `TS2322`, else the line's template, numbers, ids,
//!   paths and quoted strings masked), in a fixed table over the whole
//!   input (Space-Saving: a new kind takes the place of the one with the
//!   smallest count, whose count it inherits as its error, so late kinds
//!   get places as early ones did, and every count is exact or marked as
//!   an estimate with its bound): its count, its first line numbers, its
//!   first and its last line;
//! - the first hit, and the most recent hits (nearest the verdict), in a
//!   ring;
//! - a *spread*: a bounded sample of hits evenly spread over line numbers,
//!   however long the input grows (at most one hit per `stride` lines;
//!   when the sample is full the stride doubles and every other sample
//!   goes), so a long input is represented over its whole length, not by
//!   its start.
//!
//! At render time the envelope picks kinds first: one line of every kind
//! before a second line of any (errors, then warnings; the first hit, then
//! the rarest kinds), then more lines per kind (its last, another file
//! first) with spread samples between (in an order that halves the largest
//! gap first), then the other recent ones; and prints the chosen ones in
//! input order.
//!
//! With family knowledge (see `crate::family`) each kept line also carries
//! its severity, its *block* (the bounded lines after it that belong to it)
//! and its location; the scanner attaches the block when it closes.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use regex::bytes::Regex;

use crate::family::Severity;
use crate::stream::line::{LineBody, StoredLine};
use crate::text::template;

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

/// What a signal line is an instance of: the code its family captured
/// (`E0308`, `TS2322`, a rule or exception name), else its template
/// (`text::template`). Lines of one kind and one severity are grouped.
#[derive(Debug, Clone, Copy)]
pub struct Kind<'a> {
    /// The template's or the code's key.
    pub key: u64,
    /// The captured code, when there is one.
    pub code: Option<&'a [u8]>,
}

impl<'a> Kind<'a> {
    /// The kind a family named: its captured code.
    pub fn code(code: &'a [u8]) -> Kind<'a> {
        Kind { key: template::code_key(code), code: Some(code) }
    }

    /// The kind of a line without a code: its template (colour codes
    /// removed first).
    pub fn template(line: &[u8]) -> Kind<'static> {
        Kind { key: template::key(&crate::family::classify::strip_ansi(line)), code: None }
    }

    /// The kind of a stored line without a code (its kept start).
    pub fn of_body(body: LineBody) -> Kind<'static> {
        Kind::template(head_of(body))
    }
}

/// The first bytes of a line that decide its kind.
fn head_of(body: LineBody<'_>) -> &[u8] {
    match body {
        LineBody::Whole(b) => b,
        LineBody::Cut { prefix, .. } => prefix,
    }
}

/// A kind's key with its severity folded in: a lint that is a warning in
/// one place and an error in another is two groups.
fn group_key(kind: u64, severity: Severity) -> u64 {
    let h = (kind ^ (severity as u64 + 1)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^ (h >> 31)
}

/// A kept signal line with what belongs to it.
#[derive(Debug, Clone)]
pub struct Kept {
    pub line: StoredLine,
    pub severity: Severity,
    /// Its group's key (kind and severity).
    pub kind: u64,
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
    fn new(lineno: u64, body: LineBody, severity: Severity, kind: u64) -> Kept {
        Kept {
            line: StoredLine::new(lineno, body, PIECE),
            severity,
            kind,
            block: Vec::new(),
            block_linenos: Vec::new(),
            location: None,
            location_rule: None,
            lead: None,
            file: None,
        }
    }

    fn set(&mut self, lineno: u64, body: LineBody, severity: Severity, kind: u64) {
        self.line.set(lineno, body, PIECE);
        self.severity = severity;
        self.kind = kind;
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

    /// The file its location names, if any.
    pub fn file(&self) -> Option<&str> {
        self.location.as_deref().and_then(|l| l.split(':').next()).filter(|f| !f.is_empty())
    }
}

/// The hits of one kind (and severity): counted, kept by their ends.
#[derive(Debug)]
pub struct Group {
    /// The kind's key with the severity folded in.
    pub kind: u64,
    pub severity: Severity,
    /// The code a family captured (at most `CODE_BYTES`); None: the kind
    /// is the template of `first`.
    pub code: Option<Box<[u8]>>,
    /// Hits counted since the kind took its place in the table, plus
    /// `error`: never under the kind's hits in the whole input, and over
    /// them by at most `error` (Space-Saving).
    pub count: u64,
    pub error: u64,
    /// Line numbers of the first `FIRST_LINENOS` hits counted.
    pub first_linenos: Vec<u64>,
    pub first: Kept,
    /// The latest hit, once there are two (see `last_pending`).
    pub last: Option<Kept>,
    /// The latest hit's line number while its copy is only in the recent
    /// ring: it is moved here when the ring lets it go, or copied by
    /// `settle`. Every hit was copied twice (its group's last and the
    /// ring) where most are overwritten before the end.
    last_pending: Option<u64>,
    /// Where the group is in the keeper's min-heap of counts.
    heap_at: usize,
}

impl Group {
    pub fn last_lineno(&self) -> u64 {
        self.last_pending.unwrap_or_else(|| self.last.as_ref().unwrap_or(&self.first).line.lineno)
    }

    /// The count is the number of the kind's hits in the whole input.
    pub fn exact(&self) -> bool {
        self.error == 0
    }

    /// Hits of the kind certainly in the input (`count` when exact).
    pub fn least(&self) -> u64 {
        self.count - self.error
    }

    /// The kind's name, raw (not made safe to print): the captured code,
    /// else the template of its first kept line from its message on.
    pub fn name(&self) -> Vec<u8> {
        match &self.code {
            Some(c) => c.to_vec(),
            None => template::name(&crate::family::classify::strip_ansi(head_of(self.first.line.body()))),
        }
    }
}

/// Line numbers a group remembers from its start.
const FIRST_LINENOS: usize = 3;
/// Bytes of a captured code kept (a code is a short name).
const CODE_BYTES: usize = 64;
/// Spread samples kept: enough to show every part of a long input at any
/// budget that has room for a few dozen signal lines.
const SPREAD_CAP: usize = 64;
/// Groups listed before each spread sample, when not all fit.
const GROUPS_PER_SAMPLE: usize = 3;
/// Kinds remembered in input order for the run history.
const KINDS_REMEMBERED: usize = 64;

/// The most recent hits, oldest first from `oldest` once full; a new hit
/// overwrites the oldest in place.
#[derive(Debug, Default)]
struct Ring {
    items: Vec<Kept>,
    oldest: usize,
}

impl Ring {
    /// Oldest to newest.
    fn iter(&self) -> impl DoubleEndedIterator<Item = &Kept> + '_ {
        let (newer, older) = self.items.split_at(self.oldest);
        older.iter().chain(newer)
    }

    /// The oldest slot (the ring is full), which the next oldest follows.
    fn take_oldest(&mut self) -> &mut Kept {
        let at = self.oldest;
        self.oldest = (at + 1) % self.items.len();
        &mut self.items[at]
    }

    fn newest_at(&self) -> Option<usize> {
        let n = self.items.len();
        (n > 0).then(|| (self.oldest + n - 1) % n)
    }

    fn newest(&self) -> Option<&Kept> {
        self.newest_at().map(|i| &self.items[i])
    }

    fn newest_mut(&mut self) -> Option<&mut Kept> {
        self.newest_at().map(|i| &mut self.items[i])
    }
}

#[derive(Debug)]
pub struct SignalKeeper {
    hits: u64,
    by_severity: [u64; 2],
    /// (line number, kind) of the first hits: enough to tell which lines
    /// of the head arena are signal lines (a line there has at least 2
    /// bytes), and of what kind.
    early: Vec<(u64, u64)>,
    early_cap: usize,
    recent: Ring,
    recent_cap: usize,
    /// (line number, kind) of the latest hits, as many as the tail can
    /// show lines: which of the tail's lines are signal lines, beyond the
    /// few `recent` keeps whole.
    last_hits: VecDeque<(u64, u64)>,
    last_hits_cap: usize,
    /// The kinds, at most `groups_cap`, over the whole input: a kind not
    /// in a full table takes the place of the one with the smallest count
    /// and inherits that count as its error (Space-Saving), so a kind late
    /// in the input gets a place as an early one did, and a count is never
    /// under the truth.
    groups: Vec<Group>,
    /// Kind keys are hashes already: no second hash.
    group_of: HashMap<u64, usize, BuildHasherDefault<KeyHasher>>,
    groups_cap: usize,
    /// Group indices as a min-heap on `count` (the next to give its place).
    heap: Vec<usize>,
    /// Whether a kind ever gave its place up (counts may be estimates,
    /// and the distinct kinds are estimated).
    evicted: bool,
    /// Distinct kinds per severity: exact while nothing was evicted, and
    /// a HyperLogLog sketch for after.
    distinct: [u64; 2],
    sketch: [Sketch; 2],
    /// The group of the latest hit.
    latest_group: Option<usize>,
    /// The first hit of the input, kept whatever happens to its group.
    first_hit: Option<Kept>,
    /// At most one hit per `1 << spread_shift` lines, in input order.
    spread: Vec<Kept>,
    spread_shift: u32,
    /// The first kinds seen, in input order, with their names and whether
    /// the name is a code (for the run history).
    kind_order: Vec<(u64, Vec<u8>, bool)>,
}

impl SignalKeeper {
    /// `recent` most recent hits are kept, and up to `groups` kinds.
    pub fn new(recent: usize, groups: usize) -> SignalKeeper {
        SignalKeeper {
            hits: 0,
            by_severity: [0; 2],
            early: Vec::new(),
            early_cap: 0,
            recent: Ring::default(),
            recent_cap: recent.max(1),
            last_hits: VecDeque::new(),
            last_hits_cap: recent.max(1),
            groups: Vec::new(),
            group_of: HashMap::default(),
            groups_cap: groups.max(1),
            heap: Vec::new(),
            evicted: false,
            distinct: [0; 2],
            sketch: [Sketch::default(), Sketch::default()],
            latest_group: None,
            first_hit: None,
            spread: Vec::new(),
            spread_shift: 0,
            kind_order: Vec::new(),
        }
    }

    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Keys of the first distinct kinds (severity folded in), in input
    /// order, at most 64: what the run history compares between runs.
    pub fn kinds_seen(&self) -> impl Iterator<Item = (u64, &[u8], bool)> + '_ {
        self.kind_order.iter().map(|(k, n, code)| (*k, n.as_slice(), *code))
    }

    /// Remember the line numbers of the first `n` hits (see
    /// [`SignalKeeper::is_early_hit`]).
    pub fn remember_early(&mut self, n: usize) {
        self.early_cap = n;
    }

    /// Remembers the line numbers and kinds of the last `n` hits (the
    /// most lines the tail can show).
    pub fn remember_last(&mut self, n: usize) {
        self.last_hits_cap = n.max(1);
    }

    /// The kind of line `lineno` when it is one of the last hits
    /// remembered (see `remember_last`).
    pub fn last_hit_kind(&self, lineno: u64) -> Option<u64> {
        self.last_hits.binary_search_by_key(&lineno, |h| h.0).ok().map(|i| self.last_hits[i].1)
    }

    /// Whether `lineno` is a signal line, for lines among the first
    /// `remember_early` hits; None past them.
    pub fn is_early_hit(&self, lineno: u64) -> Option<bool> {
        if self.early_kind(lineno).is_some() {
            return Some(true);
        }
        (self.early.len() < self.early_cap || self.early.last().is_some_and(|&l| l.0 > lineno)).then_some(false)
    }

    /// The kind of line `lineno` when it is one of the first hits.
    pub fn early_kind(&self, lineno: u64) -> Option<u64> {
        self.early.binary_search_by_key(&lineno, |h| h.0).ok().map(|i| self.early[i].1)
    }

    /// Kinds of the remembered hits on lines up to `upto` or from `from`
    /// on (the first and the last hits: what a head and a tail show).
    pub fn kinds_at_ends(&self, upto: u64, from: u64) -> HashSet<u64> {
        let early = self.early.iter().take_while(|h| h.0 <= upto);
        let late = self.last_hits.iter().rev().take_while(|h| h.0 >= from);
        early.chain(late).map(|h| h.1).collect()
    }

    /// Signal lines counted per severity.
    pub fn count(&self, s: Severity) -> u64 {
        self.by_severity[s as usize]
    }

    /// The kinds the table holds, in no particular order.
    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// The group of a kind, when the table holds it.
    pub fn group(&self, kind: u64) -> Option<&Group> {
        self.group_of.get(&kind).map(|&i| &self.groups[i])
    }

    /// Distinct kinds of severity `s` in the whole input, and whether that
    /// is an estimate (once the table was full and gave places up).
    pub fn kinds_total(&self, s: Severity) -> (u64, bool) {
        if !self.evicted {
            return (self.distinct[s as usize], false);
        }
        let held = self.groups.iter().filter(|g| g.severity == s).count() as u64;
        (self.sketch[s as usize].estimate().max(held), true)
    }

    /// Kinds the table holds at most.
    pub fn groups_cap(&self) -> usize {
        self.groups_cap
    }

    /// A hit without family knowledge: an error whose kind is its template.
    pub fn offer(&mut self, lineno: u64, body: LineBody) {
        self.offer_with(lineno, body, Severity::Error, Kind::of_body(body));
    }

    pub fn offer_with(&mut self, lineno: u64, body: LineBody, severity: Severity, kind: Kind) {
        self.hits += 1;
        self.by_severity[severity as usize] += 1;
        let key = group_key(kind.key, severity);
        if self.early.len() < self.early_cap {
            self.early.push((lineno, key));
        }
        if self.last_hits.len() == self.last_hits_cap {
            self.last_hits.pop_front();
        }
        self.last_hits.push_back((lineno, key));
        self.group_hit(lineno, body, severity, key, kind.code);
        if self.first_hit.is_none() {
            self.first_hit = Some(Kept::new(lineno, body, severity, key));
        }
        self.spread_hit(lineno, body, severity, key);
        if self.recent.items.len() < self.recent_cap {
            self.recent.items.push(Kept::new(lineno, body, severity, key));
            return;
        }
        // The oldest slot takes the hit, in place: a `Kept` is large, and
        // moving it out of and into a deque was 2% of a server log's scan.
        let slot = self.recent.take_oldest();
        let (kind, n) = (slot.kind, slot.line.lineno);
        if let Some(g) = self.group_of.get(&kind).map(|&i| &mut self.groups[i]) {
            // The group's pending last line leaves the ring: it becomes the
            // group's, and the group's older copy (if any) takes the slot.
            if g.last_pending == Some(n) {
                g.last_pending = None;
                match g.last.as_mut() {
                    Some(last) => std::mem::swap(last, slot),
                    None => g.last = Some(std::mem::replace(slot, Kept::new(0, LineBody::Whole(b""), severity, 0))),
                }
            }
        }
        slot.set(lineno, body, severity, key);
    }

    /// Copies the group's last lines still pending from the recent ring:
    /// before anything reads the groups.
    pub fn settle(&mut self) {
        for g in &mut self.groups {
            let Some(n) = g.last_pending.take() else { continue };
            let k = self.recent.items.iter().find(|k| k.line.lineno == n).expect("a pending last line is in the ring");
            match g.last.as_mut() {
                Some(last) => last.clone_from(k),
                None => g.last = Some(k.clone()),
            }
        }
    }

    fn group_hit(&mut self, lineno: u64, body: LineBody, severity: Severity, key: u64, code: Option<&[u8]>) {
        let code = || code.map(|c| Box::from(&c[..c.len().min(CODE_BYTES)]));
        if let Some(&i) = self.group_of.get(&key) {
            let g = &mut self.groups[i];
            g.count += 1;
            if g.first_linenos.len() < FIRST_LINENOS {
                g.first_linenos.push(lineno);
            }
            g.last_pending = Some(lineno);
            let at = g.heap_at;
            self.sift_down(at);
            self.latest_group = Some(i);
            return;
        }
        self.distinct[severity as usize] += 1;
        self.sketch[severity as usize].add(key);
        let i = if self.groups.len() < self.groups_cap {
            let i = self.groups.len();
            self.groups.push(Group {
                kind: key,
                severity,
                code: code(),
                count: 1,
                error: 0,
                first_linenos: vec![lineno],
                first: Kept::new(lineno, body, severity, key),
                last: None,
                last_pending: None,
                heap_at: self.heap.len(),
            });
            self.heap.push(i);
            self.sift_up(self.heap.len() - 1);
            i
        } else {
            // Space-Saving: the kind with the smallest count gives its
            // place, and its count becomes the newcomer's error.
            self.evicted = true;
            let i = self.heap[0];
            let g = &mut self.groups[i];
            self.group_of.remove(&g.kind);
            g.kind = key;
            g.severity = severity;
            g.code = code();
            g.error = g.count;
            g.count += 1;
            g.first_linenos.clear();
            g.first_linenos.push(lineno);
            g.first.set(lineno, body, severity, key);
            g.last = None;
            g.last_pending = None;
            self.sift_down(0);
            i
        };
        self.group_of.insert(key, i);
        self.latest_group = Some(i);
        if self.kind_order.len() < KINDS_REMEMBERED && !self.kind_order.iter().any(|k| k.0 == key) {
            let g = &self.groups[i];
            self.kind_order.push((key, g.name(), g.code.is_some()));
        }
    }

    fn heap_count(&self, at: usize) -> u64 {
        self.groups[self.heap[at]].count
    }

    fn heap_swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.groups[self.heap[a]].heap_at = a;
        self.groups[self.heap[b]].heap_at = b;
    }

    fn sift_up(&mut self, mut at: usize) {
        while at > 0 {
            let parent = (at - 1) / 2;
            if self.heap_count(parent) <= self.heap_count(at) {
                break;
            }
            self.heap_swap(at, parent);
            at = parent;
        }
    }

    fn sift_down(&mut self, mut at: usize) {
        let n = self.heap.len();
        loop {
            let l = 2 * at + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && self.heap_count(r) < self.heap_count(l) { r } else { l };
            if self.heap_count(c) >= self.heap_count(at) {
                break;
            }
            self.heap_swap(at, c);
            at = c;
        }
    }

    /// Keeps the first hit of each `stride`-line bucket; when the sample is
    /// full, doubles the stride and keeps the first hit of each new bucket
    /// (which is always one already kept).
    fn spread_hit(&mut self, lineno: u64, body: LineBody, severity: Severity, key: u64) {
        let bucket = |l: u64, shift: u32| l.checked_shr(shift).unwrap_or(0);
        if self
            .spread
            .last()
            .is_some_and(|k| bucket(k.line.lineno, self.spread_shift) == bucket(lineno, self.spread_shift))
        {
            return;
        }
        self.spread.push(Kept::new(lineno, body, severity, key));
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
    /// kept for good (the first line of a kind that never gave a place
    /// up, a spread sample). A copy that a later hit may replace (a
    /// group's last line, the first line of a kind that took another's
    /// place, the recent ring) keeps the rule instead, for
    /// `pending_locations` at the end: with one signal line in ten,
    /// looking up every group's last line took 16% of the scan. Returns
    /// the location when it was looked up.
    pub fn attach_block(
        &mut self,
        lineno: u64,
        block: &[u8],
        linenos: &[u64],
        rule: usize,
        lead: (Option<&(u64, Vec<u8>)>, Option<&str>),
        location: impl FnOnce() -> Option<String>,
    ) -> Option<String> {
        let first_of_group =
            self.latest_group.is_some_and(|i| self.groups[i].first.line.lineno == lineno && self.groups[i].exact());
        let lasting = first_of_group || self.spread.last().is_some_and(|k| k.line.lineno == lineno);
        let location = if lasting { location() } else { None };
        let group = self.latest_group.map(|i| &mut self.groups[i]);
        let group_copies = group.into_iter().flat_map(|g| std::iter::once(&mut g.first).chain(g.last.as_mut()));
        let copies =
            group_copies.chain(self.spread.last_mut()).chain(self.recent.newest_mut()).chain(self.first_hit.as_mut());
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
        let groups = self.groups.iter_mut().flat_map(|g| std::iter::once(&mut g.first).chain(g.last.as_mut()));
        self.recent.items.iter_mut().chain(groups).chain(self.first_hit.as_mut()).filter(|k| k.location_rule.is_some())
    }

    /// The most recent hits (a superset of the signal lines among the
    /// tail's lines).
    pub fn recent(&self) -> impl Iterator<Item = &Kept> + '_ {
        self.recent.iter().chain(self.first_hit.as_ref())
    }

    /// Line numbers of the most recent hits (a superset of the signal
    /// lines among the tail's lines).
    pub fn recent_linenos(&self) -> impl Iterator<Item = u64> + '_ {
        self.recent().map(|l| l.line.lineno)
    }

    pub fn first_lineno(&self) -> Option<u64> {
        self.first().map(|k| k.line.lineno)
    }

    /// The first hit.
    pub fn first(&self) -> Option<&Kept> {
        self.first_hit.as_ref()
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
    /// in priority order (see the module doc): first one line of every
    /// kind (errors, then warnings; the first hit, then the rarest kinds),
    /// then more lines of each kind (errors, then warnings; the latest hit,
    /// then each kind's last line, those naming another file than its
    /// first before the others, with a spread sample after every few),
    /// then the other recent hits. A kind is represented by its first line
    /// in the range, else its last, else a spread sample of it.
    pub fn kept_between(&self, after: u64, before: u64) -> Vec<&Kept> {
        let inside = |k: &&Kept| k.line.lineno > after && k.line.lineno < before;
        let mut groups: Vec<&Group> = self.groups.iter().collect();
        // Rare kinds first: a frequent one is told by its count anyway.
        groups.sort_by_key(|g| (g.count, g.first.line.lineno));
        let sampled: Vec<&Kept> = self.spread.iter().filter(inside).collect();
        let exemplars = groups.iter().filter_map(|g| {
            let of_kind = sampled.iter().copied().filter(|s| s.kind == g.kind);
            std::iter::once(&g.first).chain(g.last.as_ref()).filter(inside).chain(of_kind).next()
        });
        let first_round: Vec<&Kept> = self.first().into_iter().chain(exemplars).filter(inside).collect();
        // More of each kind: its last line, another file first.
        let mut lasts: Vec<(&Kept, bool)> =
            groups.iter().filter_map(|g| g.last.as_ref().map(|l| (l, l.file() == g.first.file()))).collect();
        lasts.sort_by_key(|l| l.1);
        let spread = spread_order(self.spread.len()).map(|i| &self.spread[i]);
        // A spread sample after every few lasts: groups tell the most per
        // line, samples where in the input the hits are.
        let mixed = interleave(lasts.into_iter().map(|l| l.0), spread, GROUPS_PER_SAMPLE);
        let second_round = self.recent.newest().into_iter().chain(mixed).chain(self.recent.iter().rev());
        let mut taken: HashSet<u64> = HashSet::new();
        let mut all: Vec<(bool, &Kept)> = first_round
            .into_iter()
            .map(|k| (true, k))
            .chain(second_round.filter(inside).map(|k| (false, k)))
            .filter(|(_, k)| taken.insert(k.line.lineno))
            .collect();
        all.sort_by_key(|(first, k)| (!first, std::cmp::Reverse(k.severity)));
        all.into_iter().map(|(_, k)| k).collect()
    }
}

/// Hashes a kind key by itself (it is a well-mixed hash already).
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).rotate_left(5);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// A HyperLogLog sketch of distinct keys (256 registers: about 6.5% off),
/// for the number of kinds once the table gave places up.
#[derive(Debug, Clone)]
struct Sketch([u8; 256]);

impl Default for Sketch {
    fn default() -> Sketch {
        Sketch([0; 256])
    }
}

impl Sketch {
    fn add(&mut self, key: u64) {
        // The key is already a mixed hash; mix once more for the bits used.
        let h = key.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let h = h ^ (h >> 31);
        let i = (h >> 56) as usize;
        let rank = ((h << 8) | 0x80).leading_zeros() as u8 + 1;
        self.0[i] = self.0[i].max(rank);
    }

    fn estimate(&self) -> u64 {
        let m = self.0.len() as f64;
        let sum: f64 = self.0.iter().map(|&r| 2f64.powi(-i32::from(r))).sum();
        let raw = 0.7213 / (1.0 + 1.079 / m) * m * m / sum;
        let zeros = self.0.iter().filter(|&&r| r == 0).count();
        let e = if raw <= 2.5 * m && zeros > 0 { m * (m / zeros as f64).ln() } else { raw };
        e.round() as u64
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

/// The group key of a signal line found without family knowledge: an
/// error whose kind is its template.
pub fn kind_key(body: LineBody) -> u64 {
    group_key(Kind::of_body(body).key, Severity::Error)
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

    /// A group's last line is held by the recent ring until the ring lets
    /// it go: after `settle` every group has its kind's true last hit,
    /// whatever the ring's size, with the block attached to it.
    #[test]
    fn a_groups_last_line_survives_the_recent_ring() {
        let mut x = 0x9e37_79b9_u32;
        for cap in [1, 2, 3, 8] {
            let mut k = SignalKeeper::new(cap, 64);
            let mut truth: HashMap<u64, (u64, String)> = HashMap::new();
            for lineno in 1..2000u64 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                // Few kinds, unevenly often: some stay pending long.
                let kind = ["alpha", "beta", "gamma", "delta"][(x % 7).min(3) as usize];
                let text = format!("error: {kind} failed at {lineno}");
                let severity = if x.is_multiple_of(5) { Severity::Warning } else { Severity::Error };
                let key = group_key(template::code_key(kind.as_bytes()), severity);
                k.offer_with(lineno, LineBody::Whole(text.as_bytes()), severity, Kind::code(kind.as_bytes()));
                let block = format!("  at {lineno}\n");
                k.attach_block(lineno, block.as_bytes(), &[lineno + 1], 0, (None, None), || None);
                truth.insert(key, (lineno, text));
            }
            k.settle();
            for g in k.groups() {
                let (lineno, text) = &truth[&g.kind];
                let last = g.last.as_ref().unwrap_or(&g.first);
                assert_eq!((g.last_lineno(), last.line.lineno), (*lineno, *lineno), "cap {cap}");
                assert_eq!(head_of(last.line.body()), text.as_bytes());
                assert_eq!(last.block, format!("  at {lineno}\n").as_bytes());
            }
        }
    }

    #[test]
    fn keeps_first_last_and_distinct_kinds() {
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
        let g = k.group(kind_key(LineBody::Whole(b"error at 7"))).unwrap();
        assert_eq!((g.count, g.first_linenos.clone(), g.last_lineno()), (98, vec![2, 3, 4], 99));
        assert_eq!(k.groups().len(), 3);
    }

    /// Space-Saving: a kind first seen when the table is full takes the
    /// place of the least frequent one, with that count as its error.
    #[test]
    fn a_full_table_gives_late_kinds_a_place_with_bounded_counts() {
        let mut k = SignalKeeper::new(2, 2);
        for (i, l) in ["error a", "error a", "error b", "error c", "error a", "error d"].iter().enumerate() {
            k.offer(i as u64 + 1, LineBody::Whole(l.as_bytes()));
        }
        assert_eq!(k.hits(), 6);
        assert_eq!(k.groups().len(), 2);
        let a = k.group(kind_key(LineBody::Whole(b"error a"))).unwrap();
        assert_eq!((a.count, a.exact(), a.first_linenos.clone()), (3, true, vec![1, 2, 5]));
        let d = k.group(kind_key(LineBody::Whole(b"error d"))).unwrap();
        assert_eq!((d.count, d.least(), d.exact(), d.first.line.lineno), (3, 1, false, 6));
        assert!(k.group(kind_key(LineBody::Whole(b"error b"))).is_none());
        assert_eq!(k.kinds_total(Severity::Error), (4, true));
        assert_eq!(k.first_lineno(), Some(1));
    }

    #[test]
    fn kinds_are_codes_or_templates_and_severities_apart() {
        let mut k = SignalKeeper::new(2, 8);
        k.offer_with(1, LineBody::Whole(b"a.rs: error[E0308]: x"), Severity::Error, Kind::code(b"E0308"));
        k.offer_with(2, LineBody::Whole(b"b.rs: error[E0308]: y"), Severity::Error, Kind::code(b"E0308"));
        k.offer_with(
            3,
            LineBody::Whole(b"warning at src/a.rs:1"),
            Severity::Warning,
            Kind::template(b"warning at src/a.rs:1"),
        );
        k.offer_with(
            4,
            LineBody::Whole(b"warning at lib/b.rs:9"),
            Severity::Warning,
            Kind::template(b"warning at lib/b.rs:9"),
        );
        k.offer_with(
            5,
            LineBody::Whole(b"warning at lib/b.rs:9"),
            Severity::Error,
            Kind::template(b"warning at lib/b.rs:9"),
        );
        let mut counts: Vec<(Vec<u8>, Severity, u64)> =
            k.groups().iter().map(|g| (g.name(), g.severity, g.count)).collect();
        counts.sort();
        assert_eq!(
            counts,
            vec![
                (b"E0308".to_vec(), Severity::Error, 2),
                (b"warning at <*>".to_vec(), Severity::Warning, 2),
                (b"warning at <*>".to_vec(), Severity::Error, 1),
            ]
        );
        assert_eq!(k.kinds_total(Severity::Warning), (1, false));
        let seen: Vec<&[u8]> = k.kinds_seen().map(|k| k.1).collect();
        assert_eq!(seen, [&b"E0308"[..], b"warning at <*>", b"warning at <*>"]);
    }

    /// One line of every kind comes before a second line of any, and
    /// warnings' first lines before errors' second ones.
    #[test]
    fn every_kind_gets_a_line_before_any_gets_a_second() {
        let mut k = SignalKeeper::new(4, 64);
        let mut n = 0;
        let mut hit = |k: &mut SignalKeeper, line: &str, sev: Severity| {
            n += 1;
            k.offer_with(n, LineBody::Whole(line.as_bytes()), sev, Kind::template(line.as_bytes()));
        };
        for i in 0..50 {
            hit(&mut k, &format!("error frequent {i}"), Severity::Error);
        }
        hit(&mut k, "warning: late and rare", Severity::Warning);
        hit(&mut k, "error: late and rare", Severity::Error);
        for i in 0..50 {
            hit(&mut k, &format!("error frequent {i}"), Severity::Error);
        }
        let order: Vec<u64> = k.by_priority().iter().map(|l| l.lineno).collect();
        assert_eq!(&order[..3], &[1, 52, 51], "{order:?}");
        assert!(order.len() > 3);
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
