//! The fonts shipped inside the binary, for both text measurement and
//! rendering, so a machine with no fonts installed renders the same PNG.
//!
//! Coverage: DejaVu Sans (Latin, Greek, Cyrillic, Armenian, Georgian, Hebrew,
//! Arabic, many symbols), WenQuanYi Micro Hei (Chinese, Japanese, Korean) and
//! Symbola (emoji and pictographs, drawn in one colour). Licences are in
//! `fonts/LICENSE-*.txt`.

use resvg::usvg::fontdb;
use std::sync::{Arc, OnceLock};

static DEJAVU_SANS: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");
static DEJAVU_SANS_BOLD: &[u8] = include_bytes!("../fonts/DejaVuSans-Bold.ttf");
static WQY_MICRO_HEI: &[u8] = include_bytes!("../fonts/wqy-microhei.ttc");
static SYMBOLA: &[u8] = include_bytes!("../fonts/Symbola.ttf");

/// The `font-family` value written into the SVG: the shipped families first
/// (the PNG renderer has only those), then a generic family for browsers that
/// show the SVG without them.
pub const FONT_FAMILY: &str = "DejaVu Sans, WenQuanYi Micro Hei, Symbola, sans-serif";

/// Widths are measured in 1/`EM` of the font size, in integers, so that the
/// layout (and so the SVG text) is the same on every machine.
pub const EM: u64 = 2048;

/// Regular or bold text (the author line is bold).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weight {
    /// DejaVu Sans.
    Regular,
    /// DejaVu Sans Bold.
    Bold,
}

/// One parsed face and its scale to [`EM`] units.
struct Face {
    face: ttf_parser::Face<'static>,
    units_per_em: u64,
}

impl Face {
    fn parse(data: &'static [u8]) -> Option<Self> {
        let face = ttf_parser::Face::parse(data, 0).ok()?;
        let units_per_em = u64::from(face.units_per_em()).max(1);
        Some(Self { face, units_per_em })
    }

    fn advance(&self, c: char) -> Option<u64> {
        let glyph = self.face.glyph_index(c)?;
        let advance = u64::from(self.face.glyph_hor_advance(glyph)?);
        Some(advance * EM / self.units_per_em)
    }
}

/// The shipped fonts, parsed once per process.
pub struct Fonts {
    db: Arc<fontdb::Database>,
    regular: Vec<Face>,
    bold: Vec<Face>,
    notdef: u64,
}

impl Fonts {
    /// The process-wide fonts (parsed on first use).
    pub fn get() -> &'static Fonts {
        static FONTS: OnceLock<Fonts> = OnceLock::new();
        FONTS.get_or_init(Fonts::load)
    }

    fn load() -> Self {
        let mut db = fontdb::Database::new();
        // The order matters: usvg falls back through the faces in this order,
        // and `advance` below follows the same order.
        for data in [DEJAVU_SANS, DEJAVU_SANS_BOLD, WQY_MICRO_HEI, SYMBOLA] {
            db.load_font_source(fontdb::Source::Binary(Arc::new(data)));
        }
        db.set_sans_serif_family("DejaVu Sans");
        let faces = |list: &[&'static [u8]]| -> Vec<Face> {
            list.iter().filter_map(|data| Face::parse(data)).collect()
        };
        let regular = faces(&[DEJAVU_SANS, WQY_MICRO_HEI, SYMBOLA]);
        let bold = faces(&[DEJAVU_SANS_BOLD, DEJAVU_SANS, WQY_MICRO_HEI, SYMBOLA]);
        let notdef = regular
            .first()
            .and_then(|f| {
                f.face
                    .glyph_hor_advance(ttf_parser::GlyphId(0))
                    .map(|a| (f, a))
            })
            .map_or(EM / 2, |(f, a)| u64::from(a) * EM / f.units_per_em);
        Self {
            db: Arc::new(db),
            regular,
            bold,
            notdef,
        }
    }

    /// The font database handed to usvg: only the shipped fonts.
    pub fn database(&self) -> Arc<fontdb::Database> {
        Arc::clone(&self.db)
    }

    /// Advance of `c` in [`EM`] units, from the first font that has it (the
    /// renderer's fallback order); characters that draw nothing measure 0 and
    /// characters no font has measure as the missing-glyph box.
    pub fn advance(&self, c: char, weight: Weight) -> u64 {
        if is_zero_width(c) {
            return 0;
        }
        let chain = match weight {
            Weight::Regular => &self.regular,
            Weight::Bold => &self.bold,
        };
        chain
            .iter()
            .find_map(|f| f.advance(c))
            .unwrap_or(self.notdef)
    }

    /// Width of `text` in [`EM`] units.
    pub fn width(&self, text: &str, weight: Weight) -> u64 {
        text.chars().map(|c| self.advance(c, weight)).sum()
    }
}

/// Joiners, variation selectors, emoji tags and combining marks, which the
/// shaper draws inside the previous character.
pub fn is_zero_width(c: char) -> bool {
    matches!(c,
        '\u{200B}'..='\u{200D}'
        | '\u{2060}'
        | '\u{FE00}'..='\u{FE0F}'
        | '\u{E0001}'..='\u{E007F}'
        | '\u{E0100}'..='\u{E01EF}'
        | '\u{0300}'..='\u{036F}'
        | '\u{0483}'..='\u{0489}'
        | '\u{0591}'..='\u{05BD}'
        | '\u{05BF}'..='\u{05C7}'
        | '\u{0610}'..='\u{061A}'
        | '\u{064B}'..='\u{065F}'
        | '\u{0670}'
        | '\u{06D6}'..='\u{06ED}'
        | '\u{1AB0}'..='\u{1AFF}'
        | '\u{1DC0}'..='\u{1DFF}'
        | '\u{20D0}'..='\u{20FF}'
        | '\u{FE20}'..='\u{FE2F}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_fonts_cover_the_scripts_we_promise() {
        let fonts = Fonts::get();
        assert_eq!(fonts.regular.len(), 3);
        assert_eq!(fonts.bold.len(), 4);
        // The CJK collection holds two faces (proportional and mono).
        assert_eq!(fonts.database().len(), 5);
        for c in [
            'A', 'é', 'Ж', 'Ω', 'ש', 'ع', '中', 'あ', 'カ', '한', '😀', '🚀', '❤',
        ] {
            let covered = fonts
                .regular
                .iter()
                .any(|f| f.face.glyph_index(c).is_some());
            assert!(covered, "no glyph for {c:?}");
            assert!(fonts.advance(c, Weight::Regular) > 0, "{c:?}");
        }
        assert_eq!(fonts.advance('\u{200D}', Weight::Regular), 0);
        assert!(fonts.width("WWW", Weight::Bold) > fonts.width("iii", Weight::Bold));
    }
}
