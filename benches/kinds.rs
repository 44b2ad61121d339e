//! The kinds stages, in bytes per second, on lines of real server logs
//! (tests/fixtures/families/server: PostgreSQL and nginx, captured by
//! scripts/capture-server-logs.sh), their digits rewritten from a seed:
//! a line's mask key, its template key, a classification answered from the
//! cache, one made whole (a miss), and the scanner with every family with
//! the cache and without, and on lines whose templates are all different
//! (a random word each: every line a miss).

use std::sync::Arc;

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use outbox::family::{spec, Classifier, FamilyOptions};
use outbox::stream::scan::{ScanConfig, Scanner};
use outbox::stream::signal;
use outbox::text::template;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/families/server");

/// The captured server logs, `size` bytes of them, digits rewritten (and,
/// with `unique`, a random word appended to each line).
fn server_log(size: usize, unique: bool) -> Vec<u8> {
    let mut src = Vec::new();
    for f in ["postgres.out", "nginx-error.out", "nginx-access.out"] {
        src.extend(std::fs::read(format!("{FIXTURES}/{f}")).expect("scripts/capture-server-logs.sh"));
    }
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::with_capacity(size + 4096);
    while out.len() < size {
        for line in src.split(|&b| b == b'\n') {
            for &b in line {
                out.push(if b.is_ascii_digit() { b'0' + (next() % 10) as u8 } else { b });
            }
            if unique {
                out.push(b' ');
                out.extend((0..8).map(|_| b'a' + (next() % 26) as u8));
            }
            out.push(b'\n');
        }
    }
    out
}

fn engine() -> Arc<Classifier> {
    Arc::new(Classifier::new(&spec::embedded(), &FamilyOptions::default()).unwrap())
}

fn scan(data: &[u8], c: &Arc<Classifier>, caching: bool) -> u64 {
    let cfg = ScanConfig { signal: signal::matcher(None).unwrap(), ..ScanConfig::default() };
    let mut sc = Scanner::new(cfg);
    sc.set_classifier(c.clone());
    sc.set_caching(caching);
    for block in data.chunks(1 << 20) {
        sc.feed(block);
    }
    sc.finish();
    sc.result().signals.hits()
}

fn stages(cr: &mut Criterion) {
    let data = server_log(8 << 20, false);
    let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    let c = engine();
    // The signal lines: what the keys and the classifier see.
    let signals: Vec<&[u8]> = {
        let mut t = c.tally();
        t.set_caching(false);
        lines.iter().copied().filter(|l| c.prefilter().is_match(l) && c.classify(1, l, &mut t).is_some()).collect()
    };
    let bytes: usize = signals.iter().map(|l| l.len() + 1).sum();
    let mut g = cr.benchmark_group("kinds");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.sample_size(10);
    g.bench_function("mask_key", |b| {
        b.iter(|| signals.iter().map(|l| outbox::text::mask::mask_key(black_box(l))).fold(0, u64::wrapping_add))
    });
    g.bench_function("template_key", |b| {
        b.iter(|| signals.iter().map(|l| template::key(black_box(l))).fold(0, u64::wrapping_add))
    });
    g.bench_function("classify_cache_hit", |b| {
        let mut t = c.tally();
        for l in &signals {
            c.classify(1, l, &mut t);
        }
        b.iter(|| signals.iter().enumerate().filter(|(i, l)| c.classify(*i as u64, l, &mut t).is_some()).count())
    });
    g.bench_function("classify_miss", |b| {
        let mut t = c.tally();
        t.set_caching(false);
        b.iter(|| signals.iter().enumerate().filter(|(i, l)| c.classify(*i as u64, l, &mut t).is_some()).count())
    });
    g.finish();

    let mut g = cr.benchmark_group("scan_server_log");
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.sample_size(10);
    g.bench_function("cached", |b| b.iter(|| scan(&data, &c, true)));
    g.bench_function("uncached", |b| b.iter(|| scan(&data, &c, false)));
    let unique = server_log(8 << 20, true);
    g.bench_function("unique_templates", |b| b.iter(|| scan(&unique, &c, true)));
    g.finish();
}

criterion_group!(benches, stages);
criterion_main!(benches);
