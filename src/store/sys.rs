//! Raw system calls on the store directory.
//!
//! The directory is opened once (`O_DIRECTORY | O_NOFOLLOW`) and verified on
//! that descriptor (a directory, ours, mode 0700); every later lookup,
//! create, rename, open and unlink is an `*at` call relative to it, never a
//! path. So swapping the store's path for a symlink while a run is going
//! cannot redirect a single write: the run keeps working in the directory it
//! checked. Members are named by one path component, checked by [`member`].

use std::ffi::{CStr, CString};
use std::fs::{self, File};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::{path_text, DIR_HINT, GC_STAMP};

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
    io::Error::new(io::ErrorKind::PermissionDenied, format!("refusing store {}: {why}", path_text(dir)))
}

pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Adds what to do to an error about the store directory itself.
pub(crate) fn hint(e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{e}; {DIR_HINT}"))
}

pub(crate) fn annotate(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} ({}): {e}", path_text(path)))
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

/// The result of a libc call that returns -1 on error.
fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
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

/// The store directory opened once and verified on the descriptor.
#[derive(Debug)]
pub(crate) struct StoreDir {
    pub(crate) fd: OwnedFd,
    /// The path it was opened by: for messages and the paths shown to
    /// users, never for access.
    pub(crate) path: PathBuf,
}

impl StoreDir {
    /// Opens and verifies an existing directory; a symlink is refused,
    /// never followed.
    pub(crate) fn open(path: &Path) -> io::Result<StoreDir> {
        let c = CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: valid NUL-terminated path; the result is checked.
        let raw = unsafe { libc::open(c.as_ptr(), flags) };
        if raw < 0 {
            let e = io::Error::last_os_error();
            // O_NOFOLLOW | O_DIRECTORY on a symlink fails with ELOOP or
            // ENOTDIR depending on the kernel: say which it was.
            return Err(match e.raw_os_error() {
                Some(libc::ELOOP) | Some(libc::ENOTDIR) => {
                    let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
                    refuse(path, refusal(is_link, false, 0, 0).unwrap_or_default())
                }
                _ => annotate(e, "cannot open the store", path),
            });
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let dir = StoreDir { fd, path: path.to_path_buf() };
        let st = dir.fstat()?;
        if let Some(why) = refusal(false, st.st_mode & libc::S_IFMT == libc::S_IFDIR, st.st_uid, st.st_mode) {
            return Err(refuse(path, why));
        }
        Ok(dir)
    }

    /// Opens the directory, creating it (and its parents) when missing.
    /// One we create is made 0700 on its descriptor, whatever the umask.
    pub(crate) fn create_or_open(path: &Path) -> io::Result<StoreDir> {
        let mut created = false;
        if let Err(e) = fs::symlink_metadata(path) {
            if e.kind() != io::ErrorKind::NotFound {
                return Err(hint(annotate(e, "cannot inspect the store", path)));
            }
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)
                    .map_err(|e| hint(annotate(e, "cannot create the parent of the store", parent)))?;
            }
            let c = CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
            // SAFETY: valid NUL-terminated path.
            match cvt(unsafe { libc::mkdir(c.as_ptr(), 0o700) }) {
                Ok(_) => created = true,
                // Another outbox created it meanwhile: verify below.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(hint(annotate(e, "cannot create the store", path))),
            }
        }
        if created {
            // The umask may have removed owner bits; fix them on the
            // descriptor of what we created (never through the path).
            let c = CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
            let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
            // SAFETY: valid path; the result is checked and closed below.
            if let Ok(raw) = cvt(unsafe { libc::open(c.as_ptr(), flags) }) {
                // SAFETY: fresh descriptor owned here.
                let fd = unsafe { OwnedFd::from_raw_fd(raw) };
                let st = StoreDir { fd, path: path.to_path_buf() }.fstat()?;
                if st.st_uid == euid() {
                    // SAFETY: fchmod on a descriptor we own.
                    unsafe { libc::fchmod(raw, 0o700) };
                }
            }
        }
        StoreDir::open(path)
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

    /// The same directory under a new open file description (its own
    /// offset for readdir, its own flock), found through the descriptor.
    pub(crate) fn reopen(&self) -> io::Result<StoreDir> {
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: "." is a valid C string; the descriptor is open.
        let raw = cvt(unsafe { libc::openat(self.fd.as_raw_fd(), c".".as_ptr(), flags) })?;
        // SAFETY: fresh descriptor owned here.
        Ok(StoreDir { fd: unsafe { OwnedFd::from_raw_fd(raw) }, path: self.path.clone() })
    }

    fn fstat(&self) -> io::Result<libc::stat> {
        // SAFETY: zeroed stat is a valid out-parameter; the fd is open.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        cvt(unsafe { libc::fstat(self.fd.as_raw_fd(), &mut st) })?;
        Ok(st)
    }

    /// Names in the directory that could be ours (UTF-8; others never are),
    /// read through the descriptor.
    pub(crate) fn names(&self) -> io::Result<Vec<String>> {
        let own = self.reopen().map_err(|e| annotate(e, "cannot list the store", &self.path))?;
        let raw = own.fd.into_raw_fd();
        // SAFETY: on success fdopendir owns `raw` (closedir closes it).
        let dirp = unsafe { libc::fdopendir(raw) };
        if dirp.is_null() {
            let e = io::Error::last_os_error();
            // SAFETY: `raw` is still ours when fdopendir failed.
            unsafe { libc::close(raw) };
            return Err(annotate(e, "cannot list the store", &self.path));
        }
        let mut names = Vec::new();
        loop {
            // SAFETY: dirp is a valid DIR*; the entry is read before the next
            // readdir call.
            let ent = unsafe { libc::readdir(dirp) };
            if ent.is_null() {
                break;
            }
            // SAFETY: d_name is a NUL-terminated array inside the entry.
            let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) };
            if let Ok(s) = name.to_str() {
                if s != "." && s != ".." {
                    names.push(s.to_string());
                }
            }
        }
        // SAFETY: dirp is valid and not used after this.
        unsafe { libc::closedir(dirp) };
        Ok(names)
    }

    pub(crate) fn stat(&self, name: &str) -> io::Result<Stat> {
        let c = member(name)?;
        // SAFETY: zeroed stat is a valid out-parameter; the name is a valid
        // C string; the descriptor is open.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        cvt(unsafe { libc::fstatat(self.fd.as_raw_fd(), c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
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

    /// Creates a new member, exclusively (an existing name, symlinks
    /// included, is an `AlreadyExists` error), mode 0600 whatever the umask.
    pub(crate) fn create_new(&self, name: &str) -> io::Result<File> {
        let c = member(name)?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: valid C string and open descriptor; the result is checked.
        let raw = cvt(unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags, 0o600 as libc::c_uint) })?;
        // SAFETY: fresh descriptor owned here.
        let file = unsafe { File::from_raw_fd(raw) };
        chmod_private(&file)?;
        Ok(file)
    }

    pub(crate) fn unlink(&self, name: &str) -> io::Result<()> {
        let c = member(name)?;
        // SAFETY: valid C string and open descriptor. unlinkat removes the
        // name itself: a symlink is never followed.
        cvt(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) }).map(drop)
    }

    /// Renames `from` to `to`, replacing `to` (the name itself: a symlink
    /// there is replaced, never followed).
    pub(crate) fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let (f, t) = (member(from)?, member(to)?);
        let fd = self.fd.as_raw_fd();
        // SAFETY: valid C strings and an open descriptor.
        cvt(unsafe { libc::renameat(fd, f.as_ptr(), fd, t.as_ptr()) }).map(drop)
    }

    /// Renames `from` to `to`, failing with `AlreadyExists` instead of
    /// replacing `to`.
    pub(crate) fn rename_noreplace(&self, from: &str, to: &str) -> io::Result<()> {
        let (f, t) = (member(from)?, member(to)?);
        let fd = self.fd.as_raw_fd();
        // SAFETY: valid C strings and an open descriptor.
        let r = unsafe { libc::renameat2(fd, f.as_ptr(), fd, t.as_ptr(), libc::RENAME_NOREPLACE) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            // Filesystems without renameat2 flags: link(2) also refuses to
            // replace, then drop the temporary name.
            Some(libc::EINVAL) | Some(libc::ENOSYS) => {
                // SAFETY: as above; flags 0 never follow a symlink `from`.
                cvt(unsafe { libc::linkat(fd, f.as_ptr(), fd, t.as_ptr(), 0) })?;
                self.unlink(from)
            }
            _ => Err(e),
        }
    }

    /// Creates the gc stamp if needed and sets its mtime to now.
    pub(crate) fn touch_stamp(&self) -> io::Result<()> {
        let c = member(GC_STAMP)?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK;
        // SAFETY: valid C string and open descriptor; the result is checked.
        let raw = cvt(unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags, 0o600 as libc::c_uint) })?;
        // SAFETY: fresh descriptor owned here.
        let file = unsafe { File::from_raw_fd(raw) };
        check_ours(&file)?;
        // SAFETY: a null times pointer means "now" for both timestamps.
        cvt(unsafe { libc::futimens(file.as_raw_fd(), std::ptr::null()) }).map(drop)
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

    /// Bytes available to us on the store's filesystem, and its size.
    pub(crate) fn space(&self) -> io::Result<(u64, u64)> {
        // SAFETY: zeroed statvfs is a valid out-parameter; the fd is open.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        cvt(unsafe { libc::fstatvfs(self.fd.as_raw_fd(), &mut st) })?;
        let unit = st.f_frsize as u64;
        Ok((st.f_bavail as u64 * unit, st.f_blocks as u64 * unit))
    }
}

/// Sets mode 0600 on an open file of ours (on the descriptor).
pub(crate) fn chmod_private(file: &File) -> io::Result<()> {
    // SAFETY: fchmod on a descriptor we own.
    cvt(unsafe { libc::fchmod(file.as_raw_fd(), 0o600) }).map(drop)
}

/// A member name as a C string; a name with a `/` would leave the directory.
pub(crate) fn member(name: &str) -> io::Result<CString> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("'{name}' is not a name in the store")));
    }
    CString::new(name).map_err(io::Error::other)
}
