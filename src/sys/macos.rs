//! macOS: `F_NOCACHE` for big spills, APFS `clonefile` for a file on
//! stdin; no write-behind (the kernel has no `sync_file_range`), no kernel
//! copy between open files. Type-checked on Linux
//! (`cargo check --target x86_64-apple-darwin`), not yet run on a Mac.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{self as rfs, Mode, OFlags};

use super::unsupported;

/// The call that makes writes skip the page cache.
pub const DIRECT_NAME: Option<&str> = Some("F_NOCACHE");

/// Turns `F_NOCACHE` on or off: the file's data is not kept in the unified
/// buffer cache. Unlike `O_DIRECT` it asks for no alignment, but the spill
/// writes whole aligned buffers all the same.
pub fn set_direct(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    Ok(rfs::fcntl_nocache(fd, on)?)
}

/// Whether the spill can start writeback itself and drop what is on disk.
pub const WRITE_BEHIND: bool = false;

pub fn start_writeback(_fd: BorrowedFd<'_>, _from: u64, _len: u64) -> io::Result<()> {
    Err(unsupported())
}

pub fn finish_writeback(_fd: BorrowedFd<'_>, _from: u64, _len: u64) -> Result<(), (&'static str, io::Error)> {
    Err(("sync_file_range", unsupported()))
}

/// The call that makes a file share another's blocks.
pub const CLONE_NAME: Option<&str> = Some("clonefile");
/// A clone makes a new file ([`clone_new`]).
pub const CLONE_CREATES: bool = true;
/// No kernel copy between open files.
pub const COPY_RANGE: bool = false;

/// A clone into an open file is Linux's FICLONE; macOS clones only into a
/// new name ([`clone_new`]).
pub fn clone_file(_src: BorrowedFd<'_>, _dst: BorrowedFd<'_>) -> io::Result<()> {
    Err(unsupported())
}

/// Creates `path` (which must not exist) as a clone of `src` on APFS, and
/// opens it for reading and writing, mode 0600 (a clone takes the source's
/// mode, and stored outputs may hold secrets). Its offset is 0.
pub fn clone_new(src: BorrowedFd<'_>, path: &Path) -> io::Result<File> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: `src` is open for the borrow's lifetime and `c` is a valid
    // NUL-terminated path; fclonefileat reads both and keeps neither. It
    // never replaces an existing name (EEXIST), symlinks included.
    if unsafe { libc::fclonefileat(src.as_raw_fd(), libc::AT_FDCWD, c.as_ptr(), 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let flags = OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let file = File::from(rfs::open(path, flags, Mode::empty())?);
    rfs::fchmod(&file, Mode::RUSR | Mode::WUSR)?;
    Ok(file)
}

/// No kernel copy between two open files.
pub fn copy_range(_src: BorrowedFd<'_>, _dst: BorrowedFd<'_>, _len: usize) -> io::Result<usize> {
    Err(unsupported())
}

/// A pipe's capacity is the kernel's to choose.
pub fn enlarge_pipe(_fd: BorrowedFd<'_>) {}
