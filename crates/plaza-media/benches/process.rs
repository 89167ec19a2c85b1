//! Processing one 3000 × 2000 JPEG (about 2 MB) into its variants.

use std::io::Cursor;

use criterion::{Criterion, criterion_group, criterion_main};
use image::{DynamicImage, ImageFormat};
use plaza_media::{ImageKind, Limits, VariantSize, inspect, process};

fn photo() -> Vec<u8> {
    let image = DynamicImage::ImageRgb8(image::RgbImage::from_fn(3000, 2000, |x, y| {
        let noise = (x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) % 64;
        image::Rgb([
            (x % 256) as u8 ^ noise as u8,
            (y % 256) as u8,
            ((x * y) % 253) as u8,
        ])
    }));
    let mut bytes = Vec::new();
    image
        .write_to(&mut Cursor::new(&mut bytes), ImageFormat::Jpeg)
        .expect("encode");
    bytes
}

fn bench(c: &mut Criterion) {
    let bytes = photo();
    let limits = Limits {
        min_bytes: 1024,
        max_bytes: 5 * 1024 * 1024,
        max_width: 4096,
        max_height: 4096,
        kinds: &ImageKind::ALL,
    };
    let mut group = c.benchmark_group("upload");
    group.sample_size(10);
    group.bench_function("inspect 3000x2000 jpeg", |b| {
        b.iter(|| inspect(&bytes, &limits).unwrap())
    });
    group.bench_function("process 3000x2000 jpeg", |b| {
        b.iter(|| process(&bytes, inspect(&bytes, &limits).unwrap(), &VariantSize::ALL).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
