//! The history folder, `.history` in the store, opened through the store's
//! own descriptor like everything else in the store: a `.history` that is a
//! symlink, not a directory, or not ours is refused, never followed, so
//! neither `outbox gc` nor a run can touch a file outside the store through
//! it; a store path swapped for a symlink while a run goes on cannot
//! redirect a record either (the run keeps the directory it verified).
//!
//! Members are named by one path component and opened relative to the
//! folder's descriptor: without following a symlink, without blocking (a
//! FIFO planted as a series fails to open or is refused on its descriptor),
//! and accepted only as regular files of ours. Locks are taken with a
//! deadline: a process holding one for ever costs the record, not the run.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags};

use crate::store::{path_text, Store};

/// The folder's name in the store.
pub const NAME: &str = ".history";
/// How long a run waits for a lock on a series before it gives up on
/// recording (the output is already safe).
pub const LOCK_WAIT: Duration = Duration::from_secs(2);

/// The opened, verified history folder.
#[derive(Debug)]
pub struct HistoryDir {
    fd: OwnedFd,
    /// For messages only.
    path: PathBuf,
}

/// A member's type, owner, size and mtime, from lstat.
#[derive(Debug, Clone, Copy)]
pub struct Member {
    pub ino: u64,
    pub dev: u64,
    pub size: u64,
    pub mtime: i64,
    /// A regular file owned by us.
    pub ours: bool,
}

impl HistoryDir {
    /// Opens the store's history folder; with `create`, makes it (0700)
    /// when missing. `Ok(None)`: there is none and it was not to be made.
    pub fn open(store: &Store, create: bool) -> io::Result<Option<HistoryDir>> {
        let path = store.dir().join(NAME);
        let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::DIRECTORY;
        let opened = match rustix::fs::openat(store.dir_fd(), NAME, flags, Mode::empty()) {
            Err(rustix::io::Errno::NOENT) if create => {
                match rustix::fs::mkdirat(store.dir_fd(), NAME, Mode::from_raw_mode(0o700)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(annotate(e.into(), "cannot create the history folder", &path)),
                }
                rustix::fs::openat(store.dir_fd(), NAME, flags, Mode::empty())
            }
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            r => r,
        };
        let fd = match opened {
            Ok(fd) => fd,
            // O_NOFOLLOW | O_DIRECTORY on a symlink: ELOOP or ENOTDIR.
            Err(rustix::io::Errno::LOOP) | Err(rustix::io::Errno::NOTDIR) => {
                let what = match rustix::fs::statat(store.dir_fd(), NAME, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                        "it is a symbolic link, which outbox never follows"
                    }
                    _ => "it is not a directory",
                };
                return Err(refuse(&path, what.to_string()));
            }
            Err(e) => return Err(annotate(e.into(), "cannot open the history folder", &path)),
        };
        let st = rustix::fs::fstat(&fd)?;
        let me = rustix::process::geteuid().as_raw();
        if st.st_uid != me {
            return Err(refuse(&path, format!("it is owned by uid {}, not by you (uid {me})", st.st_uid)));
        }
        if create && st.st_mode & 0o077 != 0 {
            // Ours: made private again, as the store's files are.
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o700))?;
        }
        Ok(Some(HistoryDir { fd, path }))
    }

    /// Where it is, for messages.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Names in the folder (UTF-8 ones; no others are ours).
    pub fn names(&self) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        for e in rustix::fs::Dir::read_from(&self.fd)? {
            let e = e?;
            if let Ok(n) = e.file_name().to_str() {
                if n != "." && n != ".." {
                    out.push(n.to_string());
                }
            }
        }
        Ok(out)
    }

    /// lstat of a member.
    pub fn stat(&self, name: &str) -> io::Result<Member> {
        let st = rustix::fs::statat(&self.fd, member(name)?, AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(Member {
            ino: st.st_ino,
            dev: st.st_dev,
            size: st.st_size.max(0) as u64,
            mtime: st.st_mtime,
            ours: FileType::from_raw_mode(st.st_mode) == FileType::RegularFile
                && st.st_uid == rustix::process::geteuid().as_raw(),
        })
    }

    /// Opens a member for reading (see the module's rules).
    pub fn open_read(&self, name: &str) -> io::Result<File> {
        let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOFOLLOW;
        self.checked(rustix::fs::openat(&self.fd, member(name)?, flags, Mode::empty()), name)
    }

    /// Opens a member for appending (and reading its last byte), creating
    /// it (0600) when missing.
    pub fn open_append(&self, name: &str) -> io::Result<File> {
        let flags =
            OFlags::RDWR | OFlags::APPEND | OFlags::CREATE | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOFOLLOW;
        self.checked(rustix::fs::openat(&self.fd, member(name)?, flags, Mode::from_raw_mode(0o600)), name)
    }

    /// Creates a new member exclusively (0600).
    pub fn create_new(&self, name: &str) -> io::Result<File> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let fd = rustix::fs::openat(&self.fd, member(name)?, flags, Mode::from_raw_mode(0o600))?;
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o600))?;
        Ok(File::from(fd))
    }

    /// Renames `from` over `to` (the name itself: a symlink there is
    /// replaced, never followed).
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        Ok(rustix::fs::renameat(&self.fd, member(from)?, &self.fd, member(to)?)?)
    }

    pub fn unlink(&self, name: &str) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.fd, member(name)?, AtFlags::empty())?)
    }

    fn checked(&self, opened: rustix::io::Result<OwnedFd>, name: &str) -> io::Result<File> {
        let fd = opened.map_err(|e| match e {
            rustix::io::Errno::LOOP => io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} is a symbolic link, which outbox never follows", self.shown(name)),
            ),
            // O_WRONLY | O_NONBLOCK on a FIFO without a reader.
            rustix::io::Errno::NXIO => {
                io::Error::new(io::ErrorKind::InvalidData, format!("{} is not a regular file", self.shown(name)))
            }
            e => annotate(e.into(), "cannot open", &self.path.join(name)),
        })?;
        let st = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} is not a regular file", self.shown(name)),
            ));
        }
        let me = rustix::process::geteuid().as_raw();
        if st.st_uid != me {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} is owned by uid {}, not by you (uid {me})", self.shown(name), st.st_uid),
            ));
        }
        Ok(File::from(fd))
    }

    fn shown(&self, name: &str) -> String {
        path_text(&self.path.join(name))
    }
}

/// Takes a `flock` on `file`, waiting at most `wait`: a lock held for ever
/// by someone else gives a `TimedOut` error instead of a hung run.
pub fn lock(file: &File, exclusive: bool, wait: Duration) -> io::Result<()> {
    let op = if exclusive { FlockOperation::NonBlockingLockExclusive } else { FlockOperation::NonBlockingLockShared };
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_millis(1);
    loop {
        match rustix::fs::flock(file.as_fd(), op) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::WOULDBLOCK) | Err(rustix::io::Errno::INTR) if Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(8));
            }
            Err(rustix::io::Errno::WOULDBLOCK) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("another process has held its lock for over {} s", wait.as_secs_f64()),
                ))
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// A member name; one with a `/` would leave the folder.
fn member(name: &str) -> io::Result<&str> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("'{name}' is not a name in the history")));
    }
    Ok(name)
}

fn annotate(e: io::Error, what: &str, path: &std::path::Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} ({}): {e}", path_text(path)))
}

fn refuse(path: &std::path::Path, why: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, format!("refusing the history folder {}: {why}", path_text(path)))
}
