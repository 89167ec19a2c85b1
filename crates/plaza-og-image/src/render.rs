//! SVG to PNG with resvg, using only the shipped fonts and refusing every
//! external reference.

use crate::fonts::Fonts;
use resvg::tiny_skia::{Pixmap, Transform};
use resvg::usvg::{ImageHrefResolver, Options, Tree};

/// Largest image [`render_png`] will allocate, per side, in pixels.
const MAX_SIDE: u32 = 4096;

/// Why a PNG could not be made. The caller serves [`crate::fallback_svg`]
/// then.
#[derive(Debug, thiserror::Error)]
pub enum OgError {
    /// The SVG could not be parsed.
    #[error("invalid SVG: {0}")]
    Svg(#[from] resvg::usvg::Error),
    /// The image is empty or larger than 4096 pixels on a side.
    #[error("image size {width}x{height} is not renderable")]
    Size {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
    },
    /// PNG encoding failed.
    #[error("PNG encoding failed: {0}")]
    Png(#[from] png::EncodingError),
}

/// Parses the shipped fonts now rather than on the first request.
pub fn preload() {
    let _ = Fonts::get();
}

fn options() -> Options<'static> {
    Options {
        fontdb: Fonts::get().database(),
        font_family: "DejaVu Sans".to_string(),
        image_href_resolver: ImageHrefResolver {
            // data: URLs only (the embedded avatar); never a file or URL.
            resolve_data: ImageHrefResolver::default_data_resolver(),
            resolve_string: Box::new(|_, _| None),
        },
        ..Options::default()
    }
}

/// Rasterises an SVG document (the card, or the fallback) to PNG bytes at
/// its own width and height.
///
/// Text is drawn with the fonts compiled into this crate only, so a machine
/// without fonts gives the same image; `href`s other than `data:` URLs are
/// ignored.
pub fn render_png(svg: &str) -> Result<Vec<u8>, OgError> {
    let tree = Tree::from_str(svg, &options())?;
    let size = tree.size().to_int_size();
    let (width, height) = (size.width(), size.height());
    if width > MAX_SIDE || height > MAX_SIDE {
        return Err(OgError::Size { width, height });
    }
    let mut pixmap = Pixmap::new(width, height).ok_or(OgError::Size { width, height })?;
    resvg::render(&tree, Transform::default(), &mut pixmap.as_mut());
    encode(&pixmap)
}

/// Encodes with fast compression; opaque images (every card) as RGB, which
/// is smaller and needs no un-premultiplying.
fn encode(pixmap: &Pixmap) -> Result<Vec<u8>, OgError> {
    let opaque = pixmap.pixels().iter().all(|p| p.alpha() == u8::MAX);
    let (colour, data): (png::ColorType, Vec<u8>) = if opaque {
        // Opaque premultiplied pixels are their straight values.
        let mut rgb = vec![0u8; pixmap.data().len() / 4 * 3];
        for (dst, src) in rgb.chunks_exact_mut(3).zip(pixmap.data().chunks_exact(4)) {
            dst[0] = src[0];
            dst[1] = src[1];
            dst[2] = src[2];
        }
        (png::ColorType::Rgb, rgb)
    } else {
        let mut rgba = Vec::with_capacity(pixmap.data().len());
        for pixel in pixmap.pixels() {
            let c = pixel.demultiply();
            rgba.extend_from_slice(&[c.red(), c.green(), c.blue(), c.alpha()]);
        }
        (png::ColorType::Rgba, rgba)
    };
    let mut out = Vec::with_capacity(data.len() / 4);
    let mut encoder = png::Encoder::new(&mut out, pixmap.width(), pixmap.height());
    encoder.set_color(colour);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(&data)?;
    writer.finish()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use resvg::usvg::{Group, Node, Rect};

    fn text_boxes(group: &Group, out: &mut Vec<Rect>) {
        for node in group.children() {
            match node {
                Node::Group(inner) => text_boxes(inner, out),
                Node::Text(text) => out.push(text.abs_bounding_box()),
                _ => {}
            }
        }
    }

    /// Lays the cards out with the real fonts and checks where every glyph
    /// lands: inside the quote column (right of the avatar) and the panel.
    #[test]
    fn no_text_leaves_the_card() {
        let cases = [
            ("a", "Short.".to_string(), "Me".to_string()),
            (
                "b",
                "word ".repeat(200),
                "A very long author name ".repeat(10),
            ),
            ("c", "W".repeat(2_000), "W".repeat(2_000)),
            ("d", "千里之行，始于足下。".repeat(60), "孔子".repeat(60)),
            ("e", "한국어 문장입니다 ".repeat(40), "작가".to_string()),
            (
                "f",
                "الحياة جميلة عندما نعيشها مع الأصدقاء ".repeat(20),
                "ابن خلدون".to_string(),
            ),
            ("g", "שלום עולם! ".repeat(50), "אנונימי".to_string()),
            ("h", "😀🚀👍👩‍👩‍👧🇫🇷❤️".repeat(80), "🙂".repeat(200)),
            (
                "i",
                "mixed English עם עברית and 中文 and العربية 😀 ".repeat(12),
                "x".to_string(),
            ),
            (
                "j",
                "\u{FDFD}\u{102A}\u{12000}𒀀 ꙮ ".repeat(100),
                "﷽".repeat(60),
            ),
        ];
        for (seed, quote, author) in cases {
            let svg = crate::render_svg(seed, &quote, &author);
            let tree = Tree::from_str(&svg, &options()).expect("parses");
            let mut boxes = Vec::new();
            text_boxes(tree.root(), &mut boxes);
            assert!(!boxes.is_empty(), "no text for {seed}");
            for b in boxes {
                assert!(
                    b.left() >= 420.0
                        && b.right() <= 1130.0
                        && b.top() >= 60.0
                        && b.bottom() <= 570.0,
                    "text of card {seed} at {b:?}"
                );
            }
        }
        for (title, tagline) in [
            ("W".repeat(500), "W".repeat(500)),
            ("中".repeat(300), "😀".repeat(300)),
        ] {
            let tree =
                Tree::from_str(&crate::fallback_svg(&title, &tagline), &options()).expect("parses");
            let mut boxes = Vec::new();
            text_boxes(tree.root(), &mut boxes);
            assert_eq!(boxes.len(), 2);
            for b in boxes {
                assert!(
                    b.left() >= 40.0 && b.right() <= 1160.0,
                    "fallback text at {b:?}"
                );
            }
        }
    }
}
