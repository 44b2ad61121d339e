//! The store, end to end through the real binary: where files land and with
//! what permissions, `show` / `ls` / `gc`, expiry, the size cap, dedup and
//! concurrent writers.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

use crate::util::{self, run, run_cmd};

/// The envelope header of an output (the JSON line after the open marker).
fn header(out: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    lines.find(|l| *l == "<<<OUTBOX-HEADER").unwrap_or_else(|| panic!("no header in {text:?}"));
    serde_json::from_str(lines.next().expect("header line")).expect("header is JSON")
}

/// Stores `input` under `args` (envelope forced) and returns its id.
fn store_input(store: &util::Store, args: &[&str], input: &[u8]) -> String {
    let mut all = vec!["--envelope", "always"];
    all.extend_from_slice(args);
    let out = run(store, &all, input);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    header(&out)["id"].as_str().expect("id").to_string()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Names in the store by kind: (entries, metadata, temporary files).
fn names(dir: &Path) -> (Vec<String>, Vec<String>, Vec<String>) {
    let (mut e, mut m, mut t) = (Vec::new(), Vec::new(), Vec::new());
    for d in fs::read_dir(dir).unwrap() {
        let name = d.unwrap().file_name().into_string().unwrap();
        if name.starts_with(".tmp-") {
            t.push(name);
        } else if name.ends_with(".meta") {
            m.push(name);
        } else if name != "gc-stamp" && name != ".history" {
            // .history holds the run history's series (figures, no content).
            e.push(name);
        }
    }
    e.sort();
    m.sort();
    t.sort();
    (e, m, t)
}

fn set_mtime(path: &Path, ago: Duration) {
    let f = fs::OpenOptions::new().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - ago).unwrap();
}

/// Rewrites one field of an entry's metadata.
fn edit_meta(dir: &Path, id: &str, key: &str, value: serde_json::Value) {
    let path = dir.join(format!("{id}.meta"));
    let mut meta: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    meta[key] = value;
    fs::write(&path, serde_json::to_vec(&meta).unwrap()).unwrap();
}

#[test]
fn hostile_labels_land_inside_the_store_with_a_sanitised_name() {
    let long = "y".repeat(500);
    let cases: [(&str, &str); 5] = [
        ("../../x", "_.._x"),
        ("/etc/passwd", "_etc_passwd"),
        (&long, &long[..64]),
        ("a\u{7}b\nc\u{1b}[31m", "a_b_c__31m"),
        ("", "stdin"),
    ];
    let store = util::Store::new();
    for (i, (label, want)) in cases.iter().enumerate() {
        let input = format!("content {i}\n");
        let out = run(&store, &["--envelope", "always", "--label", label], input.as_bytes());
        assert!(out.status.success(), "{label:?}: {}", stderr(&out));
        let h = header(&out);
        let id = h["id"].as_str().unwrap();
        assert_eq!(h["label"], *want, "{label:?}");
        assert!(id.starts_with(&format!("{want}-")), "{label:?} gave id {id}");
        let path = PathBuf::from(h["full_output"].as_str().unwrap());
        assert_eq!(path.parent().unwrap(), store.path(), "{label:?} escaped to {}", path.display());
        assert_eq!(fs::read(&path).unwrap(), input.as_bytes());
    }
    let (entries, metas, temps) = names(store.path());
    assert_eq!((entries.len(), metas.len(), temps.len()), (5, 5, 0), "{entries:?}");
}

#[test]
fn a_store_that_is_a_symlink_is_refused_and_nothing_is_written_through_it() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("elsewhere");
    fs::create_dir(&target).unwrap();
    fs::set_permissions(&target, fs::Permissions::from_mode(0o700)).unwrap();
    let link = tmp.path().join("store");
    std::os::unix::fs::symlink(&target, &link).unwrap();

    let mut cmd = Command::new(util::bin());
    cmd.args(["--envelope", "always"]).env("OUTBOX_DIR", &link);
    let out = run_cmd(cmd, b"secret\n");
    assert_eq!(out.status.code(), Some(1));
    let h = header(&out);
    assert!(h["full_output"].is_null(), "{h}");
    assert!(h["spill_error"].as_str().unwrap().contains("symbolic link"), "{h}");
    assert!(stderr(&out).contains("symbolic link"));
    assert_eq!(fs::read_dir(&target).unwrap().count(), 0, "something was written through the link");

    // The reading commands refuse it too.
    let mut cmd = Command::new(util::bin());
    cmd.args(["ls"]).env("OUTBOX_DIR", &link);
    let out = run_cmd(cmd, b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("symbolic link"));
}

#[test]
fn permissions_are_private_under_a_permissive_umask() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("new").join("store");
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "umask 000; exec \"$0\" \"$@\"", util::bin(), "--envelope", "always"]).env("OUTBOX_DIR", &dir);
    let out = run_cmd(cmd, b"token=hunter2\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
    let (entries, metas, _) = names(&dir);
    assert_eq!((entries.len(), metas.len()), (1, 1));
    for name in entries.iter().chain(&metas) {
        assert_eq!(fs::metadata(dir.join(name)).unwrap().mode() & 0o777, 0o600, "{name}");
    }
}

#[test]
fn a_store_open_to_others_is_refused_with_what_to_do() {
    let store = util::Store::new();
    fs::set_permissions(store.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let out = run(&store, &["--envelope", "always"], b"x\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(header(&out)["full_output"].is_null());
    assert!(stderr(&out).contains("chmod 700"), "{}", stderr(&out));
}

/// Content that is not UTF-8, with NULs, CRLF, a long line, no final
/// newline, and longer than one read buffer.
fn awkward_content() -> Vec<u8> {
    let mut v = Vec::new();
    for i in 0..20_000u32 {
        v.extend_from_slice(format!("line {i} \u{e9}\u{1b}[1m").as_bytes());
        v.extend_from_slice(&[0xff, 0xfe, 0x00, 0xc3]);
        v.extend_from_slice(if i % 3 == 0 { b"\r\n" } else { b"\n" });
    }
    v.resize(v.len() + 300_000, b'z');
    v.extend_from_slice(b"\xe2\x82 unterminated");
    v
}

#[test]
fn show_is_byte_identical_on_invalid_utf8() {
    let store = util::Store::new();
    let content = awkward_content();
    let id = store_input(&store, &[], &content);
    let out = run(&store, &["show", &id], b"");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(out.stdout.len(), content.len());
    assert!(out.stdout == content, "show changed the bytes");
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}

#[test]
fn show_into_a_closed_pipe_ends_quietly() {
    let store = util::Store::new();
    let id = store_input(&store, &[], &vec![b'x'; 4 << 20]);
    // outbox's own status and stderr, whatever head does.
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "{ \"$0\" show \"$1\"; echo \"status $?\" >&2; } | head -c 10 >/dev/null", util::bin(), &id]);
    cmd.env("OUTBOX_DIR", store.path());
    let out = run_cmd(cmd, b"");
    assert_eq!(stderr(&out).trim(), "status 0", "a broken pipe must end quietly with status 0");
}

#[test]
fn show_lines_prints_exact_bytes_of_a_range() {
    let store = util::Store::new();
    let id = store_input(&store, &[], b"one\ntwo\r\nthree\n\xff four\nfive");
    let show = |range: &str| run(&store, &["show", &id, "--lines", range], b"");
    let cases: [(&str, &[u8]); 7] = [
        ("2:3", b"two\r\nthree\n"),
        ("1:1", b"one\n"),
        ("4", b"\xff four\n"),
        (":2", b"one\ntwo\r\n"),
        ("4:", b"\xff four\nfive"),
        ("5:5", b"five"),
        ("1:", b"one\ntwo\r\nthree\n\xff four\nfive"),
    ];
    for (range, want) in cases {
        let out = show(range);
        assert!(out.status.success(), "{range}: {}", stderr(&out));
        assert_eq!(out.stdout, want, "{range}");
    }
    // Past the end: what exists, and a note.
    let out = show("4:99");
    assert!(out.status.success());
    assert_eq!(out.stdout, b"\xff four\nfive");
    assert!(stderr(&out).contains("has 5 lines"), "{}", stderr(&out));
    // Starting past the end: an error, nothing printed.
    let out = show("6:9");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("only 5 lines"), "{}", stderr(&out));
    // Malformed ranges are usage errors that say how to write one.
    for bad in ["0:3", "3:2", "a:b", "", "1:2:3"] {
        let out = show(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(out.stdout.is_empty());
        assert!(stderr(&out).contains("A:B"), "{bad:?}: {}", stderr(&out));
    }
}

#[test]
fn show_grep_prints_numbered_matching_lines_escaped() {
    let store = util::Store::new();
    let id = store_input(&store, &[], b"ok\nerror: bad\x07 thing\r\nfine\nanother error \xff\nend");
    let out = run(&store, &["show", &id, "--grep", "error"], b"");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "2: error: bad\\x07 thing\n4: another error \u{fffd}\n");

    let out = run(&store, &["show", &id, "--grep", "(?i)ERROR", "--lines", "3:"], b"");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "4: another error \u{fffd}\n");

    let out = run(&store, &["show", &id, "--grep", "nomatch"], b"");
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("no line"));

    // A bad pattern is a usage error like any other: exit 2, said by clap.
    let out = run(&store, &["show", &id, "--grep", "("], b"");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("--grep") && stderr(&out).contains("not a valid regex"), "{}", stderr(&out));
}

#[test]
fn unknown_and_malformed_ids_are_errors_with_nothing_on_stdout() {
    let store = util::Store::new();
    store_input(&store, &[], b"something\n");
    let out = run(&store, &["show", "stdin-0123456789ab"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(err.contains("gone or expired") && err.contains("re-run the source command"), "{err}");

    // Nothing outside entry-name format is ever opened.
    for bad in ["../x", "/etc/passwd", "../../etc/passwd", ".tmp-1-2-3", "gc-stamp", "stdin-0123456789ab.meta", ""] {
        let out = run(&store, &["show", bad], b"");
        assert_eq!(out.status.code(), Some(1), "{bad:?}");
        assert!(out.stdout.is_empty(), "{bad:?}");
        assert!(stderr(&out).contains("not an entry id"), "{bad:?}: {}", stderr(&out));
    }
}

#[test]
fn show_refuses_a_symlink_planted_under_an_entry_name() {
    let store = util::Store::new();
    let outside = tempfile::NamedTempFile::new().unwrap();
    fs::write(outside.path(), b"not yours to print\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), store.path().join("evil-0123456789ab")).unwrap();
    let out = run(&store, &["show", "evil-0123456789ab"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
}

#[test]
fn an_incomplete_entry_is_shown_with_a_warning() {
    let store = util::Store::new();
    let id = store_input(&store, &[], b"partial output\n");
    edit_meta(store.path(), &id, "complete", false.into());
    edit_meta(store.path(), &id, "interrupted_by", "SIGINT".into());
    let out = run(&store, &["show", &id], b"");
    assert!(out.status.success());
    assert_eq!(out.stdout, b"partial output\n");
    let err = stderr(&out);
    assert!(err.contains("incomplete") && err.contains("interrupted by SIGINT"), "{err}");
}

#[test]
fn ls_lists_entries_newest_first_and_as_json() {
    let store = util::Store::new();
    let a = store_input(&store, &["--label", "first"], b"a\nb\n");
    std::thread::sleep(Duration::from_millis(20));
    let b = store_input(&store, &["--label", "second"], b"c\n");
    std::thread::sleep(Duration::from_millis(20));
    let c = store_input(&store, &["--label", "third"], b"d\n");
    // An entry whose metadata was lost is listed with what is known.
    fs::remove_file(store.path().join(format!("{c}.meta"))).unwrap();
    // Foreign files are not entries.
    fs::write(store.path().join("notes.txt"), b"mine").unwrap();

    let out = run(&store, &["ls"], b"");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("ID") && lines[0].contains("STRATEGY") && lines[0].contains("COMPLETE"));
    assert!(lines[1].starts_with(&c) && lines[2].starts_with(&b) && lines[3].starts_with(&a), "{text}");
    assert!(lines[1].contains("no metadata"), "{text}");
    assert!(lines[2].contains("text-envelope") && lines[2].contains("yes"), "{text}");
    assert!(lines[4].starts_with("3 entries"), "{text}");
    assert!(!text.contains("notes.txt"));

    let out = run(&store, &["ls", "--json"], b"");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("ls --json is JSON");
    let arr = v.as_array().unwrap();
    let ids: Vec<&str> = arr.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [c.as_str(), b.as_str(), a.as_str()]);
    assert_eq!(arr[2]["lines"], 2);
    assert_eq!(arr[2]["bytes"], 4);
    assert_eq!(arr[2]["label"], "first");
    assert_eq!(arr[2]["strategy"], "text-envelope");
    assert_eq!(arr[2]["complete"], true);
    assert_eq!(arr[2]["metadata"], "ok");
    assert_eq!(arr[0]["metadata"], "missing");
    assert_eq!(arr[0]["label"], "third");
    assert!(arr[0]["lines"].is_null());
    assert_eq!(PathBuf::from(arr[2]["path"].as_str().unwrap()), store.path().join(&a));

    // An empty or missing store lists nothing.
    let empty = util::Store::new();
    let mut cmd = Command::new(util::bin());
    cmd.args(["ls", "--json"]).env("OUTBOX_DIR", empty.path().join("none"));
    let out = run_cmd(cmd, b"");
    assert!(out.status.success());
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap(), serde_json::json!([]));
    assert!(!empty.path().join("none").exists(), "ls must not create a store");
}

#[test]
fn identical_content_is_stored_once() {
    let store = util::Store::new();
    let a = store_input(&store, &[], b"same\n");
    let b = store_input(&store, &[], b"same\n");
    assert_eq!(a, b);
    let (entries, metas, temps) = names(store.path());
    assert_eq!((entries, metas.len(), temps.len()), (vec![a.clone()], 1, 0));
    // Another label is another entry.
    let c = store_input(&store, &["--label", "other"], b"same\n");
    assert_ne!(a, c);
}

#[test]
fn expired_entries_are_collected_and_then_gone() {
    let store = util::Store::new();
    let mut cmd = Command::new(util::bin());
    cmd.args(["--envelope", "always"]).env("OUTBOX_DIR", store.path()).env("OUTBOX_TTL_SECONDS", "1");
    let out = run_cmd(cmd, b"short-lived\n");
    let id = header(&out)["id"].as_str().unwrap().to_string();
    let keep = store_input(&store, &["--label", "keep"], b"long-lived\n");
    std::thread::sleep(Duration::from_millis(2100));

    // Expired but not yet collected: already refused.
    let out = run(&store, &["show", &id], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("expired") && stderr(&out).contains("re-run the source command"));

    let out = run(&store, &["gc", "--dry-run"], b"");
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("would remove {id}")));
    assert!(store.path().join(&id).exists(), "--dry-run removed something");

    let out = run(&store, &["gc"], b"");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(&format!("removed {id} (expired")), "{text}");
    assert!(text.lines().last().unwrap().starts_with("removed 1 entry ("), "{text}");

    let out = run(&store, &["show", &id], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(err.contains("gone or expired") && err.contains("re-run the source command"), "{err}");
    let (entries, metas, _) = names(store.path());
    assert_eq!((entries, metas), (vec![keep.clone()], vec![format!("{keep}.meta")]));
}

#[test]
fn the_size_cap_evicts_the_oldest_entries_first() {
    let store = util::Store::new();
    let ids: Vec<String> = (0..3)
        .map(|i| {
            std::thread::sleep(Duration::from_millis(20));
            store_input(&store, &["--label", &format!("e{i}")], &vec![b'a' + i as u8; 10_000])
        })
        .collect();
    let gc = |cap: &str| {
        let mut cmd = Command::new(util::bin());
        cmd.args(["gc"]).env("OUTBOX_DIR", store.path()).env("OUTBOX_MAX_STORE_BYTES", cap);
        run_cmd(cmd, b"")
    };
    let out = gc("25K");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("removed 1 entry"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let (entries, metas, _) = names(store.path());
    assert_eq!(entries, vec![ids[1].clone(), ids[2].clone()]);
    assert_eq!(metas.len(), 2);

    // The newest entry stays even when it alone is over the cap.
    let out = gc("1");
    assert!(out.status.success());
    assert_eq!(names(store.path()).0, vec![ids[2].clone()]);

    let out = gc("lots");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("OUTBOX_MAX_STORE_BYTES"), "{}", stderr(&out));
}

#[test]
fn gc_touches_only_its_own_names_and_never_follows_symlinks() {
    let store = util::Store::new();
    let dir = store.path();
    let live = store_input(&store, &[], b"live\n");
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    fs::write(&victim, b"keep me").unwrap();
    let hours = |h: u64| Duration::from_secs(h * 3600);

    // Foreign files, old and new, and symlinks named like ours.
    for name in ["notes.txt", "README", "x-0123456789ab.bak", "UPPER-0123456789AB"] {
        fs::write(dir.join(name), b"foreign").unwrap();
        set_mtime(&dir.join(name), hours(24 * 30));
    }
    for name in ["link-0123456789ab", "link-0123456789ab.meta", ".tmp-link", "gc-stamp-link"] {
        std::os::unix::fs::symlink(&victim, dir.join(name)).unwrap();
    }
    fs::create_dir(dir.join("dir-0123456789ab")).unwrap();
    // Ours: a stale temporary file, a fresh one, an orphaned metadata file,
    // and an entry without metadata older than the default TTL.
    fs::write(dir.join(".tmp-1-dead-0"), b"left over").unwrap();
    set_mtime(&dir.join(".tmp-1-dead-0"), hours(2));
    fs::write(dir.join(".tmp-2-busy-0"), b"being written").unwrap();
    fs::write(dir.join("gone-0123456789ab.meta"), b"{}").unwrap();
    set_mtime(&dir.join("gone-0123456789ab.meta"), hours(2));
    fs::write(dir.join("old-0123456789ab"), b"ancient").unwrap();
    set_mtime(&dir.join("old-0123456789ab"), hours(24 * 8));

    let out = run(&store, &["gc"], b"");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.ends_with("removed 1 entry (7 bytes), 1 temporary file, 1 orphaned metadata file\n"), "{text}");

    for gone in [".tmp-1-dead-0", "gone-0123456789ab.meta", "old-0123456789ab"] {
        assert!(fs::symlink_metadata(dir.join(gone)).is_err(), "{gone} should be removed");
    }
    for kept in [
        "notes.txt",
        "README",
        "x-0123456789ab.bak",
        "UPPER-0123456789AB",
        "link-0123456789ab",
        "link-0123456789ab.meta",
        ".tmp-link",
        "gc-stamp-link",
        "dir-0123456789ab",
        ".tmp-2-busy-0",
        &live,
    ] {
        assert!(fs::symlink_metadata(dir.join(kept)).is_ok(), "{kept} must be left alone");
    }
    assert_eq!(fs::read(&victim).unwrap(), b"keep me");
}

#[test]
fn concurrent_writers_of_the_same_content_end_with_one_entry() {
    let store = util::Store::new();
    let content: Vec<u8> = (0..200_000u32).flat_map(|i| format!("row {i}\n").into_bytes()).collect();
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let dir = store.path().to_path_buf();
            let content = content.clone();
            std::thread::spawn(move || {
                let mut cmd = Command::new(util::bin());
                cmd.args(["--envelope", "always", "--label", "race"]).env("OUTBOX_DIR", dir);
                run_cmd(cmd, &content)
            })
        })
        .collect();
    let mut ids = Vec::new();
    for h in handles {
        let out = h.join().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let h = header(&out);
        assert!(h["spill_error"].is_null(), "{h}");
        ids.push(h["id"].as_str().unwrap().to_string());
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let (entries, metas, temps) = names(store.path());
    assert_eq!(entries, ids);
    assert_eq!(metas, vec![format!("{}.meta", ids[0])]);
    assert!(temps.is_empty(), "temporary files left: {temps:?}");
    assert!(fs::read(store.path().join(&ids[0])).unwrap() == content);
}

#[test]
fn gc_during_show_never_cuts_the_original_short() {
    use std::io::Read;
    let store = util::Store::new();
    let content: Vec<u8> = (0..400_000u32).flat_map(|i| format!("{i:08}\n").into_bytes()).collect();
    let old = store_input(&store, &["--label", "old"], &content);
    std::thread::sleep(Duration::from_millis(20));
    store_input(&store, &["--label", "new"], b"newer\n");

    let mut show = Command::new(util::bin())
        .args(["show", &old])
        .env("OUTBOX_DIR", store.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = show.stdout.take().unwrap();
    let mut got = vec![0u8; 64 * 1024];
    stdout.read_exact(&mut got).unwrap();
    // show is now blocked on the full pipe, mid-stream: evict its entry.
    let mut gc = Command::new(util::bin());
    gc.args(["gc"]).env("OUTBOX_DIR", store.path()).env("OUTBOX_MAX_STORE_BYTES", "1");
    let out = run_cmd(gc, b"");
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("removed {old}")));
    assert!(!store.path().join(&old).exists());
    stdout.read_to_end(&mut got).unwrap();
    assert!(show.wait().unwrap().success());
    assert!(got == content, "show printed {} of {} bytes", got.len(), content.len());
}

/// The metadata beside each original holds what the contract lists: id,
/// label, strategy, created time, the TTL in force when the entry was made,
/// bytes, chars, lines, complete, and in wrap mode the command and its exit
/// status.
#[test]
fn metadata_holds_what_the_contract_lists() {
    let store = util::Store::new();
    let before = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
    let mut cmd = Command::new(util::bin());
    cmd.args(["--label", "build", "--", "sh", "-c", "seq 1 30000; exit 4"])
        .env("OUTBOX_DIR", store.path())
        .env("OUTBOX_TTL_SECONDS", "3600");
    let out = run_cmd(cmd, b"");
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let h = header(&out);
    let id = h["id"].as_str().unwrap();
    let meta: serde_json::Value =
        serde_json::from_slice(&fs::read(store.path().join(format!("{id}.meta"))).unwrap()).unwrap();
    let after = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
    assert_eq!(meta["id"], id);
    assert_eq!(meta["label"], "build");
    assert_eq!(meta["strategy"], "text-envelope");
    let created = meta["created"].as_u64().expect("created");
    assert!((before..=after).contains(&created), "{created} not in {before}..={after}");
    assert_eq!(meta["ttl_seconds"], 3600);
    assert_eq!(meta["bytes"], h["bytes"]);
    assert_eq!(meta["chars"], h["chars"]);
    assert_eq!(meta["lines"], 30000);
    assert_eq!(meta["complete"], true);
    assert_eq!(meta["command"], "sh -c 'seq 1 30000; exit 4'");
    assert_eq!(meta["exit_status"], 4);
}

/// The hex digits of BLAKE3 of `data`, as ids and metadata hold them.
fn hex_of(data: &[u8]) -> String {
    blake3::hash(data).to_hex().to_string()
}

#[test]
fn show_refuses_an_entry_edited_after_it_was_stored() {
    let store = util::Store::new();
    let id = store_input(&store, &[], b"the real output\nline two\n");
    fs::write(store.path().join(&id), b"the fake output\nline two\n").unwrap();
    for args in [vec!["show", &id], vec!["show", &id, "--lines", "2"], vec!["show", &id, "--grep", "line"]] {
        let out = run(&store, &args, b"");
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: something was printed");
        assert!(stderr(&out).contains("was altered after it was stored"), "{}", stderr(&out));
    }
    // Without metadata, the digits in the id still catch it.
    fs::remove_file(store.path().join(format!("{id}.meta"))).unwrap();
    let out = run(&store, &["show", &id], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
}

#[test]
fn another_input_under_the_same_short_id_is_never_merged_or_served() {
    let store = util::Store::new();
    let input = b"the input\n";
    let hex = hex_of(input);
    let short = format!("stdin-{}", &hex[..12]);
    // A different input of the same size under the 12 digits, with
    // metadata that claims the real digest: size and metadata agree, only
    // the bytes differ.
    fs::write(store.path().join(&short), b"other text\n").unwrap();
    fs::set_permissions(store.path().join(&short), fs::Permissions::from_mode(0o600)).unwrap();
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
    let meta = serde_json::json!({"id": short, "label": "stdin", "strategy": "text-envelope", "created": now,
        "ttl_seconds": 3600, "bytes": 10, "chars": 10, "lines": 1, "complete": true, "digest": hex});
    fs::write(store.path().join(format!("{short}.meta")), meta.to_string()).unwrap();
    fs::set_permissions(store.path().join(format!("{short}.meta")), fs::Permissions::from_mode(0o600)).unwrap();

    let id = store_input(&store, &[], input);
    assert_eq!(id, format!("stdin-{}", &hex[..13]), "a longer id");
    let out = run(&store, &["show", &id], b"");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(out.stdout, input);
    // The planted entry is never shown as this input.
    let out = run(&store, &["show", &short], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    // A prefix both ids share is ambiguous and names both.
    let out = run(&store, &["show", &format!("stdin-{}", &hex[..8])], b"");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("ambiguous") && err.contains(&short) && err.contains(&id), "{err}");
    // A unique prefix or the full digest works.
    let other = store_input(&store, &["--label", "solo"], b"solo\n");
    for q in [&other[..other.len() - 6], &format!("solo-{}", hex_of(b"solo\n"))] {
        let out = run(&store, &["show", q], b"");
        assert!(out.status.success(), "{q}: {}", stderr(&out));
        assert_eq!(out.stdout, b"solo\n");
    }
}

#[test]
fn ls_json_and_messages_escape_bidi_and_control_characters() {
    let store = util::Store::new();
    let id = store_input(&store, &[], b"x\n");
    let evil = "rm -rf \u{202e}txt.exe\u{85}\u{2066}\u{200f}\u{9b}31m\u{1b}]0;title\u{7}";
    edit_meta(store.path(), &id, "command", evil.into());
    let out = run(&store, &["ls", "--json"], b"");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    for c in ['\u{202e}', '\u{85}', '\u{2066}', '\u{200f}', '\u{9b}', '\u{1b}', '\u{7}'] {
        assert!(!text.contains(c), "raw U+{:04X} in ls --json: {text}", c as u32);
    }
    assert!(text.contains("\\u202e") && text.contains("\\u0085"), "{text}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["command"], evil, "the value itself is unchanged");

    // A store path with controls in it is escaped in diagnostics.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("st\u{1b}[31more\u{202e}");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    for args in [&["ls"][..], &["show", "last"], &["gc"], &["--envelope", "always"]] {
        let mut cmd = Command::new(util::bin());
        cmd.args(args).env("OUTBOX_DIR", &dir);
        let out = run_cmd(cmd, b"x\n");
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains("chmod 700"), "{args:?}: {err}");
        assert!(!err.contains('\u{1b}') && !err.contains('\u{202e}'), "{args:?}: raw controls in {err:?}");
        assert!(err.contains("store\\u{202e}"), "{args:?}: {err}");
    }
}

#[test]
fn show_last_and_show_label_pick_the_newest_entry() {
    let store = util::Store::new();
    let a = store_input(&store, &["--label", "build"], b"first build\n");
    std::thread::sleep(Duration::from_millis(20));
    store_input(&store, &["--label", "build"], b"second build\n");
    std::thread::sleep(Duration::from_millis(20));
    store_input(&store, &["--label", "test"], b"the tests\n");
    let show = |q: &str| run(&store, &["show", q], b"");
    assert_eq!(show("last").stdout, b"the tests\n");
    assert_eq!(show("build").stdout, b"second build\n");
    assert_eq!(show("test").stdout, b"the tests\n");
    // An id (or a unique prefix of one) wins over a label.
    assert_eq!(show(&a).stdout, b"first build\n");
    assert_eq!(show(&a[..a.len() - 4]).stdout, b"first build\n");
    let out = show("nolabel");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("not an entry id"), "{}", stderr(&out));
    // An empty store has no last entry.
    let empty = util::Store::new();
    let out = run(&empty, &["show", "last"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
}

#[test]
fn rm_removes_entries_by_id_or_prefix_and_nothing_when_one_is_unknown() {
    let store = util::Store::new();
    let a = store_input(&store, &["--label", "a"], b"aaa\n");
    let b = store_input(&store, &["--label", "b"], b"bbb\n");
    let c = store_input(&store, &["--label", "c"], b"ccc\n");
    // One unknown id: an error, and nothing is removed.
    let out = run(&store, &["rm", &a, "c-0123456789ab"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("c-0123456789ab") && stderr(&out).contains("nothing was removed"),
        "{}",
        stderr(&out)
    );
    assert_eq!(names(store.path()).0.len(), 3);
    // Labels and `last` are not ids for rm.
    for q in ["a", "last"] {
        let out = run(&store, &["rm", q], b"");
        assert_eq!(out.status.code(), Some(1), "{q}");
    }
    let out = run(&store, &["rm", &a, &b[..b.len() - 6]], b"");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("removed {a}\nremoved {b}\n"));
    let (entries, metas, temps) = names(store.path());
    assert_eq!((entries, metas, temps.len()), (vec![c.clone()], vec![format!("{c}.meta")], 0));
    let out = run(&store, &["show", &a], b"");
    assert_eq!(out.status.code(), Some(1));
    // rm with no id is a usage error.
    assert_eq!(run(&store, &["rm"], b"").status.code(), Some(2));
}

#[test]
fn dir_works_before_and_after_every_store_subcommand() {
    let store = util::Store::new();
    let dir = store.path().to_str().unwrap().to_string();
    // OUTBOX_DIR points elsewhere: only --dir can find the entries.
    let decoy = util::Store::new();
    let mut cmd = Command::new(util::bin());
    cmd.args(["--envelope", "always", "--dir", &dir]).env("OUTBOX_DIR", decoy.path());
    let id = header(&run_cmd(cmd, b"kept\n"))["id"].as_str().unwrap().to_string();
    let cases: [&[&str]; 6] =
        [&["show", &id], &["show", "last"], &["ls"], &["ls", "--json"], &["gc", "--dry-run"], &["rm", &id]];
    for args in cases {
        for before in [true, false] {
            let mut all: Vec<&str> = Vec::new();
            if before {
                all.extend(["--dir", &dir]);
            }
            all.extend(args);
            if !before {
                all.extend(["--dir", &dir]);
            }
            if args[0] == "rm" && !before {
                // Put it back for the second order.
                let mut cmd = Command::new(util::bin());
                cmd.args(["--envelope", "always", "--dir", &dir]);
                run_cmd(cmd, b"kept\n");
            }
            let mut cmd = Command::new(util::bin());
            cmd.args(&all).env("OUTBOX_DIR", decoy.path());
            let out = run_cmd(cmd, b"");
            assert!(out.status.success(), "{all:?}: {}", stderr(&out));
            let text = String::from_utf8_lossy(&out.stdout);
            match args[0] {
                "show" => assert_eq!(out.stdout, b"kept\n", "{all:?}"),
                "ls" | "gc" if args.len() == 1 => assert!(text.contains(&id), "{all:?}: {text}"),
                "ls" => assert!(text.contains(&id), "{all:?}: {text}"),
                "rm" => assert_eq!(text, format!("removed {id}\n"), "{all:?}"),
                _ => {}
            }
        }
    }
    // The envelope's own options still do not go with a subcommand.
    let out = run(&store, &["--budget", "5000", "ls"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--budget"), "{}", stderr(&out));
}

#[test]
fn a_spill_stops_before_eating_into_the_free_space_reserve() {
    let store = util::Store::new();
    let line = [b'x'; 99].iter().chain(b"\n").copied().collect::<Vec<u8>>();
    let input: Vec<u8> = line.iter().copied().cycle().take(65 << 20).collect();
    let mut cmd = Command::new(util::bin());
    // A reserve larger than any disk: the first check (at 64 MiB) stops it.
    cmd.args(["--envelope", "always"]).env("OUTBOX_DIR", store.path()).env("OUTBOX_MIN_FREE_BYTES", "100000T");
    let out = run_cmd(cmd, &input);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let h = header(&out);
    assert!(h["full_output"].is_null(), "{h}");
    assert!(h["spill_error"].as_str().unwrap().contains("reserve"), "{h}");
    assert_eq!(h["bytes"], 65 << 20, "the input is still read and counted whole");
    let (entries, metas, temps) = names(store.path());
    assert!(entries.is_empty() && metas.is_empty() && temps.is_empty(), "{entries:?} {metas:?} {temps:?}");
    // Under the reserve's default a small spill goes through.
    let id = store_input(&store, &[], b"small\n");
    assert!(store.path().join(&id).exists());
}
