//! The command line as a user meets it: shell completions that real shells
//! load, the manual page, and the configuration file with its precedence
//! (command line, then environment, then file, then default).

use std::process::{Command, Output};

use crate::util::{self, Store};

/// A shell for a test, or None with a note. Under CI a missing shell fails
/// the test instead: a check that could not run must not look passed.
pub(crate) fn shell(name: &str) -> Option<&str> {
    let found = Command::new(name).arg("-c").arg("exit 0").output().is_ok_and(|o| o.status.success());
    if found {
        return Some(name);
    }
    assert!(std::env::var_os("CI").is_none_or(|v| v.is_empty()), "{name} is not installed, and CI must run this test");
    eprintln!("skipped: {name} is not installed");
    None
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ctx(out: &Output) -> String {
    format!("status {:?}\nstdout: {}\nstderr: {}", out.status, stdout(out), String::from_utf8_lossy(&out.stderr))
}

/// Writes the completion script for `sh` to a file and returns its path.
fn completion_file(dir: &std::path::Path, sh: &str) -> std::path::PathBuf {
    let store = Store::new();
    let out = util::run(&store, &["completions", sh], b"");
    assert!(out.status.success(), "{}", ctx(&out));
    let path = dir.join(format!("outbox.{sh}"));
    std::fs::write(&path, &out.stdout).unwrap();
    path
}

#[test]
fn bash_loads_the_completions_and_completes_subcommands_and_options() {
    let Some(bash) = shell("bash") else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = completion_file(dir.path(), "bash");
    let script = format!(
        "set -e\nsource '{}'\ncomplete -p outbox\n\
         COMP_WORDS=(outbox sh); COMP_CWORD=1; COMP_LINE='outbox sh'; COMP_POINT=9; _outbox outbox sh outbox\n\
         echo \"subcommands: ${{COMPREPLY[*]}}\"\n\
         COMP_WORDS=(outbox --bud); COMP_CWORD=1; COMP_LINE='outbox --bud'; COMP_POINT=12; _outbox outbox --bud outbox\n\
         echo \"options: ${{COMPREPLY[*]}}\"\n",
        file.display()
    );
    let out = Command::new(bash).arg("-c").arg(script).output().unwrap();
    let s = stdout(&out);
    assert!(out.status.success() && out.stderr.is_empty(), "{}", ctx(&out));
    assert!(s.contains("subcommands: show"), "{s}");
    assert!(s.contains("options: --budget"), "{s}");
}

#[test]
fn zsh_loads_the_completions() {
    let Some(zsh) = shell("zsh") else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = completion_file(dir.path(), "zsh");
    let fpath = dir.path().join("fpath");
    std::fs::create_dir(&fpath).unwrap();
    std::fs::copy(&file, fpath.join("_outbox")).unwrap();
    // compinit finds `_outbox` on $fpath and binds it to `outbox`.
    let script = format!(
        "fpath=('{}' $fpath)\nautoload -Uz compinit\ncompinit -u -d '{}/zcompdump'\n\
         print -r -- \"bound: ${{_comps[outbox]}}\"\nautoload -Uz _outbox\nwhence -w _outbox\n",
        fpath.display(),
        dir.path().display()
    );
    let out = Command::new(zsh).arg("-f").arg("-c").arg(script).env("HOME", dir.path()).output().unwrap();
    let s = stdout(&out);
    assert!(out.status.success() && out.stderr.is_empty(), "{}", ctx(&out));
    assert!(s.contains("bound: _outbox"), "{s}");
    // The function holds the subcommands and options it completes.
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("'show:") && text.contains("--budget"), "zsh script lists subcommands and options");
}

#[test]
fn fish_loads_the_completions_and_completes_subcommands_and_options() {
    let Some(fish) = shell("fish") else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = completion_file(dir.path(), "fish");
    let script = format!(
        "source '{}'\necho subcommands:; complete -C 'outbox sh'\necho options:; complete -C 'outbox --bud'\n",
        file.display()
    );
    let out = Command::new(fish).arg("--no-config").arg("-c").arg(script).env("HOME", dir.path()).output().unwrap();
    let s = stdout(&out);
    assert!(out.status.success() && out.stderr.is_empty(), "{}", ctx(&out));
    let (subs, opts) = s.split_once("options:").unwrap();
    assert!(subs.lines().any(|l| l.starts_with("show")), "{s}");
    assert!(opts.lines().any(|l| l.starts_with("--budget")), "{s}");
}

#[test]
fn the_manual_page_renders() {
    let store = Store::new();
    let out = util::run(&store, &["man"], b"");
    assert!(out.status.success(), "{}", ctx(&out));
    let roff = stdout(&out);
    assert!(roff.contains(".TH outbox 1") && roff.contains("\\-\\-budget"), "{roff}");
    // Rendered by man(1) when it is installed; the roff is checked above.
    let Ok(man) = Command::new("man").arg("--version").output() else {
        eprintln!("skipped rendering: man is not installed");
        return;
    };
    if !man.status.success() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("outbox.1");
    std::fs::write(&page, &out.stdout).unwrap();
    let shown = Command::new("man").arg("-l").arg(&page).env("MANPAGER", "cat").env("PAGER", "cat").output().unwrap();
    let s = stdout(&shown);
    assert!(shown.status.success(), "{}", ctx(&shown));
    assert!(s.contains("NAME") && s.contains("SUBCOMMANDS") && s.contains("--budget"), "{s}");
}

/// A config directory holding `config.toml` with `text`.
fn config(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("outbox")).unwrap();
    std::fs::write(dir.path().join("outbox").join("config.toml"), text).unwrap();
    dir
}

fn outbox_with(cfg: &tempfile::TempDir, store: &Store, args: &[&str]) -> Command {
    let mut cmd = Command::new(util::bin());
    cmd.args(args).env("OUTBOX_DIR", store.path()).env("XDG_CONFIG_HOME", cfg.path()).env_remove("OUTBOX_CONFIG");
    for var in ["OUTBOX_BUDGET", "OUTBOX_TAIL", "OUTBOX_TAIL_BUDGET", "OUTBOX_HEAD_BUDGET", "OUTBOX_SIGNAL"] {
        cmd.env_remove(var);
    }
    cmd
}

fn numbers(n: usize) -> Vec<u8> {
    (1..=n).map(|i| format!("{i}\n")).collect::<String>().into_bytes()
}

#[test]
fn the_file_sets_defaults_the_environment_and_the_command_line_override() {
    let cfg = config("budget = 3000\ntail = 7\n");
    let store = Store::new();
    let input = numbers(100_000);
    let run = |cmd: Command| util::run_cmd(cmd, &input);
    let header = |out: &Output| {
        let s = stdout(out);
        let line = s.lines().nth(1).unwrap_or_default().to_string();
        serde_json::from_str::<serde_json::Value>(&line).unwrap_or_else(|e| panic!("{e}: {s}"))
    };

    let out = run(outbox_with(&cfg, &store, &[]));
    assert!(util::chars(&out.stdout) <= 3000, "{}", ctx(&out));
    assert_eq!(header(&out)["budget"], 3000);
    // The tail asks for 7 lines (and may grow past them by characters).
    assert!(stdout(&out).contains("/7 lines ---\n"), "{}", ctx(&out));

    let mut env = outbox_with(&cfg, &store, &[]);
    env.env("OUTBOX_BUDGET", "5000");
    let out = run(env);
    assert_eq!(header(&out)["budget"], 5000, "the environment beats the file");
    assert!(stdout(&out).contains("/7 lines ---\n"), "the file still sets what the environment does not");

    let mut both = outbox_with(&cfg, &store, &["--budget", "2000"]);
    both.env("OUTBOX_BUDGET", "5000");
    let out = run(both);
    assert_eq!(header(&out)["budget"], 2000, "the command line beats both");

    let mut report = outbox_with(&cfg, &store, &["config"]);
    report.env("OUTBOX_BUDGET", "5000");
    let out = util::run_cmd(report, b"");
    let s = stdout(&out);
    assert!(out.status.success(), "{}", ctx(&out));
    assert!(
        s.lines().any(|l| l.starts_with("budget") && l.contains("5000") && l.contains("environment (OUTBOX_BUDGET)")),
        "{s}"
    );
    assert!(s.lines().any(|l| l.starts_with("tail ") && l.contains('7') && l.contains("# file")), "{s}");
    assert!(s.lines().any(|l| l.starts_with("head_budget") && l.contains("1000") && l.contains("# default")), "{s}");
}

#[test]
fn the_file_sets_the_wrappers_budget() {
    let Some(bash) = shell("bash") else { return };
    let cfg = config("budget = 2500\n");
    let store = Store::new();
    let dir = tempfile::tempdir().unwrap();
    let body: String = (1..=5000).map(|i| format!("match line {i} of the big file\n")).collect();
    std::fs::write(dir.path().join("big.txt"), body).unwrap();
    let script = format!("eval \"$('{}' init bash)\"\ngrep match big.txt\n", util::bin());
    let mut cmd = Command::new(bash);
    cmd.arg("-c")
        .arg(script)
        .current_dir(dir.path())
        .env("OUTBOX_DIR", store.path())
        .env("OUTBOX_WRAP", "1")
        .env("XDG_CONFIG_HOME", cfg.path())
        .env_remove("OUTBOX_CONFIG")
        .env_remove("OUTBOX_BUDGET");
    let out = util::run_cmd(cmd, b"");
    let s = stdout(&out);
    assert!(out.status.success(), "{}", ctx(&out));
    assert!(s.starts_with("<<<OUTBOX-HEADER\n") && s.contains("\"budget\":2500"), "{s}");
    assert!(util::chars(&out.stdout) <= 2500);
}

/// `outbox --help` points to the documentation, and every `docs/` file it
/// names exists (and is in the package: Cargo.toml includes `docs/*.md`).
#[test]
fn help_names_the_docs_and_each_exists() {
    let store = Store::new();
    let out = util::run(&store, &["--help"], b"");
    assert!(out.status.success(), "{}", ctx(&out));
    let help = stdout(&out);
    let named: Vec<&str> = help
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| w.starts_with("docs/") && w.ends_with(".md"))
        .collect();
    assert!(named.len() >= 9, "--help names the docs: {named:?}\n{help}");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for doc in &named {
        assert!(root.join(doc).is_file(), "--help names {doc}, which does not exist");
    }
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("\"/docs/*.md\""), "the package includes the docs --help names");
}
