//! The `matches` layout: what `grep -n`/`-rn`/`-c`, `rg`, `git grep` and
//! `ag` print: `path:N:text` (also without the line number, with a column
//! after it, or after `REV:` for `git grep REV`), `path-N-text` context
//! lines and `--` separators, `path:N` counts (`grep -c`), and `N:text`
//! for one file.
//!
//! A compiler's diagnostic has the same start (`src/a.c:12:5: error: …`),
//! so a line whose text is a column then `: ` or a severity word is not a
//! match (it stays a signal line, as in a build log).
//!
//! Counted in bounded memory: matches, files (distinct, estimated past
//! 4,096 with `≈`), the files with most matches (each file's matches are
//! consecutive, as every such tool prints them, so a file's count is final
//! when the next file starts), the first match of files spread over the
//! input, and a spread of match lines.

use super::forms::{all_digits, diagnostic, digits_len, hex, path_ish, same_bytes};
use super::tables::{hash, Distinct, Spread, TopK};

/// Files with most matches kept.
pub const TOP: usize = 20;
/// Files whose first match is kept, spread over the input.
const FIRSTS: usize = 256;
/// Match lines kept, spread over the input.
const SPREAD: usize = 64;
/// Bytes of a path kept.
const PATH_BYTES: usize = 1024;

/// What one line of a match listing is.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    /// A matched line of the file at the span (empty: the only file).
    Match(usize, usize),
    /// `grep -c`: the file at the span and its count.
    Count(usize, usize, u64),
    Context,
    Separator,
}

#[derive(Debug)]
pub struct Matches {
    units: u64,
    matches: u64,
    context: u64,
    /// Files listed by `grep -c`, with or without matches.
    counted_files: u64,
    files: Distinct,
    /// Runs of consecutive lines of one file.
    runs: u64,
    cur: Vec<u8>,
    cur_active: bool,
    cur_count: u64,
    cur_first: u64,
    /// Files by their number of matches (the text is the path).
    pub top: TopK,
    /// The first match line of files (figure: the file's matches).
    pub firsts: Spread,
    /// Match lines, spread over the input.
    pub spread: Spread,
}

impl Default for Matches {
    fn default() -> Matches {
        Matches::new()
    }
}

impl Matches {
    pub fn new() -> Matches {
        Matches {
            units: 0,
            matches: 0,
            context: 0,
            counted_files: 0,
            files: Distinct::new(4096),
            runs: 0,
            cur: Vec::new(),
            cur_active: false,
            cur_count: 0,
            cur_first: 0,
            top: TopK::new(TOP),
            firsts: Spread::new(FIRSTS),
            spread: Spread::new(SPREAD),
        }
    }

    pub fn units(&self) -> u64 {
        self.units
    }

    /// Matched lines (and the counts `grep -c` printed).
    pub fn matches(&self) -> u64 {
        self.matches
    }

    pub fn context_lines(&self) -> u64 {
        self.context
    }

    /// Files with a match: the count and whether it is exact.
    pub fn files(&self) -> (u64, bool) {
        self.files.count()
    }

    /// Files `grep -c` listed, with a match or not.
    pub fn counted_files(&self) -> u64 {
        self.counted_files
    }

    /// One non-blank line (no terminator); true when it is part of the
    /// listing.
    pub fn line(&mut self, lineno: u64, line: &[u8]) -> bool {
        let Some(kind) = self.parse(line) else { return false };
        self.units += 1;
        match kind {
            Kind::Separator => {}
            Kind::Context => self.context += 1,
            Kind::Match(s, e) => {
                let path = &line[s..e];
                let path = &path[..path.len().min(PATH_BYTES)];
                if !self.cur_active || path.len() != self.cur.len() || !same_bytes(path, &self.cur) {
                    self.end_file();
                    self.cur.clear();
                    self.cur.extend_from_slice(path);
                    self.cur_active = true;
                    self.cur_first = lineno;
                    self.firsts.offer(lineno, line, 0);
                }
                self.cur_count += 1;
                self.matches += 1;
                if self.spread.wants(lineno) {
                    self.spread.offer(lineno, line, 0);
                }
            }
            Kind::Count(s, e, n) => {
                self.end_file();
                self.counted_files += 1;
                if n > 0 {
                    let path = &line[s..e];
                    self.matches += n;
                    self.runs += 1;
                    self.files.insert(hash(path));
                    self.top.offer(n, lineno, line, &line[s..e]);
                }
            }
        }
        true
    }

    /// The current file's run ended: its count is final.
    fn end_file(&mut self) {
        if !self.cur_active {
            return;
        }
        self.runs += 1;
        self.files.insert(hash(&self.cur));
        if self.top.wants(self.cur_count) {
            self.top.offer(self.cur_count, self.cur_first, &self.cur, &self.cur);
        }
        if let Some(f) = self.firsts.last_mut().filter(|f| f.line.lineno == self.cur_first) {
            f.figure = self.cur_count;
        }
        self.cur_active = false;
        self.cur_count = 0;
    }

    /// Ends the last file (at the end of the input).
    pub fn finish(&mut self) {
        self.end_file();
    }

    fn parse(&self, line: &[u8]) -> Option<Kind> {
        if line == b"--" {
            return Some(Kind::Separator);
        }
        if let Some(p) = line.strip_prefix(b"Binary file ").and_then(|r| r.strip_suffix(b" matches")) {
            let s = line.len() - b" matches".len() - p.len();
            return Some(Kind::Match(s, s + p.len()));
        }
        // `git grep REV`: `REV:path:N:text`.
        let mut base = 0;
        let first_colon = memchr::memchr(b':', line);
        let mut colon = first_colon;
        if let Some(c) = first_colon {
            if hex(&line[..c], 7, 64) {
                colon = memchr::memchr(b':', &line[c + 1..]);
                if colon.is_some() {
                    base = c + 1;
                } else {
                    colon = first_colon;
                }
            }
        }
        let body = &line[base..];
        // Most lines are the current file's: `path:N:text` or its context
        // `path-N-text`, told without looking at the path again (nor
        // comparing it, when the byte after it is neither).
        let n = self.cur.len();
        if self.cur_active && n > 0 && matches!(body.get(n), Some(b':' | b'-')) && same_bytes(&body[..n], &self.cur) {
            let rest = &body[n..];
            if context_tail(rest) {
                return Some(Kind::Context);
            }
            if let Some(r) = rest.strip_prefix(b":") {
                let d = digits_len(r);
                if d > 0 && r.get(d) == Some(&b':') {
                    return (!diagnostic(&r[d + 1..])).then_some(Kind::Match(base, base + n));
                }
            }
        }
        if let Some(c) = colon {
            let path = &body[..c];
            let rest = &body[c + 1..];
            if path_ish(path) {
                let d = digits_len(rest);
                if d > 0 && rest.get(d) == Some(&b':') {
                    return (!diagnostic(&rest[d + 1..])).then_some(Kind::Match(base, base + c));
                }
                if d > 0 && d == rest.len() {
                    let n = super::number::parse_u64(rest)?;
                    return Some(Kind::Count(base, base + c, n));
                }
                if rest.first() == Some(&b':') || diagnostic(rest) {
                    return None;
                }
                return Some(Kind::Match(base, base + c));
            }
            // `N:text`: one file's matches with their line numbers (never a
            // clock time, `12:34:56`).
            if base == 0 && all_digits(path) && path.len() <= 10 {
                let clock = path.len() <= 2 && digits_len(rest) == 2 && matches!(rest.get(2), Some(b':' | b'.'));
                return (!clock && !diagnostic(rest)).then_some(Kind::Match(0, 0));
            }
        }
        // Context lines of one file (`N-text`) after its matches, or of a
        // file not matched yet (`path-N-text` before the first match).
        if self.cur_active && self.cur.is_empty() {
            let d = digits_len(body);
            if d > 0 && body.get(d) == Some(&b'-') {
                return Some(Kind::Context);
            }
        }
        for k in memchr::memchr_iter(b'-', body) {
            if k > 0 && context_tail(&body[k..]) && path_ish(&body[..k]) {
                return Some(Kind::Context);
            }
        }
        None
    }
}

/// `-N-…`: what follows the path of a context line.
fn context_tail(rest: &[u8]) -> bool {
    let Some(r) = rest.strip_prefix(b"-") else { return false };
    let d = digits_len(r);
    d > 0 && r.get(d) == Some(&b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> (Matches, Vec<bool>) {
        let mut m = Matches::new();
        let units = text.lines().enumerate().map(|(i, l)| m.line(i as u64 + 1, l.as_bytes())).collect();
        m.finish();
        (m, units)
    }

    #[test]
    fn grep_rn_counts_matches_and_files() {
        let (m, units) = read("./a.rs:1:error here\n./a.rs:9:more\n./b/c.rs:3:x\n./a.rs:12:again\n");
        assert!(units.iter().all(|&u| u));
        assert_eq!(m.matches(), 4);
        assert_eq!(m.files(), (2, true));
        let top: Vec<(u64, &[u8])> = m.top.sorted().iter().map(|i| (i.value, &i.label[..])).collect();
        assert_eq!(top[0], (2, &b"./a.rs"[..]));
        let firsts: Vec<(u64, u64)> = m.firsts.items().iter().map(|f| (f.line.lineno, f.figure)).collect();
        assert_eq!(firsts, [(1, 2), (3, 1), (4, 1)]);
    }

    #[test]
    fn context_separators_counts_and_git_grep_revisions() {
        let (m, units) = read("src/my-x.rs-4-before\nsrc/my-x.rs:5:hit\nsrc/my-x.rs-6-after\n--\nsrc/b.rs:9:hit\n");
        assert_eq!(units, [true; 5]);
        assert_eq!((m.matches(), m.context_lines()), (2, 2));
        let (m, _) = read("./a:3\n./b:0\n./c:10\n");
        assert_eq!((m.matches(), m.files().0, m.counted_files()), (13, 2, 3));
        let (m, units) = read("be08cc8e1e2e:src/a.rs:3:x\nbe08cc8e1e2e:src/b.rs:4:y\n");
        assert_eq!(units, [true, true]);
        assert_eq!(m.top.sorted()[0].label, b"src/a.rs");
    }

    #[test]
    fn one_file_with_line_numbers() {
        let (m, units) = read("12:first\n13-context\n40:second\n");
        assert_eq!(units, [true, true, true]);
        assert_eq!((m.matches(), m.files().0), (2, 1));
    }

    #[test]
    fn diagnostics_and_logs_are_not_matches() {
        let (m, units) = read(
            "src/main.c:12:5: error: expected ';'\nmain.go:3:2: undefined: x\nx.py:12: error: bad\n\
             12:34:56 INFO started\ntests/test_a.py::test_x PASSED\nerror: could not compile\n\
             2024-01-01 12:00 a log line\n",
        );
        assert_eq!(units, [false; 7]);
        assert_eq!(m.matches(), 0);
    }
}
