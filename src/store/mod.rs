//! The store: a private directory of exact originals and their metadata,
//! and the commands that read and collect it.
//!
//! Files: this one (opening the store, temporary files, commit, entry
//! names), `env` (settings, read from the environment by the caller),
//! `sys` (system calls on the directory), `meta` (metadata), `show`, `ls`,
//! `gc` (with the automatic collection after a run).
//!
//! Layout: one flat directory. outbox's own names are
//! - `{label}-{12 hex of BLAKE3}`: an original, byte for byte (an *entry*);
//! - `{label}-{12 hex}.meta`: its metadata, JSON ([`Meta`]);
//! - `.tmp-{pid}-{nanos}-{n}`: a file being written (spill or metadata);
//! - `gc-stamp`: an empty marker whose mtime records the last automatic
//!   collection ([`maybe_collect`]). It is not an entry name.
//!
//! Nothing else in the directory is ever read, changed or removed, and
//! neither is any of the names above when it is a symlink, not a regular
//! file, or owned by another user.
//!
//! Invariants:
//! - the directory is ours, a real directory (never a symlink), mode 0700;
//!   anything else is refused, not repaired or followed;
//! - entries and metadata are 0600 whatever the umask;
//! - an entry only ever appears complete: data is written to an exclusively
//!   created `.tmp-…` file and renamed into place without replacing an
//!   existing name; identical content under the same label is stored once;
//! - metadata is written before its entry is renamed into place, so whoever
//!   sees an entry also finds its metadata;
//! - names that start with a dot are temporary; entry and metadata names
//!   never do.
//!
//! Concurrency: writers of the same content race only on the final rename,
//! which `RENAME_NOREPLACE` settles (the loser removes its temporary file).
//! Collection takes an exclusive `flock` on the directory and a commit a
//! shared one, so gc never judges an entry expired (or its fresh metadata
//! orphaned) while a run is reusing or placing it. A running writer holds a
//! `flock` on its temporary file, so gc never removes a live one. `show`
//! opens the data once and streams from that descriptor: a gc that unlinks
//! the entry meanwhile cannot shorten what is printed.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::stream::spill::SpillTarget;
use meta::{meta_from_file, MetaState};
use sys::{annotate, hint, is_our_regular_file, open_data, rename_noreplace, try_flock, verify_dir, StoreDir};

/// What to do about a store that cannot be created or used.
pub(crate) const DIR_HINT: &str = "set OUTBOX_DIR or pass --dir to use another directory";

/// Default time to live of an entry: seven days.
pub const DEFAULT_TTL_SECONDS: u64 = 7 * 24 * 3600;
pub const META_SUFFIX: &str = ".meta";
pub const TEMP_PREFIX: &str = ".tmp-";
/// Marker whose mtime is the time of the last automatic collection.
pub const GC_STAMP: &str = "gc-stamp";
/// A temporary file untouched for this long, and not locked by a running
/// writer, is left over from a crash.
pub const TEMP_GRACE_SECONDS: u64 = 3600;
/// Automatic collection runs at most this often.
pub const AUTO_GC_INTERVAL_SECONDS: u64 = 3600;
pub(crate) const MAX_LABEL: usize = 64;
/// Metadata is a few hundred bytes; a larger file is not ours.
pub(crate) const MAX_META_BYTES: u64 = 1 << 20;
/// Read size for `show --lines` / `--grep`.
pub(crate) const COPY_BUF: usize = 256 * 1024;
/// How long a commit waits for a running gc before going ahead unlocked.
const COMMIT_LOCK_WAIT: Duration = Duration::from_secs(5);

mod env;
mod gc;
mod ls;
mod meta;
mod show;
mod sys;

pub use env::StoreEnv;
pub use gc::{maybe_collect, run_gc, GcOptions};
pub use ls::{run_ls, LsOptions};
pub use meta::Meta;
pub use show::{parse_line_range, run_show, LineRange, ShowOptions};

/// A stored original.
#[derive(Debug, Clone)]
pub struct Entry {
    pub id: String,
    pub path: PathBuf,
}

/// An opened, verified store directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    /// TTL given to the entries this store commits.
    ttl_seconds: u64,
    /// Size cap that automatic collection enforces, if any.
    max_bytes: Option<u64>,
}

impl Store {
    /// Opens the store that `env` names (see [`Store::open`]), with its TTL
    /// and size cap.
    pub fn open_env(env: &StoreEnv) -> io::Result<Store> {
        let mut store = Store::open(env.dir()?)?;
        store.ttl_seconds = env.ttl_seconds;
        // A malformed cap is reported by `outbox gc`; a run keeps its output.
        store.max_bytes = env.max_bytes.clone().ok().flatten();
        Ok(store)
    }

    /// Opens (creating if missing, mode 0700) and verifies the directory,
    /// with the default TTL and no size cap.
    pub fn open(dir: &Path) -> io::Result<Store> {
        match fs::symlink_metadata(dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if let Some(parent) = dir.parent() {
                    fs::create_dir_all(parent)
                        .map_err(|e| hint(annotate(e, "cannot create the parent of the store", parent)))?;
                }
                match fs::DirBuilder::new().mode(0o700).create(dir) {
                    Ok(()) => fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?,
                    // Another outbox created it meanwhile: verify below.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(hint(annotate(e, "cannot create the store", dir))),
                }
            }
            Err(e) => return Err(hint(annotate(e, "cannot inspect the store", dir))),
            Ok(_) => {}
        }
        verify_dir(dir)?;
        Ok(Store { dir: dir.to_path_buf(), ttl_seconds: DEFAULT_TTL_SECONDS, max_bytes: None })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// TTL for the entries made now.
    pub fn ttl_seconds(&self) -> u64 {
        self.ttl_seconds
    }

    /// The size cap automatic collection keeps the store under.
    pub fn max_bytes(&self) -> Option<u64> {
        self.max_bytes
    }

    /// Path of the data file of `id` (which is not checked here).
    pub fn data_path(&self, id: &str) -> PathBuf {
        self.dir.join(id)
    }

    pub fn meta_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}{META_SUFFIX}"))
    }

    /// Creates a fresh temporary file, exclusively, mode 0600, and locks it
    /// so that gc can tell it is in use however long the writer is silent.
    pub fn create_temp(&self) -> io::Result<SpillTarget> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        loop {
            let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let name = format!("{TEMP_PREFIX}{}-{nanos:08x}-{n}", std::process::id());
            let path = self.dir.join(name);
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&path)
            {
                Ok(file) => {
                    file.set_permissions(fs::Permissions::from_mode(0o600))?;
                    // Best effort: without flock, gc falls back on the mtime
                    // grace period alone.
                    let _ = try_flock(file.as_raw_fd(), libc::LOCK_EX);
                    return Ok(SpillTarget { file, path });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    let e = annotate(e, "cannot create a temporary file in the store", &self.dir);
                    return Err(io::Error::new(
                        e.kind(),
                        format!("{e}; check that it is writable and has free space (outbox gc frees space)"),
                    ));
                }
            }
        }
    }

    /// Moves a complete temporary file into place as `meta.id` and writes
    /// its metadata. Identical content already stored is reused (and its
    /// metadata refreshed, which restarts its TTL). On error the temporary
    /// file is removed.
    ///
    /// Races: two writers of the same content both write (equivalent)
    /// metadata, one rename wins, the other sees `AlreadyExists`, finds a
    /// regular file of ours of the same size under the same 48-bit id and
    /// removes its temporary file: one entry, no temporary files.
    pub fn commit(&self, temp: &Path, meta: &Meta) -> io::Result<Entry> {
        // Held until the rename is done (dropped at return): see the module
        // docs.
        let _lock = self.lock_shared_briefly();
        let data = self.data_path(&meta.id);
        if self.holds_same(&data, meta) {
            let _ = fs::remove_file(temp);
            // The stored copy is valid whatever happens here; failing to
            // refresh the metadata only keeps the older TTL.
            let _ = self.write_meta(meta);
            return Ok(Entry { id: meta.id.clone(), path: data });
        }
        // Metadata first: whoever sees the data also finds its metadata.
        if let Err(e) = self.write_meta(meta) {
            let _ = fs::remove_file(temp);
            return Err(annotate(e, "cannot write the metadata", &self.meta_path(&meta.id)));
        }
        match rename_noreplace(temp, &data) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if is_our_regular_file(&data, Some(meta.bytes)) {
                    // A concurrent run stored the same content first.
                    let _ = fs::remove_file(temp);
                } else if let Err(e) = fs::rename(temp, &data) {
                    // Not a valid copy of this content (truncated, foreign,
                    // or a planted symlink): replace the name itself above;
                    // rename never follows a link. A directory cannot be
                    // replaced: give up cleanly.
                    let _ = fs::remove_file(temp);
                    return Err(annotate(e, "cannot move the spill into place", &data));
                }
            }
            Err(e) => {
                let _ = fs::remove_file(temp);
                return Err(annotate(e, "cannot move the spill into place", &data));
            }
        }
        Ok(Entry { id: meta.id.clone(), path: data })
    }

    /// Writes metadata atomically (temporary file, then rename), 0600.
    pub fn write_meta(&self, meta: &Meta) -> io::Result<()> {
        let mut tmp = self.create_temp()?;
        let json = serde_json::to_vec_pretty(meta).map_err(io::Error::other)?;
        let res = tmp.file.write_all(&json).and_then(|_| tmp.file.write_all(b"\n"));
        drop(tmp.file);
        if let Err(e) = res.and_then(|_| fs::rename(&tmp.path, self.meta_path(&meta.id))) {
            let _ = fs::remove_file(&tmp.path);
            return Err(e);
        }
        Ok(())
    }

    /// Reads the metadata of `id`, if present, ours and well-formed.
    pub fn read_meta(&self, id: &str) -> Option<Meta> {
        let file = open_data(&self.meta_path(id)).ok()?;
        match meta_from_file(file, id) {
            MetaState::Ok(m) => Some(m),
            _ => None,
        }
    }

    fn holds_same(&self, data: &Path, meta: &Meta) -> bool {
        is_our_regular_file(data, Some(meta.bytes))
            && self.read_meta(&meta.id).is_some_and(|m| m.digest == meta.digest && m.bytes == meta.bytes)
    }

    /// A shared lock on the directory, waiting at most [`COMMIT_LOCK_WAIT`]
    /// for a running gc; after that (or without flock) the commit goes
    /// ahead unlocked rather than losing the output.
    fn lock_shared_briefly(&self) -> Option<StoreDir> {
        let dir = StoreDir::open(&self.dir).ok()?;
        let deadline = Instant::now() + COMMIT_LOCK_WAIT;
        loop {
            match try_flock(dir.fd.as_raw_fd(), libc::LOCK_SH) {
                Ok(true) => return Some(dir),
                Ok(false) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                _ => return None,
            }
        }
    }
}

/// The entry id for content with `digest` under `label`.
pub fn entry_id(label: &str, digest: &[u8; 32]) -> String {
    let hex: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
    format!("{label}-{hex}")
}

pub fn digest_hex(digest: &[u8; 32]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Sanitises a label to `[A-Za-z0-9._-]{1,64}` with no leading dot, so no
/// label can name a path outside the store or a hidden (temporary) file.
pub fn sanitize_label(raw: &str, fallback: &str) -> String {
    let mapped: String =
        raw.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' }).collect();
    let trimmed = mapped.trim_start_matches('.');
    let cut: String = trimmed.chars().take(MAX_LABEL).collect();
    if cut.is_empty() {
        fallback.to_string()
    } else {
        cut
    }
}

/// Whether `name` is an entry name in outbox's own format. No such name
/// contains `/` or starts with a dot, and [`GC_STAMP`] is not one.
pub fn is_entry_name(name: &str) -> bool {
    let Some((label, hex)) = name.rsplit_once('-') else { return false };
    hex.len() == 12
        && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && !label.is_empty()
        && label.len() <= MAX_LABEL
        && !label.starts_with('.')
        && label.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

pub fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// `45s`, `12m`, `3h`, `2d`.
pub(crate) fn format_age(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// `512 B`, `1.5 KiB`, `3.2 MiB` (powers of 1024, as sizes given to outbox).
pub(crate) fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// Untrusted text shown in a message: escaped and bounded.
pub(crate) fn shown(s: &str) -> String {
    let text = crate::text::sanitize::display(s.as_bytes()).text;
    if text.chars().count() > 100 {
        format!("{}…", text.chars().take(99).collect::<String>())
    } else {
        text
    }
}

pub(crate) fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Helpers for the store's unit tests.
#[cfg(test)]
pub(crate) mod testutil {
    use super::*;

    /// A private store in a fresh temporary directory.
    pub(crate) fn store() -> (tempfile::TempDir, Store) {
        let tmp = tempfile::tempdir().unwrap();
        let s = Store::open(&tmp.path().join("store")).unwrap();
        (tmp, s)
    }

    /// Stores `data` as a finished run would; returns the entry id.
    pub(crate) fn put(store: &Store, label: &str, data: &[u8], created: u64, ttl: u64) -> String {
        let digest = *blake3::hash(data).as_bytes();
        let mut t = store.create_temp().unwrap();
        t.file.write_all(data).unwrap();
        drop(t.file);
        let meta = Meta {
            id: entry_id(label, &digest),
            label: label.into(),
            strategy: "text-envelope".into(),
            created,
            ttl_seconds: ttl,
            bytes: data.len() as u64,
            chars: data.len() as u64,
            lines: 1,
            complete: true,
            interrupted_by: None,
            command: None,
            exit_status: None,
            signal: None,
            duration_ms: None,
            digest: digest_hex(&digest),
        };
        store.commit(&t.path, &meta).unwrap().id
    }

    pub(crate) fn names_in(store: &Store) -> Vec<String> {
        let mut v: Vec<String> =
            fs::read_dir(store.dir()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::{names_in, put, store};
    use super::*;

    #[test]
    fn labels_cannot_escape_the_store() {
        assert_eq!(sanitize_label("../../x", "stdin"), "_.._x");
        assert_eq!(sanitize_label("/etc/passwd", "stdin"), "_etc_passwd");
        assert_eq!(sanitize_label("", "stdin"), "stdin");
        assert_eq!(sanitize_label("...", "stdin"), "stdin");
        assert_eq!(sanitize_label("a\u{7}b\nc", "stdin"), "a_b_c");
        assert_eq!(sanitize_label(&"x".repeat(500), "stdin").len(), 64);
        assert!(is_entry_name(&entry_id(&sanitize_label("../../x", "s"), &[7; 32])));
        assert!(!is_entry_name(".tmp-1-2-3"));
        assert!(!is_entry_name("foo-0123456789ab.meta"));
        assert!(!is_entry_name(GC_STAMP));
        assert!(!is_entry_name("../x-0123456789ab"));
        assert!(!is_entry_name("a/b-0123456789ab"));
    }

    #[test]
    fn concurrent_commits_of_the_same_content_leave_one_entry() {
        let (_tmp, store) = store();
        let now = now_secs();
        let ids: Vec<String> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8).map(|_| s.spawn(|| put(&store, "race", &[7u8; 100_000], now, 60))).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(ids.windows(2).all(|w| w[0] == w[1]));
        assert_eq!(names_in(&store), vec![ids[0].clone(), format!("{}{META_SUFFIX}", ids[0])]);
        assert_eq!(fs::read(store.data_path(&ids[0])).unwrap(), vec![7u8; 100_000]);
    }

    #[test]
    fn commit_replaces_a_planted_symlink_and_cleans_up_on_failure() {
        let (tmp, store) = store();
        let outside = tmp.path().join("outside");
        fs::write(&outside, b"untouched").unwrap();
        let digest = *blake3::hash(b"data").as_bytes();
        let id = entry_id("x", &digest);
        std::os::unix::fs::symlink(&outside, store.data_path(&id)).unwrap();
        assert_eq!(put(&store, "x", b"data", now_secs(), 60), id);
        assert_eq!(fs::read(&outside).unwrap(), b"untouched");
        assert!(fs::symlink_metadata(store.data_path(&id)).unwrap().is_file());

        // A directory under the name cannot be replaced: an error, and no
        // temporary file left behind.
        let digest = *blake3::hash(b"other").as_bytes();
        fs::create_dir(store.data_path(&entry_id("y", &digest))).unwrap();
        let mut t = store.create_temp().unwrap();
        t.file.write_all(b"other").unwrap();
        let meta =
            Meta { id: entry_id("y", &digest), digest: digest_hex(&digest), bytes: 5, ..store.read_meta(&id).unwrap() };
        assert!(store.commit(&t.path, &meta).is_err());
        assert!(names_in(&store).iter().all(|n| !n.starts_with(TEMP_PREFIX)), "{:?}", names_in(&store));
    }

    #[test]
    fn sizes_and_ages_read_well() {
        assert_eq!(format_size(0), "0 B");
        assert_eq!(format_size(1023), "1023 B");
        assert_eq!(format_size(1536), "1.5 KiB");
        assert_eq!(format_size(5 << 30), "5.0 GiB");
        assert_eq!(format_age(59), "59s");
        assert_eq!(format_age(3600), "1h");
        assert_eq!(format_age(8 * 86_400), "8d");
    }
}
