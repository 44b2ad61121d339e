//! Whether a wrapper's stdout, though it is the very file the shell's
//! stdout is (the wrapper checked device, inode and append flag), is
//! another open of it: `grep x f >> out` run by a shell whose own stdout
//! is `out`. Then the real tool must write there, not an envelope.
//!
//! The wrappers pass the shell's pids in [`VAR`]. While a function runs
//! with a redirection, bash and zsh keep the shell's previous stdout on a
//! descriptor of 10 or more; a subshell's redirection leaves the parent's
//! stdout as it was. So: if the shell holds, on its descriptor 1 or one of
//! 10 and up, the same file under an open file description that is not
//! ours (`kcmp`, Linux), our stdout is a reopening, not the shell's own.
//! Anything that cannot be checked (no `/proc`, `kcmp` refused by a
//! seccomp profile, another system) keeps the wrapper's decision.

use std::os::unix::fs::MetadataExt;

/// The environment variable the wrappers set: the shell's pids.
pub const VAR: &str = "OUTBOX_SHELL_PIDS";

/// True when our stdout is another open of the shell's stdout file.
pub fn stdout_is_a_reopening() -> bool {
    let Some(pids) = std::env::var_os(VAR) else { return false };
    let Ok(ours) = std::fs::metadata("/dev/stdout") else { return false };
    if !ours.is_file() {
        return false;
    }
    let me = std::process::id() as i32;
    let mut seen = Vec::new();
    for pid in pids.to_string_lossy().split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
        if pid <= 1 || pid == me || seen.contains(&pid) {
            continue;
        }
        seen.push(pid);
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { continue };
        for fd in fds.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()) {
            if fd != 1 && fd < 10 {
                continue;
            }
            let same_file = std::fs::metadata(format!("/proc/{pid}/fd/{fd}"))
                .is_ok_and(|m| m.dev() == ours.dev() && m.ino() == ours.ino());
            if !same_file {
                continue;
            }
            match same_description(pid, fd, me, 1) {
                Some(false) => return true,
                Some(true) => {}
                // Cannot tell: the wrapper's decision stands.
                None => return false,
            }
        }
    }
    false
}

/// Whether descriptor `a` of process `pa` and `b` of `pb` are one open file
/// description; None when the kernel will not say.
#[cfg(target_os = "linux")]
fn same_description(pa: i32, a: i32, pb: i32, b: i32) -> Option<bool> {
    const KCMP_FILE: libc::c_long = 0;
    // SAFETY: kcmp takes only integers (pids, a type, descriptor numbers)
    // and reads no memory of ours; rustix has no wrapper for it.
    let r = unsafe {
        libc::syscall(
            libc::SYS_kcmp,
            pa as libc::c_long,
            pb as libc::c_long,
            KCMP_FILE,
            a as libc::c_long,
            b as libc::c_long,
        )
    };
    match r {
        0 => Some(true),
        1..=3 => Some(false),
        _ => None,
    }
}

#[cfg(not(target_os = "linux"))]
fn same_description(_pa: i32, _a: i32, _pb: i32, _b: i32) -> Option<bool> {
    None
}
