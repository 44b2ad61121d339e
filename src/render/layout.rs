//! A listing's own parts of the text envelope (see `stream::layout`):
//!
//! - the *rollup*, printed after the summary and notes, before the head:
//!   what such a command is run for. Paths: the largest entries by their
//!   number column, the total lines, the entries per top-level directory
//!   and the busiest directories. Matches: the files with most matches.
//!   Commits: the oldest commit's header lines (the tail may hold only
//!   the end of its patch), the top authors, the files changed most.
//!   Patch: the files changed, with their `+/−` and hunks.
//!   It is decision material, so it is reserved with the header, within a
//!   share of the budget; what does not fit is counted in its markers.
//! - the *picks*, printed after the gap marker: units from the gap, placed
//!   in priority order while they fit, printed in input order as
//!   `LINENO: text`. Matches: the first match of files spread over the gap
//!   (`[+K more in this file]`), then other matches spread over it.
//!   Commits: the header lines of commits spread over the gap. Patch: the
//!   file headers spread over the gap, each with its `+/−`.
//!
//! Everything else (header, head, gap marker, signal lines, tail) is the
//! envelope every output gets: units appear in order in the head and the
//! tail, so a wrong guess of the layout hides nothing.

use crate::render::envelope::fit_or_shorten;
use crate::stream::layout::number::{human, parse_size, thousands};
use crate::stream::layout::paths::Source;
use crate::stream::layout::tables::{spread_order, Item, Row};
use crate::stream::layout::vcs::Header;
use crate::stream::layout::{Layout, Matches, Paths, Vcs};
use crate::stream::line::LineBody;
use crate::stream::scan::Scanned;
use crate::text::sanitize::display;
use crate::text::shorten::shorten_text;

/// Characters a listed line (`LINENO: text`) may take.
const LINE_CHARS: usize = 200;
/// Characters a commit's header line may take (a subject is rarely
/// longer).
const HEADER_CHARS: usize = 400;
/// Characters a name may take in a rollup line.
const NAME_CHARS: usize = 60;
/// Characters a rollup line of names and counts may take.
const ROW_CHARS: usize = 400;
/// Largest entries and top files listed at most.
const LISTED: usize = 10;
/// Total lines listed from each end (as `paths` keeps them).
const TOTALS_SHOWN: u64 = 3;

/// A figure as the listing prints it: with units when it did (`du -h`).
pub fn figure(p: &Paths, v: u64) -> String {
    if p.with_units() {
        human(v)
    } else {
        thousands(v)
    }
}

/// A total line and its figure.
pub struct Total {
    pub value: u64,
    pub shown: String,
    pub lineno: u64,
}

/// One of the largest entries.
pub struct Largest<'a> {
    pub item: &'a Item,
    pub shown: String,
    pub path: String,
}

/// What a path listing's summary and rollup say.
pub struct PathFigures<'a> {
    /// Directories holding entries.
    pub directories: u64,
    pub exact: bool,
    /// du's line for its root, when du listed one tree: the total.
    pub root_total: Option<Total>,
    /// Largest first, the root's own line left out.
    pub largest: Vec<Largest<'a>>,
}

pub fn paths(p: &Paths) -> PathFigures<'_> {
    let root = p.root();
    let is_root = |path: &[u8]| root.len() == path.len() + 1 && root.starts_with(path);
    let root_total = p.last_du().filter(|l| is_root(&l.path)).and_then(|l| {
        let tab = memchr::memchr(b'\t', &l.text)?;
        let (value, _) = parse_size(&l.text[..tab])?;
        Some(Total { value, shown: String::from_utf8_lossy(&l.text[..tab]).into_owned(), lineno: l.lineno })
    });
    let largest = p
        .largest
        .sorted()
        .into_iter()
        .filter(|i| !is_root(&i.label))
        .map(|item| Largest { item, shown: figure(p, item.value), path: name(&item.label, NAME_CHARS) })
        .collect();
    let (named, exact) = p.directories();
    let rows = p.dirs().rows().len() as u64;
    PathFigures { directories: if named > 0 { named } else { rows.min(1) }, exact, root_total, largest }
}

/// A name from the input, safe to print and at most `max` chars.
fn name(raw: &[u8], max: usize) -> String {
    shorten_text(&display(raw).text, max)
}

/// An input line as listed: `LINENO: text`, the text at most
/// `LINE_CHARS`.
fn listed(lineno: u64, body: LineBody) -> String {
    let text = fit_or_shorten(body, LINE_CHARS, false).map_or(String::new(), |t| t.0);
    format!("{lineno}: {text}\n")
}

/// What fits of a rollup, in at most `max` chars.
struct Block {
    out: String,
    left: usize,
    head: usize,
}

impl Block {
    /// A section: `marker(k)` then the first `k` of `lines`, with the
    /// largest `k` (at least `min`) that fits; nothing when none does.
    /// True when placed.
    fn section(&mut self, lines: &[String], min: usize, marker: impl Fn(usize) -> String) -> bool {
        let mut k = lines.len();
        while k >= min.max(1) {
            let m = marker(k);
            let cost = m.chars().count() + lines[..k].iter().map(|l| l.chars().count()).sum::<usize>();
            if cost <= self.left {
                self.out.push_str(&m);
                lines[..k].iter().for_each(|l| self.out.push_str(l));
                self.left -= cost;
                return true;
            }
            k -= 1;
        }
        false
    }

    /// One marker line listing `items` (`"name figure"`), as many as fit
    /// in `ROW_CHARS` and in what is left, the rest counted.
    fn row(&mut self, open: &str, items: &[String], total: usize) {
        let mut k = items.len();
        while k > 0 {
            let more = if total > k { format!(", +{} more", thousands((total - k) as u64)) } else { String::new() };
            let line = format!("--- {open}: {}{more} ---\n", items[..k].join(", "));
            let n = line.chars().count();
            if n <= ROW_CHARS.min(self.left) {
                self.out.push_str(&line);
                self.left -= n;
                return;
            }
            k -= 1;
        }
    }
}

/// The rollup of a listing, at most `max` chars; empty for a log. `head`:
/// about what the head can be sure of (a unit the head would show whole
/// in that is not repeated here).
pub fn rollup(sc: &Scanned, max: usize, head: usize) -> String {
    let mut b = Block { out: String::new(), left: max, head };
    match sc.layout {
        Layout::Paths => paths_rollup(&mut b, sc.layouts.paths().expect("figures of the layout")),
        Layout::Matches => matches_rollup(&mut b, sc.layouts.matches().expect("figures of the layout")),
        Layout::Commits => commits_rollup(&mut b, sc.layouts.vcs().expect("figures of the layout")),
        Layout::Patch => patch_rollup(&mut b, sc.layouts.vcs().expect("figures of the layout")),
        Layout::Log => {}
    }
    b.out
}

fn paths_rollup(b: &mut Block, p: &Paths) {
    let f = paths(p);
    let t = &p.totals;
    // A few total lines are grand totals (wc's, one per xargs batch):
    // first. Many are per directory (ls -R's): after the largest entries.
    let few = t.lines <= 2 * TOTALS_SHOWN;
    if few {
        totals_section(b, p, &f);
    }
    if !f.largest.is_empty() {
        // Five at least; more when the rollup has room for the rest too.
        let n = (b.left / 90).clamp(5, LISTED);
        let lines: Vec<String> =
            f.largest.iter().take(n).map(|l| listed(l.item.line.lineno, l.item.line.body())).collect();
        let of = thousands(p.numbered());
        let column = p.source().column();
        let marker = |k| format!("--- largest {k} of {of} entries by {column} ---\n");
        let _ = b.section(&lines, 1, marker);
    }
    if !few {
        totals_section(b, p, &f);
    }
    // du's figures are cumulative: a directory's own line is its size.
    let du = p.source() == Source::Du;
    let numbered = p.numbered() > 0;
    let size = |r: &Row| {
        if du {
            r.own.map(|v| format!(" ({})", figure(p, v))).unwrap_or_default()
        } else if numbered {
            format!(" ({})", figure(p, r.sum))
        } else {
            String::new()
        }
    };
    let approx = |r: &Row| if r.error > 0 { "≈" } else { "" };
    let tops: Vec<&Row> = p.tops().rows().iter().filter(|r| r.count > 1).collect();
    if tops.len() > 1 {
        let by: Box<dyn Fn(&Row) -> u64> =
            if du { Box::new(|r: &Row| r.own.unwrap_or(0)) } else { Box::new(|r: &Row| r.count) };
        let mut sorted = tops.clone();
        sorted.sort_by(|a, c| by(c).cmp(&by(a)).then_with(|| a.label.cmp(&c.label)));
        let items: Vec<String> = sorted
            .iter()
            .take(LISTED)
            .map(|r| format!("{}/ {}{}{}", name(&r.label, NAME_CHARS), approx(r), thousands(r.count), size(r)))
            .collect();
        let what = if numbered { format!("entries and {}", p.source().column()) } else { "entries".to_string() };
        b.row(&format!("by top-level directory ({what})"), &items, tops.len());
    }
    let dirs = p.dirs().rows();
    if dirs.len() > 1 {
        let busiest = p.dirs().top(5, |r| r.count);
        // Below the root, named from it: the root is named once, whole.
        let root = p.root();
        let items: Vec<String> = busiest
            .iter()
            .map(|r| {
                let rel = r.label.strip_prefix(root).filter(|rel| !rel.is_empty() && !root.is_empty());
                let label = match rel {
                    Some(rel) => name(rel, NAME_CHARS),
                    None if r.label.is_empty() => "./".to_string(),
                    None => name(&r.label, NAME_CHARS),
                };
                format!("{label} {}{}", approx(r), thousands(r.count))
            })
            .collect();
        b.row("busiest directories (entries)", &items, (p.directories().0 as usize).max(items.len()));
    }
}

/// The total lines: du's root line, and the kept total lines (the first
/// and last few) with their count and sum.
fn totals_section(b: &mut Block, p: &Paths, f: &PathFigures) {
    let t = &p.totals;
    if let Some(total) = &f.root_total {
        let line = p.last_du().map(|l| listed(l.lineno, LineBody::Whole(&l.text))).unwrap_or_default();
        let _ = b.section(&[line], 1, |_| format!("--- total: {} (du's line for the root) ---\n", total.shown));
    }
    if t.lines == 0 {
        return;
    }
    let lines: Vec<String> = t.kept().map(|(n, l)| listed(*n, LineBody::Whole(l))).collect();
    let sum = if t.lines > 1 && t.summed > 0 { format!(", sum {}", figure(p, t.sum)) } else { String::new() };
    let kept = lines.len() as u64;
    let _ = b.section(&lines, 1, |k| {
        let shown = if (k as u64) < t.lines { format!(", {k} shown") } else { String::new() };
        match t.lines {
            1 => "--- total line ---\n".to_string(),
            n if kept < n && k == lines.len() => {
                format!("--- {} total lines{sum}: the first and last {} ---\n", thousands(n), kept / 2)
            }
            n => format!("--- {} total lines{sum}{shown} ---\n", thousands(n)),
        }
    });
}

fn matches_rollup(b: &mut Block, m: &Matches) {
    let (files, exact) = m.files();
    if files < 2 {
        return;
    }
    let lines: Vec<String> = m
        .top
        .sorted()
        .iter()
        .take(LISTED)
        .map(|i| format!("{:>7} {}\n", thousands(i.value), name(&i.label, LINE_CHARS)))
        .collect();
    let approx = if exact { "" } else { "≈" };
    let (files, matches) = (thousands(files), thousands(m.matches()));
    let _ = b.section(&lines, 1, |k| {
        format!("--- files with most matches ({k} of {approx}{files} files; {matches} matches) ---\n")
    });
}

/// A unit's header lines, each as listed, whole up to `HEADER_CHARS`.
fn header_lines(h: &Header) -> Vec<String> {
    h.lines()
        .iter()
        .map(|l| {
            let text = fit_or_shorten(l.body(), HEADER_CHARS, false).map_or(String::new(), |t| t.0);
            format!("{}: {text}\n", l.lineno)
        })
        .collect()
}

/// `+1,234 −56`.
fn plus_minus(plus: u64, minus: u64) -> String {
    format!("+{} −{}", thousands(plus), thousands(minus))
}

fn commits_rollup(b: &mut Block, v: &Vcs) {
    // The oldest commit's header, whole: the tail may show only the end
    // of its patch. (The newest is the head's first lines.)
    let commits = thousands(v.commits());
    if let Some(o) = v.oldest.as_ref().filter(|_| v.commits() > 1) {
        let lines = header_lines(o);
        let _ = b.section(&lines, lines.len(), |_| format!("--- the oldest of {commits} commits ---\n"));
    }
    // The newest opens the head; when the head may not hold its header
    // whole (a small budget), the header is here too.
    if let Some(n) = v.newest.as_ref() {
        let lines = header_lines(n);
        if lines.iter().map(|l| l.chars().count()).sum::<usize>() > b.head {
            let _ = b.section(&lines, lines.len(), |_| format!("--- the newest of {commits} commits ---\n"));
        }
    }
    let (authors, exact) = v.authors();
    if authors > 1 {
        let items: Vec<String> = v
            .authors
            .top(LISTED, |r| r.count)
            .iter()
            .map(|r| {
                format!("{} {}{}", name(&r.label, NAME_CHARS), if r.error > 0 { "≈" } else { "" }, thousands(r.count))
            })
            .collect();
        let approx = if exact { "" } else { "≈" };
        b.row(&format!("top authors (commits; {approx}{} authors)", thousands(authors)), &items, authors as usize);
    }
    let (files, exact) = v.files_changed();
    if files > 0 {
        let approx = if exact { "" } else { "≈" };
        let lines: Vec<String> = v
            .files
            .top(LISTED, |r| r.count)
            .iter()
            .map(|r| {
                let changes = if r.plus + r.minus > 0 {
                    format!(" {}", plus_minus(r.plus, r.minus))
                } else if r.sum > 0 {
                    format!(" {} changes", thousands(r.sum))
                } else {
                    String::new()
                };
                let n = if r.error > 0 { format!("≈{}", r.count) } else { r.count.to_string() };
                format!("{n:>7}{changes} {}\n", name(&r.label, LINE_CHARS))
            })
            .collect();
        let files = thousands(files);
        let _ =
            b.section(&lines, 1, |k| format!("--- files changed most ({k} of {approx}{files}; commits, lines) ---\n"));
    }
}

fn patch_rollup(b: &mut Block, v: &Vcs) {
    let (files, exact) = v.files_changed();
    if files == 0 {
        return;
    }
    let approx = if exact { "" } else { "≈" };
    let lines: Vec<String> = v
        .files
        .top(LISTED, |r| r.plus + r.minus + r.sum)
        .iter()
        .map(|r| {
            let hunks = r.own.unwrap_or(0);
            let h = if hunks == 1 { "hunk" } else { "hunks" };
            format!("{:>15} {hunks:>3} {h:<5} {}\n", plus_minus(r.plus, r.minus), name(&r.label, LINE_CHARS))
        })
        .collect();
    let files = thousands(files);
    let _ = b.section(&lines, 1, |k| format!("--- files changed ({k} of {approx}{files}, most lines first) ---\n"));
}

/// Units from the gap, as placed.
pub struct Picks {
    /// (line number, `LINENO: text…\n`).
    pub entries: Vec<(u64, String)>,
    pub used: usize,
}

/// The picks between line `after` and line `before` (both excluded),
/// while they fit in `room` (the marker included).
pub fn picks(sc: &Scanned, after: u64, before: u64, room: usize) -> Picks {
    let mut p = Picks { entries: Vec::new(), used: 0 };
    // Room for the marker, which the caller adds.
    let room = room.saturating_sub(picks_marker(sc.layout, u64::MAX).chars().count());
    let inside = |n: u64| n > after && n < before;
    let mut place = |lineno: u64, text: String| {
        let cost = text.chars().count();
        if p.used + cost <= room {
            p.used += cost;
            p.entries.push((lineno, text));
        }
    };
    match sc.layout {
        Layout::Matches => {
            let m = sc.layouts.matches().expect("figures of the layout");
            let firsts: Vec<_> = m.firsts.items().iter().filter(|s| inside(s.line.lineno)).collect();
            let spread: Vec<_> = m.spread.items().iter().filter(|s| inside(s.line.lineno)).collect();
            let mut taken = std::collections::HashSet::new();
            let candidates = spread_order(firsts.len())
                .map(|i| (firsts[i], true))
                .chain(spread_order(spread.len()).map(|i| (spread[i], false)));
            for (s, first) in candidates {
                if !taken.insert(s.line.lineno) {
                    continue;
                }
                let mut line = listed(s.line.lineno, s.line.body());
                if first && s.figure > 1 {
                    line.pop();
                    line.push_str(&format!(" [+{} more in this file]\n", thousands(s.figure - 1)));
                }
                place(s.line.lineno, line);
            }
        }
        Layout::Commits => {
            let v = sc.layouts.vcs().expect("figures of the layout");
            let picks: Vec<_> = v.picks.items().iter().filter(|s| inside(s.line.lineno)).collect();
            for i in spread_order(picks.len()) {
                let n = picks[i].line.lineno;
                let Some(h) = v.header_of(n) else { continue };
                // All of a commit's header lines lie in the gap.
                if h.lines().last().is_some_and(|l| l.lineno >= before) {
                    continue;
                }
                place(n, header_lines(h).concat());
            }
        }
        Layout::Patch => {
            let v = sc.layouts.vcs().expect("figures of the layout");
            let picks: Vec<_> = v.file_picks.items().iter().filter(|s| inside(s.line.lineno)).collect();
            for i in spread_order(picks.len()) {
                let s = picks[i];
                let mut line = listed(s.line.lineno, s.line.body());
                line.pop();
                let (plus, minus) = (s.figure >> 32, s.figure & u64::from(u32::MAX));
                line.push_str(&format!(" [{}]\n", plus_minus(plus, minus)));
                place(s.line.lineno, line);
            }
        }
        Layout::Paths | Layout::Log => {}
    }
    p
}

/// The picks' marker: what they are and how many are listed.
pub fn picks_marker(layout: Layout, shown: u64) -> String {
    match layout {
        Layout::Commits => format!("--- commits from the gap, their header lines ({shown} shown) ---\n"),
        Layout::Patch => format!("--- files from the gap ({shown} shown) ---\n"),
        _ => format!("--- matches from the gap, the first of each file first ({shown} shown) ---\n"),
    }
}
