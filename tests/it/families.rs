//! Tool families against real outputs (tests/fixtures/families, captured by
//! scripts/capture-fixtures.sh): detection, verdicts, every error and its
//! location in a small envelope, harmless look-alikes, user family files,
//! and the family and signal options.

use std::path::Path;
use std::process::{Command, Output};

use outbox::family::{spec, Classifier, FamilyOptions, Severity};

use crate::util::{chars, run_cmd, Store};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/families");

fn fixture(case: &str) -> Vec<u8> {
    std::fs::read(Path::new(FIXTURES).join(format!("{case}.out"))).unwrap_or_else(|e| panic!("{case}: {e}"))
}

/// Runs outbox with a private store and an empty user config directory
/// (unless `xdg` names one).
fn run_with(store: &Store, args: &[&str], input: &[u8], xdg: Option<&Path>) -> Output {
    let empty = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(crate::util::bin());
    cmd.args(args).env("OUTBOX_DIR", store.path()).env("XDG_CONFIG_HOME", xdg.unwrap_or(empty.path()));
    run_cmd(cmd, input)
}

fn header(stdout: &[u8]) -> serde_json::Value {
    let s = String::from_utf8_lossy(stdout);
    let line = s.lines().nth(1).unwrap_or_else(|| panic!("no header in:\n{s}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("header: {e}\n{s}"))
}

fn envelope(args: &[&str], input: &[u8]) -> (String, serde_json::Value) {
    let store = Store::new();
    let out = run_with(&store, args, input, None);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    (String::from_utf8_lossy(&out.stdout).into_owned(), header(&out.stdout))
}

/// `lines` neutral lines (no family, no signal) before `tail`, so the
/// fixture's start lands in the envelope's gap.
fn padded(tail: &[u8], lines: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for i in 1..=lines {
        v.extend_from_slice(format!("progress {i}/{lines} shards copied\n").as_bytes());
    }
    v.extend_from_slice(tail);
    v
}

struct Case {
    file: &'static str,
    family: Option<&'static str>,
    status: Option<&'static str>,
    counts: &'static [(&'static str, u64)],
    /// Text an engineer needs (an error and its location): each must be
    /// in the envelope at --budget 4000 with the fixture after 3,000
    /// neutral lines.
    facts: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        file: "cargo/build-errors",
        family: Some("cargo"),
        status: Some("failed"),
        counts: &[("errors", 4), ("warnings", 4)],
        facts: &[
            "error[E0308]: mismatched types",
            "src/lib.rs:10:24",
            "error[E0609]: no field `qty` on type `&Item`",
            "src/lib.rs:18:39",
            "error[E0599]",
            "src/lib.rs:22:11",
            "error[E0425]",
            "src/lib.rs:23:5",
        ],
    },
    Case {
        file: "cargo/build-errors-color",
        family: Some("cargo"),
        status: Some("failed"),
        counts: &[("errors", 4), ("warnings", 4)],
        facts: &["src/lib.rs:10:24", "src/lib.rs:18:39", "src/lib.rs:22:11", "src/lib.rs:23:5"],
    },
    Case {
        file: "cargo/test-failures",
        family: Some("cargo"),
        status: Some("failed"),
        counts: &[("failed", 2), ("passed", 5), ("skipped", 1)],
        facts: &[
            "test tests::rejects_missing_equals ... FAILED",
            "panicked at src/lib.rs:36:9",
            "test tests::unwraps_second_pair ... FAILED",
            "panicked at src/lib.rs:41:38",
            "test result: FAILED. 3 passed; 2 failed",
        ],
    },
    Case {
        file: "cargo/clippy-warnings",
        family: Some("cargo"),
        status: Some("passed"),
        counts: &[("warnings", 7)],
        facts: &[],
    },
    Case {
        file: "cargo/clippy-deny",
        family: Some("cargo"),
        status: Some("failed"),
        counts: &[("errors", 7)],
        facts: &["src/lib.rs:1:24", "src/lib.rs:2:5", "src/lib.rs:6:5", "src/lib.rs:9:22", "src/lib.rs:10:5"],
    },
    Case { file: "cargo/build-success", family: Some("cargo"), status: Some("passed"), counts: &[], facts: &[] },
    Case {
        file: "cargo/panic",
        family: Some("cargo"),
        status: Some("failed"),
        counts: &[],
        facts: &["panicked at src/main.rs:6:46:", "config file must exist"],
    },
    Case {
        file: "go/test-failures",
        family: Some("go"),
        status: Some("failed"),
        counts: &[("failed", 3)],
        facts: &[
            "--- FAIL: TestMean",
            "mathx_test.go:19: Mean([1 2 4]) = 2, want 3",
            "--- FAIL: TestSubtests/negative",
            "mathx_test.go:27",
            "--- FAIL: TestMeanEmpty",
            "panic: runtime error: integer divide by zero",
        ],
    },
    Case { file: "go/test-passing", family: Some("go"), status: Some("passed"), counts: &[], facts: &[] },
    Case {
        file: "go/build-errors",
        family: Some("go"),
        status: Some("failed"),
        counts: &[("errors", 4)],
        facts: &["./main.go:11:3", "./main.go:13:9", "./main.go:17:6", "./main.go:18:30"],
    },
    Case {
        file: "pytest/failures",
        family: Some("pytest"),
        status: Some("failed"),
        counts: &[("failed", 2), ("passed", 3), ("warnings", 1)],
        facts: &[
            "E       ZeroDivisionError: division by zero",
            "calc.py:6",
            "E       AssertionError: floating point sum should be exact",
            "E       assert 0.30000000000000004 == 0.3",
            "test_calc.py:29",
            "FAILED test_calc.py::test_divide_by_zero",
        ],
    },
    Case {
        file: "pytest/failures-color",
        family: Some("pytest"),
        status: Some("failed"),
        counts: &[("failed", 2), ("passed", 3)],
        facts: &["ZeroDivisionError: division by zero", "test_calc.py:29"],
    },
    Case {
        file: "pytest/passing",
        family: Some("pytest"),
        status: Some("passed"),
        counts: &[("passed", 13), ("skipped", 1)],
        facts: &[],
    },
    Case {
        file: "pytest/collection-error",
        family: Some("pytest"),
        status: Some("failed"),
        counts: &[("errors", 1)],
        facts: &["ModuleNotFoundError: No module named 'inventory'", "test_broken_import.py:1"],
    },
    Case {
        file: "unittest/failures",
        family: Some("unittest"),
        status: Some("failed"),
        counts: &[("failed", 2), ("errors", 1), ("skipped", 1), ("total", 6)],
        facts: &["ERROR: test_remove_unknown", "KeyError: 'washer'", "FAIL: test_add_twice", "AssertionError: 2 != 3"],
    },
    Case {
        file: "jest/failures",
        family: Some("jest"),
        status: Some("failed"),
        counts: &[("failed", 4), ("passed", 5), ("skipped", 1), ("total", 10)],
        facts: &[
            "● total › rounds to cents",
            "cart.test.js:14:45",
            "● applyCoupon › ignores a missing coupon",
            "TypeError: Cannot read properties of undefined",
            "cart.js:6:14",
            "● rejects words with a RangeError",
            "● returns an object",
        ],
    },
    Case {
        file: "vitest/failures",
        family: Some("vitest"),
        status: Some("failed"),
        counts: &[("failed", 3), ("passed", 4), ("skipped", 1), ("total", 8)],
        facts: &[
            "FAIL  math.test.js > parses json",
            "math.test.js:8:8",
            "FAIL  stack.test.js > Stack > peeks at the top",
            "stack.test.js:10:42",
            "FAIL  stack.test.js > Stack > lists items",
            "stack.test.js:23:47",
        ],
    },
    Case {
        file: "tsc/errors",
        family: Some("tsc"),
        status: Some("failed"),
        counts: &[("errors", 8)],
        facts: &["src/main.ts(3,16): error TS7006", "src/user.ts(16,14): error TS2322"],
    },
    Case {
        file: "tsc/errors-pretty",
        family: Some("tsc"),
        status: Some("failed"),
        counts: &[("errors", 8)],
        facts: &["TS7006", "TS2345", "TS2552", "TS18048", "TS6133", "TS2353", "TS2339", "TS2322"],
    },
    Case {
        file: "eslint/problems",
        family: Some("eslint"),
        status: Some("failed"),
        counts: &[("errors", 5), ("warnings", 3)],
        facts: &["Duplicate key 'retries'", "'notFoundPage' is not defined", "Unexpected 'debugger' statement"],
    },
    Case {
        file: "eslint/warnings-only",
        family: Some("eslint"),
        status: Some("passed"),
        counts: &[("errors", 0), ("warnings", 2)],
        facts: &[],
    },
    Case {
        file: "gcc/make-errors",
        family: Some("gcc"),
        status: Some("failed"),
        counts: &[],
        facts: &[
            "store.c:11:24: error: ‘struct item’ has no member named ‘qty’",
            "store.c:12:18: error: ‘undeclared_bonus’ undeclared",
            "main.c:6:35: error: expected ‘;’ before ‘return’",
            "make: *** [Makefile:11: store.o] Error 1",
        ],
    },
    Case {
        file: "gcc/make-errors-ja",
        family: Some("gcc"),
        status: Some("failed"),
        counts: &[],
        facts: &["store.c:11:24: エラー:", "store.c:12:18: エラー:", "main.c:6:35: エラー:"],
    },
    Case {
        file: "gcc/cmake-make",
        family: Some("gcc"),
        status: Some("failed"),
        counts: &[],
        facts: &["undefined reference to `counter_reset'", "collect2: error: ld returned 1 exit status"],
    },
    Case {
        file: "clang/cmake-ninja-keep-going",
        family: Some("gcc"),
        status: Some("failed"),
        counts: &[("errors", 3), ("warnings", 3)],
        facts: &[
            "shapes.c:13:22: error: use of undeclared identifier 'hight'",
            "main.c:6:10: error",
            "main.c:7:32: error",
        ],
    },
    Case {
        file: "javac/errors",
        family: Some("javac"),
        status: Some("failed"),
        counts: &[("errors", 3), ("warnings", 4)],
        facts: &[
            "Inventory.java:13: error: incompatible types",
            "Inventory.java:15: error: cannot find symbol",
            "Inventory.java:25: error: cannot find symbol",
        ],
    },
    Case {
        file: "javac/errors-ja",
        family: Some("javac"),
        status: Some("failed"),
        counts: &[("errors", 3), ("warnings", 4)],
        facts: &["Inventory.java:13: エラー:", "Inventory.java:15: エラー:", "Inventory.java:25: エラー:"],
    },
    Case {
        file: "maven/compile-failure",
        family: Some("maven"),
        status: Some("failed"),
        counts: &[("errors", 2)],
        facts: &["Orders.java:[14,29] cannot find symbol", "Orders.java:[19,17] cannot find symbol"],
    },
    Case {
        file: "maven/test-failure",
        family: Some("maven"),
        status: Some("failed"),
        counts: &[("total", 5), ("failed", 1), ("errors", 1)],
        facts: &["PricingTest.java:26", "PricingTest.java:15", "expected:<34> but was:<33>"],
    },
    Case { file: "maven/build-success", family: Some("maven"), status: Some("passed"), counts: &[], facts: &[] },
    Case {
        file: "gradle/test-failure",
        family: Some("gradle"),
        status: Some("failed"),
        counts: &[("total", 5), ("failed", 2)],
        facts: &["PricingTest > parsesEuroFormat FAILED", "PricingTest.java:26", "PricingTest.java:15"],
    },
    Case {
        file: "gradle/build-failure",
        family: Some("gradle"),
        status: Some("failed"),
        counts: &[],
        facts: &["Shipping.java:9: error: cannot find symbol", "Shipping.java:13: error: cannot find symbol"],
    },
    Case { file: "gradle/build-success", family: Some("gradle"), status: Some("passed"), counts: &[], facts: &[] },
    Case {
        file: "npm/script-failure",
        family: Some("npm"),
        status: Some("failed"),
        counts: &[],
        facts: &["Error: ENOENT: no such file or directory, open 'manifest.json'", "build.js:5:32"],
    },
    Case {
        file: "npm/missing-script",
        family: Some("npm"),
        status: Some("failed"),
        counts: &[],
        facts: &["npm error Missing script: \"deploy\""],
    },
    Case {
        file: "pnpm/script-failure",
        family: Some("pnpm"),
        status: Some("failed"),
        counts: &[],
        facts: &["Error: ENOENT", "build.js:5:32", "[ELIFECYCLE] Command failed with exit code 1."],
    },
    Case {
        file: "rubocop/offenses",
        family: Some("rubocop"),
        status: Some("failed"),
        counts: &[("failed", 11)],
        facts: &["lib/cart.rb:20:3: W: Lint/RescueException", "lib/cart.rb:4:5: W: Lint/UselessAssignment"],
    },
    Case {
        file: "terraform/validate-errors",
        family: Some("terraform"),
        status: Some("failed"),
        counts: &[("errors", 1)],
        facts: &["Error: output 'zone': unknown variable referenced"],
    },
    Case {
        file: "terraform/apply-success",
        family: Some("terraform"),
        status: Some("passed"),
        counts: &[],
        facts: &[],
    },
    Case {
        file: "java/exception",
        family: None,
        status: None,
        counts: &[],
        facts: &[
            "App$ConfigException: invalid port",
            "App.java:19",
            "NumberFormatException: For input string: \"80a\"",
        ],
    },
    Case {
        file: "python/traceback",
        family: None,
        status: None,
        counts: &[],
        facts: &["JSONDecodeError: Expecting property name", "RuntimeError: settings file is not valid JSON"],
    },
    Case {
        file: "server/app-log",
        family: None,
        status: None,
        counts: &[],
        facts: &["job 2 will be retried", "job 3 failed", "KeyError: 'height'", "ValueError: unknown job kind 'index'"],
    },
    Case { file: "crash/segfault", family: None, status: None, counts: &[], facts: &["Segmentation fault"] },
    Case { file: "crash/killed", family: None, status: None, counts: &[], facts: &["Killed"] },
    Case { file: "crash/abort", family: None, status: None, counts: &[], facts: &["Assertion `b != 0", "Aborted"] },
];

#[test]
fn each_family_is_detected_with_its_verdict() {
    let mut bad = Vec::new();
    for c in CASES {
        let (_, h) = envelope(&["--envelope", "always"], &fixture(c.file));
        if h["family"].as_str() != c.family {
            bad.push(format!("{}: family {} (want {:?})", c.file, h["family"], c.family));
        }
        let v = &h["verdict"];
        if v["status"].as_str() != c.status {
            bad.push(format!("{}: status {} (want {:?})", c.file, v["status"], c.status));
        }
        for (k, n) in c.counts {
            if v[*k].as_u64() != Some(*n) {
                bad.push(format!("{}: {k} = {} (want {n})", c.file, v[*k]));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn every_error_and_its_location_fit_a_small_envelope() {
    let mut bad = Vec::new();
    for c in CASES {
        let input = padded(&fixture(c.file), 3000);
        // 4,100: the header also carries tokens_est and tokens_method (the
        // run-history issue), about 45 characters the families branch was
        // measured without; folding the head's repeated lines (next issue)
        // is what should win this room back.
        let (text, h) = envelope(&["--budget", "4100"], &input);
        assert!(chars(text.as_bytes()) <= 4100, "{}: over budget", c.file);
        // Colour codes are stripped from what is printed.
        for f in c.facts {
            if !text.contains(f) {
                bad.push(format!("{}: missing {f:?}", c.file));
            }
        }
        // Detection counts over the whole stream: the padding gives no
        // evidence, the family is still found.
        if h["family"].as_str() != c.family {
            bad.push(format!("{}: family {} after padding (want {:?})", c.file, h["family"], c.family));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_summary_follows_the_header_with_status_counts_and_first_error() {
    let (text, _) = envelope(&["--envelope", "always"], &fixture("cargo/build-errors"));
    let summary = text.lines().nth(3).unwrap();
    assert_eq!(
        summary,
        "--- summary: FAILED (cargo): 4 errors, 4 warnings; signals: 5 errors of 5 kinds: E0308 ×1, E0609 ×1, \
E0599 ×1, …; 5 warnings of 4 kinds; first error src/lib.rs:10:24 ---"
    );
    let input = padded(&fixture("pytest/failures"), 3000);
    let (text, h) = envelope(&[], &input);
    let head: String = text.chars().take(2000).collect();
    assert!(head.contains("--- summary: FAILED (pytest): 2 failed, 3 passed"), "{head}");
    assert_eq!(h["signals"]["error"], 7);
    assert_eq!(h["signals"]["warning"], 1);
    assert_eq!(h["signal_hits"], 8, "signal_hits stays the total");
}

/// The first error's location is looked up once per shape: thousands of
/// error lines of one shape without a location (looking at each one cost
/// 13% of a scan) do not hide the location of the first error that has one.
#[test]
fn first_error_location_after_many_errors_without_one() {
    let mut input: Vec<u8> = (0..5000)
        .flat_map(|i| {
            format!("2026-12-03T10:00:{:02}Z ERROR worker={} request {i} failed: upstream timeout\n", i % 60, i % 7)
                .into_bytes()
        })
        .collect();
    input.extend_from_slice(&fixture("cargo/build-errors"));
    let (text, _) = envelope(&["--envelope", "always"], &input);
    let summary = text.lines().find(|l| l.starts_with("--- summary:")).unwrap();
    assert!(summary.ends_with("first error src/lib.rs:10:24 ---"), "{summary}");
}

/// Lines copied from the captured outputs, with the severity they must get.
const FAILURE_LINES: &[(&str, Severity)] = &[
    ("error[E0308]: mismatched types", Severity::Error),
    ("warning: unused variable: `y`", Severity::Warning),
    ("thread 'main' (27591) panicked at src/main.rs:6:46:", Severity::Error),
    ("test tests::rejects_missing_equals ... FAILED", Severity::Error),
    ("--- FAIL: TestMean (0.00s)", Severity::Error),
    ("    --- FAIL: TestSubtests/negative (0.00s)", Severity::Error),
    ("FAIL\texample.com/fixture/mathx\t0.004s", Severity::Error),
    ("./main.go:13:9: undefined: totl", Severity::Error),
    ("panic: runtime error: integer divide by zero [recovered]", Severity::Error),
    ("E       ZeroDivisionError: division by zero", Severity::Error),
    ("E       assert 0.30000000000000004 == 0.3", Severity::Error),
    ("FAILED test_calc.py::test_divide_by_zero - ZeroDivisionError: division by zero", Severity::Error),
    ("E   ModuleNotFoundError: No module named 'inventory'", Severity::Error),
    ("Traceback (most recent call last):", Severity::Error),
    ("KeyError: 'washer'", Severity::Error),
    ("MemoryError", Severity::Error),
    ("RuntimeError: settings file is not valid JSON", Severity::Error),
    ("FAIL: test_add_twice (test_store.StoreTest.test_add_twice)", Severity::Error),
    ("ERROR: test_remove_unknown (test_store.StoreTest.test_remove_unknown)", Severity::Error),
    ("AssertionError: 2 != 3", Severity::Error),
    ("FAILED (failures=2, errors=1, skipped=1)", Severity::Error),
    ("FAIL ./cart.test.js", Severity::Error),
    ("  ● total › rounds to cents", Severity::Error),
    ("    TypeError: Cannot read properties of undefined (reading 'code')", Severity::Error),
    (" FAIL  math.test.js > parses json", Severity::Error),
    ("   × parses json 2ms", Severity::Error),
    (
        "src/main.ts(7,20): error TS2345: Argument of type 'string' is not assignable to parameter of type 'number'.",
        Severity::Error,
    ),
    ("  4:3  error    Duplicate key 'retries'       no-dupe-keys", Severity::Error),
    ("  8:3  warning  Unexpected console statement  no-console", Severity::Warning),
    ("✖ 8 problems (5 errors, 3 warnings)", Severity::Error),
    ("store.c:11:24: error: ‘struct item’ has no member named ‘qty’", Severity::Error),
    (
        "parser.c:7:9: warning: suggest parentheses around assignment used as truth value [-Wparentheses]",
        Severity::Warning,
    ),
    ("store.c:11:24: エラー: ‘struct item’ は ‘qty’ という名前のメンバを持っていません", Severity::Error),
    (
        "parser.c:7:9: 警告: 真偽値として使われる代入のまわりでは、丸括弧の使用をお勧めします [-Wparentheses]",
        Severity::Warning,
    ),
    ("make: *** [Makefile:11: store.o] Error 1", Severity::Error),
    ("make: *** [Makefile:11: store.o] エラー 1", Severity::Error),
    ("collect2: error: ld returned 1 exit status", Severity::Error),
    ("main.c:(.text+0x2a): undefined reference to `counter_reset'", Severity::Error),
    ("FAILED: CMakeFiles/shapes.dir/src/shapes.c.o ", Severity::Error),
    ("ninja: build stopped: subcommand failed.", Severity::Error),
    ("Inventory.java:13: error: incompatible types: String cannot be converted to int", Severity::Error),
    ("Inventory.java:6: warning: [rawtypes] found raw type: List", Severity::Warning),
    ("Inventory.java:13: エラー: 不適合な型: Stringをintに変換できません:", Severity::Error),
    ("Inventory.java:6: 警告:[rawtypes] raw型が見つかりました: List", Severity::Warning),
    (
        "Exception in thread \"main\" App$ConfigException: invalid port in config (see error-handling.md)",
        Severity::Error,
    ),
    ("Caused by: java.lang.NumberFormatException: For input string: \"80a\"", Severity::Error),
    ("[ERROR] Tests run: 5, Failures: 1, Errors: 1, Skipped: 0", Severity::Error),
    ("[INFO] BUILD FAILURE", Severity::Error),
    ("com.example.PricingTest > parsesEuroFormat FAILED", Severity::Error),
    ("BUILD FAILED in 2s", Severity::Error),
    ("FAILURE: Build failed with an exception.", Severity::Error),
    ("npm error Missing script: \"deploy\"", Severity::Error),
    ("Error: ENOENT: no such file or directory, open 'manifest.json'", Severity::Error),
    ("[ELIFECYCLE] Command failed with exit code 1.", Severity::Error),
    ("Error: ERR_PNPM_NO_SCRIPT", Severity::Error),
    ("lib/cart.rb:4:5: W: Lint/UselessAssignment: Useless assignment to variable - unused_total.", Severity::Warning),
    ("Error: output 'zone': unknown variable referenced: 'zone'; define it with a 'variable' block", Severity::Error),
    ("2026-12-03 04:35:20,247 ERROR   [worker] job 3 failed", Severity::Error),
    (
        "2026-12-03 04:35:20,246 WARNING [worker] job 2 will be retried: upstream db.internal:5432 refused connection",
        Severity::Warning,
    ),
    ("run.sh: line 5: 31204 Segmentation fault      (core dumped) ./segv", Severity::Error),
    ("run.sh: line 8: 31226 Killed                  python3 -c '", Severity::Error),
    ("run.sh: line 5: 31218 Aborted                 ./abrt", Severity::Error),
    ("abrt: abrt.c:5: checked_div: Assertion `b != 0 && \"divisor must not be zero\"' failed.", Severity::Error),
    ("WARNING: A terminally deprecated method in java.lang.System has been called", Severity::Warning),
    ("\u{1b}[1m\u{1b}[91merror\u{1b}[0m\u{1b}[1m: length comparison to zero\u{1b}[0m", Severity::Error),
];

/// Harmless lines copied from the captured outputs: none is a signal.
const HARMLESS_LINES: &[&str] = &[
    "0 failed so far; see error-handling.md; built with -Werror",
    "warning-free config: 0 errors so far",
    "test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s",
    "test api_counts_failed_words ... ok",
    "    mathx_test.go:14: 0 failed so far; see error-handling.md",
    "dividing 1 by 0; 0 failed so far (see error-handling.md, built with -Werror)",
    "test_calc.py::test_parse_report_zero_failed PASSED                       [ 60%]",
    "starting app; error-handling.md describes failures",
    "0 errors in previous run",
    "starting; 0 errors so far",
    "      0 failed so far; see error-handling.md",
    "  ✓ error-handling.md is only a file name (3 ms)",
    "0 failed, see error-handling.md",
    "prebuild: 0 errors, see error-handling.md",
    "building 3 bundles with -Werror-like strictness",
    "gcc -Wall -Wextra -Wno-error=unused-parameter -O0 -g -c error-handling.c -o error-handling.o",
    "[ 40%] Building C object CMakeFiles/counterlib.dir/src/error-handling.c.o",
    "[2/5] Building C object CMakeFiles/shapes.dir/src/error-handling.c.o",
    "parsing; 0 failed so far (error-handling.md)",
    "127.0.0.1 - - [03/Dec/2026 04:35:20] \"GET /index.html?q=0+failed HTTP/1.1\" 200 -",
    "worker: loaded 0 failed jobs from error-handling.md",
    "summing list (0 errors so far)",
    "notes = 0 errors expected; see error-handling.md",
    "2026-12-03 04:35:20,246 INFO    [worker] worker started, 0 errors in previous run (see error-handling.md)",
    "    puts \"0 failed, see error-handling.md\"",
    "   Compiling util v0.2.0 (/tmp/outbox-fixtures/cargo/build-errors/util)",
    "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 0.46s",
    "[INFO] BUILD SUCCESS",
    "BUILD SUCCESSFUL in 3s",
    "Tests:       1 passed, 1 total",
    "  1 error and 0 warnings potentially fixable with the `--fix` option.",
    "  = note: `#[warn(unused_mut)]` (part of `#[warn(unused)]`) on by default",
    "Apply complete! Resources: 0 added, 0 changed, 0 destroyed.",
    "==================== 13 passed, 1 skipped in 0.01s =========================",
    "ok  \texample.com/fixture/strx\t0.002s",
];

fn classifier() -> Classifier {
    Classifier::new(&spec::embedded(), &FamilyOptions::default()).unwrap()
}

#[test]
fn failure_lines_from_real_tools_get_their_severity() {
    let c = classifier();
    let mut tally = c.tally();
    let mut bad = Vec::new();
    for (line, want) in FAILURE_LINES {
        let got = c.prefilter().is_match(line.as_bytes()).then(|| c.classify(1, line.as_bytes(), &mut tally)).flatten();
        if got.map(|g| g.severity) != Some(*want) {
            bad.push(format!("{line:?}: {:?} (want {want:?})", got.map(|g| g.severity)));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn harmless_look_alikes_are_not_signals() {
    let c = classifier();
    let mut tally = c.tally();
    let hits: Vec<&str> = HARMLESS_LINES
        .iter()
        .copied()
        .filter(|l| c.prefilter().is_match(l.as_bytes()) && c.classify(1, l.as_bytes(), &mut tally).is_some())
        .collect();
    assert!(hits.is_empty(), "false signals: {hits:#?}");
}

#[test]
fn detection_counts_over_the_whole_stream() {
    // More than 1 MiB of neutral lines, then a go test run: the only
    // evidence comes after the first MiB.
    let input = padded(&fixture("go/test-failures"), 40_000);
    assert!(input.len() > 1 << 20);
    let (_, h) = envelope(&[], &input);
    assert_eq!(h["family"], "go");
    assert_eq!(h["verdict"]["failed"], 3);
}

#[test]
fn the_command_is_a_strong_hint_in_wrap_mode() {
    let c = classifier();
    let tally = c.tally();
    let name = |cmd: &str| c.detect(&tally, Some(cmd)).map(|f| c.family_name(f).to_string());
    assert_eq!(name("python -m pytest -x tests").as_deref(), Some("pytest"));
    assert_eq!(name("/usr/bin/cargo test --no-fail-fast").as_deref(), Some("cargo"));
    assert_eq!(name("npx jest --ci").as_deref(), Some("jest"));
    assert_eq!(name("go test ./...").as_deref(), Some("go"));
    assert_eq!(name("mvn -B test").as_deref(), Some("maven"));
    assert_eq!(name("ls -la"), None);
}

#[test]
fn wrap_mode_flags_a_verdict_that_disagrees_with_the_exit_status() {
    let store = Store::new();
    let path = Path::new(FIXTURES).join("pytest/failures.out");
    let path = path.to_str().unwrap();
    // Failures reported, yet the command exits 0.
    let out = run_with(&store, &["--envelope", "always", "--", "cat", path], b"", None);
    assert_eq!(out.status.code(), Some(0));
    let h = header(&out.stdout);
    assert_eq!(h["verdict"]["status"], "failed");
    assert_eq!(h["verdict_mismatch"], true);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("; exit status 0 disagrees ---"), "{text}");
    // A failing command whose verdict says so agrees.
    let script = format!("cat {path}; exit 1");
    let out = run_with(&store, &["--envelope", "always", "--", "sh", "-c", &script], b"", None);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(header(&out.stdout)["verdict_mismatch"], false);
}

#[test]
fn family_none_and_family_name() {
    let input = fixture("pytest/failures");
    let (_, h) = envelope(&["--envelope", "always", "--family", "none"], &input);
    assert_eq!(h["family"], serde_json::Value::Null);
    assert!(h.get("verdict").is_none());
    // pytest's own `E   ` lines are family knowledge; the generic
    // patterns still see the FAILED summary lines.
    assert_eq!(h["signals"]["error"], 4, "FAILED x2, `= FAILURES =` and `2 failed, 3 passed`");
    let (_, h) = envelope(&["--envelope", "always", "--family", "go"], &input);
    assert_eq!(h["family"], "go");
    let store = Store::new();
    let out = run_with(&store, &["--family", "nosuchtool"], b"x\n", None);
    assert!(!out.status.success(), "a usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown family 'nosuchtool'"));
}

#[test]
fn signal_options_add_replace_and_turn_off() {
    let input = fixture("maven/test-failure");
    let (_, base) = envelope(&["--envelope", "always"], &input);
    let base_hits = base["signal_hits"].as_u64().unwrap();
    // --signal-add adds to the defaults (the line is not a default signal).
    let (_, h) = envelope(&["--envelope", "always", "--signal-add", "^parsing; "], &input);
    assert_eq!(h["signal_hits"].as_u64().unwrap(), base_hits + 1);
    // --signal replaces every default pattern; the verdict stays.
    let (_, h) = envelope(&["--envelope", "always", "--signal", "^parsing; "], &input);
    assert_eq!(h["signal_hits"], 1);
    assert_eq!(h["verdict"]["status"], "failed");
    // --no-signal: nothing is a signal; the family and verdict stay.
    let (text, h) = envelope(&["--envelope", "always", "--no-signal"], &input);
    assert_eq!(h["signal_hits"], 0);
    assert_eq!(h["family"], "maven");
    // A section with nothing to show is not printed.
    assert!(!text.contains("--- signal lines"));
}

#[test]
fn user_family_files_add_and_override_and_a_broken_one_is_ignored() {
    let xdg = tempfile::tempdir().unwrap();
    let dir = xdg.path().join("outbox").join("families");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("shards.toml"),
        r#"name = "shards"
detect = ['^progress \d+/\d+ shards copied$']
[[signal]]
severity = "warning"
pattern = '^progress 7/'
[[verdict]]
pattern = '^progress (?P<passed>\d+)/(?P<total>\d+) shards copied$'
"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("broken.toml"),
        "name = \"broken\"\n[[signal]]\nseverity = \"error\"\npattern = '(unclosed'\n",
    )
    .unwrap();
    let store = Store::new();
    let input = padded(b"", 50);
    let out = run_with(&store, &["--envelope", "always"], &input, Some(xdg.path()));
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("ignoring the family file").count(), 1, "reported once: {stderr}");
    assert!(stderr.contains("broken.toml"), "{stderr}");
    let h = header(&out.stdout);
    assert_eq!(h["family"], "shards");
    assert_eq!(h["verdict"]["passed"], 50);
    assert_eq!(h["signals"]["warning"], 1);

    // A user file named like a shipped family replaces it.
    std::fs::write(
        dir.join("go.toml"),
        "name = \"go\"\ndetect = ['^ok  \\t']\n[[verdict]]\npattern = '^ok  \\t'\nstatus = \"failed\"\n",
    )
    .unwrap();
    let out = run_with(&store, &["--envelope", "always"], &fixture("go/test-passing"), Some(xdg.path()));
    let h = header(&out.stdout);
    assert_eq!(h["family"], "go");
    assert_eq!(h["verdict"]["status"], "failed", "the user's go family decides");
}

mod props {
    use std::sync::Arc;

    use outbox::family::{spec, Classifier, FamilyOptions, Severity};
    use outbox::reference;
    use outbox::stream::scan::ScanConfig;
    use outbox::stream::signal;
    use proptest::prelude::*;

    fn engine() -> Arc<Classifier> {
        static E: std::sync::OnceLock<Arc<Classifier>> = std::sync::OnceLock::new();
        E.get_or_init(|| Arc::new(Classifier::new(&spec::embedded(), &FamilyOptions::default()).unwrap())).clone()
    }

    /// (hits, errors, warnings, kept line numbers with their block lines)
    type Seen = (u64, u64, u64, Vec<(u64, Vec<u64>)>);

    fn scan(data: &[u8], ends: &[usize]) -> Seen {
        let cfg = ScanConfig { budget: 2000, tail_lines: 5, tail_budget: 500, signal: signal::matcher(None).unwrap() };
        let mut sc = outbox::stream::scan::Scanner::new(cfg);
        sc.set_classifier(engine());
        for b in reference::blocks_at(data, ends) {
            sc.feed(b);
        }
        sc.finish();
        let r = sc.result();
        let mut kept: Vec<(u64, Vec<u64>)> =
            r.signals.kept_by_priority().iter().map(|k| (k.line.lineno, k.block_linenos.clone())).collect();
        kept.sort();
        (r.signals.hits(), r.signals.count(Severity::Error), r.signals.count(Severity::Warning), kept)
    }

    /// The contract, line by line: a line is a signal when the engine
    /// classifies it as one.
    fn naive_hits(data: &[u8]) -> u64 {
        let c = engine();
        let mut tally = c.tally();
        let body = data.strip_suffix(b"\n").unwrap_or(data);
        if data.is_empty() {
            return 0;
        }
        body.split(|&b| b == b'\n')
            .enumerate()
            .filter(|(i, l)| {
                let l = l.strip_suffix(b"\r").unwrap_or(l);
                c.prefilter().is_match(l) && c.classify(*i as u64 + 1, l, &mut tally).is_some()
            })
            .count() as u64
    }

    fn piece() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            "[a-z :/.]{0,12}".prop_map(|s| s.into_bytes()),
            Just(b"\n".to_vec()),
            Just(b"\n".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(b"error[E0308]: mismatched types\n  --> src/lib.rs:10:24\n   |\n".to_vec()),
            Just(b"E       assert 0.30000000000000004 == 0.3\n\ntest_calc.py:29: AssertionError\n".to_vec()),
            Just(b"--- FAIL: TestMean (0.00s)\n    mathx_test.go:19: Mean([1 2 4]) = 2, want 3\n".to_vec()),
            Just(b"0 failed so far; see error-handling.md; built with -Werror\n".to_vec()),
            Just("parser.c:7:9: 警告: x [-Wparentheses]\n".as_bytes().to_vec()),
            Just(b"\x1b[1m\x1b[91merror\x1b[0m\x1b[1m: length comparison to zero\x1b[0m\n".to_vec()),
            Just(b"Traceback (most recent call last):\n  File \"a.py\", line 3, in f\nKeyError: 'x'\n".to_vec()),
            Just(b"ok  \texample.com/fixture/strx\t0.002s\n".to_vec()),
            Just(vec![0xff, 0xe2]),
            (1usize..3000).prop_map(|n| vec![b'x'; n]),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Any split into blocks gives the same hits, severities, kept
        /// lines and blocks, and the hits are the naive count.
        #[test]
        fn family_scan_does_not_depend_on_blocks(
            parts in prop::collection::vec(piece(), 0..80),
            cuts in prop::collection::vec(0usize..20_000, 0..12),
        ) {
            let data = parts.concat();
            let mut ends = cuts.clone();
            ends.sort();
            let whole = scan(&data, &[]);
            prop_assert_eq!(&scan(&data, &ends), &whole);
            prop_assert_eq!(whole.0, naive_hits(&data));
        }
    }
}
