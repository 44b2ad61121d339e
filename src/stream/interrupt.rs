//! SIGINT / SIGTERM / SIGHUP handling for the ingest loop.
//!
//! SIGHUP (the terminal hung up, the ssh session ended) is treated as
//! SIGTERM: it too must leave an envelope and no temporary file. Under
//! `nohup`, where SIGHUP is ignored on entry, it stays ignored.
//!
//! The first signal sets a flag; a blocking `read` on stdin returns EINTR
//! because the handler is installed without SA_RESTART, and the reader stops
//! within the one-second poll below even when the signal landed on another
//! thread. What arrived is kept as an incomplete entry. A second signal ends
//! the process at once, after unlinking the temporary spill files (unlink is
//! async-signal-safe), so nothing is left behind. There is one temporary
//! file per stream being read: two in wrap mode with `--stderr separate`.
//! In wrap mode the second signal also sends SIGKILL to the command's
//! process group before outbox exits, so the command does not outlive it.

use std::ffi::CString;
use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering};

static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// The wrapped command's process group, which a second signal ends; 0 for
/// none.
static CHILD_GROUP: AtomicI32 = AtomicI32::new(0);
/// Slots for the temporary files a second signal removes, one per stream.
pub const TEMP_SLOTS: usize = 2;
static TEMP_PATHS: [AtomicPtr<libc::c_char>; TEMP_SLOTS] =
    [AtomicPtr::new(std::ptr::null_mut()), AtomicPtr::new(std::ptr::null_mut())];

/// The signals that interrupt a run.
const HANDLED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The first SIGINT/SIGTERM/SIGHUP received, if any.
pub fn received() -> Option<i32> {
    match SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        n => Some(n),
    }
}

/// Exit status for a run stopped by `sig` (128 + N).
pub fn exit_code(sig: i32) -> u8 {
    (128 + sig).clamp(0, 255) as u8
}

/// Name of a signal for messages.
pub fn name(sig: i32) -> String {
    match sig {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGPIPE => "SIGPIPE".into(),
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGFPE => "SIGFPE".into(),
        libc::SIGILL => "SIGILL".into(),
        libc::SIGQUIT => "SIGQUIT".into(),
        libc::SIGTRAP => "SIGTRAP".into(),
        libc::SIGUSR1 => "SIGUSR1".into(),
        libc::SIGUSR2 => "SIGUSR2".into(),
        libc::SIGALRM => "SIGALRM".into(),
        libc::SIGXCPU => "SIGXCPU".into(),
        libc::SIGXFSZ => "SIGXFSZ".into(),
        libc::SIGSYS => "SIGSYS".into(),
        n => format!("signal {n}"),
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    if SIGNAL.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst).is_err() {
        // Second signal: end now, leaving no temporary file and no command.
        let group = CHILD_GROUP.load(Ordering::SeqCst);
        if group > 0 {
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
        for slot in &TEMP_PATHS {
            let p = slot.load(Ordering::SeqCst);
            if !p.is_null() {
                unsafe { libc::unlink(p) };
            }
        }
        unsafe { libc::_exit(128 + sig) };
    }
}

/// Installs the handlers, and ignores SIGXFSZ so that a file-size limit
/// shows up as EFBIG (a spill failure we report) instead of killing us.
pub fn install() {
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = 0; // no SA_RESTART: a blocked read returns EINTR
        libc::sigemptyset(&mut sa.sa_mask);
        for sig in HANDLED {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, std::ptr::null(), &mut old);
            if sig == libc::SIGHUP && old.sa_sigaction == libc::SIG_IGN {
                continue; // nohup: whoever started us wants it ignored
            }
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Records the temporary file a second signal must remove, in `slot`
/// (below [`TEMP_SLOTS`]: one per stream being read).
pub fn set_temp_path(slot: usize, path: Option<&std::path::Path>) {
    use std::os::unix::ffi::OsStrExt;
    let new = match path.and_then(|p| CString::new(p.as_os_str().as_bytes()).ok()) {
        Some(c) => c.into_raw(),
        None => std::ptr::null_mut(),
    };
    let old = TEMP_PATHS[slot].swap(new, Ordering::SeqCst);
    if !old.is_null() {
        // Safe: only ever set from CString::into_raw above. A handler that
        // loaded `old` just before the swap would _exit, never return here.
        drop(unsafe { CString::from_raw(old) });
    }
}

/// Records the wrapped command's process group (None once outbox is done
/// with it), which a second signal ends with SIGKILL.
pub fn set_child_group(pgid: Option<libc::pid_t>) {
    CHILD_GROUP.store(pgid.filter(|&g| g > 0).unwrap_or(0), Ordering::SeqCst);
}

/// Runs `f` with SIGINT, SIGTERM and SIGHUP blocked, so threads it spawns
/// inherit a mask that routes those signals to the reading thread.
pub fn with_signals_blocked<T>(f: impl FnOnce() -> T) -> T {
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in HANDLED {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        let out = f();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        out
    }
}
