//! The `paths` layout: listings of files, one entry a line, as `find`,
//! `git ls-files`, `fd`, `ls -l`/`-R`/`-laR`, `du`, `wc` (with its `total`
//! lines) and `tree` print them.
//!
//! Per entry (in bounded memory): the count; its number column when the
//! tool prints one (ls's size, du's size with `-h` units understood, wc's
//! first count) into the largest ones ([`TopK`]); its directory and its
//! top-level directory into bounded tables (entries, sum, largest, and a
//! directory's own figure: du's line for it). Total lines (`wc`'s `N
//! total`, `ls`'s `total N`, `du -c`'s `N total`, `tree`'s `N directories,
//! M files`) are counted and summed, the first and last kept whole.
//!
//! The top level is the first component below the *root*, the longest
//! directory prefix every entry shares (`ja/` for `find ja`, `./` for
//! `find . -name '*.rs'`). It is only known at the end, so it is kept
//! as it shrinks: when an entry outside it arrives, every row so far lies
//! under one component of the new root, and they fold into that row.
//!
//! Consecutive entries share their directories (every tool lists a
//! directory's entries together), so an entry only extends the current run
//! of its directory; a table row is touched when the run ends.

use std::collections::VecDeque;

use super::forms::{
    all_digits, arrow, colon_space, fields, has_tab, parent, path_ish, path_ish_with, same_bytes, Facts,
};
use super::number::parse_size;
use super::tables::{finish, fnv, hash, Distinct, Table, TopK, FNV_START};

/// Largest entries kept (the envelope shows as many as fit, at least 5).
pub const LARGEST: usize = 20;
/// Directory rows kept.
const DIRS: usize = 1024;
/// Top-level rows kept.
const TOPS: usize = 512;
/// Total lines kept at each end.
const TOTALS_KEPT: usize = 3;
/// Bytes of a directory or a path kept to compare and key by.
const PATH_BYTES: usize = 4096;
/// Bytes of a total line kept.
const TOTAL_BYTES: usize = 600;

/// Which tool's rows a listing holds (names its number column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// One path a line (find, git ls-files, fd, ls -1).
    Bare,
    Ls,
    Du,
    Wc,
    Tree,
}

const SOURCES: [Source; 5] = [Source::Bare, Source::Ls, Source::Du, Source::Wc, Source::Tree];

impl Source {
    /// What its number column holds.
    pub fn column(self) -> &'static str {
        match self {
            Source::Wc => "count",
            _ => "size",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Source::Bare => "paths",
            Source::Ls => "ls",
            Source::Du => "du",
            Source::Wc => "wc",
            Source::Tree => "tree",
        }
    }
}

/// A directory's current run of entries.
#[derive(Debug, Default)]
struct Run {
    key: Vec<u8>,
    /// `hash(key)`, taken once when the run starts, and the FNV state it
    /// is finished from (a subdirectory's goes on from it).
    hash: u64,
    fnv: u64,
    active: bool,
    count: u64,
    sum: u64,
    max: u64,
    own: Option<u64>,
}

/// Total lines: counted and summed; the first and last kept.
#[derive(Debug, Default)]
pub struct Totals {
    pub lines: u64,
    pub sum: u64,
    /// Lines whose figure was read.
    pub summed: u64,
    pub first: Vec<(u64, Vec<u8>)>,
    pub last: VecDeque<(u64, Vec<u8>)>,
}

impl Totals {
    fn add(&mut self, lineno: u64, line: &[u8], value: Option<u64>) {
        self.lines += 1;
        if let Some(v) = value {
            self.sum = self.sum.saturating_add(v);
            self.summed += 1;
        }
        let kept = line[..line.len().min(TOTAL_BYTES)].to_vec();
        if self.first.len() < TOTALS_KEPT {
            self.first.push((lineno, kept));
            return;
        }
        if self.last.len() == TOTALS_KEPT {
            self.last.pop_front();
        }
        self.last.push_back((lineno, kept));
    }

    /// The kept total lines in order.
    pub fn kept(&self) -> impl Iterator<Item = &(u64, Vec<u8>)> {
        self.first.iter().chain(self.last.iter())
    }
}

/// du's last entry: when it is the root, it is the listing's total.
#[derive(Debug, Default, Clone)]
pub struct LastEntry {
    pub lineno: u64,
    pub text: Vec<u8>,
    pub path: Vec<u8>,
}

#[derive(Debug)]
pub struct Paths {
    units: u64,
    neutral: u64,
    entries: u64,
    numbered: u64,
    forms: [u64; 5],
    with_units: bool,
    pub totals: Totals,
    pub largest: TopK,
    tops: Table,
    dirs: Table,
    /// Distinct directories (the table keeps only the busiest).
    dirs_distinct: Distinct,
    /// The directory prefix every entry shares, with its `/` (empty when
    /// none); `None` before the first entry.
    root: Option<Vec<u8>>,
    /// `ls -R`: the directory of the rows that follow, with its `/`.
    cur_dir: Vec<u8>,
    /// `tree`: the root line above the rows, with its `/`, and the names
    /// of the directories the current row is under.
    tree_root: Vec<u8>,
    tree: Vec<Vec<u8>>,
    /// Scratch: an entry's whole path.
    path: Vec<u8>,
    /// The line before was a bare path (a `tree` root, when rows follow).
    prev_bare: bool,
    dir_run: Run,
    /// The directory run before `dir_run`, and its key's FNV state: `find`
    /// lists a subdirectory's line among its parent's entries, so runs go
    /// parent, child, parent, next child, and the parent's hash is this one.
    dir_before: (Vec<u8>, Option<u64>),
    /// `dir_run`'s key is the directory of a plain path (see
    /// [`Paths::next_in_dir`]).
    plain_dir: bool,
    top_run: Run,
    /// Entries that are the root itself (find's first line), and the last
    /// one's figure: they belong under the root's component once the root
    /// moves up.
    at_root: Run,
    last_du: LastEntry,
}

impl Default for Paths {
    fn default() -> Paths {
        Paths::new()
    }
}

impl Paths {
    pub fn new() -> Paths {
        Paths {
            units: 0,
            neutral: 0,
            entries: 0,
            numbered: 0,
            forms: [0; 5],
            with_units: false,
            totals: Totals::default(),
            largest: TopK::new(LARGEST),
            tops: Table::new(TOPS),
            dirs: Table::new(DIRS),
            dirs_distinct: Distinct::new(4096),
            root: None,
            cur_dir: Vec::new(),
            tree_root: Vec::new(),
            tree: Vec::new(),
            path: Vec::new(),
            prev_bare: false,
            dir_run: Run::default(),
            dir_before: (Vec::new(), None),
            plain_dir: false,
            top_run: Run::default(),
            at_root: Run::default(),
            last_du: LastEntry::default(),
        }
    }

    /// Lines read as part of the listing (entries, totals, headings).
    pub fn units(&self) -> u64 {
        self.units
    }

    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Entries whose number column was read.
    pub fn numbered(&self) -> u64 {
        self.numbered
    }

    /// Whether sizes were printed with units (`du -h`, `ls -lh`).
    pub fn with_units(&self) -> bool {
        self.with_units
    }

    /// The tool whose rows are most of the listing.
    pub fn source(&self) -> Source {
        let i = (0..SOURCES.len()).max_by_key(|&i| (self.forms[i], std::cmp::Reverse(i))).unwrap_or(0);
        SOURCES[i]
    }

    pub fn root(&self) -> &[u8] {
        self.root.as_deref().unwrap_or(&[])
    }

    /// Directory rows (entries directly in each directory).
    pub fn dirs(&self) -> &Table {
        &self.dirs
    }

    /// Top-level rows (entries anywhere below each first component).
    pub fn tops(&self) -> &Table {
        &self.tops
    }

    /// du's last entry, which is its root (the total) when du listed one
    /// tree.
    pub fn last_du(&self) -> Option<&LastEntry> {
        (self.last_du.lineno > 0).then_some(&self.last_du)
    }

    /// One non-blank line (no terminator), after `prev` (the line before
    /// it, when there is one); true when it is part of the listing.
    #[inline]
    pub fn line(&mut self, lineno: u64, line: &[u8], prev: &[u8]) -> bool {
        if self.next_in_dir(line) {
            self.units += 1;
            return true;
        }
        match self.read(lineno, line, prev) {
            Some(true) => self.units += 1,
            Some(false) => self.neutral += 1,
            None => return false,
        }
        true
    }

    /// Most lines of `find`, `fd` and `git ls-files`: a plain path (no tab,
    /// colon, space or control byte) in the directory of the plain path
    /// before it, below the root. Such a line is a bare entry that only
    /// extends the runs (`read_unit`'s first branch, then `place`'s first
    /// case), and all of that is known from the directory already read:
    /// only the name after it is looked at. True when the line was counted
    /// so; false leaves it to [`Paths::read`], untouched.
    #[inline]
    fn next_in_dir(&mut self, line: &[u8]) -> bool {
        let fits = self.plain_dir
            && line.len() <= PATH_BYTES
            && self.below_dir_run(line)
            && plain_name(&line[self.dir_run.key.len()..]);
        if !fits {
            return false;
        }
        self.prev_bare = true;
        self.forms[Source::Bare as usize] += 1;
        self.entries += 1;
        add(&mut self.dir_run, 0, false);
        add(&mut self.top_run, 0, false);
        true
    }

    /// Lines that fit a listing but prove nothing (one word: `src`,
    /// `Makefile`, also `y` from `yes` and `12` from `seq`): they are not
    /// counted for or against the layout.
    pub fn neutral(&self) -> u64 {
        self.neutral
    }

    /// Some(true) for a unit, Some(false) for a neutral line, None for
    /// a line that is not part of a listing. Kept out of line: inlined,
    /// its frame's set-up was paid by every line `next_in_dir` counts.
    #[inline(never)]
    fn read(&mut self, lineno: u64, line: &[u8], prev: &[u8]) -> Option<bool> {
        let bare = std::mem::take(&mut self.prev_bare);
        let unit = self.read_unit(lineno, line, prev, bare);
        if unit {
            return Some(true);
        }
        // `ls -R src`'s first heading.
        if let Some(dir) = line.strip_suffix(b":").filter(|d| !d.is_empty() && word(d)) {
            self.heading(dir);
            return Some(false);
        }
        if !word(line) {
            return None;
        }
        self.bare(lineno, line);
        Some(false)
    }

    /// A bare path (or word); it may be the root line of a `tree` that
    /// follows (see `tree_row`).
    fn bare(&mut self, lineno: u64, line: &[u8]) {
        self.prev_bare = true;
        self.forms[Source::Bare as usize] += 1;
        self.entry(lineno, line, None, (0, line.len()), Full::Listed);
    }

    fn read_unit(&mut self, lineno: u64, line: &[u8], prev: &[u8], prev_bare: bool) -> bool {
        // A line with no tab, colon or space (one SIMD pass) can only be a
        // bare path: most lines of `find`, `git ls-files`, `fd` need no
        // other test.
        let facts = Facts::of(line);
        if facts.plain() {
            if !path_ish_with(line, facts) {
                return false;
            }
            self.bare(lineno, line);
            // The run's directory is a prefix of this line (`place` keeps
            // or starts the run of its parent): plain too.
            self.plain_dir = true;
            return true;
        }
        let b0 = line[0];
        if ls_perms(line) {
            self.ls_row(lineno, line);
            return true;
        }
        if let Some(v) = line.strip_prefix(b"total ").or_else(|| line.strip_prefix("合計 ".as_bytes())) {
            if !v.contains(&b' ') {
                let value = self.size(v);
                self.totals.add(lineno, line, value);
                return true;
            }
        }
        if b0.is_ascii_digit() {
            if let Some(tab) = memchr::memchr(b'\t', line) {
                return self.du_row(lineno, line, tab);
            }
            if tree_summary(line) {
                // Directories and files: two counts, no one figure.
                self.totals.add(lineno, line, None);
                return true;
            }
        }
        if b0.is_ascii_digit() || b0 == b' ' {
            if let Some(at) = wc_path(line) {
                return self.wc_row(lineno, line, at);
            }
        }
        if let Some((depth, name)) = tree_row(line) {
            if prev_bare {
                // The first row: the line above is the tree's root.
                self.tree_root.clear();
                self.tree_root.extend_from_slice(&prev[..prev.len().min(PATH_BYTES - 1)]);
                self.tree_root.push(b'/');
                self.tree.clear();
            }
            self.tree_row(lineno, line, depth, name);
            return true;
        }
        if has_tab(line, facts) || colon_space(line, facts) {
            return false;
        }
        if let Some(dir) = line.strip_suffix(b":") {
            if path_ish(dir) {
                self.heading(dir);
                return true;
            }
            return false;
        }
        if !path_ish_with(line, facts) {
            return false;
        }
        self.bare(lineno, line);
        true
    }

    /// `ls -R`: the directory of the rows that follow.
    fn heading(&mut self, dir: &[u8]) {
        self.cur_dir.clear();
        self.cur_dir.extend_from_slice(&dir[..dir.len().min(PATH_BYTES - 1)]);
        self.cur_dir.push(b'/');
    }

    fn size(&mut self, tok: &[u8]) -> Option<u64> {
        let (v, unit) = parse_size(tok)?;
        self.with_units |= unit;
        Some(v)
    }

    fn ls_row(&mut self, lineno: u64, line: &[u8]) {
        self.forms[Source::Ls as usize] += 1;
        let mut f = [(0usize, 0usize); 12];
        let mut n = 0;
        for span in fields(line).take(f.len()) {
            f[n] = span;
            n += 1;
        }
        let field = |i: usize| &line[f[i].0..f[i].1];
        // The date follows the size; the usual row (links, owner, group,
        // size) has it at field 5 when the month is not an English one.
        let date = (3..n).find(|&i| month(field(i)) || iso_date(field(i)));
        let Some(d) = date.or((n >= 9 && all_digits(field(4))).then_some(5)) else {
            self.entry(lineno, line, None, (0, 0), Full::Skip);
            return;
        };
        let device = matches!(line[0], b'c' | b'b');
        let value = if device { None } else { self.size(field(d - 1)) };
        let name_field = if iso_date(field(d)) {
            // long-iso: date time; full-iso: date time zone.
            if d + 2 < n && matches!(field(d + 2)[0], b'+' | b'-') && d + 3 < n {
                d + 3
            } else {
                d + 2
            }
        } else {
            d + 3
        };
        if name_field >= n {
            self.entry(lineno, line, None, (0, 0), Full::Skip);
            return;
        }
        let start = f[name_field].0;
        let end = arrow(&line[start..]).map_or(line.len(), |k| start + k);
        let name = &line[start..end];
        let ranked = line[0] != b'd';
        let mut path = std::mem::take(&mut self.path);
        path.clear();
        path.extend_from_slice(&self.cur_dir);
        path.extend_from_slice(&name[..name.len().min(PATH_BYTES)]);
        let dots = name == b"." || name == b"..";
        let value = value.filter(|_| ranked);
        self.entry(lineno, line, value, (start, end), if dots { Full::Skip } else { Full::Path(&path) });
        self.path = path;
    }

    fn du_row(&mut self, lineno: u64, line: &[u8], tab: usize) -> bool {
        let Some(value) = self.size(&line[..tab]) else { return false };
        let path = &line[tab + 1..];
        if path.is_empty() {
            return false;
        }
        self.forms[Source::Du as usize] += 1;
        if path == b"total" {
            self.totals.add(lineno, line, Some(value));
            return true;
        }
        self.last_du.lineno = lineno;
        self.last_du.text.clear();
        self.last_du.text.extend_from_slice(&line[..line.len().min(TOTAL_BYTES)]);
        self.last_du.path.clear();
        self.last_du.path.extend_from_slice(&path[..path.len().min(PATH_BYTES)]);
        self.entry(lineno, line, Some(value), (tab + 1, line.len()), Full::Listed);
        true
    }

    fn wc_row(&mut self, lineno: u64, line: &[u8], at: usize) -> bool {
        let first = fields(line).next().map(|(s, e)| &line[s..e]);
        let value = first.and_then(|t| self.size(t));
        self.forms[Source::Wc as usize] += 1;
        let path = &line[at..];
        if path == b"total" {
            self.totals.add(lineno, line, value);
        } else {
            self.entry(lineno, line, value, (at, line.len()), Full::Listed);
        }
        true
    }

    fn tree_row(&mut self, lineno: u64, line: &[u8], depth: usize, name_at: usize) {
        self.forms[Source::Tree as usize] += 1;
        let mut name = &line[name_at..];
        // `tree -s` / `-h`: `[  4096]  name`.
        let mut value = None;
        if name.first() == Some(&b'[') {
            if let Some(k) = memchr::memchr(b']', name) {
                value = self.size(std::str::from_utf8(&name[1..k]).unwrap_or("").trim().as_bytes());
                let rest = &name[k + 1..];
                name = &rest[rest.iter().position(|&b| b != b' ').unwrap_or(rest.len())..];
            }
        }
        let name = match arrow(name) {
            Some(k) => &name[..k],
            None => name,
        };
        let start = line.len() - name.len();
        self.tree.truncate(depth.saturating_sub(1));
        let mut path = std::mem::take(&mut self.path);
        path.clear();
        path.extend_from_slice(&self.tree_root);
        for d in &self.tree {
            path.extend_from_slice(d);
            path.push(b'/');
        }
        path.extend_from_slice(&name[..name.len().min(PATH_BYTES)]);
        self.entry(lineno, line, value, (start, start + name.len()), Full::Path(&path));
        if self.tree.len() < 64 {
            self.tree.push(name[..name.len().min(255)].to_vec());
        }
        self.path = path;
    }

    /// An entry: `span` is its path in `line` (for the largest ones);
    /// `full` says where its whole path is, for the directory tables.
    fn entry(&mut self, lineno: u64, line: &[u8], value: Option<u64>, span: (usize, usize), full: Full) {
        self.entries += 1;
        if let Some(v) = value {
            self.numbered += 1;
            if self.largest.wants(v) {
                let label = match full {
                    Full::Path(p) => p,
                    _ => &line[span.0..span.1],
                };
                self.largest.offer(v, lineno, line, label);
            }
        }
        let full = match full {
            Full::Listed => &line[span.0..span.1],
            Full::Path(p) => p,
            Full::Skip => return,
        };
        let full = &full[..full.len().min(PATH_BYTES)];
        self.place(full, value.unwrap_or(0));
    }

    /// Whether `path` lies below the directory run's directory, itself
    /// below the root (so under the same top level, not its own line).
    fn below_dir_run(&self, path: &[u8]) -> bool {
        let d = &self.dir_run.key;
        self.dir_run.active
            && self.top_run.active
            && d.len() > self.root.as_ref().map_or(usize::MAX, Vec::len)
            && path.len() > d.len()
            && same_bytes(&path[..d.len()], d)
    }

    /// Adds an entry to its directory's and its top level's runs.
    fn place(&mut self, full: &[u8], value: u64) {
        // The common case: in the directory of the entry before, below the
        // root (so under the same top level, not its own line).
        if self.below_dir_run(full) && memchr::memchr(b'/', &full[self.dir_run.key.len()..]).is_none() {
            add(&mut self.dir_run, value, false);
            add(&mut self.top_run, value, false);
            return;
        }
        self.widen_root(full);
        let root_len = self.root().len();
        // The component below the root; none for the root itself.
        let below = full.get(root_len..).unwrap_or(&[]);
        if !below.is_empty() {
            let (comp, own) = match memchr::memchr(b'/', below) {
                Some(k) => (&below[..k], false),
                None => (below, true),
            };
            if !self.top_run.active || self.top_run.key != comp {
                flush(&mut self.top_run, &mut self.tops);
                start(&mut self.top_run, comp, fnv(FNV_START, comp));
            }
            add(&mut self.top_run, value, own);
        } else {
            add(&mut self.at_root, value, true);
        }
        let dir = parent(full);
        if !self.dir_run.active || self.dir_run.key != dir {
            self.start_dir(dir);
        }
        add(&mut self.dir_run, value, false);
    }

    /// Ends the directory run and starts the one of `dir`.
    fn start_dir(&mut self, dir: &[u8]) {
        let run = &self.dir_run;
        let state = match self.dir_before {
            (ref k, Some(state)) if k[..] == *dir => state,
            // The run's subdirectory, the next run of a `find` listing:
            // its hash goes on from the run's, over its name alone.
            _ if run.active && dir.len() > run.key.len() && same_bytes(&dir[..run.key.len()], &run.key) => {
                fnv(run.fnv, &dir[run.key.len()..])
            }
            _ => fnv(FNV_START, dir),
        };
        if self.dir_run.active {
            flush(&mut self.dir_run, &mut self.dirs);
            // The ended run's key becomes the one before; the buffers swap.
            std::mem::swap(&mut self.dir_before.0, &mut self.dir_run.key);
            self.dir_before.1 = Some(self.dir_run.fnv);
        }
        start(&mut self.dir_run, dir, state);
        self.plain_dir = false;
        if !dir.is_empty() {
            self.dirs_distinct.insert(self.dir_run.hash);
        }
    }

    /// Directories holding entries (a named one, or the current one when
    /// no entry names one), and whether the count is exact.
    pub fn directories(&self) -> (u64, bool) {
        self.dirs_distinct.count()
    }

    /// Shrinks the root so that `full` is under it (or is it).
    fn widen_root(&mut self, full: &[u8]) {
        let Some(root) = self.root.as_mut() else {
            let mut r = full.to_vec();
            r.push(b'/');
            self.root = Some(r);
            return;
        };
        let inside = full.len() >= root.len() && full.starts_with(root) || {
            full.len() + 1 == root.len() && root.starts_with(full) && root.last() == Some(&b'/')
        };
        if inside {
            return;
        }
        let common = root.iter().zip(full.iter().chain(std::iter::once(&b'/'))).take_while(|(a, b)| a == b).count();
        let new_len = memchr::memrchr(b'/', &root[..common]).map_or(0, |k| k + 1);
        // Every row so far is under the old root: under one component of
        // the new one.
        let old_below = &root[new_len..];
        let comp = &old_below[..memchr::memchr(b'/', old_below).unwrap_or(old_below.len())];
        let comp = comp.to_vec();
        // The old root itself is the component (not something below it):
        // its own entries are the component's own line.
        let is_comp = old_below.len() == comp.len() + 1;
        root.truncate(new_len);
        flush(&mut self.top_run, &mut self.tops);
        self.tops.merge_all(hash(&comp), &comp);
        let at_root = std::mem::take(&mut self.at_root);
        if at_root.count > 0 {
            let row = self.tops.row(hash(&comp), &comp);
            row.count += at_root.count;
            row.sum = row.sum.saturating_add(at_root.sum);
            row.max = row.max.max(at_root.max);
            if is_comp {
                row.own = at_root.own;
            }
        }
    }

    /// Ends the runs (at the end of the input).
    pub fn finish(&mut self) {
        flush(&mut self.top_run, &mut self.tops);
        flush(&mut self.dir_run, &mut self.dirs);
    }
}

/// Where an entry's whole path is.
#[derive(Clone, Copy)]
enum Full<'a> {
    /// The path as listed (find, du, wc).
    Listed,
    /// Put together from a heading (ls -R, tree).
    Path(&'a [u8]),
    /// Not in the directory tables (ls's `.` and `..`, unread rows).
    Skip,
}

/// Starts a run of `key`, whose FNV state is `state`.
fn start(run: &mut Run, key: &[u8], state: u64) {
    run.key.clear();
    run.key.extend_from_slice(key);
    run.fnv = state;
    run.hash = finish(state);
    run.active = true;
}

fn add(run: &mut Run, value: u64, own: bool) {
    run.count += 1;
    run.sum = run.sum.saturating_add(value);
    run.max = run.max.max(value);
    if own {
        run.own = Some(value);
    }
}

fn flush(run: &mut Run, table: &mut Table) {
    if !run.active {
        return;
    }
    let row = table.row(run.hash, &run.key);
    row.count += run.count;
    row.sum = row.sum.saturating_add(run.sum);
    row.max = row.max.max(run.max);
    if run.own.is_some() {
        row.own = run.own;
    }
    run.active = false;
    run.count = 0;
    run.sum = 0;
    run.max = 0;
    run.own = None;
}

/// `ls -l`'s first field: a type and nine permission characters, maybe an
/// ACL or attribute mark, then a space.
fn ls_perms(line: &[u8]) -> bool {
    line.len() > 11
        && b"-dlcbpsD".contains(&line[0])
        && line[1..10].iter().all(|c| b"rwxsStTlL-".contains(c))
        && (line[10] == b' ' || (b".+@".contains(&line[10]) && line[11] == b' '))
}

/// A month as ls prints it: `Dec` (C and English locales), or a number
/// then `月`.
fn month(f: &[u8]) -> bool {
    const MONTHS: [&[u8]; 12] =
        [b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec"];
    MONTHS.contains(&f) || (f.ends_with("月".as_bytes()) && all_digits(&f[..f.len() - 3]))
}

/// Whether a name (what follows its directory) holds no blank, control
/// byte, colon or `/`: [`NOT_IN_NAME`] eight bytes at a time (a byte at a
/// time, the loop's exit was mispredicted on most lines), the last eight
/// overlapping the ones before.
#[inline]
fn plain_name(name: &[u8]) -> bool {
    let n = name.len();
    if n < 8 {
        return !name.iter().any(|&b| NOT_IN_NAME[b as usize]);
    }
    let word = |at: usize| u64::from_le_bytes(name[at..at + 8].try_into().expect("eight bytes"));
    let mut at = 0;
    while at + 8 < n {
        if word_not_in_name(word(at)) {
            return false;
        }
        at += 8;
    }
    !word_not_in_name(word(n - 8))
}

/// Whether one of the eight bytes of `w` is one [`NOT_IN_NAME`] holds:
/// under `!`, `:`, `/` or DEL. Each test is exact for the word as a whole
/// (the borrow of a subtraction only runs past a byte that already hit).
#[inline]
fn word_not_in_name(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGH != 0;
    below(w, b'!' as u64)
        || below(w ^ (ONES * b':' as u64), 1)
        || below(w ^ (ONES * b'/' as u64), 1)
        || below(w ^ (ONES * 0x7f), 1)
}

/// The bytes [`plain_name`] refuses.
static NOT_IN_NAME: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b <= b' ' {
        t[b as usize] = true;
        b += 1;
    }
    t[b':' as usize] = true;
    t[b'/' as usize] = true;
    t[0x7f] = true;
    t
};

/// One word that could be a name (`src`, `Makefile`): no blank, no
/// control character, not a flag or a heading.
fn word(line: &[u8]) -> bool {
    line.len() <= 255 && line[0] != b'-' && line.last() != Some(&b':') && !line.iter().any(|&b| b <= b' ' || b == 0x7f)
}

/// `2024-01-31`, possibly followed by more (`T12:00`).
fn iso_date(f: &[u8]) -> bool {
    f.len() >= 10
        && all_digits(&f[..4])
        && f[4] == b'-'
        && all_digits(&f[5..7])
        && f[7] == b'-'
        && all_digits(&f[8..10])
}

/// `tree`'s last line: `23 directories, 96 files` (or either alone).
fn tree_summary(line: &[u8]) -> bool {
    let d = super::forms::digits_len(line);
    let rest = &line[d..];
    rest.starts_with(b" director") || rest.starts_with(b" file")
}

/// Where wc's path starts: after one to four counts (`   2789 ./a.rs`,
/// `  12  40 300 a.rs`), when what follows reads as a path or `total`.
fn wc_path(line: &[u8]) -> Option<usize> {
    let mut counts = 0;
    for (s, e) in fields(line) {
        let f = &line[s..e];
        if all_digits(f) && counts < 4 {
            counts += 1;
            continue;
        }
        if counts == 0 {
            return None;
        }
        let rest = &line[s..];
        return (rest == b"total" || rest == b"-" || path_ish(rest)).then_some(s);
    }
    None
}

/// A `tree` row: its depth and where its name starts. Each level is four
/// columns: `│   ` (with no-break spaces in UTF-8 mode) or four spaces
/// above, `├── ` or `└── ` for the entry itself (`|-- `, `` `-- `` in
/// ASCII mode).
fn tree_row(line: &[u8]) -> Option<(usize, usize)> {
    const BRANCHES: [&[u8]; 4] = ["├── ".as_bytes(), "└── ".as_bytes(), b"|-- ", b"`-- "];
    let mut i = 0;
    let mut depth = 0;
    loop {
        let rest = &line[i..];
        if let Some(b) = BRANCHES.iter().find(|b| rest.starts_with(b)) {
            let at = i + b.len();
            return (at < line.len()).then_some((depth + 1, at));
        }
        let skip = if let Some(r) = rest.strip_prefix("│".as_bytes()).or_else(|| rest.strip_prefix(b"|")) {
            // three columns of spaces or no-break spaces
            let mut k = rest.len() - r.len();
            for _ in 0..3 {
                if rest[k..].starts_with(b" ") {
                    k += 1;
                } else if rest[k..].starts_with("\u{a0}".as_bytes()) {
                    k += 2;
                } else {
                    return None;
                }
            }
            k
        } else if rest.starts_with(b"    ") {
            4
        } else {
            return None;
        };
        i += skip;
        depth += 1;
        if depth > 64 {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Paths {
        let mut p = Paths::new();
        let mut prev = "";
        for (i, l) in text.lines().enumerate() {
            if !l.trim().is_empty() {
                p.line(i as u64 + 1, l.as_bytes(), prev.as_bytes());
            }
            prev = l;
        }
        p.finish();
        p
    }

    fn top(p: &Paths) -> Vec<(String, u64)> {
        p.tops.top(10, |r| r.count).iter().map(|r| (String::from_utf8_lossy(&r.label).into_owned(), r.count)).collect()
    }

    #[test]
    fn find_output_rolls_up_below_its_root() {
        let p = read("ja\nja/man5\nja/man5/a.5.gz\nja/man5/b.5.gz\nja/man1\nja/man1/ls.1.gz\n");
        assert_eq!(p.entries(), 6);
        assert_eq!(p.root(), b"ja/");
        assert_eq!(top(&p), [("man5".to_string(), 3), ("man1".to_string(), 2)]);
        assert_eq!(p.source(), Source::Bare);
    }

    #[test]
    fn the_root_moves_up_and_earlier_rows_fold_under_it() {
        let p = read("./a/x/1.rs\n./a/x/2.rs\n./a/y/3.rs\n./b/4.rs\n");
        assert_eq!(p.root(), b"./");
        assert_eq!(top(&p), [("a".to_string(), 3), ("b".to_string(), 1)]);
    }

    #[test]
    fn du_sizes_with_units_and_its_root_line() {
        let p = read("4.0K\tz/r/CET\n516K\tz/r/America/x\n520K\tz/r/America\n1.9M\tz/r\n");
        assert!(p.with_units());
        assert_eq!(p.source(), Source::Du);
        let largest: Vec<u64> = p.largest.sorted().iter().map(|i| i.value).collect();
        assert_eq!(largest[0], (1.9 * 1048576.0) as u64);
        assert_eq!(p.last_du().unwrap().path, b"z/r");
        assert_eq!(p.root(), b"z/r/");
        let america = p.tops.get(hash(b"America")).unwrap();
        assert_eq!((america.count, america.own), (2, Some(520 << 10)));
    }

    #[test]
    fn wc_totals_are_counted_and_summed() {
        let p = read("   10 ./a.rs\n  200 ./b/c.rs\n  210 total\n    5 ./d.rs\n    5 total\n");
        assert_eq!(p.source(), Source::Wc);
        assert_eq!((p.totals.lines, p.totals.sum), (2, 215));
        assert_eq!(p.largest.sorted()[0].line.lineno, 2);
        assert_eq!(p.entries(), 3);
    }

    #[test]
    fn ls_rows_give_their_size_and_name() {
        let p = read(
            "src:\ntotal 12\n-rw-r--r-- 1 root root   949 Mar 12  2023 accessdb.8.gz\n\
             drwxr-xr-x 2 root root  4096 Dec  3 19:07 .\n\
             -rw-r--r--. 1 u g 1.5K 2024-01-02 10:00 my file.txt\n\
             lrwxrwxrwx 1 u g 7 Jan  1 00:00 l -> target\n",
        );
        assert_eq!(p.source(), Source::Ls);
        assert_eq!(p.entries(), 4);
        assert_eq!(p.totals.lines, 1);
        let l: Vec<(u64, &[u8])> = p.largest.sorted().iter().map(|i| (i.value, &i.label[..])).collect();
        assert_eq!(l, [(1536, &b"src/my file.txt"[..]), (949, b"src/accessdb.8.gz"), (7, b"src/l")]);
        let dirs: Vec<_> =
            p.dirs.rows().iter().map(|r| (String::from_utf8_lossy(&r.label).into_owned(), r.count)).collect();
        assert_eq!(dirs, [("src/".to_string(), 3)]);
    }

    #[test]
    fn tree_rows_know_their_directory() {
        let p = read(
            "crate\n├── Cargo.toml\n├── src\n│\u{a0}\u{a0} ├── lib.rs\n│\u{a0}\u{a0} └── util\n│\u{a0}\u{a0}     └── x.rs\n└── tests\n\n3 directories, 3 files\n",
        );
        assert_eq!(p.source(), Source::Tree);
        assert_eq!(p.totals.lines, 1);
        assert_eq!(p.dirs.get(hash(b"crate/src/util/")).unwrap().count, 1);
        // src's own line, lib.rs, util and util/x.rs.
        assert_eq!(top(&p)[0], ("src".to_string(), 4));
    }

    #[test]
    fn log_lines_are_not_entries() {
        let mut p = Paths::new();
        for l in ["Compiling foo v0.1.0", "error: could not compile", "/usr/bin/ld: cannot find -lx", "200 OK"] {
            assert!(!p.line(1, l.as_bytes(), b""), "{l}");
        }
        // One word may be a name: it counts neither way.
        assert!(p.line(2, b"done", b""));
        assert_eq!((p.units(), p.neutral()), (0, 1));
    }

    /// A listing as `find` prints it (a directory's line, then its
    /// entries, then its subdirectories), with what breaks the shortcut of
    /// `next_in_dir` mixed in: names with a space, a colon, a tab, a control
    /// byte or a leading `-`, a directory named with a space, lines past
    /// `PATH_BYTES`, a second root, du and ls -R rows, tree rows, bare
    /// words, blank lines and error lines. Deterministic for a seed.
    fn listing(seed: u64, lines: usize) -> Vec<u8> {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        const NAMES: [&str; 13] = [
            "a.rs",
            "lib.rs",
            "x",
            "README.md",
            "my file.txt",
            "a:b",
            "t\tab",
            "\x1b[0mred",
            "del\x7f",
            "-flag",
            "é.txt",
            ".",
            "z.",
        ];
        const ROOTS: [&str; 5] = ["./", "ja/", "/usr/share/", "", "./My Docs/"];
        let mut out = Vec::new();
        let mut dir = String::from("./");
        for _ in 0..lines {
            let line = match next(100) {
                0..=59 => {
                    let name = NAMES[next(NAMES.len() as u64) as usize];
                    format!("{dir}{}{name}", if next(4) == 0 { "" } else { "f" })
                }
                60..=71 => {
                    // A subdirectory: its own line, then its entries.
                    dir = format!("{dir}d{}/", next(6));
                    if dir.matches('/').count() > 6 || next(5) == 0 {
                        let root = ROOTS[if next(20) == 0 { next(5) as usize } else { 0 }];
                        dir = format!("{root}d{}/", next(4));
                    }
                    dir.trim_end_matches('/').to_string()
                }
                72..=75 => format!("{dir}{}", "n".repeat(4000 + next(200) as usize)),
                76..=79 => format!("{}K\t{dir}f{}", next(900), next(9)),
                80..=81 => format!("{}:", dir.trim_end_matches('/')),
                82..=83 => format!("├── f{}.rs", next(9)),
                84..=86 => "word".to_string(),
                87..=88 => String::new(),
                89..=90 => format!("find: '{dir}x': Permission denied"),
                _ => format!("{dir}../{}", next(9)),
            };
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
        }
        out
    }

    /// Every line through `read`, as `Paths::line` did before its shortcut.
    fn read_without_shortcut(text: &[u8]) -> Paths {
        let mut p = Paths::new();
        let mut prev: &[u8] = b"";
        for (i, l) in text.split(|&b| b == b'\n').enumerate() {
            if !super::super::forms::blank(l) {
                match p.read(i as u64 + 1, l, prev) {
                    Some(true) => p.units += 1,
                    Some(false) => p.neutral += 1,
                    None => {}
                }
            }
            prev = l;
        }
        p.finish();
        p
    }

    fn read_bytes(text: &[u8]) -> Paths {
        let mut p = Paths::new();
        let mut prev: &[u8] = b"";
        for (i, l) in text.split(|&b| b == b'\n').enumerate() {
            if !super::super::forms::blank(l) {
                p.line(i as u64 + 1, l, prev);
            }
            prev = l;
        }
        p.finish();
        p
    }

    #[test]
    fn the_shortcut_for_entries_of_one_directory_changes_no_figure() {
        for seed in 1..40 {
            let text = listing(seed, 3000);
            let (fast, slow) = (read_bytes(&text), read_without_shortcut(&text));
            // Every field, the tables' rows and the runs included.
            assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "seed {seed}");
        }
    }

    #[test]
    fn a_name_is_refused_for_a_refused_byte_wherever_it_is() {
        for len in 1..20 {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut name = vec![b'a'; len];
                    name[at] = b;
                    assert_eq!(plain_name(&name), !NOT_IN_NAME[b as usize], "{b:#x} at {at} of {len}");
                }
            }
        }
    }

    #[test]
    fn find_entries_take_the_shortcut() {
        let mut p = Paths::new();
        assert!(p.line(1, b"./lib/x.rs", b""));
        assert!(p.line(2, b"./src/a.rs", b""));
        // Below the root (`./`), in the run of ./src/: only the name is read.
        assert!(p.next_in_dir(b"./src/b.rs"));
        assert!(!p.next_in_dir(b"./src/my file.rs"));
        assert!(!p.next_in_dir(b"./src/x/c.rs"));
        assert!(!p.next_in_dir(b"./src/a:3"));
        assert!(!p.next_in_dir(b"./src/"));
        assert!(!p.next_in_dir(b"./lib/a.rs"));
    }

    #[test]
    fn the_figures_do_not_depend_on_where_regions_end() {
        use super::super::{Layouts, LineBody};
        for seed in 1..20 {
            let text = listing(seed, 4000);
            let mut whole = Layouts::new();
            whole.region(&text, 1, None);
            whole.finish();
            // Regions cut at arbitrary lines, some lines handed over alone.
            let mut cut = Layouts::new();
            let ends: Vec<usize> = memchr::memchr_iter(b'\n', &text).map(|k| k + 1).collect();
            let (mut start, mut first, mut i) = (0, 1u64, 0);
            while i < ends.len() {
                let n = (seed as usize * 7 + i) % 97 + 1;
                let end = ends[(i + n).min(ends.len()) - 1];
                let lines = (i + n).min(ends.len()) - i;
                if n.is_multiple_of(5) {
                    let line = &text[start..ends[i] - 1];
                    cut.line(first, LineBody::Whole(line));
                    start = ends[i];
                    first += 1;
                    i += 1;
                    continue;
                }
                // The cut regions' newlines from a map, as the scanner hands
                // them over: both ways of finding lines give one result.
                let map = crate::text::newlines::NewlineMap::of(&text[start..end]);
                cut.region(&text[start..end], first, Some(&map));
                start = end;
                first += lines as u64;
                i += lines;
            }
            cut.finish();
            assert!(whole.paths().is_some_and(|p| p.entries() > 1000), "seed {seed}");
            assert_eq!(format!("{:?}", whole.paths()), format!("{:?}", cut.paths()), "seed {seed}");
        }
    }
}
