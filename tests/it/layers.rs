//! The library's folders form layers (see `src/lib.rs`): each imports only
//! from the layers below it, and nothing in the library names clap. This
//! test reads the sources, so an import that goes up a layer fails here
//! rather than in review.

use std::fs;
use std::path::Path;

/// Layers from the bottom up; a folder may import its own layer and those
/// before it. `notes` stands apart: it uses only `text`.
const LAYERS: &[&str] =
    &["sys", "text", "family", "stream", "render", "json", "store", "history", "notes", "session", "reference"];

fn allowed(from: &str, to: &str) -> bool {
    if from == "notes" {
        return to == "text" || to == "notes";
    }
    // `crate::say!` is the text layer's macro, exported at the crate root.
    let rank = |m: &str| LAYERS.iter().position(|l| *l == if m == "say" { "text" } else { m });
    match (rank(from), rank(to)) {
        (Some(f), Some(t)) => t <= f && !(to == "notes" && from != "notes"),
        _ => false,
    }
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in fs::read_dir(dir).expect("readable src") {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The library's `crate::X` imports outside unit tests.
fn imports(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        // `crate::say!` is exported at the crate root but lives in text.
        found.push(if name == "say" { "text".to_string() } else { name });
    }
    found
}

#[test]
fn library_folders_import_only_downwards_and_never_clap() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut bad = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&src).expect("under src");
        let mut parts = rel.iter().map(|p| p.to_string_lossy().into_owned());
        let first = parts.next().expect("a path");
        if first == "bin" || first == "lib.rs" {
            continue;
        }
        let layer = first.trim_end_matches(".rs").to_string();
        let text = fs::read_to_string(&f).expect("readable source");
        if text.lines().any(|l| !l.trim_start().starts_with("//") && l.contains("clap")) {
            bad.push(format!("{} names clap", rel.display()));
        }
        for to in imports(&text) {
            // `crate::say!` is exported at the root but lives in `text`.
            let to = if to == "say" { "text".to_string() } else { to };
            if !allowed(&layer, &to) {
                bad.push(format!("{} ({layer}) imports crate::{to}", rel.display()));
            }
        }
    }
    assert!(bad.is_empty(), "imports against the layers:\n{}", bad.join("\n"));
}

#[test]
fn the_rule_itself() {
    assert!(allowed("stream", "text"));
    assert!(!allowed("text", "stream"));
    assert!(allowed("session", "store"));
    assert!(!allowed("store", "session"));
    assert!(!allowed("notes", "stream"));
    assert!(!allowed("store", "notes"));
}
