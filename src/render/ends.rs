//! The envelope's two ends as printed: the head (the input's first lines,
//! from the head arena) and the tail (its last, from the tail ring), each
//! in input order with runs of like lines folded (`render::fold`), placed
//! greedily while they fit the room the envelope gives them.

use crate::render::envelope::{fit_or_shorten, fit_whole, MIN_LINE_ROOM};
use crate::render::fold;
use crate::stream::line::LineBody;
use crate::stream::scan::Scanned;

/// A line the head covers. `raw` is what the signal count matches, so a
/// folded line keeps none: it is not shown.
pub(super) struct HeadLine {
    pub(super) raw: Vec<u8>,
    pub(super) cut: bool,
}

pub(super) struct Head {
    /// Every line covered, 1 to H, shown or folded.
    pub(super) lines: Vec<HeadLine>,
    /// The lines and fold markers as printed.
    pub(super) out: String,
    pub(super) used: usize,
    pub(super) ansi: u64,
}

/// Lines 1..=limit as the head arena holds them: complete lines only (the
/// arena may end inside one), and line 1 even when it is too long to keep.
pub(super) fn head_bodies<'a>(sc: &Scanned<'a>, limit: u64) -> Vec<LineBody<'a>> {
    let mut bodies = Vec::new();
    let mut rest = sc.head;
    while (bodies.len() as u64) < limit {
        let body = match memchr::memchr(b'\n', rest) {
            Some(k) => {
                let line = &rest[..k];
                rest = &rest[k + 1..];
                LineBody::Whole(crate::stream::tail::strip_cr(line))
            }
            None if sc.head_is_all && !rest.is_empty() => LineBody::Whole(std::mem::take(&mut rest)),
            None if bodies.is_empty() => match sc.first_line {
                Some(l) => l.body(),
                None => break,
            },
            None => break,
        };
        bodies.push(body);
        if matches!(body, LineBody::Cut { .. }) {
            break;
        }
    }
    bodies
}

/// The fold key of a shown line: none for a line that must stay visible
/// (a signal line, a line kept only by its ends); one key for every line
/// that reports a passing test of the detected family, whatever its name.
fn fold_key(sc: &Scanned, body: LineBody, signal: bool) -> Option<u64> {
    match body {
        LineBody::Whole(raw) if !signal => Some(match sc.passing {
            Some((classifier, f)) if classifier.passing(f, raw) => fold::PASSING,
            _ => fold::key(raw),
        }),
        _ => None,
    }
}

/// A run of at least `fold::MIN_RUN` lines as printed: its first line, the
/// fold marker, its last line, each whole; `None` when that does not fit
/// in `left` chars.
fn place_fold(lines: &[(u64, LineBody)], passing: bool, left: usize) -> Option<(String, usize, u64)> {
    let (first, last) = (lines[0], lines[lines.len() - 1]);
    let marker = if passing { fold::passing_marker } else { fold::marker }(first.0 + 1, last.0 - 1);
    let (a, a_chars, a_ansi) = fit_whole(first.1, left, true)?;
    let (z, z_chars, z_ansi) = fit_whole(last.1, left, true)?;
    let chars = a_chars + 1 + marker.chars().count() + z_chars + 1;
    (chars <= left).then(|| (format!("{a}\n{marker}{z}\n"), chars, a_ansi + z_ansi))
}

fn head_keys(sc: &Scanned, bodies: &[LineBody]) -> Vec<Option<u64>> {
    // The keeper knows the first hits exactly: those stay visible.
    // Lines the reader asked for one by one are never folded.
    let keyed = |i: usize, b| {
        (i as u64 >= sc.unfolded_head).then(|| fold_key(sc, b, sc.signals.is_early_hit(i as u64 + 1) == Some(true)))
    };
    bodies.iter().enumerate().map(|(i, &b)| keyed(i, b).flatten()).collect()
}

/// The lines (1 to the result) the head grows over first and the tail
/// never does: the head arena's complete lines up to `limit`, except that
/// when the arena ends before `limit`, a run of like lines at its end
/// (which may go on past it) is left to the tail, so that a run the head
/// and the tail would each hold a part of folds once, in the tail, when
/// the tail reaches back to it. Line 1 stays the head's.
pub(super) fn head_reach(sc: &Scanned, limit: u64) -> u64 {
    let bodies = head_bodies(sc, limit);
    let n = bodies.len() as u64;
    if n >= limit || sc.head_is_all {
        return n;
    }
    let keys = head_keys(sc, &bodies);
    match fold::runs(&keys).last() {
        Some(&(a, _)) if keys[a].is_some() => (a as u64).max(1),
        _ => n,
    }
}

/// Lines 1..=limit from the head arena, in order, while they fit in
/// `room`: runs of like lines folded, the rest whole; line 1 is shortened
/// in the middle (and shown alone) when it does not fit.
pub(super) fn choose_head(sc: &Scanned, limit: u64, room: usize) -> Head {
    let mut head = Head { lines: Vec::new(), out: String::new(), used: 0, ansi: 0 };
    let bodies = head_bodies(sc, limit);
    let keys = head_keys(sc, &bodies);
    let line = |i: usize| (i as u64 + 1, bodies[i]);
    for (a, z) in fold::runs(&keys) {
        if z + 1 - a >= fold::MIN_RUN {
            let run: Vec<_> = (a..=z).map(line).collect();
            if let Some((text, chars, ansi)) =
                place_fold(&run, keys[a] == Some(fold::PASSING), room.saturating_sub(head.used))
            {
                head.out.push_str(&text);
                head.used += chars;
                head.ansi += ansi;
                // Only the exemplars are shown: the folded lines keep no
                // text for the signal count to match.
                head.lines.extend(run.iter().enumerate().map(|(k, &(_, body))| {
                    let raw = match body {
                        LineBody::Whole(b) if k == 0 || k == run.len() - 1 => b.to_vec(),
                        _ => Vec::new(),
                    };
                    HeadLine { raw, cut: false }
                }));
                continue;
            }
            if a > 0 {
                break;
            }
            // Line 1 is shown whatever follows it.
        }
        for (i, &body) in bodies.iter().enumerate().take(z + 1).skip(a) {
            let left = room.saturating_sub(head.used);
            let fitted = if i == 0 {
                fit_or_shorten(body, left.saturating_sub(1), true)
            } else {
                fit_whole(body, left.saturating_sub(1), true)
            };
            let Some((text, chars, ansi)) = fitted.filter(|f| f.1 < left) else { return head };
            head.out.push_str(&text);
            head.out.push('\n');
            head.used += chars + 1;
            head.ansi += ansi;
            let (raw, cut) = match body {
                LineBody::Whole(b) => (b.to_vec(), false),
                LineBody::Cut { .. } => (Vec::new(), true),
            };
            head.lines.push(HeadLine { raw, cut });
            if z + 1 - a >= fold::MIN_RUN {
                // Line 1 alone: the fold it starts did not fit.
                return head;
            }
        }
    }
    head
}

pub(super) struct Tail {
    /// (line number, shown) of every line covered, oldest first; a line
    /// inside a fold is not shown.
    pub(super) lines: Vec<(u64, bool)>,
    /// The lines and fold markers as printed.
    pub(super) out: String,
    pub(super) used: usize,
    pub(super) ansi: u64,
}

/// The kept last lines after line `after`, newest first, until they cover
/// `asked` lines or the next does not fit in `room`: runs of like lines
/// folded, the rest whole. The newest line is always shown, shortened in
/// the middle when it must be. A run the ring holds only the end of is
/// not folded; its lines are shown one by one until `least` lines (the
/// `--tail` minimum) are covered.
pub(super) fn choose_tail(sc: &Scanned, asked: u64, least: u64, room: usize, after: u64) -> Tail {
    // Kept signal lines stay visible: the signal section leaves those in
    // the tail to it.
    let signals: std::collections::HashSet<u64> =
        sc.signals.recent_linenos().chain(sc.signals.kept_by_priority().iter().map(|k| k.line.lineno)).collect();
    let ring: Vec<(u64, LineBody)> =
        sc.tail.lines().filter(|l| l.lineno > after).map(|l| (l.lineno, l.body())).collect();
    let is_signal = |n: u64| signals.contains(&n) || sc.signals.last_hit_kind(n).is_some();
    let unfolded_from = sc.lines.saturating_sub(sc.unfolded_tail);
    let keys: Vec<Option<u64>> =
        ring.iter().map(|&(n, b)| if n > unfolded_from { None } else { fold_key(sc, b, is_signal(n)) }).collect();
    // Built newest first, reversed at the end.
    let mut lines: Vec<(u64, bool)> = Vec::new();
    let mut parts: Vec<String> = Vec::new();
    let (mut used, mut ansi) = (0usize, 0u64);
    'runs: for (a, z) in fold::runs(&keys).into_iter().rev() {
        if lines.len() as u64 >= asked {
            break;
        }
        // A run the ring holds only the end of (lines before it were not
        // kept) is cut: folded, its first exemplar would not be the run's
        // first line. Its newest lines are shown one by one while the tail
        // covers fewer than `least` lines (`--tail N` is a minimum); the
        // gap marker's inventory counts the rest. Being the oldest run the
        // ring holds, nothing comes after it.
        let cut = a == 0 && ring.first().is_some_and(|l| l.0 > after + 1);
        let folds = z + 1 - a >= fold::MIN_RUN;
        if folds && !cut {
            match place_fold(&ring[a..=z], keys[a] == Some(fold::PASSING), room.saturating_sub(used)) {
                Some((text, chars, n)) => {
                    parts.push(text);
                    used += chars;
                    ansi += n;
                    lines.extend((a..=z).rev().map(|i| (ring[i].0, i == a || i == z)));
                    continue;
                }
                None if !lines.is_empty() => break,
                // The newest line is shown whatever precedes it.
                None => {}
            }
        }
        for i in (a..=z).rev() {
            if folds && cut && !lines.is_empty() && lines.len() as u64 >= least.min(asked) {
                break 'runs;
            }
            let left = room.saturating_sub(used);
            let fitted = if lines.is_empty() {
                fit_or_shorten(ring[i].1, left.saturating_sub(1).max(MIN_LINE_ROOM), true)
            } else {
                fit_whole(ring[i].1, left.saturating_sub(1), true).filter(|f| f.1 < left)
            };
            let Some((text, chars, n)) = fitted else { break 'runs };
            used += chars + 1;
            ansi += n;
            parts.push(format!("{text}\n"));
            lines.push((ring[i].0, true));
            if (folds && !cut) || lines.len() as u64 >= asked {
                break 'runs;
            }
        }
    }
    lines.reverse();
    parts.reverse();
    Tail { lines, out: parts.concat(), used, ansi }
}
