//! Cost of each stage of an Open Graph card: building the SVG, and building
//! plus rasterising it to PNG.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

const QUOTE: &str = "Alone we can do so little; together we can do so much.";
const AUTHOR: &str = "Helen Keller";

fn og(c: &mut Criterion) {
    plaza_og_image::preload();
    let mut group = c.benchmark_group("og_image");
    group.sample_size(20);
    let mut n = 0u64;
    group.bench_function("render_svg", |b| {
        b.iter(|| {
            n = n.wrapping_add(1);
            black_box(plaza_og_image::render_svg(
                &format!("bench-{n}"),
                QUOTE,
                AUTHOR,
            ))
        })
    });
    group.bench_function("render_svg + render_png", |b| {
        b.iter(|| {
            n = n.wrapping_add(1);
            let svg = plaza_og_image::render_svg(&format!("bench-{n}"), QUOTE, AUTHOR);
            black_box(plaza_og_image::render_png(&svg))
        })
    });
    group.finish();
}

criterion_group!(benches, og);
criterion_main!(benches);
