//! `outbox check` through the real binary: one line per problem or good
//! file, `STOP: N problem(s)` and exit 1 when anything is off.

use crate::pack::{outbox_in, stderr_lines};

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("check prints UTF-8")
}

#[test]
fn check_good_file_is_ok() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.md"), "# N\n## Goal\nship\n## Rollback\nrevert\n").unwrap();
    let o = outbox_in(dir.path(), &["check", "notes.md", "--require", "Goal", "--require", "## Rollback"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(stdout(&o), "OK notes.md (36 bytes)\n");
}

#[test]
fn check_empty_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("empty.md"), "").unwrap();
    let o = outbox_in(dir.path(), &["check", "empty.md"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "EMPTY notes file: empty.md\nSTOP: 1 problem(s)\n");
}

#[test]
fn check_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let o = outbox_in(dir.path(), &["check", "gone.md", "--require", "Goal"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "MISSING notes file: gone.md\nSTOP: 1 problem(s)\n");
}

#[test]
fn check_missing_heading_ignores_fenced_ones() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.md"), "## Goal\nship\n```md\n## Rollback\n```\n").unwrap();
    let o = outbox_in(
        dir.path(),
        &["check", "notes.md", "--require", "goal", "--require", "## Rollback", "--require", "Risks"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o),
        "MISSING section: notes.md -> Rollback\nMISSING section: notes.md -> Risks\nSTOP: 2 problem(s)\n"
    );
}

#[test]
fn check_mixed_files_prints_ok_only_for_good_ones() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.md"), "## Goal\n").unwrap();
    std::fs::write(dir.path().join("b.md"), "").unwrap();
    std::fs::create_dir(dir.path().join("d")).unwrap();
    let o = outbox_in(dir.path(), &["check", "a.md", "b.md", "c.md", "d"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o),
        "OK a.md (8 bytes)\nEMPTY notes file: b.md\nMISSING notes file: c.md\nMISSING notes file: d\nSTOP: 3 problem(s)\n"
    );
    assert!(stderr_lines(&o).iter().any(|l| l.starts_with("[outbox check] d: a directory")), "{o:?}");
}

#[test]
fn check_fifo_does_not_hang() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = std::ffi::CString::new(dir.path().join("pipe").to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo has no other preconditions.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let o = outbox_in(dir.path(), &["check", "pipe"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "MISSING notes file: pipe\nSTOP: 1 problem(s)\n");
}

#[test]
fn check_manifest_resolves_paths_against_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("notes");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("plan.md"), "## Goal\ng\n## Rollback\nr\n").unwrap();
    std::fs::write(sub.join("context.md"), "## Goal\ng\n").unwrap();
    std::fs::write(
        sub.join("manifest.toml"),
        "require = [\"Goal\"]\n\n[[file]]\npath = \"plan.md\"\nrequire = [\"## Rollback\"]\n\n\
         [[file]]\npath = \"context.md\"\nrequire = [\"Rollback\"]\n\n[[file]]\npath = \"gone.md\"\n",
    )
    .unwrap();
    let o = outbox_in(dir.path(), &["check", "--manifest", "notes/manifest.toml"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert_eq!(
        stdout(&o),
        "OK notes/plan.md (24 bytes)\nMISSING section: notes/context.md -> Rollback\n\
         MISSING notes file: notes/gone.md\nSTOP: 2 problem(s)\n"
    );

    std::fs::write(sub.join("manifest.toml"), "[[file]]\npath = \"plan.md\"\nrequire = [\"Goal\", \"Rollback\"]\n")
        .unwrap();
    let o = outbox_in(dir.path(), &["check", "--manifest", "notes/manifest.toml"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(stdout(&o), "OK notes/plan.md (24 bytes)\n");
}

#[test]
fn check_bad_or_missing_manifest_stops() {
    let dir = tempfile::tempdir().unwrap();
    let o = outbox_in(dir.path(), &["check", "--manifest", "m.toml"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "MISSING manifest: m.toml\nSTOP: 1 problem(s)\n");

    std::fs::write(dir.path().join("m.toml"), "[[file]]\npath = \"a.md\"\nrequires = [\"Goal\"]\n").unwrap();
    let o = outbox_in(dir.path(), &["check", "--manifest", "m.toml"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "INVALID manifest: m.toml\nSTOP: 1 problem(s)\n");
    assert!(String::from_utf8_lossy(&o.stderr).contains("requires"), "the bad key is named: {o:?}");
}

#[test]
fn check_without_files_or_manifest_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let o = outbox_in(dir.path(), &["check"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let o = outbox_in(dir.path(), &["check", "a.md", "--manifest", "m.toml"]);
    assert_eq!(o.status.code(), Some(2), "FILE and --manifest are two forms, not one: {o:?}");
}

#[test]
fn check_heading_only_inside_a_comment_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.md"), "## Goal\nship\n<!--\n## Rollback\nrevert (retired)\n-->\n").unwrap();
    let o = outbox_in(dir.path(), &["check", "notes.md", "--require", "Goal", "--require", "Rollback"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert_eq!(stdout(&o), "MISSING section: notes.md -> Rollback\nSTOP: 1 problem(s)\n");
}
