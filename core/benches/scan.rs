//! Scanner throughput on generated team-memory markdown.
//!
//! `cargo bench -p memsync-core --bench scan` prints time and MiB/s (criterion `Throughput::Bytes`)
//! for: typical notes (prose, lists, code fences, URLs, hashes, a little Unicode), one 100 KiB
//! file (the default size limit), CJK-heavy notes (the Unicode passes), a note with a
//! secret-looking assignment on every few lines, and an adversarial file (one huge line dense
//! with every detector's anchors, plus invisible and full-width characters).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use memsync_core::scan::{Scanner, scanner};

#[path = "../src/scan/tests/corpus.rs"]
mod corpus;

use corpus::{adversarial, cjk_notes, secret_dense, typical_markdown};

fn bench(c: &mut Criterion) {
    let shared = scanner();
    let mut group = c.benchmark_group("scan");

    let typical = typical_markdown(1 << 20);
    assert!(
        shared.scan(&typical).is_empty(),
        "the typical corpus should be clean"
    );
    group.throughput(Throughput::Bytes(typical.len() as u64));
    group.bench_function("typical_markdown_1MiB", |b| {
        b.iter(|| shared.scan(black_box(&typical)))
    });

    let file = typical_markdown(100 * 1024);
    let file = &file[..file.floor_char_boundary(100 * 1024)];
    group.throughput(Throughput::Bytes(file.len() as u64));
    group.bench_function("one_file_100KiB", |b| {
        b.iter(|| shared.scan(black_box(file)))
    });

    let cjk = cjk_notes(1 << 20);
    group.throughput(Throughput::Bytes(cjk.len() as u64));
    group.bench_function("cjk_notes_1MiB", |b| {
        b.iter(|| shared.scan(black_box(&cjk)))
    });

    let dense = secret_dense(1 << 20);
    group.throughput(Throughput::Bytes(dense.len() as u64));
    group.bench_function("secret_dense_1MiB", |b| {
        b.iter(|| shared.scan(black_box(&dense)))
    });
    let worst = adversarial(100 * 1024);
    group.throughput(Throughput::Bytes(worst.len() as u64));
    group.bench_function("adversarial_100KiB", |b| {
        b.iter(|| shared.scan(black_box(&worst)))
    });
    group.finish();

    c.bench_function("scanner_build", |b| b.iter(Scanner::new));
}

criterion_group!(benches, bench);
criterion_main!(benches);
