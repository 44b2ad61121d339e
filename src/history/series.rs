//! Per-command series of run records in the store: `.history/NAME.jsonl`,
//! one JSON record a line, and `.history/NAME.key.json` naming what the
//! series is (label, command, project). Only figures are kept, never the
//! output itself.
//!
//! Concurrency: a record is appended with one `write` on an `O_APPEND`
//! descriptor while holding a shared `flock`; the file is trimmed to its
//! last [`KEEP`] records under an exclusive lock by writing a new file and
//! renaming it over the old one. An appender that was waiting while the file
//! was replaced notices (its descriptor's inode is no longer the path's) and
//! opens the new file, so no record lands in a file that is gone.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Records kept per series (after trimming).
pub const KEEP: usize = 256;
/// Past this size a series file is read to see whether it holds more than
/// twice [`KEEP`] records (the smallest record is about 64 bytes).
const TRIM_BYTES: u64 = 2 * KEEP as u64 * 64;
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

/// The history folder of a store.
pub fn dir(store: &Path) -> PathBuf {
    store.join(".history")
}

/// A series in a store.
#[derive(Debug, Clone)]
pub struct Series {
    pub key: SeriesKey,
    path: PathBuf,
}

impl Series {
    pub fn open(store: &Path, key: SeriesKey) -> Series {
        let path = dir(store).join(format!("{}.jsonl", key.name()));
        Series { key, path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every record, oldest first; lines that do not parse (a torn write
    /// from a crashed run) are skipped.
    pub fn records(&self) -> io::Result<Vec<Record>> {
        match fs::read_to_string(&self.path) {
            Ok(text) => Ok(parse(&text)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// Appends one record (creating the folder, the key file and the
    /// series, all private), then trims the file when it has grown.
    pub fn append(&self, record: &Record) -> io::Result<()> {
        let folder = self.path.parent().expect("a series lives in a folder");
        ensure_private_dir(folder)?;
        let key_path = self.path.with_extension("key.json");
        if !key_path.exists() {
            let text = serde_json::to_string(&self.key).map_err(io::Error::other)?;
            write_private(&key_path, text.as_bytes())?;
        }
        let mut line = serde_json::to_string(record).map_err(io::Error::other)?;
        line.push('\n');
        let size = loop {
            let file = open_append(&self.path)?;
            lock(&file, libc::LOCK_SH)?;
            if !same_file(&file, &self.path)? {
                // Replaced by a trim while we waited: append to the new one.
                continue;
            }
            (&file).write_all(line.as_bytes())?;
            break file.metadata()?.len();
        };
        if size > TRIM_BYTES {
            self.trim()?;
        }
        Ok(())
    }

    /// Keeps the last [`KEEP`] records.
    fn trim(&self) -> io::Result<()> {
        let file = open_append(&self.path)?;
        lock(&file, libc::LOCK_EX)?;
        if !same_file(&file, &self.path)? {
            return Ok(()); // someone else trimmed it
        }
        let mut text = String::new();
        File::open(&self.path)?.read_to_string(&mut text)?;
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        if lines.len() <= 2 * KEEP {
            return Ok(());
        }
        let kept = lines[lines.len() - KEEP..].join("\n") + "\n";
        let tmp = self.path.with_extension(format!("tmp-{}", std::process::id()));
        write_private(&tmp, kept.as_bytes())?;
        fs::rename(&tmp, &self.path)
    }
}

fn parse(text: &str) -> Vec<Record> {
    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// Every series in a store: its key and records.
pub fn all(store: &Path) -> io::Result<Vec<(SeriesKey, Vec<Record>, PathBuf)>> {
    let folder = dir(store);
    let entries = match fs::read_dir(&folder) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for e in entries {
        let path = e?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else { continue };
        let Some(stem) = name.strip_suffix(".key.json") else { continue };
        let Ok(key) =
            fs::read_to_string(&path).map_err(drop).and_then(|t| serde_json::from_str::<SeriesKey>(&t).map_err(drop))
        else {
            continue;
        };
        let data = folder.join(format!("{stem}.jsonl"));
        let records = fs::read_to_string(&data).map(|t| parse(&t)).unwrap_or_default();
        out.push((key, records, data));
    }
    out.sort_by(|a, b| a.0.label.cmp(&b.0.label).then(a.0.command.cmp(&b.0.command)));
    Ok(out)
}

/// Removes series not written for [`SERIES_TTL_SECONDS`]; returns how many.
/// Series outlive the entries they describe: a trend needs months.
pub fn collect(store: &Path, now: u64) -> io::Result<usize> {
    let folder = dir(store);
    let entries = match fs::read_dir(&folder) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut removed = 0;
    for e in entries {
        let e = e?;
        let path = e.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else { continue };
        let Some(stem) = name.strip_suffix(".jsonl") else { continue };
        let meta = fs::symlink_metadata(&path)?;
        if !meta.is_file() || now.saturating_sub(meta.mtime().max(0) as u64) < SERIES_TTL_SECONDS {
            continue;
        }
        fs::remove_file(&path)?;
        let _ = fs::remove_file(folder.join(format!("{stem}.key.json")));
        removed += 1;
    }
    Ok(removed)
}

fn ensure_private_dir(path: &Path) -> io::Result<()> {
    match fs::create_dir(path) {
        Ok(()) => fs::set_permissions(path, fs::Permissions::from_mode(0o700)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let meta = fs::symlink_metadata(path)?;
            if !meta.is_dir() {
                return Err(io::Error::other(format!("{} is not a directory", path.display())));
            }
            Ok(())
        }
        Err(e) => Err(e),
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new().append(true).create(true).mode(0o600).custom_flags(libc::O_NOFOLLOW).open(path)
}

fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    f.write_all(bytes)
}

fn lock(file: &File, how: libc::c_int) -> io::Result<()> {
    loop {
        if unsafe { libc::flock(file.as_raw_fd(), how) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn same_file(file: &File, path: &Path) -> io::Result<bool> {
    let a = file.metadata()?;
    match fs::symlink_metadata(path) {
        Ok(b) => Ok(a.ino() == b.ino() && a.dev() == b.dev()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(cmd: &str) -> SeriesKey {
        SeriesKey { label: "cargo".into(), command: Some(cmd.into()), project: Some("/p".into()) }
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
        let store = tempfile::tempdir().unwrap();
        let s = Series::open(store.path(), key("cargo build"));
        for i in 0..(2 * KEEP + 50) as u64 {
            s.append(&Record { t: i, chars: 100 + i, ok: true, ..Record::default() }).unwrap();
        }
        let r = s.records().unwrap();
        assert!(r.len() >= KEEP && r.len() <= 2 * KEEP, "{}", r.len());
        assert_eq!(r.last().unwrap().chars, 100 + (2 * KEEP + 49) as u64);
        let mode = fs::metadata(s.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let all = all(store.path()).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].0, key("cargo build"));
    }

    #[test]
    fn concurrent_appends_all_land() {
        let store = tempfile::tempdir().unwrap();
        let s = Series::open(store.path(), key("x"));
        std::thread::scope(|sc| {
            for w in 0..8u64 {
                let s = s.clone();
                sc.spawn(move || {
                    for i in 0..100u64 {
                        s.append(&Record { t: w * 1000 + i, ok: true, ..Record::default() }).unwrap();
                    }
                });
            }
        });
        let r = s.records().unwrap();
        // 800 appends: trimmed at times, so at least the last KEEP, and every
        // record read back is whole.
        assert!(r.len() >= KEEP, "{}", r.len());
        let text = fs::read_to_string(s.path()).unwrap();
        assert_eq!(text.lines().count(), r.len(), "no torn lines");
    }

    #[test]
    fn old_series_are_collected_and_fresh_ones_kept() {
        let store = tempfile::tempdir().unwrap();
        let s = Series::open(store.path(), key("x"));
        s.append(&Record::default()).unwrap();
        let now = crate::store::now_secs();
        assert_eq!(collect(store.path(), now).unwrap(), 0);
        assert_eq!(collect(store.path(), now + SERIES_TTL_SECONDS + 10).unwrap(), 1);
        assert!(s.records().unwrap().is_empty());
    }
}
