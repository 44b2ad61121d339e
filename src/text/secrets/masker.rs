//! The engine: a keyword prefilter (one Aho-Corasick automaton over every
//! rule's keywords, any case) names the rules worth running on a text;
//! each runs its regex (compiled on first use), checks entropy and the
//! allow list, and claims its spans in priority order (an issuer's rule
//! before a generic one; a span overlapping one already claimed is
//! dropped). Text that holds no keyword costs one automaton pass plus the
//! keyword-less rules.
//!
//! Input that imitates a mask marker (`…[masked `) is claimed too, so the
//! `[` is shown escaped: the markers in what outbox prints are then all
//! its own, and counting them counts what was masked.

use std::collections::HashSet;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, MatchKind};
use regex::bytes::{Regex, RegexBuilder};

use super::entropy::looks_random;
use super::rules::RuleFile;

/// The start of every mask marker; input holding it is escaped.
pub const MARKER_OPEN: &str = "…[masked ";
/// What a forged marker's `[` is shown as.
pub const FORGED_BRACKET: &str = "\\x5b";

/// A rule ready to run.
#[derive(Debug)]
pub struct Rule {
    pub name: String,
    pub description: String,
    pattern: String,
    entropy: Option<f64>,
    keyworded: bool,
    /// The shortest text the pattern can match (keyword-less rules skip
    /// shorter texts without running).
    min_len: usize,
    regex: OnceLock<Regex>,
}

impl Rule {
    fn regex(&self) -> &Regex {
        // Shipped patterns are compiled by the test suite and user ones
        // when loaded, so this cannot fail.
        self.regex.get_or_init(|| compile(&self.pattern).expect("a rule's pattern was checked when loaded"))
    }
}

fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern).size_limit(4 << 20).build()
}

/// What a span stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// A secret found by rule `usize` (an index into [`Masker::rules`]).
    Secret(usize),
    /// Input imitating a mask marker: its `[` (one byte) is escaped.
    Forged,
    /// A line known to be inside a private key block (masked whole).
    KeyLine,
}

/// A span of the text to replace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    /// Bytes at the start of the span that are shown (an issuer's prefix).
    pub keep: usize,
    pub claim: Claim,
}

/// The rules in force.
#[derive(Debug)]
pub struct Masker {
    rules: Vec<Rule>,
    prefilter: Option<AhoCorasick>,
    /// Keyword pattern index → rule index.
    keyword_rule: Vec<usize>,
    allow: HashSet<Vec<u8>>,
}

impl Masker {
    /// The rules of `files`, in order. `check` compiles each pattern now
    /// (user files); a rule that does not compile is left out and named in
    /// the problems returned.
    pub fn new(files: &[(String, RuleFile, bool)]) -> (Masker, Vec<String>) {
        let mut rules: Vec<Rule> = Vec::new();
        let mut problems = Vec::new();
        let mut keywords: Vec<String> = Vec::new();
        let mut keyword_rule = Vec::new();
        let mut allow = HashSet::new();
        for (origin, file, check) in files {
            allow.extend(file.allow.iter().map(|a| a.as_bytes().to_vec()));
            for spec in &file.rule {
                if rules.iter().any(|r| r.name == spec.name) {
                    problems.push(format!(
                        "{origin}: rule {} is already defined; a rule cannot be replaced (add its false \
                         positives to `allow` instead)",
                        spec.name
                    ));
                    continue;
                }
                let regex = OnceLock::new();
                if *check {
                    match compile(&spec.pattern) {
                        Ok(re) => {
                            let _ = regex.set(re);
                        }
                        Err(e) => {
                            problems.push(format!("{origin}: rule {}: the pattern does not compile: {e}", spec.name));
                            continue;
                        }
                    }
                }
                for k in &spec.keywords {
                    keywords.push(k.clone());
                    keyword_rule.push(rules.len());
                }
                // Only keyword-less rules need it (parsing every pattern
                // at start-up would cost more than it saves).
                let min_len = match spec.keywords.is_empty() {
                    true => {
                        regex_syntax::parse(&spec.pattern).ok().and_then(|h| h.properties().minimum_len()).unwrap_or(0)
                    }
                    false => 0,
                };
                rules.push(Rule {
                    min_len,
                    name: spec.name.clone(),
                    description: spec.description.clone(),
                    pattern: spec.pattern.clone(),
                    entropy: spec.entropy,
                    keyworded: !spec.keywords.is_empty(),
                    regex,
                });
            }
        }
        let prefilter = (!keywords.is_empty()).then(|| {
            AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .match_kind(MatchKind::Standard)
                .build(&keywords)
                .expect("keywords are plain strings")
        });
        (Masker { rules, prefilter, keyword_rule, allow }, problems)
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Compiles every pattern (the test suite checks the shipped ones).
    pub fn check_all(&self) -> Result<(), String> {
        for r in &self.rules {
            compile(&r.pattern).map_err(|e| format!("rule {}: {e}", r.name))?;
        }
        Ok(())
    }

    /// The spans of `hay` to replace, in order, never overlapping.
    pub fn spans(&self, hay: &[u8]) -> Vec<Span> {
        let mut spans: Vec<Span> = Vec::new();
        let mut hit = vec![false; self.rules.len()];
        let mut any = false;
        for (i, r) in self.rules.iter().enumerate() {
            if !r.keyworded && hay.len() >= r.min_len {
                hit[i] = true;
                any = true;
            }
        }
        if let Some(ac) = &self.prefilter {
            for m in ac.find_overlapping_iter(hay) {
                hit[self.keyword_rule[m.pattern().as_usize()]] = true;
                any = true;
            }
        }
        if any {
            for (i, rule) in self.rules.iter().enumerate().filter(|(i, _)| hit[*i]) {
                self.run(i, rule, hay, &mut spans);
            }
        }
        for at in memchr::memmem::find_iter(hay, MARKER_OPEN.as_bytes()) {
            let bracket = at + "…".len();
            let span = Span { start: bracket, end: bracket + 1, keep: 0, claim: Claim::Forged };
            if !overlaps(&spans, &span) {
                spans.push(span);
            }
        }
        spans.sort_unstable_by_key(|s| s.start);
        spans
    }

    fn run(&self, i: usize, rule: &Rule, hay: &[u8], spans: &mut Vec<Span>) {
        let re = rule.regex();
        let secret_group = re.capture_names().position(|n| n == Some("secret"));
        let keep_group = re.capture_names().position(|n| n == Some("keep"));
        for caps in re.captures_iter(hay) {
            let Some(m) = secret_group.and_then(|g| caps.get(g)).or_else(|| caps.get(0)) else { continue };
            if m.is_empty() {
                continue;
            }
            let value = &hay[m.range()];
            if rule.entropy.is_some_and(|e| !looks_random(value, e)) || self.allow.contains(value) {
                continue;
            }
            let keep = keep_group
                .and_then(|g| caps.get(g))
                .filter(|k| k.start() == m.start() && k.end() <= m.end())
                .map_or(0, |k| k.len());
            let span = Span { start: m.start(), end: m.end(), keep, claim: Claim::Secret(i) };
            if !overlaps(spans, &span) {
                spans.push(span);
            }
        }
    }

    /// What `span` of `hay` is shown as: the kept prefix and the marker
    /// (`ghp_…[masked github-token, 40 chars]`), or a forged marker's
    /// escaped bracket.
    pub fn replacement(&self, hay: &[u8], span: &Span) -> String {
        match span.claim {
            Claim::Forged => FORGED_BRACKET.to_string(),
            Claim::KeyLine => marker("", super::KEY_LINE, crate::text::utf8::count_chars(&hay[span.start..span.end])),
            Claim::Secret(i) => {
                let keep = String::from_utf8_lossy(&hay[span.start..span.start + span.keep]);
                let chars = crate::text::utf8::count_chars(&hay[span.start..span.end]);
                marker(&keep, &self.rules[i].name, chars)
            }
        }
    }

    /// `hay` with its spans replaced; None when nothing is.
    pub fn mask_bytes(&self, hay: &[u8]) -> Option<Vec<u8>> {
        let spans = self.spans(hay);
        if spans.is_empty() {
            return None;
        }
        let mut out = Vec::with_capacity(hay.len());
        let mut at = 0;
        for s in &spans {
            out.extend_from_slice(&hay[at..s.start]);
            out.extend_from_slice(self.replacement(hay, s).as_bytes());
            at = s.end;
        }
        out.extend_from_slice(&hay[at..]);
        Some(out)
    }
}

fn overlaps(spans: &[Span], s: &Span) -> bool {
    spans.iter().any(|o| o.start < s.end && s.start < o.end)
}

/// The marker a secret is shown as.
pub fn marker(keep: &str, name: &str, chars: u64) -> String {
    format!("{keep}{MARKER_OPEN}{name}, {chars} chars]")
}
