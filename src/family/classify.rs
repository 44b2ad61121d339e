//! The family engine: one combined regex (the *prefilter*, an alternation
//! of every signal, success, verdict and detection pattern) that the scanner
//! searches over whole blocks, and, for the rare lines it matches, a
//! `RegexSet` that says which patterns matched: the line's severity, the
//! family evidence it gives, the success spans that cancel a signal match
//! (`0 failed`), and verdict captures.
//!
//! Per-run state lives in a [`Tally`] owned by the scanner: fixed counters
//! per family, so memory does not depend on the input.

use regex::bytes::{Regex, RegexBuilder};
use regex_automata::{
    meta, nfa::thompson::WhichCaptures, util::syntax, Anchored, Input, MatchKind, PatternID, PatternSet,
};

use super::spec::{BlockSpec, FamilySpec};
use super::FamilyOptions;

/// How bad a signal line is. Errors are shown before warnings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    pub fn parse(s: &str) -> Result<Severity, String> {
        match s {
            "error" => Ok(Severity::Error),
            "warning" => Ok(Severity::Warning),
            _ => Err(format!("unknown severity '{s}' (error or warning)")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// The scanner's first pass (see `literals` and `teddy`): candidate lines
/// hold a fingerprint, start with bytes a line-start literal begins, or
/// hold an escape byte (a colour code can hide any pattern's literal: see
/// `classify`; the scanner finds those with memchr).
pub use super::teddy::Search as FirstPass;

/// How many times the best family's detection score must be every other
/// family's for it to be named (see [`Classifier::detect`]).
pub const DETECT_MARGIN: u64 = 2;

/// Hard caps on a block, whatever a family file asks.
pub const BLOCK_MAX_LINES: usize = 16;
pub const BLOCK_MAX_CHARS: usize = 1200;

/// Which lines after a signal line belong to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    None,
    /// Lines that start with a space or a tab.
    Indent,
    /// Lines indented deeper than the signal line (mocha's failure title
    /// inside a suite, under its `  2) suite` line; the next line at the
    /// signal line's depth, a passing test's name, is not taken).
    Deeper,
    /// Every line up to a blank one.
    Blank,
    /// Every line up to and including one with a location.
    Location,
    /// Indented lines, then the first unindented one (Python's exception).
    Traceback,
    /// Every line up to the next signal line.
    Next,
    /// The next lines that the same pattern matches (they are not signal
    /// lines of their own: npm's `npm error` block is one signal).
    Same,
}

#[derive(Debug, Clone)]
pub struct BlockRule {
    pub until: Until,
    pub max_lines: usize,
    pub max_chars: usize,
    pub pick_last: bool,
    /// Index of the family whose location pattern applies.
    family: Option<usize>,
}

impl BlockRule {
    /// The family the rule belongs to (None: the user's patterns).
    pub fn family(&self) -> Option<usize> {
        self.family
    }
}

/// What a signal line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineClass {
    pub severity: Severity,
    /// Index of its block rule ([`Classifier::block_rule`]).
    pub block: usize,
    /// Matched by a family's own pattern (not only a generic one).
    pub specific: bool,
    /// The pattern named the line's kind (`(?P<kind>…)` took part in the
    /// match): the code is in [`Tally::kind`] until the next line.
    pub kind: bool,
    /// The key of the line's template (`text::template::key`, colour codes
    /// removed): its kind when it has no code.
    pub template: u64,
    /// Matched by one of the user's own patterns (`--signal`,
    /// `--signal-add`): a signal even in a listing's units.
    pub user: bool,
}

/// Verdict fields, in the order they are printed.
pub const FIELDS: [&str; 6] = ["failed", "errors", "passed", "skipped", "warnings", "total"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Passed,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
        }
    }

    fn parse(s: &str) -> Option<Status> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ok" | "pass" | "passed" | "success" | "successful" | "succeeded" | "complete" => Some(Status::Passed),
            "fail" | "failed" | "failure" | "failures" | "error" | "errors" | "broken" => Some(Status::Failed),
            _ => None,
        }
    }
}

enum Role {
    Signal(Severity, usize),
    Success,
    Verdict(usize),
    Detect,
    /// A new run of the tool begins (evidence too).
    RunStart,
}

struct Pat {
    /// The pattern names its line's kind: a `kind` group (see
    /// [`Classifier::classify`]).
    kind: bool,
    /// None for the user's own patterns.
    family: Option<usize>,
    role: Role,
    /// The pattern alone, compiled the first time a line matches it (most
    /// runs need a few of them: compiling all would cost more than
    /// scanning a small input).
    source: String,
    re: std::sync::OnceLock<Regex>,
}

impl Pat {
    fn re(&self) -> &Regex {
        self.re.get_or_init(|| build(&format!("(?mR){}", self.source)).expect("checked when the engine was built"))
    }
}

struct VerdictRule {
    sum: bool,
    status: Option<Status>,
    tally: Option<usize>,
    ends_run: bool,
    quote: bool,
}

struct FamilyRt {
    name: String,
    generic: bool,
    /// A shipped tool family: its success spans also cancel the generic
    /// families' matches (see `classify`).
    shipped_tool: bool,
    commands: Vec<Vec<String>>,
    hint_weight: u64,
    location: Option<String>,
    location_re: std::sync::OnceLock<Option<Regex>>,
    lead: Vec<String>,
    /// Compiled the first time a signal line of the family is seen.
    lead_re: std::sync::OnceLock<Vec<Regex>>,
    location_skip: Vec<String>,
    location_skip_re: std::sync::OnceLock<Vec<Regex>>,
    passing: Vec<String>,
    /// Compiled the first time the envelope asks (only shown lines are).
    passing_re: std::sync::OnceLock<Vec<Regex>>,
    verdicts: Vec<VerdictRule>,
}

impl FamilyRt {
    fn location(&self) -> Option<&Regex> {
        self.location_re.get_or_init(|| self.location.as_deref().and_then(|p| compile_one(p).ok())).as_ref()
    }

    fn location_skip(&self) -> &[Regex] {
        self.location_skip_re.get_or_init(|| self.location_skip.iter().filter_map(|p| compile_one(p).ok()).collect())
    }

    fn lead(&self) -> &[Regex] {
        self.lead_re.get_or_init(|| self.lead.iter().filter_map(|p| compile_one(p).ok()).collect())
    }

    fn passing(&self) -> &[Regex] {
        self.passing_re.get_or_init(|| self.passing.iter().filter_map(|p| compile_one(p).ok()).collect())
    }
}

/// A line found right before a signal line that belongs to it (see
/// `FamilySpec::lead`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lead {
    /// The file it names, carried to the family's next signal lines.
    pub file: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Auto,
    Off,
    Forced(usize),
}

/// Every family's patterns, compiled once per run.
pub struct Classifier {
    /// Shared: every scanner of the run searches with one cache pool.
    /// Built when first asked for: with the literal first pass it is needed
    /// only for lines over a MiB (compiling it took a third of the start).
    prefilter: std::sync::OnceLock<std::sync::Arc<Regex>>,
    /// Its source.
    combined: String,
    /// Literals every candidate line contains (see `literals`), when every
    /// pattern has some: the fast first pass.
    literal: Option<FirstPass>,
    /// Built when the first line matches the prefilter: output without a
    /// single candidate line (most `ls` or `find` runs) never pays for it.
    /// Which patterns match a line: a multi-pattern regex configured as
    /// `regex::bytes::RegexSet` is, used directly so that the set of
    /// matches is a buffer reused from line to line (allocating and freeing
    /// it per line took 3% of a scan with one signal line in ten).
    set: std::sync::OnceLock<meta::Regex>,
    set_sources: Vec<String>,
    /// What the classification cache must recheck (see `family::cache`).
    plan: std::sync::OnceLock<CachePlan>,
    pats: Vec<Pat>,
    families: Vec<FamilyRt>,
    blocks: Vec<BlockRule>,
    default_locations: std::sync::OnceLock<Vec<Regex>>,
    mode: Mode,
}

impl std::fmt::Debug for Classifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Classifier").field("patterns", &self.pats.len()).field("mode", &self.mode).finish()
    }
}

/// `{A}` in a family pattern: any ANSI colour sequences, so one pattern
/// reads coloured and plain output alike.
const ANSI: &str = r"(?:\x1b\[[0-9;]*m)*";

fn expand(p: &str) -> String {
    p.replace("{A}", ANSI)
}

/// A family pattern as compiled: ASCII classes and word boundaries.
fn family_source(p: &str) -> String {
    format!("(?-u:{})", expand(p))
}

/// Compiles one family pattern alone (checks a file; finds spans).
pub fn compile_one(p: &str) -> Result<Regex, regex::Error> {
    build(&format!("(?mR){}", family_source(p)))
}

fn build(p: &str) -> Result<Regex, regex::Error> {
    let p = crate::family::anchors::contract_lines(p, false)?;
    RegexBuilder::new(&p).size_limit(64 << 20).dfa_size_limit(64 << 20).build()
}

/// Locations tried when a family has none, or its own finds nothing.
const DEFAULT_LOCATIONS: &[&str] = &[
    r#"File "(?P<file>[^"]+)", line (?P<line>\d+)"#,
    r"(?P<file>[\w.@/\\+~-]*[\w-]\.[A-Za-z]\w{0,9})\((?P<line>\d+)(?:,(?P<col>\d+))?\)",
    r"(?P<file>[\w.@/\\+~-]*[\w-]\.[A-Za-z]\w{0,9}):\[?(?P<line>\d+)(?:[:,](?P<col>\d+))?",
];

impl Classifier {
    /// Builds the engine from `specs` for these options; `user` is the
    /// `--signal` regex (already validated) when it replaces the defaults.
    pub fn new(specs: &[FamilySpec], opts: &FamilyOptions) -> Result<Classifier, String> {
        let mode = match &opts.choice {
            super::FamilyChoice::Auto => Mode::Auto,
            super::FamilyChoice::None => Mode::Off,
            super::FamilyChoice::Named(n) => match specs.iter().position(|f| &f.name == n && !f.generic) {
                Some(i) => Mode::Forced(i),
                None => {
                    let names: Vec<&str> = specs.iter().filter(|f| !f.generic).map(|f| f.name.as_str()).collect();
                    return Err(format!("unknown family '{n}'; known: {}, none", names.join(", ")));
                }
            },
        };
        let active = |i: usize, f: &FamilySpec| match mode {
            Mode::Auto => true,
            Mode::Off => f.generic,
            Mode::Forced(k) => f.generic || k == i,
        };
        let family_signals = opts.replace.is_none() && !opts.off;
        let mut sources: Vec<String> = Vec::new();
        let mut pats: Vec<Pat> = Vec::new();
        let mut blocks: Vec<BlockRule> = Vec::new();
        let mut families = Vec::new();
        let mut push = |src: String, family: Option<usize>, role: Role, sources: &mut Vec<String>| {
            // Family patterns were checked when their file was loaded; the
            // user's are checked here (the set would reject them too, but
            // without saying which).
            if family.is_none() {
                build(&format!("(?mR){src}")).map_err(|e| e.to_string())?;
            }
            let kind = matches!(role, Role::Signal(..)) && names_kind(&src);
            sources.push(src.clone());
            pats.push(Pat { kind, family, role, source: src, re: std::sync::OnceLock::new() });
            Ok::<(), String>(())
        };
        for (i, f) in specs.iter().enumerate() {
            let verdicts = f
                .verdict
                .iter()
                .map(|v| VerdictRule {
                    sum: v.merge.as_deref() == Some("sum"),
                    status: v.status.as_deref().and_then(Status::parse),
                    tally: v.tally.as_deref().and_then(|t| FIELDS.iter().position(|x| *x == t)),
                    ends_run: v.ends_run,
                    quote: v.quote,
                })
                .collect();
            families.push(FamilyRt {
                name: f.name.clone(),
                generic: f.generic,
                shipped_tool: !f.generic && f.source.is_none(),
                commands: f.commands.iter().map(|c| c.split_whitespace().map(str::to_string).collect()).collect(),
                hint_weight: f.hint_weight.unwrap_or(20),
                location: f.location.clone(),
                location_re: std::sync::OnceLock::new(),
                lead: f.lead.clone(),
                lead_re: std::sync::OnceLock::new(),
                location_skip: f.location_skip.clone(),
                location_skip_re: std::sync::OnceLock::new(),
                passing: f.passing.clone(),
                passing_re: std::sync::OnceLock::new(),
                verdicts,
            });
            if !active(i, f) {
                continue;
            }
            if family_signals {
                for s in &f.signal {
                    let sev = Severity::parse(&s.severity)?;
                    let spec = s.block.as_ref().or(f.block.as_ref());
                    blocks.push(block_rule(spec, Some(i)));
                    push(family_source(&s.pattern), Some(i), Role::Signal(sev, blocks.len() - 1), &mut sources)?;
                }
                for p in &f.success {
                    push(family_source(p), Some(i), Role::Success, &mut sources)?;
                }
            }
            if mode != Mode::Off && !f.generic {
                for (k, v) in f.verdict.iter().enumerate() {
                    push(family_source(&v.pattern), Some(i), Role::Verdict(k), &mut sources)?;
                }
                for p in &f.detect {
                    push(family_source(p), Some(i), Role::Detect, &mut sources)?;
                }
                for p in &f.run_start {
                    push(family_source(p), Some(i), Role::RunStart, &mut sources)?;
                }
            }
        }
        if !opts.off {
            blocks.push(block_rule(None, None));
            let user_block = blocks.len() - 1;
            let user: Vec<&String> = opts.replace.iter().chain(&opts.add).collect();
            for p in user {
                // The user's regex keeps the old meaning: Unicode, as typed.
                push(format!("(?:{p})"), None, Role::Signal(Severity::Error, user_block), &mut sources)
                    .map_err(|e| format!("--signal {p:?}: {e}"))?;
            }
        }
        let combined = if sources.is_empty() {
            // Matches nothing: a run without signals or families.
            "[^\\x00-\\x{10FFFF}]".to_string()
        } else {
            let all: Vec<String> = sources.iter().map(|s| format!("(?:{})", uncapture(s))).collect();
            format!("(?mR){}|(?-u:\\x1b\\[)", all.join("|"))
        };
        let set_sources: Vec<String> = sources
            .iter()
            .map(|s| crate::family::anchors::contract_lines(&format!("(?mR){}", uncapture(s)), false))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        // Success patterns need no literal: they only cancel a signal on
        // a line that some signal pattern's literal already found.
        let needs: Vec<String> = set_sources
            .iter()
            .zip(&pats)
            .filter(|(_, p)| !matches!(p.role, Role::Success))
            .map(|(s, _)| s.clone())
            .collect();
        let literal = super::literals::first_pass(&needs)
            .filter(|_| !sources.is_empty())
            .map(|f| FirstPass::new(&f.floating, f.starts).confirming(&f.literals));
        let prefilter = std::sync::OnceLock::new();
        if literal.is_none() || opts.replace.is_some() || !opts.add.is_empty() {
            // Needed at once (no first pass), or holding the user's
            // patterns: a combination that does not compile is said now.
            let _ = prefilter.set(std::sync::Arc::new(build(&combined).map_err(|e| e.to_string())?));
        }
        Ok(Classifier {
            prefilter,
            combined,
            literal,
            set: std::sync::OnceLock::new(),
            set_sources,
            plan: std::sync::OnceLock::new(),
            pats,
            families,
            blocks,
            default_locations: std::sync::OnceLock::new(),
            mode,
        })
    }

    fn build_set(&self) -> Result<meta::Regex, String> {
        meta::Builder::new()
            .configure(
                meta::Config::new()
                    .nfa_size_limit(Some(64 << 20))
                    .hybrid_cache_capacity(64 << 20)
                    .match_kind(MatchKind::All)
                    .utf8_empty(false)
                    .which_captures(WhichCaptures::None),
            )
            .syntax(syntax::Config::new().utf8(false))
            .build_many(&self.set_sources)
            .map_err(|e| e.to_string())
    }

    /// Builds now what the first candidate line would build, so that a
    /// size limit is met here (where a family file can be dropped) rather
    /// than in the middle of a run. Used when user families are loaded.
    pub fn build_now(&self) -> Result<(), String> {
        // The combined regex is built lazily too (only a line over a MiB
        // that the first pass cannot judge needs it).
        if self.prefilter.get().is_none() {
            let re = build(&self.combined).map_err(|e| e.to_string())?;
            let _ = self.prefilter.set(std::sync::Arc::new(re));
        }
        if self.set.get().is_none() {
            let _ = self.set.set(self.build_set()?);
        }
        Ok(())
    }

    /// The combined regex: a line that does not match it is nothing.
    pub fn prefilter(&self) -> &Regex {
        self.prefilter_arc()
    }

    /// The combined regex, shared (cloning a `Regex` would start a new
    /// cache, rebuilding its lazy DFA).
    pub fn prefilter_shared(&self) -> std::sync::Arc<Regex> {
        std::sync::Arc::clone(self.prefilter_arc())
    }

    fn prefilter_arc(&self) -> &std::sync::Arc<Regex> {
        self.prefilter.get_or_init(|| {
            // Every pattern in it compiled alone (family files when loaded,
            // the user's when the engine was built).
            std::sync::Arc::new(build(&self.combined).expect("the combined patterns compile"))
        })
    }

    /// Whether a line (without its newline) is a candidate of the first
    /// pass: only such a line can match the combined regex.
    pub fn line_candidate(&self, line: &[u8]) -> bool {
        match &self.literal {
            Some(fp) => fp.starts_candidate(line) || fp.find(line, 0).is_some() || memchr::memchr(0x1b, line).is_some(),
            None => self.prefilter().is_match(line),
        }
    }

    /// The first pass: every line the prefilter matches holds one of its
    /// literals or starts as one of its line-start literals; None when some
    /// pattern has no usable literal.
    pub fn literal_prefilter(&self) -> Option<&FirstPass> {
        self.literal.as_ref()
    }

    /// Whether the user's own patterns (`--signal`) are among the
    /// patterns: their matches count in a listing's units too.
    pub fn has_user_patterns(&self) -> bool {
        self.pats.iter().any(|p| p.family.is_none())
    }

    pub fn block_rule(&self, i: usize) -> &BlockRule {
        &self.blocks[i]
    }

    /// A fresh per-run state for this engine.
    pub fn tally(&self) -> Tally {
        Tally {
            evidence: vec![0; self.families.len()],
            seen_on: vec![0; self.families.len()],
            verdicts: vec![VerdictAcc::default(); self.families.len()],
            last_error: 0,
            cache: Cache::default(),
            caching: true,
            scratch: Scratch {
                matched: PatternSet::new(self.pats.len()),
                ids: Vec::new(),
                success: Vec::new(),
                signals: Vec::new(),
                kind: Vec::new(),
                masked: Vec::new(),
                candidates: Vec::new(),
                rechecked: None,
            },
        }
    }

    /// What a line (that matched the prefilter) is: records its evidence
    /// and verdicts in `tally`, and returns its class when it is a signal.
    /// A line whose mask was classified before is answered from the
    /// tally's cache where no pattern can tell the two apart (see
    /// `family::cache`); every count is still made per line.
    pub fn classify(&self, lineno: u64, line: &[u8], tally: &mut Tally) -> Option<LineClass> {
        // Colour codes would hide `error:` from patterns written for plain
        // text: lines with an escape reach here through the prefilter's
        // `\x1b[` branch and are classified without them (and uncached).
        let cached = tally.caching && !tally.cache.resting();
        let Some(mask) = cached.then(|| crate::text::mask::plain_mask(line)).flatten() else {
            return self.classify_whole(lineno, &strip_ansi(line), tally, None);
        };
        let key = mask.key;
        let plan = self.plan();
        if let Some(e) = tally.cache.get(key) {
            let agrees = e.recheck().is_empty()
                || plan.agrees(e.recheck(), e.recheck_matched, line, mask.lone_digits, &mut tally.scratch.rechecked);
            if agrees {
                tally.cache.hits += 1;
                tally.cache.window.1 += 1;
                return self.replay(&e, lineno, line, tally);
            }
        }
        tally.cache.misses += 1;
        if !tally.cache.seen_before(key) {
            return self.classify_whole(lineno, line, tally, None);
        }
        let mut entry = Entry { key, ..Entry::default() };
        let class = self.classify_whole(lineno, line, tally, Some((&mut entry, plan)));
        if entry.cacheable {
            tally.cache.put(entry);
        }
        class
    }

    /// Which patterns can tell lines of one mask apart, and their
    /// digit-free pieces (built with the first line classified).
    fn plan(&self) -> &CachePlan {
        self.plan.get_or_init(|| {
            let parser = || regex_syntax::ParserBuilder::new().utf8(false).build();
            let mut unsafe_pats = Vec::new();
            for (i, src) in self.set_sources.iter().enumerate() {
                let hir = parser().parse(src).ok();
                if hir.as_ref().is_some_and(super::cache::invariant) {
                    continue;
                }
                unsafe_pats.push(UnsafePattern {
                    index: i,
                    anchored: hir.as_ref().is_some_and(super::cache::anchored),
                    pieces: hir.as_ref().and_then(super::cache::pieces),
                    raw: hir.as_ref().and_then(super::literals::digit_required_strings),
                    whole: hir.as_ref().and_then(super::cache::whole_runs),
                    inner: hir.as_ref().filter(|h| !super::cache::anchored(h)).and_then(super::inner::InnerStart::new),
                    first: hir.as_ref().filter(|h| super::cache::anchored(h)).and_then(super::cache::first_bytes),
                });
            }
            CachePlan::new(unsafe_pats, &self.set_sources)
        })
    }

    /// A cached classification applied to a line of its mask: the per-line
    /// counts (family evidence, verdict captures) and the kind's code are
    /// made on the line itself.
    fn replay(&self, e: &Entry, lineno: u64, line: &[u8], tally: &mut Tally) -> Option<LineClass> {
        for &f in e.evidence() {
            let f = f as usize;
            if tally.seen_on[f] != lineno + 1 {
                tally.seen_on[f] = lineno + 1;
                tally.evidence[f] += 1;
            }
        }
        for &i in e.verdicts() {
            let p = &self.pats[i as usize];
            if let (Role::Verdict(k), Some(f), Some(caps)) = (&p.role, p.family, p.re().captures(line)) {
                tally.verdicts[f].add(&self.families[f].verdicts[*k], &caps, lineno, line);
            }
        }
        let mut class = e.class?;
        if let Some(k) = e.kind_pat {
            class.kind = tally.scratch.capture_kind(self.pats[k as usize].re(), line);
        }
        Some(class)
    }

    /// The classification of a line from all the patterns. With `record`,
    /// also what a cache entry needs to answer the next line of its mask.
    fn classify_whole(
        &self,
        lineno: u64,
        line: &[u8],
        tally: &mut Tally,
        mut record: Option<(&mut Entry, &CachePlan)>,
    ) -> Option<LineClass> {
        let set = self.set.get_or_init(|| self.build_set().expect("every pattern compiled in the prefilter"));
        let Scratch { matched, ids, success, signals, masked, candidates, .. } = &mut tally.scratch;
        matched.clear();
        set.which_overlapping_matches(&Input::new(line), matched);
        if let Some((entry, plan)) = record.as_mut() {
            // The patterns that could match another line of this mask
            // otherwise, with what they did on this one.
            entry.cacheable = true;
            super::cache::masked(line, masked);
            plan.candidates(masked, candidates);
            for &i in candidates.iter() {
                let at = entry.recheck_len as usize;
                entry.cacheable &= push_small(&mut entry.recheck, &mut entry.recheck_len, i);
                if matched.contains(regex_automata::PatternID::new_unchecked(i)) && at < 32 {
                    entry.recheck_matched |= 1 << at;
                }
            }
        }
        if matched.is_empty() {
            return None;
        }
        success.clear();
        signals.clear();
        // Walking the set's flags costs one step per pattern; the generic
        // families, which most signal lines match, come last, so the
        // matches are collected from the end and stop at the last one.
        ids.clear();
        ids.extend(matched.iter().rev().take(matched.len()).map(|p| p.as_usize()));
        for &i in ids.iter().rev() {
            let p = &self.pats[i];
            // Only detection and verdict patterns are evidence: a family's
            // signal patterns (`warning:`) can be printed by anything.
            let evidence = matches!(p.role, Role::Detect | Role::Verdict(_) | Role::RunStart);
            if let Some(f) = p.family.filter(|_| evidence) {
                if !self.families[f].generic {
                    if let Some((e, _)) = record.as_mut() {
                        if !e.evidence().contains(&(f as u16)) {
                            e.cacheable &= push_small(&mut e.evidence, &mut e.evidence_len, f);
                        }
                    }
                    if tally.seen_on[f] != lineno + 1 {
                        tally.seen_on[f] = lineno + 1;
                        tally.evidence[f] += 1;
                    }
                }
            }
            match p.role {
                Role::Signal(..) => signals.push(i),
                Role::Success => {
                    // Where a success span lies decides which signals it
                    // cancels: such a line is classified whole every time.
                    if let Some((e, _)) = record.as_mut() {
                        e.cacheable = false;
                    }
                    success.extend(p.re().find_iter(line).map(|m| (p.family, m.start(), m.end())))
                }
                Role::Verdict(k) => {
                    if let Some((e, _)) = record.as_mut() {
                        e.cacheable &= push_small(&mut e.verdicts, &mut e.verdicts_len, i);
                    }
                    if let (Some(f), Some(caps)) = (p.family, p.re().captures(line)) {
                        tally.verdicts[f].add(&self.families[f].verdicts[k], &caps, lineno, line);
                    }
                }
                Role::RunStart => {
                    // A new run resets the verdict's counts: the cache keeps
                    // no record of it, so such a line is classified whole.
                    if let Some((e, _)) = record.as_mut() {
                        e.cacheable = false;
                    }
                    if let Some(f) = p.family {
                        tally.verdicts[f].new_run();
                    }
                }
                Role::Detect => {}
            }
        }
        // The most severe signal wins; then a family's own pattern over a
        // generic one; then, between two families' patterns (RSpec's and
        // minitest's `  1) ...`), the family with more evidence so far; then
        // one that names the line's kind.
        let mut best: Option<(Severity, bool, u64, bool, usize)> = None;
        let mut user = false;
        // The first specific family that matched, and whether another did:
        // evidence changes from line to line, so a contested line is never
        // answered from the cache.
        let mut first_family: Option<usize> = None;
        let mut contested = false;
        for &i in signals.iter() {
            let p = &self.pats[i];
            let Role::Signal(sev, _) = p.role else { continue };
            // A success span (`0 failed`) cancels the signal matches of its
            // own family that overlap it: one family's file (a user's
            // `success = [".*"]`) never silences another's errors.
            // (Without success spans the set's match is the answer.)
            // One exception: a shipped tool family's span also cancels the
            // generic patterns (strace's failed lookups end in `No such file
            // or directory`, Prettier's code frame lines start `[error]`);
            // a user's file never does.
            let generic = p.family.is_some_and(|f| self.families[f].generic);
            let own = |&&(f, _, _): &&(Option<usize>, usize, usize)| {
                f == p.family || (generic && f.is_some_and(|f| self.families[f].shipped_tool))
            };
            let real = !success.iter().any(|s| own(&s))
                || p.re()
                    .find_iter(line)
                    .any(|m| !success.iter().filter(own).any(|&(_, s, e)| s < m.end() && m.start() < e));
            if !real {
                continue;
            }
            user |= p.family.is_none();
            let specific = p.family.is_some_and(|f| !self.families[f].generic);
            // Between two families' patterns of one severity, the family
            // with more evidence so far gives the block rule.
            let weight = p.family.filter(|_| specific).map_or(0, |f| tally.evidence[f]);
            if let Some(f) = p.family.filter(|_| specific) {
                contested |= first_family.is_some_and(|g| g != f);
                first_family.get_or_insert(f);
            }
            let rank = (sev, specific, weight, p.kind, i);
            if best.is_none_or(|b| (rank.0, rank.1, rank.2, rank.3) > (b.0, b.1, b.2, b.3)) {
                best = Some(rank);
            }
        }
        let (severity, specific, _, _, i) = best?;
        let p = &self.pats[i];
        let Role::Signal(_, block) = p.role else { unreachable!("only signals are ranked") };
        let template = crate::text::template::key(line);
        let class = LineClass { severity, block, specific, kind: false, template, user };
        if let Some((e, _)) = record.as_mut() {
            e.class = Some(class);
            e.kind_pat = p.kind.then_some(i as u16);
            e.cacheable &= !contested;
        }
        let kind = p.kind && tally.scratch.capture_kind(p.re(), line);
        Some(LineClass { kind, ..class })
    }

    /// The location (`file:line[:col]`) in `texts` (the signal line, then
    /// its block lines), by the rule's family pattern, else the defaults;
    /// `file` (from a lead line above, see [`Classifier::lead`]) completes
    /// a location that names no file.
    pub fn location<'a>(
        &self,
        rule: &BlockRule,
        texts: impl Iterator<Item = &'a [u8]> + Clone,
        file: Option<&str>,
    ) -> Option<String> {
        let found = self.location_of(rule, texts)?;
        match file {
            Some(f) if found.starts_with(':') => Some(format!("{f}{found}")),
            _ => Some(found),
        }
    }

    fn location_of<'a>(&self, rule: &BlockRule, texts: impl Iterator<Item = &'a [u8]> + Clone) -> Option<String> {
        let own = rule.family.and_then(|f| self.families[f].location());
        let defaults = self
            .default_locations
            .get_or_init(|| DEFAULT_LOCATIONS.iter().map(|p| build(p).expect("default location compiles")).collect());
        let skip = rule.family.map_or(&[][..], |f| self.families[f].location_skip());
        let skipped =
            |c: &regex::bytes::Captures| c.name("file").is_some_and(|m| skip.iter().any(|s| s.is_match(m.as_bytes())));
        for re in own.into_iter().chain(defaults.iter()) {
            let mut found = None;
            for t in texts.clone() {
                let plain = strip_ansi(t);
                if let Some(c) = re.captures(&plain).filter(|c| !skipped(c)) {
                    // A "location" inside a credential (the password and
                    // host of `scheme://user:PASSWORD@host:5432`) is not
                    // one, and would reach the header unmasked.
                    if inside_secret(&plain, c.get(0).map_or(0..0, |m| m.range())) {
                        continue;
                    }
                    found = Some(format_location(&c));
                    if !rule.pick_last {
                        break;
                    }
                }
            }
            if found.is_some() {
                return found;
            }
        }
        None
    }

    /// Does `line` hold a location (the `location` block rule)?
    pub fn has_location(&self, rule: &BlockRule, line: &[u8]) -> bool {
        self.location_of(rule, std::iter::once(line)).is_some()
    }

    /// Whether `prev`, the line right before a signal line of `rule`'s
    /// family, is one of that family's lead lines, and the file it names.
    pub fn lead(&self, rule: &BlockRule, prev: &[u8]) -> Option<Lead> {
        let f = &self.families[rule.family?];
        if f.lead.is_empty() || prev.is_empty() {
            return None;
        }
        let plain = strip_ansi(prev);
        f.lead().iter().find_map(|re| {
            // The DFA answers most lines; captures only for a match.
            if !re.is_match(&plain) {
                return None;
            }
            let c = re.captures(&plain)?;
            let file = c.name("file").map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned());
            Some(Lead { file })
        })
    }

    /// Whether some family has lead lines (the scanner then keeps the line
    /// before each signal line at hand).
    pub fn has_leads(&self) -> bool {
        self.families.iter().any(|f| !f.lead.is_empty())
    }

    /// The family this run's output belongs to: forced, or the one whose
    /// evidence (a matching command counts `hint_weight` lines) is at least
    /// [`DETECT_MARGIN`] times every other family's. Without such a margin
    /// no family is named: a wrong name (and a wrong verdict) misleads more
    /// than none, and the signal lines are the same either way.
    pub fn detect(&self, tally: &Tally, command: Option<&str>) -> Option<usize> {
        match self.mode {
            Mode::Off => None,
            Mode::Forced(f) => Some(f),
            Mode::Auto => {
                let mut scores = self.scores(tally, command);
                scores.sort_by_key(|&(i, s)| (std::cmp::Reverse(s), i));
                let (i, best) = *scores.first()?;
                let second = scores.get(1).map_or(0, |&(_, s)| s);
                (best > second && best >= DETECT_MARGIN * second).then_some(i)
            }
        }
    }

    /// Families the engine knows (active or not).
    pub fn family_count(&self) -> usize {
        self.families.len()
    }

    /// Each specific family's detection score: its evidence lines, plus
    /// its hint weight when the command is one of its own.
    pub fn scores(&self, tally: &Tally, command: Option<&str>) -> Vec<(usize, u64)> {
        let words = command.map(command_words).unwrap_or_default();
        self.families
            .iter()
            .enumerate()
            .filter(|(_, f)| !f.generic)
            .map(|(i, f)| {
                let hinted = f.commands.iter().any(|c| !c.is_empty() && words.starts_with(c));
                (i, tally.evidence[i] + if hinted { f.hint_weight } else { 0 })
            })
            .collect()
    }

    pub fn family_name(&self, i: usize) -> &str {
        &self.families[i].name
    }

    /// Whether `line` reports a passing test of family `f` (its `passing`
    /// patterns; colour codes are looked through).
    pub fn passing(&self, f: usize, line: &[u8]) -> bool {
        let pats = self.families[f].passing();
        !pats.is_empty() && {
            let plain = strip_ansi(line);
            pats.iter().any(|re| re.is_match(&plain))
        }
    }

    /// The verdict of family `f`: from its verdict lines, or, when it
    /// printed none, from the error lines counted (`from_signals`).
    pub fn verdict(&self, tally: &Tally, f: usize, errors: u64) -> Option<Verdict> {
        let acc = &tally.verdicts[f];
        let runs = acc.earlier_runs + (acc.lines > 0) as u64;
        if acc.lines == 0 {
            return (errors > 0).then(|| Verdict {
                family: self.families[f].name.clone(),
                status: Status::Failed,
                counts: vec![("errors", errors)],
                lines: 0,
                from_signals: true,
                runs: 0,
                earlier_failed: 0,
                quote: None,
            });
        }
        let counts: Vec<(&'static str, u64)> =
            FIELDS.iter().zip(acc.counts.iter()).filter_map(|(n, c)| c.map(|c| (*n, c))).collect();
        let get = |n: &str| counts.iter().find(|(k, _)| *k == n).map_or(0, |(_, v)| *v);
        let errors_after = tally.last_error > acc.last_line;
        let status = if acc.failed_any || get("failed") > 0 || get("errors") > 0 || errors_after {
            Status::Failed
        } else {
            acc.status.unwrap_or(Status::Passed)
        };
        Some(Verdict {
            family: self.families[f].name.clone(),
            status,
            counts,
            lines: acc.lines,
            from_signals: false,
            runs,
            earlier_failed: acc.earlier_failed,
            quote: acc.quote.clone(),
        })
    }
}

/// Whether a pattern names its line's kind: it has a group `(?P<kind>…)`
/// (or `(?<kind>…)`).
fn names_kind(src: &str) -> bool {
    src.contains("(?P<kind>") || src.contains("(?<kind>")
}

/// `src` with its named groups made non-capturing: names repeat across
/// patterns, and the combined regex and the set only need to match.
pub fn uncapture(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            let n = src[i..].chars().nth(1).map_or(1, |c| 1 + c.len_utf8());
            out.push_str(&src[i..i + n]);
            i += n;
            continue;
        }
        let rest = &src[i..];
        let name_at = if rest.starts_with("(?P<") {
            Some(4)
        } else if rest.starts_with("(?<") {
            Some(3)
        } else {
            None
        };
        if let Some(k) = name_at {
            if let Some(close) = rest[k..].find('>') {
                out.push_str("(?:");
                i += k + close + 1;
                continue;
            }
        }
        let c = rest.chars().next().expect("in bounds");
        out.push(c);
        i += c.len_utf8();
    }
    out
}

fn block_rule(spec: Option<&BlockSpec>, family: Option<usize>) -> BlockRule {
    let until = match spec.and_then(|s| s.until.as_deref()) {
        Some("indent") => Until::Indent,
        Some("deeper") => Until::Deeper,
        Some("blank") => Until::Blank,
        Some("location") => Until::Location,
        Some("traceback") => Until::Traceback,
        Some("next") => Until::Next,
        Some("same") => Until::Same,
        Some("none") => Until::None,
        _ => Until::Indent,
    };
    BlockRule {
        until,
        max_lines: spec.and_then(|s| s.max_lines).unwrap_or(8).min(BLOCK_MAX_LINES),
        max_chars: spec.and_then(|s| s.max_chars).unwrap_or(600).min(BLOCK_MAX_CHARS),
        pick_last: spec.and_then(|s| s.pick.as_deref()) == Some("last"),
        family,
    }
}

fn format_location(c: &regex::bytes::Captures) -> String {
    let g = |n: &str| c.name(n).map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned());
    let mut s = g("file").unwrap_or_default();
    if let Some(l) = g("line") {
        s.push(':');
        s.push_str(&l);
        if let Some(col) = g("col") {
            s.push(':');
            s.push_str(&col);
        }
    }
    s
}

/// The bytes of `line` without ANSI escape sequences (CSI and OSC).
pub fn strip_ansi(line: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if memchr::memchr(0x1b, line).is_none() {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = Vec::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        if line[i] == 0x1b && line.get(i + 1) == Some(&b'[') {
            i += 2;
            while i < line.len() && !(0x40..=0x7e).contains(&line[i]) {
                i += 1;
            }
            i += 1;
        } else {
            out.push(line[i]);
            i += 1;
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A command's words for the hint: leading `VAR=value` and wrappers
/// (`env`, `time`, `npx`, `sudo`) skipped, the program reduced to its
/// basename, quotes removed.
fn command_words(command: &str) -> Vec<String> {
    let mut words: Vec<String> =
        command.split_whitespace().map(|w| w.trim_matches(|c| c == '\'' || c == '"').to_string()).collect();
    while let Some(w) = words.first() {
        let base = w.rsplit('/').next().unwrap_or(w);
        if w.contains('=') || matches!(base, "env" | "time" | "sudo" | "nice" | "npx" | "bunx" | "uv" | "poetry") {
            if base == "uv" || base == "poetry" {
                // `uv run pytest`, `poetry run pytest`
                words.remove(0);
                if words.first().is_some_and(|w| w == "run") {
                    words.remove(0);
                }
                continue;
            }
            words.remove(0);
        } else {
            break;
        }
    }
    if let Some(w) = words.first_mut() {
        *w = w.rsplit('/').next().unwrap_or(w).to_string();
    }
    words
}

/// Per-run state: evidence and verdicts per family, fixed size.
#[derive(Debug, Clone)]
pub struct Tally {
    evidence: Vec<u64>,
    /// Line number + 1 of the last line that gave evidence, per family
    /// (a line counts once per family).
    seen_on: Vec<u64>,
    verdicts: Vec<VerdictAcc>,
    /// Line number of the last error line.
    last_error: u64,
    scratch: Scratch,
    /// Classifications by mask (see `family::cache`).
    cache: Cache,
    caching: bool,
}

/// Buffers `classify` reuses from line to line.
#[derive(Debug, Clone)]
struct Scratch {
    matched: PatternSet,
    /// The matched patterns' indices, last first.
    ids: Vec<usize>,
    /// Success spans: (family, start, end).
    success: Vec<(Option<usize>, usize, usize)>,
    signals: Vec<usize>,
    /// The kind the last signal line's pattern named.
    kind: Vec<u8>,
    /// The line being recorded for the cache, masked.
    masked: Vec<u8>,
    /// The patterns to rerun on its mask's next lines.
    candidates: Vec<usize>,
    /// The unsafe patterns a cached line matched.
    rechecked: Option<PatternSet>,
}

impl Scratch {
    /// Runs `re` for its `kind` group on `line`; true (and the code kept
    /// in `kind`) when the group took part in the match.
    fn capture_kind(&mut self, re: &Regex, line: &[u8]) -> bool {
        self.kind.clear();
        let Some(m) = re.captures(line).and_then(|c| c.name("kind")) else { return false };
        self.kind.extend_from_slice(m.as_bytes());
        !self.kind.is_empty()
    }
}

impl Tally {
    /// Turns the classification cache on (the default) or off: a run is
    /// classified alike either way (the property tests and the fuzz
    /// target compare them).
    pub fn set_caching(&mut self, on: bool) {
        self.caching = on;
    }

    /// Lines answered from the cache, and lines classified whole.
    pub fn cache_counts(&self) -> (u64, u64) {
        (self.cache.hits, self.cache.misses)
    }

    /// The code the last signal line's pattern captured as its kind (when
    /// its class says `kind`).
    pub fn kind(&self) -> &[u8] {
        &self.scratch.kind
    }

    pub fn evidence(&self, f: usize) -> u64 {
        self.evidence[f]
    }

    /// Records an error line (a passing verdict followed by errors is not
    /// the run's last word: `Finished` then a panic).
    pub fn note_error(&mut self, lineno: u64) {
        self.last_error = lineno;
    }
}

/// One family's verdict lines: those of the current run (the last one
/// seen), and how many runs came before it.
#[derive(Debug, Clone, Default)]
struct VerdictAcc {
    /// Verdict lines of the current run.
    lines: u64,
    status: Option<Status>,
    failed_any: bool,
    counts: [Option<u64>; FIELDS.len()],
    last_line: u64,
    /// A run start was seen after this run's verdict lines: the next
    /// verdict line begins a new run. (Not at the start line itself: a
    /// run cut off before its verdict leaves the previous one standing.)
    new_run_pending: bool,
    /// Runs with verdict lines before the current one, and how many of
    /// them failed.
    earlier_runs: u64,
    earlier_failed: u64,
    /// The latest quoted verdict line of the run (see `VerdictSpec::quote`).
    quote: Option<String>,
}

impl VerdictAcc {
    /// A line that starts a new run of the tool.
    fn new_run(&mut self) {
        self.new_run_pending = self.lines > 0;
    }

    fn add(&mut self, rule: &VerdictRule, caps: &regex::bytes::Captures, lineno: u64, line: &[u8]) {
        if std::mem::take(&mut self.new_run_pending) {
            let failed =
                self.failed_any || self.counts[0].is_some_and(|n| n > 0) || self.counts[1].is_some_and(|n| n > 0);
            *self = VerdictAcc {
                earlier_runs: self.earlier_runs + 1,
                earlier_failed: self.earlier_failed + failed as u64,
                ..VerdictAcc::default()
            };
        }
        self.lines += 1;
        self.last_line = lineno;
        for (k, name) in FIELDS.iter().enumerate() {
            let Some(m) = caps.name(name) else { continue };
            let Some(n) = std::str::from_utf8(m.as_bytes()).ok().and_then(|s| s.parse::<u64>().ok()) else {
                continue;
            };
            self.counts[k] = Some(if rule.sum { self.counts[k].unwrap_or(0) + n } else { n });
        }
        if let Some(t) = rule.tally {
            self.counts[t] = Some(self.counts[t].unwrap_or(0) + 1);
        }
        let status =
            caps.name("status").and_then(|m| Status::parse(&String::from_utf8_lossy(m.as_bytes()))).or(rule.status);
        if let Some(s) = status {
            self.failed_any |= s == Status::Failed;
            self.status = Some(s);
        }
        if rule.quote {
            let text = String::from_utf8_lossy(line);
            self.quote = Some(crate::text::shorten::shorten_text(text.trim(), QUOTE_CHARS));
        }
        if rule.ends_run {
            self.new_run_pending = true;
        }
    }
}

/// What a run concluded, from its family's verdict lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub family: String,
    pub status: Status,
    /// Non-empty counts, in [`FIELDS`] order.
    pub counts: Vec<(&'static str, u64)>,
    /// Verdict lines seen (several runs in one log add up).
    pub lines: u64,
    /// No verdict line: the status and counts come from the error lines.
    pub from_signals: bool,
    /// Runs of the tool with verdict lines in the output (the verdict is
    /// the last one's; 0 when it comes from the error lines).
    pub runs: u64,
    /// How many of the runs before the last one failed.
    pub earlier_failed: u64,
    /// The quoted verdict line (see `VerdictSpec::quote`).
    pub quote: Option<String>,
}

/// A pattern the cache must not trust, with what its plan needs of it.
struct UnsafePattern {
    index: usize,
    /// Every match begins at the line's start.
    anchored: bool,
    /// Its masked required strings (`cache::pieces`).
    pieces: Option<super::cache::Pieces>,
    /// Its required strings as they are in a line, digits included.
    raw: Option<Vec<Vec<(u8, bool)>>>,
    /// Digit strings one of which every match holds as a whole run
    /// (`cache::whole_runs`).
    whole: Option<Vec<Vec<u8>>>,
    /// When not anchored: where in a line a match can begin, from a
    /// literal inside the pattern (`inner::InnerStart`).
    inner: Option<super::inner::InnerStart>,
    /// When anchored: the bytes a match begins with (`cache::first_bytes`).
    first: Option<super::cache::ByteSet>,
}

/// An unsafe pattern that is not anchored, with what tells cheaply that a
/// line cannot match it: a whole digit run it needs (`0` of `errors: 0`),
/// a string it needs (`" 5` of an HTTP 5xx pattern); and where its search
/// can begin, which spares the engine a start at every digit of a line's
/// timestamp (`\b[1-9]\d* failed`: 28% of the scan of a server log with
/// 10% error lines, searched from the line's start).
struct Single {
    whole: Option<Vec<Vec<u8>>>,
    strings: Option<RawSearch>,
    inner: Option<super::inner::InnerStart>,
    re: meta::Regex,
}

impl Single {
    /// `lone_digits`: the line's whole runs of one digit (`text::mask::Mask`).
    fn is_match(&self, line: &[u8], lone_digits: u16) -> bool {
        let holds = |d: &Vec<u8>| match d[..] {
            [b] => lone_digits & (1 << (b - b'0')) != 0,
            _ => super::cache::holds_whole_run(line, d),
        };
        self.whole.as_ref().is_none_or(|w| w.iter().any(holds))
            && self.strings.as_ref().is_none_or(|s| s.is_match(line))
            && match &self.inner {
                // Most rechecked lines match right where a match can begin
                // (the count before ` failed`): a search anchored there
                // spares the engine's prefilter (5% of a server log's
                // scan); the second takes the matches that begin later.
                Some(inner) => inner.start(line).is_some_and(|s| {
                    self.re.is_match(Input::new(line).range(s..).anchored(Anchored::Yes))
                        || self.re.is_match(Input::new(line).range((s + 1).min(line.len())..))
                }),
                None => self.re.is_match(line),
            }
    }
}

/// A search for any of a pattern's required strings (`\n` for a line's
/// start is dropped with what precedes it: what follows is still needed);
/// None when one of them comes to nothing or holds no digit: a string
/// without digits is in every line of a mask or in none, and the entry was
/// made for a line that held it.
fn raw_search(strings: &[Vec<(u8, bool)>]) -> Option<RawSearch> {
    let mut ci = false;
    let mut out = Vec::new();
    for s in strings {
        let s = match s.iter().rposition(|&(b, _)| b == b'\n') {
            Some(k) => &s[k + 1..],
            None => &s[..],
        };
        if !s.iter().any(|(b, _)| b.is_ascii_digit()) {
            return None;
        }
        ci |= s.iter().any(|&(_, c)| c);
        out.push(s.iter().map(|&(b, _)| b).collect::<Vec<u8>>());
    }
    // Strings that share a start holding a digit (`" 50` to `" 59`): that
    // start is in every match too, and one substring search finds it
    // faster than a search for ten.
    let common = out
        .iter()
        .skip(1)
        .fold(out.first()?.len(), |n, s| n.min(s.len()).min(out[0].iter().zip(s).take_while(|(a, b)| a == b).count()));
    let start = &out[0][..common];
    // Ignoring case changes nothing for a start without letters (`0 ` of
    // `\b0 (?i:errors?|failed)\b`), whose search as a set ignoring case
    // ran its automaton from every `0` of a line's timestamp.
    let exact = !ci || !start.iter().any(u8::is_ascii_alphabetic);
    if exact && start.len() >= 2 && start.iter().any(u8::is_ascii_digit) {
        return Some(RawSearch::One(Box::new(memchr::memmem::Finder::new(start).into_owned())));
    }
    // ASCII case ignored for all when for one: it finds more, never less.
    aho_corasick::AhoCorasick::builder().ascii_case_insensitive(ci).build(&out).ok().map(RawSearch::Any)
}

/// A search for what a pattern's every match holds (see [`raw_search`]).
enum RawSearch {
    One(Box<memchr::memmem::Finder<'static>>),
    Any(aho_corasick::AhoCorasick),
}

impl RawSearch {
    fn is_match(&self, line: &[u8]) -> bool {
        match self {
            RawSearch::One(f) => f.find(line).is_some(),
            RawSearch::Any(ac) => ac.is_match(line),
        }
    }
}

/// The patterns the cache must not trust (see `family::cache`), and their
/// masked pieces as two Aho-Corasick automata (ASCII case ignored or not),
/// so the patterns a masked line may match are found in one pass.
struct CachePlan {
    /// Patterns any line may match (a piece that is all digits).
    always: Vec<usize>,
    /// The unsafe patterns whose every match begins at the start of the
    /// line, as one set searched anchored there: one pass answers them all,
    /// and it stops where none can go on, a byte or two into most lines
    /// (`^[EF]\d{3,4} ` against a line that begins with a date).
    anchored: Option<meta::Regex>,
    /// Per pattern of the classifier: where the plan holds it (bit 31
    /// clear: its index in `anchored`; set: in `singles`); `u32::MAX` when
    /// it is safe.
    in_set: Vec<u32>,
    /// The other unsafe patterns, each on its own, with a search for
    /// strings of which every match holds one, chosen to hold a digit where
    /// the pattern allows (`literals::digit_required_strings`: `" 5` of an
    /// HTTP 5xx pattern, not ` HTTP/`). A line holding none of them does
    /// not match; the others are asked whether they match at all, which
    /// stops at the first match. One pass of these as a set over every
    /// rechecked line took 40% of the scan of an nginx log.
    singles: Vec<Single>,
    /// Per automaton: which pattern each of its strings belongs to.
    searches: Vec<(aho_corasick::AhoCorasick, Vec<usize>)>,
    /// Per anchored pattern: the bytes its matches begin with. A mask whose
    /// lines cannot begin so (ruff's `^UP\d{3}` against a line that begins
    /// with a date) never needs it rerun: it matches none of them.
    first: Vec<(usize, super::cache::ByteSet)>,
}

impl CachePlan {
    fn new(mut unsafe_pats: Vec<UnsafePattern>, sources: &[String]) -> CachePlan {
        let build = |kind: MatchKind, srcs: &[&str]| {
            meta::Builder::new()
                .configure(
                    meta::Config::new()
                        .match_kind(kind)
                        .utf8_empty(false)
                        .which_captures(WhichCaptures::None)
                        .hybrid_cache_capacity(16 << 20),
                )
                .syntax(syntax::Config::new().utf8(false))
                .build_many(srcs)
                .expect("compiled in the whole set")
        };
        let first = unsafe_pats.iter().filter_map(|u| Some((u.index, u.first?))).collect();
        let mut in_set = vec![u32::MAX; sources.len()];
        let mut anchored = Vec::new();
        let mut singles = Vec::new();
        for u in &mut unsafe_pats {
            let src = sources[u.index].as_str();
            if u.anchored {
                in_set[u.index] = anchored.len() as u32;
                anchored.push(src);
            } else {
                in_set[u.index] = singles.len() as u32 | 1 << 31;
                singles.push(Single {
                    whole: u.whole.clone(),
                    strings: u.raw.as_deref().and_then(raw_search),
                    inner: u.inner.take(),
                    re: build(MatchKind::LeftmostFirst, &[src]),
                });
            }
        }
        let anchored = (!anchored.is_empty()).then(|| build(MatchKind::All, &anchored));
        let mut always = Vec::new();
        let mut by_case: [(Vec<Vec<u8>>, Vec<usize>); 2] = Default::default();
        for UnsafePattern { index: i, pieces, .. } in unsafe_pats {
            let Some(pieces) = pieces else {
                always.push(i);
                continue;
            };
            for (p, ci) in pieces {
                by_case[ci as usize].0.push(p);
                by_case[ci as usize].1.push(i);
            }
        }
        let searches = by_case
            .into_iter()
            .enumerate()
            .filter(|(_, (strings, _))| !strings.is_empty())
            .map(|(ci, (strings, owners))| {
                // A full DFA: every masked line a miss makes is walked
                // byte by byte (overlapping), and the NFA's transitions
                // took 7% of the scan of a grep listing.
                let ac = aho_corasick::AhoCorasick::builder()
                    .ascii_case_insensitive(ci == 1)
                    .kind(Some(aho_corasick::AhoCorasickKind::DFA))
                    .build(&strings)
                    .expect("a few short strings");
                (ac, owners)
            })
            .collect();
        CachePlan { always, anchored, in_set, singles, searches, first }
    }

    /// Whether `line` matches the unsafe patterns `recheck` as the cached
    /// line did (bit `j` of `matched`: whether `recheck[j]` matched);
    /// `found` is scratch for the anchored set, made to size.
    fn agrees(
        &self,
        recheck: &[u16],
        matched: u32,
        line: &[u8],
        lone_digits: u16,
        found: &mut Option<PatternSet>,
    ) -> bool {
        let mut searched = false;
        recheck.iter().enumerate().all(|(j, &p)| {
            let at = self.in_set[p as usize];
            if at == u32::MAX {
                // Only unsafe patterns are rechecked; were a safe one listed,
                // the line would go through the whole classification rather
                // than index past the plan.
                return false;
            }
            let k = (at & !(1 << 31)) as usize;
            let now = if at >> 31 == 0 {
                let found =
                    found.get_or_insert_with(|| PatternSet::new(self.anchored.as_ref().map_or(0, |s| s.pattern_len())));
                if !searched {
                    found.clear();
                    if let Some(set) = &self.anchored {
                        set.which_overlapping_matches(&Input::new(line).anchored(Anchored::Yes), found);
                    }
                    searched = true;
                }
                found.contains(PatternID::new_unchecked(k))
            } else {
                self.singles[k].is_match(line, lone_digits)
            };
            now == (matched & (1 << j) != 0)
        })
    }

    /// The patterns that may match a line of this masked form, in order,
    /// into `out`.
    fn candidates(&self, masked: &[u8], out: &mut Vec<usize>) {
        out.clear();
        out.extend_from_slice(&self.always);
        for (ac, owners) in &self.searches {
            out.extend(ac.find_overlapping_iter(masked).map(|m| owners[m.pattern().as_usize()]));
        }
        out.sort_unstable();
        out.dedup();
        let masked0 = masked.first().copied();
        for (i, first) in &self.first {
            if !super::cache::may_start(first, masked0) {
                if let Ok(k) = out.binary_search(i) {
                    out.remove(k);
                }
            }
        }
    }
}

/// Indices an entry keeps inline, per list; an entry that needs more is
/// not kept.
const SMALL: usize = 8;

/// What the cache knows about one mask.
#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    key: u64,
    /// Built whole (no list overflowed, no success span).
    cacheable: bool,
    /// The class (its `kind` is found per line).
    class: Option<LineClass>,
    /// The pattern whose `kind` group names the kind.
    kind_pat: Option<u16>,
    /// Families this mask gives evidence for.
    evidence: [u16; SMALL],
    evidence_len: u8,
    /// Verdict patterns it matched (read per line for their counts).
    verdicts: [u16; SMALL],
    verdicts_len: u8,
    /// Patterns to run again on each line, and which of them matched.
    recheck: [u16; RECHECK],
    recheck_len: u8,
    recheck_matched: u32,
}

impl Entry {
    fn evidence(&self) -> &[u16] {
        &self.evidence[..self.evidence_len as usize]
    }
    fn verdicts(&self) -> &[u16] {
        &self.verdicts[..self.verdicts_len as usize]
    }
    fn recheck(&self) -> &[u16] {
        &self.recheck[..self.recheck_len as usize]
    }
}

/// Patterns an entry may recheck: one bit each in `recheck_matched`. A
/// line of common words (`ERROR … failed after 3 retries`) is a candidate
/// of more than [`SMALL`] digit-sensitive patterns once the second wave of
/// families is loaded.
const RECHECK: usize = 32;

/// Pushes `v` on an inline list; false when it is full.
fn push_small<const N: usize>(list: &mut [u16; N], len: &mut u8, v: usize) -> bool {
    if (*len as usize) < N && v <= u16::MAX as usize {
        list[*len as usize] = v as u16;
        *len += 1;
        true
    } else {
        false
    }
}

/// Entries the cache holds: a fixed table, one entry per slot, the newest
/// taking its slot.
const SLOTS: usize = 4096;

#[derive(Debug, Clone, Default)]
struct Cache {
    slots: Vec<Entry>,
    /// Per slot, the key of the last mask missed there: an entry is made
    /// for a mask's second line, not its first. Making one (the masked
    /// line's pieces searched, the patterns that could tell its lines
    /// apart listed) costs about a second classification, and most masks
    /// of a `git log` or a listing (a commit's hash, a message line, a
    /// path) are never seen again.
    seen: Vec<u64>,
    hits: u64,
    misses: u64,
    /// Lookups and hits in the current window, and lines left to classify
    /// without the cache (see [`Cache::resting`]).
    window: (u32, u32),
    rest: u32,
}

/// Lookups per window of the cache's hit rate, and lines classified without
/// it after a window with almost no hits.
const WINDOW: u32 = 4096;
const REST: u32 = 1 << 16;

impl Cache {
    /// Whether to classify the next line without the cache: after a window
    /// where fewer than one lookup in sixteen hit (every line its own mask,
    /// as in a log with a random id in every line), making entries costs
    /// more than they save, so the next `REST` lines skip it; then it is
    /// tried again. Either way the line is classified alike.
    fn resting(&mut self) -> bool {
        if self.rest > 0 {
            self.rest -= 1;
            return true;
        }
        if self.window.0 >= WINDOW {
            if self.window.1 * 16 < self.window.0 {
                self.rest = REST;
            }
            self.window = (0, 0);
        }
        self.window.0 += 1;
        false
    }

    /// Whether `key` missed before in its slot; notes it when not.
    fn seen_before(&mut self, key: u64) -> bool {
        if self.seen.is_empty() {
            self.seen = vec![0; SLOTS];
        }
        let seen = &mut self.seen[Self::slot(key)];
        std::mem::replace(seen, key) == key
    }

    fn slot(key: u64) -> usize {
        (key ^ (key >> 32)) as usize & (SLOTS - 1)
    }

    fn get(&self, key: u64) -> Option<Entry> {
        self.slots.get(Self::slot(key)).filter(|e| e.cacheable && e.key == key).copied()
    }

    fn put(&mut self, e: Entry) {
        if self.slots.is_empty() {
            self.slots = vec![Entry::default(); SLOTS];
        }
        self.slots[Self::slot(e.key)] = e;
    }
}

/// Whether `range` of `text` overlaps a credential the masker finds (or
/// masking failed: then nothing of the text is trusted).
fn inside_secret(text: &[u8], range: std::ops::Range<usize>) -> bool {
    match crate::text::secrets::spans(text) {
        Ok(spans) => spans.iter().any(|s| s.start < range.end && range.start < s.end),
        Err(crate::text::secrets::MaskFailed) => true,
    }
}

/// Characters of a quoted verdict line kept in the summary.
const QUOTE_CHARS: usize = 160;

#[cfg(test)]
mod tests;
