//! Raw system calls on the store directory.
//!
//! The directory is opened once (`O_DIRECTORY | O_NOFOLLOW`) and verified on
//! that descriptor (a directory, ours, mode 0700); every later lookup,
//! create, rename, open and unlink is an `*at` call relative to it, never a
//! path. So swapping the store's path for a symlink while a run is going
//! cannot redirect a single write: the run keeps working in the directory it
//! checked. Members are named by one path component, checked by [`member`].

use std::ffi::CString;
use std::fs::{self, File};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, FileType, FlockOperation, Mode, OFlags, Timestamps};
use rustix::io::Errno;

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
    rustix::process::geteuid().as_raw()
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

/// How a lock is taken: [`try_flock`] asks without waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lock {
    Shared,
    Exclusive,
}

/// `flock` without waiting: Ok(false) when someone else holds it.
pub(crate) fn try_flock(fd: impl AsFd, lock: Lock) -> io::Result<bool> {
    let op = match lock {
        Lock::Shared => FlockOperation::NonBlockingLockShared,
        Lock::Exclusive => FlockOperation::NonBlockingLockExclusive,
    };
    loop {
        match rfs::flock(fd.as_fd(), op) {
            Ok(()) => return Ok(true),
            Err(Errno::INTR) => continue,
            Err(Errno::WOULDBLOCK) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
    }
}

/// Flags of every open of the store directory: never through a symlink.
fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
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
    // The fields' types differ by platform (macOS: a 16-bit mode).
    #[allow(clippy::unnecessary_cast)]
    fn of(st: &rfs::Stat) -> Stat {
        let mtime = st.st_mtime as i64;
        Stat {
            is_file: FileType::from_raw_mode(st.st_mode as _) == FileType::RegularFile,
            uid: st.st_uid,
            size: st.st_size.max(0) as u64,
            mtime,
            mtime_ns: mtime as i128 * 1_000_000_000 + st.st_mtime_nsec as i128,
        }
    }

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
        let fd = match rfs::open(path, dir_flags(), Mode::empty()) {
            Ok(fd) => fd,
            // O_NOFOLLOW | O_DIRECTORY on a symlink fails with ELOOP or
            // ENOTDIR depending on the kernel: say which it was.
            Err(Errno::LOOP | Errno::NOTDIR) => {
                let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
                return Err(refuse(path, refusal(is_link, false, 0, 0).unwrap_or_default()));
            }
            Err(e) => return Err(annotate(e.into(), "cannot open the store", path)),
        };
        let dir = StoreDir { fd, path: path.to_path_buf() };
        let st = rfs::fstat(&dir.fd)?;
        let is_dir = FileType::from_raw_mode(st.st_mode as _) == FileType::Directory;
        if let Some(why) = refusal(false, is_dir, st.st_uid, st.st_mode as u32) {
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
            match rfs::mkdir(path, Mode::RWXU) {
                Ok(()) => created = true,
                // Another outbox created it meanwhile: verify below.
                Err(Errno::EXIST) => {}
                Err(e) => return Err(hint(annotate(e.into(), "cannot create the store", path))),
            }
        }
        if created {
            // The umask may have removed owner bits; fix them on the
            // descriptor of what we created (never through the path).
            if let Ok(fd) = rfs::open(path, dir_flags(), Mode::empty()) {
                if rfs::fstat(&fd)?.st_uid == euid() {
                    let _ = rfs::fchmod(&fd, Mode::RWXU);
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
        let fd = rfs::openat(&self.fd, c".", dir_flags(), Mode::empty())?;
        Ok(StoreDir { fd, path: self.path.clone() })
    }

    /// Names in the directory that could be ours (UTF-8; others never are),
    /// read through the descriptor (under an open file description of
    /// their own, so the listing has its own offset).
    pub(crate) fn names(&self) -> io::Result<Vec<String>> {
        let listing = || -> io::Result<Vec<String>> {
            let mut names = Vec::new();
            for entry in rfs::Dir::read_from(&self.fd)? {
                if let Ok(s) = entry?.file_name().to_str() {
                    if s != "." && s != ".." {
                        names.push(s.to_string());
                    }
                }
            }
            Ok(names)
        };
        listing().map_err(|e| annotate(e, "cannot list the store", &self.path))
    }

    pub(crate) fn stat(&self, name: &str) -> io::Result<Stat> {
        let st = rfs::statat(&self.fd, member(name)?, AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(Stat::of(&st))
    }

    /// Opens a member for reading, never through a symlink (O_NOFOLLOW), and
    /// never blocking on a planted FIFO (O_NONBLOCK); then checks on the
    /// descriptor that it is a regular file of ours.
    pub(crate) fn open_read(&self, name: &str) -> io::Result<(File, fs::Metadata)> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let file = match rfs::openat(&self.fd, member(name)?, flags, Mode::empty()) {
            Ok(fd) => File::from(fd),
            Err(Errno::LOOP) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "it is a symbolic link, which outbox never follows",
                ))
            }
            Err(e) => return Err(e.into()),
        };
        let md = check_ours(&file)?;
        Ok((file, md))
    }

    /// Creates a new member, exclusively (an existing name, symlinks
    /// included, is an `AlreadyExists` error), mode 0600 whatever the umask.
    pub(crate) fn create_new(&self, name: &str) -> io::Result<File> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let file = File::from(rfs::openat(&self.fd, member(name)?, flags, private())?);
        chmod_private(&file)?;
        Ok(file)
    }

    pub(crate) fn unlink(&self, name: &str) -> io::Result<()> {
        // unlinkat removes the name itself: a symlink is never followed.
        Ok(rfs::unlinkat(&self.fd, member(name)?, AtFlags::empty())?)
    }

    /// Renames `from` to `to`, replacing `to` (the name itself: a symlink
    /// there is replaced, never followed).
    pub(crate) fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        Ok(rfs::renameat(&self.fd, member(from)?, &self.fd, member(to)?)?)
    }

    /// Renames `from` to `to`, failing with `AlreadyExists` instead of
    /// replacing `to`.
    pub(crate) fn rename_noreplace(&self, from: &str, to: &str) -> io::Result<()> {
        let (f, t) = (member(from)?, member(to)?);
        #[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
        match rfs::renameat_with(&self.fd, &f, &self.fd, &t, rfs::RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            // Filesystems without renameat2 flags: link(2) below.
            Err(Errno::INVAL | Errno::NOSYS | Errno::NOTSUP) => {}
            Err(e) => return Err(e.into()),
        }
        // link(2) also refuses to replace; then drop the temporary name.
        // Flags 0 never follow a symlink `from`.
        rfs::linkat(&self.fd, &f, &self.fd, &t, AtFlags::empty())?;
        self.unlink(from)
    }

    /// Creates the gc stamp if needed and sets its mtime to now.
    pub(crate) fn touch_stamp(&self) -> io::Result<()> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let file = File::from(rfs::openat(&self.fd, member(GC_STAMP)?, flags, private())?);
        check_ours(&file)?;
        let now = rustix::fs::Timespec { tv_sec: 0, tv_nsec: rfs::UTIME_NOW };
        Ok(rfs::futimens(&file, &Timestamps { last_access: now, last_modification: now })?)
    }

    /// Blocks until the exclusive lock is held (best effort: a filesystem
    /// without flock gives no lock, and gc goes ahead).
    pub(crate) fn lock_exclusive(&self) {
        while let Err(Errno::INTR) = rfs::flock(&self.fd, FlockOperation::LockExclusive) {}
    }

    /// Bytes available to us on the store's filesystem, and its size.
    pub(crate) fn space(&self) -> io::Result<(u64, u64)> {
        let st = rfs::fstatvfs(&self.fd)?;
        let unit = st.f_frsize;
        Ok((st.f_bavail.saturating_mul(unit), st.f_blocks.saturating_mul(unit)))
    }
}

/// Mode 0600: entries may hold secrets.
fn private() -> Mode {
    Mode::RUSR | Mode::WUSR
}

/// Sets mode 0600 on an open file of ours (on the descriptor).
pub(crate) fn chmod_private(file: &File) -> io::Result<()> {
    Ok(rfs::fchmod(file, private())?)
}

/// A member name as a C string; a name with a `/` would leave the directory.
pub(crate) fn member(name: &str) -> io::Result<CString> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("'{name}' is not a name in the store")));
    }
    CString::new(name).map_err(io::Error::other)
}
