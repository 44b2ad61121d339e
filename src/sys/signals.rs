//! Signal masks and dispositions: the part of signal handling that
//! `signal-hook` leaves out (it installs handlers; it neither reads a
//! disposition nor blocks a signal in a thread).

use std::mem::MaybeUninit;

/// Whether `sig` is ignored (`SIG_IGN`) in this process: under `nohup`,
/// SIGHUP is, and whoever started us wants it to stay so.
pub fn is_ignored(sig: i32) -> bool {
    let mut old = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a null new action only reads the current one into `old`,
    // which is valid for writes; an invalid signal number fails (EINVAL).
    let r = unsafe { libc::sigaction(sig, std::ptr::null(), old.as_mut_ptr()) };
    // SAFETY: zeroed is a valid `sigaction`, and sigaction filled it.
    r == 0 && unsafe { old.assume_init() }.sa_sigaction == libc::SIG_IGN
}

/// A thread's signal mask, as it was before [`block`] changed it.
pub struct Mask(libc::sigset_t);

/// Blocks `sigs` (every signal when empty) in the calling thread; returns
/// the mask to [`restore`]. Threads spawned meanwhile inherit the blocked
/// mask.
pub fn block(sigs: &[i32]) -> Mask {
    let mut set = MaybeUninit::<libc::sigset_t>::zeroed();
    let mut old = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: both sets are valid for writes and are initialised by
    // sigfillset/sigemptyset before use; pthread_sigmask only changes this
    // thread's mask, and writes the old one into `old`.
    unsafe {
        if sigs.is_empty() {
            libc::sigfillset(set.as_mut_ptr());
        } else {
            libc::sigemptyset(set.as_mut_ptr());
            for &sig in sigs {
                libc::sigaddset(set.as_mut_ptr(), sig);
            }
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, set.as_ptr(), old.as_mut_ptr());
        Mask(old.assume_init())
    }
}

/// Puts back the mask [`block`] returned. Async-signal-safe: the guardian
/// calls it between fork and its own end.
pub fn restore(mask: &Mask) {
    // SAFETY: `mask` holds a mask pthread_sigmask gave us.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &mask.0, std::ptr::null_mut()) };
}

/// Ignores each of `sigs` (`SIG_IGN`). Async-signal-safe: the guardian
/// calls it in the forked child, where no handler may be registered.
pub fn ignore(sigs: &[i32]) {
    for &sig in sigs {
        // SAFETY: setting SIG_IGN passes no handler code; an invalid
        // signal number only fails.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
}
