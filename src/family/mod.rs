//! Tool families: what a tool's output means, kept as data.
//!
//! A family (one `families/NAME.toml` file, embedded in the binary at build
//! time; users add or override them in `$XDG_CONFIG_HOME/outbox/families`)
//! says how to recognise its tool's output, which lines are errors and
//! warnings, which lines look like failures but mean success (`0 failed`),
//! which lines after a signal belong to it (its *block*), where the location
//! (`file:line[:col]`) is, and which lines are verdicts (`2 failed, 3
//! passed`). Families marked `generic` (server-log levels, stack traces,
//! crashes) apply whatever the detected family.
//!
//! The engine ([`classify`]) folds every pattern into one combined regex,
//! searched over whole blocks as the scanner always did; only the rare lines
//! that match go through a `RegexSet` to learn what they are. The scanner's
//! per-run state ([`classify::Tally`]) is bounded: fixed counters per family.
//!
//! Patterns are compiled with ASCII-only classes and word boundaries
//! (`(?-u:…)`): the lazy DFA then never has to give up on non-ASCII text,
//! and a pattern may still name non-ASCII literals (`エラー`).

pub mod anchors;
pub mod cache;
pub mod classify;
pub mod inner;
pub mod literals;
pub mod spec;
pub mod teddy;

pub use classify::{Classifier, LineClass, Severity, Tally};
pub use spec::{load_all, FamilySpec};

/// Which families a run uses (`--family`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum FamilyChoice {
    /// Detect over the whole stream (and from the command in wrap mode);
    /// every family's signal patterns apply.
    #[default]
    Auto,
    /// `--family none`: generic patterns only; no detection, no verdict.
    None,
    /// `--family NAME`: this family's patterns and verdicts, plus generic.
    Named(String),
}

impl FamilyChoice {
    /// Parses `--family`'s value (`auto`, `none` or a family name).
    pub fn parse(s: &str) -> FamilyChoice {
        match s.trim() {
            "" | "auto" => FamilyChoice::Auto,
            "none" | "off" => FamilyChoice::None,
            name => FamilyChoice::Named(name.to_string()),
        }
    }
}

/// Family and signal options of one run, resolved from the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FamilyOptions {
    pub choice: FamilyChoice,
    /// `--signal-add REGEX` (repeatable): extra patterns of severity error.
    pub add: Vec<String>,
    /// `--signal REGEX` was given: it replaces every default signal pattern
    /// (families still detect and give verdicts).
    pub replace: Option<String>,
    /// `--no-signal`: no line is a signal.
    pub off: bool,
    /// Family knowledge disabled altogether (the old single-regex
    /// behaviour); used by tests of the scanner alone.
    pub legacy: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_family_parses_and_compiles_together() {
        let all = spec::embedded();
        assert!(all.len() >= 20);
        for f in &all {
            for p in f.patterns() {
                classify::compile_one(p).unwrap_or_else(|e| panic!("{}: {p:?}: {e}", f.name));
            }
        }
        let c = Classifier::new(&all, &FamilyOptions::default()).unwrap();
        assert!(c.prefilter().is_match(b"error: x"));
    }

    /// An entry is made for a mask's second line and answers from its
    /// third: a mask seen once (a commit's hash, a path) costs one
    /// classification, not one and an entry.
    #[test]
    fn the_cache_answers_a_mask_from_its_third_line() {
        let c = Classifier::new(&spec::embedded(), &FamilyOptions::default()).unwrap();
        let mut tally = c.tally();
        let line = |n: u32| format!("2026-12-07 10:00:{n:02} ERROR worker {n} lost its lease");
        let mut classes = Vec::new();
        for n in 1..=4u32 {
            classes.push(c.classify(u64::from(n), line(n).as_bytes(), &mut tally));
            let want = if n < 3 { (0, u64::from(n)) } else { (u64::from(n) - 2, 2) };
            assert_eq!(tally.cache_counts(), want, "after line {n}");
        }
        assert!(classes.iter().all(|k| k.is_some_and(|k| k.severity == Severity::Error)), "{classes:?}");
        assert!(classes.windows(2).all(|w| w[0] == w[1]));
        // Another mask in between keeps its own count.
        c.classify(5, b"2026-12-07 10:00:05 ERROR disk sda full", &mut tally);
        assert_eq!(tally.cache_counts(), (2, 3));
    }

    /// Every shipped pattern has literals of at least three bytes, so the
    /// scanner's first pass is a literal search (see `literals`).
    #[test]
    fn every_shipped_pattern_has_required_literals() {
        let mut none = Vec::new();
        for f in spec::embedded() {
            // Success patterns need none: they only cancel a signal on a
            // line that a signal pattern's literal found.
            let scanned = f.detect.iter().chain(&f.run_start).chain(f.signal.iter().map(|s| &s.pattern));
            for p in scanned.chain(f.verdict.iter().map(|v| &v.pattern)) {
                // As the engine does: named groups (`kind`) made plain.
                let src = format!("(?mR)(?-u:{})", classify::uncapture(&p.replace("{A}", "")));
                if literals::prefilter(&[src]).is_none() {
                    none.push(format!("{}: {p}", f.name));
                }
            }
        }
        assert!(none.is_empty(), "patterns without literals:\n{}", none.join("\n"));
        let c = Classifier::new(&spec::embedded(), &FamilyOptions::default()).unwrap();
        assert!(c.literal_prefilter().is_some());
    }
}
