//! `outbox --detach-after D -- CMD`: a command that outlives the agent's
//! patience. When it is still running after D, outbox prints the envelope
//! of what has arrived (`"running": true`, the run's id) and exits 0; the
//! command goes on, its output still going to the store, and `outbox
//! status`, `outbox wait ID` and `outbox show ID` follow it.
//!
//! ```text
//!  outbox (the waiter) ──fork, before any thread──► runner (own session, setsid)
//!    waits up to D on the "done" pipe                  wrap mode as usual: guardian,
//!    ├ pipe closed first: runner finished ──►          command, store; stdout/stderr
//!    │   print its output (out, err), exit with        go to the record's `out`/`err`
//!    │   the command's status, drop the record         files; writes `done.json`
//!    └ D passed: envelope of the spill so far,
//!        "running": true, exit 0
//!
//!  <store>/.running/ID/  info.json (runner pid, command, spill path)
//!                        out, err (the runner's own output)  done.json (how it ended)
//! ```
//!
//! Invariants:
//! - The runner is forked while outbox has only one thread, and leaves
//!   outbox's process group and session at once: the harness killing
//!   outbox (or its group) does not reach it, and the partial output is
//!   never lost: it is in the store, being written.
//! - The waiter holds none of the runner's files open once it exits, so
//!   the agent's harness sees its output end.
//! - A signal to the waiter before D (Ctrl-C) is passed to the runner,
//!   which ends the command as wrap mode does; the waiter then prints the
//!   runner's envelope.
//! - Without a writable store, detaching is impossible: outbox says so and
//!   runs the command in the ordinary way.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use outbox::session::{CommandInfo, RunOptions};
use outbox::stream::interrupt;
use serde::{Deserialize, Serialize};

/// How long a finished run's record is kept for `status` and `wait`.
const KEEP_FINISHED: Duration = Duration::from_secs(24 * 3600);
/// How often waiting loops look.
const TICK: Duration = Duration::from_millis(50);

/// A detached run's record, `<store>/.running/ID/`.
#[derive(Debug, Clone)]
pub struct Entry {
    pub id: String,
    dir: PathBuf,
}

/// `info.json`: what was started.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Info {
    pub id: String,
    pub label: String,
    pub command: String,
    pub runner_pid: i32,
    pub started: u64,
    /// The temporary file the output is being stored in.
    #[serde(default)]
    pub spill: Option<PathBuf>,
}

/// `done.json`: how it ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Done {
    /// outbox's exit status (the command's, as wrap mode gives it).
    pub code: u8,
    pub exit_status: Option<i32>,
    pub full_output: Option<PathBuf>,
    pub ended: u64,
}

/// Where a run is.
#[derive(Debug, Clone)]
pub enum State {
    Running,
    Done(Done),
    /// The runner is gone without saying how it ended.
    Lost,
}

fn registry(store: &Path) -> PathBuf {
    store.join(".running")
}

fn now() -> u64 {
    outbox::store::now_secs()
}

impl Entry {
    /// A new record for a run of `label`.
    fn create(store: &Path, label: &str) -> io::Result<Entry> {
        use std::os::unix::fs::DirBuilderExt;
        let reg = registry(store);
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&reg)?;
        if std::fs::symlink_metadata(&reg)?.file_type().is_symlink() {
            return Err(io::Error::other(format!("{} is a symlink; refusing to use it", reg.display())));
        }
        let seed = format!("{label}{}{:?}", std::process::id(), std::time::SystemTime::now());
        let hex: String = blake3::hash(seed.as_bytes()).as_bytes()[..4].iter().map(|b| format!("{b:02x}")).collect();
        let id = format!("{}-run{hex}", outbox::store::sanitize_label(label, "cmd"));
        let dir = reg.join(&id);
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(Entry { id, dir })
    }

    /// The record of run `id`, if there is one.
    pub fn open(store: &Path, id: &str) -> Option<Entry> {
        if id.is_empty() || id.contains('/') || id.starts_with('.') {
            return None;
        }
        let dir = registry(store).join(id);
        dir.join("info.json").is_file().then(|| Entry { id: id.to_string(), dir })
    }

    /// Every record, oldest first; finished ones older than a day are
    /// removed on the way.
    pub fn list(store: &Path) -> Vec<(Entry, Info, State)> {
        let Ok(rd) = std::fs::read_dir(registry(store)) else { return Vec::new() };
        let mut out = Vec::new();
        for e in rd.flatten() {
            let Some(name) = e.file_name().to_str().map(str::to_string) else { continue };
            let Some(entry) = Entry::open(store, &name) else { continue };
            let Some(info) = entry.info() else { continue };
            let state = entry.state(&info);
            if let State::Done(d) = &state {
                if now().saturating_sub(d.ended) > KEEP_FINISHED.as_secs() {
                    entry.remove();
                    continue;
                }
            }
            out.push((entry, info, state));
        }
        out.sort_by_key(|(_, i, _)| i.started);
        out
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn info(&self) -> Option<Info> {
        serde_json::from_slice(&std::fs::read(self.file("info.json")).ok()?).ok()
    }

    fn write_json<T: Serialize>(&self, name: &str, v: &T) -> io::Result<()> {
        let tmp = self.file(&format!(".{name}.tmp"));
        std::fs::write(&tmp, serde_json::to_vec(v).map_err(io::Error::other)?)?;
        std::fs::rename(&tmp, self.file(name))
    }

    /// Records where the output is being stored (called by wrap mode).
    pub fn set_spill(&self, path: &Path) {
        if let Some(mut info) = self.info() {
            info.spill = Some(path.to_path_buf());
            let _ = self.write_json("info.json", &info);
        }
    }

    pub fn state(&self, info: &Info) -> State {
        if let Some(d) = std::fs::read(self.file("done.json")).ok().and_then(|b| serde_json::from_slice(&b).ok()) {
            return State::Done(d);
        }
        match rustix::process::Pid::from_raw(info.runner_pid).map(|p| rustix::process::test_kill_process(p).is_ok()) {
            Some(true) => State::Running,
            _ => State::Lost,
        }
    }

    /// What the runner printed (the final envelope) and said on stderr.
    pub fn output(&self) -> (Vec<u8>, Vec<u8>) {
        (std::fs::read(self.file("out")).unwrap_or_default(), std::fs::read(self.file("err")).unwrap_or_default())
    }

    pub fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `cmd` detached after `after` (see the module's comment).
pub fn run(args: &RunOptions, cmd: &[OsString], timeout: Option<Duration>, after: Duration) -> anyhow::Result<u8> {
    let label = cmd
        .first()
        .and_then(|p| Path::new(p).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let label = args.label.clone().unwrap_or(label);
    let command_text =
        cmd.iter().map(|a| crate::integrate::shell::quote(&a.to_string_lossy())).collect::<Vec<_>>().join(" ");
    let store = match args.store.dir().map(Path::to_path_buf).and_then(|d| Entry::create(&d, &label).map(|e| (d, e))) {
        Ok(s) => s,
        Err(e) => {
            outbox::say!("cannot keep a record for --detach-after in the store ({e}); running the command without it");
            return super::run(args, cmd, timeout);
        }
    };
    let (store_dir, entry) = store;
    let info = Info { id: entry.id.clone(), label, command: command_text, runner_pid: 0, started: now(), spill: None };
    let opened = (|| -> io::Result<(std::fs::File, std::fs::File)> {
        use std::os::unix::fs::OpenOptionsExt;
        let open =
            |name: &str| std::fs::OpenOptions::new().create_new(true).write(true).mode(0o600).open(entry.file(name));
        Ok((open("out")?, open("err")?))
    })();
    let pipe = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(io::Error::from);
    let ((out, err), (done_read, done_write)) = match (opened, pipe) {
        (Ok(f), Ok(p)) => (f, p),
        (Err(e), _) | (_, Err(e)) => {
            entry.remove();
            outbox::say!("cannot set up --detach-after ({e}); running the command without it");
            return super::run(args, cmd, timeout);
        }
    };
    // Before the fork, so `status` can find the run from the start; the
    // runner writes its own pid into it at once.
    if let Err(e) = entry.write_json("info.json", &info) {
        entry.remove();
        outbox::say!("cannot set up --detach-after ({e}); running the command without it");
        return super::run(args, cmd, timeout);
    }
    let _ = io::stdout().flush();
    // SAFETY: outbox has started no thread yet (this runs before wrap mode
    // or anything else that spawns one), so the child is a whole copy of
    // the process and may go on running ordinary Rust code.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        entry.remove();
        outbox::say!(
            "cannot start the detached runner ({}); running the command without it",
            io::Error::last_os_error()
        );
        return super::run(args, cmd, timeout);
    }
    if pid == 0 {
        drop(done_read);
        let code = runner(args, cmd, timeout, &entry, &info, out, err);
        // The done pipe closes as the process exits: the waiter wakes.
        drop(done_write);
        std::process::exit(code.into());
    }
    drop(done_write);
    drop(out);
    drop(err);
    waiter(args, &store_dir, &entry, pid, done_read, after)
}

/// The runner: wrap mode with its output going to the record.
fn runner(
    args: &RunOptions,
    cmd: &[OsString],
    timeout: Option<Duration>,
    entry: &Entry,
    info: &Info,
    out: std::fs::File,
    err: std::fs::File,
) -> u8 {
    // Out of outbox's session and process group: a harness ending those
    // does not end this run.
    let _ = rustix::process::setsid();
    // A hang-up of the terminal the agent had is not the command's end.
    // SAFETY: setting a disposition to SIG_IGN runs no code.
    unsafe { libc::signal(libc::SIGHUP, libc::SIG_IGN) };
    // Every block goes to the file as it arrives (no staging for direct
    // writes), so what has arrived can be read while the command runs.
    // SAFETY: this process has one thread (it was just forked from one).
    unsafe { std::env::set_var("OUTBOX_DIRECT", "0") };
    let _ = rustix::stdio::dup2_stdout(out.as_fd());
    let _ = rustix::stdio::dup2_stderr(err.as_fd());
    drop((out, err));
    let mut mine = info.clone();
    mine.runner_pid = std::process::id() as i32;
    let _ = entry.write_json("info.json", &mine);
    let ran = match super::run_with(args, cmd, timeout, Some(entry)) {
        Ok(r) => r,
        Err(e) => {
            outbox::say!("error: {e}");
            super::Ran { code: 125, ..super::Ran::default() }
        }
    };
    let _ = io::stdout().flush();
    let done = Done { code: ran.code, exit_status: ran.exit_status, full_output: ran.full_output, ended: now() };
    let _ = entry.write_json("done.json", &done);
    ran.code
}

/// The waiter: the runner's result if it ends within `after`, else the
/// envelope of what has arrived.
fn waiter(
    args: &RunOptions,
    store: &Path,
    entry: &Entry,
    runner: i32,
    done: OwnedFd,
    after: Duration,
) -> anyhow::Result<u8> {
    interrupt::install();
    let deadline = Instant::now() + after;
    let mut forwarded = false;
    loop {
        if !forwarded {
            if let Some(sig) = interrupt::received() {
                // SAFETY: kill(2) with a pid we forked.
                unsafe { libc::kill(runner, sig) };
                forwarded = true;
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() && !forwarded {
            break;
        }
        // Interrupted: wait for the runner to end the command and report.
        let wait = if forwarded { TICK } else { left.min(TICK).max(Duration::from_millis(1)) };
        if ended(&done, wait) {
            // Reap the runner (it is our child), then hand on its output.
            let mut status = 0;
            // SAFETY: waitpid on our own child.
            unsafe { libc::waitpid(runner, &mut status, 0) };
            let code = finished(entry);
            entry.remove();
            return Ok(code);
        }
    }
    let text = partial_envelope(args, store, entry, after)?;
    let mut out = io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    Ok(0)
}

/// Whether the done pipe reached its end within `wait`.
fn ended(done: &OwnedFd, wait: Duration) -> bool {
    let mut fds = [rustix::event::PollFd::new(done, rustix::event::PollFlags::IN)];
    let ts = rustix::event::Timespec { tv_sec: wait.as_secs() as i64, tv_nsec: wait.subsec_nanos() as i64 };
    match rustix::event::poll(&mut fds, Some(&ts)) {
        Ok(n) if n > 0 => {
            let mut b = [0u8; 1];
            matches!(rustix::io::read(done, &mut b), Ok(0) | Err(_))
        }
        _ => false,
    }
}

/// Prints what the runner printed and returns its status.
fn finished(entry: &Entry) -> u8 {
    let (out, err) = entry.output();
    let _ = io::stderr().lock().write_all(&err);
    let mut o = io::stdout().lock();
    let _ = o.write_all(&out).and_then(|()| o.flush());
    let info = entry.info();
    match info.as_ref().map(|i| entry.state(i)) {
        Some(State::Done(d)) => d.code,
        _ => {
            outbox::say!("the detached runner ended without saying how the command ended");
            125
        }
    }
}

/// The envelope of what run `entry` has stored so far: `"running": true`.
pub fn partial_envelope(args: &RunOptions, _store: &Path, entry: &Entry, after: Duration) -> anyhow::Result<String> {
    let info = entry.info().ok_or_else(|| anyhow::anyhow!("the record of {} is gone", entry.id))?;
    let mut sc = outbox::stream::scan::Scanner::new(outbox::stream::scan::ScanConfig {
        budget: args.budget,
        tail_lines: args.tail,
        tail_budget: args.tail_budget,
        signal: args.signal.clone(),
    });
    let mut bytes = 0u64;
    if let Some(path) = &info.spill {
        if let Ok(mut f) = std::fs::File::open(path) {
            let mut buf = vec![0u8; 1 << 20];
            loop {
                match f.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        bytes += n as u64;
                        sc.feed(&buf[..n]);
                    }
                }
            }
        }
    }
    sc.finish();
    let scanned = sc.result();
    let mut extra = serde_json::Map::new();
    extra.insert("running".into(), true.into());
    extra.insert("detached_after_ms".into(), (after.as_millis() as u64).into());
    let facts = outbox::render::facts::RunFacts {
        label: info.label.clone(),
        id: entry.id.clone(),
        full_output: None,
        command: Some(CommandInfo { command: info.command.clone(), ..CommandInfo::default() }),
        notes: vec![
            format!(
                "still running after {}: what arrived so far ({bytes} bytes); it goes on, its output still stored",
                shown_duration(after)
            ),
            format!(
                "outbox wait {id}: its final envelope and status; outbox status|show {id}: how it goes",
                id = entry.id
            ),
        ],
        extra,
        ..outbox::render::facts::RunFacts::default()
    };
    let budgets = outbox::render::envelope::Budgets {
        budget: args.budget,
        tail_budget: args.tail_budget,
        head_budget: args.head_budget,
        tail_lines: args.tail,
        spill_limit: args.spill_limit,
    };
    let budget = outbox::render::envelope::min_budget(&scanned, &budgets, &facts);
    let budgets = outbox::render::envelope::Budgets { budget, ..budgets };
    Ok(outbox::render::envelope::render(&scanned, &budgets, &facts, &args.signal))
}

pub fn shown_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}
