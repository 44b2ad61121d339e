//! Wrap mode: `outbox [OPTIONS] -- CMD [ARGS...]` runs a command, envelopes
//! its output and exits with its status.
//!
//! ```text
//!  CMD (own process group) ──stdout──┐
//!                          ──stderr──┴─► one pipe ─► Reader ─► Session (outbox::session)
//!  reaper thread: waitpid ─► exit status, duration, "the command is gone"
//!  guardian process: ends CMD's group should outbox die first
//!
//!  --stderr separate:  ──stdout──► pipe ─► Reader ─► Session      (this thread)
//!                      ──stderr──► pipe ─► Reader ─► Session ".stderr" (scoped thread)
//! ```
//!
//! Invariants:
//! - `--stderr inherit` gives the command outbox's own stderr: only stdout
//!   is read, stored and enveloped (its header says `"stream": "stdout"`).
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
//! - SIGINT, SIGTERM and SIGHUP to outbox are forwarded to the command's whole
//!   process group; the envelope then covers what arrived, and outbox exits
//!   128+N. A command that ignores the signal gets SIGKILL after
//!   [`SIGNAL_GRACE`]; a second signal sends it SIGKILL before outbox exits.
//! - The command does not outlive outbox: should outbox die without ending
//!   the group itself (SIGKILL, a harness killing outbox's process group),
//!   the guardian process does (guardian.rs).
//! - `--timeout`: when it expires the command's group gets SIGTERM, then
//!   SIGKILL after a short grace (watch.rs); the envelope covers what
//!   arrived, its header says `"timed_out": true`, and outbox exits 124.
//! - Exit status as GNU timeout: the command's own (128+N when signal N
//!   killed it); 127 not found; 126 found but not runnable; 125 when the
//!   command succeeded but outbox failed (when both failed, the command's
//!   status wins).
//!
//! The command runs in its own process group, away from the terminal: a
//! command that tries to read from or reconfigure the terminal is stopped
//! by the kernel (SIGTTIN/SIGTTOU). Interactive commands cannot be wrapped;
//! rather than hang, outbox says so and kills such a command.

mod child;
pub mod detach;
mod guardian;
mod watch;

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::{Duration, Instant};

use outbox::session::{CommandInfo, EnvelopeMode, Measure, Plan, RunOptions, Session, StderrMode, Stream};
use outbox::stream::ingest::Ingest;
use outbox::stream::input::{Reader, Stop};
use outbox::stream::interrupt;
use rustix::process::Signal;

use child::{pipe, spawn_failure};
use guardian::Guardian;
use watch::Watch;

/// After the command exits, how long background processes it started may
/// keep writing into the pipe before outbox stops reading.
pub const AFTER_EXIT_CAP: Duration = Duration::from_secs(5);
/// How long a command may take to exit after a forwarded SIGINT/SIGTERM/SIGHUP
/// before its process group gets SIGKILL.
pub const SIGNAL_GRACE: Duration = Duration::from_secs(5);
/// How long to wait for the process to go after SIGKILL (a process stuck in
/// the kernel may not) before giving up on its exit status.
const KILL_WAIT: Duration = Duration::from_secs(2);
/// How often the waiting loop looks at the interrupt flag.
const TICK: Duration = Duration::from_millis(50);

/// `--detach-after` with `--harness claude-code`: just under the 120 s
/// after which Claude Code's Bash tool stops a command.
pub const CLAUDE_CODE_DETACH: Duration = Duration::from_secs(110);

/// Exit status when `--timeout` expired, as GNU timeout's.
pub const TIMED_OUT: u8 = 124;

/// Smallest `--budget` with `--stderr separate`: two envelopes of at least
/// the smallest budget each.
pub const SEPARATE_MIN_BUDGET: usize = 2 * outbox::session::MIN_BUDGET;

/// How a wrapped run ended, for `--detach-after`'s record.
#[derive(Debug, Clone, Default)]
pub struct Ran {
    /// outbox's exit status.
    pub code: u8,
    /// The command's (128+N for signal N), when known.
    pub exit_status: Option<i32>,
    /// Where the stored copy (stdout's) is, when it was kept.
    pub full_output: Option<std::path::PathBuf>,
}

/// Runs `cmd` and envelopes its output; returns outbox's exit status.
/// `timeout`: end the command's group when it runs longer (exit 124).
pub fn run(args: &RunOptions, cmd: &[OsString], timeout: Option<Duration>) -> anyhow::Result<u8> {
    run_with(args, cmd, timeout, None).map(|r| r.code)
}

/// [`run`], telling `entry` (a detached run's record) where the output
/// is being stored as soon as it is known.
pub fn run_with(
    args: &RunOptions,
    cmd: &[OsString],
    timeout: Option<Duration>,
    entry: Option<&detach::Entry>,
) -> anyhow::Result<Ran> {
    let Some(program) = cmd.first() else {
        anyhow::bail!("no command after --: write outbox -- CMD [ARGS...]");
    };
    // Called by a shell wrapper: stdout may be another open of the shell's
    // own stdout file (`grep x f >> out`), where the real tool's output
    // belongs. Then outbox becomes the command, untouched.
    if crate::integrate::reopen::stdout_is_a_reopening() {
        use std::os::unix::process::CommandExt;
        let e = std::process::Command::new(program).args(&cmd[1..]).env_remove(crate::integrate::reopen::VAR).exec();
        return Ok(Ran { code: spawn_failure(program, &shown(program), &e), ..Ran::default() });
    }
    // Handlers first: preflight builds the family engine, which can take a
    // moment, and a signal then must not kill outbox the default way.
    interrupt::install();
    preflight(args)?;
    let name = shown(program);
    if let Some(sig) = interrupt::received() {
        // Interrupted before it started: do not start it.
        outbox::say!("interrupted by {} before {name} was started; it was not run", interrupt::name(sig));
        return Ok(Ran { code: interrupt::exit_code(sig), ..Ran::default() });
    }
    let label = Path::new(program).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let command_text =
        cmd.iter().map(|a| crate::integrate::shell::quote(&a.to_string_lossy())).collect::<Vec<_>>().join(" ");

    let cannot = |what: &str, e: io::Error| anyhow::anyhow!("cannot {what} for the command: {e}");
    let (out_read, out_write) = pipe().map_err(|e| cannot("create a pipe", e))?;
    let (err_read, err_write) = match args.stderr {
        StderrMode::Separate => pipe().map(|(r, w)| (Some(r), Some(w))).map_err(|e| cannot("create a pipe", e))?,
        StderrMode::Merged => (None, Some(out_write.try_clone().map_err(|e| cannot("duplicate the pipe", e))?)),
        // outbox's own stderr, untouched.
        StderrMode::Inherit => (None, None),
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

    // Ends the command's group should outbox die without doing so. Forked
    // first, so that it is out of outbox's group before the command can
    // start anything (the command tells it its group before exec); stood
    // down when this function returns.
    let guardian = match Guardian::start(&name) {
        Ok(g) => Some(g),
        Err(e) => {
            // A resource limit should not fail the command; say what is lost.
            outbox::say!("cannot start the guardian process ({e}); should outbox be killed, {name} may keep running");
            None
        }
    };
    let lifeline = guardian.as_ref().and_then(Guardian::lifeline);
    let mut command = child::command(program, &cmd[1..], out_write, err_write, lifeline);
    let started = Instant::now();
    let child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            let code = spawn_failure(program, &name, &e);
            return Ok(Ran { code, exit_status: Some(code.into()), full_output: None });
        }
    };
    // The Command holds our copies of the write ends: without closing them
    // the pipes would never report end of input.
    drop(command);
    let pid = child.id() as i32;
    // Reaped by the watch thread with waitpid, not by Child.
    drop(child);
    // A second signal to outbox ends this group before outbox exits.
    interrupt::set_child_group(Some(pid));

    let read_fds: Vec<RawFd> = reads.iter().map(|r| r.as_raw_fd()).collect();
    let mut watch = match Watch::start(pid, started, read_fds.clone(), devnull, name.clone()) {
        Ok(w) => w,
        Err(e) => {
            // Nobody could reap or bound it: stop it rather than orphan it.
            watch::signal_group(pid, Signal::KILL);
            anyhow::bail!("cannot start a thread to wait for {name} ({e}); it has been killed");
        }
    };
    if let Some(limit) = timeout {
        if let Err(e) = watch.start_timer(pid, started, limit) {
            watch::signal_group(pid, Signal::KILL);
            anyhow::bail!("cannot start a thread for --timeout ({e}); {name} has been killed");
        }
    }
    // With stderr inherited the one stream is stdout alone, and its header
    // says so.
    let streams: &[Option<Stream>] = match args.stderr {
        StderrMode::Separate => &[Some(Stream::Stdout), Some(Stream::Stderr)],
        StderrMode::Inherit => &[Some(Stream::Stdout)],
        StderrMode::Merged => &[None],
    };
    let mut sessions = Vec::new();
    for &stream in streams {
        match Session::start_stream(args, &label, stream) {
            Ok(s) => {
                if let (Some(entry), Some(path), true) = (entry, s.spill_path(), sessions.is_empty()) {
                    entry.set_spill(path);
                }
                sessions.push(s)
            }
            Err(e) => {
                // preflight() checks what Session::start checks; this is
                // the fallback should they ever differ.
                watch::signal_group(pid, Signal::KILL);
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
                    watch::signal_group(pid, Signal::KILL);
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
    // Final now: the timer sets it before it signals the group, and the
    // command has exited since.
    let timed_out = watch.timed_out();
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
        timed_out,
        timeout_ms: timeout.map(|t| t.as_millis() as u64),
    };
    // Output cut short by --timeout is enveloped even when small, as an
    // interrupted run's is, so that its header says so.
    match sessions.as_mut_slice() {
        [out, err] => {
            let plans =
                plan(args, out.measure(&ingests[0].0), err.measure(&ingests[1].0), stopped_by.is_some() || timed_out);
            out.set_plan(plans[0]);
            err.set_plan(plans[1]);
        }
        [one] if timed_out => one.set_plan(Plan { passthrough: false, budget: args.budget }),
        _ => {}
    }
    let (mut failed, mut interrupted, mut full_output) = (false, None, None);
    for (session, (ingest, _)) in sessions.into_iter().zip(ingests) {
        let outcome = session.finish(ingest, Some(info.clone()));
        failed |= outcome.failed;
        interrupted = interrupted.or(outcome.interrupted);
        full_output = full_output.or(outcome.full_output);
    }
    let ran = |code: u8| Ran { code, exit_status, full_output: full_output.clone() };

    // No member of the group outlives the run: wait out the timer's grace.
    watch.finish_timer();
    if let Some(sig) = interrupted.or(waited.forwarded) {
        return Ok(ran(interrupt::exit_code(sig)));
    }
    if timed_out {
        return Ok(ran(TIMED_OUT));
    }
    Ok(ran(match exit_status {
        Some(0) if failed => 125,
        Some(code) => code.clamp(0, 255) as u8,
        None => 125,
    }))
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
    // With user families, the engine is built (and kept) before the
    // command starts: its build can take seconds, and the command's output
    // must be read from the moment it exits. The shipped families alone
    // build quickly, while the command starts.
    if outbox::family::load_all().iter().any(|f| f.source.is_some()) {
        outbox::session::family::engine(&args.families)?;
    }
    Ok(())
}

/// The command name as printed in messages: lossy, control characters
/// escaped.
fn shown(program: &OsStr) -> String {
    outbox::text::sanitize::display_str(&program.to_string_lossy()).text
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
