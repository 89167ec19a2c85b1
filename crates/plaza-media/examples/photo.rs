//! Writes a photo-like 3000 × 2000 JPEG of about 2 MB (gradients with
//! noise, which compresses like a photograph) for the upload benchmark:
//! `cargo run --release -p plaza-media --example photo -- photo.jpg`.

use image::codecs::jpeg::JpegEncoder;

fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "photo.jpg".to_owned());
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let image = image::RgbImage::from_fn(3000, 2000, |x, y| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let noise = (seed % 27) as u32;
        image::Rgb([
            ((x / 12 + noise) % 256) as u8,
            ((y / 8 + noise) % 256) as u8,
            (((x + y) / 20 + noise) % 256) as u8,
        ])
    });
    let mut bytes = Vec::new();
    JpegEncoder::new_with_quality(&mut bytes, 80)
        .encode_image(&image)
        .expect("encode");
    std::fs::write(&path, &bytes).expect("write the photo");
    println!("{path}: {} bytes", bytes.len());
}
