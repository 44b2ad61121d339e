//! Throughput of the per-stage work, in bytes per second: the scanner
//! (counts, tail, signals) on ASCII and Japanese text with few and many
//! signal lines, character counting alone, the content hashes, and the
//! envelope renderer.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use outbox::render::envelope::{self, Budgets};
use outbox::render::facts::RunFacts;
use outbox::stream::scan::{ScanConfig, Scanner};
use outbox::stream::signal;

const SIZE: usize = 32 << 20;
const BLOCK: usize = 1 << 20;

/// Deterministic log text: `every`-th line is a signal line.
fn log(size: usize, japanese: bool, every: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(size + 200);
    let mut i = 0usize;
    while out.len() < size {
        let line = match (japanese, i.is_multiple_of(every)) {
            (false, false) => format!(
                "2026-12-02T10:{:02}:{:02} INFO worker={} request served in {} ms\n",
                i % 60,
                i % 59,
                i % 16,
                i % 997
            ),
            (false, true) => {
                format!("2026-12-02T10:{:02}:{:02} ERROR worker={} request failed: timeout\n", i % 60, i % 59, i % 16)
            }
            (true, false) => format!("2026-12-02 {}番目の処理が完了しました。所要時間は{}ミリ秒です\n", i, i % 997),
            (true, true) => format!("2026-12-02 {}番目の処理で error が発生しました: 接続が切断されました\n", i),
        };
        out.extend_from_slice(line.as_bytes());
        i += 1;
    }
    out
}

fn scan(data: &[u8]) -> Scanner {
    let cfg = ScanConfig::default();
    let mut sc = Scanner::new(cfg);
    for block in data.chunks(BLOCK) {
        sc.feed(block);
    }
    sc.finish();
    sc
}

/// The scanner with every shipped family (what a default run uses).
fn scan_families(data: &[u8], classifier: &std::sync::Arc<outbox::family::Classifier>) -> Scanner {
    let cfg = ScanConfig { budget: 14_000, tail_lines: 20, tail_budget: 3_000, signal: signal::matcher(None).unwrap() };
    let mut sc = Scanner::new(cfg);
    sc.set_classifier(classifier.clone());
    for block in data.chunks(BLOCK) {
        sc.feed(block);
    }
    sc.finish();
    sc
}

fn bench_scanner(c: &mut Criterion) {
    let mut g = c.benchmark_group("scanner");
    g.sample_size(10);
    let families = std::sync::Arc::new(
        outbox::family::Classifier::new(&outbox::family::spec::embedded(), &outbox::family::FamilyOptions::default())
            .unwrap(),
    );
    for (name, japanese, every) in [
        ("ascii_few_signals", false, 10_000),
        ("ascii_10pct_signals", false, 10),
        ("japanese_few_signals", true, 10_000),
    ] {
        let data = log(SIZE, japanese, every);
        g.throughput(Throughput::Bytes(data.len() as u64));
        // The single default regex and every shipped family, side by side
        // (alternating on a loaded machine).
        g.bench_with_input(BenchmarkId::from_parameter(name), &data, |b, d| b.iter(|| black_box(scan(d).bytes())));
        g.bench_with_input(BenchmarkId::from_parameter(format!("{name}_families")), &data, |b, d| {
            b.iter(|| black_box(scan_families(d, &families).bytes()))
        });
    }
    g.finish();
}

fn bench_chars(c: &mut Criterion) {
    let mut g = c.benchmark_group("chars");
    for (name, japanese) in [("ascii", false), ("japanese", true)] {
        let data = log(SIZE, japanese, 10_000);
        g.throughput(Throughput::Bytes(data.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(name), &data, |b, d| {
            b.iter(|| {
                let mut cc = outbox::text::utf8::CharCounter::new();
                for block in d.chunks(BLOCK) {
                    cc.feed(block);
                }
                black_box(cc.finish())
            })
        });
    }
    g.finish();
}

fn bench_hash(c: &mut Criterion) {
    let data = log(SIZE, false, 10_000);
    let mut g = c.benchmark_group("hash");
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.bench_function("blake3", |b| {
        b.iter(|| {
            let mut h = blake3::Hasher::new();
            for block in data.chunks(BLOCK) {
                h.update(block);
            }
            black_box(h.finalize())
        })
    });
    // The alternative the spill thread could use: SHA-256, which the sha2
    // crate runs on SHA-NI when the CPU has it.
    g.bench_function("sha256", |b| {
        b.iter(|| {
            use sha2::Digest;
            let mut h = sha2::Sha256::new();
            for block in data.chunks(BLOCK) {
                h.update(block);
            }
            black_box(h.finalize())
        })
    });
    g.finish();
}

fn bench_render(c: &mut Criterion) {
    let data = log(8 << 20, false, 100);
    let sc = scan(&data);
    let re = signal::matcher(None).unwrap();
    let b = Budgets::default();
    let info = RunFacts { label: "bench".into(), id: "bench-000000000000".into(), ..RunFacts::default() };
    let mut g = c.benchmark_group("render");
    let out_len = envelope::render(&sc.result(), &b, &info, &re).len();
    g.throughput(Throughput::Bytes(out_len as u64));
    g.bench_function("envelope_14000", |bch| bch.iter(|| black_box(envelope::render(&sc.result(), &b, &info, &re))));
    g.finish();
}

criterion_group!(benches, bench_scanner, bench_chars, bench_hash, bench_render);
criterion_main!(benches);
