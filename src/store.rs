//! The store: a private directory of exact originals and their metadata.
//!
//! Invariants:
//! - the directory is ours, a real directory (never a symlink), mode 0700;
//!   anything else is refused, not repaired or followed;
//! - entries and metadata are 0600 whatever the umask;
//! - an entry `{label}-{12 hex of BLAKE3}` only ever appears complete: data
//!   is written to an exclusively created `.tmp-…` file and renamed into
//!   place without replacing an existing name; identical content under the
//!   same label is stored once;
//! - names that start with a dot are temporary; entry and metadata names
//!   never do.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::spill::SpillTarget;

/// Default time to live of an entry: seven days.
pub const DEFAULT_TTL_SECONDS: u64 = 7 * 24 * 3600;
pub const META_SUFFIX: &str = ".meta";
pub const TEMP_PREFIX: &str = ".tmp-";
const MAX_LABEL: usize = 64;

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
                        .map_err(|e| annotate(e, "cannot create the parent of the store", parent))?;
                }
                match fs::DirBuilder::new().mode(0o700).create(dir) {
                    Ok(()) => fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?,
                    // Another outbox created it meanwhile: verify below.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(annotate(e, "cannot create the store", dir)),
                }
            }
            Err(e) => return Err(annotate(e, "cannot inspect the store", dir)),
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

    /// Creates a fresh temporary file, exclusively, mode 0600.
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
                    return Ok(SpillTarget { file, path });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(annotate(e, "cannot create a temporary file in the store", &self.dir)),
            }
        }
    }

    /// Moves a complete temporary file into place as `meta.id` and writes
    /// its metadata. Identical content already stored is reused.
    pub fn commit(&self, temp: &Path, meta: &Meta) -> io::Result<Entry> {
        let data = self.data_path(&meta.id);
        if self.holds_same(&data, meta) {
            let _ = fs::remove_file(temp);
            self.write_meta(meta)?;
            return Ok(Entry { id: meta.id.clone(), path: data });
        }
        // Metadata first: whoever sees the data also finds its metadata.
        self.write_meta(meta)?;
        match rename_noreplace(temp, &data) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if is_our_regular_file(&data, Some(meta.bytes)) {
                    // A concurrent run stored the same content first.
                    let _ = fs::remove_file(temp);
                } else {
                    // Not a valid copy of this content (truncated, foreign,
                    // or a planted symlink): replace the name itself; rename
                    // never follows a link.
                    fs::rename(temp, &data)?;
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

    /// Reads the metadata of `id`, if present and well-formed.
    pub fn read_meta(&self, id: &str) -> Option<Meta> {
        let path = self.meta_path(id);
        if !is_our_regular_file(&path, None) {
            return None;
        }
        serde_json::from_slice(&fs::read(path).ok()?).ok()
    }

    fn holds_same(&self, data: &Path, meta: &Meta) -> bool {
        is_our_regular_file(data, Some(meta.bytes))
            && self.read_meta(&meta.id).is_some_and(|m| m.digest == meta.digest && m.bytes == meta.bytes)
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

/// Whether `name` is an entry name in outbox's own format.
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

fn verify_dir(dir: &Path) -> io::Result<()> {
    let md = fs::symlink_metadata(dir).map_err(|e| annotate(e, "cannot inspect the store", dir))?;
    let refuse = |why: String| {
        io::Error::new(io::ErrorKind::PermissionDenied, format!("refusing store {}: {why}", dir.display()))
    };
    if md.file_type().is_symlink() {
        return Err(refuse(
            "it is a symbolic link, which outbox never follows; point --dir or OUTBOX_DIR at a real directory".into(),
        ));
    }
    if !md.is_dir() {
        return Err(refuse("it is not a directory".into()));
    }
    let uid = unsafe { libc::geteuid() };
    if md.uid() != uid {
        return Err(refuse(format!("it is owned by uid {}, not by you (uid {uid})", md.uid())));
    }
    let mode = md.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(refuse(format!(
            "it is open to group or others (mode {mode:03o}); stored outputs may hold secrets: run chmod 700 on it"
        )));
    }
    Ok(())
}

fn is_our_regular_file(path: &Path, size: Option<u64>) -> bool {
    match fs::symlink_metadata(path) {
        Ok(md) => {
            md.file_type().is_file() && md.uid() == unsafe { libc::geteuid() } && size.is_none_or(|s| md.len() == s)
        }
        Err(_) => false,
    }
}

fn annotate(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} ({}): {e}", path.display()))
}

/// rename(2) that fails with AlreadyExists instead of replacing `to`.
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let f = std::ffi::CString::new(from.as_os_str().as_bytes()).map_err(io::Error::other)?;
    let t = std::ffi::CString::new(to.as_os_str().as_bytes()).map_err(io::Error::other)?;
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
    OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC).open(path)
}

/// `outbox show` options. (show/ls/gc: issue 5.)
#[derive(Debug, Clone, clap::Args)]
pub struct ShowArgs {
    /// Entry id, as printed in the envelope header.
    pub id: String,
}

#[derive(Debug, Clone, clap::Args)]
pub struct LsArgs {}

#[derive(Debug, Clone, clap::Args)]
pub struct GcArgs {}

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
    }
}

/// `outbox show`. (Being implemented: issue 5.)
pub fn run_show(_args: &ShowArgs, _dir: Option<&Path>) -> anyhow::Result<std::process::ExitCode> {
    anyhow::bail!("outbox show is not available in this build yet")
}

/// `outbox ls`. (Being implemented: issue 5.)
pub fn run_ls(_args: &LsArgs, _dir: Option<&Path>) -> anyhow::Result<std::process::ExitCode> {
    anyhow::bail!("outbox ls is not available in this build yet")
}

/// `outbox gc`. (Being implemented: issue 5.)
pub fn run_gc(_args: &GcArgs, _dir: Option<&Path>) -> anyhow::Result<std::process::ExitCode> {
    anyhow::bail!("outbox gc is not available in this build yet")
}
