//! The rule file format (TOML) and where rule files come from: the shipped
//! ones (`secrets/*.toml`, embedded at build time), then the user's
//! (`$XDG_CONFIG_HOME/outbox/secrets/*.toml`, else
//! `~/.config/outbox/secrets`), which may add rules and allow values. A
//! user file that does not parse, or whose pattern does not compile, is
//! reported once on stderr and ignored; the shipped rules always stay.
//!
//! ```toml
//! allow = ["AKIAIOSFODNN7EXAMPLE"]     # values never masked (exact)
//!
//! [[rule]]
//! name = "acme-token"                    # lowercase letters, digits, '-'
//! description = "ACME deploy token: acme_ and 32 hex digits"
//! keywords = ["acme_"]                  # the rule runs only on text holding one (any case)
//! pattern = '\b(?P<secret>(?P<keep>acme_)[0-9a-f]{32})\b'
//! entropy = 3.0                         # optional: the secret must look random
//! ```
//!
//! `secret` is the span masked (the whole match without it); `keep`, a
//! part at its start, is shown before the marker (an issuer's prefix says
//! what the value was without giving any of it away). A rule with no
//! keywords runs on every text printed: keep such patterns cheap.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// One rule file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleFile {
    /// Values that are never masked (documented examples, known test
    /// fixtures), compared exactly with the secret span.
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub rule: Vec<RuleSpec>,
}

/// One rule, as written in its file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub keywords: Vec<String>,
    pub pattern: String,
    #[serde(default)]
    pub entropy: Option<f64>,
}

/// The shipped rule files, in priority order: an issuer's rule names a
/// value before a generic one can.
pub const EMBEDDED: &[(&str, &str)] = &[
    ("cloud", include_str!("../../../secrets/cloud.toml")),
    ("forges", include_str!("../../../secrets/forges.toml")),
    ("services", include_str!("../../../secrets/services.toml")),
    ("generic", include_str!("../../../secrets/generic.toml")),
];

/// Parses one rule file and checks its names (the patterns are compiled
/// by the masker, which reports them).
pub fn parse(text: &str) -> Result<RuleFile, String> {
    let file: RuleFile = toml::from_str(text).map_err(|e| e.to_string())?;
    for r in &file.rule {
        let ok = r.name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && r.name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && r.name.len() <= 40;
        if !ok {
            return Err(format!(
                "rule name {:?}: use lowercase letters, digits and '-' (at most 40), e.g. \"acme-token\"",
                r.name
            ));
        }
        if r.entropy.is_some_and(|e| !(0.0..=8.0).contains(&e)) {
            return Err(format!("rule {}: entropy must be between 0 and 8 bits per character", r.name));
        }
        if r.keywords.iter().any(|k| k.is_empty()) {
            return Err(format!(
                "rule {}: an empty keyword would match everywhere; leave keywords out instead",
                r.name
            ));
        }
    }
    Ok(file)
}

/// The shipped rule files (a broken one is a bug the test suite catches,
/// so it panics).
pub fn embedded() -> Vec<RuleFile> {
    EMBEDDED.iter().map(|(n, t)| parse(t).unwrap_or_else(|e| panic!("secrets/{n}.toml: {e}"))).collect()
}

/// The user's rule directory, if any.
pub fn user_dir() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".config"),
    };
    Some(base.join("outbox").join("secrets"))
}

/// The user's rule files in `dir` (sorted by name); each problem is
/// returned as a message and that file is left out.
pub fn load_user(dir: Option<&Path>) -> (Vec<(PathBuf, RuleFile)>, Vec<String>) {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    let Some(dir) = dir else { return (files, problems) };
    let Ok(rd) = std::fs::read_dir(dir) else { return (files, problems) };
    let mut paths: Vec<PathBuf> =
        rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect();
    paths.sort();
    for p in paths {
        match std::fs::read_to_string(&p).map_err(|e| e.to_string()).and_then(|t| parse(&t)) {
            Ok(f) => files.push((p, f)),
            Err(e) => problems.push(format!("ignoring the secret rule file {}: {e}", p.display())),
        }
    }
    (files, problems)
}
