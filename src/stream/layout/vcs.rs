//! The `commits` and `patch` layouts: `git log` in its forms (default,
//! `--stat`, `--numstat`, `--name-only`, `--oneline`, `-p`, `--graph`),
//! `git show`, `git diff` and `diff -u`/`-ru`.
//!
//! One state machine reads every line: a commit's header (`commit <hash>`,
//! `Author:`, `Date:`, …), its message (indented four spaces), its files
//! (stat, numstat or name lines), and its patch: file headers, then hunks
//! whose lines are counted against the `@@ -a,b +c,d @@` header, so an
//! insertion is a `+` line inside a hunk, never a line that happens to
//! start with `+`. With `--graph`, the graph's columns (`* `, `| `, `|\`)
//! are taken off first. Every line the machine accepts is a unit.
//!
//! Counted in bounded memory: commits, their date range, authors (top ones
//! in a bounded table; distinct ones estimated past 4,096 with `≈`),
//! files (the most changed in a bounded table), insertions, deletions and
//! hunks; the newest and the oldest commit's header lines; commit (or,
//! for a patch, file) headers spread over the input for the envelope's
//! picks.

use super::forms::{all_digits, blank, digits_len, hex, path_ish};
use super::number::parse_u64;
use super::tables::{hash, Distinct, Row, Spread, Table, PIECE};
use crate::stream::line::{LineBody, StoredLine};

/// Author rows kept.
const AUTHORS: usize = 256;
/// File rows kept.
const FILES: usize = 1024;
/// Units whose header is kept, spread over the input.
const PICKS: usize = 128;
/// Header lines kept per unit.
const HEADER_LINES: usize = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between units, or in a commit's file list.
    Outside,
    /// After `commit <hash>`: `Author:`, `Date:`, … lines.
    Header,
    /// The message, indented four spaces.
    Message,
    /// Inside a hunk: `old` and `new` lines still to come.
    Hunk,
}

/// A unit's header lines (a commit's `commit`, `Merge:`, `Author:`,
/// `Date:` lines and its subject). The current commit's is rewritten in
/// place, its buffers reused: no allocation per commit.
#[derive(Debug, Clone, Default)]
pub struct Header {
    lines: Vec<StoredLine>,
    len: usize,
}

impl Header {
    fn clear(&mut self) {
        self.len = 0;
    }

    fn push(&mut self, lineno: u64, line: &[u8]) {
        if self.len == HEADER_LINES {
            return;
        }
        match self.lines.get_mut(self.len) {
            Some(l) => l.set(lineno, LineBody::Whole(line), PIECE),
            None => self.lines.push(StoredLine::new(lineno, LineBody::Whole(line), PIECE)),
        }
        self.len += 1;
    }

    pub fn lines(&self) -> &[StoredLine] {
        &self.lines[..self.len]
    }

    pub fn first_lineno(&self) -> Option<u64> {
        self.lines().first().map(|l| l.lineno)
    }

    /// A copy holding only its lines.
    fn kept(&self) -> Header {
        Header { lines: self.lines().to_vec(), len: self.len }
    }
}

/// A day, `yyyymmdd`.
pub type Day = u32;

#[derive(Debug)]
pub struct Vcs {
    units: u64,
    state: State,
    graph: bool,
    commits: u64,
    /// Commits in `--oneline` form.
    onelines: u64,
    first_day: Option<Day>,
    last_day: Option<Day>,
    pub authors: Table,
    authors_distinct: Distinct,
    /// The last author read, and its hash.
    last_author: (Vec<u8>, u64),
    /// Per file: commits touching it (`count`), `plus`, `minus`, hunks
    /// (`own`), changes from a stat line (`sum`).
    pub files: Table,
    files_distinct: Distinct,
    insertions: u64,
    deletions: u64,
    hunks: u64,
    /// File diffs seen (`diff --git`, `--- a/x`).
    diffs: u64,
    /// The current commit: its header, whether its subject is seen, its
    /// counts from a stat summary and from its patch.
    cur: Header,
    subject: bool,
    stat: Option<(u64, u64)>,
    stat_files: u64,
    patch: (u64, u64),
    patched: bool,
    pub newest: Option<Header>,
    pub oldest: Option<Header>,
    /// The file being diffed: its path, counts, hunks.
    file: Vec<u8>,
    file_open: bool,
    file_counts: (u64, u64, u64),
    /// Hunk lines to come.
    old: u64,
    new: u64,
    /// Commit headers spread over the input (their first line), and
    /// beside each its header lines.
    pub picks: Spread,
    pub pick_headers: Vec<(u64, Header)>,
    /// File headers (`diff --git …`) spread over the input; `figure`:
    /// the file's `plus << 32 | minus`.
    pub file_picks: Spread,
    file_line: u64,
}

impl Default for Vcs {
    fn default() -> Vcs {
        Vcs::new()
    }
}

impl Vcs {
    pub fn new() -> Vcs {
        Vcs {
            units: 0,
            state: State::Outside,
            graph: false,
            commits: 0,
            onelines: 0,
            first_day: None,
            last_day: None,
            authors: Table::new(AUTHORS),
            authors_distinct: Distinct::new(4096),
            last_author: (Vec::new(), hash(b"")),
            files: Table::new(FILES),
            files_distinct: Distinct::new(4096),
            insertions: 0,
            deletions: 0,
            hunks: 0,
            diffs: 0,
            cur: Header::default(),
            subject: false,
            stat: None,
            stat_files: 0,
            patch: (0, 0),
            patched: false,
            newest: None,
            oldest: None,
            file: Vec::new(),
            file_open: false,
            file_counts: (0, 0, 0),
            old: 0,
            new: 0,
            picks: Spread::new(PICKS),
            pick_headers: Vec::new(),
            file_picks: Spread::new(PICKS),
            file_line: 0,
        }
    }

    pub fn units(&self) -> u64 {
        self.units
    }

    pub fn commits(&self) -> u64 {
        self.commits
    }

    /// The first and last day of the commits' dates (`yyyymmdd`).
    pub fn days(&self) -> Option<(Day, Day)> {
        Some((self.first_day?, self.last_day?))
    }

    pub fn authors(&self) -> (u64, bool) {
        self.authors_distinct.count()
    }

    /// Files changed: the count and whether it is exact.
    pub fn files_changed(&self) -> (u64, bool) {
        self.files_distinct.count()
    }

    pub fn insertions(&self) -> u64 {
        self.insertions
    }

    pub fn deletions(&self) -> u64 {
        self.deletions
    }

    pub fn hunks(&self) -> u64 {
        self.hunks
    }

    /// File diffs seen.
    pub fn diffs(&self) -> u64 {
        self.diffs
    }

    /// Whether the input is a patch (no commit, or `git show`'s one commit
    /// with its patch) rather than a list of commits.
    pub fn is_patch(&self) -> bool {
        self.commits == 0 || (self.commits == 1 && self.diffs > 0)
    }

    /// Whether line `lineno` is kept as a pick's header line.
    pub fn header_of(&self, lineno: u64) -> Option<&Header> {
        self.pick_headers.iter().find(|(n, _)| *n == lineno).map(|(_, h)| h)
    }

    /// One line (no terminator) whose first `indent` bytes are blanks
    /// (all of them: a blank line). True when it is part of the listing.
    #[inline]
    pub fn line(&mut self, lineno: u64, line: &[u8], indent: usize) -> bool {
        let unit = match self.common(line, indent) {
            Some(unit) => unit,
            None => self.read(lineno, line),
        };
        if unit && indent < line.len() {
            self.units += 1;
        }
        unit
    }

    /// Most lines of a `git log -p`: a hunk's line, or a message line
    /// after the subject. Read here as `read` would, without its calls;
    /// None leaves the line to `read`, untouched.
    #[inline]
    fn common(&mut self, line: &[u8], indent: usize) -> Option<bool> {
        if self.graph || (self.commits == 0 && line.starts_with(b"* ")) {
            return None;
        }
        match self.state {
            State::Hunk => self.hunk_line(line).then_some(true),
            State::Message if self.subject && line.starts_with(b"    ") && !line[indent..].starts_with(b"commit ") => {
                Some(true)
            }
            _ => None,
        }
    }

    fn read(&mut self, lineno: u64, raw: &[u8]) -> bool {
        // `--graph`: known from the first commit, drawn as `* `.
        let graphed = self.graph || (self.commits == 0 && raw.starts_with(b"* "));
        let line = if graphed { strip_graph(raw) } else { raw };
        if self.state == State::Hunk {
            if self.hunk_line(line) {
                return true;
            }
            // A hunk cut short: read the line afresh.
            self.state = State::Outside;
        }
        let t = trim_start(line);
        if let Some(rest) = t.strip_prefix(b"commit ") {
            let h = &rest[..rest.iter().position(|&b| b == b' ').unwrap_or(rest.len())];
            if hex(h, 7, 64) {
                if !self.graph && self.commits == 0 && raw.starts_with(b"* ") {
                    self.graph = true;
                }
                self.start_commit(lineno, raw);
                self.state = State::Header;
                return true;
            }
        }
        match self.state {
            State::Header => {
                if line.is_empty() || blank(line) {
                    self.state = State::Message;
                    return true;
                }
                if let Some(c) = memchr::memchr(b':', t).filter(|&c| c > 0 && t[0].is_ascii_uppercase()) {
                    let value = trim_start(&t[c + 1..]);
                    match &t[..c] {
                        b"Author" => self.author(value),
                        b"Date" | b"AuthorDate" => self.date(value),
                        _ => {}
                    }
                    self.cur.push(lineno, raw);
                    return true;
                }
                self.state = State::Outside;
            }
            State::Message => {
                if let Some(m) = line.strip_prefix(b"    ") {
                    if !self.subject && !blank(m) {
                        self.subject = true;
                        self.cur.push(lineno, raw);
                        self.keep_commit_header();
                    }
                    return true;
                }
                if line.is_empty() {
                    self.state = State::Outside;
                    return true;
                }
                self.state = State::Outside;
            }
            State::Outside | State::Hunk => {}
        }
        if line.is_empty() {
            return true;
        }
        // A message whose blank lines lost their indent: still the message
        // while the commit has no file yet.
        if self.commits > 0 && self.subject && line.starts_with(b"    ") && !self.file_open && self.stat.is_none() {
            return true;
        }
        self.outside(lineno, raw, line, t)
    }

    /// A line of a hunk; false when it cannot be one.
    #[inline]
    fn hunk_line(&mut self, line: &[u8]) -> bool {
        match line.first() {
            // An empty line: a context line whose blank was trimmed.
            None | Some(b' ') => {
                self.old = self.old.saturating_sub(1);
                self.new = self.new.saturating_sub(1);
            }
            Some(b'+') => {
                self.new = self.new.saturating_sub(1);
                self.file_counts.0 += 1;
            }
            Some(b'-') => {
                self.old = self.old.saturating_sub(1);
                self.file_counts.1 += 1;
            }
            Some(b'\\') => {}
            _ => return false,
        }
        if self.old == 0 && self.new == 0 {
            self.state = State::Outside;
        }
        true
    }

    /// Lines between units and in a commit's file list and patch.
    fn outside(&mut self, lineno: u64, raw: &[u8], line: &[u8], t: &[u8]) -> bool {
        if line.starts_with(b"diff ") {
            let path = match line.strip_prefix(b"diff --git ") {
                Some(r) => memchr::memmem::rfind(r, b" b/").map_or(r, |k| &r[k + 3..]),
                None => last_field(line),
            };
            self.start_file(lineno, raw, path);
            return true;
        }
        if let Some(r) = line.strip_prefix(b"--- ") {
            if !self.file_open || self.file_counts != (0, 0, 0) {
                let path = diff_u_path(r);
                self.start_file(lineno, raw, path);
            }
            return true;
        }
        if let Some(r) = line.strip_prefix(b"+++ ") {
            let path = diff_u_path(r);
            if path != b"/dev/null" && self.file_open {
                self.file.clear();
                self.file.extend_from_slice(path);
            }
            return true;
        }
        if line.starts_with(b"@@") {
            return self.hunk(line);
        }
        const FILE_HEADERS: [&[u8]; 13] = [
            b"index ",
            b"new file mode ",
            b"deleted file mode ",
            b"old mode ",
            b"new mode ",
            b"similarity index ",
            b"dissimilarity index ",
            b"rename from ",
            b"rename to ",
            b"copy from ",
            b"copy to ",
            b"Binary files ",
            b"GIT binary patch",
        ];
        if FILE_HEADERS.iter().any(|h| line.starts_with(h)) || line.starts_with(b"Only in ") {
            return true;
        }
        // `--oneline`: `<hash> subject`, maybe decorated.
        if let Some(sp) = memchr::memchr(b' ', t) {
            let h = &t[..sp];
            // A hash of letters only (`dfefedf`, one in a thousand) is
            // taken once the log is known to be one line a commit.
            let hash = hex(h, 7, 40) && (self.onelines > 0 || h.iter().any(u8::is_ascii_digit));
            if hash && (sp == t.len() - 1 || t[sp + 1] != b'|') {
                if !self.graph && self.commits == 0 && raw.starts_with(b"* ") {
                    self.graph = true;
                }
                self.start_commit(lineno, raw);
                self.onelines += 1;
                self.subject = true;
                self.keep_commit_header();
                return true;
            }
        }
        if self.stat_line(line) || self.numstat_line(line) {
            return true;
        }
        // `--name-only` / `--name-status` in a commit's file list.
        if self.commits > 0 {
            let name = match line.get(1) {
                Some(b'\t') if line[0].is_ascii_uppercase() => &line[2..],
                _ => line,
            };
            if path_ish(name) {
                self.touch(name, 0, 0, 0);
                return true;
            }
        }
        false
    }

    fn start_commit(&mut self, lineno: u64, raw: &[u8]) {
        self.end_commit();
        self.commits += 1;
        self.cur.clear();
        self.cur.push(lineno, raw);
        self.subject = false;
        self.stat = None;
        self.stat_files = 0;
        self.patch = (0, 0);
        self.patched = false;
    }

    /// The commit's header is complete (its subject is read): the newest
    /// unit, a pick sample, and for now the oldest.
    fn keep_commit_header(&mut self) {
        if self.newest.is_none() {
            self.newest = Some(self.cur.kept());
        }
        let first = self.cur.first_lineno().unwrap_or(0);
        if !self.picks.wants(first) {
            return;
        }
        if let Some(l) = self.cur.lines().first() {
            let text = match l.body() {
                LineBody::Whole(b) => b,
                LineBody::Cut { prefix, .. } => prefix,
            };
            if self.picks.offer(first, text, 0) {
                self.pick_headers.retain(|(n, _)| self.picks.items().iter().any(|s| s.line.lineno == *n));
                self.pick_headers.push((first, self.cur.kept()));
            }
        }
    }

    fn end_commit(&mut self) {
        self.end_file();
        if self.commits == 0 {
            return;
        }
        let (ins, del) = if self.patched { self.patch } else { self.stat.unwrap_or((0, 0)) };
        self.insertions += ins;
        self.deletions += del;
    }

    fn author(&mut self, value: &[u8]) {
        // Commits in a row are often one author's: the hash, a multiply a
        // byte, is taken again only for another one.
        let key = match &self.last_author {
            (name, key) if name[..] == *value => *key,
            _ => {
                let key = hash(value);
                self.last_author.0.clear();
                self.last_author.0.extend_from_slice(value);
                self.last_author.1 = key;
                key
            }
        };
        self.authors_distinct.insert(key);
        self.authors.row(key, value).count += 1;
    }

    fn date(&mut self, value: &[u8]) {
        if let Some(d) = parse_day(value) {
            self.first_day = Some(self.first_day.map_or(d, |f| f.min(d)));
            self.last_day = Some(self.last_day.map_or(d, |l| l.max(d)));
        }
    }

    fn start_file(&mut self, lineno: u64, raw: &[u8], path: &[u8]) {
        self.end_file();
        self.diffs += 1;
        self.file_open = true;
        self.file.clear();
        self.file.extend_from_slice(path);
        self.file_counts = (0, 0, 0);
        self.file_line = lineno;
        self.file_picks.offer(lineno, raw, 0);
    }

    fn end_file(&mut self) {
        if !self.file_open {
            return;
        }
        self.file_open = false;
        let (plus, minus, hunks) = self.file_counts;
        self.patched = true;
        self.patch.0 += plus;
        self.patch.1 += minus;
        if self.commits == 0 {
            self.insertions += plus;
            self.deletions += minus;
        }
        // A commit listed with `--stat -p` has its files from the stat.
        if self.stat_files == 0 {
            let file = std::mem::take(&mut self.file);
            self.touch(&file, plus, minus, hunks);
            self.file = file;
        }
        let line = self.file_line;
        if let Some(s) = self.file_picks.last_mut().filter(|s| s.line.lineno == line) {
            s.figure = plus.min(u32::MAX as u64) << 32 | minus.min(u32::MAX as u64);
        }
    }

    /// A file changed: `plus`, `minus` lines in `hunks` hunks. Its row,
    /// for a stat line's changes.
    fn touch(&mut self, path: &[u8], plus: u64, minus: u64, hunks: u64) -> &mut Row {
        let key = hash(path);
        self.files_distinct.insert(key);
        let row = self.files.row(key, path);
        row.count += 1;
        row.plus += plus;
        row.minus += minus;
        row.own = Some(row.own.unwrap_or(0) + hunks);
        row
    }

    /// `@@ -a,b +c,d @@` (or `@@@ … @@@` for a merge's combined diff).
    fn hunk(&mut self, line: &[u8]) -> bool {
        let ats = line.iter().take_while(|&&b| b == b'@').count();
        let rest = &line[ats..];
        let end = memchr::memmem::find(rest, &line[..ats]).unwrap_or(rest.len());
        let mut old = 0;
        let mut new = 0;
        for f in rest[..end].split(|&b| b == b' ').filter(|f| !f.is_empty()) {
            let count = |r: &[u8]| match memchr::memchr(b',', r) {
                Some(k) => parse_u64(&r[k + 1..]),
                None => parse_u64(r).map(|_| 1),
            };
            match f[0] {
                b'-' if old == 0 => old = count(&f[1..]).unwrap_or(0),
                b'+' => new = count(&f[1..]).unwrap_or(0),
                b'-' => {}
                _ => return false,
            }
        }
        self.hunks += 1;
        self.file_counts.2 += 1;
        // A combined diff's lines carry one column per parent: counted as
        // lines of the result only.
        if ats > 2 {
            old = new;
        }
        self.old = old;
        self.new = new;
        if old + new > 0 {
            self.state = State::Hunk;
        }
        true
    }

    /// ` path | 12 ++--`, ` path | Bin 0 -> 12 bytes`, and the summary
    /// ` 3 files changed, 10 insertions(+), 2 deletions(-)`.
    fn stat_line(&mut self, line: &[u8]) -> bool {
        let Some(t) = line.strip_prefix(b" ") else { return false };
        let bar = memchr::memchr_iter(b'|', t).find(|&k| k > 0 && t[k - 1] == b' ' && t.get(k + 1) == Some(&b' '));
        if let Some(k) = bar.map(|k| k - 1) {
            let after = trim_start(&t[k + 3..]);
            let d = digits_len(after);
            let changes = parse_u64(&after[..d]);
            let ok =
                (d > 0 && after[d..].iter().all(|&b| matches!(b, b' ' | b'+' | b'-'))) || after.starts_with(b"Bin");
            if !ok {
                return false;
            }
            let path = trim_end(trim_start(&t[..k]));
            self.stat_files += 1;
            let row = self.touch(path, 0, 0, 0);
            if let Some(c) = changes {
                row.sum += c;
            }
            return true;
        }
        let t = trim_start(t);
        let d = digits_len(t);
        if d == 0 || !(t[d..].starts_with(b" file changed") || t[d..].starts_with(b" files changed")) {
            return false;
        }
        let mut ins = 0;
        let mut del = 0;
        for part in t.split(|&b| b == b',').skip(1) {
            let p = trim_start(part);
            let n = parse_u64(&p[..digits_len(p)]).unwrap_or(0);
            if p[digits_len(p)..].starts_with(b" insertion") {
                ins = n;
            } else if p[digits_len(p)..].starts_with(b" deletion") {
                del = n;
            }
        }
        self.stat = Some((ins, del));
        if self.commits == 0 {
            // `git diff --stat`.
            self.insertions += ins;
            self.deletions += del;
        }
        true
    }

    /// `--numstat`: `12\t3\tpath` (`-\t-\tpath` for a binary file).
    fn numstat_line(&mut self, line: &[u8]) -> bool {
        let mut it = line.splitn(3, |&b| b == b'\t');
        let (Some(a), Some(b), Some(path)) = (it.next(), it.next(), it.next()) else { return false };
        let num = |f: &[u8]| {
            if f == b"-" {
                Some(0)
            } else if all_digits(f) {
                parse_u64(f)
            } else {
                None
            }
        };
        let (Some(plus), Some(minus)) = (num(a), num(b)) else { return false };
        if path.is_empty() {
            return false;
        }
        self.touch(path, plus, minus, 0);
        let s = self.stat.get_or_insert((0, 0));
        s.0 += plus;
        s.1 += minus;
        if self.commits == 0 {
            self.insertions += plus;
            self.deletions += minus;
        }
        true
    }

    /// Ends the last commit and file (at the end of the input).
    pub fn finish(&mut self) {
        self.end_commit();
        if self.commits == 0 {
            self.end_file();
        }
        // The last commit read is the oldest (git lists newest first).
        if self.cur.len > 0 {
            self.oldest = Some(self.cur.kept());
        }
    }
}

fn trim_start(b: &[u8]) -> &[u8] {
    &b[b.iter().position(|&c| c != b' ' && c != b'\t').unwrap_or(b.len())..]
}

fn trim_end(b: &[u8]) -> &[u8] {
    &b[..b.iter().rposition(|&c| c != b' ').map_or(0, |k| k + 1)]
}

fn last_field(line: &[u8]) -> &[u8] {
    let t = trim_end(line);
    &t[t.iter().rposition(|&b| b == b' ').map_or(0, |k| k + 1)..]
}

/// The path of a `--- ` / `+++ ` line: up to a tab (diff -u's date), a
/// leading `a/` or `b/` taken off.
fn diff_u_path(r: &[u8]) -> &[u8] {
    let p = &r[..memchr::memchr(b'\t', r).unwrap_or(r.len())];
    if p == b"/dev/null" {
        return p;
    }
    p.strip_prefix(b"a/").or_else(|| p.strip_prefix(b"b/")).unwrap_or(p)
}

/// The line without `--graph`'s columns: a graph character (`*|/\_`)
/// followed by a space or by another graph character, repeatedly, so
/// that the four-space indent of a message survives.
fn strip_graph(line: &[u8]) -> &[u8] {
    const GRAPH: &[u8] = b"*|/\\_";
    let mut i = 0;
    while i < line.len() && GRAPH.contains(&line[i]) {
        match line.get(i + 1) {
            Some(b' ') => i += 2,
            Some(c) if GRAPH.contains(c) => i += 1,
            None => i += 1,
            _ => break,
        }
    }
    &line[i..]
}

/// A commit's date as git prints it, to a day: the default (`Thu Dec 3
/// 19:13:53 2026 +0000`), `--date=rfc` (`Thu, 3 Dec 2026 …`), `iso`,
/// `iso-strict` and `short` (`2026-12-03…`). None for relative and raw
/// dates.
pub fn parse_day(v: &[u8]) -> Option<Day> {
    if v.len() >= 10
        && all_digits(&v[..4])
        && v[4] == b'-'
        && all_digits(&v[5..7])
        && v[7] == b'-'
        && all_digits(&v[8..10])
    {
        let n = |a: usize, b: usize| parse_u64(&v[a..b]).unwrap_or(0) as u32;
        return Some(n(0, 4) * 10000 + n(5, 7) * 100 + n(8, 10));
    }
    default_day(v).or_else(|| token_day(v))
}

/// A date's day from its tokens: a month's name, the first four-digit
/// number (the year), the first one- or two-digit number (the day).
fn token_day(v: &[u8]) -> Option<Day> {
    const MONTHS: [&[u8]; 12] =
        [b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec"];
    let (mut y, mut m, mut d) = (None, None, None);
    for tok in v.split(|&b| b == b' ' || b == b',').filter(|t| !t.is_empty()) {
        if let Some(i) = MONTHS.iter().position(|mm| *mm == tok) {
            m = Some(i as u32 + 1);
        } else if all_digits(tok) && tok.len() == 4 && y.is_none() {
            y = parse_u64(tok).map(|x| x as u32);
        } else if all_digits(tok) && tok.len() <= 2 && d.is_none() {
            d = parse_u64(tok).map(|x| x as u32);
        }
    }
    Some(y? * 10000 + m? * 100 + d?)
}

/// git's default date, `Thu Dec 3 19:13:53 2026 +0000`, read by its
/// columns (splitting it into tokens was 2% of a `git log -p` scan); None
/// for any other form, left to [`token_day`], which reads this one to the
/// same day.
fn default_day(v: &[u8]) -> Option<Day> {
    const MONTHS: &[u8; 36] = b"JanFebMarAprMayJunJulAugSepOctNovDec";
    let digits = |b: &[u8]| b.iter().all(u8::is_ascii_digit);
    let [w0, w1, w2, b' ', m0, m1, m2, b' ', rest @ ..] = v else { return None };
    if ![w0, w1, w2].iter().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let month = MONTHS.chunks(3).position(|m| m == [*m0, *m1, *m2])? as u32 + 1;
    let day_len = memchr::memchr(b' ', rest).filter(|&k| (1..=2).contains(&k))?;
    let (day, rest) = (&rest[..day_len], &rest[day_len + 1..]);
    let [h0, h1, b':', n0, n1, b':', s0, s1, b' ', y0, y1, y2, y3, zone @ ..] = rest else { return None };
    let zone_ok = match zone {
        [] => true,
        [b' ', b'+' | b'-', z @ ..] => z.len() == 4 && digits(z),
        _ => false,
    };
    if !digits(day) || !digits(&[*h0, *h1, *n0, *n1, *s0, *s1, *y0, *y1, *y2, *y3]) || !zone_ok {
        return None;
    }
    let year = parse_u64(&[*y0, *y1, *y2, *y3])? as u32;
    Some(year * 10000 + month * 100 + parse_u64(day)? as u32)
}

/// `20261203` → `2026-12-03`.
pub fn day_text(d: Day) -> String {
    format!("{:04}-{:02}-{:02}", d / 10000, d / 100 % 100, d % 100)
}

#[cfg(test)]
mod tests {
    use super::super::forms::indent;
    use super::*;

    fn read(text: &str) -> (Vcs, Vec<bool>) {
        let mut v = Vcs::new();
        let units =
            text.lines().enumerate().map(|(i, l)| v.line(i as u64 + 1, l.as_bytes(), indent(l.as_bytes()))).collect();
        v.finish();
        (v, units)
    }

    const LOG_P: &str = "commit 1111111111111111111111111111111111111111
Author: Ann <ann@x.org>
Date:   Thu Dec 3 19:13:53 2026 +0000

    Fix the error path

diff --git a/src/a.rs b/src/a.rs
index 1234567..89abcde 100644
--- a/src/a.rs
+++ b/src/a.rs
@@ -1,3 +1,4 @@
 fn a() {
-    panic!(\"error\");
+    return;
+    // error handled
 }

commit 2222222222222222222222222222222222222222
Author: Bob <bob@x.org>
Date:   Mon Nov 30 08:00:00 2026 +0000

    First

diff --git a/README b/README
new file mode 100644
--- /dev/null
+++ b/README
@@ -0,0 +1 @@
+hello
";

    #[test]
    fn a_log_with_patches_is_read_line_by_line() {
        let (v, units) = read(LOG_P);
        assert!(units.iter().all(|&u| u), "{units:?}");
        assert_eq!(v.commits(), 2);
        assert_eq!(v.days(), Some((20261130, 20261203)));
        assert_eq!(v.authors(), (2, true));
        assert_eq!((v.insertions(), v.deletions(), v.hunks()), (3, 1, 2));
        assert_eq!(v.files_changed(), (2, true));
        assert_eq!(v.newest.as_ref().unwrap().lines().len(), 4);
        let oldest = v.oldest.as_ref().unwrap();
        assert_eq!(oldest.first_lineno(), Some(18));
        assert!(!v.is_patch());
    }

    #[test]
    fn a_plus_line_outside_a_hunk_is_not_a_unit() {
        let (v, units) = read("+ not a diff\nerror: something\n");
        assert_eq!(units, [false, false]);
        assert_eq!(v.insertions(), 0);
    }

    #[test]
    fn stat_oneline_and_graph_forms() {
        let (v, units) = read(
            "* 3f8d7f6 Docs: the README cut\n* dfefedf Lints\n|  README.md | 12 ++--\n|  2 files changed, 10 insertions(+), 2 deletions(-)\n",
        );
        assert_eq!(units, [true, true, true, true]);
        assert_eq!((v.commits(), v.insertions(), v.deletions()), (2, 10, 2));
        // A stat line's changes land in its file's row.
        let readme = v.files.get(hash(b"README.md")).unwrap();
        assert_eq!((readme.count, readme.sum), (1, 12));
        let (v, units) = read(
            "* commit 1111111\n| Author: A <a@b>\n| Date:   Thu Dec 3 19:13:53 2026 +0000\n| \n|     Subject\n| \n*   commit 2222222\n|\\  Merge: 1 2\n| | Author: A <a@b>\n",
        );
        assert!(units.iter().all(|&u| u), "{units:?}");
        assert_eq!(v.commits(), 2);
        assert_eq!(v.newest.as_ref().unwrap().lines().len(), 4);
    }

    #[test]
    fn diff_u_is_a_patch() {
        let (v, units) = read(
            "diff -ru old/a.rs new/a.rs\n--- old/a.rs\t2026-12-03 08:51:21 +0000\n+++ new/a.rs\t2026-12-03 19:13:53 +0000\n@@ -8,2 +8,3 @@\n x\n-y\n+z\n+w\nOnly in new: b.rs\n",
        );
        assert!(units.iter().all(|&u| u), "{units:?}");
        assert!(v.is_patch());
        assert_eq!((v.insertions(), v.deletions(), v.diffs()), (2, 1, 1));
        assert_eq!(v.files.rows()[0].label, b"new/a.rs");
    }

    #[test]
    fn days_from_every_date_format() {
        for (d, want) in [
            ("Thu Dec 3 19:13:53 2026 +0000", Some(20261203)),
            ("Thu, 3 Dec 2026 19:13:53 +0000", Some(20261203)),
            ("2026-12-03 19:13:53 +0000", Some(20261203)),
            ("2026-12-03T19:13:53+00:00", Some(20261203)),
            ("3 days ago", None),
        ] {
            assert_eq!(parse_day(d.as_bytes()), want, "{d}");
        }
        assert_eq!(day_text(20261203), "2026-12-03");
    }

    #[test]
    fn the_default_date_read_by_columns_is_the_day_its_tokens_give() {
        for d in [
            "Thu Dec 3 19:13:53 2026 +0000",
            "Mon Nov 30 08:00:00 2026 -0500",
            "Sat Jan 1 00:00:00 2000",
            // A month's name where the weekday is: the later one counts.
            "Mar Feb 29 12:00:00 2024 +0100",
            "Tue Sep 09 23:59:59 1999 +1400",
        ] {
            let day = default_day(d.as_bytes());
            assert!(day.is_some(), "{d}");
            assert_eq!(day, token_day(d.as_bytes()), "{d}");
        }
        for d in [
            "Thu, 3 Dec 2026 19:13:53 +0000",
            "Thu Dec  3 19:13:53 2026 +0000",
            "Thu Dec 3 19:13:53 2026 Jan",
            "Thu Dec 3 19:13:53 2026 +0000 Jan",
            "Thu Dec 123 19:13:53 2026 +0000",
            "Thu Dec 3 19:13 2026 +0000",
            "3 days ago",
        ] {
            assert_eq!(default_day(d.as_bytes()), None, "{d}");
        }
    }
}
