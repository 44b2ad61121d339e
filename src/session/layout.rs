//! A listing's facts in a run: the header's `layout` and its `rollup`
//! figures, and the summary line that says them in words, in place of the
//! family verdict a log gets (a listing has none: its lines are data).
//!
//! ```text
//! --- summary: 1,194 paths in 7 directories ---
//! --- summary: 619 entries (du) in 22 directories; total 1.9M ---
//! --- summary: 703 matches in 169 files; most in ./bash.1 (85) ---
//! --- summary: 50 commits 2026-11-28..2026-12-03 by 1 author; 164 files changed, +12,345 −6,789 ---
//! --- summary: 2 files changed, +121 −49 in 9 hunks ---
//! ```

use crate::family::Severity;
use crate::render::facts::RunFacts;
use crate::render::layout as figures;
use crate::stream::layout::number::thousands;
use crate::stream::layout::paths::Source;
use crate::stream::layout::vcs::day_text;
use crate::stream::layout::Layout;
use crate::stream::scan::Scanned;

/// For a listing: adds `layout`, `rollup` and `signals` to the header and
/// the summary as the first note, and returns true (the family facts do
/// not apply). For a log: false, nothing added.
pub fn annotate(info: &mut RunFacts, sc: &Scanned) -> bool {
    let (words, rollup) = match sc.layout {
        Layout::Log => return false,
        Layout::Paths => paths(sc),
        Layout::Matches => matches(sc),
        Layout::Commits => commits(sc),
        Layout::Patch => patch(sc),
    };
    let errors = sc.signals.count(Severity::Error);
    let warnings = sc.signals.count(Severity::Warning);
    info.extra.insert("layout".into(), sc.layout.as_str().into());
    info.extra.insert("rollup".into(), rollup.into());
    let mut signals = serde_json::Map::new();
    signals.insert("error".into(), errors.into());
    signals.insert("warning".into(), warnings.into());
    info.extra.insert("signals".into(), signals.into());
    let mut parts = vec![words];
    if errors + warnings > 0 {
        parts.push(format!("signals: {errors} errors, {warnings} warnings"));
    }
    // How the command ended (wrap mode, the hook's status file): a `find`
    // that failed half-way must not read like a complete listing.
    if let Some(ending) = info.command.as_ref().and_then(crate::render::facts::CommandInfo::ending) {
        parts.push(ending);
    }
    info.notes.insert(0, format!("summary: {}", parts.join("; ")));
    true
}

fn paths(sc: &Scanned) -> (String, serde_json::Map<String, serde_json::Value>) {
    let p = sc.layouts.paths().expect("the paths layout has its figures");
    let f = figures::paths(p);
    let mut m = serde_json::Map::new();
    m.insert("entries".into(), p.entries().into());
    m.insert("source".into(), p.source().name().into());
    m.insert("directories".into(), f.directories.into());
    if p.numbered() > 0 {
        m.insert("column".into(), p.source().column().into());
    }
    if p.totals.lines > 0 {
        m.insert("total_lines".into(), p.totals.lines.into());
        if p.totals.summed > 0 {
            m.insert("total_sum".into(), p.totals.sum.into());
        }
    }
    if let Some(t) = &f.root_total {
        m.insert("total".into(), t.value.into());
    }
    if !f.exact {
        m.insert("approximate".into(), vec!["directories"].into());
    }
    let mut words = match p.source() {
        Source::Bare => format!("{} paths", thousands(p.entries())),
        s => format!("{} entries ({})", thousands(p.entries()), s.name()),
    };
    if f.directories > 1 {
        words.push_str(&format!(" in {}{} directories", if f.exact { "" } else { "≈" }, thousands(f.directories)));
    }
    if let Some(t) = &f.root_total {
        words.push_str(&format!("; total {}", t.shown));
    } else if let (1, Some((_, line))) = (p.totals.lines, p.totals.kept().next().filter(|_| p.totals.summed == 0)) {
        // tree's `23 directories, 96 files`.
        let line = crate::text::sanitize::display(line).text;
        words.push_str(&format!("; {}", crate::text::shorten::shorten_text(line.trim(), 60)));
    } else if p.totals.lines == 1 && p.totals.summed == 1 {
        words.push_str(&format!("; total {}", figures::figure(p, p.totals.sum)));
    } else if p.totals.lines > 1 && p.totals.summed > 0 {
        words.push_str(&format!(
            "; {} total lines, sum {}",
            thousands(p.totals.lines),
            figures::figure(p, p.totals.sum)
        ));
    }
    (words, m)
}

fn matches(sc: &Scanned) -> (String, serde_json::Map<String, serde_json::Value>) {
    let ms = sc.layouts.matches().expect("the matches layout has its figures");
    let (files, exact) = ms.files();
    let mut m = serde_json::Map::new();
    m.insert("matches".into(), ms.matches().into());
    m.insert("files".into(), files.into());
    if ms.context_lines() > 0 {
        m.insert("context_lines".into(), ms.context_lines().into());
    }
    if ms.counted_files() > 0 {
        m.insert("files_counted".into(), ms.counted_files().into());
    }
    if !exact {
        m.insert("approximate".into(), vec!["files"].into());
    }
    let approx = if exact { "" } else { "≈" };
    let file_word = if files == 1 { "file" } else { "files" };
    let mut words = format!("{} matches in {approx}{} {file_word}", thousands(ms.matches()), thousands(files));
    if ms.counted_files() > files {
        words.push_str(&format!(" (of {} files counted)", thousands(ms.counted_files())));
    }
    if let Some(top) = ms.top.sorted().first().filter(|_| files > 1) {
        let path = crate::text::sanitize::display(&top.label).text;
        let path = crate::text::shorten::shorten_text(&path, 80);
        words.push_str(&format!("; most in {path} ({})", thousands(top.value)));
    }
    (words, m)
}

fn commits(sc: &Scanned) -> (String, serde_json::Map<String, serde_json::Value>) {
    let v = sc.layouts.vcs().expect("the commits layout has its figures");
    let mut m = serde_json::Map::new();
    let mut approximate = Vec::new();
    m.insert("commits".into(), v.commits().into());
    let mut words = format!("{} commits", thousands(v.commits()));
    if let Some((first, last)) = v.days() {
        m.insert("first_date".into(), day_text(first).into());
        m.insert("last_date".into(), day_text(last).into());
        words.push_str(&format!(" {}..{}", day_text(first), day_text(last)));
    }
    let (authors, exact) = v.authors();
    if authors > 0 {
        m.insert("authors".into(), authors.into());
        let a = if authors == 1 { "author" } else { "authors" };
        words.push_str(&format!(" by {}{} {a}", if exact { "" } else { "≈" }, thousands(authors)));
        if !exact {
            approximate.push("authors");
        }
    }
    changes(v, &mut m, &mut words, &mut approximate, "; ");
    if !approximate.is_empty() {
        m.insert("approximate".into(), approximate.into());
    }
    (words, m)
}

fn patch(sc: &Scanned) -> (String, serde_json::Map<String, serde_json::Value>) {
    let v = sc.layouts.vcs().expect("the patch layout has its figures");
    let mut m = serde_json::Map::new();
    let mut approximate = Vec::new();
    let mut words = String::new();
    changes(v, &mut m, &mut words, &mut approximate, "");
    m.insert("hunks".into(), v.hunks().into());
    let h = if v.hunks() == 1 { "hunk" } else { "hunks" };
    words.push_str(&format!(" in {} {h}", thousands(v.hunks())));
    if v.commits() == 1 {
        m.insert("commits".into(), 1.into());
    }
    if !approximate.is_empty() {
        m.insert("approximate".into(), approximate.into());
    }
    (words, m)
}

/// `12 files changed, +345 −120`, and their header figures.
fn changes(
    v: &crate::stream::layout::Vcs,
    m: &mut serde_json::Map<String, serde_json::Value>,
    words: &mut String,
    approximate: &mut Vec<&'static str>,
    sep: &str,
) {
    let (files, exact) = v.files_changed();
    m.insert("files".into(), files.into());
    m.insert("insertions".into(), v.insertions().into());
    m.insert("deletions".into(), v.deletions().into());
    if !exact {
        approximate.push("files");
    }
    if files == 0 && v.insertions() + v.deletions() == 0 {
        return;
    }
    let f = if files == 1 { "file" } else { "files" };
    words.push_str(&format!(
        "{sep}{}{} {f} changed, +{} −{}",
        if exact { "" } else { "≈" },
        thousands(files),
        thousands(v.insertions()),
        thousands(v.deletions())
    ));
}
