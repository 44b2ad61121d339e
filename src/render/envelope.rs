//! The text envelope: budget allocation and rendering. Pure: it reads the
//! scanner's result and returns the text, so it is easy to property-test.
//!
//! Order of reservation (decided before anything is rendered): the fixed
//! parts (header sized with worst-case figures, notes, section markers, a
//! share for the gap marker), then the tail's minimum (the asked lines
//! within the tail budget), then the head's reservation (only what the head
//! uses of it), then signal lines. The reservations are minimums: what is
//! left flows, up to half of it to the head first (newest-first outputs keep
//! their top), then to the tail, by characters, over the lines the head
//! arena cannot reach, then whatever the tail leaves back to the head.
//! Nothing is cut after assembly: every piece is measured in displayed
//! characters as it is placed, so the total never exceeds the budget.
//!
//! Printed order follows the input: header, notes, head, the gap marker,
//! signal lines from the gap (with line numbers), tail; a section with
//! nothing to show is left out. In the head and the tail, runs of like
//! lines are folded (`render::fold`) and redrawn lines settled
//! (`text::redraw`).
//!
//! Also here, because they follow the same rules: passthrough's safe copy
//! (small input shown line by line exactly as the envelope shows a line),
//! and two answers of the size rule that need no rendering:
//! [`whole_budget`] (the budget that shows a stream whole) and
//! [`min_budget`] (the smallest budget whose header names the whole store
//! path).

use std::fmt::Write as _;

use regex::bytes::Regex;
use serde::Serialize;

use crate::render::ends::{choose_head, choose_tail, head_bodies, head_reach, Tail};
use crate::render::facts::RunFacts;
use crate::render::kinds;
use crate::render::layout;
use crate::render::masks;
use crate::stream::defaults;
use crate::stream::line::LineBody;
use crate::stream::scan::Scanned;
use crate::stream::signal::{kind_key, Group, SIGNAL_LINE_CHARS};
use crate::text::redraw;
use crate::text::sanitize::{display, terminal_safe_json, Display};
use crate::text::secrets::{self, Counts, KeyBlocks};
use crate::text::shorten::{cut_marker, shorten_text};

pub const HEADER_OPEN: &str = "<<<OUTBOX-HEADER";
pub const HEADER_CLOSE: &str = "OUTBOX-HEADER";
/// A shortened line never gets less room than this.
pub(super) const MIN_LINE_ROOM: usize = 48;
/// Characters a note (`--- … ---` before the head) may take: longer ones
/// are cut in the middle with the cut marker, like every other shortening.
const NOTE_CHARS: usize = 160;
/// Budgets up to this list no kind in the header; past it, one kind per
/// `KIND_PER_CHARS`.
const KINDS_FROM: usize = 4000;
const KIND_PER_CHARS: usize = 1250;
/// Characters the summary note may take.
const SUMMARY_CHARS: usize = 320;
/// Characters the gap marker may take with its inventory, at most.
const GAP_CHARS: usize = 400;
/// Characters the line naming the kinds not shown may take, at most.
const KINDS_CHARS: usize = 400;
/// Characters a block line (after a signal line) may take.
const BLOCK_LINE_CHARS: usize = 200;

/// Budgets, from the command line.
#[derive(Debug, Clone)]
pub struct Budgets {
    pub budget: usize,
    pub tail_budget: usize,
    pub head_budget: usize,
    pub tail_lines: usize,
    pub spill_limit: u64,
}

impl Default for Budgets {
    /// The documented defaults (`stream::defaults`).
    fn default() -> Budgets {
        Budgets {
            budget: defaults::BUDGET,
            tail_budget: defaults::TAIL_BUDGET,
            head_budget: defaults::HEAD_BUDGET,
            tail_lines: defaults::TAIL_LINES,
            spill_limit: defaults::SPILL_LIMIT,
        }
    }
}

#[derive(Serialize)]
struct Header<'a> {
    chars: u64,
    bytes: u64,
    lines: u64,
    signal_hits: u64,
    full_output: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    spill_error: Option<&'a str>,
    id: &'a str,
    label: &'a str,
    strategy: &'a str,
    spill_ratio_chars: serde_json::Value,
    unterminated_last_line: bool,
    binary: bool,
    head_lines_included: u64,
    tail_lines_included: u64,
    tail_lines_dropped: u64,
    signal_lines_shown: u64,
    ansi_sequences_stripped: u64,
    budget: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    interrupted: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_status: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    killed_by_signal: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_ms: Option<u64>,
    #[serde(flatten)]
    extra: serde_json::Map<String, serde_json::Value>,
}

/// What varies between the reservation and the final header.
#[derive(Clone, Copy)]
struct Shown {
    head: u64,
    tail: u64,
    tail_dropped: u64,
    signals: u64,
    ansi: u64,
}

/// What passthrough prints: the input itself, made safe to print exactly as
/// the envelope's lines are ([`safe_copy`]), when the contract says to
/// print it instead of an envelope. The decision is made on what would be
/// printed: input whose safe copy is longer than the budget (escapes grow
/// it) gets the envelope, so passthrough never prints over budget either.
pub fn passthrough(sc: &Scanned, budget: usize) -> Option<String> {
    if !prints_unchanged(sc.bytes, 0, sc.binary, sc.head_is_all, budget) {
        return None;
    }
    let text = safe_copy(sc.head);
    (text.chars().count() <= budget).then_some(text)
}

/// The contract's rule for printing input instead of an envelope:
/// non-empty text (no NUL byte), all of it kept, whose safe copy
/// (`printed_chars`) is at most `budget` characters.
pub fn prints_unchanged(bytes: u64, printed_chars: u64, binary: bool, kept_whole: bool, budget: usize) -> bool {
    bytes > 0 && !binary && printed_chars <= budget as u64 && kept_whole
}

/// Small input as passthrough prints it: each line shown as the envelope
/// shows a line (escape sequences removed, other controls and lone `\r`
/// escaped, a line imitating an outbox marker gets its first character
/// escaped, credentials masked), line ends kept as they were (`\n` or
/// `\r\n`). The lines of a private key block, followed in order, are
/// masked whole. Plain text, tabs, CRLF and valid UTF-8 come out byte for
/// byte.
pub fn safe_copy(raw: &[u8]) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut keys = KeyBlocks::default();
    let mut rest = raw;
    while !rest.is_empty() {
        let (line, end) = match memchr::memchr(b'\n', rest) {
            Some(k) => {
                let line = &rest[..k];
                rest = &rest[k + 1..];
                match line.strip_suffix(b"\r") {
                    Some(l) => (l, "\r\n"),
                    None => (line, "\n"),
                }
            }
            None => (std::mem::take(&mut rest), ""),
        };
        if secrets::enabled() && keys.line(line) {
            out.push_str(&secrets::key_line_marker(display(line).input_chars() as u64));
        } else {
            out.push_str(&line_display(line, true).text);
        }
        out.push_str(end);
    }
    out
}

/// The smallest budget at which the envelope shows the same lines as an
/// unbounded budget would (every line whole when the input is kept whole),
/// computed from the header size rule and the renderer's order instead of
/// rendered: the fixed parts at that budget (its digits are in the
/// header), the head and the grown tail as an unbounded render places
/// them, and the kept signal lines between the provisional head and the
/// tail's minimum (placed before head and tail grow, so the budget must
/// hold them next to the tail's minimum and the head's reservation).
/// `info` should carry worst-case figures for what is not yet known (the
/// path, the command).
pub fn whole_budget(sc: &Scanned, b: &Budgets, info: &RunFacts) -> usize {
    let _keys = key_context(sc);
    let info = &masks::stated(info, &masks::bound(sc, info));
    let asked = (b.tail_lines.max(1) as u64).min(sc.lines);
    let tail_room = b.tail_budget.saturating_sub(tail_marker(asked, asked).chars().count());
    let head_min = if sc.lines > 1 { MIN_LINE_ROOM + 1 } else { 0 };
    let tail_min = tail_minimum(sc, asked, tail_room);
    // A newest line shortened to fit the tail budget is shortened the same
    // way only when the tail gets all of that budget.
    let newest_whole = sc
        .tail
        .lines()
        .next_back()
        .is_none_or(|l| fit_whole(l.body(), tail_room.saturating_sub(1).max(MIN_LINE_ROOM), true).is_some());
    let tail_min_cost = if newest_whole { tail_min.used } else { tail_min.used.max(tail_room) };
    let first_tail_min = tail_min.lines.first().map_or(sc.lines + 1, |l| l.0);
    let reach = head_reach(sc, first_tail_min - 1);
    let tail = choose_tail(sc, u64::MAX, asked, usize::MAX, reach);
    let first_tail = tail.lines.first().map_or(sc.lines + 1, |l| l.0);
    let head = choose_head(sc, first_tail - 1, usize::MAX);
    let reserve = b.head_budget.saturating_sub(head_marker(sc.lines, u64::MAX).chars().count()).max(head_min);
    let provisional = choose_head(sc, first_tail_min - 1, reserve);
    let reserve = provisional.used;
    let provisional = provisional.lines.len() as u64;
    let signals = choose_signals(sc, provisional, first_tail_min, usize::MAX, &info.new_shapes).used;
    let grown = head.used + tail.used.max(tail_min_cost);
    let lines = (signals + grown.max(tail_min_cost + reserve) + head_min).max(2 * (MIN_LINE_ROOM + 1));
    // The fixed parts grow with the budget's digits: settle in a few steps.
    let mut n = lines;
    loop {
        let need = fixed_cost(sc, &Budgets { budget: n, ..b.clone() }, info) + lines;
        if need <= n {
            return n;
        }
        n = need;
    }
}

/// The smallest budget, from `b.budget` up, at which the envelope keeps
/// its promises with these facts: the header (free text compacted as far
/// as it goes, the path of the full output whole) and room for the first
/// and last lines. It is more than `b.budget` only when the path is too
/// long for that budget; the session then prints within, and states, this
/// one instead of printing a path that does not exist or going over.
pub fn min_budget(sc: &Scanned, b: &Budgets, info: &RunFacts) -> usize {
    let _keys = key_context(sc);
    let compacted = minimal(&masks::stated(info, &masks::bound(sc, info)));
    let mut n = b.budget;
    loop {
        let need = fixed_cost(sc, &Budgets { budget: n, ..b.clone() }, &compacted) + 2 * (MIN_LINE_ROOM + 1);
        if need <= n {
            return n;
        }
        n = need;
    }
}

/// Renders the envelope; never longer than `b.budget` characters.
pub fn render(sc: &Scanned, b: &Budgets, info: &RunFacts, signal: &Regex) -> String {
    // The header states the masked credentials: sized with a bound (see
    // `render::masks`), restated once the lines are chosen.
    let _keys = key_context(sc);
    let bound = masks::bound(sc, info);
    let stated = masks::stated(info, &bound);
    // Free text in the header and notes (a spill error naming a long path,
    // a long command) is shortened, step by step, until the fixed parts
    // leave room for the first and last lines.
    let mut compacted;
    let mut info = &stated;
    for cap in [160, 80, 32, 0] {
        if fixed_cost(sc, b, info) + 2 * (MIN_LINE_ROOM + 1) <= b.budget {
            break;
        }
        compacted = if cap > 0 { compact(info, cap) } else { minimal(info) };
        info = &compacted;
    }
    render_with(sc, b, info, signal, &bound)
}

/// The tail's minimum: the last `asked` lines, and when they begin inside
/// a closing block (the lines after a blank line, at most `asked` more),
/// the whole block when it fits the same room, so a summary's first lines
/// (`Configuration summary:`) are not left in the gap just past the head.
fn tail_minimum(sc: &Scanned, asked: u64, room: usize) -> Tail {
    let tail = choose_tail(sc, asked, asked, room, 0);
    let Some(start) = tail.lines.first().and_then(|l| closing_block_start(sc, l.0, asked)) else { return tail };
    let wider = asked + (tail.lines[0].0 - start);
    let whole = choose_tail(sc, wider, wider, room, 0);
    match whole.lines.first() {
        Some(l) if l.0 == start => whole,
        _ => tail,
    }
}

/// The first line of the block that line `first` is in, when it starts
/// after a blank line at most `max_more` lines before `first` (and not at
/// `first` itself).
fn closing_block_start(sc: &Scanned, first: u64, max_more: u64) -> Option<u64> {
    let blank = |l: &crate::stream::line::StoredLine| match l.body() {
        LineBody::Whole(b) => b.iter().all(u8::is_ascii_whitespace),
        LineBody::Cut { .. } => false,
    };
    let before = sc.tail.lines().rev().skip_while(|l| l.lineno >= first);
    let mut expected = first - 1;
    for l in before.take(max_more as usize + 1) {
        if l.lineno != expected {
            return None;
        }
        if blank(l) {
            return (l.lineno + 1 < first).then_some(l.lineno + 1);
        }
        expected = expected.checked_sub(1)?;
    }
    None
}

/// Characters of everything but the lines: header (with worst-case
/// figures), notes, section markers and a listing's rollup.
fn fixed_cost(sc: &Scanned, b: &Budgets, info: &RunFacts) -> usize {
    let base = base_cost(sc, b, info);
    base + rollup(sc, b, base).chars().count()
}

/// A listing's rollup (`render::layout`), after fixed parts of `base`
/// chars: within a third of the budget, and three quarters of what the
/// fixed parts leave beyond the first and last lines' minimum (at 2,000
/// chars that still holds wc's total lines and five largest entries).
fn rollup(sc: &Scanned, b: &Budgets, base: usize) -> String {
    if !sc.layout.is_listing() {
        return String::new();
    }
    let spare = b.budget.saturating_sub(base + 2 * (MIN_LINE_ROOM + 1));
    layout::rollup(sc, (b.budget / 3).min(spare.saturating_mul(3) / 4), b.head_budget.min(b.budget / 16))
}

/// `fixed_cost` without the rollup.
fn base_cost(sc: &Scanned, b: &Budgets, info: &RunFacts) -> usize {
    let asked = (b.tail_lines.max(1) as u64).min(sc.lines);
    let hits = sc.signals.hits();
    let worst = Shown { head: sc.lines, tail: asked, tail_dropped: asked, signals: hits, ansi: sc.chars };
    let notes_len: usize = notes(sc, info).iter().map(|n| n.chars().count()).sum();
    header_block(sc, b, info, worst).chars().count()
        + notes_len
        + head_marker(sc.lines, b.budget as u64).chars().count()
        + gap_room(sc, b)
        + if hits > 0 { signal_marker(hits, hits).chars().count() + omitted_marker(hits).chars().count() } else { 0 }
        + tail_marker(asked, asked).chars().count()
}

/// `info` with its free-text fields cut to `cap` chars (the path of the
/// full output is never cut: it must stay usable). The summary loses its
/// least telling parts first (see [`shorten_summary`]).
fn compact(info: &RunFacts, cap: usize) -> RunFacts {
    let cut = |s: &str| shorten_text(s, cap);
    let mut out = info.clone();
    out.spill_error = info.spill_error.as_deref().map(cut);
    if let Some(c) = out.command.as_mut() {
        c.command = cut(&c.command);
    }
    out.notes = info.notes.iter().map(|n| shorten_summary(n, cap).unwrap_or_else(|| cut(n))).collect();
    for v in out.extra.values_mut() {
        shorten_strings(v, &cut);
    }
    // The kinds list shrinks with the rest (the summary still names them).
    match out.extra.get_mut("kinds") {
        Some(serde_json::Value::Array(a)) if cap >= 20 => a.truncate(cap / 20),
        Some(_) => {
            out.extra.remove("kinds");
        }
        None => {}
    }
    out
}

/// Characters a free-text field keeps in the tightest header.
const MINIMAL_CHARS: usize = 32;
/// Header fields kept in the tightest header: what the contract names
/// (the family and its verdict) and the short facts about how the run
/// ended or what it was. Everything else is dropped, never printed empty.
const MINIMAL_EXTRA: &[&str] = &["family", "verdict", "signals", "timed_out", "layout", "running", "stream"];

/// The tightest header, for a budget that cannot hold the compacted one:
/// optional fields dropped (the run history, token estimates, ...), the
/// rest kept non-empty: the command and other free text cut to
/// [`MINIMAL_CHARS`], the summary to its status (and how the command
/// ended), other notes to their start.
fn minimal(info: &RunFacts) -> RunFacts {
    let mut out = compact(info, MINIMAL_CHARS);
    out.extra.retain(|k, _| MINIMAL_EXTRA.contains(&k.as_str()));
    out.notes =
        info.notes.iter().map(|n| shorten_summary(n, 0).unwrap_or_else(|| shorten_text(n, MINIMAL_CHARS))).collect();
    out
}

/// The summary note (`summary: A; B; C`) within `cap` chars, losing its
/// least telling parts: its first part (the status, or the verdict) and
/// how the command ended (`exit status 3`, `killed by SIGSEGV`, `timed out
/// after 2s`) are kept whatever `cap` says; the others stay, in order,
/// while they fit. None for any other note.
fn shorten_summary(note: &str, cap: usize) -> Option<String> {
    let body = note.strip_prefix("summary: ")?;
    if note.chars().count() <= cap {
        return Some(note.to_string());
    }
    let parts: Vec<&str> = body.split("; ").collect();
    let ending = |p: &str| ["exit status ", "killed by ", "timed out"].iter().any(|e| p.starts_with(e));
    let mut keep: Vec<bool> = parts.iter().enumerate().map(|(i, p)| i == 0 || ending(p)).collect();
    let len = |keep: &[bool]| {
        let kept = parts.iter().zip(keep).filter(|(_, k)| **k);
        "summary: ".len() + kept.map(|(p, _)| p.chars().count() + 2).sum::<usize>() - 2
    };
    for i in 1..parts.len() {
        if keep[i] {
            continue;
        }
        keep[i] = true;
        if len(&keep) > cap {
            keep[i] = false;
            break;
        }
    }
    let kept: Vec<&str> = parts.iter().zip(&keep).filter(|(_, k)| **k).map(|(p, _)| *p).collect();
    Some(format!("summary: {}", kept.join("; ")))
}

fn shorten_strings(v: &mut serde_json::Value, cut: &dyn Fn(&str) -> String) {
    match v {
        serde_json::Value::String(s) => *s = cut(s),
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| shorten_strings(x, cut)),
        serde_json::Value::Object(o) => o.values_mut().for_each(|x| shorten_strings(x, cut)),
        _ => {}
    }
}

fn render_with(sc: &Scanned, b: &Budgets, info: &RunFacts, signal: &Regex, bound: &Counts) -> String {
    // The last line is always in the tail, whatever --tail says.
    let asked = (b.tail_lines.max(1) as u64).min(sc.lines);
    let hits = sc.signals.hits();
    let stated_notes = notes(sc, info);
    let tail_marker_res = tail_marker(asked, asked).chars().count();
    let head_marker_res = head_marker(sc.lines, b.budget as u64).chars().count();
    let base = base_cost(sc, b, info);
    let rollup = rollup(sc, b, base);
    let fixed = base + rollup.chars().count();
    let mut room = b.budget.saturating_sub(fixed);

    // 1. The tail's minimum, reserved first: the verdict lives there.
    // ... but line 1 keeps enough room to show its two ends.
    let head_min = if sc.lines > 1 { MIN_LINE_ROOM + 1 } else { 0 };
    let tail_room = b.tail_budget.saturating_sub(tail_marker_res).min(room.saturating_sub(head_min));
    let tail_min = tail_minimum(sc, asked, tail_room);
    room = room.saturating_sub(tail_min.used);
    let first_tail_min = tail_min.lines.first().map_or(sc.lines + 1, |l| l.0);
    let head_limit = first_tail_min - 1;

    // 2. Head reservation, 3. signal lines between them.
    // Line 1 always gets room enough to show at least its two ends.
    let head_reserve = b.head_budget.saturating_sub(head_marker_res).max(head_min).min(room);
    let provisional = choose_head(sc, head_limit, head_reserve);
    let h0 = provisional.lines.len() as u64;
    // A head that needs less than its reservation (short or folded lines)
    // leaves the rest to the signal lines.
    let head_reserve = provisional.used;
    let sig_room = room - head_reserve;
    // The kinds that get no line are named: the room for that line is
    // taken from the signal lines only when some kind is left out, and
    // only as much as naming those kinds takes.
    let mut sigs = choose_signals(sc, h0, first_tail_min, sig_room, &info.new_shapes);
    let kinds_room = match sigs.unplaced.len() {
        0 => 0,
        _ => {
            let cap = kinds_room(b).min(sig_room / 2);
            let unplaced: Vec<&Group> = sigs.unplaced.iter().filter_map(|k| sc.signals.group(*k)).collect();
            let need = kinds::not_shown(&unplaced, cap).chars().count();
            sigs = choose_signals(sc, h0, first_tail_min, sig_room - need, &info.new_shapes);
            need.max(kinds::not_shown(&unplaced, 0).chars().count()).min(cap)
        }
    };
    room -= sigs.used + kinds_room;
    // A listing's picks from the gap: up to half of what is left beyond
    // the head's reservation.
    let mut picks = layout::picks(sc, h0, first_tail_min, room.saturating_sub(head_reserve) / 2);
    let picks_used = if picks.entries.is_empty() { 0 } else { picks.used + picks_marker_len(sc) };
    room -= picks_used;

    // 4. What is left flows: half of it (beyond the reservation) may grow
    // the head, the tail then grows by characters over the lines the head
    // arena cannot show, and the head takes whatever the tail leaves.
    let grow = room.saturating_sub(head_reserve);
    let reach = head_reach(sc, head_limit);
    let head_first = choose_head(sc, reach, head_reserve + grow / 2);
    let tail = choose_tail(sc, u64::MAX, asked, tail_min.used + room.saturating_sub(head_first.used), reach);
    let first_tail = tail.lines.first().map_or(sc.lines + 1, |l| l.0);
    // Signal lines the tail now shows itself give their room back.
    let freed: usize =
        sigs.entries.iter().chain(&picks.entries).filter(|e| e.0 >= first_tail).map(|e| e.1.chars().count()).sum();
    let head = choose_head(sc, first_tail - 1, (tail_min.used + room + freed).saturating_sub(tail.used));
    let h = head.lines.len() as u64;
    sigs.entries.retain(|e| e.0 > h && e.0 < first_tail);
    picks.entries.retain(|e| e.0 > h && e.0 < first_tail);

    // S, the signal lines shown, counts each hit at most once: every line
    // of a group whose count is printed, plus the other signal lines that
    // are visible (in the head, listed, in the tail). K = M - S.
    let mut visible: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    for (i, l) in head.lines.iter().enumerate() {
        let lineno = i as u64 + 1;
        // The keeper knows the first hits exactly (with family
        // knowledge the regex alone would also match verdict lines).
        let hit = match sc.signals.is_early_hit(lineno) {
            Some(hit) => hit,
            None if l.cut => sc.signals.first_lineno() == Some(lineno),
            None => signal.is_match(&l.raw),
        };
        if hit {
            let kind = match sc.signals.early_kind(lineno) {
                Some(k) => k,
                None if l.cut => sc.signals.first().map_or(0, |k| k.kind),
                None => kind_key(LineBody::Whole(&l.raw)),
            };
            visible.insert(lineno, kind);
        }
    }
    // Signal lines never fold: a tail line that is a hit is shown.
    for &(lineno, _) in tail.lines.iter().filter(|l| l.1) {
        if let Some(kind) = sc.signals.last_hit_kind(lineno) {
            visible.insert(lineno, kind);
        } else if let Some(k) = sc.signals.recent().find(|k| k.line.lineno == lineno) {
            visible.insert(lineno, k.kind);
        }
    }
    // Listed lines the grown tail now shows itself count as tail lines;
    // only the lines still listed carry their group's note.
    for e in sigs.shapes.iter().filter(|e| e.0 > h) {
        visible.insert(e.0, e.1);
    }
    let listed = sigs.shapes.iter().filter(|e| e.0 > h && e.0 < first_tail);
    let grouped: std::collections::HashSet<u64> = listed.filter(|e| e.2).map(|e| e.1).collect();
    // An estimated count stands for the hits certainly counted.
    let represented: u64 = grouped.iter().filter_map(|sh| sc.signals.group(*sh)).map(|g| g.least()).sum();
    let shown_signals = represented + visible.values().filter(|sh| !grouped.contains(sh)).count() as u64;
    let ansi = head.ansi + tail.ansi + sigs.ansi;

    let covered = tail.lines.len() as u64;
    let shown =
        Shown { head: h, tail: covered, tail_dropped: asked.saturating_sub(covered), signals: shown_signals, ansi };
    // A section with nothing in it is not printed.
    let mut out = String::new();
    if h > 0 {
        out.push_str(&head_marker(h, head.used as u64));
        out.push_str(&head.out);
    }
    if first_tail > h + 1 {
        out.push_str(&gap_marker(sc, h + 1, first_tail - 1, gap_room(sc, b)));
    }
    if !picks.entries.is_empty() {
        picks.entries.sort_by_key(|e| e.0);
        out.push_str(&layout::picks_marker(sc.layout, picks.entries.len() as u64));
        picks.entries.iter().for_each(|e| out.push_str(&e.1));
    }
    if !sigs.entries.is_empty() || shown_signals < hits {
        out.push_str(&signal_marker(shown_signals, hits));
    }
    sigs.entries.sort_by_key(|e| e.0);
    for (_, text) in &sigs.entries {
        out.push_str(text);
    }
    // Kinds none of whose lines is visible are named, so none is absent
    // without a word.
    let seen: std::collections::HashSet<u64> = visible.values().copied().collect();
    let missing: Vec<&Group> = kinds::ranked(sc.signals).into_iter().filter(|g| !seen.contains(&g.kind)).collect();
    if !missing.is_empty() {
        out.push_str(&kinds::not_shown(&missing, kinds_room));
    }
    if shown_signals < hits {
        out.push_str(&omitted_marker(hits - shown_signals));
    }
    if covered > 0 {
        out.push_str(&tail_marker(covered, asked));
        out.push_str(&tail.out);
    }
    // The header and notes, now that what is printed is known.
    let printed: Vec<&str> = stated_notes.iter().map(String::as_str).chain([rollup.as_str(), out.as_str()]).collect();
    let info = masks::settled(info, bound, &printed);
    let mut head_part = header_block(sc, b, &info, shown);
    for n in &notes(sc, &info) {
        head_part.push_str(n);
    }
    head_part.push_str(&rollup);
    let out = head_part + &out;
    debug_assert!(out.chars().count() <= b.budget, "envelope over budget: {} > {}", out.chars().count(), b.budget);
    out
}

fn header_block(sc: &Scanned, b: &Budgets, info: &RunFacts, shown: Shown) -> String {
    let ratio = sc.chars as f64 / b.spill_limit.max(1) as f64;
    let ratio = serde_json::Number::from_f64((ratio * 100.0).round() / 100.0)
        .map_or(serde_json::Value::Null, serde_json::Value::Number);
    let h = Header {
        chars: sc.chars,
        bytes: sc.bytes,
        lines: sc.lines,
        signal_hits: sc.signals.hits(),
        full_output: info.full_output.as_deref(),
        spill_error: info.spill_error.as_deref(),
        id: &info.id,
        label: &info.label,
        strategy: info.strategy.as_str(),
        spill_ratio_chars: ratio,
        unterminated_last_line: sc.unterminated,
        binary: sc.binary,
        head_lines_included: shown.head,
        tail_lines_included: shown.tail,
        tail_lines_dropped: shown.tail_dropped,
        signal_lines_shown: shown.signals,
        ansi_sequences_stripped: shown.ansi,
        budget: b.budget,
        interrupted: info.interrupted_name(),
        command: info.command_text(),
        exit_status: info.exit_status(),
        killed_by_signal: info.killed_by_signal_name(),
        duration_ms: info.duration_ms(),
        extra: extra_fields(info, b.budget),
    };
    let json = terminal_safe_json(&serde_json::to_string(&h).expect("header serialises"));
    format!("{HEADER_OPEN}\n{json}\n{HEADER_CLOSE}\n")
}

/// The header's last fields, in order: what `--format auto` detected,
/// which stream, then the record's extras (e.g. a JSON parse error). The
/// `kinds` list is cut to what the budget affords (none up to 4,000
/// characters, then one per 1,250: 8 at the default budget), so it never
/// crowds out the lines of a small envelope (the summary names kinds too).
fn extra_fields(info: &RunFacts, budget: usize) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    if let Some(d) = info.detected {
        m.insert("detected".into(), d.into());
    }
    if let Some(s) = info.stream {
        m.insert("stream".into(), s.as_str().into());
    }
    m.extend(info.extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    let afford = budget.saturating_sub(KINDS_FROM) / KIND_PER_CHARS;
    match m.get_mut("kinds") {
        Some(serde_json::Value::Array(a)) if afford > 0 => a.truncate(afford),
        Some(_) => {
            m.remove("kinds");
        }
        None => {}
    }
    m
}

fn notes(sc: &Scanned, info: &RunFacts) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(sig) = info.interrupted_name() {
        v.push(format!("--- interrupted by {sig}: this envelope covers only what arrived before it ---\n"));
    }
    if sc.bytes == 0 {
        v.push("--- empty input: no bytes were read ---\n".to_string());
    }
    if sc.binary {
        v.push("--- binary input: NUL bytes found; control bytes are shown escaped ---\n".to_string());
    }
    if let Some(e) = &info.spill_error {
        let e = shorten_text(&display(e.as_bytes()).text, NOTE_CHARS);
        v.push(format!("--- full output NOT kept: {e} ---\n"));
    }
    for n in &info.notes {
        // The summary names kinds: it may take more than another note.
        let cap = if n.starts_with("summary: ") { SUMMARY_CHARS } else { NOTE_CHARS };
        let n = shorten_text(&display(n.as_bytes()).text, cap);
        v.push(format!("--- {n} ---\n"));
    }
    v
}

/// The widest picks marker.
fn picks_marker_len(sc: &Scanned) -> usize {
    layout::picks_marker(sc.layout, u64::MAX).chars().count()
}

fn head_marker(lines: u64, chars: u64) -> String {
    format!("--- head {lines} lines ({chars} chars) ---\n")
}

/// `--- lines A-B not shown (N lines) ---`, and when `max_chars` leaves
/// room, what the gap holds: its most frequent line shapes with their
/// counts, `(N lines): 2955 × "Compiling <*> <*>", ≈12 × "…" ---`,
/// as many as fit in `max_chars` (the plain marker is returned whole even
/// when longer). `≈` marks a count that is estimated (see `gap_counts`).
pub fn gap_marker(sc: &Scanned, from: u64, to: u64, max_chars: usize) -> String {
    let n = to + 1 - from;
    let open = format!("--- lines {from}-{to} not shown ({n} lines)");
    let plain = format!("{open} ---\n");
    let mut len = plain.chars().count();
    if max_chars <= len {
        return plain;
    }
    let mut items = String::new();
    // A count that may be off by a large share of itself says little: a
    // rare shape that took a frequent one's place inherits its count, and
    // one sampled line of a rare shape counts for a whole stride.
    for c in gap_counts(sc, from, to).into_iter().filter(|c| c.error <= c.count / 4.0) {
        if c.count < 1.5 {
            break;
        }
        // An example holding a credential is shown masked and unspelled:
        // spelling the template could leave parts of a token the masker no
        // longer recognises.
        let example = whole_words(&c.example);
        let whole = display(example).text;
        let spelled = display(&crate::text::template::spell(&c.example)).text;
        let text = if whole.contains(secrets::MARKER_OPEN) || spelled.contains(secrets::MARKER_OPEN) {
            whole
        } else {
            spelled
        };
        let text = shorten_text(text.trim(), GAP_SHAPE_CHARS);
        let item = format!(
            "{}{}{:.0} × \"{text}\"",
            if items.is_empty() { ": " } else { ", " },
            if c.exact { "" } else { "≈" },
            c.count
        );
        let item_len = item.chars().count();
        if len + item_len > max_chars {
            break;
        }
        len += item_len;
        items.push_str(&item);
    }
    format!("{open}{items} ---\n")
}

/// A gap example without its last word when it may have been cut at the
/// inventory's byte limit: a token cut in two is not recognised by the
/// masker, and its first half must not be shown.
pub(super) fn whole_words(example: &[u8]) -> &[u8] {
    if example.len() < crate::stream::gap::SHAPE_BYTES {
        return example;
    }
    let word = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'+' | b'/' | b'=' | b'.' | b'~' | b'%');
    let keep = example.iter().rposition(|b| !word(b)).map_or(0, |i| i + 1);
    &example[..keep]
}

/// Characters reserved for the gap marker: the plain marker at its widest,
/// or a share of the budget for the inventory of what the gap holds.
fn gap_room(sc: &Scanned, b: &Budgets) -> usize {
    gap_marker(sc, sc.lines, sc.lines, 0).chars().count().max((b.budget / 32).min(GAP_CHARS))
}

/// S of M: M hits in the whole input; S of them shown or represented (see
/// `render_with`).
fn signal_marker(shown: u64, hits: u64) -> String {
    format!("--- signal lines ({shown} of {hits} shown) ---\n")
}

/// K = M - S (see `render_with`).
fn omitted_marker(k: u64) -> String {
    format!("--- {k} more signal lines omitted; read full_output ---\n")
}

/// Characters set aside to name the kinds that get no line.
fn kinds_room(b: &Budgets) -> usize {
    (b.budget / 24).clamp(40, KINDS_CHARS)
}

fn tail_marker(shown: u64, asked: u64) -> String {
    format!("--- tail {shown}/{asked} lines ---\n")
}

struct Signals {
    entries: Vec<(u64, String)>,
    used: usize,
    ansi: u64,
    /// Per entry: its line, its kind, and whether it carries its group's
    /// count (then it stands for every line of that kind).
    shapes: Vec<(u64, u64, bool)>,
    /// Kinds of the table with no line placed, nor a hit in the head
    /// or the tail as provisionally placed.
    unplaced: Vec<u64>,
}

/// A signal line placed in the section: its text as fitted (widened
/// later when room is left), its `LINENO: ` and group note, its block lines.
struct Placed<'a> {
    kept: &'a crate::stream::signal::Kept,
    text: String,
    chars: usize,
    ansi: u64,
    prefix: String,
    note: String,
    /// Its lead line (`LINENO- TEXT`), printed before it.
    lead: Option<String>,
    block: Vec<String>,
}

/// Kept signal lines between the head and the tail, in priority order
/// (errors first; see `SignalKeeper::kept_between`), while they fit; the
/// first listed line of a shape seen more than once carries its group's
/// count and line numbers. Then, with the room left, the lines of their
/// blocks: first up to the line that names the location, then the rest. A
/// block line is printed `LINENO- TEXT` (grep's context style).
fn choose_signals(sc: &Scanned, after: u64, before: u64, room: usize, new_shapes: &[u64]) -> Signals {
    let mut s = Signals { entries: Vec::new(), used: 0, ansi: 0, shapes: Vec::new(), unplaced: Vec::new() };
    let mut placed: Vec<Placed> = Vec::new();
    let mut order = sc.signals.kept_between(after, before);
    // What is new since the previous run goes first (stable: the rest keep
    // their priority order).
    if !new_shapes.is_empty() {
        order.sort_by_key(|k| !new_shapes.contains(&k.kind));
    }
    let mut grouped = std::collections::HashSet::new();
    let mut marked = std::collections::HashSet::new();
    for k in order {
        let line = &k.line;
        let sh = k.kind;
        let group = sc.signals.group(sh).filter(|g| g.count > 1 && !grouped.contains(&sh));
        let prefix = format!("{}: ", line.lineno);
        let Some((text, chars, ansi)) = fit_or_shorten(line.body(), SIGNAL_LINE_CHARS, false) else { continue };
        let mut note = group.map(group_note).unwrap_or_default();
        // A kind the previous run of this command did not have is marked
        // on its first listed line.
        if new_shapes.contains(&sh) && !marked.contains(&sh) {
            note.push_str(" [new]");
        }
        let cost = prefix.len() + chars + note.chars().count() + 1;
        if s.used + cost > room {
            continue;
        }
        s.used += cost;
        s.ansi += ansi;
        if group.is_some() {
            grouped.insert(sh);
        }
        marked.insert(sh);
        s.shapes.push((line.lineno, sh, group.is_some()));
        placed.push(Placed { kept: k, text, chars, ansi, prefix, note, lead: None, block: Vec::new() });
    }
    let mut shown = sc.signals.kinds_at_ends(after, before);
    shown.extend(s.shapes.iter().map(|e| e.1));
    s.unplaced = kinds::ranked(sc.signals).iter().map(|g| g.kind).filter(|k| !shown.contains(k)).collect();
    place_leads(&mut placed, &mut s, after, room);
    // Block lines: to the location first, then the rest, entry by entry.
    for pass in 0..2 {
        for p in placed.iter_mut() {
            let file = p.kept.file();
            let lines: Vec<(u64, &[u8])> = p.kept.block_lines().filter(|(n, _)| *n < before).collect();
            let upto = match file {
                Some(f) if !p.text.contains(f) => {
                    lines.iter().position(|(_, l)| display(l).text.contains(f)).map_or(0, |i| i + 1)
                }
                _ => 0,
            };
            let limit = if pass == 0 { upto } else { lines.len() };
            while p.block.len() < limit {
                let (n, l) = lines[p.block.len()];
                let prefix = format!("{n}- ");
                let Some((text, chars, ansi)) = fit_or_shorten(LineBody::Whole(l), BLOCK_LINE_CHARS, false) else {
                    break;
                };
                let cost = prefix.len() + chars + 1;
                if s.used + cost > room {
                    break;
                }
                s.used += cost;
                s.ansi += ansi;
                p.block.push(format!("{prefix}{text}\n"));
            }
        }
    }
    // The room the lines and their blocks leave flows back to the lines
    // the cap shortened (their message is at the start): up to half of
    // it, in priority order, the rest being the head's and the tail's.
    let mut spare = room.saturating_sub(s.used) / 2;
    for p in placed.iter_mut() {
        if spare == 0 {
            break;
        }
        let body = p.kept.line.body();
        if fit_whole(body, p.chars, false).is_some() {
            continue;
        }
        let Some((text, wider, ansi)) = fit_or_shorten(body, p.chars + spare, false) else { continue };
        if wider <= p.chars {
            continue;
        }
        spare -= wider - p.chars;
        s.used += wider - p.chars;
        s.ansi = s.ansi - p.ansi + ansi;
        (p.text, p.chars, p.ansi) = (text, wider, ansi);
    }
    for p in placed {
        let mut entry = p.lead.unwrap_or_default();
        entry.push_str(&format!("{}{}{}\n", p.prefix, p.text, p.note));
        for b in p.block {
            entry.push_str(&b);
        }
        s.entries.push((p.kept.line.lineno, entry));
    }
    s
}

/// The lead lines of the placed entries (a file header, gcc's `In function
/// 'f':`), while they fit: each printed once, before the first entry in
/// input order that it leads (entries under one file header share it).
fn place_leads(placed: &mut [Placed], s: &mut Signals, after: u64, room: usize) {
    let mut shown: Vec<(u64, String)> = Vec::new();
    for p in placed.iter() {
        let Some((n, l)) = p.kept.lead.as_ref() else { continue };
        if *n <= after || *n >= p.kept.line.lineno || shown.iter().any(|(m, _)| m == n) {
            continue;
        }
        let prefix = format!("{n}- ");
        let Some((text, chars, ansi)) = fit_or_shorten(LineBody::Whole(l), BLOCK_LINE_CHARS, false) else { continue };
        let cost = prefix.len() + chars + 1;
        if s.used + cost > room {
            continue;
        }
        s.used += cost;
        s.ansi += ansi;
        shown.push((*n, format!("{prefix}{text}\n")));
    }
    let mut order: Vec<usize> = (0..placed.len()).collect();
    order.sort_by_key(|&i| placed[i].kept.line.lineno);
    for (n, text) in shown {
        if let Some(&i) = order.iter().find(|&&i| placed[i].kept.lead.as_ref().is_some_and(|(m, _)| *m == n)) {
            placed[i].lead = Some(text);
        }
    }
}

/// The line whole, if its display fits in `max` chars. `guard`: the line
/// starts an output line, so marker imitations are escaped.
pub(super) fn fit_whole(body: LineBody, max: usize, guard: bool) -> Option<(String, usize, u64)> {
    match body {
        LineBody::Whole(b) => {
            let d = shown_display(b, guard);
            let (chars, ansi) = (d.chars(), d.ansi_stripped as u64);
            (chars <= max).then_some((d.text, chars, ansi))
        }
        LineBody::Cut { prefix, suffix, elided_crs, .. } => {
            let d = cut_redraw(prefix, suffix, elided_crs, guard)?;
            let (chars, ansi) = (d.chars(), d.ansi_stripped as u64);
            (chars <= max).then_some((d.text, chars, ansi))
        }
    }
}

/// The line whole if it fits, else shortened in the middle with a marker
/// that counts the input characters cut. A line that starts an output
/// line (`guard`: head and tail) keeps more of its end, where a verdict
/// is; a line printed after its number (signal and block lines) keeps
/// more of its start, where the message is.
pub fn fit_or_shorten(body: LineBody, max: usize, guard: bool) -> Option<(String, usize, u64)> {
    if let Some(whole) = fit_whole(body, max, guard) {
        return Some(whole);
    }
    let (pd, sd, total) = match body {
        LineBody::Whole(b) => {
            let d = shown_display(b, guard);
            let n = d.input_chars() as u64;
            (d.clone(), d, n)
        }
        LineBody::Cut { prefix, suffix, elided_crs, .. }
            if let Some(d) = cut_redraw(prefix, suffix, elided_crs, guard) =>
        {
            let n = d.input_chars() as u64;
            (d.clone(), d, n)
        }
        LineBody::Cut { prefix, suffix, chars, .. } => {
            let mut pd = display(prefix);
            let sd = display(suffix);
            if guard && imitates_marker(&pd.text, &sd.text) {
                pd.escape_first();
            }
            (pd, sd, chars)
        }
    };
    Some(shorten(&pd, &sd, total, max, !guard))
}

/// Makes the lines inside private key blocks known to this thread's
/// masker while the guard lives: the head's and the tail's lines and each
/// signal's block, each followed in order (a tail may begin inside a
/// block; its END line tells). A line is then masked wherever it is
/// shown, even without the BEGIN line that made it key material.
fn key_context(sc: &Scanned) -> secrets::KnownGuard {
    let mut known: Vec<Vec<u8>> = Vec::new();
    let fence = |b: &[u8]| memchr::memmem::find(b, b"PRIVATE KEY").is_some();
    let any_block =
        fence(sc.head)
            || sc.tail.lines().any(|l| match l.body() {
                LineBody::Whole(b) => fence(b),
                LineBody::Cut { prefix, suffix, .. } => fence(prefix) || fence(suffix),
            })
            || sc.signals.kept_by_priority().into_iter().chain(sc.signals.recent()).any(|k| {
                k.block_lines().any(|(_, l)| fence(l)) || matches!(k.line.body(), LineBody::Whole(b) if fence(b))
            });
    if secrets::enabled() && any_block {
        // A cut line breaks a block: nothing after it is taken for a key.
        let whole = |b: LineBody<'_>| match b {
            LineBody::Whole(l) => l.to_vec(),
            LineBody::Cut { .. } => b"<cut>".to_vec(),
        };
        let head: Vec<Vec<u8>> = head_bodies(sc, u64::MAX).into_iter().map(whole).collect();
        let tail: Vec<Vec<u8>> = sc.tail.lines().map(|l| whole(l.body())).collect();
        for seq in [&head, &tail] {
            known.extend(secrets::key_lines_in(seq.iter().map(Vec::as_slice)).into_iter().map(<[u8]>::to_vec));
        }
        for k in sc.signals.kept_by_priority().into_iter().chain(sc.signals.recent()) {
            let block = std::iter::once(whole(k.line.body())).chain(k.block_lines().map(|(_, l)| l.to_vec()));
            let block: Vec<Vec<u8>> = block.collect();
            known.extend(secrets::key_lines_in(block.iter().map(Vec::as_slice)).into_iter().map(<[u8]>::to_vec));
        }
    }
    secrets::known_key_lines(known)
}

/// Every text a line may be printed as (whole, or its kept ends, or as a
/// terminal leaves it), for the bound on what is masked.
pub(super) fn display_line(body: LineBody, add: &mut dyn FnMut(&str)) {
    match body {
        LineBody::Whole(b) => {
            add(&shown_display(b, true).text);
            add(&display(b).text);
        }
        LineBody::Cut { prefix, suffix, elided_crs, .. } => {
            add(&display(prefix).text);
            add(&display(suffix).text);
            if let Some(d) = cut_redraw(prefix, suffix, elided_crs, true) {
                add(&d.text);
            }
        }
    }
}

/// The head arena's lines and the tail ring's.
pub(super) fn for_each_candidate(sc: &Scanned, f: &mut dyn FnMut(LineBody)) {
    for body in head_bodies(sc, u64::MAX) {
        f(body);
    }
    for l in sc.tail.lines() {
        f(l.body());
    }
}

/// The head arena's lines and the tail ring's, as `display_line` shows
/// them.
pub(super) fn display_candidates(sc: &Scanned, add: &mut dyn FnMut(&str)) {
    for_each_candidate(sc, &mut |body| {
        display_line(body, add);
        // As the gap marker may show it (see `whole_words`).
        if let LineBody::Whole(b) = body {
            if b.len() >= crate::stream::gap::SHAPE_BYTES {
                add(&display(whole_words(b)).text);
            }
        }
    });
}

/// A line as passthrough's safe copy shows it: sanitised, a marker
/// imitation escaped.
fn line_display(b: &[u8], guard: bool) -> Display {
    let mut d = display(b);
    if guard && imitates_marker(&d.text, &d.text) {
        d.escape_first();
    }
    d
}

/// A line as the envelope shows it: like the safe copy, but a line redrawn
/// with carriage returns (or erased and rewritten) is shown as a terminal
/// leaves it, with how often it was redrawn. The note is part of the text
/// that is measured and, when too long, shortened.
fn shown_display(b: &[u8], guard: bool) -> Display {
    let Some(s) = redraw::settle(b) else { return line_display(b, guard) };
    settled_display(&s.text, &redraw_note(s.redraws, ""), s.escapes, guard)
}

/// A cut line whose kept end is redrawn: the frames in its kept end, as a
/// terminal leaves them (the frames in the cut middle are known only by
/// the carriage returns counted there, if they were, so the count is a
/// lower bound).
fn cut_redraw(prefix: &[u8], suffix: &[u8], elided_crs: u64, guard: bool) -> Option<Display> {
    let k = memchr::memchr(b'\r', suffix)?;
    let s = redraw::settle(&suffix[k..])?;
    let before = memchr::memchr_iter(b'\r', prefix).count() as u64 + elided_crs;
    Some(settled_display(&s.text, &redraw_note(s.redraws + before, "at least "), s.escapes, guard))
}

fn settled_display(text: &[u8], note: &str, escapes: u32, guard: bool) -> Display {
    let mut raw = text.to_vec();
    raw.extend_from_slice(note.as_bytes());
    let mut d = line_display(&raw, guard);
    d.ansi_stripped += escapes;
    d
}

/// Follows a redrawn line's final frame.
fn redraw_note(redraws: u64, bound: &str) -> String {
    let times = if redraws == 1 { "time" } else { "times" };
    format!(" [redrawn {bound}{redraws} {times}]")
}

/// Whether a line starting with `start` and ending with `end` could be
/// taken for one of the envelope's own marker lines.
fn imitates_marker(start: &str, end: &str) -> bool {
    (start.starts_with("--- ") && end.trim_end().ends_with(" ---"))
        || start.starts_with(HEADER_OPEN)
        || start.starts_with(HEADER_CLOSE)
}

fn shorten(pd: &Display, sd: &Display, total: u64, max: usize, keep_start: bool) -> (String, usize, u64) {
    // First with room for the longest marker; when the marker comes out
    // shorter (fewer chars cut), once more with the room it left.
    let worst = cut_marker(total).chars().count();
    let (s, chars, ansi, marker) = shorten_with(pd, sd, total, max, keep_start, worst);
    if marker < worst {
        let again = shorten_with(pd, sd, total, max, keep_start, marker);
        if again.1 <= max {
            return (again.0, again.1, again.2);
        }
    }
    (s, chars, ansi)
}

/// `shorten` with `marker_room` chars set aside for the marker; also
/// returns the marker's length.
fn shorten_with(
    pd: &Display,
    sd: &Display,
    total: u64,
    max: usize,
    keep_start: bool,
    marker_room: usize,
) -> (String, usize, u64, usize) {
    let keep = max.saturating_sub(marker_room);
    // A cut line's kept ends may be shorter than their share: what one end
    // cannot use goes to the other, so more room never shows less.
    let a = if keep_start { keep - keep / 3 } else { keep / 3 };
    let b = if pd.chars() < a {
        keep - pd.chars()
    } else if sd.chars() < keep - a {
        sd.chars()
    } else {
        keep - a
    };
    let a = keep - b;
    let (ptext, pin, pdisp) = pd.prefix(a);
    let (stext, sin, sdisp) = sd.suffix(b);
    let cut = total.saturating_sub((pin + sin) as u64);
    let marker = cut_marker(cut);
    let mut s = String::with_capacity(ptext.len() + marker.len() + stext.len());
    s.push_str(ptext);
    s.push_str(&marker);
    s.push_str(stext);
    let marker_len = marker.chars().count();
    (s, pdisp + marker_len + sdisp, (pd.ansi_stripped + sd.ansi_stripped) as u64, marker_len)
}

/// What a group's listed line adds: ` [TS2322 × 87: lines A, B, C, …, Z]`,
/// its kind's code (when a family captured one; a template is the line
/// itself), the count of its kind in the whole input (see `kinds::count`),
/// its first line numbers and its last.
fn group_note(g: &Group) -> String {
    let code = if g.code.is_some() { format!("{} ", kinds::label(g, 40)) } else { String::new() };
    let mut s = format!(" [{code}× {}: lines ", kinds::count(g));
    for (i, l) in g.first_linenos.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{l}");
    }
    let last = g.last_lineno();
    if g.count > g.first_linenos.len() as u64 + 1 {
        s.push_str(", …");
    }
    if !g.first_linenos.contains(&last) {
        let _ = write!(s, ", {last}");
    }
    s.push(']');
    s
}

/// Characters a shape may take in the gap marker.
const GAP_SHAPE_CHARS: usize = 60;

/// A shape's count in the gap, for the gap marker.
struct GapCount {
    count: f64,
    /// About how far `count` may be off: the Space-Saving bound plus one
    /// standard error of its sampled part.
    error: f64,
    exact: bool,
    example: Vec<u8>,
}

/// The gap's line shapes, most frequent first: the scanner's summary of
/// the lines past the head arena (`stream::gap`), less the shown lines it
/// counted (line 1 when it ran past the arena, the tail), plus the arena's
/// own lines inside the gap, counted here exactly. Counts are exact only
/// when the summary counted every line past the arena under its own shape
/// (no sampling, no shape dropped from its table): a shape the summary
/// holds only the first part of, or does not hold at all, may have more
/// lines past the arena than any count says. Otherwise every count is an
/// estimate, its `error` covering what the summary may have missed, and a
/// tail line is subtracted as the one line it is expected to have counted
/// for.
fn gap_counts(sc: &Scanned, from: u64, to: u64) -> Vec<GapCount> {
    use crate::stream::gap::line_shape;
    let exact = sc.gap.is_exact();
    let missed = |example: &[u8]| sc.gap.missed(example.len() + 1);
    let mut counts: Vec<(u64, GapCount)> = sc
        .gap
        .entries()
        .iter()
        .map(|e| {
            // An entry's own bound covers what it inherited; its samples'
            // spread covers the sampled part, or, with none, one point's
            // worth that all points may have missed.
            // Two standard errors, not one: with one, a named count would
            // be off by more than a quarter about one time in three, more
            // where lines cluster (a patch's `diff --git` lines come in
            // runs; this repository's `git log -p` showed ≈2800 for 1757).
            let unsampled = if e.samples == 0 { missed(&e.example) } else { 0.0 };
            let error = e.error + 2.0 * e.sampling_error() + unsampled;
            (e.shape, GapCount { count: e.count, error, exact, example: e.example.clone() })
        })
        .collect();
    // Lines wholly inside the arena: the summary did not see them.
    let mut arena_lines = 0u64;
    let mut rest = sc.head;
    while !rest.is_empty() {
        let (line, complete) = match memchr::memchr(b'\n', rest) {
            Some(k) => (&rest[..k], true),
            None => (rest, sc.head_is_all),
        };
        rest = &rest[(line.len() + 1).min(rest.len())..];
        if !complete {
            break;
        }
        arena_lines += 1;
        if arena_lines < from || arena_lines > to {
            continue;
        }
        let line = crate::stream::tail::strip_cr(line);
        let sh = line_shape(line);
        match counts.iter_mut().find(|c| c.0 == sh) {
            Some(c) => c.1.count += 1.0,
            None => {
                let error = sc.gap.dropped() + missed(line);
                counts.push((sh, GapCount { count: 1.0, error, exact, example: line.to_vec() }))
            }
        }
    }
    let prefix = |body: LineBody<'_>| match body {
        LineBody::Whole(b) => line_shape(b),
        LineBody::Cut { prefix, .. } => line_shape(prefix),
    };
    let first = sc.first_line.filter(|_| arena_lines == 0 && from > 1).map(|l| prefix(l.body()));
    let tail = sc.tail.lines().filter(|l| l.lineno > to && l.lineno > arena_lines).map(|l| prefix(l.body()));
    for sh in first.into_iter().chain(tail) {
        if let Some(c) = counts.iter_mut().find(|c| c.0 == sh) {
            c.1.count = (c.1.count - 1.0).max(0.0);
        }
    }
    let mut out: Vec<GapCount> = counts.into_iter().map(|c| c.1).collect();
    out.sort_by(|a, b| b.count.total_cmp(&a.count));
    out
}

#[cfg(test)]
mod summary_tests {
    use super::shorten_summary;

    #[test]
    fn the_summary_keeps_its_status_and_ending() {
        let note = "summary: FAILED (pytest): 1 failed, 3 passed; signals: 2 errors, 0 warnings; \
first error test_x.py:3; exit status 1; same as 3 min ago";
        assert_eq!(shorten_summary(note, 500).as_deref(), Some(note));
        assert_eq!(
            shorten_summary(note, 100).as_deref(),
            Some("summary: FAILED (pytest): 1 failed, 3 passed; signals: 2 errors, 0 warnings; exit status 1")
        );
        assert_eq!(
            shorten_summary(note, 0).as_deref(),
            Some("summary: FAILED (pytest): 1 failed, 3 passed; exit status 1")
        );
        assert_eq!(
            shorten_summary("summary: no error or warning lines", 0).as_deref(),
            Some("summary: no error or warning lines")
        );
        assert_eq!(shorten_summary("interrupted", 0), None);
    }
}
