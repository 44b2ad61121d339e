//! A regular file on stdin: copied into the store by the kernel and scanned
//! from the copy; a file truncated under outbox; the chosen path named with
//! `OUTBOX_DEBUG=1`; `--mmap` accepted and ignored; a full disk.

use std::process::{Command, Stdio};

use crate::util::{self, Store};

fn header(stdout: &[u8]) -> serde_json::Value {
    let s = String::from_utf8_lossy(stdout);
    let line = s.lines().nth(1).unwrap_or_else(|| panic!("no header in {s:?}"));
    serde_json::from_str(line).expect("header parses")
}

fn log(lines: usize) -> Vec<u8> {
    (0..lines).flat_map(|i| format!("2026-12-03 line {i} of a log that is rotated\n").into_bytes()).collect()
}

fn temp_files(store: &Store) -> Vec<String> {
    std::fs::read_dir(store.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp-"))
        .collect()
}

/// The copy path is named on stderr, and the stored copy is the file.
#[test]
fn file_on_stdin_is_copied_and_the_path_is_named() {
    let store = Store::new();
    let path = store.path().join("input.log");
    let data = log(200_000);
    std::fs::write(&path, &data).unwrap();
    // A clone where the file system shares extents; else (ext4) the file is
    // read and the spill writes directly, or, with OUTBOX_DIRECT=0, the
    // kernel copies it with copy_file_range.
    for direct in ["1", "0"] {
        let out = Command::new(util::bin())
            .env("OUTBOX_DIR", store.path())
            .env("OUTBOX_DEBUG", "1")
            .env("OUTBOX_DIRECT", direct)
            .stdin(std::fs::File::open(&path).unwrap())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        let err = String::from_utf8_lossy(&out.stderr);
        if util::FAST_PATHS {
            let copied =
                if direct == "1" { "outbox: spill: read+write (FICLONE" } else { "outbox: spill: copy_file_range" };
            assert!(err.contains("outbox: spill: FICLONE") || err.contains(copied), "{err}");
        } else {
            // The portable path: no clone, no kernel copy.
            assert!(err.contains("outbox: spill: read+write (no clone or kernel copy on this platform)"), "{err}");
        }
        let h = header(&out.stdout);
        assert_eq!(std::fs::read(h["full_output"].as_str().unwrap()).unwrap(), data);
        std::fs::remove_file(h["full_output"].as_str().unwrap()).unwrap();
    }

    // Through a pipe the spill thread writes what it reads: past the first
    // staging buffer with O_DIRECT, the last partial block through the
    // cache; a small run only through the cache.
    let piped = |data: &[u8]| {
        let mut c = Command::new(util::bin());
        c.env("OUTBOX_DIR", store.path()).env("OUTBOX_DEBUG", "1");
        let out = util::run_cmd(c, data);
        assert_eq!(out.status.code(), Some(0));
        let stored = std::fs::read(header(&out.stdout)["full_output"].as_str().unwrap()).unwrap();
        assert!(stored == data, "the stored copy is the input ({} bytes)", data.len());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let mut odd = data.clone();
    odd.extend_from_slice(b"\xff\xfe no newline at the end, 4097 bytes past a block");
    let err = piped(&odd);
    assert!(err.contains("outbox: spill: read+write"), "{err}");
    assert_eq!(err.contains("outbox: spill: O_DIRECT"), util::FAST_PATHS, "{err}");
    let err = piped(&data[..100_000]);
    assert!(err.contains("outbox: spill: read+write") && !err.contains("O_DIRECT"), "{err}");

    // OUTBOX_DIRECT=0: through the page cache only.
    let mut c = Command::new(util::bin());
    c.env("OUTBOX_DIR", store.path()).env("OUTBOX_DEBUG", "1").env("OUTBOX_DIRECT", "0");
    let out = util::run_cmd(c, &odd);
    assert_eq!(out.status.code(), Some(0));
    let stored = std::fs::read(header(&out.stdout)["full_output"].as_str().unwrap()).unwrap();
    assert!(stored == odd);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("spill: O_DIRECT"));
}

/// logrotate's copytruncate: the file on stdin is truncated while outbox
/// reads it. Whenever the truncation lands, outbox does not crash (with
/// `--mmap` it used to die of SIGBUS, exit 135, no envelope, a temporary
/// file left), prints the envelope, and stores exactly what it scanned, a
/// prefix of the file. When it noticed (the file ended shorter than what
/// it had read) it says so and exits 1.
#[test]
fn file_truncated_while_read_does_not_crash() {
    let store = Store::new();
    let path = store.path().join("app.log");
    let data = log(800_000);
    for round in 0..3 {
        std::fs::write(&path, &data).unwrap();
        let child = Command::new(util::bin())
            .args(["--mmap"])
            .env("OUTBOX_DIR", store.path())
            .stdin(std::fs::File::open(&path).unwrap())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Truncate at a different moment each round.
        std::thread::sleep(std::time::Duration::from_millis(round * 5));
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(0).unwrap();
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--mmap is ignored"), "{err}");
        if out.stdout.is_empty() {
            // Truncated before outbox read a byte: empty input is quiet.
            assert_eq!(out.status.code(), Some(0), "{err}");
            assert!(temp_files(&store).is_empty());
            continue;
        }
        let h = header(&out.stdout);
        let bytes = h["bytes"].as_u64().unwrap() as usize;
        match out.status.code() {
            // Truncated before outbox looked at it: an empty file, read whole.
            Some(0) => assert!(bytes == data.len() || bytes == 0, "a clean run read the whole file: {bytes}"),
            Some(1) => {
                assert!(err.contains("shrank to 0 bytes"), "{err}");
                assert!(
                    String::from_utf8_lossy(&out.stdout).contains("the input file shrank to"),
                    "the envelope says so"
                );
            }
            other => panic!("exit status {other:?}: {err}"),
        }
        let stored = std::fs::read(h["full_output"].as_str().unwrap()).unwrap();
        assert_eq!(stored.len(), bytes, "the stored copy is what was scanned");
        assert!(stored == data[..bytes], "and a prefix of the file");
        assert!(temp_files(&store).is_empty());
    }
}

/// A store on a tiny tmpfs (needs root to mount one; skipped otherwise):
/// the copy path runs out of space, the envelope is printed from the scan,
/// `full_output` is null, exit 1, nothing left behind.
#[test]
fn disk_full_on_the_copy_path() {
    let store = Store::new();
    let mnt = store.path().join("tiny");
    if !crate::util::tiny_tmpfs(&mnt) {
        return;
    }
    let input = store.path().join("input.log");
    let data = log(100_000);
    std::fs::write(&input, &data).unwrap();
    let out = Command::new(util::bin())
        .env("OUTBOX_DIR", &mnt)
        .env("OUTBOX_DEBUG", "1")
        .stdin(std::fs::File::open(&input).unwrap())
        .output()
        .unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(&mnt).unwrap().map(|e| e.unwrap().file_name()).collect();
    let _ = Command::new("umount").arg(&mnt).status();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let h = header(&out.stdout);
    assert!(h["full_output"].is_null());
    assert!(h["spill_error"].as_str().unwrap().contains("No space left"), "{}", h["spill_error"]);
    assert_eq!(h["lines"], 100_000);
    assert!(leftovers.iter().all(|n| !n.to_string_lossy().starts_with(".tmp-")), "{leftovers:?}");
}
