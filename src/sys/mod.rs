//! The platform layer: the fast paths each platform has, and the few system
//! calls no crate covers.
//!
//! Everything else outbox asks of the kernel goes through `rustix` (typed
//! descriptors, `Result` instead of -1 and errno, one API on Linux and
//! macOS) and `signal-hook`. What is here is chosen at compile time:
//!
//! | | Linux | macOS | other Unix, or the `portable` feature |
//! | --- | --- | --- | --- |
//! | spill past 2 MiB ([`set_direct`]) | `O_DIRECT` | `F_NOCACHE` | page cache |
//! | write-behind ([`start_writeback`]) | `sync_file_range` + `fadvise` | none | none |
//! | file on stdin ([`clone_file`], [`copy_range`]) | `FICLONE`, `copy_file_range` | `clonefile` | `read` + `write` |
//! | pipe from a producer ([`enlarge_pipe`]) | `F_SETPIPE_SZ` 1 MiB | as it is | as it is |
//!
//! The `portable` cargo feature takes the last column on Linux too, so that
//! the path every other Unix takes is built and tested where the tests run
//! (CI runs the suite both ways). Durability is the page cache's, as for
//! `tee`: outbox never syncs a file, so `F_FULLFSYNC` has no place.
//!
//! Each platform module has the same functions; a call that a platform
//! lacks fails with `EOPNOTSUPP` (callers fall back, as they do when a
//! file system refuses the call) and its `*_NAME` constant is `None`.

#[cfg(all(target_os = "linux", not(feature = "portable")))]
mod linux;
#[cfg(all(target_os = "linux", not(feature = "portable")))]
use linux as platform;

#[cfg(all(target_vendor = "apple", not(feature = "portable")))]
mod macos;
#[cfg(all(target_vendor = "apple", not(feature = "portable")))]
use macos as platform;

#[cfg(any(feature = "portable", not(any(target_os = "linux", target_vendor = "apple"))))]
mod portable;
#[cfg(any(feature = "portable", not(any(target_os = "linux", target_vendor = "apple"))))]
use portable as platform;

pub mod signals;

pub use platform::{
    clone_file, clone_new, copy_range, enlarge_pipe, finish_writeback, set_direct, start_writeback, CLONE_CREATES,
    CLONE_NAME, COPY_RANGE, DIRECT_NAME, WRITE_BEHIND,
};

/// The error a platform gives for a call it does not have.
pub(crate) fn unsupported() -> std::io::Error {
    std::io::Error::from(rustix::io::Errno::OPNOTSUPP)
}
