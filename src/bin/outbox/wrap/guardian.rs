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
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use outbox::stream::interrupt;
use outbox::sys::signals;
use rustix::fs::{Mode, OFlags};
use rustix::process::{Pid, Signal, WaitOptions};
use rustix::thread::Timespec;
use signal_hook::consts::{
    SIGALRM, SIGHUP, SIGINT, SIGPIPE, SIGQUIT, SIGTERM, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2, SIGXFSZ,
};
use signal_hook::low_level::exit;

use super::child::pipe;

/// After outbox is gone: how long the command's group has between SIGTERM
/// and SIGKILL. Short: nobody is left to read what it prints.
pub const GUARD_GRACE: Duration = Duration::from_secs(1);
/// How often the guardian looks whether the group is empty during the grace.
const GUARD_TICK_NS: i64 = 20_000_000;
/// How long outbox waits for a stood-down guardian to exit.
const STAND_DOWN_WAIT: Duration = Duration::from_secs(2);

/// The running guardian of one command's process group. Dropping it stands
/// the guardian down and reaps it.
pub struct Guardian {
    pid: Pid,
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
        // Block every signal across the fork: outbox's handlers must not run
        // in the guardian before it has set its own dispositions.
        let old = signals::block(&[]);
        // SAFETY: fork has no preconditions; in the child, which has one
        // thread, only `guard` runs, which never returns and makes only
        // async-signal-safe calls on data prepared before the fork.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: this is the child of the fork, as `guard` requires.
            unsafe { guard(read.as_fd(), &open, message.as_bytes(), &old) }
        }
        let forked = io::Error::last_os_error();
        signals::restore(&old);
        let Some(pid) = Pid::from_raw(pid).filter(|_| pid > 0) else { return Err(forked) };
        // Also here, against the race with the child's own setpgid: the
        // guardian must have left outbox's group before outbox can die.
        let _ = rustix::process::setpgid(Some(pid), Some(pid));
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
            let _ = rustix::io::write(&w, b"d");
        }
        let start = Instant::now();
        loop {
            let reaped = !matches!(rustix::process::waitpid(Some(self.pid), WaitOptions::NOHANG), Ok(None));
            if reaped || start.elapsed() >= STAND_DOWN_WAIT {
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
/// Only between fork and exec, with `lifeline` open; makes only
/// async-signal-safe calls.
pub unsafe fn announce_group(lifeline: RawFd) {
    let _ = rustix::process::setpgid(None, None);
    let mut msg = [b'g', 0, 0, 0, 0];
    msg[1..].copy_from_slice(&rustix::process::getpid().as_raw_pid().to_ne_bytes());
    // Five bytes, under PIPE_BUF: written whole or not at all.
    let _ = rustix::io::write(BorrowedFd::borrow_raw(lifeline), &msg);
}

/// Descriptors open in this process (listed from /proc where there is one).
fn open_descriptors() -> Vec<RawFd> {
    if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
        let fds: Vec<RawFd> = dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<RawFd>().ok()).collect();
        if !fds.is_empty() {
            return fds;
        }
    }
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    let max = limit.map_or(1024, |n| n.min(65_536)) as RawFd;
    (0..max).collect()
}

/// The guardian's whole life, in the forked child.
///
/// # Safety
/// Only in the child of `fork`; every argument was prepared before the fork.
/// It closes descriptors that others own (the child never returns to them).
unsafe fn guard(lifeline: BorrowedFd<'_>, open: &[RawFd], message: &[u8], mask: &signals::Mask) -> ! {
    // Out of outbox's group first: from here on a group kill misses us.
    let _ = rustix::process::setpgid(None, None);
    signals::ignore(&[SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP]);
    signals::ignore(&[SIGTTIN, SIGTTOU, SIGXFSZ, SIGUSR1, SIGUSR2, SIGALRM]);
    signals::restore(mask);
    #[cfg(target_os = "linux")]
    let _ = rustix::thread::set_name(c"outbox-guard");
    // Hold none of outbox's descriptors but the lifeline and stderr (for
    // the one message): its stdout must reach end of file when it dies.
    let null = rustix::fs::open(c"/dev/null", OFlags::RDWR, Mode::empty()).ok();
    if let Some(null) = &null {
        let _ = rustix::stdio::dup2_stdin(null);
        let _ = rustix::stdio::dup2_stdout(null);
    }
    let null_fd = null.as_ref().map(|n| n.as_raw_fd());
    for &fd in open {
        if fd > 2 && fd != lifeline.as_raw_fd() && Some(fd) != null_fd {
            rustix::io::close(fd);
        }
    }
    // /dev/null opened onto 0 or 1 (they were closed) stays there.
    if null_fd.is_some_and(|fd| fd <= 2) {
        std::mem::forget(null);
    } else {
        drop(null);
    }
    let mut pgid = None;
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
                pgid = Pid::from_raw(i32::from_ne_bytes(id));
            }
            _ => exit(0), // stood down
        }
    }
    let alive = |pgid: Pid| rustix::process::test_kill_process_group(pgid).is_ok();
    let Some(pgid) = pgid.filter(|&g| g.as_raw_pid() > 0 && alive(g)) else {
        exit(0); // nothing left of the command
    };
    let _ = rustix::io::write(rustix::stdio::stderr(), message);
    let _ = rustix::process::kill_process_group(pgid, Signal::TERM);
    // A stopped process acts on SIGTERM only once continued.
    let _ = rustix::process::kill_process_group(pgid, Signal::CONT);
    let tick = Timespec { tv_sec: 0, tv_nsec: GUARD_TICK_NS };
    let ticks = GUARD_GRACE.as_nanos() / GUARD_TICK_NS as u128;
    for _ in 0..ticks {
        let _ = rustix::thread::nanosleep(&tick);
        if !alive(pgid) {
            exit(0);
        }
    }
    let _ = rustix::process::kill_process_group(pgid, Signal::KILL);
    exit(0)
}

/// Reads exactly `buf.len()` bytes; false at end of file or on an error.
/// Async-signal-safe: used in the forked guardian.
fn read_exact(fd: BorrowedFd<'_>, buf: &mut [u8]) -> bool {
    let mut got = 0;
    while got < buf.len() {
        match rustix::io::read(fd, &mut buf[got..]) {
            Ok(0) => return false,
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return false,
        }
    }
    true
}
