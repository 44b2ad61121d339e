//! Unit tests of the store itself: names, commit, reuse, and the directory
//! descriptor.

use super::testutil::{meta_for, names_in, put, store};
use super::*;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

#[test]
fn labels_cannot_escape_the_store() {
    assert_eq!(sanitize_label("../../x", "stdin"), "_.._x");
    assert_eq!(sanitize_label("/etc/passwd", "stdin"), "_etc_passwd");
    assert_eq!(sanitize_label("", "stdin"), "stdin");
    assert_eq!(sanitize_label("...", "stdin"), "stdin");
    assert_eq!(sanitize_label("a\u{7}b\nc", "stdin"), "a_b_c");
    assert_eq!(sanitize_label(&"x".repeat(500), "stdin").len(), 64);
    assert!(is_entry_name(&entry_id(&sanitize_label("../../x", "s"), &[7; 32])));
    assert!(!is_entry_name(".tmp-1-2-3"));
    assert!(!is_entry_name("foo-0123456789ab.meta"));
    assert!(!is_entry_name(GC_STAMP));
    assert!(!is_entry_name("../x-0123456789ab"));
    assert!(!is_entry_name("a/b-0123456789ab"));
}

#[test]
fn concurrent_commits_of_the_same_content_leave_one_entry() {
    let (_tmp, store) = store();
    let now = now_secs();
    let ids: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8).map(|_| s.spawn(|| put(&store, "race", &[7u8; 100_000], now, 60))).collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(ids.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(names_in(&store), vec![ids[0].clone(), format!("{}{META_SUFFIX}", ids[0])]);
    assert_eq!(fs::read(store.data_path(&ids[0])).unwrap(), vec![7u8; 100_000]);
}

/// The hex digits of `data`'s digest.
fn hex_of(data: &[u8]) -> String {
    digest_hex(blake3::hash(data).as_bytes())
}

#[test]
fn a_planted_name_is_never_followed_reused_or_replaced() {
    let (tmp, store) = store();
    let outside = tmp.path().join("outside");
    fs::write(&outside, b"untouched").unwrap();
    let hex = hex_of(b"data");
    std::os::unix::fs::symlink(&outside, store.data_path(&format!("x-{}", &hex[..12]))).unwrap();
    fs::create_dir(store.data_path(&format!("x-{}", &hex[..13]))).unwrap();
    let id = put(&store, "x", b"data", now_secs(), 60);
    assert_eq!(id, format!("x-{}", &hex[..14]), "both taken names are skipped");
    assert_eq!(fs::read(&outside).unwrap(), b"untouched");
    assert!(fs::symlink_metadata(store.data_path(&format!("x-{}", &hex[..12]))).unwrap().is_symlink());
    assert_eq!(fs::read(store.data_path(&id)).unwrap(), b"data");
    assert_eq!(store.read_meta(&id).unwrap().id, id);

    // A failed commit leaves no temporary file behind.
    let mut t = store.create_temp().unwrap();
    t.file.write_all(b"other").unwrap();
    let mut meta = Meta { label: "../bad".into(), ..store.read_meta(&id).unwrap() };
    assert!(store.commit(&t.path, &mut meta).is_err());
    assert!(names_in(&store).iter().all(|n| !n.starts_with(TEMP_PREFIX)), "{:?}", names_in(&store));
}

#[test]
fn a_48_bit_collision_keeps_both_inputs_apart() {
    let (_tmp, store) = store();
    let hex = hex_of(b"real content");
    // Another input under the same 12 digits, the same size, and
    // metadata that even claims the same digest: only a re-hash tells.
    let short = format!("x-{}", &hex[..12]);
    fs::write(store.data_path(&short), b"fake content").unwrap();
    fs::set_permissions(store.data_path(&short), fs::Permissions::from_mode(0o600)).unwrap();
    let now = now_secs();
    // Metadata of another input ("fake content", 12 bytes) claiming the
    // real input's digest.
    let planted = Meta { id: short.clone(), digest: hex.clone(), ..meta_for("x", b"fake content", now, 60) };
    store.write_meta(&planted).unwrap();
    let id = put(&store, "x", b"real content", now, 60);
    assert_eq!(id, format!("x-{}", &hex[..13]));
    assert_eq!(fs::read(store.data_path(&id)).unwrap(), b"real content");
    assert_eq!(fs::read(store.data_path(&short)).unwrap(), b"fake content", "the other entry is left alone");
    // Stored again: the verified longer entry is reused.
    assert_eq!(put(&store, "x", b"real content", now, 60), id);
}

#[test]
fn an_edited_entry_is_not_reused_and_a_reused_one_is_private_again() {
    let (_tmp, store) = store();
    let now = now_secs();
    let id = put(&store, "e", b"original bytes", now, 60);
    fs::set_permissions(store.data_path(&id), fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(put(&store, "e", b"original bytes", now, 60), id);
    assert_eq!(fs::metadata(store.data_path(&id)).unwrap().mode() & 0o777, 0o600);

    fs::write(store.data_path(&id), b"edited! bytes!").unwrap();
    let again = put(&store, "e", b"original bytes", now, 60);
    assert_ne!(again, id);
    assert!(again.starts_with(&id));
    assert_eq!(fs::read(store.data_path(&again)).unwrap(), b"original bytes");
}

#[test]
fn a_store_swapped_for_a_symlink_mid_run_keeps_every_write_in_the_real_directory() {
    let (tmp, store) = store();
    let mut t = store.create_temp().unwrap();
    t.file.write_all(b"secret\n").unwrap();
    drop(t.file);
    // The store's path now leads somewhere else.
    let moved = tmp.path().join("moved");
    let elsewhere = tmp.path().join("elsewhere");
    fs::rename(store.dir(), &moved).unwrap();
    fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, store.dir()).unwrap();

    let mut meta = Meta { id: String::new(), ..meta_for("s", b"secret\n", now_secs(), 60) };
    let entry = store.commit(&t.path, &mut meta).expect("commit in the directory opened");
    assert_eq!(fs::read(moved.join(&entry.id)).unwrap(), b"secret\n");
    assert!(moved.join(format!("{}{META_SUFFIX}", entry.id)).exists());
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0, "something was written through the link");
    maybe_collect(&store, "");
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0, "gc wrote through the link");
}

#[test]
fn a_symlinked_or_open_store_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    fs::create_dir(&real).unwrap();
    fs::set_permissions(&real, fs::Permissions::from_mode(0o700)).unwrap();
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let e = Store::open(&link).unwrap_err().to_string();
    assert!(e.contains("symbolic link"), "{e}");
    fs::set_permissions(&real, fs::Permissions::from_mode(0o755)).unwrap();
    let e = Store::open(&real).unwrap_err().to_string();
    assert!(e.contains("chmod 700"), "{e}");
}

#[test]
fn a_store_from_the_environment_has_a_cap_unless_it_is_off() {
    let tmp = tempfile::tempdir().unwrap();
    let env = StoreEnv { dir: Ok(tmp.path().join("s")), ..StoreEnv::default() };
    assert_eq!(Store::open_env(&env).unwrap().max_bytes(), Some(DEFAULT_MAX_STORE_BYTES));
    let off = StoreEnv { max_bytes: Ok(None), ..env.clone() };
    assert_eq!(Store::open_env(&off).unwrap().max_bytes(), None);
    let bad = StoreEnv { max_bytes: Err("bad".into()), ..env };
    assert_eq!(Store::open_env(&bad).unwrap().max_bytes(), Some(DEFAULT_MAX_STORE_BYTES));
}

#[test]
fn sizes_and_ages_read_well() {
    assert_eq!(format_size(0), "0 B");
    assert_eq!(format_size(1023), "1023 B");
    assert_eq!(format_size(1536), "1.5 KiB");
    assert_eq!(format_size(5 << 30), "5.0 GiB");
    assert_eq!(format_age(59), "59s");
    assert_eq!(format_age(3600), "1h");
    assert_eq!(format_age(8 * 86_400), "8d");
}
