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
/// interrupted, leaves no temporary file, and exits 130. SIGTERM: 143.
#[test]
fn interrupt_while_stdin_is_silent() {
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
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

/// A file-size limit (SIGXFSZ ignored, so writes fail with EFBIG): the
/// envelope is still printed from the scan, full_output is null with the
/// reason, exit 1, and no entry holds less than the input.
#[test]
fn file_size_limit_fails_the_spill_loudly() {
    let store = Store::new();
    let data: Vec<u8> = (0..300_000).flat_map(|i| format!("{i}\n").into_bytes()).collect();
    let script = format!("ulimit -f 100; trap '' XFSZ; exec {}", util::bin());
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(script).env("OUTBOX_DIR", store.path());
    let out = util::run_cmd(cmd, &data);
    assert_eq!(out.status.code(), Some(1));
    let h = header(&out.stdout);
    assert!(h["full_output"].is_null());
    assert!(h["spill_error"].as_str().unwrap().contains("File too large"), "{}", h["spill_error"]);
    assert_eq!(h["lines"], 300_000);
    assert!(String::from_utf8_lossy(&out.stderr).contains("could not be kept"));
    let entries: Vec<_> = store
        .entries()
        .into_iter()
        .filter(|p| outbox::store::is_entry_name(&p.file_name().unwrap().to_string_lossy()))
        .collect();
    assert!(entries.is_empty(), "no partial entry: {entries:?}");
    assert!(temp_files(&store).is_empty());
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
