//! The seeded background: 3 to 8 pattern layers of circles, lines, polygons,
//! grids and waves in the eight-colour palette, over a dark fill.
//!
//! Every coordinate comes from integer arithmetic on [`Prng`] draws (no
//! trigonometry, whose last bits differ between platforms), so the same seed
//! gives the same bytes everywhere.

use plaza_avatar::Prng;
use std::fmt::Write;

/// The eight pattern colours.
pub const PALETTE: [&str; 8] = [
    "#ff6b35", "#118ab2", "#06d6a0", "#f72585", "#7209b7", "#ffd60a", "#f77f00", "#d00000",
];
/// The dark background under the patterns.
pub const BACKGROUND: &str = "#0b0d17";

const W: i32 = 1200;
const H: i32 = 630;

/// Unit vectors every 15 degrees, times 1000, for regular polygons.
const DIRECTIONS: [(i32, i32); 24] = [
    (1000, 0),
    (966, 259),
    (866, 500),
    (707, 707),
    (500, 866),
    (259, 966),
    (0, 1000),
    (-259, 966),
    (-500, 866),
    (-707, 707),
    (-866, 500),
    (-966, 259),
    (-1000, 0),
    (-966, -259),
    (-866, -500),
    (-707, -707),
    (-500, -866),
    (-259, -966),
    (0, -1000),
    (259, -966),
    (500, -866),
    (707, -707),
    (866, -500),
    (966, -259),
];

/// The pattern kinds a layer can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Filled discs or rings.
    Circles,
    /// Straight strokes across the card.
    Lines,
    /// Regular polygons, filled or outlined.
    Polygons,
    /// A square grid.
    Grid,
    /// Horizontal waves.
    Waves,
}

const PATTERNS: [Pattern; 5] = [
    Pattern::Circles,
    Pattern::Lines,
    Pattern::Polygons,
    Pattern::Grid,
    Pattern::Waves,
];

/// The drawn background and what the rest of the card needs from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Background {
    /// SVG elements of the layers (without the dark fill).
    pub svg: String,
    /// The kind and palette index of each layer, bottom to top.
    pub layers: Vec<(Pattern, usize)>,
    /// The most used pattern colour (ties go to the earlier palette colour).
    pub border: &'static str,
}

/// An opacity of `percent` per cent as SVG text (`.15`).
struct Opacity(i32);

impl std::fmt::Display for Opacity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, ".{:02}", self.0.clamp(0, 99))
    }
}

/// Draws the background for `rng` (seeded by the caller).
pub fn draw(rng: &mut Prng) -> Background {
    let count = rng.range(3, 8);
    let mut svg = String::with_capacity(8 * 1024);
    let mut layers = Vec::with_capacity(8);
    let mut uses = [0u32; 8];
    for _ in 0..count {
        let pattern = rng.pick(&PATTERNS).copied().unwrap_or(Pattern::Circles);
        let colour_index = usize::try_from(rng.below(8)).unwrap_or(0) % PALETTE.len();
        if let Some(slot) = uses.get_mut(colour_index) {
            *slot += 1;
        }
        let colour = PALETTE.get(colour_index).copied().unwrap_or(PALETTE[0]);
        layers.push((pattern, colour_index));
        match pattern {
            Pattern::Circles => circles(rng, colour, &mut svg),
            Pattern::Lines => lines(rng, colour, &mut svg),
            Pattern::Polygons => polygons(rng, colour, &mut svg),
            Pattern::Grid => grid(rng, colour, &mut svg),
            Pattern::Waves => waves(rng, colour, &mut svg),
        }
    }
    let mut best = 0;
    for (index, used) in uses.iter().enumerate() {
        if *used > uses[best] {
            best = index;
        }
    }
    Background {
        svg,
        layers,
        border: PALETTE[best],
    }
}

fn circles(rng: &mut Prng, colour: &str, out: &mut String) {
    let rings = rng.chance(40);
    let n = rng.range(4, 10);
    if rings {
        let _ = write!(
            out,
            "<g fill=\"none\" stroke=\"{colour}\" stroke-width=\"{}\" stroke-opacity=\"{}\">",
            rng.range(2, 6),
            Opacity(rng.range(25, 45))
        );
    } else {
        let _ = write!(
            out,
            "<g fill=\"{colour}\" fill-opacity=\"{}\">",
            Opacity(rng.range(10, 22))
        );
    }
    for _ in 0..n {
        let _ = write!(
            out,
            "<circle cx=\"{}\" cy=\"{}\" r=\"{}\"/>",
            rng.range(0, W),
            rng.range(0, H),
            rng.range(16, 140)
        );
    }
    out.push_str("</g>");
}

fn lines(rng: &mut Prng, colour: &str, out: &mut String) {
    let _ = write!(
        out,
        "<path fill=\"none\" stroke=\"{colour}\" stroke-width=\"{}\" stroke-opacity=\"{}\" \
         stroke-linecap=\"round\" d=\"",
        rng.range(2, 8),
        Opacity(rng.range(20, 40))
    );
    for _ in 0..rng.range(6, 16) {
        let _ = write!(
            out,
            "M{} {}L{} {}",
            rng.range(-100, W + 100),
            rng.range(-100, H + 100),
            rng.range(-100, W + 100),
            rng.range(-100, H + 100)
        );
    }
    out.push_str("\"/>");
}

fn polygons(rng: &mut Prng, colour: &str, out: &mut String) {
    let outlined = rng.chance(40);
    if outlined {
        let _ = write!(
            out,
            "<g fill=\"none\" stroke=\"{colour}\" stroke-width=\"{}\" stroke-opacity=\"{}\" \
             stroke-linejoin=\"round\">",
            rng.range(2, 5),
            Opacity(rng.range(25, 45))
        );
    } else {
        let _ = write!(
            out,
            "<g fill=\"{colour}\" fill-opacity=\"{}\">",
            Opacity(rng.range(12, 25))
        );
    }
    for _ in 0..rng.range(3, 8) {
        let sides = rng.pick(&[3usize, 4, 6, 8]).copied().unwrap_or(3);
        let step = DIRECTIONS.len() / sides;
        let turn = usize::try_from(rng.below(24)).unwrap_or(0);
        let (cx, cy, r) = (rng.range(0, W), rng.range(0, H), rng.range(30, 120));
        out.push_str("<path d=\"");
        for vertex in 0..sides {
            let (dx, dy) = DIRECTIONS[(turn + vertex * step) % DIRECTIONS.len()];
            let command = if vertex == 0 { 'M' } else { 'L' };
            let _ = write!(
                out,
                "{command}{} {}",
                cx + dx * r / 1000,
                cy + dy * r / 1000
            );
        }
        out.push_str("Z\"/>");
    }
    out.push_str("</g>");
}

fn grid(rng: &mut Prng, colour: &str, out: &mut String) {
    let spacing = rng.range(40, 110);
    let _ = write!(
        out,
        "<path fill=\"none\" stroke=\"{colour}\" stroke-width=\"{}\" stroke-opacity=\"{}\" d=\"",
        rng.range(1, 2),
        Opacity(rng.range(10, 20))
    );
    let offset = rng.range(0, spacing - 1);
    let mut x = offset;
    while x < W {
        let _ = write!(out, "M{x} 0V{H}");
        x += spacing;
    }
    let mut y = offset;
    while y < H {
        let _ = write!(out, "M0 {y}H{W}");
        y += spacing;
    }
    out.push_str("\"/>");
}

fn waves(rng: &mut Prng, colour: &str, out: &mut String) {
    let _ = write!(
        out,
        "<g fill=\"none\" stroke=\"{colour}\" stroke-width=\"{}\" stroke-opacity=\"{}\" \
         stroke-linecap=\"round\">",
        rng.range(2, 6),
        Opacity(rng.range(25, 45))
    );
    for _ in 0..rng.range(2, 5) {
        let y = rng.range(40, H - 40);
        let length = rng.range(100, 260);
        let amplitude = rng.range(15, 60);
        let mut x = -length;
        let _ = write!(
            out,
            "<path d=\"M{x} {y}Q{} {} {} {y}",
            x + length / 4,
            y - amplitude,
            x + length / 2
        );
        x += length / 2;
        while x < W + length {
            x += length / 2;
            let _ = write!(out, "T{x} {y}");
        }
        out.push_str("\"/>");
    }
    out.push_str("</g>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_to_eight_layers_and_border_is_most_used() {
        let mut seen_counts = std::collections::HashSet::new();
        let mut seen_patterns = std::collections::HashSet::new();
        for i in 0..500 {
            let mut rng = Prng::from_seed("test", &format!("seed-{i}"));
            let bg = draw(&mut rng);
            assert!((3..=8).contains(&bg.layers.len()));
            seen_counts.insert(bg.layers.len());
            let mut uses = [0usize; 8];
            for (pattern, colour) in &bg.layers {
                uses[*colour] += 1;
                seen_patterns.insert(format!("{pattern:?}"));
            }
            let max = uses.iter().copied().max().unwrap_or(0);
            let first = uses.iter().position(|u| *u == max).unwrap_or(0);
            assert_eq!(bg.border, PALETTE[first]);
            assert!(PALETTE.iter().any(|c| bg.svg.contains(c)));
        }
        assert_eq!(seen_counts.len(), 6);
        assert_eq!(seen_patterns.len(), 5);
    }
}
