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

#[cfg(test)]
mod tests {
    use std::io::{Read, Seek, Write};
    use std::os::fd::AsFd;

    use super::*;

    /// The kernel copy where the platform has one moves the bytes and both
    /// offsets, as `read` and `write` would; where it has none, the call
    /// fails with EOPNOTSUPP (the caller's cue to fall back).
    #[test]
    fn copy_range_copies_and_advances_or_is_unsupported() {
        let dir = tempfile::tempdir().unwrap();
        let (mut src, mut dst) =
            (tempfile::tempfile_in(dir.path()).unwrap(), tempfile::tempfile_in(dir.path()).unwrap());
        src.write_all(b"0123456789").unwrap();
        src.seek(std::io::SeekFrom::Start(2)).unwrap();
        match (copy_range(src.as_fd(), dst.as_fd(), 5), COPY_RANGE) {
            (Ok(n), true) => {
                assert_eq!(n, 5);
                assert_eq!(src.stream_position().unwrap(), 7, "the source's offset moved");
                assert_eq!(dst.stream_position().unwrap(), 5, "the target's offset moved");
                let mut got = String::new();
                dst.rewind().unwrap();
                dst.read_to_string(&mut got).unwrap();
                assert_eq!(got, "23456");
            }
            (Err(e), false) => assert_eq!(e.raw_os_error(), Some(rustix::io::Errno::OPNOTSUPP.raw_os_error())),
            (r, has) => panic!("COPY_RANGE is {has}, the call gave {r:?}"),
        }
    }

    /// Direct writes switch on and off where the platform has them (a file
    /// system may still refuse: EINVAL); elsewhere the switch is refused.
    #[test]
    fn set_direct_switches_or_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = tempfile::tempfile_in(dir.path()).unwrap();
        match (set_direct(file.as_fd(), true), DIRECT_NAME) {
            (Ok(()), Some(_)) => set_direct(file.as_fd(), false).unwrap(),
            (Err(e), Some(_)) => assert_eq!(e.raw_os_error(), Some(rustix::io::Errno::INVAL.raw_os_error()), "{e}"),
            (Err(e), None) => assert_eq!(e.raw_os_error(), Some(rustix::io::Errno::OPNOTSUPP.raw_os_error())),
            (Ok(()), None) => panic!("a platform without direct writes switched them on"),
        }
    }

    /// A signal ignored here reads back as ignored (the nohup check), and
    /// one with its default disposition does not.
    #[test]
    fn an_ignored_signal_reads_as_ignored() {
        use signal_hook::consts::{SIGUSR2, SIGWINCH};
        assert!(!signals::is_ignored(SIGWINCH));
        signals::ignore(&[SIGUSR2]);
        assert!(signals::is_ignored(SIGUSR2));
    }
}
