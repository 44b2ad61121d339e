//! The classification cache against the whole classification: every line,
//! classified once with the cache (`family::cache`) and once without, gets
//! the same class and kind, and the run the same family evidence and
//! verdicts. Lines come again with their digits rewritten, so the cache
//! answers lines of one mask that differ in their digits (`0 failed` then
//! `3 failed`).
#![no_main]

use std::sync::OnceLock;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use outbox::family::{spec, Classifier, FamilyOptions};

/// Words the lines are made of: signal words of many families, numbers,
/// punctuation, and arbitrary bytes.
const WORDS: &[&str] = &[
    "error", "ERROR", "error:", "error[E0308]:", "warning:", "WARN", "FATAL", "failed", "FAILED", "failure", "0", "1",
    "3", "12", "007", " ", "  ", ":", "=", "[", "]", "(", ")", "'", "\"", "`", "TS2322", "E", "errors", "passed",
    "test result: ", "ok.", "FAILED.", " passed; ", " failed; ", " ignored", "Found ", " errors in ", "HTTP/1.1\" ",
    "\"GET / HTTP/1.1\" 503 ", "x.py", "src/a.rs", "Exception", "ValueError: ", "exit code ", "\t", "=== ",
    " in 0.1s", "Tests run: ", ", Failures: ", "-Werror", "[-Wunused]", "E   ", "--- FAIL: ", "no errors",
    "errors: 0", "Segmentation fault", "panicked at", "\x1b[31m", "npm ERR!", "BUILD FAILED", "✖ 3 problems",
];

#[derive(Arbitrary, Debug)]
enum Word {
    Known(u8),
    Byte(u8),
}

#[derive(Arbitrary, Debug)]
struct Case {
    lines: Vec<Vec<Word>>,
    /// Seeds the digits of each line's second coming.
    seed: u64,
}

fn engine() -> &'static Classifier {
    static E: OnceLock<Classifier> = OnceLock::new();
    E.get_or_init(|| Classifier::new(&spec::embedded(), &FamilyOptions::default()).expect("the shipped families"))
}

fn redigit(line: &[u8], seed: &mut u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        if line[i].is_ascii_digit() {
            while i < line.len() && line[i].is_ascii_digit() {
                i += 1;
            }
            *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let n = 1 + (*seed >> 60) % 3;
            for k in 0..n {
                out.push(b'0' + ((*seed >> (8 * k)) % 10) as u8);
            }
        } else {
            out.push(line[i]);
            i += 1;
        }
    }
    out
}

fuzz_target!(|c: Case| {
    let mut seed = c.seed;
    let mut all: Vec<Vec<u8>> = Vec::new();
    for words in c.lines.iter().take(400) {
        let mut line = Vec::new();
        for w in words.iter().take(40) {
            match w {
                Word::Known(k) => line.extend_from_slice(WORDS[*k as usize % WORDS.len()].as_bytes()),
                Word::Byte(b) if *b != b'\n' => line.push(*b),
                Word::Byte(_) => line.push(b' '),
            }
        }
        let again = redigit(&line, &mut seed);
        all.push(line);
        all.push(again);
    }
    if let Err(e) = outbox::reference::cached_agrees(engine(), all.iter().map(|l| &l[..])) {
        panic!("{e}");
    }
});
