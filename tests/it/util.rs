//! Shared helpers: run the built binary with input, in a private store.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The binary under test: `OUTBOX_TEST_BIN` when set (to show that a new
/// test fails on an older build), else the one cargo built.
pub fn bin() -> &'static str {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| std::env::var("OUTBOX_TEST_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_outbox").to_string()))
}

/// A private store directory that is removed when dropped.
pub struct Store {
    pub dir: tempfile::TempDir,
}

impl Store {
    pub fn new() -> Store {
        // The store refuses a directory open to group or others, and
        // tempfile follows the umask: make it private like outbox would.
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        Store { dir }
    }
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
    /// Files in the store whose names do not start with a dot.
    pub fn entries(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(self.path()).unwrap().map(|e| e.unwrap().path()).collect();
        v.sort();
        v
    }
}

/// Runs `outbox ARGS` with `input` on stdin and the store at `store`.
pub fn run(store: &Store, args: &[&str], input: &[u8]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.args(args).env("OUTBOX_DIR", store.path());
    run_cmd(cmd, input)
}

pub fn run_cmd(mut cmd: Command, input: &[u8]) -> Output {
    // The developer's own configuration must not decide a test's outcome;
    // tests of the configuration set XDG_CONFIG_HOME themselves.
    if !cmd.get_envs().any(|(k, _)| k == "XDG_CONFIG_HOME") {
        cmd.env("OUTBOX_CONFIG", "/dev/null");
    }
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn outbox");
    let mut stdin = child.stdin.take().unwrap();
    let data = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let out = child.wait_with_output().expect("wait outbox");
    writer.join().unwrap();
    out
}

/// The build under test has Linux's fast paths (O_DIRECT, write-behind,
/// FICLONE, copy_file_range); the `portable` feature takes them away.
pub const FAST_PATHS: bool = cfg!(all(target_os = "linux", not(feature = "portable")));

/// [`run_cmd`] under a deadline: a run that has not ended after `secs`
/// seconds is killed and the test fails, instead of hanging the suite.
pub fn run_deadline(mut cmd: Command, input: &[u8], secs: u64) -> Output {
    if !cmd.get_envs().any(|(k, _)| k == "XDG_CONFIG_HOME" || k == "OUTBOX_CONFIG") {
        cmd.env("OUTBOX_CONFIG", "/dev/null");
    }
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn outbox");
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let data = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(out) => {
            writer.join().unwrap();
            waiter.join().unwrap();
            out.expect("wait outbox")
        }
        Err(_) => {
            // SAFETY: signalling the child we spawned, by its pid.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("outbox did not end within {secs} s: {cmd:?}");
        }
    }
}

pub fn chars(bytes: &[u8]) -> usize {
    String::from_utf8_lossy(bytes).chars().count()
}

/// A pseudo-terminal: (master, slave).
pub fn pty() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (0, 0);
    let r = unsafe {
        libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut())
    };
    assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
    for fd in [master, slave] {
        // Not inherited by outbox (only its stdin and stderr are the slave).
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    unsafe { (std::fs::File::from_raw_fd(master), std::fs::File::from_raw_fd(slave)) }
}

/// Waits for `child` (an outbox run) and returns its exit code and peak RSS
/// in KiB: `VmHWM` read from /proc every 5 ms until it exits (the high-water
/// mark, so a late read still sees the peak). Fails after 300 s.
pub fn peak_rss_kib(mut child: std::process::Child) -> (i32, u64) {
    let status_file = format!("/proc/{}/status", child.id());
    let started = std::time::Instant::now();
    let mut peak = 0u64;
    loop {
        let hwm = std::fs::read_to_string(&status_file).ok().and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        });
        peak = peak.max(hwm.unwrap_or(0));
        if let Some(st) = child.try_wait().unwrap() {
            return (st.code().unwrap_or(-1), peak);
        }
        if started.elapsed() > std::time::Duration::from_secs(300) {
            let _ = child.kill();
            panic!("outbox did not end within 300 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A 1 MiB tmpfs mounted at `dir` (created), to fill a store: needs root,
/// false (and a note on stderr) where it cannot be had. The caller
/// unmounts it (`umount DIR`) before asserting, so a failure leaves none.
pub fn tiny_tmpfs(dir: &Path) -> bool {
    std::fs::create_dir(dir).unwrap();
    let mounted = unsafe { libc::geteuid() } == 0
        && Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs"])
            .arg(dir)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: cannot mount a tmpfs here");
    }
    mounted
}
