//! Open Graph share images: 1200 by 630 cards with a seeded pattern
//! background, the seed's avatar and a quote fitted inside the card.
//!
//! [`render_svg`] builds the card as SVG text (deterministic: the same seed,
//! quote and author give the same bytes on every machine), [`render_png`]
//! rasterises any such SVG with resvg using only the fonts shipped in this
//! crate, and [`fallback_svg`] is the card served when generation fails.
//! [`quotes::QuoteSource`] picks a quote from external providers when the
//! caller has none. There is no HTTP server here: the routes are thin
//! wrappers in the server crate.

#![forbid(unsafe_code)]

mod background;
mod fonts;
pub mod quotes;
mod render;
mod text;

pub use background::PALETTE;
pub use fonts::FONT_FAMILY;
pub use render::{OgError, preload, render_png};
pub use text::{MAX_AUTHOR_CHARS, MAX_QUOTE_CHARS};

/// A quote as [`render_svg`] draws it: whitespace collapsed, control and
/// bidi override characters dropped, at most [`MAX_QUOTE_CHARS`]. Two quotes
/// with the same clean form give the same card.
pub fn clean_quote(quote: &str) -> String {
    text::clean(quote, MAX_QUOTE_CHARS)
}

/// An author as [`render_svg`] draws it, like [`clean_quote`] with
/// [`MAX_AUTHOR_CHARS`].
pub fn clean_author(author: &str) -> String {
    text::clean(author, MAX_AUTHOR_CHARS)
}

use base64::Engine as _;
use fonts::Weight;
use plaza_avatar::Prng;
use std::fmt::Write;

/// The version of what [`render_svg`] and [`render_png`] make: raised
/// whenever the same seed, quote and author give different SVG or PNG bytes
/// (a change of the drawing, the fonts or the rasteriser; a test pins the
/// SVG of this version), so that whoever keeps cards by their parameters
/// (the server's ETags and image cache) sees them change. The embedded
/// avatar has its own, `plaza_avatar::RENDERER_VERSION`.
pub const RENDERER_VERSION: &str = "1";

/// Card width in pixels.
pub const WIDTH: u32 = 1200;
/// Card height in pixels.
pub const HEIGHT: u32 = 630;
/// Longest site title kept by [`fallback_svg`], in characters.
pub const MAX_TITLE_CHARS: usize = 80;
/// Longest tagline kept by [`fallback_svg`], in characters.
pub const MAX_TAGLINE_CHARS: usize = 160;

/// The PRNG domain of the background, distinct from the avatar's.
const DOMAIN: &str = "plaza-og-image/v1";
const TEXT_COLOUR: &str = "#f5f5fa";
const AUTHOR_COLOUR: &str = "#c9cbe0";
/// Avatar frame: centre and radius of the circle it is clipped to.
const AVATAR_CX: u32 = 250;
const AVATAR_CY: u32 = 315;
const AVATAR_SIZE: u32 = 300;
/// Quote box (left, top, width) and the author line's baseline.
const TEXT_LEFT: u32 = 450;
const TEXT_WIDTH: u32 = 650;
/// Fitting uses a little less than the box so that shaping (which can make
/// a line a bit wider than the sum of its advances) never reaches the edge.
const FIT_WIDTH: u32 = 610;
const TEXT_TOP: u32 = 90;
const AUTHOR_BASELINE: u32 = 540;

/// A random seed, for `random=true`: 16 hexadecimal digits from the thread
/// RNG.
pub fn random_seed() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// Builds the card for `seed` with `quote` and `author` as an SVG document of
/// 1200 by 630.
///
/// The quote and author are cleaned (whitespace collapsed, control and bidi
/// override characters dropped), bounded ([`MAX_QUOTE_CHARS`],
/// [`MAX_AUTHOR_CHARS`]), escaped, and wrapped and sized so that no text
/// leaves the card. An empty author leaves the author line out.
pub fn render_svg(seed: &str, quote: &str, author: &str) -> String {
    let background = background::draw(&mut Prng::from_seed(DOMAIN, seed));
    let border = background.border;
    let quote = text::clean(quote, MAX_QUOTE_CHARS);
    let author = text::clean(author, MAX_AUTHOR_CHARS);

    let mut out = String::with_capacity(32 * 1024);
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         viewBox=\"0 0 {WIDTH} {HEIGHT}\"><defs><clipPath id=\"plaza-og-avatar\">\
         <circle cx=\"{AVATAR_CX}\" cy=\"{AVATAR_CY}\" r=\"{r}\"/></clipPath></defs>\
         <rect width=\"{WIDTH}\" height=\"{HEIGHT}\" fill=\"{bg}\"/>{layers}\
         <rect x=\"48\" y=\"48\" width=\"1104\" height=\"534\" rx=\"28\" fill=\"{bg}\" fill-opacity=\".78\"/>\
         <circle cx=\"{AVATAR_CX}\" cy=\"{AVATAR_CY}\" r=\"{ring}\" fill=\"{border}\"/>",
        r = AVATAR_SIZE / 2,
        ring = AVATAR_SIZE / 2 + 8,
        bg = background::BACKGROUND,
        layers = background.svg,
    );
    if let Ok(avatar) = plaza_avatar::render_svg(seed, AVATAR_SIZE) {
        let _ = write!(
            out,
            "<image x=\"{}\" y=\"{}\" width=\"{AVATAR_SIZE}\" height=\"{AVATAR_SIZE}\" \
             clip-path=\"url(#plaza-og-avatar)\" href=\"data:image/svg+xml;base64,{}\"/>",
            AVATAR_CX - AVATAR_SIZE / 2,
            AVATAR_CY - AVATAR_SIZE / 2,
            base64::engine::general_purpose::STANDARD.encode(avatar)
        );
    }
    write_quote(&mut out, &quote, !author.is_empty());
    if !author.is_empty() {
        let (line, size) = text::fit_line(&format!("— {author}"), Weight::Bold, FIT_WIDTH, 34, 18);
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"80\" height=\"6\" rx=\"3\" fill=\"{border}\"/>\
             <text x=\"{}\" y=\"{AUTHOR_BASELINE}\" font-family=\"{FONT_FAMILY}\" font-size=\"{size}\" \
             font-weight=\"bold\" text-anchor=\"middle\" fill=\"{AUTHOR_COLOUR}\"{dir}>{}</text>",
            TEXT_LEFT + TEXT_WIDTH / 2 - 40,
            AUTHOR_BASELINE - 52,
            TEXT_LEFT + TEXT_WIDTH / 2,
            line_text(&line.text, text::is_rtl(&author)),
            dir = direction(&author),
        );
    }
    let _ = write!(
        out,
        "<rect x=\"8\" y=\"8\" width=\"1184\" height=\"614\" rx=\"20\" fill=\"none\" \
         stroke=\"{border}\" stroke-width=\"16\"/></svg>"
    );
    out
}

/// ` direction="rtl"` for right-to-left text, so browsers lay it out right.
fn direction(text: &str) -> &'static str {
    if text::is_rtl(text) {
        " direction=\"rtl\""
    } else {
        ""
    }
}

/// The escaped text of one line; a right-to-left line is framed by
/// right-to-left marks, so that a renderer with a left-to-right base
/// direction (resvg) still puts its leading and trailing punctuation on the
/// right sides.
fn line_text(text: &str, rtl: bool) -> String {
    if rtl {
        format!("\u{200F}{}\u{200F}", text::escape(text))
    } else {
        text::escape(text)
    }
}

/// Writes the quote, wrapped and sized to its box, centred on the box.
fn write_quote(out: &mut String, quote: &str, with_author: bool) {
    if quote.is_empty() {
        return;
    }
    let rtl = text::is_rtl(quote);
    // Curly quotes around left-to-right text; right-to-left text would need
    // them mirrored, so it goes without.
    let shown = if rtl {
        quote.to_string()
    } else {
        format!("“{quote}”")
    };
    let bottom = if with_author {
        AUTHOR_BASELINE - 70
    } else {
        HEIGHT - 90
    };
    let height = bottom - TEXT_TOP;
    let block = text::fit_block(&shown, Weight::Regular, FIT_WIDTH, height, 60, 18);
    let lines = u32::try_from(block.lines.len()).unwrap_or(u32::MAX);
    let used = block.line_height.saturating_mul(lines);
    let top = TEXT_TOP + height.saturating_sub(used) / 2;
    let _ = write!(
        out,
        "<g font-family=\"{FONT_FAMILY}\" font-size=\"{}\" text-anchor=\"middle\" fill=\"{TEXT_COLOUR}\"{}>",
        block.size,
        direction(quote),
    );
    for (index, line) in (0u32..).zip(&block.lines) {
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\">{}</text>",
            TEXT_LEFT + TEXT_WIDTH / 2,
            top + index * block.line_height + block.size,
            line_text(&line.text, rtl)
        );
    }
    out.push_str("</g>");
}

/// The card served when generation fails: 1200 by 630, dark fill, the site
/// title and tagline centred (cleaned, bounded to [`MAX_TITLE_CHARS`] and
/// [`MAX_TAGLINE_CHARS`], escaped and sized to fit).
pub fn fallback_svg(site_title: &str, tagline: &str) -> String {
    let title = text::clean(site_title, MAX_TITLE_CHARS);
    let tagline = text::clean(tagline, MAX_TAGLINE_CHARS);
    let (title, title_size) = text::fit_line(&title, Weight::Bold, 1040, 72, 24);
    let (tagline, tagline_size) = text::fit_line(&tagline, Weight::Regular, 1040, 36, 16);
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         viewBox=\"0 0 {WIDTH} {HEIGHT}\"><rect width=\"{WIDTH}\" height=\"{HEIGHT}\" fill=\"{bg}\"/>\
         <g font-family=\"{FONT_FAMILY}\" text-anchor=\"middle\">\
         <text x=\"600\" y=\"300\" font-size=\"{title_size}\" font-weight=\"bold\" fill=\"{TEXT_COLOUR}\"{title_dir}>{}</text>\
         <text x=\"600\" y=\"370\" font-size=\"{tagline_size}\" fill=\"{AUTHOR_COLOUR}\"{tagline_dir}>{}</text>\
         </g></svg>",
        line_text(&title.text, text::is_rtl(&title.text)),
        line_text(&tagline.text, text::is_rtl(&tagline.text)),
        bg = background::BACKGROUND,
        title_dir = direction(&title.text),
        tagline_dir = direction(&tagline.text),
    )
}
