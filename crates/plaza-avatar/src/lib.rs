//! Deterministic adventurer-style avatars as SVG.
//!
//! [`render_svg`] turns a seed string into a square SVG of a character (face,
//! skin tone, eyes, eyebrows, nose, mouth, hair style and colour, shirt and
//! optional glasses, earrings, freckles, blush and facial hair over a
//! background colour). Every choice comes from [`Prng`] over the seed, and
//! every coordinate is a literal, so the same seed and size give byte-identical
//! SVG on every machine and in every release of the same major version (the
//! golden files in `tests/golden/` pin this).
//!
//! The seed itself never appears in the output: the SVG holds only the
//! crate's own markup, so a hostile seed cannot inject anything.
//!
//! There is no HTTP here: the server's `GET /api/avatar-image`, the Open Graph
//! image and the public profile all call this library.

#![forbid(unsafe_code)]

mod parts;
mod prng;

pub use parts::Choices;
pub use prng::Prng;

use std::fmt::Write;

/// The version of what [`render_svg`] draws: raised whenever the same seed
/// and size give different bytes (the golden files change with it, and a
/// test pins the output of this version), so that whoever keeps avatars by
/// their parameters (the server's ETags and image cache) sees them change.
pub const RENDERER_VERSION: &str = "1";

/// Size used when the caller gives none (pixels).
pub const DEFAULT_SIZE: u32 = 200;
/// Smallest size accepted (pixels).
pub const MIN_SIZE: u32 = 50;
/// Largest size accepted (pixels).
pub const MAX_SIZE: u32 = 1000;

/// The PRNG domain of avatars, so other users of [`Prng`] over the same seed
/// draw an unrelated stream.
const DOMAIN: &str = "plaza-avatar/v1";

/// Why an avatar could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AvatarError {
    /// The requested size is outside `MIN_SIZE..=MAX_SIZE`.
    #[error("size must be between {MIN_SIZE} and {MAX_SIZE} pixels, got {0}")]
    SizeOutOfRange(u64),
    /// The size text is not a whole number.
    #[error("size must be a whole number of pixels between {MIN_SIZE} and {MAX_SIZE}")]
    InvalidSize,
}

/// Parses the `size` query value as sent by a client, so every caller applies
/// the same rule: `None` or an empty value gives [`DEFAULT_SIZE`], anything
/// else must be a whole number in `MIN_SIZE..=MAX_SIZE`.
pub fn parse_size(raw: Option<&str>) -> Result<u32, AvatarError> {
    let Some(raw) = raw.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(DEFAULT_SIZE);
    };
    if raw.len() > 20 || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AvatarError::InvalidSize);
    }
    let value: u64 = raw.parse().map_err(|_| AvatarError::InvalidSize)?;
    check_size(value)
}

fn check_size(size: u64) -> Result<u32, AvatarError> {
    u32::try_from(size)
        .ok()
        .filter(|s| (MIN_SIZE..=MAX_SIZE).contains(s))
        .ok_or(AvatarError::SizeOutOfRange(size))
}

/// The parts chosen for `seed`, for callers that want to know what an avatar
/// shows (tests of variety, alternative renderings).
pub fn choices(seed: &str) -> Choices {
    Choices::draw(&mut Prng::from_seed(DOMAIN, seed))
}

/// Renders the avatar of `seed` as a square SVG document of `size` pixels.
///
/// The document has `width`, `height` and a `viewBox` of `0 0 size size`,
/// no script, no external reference and no text taken from the seed.
pub fn render_svg(seed: &str, size: u32) -> Result<String, AvatarError> {
    let size = check_size(u64::from(size))?;
    let mut out = String::with_capacity(6 * 1024);
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{size}\" height=\"{size}\" \
         viewBox=\"0 0 {size} {size}\" role=\"img\" aria-label=\"Avatar\">\
         <g transform=\"scale({})\">",
        Scale(size)
    );
    choices(seed).write(&mut out);
    out.push_str("</g></svg>");
    Ok(out)
}

/// `size / 100` written exactly in decimal (the parts are drawn in a 100 by
/// 100 box), without floating point, so the text is the same everywhere.
struct Scale(u32);

impl std::fmt::Display for Scale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let whole = self.0 / 100;
        let hundredths = self.0 % 100;
        match (hundredths, hundredths % 10) {
            (0, _) => write!(f, "{whole}"),
            (_, 0) => write!(f, "{whole}.{}", hundredths / 10),
            _ => write!(f, "{whole}.{hundredths:02}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_is_exact_decimal() {
        assert_eq!(Scale(200).to_string(), "2");
        assert_eq!(Scale(50).to_string(), "0.5");
        assert_eq!(Scale(1000).to_string(), "10");
        assert_eq!(Scale(337).to_string(), "3.37");
        assert_eq!(Scale(305).to_string(), "3.05");
        assert_eq!(Scale(99).to_string(), "0.99");
    }

    #[test]
    fn parse_size_rules() {
        assert_eq!(parse_size(None), Ok(DEFAULT_SIZE));
        assert_eq!(parse_size(Some("")), Ok(DEFAULT_SIZE));
        assert_eq!(parse_size(Some("50")), Ok(50));
        assert_eq!(parse_size(Some(" 1000 ")), Ok(1000));
        assert_eq!(parse_size(Some("49")), Err(AvatarError::SizeOutOfRange(49)));
        assert_eq!(
            parse_size(Some("1001")),
            Err(AvatarError::SizeOutOfRange(1001))
        );
        assert_eq!(parse_size(Some("0")), Err(AvatarError::SizeOutOfRange(0)));
        assert_eq!(
            parse_size(Some("4294967296")),
            Err(AvatarError::SizeOutOfRange(4_294_967_296))
        );
        assert_eq!(
            parse_size(Some("99999999999999999999")),
            Err(AvatarError::InvalidSize)
        );
        assert_eq!(parse_size(Some("-5")), Err(AvatarError::InvalidSize));
        assert_eq!(parse_size(Some("12px")), Err(AvatarError::InvalidSize));
        assert_eq!(parse_size(Some("1e3")), Err(AvatarError::InvalidSize));
        assert_eq!(
            parse_size(Some("123456789012345678901")),
            Err(AvatarError::InvalidSize)
        );
    }
}
