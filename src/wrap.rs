//! Wrap mode: `outbox [OPTIONS] -- CMD [ARGS...]` runs a command, envelopes
//! its output and exits with its status.
//!
//! ```text
//!  CMD (own process group) ──stdout──┐
//!                          ──stderr──┴─► one pipe ─► Reader ─► Session (filter.rs)
//!  reaper thread: waitpid ─► exit status, duration, "the command is gone"
//! ```
//!
//! Invariants:
//! - stdout and stderr are the same pipe (two descriptors of one write end),
//!   so their bytes are merged in exactly the order the command wrote them;
//!   stdin is inherited.
//! - Our copies of the write end are closed right after the spawn, so the
//!   input ends when the command and everything it started close theirs.
//! - A background process that keeps the pipe open cannot hold outbox: once
//!   the command has been reaped, reading stops as soon as the pipe has been
//!   quiet for a second, and at most [`AFTER_EXIT_CAP`] after the exit even
//!   if it keeps writing. That process is left running (it gets SIGPIPE if it
//!   writes again, as it would after `| head`).
//! - SIGINT and SIGTERM to outbox are forwarded to the command's whole
//!   process group; the envelope then covers what arrived, and outbox exits
//!   128+N. A command that ignores the signal gets SIGKILL after
//!   [`SIGNAL_GRACE`].
//! - Exit status as GNU timeout: the command's own (128+N when signal N
//!   killed it); 127 not found; 126 found but not runnable; 125 when the
//!   command succeeded but outbox failed (when both failed, the command's
//!   status wins).
//!
//! The command runs in its own process group, away from the terminal: a
//! command that tries to read from or reconfigure the terminal is stopped
//! by the kernel (SIGTTIN/SIGTTOU). Interactive commands cannot be wrapped;
//! rather than hang, outbox says so and kills such a command.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::cli::{EnvelopeArgs, Format, StderrMode};
use crate::filter::{CommandInfo, Session};
use crate::input::{Reader, Stop};
use crate::interrupt;

/// After the command exits, how long background processes it started may
/// keep writing into the pipe before outbox stops reading.
pub const AFTER_EXIT_CAP: Duration = Duration::from_secs(5);
/// How long a command may take to exit after a forwarded SIGINT/SIGTERM
/// before its process group gets SIGKILL.
pub const SIGNAL_GRACE: Duration = Duration::from_secs(5);
/// How long to wait for the process to go after SIGKILL (a process stuck in
/// the kernel may not) before giving up on its exit status.
const KILL_WAIT: Duration = Duration::from_secs(2);
/// How often the waiting loop looks at the interrupt flag.
const TICK: Duration = Duration::from_millis(50);

const SEPARATE_UNSUPPORTED: &str = "--stderr separate is not supported yet: an envelope reads one stream, \
and two envelopes would split the budget and lose the order between the streams. Use the default \
(--stderr merged: stdout and stderr in the order they were written), or send stderr elsewhere \
yourself, e.g. outbox -- sh -c 'CMD 2>stderr.log'";

/// Runs `cmd` and envelopes its output; returns outbox's exit status.
pub fn run(args: &EnvelopeArgs, cmd: &[OsString]) -> anyhow::Result<u8> {
    let Some(program) = cmd.first() else {
        anyhow::bail!("no command after --: write outbox -- CMD [ARGS...]");
    };
    if args.stderr == StderrMode::Separate {
        anyhow::bail!(SEPARATE_UNSUPPORTED);
    }
    preflight(args)?;
    let name = shown(program);
    let label = Path::new(program).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let command_text = cmd.iter().map(|a| crate::shell::quote(&a.to_string_lossy())).collect::<Vec<_>>().join(" ");

    interrupt::install();
    let (read_end, write_end) = pipe().map_err(|e| anyhow::anyhow!("cannot create a pipe for the command: {e}"))?;
    // A second descriptor of the read end: after an interruption the reader
    // is gone, and the command must not die of SIGPIPE while it shuts down.
    let keep = read_end.try_clone().map_err(|e| anyhow::anyhow!("cannot duplicate the command's pipe: {e}"))?;
    // Swapped in for the read end to end the input when background
    // processes keep writing after the command exited (see Watch).
    let devnull = File::open("/dev/null").map_err(|e| anyhow::anyhow!("cannot open /dev/null: {e}"))?;

    let mut command = Command::new(program);
    command
        .args(&cmd[1..])
        .stdin(Stdio::inherit())
        .stdout(Stdio::from(
            write_end.try_clone().map_err(|e| anyhow::anyhow!("cannot duplicate the command's pipe: {e}"))?,
        ))
        .stderr(Stdio::from(write_end))
        .process_group(0);
    #[cfg_attr(not(target_os = "linux"), allow(unused_variables))]
    let parent = std::process::id() as libc::pid_t;
    // Safety: the closure only makes async-signal-safe system calls.
    unsafe {
        command.pre_exec(move || {
            // interrupt::install() ignores SIGXFSZ for outbox; an ignored
            // disposition survives exec, and the command should get its own.
            libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
            // Its own process group keeps the command out of reach of a
            // harness that kills outbox's group; should outbox itself be
            // killed (SIGKILL cannot be forwarded), the command at least is
            // told to stop. Linux only; the rest of its group is not told.
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
    let started = Instant::now();
    let child = match command.spawn() {
        Ok(c) => c,
        Err(e) => return Ok(spawn_failure(program, &name, &e)),
    };
    // The Command holds our copies of the write end: without closing them
    // the pipe would never report end of input.
    drop(command);
    let pid = child.id() as libc::pid_t;
    drop(child); // reaped by the watch thread with waitpid, not by Child

    let read_fd = read_end.as_raw_fd();
    let watch = match Watch::start(pid, started, read_fd, devnull, name.clone()) {
        Ok(w) => w,
        Err(e) => {
            // Nobody could reap or bound it: stop it rather than orphan it.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            anyhow::bail!("cannot start a thread to wait for {name} ({e}); it has been killed");
        }
    };
    let mut session = match Session::start(args, &label) {
        Ok(s) => s,
        Err(e) => {
            // preflight() checks what Session::start checks; this is the
            // fallback should they ever differ.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            return Err(e.context(format!("{name} was started and has been killed")));
        }
    };
    let reader = Reader::owned(File::from(read_end)).with_stop(watch.stop_condition());
    let ingest = session.ingest(reader);
    let cut_off = watch.reader_done();

    let stopped_by = match ingest.stop {
        Some(Stop::Signal(sig)) => Some(sig),
        _ => None,
    };
    let waited = watch.wait_for_exit(pid, started, stopped_by, File::from(keep));
    if cut_off {
        eprintln!(
            "outbox: note: {name} exited, but a background process it started kept writing to its output; \
stopped reading {}s after the exit (later output is not kept)",
            AFTER_EXIT_CAP.as_secs()
        );
    } else if ingest.stop == Some(Stop::Requested) {
        eprintln!(
            "outbox: note: {name} exited, but a background process it started still holds its output open; \
stopped reading once the output was quiet"
        );
    }
    if waited.discarded > 0 {
        eprintln!(
            "outbox: {} bytes that {name} wrote after the interruption are not in the envelope or the stored copy",
            waited.discarded
        );
    }

    let (exit_status, killed_by_signal) = match &waited.exit {
        Some(Ok(st)) => match (st.code(), st.signal()) {
            (Some(code), _) => (Some(code), None),
            (None, Some(sig)) => (Some(128 + sig), Some(sig)),
            (None, None) => (None, None),
        },
        Some(Err(e)) => {
            eprintln!("outbox: cannot learn how {name} exited: {e}");
            (None, None)
        }
        None => (None, None),
    };
    let info = CommandInfo {
        command: command_text,
        exit_status,
        killed_by_signal,
        duration_ms: Some(waited.duration.as_millis() as u64),
    };
    let outcome = session.finish(ingest, Some(info));

    if let Some(sig) = outcome.interrupted.or(waited.forwarded) {
        return Ok(interrupt::exit_code(sig));
    }
    Ok(match exit_status {
        Some(0) if outcome.failed => 125,
        Some(code) => code.clamp(0, 255) as u8,
        None => 125,
    })
}

/// Checks what `Session::start` would refuse, before anything is run: a
/// command must not be started only to be killed over a usage error.
fn preflight(args: &EnvelopeArgs) -> anyhow::Result<()> {
    crate::signal::matcher(args.signal.as_deref())
        .map_err(|e| anyhow::anyhow!("--signal is not a valid regex: {e}"))?;
    if args.format != Format::Text {
        anyhow::bail!("--format {:?} is not available in wrap mode yet; use --format text", args.format);
    }
    Ok(())
}

/// The command name as printed in messages: lossy, control characters
/// escaped.
fn shown(program: &OsStr) -> String {
    crate::sanitize::display_str(&program.to_string_lossy()).text
}

/// Reports a command that could not be started; returns 127 or 126.
fn spawn_failure(program: &OsStr, name: &str, e: &io::Error) -> u8 {
    let has_slash = program.to_string_lossy().contains('/');
    match e.kind() {
        io::ErrorKind::NotFound if has_slash && Path::new(program).exists() => {
            eprintln!("outbox: {name}: cannot run it: {e} (is its #! interpreter installed?)");
            126
        }
        io::ErrorKind::NotFound => {
            eprintln!("outbox: {name}: command not found");
            127
        }
        io::ErrorKind::PermissionDenied => {
            eprintln!(
                "outbox: {name}: permission denied: it exists but cannot be run (not executable, or a directory)"
            );
            126
        }
        _ => {
            eprintln!("outbox: {name}: cannot run it: {e}");
            126
        }
    }
}

/// A pipe whose two ends are close-on-exec, so the command receives only
/// the duplicates that become its stdout and stderr.
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // Safety: pipe2 just returned these two descriptors, owned by nobody.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

#[derive(Default)]
struct State {
    /// How the command ended, and when (since the spawn).
    exit: Option<(io::Result<ExitStatus>, Duration)>,
    /// The reader has returned: its descriptor may be closed and reused, so
    /// it must not be touched any more.
    reader_done: bool,
    /// The input was ended by swapping /dev/null in for the read end.
    cut_off: bool,
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
struct Watch {
    shared: Arc<Shared>,
    name: String,
}

/// How waiting for the command ended.
struct Waited {
    exit: Option<io::Result<ExitStatus>>,
    duration: Duration,
    /// A signal outbox received and forwarded while waiting.
    forwarded: Option<i32>,
    /// Bytes read and thrown away after an interruption.
    discarded: u64,
}

impl Watch {
    /// Starts the reaper thread for `pid`, with SIGINT/SIGTERM blocked so
    /// they interrupt the reading thread instead.
    fn start(pid: libc::pid_t, started: Instant, read_fd: RawFd, devnull: File, name: String) -> io::Result<Watch> {
        let shared = Arc::new(Shared { state: Mutex::new(State::default()), cond: Condvar::new() });
        let sh = shared.clone();
        let n = name.clone();
        interrupt::with_signals_blocked(|| {
            std::thread::Builder::new()
                .name("outbox-reaper".into())
                .spawn(move || reap(pid, started, read_fd, devnull, &sh, &n))
        })?;
        Ok(Watch { shared, name })
    }

    /// The reader's stop condition, checked after a second of silence: once
    /// the command has been reaped, everything it wrote is already in the
    /// pipe, so a quiet pipe means only background processes hold it.
    fn stop_condition(&self) -> Box<dyn FnMut() -> bool + Send> {
        let shared = self.shared.clone();
        Box::new(move || shared.lock().exit.is_some())
    }

    /// Marks the reader as gone; returns whether the input was cut off.
    fn reader_done(&self) -> bool {
        let mut st = self.shared.lock();
        st.reader_done = true;
        self.shared.cond.notify_all();
        st.cut_off
    }

    /// Waits for the command to exit, forwarding SIGINT/SIGTERM to its
    /// group (`already`: the signal that ended the input, if one did) and
    /// escalating to SIGKILL after the grace period. While interrupted, the
    /// pipe is drained through `keep` so the command can finish writing.
    fn wait_for_exit(&self, pid: libc::pid_t, started: Instant, already: Option<i32>, mut keep: File) -> Waited {
        let mut forwarded: Option<(i32, Instant)> = None;
        let mut killed: Option<Instant> = None;
        let mut discarded = 0u64;
        let mut pipe_open = true;
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
                    unsafe { libc::kill(-pid, sig) };
                    forwarded = Some((sig, Instant::now()));
                }
            }
            if let Some((sig, at)) = forwarded {
                if killed.is_none() && at.elapsed() >= SIGNAL_GRACE {
                    eprintln!(
                        "outbox: {} did not exit within {}s of {}; sending SIGKILL to its process group",
                        self.name,
                        SIGNAL_GRACE.as_secs(),
                        interrupt::name(sig)
                    );
                    unsafe { libc::kill(-pid, libc::SIGKILL) };
                    killed = Some(Instant::now());
                }
            }
            if killed.is_some_and(|at| at.elapsed() >= KILL_WAIT) {
                eprintln!(
                    "outbox: {} (process group {pid}) did not exit after SIGKILL; not waiting for it any longer",
                    self.name
                );
                return done(None, started.elapsed(), forwarded, discarded);
            }
            // Pause for one tick: reading the pipe when interrupted (the
            // reader is gone), else sleeping until the reaper reports.
            if forwarded.is_some() && pipe_open {
                match drain(&mut keep, &mut buf) {
                    Some(n) => discarded += n as u64,
                    None => pipe_open = false,
                }
            } else {
                let st = self.shared.lock();
                if st.exit.is_none() {
                    let _ = self.shared.cond.wait_timeout(st, TICK);
                }
            }
        }
    }
}

/// Reads what is available within one tick; None at end of input.
fn drain(keep: &mut File, buf: &mut [u8]) -> Option<usize> {
    let mut pfd = libc::pollfd { fd: keep.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let r = unsafe { libc::poll(&mut pfd, 1, TICK.as_millis() as i32) };
    if r <= 0 {
        return Some(0);
    }
    match keep.read(buf) {
        Ok(0) => None,
        Ok(n) => Some(n),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Some(0),
        Err(_) => None,
    }
}

/// The reaper thread: waits for the command (reporting a stop on terminal
/// access instead of hanging), records how it ended, then bounds how long
/// background processes may keep the input going.
fn reap(pid: libc::pid_t, started: Instant, read_fd: RawFd, devnull: File, shared: &Shared, name: &str) {
    let exit = loop {
        let mut status: libc::c_int = 0;
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break Err(e);
        }
        if libc::WIFSTOPPED(status) {
            let sig = libc::WSTOPSIG(status);
            if sig == libc::SIGTTIN || sig == libc::SIGTTOU {
                // Run away from the terminal, it would wait forever.
                eprintln!(
                    "outbox: {name} tried to use the terminal (to read input or change its settings), which a \
wrapped command cannot do: it runs in its own process group. Killing it; run interactive commands without outbox."
                );
                unsafe { libc::kill(-pid, libc::SIGKILL) };
            }
            continue;
        }
        break Ok(ExitStatus::from_raw(status));
    };
    let mut st = shared.state.lock().unwrap_or_else(|e| e.into_inner());
    st.exit = Some((exit, started.elapsed()));
    shared.cond.notify_all();
    let deadline = Instant::now() + AFTER_EXIT_CAP;
    while !st.reader_done {
        let now = Instant::now();
        if now >= deadline {
            // Background processes kept writing: end the input. dup2 swaps
            // /dev/null in for the read end atomically, so the reader's next
            // read returns end of input. This happens under the lock, and
            // the reading thread takes the lock as soon as the reader has
            // returned, before anything else could reuse the descriptor.
            if unsafe { libc::dup2(devnull.as_raw_fd(), read_fd) } >= 0 {
                st.cut_off = true;
            }
            break;
        }
        st = shared.cond.wait_timeout(st, deadline - now).map(|r| r.0).unwrap_or_else(|e| e.into_inner().0);
    }
}
