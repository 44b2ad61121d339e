//! Linux: every fast path.

use std::io;
use std::num::NonZeroU64;
use std::os::fd::{AsRawFd, BorrowedFd};

use rustix::fs::{self as rfs, Advice, OFlags};

/// The call that makes writes skip the page cache.
pub const DIRECT_NAME: Option<&str> = Some("O_DIRECT");

/// Turns `O_DIRECT` on or off for the open file: every write must then be
/// aligned in address, offset and length (see `stream::writer`).
pub fn set_direct(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    let flags = rfs::fcntl_getfl(fd)?;
    let want = if on { flags | OFlags::DIRECT } else { flags - OFlags::DIRECT };
    Ok(rfs::fcntl_setfl(fd, want)?)
}

/// Whether the spill can start writeback itself and drop what is on disk.
pub const WRITE_BEHIND: bool = true;

/// Starts writing `[from, from + len)` back to disk; does not wait.
pub fn start_writeback(fd: BorrowedFd<'_>, from: u64, len: u64) -> io::Result<()> {
    sync_file_range(fd, from, len, libc::SYNC_FILE_RANGE_WRITE)
}

/// Waits until `[from, from + len)` is on disk, then drops its pages from
/// the cache. The error names the call that failed.
pub fn finish_writeback(fd: BorrowedFd<'_>, from: u64, len: u64) -> Result<(), (&'static str, io::Error)> {
    let all = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    sync_file_range(fd, from, len, all).map_err(|e| ("sync_file_range", e))?;
    rfs::fadvise(fd, from, NonZeroU64::new(len), Advice::DontNeed).map_err(|e| ("posix_fadvise", e.into()))
}

/// `sync_file_range(2)`, which no crate wraps (offsets are 64-bit on
/// every Linux: it is the `off64_t` call).
fn sync_file_range(fd: BorrowedFd<'_>, from: u64, len: u64, flags: u32) -> io::Result<()> {
    // SAFETY: the descriptor is open for the borrow's lifetime; the call
    // takes no pointers and only starts or waits for writeback.
    match unsafe { libc::sync_file_range(fd.as_raw_fd(), from as i64, len as i64, flags) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// The call that makes a file share another's blocks.
pub const CLONE_NAME: Option<&str> = Some("FICLONE");
/// Whether a clone makes a new file ([`clone_new`]) rather than fill an
/// open one ([`clone_file`]).
pub const CLONE_CREATES: bool = false;
/// Whether the kernel copies between open files ([`copy_range`]).
pub const COPY_RANGE: bool = true;

/// FICLONE: makes `dst` share `src`'s whole content (a reflink on XFS and
/// btrfs). Neither offset moves.
pub fn clone_file(src: BorrowedFd<'_>, dst: BorrowedFd<'_>) -> io::Result<()> {
    Ok(rfs::ioctl_ficlone(dst, src)?)
}

/// `copy_file_range` of at most `len` bytes at both descriptors' offsets
/// (which it advances); Ok(0) at the end of `src`.
pub fn copy_range(src: BorrowedFd<'_>, dst: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
    Ok(rfs::copy_file_range(src, None, dst, None, len)?)
}

/// Raises a pipe's capacity to 1 MiB (best effort: unprivileged processes
/// may go up to /proc/sys/fs/pipe-max-size, 1 MiB by default), which lifts
/// throughput on two-CPU machines.
pub fn enlarge_pipe(fd: BorrowedFd<'_>) {
    let _ = rustix::pipe::fcntl_setpipe_size(fd, 1 << 20);
}

/// FICLONE fills an open file ([`clone_file`]); nothing is made by name.
pub fn clone_new(_src: BorrowedFd<'_>, _path: &std::path::Path) -> io::Result<std::fs::File> {
    Err(super::unsupported())
}
