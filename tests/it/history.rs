//! The run history through outbox itself: series written by real runs,
//! compared with the previous run, measured against a boundary; `outbox
//! trend`; harness presets.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::util::{self, Store};

/// A project directory (optionally a git work tree) to run from, so the
/// series key does not depend on where the tests run.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        Project { dir: tempfile::tempdir().unwrap() }
    }

    /// Makes it a work tree at revision `rev` (40 hex digits from a number).
    fn at_revision(&self, n: u64) -> String {
        let git = self.dir.path().join(".git");
        std::fs::create_dir_all(git.join("refs/heads")).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        let rev = format!("{n:040x}");
        std::fs::write(git.join("refs/heads/main"), format!("{rev}\n")).unwrap();
        rev
    }

    fn outbox(&self, store: &Store, args: &[&str]) -> Command {
        let mut cmd = Command::new(util::bin());
        cmd.args(args).current_dir(self.dir.path()).env("OUTBOX_DIR", store.path());
        for var in ["OUTBOX_HARNESS", "OUTBOX_BOUNDARY", "OUTBOX_BUDGET"] {
            cmd.env_remove(var);
        }
        cmd
    }
}

/// Input of about `chars` characters in lines of 100.
fn text(chars: u64, salt: u64) -> Vec<u8> {
    let mut s = String::new();
    let mut i = 0;
    while (s.len() as u64) + 100 <= chars {
        s.push_str(&format!("{salt:08} line {i:06} {}\n", "x".repeat(78)));
        i += 1;
    }
    let rest = chars - s.len() as u64;
    s.push_str(&"y".repeat(rest.saturating_sub(1) as usize));
    if rest > 0 {
        s.push('\n');
    }
    s.into_bytes()
}

fn header(out: &Output) -> Value {
    let s = String::from_utf8_lossy(&out.stdout);
    let line = s.lines().nth(1).unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {s}"))
}

fn run(p: &Project, store: &Store, args: &[&str], input: &[u8]) -> Output {
    let out = util::run_cmd(p.outbox(store, args), input);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

const ALWAYS: &[&str] = &["--label", "series", "--envelope", "always", "--boundary", "30000"];

#[test]
fn a_flat_noisy_series_raises_nothing() {
    let (p, store) = (Project::new(), Store::new());
    let wobble = [0i64, 500, -500, 250, -250, 400, -400, 100, -100, 0];
    let mut last = None;
    for i in 0..30u64 {
        let out = run(&p, &store, ALWAYS, &text((20_000 + wobble[(i % 10) as usize]) as u64, i));
        assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
        last = Some(header(&out));
    }
    let t = &last.unwrap()["history"]["trend"];
    assert_eq!(t["runs"], 30);
    assert!(t.get("slope_per_run").is_none(), "{t}");
    assert!(t.get("runs_left").is_none(), "{t}");
    assert!(t.get("step").is_none(), "{t}");
}

#[test]
fn a_growing_series_says_when_it_crosses_and_a_failing_flood_does_not_move_it() {
    let (p, store) = (Project::new(), Store::new());
    let mut h = Value::Null;
    for i in 0..30u64 {
        h = header(&run(&p, &store, ALWAYS, &text(20_000 + 300 * i, i)));
    }
    let t = &h["history"]["trend"];
    let slope = t["slope_per_run"].as_f64().unwrap();
    assert!((slope - 300.0).abs() <= 15.0, "{t}");
    let left = t["runs_left"].as_f64().unwrap();
    assert!((3.5..=5.0).contains(&left), "about 4 more runs: {t}");
    assert!(h["history"]["summary"].as_str().unwrap().contains("crosses 30000 chars in about 4 runs"), "{h}");

    // One failing run of 200,000 characters, wrapped: a record, but not a
    // point of the success series.
    let big = p.dir.path().join("big.txt");
    std::fs::write(&big, text(200_000, 99)).unwrap();
    let mut wrap =
        p.outbox(&store, &["--label", "series", "--boundary", "30000", "--", "sh", "-c", "cat big.txt; exit 1"]);
    wrap.current_dir(p.dir.path());
    let out = util::run_cmd(wrap, b"");
    assert_eq!(out.status.code(), Some(1));
    let after = &header(&out)["history"]["trend"];
    assert_eq!(after["runs"], 31);
    assert_eq!(after["ok_runs"], 30);
    assert_eq!(after["level"], t["level"]);
    assert_eq!(after["slope_per_run"], t["slope_per_run"]);
}

#[test]
fn a_step_is_reported_between_the_right_revisions() {
    let (p, store) = (Project::new(), Store::new());
    let wobble = [0i64, 300, -300, 150, -150, 200, -200, 50, -50, 0];
    let mut revs = Vec::new();
    let mut h = Value::Null;
    for i in 0..30u64 {
        revs.push(p.at_revision(1000 + i));
        let size = 20_000 + wobble[(i % 10) as usize] + if i >= 22 { 6_000 } else { 0 };
        h = header(&run(&p, &store, ALWAYS, &text(size as u64, i)));
    }
    let s = &h["history"]["trend"]["step"];
    let delta = s["delta"].as_i64().unwrap();
    assert!((delta - 6_000).abs() <= 600, "{s}");
    assert_eq!(s["rev_before"], revs[21].as_str(), "{s}");
    assert_eq!(s["rev_after"], revs[22].as_str(), "{s}");
}

#[test]
fn the_same_output_twice_and_a_new_error_are_reported() {
    let (p, store) = (Project::new(), Store::new());
    let base: String = (0..2000).map(|i| format!("step {i} ok\n")).collect();
    let first = header(&run(&p, &store, ALWAYS, base.as_bytes()));
    assert!(first["history"].get("previous").is_none(), "a first run has nothing to compare");
    let second = header(&run(&p, &store, ALWAYS, base.as_bytes()));
    let prev = &second["history"]["previous"];
    assert_eq!(prev["same_as"], first["id"], "{prev}");
    assert!(second["history"]["summary"].as_str().unwrap().starts_with("same as "), "{second}");

    let with_error = format!("{base}error: disk quota exceeded on /var\n");
    let third = header(&run(&p, &store, ALWAYS, with_error.as_bytes()));
    let prev = &third["history"]["previous"];
    assert!(prev.get("same_as").is_none());
    assert_eq!(prev["new_kinds"], 1, "{prev}");
    assert_eq!(prev["gone_kinds"], 0, "{prev}");
}

fn series_runs(p: &Project, store: &Store) -> u64 {
    let out = util::run_cmd(p.outbox(store, &["trend", "--json"]), b"");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array().unwrap().iter().map(|r| r["runs"].as_u64().unwrap()).sum()
}

#[test]
fn two_runs_at_once_both_land_and_gc_keeps_the_series() {
    let (p, store) = (Project::new(), Store::new());
    std::thread::scope(|s| {
        for i in 0..2u64 {
            let (p, store) = (&p, &store);
            s.spawn(move || run(p, store, ALWAYS, &text(5_000, i)));
        }
    });
    assert_eq!(series_runs(&p, &store), 2);
    // Entries expire at once; the series outlives them.
    let mut gc = p.outbox(&store, &["gc"]);
    gc.env("OUTBOX_TTL_SECONDS", "0");
    let mut expire = p.outbox(&store, ALWAYS);
    expire.env("OUTBOX_TTL_SECONDS", "0");
    util::run_cmd(expire, &text(5_000, 7));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let out = util::run_cmd(gc, b"");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(series_runs(&p, &store), 3);
}

#[test]
fn trend_lists_series_and_audits_those_about_to_cross() {
    let (p, store) = (Project::new(), Store::new());
    for i in 0..12u64 {
        run(&p, &store, &["--label", "growing", "--envelope", "always"], &text(20_000 + 800 * i, i));
        run(&p, &store, &["--label", "flat", "--envelope", "always"], &text(5_000, i));
    }
    let out = util::run_cmd(p.outbox(&store, &["trend", "--boundary", "30000"]), b"");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(table.starts_with("boundary: 30000 chars\nSERIES"), "{table}");
    assert!(table.contains("growing") && table.contains("flat"), "{table}");
    let audit = util::run_cmd(p.outbox(&store, &["trend", "--boundary", "30000", "--within", "10"]), b"");
    assert_eq!(audit.status.code(), Some(1), "a series crosses within 10 runs");
    let listed = String::from_utf8_lossy(&audit.stdout);
    assert!(listed.contains("growing") && !listed.contains("flat"), "{listed}");
    let none = util::run_cmd(p.outbox(&store, &["trend", "--boundary", "1000000", "--within", "10"]), b"");
    assert_eq!(none.status.code(), Some(0));
}

#[test]
fn a_passed_through_output_near_the_boundary_says_so_on_stderr() {
    let (p, store) = (Project::new(), Store::new());
    let mut last = None;
    for i in 0..12u64 {
        // Passes through (under the budget) but grows toward a boundary.
        last = Some(run(&p, &store, &["--label", "ls", "--boundary", "12000"], &text(6_000 + 400 * i, i)));
    }
    let out = last.unwrap();
    assert!(!out.stdout.starts_with(b"<<<OUTBOX-HEADER"), "passed through");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ls: output is growing") && err.contains("boundary"), "{err}");
}

#[test]
fn harness_presets_set_the_budget_and_name_the_token_estimate() {
    let (p, store) = (Project::new(), Store::new());
    let input = text(300_000, 1);
    let out = run(&p, &store, &["--harness", "claude-code"], &input);
    assert!(util::chars(&out.stdout) <= 30_000);
    let h = header(&out);
    assert_eq!(h["budget"], 30_000);
    assert_eq!(h["tokens_est"], (input.len() as u64).div_ceil(4));
    assert_eq!(h["tokens_method"], "bytes/4");
    let head: String = String::from_utf8_lossy(&out.stdout).chars().take(2_000).collect();
    assert!(head.contains("OUTBOX-HEADER\n"), "the header is in the first 2,000 characters");

    // Codex counts bytes / 4: Japanese text is three bytes a character.
    let ja: String = (0..20_000).map(|i| format!("行{i}番目のログ出力です\n")).collect();
    // Three runs: the header shows a trend once it rests on three.
    let mut out = None;
    for _ in 0..3 {
        // Labelled: unlabelled pipes are never one series.
        let mut codex = p.outbox(&store, &["--label", "ja"]);
        codex.env("OUTBOX_HARNESS", "codex");
        out = Some(util::run_cmd(codex, ja.as_bytes()));
    }
    let out = out.unwrap();
    assert!(out.stdout.len().div_ceil(4) <= 10_000, "{} bytes", out.stdout.len());
    assert_eq!(header(&out)["history"]["trend"]["unit"], "bytes");
    // An explicit budget beats the preset.
    let out = run(&p, &store, &["--harness", "gemini", "--budget", "5000"], &input);
    assert_eq!(header(&out)["budget"], 5000);
    let _ = Path::new("");
}

/// Signal shapes new since the previous run are chosen first when not all
/// signal lines fit: the one new error survives a small budget although it
/// sits among fifty old ones (the history compares the first 64 shapes).
#[test]
fn new_signal_shapes_are_listed_first() {
    let (p, store) = (Project::new(), Store::new());
    let word = |i: usize| -> String {
        // Distinct shapes need distinct letters (digits are folded).
        let mut n = i;
        let mut w = String::new();
        for _ in 0..4 {
            w.push((b'a' + (n % 26) as u8) as char);
            n /= 26;
        }
        w
    };
    let old: String = (0..50).map(|i| format!("error: {} failed in module {}\n", word(i), word(i + 7))).collect();
    let filler: String = (0..2000).map(|i| format!("step {i} ok\n")).collect();
    let first = format!("{filler}{old}{filler}");
    run(&p, &store, &["--label", "build", "--budget", "2500"], first.as_bytes());
    let second = format!(
        "{filler}{}error: brand new quota exhausted on volume\n{}{filler}",
        &old[..old.len() / 2],
        &old[old.len() / 2..]
    );
    let out = run(&p, &store, &["--label", "build", "--budget", "2500"], second.as_bytes());
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(header(&out)["history"]["previous"]["new_kinds"], 1, "{text}");
    assert!(text.contains("brand new quota exhausted on volume [new]\n"), "the new error is shown, marked: {text}");
    assert!(text.contains("1 new kind (\"error: brand new quota exhausted on vol…\"), 0 gone since "), "{text}");
}

/// Between two runs of a build: the kinds the second run has and the first
/// had not are marked `[new]` on their lines, and the kinds the first had
/// and the second has not are named in one line (rustc's codes, from the
/// captured outputs).
#[test]
fn new_kinds_are_marked_and_gone_kinds_named() {
    let (p, store) = (Project::new(), Store::new());
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/families/cargo");
    let errors = std::fs::read(format!("{fixtures}/build-errors.out")).unwrap();
    let errors = String::from_utf8_lossy(&errors);
    // Lines of many shapes (words without digits), so none folds and the
    // build lands in the gap, its lines listed.
    let word = |mut n: usize| -> String {
        let mut w = String::new();
        for _ in 0..3 {
            w.push((b'a' + (n % 26) as u8) as char);
            n /= 26;
        }
        w
    };
    let filler: String = (0..3000).map(|i| format!("step {} done\n", word(i))).collect();
    let args = &["--label", "build", "--envelope", "always"];
    // The first run without the E0599 error's block, the second without
    // the E0425 one's.
    let without = |code: &str| {
        let at = errors.find(&format!("error[{code}]")).unwrap();
        let end = at + errors[at..].find("\n\n").unwrap() + 2;
        format!("{filler}{}{}{filler}", &errors[..at], &errors[end..])
    };
    run(&p, &store, args, without("E0599").as_bytes());
    let out = run(&p, &store, args, without("E0425").as_bytes());
    let text = String::from_utf8_lossy(&out.stdout);
    let prev = &header(&out)["history"]["previous"];
    assert_eq!((prev["new_kinds"].as_u64(), prev["gone_kinds"].as_u64()), (Some(1), Some(1)), "{text}");
    let e0599 = text.lines().find(|l| l.contains(": error[E0599]")).expect("E0599 is listed");
    assert!(e0599.ends_with(" [new]"), "{e0599}");
    assert!(text.contains("\n--- gone since the previous run: E0425 ---\n"), "{text}");
    assert!(text.contains("; 1 new kind (E0599), 1 gone since "), "{text}");
}

/// Unlabelled pipes in one directory are unrelated commands: never one
/// series, never compared, never warned about.
#[test]
fn unlabelled_pipes_are_never_one_series() {
    let p = Project::new();
    let store = Store::new();
    let big: Vec<u8> = (1..=200_000).flat_map(|i| format!("{i}\n").into_bytes()).collect();
    run(&p, &store, &[], &big);
    run(&p, &store, &[], &big);
    let out = run(&p, &store, &[], b"hi\n");
    assert_eq!(out.stdout, b"hi\n");
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(&p, &store, &["--envelope", "always"], &big);
    assert!(header(&out).get("history").is_none(), "{}", String::from_utf8_lossy(&out.stdout));
    // A label names a series: its runs are compared.
    run(&p, &store, &["--label", "numbers", "--envelope", "always"], &big);
    let out = run(&p, &store, &["--label", "numbers", "--envelope", "always"], &big);
    assert!(header(&out)["history"]["previous"].is_object(), "{}", String::from_utf8_lossy(&out.stdout));
}
