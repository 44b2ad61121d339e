//! A mistake in the environment or the configuration file never costs
//! output: a pipe still gets its envelope (and its producer no SIGPIPE), a
//! wrapped command still runs, the agent hook never blocks. The mistake is
//! said once on stderr, naming where it is, the key, and the value used
//! instead. Only a bad command-line option exits 2.

use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::util::{self, Store};

/// One way to get the configuration wrong: a file's text, or a variable.
#[derive(Debug, Clone, Copy)]
enum Broken {
    File(&'static str),
    Var(&'static str, &'static str),
}

/// Each broken setting and the key the warning must name.
const BROKEN: &[(Broken, &str)] = &[
    (Broken::File("tial = 30\n"), "tail"),
    (Broken::File("budget = 10\ntail = 7\n"), "budget"),
    (Broken::File("budget = 3000\ntail = \n"), "TOML"),
    (Broken::File("signal = '('\n"), "signal"),
    (Broken::File("commands = 'default,-'\n"), "commands"),
    (Broken::Var("OUTBOX_BUDGET", "lots"), "budget"),
    (Broken::Var("OUTBOX_TAIL", "0"), "tail"),
    (Broken::Var("OUTBOX_SIGNAL", "(x"), "signal"),
    (Broken::Var("OUTBOX_HARNESS", "vim"), "harness"),
];

/// `program` with a private store and `broken` in force, and nothing else
/// from the developer's own settings.
fn with(program: &str, broken: Broken, store: &Store, cfg: &tempfile::TempDir) -> Command {
    let mut cmd = Command::new(program);
    cmd.env("OUTBOX_DIR", store.path()).env_remove("OUTBOX_CONFIG").env("XDG_CONFIG_HOME", cfg.path());
    for var in ["OUTBOX_BUDGET", "OUTBOX_TAIL", "OUTBOX_TAIL_BUDGET", "OUTBOX_HEAD_BUDGET", "OUTBOX_SIGNAL"] {
        cmd.env_remove(var);
    }
    for var in ["OUTBOX_HARNESS", "OUTBOX_BOUNDARY"] {
        cmd.env_remove(var);
    }
    std::fs::create_dir_all(cfg.path().join("outbox")).unwrap();
    let file = cfg.path().join("outbox").join("config.toml");
    match broken {
        Broken::File(text) => std::fs::write(file, text).unwrap(),
        Broken::Var(k, v) => {
            let _ = std::fs::remove_file(file);
            cmd.env(k, v);
        }
    }
    cmd
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn ctx(what: Broken, out: &Output) -> String {
    format!(
        "{what:?}: status {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout).chars().take(600).collect::<String>(),
        stderr(out)
    )
}

/// Exactly one warning, naming the place and the key, with the value used.
fn assert_warned_once(what: Broken, key: &str, out: &Output) {
    let err = stderr(out);
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("outbox: warning:")).collect();
    assert_eq!(warnings.len(), 1, "{}", ctx(what, out));
    let w = warnings[0];
    let place = match what {
        Broken::File(_) => "config.toml".to_string(),
        Broken::Var(k, _) => format!("{k}="),
    };
    assert!(w.contains(&place) && w.contains(key), "{w}");
    if key != "TOML" {
        assert!(w.contains(&format!("using {key} = ")), "the value used instead: {w}");
    }
}

#[test]
fn a_pipe_keeps_its_output_and_its_producer_is_never_cut() {
    let Some(bash) = crate::cli::shell("bash") else { return };
    for &(broken, key) in BROKEN {
        let store = Store::new();
        let cfg = tempfile::tempdir().unwrap();
        let mut cmd = with(bash, broken, &store, &cfg);
        let script = format!("seq 1 200000 | '{}'; echo \"status ${{PIPESTATUS[*]}}\" >&2", util::bin());
        cmd.arg("-c").arg(script);
        let out = util::run_cmd(cmd, b"");
        let s = String::from_utf8_lossy(&out.stdout);
        assert!(s.starts_with("<<<OUTBOX-HEADER\n") && s.ends_with("200000\n"), "{}", ctx(broken, &out));
        assert!(stderr(&out).contains("status 0 0"), "seq and outbox both exit 0: {}", ctx(broken, &out));
        assert_warned_once(broken, key, &out);
        let header: Value = serde_json::from_str(s.lines().nth(1).unwrap()).unwrap();
        let kept = header["full_output"].as_str().map(std::path::Path::new);
        assert!(kept.is_some_and(|p| p.starts_with(store.path()) && p.exists()), "the stored copy: {header}");
    }
}

#[test]
fn small_input_still_passes_through() {
    let store = Store::new();
    let cfg = tempfile::tempdir().unwrap();
    let broken = Broken::Var("OUTBOX_BUDGET", "lots");
    let mut cmd = with(util::bin(), broken, &store, &cfg);
    cmd.arg("--label").arg("x");
    let out = util::run_cmd(cmd, b"hello\n");
    assert_eq!((out.status.code(), out.stdout.as_slice()), (Some(0), &b"hello\n"[..]), "{}", ctx(broken, &out));
    assert_warned_once(broken, "budget", &out);
}

#[test]
fn wrap_mode_still_runs_the_command_with_its_status() {
    for &(broken, key) in BROKEN {
        let store = Store::new();
        let cfg = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = with(util::bin(), broken, &store, &cfg);
        cmd.current_dir(dir.path()).args(["--", "sh", "-c", "echo ran > marker; seq 1 50000; exit 3"]);
        let out = util::run_cmd(cmd, b"");
        assert_eq!(out.status.code(), Some(3), "{}", ctx(broken, &out));
        assert!(dir.path().join("marker").exists(), "the command ran: {}", ctx(broken, &out));
        let s = String::from_utf8_lossy(&out.stdout);
        assert!(s.starts_with("<<<OUTBOX-HEADER\n") && s.ends_with("50000\n"), "{}", ctx(broken, &out));
        assert_warned_once(broken, key, &out);
    }
}

#[test]
fn the_hook_never_blocks() {
    let payload = json!({
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "git log", "description": "history"}
    })
    .to_string();
    for &(broken, key) in BROKEN {
        let store = Store::new();
        let cfg = tempfile::tempdir().unwrap();
        let mut cmd = with(util::bin(), broken, &store, &cfg);
        cmd.args(["hook", "claude-code"]);
        let out = util::run_cmd(cmd, payload.as_bytes());
        // Exit 2 is Claude Code's "deny": never for a setting. No answer:
        // the command runs as the agent wrote it.
        assert_eq!(out.status.code(), Some(0), "{}", ctx(broken, &out));
        assert!(out.stdout.is_empty(), "{}", ctx(broken, &out));
        assert_warned_once(broken, key, &out);
    }
    // Mended, the same payload is rewritten.
    let (store, cfg) = (Store::new(), tempfile::tempdir().unwrap());
    let mut cmd = with(util::bin(), Broken::File("tail = 30\n"), &store, &cfg);
    cmd.args(["hook", "claude-code"]);
    let out = util::run_cmd(cmd, payload.as_bytes());
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    let line = answer["hookSpecificOutput"]["updatedInput"]["command"].as_str().unwrap_or_default();
    assert!(line.starts_with("{ git log 2>&1 && printf "), "{answer}");
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}

#[test]
fn a_hook_with_a_bad_option_does_not_deny() {
    let store = Store::new();
    let out = util::run(&store, &["hook", "claude-code", "--permision", "allow"], b"{}");
    assert_eq!(out.status.code(), Some(1), "a non-blocking error: {}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("--permision"), "{}", stderr(&out));
}

#[test]
fn only_a_bad_command_line_exits_2_with_a_hint() {
    let store = Store::new();
    let out = util::run(&store, &["git", "log", "-p"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("did you mean: outbox -- git log -p"), "{}", stderr(&out));
    let out = util::run(&store, &["--budget", "3000", "grep", "-rn", "a b", "."], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("did you mean: outbox --budget 3000 -- grep -rn 'a b' ."), "{}", stderr(&out));
    let out = util::run(&store, &["shw", "last"], b"");
    assert!(stderr(&out).contains("similar name exists: 'show'"), "{}", stderr(&out));
    let out = util::run(&store, &["--budget", "lots"], b"x\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn store_variables_are_said_and_the_run_goes_on() {
    let store = Store::new();
    let mut cmd = Command::new(util::bin());
    cmd.env("OUTBOX_DIR", store.path())
        .env("OUTBOX_TTL_SECONDS", "soon")
        .env("OUTBOX_MAX_STORE_BYTES", "lots")
        .arg("--envelope")
        .arg("always");
    let out = util::run_cmd(cmd, b"x\n");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stdout.starts_with(b"<<<OUTBOX-HEADER\n"));
    let err = stderr(&out);
    assert!(err.contains("OUTBOX_TTL_SECONDS=soon") && err.contains("using 604800"), "{err}");
    assert!(err.contains("OUTBOX_MAX_STORE_BYTES") && err.contains("default cap"), "{err}");
}

#[test]
fn a_fifo_named_config_toml_does_not_hang() {
    let cfg = tempfile::tempdir().unwrap();
    std::fs::create_dir(cfg.path().join("outbox")).unwrap();
    let fifo = cfg.path().join("outbox").join("config.toml");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let store = Store::new();
    let mut child = Command::new(util::bin())
        .env("OUTBOX_DIR", store.path())
        .env("XDG_CONFIG_HOME", cfg.path())
        .env_remove("OUTBOX_CONFIG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .arg("--envelope=always")
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("outbox hung on a FIFO named config.toml");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stdout.starts_with(b"<<<OUTBOX-HEADER\n"));
    assert!(stderr(&out).contains("not a regular file"), "{}", stderr(&out));
}
