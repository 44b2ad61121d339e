//! The project a run belongs to and its git revision, read from the files
//! under `.git` (no `git` process: a run must stay cheap). Anything
//! unusual (a packed ref missing, a detached worktree layout we do not
//! know) gives no revision rather than a wrong one.

use std::fs;
use std::path::{Path, PathBuf};

/// The enclosing git work tree of `dir`, else `dir` itself.
pub fn root(dir: &Path) -> PathBuf {
    let mut d = Some(dir);
    while let Some(p) = d {
        if p.join(".git").exists() {
            return p.to_path_buf();
        }
        d = p.parent();
    }
    dir.to_path_buf()
}

/// The commit checked out in the work tree at `root`, when it can be read.
pub fn revision(root: &Path) -> Option<String> {
    let git = git_dir(root)?;
    let head = fs::read_to_string(git.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(name) = head.strip_prefix("ref: ") else {
        return is_hash(head).then(|| head.to_string());
    };
    // A linked worktree keeps its refs in the common directory.
    let common =
        fs::read_to_string(git.join("commondir")).ok().map(|c| git.join(c.trim())).unwrap_or_else(|| git.clone());
    for base in [&git, &common] {
        if let Ok(h) = fs::read_to_string(base.join(name)) {
            let h = h.trim();
            if is_hash(h) {
                return Some(h.to_string());
            }
        }
    }
    let packed = fs::read_to_string(common.join("packed-refs")).ok()?;
    packed.lines().find_map(|l| {
        let (hash, r) = l.split_once(' ')?;
        (r == name && is_hash(hash)).then(|| hash.to_string())
    })
}

fn git_dir(root: &Path) -> Option<PathBuf> {
    let dot = root.join(".git");
    if dot.is_dir() {
        return Some(dot);
    }
    let text = fs::read_to_string(&dot).ok()?;
    let p = PathBuf::from(text.trim().strip_prefix("gitdir: ")?);
    Some(if p.is_absolute() { p } else { root.join(p) })
}

fn is_hash(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
