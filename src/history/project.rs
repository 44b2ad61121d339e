//! The project a run belongs to and its git revision, read from the files
//! under `.git` (no `git` process: a run must stay cheap). Anything
//! unusual (a packed ref missing, a detached worktree layout we do not
//! know) gives no revision rather than a wrong one.
//!
//! The working directory's `.git` is not trusted: an unpacked tarball can
//! make `HEAD` a FIFO, a device or `ref: ../../../../dev/zero`, and this is
//! read before the output is saved. So every file is opened without
//! blocking, accepted only as a small regular file ([`crate::text::file`]),
//! and a ref is resolved one directory at a time beneath the git directory,
//! never through a symlink and never by a name with `..`. The two
//! indirections git itself writes (a `.git` file's `gitdir:` and a linked
//! worktree's `commondir`) are followed, but what is read there obeys the
//! same rules. On anything odd: no revision, and nothing said (the
//! revision is a nicety of the history).

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use crate::text::file::{self, Untrusted};

/// HEAD, a loose ref, a `.git` file, `commondir`: a few dozen bytes.
const SMALL: Untrusted = Untrusted { cap: 4096, follow: false };
/// `packed-refs` is read line by line up to this size.
const PACKED_MAX: u64 = 32 << 20;
/// A line of `packed-refs` longer than this is not a ref.
const PACKED_LINE_MAX: u64 = 4096;

/// The enclosing git work tree of `dir`, else `dir` itself.
pub fn root(dir: &Path) -> PathBuf {
    let mut d = Some(dir);
    while let Some(p) = d {
        // lstat: a `.git` symlink marks the root too (and gives no
        // revision), and nothing is followed or opened here.
        if p.join(".git").symlink_metadata().is_ok() {
            return p.to_path_buf();
        }
        d = p.parent();
    }
    dir.to_path_buf()
}

/// The commit checked out in the work tree at `root`, when it can be read.
pub fn revision(root: &Path) -> Option<String> {
    let git = git_dir(root)?;
    let head = read_small(&git, "HEAD")?;
    let head = head.trim();
    let Some(name) = head.strip_prefix("ref: ") else {
        return is_hash(head).then(|| head.to_string());
    };
    let name = name.trim();
    if !is_ref_name(name) {
        return None;
    }
    // A linked worktree keeps its refs in the common directory.
    let common = match read_small(&git, "commondir") {
        Some(c) => open_dir_at(git.as_fd(), c.trim().as_ref())?,
        None => git.try_clone().ok()?,
    };
    for base in [&git, &common] {
        if let Some(h) = read_beneath(base, name) {
            let h = h.trim();
            if is_hash(h) {
                return Some(h.to_string());
            }
        }
    }
    packed_ref(&common, name)
}

/// The git directory: `.git` itself (never through a symlink), or where a
/// `.git` file's `gitdir:` line points.
fn git_dir(root: &Path) -> Option<OwnedFd> {
    let root_fd = open_dir_at(file::cwd(), root.as_os_str())?;
    if let Ok(fd) = file::open_dir(root_fd.as_fd(), Path::new(".git")) {
        return Some(fd);
    }
    let text = file::read_to_string(Some(root_fd.as_fd()), Path::new(".git"), SMALL).ok()?;
    let target = text.trim().strip_prefix("gitdir: ")?.trim();
    open_dir_at(root_fd.as_fd(), target.as_ref())
}

/// Opens a directory named by a path git wrote (absolute, or relative to
/// `at`); a FIFO or a file there is not a directory, so this never blocks.
fn open_dir_at(at: BorrowedFd<'_>, path: &OsStr) -> Option<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::DIRECTORY;
    rustix::fs::openat(at, path, flags, Mode::empty()).ok()
}

/// A small regular file directly in `dir`.
fn read_small(dir: &OwnedFd, name: &str) -> Option<String> {
    file::read_to_string(Some(dir.as_fd()), Path::new(name), SMALL).ok()
}

/// `refs/heads/x` beneath `base`, one directory at a time, never through
/// a symlink.
fn read_beneath(base: &OwnedFd, name: &str) -> Option<String> {
    let (dirs, last) = name.rsplit_once('/')?;
    let mut at = base.try_clone().ok()?;
    for part in dirs.split('/') {
        at = file::open_dir(at.as_fd(), Path::new(part)).ok()?;
    }
    read_small(&at, last)
}

/// The ref's hash in `packed-refs`, read line by line (a line over the cap
/// ends the search; so does the file's size cap).
fn packed_ref(common: &OwnedFd, name: &str) -> Option<String> {
    let how = Untrusted { cap: PACKED_MAX, follow: false };
    let (f, _) = file::open(Some(common.as_fd()), Path::new("packed-refs"), how).ok()?;
    let mut r = BufReader::new(f.take(PACKED_MAX));
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut r).take(PACKED_LINE_MAX).read_until(b'\n', &mut line).ok()?;
        if n == 0 || (n as u64 == PACKED_LINE_MAX && line.last() != Some(&b'\n')) {
            return None;
        }
        let Ok(l) = std::str::from_utf8(&line) else { continue };
        let Some((hash, r)) = l.trim_end().split_once(' ') else { continue };
        if r == name && is_hash(hash) {
            return Some(hash.to_string());
        }
    }
}

/// A ref name as git allows it under `refs/`: components that are not
/// empty, do not start with a dot (so no `.` or `..`), and hold no control
/// or special character.
fn is_ref_name(name: &str) -> bool {
    name.starts_with("refs/")
        && name.len() <= 1024
        && name.split('/').all(|c| {
            !c.is_empty()
                && !c.starts_with('.')
                && !c.ends_with(".lock")
                && c.bytes().all(|b| b > b' ' && b != 0x7f && !b"~^:?*[\\".contains(&b))
        })
}

fn is_hash(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::time::Duration;

    #[test]
    fn reads_a_branch_a_packed_ref_and_a_detached_head() {
        let d = tempfile::tempdir().unwrap();
        let git = d.path().join(".git");
        fs::create_dir_all(git.join("refs/heads")).unwrap();
        let sub = d.path().join("src/deep");
        fs::create_dir_all(&sub).unwrap();
        assert_eq!(root(&sub), d.path());
        let h1 = "a".repeat(40);
        fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        fs::write(git.join("refs/heads/main"), format!("{h1}\n")).unwrap();
        assert_eq!(revision(d.path()), Some(h1.clone()));
        fs::remove_file(git.join("refs/heads/main")).unwrap();
        let h2 = "b".repeat(40);
        fs::write(git.join("packed-refs"), format!("# pack-refs\n{h2} refs/heads/main\n")).unwrap();
        assert_eq!(revision(d.path()), Some(h2));
        fs::write(git.join("HEAD"), format!("{h1}\n")).unwrap();
        assert_eq!(revision(d.path()), Some(h1));
        fs::write(git.join("HEAD"), "ref: refs/heads/none\n").unwrap();
        assert_eq!(revision(d.path()), None);
    }

    #[test]
    fn a_linked_worktree_reads_its_head_and_the_common_refs() {
        let d = tempfile::tempdir().unwrap();
        let main_git = d.path().join("main/.git");
        let wt_git = main_git.join("worktrees/wt");
        fs::create_dir_all(&wt_git).unwrap();
        fs::create_dir_all(main_git.join("refs/heads")).unwrap();
        let h = "c".repeat(40);
        fs::write(main_git.join("refs/heads/topic"), format!("{h}\n")).unwrap();
        fs::write(wt_git.join("HEAD"), "ref: refs/heads/topic\n").unwrap();
        fs::write(wt_git.join("commondir"), "../..\n").unwrap();
        let wt = d.path().join("wt");
        fs::create_dir_all(&wt).unwrap();
        fs::write(wt.join(".git"), format!("gitdir: {}\n", wt_git.display())).unwrap();
        assert_eq!(revision(&wt), Some(h));
    }

    /// `revision` on a thread, failing instead of hanging.
    fn revision_within_deadline(root: &Path) -> Option<String> {
        let root = root.to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(revision(&root));
        });
        rx.recv_timeout(Duration::from_secs(10)).expect("revision blocked past the deadline")
    }

    fn fifo(p: &Path) {
        rustix::fs::mknodat(rustix::fs::CWD, p, rustix::fs::FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
    }

    #[test]
    fn a_hostile_git_directory_gives_no_revision_and_never_blocks() {
        // HEAD pointing out of the repository at /dev/zero.
        let d = tempfile::tempdir().unwrap();
        let git = d.path().join(".git");
        fs::create_dir_all(git.join("refs/heads")).unwrap();
        fs::write(git.join("HEAD"), "ref: ../../../../../../../../dev/zero\n").unwrap();
        assert_eq!(revision_within_deadline(d.path()), None);
        fs::write(git.join("HEAD"), "ref: refs/../../../../../../../../dev/zero\n").unwrap();
        assert_eq!(revision_within_deadline(d.path()), None);
        // A ref that is a symlink to /dev/zero, or a FIFO.
        fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::os::unix::fs::symlink("/dev/zero", git.join("refs/heads/main")).unwrap();
        assert_eq!(revision_within_deadline(d.path()), None);
        fs::remove_file(git.join("refs/heads/main")).unwrap();
        fifo(&git.join("refs/heads/main"));
        assert_eq!(revision_within_deadline(d.path()), None);
        // A directory on the way that is a symlink out of the repository.
        fs::remove_dir_all(git.join("refs")).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        fs::create_dir_all(elsewhere.path().join("heads")).unwrap();
        fs::write(elsewhere.path().join("heads/main"), "d".repeat(40)).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), git.join("refs")).unwrap();
        assert_eq!(revision_within_deadline(d.path()), None);
        // HEAD itself a FIFO, a huge file, a symlink to /dev/zero.
        fs::remove_file(git.join("HEAD")).unwrap();
        fifo(&git.join("HEAD"));
        assert_eq!(revision_within_deadline(d.path()), None);
        fs::remove_file(git.join("HEAD")).unwrap();
        fs::write(git.join("HEAD"), "a".repeat(1 << 20)).unwrap();
        assert_eq!(revision_within_deadline(d.path()), None);
        fs::remove_file(git.join("HEAD")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", git.join("HEAD")).unwrap();
        assert_eq!(revision_within_deadline(d.path()), None);
        // `.git` a FIFO, a symlink to /dev/zero, a file naming a FIFO.
        fs::remove_dir_all(&git).unwrap();
        fifo(&git);
        assert_eq!(root(d.path()), d.path());
        assert_eq!(revision_within_deadline(d.path()), None);
        fs::remove_file(&git).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &git).unwrap();
        assert_eq!(revision_within_deadline(d.path()), None);
        fs::remove_file(&git).unwrap();
        let f = d.path().join("pipe");
        fifo(&f);
        fs::write(&git, format!("gitdir: {}\n", f.display())).unwrap();
        assert_eq!(revision_within_deadline(d.path()), None);
    }

    #[test]
    fn ref_names_stay_under_refs() {
        assert!(is_ref_name("refs/heads/main"));
        assert!(is_ref_name("refs/heads/feature/x-1"));
        for bad in ["../x", "refs/../x", "refs/heads/.x", "/etc/passwd", "refs//x", "refs/x\u{1b}", "HEAD"] {
            assert!(!is_ref_name(bad), "{bad}");
        }
    }
}
