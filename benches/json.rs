//! Throughput of the JSON folds, in bytes per second, on generated input:
//! `fold_json` (buffer + parse + fold one document) and `ndjson` (stream
//! records through the folder), with a plain newline count over the same
//! NDJSON bytes as the line-scanning baseline.
//!
//! `fold_json_256MiB` against `simd_json_to_tape_256MiB` (issue 18): the
//! fold of a 256 MiB document beside simd-json's own parse of the same
//! bytes into one tape, the floor for anything that validates every byte
//! with it. The document is generated from a fixed pattern (no I/O). The
//! parse is timed on a fresh copy of the bytes (simd-json parses in place;
//! the copy is made outside the timing), the fold includes its own
//! buffering, as `--format json` does it. `OUTBOX_BENCH_JSON_MIB` sets
//! another size (the names keep `256MiB`), e.g. 16 to run it under
//! `valgrind --tool=callgrind`, whose instruction counts do not depend on
//! the load of a shared machine.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use outbox::json::ndjson::NdjsonFolder;
use outbox::json::{FoldContext, JsonCollector};
use outbox::stream::ingest::BlockSink;

const BLOCK: usize = 256 << 10;

fn record(i: usize) -> String {
    format!(
        r#"{{"id":{i},"ts":"2024-05-01T12:{:02}:{:02}Z","level":"{}","msg":"request {i} 完了 in {} ms","user":{{"id":{},"name":"利用者{}"}},"tags":["api","v2"],"latency":{}.{:03},"ok":{}}}"#,
        i / 60 % 60,
        i % 60,
        ["info", "warn", "error"][i % 3],
        i % 977,
        i % 5000,
        i % 5000,
        i % 900,
        i % 1000,
        !i.is_multiple_of(7)
    )
}

fn ndjson_input(target: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(target + 512);
    let mut i = 0;
    while out.len() < target {
        out.extend_from_slice(record(i).as_bytes());
        out.push(b'\n');
        i += 1;
    }
    out
}

fn json_input(target: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(target + 512);
    out.extend_from_slice(br#"{"meta":{"source":"bench","page":1},"data":{"items":["#);
    let mut i = 0;
    while out.len() < target {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(record(i).as_bytes());
        i += 1;
    }
    out.extend_from_slice(b"]}}");
    out
}

fn ctx(bytes: usize) -> FoldContext<'static> {
    FoldContext {
        bytes: bytes as u64,
        chars: bytes as u64,
        ..outbox::reference::fold_context(outbox::stream::defaults::BUDGET)
    }
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("json");
    g.sample_size(10);

    // Documents past the in-memory size are folded from the stored copy.
    let dir = tempfile::tempdir().expect("a scratch directory");
    let stored = |name: &str, doc: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, doc).expect("a stored copy");
        p
    };
    let doc = json_input(32 << 20);
    let doc_path = stored("doc", &doc);
    g.throughput(Throughput::Bytes(doc.len() as u64));
    g.bench_function("fold_json_32MiB", |b| {
        b.iter(|| {
            let mut col = JsonCollector::new(1 << 30);
            for block in doc.chunks(BLOCK) {
                col.feed(block);
            }
            black_box(col.fold(&ctx(doc.len()), Some(&doc_path)).expect("folds"))
        })
    });

    let mib: usize = std::env::var("OUTBOX_BENCH_JSON_MIB").ok().and_then(|v| v.parse().ok()).unwrap_or(256);
    let big = json_input(mib << 20);
    let big_path = stored("big", &big);
    g.throughput(Throughput::Bytes(big.len() as u64));
    g.bench_function("fold_json_256MiB", |b| {
        b.iter(|| {
            let mut col = JsonCollector::new(1 << 30);
            for block in big.chunks(BLOCK) {
                col.feed(block);
            }
            black_box(col.fold(&ctx(big.len()), Some(&big_path)).expect("folds"))
        })
    });
    g.bench_function("simd_json_to_tape_256MiB", |b| {
        b.iter_batched_ref(
            || big.clone(),
            |buf| black_box(simd_json::to_tape(buf).expect("parses").0.len()),
            BatchSize::PerIteration,
        )
    });
    drop(big);

    let lines = ndjson_input(64 << 20);
    g.throughput(Throughput::Bytes(lines.len() as u64));
    g.bench_function("ndjson_64MiB", |b| {
        b.iter(|| {
            let mut f = NdjsonFolder::new(8);
            for block in lines.chunks(BLOCK) {
                f.feed(block);
            }
            black_box(f.render(&ctx(lines.len())))
        })
    });
    g.bench_function("baseline_count_lines_64MiB", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for block in lines.chunks(BLOCK) {
                n += memchr::memchr_iter(b'\n', block).count();
            }
            black_box(n)
        })
    });
    g.bench_function("baseline_count_chars_64MiB", |b| {
        b.iter(|| {
            let mut c = outbox::text::utf8::CharCounter::new();
            for block in lines.chunks(BLOCK) {
                c.feed(block);
            }
            black_box(c.finish())
        })
    });
    g.finish();
}

criterion_group!(json_benches, benches);
criterion_main!(json_benches);
