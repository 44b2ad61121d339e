//! Raw system calls on the store directory: opening and verifying it,
//! `*at` calls relative to its descriptor, locks, and the checks that a
//! file is a regular file of ours.

use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::{DIR_HINT, GC_STAMP};
/// Why a directory is not acceptable as the store, if it is not.
pub(crate) fn refusal(is_symlink: bool, is_dir: bool, uid: u32, mode: u32) -> Option<String> {
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

pub(crate) fn refuse(dir: &Path, why: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, format!("refusing store {}: {why}", dir.display()))
}

pub(crate) fn verify_dir(dir: &Path) -> io::Result<()> {
    let md = fs::symlink_metadata(dir).map_err(|e| annotate(e, "cannot inspect the store", dir))?;
    match refusal(md.file_type().is_symlink(), md.is_dir(), md.uid(), md.mode()) {
        Some(why) => Err(refuse(dir, why)),
        None => Ok(()),
    }
}

pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

pub(crate) fn is_our_regular_file(path: &Path, size: Option<u64>) -> bool {
    match fs::symlink_metadata(path) {
        Ok(md) => md.file_type().is_file() && md.uid() == euid() && size.is_none_or(|s| md.len() == s),
        Err(_) => false,
    }
}

/// Adds what to do to an error about the store directory itself.
pub(crate) fn hint(e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{e}; {DIR_HINT}"))
}

pub(crate) fn annotate(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} ({}): {e}", path.display()))
}

/// rename(2) that fails with AlreadyExists instead of replacing `to`.
pub(crate) fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
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
pub(crate) fn check_ours(file: &File) -> io::Result<fs::Metadata> {
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
pub(crate) fn try_flock(fd: RawFd, op: libc::c_int) -> io::Result<bool> {
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

/// What lstat says about a member of the store.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stat {
    /// A regular file (lstat: a symlink is not one).
    pub(crate) is_file: bool,
    pub(crate) uid: u32,
    pub(crate) size: u64,
    /// Seconds since the epoch.
    pub(crate) mtime: i64,
    /// The same in nanoseconds: orders files made within one second.
    pub(crate) mtime_ns: i128,
}

impl Stat {
    pub(crate) fn ours(&self) -> bool {
        self.is_file && self.uid == euid()
    }

    /// Seconds since the last change (0 when it is in the future).
    pub(crate) fn age(&self, now: u64) -> u64 {
        (now as i64).saturating_sub(self.mtime).max(0) as u64
    }
}

/// The store directory opened once and verified on the descriptor, so that
/// every later lookup, open and unlink (`*at` calls) happens in the
/// directory that was checked, never through a path that could have been
/// swapped for a symlink in between.
pub(crate) struct StoreDir {
    pub(crate) fd: OwnedFd,
    pub(crate) path: PathBuf,
}

impl StoreDir {
    pub(crate) fn open(path: &Path) -> io::Result<StoreDir> {
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
    pub(crate) fn open_existing(path: &Path) -> io::Result<Option<StoreDir>> {
        match fs::symlink_metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(annotate(e, "cannot inspect the store", path)),
            Ok(_) => StoreDir::open(path).map(Some),
        }
    }

    /// Names in the directory that could be ours (UTF-8; others never are).
    pub(crate) fn names(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for e in fs::read_dir(&self.path).map_err(|e| annotate(e, "cannot list the store", &self.path))? {
            if let Ok(name) = e?.file_name().into_string() {
                names.push(name);
            }
        }
        Ok(names)
    }

    pub(crate) fn stat(&self, name: &str) -> io::Result<Stat> {
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
    pub(crate) fn open_read(&self, name: &str) -> io::Result<(File, fs::Metadata)> {
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

    pub(crate) fn unlink(&self, name: &str) -> io::Result<()> {
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
    pub(crate) fn touch_stamp(&self) -> io::Result<()> {
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
    pub(crate) fn lock_exclusive(&self) {
        // SAFETY: flock on our descriptor; no memory is passed.
        while unsafe { libc::flock(self.fd.as_raw_fd(), libc::LOCK_EX) } != 0 {
            if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return;
            }
        }
    }
}

/// A member name as a C string; a name with a `/` would leave the directory.
pub(crate) fn member(name: &str) -> io::Result<CString> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("'{name}' is not a name in the store")));
    }
    CString::new(name).map_err(io::Error::other)
}
