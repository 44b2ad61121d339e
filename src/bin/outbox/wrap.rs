//! Wrap mode: `outbox [OPTIONS] -- CMD [ARGS...]` runs a command, envelopes
//! its output and exits with its status.
//!
//! ```text
//!  CMD (own process group) ──stdout──┐
//!                          ──stderr──┴─► one pipe ─► Reader ─► Session (filter.rs)
//!  reaper thread: waitpid ─► exit status, duration, "the command is gone"
//!
//!  --stderr separate:  ──stdout──► pipe ─► Reader ─► Session      (this thread)
//!                      ──stderr──► pipe ─► Reader ─► Session ".stderr" (scoped thread)
//! ```
//!
//! Invariants:
//! - By default stdout and stderr are the same pipe (two descriptors of one
//!   write end), so their bytes are merged in exactly the order the command
//!   wrote them; stdin is inherited. With `--stderr separate` each has its
//!   own pipe, reader, stored entry and envelope; the order between them is
//!   lost, which is the point. Their sizes together decide: when both fit
//!   `--budget`, each passes through unchanged to its own descriptor;
//!   otherwise stdout's envelope and then stderr's are printed on stdout,
//!   sharing the budget (a stream that can be shown whole in at most half
//!   of it gets what it needs, the other the rest).
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

use outbox::session::{CommandInfo, EnvelopeMode, Measure, Plan, RunOptions, Session, StderrMode, Stream};
use outbox::stream::ingest::Ingest;
use outbox::stream::input::{Reader, Stop};
use outbox::stream::interrupt;

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

/// Smallest `--budget` with `--stderr separate`: two envelopes of at least
/// the smallest budget each.
pub const SEPARATE_MIN_BUDGET: usize = 2 * outbox::session::MIN_BUDGET;

/// Runs `cmd` and envelopes its output; returns outbox's exit status.
pub fn run(args: &RunOptions, cmd: &[OsString]) -> anyhow::Result<u8> {
    let Some(program) = cmd.first() else {
        anyhow::bail!("no command after --: write outbox -- CMD [ARGS...]");
    };
    preflight(args)?;
    let separate = args.stderr == StderrMode::Separate;
    let name = shown(program);
    let label = Path::new(program).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let command_text =
        cmd.iter().map(|a| crate::integrate::shell::quote(&a.to_string_lossy())).collect::<Vec<_>>().join(" ");

    interrupt::install();
    let cannot = |what: &str, e: io::Error| anyhow::anyhow!("cannot {what} for the command: {e}");
    let (out_read, out_write) = pipe().map_err(|e| cannot("create a pipe", e))?;
    let (err_read, err_write) = match separate {
        true => pipe().map(|(r, w)| (Some(r), w)).map_err(|e| cannot("create a pipe", e))?,
        false => (None, out_write.try_clone().map_err(|e| cannot("duplicate the pipe", e))?),
    };
    let reads: Vec<&OwnedFd> = std::iter::once(&out_read).chain(err_read.as_ref()).collect();
    // Second descriptors of the read ends: after an interruption the readers
    // are gone, and the command must not die of SIGPIPE while it shuts down.
    let keep = reads
        .iter()
        .map(|r| r.try_clone().map(File::from))
        .collect::<io::Result<Vec<File>>>()
        .map_err(|e| cannot("duplicate the pipe", e))?;
    // Swapped in for a read end to end the input when background processes
    // keep writing after the command exited (see Watch).
    let devnull = File::open("/dev/null").map_err(|e| anyhow::anyhow!("cannot open /dev/null: {e}"))?;

    let mut command = Command::new(program);
    command
        .args(&cmd[1..])
        .stdin(Stdio::inherit())
        .stdout(Stdio::from(out_write))
        .stderr(Stdio::from(err_write))
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
    // The Command holds our copies of the write ends: without closing them
    // the pipes would never report end of input.
    drop(command);
    let pid = child.id() as libc::pid_t;
    drop(child); // reaped by the watch thread with waitpid, not by Child

    let read_fds: Vec<RawFd> = reads.iter().map(|r| r.as_raw_fd()).collect();
    let watch = match Watch::start(pid, started, read_fds.clone(), devnull, name.clone()) {
        Ok(w) => w,
        Err(e) => {
            // Nobody could reap or bound it: stop it rather than orphan it.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            anyhow::bail!("cannot start a thread to wait for {name} ({e}); it has been killed");
        }
    };
    let streams: &[Option<Stream>] = if separate { &[Some(Stream::Stdout), Some(Stream::Stderr)] } else { &[None] };
    let mut sessions = Vec::new();
    for &stream in streams {
        match Session::start_stream(args, &label, stream) {
            Ok(s) => sessions.push(s),
            Err(e) => {
                // preflight() checks what Session::start checks; this is
                // the fallback should they ever differ.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                return Err(e.context(format!("{name} was started and has been killed")));
            }
        }
    }
    // Each reader reads a descriptor that stays open (in `reads`) until the
    // reaper has been told that reader is done.
    let read_one = |i: usize, session: &mut Session| {
        // Safety: `reads[i]` outlives this call, which consumes the reader.
        let reader = unsafe { Reader::borrowed(read_fds[i]) }.with_stop(watch.stop_condition());
        let ingest = session.ingest(reader);
        let cut_off = watch.reader_done(i);
        (ingest, cut_off)
    };
    let ingests: Vec<(Ingest, bool)> = match sessions.as_mut_slice() {
        [out] => vec![read_one(0, out)],
        [out, err] => {
            let both = std::thread::scope(|scope| {
                let stderr_side = std::thread::Builder::new()
                    .name("outbox-stderr".into())
                    .spawn_scoped(scope, || read_one(1, err))?;
                let first = read_one(0, out);
                let second = stderr_side.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
                io::Result::Ok(vec![first, second])
            });
            match both {
                Ok(v) => v,
                Err(e) => {
                    unsafe { libc::kill(-pid, libc::SIGKILL) };
                    anyhow::bail!("cannot start a thread to read the stderr of {name} ({e}); it has been killed");
                }
            }
        }
        _ => unreachable!("one or two streams"),
    };
    drop(reads);
    drop(out_read);
    drop(err_read);

    let stopped_by = ingests.iter().find_map(|(i, _)| match i.stop {
        Some(Stop::Signal(sig)) => Some(sig),
        _ => None,
    });
    let waited = watch.wait_for_exit(pid, started, stopped_by, keep);
    if ingests.iter().any(|(_, cut_off)| *cut_off) {
        outbox::say!(
            "note: {name} exited, but a background process it started kept writing to its output; \
stopped reading {}s after the exit (later output is not kept)",
            AFTER_EXIT_CAP.as_secs()
        );
    } else if ingests.iter().any(|(i, _)| i.stop == Some(Stop::Requested)) {
        outbox::say!(
            "note: {name} exited, but a background process it started still holds its output open; \
stopped reading once the output was quiet"
        );
    }
    if waited.discarded > 0 {
        outbox::say!(
            "{} bytes that {name} wrote after the interruption are not in the envelope or the stored copy",
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
            outbox::say!("cannot learn how {name} exited: {e}");
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
    if let [out, err] = sessions.as_mut_slice() {
        let plans = plan(args, out.measure(), err.measure(), stopped_by.is_some());
        out.set_plan(plans[0]);
        err.set_plan(plans[1]);
    }
    let (mut failed, mut interrupted) = (false, None);
    for (session, (ingest, _)) in sessions.into_iter().zip(ingests) {
        let outcome = session.finish(ingest, Some(info.clone()));
        failed |= outcome.failed;
        interrupted = interrupted.or(outcome.interrupted);
    }

    if let Some(sig) = interrupted.or(waited.forwarded) {
        return Ok(interrupt::exit_code(sig));
    }
    Ok(match exit_status {
        Some(0) if failed => 125,
        Some(code) => code.clamp(0, 255) as u8,
        None => 125,
    })
}

/// How stdout's and stderr's sessions print (`--stderr separate`). When
/// both together fit the budget, each passes through to its own descriptor
/// (not when interrupted or binary, as for one stream). Otherwise each gets
/// an envelope: a stream shown whole in at most half the budget gets what
/// that takes, the other the rest; neither gets less than the smallest
/// budget.
fn plan(args: &RunOptions, out: Measure, err: Measure, interrupted: bool) -> [Plan; 2] {
    let budget = args.budget;
    let small = outbox::render::envelope::prints_unchanged(
        out.bytes + err.bytes,
        out.chars + err.chars,
        out.binary || err.binary,
        out.kept_whole && err.kept_whole,
        budget,
    );
    if args.envelope == EnvelopeMode::Auto && !interrupted && small {
        return [Plan { passthrough: true, budget }; 2];
    }
    let half = budget / 2;
    let need = |m: Measure| m.whole_envelope.filter(|&n| n <= half).map(|n| n.max(outbox::session::MIN_BUDGET));
    let err_budget = match (need(out), need(err)) {
        (_, Some(e)) => e,
        (Some(o), None) => budget - o,
        (None, None) => half,
    };
    [Plan { passthrough: false, budget: budget - err_budget }, Plan { passthrough: false, budget: err_budget }]
}

/// Checks what `Session::start` would refuse, before anything is run: a
/// command must not be started only to be killed over a usage error.
fn preflight(args: &RunOptions) -> anyhow::Result<()> {
    if args.stderr == StderrMode::Separate && args.budget < SEPARATE_MIN_BUDGET {
        anyhow::bail!(
            "--stderr separate prints two envelopes, which need --budget {SEPARATE_MIN_BUDGET} or more (got {})",
            args.budget
        );
    }
    Ok(())
}

/// The command name as printed in messages: lossy, control characters
/// escaped.
fn shown(program: &OsStr) -> String {
    outbox::text::sanitize::display_str(&program.to_string_lossy()).text
}

/// Reports a command that could not be started; returns 127 or 126.
fn spawn_failure(program: &OsStr, name: &str, e: &io::Error) -> u8 {
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
    /// Per read end: its reader has returned, so the descriptor is about to
    /// be closed and must not be touched any more.
    reader_done: Vec<bool>,
    /// The input was ended by swapping /dev/null in for a read end.
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
    fn start(
        pid: libc::pid_t,
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
        Ok(Watch { shared, name })
    }

    /// The reader's stop condition, checked after a second of silence: once
    /// the command has been reaped, everything it wrote is already in the
    /// pipe, so a quiet pipe means only background processes hold it.
    fn stop_condition(&self) -> Box<dyn FnMut() -> bool + Send> {
        let shared = self.shared.clone();
        Box::new(move || shared.lock().exit.is_some())
    }

    /// Marks the reader of read end `i` as gone; returns whether an input
    /// was cut off.
    fn reader_done(&self, i: usize) -> bool {
        let mut st = self.shared.lock();
        st.reader_done[i] = true;
        self.shared.cond.notify_all();
        st.cut_off
    }

    /// Waits for the command to exit, forwarding SIGINT/SIGTERM to its
    /// group (`already`: the signal that ended the input, if one did) and
    /// escalating to SIGKILL after the grace period. While interrupted, the
    /// pipes are drained through `keep` so the command can finish writing.
    fn wait_for_exit(&self, pid: libc::pid_t, started: Instant, already: Option<i32>, mut keep: Vec<File>) -> Waited {
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
                    unsafe { libc::kill(-pid, sig) };
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
                    unsafe { libc::kill(-pid, libc::SIGKILL) };
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

/// Reads what the pipes have within one tick; a pipe at its end (or
/// failing) is closed and removed from `keep`. Returns the bytes read.
fn drain(keep: &mut Vec<File>, buf: &mut [u8]) -> usize {
    let mut pfds: Vec<libc::pollfd> =
        keep.iter().map(|f| libc::pollfd { fd: f.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    let r = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, TICK.as_millis() as i32) };
    if r <= 0 {
        return 0;
    }
    let mut read = 0;
    let mut open = Vec::with_capacity(keep.len());
    for (mut f, p) in std::mem::take(keep).into_iter().zip(&pfds) {
        if p.revents == 0 {
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
fn reap(pid: libc::pid_t, started: Instant, read_fds: &[RawFd], devnull: File, shared: &Shared, name: &str) {
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
                outbox::say!(
                    "{name} tried to use the terminal (to read input or change its settings), which a \
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
    while st.reader_done.iter().any(|done| !done) {
        let now = Instant::now();
        if now >= deadline {
            // Background processes kept writing: end the input. dup2 swaps
            // /dev/null in for a read end atomically, so its reader's next
            // read returns end of input. This happens under the lock, and a
            // read end stays open until its reader is marked done under the
            // same lock, so the descriptor cannot have been reused.
            for (&fd, &done) in read_fds.iter().zip(&st.reader_done.clone()) {
                if !done && unsafe { libc::dup2(devnull.as_raw_fd(), fd) } >= 0 {
                    st.cut_off = true;
                }
            }
            break;
        }
        st = shared.cond.wait_timeout(st, deadline - now).map(|r| r.0).unwrap_or_else(|e| e.into_inner().0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> RunOptions {
        let argv = ["outbox"].iter().chain(extra).copied();
        crate::cli::Cli::try_parse_from(argv).expect("valid arguments").envelope.options().expect("valid options")
    }

    fn m(chars: u64, whole_envelope: Option<usize>) -> Measure {
        Measure { bytes: chars, chars, binary: false, kept_whole: whole_envelope.is_some(), whole_envelope }
    }

    #[test]
    fn small_streams_pass_through_together_or_not_at_all() {
        let a = args(&["--budget", "10000"]);
        let p = plan(&a, m(6000, Some(6600)), m(4000, Some(4600)), false);
        assert!(p.iter().all(|p| p.passthrough));
        let p = plan(&a, m(6000, Some(6600)), m(4001, Some(4600)), false);
        assert!(p.iter().all(|p| !p.passthrough), "together over the budget");
        let p = plan(&a, m(10, Some(600)), m(10, Some(600)), true);
        assert!(p.iter().all(|p| !p.passthrough), "interrupted");
        let p = plan(&a, m(0, Some(400)), m(0, Some(400)), false);
        assert!(p.iter().all(|p| !p.passthrough), "empty input is stated in an envelope");
        let mut binary = m(10, Some(600));
        binary.binary = true;
        assert!(!plan(&a, m(10, Some(600)), binary, false)[0].passthrough);
        let always = args(&["--budget", "10000", "--envelope", "always"]);
        assert!(!plan(&always, m(10, Some(600)), m(10, Some(600)), false)[0].passthrough);
    }

    #[test]
    fn the_budget_goes_to_what_can_be_shown_whole_then_halves() {
        let a = args(&["--budget", "10000"]);
        let budgets = |o, e| plan(&a, o, e, false).map(|p| p.budget);
        assert_eq!(budgets(m(90_000, None), m(3000, Some(3500))), [6500, 3500]);
        assert_eq!(budgets(m(3000, Some(3500)), m(90_000, None)), [3500, 6500]);
        assert_eq!(budgets(m(90_000, None), m(90_000, None)), [5000, 5000]);
        assert_eq!(budgets(m(9000, Some(9600)), m(9000, Some(9600))), [5000, 5000]);
        // Never below the smallest budget, even for an empty stream.
        assert_eq!(budgets(m(90_000, None), m(0, Some(400))), [9000, 1000]);
        assert_eq!(budgets(m(0, Some(400)), m(90_000, None)), [1000, 9000]);
    }
}
