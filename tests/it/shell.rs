//! `outbox init` code run in real shells: enveloped only with OUTBOX_WRAP=1
//! and stdout untouched by a pipe or redirect; escapes reach the real tool;
//! the helpers agree with the Rust rule. A shell that is not installed is
//! skipped with a `skipped:` line on stderr, and fails the test under CI
//! (which installs bash, zsh and fish); tests named `*_if_installed` are
//! the ones that may be skipped.

use std::path::Path;
use std::process::{Command, Output};

use crate::util::{self, Store};

/// A private store: mode 0700, which the store insists on (tempfile makes
/// directories with the umask's mode).
fn private_store() -> Store {
    use std::os::unix::fs::PermissionsExt;
    let store = Store::new();
    std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    store
}

const LINES: usize = 5000;

struct Fixture {
    store: Store,
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let body: String = (1..=LINES).map(|i| format!("match line {i} of the big file\n")).collect();
        std::fs::write(dir.path().join("big.txt"), body).unwrap();
        Fixture { store: private_store(), dir }
    }

    /// Runs `script` in `shell` from the fixture directory, with the init
    /// code loaded first and OUTBOX_WRAP set as given.
    fn run(&self, shell: &str, wrap: Option<&str>, script: &str) -> Output {
        let bin = util::bin();
        let (flag, full) = match shell {
            "fish" => ("-c", format!("'{bin}' init fish | source\n{script}")),
            _ => ("-c", format!("eval \"$('{bin}' init {shell})\"\n{script}")),
        };
        let mut cmd = Command::new(shell);
        cmd.arg(flag).arg(full).current_dir(self.dir.path()).env("OUTBOX_DIR", self.store.path());
        // The test runner's environment must not decide the outcome.
        cmd.env_remove("OUTBOX_WRAP");
        if let Some(v) = wrap {
            cmd.env("OUTBOX_WRAP", v);
        }
        util::run_cmd(cmd, b"")
    }
}

/// Whether `shell` can run. A missing shell is a failure under CI (`CI`
/// set and non-empty: .ci/run installs bash, zsh and fish, so a missing one
/// means the test did not test); elsewhere `test` is skipped, and says so on
/// stderr, where cargo shows it even without --nocapture.
pub fn have_shell(shell: &str, test: &str) -> bool {
    let found = Command::new(shell).arg("-c").arg("exit 0").output().is_ok_and(|o| o.status.success());
    if !found {
        let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty());
        match missing_shell(shell, test, ci) {
            Ok(note) => outbox::text::stderr::say_raw(format_args!("{note}")),
            Err(failure) => panic!("{failure}"),
        }
    }
    found
}

/// What a missing shell means: a note to print, or (under CI) a failure.
fn missing_shell(shell: &str, test: &str, ci: bool) -> Result<String, String> {
    if ci {
        Err(format!("{shell} is not installed, and CI is set: {test} must not pass without running"))
    } else {
        Ok(format!("skipped: {shell} not installed ({test} did not run)"))
    }
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn is_envelope(out: &Output) -> bool {
    out.stdout.starts_with(b"<<<OUTBOX-HEADER\n")
}

/// The checks every shell must pass.
fn check_shell(shell: &str, test: &str) {
    if !have_shell(shell, test) {
        return;
    }
    let fx = Fixture::new();
    let ctx = |what: &str, out: &Output| {
        format!("{shell}: {what}\nstdout: {}\nstderr: {}", text(out), String::from_utf8_lossy(&out.stderr))
    };

    // Wrapped: an envelope, the status kept.
    let out = fx.run(shell, Some("1"), "grep match big.txt");
    assert!(is_envelope(&out), "{}", ctx("grep with OUTBOX_WRAP=1 is enveloped", &out));
    assert_eq!(out.status.code(), Some(0), "{}", ctx("status", &out));
    assert!(text(&out).contains("\"command\":\"grep match big.txt\""), "{}", ctx("command", &out));
    assert!(text(&out).contains(&format!("match line {LINES} of the big file")), "{}", ctx("verdict", &out));

    // In a pipeline, a redirect or a substitution: the real tool, untouched.
    let out = fx.run(shell, Some("1"), "grep match big.txt | wc -l");
    assert_eq!(text(&out).trim(), LINES.to_string(), "{}", ctx("pipeline", &out));
    let redirect = match shell {
        "fish" => "grep match big.txt > out.txt; wc -l < out.txt; echo (count (grep match big.txt))",
        _ => "grep match big.txt > out.txt; wc -l < out.txt; x=$(grep match big.txt); printf '%s\\n' \"$x\" | wc -l",
    };
    let out = fx.run(shell, Some("1"), redirect);
    let counts: Vec<String> = text(&out).split_whitespace().map(String::from).collect();
    assert_eq!(counts, [LINES.to_string(), LINES.to_string()], "{}", ctx("redirect and substitution", &out));

    // Not asked for, or escaped: the real tool.
    for (wrap, script) in [
        (None, "grep match big.txt"),
        (Some("0"), "grep match big.txt"),
        (Some("1"), "command grep match big.txt"),
        (Some("1"), "OUTBOX_WRAP=0 grep match big.txt"),
    ] {
        let out = fx.run(shell, wrap, script);
        assert!(!is_envelope(&out), "{}", ctx(&format!("{script} with {wrap:?} is untouched"), &out));
        assert_eq!(out.stdout.iter().filter(|&&b| b == b'\n').count(), LINES, "{}", ctx(script, &out));
    }

    // The wrapped command's exit status survives the wrapper.
    let status = match shell {
        "fish" => "grep no-such-text big.txt; echo status=$status",
        _ => "grep no-such-text big.txt; echo status=$?",
    };
    let out = fx.run(shell, Some("1"), status);
    assert!(text(&out).contains("status=1"), "{}", ctx("exit status", &out));

    // git: only growing subcommands are wrapped.
    let out = fx.run(shell, Some("1"), "git --version");
    assert!(text(&out).starts_with("git version"), "{}", ctx("git --version is not wrapped", &out));

    // The shell helper agrees with the Rust rule on a few cases.
    let cases: &[(&[&str], bool)] = &[
        (&["log", "-p"], true),
        (&["-C", "repo", "log"], true),
        (&["-C", "log", "commit"], false),
        (&["commit", "-m", "log"], false),
        (&["--no-pager", "diff"], true),
        (&["grep", "-O", "x"], false),
        (&[], false),
    ];
    for (args, want) in cases {
        let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
        let call = format!("__outbox_want 'log diff grep' '-C -c' '-O' {}; and echo yes; or echo no", quoted.join(" "));
        let call = if shell == "fish" { call } else { call.replace("; and", " &&").replace("; or", " ||") };
        let out = fx.run(shell, None, &call);
        assert_eq!(text(&out).trim(), if *want { "yes" } else { "no" }, "{}", ctx(&format!("want {args:?}"), &out));
    }
}

#[test]
fn bash() {
    check_shell("bash", "shell::bash");
}

#[test]
fn zsh_if_installed() {
    check_shell("zsh", "shell::zsh_if_installed");
}

#[test]
fn fish_if_installed() {
    check_shell("fish", "shell::fish_if_installed");
}

#[test]
fn bash_strict_mode_and_aliases() {
    if !have_shell("bash", "shell::bash_strict_mode_and_aliases") {
        return;
    }
    let fx = Fixture::new();
    let bin = util::bin();
    // set -eu, and an alias named like a wrapper defined before the code
    // is loaded (aliases are on in interactive shells).
    let script = format!(
        "set -eu\nshopt -s expand_aliases\nalias grep='grep --color=never'\neval \"$('{bin}' init bash)\"\n\
         grep match big.txt | wc -l\ngrep match big.txt\n"
    );
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(script).current_dir(fx.dir.path()).env("OUTBOX_DIR", fx.store.path()).env("OUTBOX_WRAP", "1");
    let out = util::run_cmd(cmd, b"");
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}\n{}", String::from_utf8_lossy(&out.stderr));
    let (count, rest) = s.split_once('\n').unwrap();
    assert_eq!(count.trim(), LINES.to_string());
    assert!(rest.starts_with("<<<OUTBOX-HEADER\n"), "{s}");
}

#[test]
fn wrappers_only_for_commands_that_exist() {
    if !have_shell("bash", "shell::wrappers_only_for_commands_that_exist") {
        return;
    }
    let fx = Fixture::new();
    let bin = util::bin();
    let script = format!(
        "eval \"$('{bin}' init bash --commands default,outbox-test-no-such-tool)\"\n\
         type -t outbox-test-no-such-tool || echo absent\ntype -t grep\n"
    );
    let out = util::run_cmd(
        {
            let mut c = Command::new("bash");
            c.arg("-c").arg(script).current_dir(fx.dir.path());
            c
        },
        b"",
    );
    assert_eq!(text(&out), "absent\nfunction\n");
}

#[test]
fn init_rejects_bad_command_lists() {
    let store = private_store();
    let out = util::run(&store, &["init", "bash", "--commands", "grep,cd"], b"");
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'cd'"));
    let out = util::run(&store, &["init", "tcsh"], b"");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn init_calls_outbox_by_absolute_path() {
    let store = private_store();
    for shell in ["bash", "zsh", "fish"] {
        let out = util::run(&store, &["init", shell], b"");
        assert_eq!(out.status.code(), Some(0));
        let code = text(&out);
        let real = Path::new(util::bin()).canonicalize().unwrap();
        let line = code.lines().find(|l| l.contains(" -- grep ")).unwrap_or_else(|| panic!("{shell}:\n{code}"));
        assert!(line.contains(&real.display().to_string()), "{shell}: {line}");
    }
}

/// A shell that is missing is a skip that says so, never a silent pass;
/// under CI it is a failure.
#[test]
fn a_missing_shell_is_not_a_pass() {
    assert_eq!(
        missing_shell("zsh", "shell::zsh_if_installed", false).unwrap(),
        "skipped: zsh not installed (shell::zsh_if_installed did not run)"
    );
    assert!(missing_shell("zsh", "shell::zsh_if_installed", true).unwrap_err().contains("CI is set"));
    assert!(have_shell("bash", "shell::a_missing_shell_is_not_a_pass"));
}

/// A function the user defined before the init code ran keeps working, with
/// OUTBOX_WRAP unset or set; the other commands are still wrapped, and
/// loading the code twice keeps its own wrappers.
#[test]
fn existing_functions_are_left_alone() {
    for shell in ["bash", "zsh", "fish"] {
        if !have_shell(shell, "shell::existing_functions_are_left_alone") {
            continue;
        }
        let fx = Fixture::new();
        let bin = util::bin();
        let (define, load) = match shell {
            "fish" => ("function ls; echo mine $argv; end", format!("'{bin}' init fish | source")),
            _ => ("ls() { echo mine \"$@\"; }", format!("eval \"$('{bin}' init {shell})\"")),
        };
        let script = format!("{define}\n{load}\n{load}\nls -1\ngrep match big.txt\n");
        for wrap in [None, Some("1")] {
            let mut cmd = Command::new(shell);
            cmd.arg("-c").arg(&script).current_dir(fx.dir.path()).env("OUTBOX_DIR", fx.store.path());
            cmd.env_remove("OUTBOX_WRAP");
            if let Some(v) = wrap {
                cmd.env("OUTBOX_WRAP", v);
            }
            let out = util::run_cmd(cmd, b"");
            let s = text(&out);
            let ctx = format!("{shell} OUTBOX_WRAP={wrap:?}:\n{s}\n{}", String::from_utf8_lossy(&out.stderr));
            let (first, rest) = s.split_once('\n').unwrap_or_else(|| panic!("{ctx}"));
            assert_eq!(first, "mine -1", "{ctx}");
            assert_eq!(rest.starts_with("<<<OUTBOX-HEADER\n"), wrap.is_some(), "grep is still wrapped: {ctx}");
        }
    }
}

/// fish ships its own grep and ls functions (colours at a terminal): they
/// are kept as the wrapper's fallback, not replaced by the bare tool.
#[test]
fn fish_keeps_its_own_functions_if_installed() {
    if !have_shell("fish", "shell::fish_keeps_its_own_functions_if_installed") {
        return;
    }
    let fx = Fixture::new();
    let out = fx.run("fish", None, "functions -q __outbox_fish_grep; and echo kept; ls big.txt");
    assert_eq!(text(&out), "kept\nbig.txt\n", "{}", String::from_utf8_lossy(&out.stderr));
}

/// A stderr redirection the user wrote keeps working: the wrapper asks
/// outbox to leave stderr alone (`--stderr inherit`) unless stderr is the
/// shell's own (or its stdout, `2>&1`). outbox is replaced by a stub that
/// logs its arguments and runs the command, so this checks the generated
/// code; the end-to-end check needs the real `--stderr inherit`.
#[test]
fn stderr_redirections_are_kept() {
    use std::os::unix::fs::PermissionsExt;
    for shell in ["bash", "zsh", "fish"] {
        if !have_shell(shell, "shell::stderr_redirections_are_kept") {
            continue;
        }
        let fx = Fixture::new();
        let stub = fx.dir.path().join("stub-outbox");
        std::fs::write(
            &stub,
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"$OUTBOX_STUB_LOG\"\n\
             while [ \"$1\" != -- ]; do shift; done\nshift\nexec \"$@\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
        let code = util::run(&fx.store, &["init", shell], b"");
        let real = Path::new(util::bin()).canonicalize().unwrap().display().to_string();
        let code = text(&code).replace(&real, &stub.display().to_string());
        assert!(code.contains("--stderr inherit -- grep") && !code.contains(&real), "{shell}:\n{code}");
        std::fs::write(fx.dir.path().join("init"), code).unwrap();
        let log = fx.dir.path().join("stub.log");
        let script = "source ./init\n\
                      grep root /etc/passwd /nonexistent 2>/dev/null\n\
                      grep -c match big.txt\n\
                      grep -c match big.txt 2>&1\n\
                      grep -c match big.txt no-such-file 2>err.txt\n\
                      grep -c match big.txt no-such-file\n";
        let mut cmd = Command::new(shell);
        cmd.arg("-c").arg(script).current_dir(fx.dir.path()).env("OUTBOX_WRAP", "1").env("OUTBOX_STUB_LOG", &log);
        let out = util::run_cmd(cmd, b"");
        let err = String::from_utf8_lossy(&out.stderr);
        let ctx = format!("{shell}:\nstdout: {}\nstderr: {err}", text(&out));
        assert!(text(&out).starts_with("/etc/passwd:root:"), "{ctx}");
        let logged = std::fs::read_to_string(&log).unwrap_or_default();
        assert_eq!(
            logged,
            "--stderr inherit -- grep root /etc/passwd /nonexistent\n\
             -- grep -c match big.txt\n\
             -- grep -c match big.txt\n\
             --stderr inherit -- grep -c match big.txt no-such-file\n\
             -- grep -c match big.txt no-such-file\n",
            "{ctx}"
        );
        assert!(std::fs::read_to_string(fx.dir.path().join("err.txt")).unwrap().contains("no-such-file"), "{ctx}");
        assert_eq!(err.matches("no-such-file").count(), 1, "only the unredirected error reaches stderr: {ctx}");
        assert!(!err.contains("nonexistent"), "{ctx}");
    }
}

/// End to end with the real binary: a wrapped command whose stderr the user
/// redirected keeps that redirection (`--stderr inherit`), and its status.
#[test]
fn a_redirected_stderr_stays_where_the_user_sent_it() {
    let fx = Fixture::new();
    for shell in ["bash", "zsh"] {
        if Command::new(shell).arg("-c").arg("exit 0").output().is_err() {
            continue;
        }
        let out = fx.run(
            shell,
            Some("1"),
            "grep match big.txt no-such-file-here 2>/dev/null; echo \"status $?\"\n\
             grep match big.txt no-such-file-here 2>err.txt >/dev/null; echo \"status $?\"\n",
        );
        let s = text(&out);
        assert!(is_envelope(&out), "{shell}: the big output is still enveloped: {s}");
        assert!(!s.contains("No such file"), "{shell}: grep's error went to /dev/null, not the envelope: {s}");
        assert_eq!(s.lines().filter(|l| *l == "status 2").count(), 2, "{shell}: grep's status is kept: {s}");
        let err = std::fs::read_to_string(fx.dir.path().join("err.txt")).unwrap();
        assert!(err.contains("no-such-file-here"), "{shell}: 2>err.txt got grep's error: {err:?}");
    }
}
