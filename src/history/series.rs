//! Per-command series of run records in the store: `.history/NAME.jsonl`,
//! one JSON record a line, and `.history/NAME.key.json` naming what the
//! series is (label, command, project). Only figures are kept, never the
//! output itself. Every file is reached through the history folder's
//! descriptor ([`HistoryDir`]), never through a path.
//!
//! Concurrency: a record is appended with one `write` on an `O_APPEND`
//! descriptor while holding a shared `flock`; the file is trimmed to its
//! last [`KEEP`] records under an exclusive lock by writing a new file and
//! renaming it over the old one. An appender that was waiting while the file
//! was replaced notices (its descriptor's inode is no longer the name's) and
//! opens the new file, so no record lands in a file that is gone. Locks
//! are waited for at most [`dir::LOCK_WAIT`].
//!
//! Damage: a series is read line by line, at most [`LINE_MAX`] bytes a line
//! and only its last [`READ_MAX`] bytes, so a file grown into one huge line
//! costs neither memory nor much time; a line that is too long, not UTF-8
//! or not a record is skipped and counted ([`Records::bad_lines`]). A torn
//! last line (a crashed writer) is ended before the next record is
//! appended, so that record is not lost with it. Trimming keeps the last
//! [`KEEP`] good records and drops the rest, bad lines included.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};

use serde::{Deserialize, Serialize};

use super::dir::{self, HistoryDir};
use crate::store::Store;

/// Records kept per series (after trimming).
pub const KEEP: usize = 256;
/// A series file is read to see whether it needs trimming (more than
/// [`KEEP`] records, bad lines, or too many bytes) each time it grows
/// across a multiple of this many bytes: one appender crosses each
/// (appends are single writes), so a trim's exclusive lock is rare, not
/// taken by every run. The smallest record is about 64 bytes, so a file
/// never holds more than twice [`KEEP`] records.
const TRIM_STEP: u64 = KEEP as u64 * 64;
/// A line longer than this is not a record (the largest is about 2 KiB).
pub const LINE_MAX: usize = 16 << 10;
/// Only the last this many bytes of a series are read: [`KEEP`] records of
/// the largest size fit.
pub const READ_MAX: u64 = KEEP as u64 * LINE_MAX as u64;
/// A key file larger than this is not ours.
const KEY_MAX: u64 = 64 << 10;
/// Series untouched for this long are removed by gc.
pub const SERIES_TTL_SECONDS: u64 = 180 * 24 * 3600;

/// One run, as figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Unix time (seconds) when the run ended.
    pub t: u64,
    pub chars: u64,
    pub bytes: u64,
    pub lines: u64,
    /// Signal lines in all, and by severity where known.
    pub signals: u64,
    #[serde(default)]
    pub errors: u64,
    #[serde(default)]
    pub warnings: u64,
    /// The wrapped command's exit status (None for `CMD | outbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    /// The stored entry's id, and the full content digest.
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub digest: String,
    /// The project's git revision, where it was cheap to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rev: Option<String>,
    /// The run succeeded (status 0 or none, input complete): only these
    /// make the size series, so a failing run's flood does not move it.
    pub ok: bool,
    /// Keys of the signal lines' kinds (with their severity), at most
    /// [`MAX_SHAPES`], to say what is new and what vanished.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shapes: Vec<u64>,
    /// The kinds' names, in the order of `shapes` (a code, or a template
    /// in quotes, at most [`NAME_CHARS`] characters): what the next run
    /// names as gone. A name is the masked template of a line, not the
    /// line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// Characters printed for the reader (the envelope, or the output
    /// passed through); absent in records older than `outbox stats`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub printed: Option<u64>,
    /// How it was printed: the header's `strategy` (`text-envelope`,
    /// `passthrough`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
}

/// What a boundary counts: characters (most harnesses) or bytes (Codex
/// estimates tokens as bytes / 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    #[default]
    Chars,
    Bytes,
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::Chars => "chars",
            Unit::Bytes => "bytes",
        }
    }
}

impl Record {
    /// The run's size in `unit`.
    pub fn size(&self, unit: Unit) -> u64 {
        match unit {
            Unit::Chars => self.chars,
            Unit::Bytes => self.bytes,
        }
    }
}

/// Kinds kept per record.
pub const MAX_SHAPES: usize = 64;
/// Characters of a kind's name kept in a record.
pub const NAME_CHARS: usize = 40;

/// What a series is about; its file name is derived from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeriesKey {
    pub label: String,
    /// The normalised command (wrap mode), None for `CMD | outbox` or when
    /// `--label` names the series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The project root (the enclosing git work tree, else the directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

impl SeriesKey {
    /// The series' file stem: the label, then 16 hex digits of a hash of
    /// the whole key (so `cargo build` and `cargo test` differ, and so do
    /// two projects).
    pub fn name(&self) -> String {
        let mut h = blake3::Hasher::new();
        for part in [Some(self.label.as_str()), self.command.as_deref(), self.project.as_deref()] {
            h.update(part.unwrap_or("").as_bytes());
            h.update(&[0]);
        }
        let hex: String = h.finalize().as_bytes()[..8].iter().map(|b| format!("{b:02x}")).collect();
        format!("{}-{hex}", self.label)
    }
}

/// Normalises a command line for a key: the program's base name, then the
/// arguments, separated by single spaces.
pub fn normalise_command(argv: &[String]) -> String {
    let mut parts = argv.iter();
    let prog = parts.next().map(|p| p.rsplit('/').next().unwrap_or(p).to_string()).unwrap_or_default();
    std::iter::once(prog).chain(parts.cloned()).collect::<Vec<_>>().join(" ")
}

/// A series in a store.
#[derive(Debug, Clone)]
pub struct Series {
    pub key: SeriesKey,
    /// The file stem ([`SeriesKey::name`]).
    stem: String,
}

/// What reading a series found.
#[derive(Debug, Clone, Default)]
pub struct Records {
    /// Every good record, oldest first.
    pub records: Vec<Record>,
    /// Lines skipped: too long, not UTF-8, not a record, torn.
    pub bad_lines: u64,
    /// The file was larger than [`READ_MAX`]: only its end was read.
    pub truncated: bool,
}

impl Series {
    pub fn new(key: SeriesKey) -> Series {
        let stem = key.name();
        Series { key, stem }
    }

    /// The series file's name in the history folder.
    pub fn file_name(&self) -> String {
        format!("{}.jsonl", self.stem)
    }

    fn key_name(&self) -> String {
        format!("{}.key.json", self.stem)
    }

    /// Every record the file holds (none when there is no file yet).
    pub fn read(&self, dir: &HistoryDir) -> io::Result<Records> {
        match dir.open_read(&self.file_name()) {
            Ok(f) => read_records(f),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Records::default()),
            Err(e) => Err(e),
        }
    }

    /// Appends one record (creating the key file and the series, both
    /// private), then trims the file when it has grown.
    pub fn append(&self, dir: &HistoryDir, record: &Record) -> io::Result<()> {
        match dir.create_new(&self.key_name()) {
            Ok(mut f) => f.write_all(serde_json::to_string(&self.key).map_err(io::Error::other)?.as_bytes())?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let mut line = serde_json::to_string(record).map_err(io::Error::other)?;
        line.push('\n');
        let name = self.file_name();
        let (before, size) = loop {
            let file = dir.open_append(&name)?;
            // Exclusive: the torn-line check below reads the file's last
            // byte, and another append in progress (its size already grown
            // by a page, its newline not yet written) would look torn and
            // get a blank line after it.
            dir::lock(&file, true, dir::LOCK_WAIT)?;
            if !same_file(dir, &file, &name)? {
                // Replaced by a trim while we waited: append to the new one.
                continue;
            }
            let size = file.metadata()?.len();
            // A torn last line (a crashed writer) is ended first: else
            // this record would be glued to it and lost with it.
            let mut out = Vec::with_capacity(line.len() + 1);
            if size > 0 && !ends_with_newline(&file, size)? {
                out.push(b'\n');
            }
            out.extend_from_slice(line.as_bytes());
            (&file).write_all(&out)?;
            break (size, size + out.len() as u64);
        };
        if size > READ_MAX || before / TRIM_STEP != size / TRIM_STEP {
            // The record is in; a trim that cannot run now runs next time.
            let _ = self.trim(dir);
        }
        Ok(())
    }

    /// Keeps the last [`KEEP`] good records when the file holds more, bad
    /// lines, or more than [`READ_MAX`] bytes.
    fn trim(&self, dir: &HistoryDir) -> io::Result<()> {
        let name = self.file_name();
        let file = dir.open_append(&name)?;
        dir::lock(&file, true, dir::LOCK_WAIT)?;
        if !same_file(dir, &file, &name)? {
            return Ok(()); // someone else trimmed it
        }
        let mut kept: VecDeque<Vec<u8>> = VecDeque::with_capacity(KEEP + 1);
        let mut good = 0usize;
        let (bad, truncated) = scan_lines(dir.open_read(&name)?, |l| {
            if parse_line(l).is_none() {
                return false;
            }
            good += 1;
            if kept.len() == KEEP {
                kept.pop_front();
            }
            kept.push_back(l.to_vec());
            true
        })?;
        if good <= KEEP && bad == 0 && !truncated {
            return Ok(());
        }
        let tmp = format!("{}.tmp-{}-{}", self.stem, std::process::id(), crate::store::now_secs());
        let res = dir.create_new(&tmp).and_then(|mut f| {
            let mut text = Vec::new();
            for l in &kept {
                text.extend_from_slice(l);
                text.push(b'\n');
            }
            f.write_all(&text)?;
            dir.rename(&tmp, &name)
        });
        if res.is_err() {
            let _ = dir.unlink(&tmp);
        }
        res
    }
}

/// Reads a series file: its last [`READ_MAX`] bytes, line by line.
pub fn read_records(file: File) -> io::Result<Records> {
    let mut records = Vec::new();
    let (bad_lines, truncated) = scan_lines(file, |line| match parse_line(line) {
        Some(r) => {
            records.push(r);
            true
        }
        None => false,
    })?;
    Ok(Records { records, bad_lines, truncated })
}

fn parse_line(line: &[u8]) -> Option<Record> {
    serde_json::from_slice(line).ok()
}

/// Calls `f` on every non-empty line of the file's last [`READ_MAX`]
/// bytes (a line cut by that start is not one); `f` says whether the line
/// was good. A line longer than [`LINE_MAX`] is bad without a call.
/// Returns the bad lines and whether the file's start was skipped.
/// Memory: one line of at most [`LINE_MAX`] bytes.
fn scan_lines(mut file: File, mut f: impl FnMut(&[u8]) -> bool) -> io::Result<(u64, bool)> {
    let size = file.metadata()?.len();
    let truncated = size > READ_MAX;
    if truncated {
        file.seek(SeekFrom::Start(size - READ_MAX))?;
    }
    let mut r = BufReader::with_capacity(64 << 10, file.take(READ_MAX));
    let mut line = Vec::new();
    let mut over = false;
    // Before the first newline of a read that starts mid-file: not a line.
    let mut skipping = truncated;
    let mut bad = 0u64;
    let mut emit = |line: &mut Vec<u8>, over: &mut bool, skipping: &mut bool| {
        if *skipping {
            *skipping = false;
        } else if *over || (!line.iter().all(u8::is_ascii_whitespace) && !f(line)) {
            bad += 1;
        }
        line.clear();
        *over = false;
    };
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            break;
        }
        let (part, end) = match memchr::memchr(b'\n', buf) {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !over && !skipping {
            if line.len() + part.len() <= LINE_MAX {
                line.extend_from_slice(part);
            } else {
                over = true;
                line.clear();
            }
        }
        let used = end.unwrap_or(part.len());
        r.consume(used);
        if end.is_some() {
            emit(&mut line, &mut over, &mut skipping);
        }
    }
    if !line.is_empty() || over {
        // A last line without its newline: torn, unless it parses.
        emit(&mut line, &mut over, &mut skipping);
    }
    Ok((bad, truncated))
}

fn ends_with_newline(file: &File, size: u64) -> io::Result<bool> {
    let mut last = [0u8; 1];
    let n = rustix::io::pread(file, &mut last, size - 1)?;
    Ok(n == 1 && last[0] == b'\n')
}

/// One series as `outbox trend` sees it.
#[derive(Debug)]
pub struct Found {
    pub key: SeriesKey,
    /// The file stem.
    pub name: String,
    pub records: Records,
}

/// Calls `f` on every series of a store, one at a time (so memory holds
/// one series, whatever their number); returns what could not be read,
/// as messages.
pub fn for_each(store: &Store, mut f: impl FnMut(Found)) -> io::Result<Vec<String>> {
    let Some(dir) = HistoryDir::open(store, false)? else { return Ok(Vec::new()) };
    let mut names = dir.names()?;
    names.sort();
    let mut problems = Vec::new();
    for name in names {
        let Some(stem) = name.strip_suffix(".key.json") else { continue };
        let key = dir.open_read(&name).and_then(|file| {
            let mut text = Vec::new();
            file.take(KEY_MAX).read_to_end(&mut text)?;
            serde_json::from_slice::<SeriesKey>(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
        });
        let key = match key {
            Ok(k) => k,
            Err(e) => {
                problems.push(format!(
                    "series {}: its key file cannot be read: {e}",
                    crate::store::path_text(stem.as_ref())
                ));
                continue;
            }
        };
        let records = match dir.open_read(&format!("{stem}.jsonl")) {
            Ok(file) => read_records(file),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Records::default()),
            Err(e) => Err(e),
        };
        match records {
            Ok(records) => f(Found { key, name: stem.to_string(), records }),
            Err(e) => problems.push(format!("series {}: {e}", crate::store::path_text(stem.as_ref()))),
        }
    }
    Ok(problems)
}

/// Removes series not written for [`SERIES_TTL_SECONDS`]; returns how many.
/// Series outlive the entries they describe: a trend needs months. Only
/// regular files of ours in the store's own history folder are removed; a
/// `.history` that is a symlink is refused (an error), never followed.
pub fn collect(store: &Store, now: u64) -> io::Result<usize> {
    let Some(dir) = HistoryDir::open(store, false)? else { return Ok(0) };
    let mut removed = 0;
    for name in dir.names()? {
        let Some(stem) = name.strip_suffix(".jsonl") else { continue };
        let Ok(st) = dir.stat(&name) else { continue };
        if !st.ours || now.saturating_sub(st.mtime.max(0) as u64) < SERIES_TTL_SECONDS {
            continue;
        }
        dir.unlink(&name)?;
        let key = format!("{stem}.key.json");
        if dir.stat(&key).is_ok_and(|s| s.ours) {
            let _ = dir.unlink(&key);
        }
        removed += 1;
    }
    Ok(removed)
}

/// Whether the open `file` is still what `name` names (a trim renames a
/// new file over it).
fn same_file(dir: &HistoryDir, file: &File, name: &str) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let a = file.metadata()?;
    match dir.stat(name) {
        Ok(b) => Ok(a.ino() == b.ino && a.dev() == b.dev),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::time::Duration;

    fn key(cmd: &str) -> SeriesKey {
        SeriesKey { label: "cargo".into(), command: Some(cmd.into()), project: Some("/p".into()) }
    }

    fn store() -> (tempfile::TempDir, Store, HistoryDir) {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(&tmp.path().join("store")).unwrap();
        let dir = HistoryDir::open(&store, true).unwrap().unwrap();
        (tmp, store, dir)
    }

    fn path(store: &Store, s: &Series) -> std::path::PathBuf {
        store.dir().join(dir::NAME).join(s.file_name())
    }

    #[test]
    fn keys_separate_commands_and_projects() {
        assert_ne!(key("cargo build").name(), key("cargo test").name());
        let mut other = key("cargo build");
        other.project = Some("/q".into());
        assert_ne!(key("cargo build").name(), other.name());
        assert!(key("cargo build").name().starts_with("cargo-"));
        assert_eq!(normalise_command(&["/usr/bin/cargo".into(), "build".into()]), "cargo build");
    }

    #[test]
    fn appends_read_back_private_and_trimmed() {
        let (_tmp, store, dir) = store();
        let s = Series::new(key("cargo build"));
        for i in 0..(2 * KEEP + 50) as u64 {
            s.append(&dir, &Record { t: i, chars: 100 + i, ok: true, ..Record::default() }).unwrap();
        }
        let r = s.read(&dir).unwrap().records;
        assert!(r.len() >= KEEP && r.len() <= 2 * KEEP, "{}", r.len());
        assert_eq!(r.last().unwrap().chars, 100 + (2 * KEEP + 49) as u64);
        let mode = fs::metadata(path(&store, &s)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let mut found = Vec::new();
        for_each(&store, |f| found.push(f.key)).unwrap();
        assert_eq!(found, [key("cargo build")]);
    }

    #[test]
    fn concurrent_appends_all_land() {
        let (_tmp, store, dir) = store();
        let s = Series::new(key("x"));
        std::thread::scope(|sc| {
            for w in 0..8u64 {
                let (s, dir) = (s.clone(), &dir);
                sc.spawn(move || {
                    for i in 0..100u64 {
                        s.append(dir, &Record { t: w * 1000 + i, ok: true, ..Record::default() }).unwrap();
                    }
                });
            }
        });
        let r = s.read(&dir).unwrap();
        // 800 appends: trimmed at times, so at least the last KEEP, and every
        // record read back is whole.
        assert!(r.records.len() >= KEEP, "{}", r.records.len());
        assert_eq!(r.bad_lines, 0, "no torn lines");
        let text = fs::read_to_string(path(&store, &s)).unwrap();
        assert_eq!(text.lines().count(), r.records.len());
    }

    #[test]
    fn old_series_are_collected_and_fresh_ones_kept() {
        let (_tmp, store, dir) = store();
        let s = Series::new(key("x"));
        s.append(&dir, &Record::default()).unwrap();
        let now = crate::store::now_secs();
        assert_eq!(collect(&store, now).unwrap(), 0);
        assert_eq!(collect(&store, now + SERIES_TTL_SECONDS + 10).unwrap(), 1);
        assert!(s.read(&dir).unwrap().records.is_empty());
    }

    /// `.history` swapped for a symlink: gc refuses it and removes nothing
    /// outside the store; a run's history goes nowhere through it.
    #[test]
    fn a_history_symlink_is_refused_never_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(&tmp.path().join("store")).unwrap();
        let outside = tmp.path().join("outside");
        fs::create_dir(&outside).unwrap();
        let s = Series::new(key("x"));
        fs::write(outside.join(s.file_name()), "{}\n").unwrap();
        fs::write(outside.join("notes.key.json"), "{}").unwrap();
        fs::write(outside.join("notes.jsonl"), "mine\n").unwrap();
        let old = std::time::SystemTime::now() - Duration::from_secs(SERIES_TTL_SECONDS + 100);
        for f in fs::read_dir(&outside).unwrap() {
            fs::File::options().write(true).open(f.unwrap().path()).unwrap().set_modified(old).unwrap();
        }
        std::os::unix::fs::symlink(&outside, store.dir().join(dir::NAME)).unwrap();
        let e = collect(&store, crate::store::now_secs()).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let e = HistoryDir::open(&store, true).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 3, "a file outside the store was touched");
        assert_eq!(fs::read(outside.join("notes.jsonl")).unwrap(), b"mine\n");
    }

    /// A `.history` owned by someone else is refused (root can make one;
    /// as a normal user the case cannot be set up and is skipped).
    #[test]
    fn a_foreign_history_folder_is_refused() {
        if rustix::process::geteuid().as_raw() != 0 {
            eprintln!("skipped: a_foreign_history_folder_is_refused needs root to chown");
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(&tmp.path().join("store")).unwrap();
        let h = store.dir().join(dir::NAME);
        fs::create_dir(&h).unwrap();
        std::os::unix::fs::chown(&h, Some(65534), Some(65534)).unwrap();
        let e = HistoryDir::open(&store, true).unwrap_err();
        assert!(e.to_string().contains("owned by uid 65534"), "{e}");
        assert_eq!(collect(&store, u64::MAX).unwrap_err().kind(), io::ErrorKind::PermissionDenied);
    }

    /// The store's path swapped for a symlink after it was opened: the
    /// record lands in the store that was opened, not the link's target.
    #[test]
    fn a_store_swapped_mid_run_keeps_its_history() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("store");
        let store = Store::open(&path).unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        fs::rename(&path, tmp.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        let dir = HistoryDir::open(&store, true).unwrap().unwrap();
        Series::new(key("x")).append(&dir, &Record::default()).unwrap();
        assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0, "written through the link");
        assert_eq!(fs::read_dir(tmp.path().join("moved").join(dir::NAME)).unwrap().count(), 2);
    }

    /// A FIFO as the series, or a lock held for ever: the record is given
    /// up within the deadline, never waited for.
    #[test]
    fn a_fifo_or_a_held_lock_costs_the_record_not_the_run() {
        let (_tmp, store, dir) = store();
        let s = Series::new(key("x"));
        let p = path(&store, &s);
        rustix::fs::mknodat(rustix::fs::CWD, &p, rustix::fs::FileType::Fifo, rustix::fs::Mode::from_raw_mode(0o600), 0)
            .unwrap();
        let started = std::time::Instant::now();
        assert!(s.read(&dir).is_err());
        assert!(s.append(&dir, &Record::default()).is_err());
        fs::remove_file(&p).unwrap();
        s.append(&dir, &Record::default()).unwrap();
        let holder = fs::File::open(&p).unwrap();
        rustix::fs::flock(&holder, rustix::fs::FlockOperation::LockExclusive).unwrap();
        let e = s.append(&dir, &Record::default()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        assert!(started.elapsed() < dir::LOCK_WAIT * 3, "{:?}", started.elapsed());
    }

    #[test]
    fn bad_lines_are_skipped_and_counted_and_a_torn_line_costs_only_itself() {
        let (_tmp, store, dir) = store();
        let s = Series::new(key("x"));
        s.append(&dir, &Record { t: 1, ..Record::default() }).unwrap();
        let p = path(&store, &s);
        // An invalid UTF-8 byte in a line, then a torn last line.
        let mut f = fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"t\":2,\"id\":\"\xff\"}\n{\"t\":3,\"cha").unwrap();
        drop(f);
        s.append(&dir, &Record { t: 4, ..Record::default() }).unwrap();
        let r = s.read(&dir).unwrap();
        assert_eq!(r.records.iter().map(|r| r.t).collect::<Vec<_>>(), [1, 4]);
        assert_eq!(r.bad_lines, 2);
    }

    #[test]
    fn a_huge_line_is_read_in_bounded_memory_and_trimmed_away() {
        let (_tmp, store, dir) = store();
        let s = Series::new(key("x"));
        let p = path(&store, &s);
        // 8 MiB without a newline, then the next run's record.
        fs::write(&p, vec![b'x'; 8 << 20]).unwrap();
        s.append(&dir, &Record { t: 7, ..Record::default() }).unwrap();
        let size = fs::metadata(&p).unwrap().len();
        assert!(size < 4096, "not trimmed by bytes: {size}");
        let r = s.read(&dir).unwrap();
        assert_eq!(r.records.iter().map(|r| r.t).collect::<Vec<_>>(), [7]);
        // Reading a grown file reads only its end.
        let mut text = vec![b'y'; 2 * READ_MAX as usize];
        text.extend_from_slice(b"\n{\"t\":9,\"chars\":0,\"bytes\":0,\"lines\":0,\"signals\":0,\"ok\":true}\n");
        fs::write(&p, text).unwrap();
        let r = s.read(&dir).unwrap();
        assert!(r.truncated);
        assert_eq!(r.records.len(), 1);
        // The line cut by the window's start is not judged.
        assert_eq!(r.bad_lines, 0);
    }
}
