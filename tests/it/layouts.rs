//! Listings read as what they are, on real outputs
//! (tests/fixtures/layouts, captured by scripts/capture-listings.sh): the
//! layout named, no verdict and no error count from their content, the
//! figures a listing is run for printed at every budget, and every other
//! output left to the log envelope.

use std::path::Path;
use std::process::Command;

use std::sync::Arc;

use outbox::family::{spec, Classifier, FamilyOptions};
use outbox::reference::{blocks_at, run_facts, scan_blocks};
use outbox::render::envelope::{render, Budgets};
use outbox::stream::layout::Layout;
use outbox::stream::scan::{ScanConfig, Scanner};
use outbox::stream::signal;

use crate::util::{chars, run_cmd, Store};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/layouts");
const BUDGETS: [usize; 3] = [2_000, 14_000, 30_000];

fn fixture(case: &str) -> Vec<u8> {
    std::fs::read(Path::new(FIXTURES).join(format!("{case}.out"))).unwrap_or_else(|e| panic!("{case}: {e}"))
}

fn fixtures(layout: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(Path::new(FIXTURES).join(layout))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".out").map(|c| format!("{layout}/{c}")))
        .collect();
    v.sort();
    v
}

/// The envelope and its header, `--envelope always` so that every budget
/// gets one.
fn envelope(args: &[&str], input: &[u8]) -> (String, serde_json::Value) {
    let store = Store::new();
    let empty = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(crate::util::bin());
    cmd.args(["--envelope", "always"]).args(args).env("OUTBOX_DIR", store.path()).env("XDG_CONFIG_HOME", empty.path());
    let out = run_cmd(cmd, input);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let h = text.lines().nth(1).unwrap_or_else(|| panic!("no header in:\n{text}"));
    let h: serde_json::Value = serde_json::from_str(h).unwrap_or_else(|e| panic!("header: {e}\n{text}"));
    let budget = h["budget"].as_u64().unwrap() as usize;
    assert!(chars(&out.stdout) <= budget, "over budget {budget}: {}", chars(&out.stdout));
    (text, h)
}

fn lines(data: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(data).lines().map(str::to_string).collect()
}

/// A size as du -h and ls -lh print it, for the model below.
fn size(tok: &str) -> Option<u64> {
    let unit = tok.chars().last()?;
    let (num, mult) = match unit {
        'K' => (&tok[..tok.len() - 1], 1u64 << 10),
        'M' => (&tok[..tok.len() - 1], 1 << 20),
        'G' => (&tok[..tok.len() - 1], 1 << 30),
        _ => (tok, 1),
    };
    let v: f64 = num.parse().ok()?;
    Some((v * mult as f64) as u64)
}

/// The five largest entries of a listing with a number column, by a
/// plain reading of each tool's rows (largest first, ties in input
/// order); du's last line, its root, is its total.
fn five_largest(case: &str, data: &[u8]) -> Vec<String> {
    let all = lines(data);
    let mut rows: Vec<(u64, usize, String)> = Vec::new();
    for (i, l) in all.iter().enumerate() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let value = if case.contains("du-") {
            (i + 1 < all.len()).then(|| l.split('\t').next().and_then(size)).flatten()
        } else if case.contains("wc-") {
            (f.len() == 2 && f[1] != "total").then(|| f[0].parse().ok()).flatten()
        } else if case.contains("ls-") {
            (f.len() >= 9 && l.starts_with('-')).then(|| f[4].parse().ok()).flatten()
        } else {
            None
        };
        if let Some(v) = value {
            rows.push((v, i, l.clone()));
        }
    }
    rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    rows.into_iter().take(5).map(|r| r.2).collect()
}

#[test]
fn path_listings_print_their_totals_and_largest_entries_at_every_budget() {
    let cases = fixtures("paths");
    assert!(cases.len() >= 7, "{cases:?}");
    for case in &cases {
        let data = fixture(case);
        let all = lines(&data);
        let largest = five_largest(case, &data);
        let totals: Vec<&String> = all
            .iter()
            .filter(|l| l.ends_with(" total") || l.starts_with("total ") || l.contains(" directories, "))
            .collect();
        for budget in BUDGETS {
            let (out, h) = envelope(&["--budget", &budget.to_string()], &data);
            let ctx = format!("{case} at {budget}:\n{out}");
            assert_eq!(h["layout"], "paths", "{ctx}");
            assert_eq!(h["signals"]["error"], 0, "{ctx}");
            assert!(h.get("verdict").is_none() && h.get("family").is_none(), "{ctx}");
            // Every line is an entry but blanks, totals and ls -R's headings.
            let entries = all.iter().filter(|l| !l.is_empty() && !l.ends_with(':')).count() - totals.len();
            assert_eq!(h["rollup"]["entries"].as_u64(), Some(entries as u64), "{ctx}");
            for l in &largest {
                assert!(out.contains(l.as_str()), "largest entry {l:?} missing: {ctx}");
            }
            // wc's total lines (one per xargs batch), ls's, tree's: all of
            // them when few, else counted with their sum.
            if totals.len() <= 6 {
                for t in &totals {
                    assert!(out.contains(t.as_str()), "total line {t:?} missing: {ctx}");
                }
            } else {
                // ls -laR's one per directory: counted and summed.
                let summary = out.lines().nth(3).unwrap();
                assert!(summary.contains(&format!("; {} total lines, sum ", totals.len())), "{ctx}");
            }
            if case.contains("du-") {
                let root = all.last().unwrap();
                assert!(out.contains(&format!(
                    "--- total: {} (du's line for the root) ---",
                    root.split('\t').next().unwrap()
                )));
            }
        }
    }
}

/// grep -n / -rn / -c, rg and git grep, read plainly: (matches, files).
fn count_matches(case: &str, data: &[u8]) -> (u64, u64) {
    let mut files = std::collections::BTreeSet::new();
    let mut matches = 0;
    for l in lines(data) {
        let l = l.strip_prefix("be08cc8e1e2eac3aa3017d13aa8aa500243eb5eb:").unwrap_or(&l).to_string();
        let parts: Vec<&str> = l.splitn(3, ':').collect();
        if case.ends_with("grep-c") {
            let n: u64 = parts[1].parse().unwrap();
            if n > 0 {
                matches += n;
                files.insert(parts[0].to_string());
            }
        } else if parts.len() == 3 && parts[1].chars().all(|c| c.is_ascii_digit()) && !parts[1].is_empty() {
            matches += 1;
            files.insert(parts[0].to_string());
        }
    }
    (matches, files.len() as u64)
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn match_listings_state_their_matches_and_files_and_no_errors() {
    let cases = fixtures("matches");
    assert!(cases.len() >= 6, "{cases:?}");
    for case in &cases {
        let data = fixture(case);
        let (matches, files) = count_matches(case, &data);
        assert!(matches > 0, "{case}");
        for budget in BUDGETS {
            let (out, h) = envelope(&["--budget", &budget.to_string()], &data);
            let ctx = format!("{case} at {budget}:\n{out}");
            assert_eq!(h["layout"], "matches", "{ctx}");
            assert_eq!(h["signals"]["error"], 0, "{ctx}");
            assert!(h.get("verdict").is_none() && h.get("family").is_none(), "{ctx}");
            assert_eq!(
                (h["rollup"]["matches"].as_u64(), h["rollup"]["files"].as_u64()),
                (Some(matches), Some(files)),
                "{ctx}"
            );
            let words = format!("{} matches in {} file", thousands(matches), thousands(files));
            assert!(out.lines().nth(3).unwrap().contains(&words), "summary without {words:?}: {ctx}");
        }
    }
}

/// The example: `grep -rn 'エラー'` over Japanese text counted
/// every match as an error; the user's own pattern still finds them.
#[test]
fn matched_text_is_never_a_signal_unless_the_user_asks() {
    let data = fixture("matches/grep-rn-ja");
    let (out, h) = envelope(&[], &data);
    assert_eq!(h["signal_hits"], 0, "{out}");
    assert!(!out.contains("--- signal lines"), "{out}");
    let (out, h) = envelope(&["--signal", "エラー"], &data);
    assert_eq!(h["signal_hits"].as_u64(), Some(lines(&data).len() as u64), "{out}");
    assert_eq!(h["layout"], "matches");
}

/// A tool's own complaint inside a listing is still a signal line.
#[test]
fn a_listings_own_error_lines_stay_signals() {
    let mut data = b"find: './lost+found': Permission denied\n".to_vec();
    data.extend_from_slice(&fixture("paths/find-man-ja"));
    let (out, h) = envelope(&[], &data);
    assert_eq!(h["layout"], "paths", "{out}");
    assert_eq!(h["signals"]["error"], 1, "{out}");
    assert!(out.lines().nth(3).unwrap().contains("signals: 1 errors"), "{out}");
}

/// Build and test logs keep their envelope: none is read as a listing.
#[test]
fn tool_logs_are_not_listings() {
    use outbox::family::{spec, Classifier, FamilyOptions};
    let engine = &std::sync::Arc::new(Classifier::new(&spec::embedded(), &FamilyOptions::default()).unwrap());
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/families");
    let mut checked = 0;
    for fam in std::fs::read_dir(dir).unwrap() {
        let fam = fam.unwrap().path();
        if !fam.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&fam).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_none_or(|e| e != "out") {
                continue;
            }
            let data = std::fs::read(&f).unwrap();
            // With the shipped families, as a pipe reads it: a tool's own
            // diff (Black's) is its family's output, not a patch listing.
            let mut sc = outbox::stream::scan::Scanner::new(ScanConfig::default());
            sc.set_classifier(std::sync::Arc::clone(engine));
            for chunk in data.chunks(64 << 10) {
                sc.feed(chunk);
            }
            sc.finish();
            // `tree` is kept among the families' fixtures as a tool no
            // family may claim; it is a path listing all the same.
            let expected = if f.ends_with("unknown/tree.out") { Layout::Paths } else { Layout::Log };
            assert_eq!(sc.result().layout, expected, "{}", f.display());
            checked += 1;
        }
    }
    assert!(checked > 50, "{checked}");
}

/// What a scan of a listing found, to compare scans.
fn figures(data: &[u8], ends: &[usize]) -> String {
    let sc = scan_blocks(ScanConfig::default(), blocks_at(data, ends));
    let r = sc.result();
    let l = r.layouts;
    let paths = l.paths().map(|p| {
        let largest: Vec<(u64, u64)> = p.largest.sorted().iter().map(|i| (i.value, i.line.lineno)).collect();
        (p.entries(), p.units(), p.numbered(), p.totals.lines, p.totals.sum, largest, p.root().to_vec())
    });
    let matches = l.matches().map(|m| (m.matches(), m.files(), m.units(), m.context_lines()));
    format!("{:?} {paths:?} {matches:?} hits {}", r.layout, r.signals.hits())
}

/// The figures do not depend on how the input is cut into blocks, on CRLF
/// line ends, or on a missing final newline.
#[test]
fn listing_figures_do_not_depend_on_block_boundaries() {
    for case in ["paths/du-ah-zoneinfo", "paths/tree-crates", "matches/grep-rn-context", "matches/grep-rn-ja"] {
        let data = fixture(case);
        let whole = figures(&data, &[]);
        assert!(!whole.starts_with("Log"), "{case}: {whole}");
        let n = data.len();
        let mut splits: Vec<Vec<usize>> = vec![(1..n).step_by(7).collect(), vec![1, n / 3, n / 2 + 1, n - 1]];
        splits.push((0..n).step_by(4093).collect());
        for ends in splits {
            assert_eq!(figures(&data, &ends), whole, "{case} split at {:?}…", &ends[..ends.len().min(4)]);
        }
        let crlf: Vec<u8> = String::from_utf8_lossy(&data).replace('\n', "\r\n").into_bytes();
        assert_eq!(figures(&crlf, &[n / 2]), whole, "{case} with CRLF");
        let unterminated = &data[..n - 1];
        assert_eq!(figures(unterminated, &[n / 3]), whole, "{case} without its last newline");
    }
}

/// The command names the tool: half its lines are enough then.
#[test]
fn a_wrapped_commands_tool_confirms_the_layout() {
    let store = Store::new();
    let empty = tempfile::tempdir().unwrap();
    let list = Path::new(FIXTURES).join("paths/git-ls-files.out");
    // Each path, and a complaint after four paths in five: 5 lines in 9
    // are paths.
    let script = format!(
        "n=0; while read -r l; do echo \"$l\"; n=$((n+1)); [ $((n % 5)) -ne 0 ] && echo \"ls: cannot access 'x': No such file or directory\"; done < {}",
        list.display()
    );
    let run = |cmd: &[&str]| {
        let mut c = Command::new(crate::util::bin());
        c.args(["--envelope", "always", "--"])
            .args(cmd)
            .env("OUTBOX_DIR", store.path())
            .env("XDG_CONFIG_HOME", empty.path());
        let out = run_cmd(c, b"");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        serde_json::from_str::<serde_json::Value>(text.lines().nth(1).unwrap()).unwrap()
    };
    assert!(run(&["bash", "-c", &script]).get("layout").is_none());
    let named = format!("{script} # ls");
    let h = run(&["bash", "-c", &named, "ls"]);
    assert_eq!(h["layout"], "paths", "{h}");
}

/// Item 5: a non-English severity word counts where a tool puts it (a
/// prefix, a bracket, a level column), never inside prose, as English
/// ones do.
#[test]
fn non_english_severity_words_count_only_where_tools_put_them() {
    use outbox::family::{spec, Classifier, FamilyOptions, Severity};
    let c = Classifier::new(&spec::embedded(), &FamilyOptions::default()).unwrap();
    let mut tally = c.tally();
    let mut severity = |line: &str| {
        let l = line.as_bytes();
        c.prefilter().is_match(l).then(|| c.classify(1, l, &mut tally)).flatten().map(|k| k.severity)
    };
    for (line, want) in [
        ("エラー: ファイルが見つかりません", Severity::Error),
        ("[エラー] 接続に失敗しました", Severity::Error),
        ("2026-12-03 12:00:01 エラー db: 接続がタイムアウトしました", Severity::Error),
        ("gcc: 致命的エラー: 入力ファイルがありません", Severity::Error),
        ("错误：找不到文件", Severity::Error),
        ("【错误】连接失败", Severity::Error),
        ("警告: 未使用の変数です", Severity::Warning),
    ] {
        assert_eq!(severity(line), Some(want), "{line}");
    }
    // Japanese prose: the manual pages' own sentences about errors.
    let prose: Vec<String> =
        lines(&fixture("matches/grep-rn-ja")).iter().map(|l| l.splitn(3, ':').nth(2).unwrap().to_string()).collect();
    assert!(prose.len() > 100 && prose.iter().all(|l| l.contains("エラー")));
    let hits: Vec<&String> = prose.iter().filter(|l| severity(l).is_some()).collect();
    assert!(hits.is_empty(), "prose read as signals: {hits:#?}");
    for line in ["標準エラー出力に書き出す", "I/O エラーなど", "エラー処理の説明です。", "警告をエラーとして扱います。"]
    {
        assert_eq!(severity(line), None, "{line}");
    }
}

/// A commit's first line, read plainly: `commit <hash>` (after `--graph`'s
/// columns), or a `--oneline` line.
fn commit_lines(case: &str, data: &[u8]) -> Vec<String> {
    lines(data)
        .into_iter()
        .filter(|l| {
            let t = l.trim_start_matches(['*', '|', '/', '\\', ' ']);
            let hash = |h: &str| h.len() >= 7 && h.chars().all(|c| c.is_ascii_hexdigit());
            if case.ends_with("oneline") {
                return true;
            }
            t.strip_prefix("commit ").is_some_and(|r| hash(r.split(' ').next().unwrap()))
        })
        .collect()
}

#[test]
fn commit_listings_print_the_newest_and_oldest_commits_and_their_count() {
    let cases = fixtures("commits");
    assert!(cases.len() >= 5, "{cases:?}");
    for case in &cases {
        let data = fixture(case);
        let commits = commit_lines(case, &data);
        let (newest, oldest) = (commits.first().unwrap(), commits.last().unwrap());
        for budget in BUDGETS {
            let (out, h) = envelope(&["--budget", &budget.to_string()], &data);
            let ctx = format!("{case} at {budget}:\n{out}");
            assert_eq!(h["layout"], "commits", "{ctx}");
            assert_eq!(h["signals"]["error"], 0, "{ctx}");
            assert!(h.get("verdict").is_none() && h.get("family").is_none(), "{ctx}");
            assert_eq!(h["rollup"]["commits"].as_u64(), Some(commits.len() as u64), "{ctx}");
            let summary = out.lines().nth(3).unwrap();
            assert!(summary.contains(&format!("summary: {} commits", thousands(commits.len() as u64))), "{ctx}");
            assert!(out.contains(newest.as_str()) && out.contains(oldest.as_str()), "newest or oldest missing: {ctx}");
        }
    }
}

/// git show, git diff, diff -ru: the files, their +/− and hunks.
#[test]
fn patches_state_their_files_and_changes() {
    for case in fixtures("patch") {
        let data = fixture(&case);
        let all = lines(&data);
        let plus = all.iter().filter(|l| l.starts_with('+') && !l.starts_with("+++ ")).count() as u64;
        let minus = all.iter().filter(|l| l.starts_with('-') && !l.starts_with("--- ")).count() as u64;
        let hunks = all.iter().filter(|l| l.starts_with("@@ ")).count() as u64;
        let files = all.iter().filter(|l| l.starts_with("diff ")).count() as u64;
        for budget in BUDGETS {
            let (out, h) = envelope(&["--budget", &budget.to_string()], &data);
            let ctx = format!("{case} at {budget}:\n{out}");
            assert_eq!(h["layout"], "patch", "{ctx}");
            assert_eq!(h["signals"]["error"], 0, "{ctx}");
            let r = &h["rollup"];
            let got = (r["files"].as_u64(), r["insertions"].as_u64(), r["deletions"].as_u64(), r["hunks"].as_u64());
            assert_eq!(got, (Some(files), Some(plus), Some(minus), Some(hunks)), "{ctx}");
            let f = if files == 1 { "file" } else { "files" };
            let words = format!("{files} {f} changed, +{} −{}", thousands(plus), thousands(minus));
            assert!(out.lines().nth(3).unwrap().contains(&words), "{ctx}");
        }
    }
}

/// The example: `git log --stat` of a large repository was
/// `FAILED (cargo)` from its messages; `git log -p`'s diff lines were
/// errors. Commit messages and diff lines are never signals, and a log
/// that quotes a build's failure is still a log of commits.
#[test]
fn commit_messages_and_diff_lines_are_never_signals() {
    let mut data = fixture("commits/git-log-p");
    let build =
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/families/cargo/build-errors.out")).unwrap();
    // A commit quoting a failed build in its message, and a patch adding it.
    let mut quote = b"commit 0123456789abcdef0123456789abcdef01234567\nAuthor: A <a@b.c>\nDate:   Mon Nov 30 08:00:00 2026 +0000\n\n    Quote a failed build\n    \n".to_vec();
    for l in String::from_utf8_lossy(&build).lines() {
        quote.extend_from_slice(format!("    {l}\n").as_bytes());
    }
    let n = String::from_utf8_lossy(&build).lines().count();
    quote.extend_from_slice(format!("\ndiff --git a/build.log b/build.log\nnew file mode 100644\n--- /dev/null\n+++ b/build.log\n@@ -0,0 +1,{n} @@\n").as_bytes());
    for l in String::from_utf8_lossy(&build).lines() {
        quote.extend_from_slice(format!("+{l}\n").as_bytes());
    }
    data.extend_from_slice(&quote);
    let (out, h) = envelope(&[], &data);
    assert_eq!(h["layout"], "commits", "{out}");
    assert_eq!((h["signal_hits"].as_u64(), h.get("verdict")), (Some(0), None), "{out}");
    assert_eq!(h["rollup"]["commits"], 19);
}

/// `copies` copies of a real listing, each renamed by `rename(copy,
/// line)` so that its units are new ones (as `scripts/bench.sh` scales
/// its inputs).
fn scaled(case: &str, copies: usize, rename: impl Fn(usize, &str) -> String) -> Vec<u8> {
    let data = fixture(case);
    let mut out = String::new();
    for k in 0..copies {
        for l in lines(&data) {
            out.push_str(&rename(k, &l));
            out.push('\n');
        }
    }
    out.into_bytes()
}

/// Asserts that `key` is an estimate in the header (`approximate`), printed
/// with `≈` in the summary, and within 5% of `truth`; returns the header.
fn estimated(input: &[u8], key: &str, truth: u64) -> serde_json::Value {
    let (out, h) = envelope(&["--budget", "4000"], input);
    let ctx = format!("{key}, truly {truth}:\n{out}");
    let got = h["rollup"][key].as_u64().unwrap_or_else(|| panic!("no {key} in {ctx}"));
    assert!(got.abs_diff(truth) * 20 <= truth, "{got} {ctx}");
    assert!(h["rollup"]["approximate"].as_array().unwrap().iter().any(|k| k == key), "{ctx}");
    let summary = out.lines().find(|l| l.starts_with("--- summary: ")).unwrap();
    assert!(summary.contains(&format!("≈{}", thousands(got))), "{ctx}");
    h
}

/// Requirement 6: past the bounded tables, counts are estimates, close and
/// marked `≈`; the counts that need no table stay exact.
#[test]
fn counts_past_the_bounded_tables_are_estimates_marked_as_such() {
    // wc -l of crate sources, 63 directories a copy, each copy under its own.
    let copies = 70;
    let wc = scaled("paths/wc-l-crates", copies, |k, l| l.replacen("./", &format!("./c{k}/"), 1));
    let h = estimated(&wc, "directories", 63 * copies as u64);
    let one = envelope(&[], &fixture("paths/wc-l-crates")).1;
    assert_eq!(one["rollup"]["directories"], 63);
    assert_eq!(h["rollup"]["entries"], one["rollup"]["entries"].as_u64().unwrap() * copies as u64);
    assert_eq!(h["rollup"]["total_sum"], one["rollup"]["total_sum"].as_u64().unwrap() * copies as u64);

    // grep -rn over Japanese text, 36 files a copy.
    let copies = 120;
    let grep = scaled("matches/grep-rn-ja", copies, |k, l| format!("c{k}/{l}"));
    let h = estimated(&grep, "files", 36 * copies as u64);
    assert_eq!(h["rollup"]["matches"], lines(&fixture("matches/grep-rn-ja")).len() as u64 * copies as u64);

    // git log --stat, 45 files a copy; every copy's files renamed.
    let copies = 100;
    let one = envelope(&[], &fixture("commits/git-log-stat")).1;
    assert_eq!(one["rollup"]["files"], 45);
    let log = scaled("commits/git-log-stat", copies, |k, l| match l.split_once(" | ") {
        Some((path, rest)) if l.starts_with(' ') => format!(" c{k}/{} | {rest}", path.trim_start()),
        _ => l.to_string(),
    });
    let h = estimated(&log, "files", 45 * copies as u64);
    for key in ["commits", "insertions", "deletions"] {
        assert_eq!(h["rollup"][key], one["rollup"][key].as_u64().unwrap() * copies as u64, "{key}");
    }
    assert_eq!(h["signal_hits"], 0);
}

/// An agent hook's `CMD | head -N` / `| tail -N` (`--cut`): a listing's
/// envelope still holds the lines the cut would have shown, one by one, and
/// its layout and rollup.
#[test]
fn a_listing_keeps_the_lines_of_the_cut_it_replaces() {
    for case in ["paths/find-man-ja", "commits/git-log-stat", "paths/wc-l-crates"] {
        let data = fixture(case);
        let all = lines(&data);
        let mut input = data.clone();
        input.extend_from_slice(b"\nt1:0\n");
        for (cut, want) in [("head:60", &all[..60]), ("tail:60", &all[all.len() - 60..])] {
            let (out, h) = envelope(&["--trailer", "t1", "--cut", cut], &input);
            let ctx = format!("{case} {cut}:\n{out}");
            assert_eq!(h["layout"], case.split('/').next().unwrap(), "{ctx}");
            assert_eq!(h["exit_status"], 0, "{ctx}");
            let shown: std::collections::HashSet<&str> = out.lines().collect();
            for l in want {
                assert!(shown.contains(l.as_str()), "{l:?} missing from {ctx}");
            }
        }
    }
}

/// A scanner with the shipped families, fed `data` in 1 MiB blocks (and
/// one odd cut), finished; `skip`: allowed to pass over a listing's units.
fn family_scan(data: &[u8], skip: bool) -> Scanner {
    let families = Classifier::new(&spec::embedded(), &FamilyOptions::default()).unwrap();
    let mut sc = Scanner::new(ScanConfig::default());
    sc.set_classifier(Arc::new(families));
    if skip {
        sc.allow_unit_skip();
    }
    let (first, rest) = data.split_at(data.len().min(777_777));
    sc.feed(first);
    rest.chunks(1 << 20).for_each(|b| sc.feed(b));
    sc.finish();
    sc
}

/// The text envelope of a scan at `budget` (without the family summary
/// the run adds).
fn rendered(sc: &Scanner, budget: usize) -> String {
    let b = Budgets { budget, ..Budgets::default() };
    render(&sc.result(), &b, run_facts(), &signal::matcher(None).unwrap())
}

/// Past the layouts' window, the family scan passes over a listing's
/// units (their text is data): the envelope is the one a scan of every
/// line gives, for listings whose units hold error words too.
#[test]
fn a_listings_units_go_unsearched_and_its_envelope_is_unchanged() {
    for (case, copies) in [("commits/git-log-p", 60), ("matches/grep-rn-error", 70), ("paths/find-man-ja", 60)] {
        let data =
            scaled(case, copies, |k, l| if case.starts_with("paths") { format!("./{k}{l}") } else { l.to_string() });
        assert!(data.len() > 1 << 20, "{case}: past the window");
        let skipping = family_scan(&data, true);
        let whole = family_scan(&data, false);
        assert!(skipping.skipped_through() > 0, "{case}: units passed over");
        assert!(!skipping.needs_rescan(), "{case}: the listing stands");
        assert!(whole.result().layout.is_listing(), "{case}");
        for budget in [2_000, 14_000] {
            assert_eq!(rendered(&skipping, budget), rendered(&whole, budget), "{case} at {budget}");
        }
    }
}

/// A real git log past the window, then a longer real postgres log: a
/// listing while it is read, a log at the end.
fn listing_then_log() -> Vec<u8> {
    let mut data = scaled("commits/git-log-p", 60, |_, l| l.to_string());
    let server =
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/families/server/postgres.out")).unwrap();
    for _ in 0..12 {
        data.extend_from_slice(&server);
    }
    data
}

/// A git log followed by a longer server log: the scan passed over the
/// log's commit lines while it read as a listing, the layout ends `log`,
/// and the stored copy is scanned again: that envelope is the one a scan of
/// every line gives, and the run says it read the copy again.
#[test]
fn a_listing_that_turns_into_a_log_is_scanned_again() {
    let data = listing_then_log();
    let skipping = family_scan(&data, true);
    let whole = family_scan(&data, false);
    assert_eq!(whole.result().layout, Layout::Log);
    assert!(skipping.needs_rescan());
    assert!(
        skipping.result().signals.hits() < whole.result().signals.hits(),
        "the commit lines holding error words were passed over"
    );
    let again = skipping.rescan(&mut &data[..]).unwrap();
    assert!(!again.needs_rescan() && again.skipped_through() == 0);
    for budget in [2_000, 14_000] {
        assert_eq!(rendered(&again, budget), rendered(&whole, budget), "at {budget}");
    }

    let store = Store::new();
    let mut cmd = Command::new(crate::util::bin());
    cmd.args(["--envelope", "always"]).env("OUTBOX_DIR", store.path()).env("OUTBOX_DEBUG", "1");
    let out = run_cmd(cmd, &data);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not a listing: scanning the stored copy again"), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    let h: serde_json::Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    assert_eq!(h["signal_hits"], whole.result().signals.hits(), "{text}");
    assert!(h.get("layout").is_none_or(|l| l == "log"), "{text}");
}

/// As above, with the store on a tiny tmpfs (needs root to mount one;
/// skipped otherwise): the stored copy fails, so it cannot be read again,
/// and the envelope says which lines went unsearched.
#[test]
fn unsearched_lines_are_said_when_the_stored_copy_failed() {
    let store = Store::new();
    let mnt = store.path().join("tiny");
    if !crate::util::tiny_tmpfs(&mnt) {
        return;
    }
    let data = listing_then_log();
    let mut cmd = Command::new(crate::util::bin());
    cmd.args(["--envelope", "always"]).env("OUTBOX_DIR", &mnt);
    let out = run_cmd(cmd, &data);
    let _ = Command::new("umount").arg(&mnt).status();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("signal lines may be missing from lines 1-"), "{text}");
}

/// Wrap mode with two streams measures both before it finishes them: the
/// stored copy is read again once, and the envelope is the whole scan's.
#[test]
fn a_wrapped_listing_that_turns_into_a_log_is_scanned_again_once() {
    let data = listing_then_log();
    let whole = family_scan(&data, false);
    let store = Store::new();
    let file = store.path().join("mix.txt");
    std::fs::write(&file, &data).unwrap();
    let mut cmd = Command::new(crate::util::bin());
    cmd.args(["--envelope", "always", "--stderr", "separate", "--", "cat"])
        .arg(&file)
        .env("OUTBOX_DIR", store.path())
        .env("OUTBOX_DEBUG", "1");
    let out = run_cmd(cmd, b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("scanning the stored copy again").count(), 1, "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    let h: serde_json::Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    assert_eq!(h["signal_hits"], whole.result().signals.hits(), "{text}");
    assert!(!text.contains("signal lines may be missing"), "{text}");
}
