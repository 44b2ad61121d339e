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

use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering};
use std::sync::{Arc, Once};

use rustix::process::{kill_process_group, Pid, Signal};
use signal_hook::consts::{
    SIGABRT, SIGALRM, SIGBUS, SIGFPE, SIGHUP, SIGILL, SIGINT, SIGKILL, SIGPIPE, SIGQUIT, SIGSEGV, SIGSYS, SIGTERM,
    SIGTRAP, SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ,
};

static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// The wrapped command's process group, which a second signal ends; 0 for
/// none.
static CHILD_GROUP: AtomicI32 = AtomicI32::new(0);
/// Slots for the temporary files a second signal removes, one per stream.
pub const TEMP_SLOTS: usize = 2;
static TEMP_PATHS: [AtomicPtr<std::ffi::c_char>; TEMP_SLOTS] =
    [AtomicPtr::new(std::ptr::null_mut()), AtomicPtr::new(std::ptr::null_mut())];

/// The signals that interrupt a run.
const HANDLED: [i32; 3] = [SIGINT, SIGTERM, SIGHUP];

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
        SIGINT => "SIGINT".into(),
        SIGTERM => "SIGTERM".into(),
        SIGHUP => "SIGHUP".into(),
        SIGKILL => "SIGKILL".into(),
        SIGPIPE => "SIGPIPE".into(),
        SIGSEGV => "SIGSEGV".into(),
        SIGABRT => "SIGABRT".into(),
        SIGBUS => "SIGBUS".into(),
        SIGFPE => "SIGFPE".into(),
        SIGILL => "SIGILL".into(),
        SIGQUIT => "SIGQUIT".into(),
        SIGTRAP => "SIGTRAP".into(),
        SIGUSR1 => "SIGUSR1".into(),
        SIGUSR2 => "SIGUSR2".into(),
        SIGALRM => "SIGALRM".into(),
        SIGXCPU => "SIGXCPU".into(),
        SIGXFSZ => "SIGXFSZ".into(),
        SIGSYS => "SIGSYS".into(),
        n => format!("signal {n}"),
    }
}

/// The handler's work, in signal context: only atomics and
/// async-signal-safe system calls (kill, unlink, _exit).
fn on_signal(sig: i32) {
    if SIGNAL.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst).is_err() {
        // Second signal: end now, leaving no temporary file and no command.
        let group = CHILD_GROUP.load(Ordering::SeqCst);
        if let Some(pid) = Pid::from_raw(group).filter(|_| group > 0) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
        for slot in &TEMP_PATHS {
            let p = slot.load(Ordering::SeqCst);
            if !p.is_null() {
                // SAFETY: a non-null slot holds a CString from
                // set_temp_path, freed only after it is swapped out (and a
                // handler that loaded it never returns there: it exits).
                let _ = rustix::fs::unlink(unsafe { CStr::from_ptr(p) });
            }
        }
        signal_hook::low_level::exit(128 + sig);
    }
}

/// Installs the handlers (once per process), and catches SIGXFSZ so that a
/// file-size limit shows up as EFBIG (a spill failure we report) instead of
/// killing us. The handlers keep SA_RESTART (signal-hook's choice): the
/// reader never blocks in `read` without a one-second `poll` first, and
/// `poll` returns EINTR whatever the flag, so an interruption is seen at
/// once by the thread that receives it (see [`with_signals_blocked`]).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for sig in HANDLED {
            if sig == SIGHUP && crate::sys::signals::is_ignored(sig) {
                continue; // nohup: whoever started us wants it ignored
            }
            // SAFETY: on_signal is async-signal-safe (see there).
            let _ = unsafe { signal_hook::low_level::register(sig, move || on_signal(sig)) };
        }
        // A caught signal, unlike an ignored one, is reset to its default
        // in a command we start: it gets its own SIGXFSZ.
        let _ = signal_hook::flag::register(SIGXFSZ, Arc::default());
    });
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
        // SAFETY: only ever set from CString::into_raw above. A handler that
        // loaded `old` just before the swap would _exit, never return here.
        drop(unsafe { CString::from_raw(old) });
    }
}

/// Records the wrapped command's process group (None once outbox is done
/// with it), which a second signal ends with SIGKILL.
pub fn set_child_group(pgid: Option<i32>) {
    CHILD_GROUP.store(pgid.filter(|&g| g > 0).unwrap_or(0), Ordering::SeqCst);
}

/// Runs `f` with SIGINT, SIGTERM and SIGHUP blocked, so threads it spawns
/// inherit a mask that routes those signals to the reading thread.
pub fn with_signals_blocked<T>(f: impl FnOnce() -> T) -> T {
    let old = crate::sys::signals::block(&HANDLED);
    let out = f();
    crate::sys::signals::restore(&old);
    out
}
