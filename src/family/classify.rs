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
use regex_automata::{meta, nfa::thompson::WhichCaptures, util::syntax, Input, MatchKind, PatternSet};

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

/// Hard caps on a block, whatever a family file asks.
pub const BLOCK_MAX_LINES: usize = 16;
pub const BLOCK_MAX_CHARS: usize = 1200;

/// Which lines after a signal line belong to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    None,
    /// Lines that start with a space or a tab.
    Indent,
    /// Every line up to a blank one.
    Blank,
    /// Every line up to and including one with a location.
    Location,
    /// Indented lines, then the first unindented one (Python's exception).
    Traceback,
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

/// What a signal line is.
#[derive(Debug, Clone, Copy)]
pub struct LineClass {
    pub severity: Severity,
    /// Index of its block rule ([`Classifier::block_rule`]).
    pub block: usize,
    /// Matched by a family's own pattern (not only a generic one).
    pub specific: bool,
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
}

struct Pat {
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
}

struct FamilyRt {
    name: String,
    generic: bool,
    commands: Vec<Vec<String>>,
    hint_weight: u64,
    location: Option<String>,
    location_re: std::sync::OnceLock<Option<Regex>>,
    verdicts: Vec<VerdictRule>,
}

impl FamilyRt {
    fn location(&self) -> Option<&Regex> {
        self.location_re.get_or_init(|| self.location.as_deref().and_then(|p| compile_one(p).ok())).as_ref()
    }
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
    prefilter: std::sync::Arc<Regex>,
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
            sources.push(src.clone());
            pats.push(Pat { family, role, source: src, re: std::sync::OnceLock::new() });
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
                })
                .collect();
            families.push(FamilyRt {
                name: f.name.clone(),
                generic: f.generic,
                commands: f.commands.iter().map(|c| c.split_whitespace().map(str::to_string).collect()).collect(),
                hint_weight: f.hint_weight.unwrap_or(20),
                location: f.location.clone(),
                location_re: std::sync::OnceLock::new(),
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
        let prefilter = build(&combined).map_err(|e| e.to_string())?;
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
            .map(|f| FirstPass::new(&f.floating, f.starts));
        Ok(Classifier {
            prefilter: std::sync::Arc::new(prefilter),
            literal,
            set: std::sync::OnceLock::new(),
            set_sources,
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
        if self.set.get().is_none() {
            let _ = self.set.set(self.build_set()?);
        }
        Ok(())
    }

    /// The combined regex: a line that does not match it is nothing.
    pub fn prefilter(&self) -> &Regex {
        &self.prefilter
    }

    /// The combined regex, shared (cloning a `Regex` would start a new
    /// cache, rebuilding its lazy DFA).
    pub fn prefilter_shared(&self) -> std::sync::Arc<Regex> {
        std::sync::Arc::clone(&self.prefilter)
    }

    /// The first pass: every line the prefilter matches holds one of its
    /// literals or starts as one of its line-start literals; None when some
    /// pattern has no usable literal.
    pub fn literal_prefilter(&self) -> Option<&FirstPass> {
        self.literal.as_ref()
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
            scratch: Scratch {
                matched: PatternSet::new(self.pats.len()),
                ids: Vec::new(),
                success: Vec::new(),
                signals: Vec::new(),
            },
        }
    }

    /// What a line (that matched the prefilter) is: records its evidence
    /// and verdicts in `tally`, and returns its class when it is a signal.
    pub fn classify(&self, lineno: u64, line: &[u8], tally: &mut Tally) -> Option<LineClass> {
        // Colour codes would hide `error:` from patterns written for plain
        // text: lines with an escape reach here through the prefilter's
        // `\x1b[` branch and are classified without them.
        let plain = strip_ansi(line);
        let line = &plain[..];
        let set = self.set.get_or_init(|| self.build_set().expect("every pattern compiled in the prefilter"));
        let Scratch { matched, ids, success, signals } = &mut tally.scratch;
        matched.clear();
        set.which_overlapping_matches(&Input::new(line), matched);
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
            let evidence = matches!(p.role, Role::Detect | Role::Verdict(_));
            if let Some(f) = p.family.filter(|_| evidence) {
                if !self.families[f].generic && tally.seen_on[f] != lineno + 1 {
                    tally.seen_on[f] = lineno + 1;
                    tally.evidence[f] += 1;
                }
            }
            match p.role {
                Role::Signal(..) => signals.push(i),
                Role::Success => success.extend(p.re().find_iter(line).map(|m| (p.family, m.start(), m.end()))),
                Role::Verdict(k) => {
                    if let (Some(f), Some(caps)) = (p.family, p.re().captures(line)) {
                        tally.verdicts[f].add(&self.families[f].verdicts[k], &caps, lineno);
                    }
                }
                Role::Detect => {}
            }
        }
        let mut best: Option<(Severity, usize, bool)> = None;
        for &i in signals.iter() {
            let p = &self.pats[i];
            let Role::Signal(sev, block) = p.role else { continue };
            // A success span (`0 failed`) cancels the signal matches of its
            // own family that overlap it: one family's file (a user's
            // `success = [".*"]`) never silences another's errors.
            // (Without success spans the set's match is the answer.)
            let own = |&&(f, _, _): &&(Option<usize>, usize, usize)| f == p.family;
            let real = !success.iter().any(|s| own(&s))
                || p.re()
                    .find_iter(line)
                    .any(|m| !success.iter().filter(own).any(|&(_, s, e)| s < m.end() && m.start() < e));
            if !real {
                continue;
            }
            let specific = p.family.is_some_and(|f| !self.families[f].generic);
            let better = match best {
                None => true,
                Some((bs, _, bspec)) => sev > bs || (sev == bs && specific && !bspec),
            };
            if better {
                best = Some((sev, block, specific));
            }
        }
        best.map(|(severity, block, specific)| LineClass { severity, block, specific })
    }

    /// The location (`file:line[:col]`) in `texts` (the signal line, then
    /// its block lines), by the rule's family pattern, else the defaults.
    pub fn location<'a>(&self, rule: &BlockRule, texts: impl Iterator<Item = &'a [u8]> + Clone) -> Option<String> {
        let own = rule.family.and_then(|f| self.families[f].location());
        let defaults = self
            .default_locations
            .get_or_init(|| DEFAULT_LOCATIONS.iter().map(|p| build(p).expect("default location compiles")).collect());
        for re in own.into_iter().chain(defaults.iter()) {
            let mut found = None;
            for t in texts.clone() {
                let plain = strip_ansi(t);
                if let Some(c) = re.captures(&plain) {
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
        self.location(rule, std::iter::once(line)).is_some()
    }

    /// The family this run's output belongs to: forced, or the one with
    /// the most evidence (a matching command counts `hint_weight` lines).
    pub fn detect(&self, tally: &Tally, command: Option<&str>) -> Option<usize> {
        match self.mode {
            Mode::Off => None,
            Mode::Forced(f) => Some(f),
            Mode::Auto => {
                let words = command.map(command_words).unwrap_or_default();
                let mut best: Option<(u64, usize)> = None;
                for (i, f) in self.families.iter().enumerate() {
                    if f.generic {
                        continue;
                    }
                    let hinted = f.commands.iter().any(|c| !c.is_empty() && words.starts_with(c));
                    let score = tally.evidence[i] + if hinted { f.hint_weight } else { 0 };
                    if score > 0 && best.is_none_or(|(b, _)| score > b) {
                        best = Some((score, i));
                    }
                }
                best.map(|(_, i)| i)
            }
        }
    }

    pub fn family_name(&self, i: usize) -> &str {
        &self.families[i].name
    }

    /// The verdict of family `f`: from its verdict lines, or, when it
    /// printed none, from the error lines counted (`from_signals`).
    pub fn verdict(&self, tally: &Tally, f: usize, errors: u64) -> Option<Verdict> {
        let acc = &tally.verdicts[f];
        if acc.lines == 0 {
            return (errors > 0).then(|| Verdict {
                family: self.families[f].name.clone(),
                status: Status::Failed,
                counts: vec![("errors", errors)],
                lines: 0,
                from_signals: true,
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
        Some(Verdict { family: self.families[f].name.clone(), status, counts, lines: acc.lines, from_signals: false })
    }
}

/// `src` with its named groups made non-capturing: names repeat across
/// patterns, and the combined regex and the set only need to match.
fn uncapture(src: &str) -> String {
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
        Some("blank") => Until::Blank,
        Some("location") => Until::Location,
        Some("traceback") => Until::Traceback,
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
}

impl Tally {
    pub fn evidence(&self, f: usize) -> u64 {
        self.evidence[f]
    }

    /// Records an error line (a passing verdict followed by errors is not
    /// the run's last word: `Finished` then a panic).
    pub fn note_error(&mut self, lineno: u64) {
        self.last_error = lineno;
    }
}

#[derive(Debug, Clone, Default)]
struct VerdictAcc {
    lines: u64,
    status: Option<Status>,
    failed_any: bool,
    counts: [Option<u64>; FIELDS.len()],
    last_line: u64,
}

impl VerdictAcc {
    fn add(&mut self, rule: &VerdictRule, caps: &regex::bytes::Captures, lineno: u64) {
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
}
