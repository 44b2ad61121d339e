//! Starting the command: how it is set up, its pipes, and what to say
//! when it cannot run.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// The command, set up but not spawned: stdin inherited, stdout to `out`,
/// stderr to `err` (None: outbox's own, for `--stderr inherit`), in a
/// process group of its own, which it announces to the guardian through
/// `lifeline` before exec.
pub(super) fn command(
    program: &OsStr,
    args: &[OsString],
    out: OwnedFd,
    err: Option<OwnedFd>,
    lifeline: Option<RawFd>,
) -> Command {
    let mut command = Command::new(program);
    command
        .args(args)
        // The wrappers' note to outbox, not the command's business.
        .env_remove(crate::integrate::reopen::VAR)
        .stdin(Stdio::inherit())
        .stdout(Stdio::from(out))
        .stderr(err.map_or_else(Stdio::inherit, Stdio::from))
        .process_group(0);
    #[cfg_attr(not(target_os = "linux"), allow(unused_variables))]
    let parent = std::process::id() as libc::pid_t;
    // Safety: the closure only makes async-signal-safe system calls.
    unsafe {
        command.pre_exec(move || {
            // interrupt::install() ignores SIGXFSZ for outbox; an ignored
            // disposition survives exec, and the command should get its own.
            libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
            if let Some(fd) = lifeline {
                super::guardian::announce_group(fd);
            }
            // The guardian ends the whole group should outbox die; this
            // covers the direct child in the moment before the guardian
            // learns the group, and should the guardian be killed too.
            #[cfg(target_os = "linux")]
            {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
                if libc::getppid() != parent {
                    // outbox died before the request took effect.
                    libc::_exit(125);
                }
            }
            Ok(())
        });
    }
    command
}

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
