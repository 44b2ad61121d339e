//! The store: a private directory of exact originals and their metadata,
//! and the commands that read and collect it.
//!
//! Files: this one (opening the store, temporary files, commit, entry
//! names), `env` (settings, read from the environment by the caller),
//! `sys` (system calls relative to the directory's descriptor), `meta`
//! (metadata), `lookup` (which entry an id, a prefix or a label names),
//! `show`, `ls`, `rm`, `gc` (with the automatic collection after a run).
//!
//! Layout: one flat directory. outbox's own names are
//! - `{label}-{hex}`: an original, byte for byte (an *entry*), where `hex`
//!   is the first 12 (or more) hex digits of its BLAKE3 digest;
//! - `{label}-{hex}.meta`: its metadata, JSON ([`Meta`]), which holds the
//!   full 256-bit digest;
//! - `.tmp-{pid}-{nanos}-{n}`: a file being written (spill or metadata);
//! - `gc-stamp`: an empty marker whose mtime records the last automatic
//!   collection ([`maybe_collect`]). It is not an entry name.
//!
//! Nothing else in the directory is ever read, changed or removed, and
//! neither is any of the names above when it is a symlink, not a regular
//! file, or owned by another user.
//!
//! Ids work like git's abbreviated hashes. An entry's id is its name: 12
//! hex digits when no other entry of the label holds them, more when one
//! does (a 48-bit collision, or a damaged entry under the short name).
//! `show` and `rm` accept any unique prefix. Two different inputs never
//! share an entry: an existing entry is reused only after its bytes are
//! re-hashed and found equal to the new input's digest, and `show`
//! re-hashes an entry before printing it.
//!
//! Invariants:
//! - the directory is ours, a real directory (never a symlink), mode 0700,
//!   checked on the descriptor every later call is relative to (`sys`);
//!   anything else is refused, not repaired or followed;
//! - entries and metadata are 0600 whatever the umask (a reused entry is
//!   made 0600 again);
//! - an entry only ever appears complete: data is written to an exclusively
//!   created `.tmp-…` file and renamed into place without replacing an
//!   existing name;
//! - metadata is written before its entry is renamed into place, so whoever
//!   sees an entry also finds its metadata;
//! - names that start with a dot are temporary; entry and metadata names
//!   never do.
//!
//! Concurrency: writers of the same content race only on the final rename,
//! which `RENAME_NOREPLACE` settles (the loser checks the winner's bytes and
//! removes its temporary file). Collection takes an exclusive `flock` on the
//! directory and a commit a shared one, so gc never judges an entry expired
//! (or its fresh metadata orphaned) while a run is reusing or placing it. A
//! running writer holds a `flock` on its temporary file, so gc never removes
//! a live one. `show` opens the data once and reads only from that
//! descriptor: a gc that unlinks the entry meanwhile cannot shorten what is
//! printed.

use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::stream::spill::SpillTarget;
use meta::{meta_from_file, MetaState};
use sys::{annotate, chmod_private, try_flock, Lock, StoreDir};

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
/// Hex digits of the digest in an entry id, at least.
pub const ID_HEX: usize = 12;
/// Hex digits of a full BLAKE3 digest.
const FULL_HEX: usize = 64;
pub(crate) const MAX_LABEL: usize = 64;
/// Metadata is a few hundred bytes; a larger file is not ours.
pub(crate) const MAX_META_BYTES: u64 = 1 << 20;
/// Read size for `show --lines` / `--grep` and for re-hashing.
pub(crate) const COPY_BUF: usize = 256 * 1024;
/// How long a commit waits for a running gc before going ahead unlocked.
const COMMIT_LOCK_WAIT: Duration = Duration::from_secs(5);

mod env;
mod gc;
mod lookup;
mod ls;
mod meta;
mod rm;
mod show;
mod space;
mod sys;

pub use env::StoreEnv;
pub use gc::{maybe_collect, run_gc, GcOptions};
pub use ls::{run_ls, LsOptions};
pub use meta::Meta;
pub use rm::{run_rm, RmOptions};
pub use show::{parse_line_range, run_show, LineRange, ShowOptions};
pub use space::{reserve, DEFAULT_MAX_STORE_BYTES, MIN_RESERVE_BYTES, RESERVE_PERCENT};

/// A stored original.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its id, which is also its name in the store.
    pub id: String,
    /// Where it is, for users to read (access goes through the store's
    /// descriptor).
    pub path: PathBuf,
}

/// An opened, verified store directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: Arc<StoreDir>,
    /// TTL given to the entries this store commits.
    ttl_seconds: u64,
    /// Size cap that automatic collection enforces, if any.
    max_bytes: Option<u64>,
    /// Free space a spill leaves (`OUTBOX_MIN_FREE_BYTES`); None for the
    /// default, max(1 GiB, 5%).
    min_free: Option<u64>,
}

impl Store {
    /// Opens the store that `env` names (see [`Store::open`]), with its TTL
    /// and size cap.
    pub fn open_env(env: &StoreEnv) -> io::Result<Store> {
        let mut store = Store::open(env.dir()?)?;
        store.ttl_seconds = env.ttl_seconds;
        // Malformed settings are reported by `outbox gc`; a run keeps its
        // output under the defaults.
        store.max_bytes = env.max_bytes.clone().unwrap_or(Some(DEFAULT_MAX_STORE_BYTES));
        store.min_free = env.min_free_bytes.clone().ok().flatten();
        Ok(store)
    }

    /// Opens (creating if missing, mode 0700) and verifies the directory,
    /// with the default TTL and no size cap. Everything this store does
    /// later happens in the directory opened here, whatever becomes of its
    /// path.
    pub fn open(dir: &Path) -> io::Result<Store> {
        let dir = StoreDir::create_or_open(dir)?;
        Ok(Store { dir: Arc::new(dir), ttl_seconds: DEFAULT_TTL_SECONDS, max_bytes: None, min_free: None })
    }

    /// Opens an existing store (verified as [`Store::open`] does) without
    /// creating one: `None` when there is none (reading commands).
    pub fn open_existing(dir: &Path) -> io::Result<Option<Store>> {
        Ok(StoreDir::open_existing(dir)?.map(|d| Store {
            dir: Arc::new(d),
            ttl_seconds: DEFAULT_TTL_SECONDS,
            max_bytes: None,
            min_free: None,
        }))
    }

    /// The store directory's descriptor: what every access in it is
    /// relative to (the history folder too).
    pub(crate) fn dir_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.dir.fd.as_fd()
    }

    /// The path the store was opened by.
    pub fn dir(&self) -> &Path {
        &self.dir.path
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
        self.dir.path.join(id)
    }

    pub fn meta_path(&self, id: &str) -> PathBuf {
        self.dir.path.join(format!("{id}{META_SUFFIX}"))
    }

    pub(crate) fn store_dir(&self) -> &StoreDir {
        &self.dir
    }

    /// Creates a fresh temporary file, exclusively, mode 0600, and locks it
    /// so that gc can tell it is in use however long the writer is silent.
    /// The spill into it stops short of the free-space reserve (`space`).
    pub fn create_temp(&self) -> io::Result<SpillTarget> {
        let (file, name) = self.create_temp_named()?;
        let guard = space::FreeSpace { dir: self.dir.clone(), explicit: self.min_free };
        Ok(SpillTarget { file, path: self.dir.path.join(name), guard: Some(Box::new(guard)), direct: true })
    }

    fn create_temp_named(&self) -> io::Result<(std::fs::File, String)> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        loop {
            let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let name = format!("{TEMP_PREFIX}{}-{nanos:08x}-{n}", std::process::id());
            match self.dir.create_new(&name) {
                Ok(file) => {
                    // Best effort: without flock, gc falls back on the mtime
                    // grace period alone.
                    let _ = try_flock(&file, Lock::Exclusive);
                    return Ok((file, name));
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    let e = annotate(e, "cannot create a temporary file in the store", &self.dir.path);
                    return Err(io::Error::new(
                        e.kind(),
                        format!("{e}; check that it is writable and has free space (outbox gc frees space)"),
                    ));
                }
            }
        }
    }

    /// Removes a temporary file that will not become an entry (empty
    /// output keeps none), through the store's own directory handle.
    pub fn discard(&self, temp: &Path) -> io::Result<()> {
        match temp.file_name().and_then(|n| n.to_str()) {
            Some(n) if n.starts_with(TEMP_PREFIX) && temp.parent() == Some(self.dir.path.as_path()) => {
                self.dir.unlink(n)
            }
            _ => Err(io::Error::new(io::ErrorKind::InvalidInput, "not a temporary file of this store")),
        }
    }

    /// Moves a complete temporary file into place and writes its metadata;
    /// sets `meta.id` to the entry's id. The id is `{label}-{12 hex}`
    /// unless that name holds other bytes, then one more digit at a time.
    /// An existing entry is reused only when its bytes hash to this digest
    /// (its metadata is refreshed, which restarts its TTL, and it is made
    /// 0600 again). On error the temporary file is removed.
    ///
    /// Races: two writers of the same content both write (equivalent)
    /// metadata, one rename wins, the other sees `AlreadyExists`, re-hashes
    /// the winner's file and removes its temporary file: one entry, no
    /// temporary files.
    pub fn commit(&self, temp: &Path, meta: &mut Meta) -> io::Result<Entry> {
        let temp = match temp.file_name().and_then(|n| n.to_str()) {
            Some(n) if n.starts_with(TEMP_PREFIX) && temp.parent() == Some(self.dir.path.as_path()) => n,
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is not a temporary file of this store", path_text(temp)),
                ))
            }
        };
        let res = self.place(temp, meta);
        if res.is_err() {
            let _ = self.dir.unlink(temp);
        }
        res
    }

    fn place(&self, temp: &str, meta: &mut Meta) -> io::Result<Entry> {
        let hex = meta.digest.clone();
        if hex.len() != FULL_HEX || !is_lower_hex(&hex) || sanitize_label(&meta.label, "") != meta.label {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "metadata without a valid label and digest"));
        }
        // Held until the rename is done (dropped at return): see the module
        // docs.
        let _lock = self.lock_shared_briefly();
        for len in ID_HEX..=FULL_HEX {
            let id = format!("{}-{}", meta.label, &hex[..len]);
            let placed = |meta: &mut Meta| {
                meta.id = id.clone();
                Entry { id: id.clone(), path: self.data_path(&id) }
            };
            match self.dir.stat(&id) {
                Ok(_) => {
                    if self.holds(&id, meta) {
                        let _ = self.dir.unlink(temp);
                        let entry = placed(meta);
                        // The stored copy is valid whatever happens here;
                        // failing to refresh the metadata keeps the older TTL.
                        let _ = self.write_meta(meta);
                        return Ok(entry);
                    }
                    // Other bytes under this name: a longer id.
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(annotate(e, "cannot inspect", &self.data_path(&id))),
            }
            let entry = placed(meta);
            // Metadata first: whoever sees the data also finds its metadata.
            self.write_meta(meta).map_err(|e| annotate(e, "cannot write the metadata", &self.meta_path(&id)))?;
            match self.dir.rename_noreplace(temp, &id) {
                Ok(()) => return Ok(entry),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    if self.holds(&id, meta) {
                        // A concurrent run stored the same content first.
                        let _ = self.dir.unlink(temp);
                        return Ok(entry);
                    }
                    // Someone placed other bytes meanwhile (and our metadata
                    // now describes them wrongly, which `show` detects).
                }
                Err(e) => return Err(annotate(e, "cannot move the spill into place", &entry.path)),
            }
        }
        Err(io::Error::new(io::ErrorKind::AlreadyExists, "every id for this content is taken by other bytes"))
    }

    /// Whether `name` is a regular file of ours whose bytes are exactly
    /// what `meta` describes (size, then a re-hash); if so it is made 0600.
    fn holds(&self, name: &str, meta: &Meta) -> bool {
        let Ok((file, md)) = self.dir.open_read(name) else { return false };
        if md.len() != meta.bytes {
            return false;
        }
        match hash_file(&file) {
            Ok(d) if digest_hex(&d) == meta.digest => {
                let _ = chmod_private(&file);
                true
            }
            _ => false,
        }
    }

    /// Writes metadata atomically (temporary file, then rename), 0600.
    pub fn write_meta(&self, meta: &Meta) -> io::Result<()> {
        let (mut file, tmp) = self.create_temp_named()?;
        let json = serde_json::to_vec_pretty(meta).map_err(io::Error::other)?;
        let res = file.write_all(&json).and_then(|_| file.write_all(b"\n"));
        drop(file);
        if let Err(e) = res.and_then(|_| self.dir.rename(&tmp, &format!("{}{META_SUFFIX}", meta.id))) {
            let _ = self.dir.unlink(&tmp);
            return Err(e);
        }
        Ok(())
    }

    /// Whether the entry `id` is (still) in the store: a regular file of
    /// ours under that name.
    pub fn holds_entry(&self, id: &str) -> bool {
        self.dir.stat(id).is_ok_and(|st| st.ours())
    }

    /// Reads the metadata of `id`, if present, ours and well-formed.
    pub fn read_meta(&self, id: &str) -> Option<Meta> {
        let (file, _) = self.dir.open_read(&format!("{id}{META_SUFFIX}")).ok()?;
        match meta_from_file(file, id) {
            MetaState::Ok(m) => Some(m),
            _ => None,
        }
    }

    /// A shared lock on the directory, waiting at most [`COMMIT_LOCK_WAIT`]
    /// for a running gc; after that (or without flock) the commit goes
    /// ahead unlocked rather than losing the output.
    fn lock_shared_briefly(&self) -> Option<StoreDir> {
        let dir = self.dir.reopen().ok()?;
        let deadline = Instant::now() + COMMIT_LOCK_WAIT;
        loop {
            match try_flock(&dir.fd, Lock::Shared) {
                Ok(true) => return Some(dir),
                Ok(false) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                _ => return None,
            }
        }
    }
}

/// BLAKE3 of a file's bytes from its start, read from the descriptor.
pub(crate) fn hash_file(file: &std::fs::File) -> io::Result<[u8; 32]> {
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; COPY_BUF];
    let mut r = file;
    loop {
        match r.read(&mut buf) {
            Ok(0) => return Ok(*hasher.finalize().as_bytes()),
            Ok(n) => {
                hasher.update(&buf[..n]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The shortest id content with `digest` can have under `label` (its id
/// when no other entry holds those 12 digits).
pub fn entry_id(label: &str, digest: &[u8; 32]) -> String {
    format!("{label}-{}", &digest_hex(digest)[..ID_HEX])
}

pub fn digest_hex(digest: &[u8; 32]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn is_lower_hex(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
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

/// A name's label and hex digits, when it is an entry name in outbox's own
/// format. No such name contains `/` or starts with a dot, and
/// [`GC_STAMP`] is not one.
pub(crate) fn split_id(name: &str) -> Option<(&str, &str)> {
    let (label, hex) = name.rsplit_once('-')?;
    let ok = (ID_HEX..=FULL_HEX).contains(&hex.len())
        && is_lower_hex(hex)
        && !label.is_empty()
        && label.len() <= MAX_LABEL
        && !label.starts_with('.')
        && label.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    ok.then_some((label, hex))
}

/// Whether `name` is an entry name in outbox's own format.
pub fn is_entry_name(name: &str) -> bool {
    split_id(name).is_some()
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

/// A path in a message: escaped by the one sanitiser (a directory name can
/// hold terminal controls or bidi overrides), never shortened.
pub fn path_text(p: &Path) -> String {
    crate::text::sanitize::display(p.as_os_str().as_bytes()).text
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
    use std::fs;

    /// A private store in a fresh temporary directory.
    pub(crate) fn store() -> (tempfile::TempDir, Store) {
        let tmp = tempfile::tempdir().unwrap();
        let s = Store::open(&tmp.path().join("store")).unwrap();
        (tmp, s)
    }

    /// The metadata a finished one-line text run of `data` writes.
    pub(crate) fn meta_for(label: &str, data: &[u8], created: u64, ttl: u64) -> Meta {
        let digest = *blake3::hash(data).as_bytes();
        Meta {
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
        }
    }

    /// Stores `data` as a finished run would; returns the entry id.
    pub(crate) fn put(store: &Store, label: &str, data: &[u8], created: u64, ttl: u64) -> String {
        let mut t = store.create_temp().unwrap();
        t.file.write_all(data).unwrap();
        drop(t.file);
        let mut meta = meta_for(label, data, created, ttl);
        store.commit(&t.path, &mut meta).unwrap().id
    }

    pub(crate) fn names_in(store: &Store) -> Vec<String> {
        let mut v: Vec<String> =
            fs::read_dir(store.dir()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests;
