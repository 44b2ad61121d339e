//! Starting the command: how it is set up, its pipes, and what to say
//! when it cannot run.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{OwnedFd, RawFd};
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
    // (interrupt::install() catches SIGXFSZ rather than ignoring it: a
    // caught signal is back to its default after exec, so the command gets
    // its own.)
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    let parent = rustix::process::getpid();
    // SAFETY: between fork and exec the closure makes only async-signal-safe
    // system calls (setpgid, getpid, write; prctl, getppid, _exit on Linux)
    // and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if let Some(fd) = lifeline {
                super::guardian::announce_group(fd);
            }
            // The guardian ends the whole group should outbox die; this
            // covers the direct child in the moment before the guardian
            // learns the group, and should the guardian be killed too.
            #[cfg(all(target_os = "linux", not(feature = "portable")))]
            {
                let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM));
                if rustix::process::getppid() != Some(parent) {
                    // outbox died before the request took effect.
                    signal_hook::low_level::exit(125);
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

/// A pipe whose two ends are close-on-exec (as std makes every pipe), so
/// the command receives only the duplicates that become its stdout and
/// stderr.
pub(super) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = io::pipe()?;
    Ok((OwnedFd::from(read), OwnedFd::from(write)))
}
