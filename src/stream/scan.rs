//! One pass over the input blocks: byte, character and line counts, the
//! head arena, the tail ring and the signal keeper.
//!
//! A block is split into three parts: the end of the line that was open
//! when the previous block ended, the complete lines wholly inside the block
//! (the *region*: counted, searched and tail-pushed with whole-block
//! operations, never a call per line), and the start of the next open line.
//! The open line is kept whole up to `LINE_CAP` bytes, then only as its two
//! ends with exact counts, so no line length can grow memory.
//!
//! The result does not depend on how the input is split into blocks: the
//! property tests feed the same input in random splits and compare.

use std::sync::Arc;

use memchr::{memchr, memchr_iter, memrchr};
use regex::bytes::Regex;

use crate::family::classify::FirstPass;
use crate::family::{Classifier, Severity, Tally};
use crate::stream::block::OpenBlock;
use crate::stream::gap::GapInventory;
use crate::stream::layout::{Layout, Layouts};
use crate::stream::line::{LineBody, StoredLine};
use crate::stream::signal::{Kind, SignalKeeper};
use crate::stream::tail::{strip_cr, TailRing};
use crate::text::newlines::NewlineMap;
use crate::text::utf8::CharCounter;

/// An open line is kept contiguous (so the regex sees it whole) up to here.
const LINE_CAP: usize = 1 << 20;
/// Bytes kept of the line before the one being looked at, for a family's
/// lead line (a file header, gcc's `In function 'f':`).
const PREV_KEEP: usize = 512;
/// Bytes of context kept across a block boundary to search a line longer
/// than `LINE_CAP`: a signal match longer than this inside such a line can
/// be missed (documented).
const OVERLAP: usize = 4096;

/// What the scanner keeps, derived from the budgets.
#[derive(Debug, Clone)]
pub struct ScanConfig {
    pub budget: usize,
    pub tail_lines: usize,
    pub tail_budget: usize,
    pub signal: Regex,
}

impl Default for ScanConfig {
    /// The documented defaults (`stream::defaults`) and the default signal.
    fn default() -> ScanConfig {
        use crate::stream::defaults;
        ScanConfig {
            budget: defaults::BUDGET,
            tail_lines: defaults::TAIL_LINES,
            tail_budget: defaults::TAIL_BUDGET,
            signal: crate::stream::signal::matcher(None).expect("the default signal pattern compiles"),
        }
    }
}

impl ScanConfig {
    /// Bytes of the input's start kept raw: enough to pass through any
    /// input of at most `budget` chars (a char is at most 4 bytes).
    pub fn head_bytes(&self) -> usize {
        // Saturating: a budget near usize::MAX must not wrap to a tiny arena
        // (which silently turned passthrough off).
        self.budget.saturating_mul(4).saturating_add(4)
    }
    /// Bytes kept from each end of a long line.
    fn piece(&self) -> usize {
        self.budget.saturating_mul(2).max(crate::stream::tail::piece_for(self.tail_budget))
    }
    /// Bytes kept from each end of an open line over `LINE_CAP`: a piece,
    /// the slack `StoredLine::set` looks into for a character boundary, and
    /// the `\r` of a CRLF (dropped at the line's end), so the kept ends come
    /// out the same as when the line arrives whole in one block.
    fn open_piece(&self) -> usize {
        self.piece().saturating_add(crate::stream::line::CUT_SLACK + 1)
    }
}

/// The line that is open across a block boundary.
#[derive(Debug, Default)]
struct OpenLine {
    lineno: u64,
    /// The whole line so far, or only its first `open_piece` bytes once
    /// over cap.
    buf: Vec<u8>,
    over_cap: bool,
    /// Once over cap: the last `open_piece` bytes.
    suffix: Vec<u8>,
    /// Once over cap: the last `OVERLAP` bytes, for boundary searches.
    overlap: Vec<u8>,
    /// Once over cap: carriage returns in the whole line so far, so a
    /// redrawn line can say how often it was redrawn in the part not kept.
    crs: u64,
    bytes: u64,
    /// Characters so far, the terminator included once seen.
    chars: u64,
    matched: bool,
}

#[derive(Debug)]
pub struct Scanner {
    cfg: ScanConfig,
    bytes: u64,
    newlines: u64,
    chars: CharCounter,
    last_byte: Option<u8>,
    head: Vec<u8>,
    /// Line 1, when it does not end inside the head arena.
    first_line: Option<StoredLine>,
    open: OpenLine,
    tail: TailRing,
    signals: SignalKeeper,
    /// What the lines past the head arena are (sampled; see `stream::gap`).
    gap: GapInventory,
    /// What lines are searched with: `cfg.signal`, or the classifier's
    /// combined regex; shared so a region search can hold it while lines
    /// are handed to `visit` (one cache pool for the whole run).
    signal: Arc<Regex>,
    /// The first pass that names candidate lines (families only); only
    /// they are matched against `signal`.
    literal: Option<Arc<FirstPass>>,
    /// Candidate line starts of the region being searched (reused).
    candidates: Vec<usize>,
    /// Where the region's newlines are, marked by the pass that counts
    /// them, for the family scan (reused).
    region_newlines: NewlineMap,
    /// Family knowledge, when the run uses it: which matching lines are
    /// signals, of what severity, and which lines after them belong to them.
    families: Option<Families>,
    /// The code the latest signal line's family captured as its kind.
    kind_code: Vec<u8>,
    /// The listing layouts' accumulators (`stream::layout`).
    layouts: Layouts,
    /// The signal lines of a listing: the hits that are not its units,
    /// kept while a listing layout is in play.
    listing: SignalKeeper,
    /// The wrapped command, which may name the listing's tool.
    command: Option<String>,
    /// With families, `signal` is the classifier's combined regex, taken
    /// (and so compiled) only when a line needs it (see `signal`).
    signal_taken: bool,
    finished: bool,
    /// No other scanner of this process has it (see `Scanned::serial`).
    serial: u64,
    /// The family scan may pass over a listing's units (see
    /// [`Scanner::allow_unit_skip`]).
    unit_skip: bool,
    /// The last line of the last region whose units it passed over (0:
    /// none; line numbers start at 1).
    skipped_through: u64,
}

/// The scanner's family state: the engine, its per-run tally, the block
/// being collected after the latest signal line, and the first error's
/// location.
#[derive(Debug)]
struct Families {
    classifier: Arc<Classifier>,
    tally: Tally,
    /// Boxed, as is `spare`: a block opens and closes with every signal
    /// line, and moving it by value was 1.5% of a server log's scan.
    block: Option<Box<OpenBlock>>,
    /// The last closed block, whose buffers the next one reuses.
    spare: Option<Box<OpenBlock>>,
    first_error_location: Option<(u64, String)>,
    /// Some family has lead lines: `prev` is kept.
    leads: bool,
    /// The line before the next one to be scanned (its first `PREV_KEEP`
    /// bytes), when it lies outside the region being searched.
    prev: Vec<u8>,
    /// The latest lead line that named a file, per family (`family`, line
    /// number, text, file): carried to the family's next signal lines.
    carried: Option<(Option<usize>, u64, Vec<u8>, String)>,
}

/// Where the line before a visited line is: in the region being searched
/// (the region and the visited line's start), or kept in `Families::prev`.
#[derive(Clone, Copy)]
struct Before<'r>(&'r [u8], usize);

impl<'r> Before<'r> {
    /// The line before, or None when it is the one kept aside.
    fn in_region(self) -> Option<&'r [u8]> {
        let Before(region, start) = self;
        if start == 0 {
            return None;
        }
        let from = memrchr(b'\n', &region[..start - 1]).map_or(0, |k| k + 1);
        Some(strip_cr(&region[from..start - 1]))
    }
}

/// The scanner's final figures and kept material, for the renderer.
pub struct Scanned<'a> {
    pub bytes: u64,
    pub chars: u64,
    pub lines: u64,
    pub unterminated: bool,
    pub binary: bool,
    /// The first bytes of the input, raw.
    pub head: &'a [u8],
    /// True when `head` holds the whole input.
    pub head_is_all: bool,
    pub first_line: Option<&'a StoredLine>,
    pub tail: &'a TailRing,
    pub signals: &'a SignalKeeper,
    pub gap: &'a GapInventory,
    /// Family evidence and verdicts, when family knowledge is on.
    pub tally: Option<&'a Tally>,
    /// The first error line that has a location, and that location.
    pub first_error_location: Option<&'a (u64, String)>,
    /// The detected family and its classifier, when it names lines that
    /// report a passing test (`FamilySpec::passing`): the renderer folds
    /// runs of them into one count.
    pub passing: Option<(&'a Classifier, usize)>,
    /// The layout of the input; for a listing, `signals` holds only the
    /// lines that are not its units, and there is no family tally.
    pub layout: Layout,
    pub layouts: &'a Layouts,
    /// Lines at each end the reader asked to see one by one (the `| head
    /// -N` / `| tail -N` an agent hook replaced): the renderer never folds
    /// them into a run. Zero unless the session sets them.
    pub unfolded_head: u64,
    pub unfolded_tail: u64,
    /// Which scanner this is a view of, unique in the process: what the
    /// renderer keys work done once per scan by (the masks a scan's lines
    /// hold).
    pub serial: u64,
}

/// Evidence lines that make a family's output a tool's, not a listing.
const TOOL_EVIDENCE: u64 = 2;

impl Scanner {
    pub fn new(cfg: ScanConfig) -> Scanner {
        let tail = TailRing::new(cfg.tail_lines.max(1), cfg.tail_budget, cfg.budget);
        // Enough kept signal lines to fill any budget with short ones, but
        // bounded: an entry is at least ~8 chars ("12: x\n").
        let distinct = (cfg.budget / 16).clamp(16, 4096);
        let keeper = || {
            let mut k = SignalKeeper::new(cfg.tail_lines + 32, distinct);
            // As many as the tail ring can hold lines (it grows up to the
            // budget in lines), bounded for huge budgets.
            k.remember_last(cfg.tail_lines.max(cfg.budget.min(1 << 16)) + 1);
            k.remember_early(cfg.head_bytes().saturating_add(1));
            k
        };
        let signals = keeper();
        let listing = keeper();
        Scanner {
            bytes: 0,
            newlines: 0,
            chars: CharCounter::new(),
            last_byte: None,
            head: Vec::new(),
            first_line: None,
            open: OpenLine { lineno: 1, ..OpenLine::default() },
            tail,
            signals,
            gap: GapInventory::new(cfg.head_bytes() as u64),
            signal: Arc::new(cfg.signal.clone()),
            literal: None,
            candidates: Vec::new(),
            region_newlines: NewlineMap::default(),
            families: None,
            kind_code: Vec::new(),
            layouts: Layouts::new(),
            listing,
            command: None,
            signal_taken: true,
            finished: false,
            unit_skip: false,
            skipped_through: 0,
            serial: {
                static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
            cfg,
        }
    }

    /// Uses family knowledge: the classifier's prefilter replaces the
    /// signal regex, and each line it matches is classified. Call before
    /// the first `feed`.
    pub fn set_classifier(&mut self, classifier: Arc<Classifier>) {
        debug_assert_eq!(self.bytes, 0, "set_classifier after feed");
        self.signal_taken = false;
        self.literal = classifier.literal_prefilter().map(|l| Arc::new(l.clone()));
        let tally = classifier.tally();
        let leads = classifier.has_leads();
        self.families = Some(Families {
            classifier,
            tally,
            block: None,
            spare: None,
            first_error_location: None,
            leads,
            prev: Vec::new(),
            carried: None,
        });
    }

    /// Turns the classification cache on (the default) or off (see
    /// `family::cache`); call after `set_classifier`.
    pub fn set_caching(&mut self, on: bool) {
        if let Some(f) = self.families.as_mut() {
            f.tally.set_caching(on);
        }
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Lets the family scan pass over the units of a listing once the
    /// layouts' window is read and the lines so far make a path, match or
    /// commit listing: their text is data there (see `stream::layout`), so
    /// classifying it (a third to a half of such a scan) changes nothing
    /// in that envelope. Should the layout end up another, the result is
    /// not to be used: [`Scanner::needs_rescan`] says so, and the caller
    /// scans the stored copy again with a scanner that skips nothing. So
    /// only a caller that keeps a copy of the input allows it.
    pub fn allow_unit_skip(&mut self) {
        self.unit_skip = true;
    }

    /// Whether the family scan passed over units of a listing and the
    /// layout is not that listing after all: the signal lines and the
    /// family counts miss those lines (see [`Scanner::allow_unit_skip`]).
    pub fn needs_rescan(&self) -> bool {
        self.skipped_through > 0 && !matches!(self.layout(), Layout::Paths | Layout::Matches | Layout::Commits)
    }

    /// The last line of the last region whose units were passed over.
    pub fn skipped_through(&self) -> u64 {
        self.skipped_through
    }

    /// A new scanner like this one (configuration, families, command) that
    /// has read `input` to its end, skipping nothing.
    pub fn rescan(&self, input: &mut dyn std::io::Read) -> std::io::Result<Scanner> {
        let mut sc = Scanner::new(self.cfg.clone());
        if let Some(f) = &self.families {
            sc.set_classifier(Arc::clone(&f.classifier));
        }
        sc.set_command(self.command.as_deref());
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => sc.feed(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        sc.finish();
        Ok(sc)
    }

    /// Whether the family scan of the region just handed to the layouts
    /// may pass over its units: allowed, a literal first pass (which the
    /// skipping scan uses), none of the user's patterns (whose matches
    /// count in units too), the window read, and the lines so far a
    /// listing whose envelope uses no family counts (a patch may be a
    /// tool's own diff, told by the families' evidence).
    fn skipping_units(&self) -> bool {
        self.unit_skip
            && self.literal.is_some()
            && self.layouts.window_read()
            && self.families.as_ref().is_some_and(|f| !f.classifier.has_user_patterns())
            && matches!(self.layouts.decide(None), Layout::Paths | Layout::Matches | Layout::Commits)
    }

    /// The wrapped command, which may name a listing's tool (see
    /// `stream::layout`).
    pub fn set_command(&mut self, command: Option<&str>) {
        self.command = command.map(str::to_string);
    }

    pub fn feed(&mut self, block: &[u8]) {
        debug_assert!(!self.finished, "feed after finish");
        if block.is_empty() {
            return;
        }
        self.bytes += block.len() as u64;
        self.last_byte = block.last().copied();
        let head_cap = self.cfg.head_bytes();
        if self.head.len() < head_cap {
            let take = (head_cap - self.head.len()).min(block.len());
            self.head.extend_from_slice(&block[..take]);
        }
        let Some(first_nl) = memchr(b'\n', block) else {
            self.extend_open(block);
            return;
        };
        self.extend_open(&block[..=first_nl]);
        self.close_open(true);
        let rest = &block[first_nl + 1..];
        match memrchr(b'\n', rest) {
            Some(last_nl) => {
                self.scan_region(&rest[..=last_nl]);
                self.open.lineno = self.newlines + 1;
                self.extend_open(&rest[last_nl + 1..]);
            }
            None => self.extend_open(rest),
        }
    }

    /// Ends the input: the open line, if any, is the unterminated last one.
    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        let before = self.chars.chars();
        self.chars.finish();
        self.open.chars += self.chars.chars() - before;
        if self.open.bytes > 0 {
            self.close_open(false);
        }
        self.close_block();
        self.signals.settle();
        self.listing.settle();
        self.fill_pending_locations();
        self.layouts.finish();
    }

    /// The layout of the whole input, as the envelope takes it.
    fn layout(&self) -> Layout {
        match self.layouts.decide(self.command.as_deref()) {
            // A tool's own diff (Black's `--diff`) keeps its family's
            // verdict; a log of commits stays one whatever its messages
            // quote.
            Layout::Patch if self.tool_output() => Layout::Log,
            l => l,
        }
    }

    pub fn result(&self) -> Scanned<'_> {
        let unterminated = self.last_byte.is_some_and(|b| b != b'\n');
        let layout = self.layout();
        let listing = layout.is_listing();
        Scanned {
            bytes: self.bytes,
            chars: self.chars.chars(),
            lines: self.newlines + unterminated as u64,
            unterminated,
            binary: self.chars.saw_nul(),
            head: &self.head,
            head_is_all: self.bytes == self.head.len() as u64,
            first_line: self.first_line.as_ref(),
            tail: &self.tail,
            signals: if listing { &self.listing } else { &self.signals },
            gap: &self.gap,
            tally: self.families.as_ref().filter(|_| !listing).map(|f| &f.tally),
            first_error_location: self
                .families
                .as_ref()
                .filter(|_| !listing)
                .and_then(|f| f.first_error_location.as_ref()),
            passing: self.families.as_ref().filter(|_| !listing).and_then(|f| {
                let family = f.classifier.detect(&f.tally, self.command.as_deref())?;
                Some((&*f.classifier, family))
            }),
            layout,
            layouts: &self.layouts,
            unfolded_head: 0,
            unfolded_tail: 0,
            serial: self.serial,
        }
    }

    /// Appends a segment (possibly ending with the line's `\n`) to the open
    /// line.
    fn extend_open(&mut self, seg: &[u8]) {
        if seg.is_empty() {
            return;
        }
        self.open.chars += self.chars.feed(seg);
        let content = seg.strip_suffix(b"\n").unwrap_or(seg);
        if content.is_empty() {
            return;
        }
        let o = &mut self.open;
        o.bytes += content.len() as u64;
        if !o.over_cap {
            o.buf.extend_from_slice(content);
            if o.buf.len() > LINE_CAP {
                self.spill_open_over_cap();
            }
            return;
        }
        if !o.matched {
            // Search the kept end of the line followed by this segment: the
            // kept bytes give look-behind context at the seam, and a match
            // too close to the segment's end is left for the next round,
            // when the bytes after it (look-ahead context) are known.
            let mut hay = std::mem::take(&mut o.overlap);
            let context = hay.len().min(4);
            hay.extend_from_slice(content);
            self.open.matched = match_clear_of_end(&self.signal(), &hay, context);
            push_last(&mut hay, &[], OVERLAP);
            self.open.overlap = hay;
        } else {
            push_last(&mut o.overlap, content, OVERLAP);
        }
        let o = &mut self.open;
        o.crs += memchr_iter(b'\r', content).count() as u64;
        push_last(&mut o.suffix, content, self.cfg.open_piece());
    }

    /// The open line just passed LINE_CAP: search what we have, keep its
    /// two ends only.
    fn spill_open_over_cap(&mut self) {
        let piece = self.cfg.open_piece();
        let re = self.signal();
        let o = &mut self.open;
        o.matched = match_clear_of_end(&re, &o.buf, 0);
        o.over_cap = true;
        o.crs = memchr_iter(b'\r', &o.buf).count() as u64;
        o.suffix.clear();
        push_last(&mut o.suffix, &o.buf, piece);
        o.overlap.clear();
        push_last(&mut o.overlap, &o.buf, OVERLAP);
        o.buf.truncate(piece);
    }

    /// Hands the open line to the consumers and starts the next one.
    fn close_open(&mut self, terminated: bool) {
        let mut o = std::mem::take(&mut self.open);
        if terminated {
            o.chars -= 1; // the '\n'
            self.newlines += 1;
        }
        let lineno = o.lineno;
        let has_cr = if o.over_cap { o.suffix.last() == Some(&b'\r') } else { o.buf.last() == Some(&b'\r') };
        if terminated && has_cr {
            o.chars -= 1;
            o.bytes -= 1;
            if o.over_cap {
                o.suffix.pop();
                o.crs = o.crs.saturating_sub(1);
            } else {
                o.buf.pop();
            }
        }
        let body = if o.over_cap {
            let from = crate::stream::line::ends_overlap(o.buf.len(), o.suffix.len(), o.bytes);
            let kept = memchr_iter(b'\r', &o.buf).count() + memchr_iter(b'\r', &o.suffix[from..]).count();
            let elided_crs = o.crs.saturating_sub(kept as u64);
            LineBody::Cut { prefix: &o.buf, suffix: &o.suffix, bytes: o.bytes, chars: o.chars, elided_crs }
        } else {
            LineBody::Whole(&o.buf)
        };
        let matched = if !o.over_cap {
            match self.families.as_ref().filter(|_| self.literal.is_some()) {
                // As for the lines of a region: the first pass names the
                // candidates, the classifier decides.
                Some(f) => f.classifier.line_candidate(&o.buf),
                None => self.signal().is_match(&o.buf),
            }
        } else if o.matched {
            true
        } else {
            // The last round: the line's true end is now known.
            let end =
                if terminated && has_cr { &o.overlap[..o.overlap.len().saturating_sub(1)] } else { &o.overlap[..] };
            let context = end.len().min(4);
            self.signal().find_at(end, context).is_some()
        };
        self.layouts.line(lineno, body);
        self.visit(lineno, body, matched, Before(&[], 0));
        if let Some(fam) = self.families.as_mut().filter(|f| f.leads) {
            fam.prev.clear();
            fam.prev.extend_from_slice(&o.buf[..o.buf.len().min(PREV_KEEP)]);
        }
        self.gap.line(body, o.bytes + terminated as u64 + (terminated && has_cr) as u64);
        if lineno == 1 && o.bytes as usize + 1 > self.head.len() {
            self.first_line = Some(StoredLine::new(1, body, self.cfg.piece()));
        }
        self.tail.push(lineno, body);
        // Reuse the allocation for the next open line.
        let mut buf = o.buf;
        buf.clear();
        self.open = OpenLine { lineno: self.newlines + 1, buf, ..OpenLine::default() };
    }

    /// Complete lines wholly inside one block: whole-block operations only.
    fn scan_region(&mut self, region: &[u8]) {
        let first = self.newlines + 1;
        // One pass counts the lines and the characters, and marks where
        // the lines end for the family scan, which walks them.
        let marks = match self.literal {
            Some(_) => self.region_newlines.clear_for(region.len()),
            None => &mut [],
        };
        let (_, count) = self.chars.feed_marking(region, marks);
        let newlines = self.literal.is_some().then_some(&self.region_newlines);
        self.layouts.region(region, first, newlines);
        let skip_units = self.skipping_units();
        if skip_units {
            self.skipped_through = first + count - 1;
        }
        // Nothing in a region of units alone is searched.
        if !(skip_units && !self.block_open() && self.layouts.all_units(count)) {
            self.search_region(region, first, skip_units);
        }
        if let Some(fam) = self.families.as_mut().filter(|f| f.leads) {
            let last = Before(region, region.len()).in_region().unwrap_or_default();
            fam.prev.clear();
            fam.prev.extend_from_slice(&last[..last.len().min(PREV_KEEP)]);
        }
        self.gap.region(region);
        self.tail.push_region(region, first, count);
        self.newlines += count;
    }

    /// Finds the matching lines of a region with whole-region regex
    /// searches (the regex's literal prefilter does the work), mapping each
    /// match to its line with memchr. While a signal line's block is open,
    /// the lines after it are visited one by one (a block is at most a few
    /// lines). With family knowledge, a literal first pass names the
    /// candidate lines instead (see `search_candidates`, which passes over
    /// a listing's units with `skip_units`; `skipping_units` allows it only
    /// with the first pass).
    fn search_region(&mut self, region: &[u8], first: u64, skip_units: bool) {
        if let Some(fp) = self.literal.clone() {
            self.search_candidates(region, first, &fp, skip_units);
            return;
        }
        let re = self.signal();
        let mut pos = 0;
        let mut counted = 0;
        let mut lineno = first;
        while pos < region.len() {
            if self.block_open() {
                let end = pos + memchr(b'\n', &region[pos..]).expect("a region ends with a newline");
                lineno += memchr_iter(b'\n', &region[counted..pos]).count() as u64;
                counted = pos;
                let line = strip_cr(&region[pos..end]);
                let matched = re.is_match(line);
                self.visit(lineno, LineBody::Whole(line), matched, Before(region, pos));
                pos = end + 1;
                continue;
            }
            let Some(m) = re.find_at(region, pos) else { break };
            let s = m.start();
            if s >= region.len() {
                break;
            }
            let line_start = memrchr(b'\n', &region[pos..s]).map_or(pos, |k| pos + k + 1);
            let line_end = s + memchr(b'\n', &region[s..]).expect("a region ends with a newline");
            lineno += memchr_iter(b'\n', &region[counted..line_start]).count() as u64;
            counted = line_start;
            let line = strip_cr(&region[line_start..line_end]);
            // A match that runs past the line's content (into its `\r\n`
            // or the next line) proves nothing: test the line alone.
            if m.end() <= line_start + line.len() || re.is_match(line) {
                self.visit(lineno, LineBody::Whole(line), true, Before(region, line_start));
            }
            pos = line_end + 1;
        }
    }

    /// The family scan of a region: candidate lines are those holding one
    /// of the first pass's fingerprints or starting with bytes a line-start
    /// literal can begin (one SIMD pass over the whole region, see
    /// `family::teddy`), and lines holding an escape byte; only they are
    /// matched against the combined regex. Their starts, ends and numbers
    /// are looked up in the newlines the counting pass marked (see
    /// `text::newlines`), not searched for again. With `skip_units`, a
    /// candidate that is a listing's unit is passed over unless it is in
    /// an open block (see [`Scanner::allow_unit_skip`]).
    fn search_candidates(&mut self, region: &[u8], first: u64, fp: &FirstPass, skip_units: bool) {
        let mut cands = std::mem::take(&mut self.candidates);
        let newlines = std::mem::take(&mut self.region_newlines);
        cands.clear();
        if fp.starts_candidate(region) {
            cands.push(0);
        }
        // Colour codes can split any literal: a line holding an escape
        // byte is a candidate.
        cands.extend(memchr_iter(0x1b, region).map(|at| newlines.line_start(at)));
        let anchored = cands.len();
        // One candidate per line: after a hit the search goes on from the
        // next line.
        let mut at = 0;
        while let Some(hit) = fp.find(region, at) {
            cands.push(newlines.line_start(hit));
            match newlines.next(hit) {
                Some(end) => at = end + 1,
                None => break,
            }
        }
        if anchored > 0 && cands.len() > anchored {
            cands.sort_unstable();
        }
        cands.dedup();
        let mut pos = 0;
        let mut counted = 0;
        let mut lineno = first;
        let mut next = 0;
        while pos < region.len() {
            let walking = self.block_open();
            let start = if walking {
                pos
            } else {
                while next < cands.len() && cands[next] < pos {
                    next += 1;
                }
                match cands.get(next) {
                    Some(&c) => c,
                    None => break,
                }
            };
            let end = newlines.next(start).expect("a region ends with a newline");
            let line = strip_cr(&region[start..end]);
            // A candidate goes straight to the classifier, whose pattern
            // set says whether it matches at all: running the combined
            // regex first would search every signal line twice.
            while next < cands.len() && cands[next] < start {
                next += 1;
            }
            let matched = cands.get(next) == Some(&start);
            if matched || walking {
                lineno += newlines.count(counted, start);
                counted = start;
                if skip_units && !walking && self.layouts.is_unit(lineno) {
                    pos = end + 1;
                    continue;
                }
                self.visit(lineno, LineBody::Whole(line), matched, Before(region, start));
            }
            pos = end + 1;
        }
        self.candidates = cands;
        self.region_newlines = newlines;
    }

    /// What lines are matched with: `cfg.signal`, or with families the
    /// classifier's combined regex, compiled the first time it is needed.
    fn signal(&mut self) -> Arc<Regex> {
        if !self.signal_taken {
            if let Some(f) = &self.families {
                self.signal = f.classifier.prefilter_shared();
            }
            self.signal_taken = true;
        }
        Arc::clone(&self.signal)
    }

    fn block_open(&self) -> bool {
        self.families.as_ref().is_some_and(|f| f.block.is_some())
    }

    /// One line that matched the signal regex (`matched`), or that follows
    /// a signal line while its block is open.
    fn visit(&mut self, lineno: u64, body: LineBody, matched: bool, before: Before) {
        let Some(fam) = self.families.as_mut() else {
            if matched {
                self.signals.offer(lineno, body);
                if self.listing_takes(lineno, false) {
                    self.listing.offer(lineno, body);
                }
            }
            return;
        };
        let head = match body {
            LineBody::Whole(b) => b,
            LineBody::Cut { prefix, .. } => prefix,
        };
        let class = if matched { fam.classifier.classify(lineno, head, &mut fam.tally) } else { None };
        if let (Some(c), Some(b)) = (&class, fam.block.as_mut()) {
            if b.continues(&fam.classifier, lineno, head, c) {
                return;
            }
        }
        if let Some(mut class) = class {
            // A generic signal inside a family's block (jest's `TypeError:`
            // under `● test name`) keeps the family's rule, so its block
            // still reaches the location line.
            if let Some(open) = fam.block.as_ref().filter(|b| b.class.specific && !class.specific) {
                class.block = open.class.block;
            }
            // A line before that is a signal line itself (its block still
            // open, empty) is shown as one: not again as a lead.
            let after_signal = fam.block.as_ref().is_some_and(|b| b.lineno + 1 == lineno);
            // The kind: the code the pattern captured, else the template.
            self.kind_code.clear();
            let kind_key = if class.kind {
                self.kind_code.extend_from_slice(fam.tally.kind());
                None
            } else {
                Some(class.template)
            };
            self.close_block();
            let kind = match kind_key {
                Some(key) => Kind { key, code: None },
                None => Kind::code(&self.kind_code),
            };
            if self.listing_takes(lineno, class.user) {
                self.listing.offer_with(lineno, body, class.severity, kind);
            }
            self.signals.offer_with(lineno, body, class.severity, kind);
            let fam = self.families.as_mut().expect("families");
            if class.severity == Severity::Error {
                fam.tally.note_error(lineno);
            }
            let mut block = match fam.spare.take() {
                Some(mut b) => {
                    b.reset(lineno, head, class);
                    b
                }
                None => Box::new(OpenBlock::new(lineno, head, class)),
            };
            if fam.leads {
                fam.lead(&mut block, before, after_signal);
            }
            fam.block = Some(block);
            return;
        }
        let Some(b) = fam.block.as_mut() else { return };
        if !b.take(&fam.classifier, lineno, head) {
            self.close_block();
        }
    }

    /// Whether a family names the output on its own evidence, with the
    /// margin detection asks and at least [`TOOL_EVIDENCE`] lines of it
    /// (one quoted line in a commit message is not a tool's output).
    fn tool_output(&self) -> bool {
        let Some(f) = self.families.as_ref() else { return false };
        let command = self.command.as_deref();
        let Some(i) = f.classifier.detect(&f.tally, command) else { return false };
        f.classifier.scores(&f.tally, command).iter().any(|&(j, s)| j == i && s >= TOOL_EVIDENCE)
    }

    /// A hit as a listing's signal line: only when it is not a unit of a
    /// layout in play (file names, matched text, commit messages and diff
    /// lines are data); a match of the user's own pattern always counts.
    fn listing_takes(&self, lineno: u64, user: bool) -> bool {
        self.layouts.in_play() && (user || !self.layouts.is_unit(lineno))
    }

    /// Ends the open block: attaches it and its location to the kept
    /// signal line.
    fn close_block(&mut self) {
        let Some(fam) = self.families.as_mut() else { return };
        let Some(b) = fam.block.take() else { return };
        let error = b.class.severity == Severity::Error;
        let lead = (b.lead.as_ref(), b.file.as_deref());
        let classifier = &fam.classifier;
        let location =
            self.signals.attach_block(b.lineno, b.lines(), b.linenos(), b.class.block, lead, || b.location(classifier));
        // The first error's location is looked up with the hits that stay
        // kept (once per shape, see `SignalKeeper::attach_block`): looking
        // at every error block while none had a location took 13% of the
        // scan of a log with one error line in ten.
        if let (true, None, Some(l)) = (error, &fam.first_error_location, location) {
            fam.first_error_location = Some((b.lineno, l));
        }
        fam.spare = Some(b);
    }

    /// Looks up the locations `attach_block` left for the end: those of
    /// the recent hits still kept.
    fn fill_pending_locations(&mut self) {
        let Some(fam) = self.families.as_ref() else { return };
        let classifier = Arc::clone(&fam.classifier);
        for k in self.signals.pending_locations() {
            let Some(rule) = k.location_rule.take() else { continue };
            let head = match k.line.body() {
                LineBody::Whole(b) => b,
                LineBody::Cut { prefix, .. } => prefix,
            };
            let texts = std::iter::once(head).chain(k.block.split(|&b| b == b'\n'));
            k.location = classifier.location(classifier.block_rule(rule), texts, k.file.as_deref());
        }
    }
}

impl Families {
    /// Gives `block` (a signal line just seen) the lead line before it, if
    /// that line is one of its family's, and the file the family's latest
    /// lead line named.
    fn lead(&mut self, block: &mut OpenBlock, before: Before, after_signal: bool) {
        let rule = self.classifier.block_rule(block.class.block);
        let prev = before.in_region().unwrap_or(&self.prev);
        // (Not even looked at after a signal line: in a linter's run of
        // problem lines, matching every one cost a third of the scan.)
        if let Some(lead) = (!after_signal).then(|| self.classifier.lead(rule, prev)).flatten() {
            let at = (block.lineno - 1, prev.to_vec());
            if let Some(file) = lead.file {
                self.carried = Some((rule.family(), at.0, at.1.clone(), file));
            }
            block.lead = Some(at);
        }
        if let Some((_, n, text, file)) = self.carried.as_ref().filter(|c| c.0 == rule.family()) {
            block.file = Some(file.clone());
            // Every signal line under a file header shows it (the envelope
            // prints it once, before the first of them it shows).
            block.lead.get_or_insert_with(|| (*n, text.clone()));
        }
    }
}

/// Whether `re` matches in `hay` at or after `start` (earlier bytes are
/// look-behind context only) with a match ending at least one full
/// character before the end of `hay`, whose end is not the line's end.
fn match_clear_of_end(re: &Regex, hay: &[u8], start: usize) -> bool {
    re.find_at(hay, start).is_some_and(|m| m.end() + 4 <= hay.len())
}

/// Keeps in `dst` the last `cap` bytes of `dst ++ src`.
fn push_last(dst: &mut Vec<u8>, src: &[u8], cap: usize) {
    if src.len() >= cap {
        dst.clear();
        dst.extend_from_slice(&src[src.len() - cap..]);
        return;
    }
    let total = dst.len() + src.len();
    if total > cap {
        dst.drain(..total - cap);
    }
    dst.extend_from_slice(src);
}

impl crate::stream::ingest::BlockSink for Scanner {
    fn feed(&mut self, block: &[u8]) {
        Scanner::feed(self, block);
    }
}
