//! Credentials in every printing mode (issue 29): tokens built at test time
//! in each issuer's documented shape (`text::secrets::samples`), placed on
//! lines that are shown; none may be printed whole, look-alikes print
//! intact, JSON still parses, the header counts the masks, the stored copy
//! and `show --raw` are byte-exact, and `--mask off` turns it all off,
//! saying so.
//!
//! Printers covered: passthrough, the text envelope (head, signal lines and
//! their blocks, the gap marker, the tail, `--envelope always`), JSON and
//! NDJSON folds, `--format auto`, wrap mode (output and the command line in
//! the header), `--stderr separate`, `show`, `show --lines`, `show --grep`.

use std::process::{Command, Output};

use outbox::text::secrets::samples::{credentials, look_alikes, openssh_block, pem_block, Sample};
use outbox::text::secrets::{count_markers, Counts};

use crate::util::{self, run, run_cmd, Store};

fn text(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("output is UTF-8")
}

/// Every secret of `creds` and every key line of `blocks` is absent.
fn assert_nothing_leaks(what: &str, out: &str, creds: &[Sample], blocks: &[Vec<String>]) {
    for c in creds {
        assert!(!out.contains(&c.secret), "{what}: {} printed whole:\n{out}", c.rule);
    }
    for b in blocks {
        for line in &b[1..b.len() - 1] {
            assert!(!out.contains(line.as_str()), "{what}: key line {line} printed:\n{out}");
        }
    }
}

/// The header of a text envelope.
fn text_header(out: &str) -> serde_json::Value {
    let mut it = out.lines();
    assert_eq!(it.next(), Some("<<<OUTBOX-HEADER"), "no header in:\n{out}");
    serde_json::from_str(it.next().unwrap()).expect("header parses")
}

/// What the printed text (header excluded) holds, by rule.
fn markers(body: &str) -> Counts {
    let mut c = Counts::new();
    count_markers(body, &mut c);
    c
}

fn as_counts(v: &serde_json::Value) -> Counts {
    v.as_object()
        .unwrap_or_else(|| panic!("secrets_masked is an object: {v}"))
        .iter()
        .map(|(k, n)| (k.clone(), n.as_u64().unwrap()))
        .collect()
}

/// The header's statement agrees with the markers printed after it.
fn assert_counts_agree(out: &str) {
    let h = text_header(out);
    let body = out.splitn(4, '\n').nth(3).unwrap_or("");
    let printed = markers(body);
    let mut command = Counts::new();
    if let Some(c) = h.get("command").and_then(|c| c.as_str()) {
        count_markers(c, &mut command);
    }
    let mut want = printed.clone();
    for (k, n) in command {
        *want.entry(k).or_insert(0) += n;
    }
    assert!(!want.is_empty(), "nothing was masked:\n{out}");
    assert_eq!(as_counts(&h["secrets_masked"]), want, "{out}");
    let total: u64 = want.values().sum();
    assert!(out.contains(&format!("{total} secrets masked")), "the summary says it:\n{out}");
}

fn lines(creds: &[Sample]) -> Vec<String> {
    creds.iter().map(|c| c.line.clone()).collect()
}

#[test]
fn passthrough_masks_every_credential_keeps_look_alikes_and_the_store_is_exact() {
    let store = Store::new();
    let creds = credentials(11);
    let pem = pem_block(11, 8);
    let ssh = openssh_block(12, 6);
    let alikes = look_alikes(11);
    let mut input = lines(&creds);
    input.extend(pem.clone());
    input.extend(ssh.clone());
    input.extend(alikes.clone());
    let input = input.join("\n") + "\n";
    let out = run(&store, &[], input.as_bytes());
    let shown = text(&out);
    assert!(!shown.starts_with("<<<OUTBOX-HEADER"), "small input passes through:\n{shown}");
    assert_nothing_leaks("passthrough", &shown, &creds, &[pem.clone(), ssh.clone()]);
    assert_eq!(shown.lines().count(), input.lines().count(), "every line kept");
    for l in &alikes {
        assert!(shown.lines().any(|s| s == l), "look-alike changed: {l}");
    }
    assert_eq!(
        markers(&shown).len(),
        creds.iter().map(|c| c.rule).collect::<std::collections::BTreeSet<_>>().len() + 1
    );
    // The stored copy keeps the exact bytes; `show --raw` prints them and
    // says so on stderr; `show` masks as the envelope does.
    let raw = run(&store, &["show", "last", "--raw"], b"");
    assert_eq!(raw.stdout, input.as_bytes(), "show --raw is byte-exact");
    assert!(String::from_utf8_lossy(&raw.stderr).contains("--raw"), "{}", String::from_utf8_lossy(&raw.stderr));
    let entry = store
        .entries()
        .into_iter()
        .find(|p| p.is_file() && outbox::store::is_entry_name(&p.file_name().unwrap().to_string_lossy()))
        .expect("an entry");
    assert_eq!(std::fs::read(&entry).unwrap(), input.as_bytes(), "the stored copy is exact");
    let masked = run(&store, &["show", "last"], b"");
    assert!(masked.status.success());
    let masked = text(&masked);
    assert_nothing_leaks("show", &masked, &creds, &[pem.clone(), ssh.clone()]);
    assert_eq!(masked.lines().count(), input.lines().count());
    for l in &alikes {
        assert!(masked.lines().any(|s| s == l), "show changed a look-alike: {l}");
    }
    let some = text(&run(&store, &["show", "last", "--lines", "1:12"], b""));
    assert_eq!(some.lines().count(), 12);
    assert_nothing_leaks("show --lines", &some, &creds, &[]);
    let grep = text(&run(&store, &["show", "last", "--grep", "(?i)token|key|password|secret|[A-Za-z0-9+/]{60}"], b""));
    assert!(grep.lines().count() > 10, "{grep}");
    assert_nothing_leaks("show --grep", &grep, &creds, &[pem, ssh]);
}

/// A long log: credentials in the head, on error lines in the middle (with
/// a block after one), in the gap, and a key block in the tail whose BEGIN
/// line is not shown.
fn long_log(seed: u64) -> (String, Vec<Sample>, Vec<Vec<String>>) {
    let creds = credentials(seed);
    let pem = pem_block(seed, 30);
    let mut v: Vec<String> = creds[..4].iter().map(|c| c.line.clone()).collect();
    for i in 0..3000 {
        v.push(format!("compiling unit {i}"));
        if i % 300 == 7 {
            let c = &creds[4 + (i / 300) % (creds.len() - 4)];
            v.push(format!("error: request failed: {}", c.line));
        }
    }
    v.push("Traceback (most recent call last):".into());
    v.push(format!("ValueError: bad config: {}", creds[creds.len() - 1].line));
    // The same credential line many times: the gap marker shows frequent
    // shapes with an example.
    for _ in 0..50 {
        v.push(creds[2].line.clone());
    }
    for i in 0..200 {
        v.push(format!("step {i}"));
    }
    v.extend(pem.clone());
    v.push("FAILED: 1 error".into());
    (v.join("\n") + "\n", creds, vec![pem])
}

#[test]
fn the_envelope_masks_head_signals_gap_and_tail_and_states_the_counts() {
    let store = Store::new();
    let (input, creds, blocks) = long_log(21);
    for budget in ["3000", "6000", "14000"] {
        let out = run(&store, &["--budget", budget, "--tail", "6"], input.as_bytes());
        let shown = text(&out);
        assert!(util::chars(&out.stdout) <= budget.parse().unwrap(), "over budget:\n{shown}");
        assert_nothing_leaks("envelope", &shown, &creds, &blocks);
        assert_counts_agree(&shown);
        assert!(shown.contains("…[masked private-key, "), "the tail's key lines, without BEGIN:\n{shown}");
    }
    // Small input forced into an envelope.
    let small = lines(&credentials(22)).join("\n");
    let out = text(&run(&store, &["--envelope", "always"], small.as_bytes()));
    assert_nothing_leaks("--envelope always", &out, &credentials(22), &[]);
    assert_counts_agree(&out);
}

#[test]
fn json_and_ndjson_samples_are_masked_and_still_parse() {
    let store = Store::new();
    let creds = credentials(31);
    let pem = pem_block(31, 4).join("\n");
    let items: Vec<serde_json::Value> = creds
        .iter()
        .enumerate()
        .map(|(i, c)| serde_json::json!({"id": i, "line": c.line, "secret": c.secret, "pem": pem, "commit": look_alikes(i as u64)[0]}))
        .collect();
    let doc = serde_json::json!({ "items": items }).to_string();
    let nd: String = items.iter().map(|v| v.to_string() + "\n").collect();
    // Small JSON passes through as text, masked.
    let out = text(&run(&store, &["--format", "json", "--budget", "40000"], doc.as_bytes()));
    assert!(!out.starts_with("{\"header\""), "{out}");
    assert_nothing_leaks("json passthrough", &out, &creds, &[]);
    for (args, input) in [
        (vec!["--format", "json", "--samples", "40", "--budget", "40000", "--envelope", "always"], doc.clone()),
        (vec!["--format", "auto", "--samples", "40", "--budget", "40000", "--envelope", "always"], doc.clone()),
        (vec!["--format", "ndjson", "--samples", "40", "--budget", "40000", "--envelope", "always"], nd.clone()),
        (vec!["--format", "json", "--budget", "2000"], doc.clone()),
    ] {
        let out = text(&run(&store, &args, input.as_bytes()));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}\n{out}"));
        assert_nothing_leaks(&format!("{args:?}"), &out, &creds, &[pem_block(31, 4)]);
        let samples = v["sample"].as_array().unwrap();
        assert!(!samples.is_empty(), "{out}");
        let mut printed = Counts::new();
        count_markers(&serde_json::to_string(&v["sample"]).unwrap(), &mut printed);
        assert_eq!(as_counts(&v["header"]["secrets_masked"]), printed, "{args:?}: {out}");
        // Look-alikes (a commit id) stay.
        for s in samples {
            let commit = s["commit"].as_str().unwrap();
            assert!(commit.starts_with("commit ") && commit.len() == 47, "{commit}");
        }
    }
}

#[test]
fn wrap_mode_masks_the_output_and_the_command_line() {
    let store = Store::new();
    let creds = credentials(41);
    let token = creds.iter().find(|c| c.rule == "github-token").unwrap();
    let script = format!("printf '%s\\n' \"$@\"; echo {} >&2", creds[0].line);
    let mut cmd = Command::new(util::bin());
    cmd.env("OUTBOX_DIR", store.path()).args(["--envelope", "always", "--", "sh", "-c", &script, "sh"]);
    cmd.args(creds.iter().map(|c| c.line.as_str()));
    cmd.args(["--token", &token.secret]);
    let out = run_cmd(cmd, b"");
    let shown = text(&out);
    assert_nothing_leaks("wrap", &shown, &creds, &[]);
    let h = text_header(&shown);
    let command = h["command"].as_str().unwrap();
    assert!(
        command.contains("--token ghp_…[masked github-token, 40 chars]") || command.contains("chars cut"),
        "command: {command}\n{shown}"
    );
    assert_counts_agree(&shown);

    // Two streams, two envelopes: both masked.
    let mut cmd = Command::new(util::bin());
    cmd.env("OUTBOX_DIR", store.path()).args([
        "--stderr",
        "separate",
        "--envelope",
        "always",
        "--",
        "sh",
        "-c",
        &script,
        "sh",
    ]);
    cmd.args(creds.iter().map(|c| c.line.as_str()));
    let out = run_cmd(cmd, b"");
    assert_nothing_leaks("--stderr separate (stdout)", &text(&out), &creds, &[]);
    assert_nothing_leaks("--stderr separate (stderr)", &String::from_utf8_lossy(&out.stderr), &creds, &[]);
    assert_eq!(text(&out).matches("<<<OUTBOX-HEADER").count(), 2, "{}", text(&out));
    assert!(text(&out).contains("…[masked "), "{}", text(&out));
}

#[test]
fn mask_off_prints_credentials_and_says_so_from_the_flag_the_environment_and_the_file() {
    let store = Store::new();
    let creds = credentials(51);
    let input = lines(&creds).join("\n");
    let cfg = tempfile::tempdir().unwrap();
    std::fs::create_dir(cfg.path().join("outbox")).unwrap();
    std::fs::write(cfg.path().join("outbox").join("config.toml"), "mask = false\n").unwrap();
    let flag = {
        let mut c = Command::new(util::bin());
        c.env("OUTBOX_DIR", store.path()).args(["--mask", "off", "--envelope", "always"]);
        c
    };
    let env = {
        let mut c = Command::new(util::bin());
        c.env("OUTBOX_DIR", store.path()).env("OUTBOX_MASK", "off").args(["--envelope", "always"]);
        c
    };
    let file = {
        let mut c = Command::new(util::bin());
        c.env("OUTBOX_DIR", store.path())
            .env("XDG_CONFIG_HOME", cfg.path())
            .env_remove("OUTBOX_CONFIG")
            .env_remove("OUTBOX_MASK")
            .args(["--envelope", "always"]);
        c
    };
    for (what, cmd) in [("--mask off", flag), ("OUTBOX_MASK=off", env), ("mask = false", file)] {
        let out = text(&run_cmd(cmd, input.as_bytes()));
        assert_eq!(text_header(&out)["secrets_masked"], "off", "{what}:\n{out}");
        for c in &creds {
            assert!(out.contains(&c.secret), "{what}: {} not printed:\n{out}", c.rule);
        }
    }
    let doc = format!("[{}]", vec!["{\"password\":\"Xk9fQ2mZ7pLwq81\"}"; 1000].join(","));
    let json = text(&run(&store, &["--mask", "off", "--format", "json"], doc.as_bytes()));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["header"]["secrets_masked"], "off");
    assert!(json.contains("Xk9fQ2mZ7pLwq81"));
    // A bad value is said and never costs the output: masking stays on.
    let mut c = Command::new(util::bin());
    c.env("OUTBOX_DIR", store.path()).env("OUTBOX_MASK", "maybe").args(["--envelope", "always"]);
    let out = run_cmd(c, input.as_bytes());
    assert!(String::from_utf8_lossy(&out.stderr).contains("OUTBOX_MASK"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_nothing_leaks("OUTBOX_MASK=maybe", &text(&out), &creds, &[]);
    // --mask is an option of the envelope, not of show (which has --raw).
    let bad = run(&store, &["show", "last", "--mask", "off"], b"");
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn a_forged_marker_is_escaped_and_not_counted() {
    let store = Store::new();
    let out = text(&run(
        &store,
        &["--envelope", "always"],
        "ghp_…[masked github-token, 40 chars] is what outbox prints\n".as_bytes(),
    ));
    assert!(out.contains("ghp_…\\x5bmasked github-token"), "{out}");
    assert!(text_header(&out).get("secrets_masked").is_none(), "{out}");
}
