//! Waiting for the command: the reaper thread (exit status, terminal
//! access, background processes that hold the pipe) and the wait that
//! forwards outbox's signals to the command's process group.

use std::fs::File;
use std::io::{self, Read};
use std::mem::ManuallyDrop;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use outbox::stream::interrupt;
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitOptions};

use super::{AFTER_EXIT_CAP, KILL_WAIT, SIGNAL_GRACE, TICK};

#[derive(Default)]
struct State {
    /// How the command ended, and when (since the spawn).
    exit: Option<(io::Result<ExitStatus>, Duration)>,
    /// Per read end: its reader has returned, so the descriptor is about to
    /// be closed and must not be touched any more.
    reader_done: Vec<bool>,
    /// The input was ended by swapping /dev/null in for a read end.
    cut_off: bool,
    /// The command has been reaped (stays true once `exit` is taken).
    exited: bool,
    /// `--timeout` expired; the timer is ending the group.
    timed_out: bool,
    /// outbox is done waiting (the command may not have been reaped, when
    /// it would not die even of SIGKILL): the timer must not fire later.
    finished: bool,
}

struct Shared {
    state: Mutex<State>,
    cond: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data: keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The reaper thread and what it shares with the reading thread.
pub(super) struct Watch {
    shared: Arc<Shared>,
    name: String,
    /// The `--timeout` thread, joined once the command is gone.
    timer: Option<std::thread::JoinHandle<()>>,
}

/// How waiting for the command ended.
pub(super) struct Waited {
    pub exit: Option<io::Result<ExitStatus>>,
    pub duration: Duration,
    /// A signal outbox received and forwarded while waiting.
    pub forwarded: Option<i32>,
    /// Bytes read and thrown away after an interruption.
    pub discarded: u64,
}

/// `--timeout`: when it expires, the command's group gets SIGTERM, and
/// SIGKILL after this unless it is empty by then.
pub(super) const TIMEOUT_GRACE: Duration = Duration::from_secs(2);

impl Watch {
    /// Starts the reaper thread for `pid`, with SIGINT/SIGTERM/SIGHUP blocked so
    /// they interrupt the reading thread instead.
    pub(super) fn start(
        pid: i32,
        started: Instant,
        read_fds: Vec<RawFd>,
        devnull: File,
        name: String,
    ) -> io::Result<Watch> {
        let state = State { reader_done: vec![false; read_fds.len()], ..State::default() };
        let shared = Arc::new(Shared { state: Mutex::new(state), cond: Condvar::new() });
        let sh = shared.clone();
        let n = name.clone();
        interrupt::with_signals_blocked(|| {
            std::thread::Builder::new()
                .name("outbox-reaper".into())
                .spawn(move || reap(pid, started, &read_fds, devnull, &sh, &n))
        })?;
        Ok(Watch { shared, name, timer: None })
    }

    /// Starts the `--timeout` thread: at `started + limit`, unless the
    /// command has exited, it ends process group `pgid` (SIGTERM, then
    /// SIGKILL after [`TIMEOUT_GRACE`] unless the group is empty).
    pub(super) fn start_timer(&mut self, pgid: i32, started: Instant, limit: Duration) -> io::Result<()> {
        let shared = self.shared.clone();
        let name = self.name.clone();
        let handle = interrupt::with_signals_blocked(|| {
            std::thread::Builder::new()
                .name("outbox-timeout".into())
                .spawn(move || time_out(pgid, started + limit, limit, &shared, &name))
        })?;
        self.timer = Some(handle);
        Ok(())
    }

    /// Whether `--timeout` expired.
    pub(super) fn timed_out(&self) -> bool {
        self.shared.lock().timed_out
    }

    /// Waits for the timer to finish ending the group (at most
    /// [`TIMEOUT_GRACE`]; at once when the command exited in time), so no
    /// member of it outlives the run.
    pub(super) fn finish_timer(&mut self) {
        if let Some(t) = self.timer.take() {
            self.shared.lock().finished = true;
            self.shared.cond.notify_all();
            let _ = t.join();
        }
    }

    /// The reader's stop condition, checked after a second of silence: once
    /// the command has been reaped, everything it wrote is already in the
    /// pipe, so a quiet pipe means only background processes hold it.
    pub(super) fn stop_condition(&self) -> Box<dyn FnMut() -> bool + Send> {
        let shared = self.shared.clone();
        Box::new(move || shared.lock().exit.is_some())
    }

    /// Marks the reader of read end `i` as gone; returns whether an input
    /// was cut off.
    pub(super) fn reader_done(&self, i: usize) -> bool {
        let mut st = self.shared.lock();
        st.reader_done[i] = true;
        self.shared.cond.notify_all();
        st.cut_off
    }

    /// Waits for the command to exit, forwarding SIGINT/SIGTERM/SIGHUP to its
    /// group (`already`: the signal that ended the input, if one did) and
    /// escalating to SIGKILL after the grace period. While interrupted, the
    /// pipes are drained through `keep` so the command can finish writing.
    pub(super) fn wait_for_exit(
        &self,
        pid: i32,
        started: Instant,
        already: Option<i32>,
        mut keep: Vec<File>,
    ) -> Waited {
        let mut forwarded: Option<(i32, Instant)> = None;
        let mut killed: Option<Instant> = None;
        let mut discarded = 0u64;
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let done = |exit, duration, forwarded: Option<(i32, Instant)>, discarded| Waited {
                exit,
                duration,
                forwarded: forwarded.map(|f| f.0),
                discarded,
            };
            if let Some((exit, duration)) = self.shared.lock().exit.take() {
                return done(Some(exit), duration, forwarded, discarded);
            }
            if forwarded.is_none() {
                if let Some(sig) = already.or_else(interrupt::received) {
                    if let Some(signal) = Signal::from_named_raw(sig) {
                        signal_group(pid, signal);
                    }
                    forwarded = Some((sig, Instant::now()));
                }
            }
            if let Some((sig, at)) = forwarded {
                if killed.is_none() && at.elapsed() >= SIGNAL_GRACE {
                    outbox::say!(
                        "{} did not exit within {}s of {}; sending SIGKILL to its process group",
                        self.name,
                        SIGNAL_GRACE.as_secs(),
                        interrupt::name(sig)
                    );
                    signal_group(pid, Signal::KILL);
                    killed = Some(Instant::now());
                }
            }
            if killed.is_some_and(|at| at.elapsed() >= KILL_WAIT) {
                outbox::say!(
                    "{} (process group {pid}) did not exit after SIGKILL; not waiting for it any longer",
                    self.name
                );
                return done(None, started.elapsed(), forwarded, discarded);
            }
            // Pause for one tick: reading the pipe when interrupted (the
            // reader is gone), else sleeping until the reaper reports.
            if forwarded.is_some() && !keep.is_empty() {
                discarded += drain(&mut keep, &mut buf) as u64;
            } else {
                let st = self.shared.lock();
                if st.exit.is_none() {
                    let _ = self.shared.cond.wait_timeout(st, TICK);
                }
            }
        }
    }
}

/// Sends `sig` to process group `pgid` (best effort: an empty group is
/// gone already).
pub(super) fn signal_group(pgid: i32, sig: Signal) {
    if let Some(pid) = Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(pid, sig);
    }
}

/// Reads what the pipes have within one tick; a pipe at its end (or
/// failing) is closed and removed from `keep`. Returns the bytes read.
fn drain(keep: &mut Vec<File>, buf: &mut [u8]) -> usize {
    let ready: Vec<bool> = {
        let mut pfds: Vec<PollFd<'_>> = keep.iter().map(|f| PollFd::new(f, PollFlags::IN)).collect();
        let tick = Timespec { tv_sec: 0, tv_nsec: TICK.as_nanos() as _ };
        match rustix::event::poll(&mut pfds, Some(&tick)) {
            Ok(n) if n > 0 => pfds.iter().map(|p| !p.revents().is_empty()).collect(),
            _ => return 0,
        }
    };
    let mut read = 0;
    let mut open = Vec::with_capacity(keep.len());
    for (mut f, ready) in std::mem::take(keep).into_iter().zip(ready) {
        if !ready {
            open.push(f);
            continue;
        }
        match f.read(buf) {
            Ok(0) => {}
            Ok(n) => {
                read += n;
                open.push(f);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => open.push(f),
            Err(_) => {}
        }
    }
    *keep = open;
    read
}

/// The reaper thread: waits for the command (reporting a stop on terminal
/// access instead of hanging), records how it ended, then bounds how long
/// background processes may keep the input going.
fn reap(pid: i32, started: Instant, read_fds: &[RawFd], devnull: File, shared: &Shared, name: &str) {
    let exit = loop {
        let status = match rustix::process::waitpid(Pid::from_raw(pid), WaitOptions::UNTRACED) {
            Ok(Some((_, status))) => status,
            Ok(None) => continue, // not without WNOHANG; be safe
            Err(Errno::INTR) => continue,
            Err(e) => break Err(io::Error::from(e)),
        };
        if status.stopped() {
            let sig = status.stopping_signal();
            if sig == Some(Signal::TTIN.as_raw()) || sig == Some(Signal::TTOU.as_raw()) {
                // Run away from the terminal, it would wait forever.
                outbox::say!(
                    "{name} tried to use the terminal (to read input or change its settings), which a \
wrapped command cannot do: it runs in its own process group. Killing it; run interactive commands without outbox."
                );
                signal_group(pid, Signal::KILL);
            }
            continue;
        }
        break Ok(ExitStatus::from_raw(status.as_raw()));
    };
    let mut st = shared.state.lock().unwrap_or_else(|e| e.into_inner());
    st.exit = Some((exit, started.elapsed()));
    st.exited = true;
    shared.cond.notify_all();
    let deadline = Instant::now() + AFTER_EXIT_CAP;
    while st.reader_done.iter().any(|done| !done) {
        let now = Instant::now();
        if now >= deadline {
            // Background processes kept writing: end the input. dup2 swaps
            // /dev/null in for a read end atomically, so its reader's next
            // read returns end of input. This happens under the lock, and a
            // read end stays open until its reader is marked done under the
            // same lock, so the descriptor cannot have been reused.
            for (&fd, &done) in read_fds.iter().zip(&st.reader_done.clone()) {
                if done {
                    continue;
                }
                // SAFETY: the reader of `fd` is not done, so it is open, as
                // said above; ManuallyDrop leaves it to its owner.
                let mut read_end = ManuallyDrop::new(unsafe { OwnedFd::from_raw_fd(fd) });
                if rustix::io::dup2(&devnull, &mut read_end).is_ok() {
                    st.cut_off = true;
                }
            }
            break;
        }
        st = shared.cond.wait_timeout(st, deadline - now).map(|r| r.0).unwrap_or_else(|e| e.into_inner().0);
    }
}

/// The `--timeout` thread: sleeps until `deadline` or the command's exit;
/// on the deadline, ends the group. Returns once the group is empty or has
/// been sent SIGKILL, or at once when the command exited in time.
fn time_out(pgid: i32, deadline: Instant, limit: Duration, shared: &Shared, name: &str) {
    let mut st = shared.lock();
    loop {
        if st.exited || st.finished {
            return;
        }
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        st = shared.cond.wait_timeout(st, deadline - now).map(|r| r.0).unwrap_or_else(|e| e.into_inner().0);
    }
    st.timed_out = true;
    drop(st);
    outbox::say!(
        "{name} did not finish within --timeout {}; sending SIGTERM to its process group",
        shown_duration(limit)
    );
    // The group stays valid (the reaper has not reaped the command, or
    // members remain) until kill reports it empty: no reused id is hit.
    signal_group(pgid, Signal::TERM);
    signal_group(pgid, Signal::CONT);
    let until = Instant::now() + TIMEOUT_GRACE;
    while Instant::now() < until {
        if !group_alive(pgid) {
            return;
        }
        std::thread::sleep(TICK);
    }
    outbox::say!(
        "{name} is still running {}s after SIGTERM; sending SIGKILL to its process group",
        TIMEOUT_GRACE.as_secs()
    );
    signal_group(pgid, Signal::KILL);
}

/// A duration as the user would write it: `1s`, `500ms`, `1.5s`.
fn shown_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

/// Whether process group `pgid` has a member that is not a zombie. A
/// killed grandchild is reparented to init and stays a zombie until init
/// reaps it, which some container inits do late; kill(2) counts zombies,
/// so on Linux /proc decides.
fn group_alive(pgid: i32) -> bool {
    if Pid::from_raw(pgid).is_none_or(|pid| rustix::process::test_kill_process_group(pid).is_err()) {
        return false;
    }
    let Ok(dir) = std::fs::read_dir("/proc") else { return true };
    for e in dir.flatten() {
        if !e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        // pid (comm) state ppid pgrp ...: comm may hold spaces and ')'.
        let Some((_, rest)) = stat.rsplit_once(')') else { continue };
        let mut f = rest.split_whitespace();
        let (state, pgrp) = (f.next(), f.nth(1));
        if pgrp.and_then(|p| p.parse::<i32>().ok()) == Some(pgid) && !matches!(state, Some("Z" | "X")) {
            return true;
        }
    }
    false
}
