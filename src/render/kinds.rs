//! Kinds as the reader sees them, in one place for the signal section, the
//! summary line and the header: a kind's label (its code, `TS2322`, or its
//! template in quotes, `"ERROR <*> connection refused"`), its count (exact;
//! `≈87` when Space-Saving estimated it closely; `≥3` when only a lower
//! bound is known), and the kinds ranked for naming (errors first, then
//! the most frequent).

use crate::family::Severity;
use crate::stream::signal::{Group, SignalKeeper};
use crate::text::sanitize::display;

/// Characters of a code in a label.
const CODE_CHARS: usize = 40;
/// Characters of a template in a label (the quotes aside).
const TEMPLATE_CHARS: usize = 48;

/// The kind's label, made safe to print: its code, or its template in
/// double quotes, shortened at the end to `max` characters.
pub fn label(g: &Group, max: usize) -> String {
    label_of(&g.name(), g.code.is_some(), max)
}

/// A kind's label from its raw name: a code as it is, a template in
/// quotes, shortened at the end to `max` characters (the quotes aside).
pub fn label_of(name: &[u8], code: bool, max: usize) -> String {
    let text = display(name).text;
    if code {
        cut_end(&text, max.min(CODE_CHARS))
    } else {
        format!("\"{}\"", cut_end(&text, max.min(TEMPLATE_CHARS)))
    }
}

/// The kind's name as the header gives it (no quotes).
pub fn name(g: &Group) -> String {
    cut_end(&display(&g.name()).text, TEMPLATE_CHARS)
}

/// The count as printed: exact, `≈N` when the estimate's bound is within
/// a quarter of it, else `≥N`, the hits certainly counted.
pub fn count(g: &Group) -> String {
    if g.exact() {
        g.count.to_string()
    } else if g.error * 4 <= g.count {
        format!("≈{}", g.count)
    } else {
        format!("≥{}", g.least())
    }
}

/// The kinds of the table, errors first, then by count (largest first),
/// then by first line.
pub fn ranked(signals: &SignalKeeper) -> Vec<&Group> {
    let mut v: Vec<&Group> = signals.groups().iter().collect();
    v.sort_by_key(|g| (std::cmp::Reverse(g.severity), std::cmp::Reverse(g.count), g.first.line.lineno));
    v
}

/// `531 errors of 24 kinds: TS6133 ×212, TS2322 ×87, TS2307 ×40, …`: the
/// hits of one severity and its most frequent kinds that have a code, at
/// most `top` of them (a template is too long to name in one line: the
/// signal section and the header name those); None without hits of that
/// severity.
pub fn summary(signals: &SignalKeeper, severity: Severity, top: usize) -> Option<String> {
    let hits = signals.count(severity);
    if hits == 0 {
        return None;
    }
    let noun = match (severity, hits) {
        (Severity::Error, 1) => "error",
        (Severity::Error, _) => "errors",
        (Severity::Warning, 1) => "warning",
        (Severity::Warning, _) => "warnings",
    };
    let (total, estimated) = signals.kinds_total(severity);
    let about = if estimated { "≈" } else { "" };
    let kinds = if total == 1 { "kind" } else { "kinds" };
    let of: Vec<&Group> = ranked(signals).into_iter().filter(|g| g.severity == severity && g.code.is_some()).collect();
    let mut s = format!("{hits} {noun} of {about}{total} {kinds}");
    for (i, g) in of.iter().take(top).enumerate() {
        s.push_str(if i == 0 { ": " } else { ", " });
        s.push_str(&format!("{} ×{}", label(g, CODE_CHARS), count(g)));
    }
    if !of.is_empty() && (of.len().min(top) as u64) < total {
        s.push_str(", …");
    }
    Some(s)
}

/// The header's `kinds`: at most `max` of them, ranked, each with its
/// severity, count (and whether it is estimated) and first line counted.
pub fn header(signals: &SignalKeeper, max: usize) -> serde_json::Value {
    let v: Vec<serde_json::Value> = ranked(signals)
        .into_iter()
        .take(max)
        .map(|g| {
            let mut o = serde_json::Map::new();
            o.insert("kind".into(), name(g).into());
            o.insert("severity".into(), g.severity.as_str().into());
            o.insert("count".into(), g.count.into());
            if !g.exact() {
                o.insert("count_estimated".into(), true.into());
            }
            o.insert("first_line".into(), g.first.line.lineno.into());
            o.into()
        })
        .collect();
    v.into()
}

/// `--- 3 kinds not shown: TS2430 ×1, TS7016 ×1, "…" ×2 ---`: the kinds no
/// line of which is visible, named as far as `max` characters allow (the
/// rest counted); empty when even the count does not fit.
pub fn not_shown(missing: &[&Group], max: usize) -> String {
    let n = missing.len();
    let plain = format!("--- {n} {} not shown ---\n", if n == 1 { "kind" } else { "kinds" });
    let mut len = plain.chars().count();
    if len > max {
        return String::new();
    }
    let mut items = String::new();
    for (i, g) in missing.iter().enumerate() {
        let item = format!("{}{} ×{}", if i == 0 { ": " } else { ", " }, label(g, TEMPLATE_CHARS), count(g));
        let left = n - i - 1;
        // Room for the item and, when more follow, for `, and N more`.
        let more = if left > 0 { format!(", and {left} more").chars().count() } else { 0 };
        let item_len = item.chars().count();
        if len + item_len + more > max {
            items.push_str(&format!(", and {} more", n - i));
            if i == 0 {
                items = String::new();
            }
            break;
        }
        len += item_len;
        items.push_str(&item);
    }
    format!("--- {n} {} not shown{items} ---\n", if n == 1 { "kind" } else { "kinds" })
}

/// `s` cut at the end to `max` characters, `…` marking the cut.
fn cut_end(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
    t.push('…');
    t
}
