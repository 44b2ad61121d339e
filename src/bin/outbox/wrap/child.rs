//! Starting the command: its pipes, and what to say when it cannot run.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::Path;

/// Reports a command that could not be started; returns 127 or 126.
pub(super) fn spawn_failure(program: &OsStr, name: &str, e: &io::Error) -> u8 {
    let has_slash = program.to_string_lossy().contains('/');
    match e.kind() {
        io::ErrorKind::NotFound if has_slash && Path::new(program).exists() => {
            outbox::say!("{name}: cannot run it: {e} (is its #! interpreter installed?)");
            126
        }
        io::ErrorKind::NotFound => {
            outbox::say!("{name}: command not found");
            127
        }
        io::ErrorKind::PermissionDenied => {
            outbox::say!("{name}: permission denied: it exists but cannot be run (not executable, or a directory)");
            126
        }
        _ => {
            outbox::say!("{name}: cannot run it: {e}");
            126
        }
    }
}

/// A pipe whose two ends are close-on-exec, so the command receives only
/// the duplicates that become its stdout and stderr.
pub(super) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // Safety: pipe2 just returned these two descriptors, owned by nobody.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
