//! `outbox check`: preflight for notes files, so a script can refuse to start
//! an agent on a broken premise (a notes file that moved, was truncated to
//! nothing, or lost its Rollback section).
//!
//! Output contract, one line per problem (or per good file) on stdout:
//!
//! ```text
//! OK FILE (N bytes)                      the file exists, is not empty, has every heading
//! MISSING notes file: FILE               not found, or not a readable regular file
//! EMPTY notes file: FILE                 zero bytes, or only whitespace
//! MISSING section: FILE -> HEADING       one line per required heading not found
//! STOP: N problem(s)                     last, only when anything is off (exit 1)
//! ```
//!
//! Invariants: `OK` is printed only for a file with no problem; every problem
//! is one line and counts once in `STOP`; the exit status is 0 exactly when
//! there is no problem. Headings are found by the scan of [`crate::notes::outline`],
//! the parser `outbox pack` uses, so a heading inside a code fence or an HTML
//! comment does not count here either. Reading goes through [`crate::notes::files::read_notes`]:
//! a FIFO or device is refused before it is opened, never waited on.

use std::collections::HashSet;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Deserialize;

use crate::notes::files::{display_path, note, read_notes, NotesError};
use crate::notes::outline::{heading_title, scan_sections, title_text};

#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// Notes files that must exist, be non-empty regular files and contain
    /// every --require heading.
    pub files: Vec<PathBuf>,

    /// A `## ` heading every FILE must contain, with or without its `## `
    /// ("Rollback" or "## Rollback"). Repeat for more.
    pub require: Vec<String>,

    /// A TOML file listing the notes files and the headings each must
    /// contain, used instead of FILE and --require (schema below).
    pub manifest: Option<PathBuf>,
}

pub fn parse_required(s: &str) -> Result<String, String> {
    let h = required_title(s);
    if h.is_empty() {
        return Err("a required heading needs a title, e.g. --require Rollback".into());
    }
    Ok(h)
}

/// The title a required heading names: a leading `## ` (and closing `##`)
/// removed, surrounding whitespace trimmed.
pub fn required_title(s: &str) -> String {
    let s = s.trim();
    match heading_title(s.as_bytes()) {
        Some(t) => String::from_utf8_lossy(t).into_owned(),
        None => s.to_string(),
    }
}

/// What two titles are compared by: case and runs of whitespace ignored, so
/// `--require "rollback  plan"` finds `## Rollback plan`.
fn title_key(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// The required headings (as [`required_title`] gives them) that `notes`
/// lacks, in the order asked, each once. Only the required titles are
/// held while the headings are scanned, not every title of the file.
pub fn missing_headings(notes: &[u8], required: &[String]) -> Vec<String> {
    let wanted: Vec<(String, String)> = required
        .iter()
        .map(|r| {
            let title = required_title(r);
            let key = title_key(&title);
            (title, key)
        })
        .collect();
    let keys: HashSet<&str> = wanted.iter().map(|(_, k)| k.as_str()).collect();
    let mut present: HashSet<String> = HashSet::new();
    scan_sections(notes, |h| {
        let key = title_key(&title_text(notes, h.title));
        if keys.contains(key.as_str()) {
            present.insert(key);
        }
    });
    let mut seen = HashSet::new();
    wanted.into_iter().filter(|(_, k)| !present.contains(k) && seen.insert(k.clone())).map(|(title, _)| title).collect()
}

/// The manifest schema. Unknown keys are errors, so a typo such as
/// `requires =` cannot silently check nothing.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    /// Headings every listed file must have.
    #[serde(default)]
    require: Vec<String>,
    #[serde(default, rename = "file")]
    files: Vec<ManifestFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ManifestFile {
    path: PathBuf,
    #[serde(default)]
    require: Vec<String>,
}

/// One file to check and the headings it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: PathBuf,
    pub require: Vec<String>,
}

/// Reads a manifest into entries, paths resolved against its directory.
/// The error is (stdout line, stderr detail).
fn load_manifest(path: &Path) -> Result<Vec<Entry>, (String, String)> {
    let shown = display_path(path);
    let bytes = match read_notes(path) {
        Ok(b) => b,
        Err(NotesError::Missing) => {
            return Err((format!("MISSING manifest: {shown}"), format!("{shown}: {}", NotesError::Missing)));
        }
        Err(e) => return Err((format!("INVALID manifest: {shown}"), format!("{shown}: {e}"))),
    };
    let invalid = |detail: String| (format!("INVALID manifest: {shown}"), format!("{shown}: {detail}"));
    let text = std::str::from_utf8(&bytes).map_err(|e| invalid(format!("not UTF-8 ({e}); TOML files are UTF-8")))?;
    let manifest: Manifest = toml::from_str(text).map_err(|e| {
        invalid(format!(
            "{}\nexpected: optional `require = [\"Heading\", ...]`, then one `[[file]]` table per notes file \
             with `path = \"notes.md\"` and optional `require = [...]`",
            e.to_string().trim_end()
        ))
    })?;
    if manifest.files.is_empty() {
        return Err(invalid("lists no notes files; add a `[[file]]` table with `path = \"notes.md\"` for each".into()));
    }
    let base = path.parent().unwrap_or(Path::new(""));
    Ok(manifest
        .files
        .into_iter()
        .map(|f| {
            let mut require = manifest.require.clone();
            require.extend(f.require);
            Entry { path: base.join(f.path), require }
        })
        .collect())
}

/// Checks each entry: the stdout lines and the number of problems. Reasons
/// that do not fit the line format go to stderr as they are found.
pub fn check_entries(entries: &[Entry]) -> (Vec<String>, usize) {
    let mut lines = Vec::new();
    let mut problems = 0;
    for e in entries {
        let shown = display_path(&e.path);
        match read_notes(&e.path) {
            Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => {
                lines.push(format!("EMPTY notes file: {shown}"));
                problems += 1;
            }
            Ok(bytes) => {
                let missing = missing_headings(&bytes, &e.require);
                if missing.is_empty() {
                    lines.push(format!("OK {shown} ({} bytes)", bytes.len()));
                }
                for h in &missing {
                    lines.push(format!("MISSING section: {shown} -> {}", crate::text::sanitize::display_str(h).text));
                }
                problems += missing.len();
            }
            Err(NotesError::Empty) => {
                lines.push(format!("EMPTY notes file: {shown}"));
                problems += 1;
            }
            Err(err) => {
                if !matches!(err, NotesError::Missing) {
                    note(&format!("[outbox check] {shown}: {err}"));
                }
                lines.push(format!("MISSING notes file: {shown}"));
                problems += 1;
            }
        }
    }
    (lines, problems)
}

/// `outbox check`: prints the report and exits 1 when anything is off.
pub fn run(args: &CheckOptions) -> anyhow::Result<ExitCode> {
    let (lines, problems) = match &args.manifest {
        Some(m) => match load_manifest(m) {
            Ok(entries) => check_entries(&entries),
            Err((line, detail)) => {
                note(&format!("[outbox check] {detail}"));
                (vec![line], 1)
            }
        },
        None => {
            let entries: Vec<Entry> =
                args.files.iter().map(|p| Entry { path: p.clone(), require: args.require.clone() }).collect();
            check_entries(&entries)
        }
    };
    let code = if problems > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let written = (|| -> io::Result<()> {
        for l in &lines {
            writeln!(out, "{l}")?;
        }
        if problems > 0 {
            writeln!(out, "STOP: {problems} problem(s)")?;
        }
        out.flush()
    })();
    match written {
        // A reader that went away does not change the verdict: the exit
        // status still says whether the premise holds.
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(e).context("writing the check report to stdout"))
        }
        _ => Ok(code),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_titles_with_or_without_prefix() {
        assert_eq!(required_title("Goal"), "Goal");
        assert_eq!(required_title("## Goal"), "Goal");
        assert_eq!(required_title("  ##  Goal ## "), "Goal");
        assert_eq!(required_title("### Deep"), "### Deep");
        assert!(parse_required("## ").is_err());
        assert!(parse_required("  ").is_err());
    }

    #[test]
    fn missing_headings_ignores_fences_case_and_spacing() {
        let notes = b"# Title\n## Goal\n```\n## Rollback\n```\n## Risk  Register\r\n";
        let req = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(missing_headings(notes, &req(&["goal", "## Risk Register"])), Vec::<String>::new());
        assert_eq!(missing_headings(notes, &req(&["Rollback", "## Rollback", "Title"])), ["Rollback", "Title"]);
        // A substring is not the heading.
        assert_eq!(missing_headings(notes, &req(&["Risk"])), ["Risk"]);
    }

    #[test]
    fn a_heading_inside_an_html_comment_is_missing() {
        let notes = b"## Goal\n<!--\n## Rollback\nrevert\n-->\ntext <!-- old\n## Risks\n-->\n<!-- ## Owner -->\n";
        let req = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            missing_headings(notes, &req(&["Goal", "Rollback", "Risks", "Owner"])),
            ["Rollback", "Risks", "Owner"]
        );
    }

    fn entry(path: PathBuf, require: &[&str]) -> Entry {
        Entry { path, require: require.iter().map(|s| s.to_string()).collect() }
    }

    #[test]
    fn check_entries_lines_and_problem_count() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(p("good.md"), b"## Goal\nship\n").unwrap();
        std::fs::write(p("empty.md"), b"").unwrap();
        std::fs::write(p("blank.md"), b" \n\n").unwrap();
        std::fs::write(p("partial.md"), b"## Goal\n").unwrap();
        let (lines, problems) = check_entries(&[
            entry(p("good.md"), &["Goal"]),
            entry(p("empty.md"), &["Goal"]),
            entry(p("blank.md"), &[]),
            entry(p("gone.md"), &[]),
            entry(p("partial.md"), &["Goal", "Rollback", "Risks"]),
        ]);
        let d = |n: &str| display_path(&p(n));
        assert_eq!(
            lines,
            [
                format!("OK {} (13 bytes)", d("good.md")),
                format!("EMPTY notes file: {}", d("empty.md")),
                format!("EMPTY notes file: {}", d("blank.md")),
                format!("MISSING notes file: {}", d("gone.md")),
                format!("MISSING section: {} -> Rollback", d("partial.md")),
                format!("MISSING section: {} -> Risks", d("partial.md")),
            ]
        );
        assert_eq!(problems, 5);
    }

    #[test]
    fn manifest_resolves_paths_and_merges_requirements() {
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join("m.toml");
        std::fs::write(&m, "require = [\"Goal\"]\n[[file]]\npath = \"a.md\"\nrequire = [\"## Rollback\"]\n[[file]]\npath = \"sub/b.md\"\n").unwrap();
        let entries = load_manifest(&m).unwrap();
        assert_eq!(
            entries,
            [entry(dir.path().join("a.md"), &["Goal", "## Rollback"]), entry(dir.path().join("sub/b.md"), &["Goal"])]
        );
    }

    #[test]
    fn bad_manifests_are_one_problem_with_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join("m.toml");
        let (line, _) = load_manifest(&m).unwrap_err();
        assert_eq!(line, format!("MISSING manifest: {}", display_path(&m)));
        std::fs::write(&m, "[[file]]\npath = \"a.md\"\nrequires = [\"Goal\"]\n").unwrap();
        let (line, detail) = load_manifest(&m).unwrap_err();
        assert_eq!(line, format!("INVALID manifest: {}", display_path(&m)));
        assert!(detail.contains("requires"), "{detail}");
        std::fs::write(&m, "require = [\"Goal\"]\n").unwrap();
        let (_, detail) = load_manifest(&m).unwrap_err();
        assert!(detail.contains("lists no notes files"), "{detail}");
        std::fs::write(&m, b"\xff\xfe").unwrap();
        let (_, detail) = load_manifest(&m).unwrap_err();
        assert!(detail.contains("not UTF-8"), "{detail}");
    }
}
