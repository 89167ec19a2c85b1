use super::*;

const LIMITS: Limits = Limits {
    min_bytes: 16,
    max_bytes: 5 * 1024 * 1024,
    max_width: 4096,
    max_height: 4096,
    kinds: &ImageKind::ALL,
};

fn picture(width: u32, height: u32) -> DynamicImage {
    DynamicImage::ImageRgb8(image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x % 251) as u8, (y % 241) as u8, ((x + y) % 239) as u8])
    }))
}

fn encoded(image: &DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut bytes = Vec::new();
    image
        .write_to(&mut Cursor::new(&mut bytes), format)
        .expect("encode");
    bytes
}

/// A JPEG with an EXIF segment holding a GPS tag right after its start.
fn jpeg_with_gps() -> Vec<u8> {
    let plain = encoded(&picture(64, 48), ImageFormat::Jpeg);
    // TIFF header (little endian), one IFD entry: tag 0x8825 (GPS IFD).
    let mut tiff = b"II*\x00\x08\x00\x00\x00\x01\x00\x25\x88\x04\x00\x01\x00\x00\x00\x1a\x00\x00\x00\x00\x00\x00\x00".to_vec();
    tiff.extend_from_slice(b"GPS 52.5200N 13.4050E");
    let mut exif = b"Exif\x00\x00".to_vec();
    exif.extend_from_slice(&tiff);
    let mut bytes = plain[..2].to_vec();
    bytes.extend_from_slice(&[0xFF, 0xE1]);
    bytes.extend_from_slice(&((exif.len() + 2) as u16).to_be_bytes());
    bytes.extend_from_slice(&exif);
    bytes.extend_from_slice(&plain[2..]);
    bytes
}

#[test]
fn the_type_comes_from_the_bytes() {
    let png = encoded(&picture(20, 20), ImageFormat::Png);
    assert_eq!(ImageKind::sniff(&png), Some(ImageKind::Png));
    assert_eq!(
        ImageKind::sniff(b"<!DOCTYPE html><script>alert(1)</script>"),
        None
    );
    let html = b"<html><body>not an image at all, padded to a reasonable size</body></html>";
    assert!(matches!(
        inspect(html, &LIMITS),
        Err(MediaError::UnsupportedType)
    ));
}

#[test]
fn every_accepted_format_passes_its_own_structure_walk() {
    for format in [
        ImageFormat::Jpeg,
        ImageFormat::Png,
        ImageFormat::Gif,
        ImageFormat::WebP,
    ] {
        let bytes = encoded(&picture(40, 30), format);
        let inspection =
            inspect(&bytes, &LIMITS).unwrap_or_else(|error| panic!("{format:?}: {error}"));
        assert_eq!(
            (inspection.width, inspection.height),
            (40, 30),
            "{format:?}"
        );
    }
    assert!(inspect(&jpeg_with_gps(), &LIMITS).is_ok());
}

#[test]
fn bytes_after_the_image_make_a_polyglot() {
    for format in [
        ImageFormat::Jpeg,
        ImageFormat::Png,
        ImageFormat::Gif,
        ImageFormat::WebP,
    ] {
        let mut bytes = encoded(&picture(40, 30), format);
        bytes.extend_from_slice(b"PK\x03\x04 a zip archive or <script>alert(1)</script>");
        assert!(
            matches!(inspect(&bytes, &LIMITS), Err(MediaError::Polyglot(_))),
            "{format:?}"
        );
    }
}

#[test]
fn a_small_file_claiming_huge_dimensions_is_refused_from_its_header() {
    let mut bytes = encoded(&picture(8, 8), ImageFormat::Png);
    // IHDR's width and height follow the signature, length and type.
    bytes[16..20].copy_from_slice(&60_000u32.to_be_bytes());
    bytes[20..24].copy_from_slice(&60_000u32.to_be_bytes());
    // The chunk's CRC covers its type and data.
    let crc = crc32(&bytes[12..29]);
    bytes[29..33].copy_from_slice(&crc.to_be_bytes());
    assert!(matches!(
        inspect(&bytes, &LIMITS),
        Err(MediaError::TooManyPixels {
            width: 60_000,
            height: 60_000,
            ..
        })
    ));
}

#[test]
fn animated_gifs_are_refused() {
    let mut bytes = Vec::new();
    {
        let mut encoder = image::codecs::gif::GifEncoder::new(&mut bytes);
        for shade in [0u8, 255] {
            let frame = image::RgbaImage::from_pixel(10, 10, image::Rgba([shade, 0, 0, 255]));
            encoder
                .encode_frame(image::Frame::new(frame))
                .expect("frame");
        }
    }
    assert!(matches!(
        inspect(&bytes, &LIMITS),
        Err(MediaError::Animated)
    ));
}

#[test]
fn sizes_outside_the_limits_are_refused() {
    let bytes = encoded(&picture(40, 30), ImageFormat::Png);
    let strict = Limits {
        min_bytes: bytes.len() + 1,
        ..LIMITS
    };
    assert!(matches!(
        inspect(&bytes, &strict),
        Err(MediaError::TooSmall { .. })
    ));
    let strict = Limits {
        max_bytes: bytes.len() - 1,
        ..LIMITS
    };
    assert!(matches!(
        inspect(&bytes, &strict),
        Err(MediaError::TooLarge { .. })
    ));
    let no_webp = Limits {
        kinds: &[ImageKind::Png, ImageKind::Jpeg, ImageKind::Gif],
        ..LIMITS
    };
    let webp = encoded(&picture(40, 30), ImageFormat::WebP);
    assert!(matches!(
        inspect(&webp, &no_webp),
        Err(MediaError::UnsupportedType)
    ));
}

#[test]
fn processing_strips_metadata_and_makes_the_variants() {
    let bytes = jpeg_with_gps();
    assert!(bytes.windows(4).any(|w| w == b"Exif"));
    let processed =
        process(&bytes, inspect(&bytes, &LIMITS).unwrap(), &VariantSize::ALL).expect("process");
    let original = &processed.original.bytes;
    assert!(!original.windows(4).any(|w| w == b"Exif"), "EXIF removed");
    assert!(!original.windows(3).any(|w| w == b"GPS"), "GPS removed");
    assert_eq!(processed.original.mime_type, "image/jpeg");
    assert_eq!(processed.sha256.len(), 64);
    let sizes: Vec<(u32, u32)> = processed
        .variants
        .iter()
        .map(|variant| (variant.image.width, variant.image.height))
        .collect();
    assert_eq!(sizes, [(48, 48), (64, 48), (64, 48)], "never enlarged");
}

/// A variant's name, width, height and its WebP copy's width and type.
type SizeRow<'a> = (&'a str, u32, u32, Option<(u32, &'a str)>);

#[test]
fn a_large_photo_gets_every_size() {
    let bytes = encoded(&picture(3000, 2000), ImageFormat::Jpeg);
    let processed =
        process(&bytes, inspect(&bytes, &LIMITS).unwrap(), &VariantSize::ALL).expect("process");
    let sizes: Vec<SizeRow> = processed
        .variants
        .iter()
        .map(|variant| {
            (
                variant.size.name(),
                variant.image.width,
                variant.image.height,
                variant
                    .webp
                    .as_ref()
                    .map(|webp| (webp.width, webp.mime_type)),
            )
        })
        .collect();
    assert_eq!(
        sizes,
        [
            ("thumbnail", 150, 150, Some((150, "image/webp"))),
            ("medium", 800, 533, Some((800, "image/webp"))),
            ("large", 1620, 1080, None),
        ]
    );
    let webp = &processed.variants[0]
        .webp
        .as_ref()
        .expect("a WebP thumbnail")
        .bytes;
    assert_eq!(ImageKind::sniff(webp), Some(ImageKind::Webp));
}

/// CRC-32 (IEEE), as PNG chunks carry it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
