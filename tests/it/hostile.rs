//! Hostile surroundings (issue 27): a planted `.git`, history files and
//! family files that are FIFOs, symlinks or huge, a store swapped under a
//! run, concurrent runs under a small cap. Every case runs under a deadline
//! so a regression fails instead of hanging the suite; each checks that the
//! output is whole, nothing outside the store is touched, and nothing
//! unsafe reaches the terminal.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use crate::util::{self, Store};

const DEADLINE: u64 = 30;

fn fifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid path; the result is checked.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", p.display());
}

/// `outbox ARGS` run from `cwd` with the store at `store`.
fn outbox(store: &Store, cwd: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(util::bin());
    cmd.args(args).current_dir(cwd).env("OUTBOX_DIR", store.path());
    cmd
}

fn lines(n: usize) -> Vec<u8> {
    (0..n).map(|i| format!("line {i} of the output\n")).collect::<String>().into_bytes()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn header(out: &Output) -> serde_json::Value {
    let s = stdout(out);
    let line = s.lines().nth(1).unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {s}"))
}

/// The run kept its whole input: the header names a stored copy that
/// holds exactly `input`.
fn kept_whole(out: &Output, input: &[u8]) {
    let h = header(out);
    let path = h["full_output"].as_str().unwrap_or_else(|| panic!("no stored copy: {h}"));
    assert_eq!(fs::read(path).unwrap(), input, "the stored copy is not the input");
}

#[test]
fn a_planted_git_fifo_or_head_does_not_hang_or_lose_the_run() {
    let store = Store::new();
    let input = lines(2000);
    // `.git` itself a FIFO.
    let p = tempfile::tempdir().unwrap();
    fifo(&p.path().join(".git"));
    let out =
        util::run_deadline(outbox(&store, p.path(), &["--label", "git", "--envelope", "always"]), &input, DEADLINE);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    kept_whole(&out, &input);
    assert!(out.stderr.is_empty(), "said something loud: {}", String::from_utf8_lossy(&out.stderr));
    // HEAD a FIFO; a ref pointing out of the repository; a branch that is a FIFO.
    let p = tempfile::tempdir().unwrap();
    let git = p.path().join(".git");
    fs::create_dir_all(git.join("refs/heads")).unwrap();
    fifo(&git.join("HEAD"));
    let out =
        util::run_deadline(outbox(&store, p.path(), &["--label", "git", "--envelope", "always"]), &input, DEADLINE);
    kept_whole(&out, &input);
    fs::remove_file(git.join("HEAD")).unwrap();
    fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    fifo(&git.join("refs/heads/main"));
    let out =
        util::run_deadline(outbox(&store, p.path(), &["--label", "git", "--envelope", "always"]), &input, DEADLINE);
    kept_whole(&out, &input);
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A user configuration directory with these family files.
fn families(files: &[(&str, &str)]) -> tempfile::TempDir {
    let xdg = tempfile::tempdir().unwrap();
    let dir = xdg.path().join("outbox/families");
    fs::create_dir_all(&dir).unwrap();
    for (name, text) in files {
        fs::write(dir.join(name), text).unwrap();
    }
    xdg
}

fn with_xdg(store: &Store, xdg: &Path, args: &[&str]) -> Command {
    let mut cmd = outbox(store, xdg, args);
    cmd.env("XDG_CONFIG_HOME", xdg).env_remove("OUTBOX_CONFIG");
    cmd
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Two family files that each load alone but not together: the run keeps
/// its output, in a pipe and in wrap mode, and the file left out is named.
#[test]
fn family_files_too_large_together_cost_one_file_not_the_run() {
    let big = |name: &str, lit: &str| {
        format!("name = \"{name}\"\n[[signal]]\nseverity = \"error\"\npattern = '{lit}(?u:\\w){{1000}}'\n")
    };
    let xdg = families(&[("a.toml", &big("biga", "zqa")), ("b.toml", &big("bigb", "zqb"))]);
    let store = Store::new();
    let input = lines(500);
    let out = util::run_deadline(with_xdg(&store, xdg.path(), &["--envelope", "always"]), &input, 300);
    assert!(out.status.success(), "{}", stderr(&out));
    kept_whole(&out, &input);
    let err = stderr(&out);
    assert!(err.contains("b.toml") && err.contains("size limit"), "the file left out is not named: {err}");
    assert!(!err.contains("a.toml"), "{err}");
    // Wrap mode: the command runs once, its status is kept.
    let out = util::run_deadline(with_xdg(&store, xdg.path(), &["--", "sh", "-c", "seq 1 30000; exit 3"]), b"", 300);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(header(&out)["full_output"].is_string());
}

/// A user family's success spans silence only its own signals; a file that
/// replaces a shipped family is said once on stderr and in `outbox config`.
#[test]
fn a_user_success_span_cancels_only_its_own_family_and_overrides_are_said() {
    let xdg = families(&[
        (
            "greedy.toml",
            "name = \"greedy\"\nsuccess = ['.*']\n[[signal]]\nseverity = \"warning\"\npattern = 'zzgreedy'\n",
        ),
        ("cargo.toml", "name = \"cargo\"\ndetect = ['^\\s+Compiling ']\n"),
    ]);
    let store = Store::new();
    let mut input = lines(400);
    input.extend_from_slice(b"error: something broke\nERROR [main] connection refused\n");
    input.extend_from_slice(&lines(400));
    let out = util::run_deadline(with_xdg(&store, xdg.path(), &["--envelope", "always"]), &input, DEADLINE);
    let h = header(&out);
    assert_eq!(h["signals"]["error"], 2, "another family's success span cancelled errors: {}", stdout(&out));
    let err = stderr(&out);
    assert_eq!(err.matches("replaces the shipped family 'cargo'").count(), 1, "{err}");
    let out = util::run_deadline(with_xdg(&store, xdg.path(), &["config"]), b"", DEADLINE);
    let text = stdout(&out);
    assert!(text.contains("cargo.toml") && text.contains("replaces the shipped family 'cargo'"), "{text}");
    // Said on purpose: `replaces = "cargo"` keeps stderr quiet, config still tells.
    fs::write(
        xdg.path().join("outbox/families/cargo.toml"),
        "name = \"cargo\"\nreplaces = \"cargo\"\ndetect = ['^\\s+Compiling ']\n",
    )
    .unwrap();
    let out = util::run_deadline(with_xdg(&store, xdg.path(), &["--envelope", "always"]), &input, DEADLINE);
    assert!(!stderr(&out).contains("replaces"), "{}", stderr(&out));
    let out = util::run_deadline(with_xdg(&store, xdg.path(), &["config"]), b"", DEADLINE);
    assert!(stdout(&out).contains("replaces the shipped family 'cargo'"), "{}", stdout(&out));
}

/// A FIFO named like a family file, and a relative XDG_CONFIG_HOME (which
/// would load family files from the working directory): neither hangs nor
/// changes the run.
#[test]
fn a_family_fifo_and_a_relative_xdg_config_home_are_ignored() {
    let xdg = families(&[]);
    fifo(&xdg.path().join("outbox/families/trap.toml"));
    let store = Store::new();
    let input = lines(300);
    let out = util::run_deadline(with_xdg(&store, xdg.path(), &["--envelope", "always"]), &input, DEADLINE);
    assert!(out.status.success());
    kept_whole(&out, &input);
    assert!(stderr(&out).contains("trap.toml") && stderr(&out).contains("FIFO"), "{}", stderr(&out));
    // A FIFO as the configuration file: said, never waited on.
    let cfg = xdg.path().join("outbox/config.toml");
    fifo(&cfg);
    let out = util::run_deadline(with_xdg(&store, xdg.path(), &["--envelope", "always"]), &input, DEADLINE);
    assert!(stderr(&out).contains("FIFO"), "{}", stderr(&out));
    fs::remove_file(&cfg).unwrap();

    // A project carrying `cfg/outbox/families/evil.toml`, run with
    // XDG_CONFIG_HOME=cfg: the file is not loaded.
    let project = families(&[(
        "evil.toml",
        "name = \"evil\"\nsuccess = ['.*']\ndetect = ['line']\n[[signal]]\nseverity = \"error\"\npattern = 'line 1 of'\n",
    )]);
    let mut cmd = outbox(&store, project.path(), &["--envelope", "always"]);
    cmd.env("XDG_CONFIG_HOME", ".").env("HOME", "/nonexistent").env_remove("OUTBOX_CONFIG");
    let out = util::run_deadline(cmd, &input, DEADLINE);
    let h = header(&out);
    assert_eq!(h["family"], serde_json::Value::Null, "{h}");
    assert_eq!(h["signals"]["error"], 0, "{h}");
}

/// `outbox gc` with a `.history` that is a symlink to a directory of the
/// user's: nothing there is removed, and the refusal is said.
#[test]
fn gc_refuses_a_history_symlink_and_touches_nothing_outside() {
    let store = Store::new();
    let outside = tempfile::tempdir().unwrap();
    for name in ["notes.jsonl", "notes.key.json", "cargo-0123456789abcdef.jsonl", "cargo-0123456789abcdef.key.json"] {
        let p = outside.path().join(name);
        fs::write(&p, "mine\n").unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(400 * 24 * 3600);
        fs::File::options().write(true).open(&p).unwrap().set_modified(old).unwrap();
    }
    std::os::unix::fs::symlink(outside.path(), store.path().join(".history")).unwrap();
    let out = util::run_deadline(outbox(&store, store.path(), &["gc"]), b"", DEADLINE);
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 4, "gc removed files outside the store");
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    // A run does not write its history there either, and keeps its output.
    let input = lines(300);
    let out =
        util::run_deadline(outbox(&store, store.path(), &["--label", "x", "--envelope", "always"]), &input, DEADLINE);
    kept_whole(&out, &input);
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 4, "a run wrote outside the store");
}

/// A series that is a FIFO, or locked for ever by another process: the run
/// ends, keeps its output, and says the history was not recorded.
#[test]
fn a_history_fifo_or_lock_does_not_hang_the_run() {
    let store = Store::new();
    let input = lines(300);
    let args = ["--label", "h", "--envelope", "always"];
    let out = util::run_deadline(outbox(&store, store.path(), &args), &input, DEADLINE);
    kept_whole(&out, &input);
    let series: Vec<_> = fs::read_dir(store.path().join(".history"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".jsonl"))
        .collect();
    assert_eq!(series.len(), 1);
    // Locked by another process for ever.
    let holder = fs::File::open(&series[0]).unwrap();
    // SAFETY: flock on a descriptor we own.
    assert_eq!(unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&holder), libc::LOCK_EX) }, 0);
    let out = util::run_deadline(outbox(&store, store.path(), &args), &input, DEADLINE);
    kept_whole(&out, &input);
    assert!(stderr(&out).contains("history"), "{}", stderr(&out));
    drop(holder);
    // Replaced by a FIFO.
    fs::remove_file(&series[0]).unwrap();
    fifo(&series[0]);
    let out = util::run_deadline(outbox(&store, store.path(), &args), &input, DEADLINE);
    kept_whole(&out, &input);
    assert!(stderr(&out).contains("not a regular file"), "{}", stderr(&out));
}

/// One invalid UTF-8 byte, or a torn line, in a series: recording goes on,
/// and `trend` shows the series and says what it skipped.
#[test]
fn a_damaged_series_keeps_recording_and_trend_says_so() {
    let store = Store::new();
    let args = ["--label", "dmg", "--envelope", "always"];
    for _ in 0..3 {
        util::run_deadline(outbox(&store, store.path(), &args), &lines(200), DEADLINE);
    }
    let hist = store.path().join(".history");
    let series = fs::read_dir(&hist)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".jsonl"))
        .unwrap();
    let mut f = fs::OpenOptions::new().append(true).open(&series).unwrap();
    std::io::Write::write_all(&mut f, b"{\"t\":1,\"id\":\"\xff\"}\n{\"t\":2,\"chars\":1").unwrap();
    drop(f);
    for _ in 0..2 {
        util::run_deadline(outbox(&store, store.path(), &args), &lines(200), DEADLINE);
    }
    let text = fs::read(&series).unwrap();
    let good = text.split(|&b| b == b'\n').filter(|l| serde_json::from_slice::<serde_json::Value>(l).is_ok()).count();
    assert_eq!(good, 5, "a record was lost: {}", String::from_utf8_lossy(&text));
    let out = util::run_deadline(outbox(&store, store.path(), &["trend", "--json"]), b"", DEADLINE);
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    assert_eq!(rows[0]["runs"], 5);
    assert_eq!(rows[0]["bad_lines"], 2);
    assert!(stderr(&out).contains("skipped 2 lines"), "{}", stderr(&out));
}

/// Twelve concurrent runs under a tiny store cap: every envelope names a
/// stored copy that is still there, holding the run's own input.
#[test]
fn concurrent_runs_under_a_small_cap_never_name_a_removed_entry() {
    let store = Store::new();
    let outs: Vec<(Vec<u8>, Output)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..12)
            .map(|i| {
                let store = &store;
                s.spawn(move || {
                    let input: Vec<u8> =
                        (0..3000).map(|k| format!("run {i} line {k}\n")).collect::<String>().into_bytes();
                    let mut cmd = outbox(store, store.path(), &["--label", "cap", "--envelope", "always"]);
                    cmd.env("OUTBOX_MAX_STORE_BYTES", "1");
                    let out = util::run_deadline(cmd, &input, 120);
                    (input, out)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (input, out) in &outs {
        assert!(out.status.success(), "{}", stderr(out));
        kept_whole(out, input);
    }
}

/// No character a terminal would act on: escape sequences, C1 controls,
/// bidirectional overrides (newlines and tabs are text).
fn assert_terminal_safe(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let bad: Vec<char> =
        text.chars().filter(|&c| outbox::text::sanitize::is_unsafe_char(c) && c != '\n' && c != '\t').collect();
    assert!(bad.is_empty(), "{what} let {bad:?} through:\n{text}");
}

const NASTY: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{202e}gnp.exe\u{9b}31m\u{85}";

/// Escape sequences and bidi overrides from the configuration file, the
/// environment, a family file, the store path and a command line never
/// reach the terminal raw: config errors, `outbox config`, family-file
/// errors, the history's store-path error, `trend --json`.
#[test]
fn escapes_from_config_families_paths_and_commands_never_reach_the_terminal() {
    let store = Store::new();
    let scratch = tempfile::tempdir().unwrap();
    // A configuration file whose error quotes it.
    let cfg = scratch.path().join("config.toml");
    fs::write(&cfg, format!("budget = \"{NASTY}\"\nsignal = '{NASTY}('\n")).unwrap();
    let mut cmd = outbox(&store, scratch.path(), &["--envelope", "always"]);
    cmd.env("OUTBOX_CONFIG", &cfg);
    let out = util::run_deadline(cmd, &lines(10), DEADLINE);
    assert_terminal_safe("a config error", &out.stderr);
    fs::write(&cfg, format!("tail = 5\nunknown{} = 1\n", "\u{202e}")).unwrap();
    let mut cmd = outbox(&store, scratch.path(), &["config"]);
    cmd.env("OUTBOX_CONFIG", &cfg);
    let out = util::run_deadline(cmd, b"", DEADLINE);
    assert_terminal_safe("a config error", &out.stderr);
    // `outbox config` quoting the environment and the file.
    fs::write(&cfg, format!("signal = '{NASTY}'\n")).unwrap();
    let mut cmd = outbox(&store, scratch.path(), &["config"]);
    cmd.env("OUTBOX_CONFIG", &cfg).env("OUTBOX_HARNESS", NASTY);
    let out = util::run_deadline(cmd, b"", DEADLINE);
    assert_terminal_safe("outbox config", &out.stdout);
    assert_terminal_safe("outbox config", &out.stderr);
    // A family file that does not parse, named and quoted.
    let xdg = families(&[(&format!("x{NASTY}.toml"), &format!("name = \"{NASTY}\"\nbogus = 1\n"))]);
    let out = util::run_deadline(with_xdg(&store, xdg.path(), &["--envelope", "always"]), &lines(10), DEADLINE);
    assert!(stderr(&out).contains("ignoring the family file"), "{}", stderr(&out));
    assert_terminal_safe("a family-file error", &out.stderr);
    let out = util::run_deadline(with_xdg(&store, xdg.path(), &["config"]), b"", DEADLINE);
    assert_terminal_safe("outbox config on family files", &out.stdout);
    // The history's error naming a store path with escapes in it.
    let odd = scratch.path().join(format!("store{NASTY}"));
    fs::create_dir(&odd).unwrap();
    fs::set_permissions(&odd, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(scratch.path(), odd.join(".history")).unwrap();
    let mut cmd = outbox(&store, scratch.path(), &["--label", "h", "--envelope", "always"]);
    cmd.env("OUTBOX_DIR", &odd);
    let out = util::run_deadline(cmd, &lines(10), DEADLINE);
    assert!(stderr(&out).contains("history"), "{}", stderr(&out));
    assert_terminal_safe("the history's store-path error", &out.stderr);
    // A series whose command holds them, shown by `trend --json`.
    let script = format!("seq 1 3000 # {NASTY}");
    let mut cmd = outbox(&store, scratch.path(), &["--", "sh", "-c", &script]);
    cmd.env_remove("OUTBOX_HARNESS");
    util::run_deadline(cmd, b"", DEADLINE);
    let out = util::run_deadline(outbox(&store, scratch.path(), &["trend", "--json"]), b"", DEADLINE);
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(rows[0]["command"].as_str().unwrap().contains('\u{202e}'), "the JSON must still mean the same: {rows}");
    assert_terminal_safe("trend --json", &out.stdout);
    let out = util::run_deadline(outbox(&store, scratch.path(), &["trend"]), b"", DEADLINE);
    assert_terminal_safe("trend", &out.stdout);
}

/// `grep x f >> out` run by a shell whose own stdout is `out`: the file is
/// the same, the open file description is not, so the real tool writes
/// there, never an envelope; whether the shell's stdout was opened to
/// truncate or to append, and from a subshell too.
#[test]
fn a_redirect_into_the_shells_own_stdout_file_gets_the_tools_output() {
    for shell in ["bash", "zsh", "fish"] {
        if !crate::shell::have_shell(shell, "a_redirect_into_the_shells_own_stdout_file_gets_the_tools_output") {
            continue;
        }
        let store = Store::new();
        let dir = tempfile::tempdir().unwrap();
        let big: String = (1..=20_000).map(|i| format!("match line {i}\n")).collect();
        fs::write(dir.path().join("big.txt"), &big).unwrap();
        let out_path = dir.path().join("out");
        let cases = [
            ("grep match big.txt >> out", false),
            ("grep match big.txt >> out", true),
            // A subshell (fish has none: a block).
            (
                if shell == "fish" {
                    "begin; grep match big.txt; end >> out; true"
                } else {
                    "( grep match big.txt ) >> out; true"
                },
                true,
            ),
        ];
        let init = |shell: &str| match shell {
            "fish" => format!("'{}' init fish | source", util::bin()),
            _ => format!("eval \"$('{}' init {shell})\"", util::bin()),
        };
        for (line, append) in cases {
            let script = format!("{}\n{line}\n", init(shell));
            let mut cmd = Command::new(shell);
            cmd.arg("-c").arg(script).current_dir(dir.path()).env("OUTBOX_DIR", store.path()).env("OUTBOX_WRAP", "1");
            fs::write(&out_path, b"").unwrap();
            cmd.stdout(fs::OpenOptions::new().write(true).append(append).open(&out_path).unwrap());
            assert!(cmd.status().unwrap().success());
            let text = fs::read_to_string(&out_path).unwrap();
            let case = format!("{shell}, `{line}`, the shell's stdout appends: {append}");
            assert!(!text.contains("OUTBOX-HEADER"), "{case}: an envelope went into the redirect");
            assert!(text == big, "{case}: {} bytes, not grep's {}", text.len(), big.len());
        }
        // The shell's own stdout still gets envelopes.
        let mut cmd = Command::new(shell);
        let script = format!("{}\ngrep match big.txt\n", init(shell));
        cmd.arg("-c").arg(script).current_dir(dir.path()).env("OUTBOX_DIR", store.path()).env("OUTBOX_WRAP", "1");
        cmd.stdout(fs::File::create(&out_path).unwrap());
        assert!(cmd.status().unwrap().success());
        assert!(fs::read_to_string(&out_path).unwrap().starts_with("<<<OUTBOX-HEADER"), "{shell}");
    }
}

/// `pack` on a file of 200,000 headings: the drop line names the first
/// few and counts the rest, instead of naming every one on one line.
#[test]
fn pack_reports_a_huge_number_of_dropped_sections_in_a_bounded_line() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.md");
    let long = "x".repeat(5000);
    let mut text = format!("## {long}\n\n");
    text.extend((0..200_000).map(|i| format!("## Heading {i}\n\n")));
    fs::write(&notes, text).unwrap();
    let mut cmd = Command::new(util::bin());
    cmd.args(["pack", "--budget", "1000"]).arg(&notes);
    let out = util::run_deadline(cmd, b"", 120);
    let err = stderr(&out);
    assert!(err.len() < 4096, "{} bytes of report", err.len());
    let first = err.lines().next().unwrap();
    let n: usize = first.split("dropped ").nth(1).and_then(|r| r.split(' ').next()).unwrap().parse().unwrap();
    assert!(n > 199_000, "{first}");
    assert!(first.contains(&format!("... and {} more", n - 20)), "{first}");
    assert!(first.contains('…'), "the long title is shortened: {first}");
}

/// Runs `outbox ARGS < input_file > stdout_file` and returns its exit
/// status and its peak RSS in KiB: the high-water mark of its own memory
/// (`VmHWM`, read until it exits; the rusage of a child forked from this
/// large test process would count the test's pages too).
fn run_measured(store: &Store, args: &[&str], input: &Path, stdout_path: &Path) -> (i32, u64) {
    let mut cmd = outbox(store, store.path(), args);
    cmd.env("OUTBOX_CONFIG", "/dev/null")
        .stdin(fs::File::open(input).unwrap())
        .stdout(fs::File::create(stdout_path).unwrap())
        .stderr(std::process::Stdio::null());
    crate::util::peak_rss_kib(cmd.spawn().unwrap())
}

/// `--format json` on a document far larger than what is folded in memory
/// (a 64 MiB string): memory stays bounded, the fold is valid JSON with the
/// contract's header fields, and `auto` on NDJSON whose first record is
/// huge does not hold it either. (`json::big`'s unit tests compare the
/// streaming fold of arrays with the in-memory one.)
#[test]
fn a_large_json_document_folds_in_bounded_memory() {
    let store = Store::new();
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("doc.json");
    let mut text = String::from(r#"{"id":1,"s":""#);
    text.push_str(&"abcdefgh".repeat(8 << 20));
    text.push_str(r#"","ok":true}"#);
    fs::write(&doc, &text).unwrap();
    let out = dir.path().join("out");
    let (code, kib) = run_measured(&store, &["--format", "json"], &doc, &out);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_slice(&fs::read(&out).unwrap()).expect("the fold is JSON");
    let h = &v["header"];
    for k in ["item_count", "keys", "bytes", "chars", "full_output", "id", "strategy", "folded_path"] {
        assert!(!h[k].is_null(), "header without {k}: {h}");
    }
    assert_eq!(h["strategy"], "json-shape");
    assert_eq!(h["bytes"], text.len());
    assert_eq!(v["sample"][0]["ok"], true);
    assert!(kib < 100 << 10, "peak RSS {kib} KiB for a {} MiB document", text.len() >> 20);
    assert_eq!(fs::read(h["full_output"].as_str().unwrap()).unwrap().len(), text.len());

    // `auto` on NDJSON whose first record is the huge one.
    let mut nd = text.clone();
    nd.push_str("\n{\"id\":2}\n");
    fs::write(&doc, nd).unwrap();
    let (code, kib) = run_measured(&store, &["--format", "auto", "--envelope", "always"], &doc, &out);
    assert_eq!(code, 0);
    assert!(kib < 100 << 10, "peak RSS {kib} KiB");
}
