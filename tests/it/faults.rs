//! Faults: nothing lost, nothing silent. Interruptions, a spill that cannot
//! be written, arguments that are not UTF-8.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{self, Store};

fn header(stdout: &[u8]) -> serde_json::Value {
    let s = String::from_utf8_lossy(stdout);
    let line = s.lines().nth(1).unwrap_or_else(|| panic!("no header in {s:?}"));
    serde_json::from_str(line).expect("header parses")
}

fn temp_files(store: &Store) -> Vec<String> {
    std::fs::read_dir(store.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp-"))
        .collect()
}

/// SIGINT while the producer is silent: outbox stops within about a second,
/// keeps what arrived as an incomplete entry, prints the envelope marked
/// interrupted, leaves no temporary file, and exits 130. SIGTERM: 143;
/// SIGHUP (the terminal or ssh session went away) as SIGTERM: 129.
#[test]
fn interrupt_while_stdin_is_silent() {
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
        let store = Store::new();
        let mut child = Command::new(util::bin())
            .env("OUTBOX_DIR", store.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let data: Vec<u8> = (0..20_000).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
        stdin.write_all(&data).unwrap();
        stdin.flush().unwrap();
        std::thread::sleep(Duration::from_millis(700));
        let sent = Instant::now();
        unsafe { libc::kill(child.id() as i32, sig) };
        let out = child.wait_with_output().unwrap();
        let took = sent.elapsed();
        drop(stdin);
        assert_eq!(out.status.code(), Some(code), "stderr: {}", String::from_utf8_lossy(&out.stderr));
        assert!(took < Duration::from_secs(3), "stopped after {took:?}");
        let h = header(&out.stdout);
        assert_eq!(h["bytes"].as_u64().unwrap(), data.len() as u64);
        assert!(h["interrupted"].as_str().unwrap().starts_with("SIG"));
        assert!(String::from_utf8_lossy(&out.stdout).contains("--- interrupted by SIG"));
        let path = h["full_output"].as_str().unwrap();
        assert_eq!(std::fs::read(path).unwrap(), data, "what arrived is kept");
        let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(format!("{path}.meta")).unwrap()).unwrap();
        assert_eq!(meta["complete"], false);
        assert!(temp_files(&store).is_empty(), "{:?}", temp_files(&store));
    }
}

/// Under nohup (SIGHUP ignored on entry) SIGHUP stays ignored: the run
/// goes on and ends normally when the input does.
#[test]
fn sighup_stays_ignored_under_nohup() {
    use std::os::unix::process::CommandExt;
    let store = Store::new();
    let mut cmd = Command::new(util::bin());
    cmd.env("OUTBOX_DIR", store.path()).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"before\n").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    std::thread::sleep(Duration::from_millis(300));
    stdin.write_all(b"after\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout, b"before\nafter\n");
}

/// A file-size limit (SIGXFSZ ignored, so writes fail with EFBIG): the
/// envelope is still printed from the scan, full_output is null with the
/// reason, exit 1, and no entry holds less than the input. Under one
/// staging buffer (plain writes at the end) and over many (direct writes
/// on the device thread, whose short write falls back to plain writes).
#[test]
fn file_size_limit_fails_the_spill_loudly() {
    for lines in [300_000u64, 2_000_000] {
        let store = Store::new();
        let data: Vec<u8> = (0..lines).flat_map(|i| format!("{i}\n").into_bytes()).collect();
        let script = format!("ulimit -f 100; trap '' XFSZ; exec {}", util::bin());
        let mut cmd = Command::new("bash");
        cmd.arg("-c").arg(script).env("OUTBOX_DIR", store.path());
        let out = util::run_cmd(cmd, &data);
        assert_eq!(out.status.code(), Some(1));
        let h = header(&out.stdout);
        assert!(h["full_output"].is_null());
        assert!(h["spill_error"].as_str().unwrap().contains("File too large"), "{}", h["spill_error"]);
        assert_eq!(h["lines"], lines);
        assert!(String::from_utf8_lossy(&out.stderr).contains("could not be kept"));
        let entries: Vec<_> = store
            .entries()
            .into_iter()
            .filter(|p| outbox::store::is_entry_name(&p.file_name().unwrap().to_string_lossy()))
            .collect();
        assert!(entries.is_empty(), "no partial entry: {entries:?}");
        assert!(temp_files(&store).is_empty());
    }
}

/// Arguments that are not UTF-8 do not panic: a label is sanitised, a
/// file name is reported.
#[test]
fn non_utf8_arguments_are_handled() {
    let store = Store::new();
    let label = std::ffi::OsStr::from_bytes(b"lab\xffel");
    let mut cmd = Command::new(util::bin());
    cmd.arg("--label").arg(label).arg("--envelope").arg("always").env("OUTBOX_DIR", store.path());
    let out = util::run_cmd(cmd, b"x\n");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(header(&out.stdout)["label"], "lab_el");

    let mut cmd = Command::new(util::bin());
    cmd.arg("pack").arg(std::ffi::OsStr::from_bytes(b"/nonexistent/n\xffotes.md"));
    let out = util::run_cmd(cmd, b"");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

// ---------------------------------------------------------------------------
// Wrap mode: the command does not outlive outbox, however outbox ends.

/// A process on this machine, read from /proc.
struct Proc {
    pid: i32,
    comm: String,
    /// Its state letter and kernel flags (`/proc/PID/stat` fields 3 and 9).
    state: char,
    flags: u64,
}

/// Live processes (not zombies) whose command line contains `marker`.
fn live_with(marker: &str) -> Vec<Proc> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else { continue };
        if !String::from_utf8_lossy(&cmdline).contains(marker) {
            continue;
        }
        if let Some(p) = proc_stat(pid).filter(|p| !matches!(p.state, 'Z' | 'X')) {
            found.push(p);
        }
    }
    found
}

fn proc_stat(pid: i32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_string();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Proc { pid, comm, state: fields[0].chars().next()?, flags: fields[6].parse().ok()? })
}

/// Gone, a zombie, exiting, or with SIGKILL pending: ended, whatever the
/// scheduler has done with it yet.
fn ended_or_dying(pid: i32) -> bool {
    const PF_EXITING: u64 = 0x4;
    let Some(p) = proc_stat(pid) else { return true };
    if matches!(p.state, 'Z' | 'X') || p.flags & PF_EXITING != 0 {
        return true;
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let sigkill = 1u64 << (libc::SIGKILL - 1);
    status
        .lines()
        .filter(|l| l.starts_with("SigPnd:") || l.starts_with("ShdPnd:"))
        .any(|l| u64::from_str_radix(l.split_whitespace().nth(1).unwrap_or("0"), 16).is_ok_and(|m| m & sigkill != 0))
}

/// Waits until `cond` holds, up to `limit`; returns how long it took.
fn wait_until(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) -> Duration {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    t.elapsed()
}

/// `outbox -- sh -c SCRIPT` in a process group of its own (as a harness
/// runs its job), stdout discarded, stderr (with the guardian's message)
/// to `store/stderr.txt`.
fn spawn_wrapped(store: &Store, script: &str) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let err = std::fs::File::create(store.path().join("stderr.txt")).unwrap();
    Command::new(util::bin())
        .args(["--", "sh", "-c", script])
        .env("OUTBOX_DIR", store.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .process_group(0)
        .spawn()
        .unwrap()
}

/// A marker for `sleep` unique to this test and this run of the suite, so
/// that a process left over by an earlier failed run cannot be taken for
/// this run's.
fn marker(n: u32) -> String {
    format!("{n}.{}", std::process::id())
}

/// What to show when processes were left: them, and outbox's stderr.
fn left_report(store: &Store, marker: &str) -> String {
    let left: Vec<String> = live_with(marker).iter().map(|p| format!("{} {} {}", p.pid, p.comm, p.state)).collect();
    let err = std::fs::read_to_string(store.path().join("stderr.txt")).unwrap_or_default();
    format!("left: {left:?}; outbox's stderr: {err:?}")
}

/// Waits until no process with `marker` is left; returns how long it took.
fn none_left(store: &Store, marker: &str) -> Duration {
    let t = Instant::now();
    while !live_with(marker).is_empty() {
        if t.elapsed() > Duration::from_secs(10) {
            let report = left_report(store, marker);
            for p in live_with(marker) {
                unsafe { libc::kill(p.pid, libc::SIGKILL) };
            }
            panic!("command or guardian not gone within 10 s: {report}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    t.elapsed()
}

/// The `sleep` of a wrapped `sh -c "sleep MARKER; :"`, once it runs.
fn sleeping(marker: &str) -> i32 {
    let mut pid = 0;
    wait_until(Duration::from_secs(10), "the command's sleep started", || {
        pid = live_with(marker).iter().find(|p| p.comm == "sleep").map_or(0, |p| p.pid);
        pid != 0
    });
    pid
}

/// A harness that kills its job's whole process group (`timeout -s KILL`,
/// an agent's Bash tool) kills outbox; the guardian, outside that group,
/// then ends the command's group: no `sleep` is left. The `; :` keeps sh
/// from exec'ing sleep, so the sleep is a grandchild that PR_SET_PDEATHSIG
/// alone would not reach.
#[test]
fn a_group_kill_of_outbox_ends_the_command_and_its_descendants() {
    let store = Store::new();
    let marker = &marker(601);
    let mut child = spawn_wrapped(&store, &format!("sleep {marker}; :"));
    sleeping(marker);
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    child.wait().unwrap();
    let took = none_left(&store, marker);
    eprintln!("group kill: the command's tree was gone {took:?} after outbox died");
}

/// outbox frozen right after the spawn (as a loaded machine may leave it)
/// and then killed: the guardian already knows the command's group, which
/// the command announced itself before exec.
#[test]
fn outbox_killed_before_it_ran_again_after_the_spawn() {
    let store = Store::new();
    let marker = &marker(606);
    let mut child = spawn_wrapped(&store, &format!("kill -STOP $PPID; sleep {marker}; :"));
    sleeping(marker);
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    child.wait().unwrap();
    none_left(&store, marker);
}

/// SIGKILL to outbox alone: same.
#[test]
fn sigkill_to_outbox_ends_the_command_and_its_descendants() {
    let store = Store::new();
    let marker = &marker(602);
    let mut child = spawn_wrapped(&store, &format!("sleep {marker}; :"));
    sleeping(marker);
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    let took = none_left(&store, marker);
    eprintln!("SIGKILL: the command's tree was gone {took:?} after outbox died");
}

/// The first SIGTERM is forwarded to a command that ignores it; the second
/// ends outbox at once, and has ended the command's group before: by the
/// time outbox is reaped, the sleep is dead or has SIGKILL pending.
#[test]
fn a_second_sigterm_ends_the_command_group_before_outbox_exits() {
    let store = Store::new();
    let marker = &marker(604);
    let mut child = spawn_wrapped(&store, &format!("trap '' TERM; sleep {marker}; :"));
    let sleep = sleeping(marker);
    let outbox = child.id() as i32;
    unsafe { libc::kill(outbox, libc::SIGTERM) };
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "outbox waits for the command after one signal");
    unsafe { libc::kill(outbox, libc::SIGTERM) };
    let status = child.wait().unwrap();
    let dead = ended_or_dying(sleep);
    if !dead {
        unsafe { libc::kill(sleep, libc::SIGKILL) };
    }
    assert!(dead, "the command's sleep outlived outbox");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.code(), Some(143), "{status:?} {:?}", status.signal());
    none_left(&store, marker);
}

/// A normal run stands the guardian down and reaps it: nothing of the run
/// is left once outbox has exited.
#[test]
fn a_normal_run_leaves_no_guardian_behind() {
    let store = Store::new();
    let marker = &marker(603);
    let mut cmd = Command::new(util::bin());
    cmd.args(["--", "sh", "-c", &format!("echo {marker}")]).env("OUTBOX_DIR", store.path());
    let out = util::run_cmd(cmd, b"");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout, format!("{marker}\n").as_bytes());
    let left: Vec<String> = live_with(marker).iter().map(|p| format!("{} {}", p.pid, p.comm)).collect();
    assert!(left.is_empty(), "left running: {left:?}");
}
