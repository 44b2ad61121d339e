//! Credentials masked in what outbox prints. Rules are data
//! (`secrets/*.toml`, see [`rules`]); the engine ([`masker`]) finds their
//! spans; what is printed shows each as a kept prefix and a marker that
//! says what was there: `ghp_…[masked github-token, 40 chars]`.
//!
//! Where it applies: [`crate::text::sanitize::display`] masks every line
//! the envelope, passthrough and `show --grep` print; the JSON folds mask
//! each string they write; `show` masks the stored bytes it copies unless
//! `--raw`. Only what is printed is scanned, so the cost is bounded by the
//! budget, not by the input. The stored copy keeps the exact bytes.
//!
//! Invariants: every masked span becomes one marker, and input that
//! imitates a marker is escaped, so [`count_markers`] over printed text
//! counts exactly what was masked; masking that fails for any reason
//! (a panic in a rule) withholds the whole text as a marker instead of
//! printing it raw ([`withheld`]).

pub mod entropy;
pub mod masker;
pub mod rules;
#[doc(hidden)]
pub mod samples;

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

pub use masker::{marker, Claim, Masker, Span, MARKER_OPEN};

/// The header key that states what was masked.
pub const HEADER_KEY: &str = "secrets_masked";
/// The rule name a withheld text is counted under.
pub const WITHHELD: &str = "withheld";
/// The rule name of a line inside a private key block, masked whole.
pub const KEY_LINE: &str = "private-key";

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns masking off for this process (`--mask off`, config `mask =
/// false`); set once, before anything is printed.
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether masking is on (the default).
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// The shipped rules and the user's, loaded once; problems with user files
/// are reported on stderr once.
pub fn global() -> &'static Masker {
    static M: OnceLock<Masker> = OnceLock::new();
    M.get_or_init(|| {
        let (user, mut problems) = rules::load_user(rules::user_dir().as_deref());
        let (m, more) = build(user);
        problems.extend(more);
        for p in problems {
            crate::text::stderr::say(format_args!("{p}"));
        }
        m
    })
}

/// The shipped rules followed by `user` files (their patterns checked).
pub fn build(user: Vec<(std::path::PathBuf, rules::RuleFile)>) -> (Masker, Vec<String>) {
    let mut files: Vec<(String, rules::RuleFile, bool)> = rules::EMBEDDED
        .iter()
        .zip(rules::embedded())
        .map(|((n, _), f)| (format!("secrets/{n}.toml"), f, false))
        .collect();
    // User rules run before the generic shipped ones: a specific rule
    // should name a value before `secret-assignment` claims it.
    let generic = files.pop();
    files.extend(user.into_iter().map(|(p, f)| (p.display().to_string(), f, true)));
    files.extend(generic);
    Masker::new(&files)
}

thread_local! {
    /// Lines this thread's printer knows to be inside a private key block
    /// (see [`known_key_lines`]).
    static KNOWN: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Restores the previous known lines when dropped.
pub struct KnownGuard(Vec<Vec<u8>>);

impl Drop for KnownGuard {
    fn drop(&mut self) {
        let prev = std::mem::take(&mut self.0);
        KNOWN.with(|k| *k.borrow_mut() = prev);
    }
}

/// While the guard lives, `lines` (key block lines a printer saw in
/// sequence: the envelope's head, its tail, a signal's block) are masked
/// wherever this thread prints them, whole, as `private-key`. A line is
/// shown by itself (fitted, shortened, folded), away from the BEGIN line
/// that made it key material: this is how its display knows.
pub fn known_key_lines(lines: Vec<Vec<u8>>) -> KnownGuard {
    // Only what is itself key-like is matched anywhere: base64 of some
    // length that looks random (a header line, a short or plain line
    // would mask unrelated text).
    let keyish = |t: &[u8]| {
        t.len() >= 16
            && t.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
            && entropy::looks_random(t, 3.0)
    };
    let lines: Vec<Vec<u8>> = lines.into_iter().map(|l| l.trim_ascii().to_vec()).filter(|l| keyish(l)).collect();
    KnownGuard(KNOWN.with(|k| std::mem::replace(&mut *k.borrow_mut(), lines)))
}

/// The spans to replace in `hay` with the global rules (and the known key
/// lines), or Err when the masker failed (the caller withholds the text).
/// Empty when masking is off.
pub fn spans(hay: &[u8]) -> Result<Vec<Span>, MaskFailed> {
    if !enabled() {
        return Ok(Vec::new());
    }
    std::panic::catch_unwind(|| {
        let mut known: Vec<Span> = KNOWN.with(|k| {
            let k = k.borrow();
            let mut v = Vec::new();
            for line in k.iter() {
                for at in memchr::memmem::find_iter(hay, line) {
                    let s = Span { start: at, end: at + line.len(), keep: 0, claim: Claim::KeyLine };
                    if !v.iter().any(|o: &Span| o.start < s.end && s.start < o.end) {
                        v.push(s);
                    }
                }
            }
            v
        });
        if known.is_empty() {
            return global().spans(hay);
        }
        for s in global().spans(hay) {
            if !known.iter().any(|o| o.start < s.end && s.start < o.end) {
                known.push(s);
            }
        }
        known.sort_unstable_by_key(|s| s.start);
        known
    })
    .map_err(|_| MaskFailed)
}

/// Masking panicked: the text must be withheld, never printed raw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaskFailed;

/// The lines of `lines` (in order, possibly starting inside a block, as a
/// tail does) that are inside a private key block: those [`KeyBlocks`]
/// finds, and the key-like lines before the first fence when that fence
/// is an END line.
pub fn key_lines_in<'a>(lines: impl IntoIterator<Item = &'a [u8]>) -> Vec<&'a [u8]> {
    let mut kb = KeyBlocks::default();
    let mut inside = Vec::new();
    let mut before: Vec<&[u8]> = Vec::new();
    let mut fenced = false;
    for line in lines {
        let was_open = kb.is_open();
        let body = kb.line(line);
        if body {
            inside.push(line);
        }
        if !fenced {
            if !was_open && kb.is_open() {
                fenced = true; // a BEGIN line
            } else if is_fence(line, b"-----END ") {
                fenced = true;
                inside.append(&mut before);
            } else if looks_like_key_body(line) {
                before.push(line);
            } else {
                before.clear();
            }
        }
    }
    inside
}

/// What is printed in place of `text` when masking it failed: nothing of
/// it, only how long it was.
pub fn withheld(chars: u64) -> String {
    marker("", WITHHELD, chars)
}

/// `s` with the global rules applied (a string that goes out whole: a
/// JSON string, a command line).
pub fn mask_str(s: &str) -> Cow<'_, str> {
    match spans(s.as_bytes()) {
        Ok(sp) if sp.is_empty() => Cow::Borrowed(s),
        Ok(sp) => Cow::Owned(apply(s, &sp)),
        Err(MaskFailed) => Cow::Owned(withheld(s.chars().count() as u64)),
    }
}

/// A string value as a JSON sample shows it: masked alone, and, when it
/// is the value of object key `key`, masked as the assignment `key=value`
/// would be (so `"password": "Xk9…"` is masked as `password=Xk9…` is).
pub fn mask_value<'a>(key: Option<&str>, s: &'a str) -> Cow<'a, str> {
    let Some(key) = key.filter(|k| !k.is_empty() && k.len() <= 200) else { return mask_str(s) };
    if !enabled() {
        return Cow::Borrowed(s);
    }
    let joined = format!("{key}={s}");
    let at = key.len() + 1;
    match spans(joined.as_bytes()) {
        Ok(sp) => {
            // Spans inside the value, moved back to it; one that reaches
            // into the key masks the whole value.
            let mut own = Vec::with_capacity(sp.len());
            for x in sp {
                if x.end <= at {
                    continue;
                }
                if x.start < at {
                    return Cow::Owned(marker("", WITHHELD, s.chars().count() as u64));
                }
                own.push(Span { start: x.start - at, end: x.end - at, ..x });
            }
            if own.is_empty() {
                Cow::Borrowed(s)
            } else {
                Cow::Owned(apply(s, &own))
            }
        }
        Err(MaskFailed) => Cow::Owned(withheld(s.chars().count() as u64)),
    }
}

/// `s` with `spans` (found in `s`) replaced.
pub fn apply(s: &str, spans: &[Span]) -> String {
    let m = global();
    let mut out = String::with_capacity(s.len());
    let mut at = 0;
    for sp in spans {
        out.push_str(&s[at..sp.start]);
        out.push_str(&m.replacement(s.as_bytes(), sp));
        at = sp.end;
    }
    out.push_str(&s[at..]);
    out
}

/// Bytes (a stored copy, as `show` prints it) with the global rules
/// applied; a failure withholds them.
pub fn mask_bytes(b: &[u8]) -> Cow<'_, [u8]> {
    if !enabled() {
        return Cow::Borrowed(b);
    }
    match std::panic::catch_unwind(|| global().mask_bytes(b)) {
        Ok(None) => Cow::Borrowed(b),
        Ok(Some(v)) => Cow::Owned(v),
        Err(_) => Cow::Owned(withheld(crate::text::utf8::count_chars(b)).into_bytes()),
    }
}

/// Secrets masked, by rule name.
pub type Counts = BTreeMap<String, u64>;

/// The markers in `text`, by rule name: what was masked in it (input that
/// imitated a marker was escaped, so every marker counted is outbox's).
pub fn count_markers(text: &str, into: &mut Counts) {
    let mut rest = text;
    while let Some(i) = rest.find(MARKER_OPEN) {
        rest = &rest[i + MARKER_OPEN.len()..];
        let name_len = rest.find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
        let Some(n) = name_len.filter(|&n| n > 0) else { continue };
        let (name, after) = rest.split_at(n);
        let Some(after) = after.strip_prefix(", ") else { continue };
        let digits = after.find(|c: char| !c.is_ascii_digit()).unwrap_or(after.len());
        if digits > 0 && after[digits..].starts_with(" chars]") {
            *into.entry(name.to_string()).or_insert(0) += 1;
        }
    }
}

/// Total of `counts`.
pub fn total(counts: &Counts) -> u64 {
    counts.values().sum()
}

/// What the summary line says: `3 secrets masked`.
pub fn phrase(counts: &Counts) -> Option<String> {
    match total(counts) {
        0 => None,
        1 => Some("1 secret masked".to_string()),
        n => Some(format!("{n} secrets masked")),
    }
}

/// Lines inside private key blocks, followed in order: a line after a
/// `-----BEGIN … PRIVATE KEY-----` line and before its END line is key
/// material (its headers, its base64, its short last line), masked whole
/// by the printers that see lines in sequence (passthrough, `show`). A
/// line that cannot belong to a key (words with spaces) ends the block, so
/// a BEGIN line quoted in prose masks nothing after it.
#[derive(Debug, Default, Clone)]
pub struct KeyBlocks {
    open: bool,
}

/// A BEGIN or END line of a private key block.
fn is_fence(line: &[u8], word: &[u8]) -> bool {
    let t = line.trim_ascii();
    t.starts_with(word) && t.ends_with(b"-----") && memchr::memmem::find(t, b"PRIVATE KEY").is_some()
}

/// base64 (a body line, a padded last line) or a `Name: value` header
/// (`Proc-Type: 4,ENCRYPTED`), or blank.
fn looks_like_key_body(line: &[u8]) -> bool {
    let t = line.trim_ascii();
    let base64 = t.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
    let header = t.len() < 200
        && t.iter()
            .position(|&b| b == b':')
            .is_some_and(|i| i > 0 && t[..i].iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-'));
    base64 || header
}

impl KeyBlocks {
    /// Whether `line` (without its terminator) is inside a block's body.
    pub fn line(&mut self, line: &[u8]) -> bool {
        if !self.open {
            self.open = is_fence(line, b"-----BEGIN ");
            return false;
        }
        if is_fence(line, b"-----END ") {
            self.open = false;
            return false;
        }
        if looks_like_key_body(line) {
            return true;
        }
        self.open = false;
        false
    }

    /// Whether the next line would be inside a block.
    pub fn is_open(&self) -> bool {
        self.open
    }
}

/// A whole line of key material as printed.
pub fn key_line_marker(chars: u64) -> String {
    marker("", KEY_LINE, chars)
}

#[cfg(test)]
mod tests;
