//! Checks and processing for uploaded images, with no HTTP in it.
//!
//! [`inspect`] decides what a file is from its bytes alone (never a name or
//! a declared type), reads its dimensions from the header without decoding
//! the pixels (a small file that claims 60000 × 60000 is refused before
//! anything is allocated for it), and walks the format's structure to its
//! end: bytes after it (a ZIP or a script appended to an image, a
//! polyglot) refuse the file. [`process`] then decodes it, applies the EXIF
//! orientation, and writes it again, which leaves every piece of metadata
//! (EXIF with GPS, XMP, text chunks, comments) behind, along with resized
//! variants and WebP copies.

#![forbid(unsafe_code)]

mod structure;

use std::io::Cursor;

use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::codecs::webp::WebPEncoder;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader};
use sha2::{Digest, Sha256};

/// The accepted formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    Jpeg,
    Png,
    Gif,
    Webp,
}

impl ImageKind {
    pub const ALL: [ImageKind; 4] = [
        ImageKind::Jpeg,
        ImageKind::Png,
        ImageKind::Webp,
        ImageKind::Gif,
    ];

    pub fn mime_type(self) -> &'static str {
        match self {
            ImageKind::Jpeg => "image/jpeg",
            ImageKind::Png => "image/png",
            ImageKind::Gif => "image/gif",
            ImageKind::Webp => "image/webp",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            ImageKind::Jpeg => "jpg",
            ImageKind::Png => "png",
            ImageKind::Gif => "gif",
            ImageKind::Webp => "webp",
        }
    }

    /// The format the leading bytes (magic numbers) announce.
    pub fn sniff(bytes: &[u8]) -> Option<ImageKind> {
        if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(ImageKind::Jpeg)
        } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(ImageKind::Png)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(ImageKind::Gif)
        } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
            Some(ImageKind::Webp)
        } else {
            None
        }
    }

    fn format(self) -> ImageFormat {
        match self {
            ImageKind::Jpeg => ImageFormat::Jpeg,
            ImageKind::Png => ImageFormat::Png,
            ImageKind::Gif => ImageFormat::Gif,
            ImageKind::Webp => ImageFormat::WebP,
        }
    }
}

/// What a file may be.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub min_bytes: usize,
    pub max_bytes: usize,
    pub max_width: u32,
    pub max_height: u32,
    /// Accepted formats (custom emoji take no WebP).
    pub kinds: &'static [ImageKind],
}

/// Why a file is refused, or why processing failed.
#[derive(Debug, thiserror::Error)]
pub enum MediaError {
    #[error("the file is not one of the accepted image types")]
    UnsupportedType,
    #[error("the file is {size} bytes; at least {min} are required")]
    TooSmall { size: usize, min: usize },
    #[error("the file is {size} bytes; at most {max} are accepted")]
    TooLarge { size: usize, max: usize },
    #[error("the image is {width}×{height} pixels; at most {max_width}×{max_height} are accepted")]
    TooManyPixels {
        width: u32,
        height: u32,
        max_width: u32,
        max_height: u32,
    },
    /// Bytes before or after the image's own structure: another file
    /// smuggled in with the image.
    #[error("the file holds data outside the image ({0})")]
    Polyglot(String),
    #[error("animated images are not accepted; upload a still image")]
    Animated,
    #[error("the image is damaged or truncated ({0})")]
    Corrupt(String),
    /// Writing an image failed: a bug, not the client's fault.
    #[error("encoding the image failed: {0}")]
    Encode(String),
}

/// A file that passed [`inspect`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inspection {
    pub kind: ImageKind,
    pub width: u32,
    pub height: u32,
}

/// Decides the type from the bytes, checks the size, the structure (no
/// polyglot, no animation) and the dimensions from the header. Nothing is
/// decoded.
pub fn inspect(bytes: &[u8], limits: &Limits) -> Result<Inspection, MediaError> {
    let kind = ImageKind::sniff(bytes)
        .filter(|kind| limits.kinds.contains(kind))
        .ok_or(MediaError::UnsupportedType)?;
    if bytes.len() > limits.max_bytes {
        return Err(MediaError::TooLarge {
            size: bytes.len(),
            max: limits.max_bytes,
        });
    }
    if bytes.len() < limits.min_bytes {
        return Err(MediaError::TooSmall {
            size: bytes.len(),
            min: limits.min_bytes,
        });
    }
    structure::check(kind, bytes)?;
    let (width, height) = ImageReader::with_format(Cursor::new(bytes), kind.format())
        .into_dimensions()
        .map_err(|error| MediaError::Corrupt(error.to_string()))?;
    if width > limits.max_width || height > limits.max_height || width == 0 || height == 0 {
        return Err(MediaError::TooManyPixels {
            width,
            height,
            max_width: limits.max_width,
            max_height: limits.max_height,
        });
    }
    Ok(Inspection {
        kind,
        width,
        height,
    })
}

/// The sizes made of every upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VariantSize {
    /// 150 × 150, cropped to fill.
    Thumbnail,
    /// Fits 800 × 600.
    Medium,
    /// Fits 1920 × 1080.
    Large,
}

impl VariantSize {
    pub const ALL: [VariantSize; 3] = [
        VariantSize::Thumbnail,
        VariantSize::Medium,
        VariantSize::Large,
    ];

    pub fn name(self) -> &'static str {
        match self {
            VariantSize::Thumbnail => "thumbnail",
            VariantSize::Medium => "medium",
            VariantSize::Large => "large",
        }
    }

    fn bounds(self) -> (u32, u32) {
        match self {
            VariantSize::Thumbnail => (150, 150),
            VariantSize::Medium => (800, 600),
            VariantSize::Large => (1920, 1080),
        }
    }
}

/// One encoded image.
#[derive(Debug, Clone)]
pub struct Encoded {
    pub bytes: Vec<u8>,
    pub mime_type: &'static str,
    pub extension: &'static str,
    pub width: u32,
    pub height: u32,
}

/// One variant, in the upload's own format family and, for the thumbnail
/// and medium sizes, as WebP.
#[derive(Debug, Clone)]
pub struct Variant {
    pub size: VariantSize,
    pub image: Encoded,
    /// The encoder at hand writes lossless WebP only; at the large size
    /// that is several times the JPEG (2.1 MB against 382 KB for a
    /// 1620 × 1080 photo) and the slowest step, so the large size has none.
    pub webp: Option<Encoded>,
}

/// An upload ready to store.
#[derive(Debug, Clone)]
pub struct Processed {
    /// The original written again: same format, orientation applied, no
    /// metadata.
    pub original: Encoded,
    /// SHA-256 of [`Processed::original`], hex.
    pub sha256: String,
    pub variants: Vec<Variant>,
}

/// Pixels a decode may allocate for at most: 4096 × 4096 RGBA, twice.
const MAX_DECODE_BYTES: u64 = 4096 * 4096 * 4 * 2;

/// Decodes an inspected file and writes it again with the variants of
/// `sizes` ([`VariantSize::ALL`] for a photo, none for a custom emoji).
/// The original is encoded on a second thread while the variants are
/// made from the same decoded pixels: one upload keeps two cores busy.
/// CPU-bound: run it off the async threads.
pub fn process(
    bytes: &[u8],
    inspection: Inspection,
    sizes: &[VariantSize],
) -> Result<Processed, MediaError> {
    let image = decode(bytes, inspection)?;
    let (original, variants) = std::thread::scope(|scope| {
        let original = (!sizes.is_empty()).then(|| scope.spawn(|| encode(&image, inspection.kind)));
        let variants = variants(&image, inspection.kind, sizes);
        let original = match original {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|_| Err(MediaError::Encode("the encoder panicked".to_owned()))),
            None => encode(&image, inspection.kind),
        };
        (original, variants)
    });
    let original = original?;
    let sha256 = hex(&Sha256::digest(&original.bytes));
    Ok(Processed {
        original,
        sha256,
        variants: variants?,
    })
}

/// The resized variants of `sizes`, each in the upload's format family and,
/// but for the large size, as WebP.
fn variants(
    image: &DynamicImage,
    kind: ImageKind,
    sizes: &[VariantSize],
) -> Result<Vec<Variant>, MediaError> {
    sizes
        .iter()
        .map(|&size| {
            let resized = resize(image, size);
            let webp = match size {
                VariantSize::Large => None,
                _ => Some(encode(&resized, ImageKind::Webp)?),
            };
            Ok(Variant {
                size,
                image: encode(&resized, variant_kind(kind))?,
                webp,
            })
        })
        .collect()
}

/// Decodes, bounded by the inspection's size, with the EXIF orientation
/// applied (the EXIF itself is not kept, so the pixels must carry it).
fn decode(bytes: &[u8], inspection: Inspection) -> Result<DynamicImage, MediaError> {
    let mut reader = ImageReader::with_format(Cursor::new(bytes), inspection.kind.format());
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(inspection.width);
    limits.max_image_height = Some(inspection.height);
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    reader.limits(limits);
    let mut decoder = reader
        .into_decoder()
        .map_err(|error| MediaError::Corrupt(error.to_string()))?;
    let orientation = decoder
        .orientation()
        .map_err(|error| MediaError::Corrupt(error.to_string()))?;
    let mut image = DynamicImage::from_decoder(decoder)
        .map_err(|error| MediaError::Corrupt(error.to_string()))?;
    image.apply_orientation(orientation);
    Ok(image)
}

/// Variants of JPEGs stay JPEG; the others become PNG (a GIF's palette
/// does not survive resampling well, and PNG keeps transparency).
fn variant_kind(kind: ImageKind) -> ImageKind {
    match kind {
        ImageKind::Jpeg => ImageKind::Jpeg,
        _ => ImageKind::Png,
    }
}

/// Never larger than the original: a small image is its own variant, and
/// the thumbnail of an image under 150 pixels on a side is its centred
/// square, not enlarged. Downscaling averages whole source pixels in
/// integers (`thumbnail`): the filtered `resize` kept a float copy of the
/// image per pass (about 50 MB for the large size of a 3000 × 2000 photo)
/// and took twice as long.
fn resize(image: &DynamicImage, size: VariantSize) -> DynamicImage {
    let (width, height) = size.bounds();
    match size {
        VariantSize::Thumbnail => {
            let side = image.width().min(image.height());
            let square = image.crop_imm(
                (image.width() - side) / 2,
                (image.height() - side) / 2,
                side,
                side,
            );
            if side > width {
                square.thumbnail_exact(width, height)
            } else {
                square
            }
        }
        _ if image.width() <= width && image.height() <= height => image.clone(),
        _ => image.thumbnail(width, height),
    }
}

/// JPEG quality of written JPEGs.
const JPEG_QUALITY: u8 = 85;

fn encode(image: &DynamicImage, kind: ImageKind) -> Result<Encoded, MediaError> {
    let mut bytes = Vec::new();
    let failed = |error: image::ImageError| MediaError::Encode(error.to_string());
    match kind {
        ImageKind::Jpeg => {
            let mut encoder = JpegEncoder::new_with_quality(&mut bytes, JPEG_QUALITY);
            // A decoded JPEG is RGB already: encode it in place rather than
            // copying 18 MB of a 6-megapixel photo first.
            match image.as_rgb8() {
                Some(rgb) => encoder.encode_image(rgb),
                None => encoder.encode_image(&image.to_rgb8()),
            }
            .map_err(failed)?;
        }
        ImageKind::Png => image
            .write_with_encoder(PngEncoder::new(&mut bytes))
            .map_err(failed)?,
        ImageKind::Gif => image
            .write_to(&mut Cursor::new(&mut bytes), ImageFormat::Gif)
            .map_err(failed)?,
        ImageKind::Webp => {
            let rgba = image.to_rgba8();
            WebPEncoder::new_lossless(&mut bytes)
                .encode(
                    rgba.as_raw(),
                    rgba.width(),
                    rgba.height(),
                    image::ExtendedColorType::Rgba8,
                )
                .map_err(failed)?;
        }
    }
    Ok(Encoded {
        bytes,
        mime_type: kind.mime_type(),
        extension: kind.extension(),
        width: image.width(),
        height: image.height(),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests;
