//! `outbox pack` through the real binary: budgets, priorities, drop lines,
//! files that are not notes (missing, directory, FIFO, device), CRLF and
//! character budgets.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::util;

/// Runs `outbox ARGS` in `dir` with no stdin, failing the test instead of
/// hanging when outbox blocks (on a FIFO, a device).
pub(crate) fn outbox_in(dir: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(util::bin())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn outbox");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait outbox") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("outbox {args:?} hung for 30 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output { status, stdout: t_out.join().unwrap(), stderr: t_err.join().unwrap() }
}

pub(crate) fn stderr_lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr).lines().map(str::to_string).collect()
}

/// The stderr lines that start with `[outbox pack] FILE: ` and carry the
/// drop report.
fn drop_line(o: &Output, file: &str) -> String {
    let prefix = format!("[outbox pack] {file}: ");
    let hits: Vec<String> =
        stderr_lines(o).into_iter().filter(|l| l.starts_with(&prefix) && l.contains(" sections")).collect();
    assert_eq!(hits.len(), 1, "one drop line for {file} expected in {:?}", stderr_lines(o));
    hits[0].clone()
}

/// Parses `[outbox pack] FILE: USED/BUDGET UNIT, dropped N sections[: A, B]`.
fn parse_drop_line(line: &str, file: &str) -> (usize, usize, String, Vec<String>) {
    let rest = line.strip_prefix(&format!("[outbox pack] {file}: ")).expect("prefix");
    let (used, rest) = rest.split_once('/').expect("USED/");
    let (budget, rest) = rest.split_once(' ').expect("BUDGET ");
    let (unit, rest) = rest.split_once(", dropped ").expect("UNIT, dropped");
    let (n, rest) = rest.split_once(" sections").expect("N sections");
    let names: Vec<String> = match rest.strip_prefix(": ") {
        Some(list) => list.split(", ").map(str::to_string).collect(),
        None => {
            assert_eq!(rest, "", "nothing after `sections` when none dropped: {line}");
            Vec::new()
        }
    };
    assert_eq!(n.parse::<usize>().unwrap(), names.len(), "count matches names: {line}");
    (used.parse().unwrap(), budget.parse().unwrap(), unit.to_string(), names)
}

fn filler(tag: &str, n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&format!("{tag} line {i}: the staging cluster mirrors production within a day.\n"));
    }
    s
}

/// The notes of the acceptance check, as (title, bytes) pieces in file
/// order; the preamble's title is empty.
fn acceptance_notes() -> Vec<(String, String)> {
    let mut v = vec![(String::new(), "# Deploy notes\nRead this before touching production.\n\n".to_string())];
    v.push((
        "Rules".into(),
        "<!-- notes-priority: pinned -->\n## Rules\nNever deploy on Fridays.\nAlways page the on-call first.\n\n"
            .into(),
    ));
    for i in 1..=12 {
        let mut body = format!("## Background {i}\n{}", filler(&format!("bg{i}"), 4));
        if i == 1 {
            body.push_str("```sh\n## not a heading: inside a fence\nkubectl get pods\n```\n");
        }
        body.push('\n');
        v.push((format!("Background {i}"), body));
    }
    // The newer update comes first in the file: its date, not its place,
    // must make it win.
    v.push((
        "Update 2024-05-20".into(),
        format!("<!-- notes-priority: fresh -->\n## Update 2024-05-20\n{}\n", filler("new", 3)),
    ));
    v.push((
        "Update 2024-03-01".into(),
        format!("<!-- notes-priority: fresh -->\n## Update 2024-03-01\n{}\n", filler("old", 12)),
    ));
    v.push(("Rollback".into(), "## Rollback\n1. helm rollback api\n2. tell #ops\n".into()));
    v
}

#[test]
fn pack_acceptance_notes_into_a_budget_that_forces_drops() {
    let dir = tempfile::tempdir().unwrap();
    let pieces = acceptance_notes();
    let doc: String = pieces.iter().map(|p| p.1.as_str()).collect();
    std::fs::write(dir.path().join("notes.md"), &doc).unwrap();
    let size = |t: &str| pieces.iter().find(|p| p.0 == t).unwrap().1.len();
    // Room for what must stay (preamble, pinned, --keep), the newest
    // update, and the first two background sections; not for the older
    // (longer) update nor a third background section.
    let budget = size("")
        + size("Rules")
        + size("Rollback")
        + size("Update 2024-05-20")
        + size("Background 1")
        + size("Background 2")
        + 10;
    assert!(size("Update 2024-03-01") > size("Background 1") + size("Background 2") + 10);

    let o = outbox_in(dir.path(), &["pack", "--budget", &budget.to_string(), "--keep", "rollback", "notes.md"]);
    assert!(o.status.success(), "{o:?}");
    let out = String::from_utf8(o.stdout.clone()).unwrap();
    assert!(out.len() <= budget, "{} bytes over a budget of {budget}", out.len());

    let kept = ["", "Rules", "Background 1", "Background 2", "Update 2024-05-20", "Rollback"];
    let expected: String = pieces.iter().filter(|p| kept.contains(&p.0.as_str())).map(|p| p.1.as_str()).collect();
    assert_eq!(out, expected, "preamble + kept sections, whole, in file order");
    assert!(out.starts_with(&pieces[0].1), "preamble first and whole");
    assert!(out.contains("## not a heading: inside a fence\n"), "the fenced line stays inside its section");

    // File order: each kept section appears after the one before it.
    let mut at = 0;
    for p in pieces.iter().filter(|p| kept.contains(&p.0.as_str())) {
        let pos = out[at..].find(&p.1).map(|i| i + at).expect("whole section in output");
        assert!(pos >= at);
        at = pos + p.1.len();
    }

    let line = drop_line(&o, "notes.md");
    let (used, b, unit, names) = parse_drop_line(&line, "notes.md");
    assert_eq!((used, b, unit.as_str()), (out.len(), budget, "bytes"));
    let dropped: Vec<String> = pieces.iter().filter(|p| !kept.contains(&p.0.as_str())).map(|p| p.0.clone()).collect();
    assert_eq!(names, dropped, "{line}");
    assert_eq!(names.len(), 11);
    // Every section is either whole in the output or named as dropped.
    for (title, body) in &pieces[1..] {
        assert!(out.contains(body.as_str()) != names.contains(title), "{title}: kept xor dropped");
    }
    assert!(!line.contains("not a heading"), "a fenced `## ` line is not a section: {line}");
}

#[test]
fn pack_nothing_dropped_still_prints_the_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("n.md"), "intro\n## A\na\n## B\nb\n").unwrap();
    let o = outbox_in(dir.path(), &["pack", "n.md"]);
    assert!(o.status.success());
    assert_eq!(o.stdout, b"intro\n## A\na\n## B\nb\n");
    assert_eq!(drop_line(&o, "n.md"), "[outbox pack] n.md: 20/20000 bytes, dropped 0 sections");
}

#[test]
fn pack_missing_file_among_good_ones() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.md"), "## A\nalpha\n").unwrap();
    std::fs::write(dir.path().join("b.md"), "## B\nbeta").unwrap();
    let o = outbox_in(dir.path(), &["pack", "a.md", "missing.md", "b.md"]);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(String::from_utf8(o.stdout.clone()).unwrap(), "==> a.md <==\n## A\nalpha\n\n==> b.md <==\n## B\nbeta\n");
    let err = stderr_lines(&o);
    assert!(err.iter().any(|l| l.starts_with("[outbox pack] missing.md: skipped: no such file")), "{err:?}");
    assert_eq!(drop_line(&o, "a.md"), "[outbox pack] a.md: 11/20000 bytes, dropped 0 sections");
    assert_eq!(drop_line(&o, "b.md"), "[outbox pack] b.md: 9/20000 bytes, dropped 0 sections");

    let strict = outbox_in(dir.path(), &["pack", "--strict", "a.md", "missing.md", "b.md"]);
    assert_eq!(strict.status.code(), Some(1));
    assert_eq!(strict.stdout, o.stdout, "--strict changes the status, not the output");
}

#[test]
fn pack_pinned_section_larger_than_budget_is_kept_whole() {
    let dir = tempfile::tempdir().unwrap();
    let pinned = format!("<!-- notes-priority: pinned -->\n## Rules\n{}", filler("rule", 10));
    let doc = format!("pre\n{pinned}## Other\nsmall\n");
    std::fs::write(dir.path().join("n.md"), &doc).unwrap();
    let o = outbox_in(dir.path(), &["pack", "--budget", "100", "n.md"]);
    assert!(o.status.success());
    assert_eq!(String::from_utf8(o.stdout.clone()).unwrap(), format!("pre\n{pinned}"));
    let used = 4 + pinned.len();
    assert_eq!(drop_line(&o, "n.md"), format!("[outbox pack] n.md: {used}/100 bytes, dropped 1 sections: Other"));
    let err = stderr_lines(&o);
    assert!(
        err.iter().any(|l| l.starts_with(&format!("[outbox pack] n.md: over budget by {} bytes", used - 100))),
        "{err:?}"
    );
}

#[test]
fn pack_directory_fifo_and_device_are_skipped_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("good.md"), "## Good\nyes\n").unwrap();
    let fifo = std::ffi::CString::new(dir.path().join("pipe").to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo has no other preconditions.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    std::fs::write(dir.path().join("empty.md"), "").unwrap();

    let o = outbox_in(dir.path(), &["pack", "sub", "pipe", "/dev/zero", "empty.md", "good.md"]);
    assert!(o.status.success(), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stdout).ends_with("==> good.md <==\n## Good\nyes\n"), "{o:?}");
    let err = stderr_lines(&o);
    for (file, why) in
        [("sub", "a directory"), ("pipe", "a FIFO"), ("/dev/zero", "a character device"), ("empty.md", "empty")]
    {
        assert!(
            err.iter().any(|l| l.starts_with(&format!("[outbox pack] {file}: skipped: ")) && l.contains(why)),
            "{file}: {err:?}"
        );
    }
    assert_eq!(outbox_in(dir.path(), &["pack", "--strict", "pipe", "good.md"]).status.code(), Some(1));
}

#[test]
fn pack_crlf_file_keeps_its_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let doc = "intro\r\n<!-- notes-priority: pinned -->\r\n## Keep\r\nk\r\n## Long\r\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r\n```\r\n## fenced\r\n```\r\n## Short\r\ns\r\n";
    std::fs::write(dir.path().join("crlf.md"), doc).unwrap();
    let o = outbox_in(dir.path(), &["pack", "--budget", "70", "crlf.md"]);
    assert!(o.status.success());
    let expected = "intro\r\n<!-- notes-priority: pinned -->\r\n## Keep\r\nk\r\n## Short\r\ns\r\n";
    assert_eq!(String::from_utf8(o.stdout.clone()).unwrap(), expected);
    assert_eq!(
        drop_line(&o, "crlf.md"),
        format!("[outbox pack] crlf.md: {}/70 bytes, dropped 1 sections: Long", expected.len())
    );
}

#[test]
fn pack_unit_chars_counts_japanese_characters() {
    let dir = tempfile::tempdir().unwrap();
    // Preamble 5 chars; sections 12 and 9 chars, three bytes a kanji.
    let doc = "メモです\n## 一\n日本語の本文\n## 二\n日本語\n";
    std::fs::write(dir.path().join("ja.md"), doc).unwrap();
    let o = outbox_in(dir.path(), &["pack", "--unit", "chars", "--budget", "14", "ja.md"]);
    assert!(o.status.success());
    let out = String::from_utf8(o.stdout.clone()).unwrap();
    assert_eq!(out, "メモです\n## 二\n日本語\n");
    assert_eq!(util::chars(&o.stdout), 14);
    assert!(o.stdout.len() > 14, "the budget counted characters, not bytes");
    assert_eq!(drop_line(&o, "ja.md"), "[outbox pack] ja.md: 14/14 chars, dropped 1 sections: 一");

    // In bytes the same budget holds only the preamble (13 bytes).
    let o = outbox_in(dir.path(), &["pack", "--budget", "14", "ja.md"]);
    assert_eq!(o.stdout, "メモです\n".as_bytes());
    assert_eq!(drop_line(&o, "ja.md"), "[outbox pack] ja.md: 13/14 bytes, dropped 2 sections: 一, 二");
}

#[test]
fn pack_file_without_headings_is_one_unit() {
    let dir = tempfile::tempdir().unwrap();
    let doc = "plain notes\n```\n## fenced, not a heading\n```\n";
    std::fs::write(dir.path().join("plain.md"), doc).unwrap();
    let o = outbox_in(dir.path(), &["pack", "plain.md"]);
    assert_eq!(o.stdout, doc.as_bytes(), "fits: kept whole");
    assert!(stderr_lines(&o).iter().any(|l| l.contains("cannot be packed by section")));

    let o = outbox_in(dir.path(), &["pack", "--budget", "10", "plain.md"]);
    assert!(o.status.success());
    assert!(o.stdout.is_empty(), "too large: dropped whole, never sliced");
    assert_eq!(drop_line(&o, "plain.md"), "[outbox pack] plain.md: 0/10 bytes, dropped 1 sections: (whole file)");
    assert!(stderr_lines(&o).iter().any(|l| l.contains("cannot be packed by section") && l.contains("dropped whole")));
}

#[test]
fn pack_instruction_warns_when_notes_dwarf_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("task.md"), "Fix the bug.\n").unwrap();
    std::fs::write(dir.path().join("notes.md"), format!("## Context\n{}", filler("ctx", 3))).unwrap();
    let o = outbox_in(dir.path(), &["pack", "--instruction", "task.md", "notes.md"]);
    assert!(o.status.success());
    assert!(stderr_lines(&o).iter().any(|l| l.contains("exceed 3 times the instruction task.md (13 bytes)")), "{o:?}");

    std::fs::write(dir.path().join("task.md"), filler("task", 20)).unwrap();
    let o = outbox_in(dir.path(), &["pack", "--instruction", "task.md", "notes.md"]);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("warning"), "{o:?}");
}

#[test]
fn pack_keep_matching_nothing_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("n.md"), "## A\na\n").unwrap();
    let o = outbox_in(dir.path(), &["pack", "--keep", "Rollbak", "n.md"]);
    assert!(o.status.success());
    assert!(stderr_lines(&o).iter().any(|l| l.contains("--keep \"Rollbak\" matched no section")), "{o:?}");
}

#[test]
fn pack_closed_stdout_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.md"), format!("## Big\n{}", filler("big", 20_000))).unwrap();
    let mut child = Command::new(util::bin())
        .args(["pack", "--budget", "100M", "big.md"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end before outbox writes its ~1.3 MB.
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(!String::from_utf8_lossy(&o.stderr).contains("error"), "{o:?}");
}

#[test]
fn pack_help_documents_defaults_and_formats() {
    let o = outbox_in(Path::new("."), &["pack", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    for needle in ["[default: 20000]", "==> FILE <==", "notes-priority: fresh", "dropped N sections", "--unit"] {
        assert!(help.contains(needle), "{needle} missing from:\n{help}");
    }
}

// --- Books (issue 17) --------------------------------------------------

/// Whether every HTML comment in `md` is closed, reading it as the
/// packer does: not inside fenced code, and not inside an inline code span
/// (approximated: a `<!--` between backticks on its line does not count).
fn comments_balanced(md: &str) -> bool {
    let (mut open, mut fence) = (false, None::<&str>);
    for line in md.lines() {
        let t = line.trim_start();
        if !open {
            if let Some(f) = fence {
                if t.starts_with(f) {
                    fence = None;
                }
                continue;
            }
            if t.starts_with("```") || t.starts_with("~~~") {
                fence = Some(&t[..3]);
                continue;
            }
        }
        let mut rest = line;
        loop {
            if open {
                match rest.find("-->") {
                    Some(k) => {
                        rest = &rest[k + 3..];
                        open = false;
                    }
                    None => break,
                }
            } else {
                match rest.find("<!--") {
                    Some(k) if rest[..k].matches('`').count() % 2 == 1 => rest = &rest[k + 4..],
                    Some(k) => {
                        rest = &rest[k + 4..];
                        open = !(rest.starts_with('>') || rest.starts_with("->"));
                    }
                    None => break,
                }
            }
        }
    }
    !open
}

/// A small deterministic generator (xorshift64*), so the book is the same
/// on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> usize {
        (self.next() % n) as usize
    }
}

const WORDS: &[&str] = &[
    "the",
    "stream",
    "buffer",
    "returns",
    "a",
    "promise",
    "callback",
    "when",
    "file",
    "is",
    "closed",
    "option",
    "encoding",
    "default",
    "error",
    "event",
    "emitted",
    "handle",
    "descriptor",
    "path",
    "read",
    "write",
    "data",
];

fn paragraph(r: &mut Rng) -> String {
    let n = 20 + r.below(60);
    let words: Vec<&str> = (0..n).map(|_| WORDS[r.below(WORDS.len() as u64)]).collect();
    let mut p = String::new();
    for line in words.chunks(12) {
        p.push_str(&line.join(" "));
        p.push('\n');
    }
    p.push('\n');
    p
}

/// A multi-chapter Markdown book shaped like real API docs: `#` title,
/// `## ` chapters of very different sizes (some far larger than any
/// budget), `###` and `####` sections, fenced examples holding `## ` lines,
/// and multi-line `<!-- YAML ... -->` comments, some hiding old headings.
fn generated_book(seed: u64) -> String {
    let mut r = Rng(seed);
    let mut book = String::from("# The generated manual\n\n<!--introduced_in=v0.10.0-->\n\n");
    book.push_str(&paragraph(&mut r));
    for ch in 0..8 {
        book.push_str(&format!("## Chapter {ch}\n\n"));
        book.push_str(&paragraph(&mut r));
        for sec in 0..(2 + r.below(12)) {
            book.push_str(&format!("### `api{ch}.call{sec}(path[, options])`\n\n"));
            book.push_str(
                "<!-- YAML\nadded: v0.1.90\nchanges:\n  - version: v10.0.0\n    description: was `## removed`\n-->\n\n",
            );
            if r.below(4) == 0 {
                book.push_str("<!--\n## Old title, kept for history\nold text\n-->\n\n");
            }
            for _ in 0..(1 + r.below(6)) {
                book.push_str(&paragraph(&mut r));
            }
            if r.below(3) == 0 {
                book.push_str("```md\n## not a heading\n<!-- inside a fence\n```\n\n");
            }
            for sub in 0..r.below(4) {
                book.push_str(&format!("#### Option `{sub}`\n\n"));
                for _ in 0..(1 + r.below(5)) {
                    book.push_str(&paragraph(&mut r));
                }
            }
        }
    }
    book
}

/// Packs `book` through the binary and checks the promises of issue 17.
fn pack_book(dir: &Path, name: &str, book: &str, budget: usize) -> Vec<u8> {
    std::fs::write(dir.join(name), book).unwrap();
    let o = outbox_in(dir, &["pack", "--budget", &budget.to_string(), name]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let out = String::from_utf8(o.stdout.clone()).expect("UTF-8 in, UTF-8 out");
    assert!(out.len() <= budget, "{name}: {} > {budget}", out.len());
    assert!(out.len() * 10 > budget * 6, "{name}: only {} of {budget} bytes used; {:?}", out.len(), stderr_lines(&o));
    assert!(comments_balanced(&out), "{name} at {budget}: an HTML comment is left open");
    // Every line is a line of the book, in order (pieces are whole).
    let mut from = 0;
    for line in out.lines() {
        let at = book[from..].find(line).unwrap_or_else(|| panic!("{name}: {line:?} out of order"));
        from += at;
    }
    o.stdout
}

#[test]
fn pack_generated_book_uses_the_budget_and_leaves_no_comment_open() {
    let dir = tempfile::tempdir().unwrap();
    for seed in [1, 7, 2024] {
        let book = generated_book(seed);
        assert!(comments_balanced(&book));
        assert!(book.len() > 100_000, "{}", book.len());
        for budget in [4_000, 20_000, 60_000] {
            pack_book(dir.path(), &format!("book{seed}.md"), &book, budget);
        }
    }
}

#[test]
fn pack_chapter_under_one_heading_is_packed_by_its_subsections() {
    // Issue 17: an 85 KB chapter whose body sits under one `## ` heading
    // was packed to its 76-byte preamble.
    let mut r = Rng(17);
    let mut doc = String::from("# Chapter 5: Streams\n\nThe whole chapter in one section, as books write it.\n\n");
    assert_eq!(doc.len(), 76);
    doc.push_str("## Streams in depth\n\n");
    let mut k = 0;
    while doc.len() < 85_000 {
        doc.push_str(&format!("### Part {k}\n\n"));
        for _ in 0..4 {
            doc.push_str(&paragraph(&mut r));
        }
        k += 1;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = pack_book(dir.path(), "ch5.md", &doc, 20_000);
    let out = String::from_utf8(out).unwrap();
    assert!(out.starts_with(
        "# Chapter 5: Streams\n\nThe whole chapter in one section, as books write it.\n\n## Streams in depth\n"
    ));
    let o = outbox_in(dir.path(), &["pack", "ch5.md"]);
    let line = drop_line(&o, "ch5.md");
    assert!(line.contains("Streams in depth > Part "), "{line}");
    assert!(stderr_lines(&o).iter().any(|l| l.contains("Streams in depth (") && l.contains("did not fit whole")));
}

/// The Node.js API documentation, a real Markdown book (MIT licence),
/// ships in Debian's `nodejs` package; where it is installed, its chapters
/// are packed one by one and as one multi-chapter file. Nothing from it is
/// copied into this repository.
#[test]
fn pack_real_book_from_the_nodejs_docs_when_installed() {
    let docs = Path::new("/usr/share/doc/nodejs/api");
    let chapters = ["fs.md", "stream.md", "http.md", "process.md", "crypto.md", "buffer.md", "child_process.md"];
    let texts: Vec<String> = chapters.iter().filter_map(|c| std::fs::read_to_string(docs.join(c)).ok()).collect();
    if texts.len() < 3 {
        println!("skipped: the Node.js docs are not installed (apt-get install nodejs)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (k, text) in texts.iter().enumerate() {
        if comments_balanced(text) {
            pack_book(dir.path(), &format!("ch{k}.md"), text, 20_000);
        }
    }
    let book: String = texts.concat();
    pack_book(dir.path(), "book.md", &book, 20_000);
    pack_book(dir.path(), "book.md", &book, 64_000);
}
