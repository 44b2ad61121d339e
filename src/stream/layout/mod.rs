//! Layouts: what kind of listing the output is, recognised from its
//! content, and each listing's figures, counted while the scanner reads.
//!
//! A listing's lines are its *units* (a path, a match, a commit's lines):
//! their text is data, never a verdict, so file names, matched text,
//! commit messages and diff lines are never signal lines. Lines that are
//! not units (`find: '/x': Permission denied`, `fatal: bad revision`) stay
//! signal lines, as in a log.
//!
//! Detection is evidence over the whole stream, as for the families: each
//! layout's accumulator says of every line whether it is one of its units,
//! and at the end the layout whose units are most of the non-blank lines
//! (60%; 50% when the wrapped command is its tool) wins, in the order
//! commits/patch (`vcs`), matches, paths; otherwise the layout is `log` and the
//! envelope is today's. To keep a log's scan as fast as before, every
//! accumulator reads the first lines (the *window*: at least 1,000 lines
//! and 64 KiB, at most 1 MiB); one whose units are under 30% of them then
//! stops for good (it could not reach 60% without most of the rest), so a
//! log pays for layouts only in its first megabyte.
//!
//! The scanner hands over each region of complete lines before it searches
//! it for signal lines, and asks, for each signal line, whether it is a
//! unit of a layout still in play ([`Layouts::is_unit`]): one bit per line
//! of the region, set while reading it. Past the window, while the lines
//! so far make a listing, the scanner may leave units unclassified (see
//! `Scanner::allow_unit_skip`; a region of units alone is not searched at
//! all): classifying them was half the scan of a `grep -rn` listing, and
//! more than a third of a `find` listing's.

pub mod forms;
pub mod matches;
pub mod number;
pub mod paths;
pub mod tables;
pub mod vcs;

use memchr::memchr_iter;

use crate::stream::line::LineBody;
use crate::text::newlines::NewlineMap;

pub use matches::Matches;
pub use paths::Paths;
pub use vcs::Vcs;

/// The layout of an output (the header's `layout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// Anything else: the log/build envelope.
    #[default]
    Log,
    Paths,
    Matches,
    Commits,
    Patch,
}

impl Layout {
    pub fn as_str(self) -> &'static str {
        match self {
            Layout::Log => "log",
            Layout::Paths => "paths",
            Layout::Matches => "matches",
            Layout::Commits => "commits",
            Layout::Patch => "patch",
        }
    }

    pub fn is_listing(self) -> bool {
        self != Layout::Log
    }

    /// The layout a command's tool prints, from its words (`git log`,
    /// `rg`, `find`): a hint that lowers the share detection needs.
    pub fn of_command(command: &str) -> Option<Layout> {
        let words: Vec<&str> = command.split_whitespace().collect();
        let tool = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
        for (i, w) in words.iter().enumerate() {
            let t = tool(w);
            let next = words.get(i + 1).map(|s| s.as_ref()).unwrap_or("");
            let found = match t.as_str() {
                "git" => match next {
                    "log" | "show" | "whatchanged" | "reflog" => Some(Layout::Commits),
                    "diff" => Some(Layout::Patch),
                    "grep" => Some(Layout::Matches),
                    "ls-files" | "ls-tree" => Some(Layout::Paths),
                    _ => None,
                },
                "diff" => Some(Layout::Patch),
                "grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack" => Some(Layout::Matches),
                "find" | "fd" | "fdfind" | "ls" | "du" | "wc" | "tree" => Some(Layout::Paths),
                _ => None,
            };
            if found.is_some() {
                return found;
            }
        }
        None
    }
}

/// Lines the window holds at least.
const WINDOW_LINES: u64 = 1000;
/// Bytes the window holds at least.
const WINDOW_BYTES: u64 = 64 << 10;
/// Bytes of the line before a region kept (a `tree` root line).
const PREV_BYTES: usize = 4096;
/// Bytes the window holds at most.
const WINDOW_MAX: u64 = 1 << 20;
/// A layout whose units are under this share of the window stops.
const WINDOW_SHARE: f64 = 0.3;
/// The share a layout needs at the end; with its tool named, the lower.
const SHARE: f64 = 0.6;
const HINTED_SHARE: f64 = 0.5;

/// Every layout's accumulator, while it is in play.
#[derive(Debug)]
pub struct Layouts {
    paths: Option<Paths>,
    matches: Option<Matches>,
    vcs: Option<Vcs>,
    lines: u64,
    blank: u64,
    bytes: u64,
    window: bool,
    /// Bit `i`: line `first + i` of the region being read is a unit of a
    /// layout in play.
    bits: Vec<u64>,
    first: u64,
    /// The last line handed over alone, and whether it was a unit.
    alone: (u64, bool),
    /// The last line read, when the next region starts.
    prev: Vec<u8>,
}

impl Default for Layouts {
    fn default() -> Layouts {
        Layouts::new()
    }
}

impl Layouts {
    pub fn new() -> Layouts {
        Layouts {
            paths: Some(Paths::new()),
            matches: Some(Matches::new()),
            vcs: Some(Vcs::new()),
            lines: 0,
            blank: 0,
            bytes: 0,
            window: true,
            bits: Vec::new(),
            first: 0,
            alone: (0, false),
            prev: Vec::new(),
        }
    }

    /// Whether some listing layout is still possible.
    pub fn in_play(&self) -> bool {
        self.paths.is_some() || self.matches.is_some() || self.vcs.is_some()
    }

    /// Complete lines, each ending with `\n`, the first being `first`;
    /// `newlines`, the region's newlines when the scanner mapped them
    /// (a memchr call per line was a third of the layouts' cost per line).
    pub fn region(&mut self, region: &[u8], first: u64, newlines: Option<&NewlineMap>) {
        if !self.in_play() {
            return;
        }
        match newlines {
            Some(map) => self.lines(region, first, map.positions()),
            None => self.lines(region, first, memchr_iter(b'\n', region)),
        }
    }

    /// The region's lines, given where they end. A line's unit bit goes
    /// into a word that is pushed whole, and whether a layout is still in
    /// play is asked only when one may have stopped (when the window
    /// closes).
    fn lines(&mut self, region: &[u8], first: u64, ends: impl Iterator<Item = usize>) {
        self.first = first;
        self.bits.clear();
        let mut start = 0;
        let mut prev = (0, 0);
        let prev_line = std::mem::take(&mut self.prev);
        let mut word = 0u64;
        let mut count = 0usize;
        for nl in ends {
            let line = crate::stream::tail::strip_cr(&region[start..nl]);
            let before = if count == 0 { &prev_line[..] } else { &region[prev.0..prev.1] };
            let window = self.window;
            let unit = self.one(first + count as u64, line, before, nl + 1 - start);
            prev = (start, start + line.len());
            start = nl + 1;
            word |= (unit as u64) << (count % 64);
            count += 1;
            if count.is_multiple_of(64) {
                self.bits.push(word);
                word = 0;
            }
            if window && !self.window && !self.in_play() {
                break;
            }
        }
        if !count.is_multiple_of(64) {
            self.bits.push(word);
        }
        self.prev = prev_line;
        self.keep_prev(&region[prev.0..prev.1]);
    }

    /// Keeps the last line read (a bounded copy), for the line after it.
    fn keep_prev(&mut self, line: &[u8]) {
        self.prev.clear();
        self.prev.extend_from_slice(&line[..line.len().min(PREV_BYTES)]);
    }

    /// One line handed over alone (it spanned blocks; `body` without its
    /// terminator).
    pub fn line(&mut self, lineno: u64, body: LineBody) {
        if !self.in_play() {
            return;
        }
        let (head, len) = match body {
            LineBody::Whole(b) => (b, b.len() as u64),
            LineBody::Cut { prefix, bytes, .. } => (prefix, bytes),
        };
        let prev = std::mem::take(&mut self.prev);
        let unit = self.one(lineno, head, &prev, len as usize + 1);
        self.prev = prev;
        self.keep_prev(head);
        self.alone = (lineno, unit);
    }

    /// Whether every one of the `count` lines of the region just handed
    /// over is a unit of a layout in play.
    pub fn all_units(&self, count: u64) -> bool {
        if !self.in_play() || count == 0 {
            return false;
        }
        let (whole, rest) = ((count / 64) as usize, count % 64);
        self.bits.len() == whole + (rest > 0) as usize
            && self.bits[..whole].iter().all(|&w| w == u64::MAX)
            && (rest == 0 || self.bits[whole] == (1 << rest) - 1)
    }

    /// Whether the first lines (the window) are read: the layouts still in
    /// play are past their first test.
    pub fn window_read(&self) -> bool {
        !self.window
    }

    /// Whether line `lineno`, just handed over (in the current region or
    /// alone), is a unit of a layout in play.
    pub fn is_unit(&self, lineno: u64) -> bool {
        if !self.in_play() {
            return false;
        }
        if self.alone.0 == lineno {
            return self.alone.1;
        }
        let Some(i) = lineno.checked_sub(self.first) else { return false };
        let i = i as usize;
        self.bits.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    fn one(&mut self, lineno: u64, line: &[u8], prev: &[u8], len: usize) -> bool {
        self.lines += 1;
        self.bytes += len as u64;
        let mut unit = false;
        let indent = forms::indent(line);
        let blank = indent == line.len();
        // A patch's blank context line and a commit's blank lines move
        // its state: the commit reader sees every line.
        if let Some(v) = self.vcs.as_mut() {
            unit |= v.line(lineno, line, indent);
        }
        if blank {
            self.blank += 1;
            return unit;
        }
        if let Some(p) = self.paths.as_mut() {
            unit |= p.line(lineno, line, prev);
        }
        if let Some(m) = self.matches.as_mut() {
            unit |= m.line(lineno, line);
        }
        if self.window && ((self.lines >= WINDOW_LINES && self.bytes >= WINDOW_BYTES) || self.bytes >= WINDOW_MAX) {
            self.close_window();
        }
        unit
    }

    /// The window is read: layouts far from a majority stop.
    fn close_window(&mut self) {
        self.window = false;
        let considered = self.lines - self.blank;
        let low =
            |units: u64, neutral: u64| units == 0 || (units as f64) < WINDOW_SHARE * (considered - neutral) as f64;
        if self.paths.as_ref().is_some_and(|p| low(p.units(), p.neutral())) {
            self.paths = None;
        }
        if self.matches.as_ref().is_some_and(|m| low(m.units(), 0)) {
            self.matches = None;
        }
        if self.vcs.as_ref().is_some_and(|v| low(v.units(), 0)) {
            self.vcs = None;
        }
    }

    /// Ends the input.
    pub fn finish(&mut self) {
        if let Some(p) = self.paths.as_mut() {
            p.finish();
        }
        if let Some(m) = self.matches.as_mut() {
            m.finish();
        }
        if let Some(v) = self.vcs.as_mut() {
            v.finish();
        }
    }

    /// The layout of the whole input; `command` (wrap mode) may name the
    /// tool.
    pub fn decide(&self, command: Option<&str>) -> Layout {
        let considered = self.lines - self.blank;
        if considered == 0 {
            return Layout::Log;
        }
        let hint = command.and_then(Layout::of_command);
        // Neutral lines (one word) count neither way.
        let wins = |layout: Layout, units: u64, neutral: u64| {
            let need = if hint == Some(layout) { HINTED_SHARE } else { SHARE };
            units >= 2 && units as f64 >= need * (considered - neutral) as f64
        };
        if let Some(v) = self.vcs.as_ref() {
            let layout = if v.is_patch() { Layout::Patch } else { Layout::Commits };
            // `git show` names the commits' tool and prints a patch.
            let named = matches!(hint, Some(Layout::Commits | Layout::Patch));
            let need = if named { HINTED_SHARE } else { SHARE };
            // A commit or a hunk header is the evidence: `--- ` lines alone
            // are also Go's test results and separators.
            let evidence = v.commits() > 0 || v.hunks() > 0;
            if evidence && v.units() >= 2 && v.units() as f64 >= need * considered as f64 {
                return layout;
            }
        }
        if self.matches.as_ref().is_some_and(|m| wins(Layout::Matches, m.units(), 0)) {
            return Layout::Matches;
        }
        if self.paths.as_ref().is_some_and(|p| wins(Layout::Paths, p.units(), p.neutral())) {
            return Layout::Paths;
        }
        Layout::Log
    }

    pub fn paths(&self) -> Option<&Paths> {
        self.paths.as_ref()
    }

    pub fn matches(&self) -> Option<&Matches> {
        self.matches.as_ref()
    }

    pub fn vcs(&self) -> Option<&Vcs> {
        self.vcs.as_ref()
    }

    /// Non-blank lines read.
    pub fn considered(&self) -> u64 {
        self.lines - self.blank
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(text: &str, command: Option<&str>) -> Layout {
        let mut l = Layouts::new();
        l.region(text.as_bytes(), 1, None);
        l.finish();
        l.decide(command)
    }

    #[test]
    fn listings_are_told_from_logs() {
        assert_eq!(decide("./a.rs\n./b/c.rs\n./d\n", None), Layout::Paths);
        assert_eq!(decide("./a.rs:1:x\n./a.rs:2:y\n./b.rs:7:z\n", None), Layout::Matches);
        assert_eq!(decide("Compiling a\nerror: x\nwarning: y\n", None), Layout::Log);
        assert_eq!(decide("", None), Layout::Log);
        // Lines that start like a patch's file headers, and no hunk.
        assert_eq!(decide("--- tail 1/1 lines ---error\n--- tail 1/1 lines ---\n", None), Layout::Log);
        let go = "=== RUN   TestA\n--- PASS: TestA (0.00s)\n--- FAIL: TestB (0.01s)\n--- PASS: TestC (0.00s)\n";
        assert_eq!(decide(go, Some("go test -v ./...")), Layout::Log);
        // Half the lines: a log, unless the command is the tool.
        let half = "./a.rs\n./b.rs\nfind: '/x': Permission denied\nfind: '/y': Permission denied\n";
        assert_eq!(decide(half, None), Layout::Log);
        assert_eq!(decide(half, Some("find / -name x")), Layout::Paths);
    }

    #[test]
    fn each_line_of_a_region_is_told_unit_or_not() {
        let mut l = Layouts::new();
        let text = "./a.rs\nfind: '/x': Permission denied\n./b.rs\n";
        l.region(text.as_bytes(), 10, None);
        assert_eq!((10..13).map(|n| l.is_unit(n)).collect::<Vec<_>>(), [true, false, true]);
        l.line(13, LineBody::Whole(b"error: x"));
        assert!(!l.is_unit(13));
    }

    #[test]
    fn a_log_stops_every_accumulator_after_the_window() {
        let mut l = Layouts::new();
        let line = "2026-12-03 12:00:00 INFO request served in 12 ms\n".repeat(3000);
        l.region(line.as_bytes(), 1, None);
        assert!(!l.in_play());
        assert!(!l.is_unit(5));
        assert_eq!(l.decide(None), Layout::Log);
    }

    #[test]
    fn the_command_names_the_tool() {
        assert_eq!(Layout::of_command("git log --stat"), Some(Layout::Commits));
        assert_eq!(Layout::of_command("/usr/bin/find . -name x"), Some(Layout::Paths));
        assert_eq!(Layout::of_command("git -C x grep -n y"), Some(Layout::Matches));
        assert_eq!(Layout::of_command("cargo build"), None);
    }
}
