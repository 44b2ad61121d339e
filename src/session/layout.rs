//! A listing's facts in a run: the header's `layout` and its `rollup`
//! figures, and the summary line that says them in words, in place of the
//! family verdict a log gets (a listing has none: its lines are data).
//!
//! ```text
//! --- summary: 1,194 paths in 7 directories ---
//! --- summary: 619 entries (du) in 22 directories; total 1.9M ---
//! --- summary: 703 matches in 169 files; most in ./bash.1 (85) ---
//! ```

use crate::family::Severity;
use crate::render::facts::RunFacts;
use crate::render::layout as figures;
use crate::stream::layout::number::thousands;
use crate::stream::layout::paths::Source;
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
        Layout::Commits | Layout::Patch => return false,
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
