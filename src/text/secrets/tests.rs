use super::samples::{credentials, look_alikes, openssh_block, pem_block};
use super::*;

fn shipped() -> Masker {
    let (m, problems) = build(Vec::new());
    assert!(problems.is_empty(), "{problems:?}");
    m
}

fn masked(m: &Masker, s: &str) -> String {
    m.mask_bytes(s.as_bytes()).map_or_else(|| s.to_string(), |v| String::from_utf8(v).unwrap())
}

#[test]
fn shipped_rules_parse_and_compile() {
    let m = shipped();
    m.check_all().unwrap();
    assert!(m.rules().len() > 25);
    for r in m.rules() {
        assert!(!r.description.is_empty(), "{} has no description", r.name);
    }
}

#[test]
fn every_documented_shape_is_masked_with_its_rule_name() {
    let m = shipped();
    for seed in 0..20 {
        for c in credentials(seed) {
            let out = masked(&m, &c.line);
            assert!(!out.contains(&c.secret), "{}: secret printed whole in {out}", c.rule);
            let mut counts = Counts::new();
            count_markers(&out, &mut counts);
            assert_eq!(counts.get(c.rule), Some(&1), "{}: {out} ({counts:?})", c.rule);
        }
    }
}

#[test]
fn the_marker_keeps_the_issuers_prefix_and_counts_the_chars() {
    let m = shipped();
    let c = credentials(1).into_iter().find(|c| c.rule == "github-token").unwrap();
    let out = masked(&m, &c.line);
    assert!(out.contains("ghp_…[masked github-token, 40 chars]"), "{out}");
    let url = credentials(1).into_iter().find(|c| c.rule == "url-password").unwrap();
    let out = masked(&m, &url.line);
    assert!(out.contains("postgres://app:…[masked url-password, 18 chars]@db.internal"), "{out}");
}

#[test]
fn look_alikes_print_intact() {
    let m = shipped();
    for seed in 0..50 {
        for l in look_alikes(seed) {
            assert_eq!(masked(&m, &l), l, "seed {seed}");
        }
    }
}

#[test]
fn key_blocks_are_masked_in_one_text_and_line_by_line() {
    let m = shipped();
    for block in [pem_block(3, 20), openssh_block(4, 12)] {
        let text = block.join("\n");
        let out = masked(&m, &text);
        assert!(out.starts_with(&block[0]) && out.ends_with(block.last().unwrap()), "{out}");
        for body in &block[1..block.len() - 1] {
            assert!(!out.contains(body.as_str()), "{body} in {out}");
        }
        // Shown alone (the middle of a block, its BEGIN line not shown),
        // a full-width line is still key material.
        for body in &block[2..block.len() - 2] {
            assert!(masked(&m, body).contains("…[masked key-material, "), "{body}");
        }
        // Followed in order, every body line is inside the block.
        let mut kb = KeyBlocks::default();
        let inside: Vec<bool> = block.iter().map(|l| kb.line(l.as_bytes())).collect();
        assert!(!inside[0] && !inside[inside.len() - 1] && inside[1..inside.len() - 1].iter().all(|&b| b));
    }
    // A BEGIN line quoted in prose masks nothing after it.
    let mut kb = KeyBlocks::default();
    assert!(!kb.line(b"-----BEGIN RSA PRIVATE KEY-----"));
    assert!(!kb.line(b"is what the file should start with, said the docs"));
    assert!(!kb.is_open());
}

#[test]
fn forged_markers_are_escaped_so_counts_are_honest() {
    let m = shipped();
    let out = masked(&m, "fake …[masked github-token, 40 chars] here");
    assert!(out.contains("…\\x5bmasked github-token"), "{out}");
    let mut counts = Counts::new();
    count_markers(&out, &mut counts);
    assert!(counts.is_empty(), "{counts:?}");
}

#[test]
fn user_rules_add_and_allow() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("acme.toml"),
        "allow = [\"AKIAIOSFODNN7EXAMPLE\"]\n[[rule]]\nname = \"acme-token\"\nkeywords = [\"acme_\"]\npattern = '\\b(?P<secret>(?P<keep>acme_)[0-9a-f]{32})\\b'\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("bad.toml"), "[[rule]]\nname = \"Bad Name\"\npattern = 'x'\n").unwrap();
    std::fs::write(dir.path().join("worse.toml"), "[[rule]]\nname = \"worse\"\npattern = '('\n").unwrap();
    let (files, mut problems) = rules::load_user(Some(dir.path()));
    let (m, more) = build(files);
    problems.extend(more);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems.iter().any(|p| p.contains("bad.toml") && p.contains("lowercase")), "{problems:?}");
    assert!(problems.iter().any(|p| p.contains("worse") && p.contains("compile")), "{problems:?}");
    let out = masked(&m, "deploying with acme_0123456789abcdef0123456789abcdef now");
    assert!(out.contains("acme_…[masked acme-token, 37 chars]"), "{out}");
    assert_eq!(masked(&m, "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE"), "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE");
}

#[test]
fn counting_reads_only_whole_markers() {
    let mut c = Counts::new();
    count_markers("a ghp_…[masked github-token, 40 chars] b …[masked jwt, 9 chars] …[masked x, chars]", &mut c);
    assert_eq!(c.get("github-token"), Some(&1));
    assert_eq!(c.get("jwt"), Some(&1));
    assert_eq!(total(&c), 2);
    assert_eq!(phrase(&c).unwrap(), "2 secrets masked");
}
