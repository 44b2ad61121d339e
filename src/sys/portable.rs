//! Every other Unix, and Linux built with the `portable` feature: plain
//! `read` and `write` through the page cache, nothing that only one kernel
//! has.

use std::fs::File;
use std::io;
use std::os::fd::BorrowedFd;
use std::path::Path;

use super::unsupported;

/// No way to skip the page cache.
pub const DIRECT_NAME: Option<&str> = None;

pub fn set_direct(_fd: BorrowedFd<'_>, _on: bool) -> io::Result<()> {
    Err(unsupported())
}

/// Writeback is the kernel's.
pub const WRITE_BEHIND: bool = false;

pub fn start_writeback(_fd: BorrowedFd<'_>, _from: u64, _len: u64) -> io::Result<()> {
    Err(unsupported())
}

pub fn finish_writeback(_fd: BorrowedFd<'_>, _from: u64, _len: u64) -> Result<(), (&'static str, io::Error)> {
    Err(("sync_file_range", unsupported()))
}

/// No clone: a file on stdin is read and written like a pipe.
pub const CLONE_NAME: Option<&str> = None;
pub const CLONE_CREATES: bool = false;
/// No kernel copy between open files.
pub const COPY_RANGE: bool = false;

pub fn clone_file(_src: BorrowedFd<'_>, _dst: BorrowedFd<'_>) -> io::Result<()> {
    Err(unsupported())
}

pub fn clone_new(_src: BorrowedFd<'_>, _path: &Path) -> io::Result<File> {
    Err(unsupported())
}

pub fn copy_range(_src: BorrowedFd<'_>, _dst: BorrowedFd<'_>, _len: usize) -> io::Result<usize> {
    Err(unsupported())
}

/// A pipe's capacity is the kernel's to choose.
pub fn enlarge_pipe(_fd: BorrowedFd<'_>) {}
