//! Commands that outlive the agent's patience (`--detach-after`, `status`,
//! `wait`, `show` on a running entry) and `outbox stats`.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{self, Store};

fn private_store() -> Store {
    use std::os::unix::fs::PermissionsExt;
    let store = Store::new();
    std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    store
}

fn outbox(store: &Store, args: &[&str]) -> std::process::Output {
    util::run(store, args, b"")
}

fn header(out: &[u8]) -> Value {
    let text = String::from_utf8_lossy(out);
    assert!(text.starts_with("<<<OUTBOX-HEADER\n"), "{text}");
    serde_json::from_str(text.lines().nth(1).unwrap()).unwrap()
}

fn state(store: &Store, id: &str) -> Value {
    let out = outbox(store, &["status", id, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice::<Value>(&out.stdout).unwrap()[0].clone()
}

/// The check, with shorter sleeps: back within the time with a
/// running entry; `status` says running, later exited 4; `wait` prints the
/// end and exits 4; `show` works on the running entry and says so.
#[test]
fn a_long_command_detaches_and_is_followed() {
    let store = private_store();
    let start = Instant::now();
    let out = outbox(&store, &["--detach-after", "1", "--", "sh", "-c", "echo start; sleep 4; echo end; exit 4"]);
    let took = start.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(took < Duration::from_secs(3), "returned after {took:?}");
    let h = header(&out.stdout);
    assert_eq!(h["running"], true);
    let id = h["id"].as_str().unwrap().to_string();
    assert!(String::from_utf8_lossy(&out.stdout).contains("\nstart\n"), "what arrived is shown");
    assert_eq!(state(&store, &id)["state"], "running");
    let shown = outbox(&store, &["show", &id]);
    assert_eq!(shown.stdout, b"start\n");
    assert!(String::from_utf8_lossy(&shown.stderr).contains("still running"));
    let waited = outbox(&store, &["wait", &id]);
    assert_eq!(waited.status.code(), Some(4), "{}", String::from_utf8_lossy(&waited.stderr));
    assert_eq!(waited.stdout, b"start\nend\n", "small output passes through");
    let s = state(&store, &id);
    assert_eq!((s["state"].clone(), s["exit_status"].clone()), ("exited".into(), 4.into()));
    let shown = outbox(&store, &["show", &id]);
    assert_eq!(shown.stdout, b"start\nend\n");
    assert!(shown.stderr.is_empty(), "{}", String::from_utf8_lossy(&shown.stderr));
}

#[test]
fn a_command_that_ends_in_time_is_an_ordinary_run() {
    let store = private_store();
    let out = outbox(&store, &["--detach-after", "5", "--", "sh", "-c", "echo quick; echo oops >&2; exit 3"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(out.stdout, b"quick\noops\n");
    let list = outbox(&store, &["status", "--json"]);
    assert_eq!(serde_json::from_slice::<Value>(&list.stdout).unwrap(), serde_json::json!([]), "no record left");
}

/// The harness killing outbox (here its whole process group, with SIGKILL)
/// loses nothing: the command goes on, its output is kept, `wait` gets it.
#[test]
fn killing_outbox_loses_nothing() {
    use std::os::unix::process::CommandExt;
    let store = private_store();
    let mut c = Command::new(util::bin());
    c.args(["--detach-after", "30", "--", "sh", "-c", "echo one; sleep 2; echo two; exit 5"])
        .env("OUTBOX_DIR", store.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let child = c.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(700));
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let _ = child.wait_with_output();
    let list: Value = serde_json::from_slice(&outbox(&store, &["status", "--json"]).stdout).unwrap();
    let id = list[0]["id"].as_str().expect("a record of the run").to_string();
    assert_eq!(list[0]["state"], "running");
    let waited = outbox(&store, &["wait", &id, "--timeout", "20"]);
    assert_eq!(waited.status.code(), Some(5), "{}", String::from_utf8_lossy(&waited.stderr));
    assert_eq!(waited.stdout, b"one\ntwo\n");
}

#[test]
fn wait_gives_up_after_its_timeout_and_unknown_ids_are_errors() {
    let store = private_store();
    let out = outbox(&store, &["--detach-after", "0.3", "--", "sleep", "3"]);
    let id = header(&out.stdout)["id"].as_str().unwrap().to_string();
    let waited = outbox(&store, &["wait", &id, "--timeout", "0.5"]);
    assert_eq!(waited.status.code(), Some(124));
    assert!(String::from_utf8_lossy(&waited.stderr).contains("still running"));
    let bad = outbox(&store, &["status", "nope-run00000000"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no detached run"));
    assert_eq!(outbox(&store, &["wait", &id]).status.code(), Some(0));
}

#[test]
fn stats_names_a_command_run_twice() {
    let store = private_store();
    for _ in 0..2 {
        let out = outbox(&store, &["--", "seq", "1", "20000"]);
        assert_eq!(out.status.code(), Some(0));
    }
    outbox(&store, &["--", "seq", "1", "3"]);
    let text = String::from_utf8(outbox(&store, &["stats"]).stdout).unwrap();
    let row = text.lines().find(|l| l.starts_with("seq 1 20000")).unwrap_or_else(|| panic!("{text}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[3..6], ["2", "1", "2"], "runs, identical re-runs, envelopes: {row}");
    assert!(text.contains("kept out of the reader's window"), "{text}");
    let json: Value = serde_json::from_slice(&outbox(&store, &["stats", "--json"]).stdout).unwrap();
    let seq = json.as_array().unwrap().iter().find(|r| r["command"] == "seq 1 20000").unwrap();
    assert_eq!(seq["runs"], 2);
    assert_eq!(seq["chars_produced"], 2 * 108_894);
    assert!(seq["chars_printed"].as_u64().unwrap() < 2 * 14_000);
    let small = json.as_array().unwrap().iter().find(|r| r["command"] == "seq 1 3").unwrap();
    assert_eq!((small["passthroughs"].clone(), small["chars_kept_out"].clone()), (1.into(), 0.into()));
}
