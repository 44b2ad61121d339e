//! What the header says about masked credentials: `"secrets_masked":
//! {"github-token": 2}` and `N secrets masked` in the summary line, or
//! `"secrets_masked": "off"`.
//!
//! The header is sized before the lines are chosen and written after, so
//! it is first stated with a bound: the masks in every piece the envelope
//! could print (the head arena's lines, the tail ring's, the kept signal
//! lines and their blocks, the gap's examples, the notes, the command).
//! What is printed is a part of those pieces, masked the same way, so the
//! final statement, counted from the printed text, is never longer.

use crate::render::envelope::{display_candidates, display_line, for_each_candidate, whole_words};
use crate::render::facts::RunFacts;
use crate::stream::line::LineBody;
use crate::stream::scan::Scanned;
use crate::text::sanitize::{display, plain_into};
use crate::text::secrets::{self, count_markers, Counts};

/// The header key.
const KEY: &str = secrets::HEADER_KEY;

/// The masks every printable piece holds, summed.
pub(super) fn bound(sc: &Scanned, info: &RunFacts) -> Counts {
    let mut c = Counts::new();
    if !secrets::enabled() || nothing_to_mask(sc, info) {
        return c;
    }
    let mut add = |text: &str| count_markers(text, &mut c);
    display_candidates(sc, &mut add);
    for k in sc.signals.kept_by_priority().into_iter().chain(sc.signals.recent()) {
        display_line(k.line.body(), &mut add);
        for (_, l) in k.block_lines() {
            display_line(LineBody::Whole(l), &mut add);
        }
    }
    for e in sc.gap.entries() {
        add(&display(&e.example).text);
        add(&display(whole_words(&e.example)).text);
    }
    for n in &info.notes {
        add(&display(n.as_bytes()).text);
    }
    if let Some(e) = &info.spill_error {
        add(&display(e.as_bytes()).text);
    }
    if let Some(cmd) = info.command_text() {
        add(&cmd);
    }
    c
}

/// One search over every candidate joined (see
/// `text::sanitize::plain_into`): usually nothing, and then no line needs
/// displaying here. Lines a terminal would redraw (`\r`, erase codes) are
/// added as displayed too: their settled text is not in the raw bytes.
fn nothing_to_mask(sc: &Scanned, info: &RunFacts) -> bool {
    // The scanned lines are asked about by the budget rules and the
    // renderer in turn: searched once per scan and size (a scan that goes
    // on, as a detached run's does, is searched again).
    /// (serial, bytes, lines) of the scan, and the answer.
    type Last = Option<((u64, u64, u64), bool)>;
    thread_local! {
        static LAST: std::cell::Cell<Last> = const { std::cell::Cell::new(None) };
    }
    let key = (sc.serial, sc.bytes, sc.lines);
    let lines_clean = match LAST.with(|l| l.get()).filter(|(k, _)| *k == key) {
        Some((_, clean)) => clean,
        None => {
            let c = clean(|add| {
                for_each_candidate(sc, &mut |b| add(b));
                for k in sc.signals.kept_by_priority().into_iter().chain(sc.signals.recent()) {
                    add(k.line.body());
                    for (_, l) in k.block_lines() {
                        add(LineBody::Whole(l));
                    }
                }
                for e in sc.gap.entries() {
                    add(LineBody::Whole(&e.example));
                }
            });
            LAST.with(|l| l.set(Some((key, c))));
            c
        }
    };
    let command_masked = info.command_text().is_some_and(|c| c.contains(secrets::MARKER_OPEN));
    lines_clean
        && !command_masked
        && clean(|add| {
            for n in info.notes.iter().chain(info.spill_error.as_ref()) {
                add(LineBody::Whole(n.as_bytes()));
            }
        })
}

/// Whether the masker finds nothing in the lines `each` hands over.
fn clean(each: impl FnOnce(&mut dyn FnMut(LineBody<'_>))) -> bool {
    let mut all = String::new();
    let mut add_raw = |raw: &[u8]| {
        plain_into(raw, &mut all);
        all.push('\n');
        if raw.len() >= crate::stream::gap::SHAPE_BYTES {
            plain_into(whole_words(raw), &mut all);
            all.push('\n');
        }
        if memchr::memchr2(b'\r', 0x1b, raw).is_some() {
            display_line(LineBody::Whole(raw), &mut |t: &str| {
                all.push_str(t);
                all.push('\n');
            });
        }
    };
    each(&mut |b| match b {
        LineBody::Whole(l) => add_raw(l),
        LineBody::Cut { prefix, suffix, .. } => {
            add_raw(prefix);
            add_raw(suffix);
        }
    });
    secrets::spans(all.as_bytes()).is_ok_and(|s| s.is_empty())
}

/// `info` stating `counts`: the header field (left out when nothing is
/// masked; `"off"` when masking is off) and the summary's phrase.
pub(super) fn stated(info: &RunFacts, counts: &Counts) -> RunFacts {
    let mut out = info.clone();
    if !secrets::enabled() {
        out.extra.insert(KEY.into(), "off".into());
        return out;
    }
    if counts.is_empty() {
        return out;
    }
    let map: serde_json::Map<String, serde_json::Value> =
        counts.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(*v))).collect();
    out.extra.insert(KEY.into(), map.into());
    if let (Some(phrase), Some(summary)) =
        (secrets::phrase(counts), out.notes.first_mut().filter(|n| n.starts_with("summary: ")))
    {
        summary.push_str("; ");
        summary.push_str(&phrase);
    }
    out
}

/// `info`, stated with the bound, restated with what `printed` (the notes
/// and lines as printed, and the command) actually holds. The summary's
/// phrase is replaced only where it still ends the summary (a compacted
/// note may have lost it).
pub(super) fn settled(info: &RunFacts, bound: &Counts, printed: &[&str]) -> RunFacts {
    if !secrets::enabled() || bound.is_empty() {
        return info.clone();
    }
    let mut actual = Counts::new();
    for p in printed {
        count_markers(p, &mut actual);
    }
    if let Some(cmd) = info.command_text() {
        count_markers(&cmd, &mut actual);
    }
    if &actual == bound {
        return info.clone();
    }
    let mut out = info.clone();
    if actual.is_empty() {
        out.extra.remove(KEY);
    } else {
        let map: serde_json::Map<String, serde_json::Value> =
            actual.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(*v))).collect();
        out.extra.insert(KEY.into(), map.into());
    }
    if let (Some(old), Some(summary)) =
        (secrets::phrase(bound), out.notes.first_mut().filter(|n| n.starts_with("summary: ")))
    {
        if let Some(rest) = summary.strip_suffix(&old) {
            *summary = match secrets::phrase(&actual) {
                Some(new) => format!("{rest}{new}"),
                None => rest.strip_suffix("; ").unwrap_or(rest).to_string(),
            };
        }
    }
    out
}
