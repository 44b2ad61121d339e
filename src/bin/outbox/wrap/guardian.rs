//! The guardian: a small process that ends the wrapped command's process
//! group when outbox dies without ending it itself.
//!
//! The command runs in a process group of its own, so that outbox can
//! signal its whole tree at once and terminal signals reach it only through
//! outbox. That same group puts it out of reach of whatever kills outbox:
//! `timeout -s KILL`, a harness that kills its job's process group, the OOM
//! killer. No handler runs on SIGKILL, and PR_SET_PDEATHSIG reaches only the
//! direct child, not what it started. So a second process watches outbox:
//!
//! ```text
//!  outbox ── holds the only write end ──► lifeline pipe ──► guardian (forked
//!                                          before the spawn, own process group)
//!    "g" + group id: the command runs in that group; watch it (written by
//!      the command itself between fork and exec, see announce_group)
//!    "d": outbox is done, stand down ──► exit
//!    end of file: outbox is gone, however it died (the kernel closes its
//!      descriptors) ──► SIGTERM (+SIGCONT) to the command's group, SIGKILL
//!      after GUARD_GRACE unless the group is empty by then ──► exit
//! ```
//!
//! Invariants:
//! - The guardian is forked, and has left outbox's group, before the
//!   command is spawned, and the command tells it its group before exec:
//!   by the time the command can start anything, the guardian knows what
//!   to end and a group kill of outbox misses it. (The group id used to be
//!   sent by outbox after the spawn returned; under load outbox could be
//!   killed before it got there, with the command's children running.)
//! - The guardian is in neither outbox's process group (a group kill would
//!   take it along before it could act) nor the command's (outbox's own
//!   signals to that group must not reach it, and it must be able to tell
//!   when the group is empty). It ignores the signals a terminal or a
//!   harness sends to everyone, so only the end of outbox moves it.
//! - The write end is close-on-exec and the guardian closes everything but
//!   the read end and stderr, so no other process keeps outbox "alive", and
//!   the guardian holds none of outbox's pipes or its stdout open.
//! - Between fork and exit the guardian makes only async-signal-safe system
//!   calls (outbox may have other threads), and never returns into Rust
//!   code.
//! - A normal run stands it down and reaps it before outbox exits: nothing
//!   is left behind, and background processes the command left running keep
//!   running, as before.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use outbox::stream::interrupt;

use super::child::pipe;

/// After outbox is gone: how long the command's group has between SIGTERM
/// and SIGKILL. Short: nobody is left to read what it prints.
pub const GUARD_GRACE: Duration = Duration::from_secs(1);
/// How often the guardian looks whether the group is empty during the grace.
const GUARD_TICK_NS: libc::c_long = 20_000_000;
/// How long outbox waits for a stood-down guardian to exit.
const STAND_DOWN_WAIT: Duration = Duration::from_secs(2);

/// The running guardian of one command's process group. Dropping it stands
/// the guardian down and reaps it.
pub struct Guardian {
    pid: libc::pid_t,
    lifeline: Option<OwnedFd>,
}

impl Guardian {
    /// Forks the guardian, before the command is spawned; `name` is the
    /// command's name for its one message.
    pub fn start(name: &str) -> io::Result<Guardian> {
        let (read, write) = pipe()?;
        // Everything the guardian must close, listed now: after the fork it
        // may not allocate.
        let open = open_descriptors();
        let message = format!(
            "outbox: outbox (pid {}) ended before {name} did; sending SIGTERM to its process group \
(SIGKILL after {}s)\n",
            std::process::id(),
            GUARD_GRACE.as_secs()
        );
        let devnull = c"/dev/null";
        // Block every signal across the fork: outbox's handlers must not run
        // in the guardian before it has set its own dispositions.
        let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        unsafe {
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        }
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // Safety: the child runs `guard`, which never returns and makes
            // only async-signal-safe calls on data prepared before the fork.
            unsafe { guard(read.as_raw_fd(), &open, message.as_bytes(), devnull.as_ptr(), &old) }
        }
        let forked = io::Error::last_os_error();
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
        if pid < 0 {
            return Err(forked);
        }
        // Also here, against the race with the child's own setpgid: the
        // guardian must have left outbox's group before outbox can die.
        unsafe { libc::setpgid(pid, pid) };
        drop(read);
        Ok(Guardian { pid, lifeline: Some(write) })
    }

    /// The write end of the lifeline, for the command's [`announce_group`]
    /// between fork and exec (close-on-exec: the command keeps no copy).
    pub fn lifeline(&self) -> Option<RawFd> {
        self.lifeline.as_ref().map(|w| w.as_raw_fd())
    }
}

impl Drop for Guardian {
    /// Stands the guardian down (outbox is done with the group) and reaps
    /// it, so a normal run leaves no process behind. A second signal no
    /// longer ends the group either.
    fn drop(&mut self) {
        interrupt::set_child_group(None);
        if let Some(w) = self.lifeline.take() {
            // A guardian that is gone already makes this EPIPE (SIGPIPE is
            // ignored in Rust programs): nothing to do then.
            unsafe { libc::write(w.as_raw_fd(), b"d".as_ptr().cast(), 1) };
        }
        let start = Instant::now();
        loop {
            let mut status = 0;
            let r = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
            if r != 0 || start.elapsed() >= STAND_DOWN_WAIT {
                // Reaped, or not our child any more, or stuck (stopped by
                // hand): it exits on its own once it runs.
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// In the command's process between fork and exec: puts it in a process
/// group of its own and tells the guardian (through `lifeline`) to watch
/// that group.
///
/// # Safety
/// Only between fork and exec; makes only async-signal-safe calls.
pub unsafe fn announce_group(lifeline: RawFd) {
    libc::setpgid(0, 0);
    let mut msg = [b'g', 0, 0, 0, 0];
    msg[1..].copy_from_slice(&libc::getpid().to_ne_bytes());
    // Five bytes, under PIPE_BUF: written whole or not at all.
    libc::write(lifeline, msg.as_ptr().cast(), msg.len());
}

/// Descriptors open in this process (listed from /proc where there is one).
fn open_descriptors() -> Vec<RawFd> {
    if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
        let fds: Vec<RawFd> = dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<RawFd>().ok()).collect();
        if !fds.is_empty() {
            return fds;
        }
    }
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    let max = match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } {
        0 => (lim.rlim_cur as u64).min(65_536) as RawFd,
        _ => 1024,
    };
    (0..max).collect()
}

/// The guardian's whole life, in the forked child.
///
/// # Safety
/// Only in the child of `fork`; every pointer was prepared before the fork.
unsafe fn guard(
    lifeline: RawFd,
    open: &[RawFd],
    message: &[u8],
    devnull: *const libc::c_char,
    mask: &libc::sigset_t,
) -> ! {
    // Out of outbox's group first: from here on a group kill misses us.
    libc::setpgid(0, 0);
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGPIPE, libc::SIGTSTP] {
        libc::signal(sig, libc::SIG_IGN);
    }
    for sig in [libc::SIGTTIN, libc::SIGTTOU, libc::SIGXFSZ, libc::SIGUSR1, libc::SIGUSR2, libc::SIGALRM] {
        libc::signal(sig, libc::SIG_IGN);
    }
    libc::pthread_sigmask(libc::SIG_SETMASK, mask, std::ptr::null_mut());
    #[cfg(target_os = "linux")]
    libc::prctl(libc::PR_SET_NAME, c"outbox-guard".as_ptr() as libc::c_ulong, 0, 0, 0);
    // Hold none of outbox's descriptors but the lifeline and stderr (for
    // the one message): its stdout must reach end of file when it dies.
    let null = libc::open(devnull, libc::O_RDWR);
    if null >= 0 {
        libc::dup2(null, 0);
        libc::dup2(null, 1);
    }
    for &fd in open {
        if fd > 2 && fd != lifeline {
            libc::close(fd);
        }
    }
    if null > 2 {
        libc::close(null);
    }
    let mut pgid: libc::pid_t = 0;
    loop {
        let mut tag = [0u8; 1];
        if !read_exact(lifeline, &mut tag) {
            break; // end of file: outbox is gone
        }
        match tag[0] {
            b'g' => {
                let mut id = [0u8; 4];
                if !read_exact(lifeline, &mut id) {
                    break;
                }
                pgid = libc::pid_t::from_ne_bytes(id);
            }
            _ => libc::_exit(0), // stood down
        }
    }
    if pgid <= 0 || libc::kill(-pgid, 0) != 0 {
        libc::_exit(0); // nothing left of the command
    }
    libc::write(2, message.as_ptr().cast(), message.len());
    libc::kill(-pgid, libc::SIGTERM);
    // A stopped process acts on SIGTERM only once continued.
    libc::kill(-pgid, libc::SIGCONT);
    let tick = libc::timespec { tv_sec: 0, tv_nsec: GUARD_TICK_NS };
    let ticks = GUARD_GRACE.as_nanos() / GUARD_TICK_NS as u128;
    for _ in 0..ticks {
        libc::nanosleep(&tick, std::ptr::null_mut());
        if libc::kill(-pgid, 0) != 0 {
            libc::_exit(0);
        }
    }
    libc::kill(-pgid, libc::SIGKILL);
    libc::_exit(0)
}

/// Reads exactly `buf.len()` bytes; false at end of file or on an error.
///
/// # Safety
/// Async-signal-safe: used in the forked guardian.
unsafe fn read_exact(fd: RawFd, buf: &mut [u8]) -> bool {
    let mut got = 0;
    while got < buf.len() {
        let n = libc::read(fd, buf[got..].as_mut_ptr().cast(), buf.len() - got);
        if n > 0 {
            got += n as usize;
        } else if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        } else {
            return false;
        }
    }
    true
}
