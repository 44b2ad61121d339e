//! `outbox pack` and `outbox check` take memory about the notes file's
//! size, not tens of times it: a file of many tiny sections once peaked at
//! 42 times its size (owned titles, several per-section lists at once).
//! The bound asserted is the one the packer is built to: the file (read
//! whole), at most 24 bytes a section, and 16 MiB for the rest.

#![cfg(target_os = "linux")]

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::util;

/// Runs `outbox ARGS` and returns its exit status and peak RSS in bytes.
fn peak_rss(args: &[&str], dir: &Path) -> (i32, u64) {
    let child = Command::new(util::bin())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn outbox");
    let (code, kib) = util::peak_rss_kib(child);
    (code, kib << 10)
}

#[test]
fn pack_and_check_of_many_tiny_sections_stay_near_the_file_size() {
    let dir = tempfile::tempdir().unwrap();
    let sections = 500_000u64;
    let text = "## x\n".repeat(sections as usize);
    fs::write(dir.path().join("n.md"), &text).unwrap();
    let bound = text.len() as u64 + 24 * sections + (16 << 20);
    for args in [
        &["pack", "n.md"][..],
        &["pack", "n.md", "--budget", "1G"],
        &["pack", "n.md", "--budget", "1M", "--unit", "chars"],
        &["check", "n.md", "--require", "x", "--require", "y"],
    ] {
        let (code, peak) = peak_rss(args, dir.path());
        assert!(code == 0 || args[0] == "check", "outbox {args:?} exited {code}");
        assert!(peak <= bound, "outbox {args:?}: peak RSS {peak} bytes, bound {bound} ({} bytes of notes)", text.len());
    }
}
