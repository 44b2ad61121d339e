//! The store: a private directory of exact originals and their metadata,
//! and the commands that read and collect it (`show`, `ls`, `gc`).
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

use std::ffi::CString;
use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context as _};
use regex::bytes::Regex;
use serde::{Deserialize, Serialize};

use crate::stream::spill::SpillTarget;

/// What to do about a store that cannot be created or used.
const DIR_HINT: &str = "set OUTBOX_DIR or pass --dir to use another directory";

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
const MAX_LABEL: usize = 64;
/// Metadata is a few hundred bytes; a larger file is not ours.
const MAX_META_BYTES: u64 = 1 << 20;
/// Read size for `show --lines` / `--grep`.
const COPY_BUF: usize = 256 * 1024;
/// How long a commit waits for a running gc before going ahead unlocked.
const COMMIT_LOCK_WAIT: Duration = Duration::from_secs(5);

/// Where the store lives, resolved from `--dir`, `OUTBOX_DIR`, then the
/// per-user cache directory (XDG on Linux).
pub fn resolve_dir(explicit: Option<&Path>) -> io::Result<PathBuf> {
    let env_dir = std::env::var_os("OUTBOX_DIR").filter(|v| !v.is_empty());
    let dir = if let Some(d) = explicit {
        d.to_path_buf()
    } else if let Some(d) = env_dir {
        PathBuf::from(d)
    } else if let Some(x) = std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from).filter(|p| p.is_absolute()) {
        x.join("outbox")
    } else if let Some(h) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        PathBuf::from(h).join(".cache").join("outbox")
    } else {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "no store directory: set OUTBOX_DIR or HOME, or pass --dir",
        ));
    };
    if dir.is_absolute() {
        Ok(dir)
    } else {
        Ok(std::env::current_dir()?.join(dir))
    }
}

/// Metadata kept beside each original, as JSON in `{id}.meta`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Meta {
    pub id: String,
    pub label: String,
    /// How the envelope was made: authoritative.
    pub strategy: String,
    /// Seconds since the Unix epoch.
    pub created: u64,
    pub ttl_seconds: u64,
    pub bytes: u64,
    pub chars: u64,
    pub lines: u64,
    /// False when the run was interrupted: the entry holds what arrived.
    pub complete: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<String>,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub exit_status: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Full BLAKE3 digest, hex.
    pub digest: String,
}

impl Meta {
    /// When the entry expires (seconds since the epoch): its own creation
    /// time plus its own TTL, so a later `OUTBOX_TTL_SECONDS` never changes
    /// the fate of entries already made.
    pub fn expires_at(&self) -> u64 {
        self.created.saturating_add(self.ttl_seconds)
    }
}

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
}

impl Store {
    /// Opens (creating if missing, mode 0700) and verifies the directory.
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
        Ok(Store { dir: dir.to_path_buf() })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
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

/// TTL for new entries: `OUTBOX_TTL_SECONDS`, else seven days.
pub fn ttl_from_env() -> u64 {
    std::env::var("OUTBOX_TTL_SECONDS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_TTL_SECONDS)
}

/// The store size cap from `OUTBOX_MAX_STORE_BYTES` (K/M/G suffixes), if
/// set. It counts entries and their metadata, not files being written.
pub fn max_store_bytes_from_env() -> Result<Option<u64>, String> {
    match std::env::var("OUTBOX_MAX_STORE_BYTES") {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => {
            Err("OUTBOX_MAX_STORE_BYTES is not a size: use a number with an optional K, M or G suffix".into())
        }
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => crate::text::size::parse_size(&v).map(Some).map_err(|e| format!("OUTBOX_MAX_STORE_BYTES: {e}")),
    }
}

/// Why a directory is not acceptable as the store, if it is not.
fn refusal(is_symlink: bool, is_dir: bool, uid: u32, mode: u32) -> Option<String> {
    if is_symlink {
        return Some(
            "it is a symbolic link, which outbox never follows; point --dir or OUTBOX_DIR at a real directory".into(),
        );
    }
    if !is_dir {
        return Some("it is not a directory; point --dir or OUTBOX_DIR at a directory".into());
    }
    let me = euid();
    if uid != me {
        return Some(format!(
            "it is owned by uid {uid}, not by you (uid {me}); point --dir or OUTBOX_DIR at a directory of your own"
        ));
    }
    let mode = mode & 0o777;
    if mode & 0o077 != 0 {
        return Some(format!(
            "it is open to group or others (mode {mode:03o}); stored outputs may hold secrets: run chmod 700 on it"
        ));
    }
    None
}

fn refuse(dir: &Path, why: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, format!("refusing store {}: {why}", dir.display()))
}

fn verify_dir(dir: &Path) -> io::Result<()> {
    let md = fs::symlink_metadata(dir).map_err(|e| annotate(e, "cannot inspect the store", dir))?;
    match refusal(md.file_type().is_symlink(), md.is_dir(), md.uid(), md.mode()) {
        Some(why) => Err(refuse(dir, why)),
        None => Ok(()),
    }
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn is_our_regular_file(path: &Path, size: Option<u64>) -> bool {
    match fs::symlink_metadata(path) {
        Ok(md) => md.file_type().is_file() && md.uid() == euid() && size.is_none_or(|s| md.len() == s),
        Err(_) => false,
    }
}

/// Adds what to do to an error about the store directory itself.
fn hint(e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{e}; {DIR_HINT}"))
}

fn annotate(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} ({}): {e}", path.display()))
}

/// rename(2) that fails with AlreadyExists instead of replacing `to`.
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    let f = CString::new(from.as_os_str().as_bytes()).map_err(io::Error::other)?;
    let t = CString::new(to.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: both are valid NUL-terminated paths that outlive the call.
    let r = unsafe { libc::renameat2(libc::AT_FDCWD, f.as_ptr(), libc::AT_FDCWD, t.as_ptr(), libc::RENAME_NOREPLACE) };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        // Filesystems without renameat2 flags: link(2) also refuses to
        // replace, then drop the temporary name.
        Some(libc::EINVAL) | Some(libc::ENOSYS) => {
            fs::hard_link(from, to)?;
            fs::remove_file(from)
        }
        _ => Err(e),
    }
}

/// Opens an entry's data file for reading without following a symlink.
pub fn open_data(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK).open(path)
}

/// Checks that an opened file is a regular file of ours. The check is on
/// the descriptor, so it holds for what is actually read.
fn check_ours(file: &File) -> io::Result<fs::Metadata> {
    let md = file.metadata()?;
    if !md.file_type().is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "it is not a regular file"));
    }
    if md.uid() != euid() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("it is owned by uid {}, not by you (uid {})", md.uid(), euid()),
        ));
    }
    Ok(md)
}

/// `flock(op | LOCK_NB)`: Ok(false) when someone else holds it.
fn try_flock(fd: RawFd, op: libc::c_int) -> io::Result<bool> {
    loop {
        // SAFETY: flock on a descriptor we own; no memory is passed.
        if unsafe { libc::flock(fd, op | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Ok(false),
            _ => return Err(e),
        }
    }
}

// ---------------------------------------------------------------------------
// The directory, opened once.

/// What lstat says about a member of the store.
#[derive(Debug, Clone, Copy)]
struct Stat {
    /// A regular file (lstat: a symlink is not one).
    is_file: bool,
    uid: u32,
    size: u64,
    /// Seconds since the epoch.
    mtime: i64,
    /// The same in nanoseconds: orders files made within one second.
    mtime_ns: i128,
}

impl Stat {
    fn ours(&self) -> bool {
        self.is_file && self.uid == euid()
    }

    /// Seconds since the last change (0 when it is in the future).
    fn age(&self, now: u64) -> u64 {
        (now as i64).saturating_sub(self.mtime).max(0) as u64
    }
}

/// The store directory opened once and verified on the descriptor, so that
/// every later lookup, open and unlink (`*at` calls) happens in the
/// directory that was checked, never through a path that could have been
/// swapped for a symlink in between.
struct StoreDir {
    fd: OwnedFd,
    path: PathBuf,
}

impl StoreDir {
    fn open(path: &Path) -> io::Result<StoreDir> {
        // Path first, for the clearest message; then the descriptor.
        verify_dir(path)?;
        let c = CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
        // SAFETY: valid NUL-terminated path; the result is checked.
        let raw =
            unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
        if raw < 0 {
            return Err(annotate(io::Error::last_os_error(), "cannot open the store", path));
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let md = File::from(fd.try_clone()?).metadata()?;
        if let Some(why) = refusal(false, md.is_dir(), md.uid(), md.mode()) {
            return Err(refuse(path, why));
        }
        Ok(StoreDir { fd, path: path.to_path_buf() })
    }

    /// Opens an existing store; `None` when there is none (reading commands
    /// do not create one).
    fn open_existing(path: &Path) -> io::Result<Option<StoreDir>> {
        match fs::symlink_metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(annotate(e, "cannot inspect the store", path)),
            Ok(_) => StoreDir::open(path).map(Some),
        }
    }

    /// Names in the directory that could be ours (UTF-8; others never are).
    fn names(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for e in fs::read_dir(&self.path).map_err(|e| annotate(e, "cannot list the store", &self.path))? {
            if let Ok(name) = e?.file_name().into_string() {
                names.push(name);
            }
        }
        Ok(names)
    }

    fn stat(&self, name: &str) -> io::Result<Stat> {
        let c = member(name)?;
        // SAFETY: zeroed stat is a valid out-parameter; the name is a valid
        // C string; the descriptor is open.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::fstatat(self.fd.as_raw_fd(), c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Stat {
            is_file: st.st_mode & libc::S_IFMT == libc::S_IFREG,
            uid: st.st_uid,
            size: st.st_size.max(0) as u64,
            mtime: st.st_mtime,
            mtime_ns: st.st_mtime as i128 * 1_000_000_000 + st.st_mtime_nsec as i128,
        })
    }

    /// Opens a member for reading, never through a symlink (O_NOFOLLOW), and
    /// never blocking on a planted FIFO (O_NONBLOCK); then checks on the
    /// descriptor that it is a regular file of ours.
    fn open_read(&self, name: &str) -> io::Result<(File, fs::Metadata)> {
        let c = member(name)?;
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK;
        // SAFETY: valid C string and open descriptor; the result is checked.
        let raw = unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags) };
        if raw < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ELOOP) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "it is a symbolic link, which outbox never follows",
                ));
            }
            return Err(e);
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let file = unsafe { File::from_raw_fd(raw) };
        let md = check_ours(&file)?;
        Ok((file, md))
    }

    fn unlink(&self, name: &str) -> io::Result<()> {
        let c = member(name)?;
        // SAFETY: valid C string and open descriptor. unlinkat removes the
        // name itself: a symlink is never followed.
        if unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Creates the gc stamp if needed and sets its mtime to now.
    fn touch_stamp(&self) -> io::Result<()> {
        let c = member(GC_STAMP)?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK;
        // SAFETY: valid C string and open descriptor; the result is checked.
        let raw = unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags, 0o600 as libc::c_uint) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fresh descriptor owned here.
        let file = unsafe { File::from_raw_fd(raw) };
        check_ours(&file)?;
        // SAFETY: a null times pointer means "now" for both timestamps.
        if unsafe { libc::futimens(file.as_raw_fd(), std::ptr::null()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Blocks until the exclusive lock is held (best effort: a filesystem
    /// without flock gives no lock, and gc goes ahead).
    fn lock_exclusive(&self) {
        // SAFETY: flock on our descriptor; no memory is passed.
        while unsafe { libc::flock(self.fd.as_raw_fd(), libc::LOCK_EX) } != 0 {
            if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return;
            }
        }
    }
}

/// A member name as a C string; a name with a `/` would leave the directory.
fn member(name: &str) -> io::Result<CString> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("'{name}' is not a name in the store")));
    }
    CString::new(name).map_err(io::Error::other)
}

/// Metadata as found on disk.
#[derive(Debug, Clone)]
enum MetaState {
    Ok(Meta),
    Missing,
    /// Present but not usable: why.
    Invalid(String),
}

fn read_meta_at(dir: &StoreDir, id: &str) -> MetaState {
    match dir.open_read(&format!("{id}{META_SUFFIX}")) {
        Ok((file, _)) => meta_from_file(file, id),
        Err(e) if e.kind() == io::ErrorKind::NotFound => MetaState::Missing,
        Err(e) => MetaState::Invalid(e.to_string()),
    }
}

/// Parses metadata from an opened file and checks that it describes `id`.
fn meta_from_file(file: File, id: &str) -> MetaState {
    let md = match check_ours(&file) {
        Ok(md) => md,
        Err(e) => return MetaState::Invalid(e.to_string()),
    };
    if md.len() > MAX_META_BYTES {
        return MetaState::Invalid(format!("it is {} bytes, far more than metadata ever is", md.len()));
    }
    let mut buf = Vec::with_capacity(md.len() as usize);
    if let Err(e) = file.take(MAX_META_BYTES).read_to_end(&mut buf) {
        return MetaState::Invalid(e.to_string());
    }
    let meta: Meta = match serde_json::from_slice(&buf) {
        Ok(m) => m,
        Err(e) => return MetaState::Invalid(format!("it is not valid metadata: {e}")),
    };
    let hex = id.rsplit_once('-').map_or("", |(_, h)| h);
    if meta.id != id || !meta.digest.starts_with(hex) {
        return MetaState::Invalid("it describes other content".into());
    }
    MetaState::Ok(meta)
}

// ---------------------------------------------------------------------------
// outbox show

/// Lines `first..=last` (1-based); `last: None` runs to the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRange {
    pub first: u64,
    pub last: Option<u64>,
}

impl std::fmt::Display for LineRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.last {
            Some(l) => write!(f, "{}:{l}", self.first),
            None => write!(f, "{}:", self.first),
        }
    }
}

/// Parses `A:B`, `A:` (to the end), `:B` (from the start) or `N` (one line).
pub fn parse_line_range(s: &str) -> Result<LineRange, String> {
    let usage = "use A:B (1-based, both included), A: to the end, :B from the start, or N for one line";
    let num = |t: &str, default: Option<u64>| -> Result<Option<u64>, String> {
        let t = t.trim();
        if t.is_empty() {
            return Ok(default);
        }
        match t.parse::<u64>() {
            Ok(0) => Err(format!("'{s}': lines are numbered from 1; {usage}")),
            Ok(n) => Ok(Some(n)),
            Err(_) => Err(format!("'{s}' is not a line range: {usage}")),
        }
    };
    let (first, last) = match s.split_once(':') {
        Some((a, b)) => (num(a, Some(1))?.unwrap_or(1), num(b, None)?),
        None => {
            let n = num(s, None)?.ok_or_else(|| format!("'{s}' is not a line range: {usage}"))?;
            (n, Some(n))
        }
    };
    if let Some(l) = last {
        if l < first {
            return Err(format!("'{s}' is empty: its first line comes after its last; {usage}"));
        }
    }
    Ok(LineRange { first, last })
}

/// `outbox show` options.
#[derive(Debug, Clone, Default)]
pub struct ShowOptions {
    /// Entry id, as printed in the envelope header (`id`) or by `outbox ls`.
    pub id: String,

    /// Print only lines A to B, 1-based and both included, exactly as
    /// stored (terminators too). `A:` runs to the end, `:B` starts at the
    /// first line, `N` is one line.
    pub lines: Option<LineRange>,

    /// Print the lines that match REGEX (Rust regex syntax; `(?i)` for any
    /// case) as `LINENO: TEXT`, control characters escaped. With --lines,
    /// only lines in that range are searched.
    pub grep: Option<String>,
}

/// How a `--lines` / `--grep` pass ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LinesDone {
    /// Lines in the entry, when it was read to its end.
    total: Option<u64>,
    /// Lines printed (`--grep`: matching lines).
    printed: u64,
}

/// Copies lines `range` of `r` to `out`, exact bytes and terminators, in
/// chunks of `buf_size`; stops reading after the last line asked for.
fn copy_lines(r: &mut impl Read, out: &mut impl Write, range: LineRange, buf_size: usize) -> io::Result<LinesDone> {
    let last = range.last.unwrap_or(u64::MAX);
    let mut buf = vec![0u8; buf_size.max(1)];
    // Number of the line the next byte belongs to.
    let mut line = 1u64;
    let mut ends_in_newline = true;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        ends_in_newline = chunk[n - 1] == b'\n';
        let mut pos = 0;
        while line < range.first && pos < n {
            match memchr::memchr(b'\n', &chunk[pos..]) {
                Some(i) => {
                    pos += i + 1;
                    line += 1;
                }
                None => pos = n,
            }
        }
        if pos == n {
            continue;
        }
        // In range from `pos`: find where line `last` ends, if here.
        let start = pos;
        let mut end = n;
        let mut done = false;
        while pos < n {
            match memchr::memchr(b'\n', &chunk[pos..]) {
                Some(i) => {
                    pos += i + 1;
                    line += 1;
                    if line > last {
                        end = pos;
                        done = true;
                        break;
                    }
                }
                None => pos = n,
            }
        }
        out.write_all(&chunk[start..end])?;
        if done {
            return Ok(LinesDone { total: None, printed: last - range.first + 1 });
        }
    }
    let total = line - 1 + u64::from(!ends_in_newline);
    let printed = total.min(last).saturating_sub(range.first - 1);
    Ok(LinesDone { total: Some(total), printed })
}

/// Prints `LINENO: TEXT` for each line in `range` that `re` matches (the
/// terminator and a `\r` before it are not matched). A line is matched
/// whole, so memory grows with the longest line, as in grep.
fn grep_lines(r: impl Read, out: &mut impl Write, re: &Regex, range: LineRange) -> io::Result<LinesDone> {
    let last = range.last.unwrap_or(u64::MAX);
    let mut reader = BufReader::with_capacity(COPY_BUF, r);
    let mut line = Vec::new();
    let mut lineno = 0u64;
    let mut printed = 0u64;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        lineno += 1;
        if lineno < range.first {
            continue;
        }
        if lineno > last {
            return Ok(LinesDone { total: None, printed });
        }
        let mut body = line.as_slice();
        if let Some(b) = body.strip_suffix(b"\n") {
            body = b.strip_suffix(b"\r").unwrap_or(b);
        }
        if re.is_match(body) {
            let shown = crate::text::sanitize::display(body);
            writeln!(out, "{lineno}: {}", shown.text)?;
            printed += 1;
        }
    }
    Ok(LinesDone { total: Some(lineno), printed })
}

/// The message for an id that is not (or no longer) in the store.
fn gone(id: &str) -> String {
    format!(
        "entry {id} is gone or expired: stored outputs are removed after their TTL (OUTBOX_TTL_SECONDS, \
         default 7 days), by outbox gc, or to keep the store under OUTBOX_MAX_STORE_BYTES; \
         re-run the source command to get its output again"
    )
}

/// Untrusted text shown in a message: escaped and bounded.
fn shown(s: &str) -> String {
    let text = crate::text::sanitize::display(s.as_bytes()).text;
    if text.chars().count() > 100 {
        format!("{}…", text.chars().take(99).collect::<String>())
    } else {
        text
    }
}

/// `outbox show`: the original exactly, or some of its lines.
pub fn run_show(args: &ShowOptions, dir: Option<&Path>) -> anyhow::Result<ExitCode> {
    let id = args.id.as_str();
    // Only names in entry format: `../x`, `/etc/passwd`, `.tmp-…`, `x.meta`
    // and `gc-stamp` are all refused here.
    if !is_entry_name(id) {
        bail!(
            "'{}' is not an entry id: ids look like stdin-3f2a9c1b7d4e (the \"id\" of the envelope header; \
             outbox ls lists them)",
            shown(id)
        );
    }
    let grep = match &args.grep {
        Some(r) => Some(Regex::new(r).map_err(|e| anyhow!("--grep is not a valid regex: {e}"))?),
        None => None,
    };
    let path = resolve_dir(dir)?;
    let Some(store) = StoreDir::open_existing(&path)? else { bail!(gone(id)) };

    // Metadata first: an entry is renamed into place after its metadata,
    // so an entry seen below without metadata lost it later.
    let meta = read_meta_at(&store, id);
    let (file, md) = match store.open_read(id) {
        Ok(x) => x,
        Err(e) if e.kind() == io::ErrorKind::NotFound => bail!(gone(id)),
        // A symlink, a FIFO, a file of another user: never read.
        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
            bail!("refusing to show {id} from {}: {e}; remove that name from the store", path.display())
        }
        Err(e) => return Err(anyhow!(e).context(format!("cannot open entry {id} in {}", path.display()))),
    };
    let now = now_secs();
    let expires_at = match &meta {
        MetaState::Ok(m) => m.expires_at(),
        _ => (md.mtime().max(0) as u64).saturating_add(DEFAULT_TTL_SECONDS),
    };
    if expires_at < now {
        bail!(
            "entry {id} is expired (its TTL ended {} ago) and will be removed by the next gc; \
             re-run the source command to get its output again",
            format_age(now - expires_at)
        );
    }
    match &meta {
        MetaState::Ok(m) if m.bytes != md.len() => bail!(
            "entry {id} does not match its metadata ({} bytes stored, {} recorded): it was changed or damaged; \
             re-run the source command to get its output again",
            md.len(),
            m.bytes
        ),
        MetaState::Ok(m) if !m.complete => {
            let by = m.interrupted_by.as_deref().map(|s| format!(" by {}", shown(s))).unwrap_or_default();
            crate::say!(
                "warning: entry {id} is incomplete: it holds only what arrived before the run was \
                 interrupted{by}; re-run the source command for the whole output"
            );
        }
        MetaState::Ok(_) => {}
        MetaState::Missing => {
            crate::say!("warning: entry {id} has no metadata, so it is unknown whether it is complete")
        }
        MetaState::Invalid(why) => crate::say!(
            "warning: the metadata of entry {id} is unusable ({}), so it is unknown whether it is complete",
            shown(why)
        ),
    }

    let size = md.len();
    let stdout = io::stdout();
    let result = match (args.lines, &grep) {
        (None, None) => {
            // One descriptor, read to the size it had when opened: a gc that
            // unlinks the entry meanwhile cannot cut this short. io::copy
            // uses sendfile/copy_file_range when stdout allows it, a buffer
            // otherwise.
            let mut out = stdout.lock();
            io::copy(&mut file.take(size), &mut out).and_then(|n| out.flush().map(|_| n)).map(|n| {
                if n < size {
                    Some(format!("entry {id} shrank while it was read: only {n} of {size} bytes were printed"))
                } else {
                    None
                }
            })
        }
        (range, grep) => {
            let range = range.unwrap_or(LineRange { first: 1, last: None });
            let mut out = BufWriter::with_capacity(64 * 1024, stdout.lock());
            let mut file = file;
            let done = match grep {
                Some(re) => grep_lines(file, &mut out, re, range),
                None => copy_lines(&mut file, &mut out, range, COPY_BUF),
            };
            done.and_then(|d| out.flush().map(|_| d)).map(|d| lines_problem(id, args, range, d))
        }
    };
    match result {
        Ok(None) => Ok(ExitCode::SUCCESS),
        Ok(Some(problem)) => bail!(problem),
        // The reader went away (`| head`): what it read was exact.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(anyhow!(e).context(format!("showing entry {id} failed; what was printed is incomplete"))),
    }
}

/// Notes and errors about a `--lines` / `--grep` pass: an error (returned)
/// when nothing could be printed because the range starts past the end.
fn lines_problem(id: &str, args: &ShowOptions, range: LineRange, d: LinesDone) -> Option<String> {
    let total = d.total?;
    if total == 0 && range.first == 1 {
        crate::say!("note: entry {id} is empty");
        return None;
    }
    if range.first > total {
        return Some(format!(
            "--lines {range}: entry {id} has only {total} line{}; nothing was printed",
            plural(total)
        ));
    }
    if range.last.is_some_and(|l| l > total) {
        crate::say!("note: entry {id} has {total} line{}; showing lines {}:{total}", plural(total), range.first);
    }
    if args.grep.is_some() && d.printed == 0 {
        crate::say!("note: no line of entry {id} matches the --grep pattern");
    }
    None
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

// ---------------------------------------------------------------------------
// outbox ls

/// `outbox ls` options.
#[derive(Debug, Clone, Default)]
pub struct LsOptions {
    /// Print a JSON array (one object per entry, newest first) for scripts.
    pub json: bool,
}

/// One entry as found in the store.
struct Listed {
    id: String,
    stat: Stat,
    meta: MetaState,
    meta_bytes: u64,
}

impl Listed {
    /// When it was made: the metadata's `created` (refreshed when identical
    /// content is stored again), else the file's mtime.
    fn born(&self) -> u64 {
        match &self.meta {
            MetaState::Ok(m) => m.created,
            _ => self.stat.mtime.max(0) as u64,
        }
    }

    fn expires_at(&self) -> u64 {
        match &self.meta {
            MetaState::Ok(m) => m.expires_at(),
            _ => self.born().saturating_add(DEFAULT_TTL_SECONDS),
        }
    }

    /// Oldest first; within one second, by mtime, then by name.
    fn age_key(&self) -> (u64, i128, &str) {
        (self.born(), self.stat.mtime_ns, &self.id)
    }
}

/// Entries (regular files of ours with entry names), newest first.
fn list_entries(dir: &StoreDir) -> io::Result<Vec<Listed>> {
    let mut out = Vec::new();
    for name in dir.names()? {
        if !is_entry_name(&name) {
            continue;
        }
        let Ok(stat) = dir.stat(&name) else { continue };
        if !stat.ours() {
            continue;
        }
        let meta = read_meta_at(dir, &name);
        let meta_bytes = dir.stat(&format!("{name}{META_SUFFIX}")).ok().filter(Stat::ours).map_or(0, |s| s.size);
        out.push(Listed { id: name, stat, meta, meta_bytes });
    }
    out.sort_by(|a, b| b.age_key().cmp(&a.age_key()));
    Ok(out)
}

/// `outbox ls --json`: one object per entry. Figures that only the
/// metadata knows are null when it is missing or unusable.
#[derive(Serialize)]
struct LsJson<'a> {
    id: &'a str,
    path: String,
    label: &'a str,
    strategy: Option<&'a str>,
    /// Seconds since the epoch.
    created: u64,
    age_seconds: u64,
    ttl_seconds: Option<u64>,
    expires: u64,
    expired: bool,
    /// Size on disk.
    bytes: u64,
    chars: Option<u64>,
    lines: Option<u64>,
    complete: Option<bool>,
    interrupted_by: Option<&'a str>,
    command: Option<&'a str>,
    exit_status: Option<i32>,
    digest: Option<&'a str>,
    /// "ok", "missing" or "invalid".
    metadata: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata_problem: Option<&'a str>,
}

fn ls_json<'a>(e: &'a Listed, dir: &Path, now: u64) -> LsJson<'a> {
    let m = match &e.meta {
        MetaState::Ok(m) => Some(m),
        _ => None,
    };
    let label = m.map_or_else(|| e.id.rsplit_once('-').map_or("", |(l, _)| l), |m| m.label.as_str());
    LsJson {
        id: &e.id,
        path: dir.join(&e.id).display().to_string(),
        label,
        strategy: m.map(|m| m.strategy.as_str()),
        created: e.born(),
        age_seconds: now.saturating_sub(e.born()),
        ttl_seconds: m.map(|m| m.ttl_seconds),
        expires: e.expires_at(),
        expired: e.expires_at() < now,
        bytes: e.stat.size,
        chars: m.map(|m| m.chars),
        lines: m.map(|m| m.lines),
        complete: m.map(|m| m.complete),
        interrupted_by: m.and_then(|m| m.interrupted_by.as_deref()),
        command: m.and_then(|m| m.command.as_deref()),
        exit_status: m.and_then(|m| m.exit_status),
        digest: m.map(|m| m.digest.as_str()),
        metadata: match e.meta {
            MetaState::Ok(_) => "ok",
            MetaState::Missing => "missing",
            MetaState::Invalid(_) => "invalid",
        },
        metadata_problem: match &e.meta {
            MetaState::Invalid(why) => Some(why),
            _ => None,
        },
    }
}

fn write_ls_table(out: &mut impl Write, entries: &[Listed], dir: &Path, now: u64) -> io::Result<()> {
    let rows: Vec<[String; 8]> = entries
        .iter()
        .map(|e| {
            let m = match &e.meta {
                MetaState::Ok(m) => Some(m),
                _ => None,
            };
            let expires = e.expires_at();
            [
                e.id.clone(),
                format_age(now.saturating_sub(e.born())),
                if expires < now { "expired".into() } else { format!("in {}", format_age(expires - now)) },
                format_size(e.stat.size),
                m.map_or_else(|| "?".into(), |m| m.lines.to_string()),
                m.map_or_else(|| e.id.rsplit_once('-').map_or("", |(l, _)| l).to_string(), |m| shown(&m.label)),
                match &e.meta {
                    MetaState::Ok(m) => shown(&m.strategy),
                    MetaState::Missing => "(no metadata)".into(),
                    MetaState::Invalid(_) => "(bad metadata)".into(),
                },
                match m {
                    Some(m) if m.complete => "yes".into(),
                    Some(_) => "no".into(),
                    None => "?".into(),
                },
            ]
        })
        .collect();
    let head = ["ID", "AGE", "EXPIRES", "SIZE", "LINES", "LABEL", "STRATEGY", "COMPLETE"];
    let mut width = head.map(|h| h.chars().count());
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut line = String::new();
    for r in std::iter::once(head.map(String::from)).chain(rows) {
        line.clear();
        for (i, (c, w)) in r.iter().zip(width).enumerate() {
            if i + 1 == r.len() {
                line.push_str(c);
            } else {
                // Numbers read best right-aligned.
                let right = matches!(i, 1 | 3 | 4);
                let pad = " ".repeat(w - c.chars().count());
                if right {
                    let _ = write!(line, "{pad}{c}  ");
                } else {
                    let _ = write!(line, "{c}{pad}  ");
                }
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    let total: u64 = entries.iter().map(|e| e.stat.size + e.meta_bytes).sum();
    writeln!(
        out,
        "{} entr{}, {} in {}",
        entries.len(),
        if entries.len() == 1 { "y" } else { "ies" },
        format_size(total),
        shown(&dir.display().to_string())
    )
}

/// `outbox ls`: entries newest first, as a table or (`--json`) an array.
pub fn run_ls(args: &LsOptions, dir: Option<&Path>) -> anyhow::Result<ExitCode> {
    let path = resolve_dir(dir)?;
    let entries = match StoreDir::open_existing(&path)? {
        Some(d) => list_entries(&d)?,
        None => Vec::new(),
    };
    let now = now_secs();
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let res = if args.json {
        let rows: Vec<LsJson> = entries.iter().map(|e| ls_json(e, &path, now)).collect();
        serde_json::to_writer_pretty(&mut out, &rows).map_err(io::Error::from).and_then(|_| writeln!(out))
    } else {
        write_ls_table(&mut out, &entries, &path, now)
    };
    match res.and_then(|_| out.flush()) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(anyhow!(e).context("cannot write to stdout")),
    }
}

// ---------------------------------------------------------------------------
// outbox gc and automatic collection

/// `outbox gc` options.
#[derive(Debug, Clone, Default)]
pub struct GcOptions {
    /// Print what would be removed; remove nothing.
    pub dry_run: bool,
}

/// What a collection does.
#[derive(Debug, Clone, Copy)]
struct GcPlan {
    /// Remove expired entries, stale temporary files, orphaned metadata.
    expire: bool,
    /// Then evict the oldest entries until the store is at most this size.
    cap: Option<u64>,
    dry_run: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Why {
    Expired { ago: u64 },
    OverCap,
    StaleTemp { age: u64 },
    OrphanMeta,
}

#[derive(Debug, Clone)]
struct Removal {
    name: String,
    why: Why,
    bytes: u64,
}

#[derive(Debug, Default)]
struct GcReport {
    removed: Vec<Removal>,
    failures: Vec<String>,
    entries: u64,
    entry_bytes: u64,
    temps: u64,
    metas: u64,
}

impl GcReport {
    fn note(&mut self, name: &str, why: Why, bytes: u64) {
        match why {
            Why::Expired { .. } | Why::OverCap => {
                self.entries += 1;
                self.entry_bytes += bytes;
            }
            Why::StaleTemp { .. } => self.temps += 1,
            Why::OrphanMeta => self.metas += 1,
        }
        self.removed.push(Removal { name: name.to_string(), why, bytes });
    }

    fn summary(&self, dry_run: bool) -> String {
        let mut s = format!(
            "{} {} entr{} ({} bytes), {} temporary file{}",
            if dry_run { "would remove" } else { "removed" },
            self.entries,
            if self.entries == 1 { "y" } else { "ies" },
            self.entry_bytes,
            self.temps,
            plural(self.temps),
        );
        if self.metas > 0 {
            let _ = write!(s, ", {} orphaned metadata file{}", self.metas, plural(self.metas));
        }
        s
    }
}

/// Removes an entry: data first, so that from then on it is gone for
/// `show`; its metadata is an orphan for a moment at most.
fn remove_entry(dir: &StoreDir, id: &str, dry_run: bool) -> io::Result<()> {
    if dry_run {
        return Ok(());
    }
    match dir.unlink(id) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    match dir.unlink(&format!("{id}{META_SUFFIX}")) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Whether a temporary file is left over: untouched for the grace period
/// and not locked by a running writer.
fn temp_is_stale(dir: &StoreDir, name: &str, st: &Stat, now: u64) -> bool {
    if !st.ours() || st.age(now) < TEMP_GRACE_SECONDS {
        return false;
    }
    match dir.open_read(name) {
        // The lock (if taken) is released when `file` closes.
        Ok((file, _)) => try_flock(file.as_raw_fd(), libc::LOCK_EX).unwrap_or(true),
        Err(_) => false,
    }
}

/// One pass of collection, as `plan` says. Only outbox's own names are
/// considered, and of those only regular files of ours: symlinks, foreign
/// files and directories are skipped, never followed or removed.
fn collect(dir: &StoreDir, plan: GcPlan, now: u64) -> io::Result<GcReport> {
    let mut report = GcReport::default();
    let fail = |report: &mut GcReport, name: &str, e: io::Error| {
        report.failures.push(format!("cannot remove {} from {}: {e}", shown(name), dir.path.display()))
    };
    let mut entry_names = Vec::new();
    let mut meta_names = Vec::new();
    let mut temp_names = Vec::new();
    for name in dir.names()? {
        if name.starts_with(TEMP_PREFIX) {
            temp_names.push(name);
        } else if name.strip_suffix(META_SUFFIX).is_some_and(is_entry_name) {
            meta_names.push(name);
        } else if is_entry_name(&name) {
            entry_names.push(name);
        }
        // Anything else, `gc-stamp` included, is not ours to touch.
    }

    if plan.expire {
        for name in &temp_names {
            let Ok(st) = dir.stat(name) else { continue };
            if temp_is_stale(dir, name, &st, now) {
                match if plan.dry_run { Ok(()) } else { dir.unlink(name) } {
                    Ok(()) => report.note(name, Why::StaleTemp { age: st.age(now) }, st.size),
                    Err(e) => fail(&mut report, name, e),
                }
            }
        }
    }

    // Entries by lstat only; metadata is read when a decision needs it, so
    // a cap check on a store under its cap costs one lstat per file.
    let mut live: Vec<(Listed, bool)> = Vec::new();
    for name in entry_names {
        let Ok(stat) = dir.stat(&name) else { continue };
        if !stat.ours() {
            continue;
        }
        let meta_bytes = dir.stat(&format!("{name}{META_SUFFIX}")).ok().filter(Stat::ours).map_or(0, |s| s.size);
        live.push((Listed { id: name, stat, meta: MetaState::Missing, meta_bytes }, false));
    }
    let load = |e: &mut (Listed, bool)| {
        if !e.1 {
            e.0.meta = read_meta_at(dir, &e.0.id);
            e.1 = true;
        }
    };

    if plan.expire {
        let mut kept = Vec::with_capacity(live.len());
        for mut e in live {
            load(&mut e);
            let expires = e.0.expires_at();
            if expires < now {
                let bytes = e.0.stat.size + e.0.meta_bytes;
                match remove_entry(dir, &e.0.id, plan.dry_run) {
                    Ok(()) => report.note(&e.0.id, Why::Expired { ago: now - expires }, bytes),
                    Err(err) => fail(&mut report, &e.0.id, err),
                }
            } else {
                kept.push(e);
            }
        }
        live = kept;

        for name in &meta_names {
            let id = &name[..name.len() - META_SUFFIX.len()];
            // Only a meta whose entry name is free: a meta beside a symlink
            // or a directory is left alone with it.
            if !matches!(dir.stat(id), Err(e) if e.kind() == io::ErrorKind::NotFound) {
                continue;
            }
            let Ok(st) = dir.stat(name) else { continue };
            // Metadata is written just before its entry is renamed into
            // place: a young one may be about to get its entry.
            if st.ours() && st.age(now) >= TEMP_GRACE_SECONDS {
                match if plan.dry_run { Ok(()) } else { dir.unlink(name) } {
                    Ok(()) => report.note(name, Why::OrphanMeta, st.size),
                    Err(e) => fail(&mut report, name, e),
                }
            }
        }
    }

    if let Some(cap) = plan.cap {
        let mut total: u64 = live.iter().map(|e| e.0.stat.size + e.0.meta_bytes).sum();
        if total > cap {
            live.iter_mut().for_each(load);
            live.sort_by(|a, b| a.0.age_key().cmp(&b.0.age_key()));
            // The newest entry stays whatever its size: an envelope has just
            // pointed at it, and removing it would break that promise before
            // anyone could read it.
            let newest = live.len().saturating_sub(1);
            for e in &live[..newest] {
                if total <= cap {
                    break;
                }
                let bytes = e.0.stat.size + e.0.meta_bytes;
                match remove_entry(dir, &e.0.id, plan.dry_run) {
                    Ok(()) => {
                        report.note(&e.0.id, Why::OverCap, bytes);
                        total -= bytes;
                    }
                    Err(err) => fail(&mut report, &e.0.id, err),
                }
            }
        }
    }
    Ok(report)
}

/// `outbox gc`: removes expired entries, stale temporary files and orphaned
/// metadata, then enforces `OUTBOX_MAX_STORE_BYTES`; prints what it removed.
pub fn run_gc(args: &GcOptions, dir: Option<&Path>) -> anyhow::Result<ExitCode> {
    let cap = max_store_bytes_from_env().map_err(|e| anyhow!("{e}; unset it or set it to a size such as 500M"))?;
    let path = resolve_dir(dir)?;
    let report = match StoreDir::open_existing(&path)? {
        None => GcReport::default(),
        Some(store) => {
            if !args.dry_run {
                store.lock_exclusive();
                // An explicit gc restarts the automatic one's clock.
                let _ = store.touch_stamp();
            }
            let plan = GcPlan { expire: true, cap, dry_run: args.dry_run };
            collect(&store, plan, now_secs()).with_context(|| format!("collecting {} failed", path.display()))?
            // The lock is released here, before printing: a slow reader of
            // this report must not hold up every outbox run.
        }
    };
    for f in &report.failures {
        crate::say!("{f}");
    }
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let verb = if args.dry_run { "would remove" } else { "removed" };
    let mut res = Ok(());
    for r in &report.removed {
        let why = match r.why {
            Why::Expired { ago } => format!("expired {} ago, {}", format_age(ago), format_size(r.bytes)),
            Why::OverCap => format!("oldest over OUTBOX_MAX_STORE_BYTES, {}", format_size(r.bytes)),
            Why::StaleTemp { age } => format!("temporary file left {} ago", format_age(age)),
            Why::OrphanMeta => "metadata without its entry".into(),
        };
        res = res.and_then(|_| writeln!(out, "{verb} {} ({why})", shown(&r.name)));
    }
    res = res.and_then(|_| writeln!(out, "{}", report.summary(args.dry_run))).and_then(|_| out.flush());
    if let Err(e) = res {
        if e.kind() != io::ErrorKind::BrokenPipe {
            return Err(anyhow!(e).context("cannot write to stdout"));
        }
    }
    if report.failures.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        bail!("{} file(s) could not be removed (see above); check their permissions", report.failures.len())
    }
}

/// Automatic collection, called by a run after its commit. Cheap: one
/// lstat of [`GC_STAMP`] when `OUTBOX_MAX_STORE_BYTES` is unset. At most
/// once per [`AUTO_GC_INTERVAL_SECONDS`] (the stamp's mtime) it runs a full
/// gc; with a cap set it checks the store's size on every run (an lstat per
/// file) so the cap holds. Silent: errors are ignored, and it never waits
/// for another process's lock.
pub fn maybe_collect(store: &Store) {
    let cap = max_store_bytes_from_env().ok().flatten();
    let Ok(dir) = StoreDir::open(store.dir()) else { return };
    let now = now_secs();
    let mut due = match dir.stat(GC_STAMP) {
        Ok(st) => {
            st.ours() && (st.age(now) >= AUTO_GC_INTERVAL_SECONDS || st.mtime > (now + AUTO_GC_INTERVAL_SECONDS) as i64)
        }
        Err(e) => e.kind() == io::ErrorKind::NotFound,
    };
    // Claim this hour first, so concurrent runs do not all collect; a stamp
    // that cannot be updated would make every run collect, so then none do.
    if due && dir.touch_stamp().is_err() {
        due = false;
    }
    if !due && cap.is_none() {
        return;
    }
    // Busy: another gc runs, or runs are committing; next time. (A
    // filesystem without flock gives an error: collect unlocked, as `outbox
    // gc` does, rather than never.)
    if let Ok(false) = try_flock(dir.fd.as_raw_fd(), libc::LOCK_EX) {
        return;
    }
    let _ = collect(&dir, GcPlan { expire: due, cap, dry_run: false }, now);
}

/// `45s`, `12m`, `3h`, `2d`.
fn format_age(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// `512 B`, `1.5 KiB`, `3.2 MiB` (powers of 1024, as sizes given to outbox).
fn format_size(bytes: u64) -> String {
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

#[cfg(test)]
mod tests {
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

    use proptest::prelude::*;

    /// The contract of `--lines`, naively: split after each `\n`.
    fn naive_lines(data: &[u8]) -> Vec<&[u8]> {
        let mut v: Vec<&[u8]> = data.split_inclusive(|&b| b == b'\n').collect();
        if data.is_empty() {
            v.clear();
        }
        v
    }

    proptest! {
        #[test]
        fn copy_lines_matches_a_naive_split(
            data in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'\n'), Just(b'\r'), Just(0xff)], 0..200),
            first in 1u64..30,
            span in proptest::option::of(0u64..30),
            buf in 1usize..9,
        ) {
            let range = LineRange { first, last: span.map(|s| first + s) };
            let lines = naive_lines(&data);
            let lo = (first - 1) as usize;
            let hi = range.last.map_or(lines.len(), |l| (l as usize).min(lines.len()));
            let want: Vec<u8> = if lo < hi { lines[lo..hi].concat() } else { Vec::new() };
            let mut out = Vec::new();
            let done = copy_lines(&mut &data[..], &mut out, range, buf).unwrap();
            prop_assert_eq!(&out, &want);
            match done.total {
                Some(t) => prop_assert_eq!(t, lines.len() as u64),
                // Stopped early: only once the last line asked for was out.
                None => prop_assert!(range.last.is_some_and(|l| l as usize <= lines.len())),
            }
            prop_assert_eq!(done.printed, hi.saturating_sub(lo) as u64);
        }

        #[test]
        fn grep_lines_numbers_match_a_naive_split(
            data in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'\n'), Just(b'\r')], 0..200),
        ) {
            let re = Regex::new("ab").unwrap();
            let mut want = String::new();
            for (i, l) in naive_lines(&data).iter().enumerate() {
                let body = l.strip_suffix(b"\n").map_or(*l, |b| b.strip_suffix(b"\r").unwrap_or(b));
                if re.is_match(body) {
                    want.push_str(&format!("{}: {}\n", i + 1, crate::text::sanitize::display(body).text));
                }
            }
            let mut out = Vec::new();
            grep_lines(&data[..], &mut out, &re, LineRange { first: 1, last: None }).unwrap();
            prop_assert_eq!(String::from_utf8(out).unwrap(), want);
        }
    }

    #[test]
    fn line_ranges_parse_and_explain_mistakes() {
        let r = |first, last| Ok(LineRange { first, last });
        assert_eq!(parse_line_range("3:7"), r(3, Some(7)));
        assert_eq!(parse_line_range("3:"), r(3, None));
        assert_eq!(parse_line_range(":7"), r(1, Some(7)));
        assert_eq!(parse_line_range("4"), r(4, Some(4)));
        assert_eq!(parse_line_range(":"), r(1, None));
        assert!(parse_line_range("0:3").unwrap_err().contains("numbered from 1"));
        assert!(parse_line_range("7:3").unwrap_err().contains("is empty"));
        assert!(parse_line_range("x").unwrap_err().contains("A:B"));
        assert!(parse_line_range("-1:3").unwrap_err().contains("A:B"));
        assert_eq!(LineRange { first: 2, last: None }.to_string(), "2:");
    }

    /// A private store in a fresh temporary directory.
    fn store() -> (tempfile::TempDir, Store) {
        let tmp = tempfile::tempdir().unwrap();
        let s = Store::open(&tmp.path().join("store")).unwrap();
        (tmp, s)
    }

    /// Stores `data` as a finished run would; returns the entry id.
    fn put(store: &Store, label: &str, data: &[u8], created: u64, ttl: u64) -> String {
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

    fn names_in(store: &Store) -> Vec<String> {
        let mut v: Vec<String> =
            fs::read_dir(store.dir()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        v.sort();
        v
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
    fn gc_spares_a_locked_temporary_file_however_old() {
        let (_tmp, store) = store();
        let t = store.create_temp().unwrap();
        let name = t.path.file_name().unwrap().to_str().unwrap().to_string();
        t.file.set_modified(SystemTime::now() - Duration::from_secs(2 * TEMP_GRACE_SECONDS)).unwrap();
        let dir = StoreDir::open(store.dir()).unwrap();
        let plan = GcPlan { expire: true, cap: None, dry_run: false };
        let r = collect(&dir, plan, now_secs()).unwrap();
        assert_eq!(r.temps, 0, "a running writer's file was removed");
        drop(t.file);
        let r = collect(&dir, plan, now_secs()).unwrap();
        assert_eq!(r.temps, 1);
        assert!(!names_in(&store).contains(&name));
    }

    #[test]
    fn gc_honours_each_entrys_own_ttl() {
        let (_tmp, store) = store();
        let now = now_secs();
        let old_short = put(&store, "a", b"1", now - 100, 50);
        let old_long = put(&store, "b", b"2", now - 100, 500);
        let dir = StoreDir::open(store.dir()).unwrap();
        let r = collect(&dir, GcPlan { expire: true, cap: None, dry_run: false }, now).unwrap();
        assert_eq!(r.removed.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), [old_short.as_str()]);
        assert_eq!(r.removed[0].why, Why::Expired { ago: 50 });
        assert_eq!(names_in(&store), vec![old_long.clone(), format!("{old_long}{META_SUFFIX}")]);
    }

    #[test]
    fn reusing_an_entry_restarts_its_ttl() {
        let (_tmp, store) = store();
        let now = now_secs();
        let id = put(&store, "a", b"same", now - 100, 50);
        assert_eq!(put(&store, "a", b"same", now, 50), id);
        assert_eq!(store.read_meta(&id).unwrap().created, now);
        let dir = StoreDir::open(store.dir()).unwrap();
        let r = collect(&dir, GcPlan { expire: true, cap: None, dry_run: false }, now).unwrap();
        assert!(r.removed.is_empty());
    }

    #[test]
    fn automatic_collection_runs_hourly_and_is_silent() {
        let (_tmp, store) = store();
        let now = now_secs();
        let first = put(&store, "a", b"expired", now - 100, 1);
        maybe_collect(&store);
        assert!(!store.data_path(&first).exists(), "the first run collects");
        assert!(store.dir().join(GC_STAMP).exists());
        let second = put(&store, "b", b"expired too", now - 100, 1);
        maybe_collect(&store);
        assert!(store.data_path(&second).exists(), "within the hour nothing more is collected");
        // An hour later it runs again.
        let stamp = File::options().write(true).open(store.dir().join(GC_STAMP)).unwrap();
        stamp.set_modified(SystemTime::now() - Duration::from_secs(AUTO_GC_INTERVAL_SECONDS + 1)).unwrap();
        maybe_collect(&store);
        assert!(!store.data_path(&second).exists());
    }

    #[test]
    fn the_cap_evicts_oldest_first_and_keeps_the_newest() {
        let (_tmp, store) = store();
        let now = now_secs();
        let a = put(&store, "a", &[1; 1000], now - 30, 1000);
        let b = put(&store, "b", &[2; 1000], now - 20, 1000);
        let c = put(&store, "c", &[3; 1000], now - 10, 1000);
        let dir = StoreDir::open(store.dir()).unwrap();
        let meta = fs::metadata(store.meta_path(&b)).unwrap().len();
        let plan = GcPlan { expire: false, cap: Some(2 * (1000 + meta)), dry_run: false };
        let r = collect(&dir, plan, now).unwrap();
        assert_eq!(
            r.removed.iter().map(|r| (r.name.as_str(), &r.why)).collect::<Vec<_>>(),
            [(a.as_str(), &Why::OverCap)]
        );
        let r = collect(&dir, GcPlan { cap: Some(0), ..plan }, now).unwrap();
        assert_eq!(r.removed.len(), 1);
        assert_eq!(names_in(&store), vec![c.clone(), format!("{c}{META_SUFFIX}")]);
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
