//! Throughput of avatar generation at the default size.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

fn avatar(c: &mut Criterion) {
    let mut n = 0u64;
    c.bench_function("render_svg 200px", |b| {
        b.iter(|| {
            n = n.wrapping_add(1);
            black_box(plaza_avatar::render_svg(&format!("bench-{n}"), 200))
        })
    });
}

criterion_group!(benches, avatar);
criterion_main!(benches);
