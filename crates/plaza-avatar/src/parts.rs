//! The hand-drawn parts of the avatar and the order they are chosen in.
//!
//! Every part is drawn in a 100 by 100 box and scaled by the caller. All
//! coordinates are literals, so the output is the same on every machine.
//! The order of the draws from the PRNG is part of the stability promise:
//! every draw happens for every seed, whether its part is shown or not, so a
//! new optional part appended at the end leaves older choices untouched.

use crate::prng::Prng;
use std::fmt::Write;

/// Background colours (pastels, so the face stands out).
pub const BACKGROUNDS: [&str; 10] = [
    "#b6e3f4", "#c0aede", "#d1d4f9", "#ffd5dc", "#ffdfbf", "#c1f0c1", "#fef3b4", "#f4c7b6",
    "#d2f0ef", "#e5d4ff",
];
/// Skin tones, light to dark.
pub const SKINS: [&str; 8] = [
    "#f9d9c0", "#f2c3a0", "#e0a878", "#c98b5b", "#a8683e", "#8a5232", "#6b3e26", "#4a2a1a",
];
/// Hair colours, natural and dyed.
pub const HAIR_COLOURS: [&str; 12] = [
    "#1f1a17", "#3b2a20", "#5e3b24", "#8a4b2a", "#b5763c", "#d9b26a", "#e8e2d8", "#b83a1e",
    "#7a5fa8", "#3f73b8", "#d9679a", "#4f8f5a",
];
/// Shirt colours.
pub const SHIRTS: [&str; 10] = [
    "#e4572e", "#29335c", "#f3a712", "#669bbc", "#7b2d26", "#2a9d8f", "#8e44ad", "#f4f1de",
    "#264653", "#e76f51",
];
/// Iris colours for the eye styles that show an iris.
pub const IRISES: [&str; 5] = ["#3b2a20", "#2f6f9f", "#3c8d5a", "#7a5a2f", "#5a5a6e"];
/// Glasses frame colours.
pub const FRAMES: [&str; 5] = ["#1f1a17", "#8a4b2a", "#c0392b", "#2c3e50", "#b8860b"];
/// Earring metals and enamel.
pub const EARRINGS: [&str; 3] = ["#f1c40f", "#c0c0c0", "#e84393"];

/// Number of hair styles (front and back drawn together).
pub const HAIR_STYLES: u32 = 14;
/// Number of face outlines.
pub const HEADS: u32 = 4;
/// Number of eye styles.
pub const EYES: u32 = 10;
/// Number of eyebrow styles.
pub const EYEBROWS: u32 = 8;
/// Number of noses.
pub const NOSES: u32 = 4;
/// Number of mouths.
pub const MOUTHS: u32 = 10;
/// Number of collar styles.
pub const COLLARS: u32 = 3;
/// Number of glasses styles (shown for some seeds only).
pub const GLASSES: u32 = 5;
/// Number of earring styles (shown for some seeds only).
pub const EARRING_STYLES: u32 = 3;
/// Number of facial hair styles (shown for some seeds only).
pub const FACIAL_HAIR: u32 = 3;

const INK: &str = "#2a1a14";
const MOUTH_DARK: &str = "#5b1a1a";
const TONGUE: &str = "#f08080";
/// Mirrors a left-side fragment onto the right side of the face.
const MIRROR_OPEN: &str = "<g transform=\"matrix(-1 0 0 1 100 0)\">";

/// Every choice for one avatar, drawn from the PRNG in a fixed order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Choices {
    background: &'static str,
    skin: &'static str,
    hair_style: u32,
    hair_colour: &'static str,
    head: u32,
    eyes: u32,
    iris: &'static str,
    eyebrows: u32,
    nose: u32,
    mouth: u32,
    shirt: &'static str,
    collar: u32,
    glasses: Option<(u32, &'static str)>,
    earrings: Option<(u32, &'static str)>,
    freckles: bool,
    blush: bool,
    facial_hair: Option<u32>,
}

fn colour(rng: &mut Prng, palette: &[&'static str]) -> &'static str {
    rng.pick(palette).copied().unwrap_or(INK)
}

impl Choices {
    /// Draws every choice from `rng`; the order of the draws is fixed.
    pub fn draw(rng: &mut Prng) -> Self {
        let background = colour(rng, &BACKGROUNDS);
        let skin = colour(rng, &SKINS);
        let hair_style = rng.below(HAIR_STYLES);
        let hair_colour = colour(rng, &HAIR_COLOURS);
        let head = rng.below(HEADS);
        let eyes = rng.below(EYES);
        let iris = colour(rng, &IRISES);
        let eyebrows = rng.below(EYEBROWS);
        let nose = rng.below(NOSES);
        let mouth = rng.below(MOUTHS);
        let shirt = colour(rng, &SHIRTS);
        let collar = rng.below(COLLARS);
        let has_glasses = rng.chance(30);
        let glasses_style = rng.below(GLASSES);
        let frame = colour(rng, &FRAMES);
        let has_earrings = rng.chance(30);
        let earring_style = rng.below(EARRING_STYLES);
        let earring_colour = colour(rng, &EARRINGS);
        let freckles = rng.chance(25);
        let blush = rng.chance(35);
        let has_facial_hair = rng.chance(15);
        let facial_style = rng.below(FACIAL_HAIR);
        Self {
            background,
            skin,
            hair_style,
            hair_colour,
            head,
            eyes,
            iris,
            eyebrows,
            nose,
            mouth,
            shirt,
            collar,
            glasses: has_glasses.then_some((glasses_style, frame)),
            earrings: has_earrings.then_some((earring_style, earring_colour)),
            freckles,
            blush,
            facial_hair: has_facial_hair.then_some(facial_style),
        }
    }

    /// Writes the parts, back to front, in the 100 by 100 box.
    pub fn write(&self, out: &mut String) {
        let _ = write!(
            out,
            "<rect width=\"100\" height=\"100\" fill=\"{}\"/>",
            self.background
        );
        self.hair_back(out);
        self.body(out);
        self.ears(out);
        self.head(out);
        self.cheeks(out);
        self.eyes(out);
        self.eyebrows(out);
        self.nose(out);
        self.facial_hair(out);
        self.mouth(out);
        self.hair_front(out);
        self.glasses(out);
    }

    fn hair_back(&self, out: &mut String) {
        let back = match self.hair_style {
            4 => "<path d=\"M24 68C18 30 30 14 50 14C70 14 82 30 76 68Z\"/>",
            5 => "<path d=\"M22 96C14 40 24 13 50 13C76 13 86 40 78 96Z\"/>",
            6 => "<path d=\"M64 30C84 34 88 60 79 78C76 64 72 50 62 40Z\"/>",
            10 => "<circle cx=\"50\" cy=\"40\" r=\"31\"/>",
            12 => "<circle cx=\"21\" cy=\"46\" r=\"8\"/><circle cx=\"79\" cy=\"46\" r=\"8\"/>",
            13 => "<path d=\"M23 90C16 40 26 14 50 14C74 14 84 40 77 90Z\"/>",
            _ => return,
        };
        let _ = write!(out, "<g fill=\"{}\">{back}</g>", self.hair_colour);
    }

    fn body(&self, out: &mut String) {
        let skin = self.skin;
        let _ = write!(
            out,
            "<path d=\"M16 100C17 86 30 79 50 79C70 79 83 86 84 100Z\" fill=\"{}\"/>\
             <path d=\"M42 62H58V80Q50 86 42 80Z\" fill=\"{skin}\"/>\
             <path d=\"M42 66H58V72Q50 76 42 72Z\" fill=\"#000\" fill-opacity=\".12\"/>",
            self.shirt
        );
        match self.collar {
            0 => out.push_str(
                "<path d=\"M41 80Q50 88 59 80\" fill=\"none\" stroke=\"#000\" \
                 stroke-opacity=\".2\" stroke-width=\"2\"/>",
            ),
            1 => {
                let _ = write!(out, "<path d=\"M42 79L50 91L58 79Z\" fill=\"{skin}\"/>");
            }
            _ => out.push_str(
                "<path d=\"M41 79L46 88L50 82L54 88L59 79L50 84Z\" fill=\"#fff\" \
                 stroke=\"#000\" stroke-opacity=\".15\" stroke-width=\".5\"/>",
            ),
        }
    }

    fn ears(&self, out: &mut String) {
        let _ = write!(
            out,
            "<g fill=\"{}\"><circle cx=\"28\" cy=\"50\" r=\"5\"/><circle cx=\"72\" cy=\"50\" r=\"5\"/></g>",
            self.skin
        );
        let Some((style, colour)) = self.earrings else {
            return;
        };
        let left = match style {
            0 => format!("<circle cx=\"27.5\" cy=\"56\" r=\"1.6\" fill=\"{colour}\"/>"),
            1 => format!(
                "<circle cx=\"27.5\" cy=\"58\" r=\"2.6\" fill=\"none\" stroke=\"{colour}\" \
                 stroke-width=\"1.2\"/>"
            ),
            _ => format!(
                "<path d=\"M27.5 55V59\" stroke=\"{colour}\" stroke-width=\".8\"/>\
                 <circle cx=\"27.5\" cy=\"60.5\" r=\"1.8\" fill=\"{colour}\"/>"
            ),
        };
        mirrored(out, &left);
    }

    fn head(&self, out: &mut String) {
        let shape = match self.head {
            0 => "<ellipse cx=\"50\" cy=\"48\" rx=\"22\" ry=\"26\"",
            1 => "<ellipse cx=\"50\" cy=\"49\" rx=\"23.5\" ry=\"24.5\"",
            2 => {
                "<path d=\"M28 40C28 26 38 22 50 22C62 22 72 26 72 40V55C72 68 62 75 50 75C38 75 28 68 28 55Z\""
            }
            _ => {
                "<path d=\"M27 43C27 28 37 22 50 22C63 22 73 28 73 43C73 60 62 74 50 76C38 74 27 60 27 43Z\""
            }
        };
        let _ = write!(out, "{shape} fill=\"{}\"/>", self.skin);
    }

    fn cheeks(&self, out: &mut String) {
        if self.blush {
            mirrored(
                out,
                "<ellipse cx=\"37\" cy=\"58\" rx=\"4\" ry=\"2.2\" fill=\"#ff6f7d\" fill-opacity=\".35\"/>",
            );
        }
        if self.freckles {
            mirrored(
                out,
                "<g fill=\"#8a4b2a\" fill-opacity=\".55\"><circle cx=\"35.5\" cy=\"55\" r=\".65\"/>\
                 <circle cx=\"38.5\" cy=\"56.2\" r=\".65\"/><circle cx=\"36.8\" cy=\"57.8\" r=\".65\"/>\
                 <circle cx=\"39.8\" cy=\"58.6\" r=\".55\"/></g>",
            );
        }
    }

    fn eyes(&self, out: &mut String) {
        const OVAL: &str = "<ellipse cx=\"41\" cy=\"48\" rx=\"2.6\" ry=\"3.3\" fill=\"#2a1a14\"/>\
             <circle cx=\"41.9\" cy=\"46.9\" r=\".9\" fill=\"#fff\"/>";
        const HAPPY: &str = "<path d=\"M37.5 49Q41 44.5 44.5 49\" fill=\"none\" stroke=\"#2a1a14\" \
             stroke-width=\"1.6\" stroke-linecap=\"round\"/>";
        match self.eyes {
            0 => mirrored(
                out,
                "<circle cx=\"41\" cy=\"48\" r=\"2.3\" fill=\"#2a1a14\"/>",
            ),
            1 => mirrored(out, OVAL),
            2 => mirrored(out, HAPPY),
            3 => mirrored(
                out,
                "<path d=\"M37.5 47.5H44.5A3.5 3.5 0 0 1 37.5 47.5Z\" fill=\"#2a1a14\"/>\
                 <path d=\"M37 47.5H45\" stroke=\"#2a1a14\" stroke-width=\"1.2\" stroke-linecap=\"round\"/>",
            ),
            4 => mirrored(
                out,
                &format!(
                    "<ellipse cx=\"41\" cy=\"48\" rx=\"3.8\" ry=\"3.2\" fill=\"#fff\"/>\
                     <circle cx=\"41.5\" cy=\"48.3\" r=\"2.3\" fill=\"{}\"/>\
                     <circle cx=\"41.5\" cy=\"48.3\" r=\"1.1\" fill=\"{INK}\"/>\
                     <circle cx=\"42.3\" cy=\"47.4\" r=\".6\" fill=\"#fff\"/>",
                    self.iris
                ),
            ),
            5 => {
                out.push_str(OVAL);
                out.push_str(MIRROR_OPEN);
                out.push_str(HAPPY);
                out.push_str("</g>");
            }
            6 => mirrored(
                out,
                "<ellipse cx=\"41\" cy=\"48\" rx=\"2.6\" ry=\"3.3\" fill=\"#2a1a14\"/>\
                 <circle cx=\"41.9\" cy=\"46.9\" r=\".9\" fill=\"#fff\"/>\
                 <path d=\"M38.6 45.6L37 44M40 44.9L39.3 43\" stroke=\"#2a1a14\" stroke-width=\".9\" \
                 stroke-linecap=\"round\"/>",
            ),
            7 => mirrored(
                out,
                "<circle cx=\"41\" cy=\"48\" r=\"3.4\" fill=\"#fff\" stroke=\"#2a1a14\" stroke-width=\".8\"/>\
                 <circle cx=\"41\" cy=\"48\" r=\"1.3\" fill=\"#2a1a14\"/>",
            ),
            8 => mirrored(
                out,
                "<path d=\"M37.5 48.5Q41 46.5 44.5 48.5Q41 49.5 37.5 48.5Z\" fill=\"#2a1a14\"/>",
            ),
            _ => mirrored(
                out,
                "<circle cx=\"41\" cy=\"48\" r=\"3\" fill=\"#2a1a14\"/>\
                 <circle cx=\"41.9\" cy=\"47\" r=\"1.1\" fill=\"#fff\"/>\
                 <circle cx=\"40.2\" cy=\"49.2\" r=\".5\" fill=\"#fff\"/>",
            ),
        }
    }

    fn eyebrows(&self, out: &mut String) {
        let hair = self.hair_colour;
        let (width, left, right) = match self.eyebrows {
            0 => ("1.8", "M37 41H45", None),
            1 => ("1.8", "M36.5 42Q41 38 45.5 41", None),
            2 => ("1.8", "M37 39.5L45.5 42.5", None),
            3 => ("1.8", "M37 42.5L45.5 39.5", None),
            4 => ("3", "M37 41Q41 39.5 45 41", None),
            5 => ("1", "M37 39.5Q41 37.5 45 39.5", None),
            6 => ("1.8", "M37 41H45", Some("M55 38.5Q59 36.5 63 38.5")),
            _ => {
                mirrored(
                    out,
                    &format!("<path d=\"M36 42Q40 37.5 46 40.5Q41 40 36 42Z\" fill=\"{hair}\"/>"),
                );
                return;
            }
        };
        let _ = write!(
            out,
            "<g fill=\"none\" stroke=\"{hair}\" stroke-width=\"{width}\" stroke-linecap=\"round\">\
             <path d=\"{left}\"/>"
        );
        match right {
            Some(right) => {
                let _ = write!(out, "<path d=\"{right}\"/>");
            }
            None => {
                let _ = write!(out, "{MIRROR_OPEN}<path d=\"{left}\"/></g>");
            }
        }
        out.push_str("</g>");
    }

    fn nose(&self, out: &mut String) {
        out.push_str(match self.nose {
            0 => {
                "<path d=\"M50 50Q48 55 50.5 56.5\" fill=\"none\" stroke=\"#000\" \
                 stroke-opacity=\".25\" stroke-width=\"1.2\" stroke-linecap=\"round\"/>"
            }
            1 => {
                "<ellipse cx=\"50\" cy=\"55\" rx=\"2.2\" ry=\"1.5\" fill=\"#000\" fill-opacity=\".12\"/>"
            }
            2 => {
                "<path d=\"M48 56Q50 57.5 52 56\" fill=\"none\" stroke=\"#000\" \
                 stroke-opacity=\".3\" stroke-width=\"1.1\" stroke-linecap=\"round\"/>"
            }
            _ => {
                "<g fill=\"#000\" fill-opacity=\".3\"><circle cx=\"48.6\" cy=\"56\" r=\".7\"/>\
                 <circle cx=\"51.4\" cy=\"56\" r=\".7\"/></g>"
            }
        });
    }

    fn facial_hair(&self, out: &mut String) {
        let Some(style) = self.facial_hair else {
            return;
        };
        let shape = match style {
            0 => "M43 59.5Q47 56.5 50 58.5Q53 56.5 57 59.5Q53 61 50 60Q47 61 43 59.5Z",
            1 => "M45.5 67Q50 73 54.5 67Q52.5 70.5 50 70.5Q47.5 70.5 45.5 67Z",
            _ => "M28 50Q29 72 50 78Q71 72 72 50Q70 62 62 66Q56 62 50 63Q44 62 38 66Q30 62 28 50Z",
        };
        let _ = write!(out, "<path d=\"{shape}\" fill=\"{}\"/>", self.hair_colour);
    }

    fn mouth(&self, out: &mut String) {
        const LINE: &str =
            "fill=\"none\" stroke=\"#2a1a14\" stroke-width=\"1.5\" stroke-linecap=\"round\"/>";
        match self.mouth {
            0 => {
                let _ = write!(out, "<path d=\"M44 61Q50 66 56 61\" {LINE}");
            }
            1 => {
                let _ = write!(
                    out,
                    "<path d=\"M43 60H57Q56 68 50 68Q44 68 43 60Z\" fill=\"{MOUTH_DARK}\"/>\
                     <path d=\"M44 60.2H56Q55.7 62 55 62.3H45Q44.3 62 44 60.2Z\" fill=\"#fff\"/>"
                );
            }
            2 => {
                let _ = write!(
                    out,
                    "<ellipse cx=\"50\" cy=\"63\" rx=\"2.4\" ry=\"3\" fill=\"{MOUTH_DARK}\"/>"
                );
            }
            3 => {
                let _ = write!(out, "<path d=\"M45 62.5H55\" {LINE}");
            }
            4 => {
                let _ = write!(out, "<path d=\"M45 62.5Q51 64 56 60.5\" {LINE}");
            }
            5 => {
                let _ = write!(
                    out,
                    "<path d=\"M44 60H56Q55 66 50 66Q45 66 44 60Z\" fill=\"{MOUTH_DARK}\"/>\
                     <path d=\"M47 63.5Q50 67.5 53 63.5Q50 62 47 63.5Z\" fill=\"{TONGUE}\"/>"
                );
            }
            6 => {
                let _ = write!(out, "<path d=\"M44 64.5Q50 59.5 56 64.5\" {LINE}");
            }
            7 => {
                let _ = write!(
                    out,
                    "<path d=\"M42 59H58Q57 71 50 71Q43 71 42 59Z\" fill=\"{MOUTH_DARK}\"/>\
                     <path d=\"M43 59H57L56.6 61.5H43.4Z\" fill=\"#fff\"/>\
                     <path d=\"M46 68Q50 66 54 68Q52 71 50 71Q48 71 46 68Z\" fill=\"{TONGUE}\"/>"
                );
            }
            8 => {
                let _ = write!(out, "<path d=\"M47.5 62Q50 64 52.5 62\" {LINE}");
            }
            _ => out.push_str(
                "<path d=\"M45 61.5Q47.5 60 50 61.2Q52.5 60 55 61.5Q50 66 45 61.5Z\" fill=\"#c0504d\"/>",
            ),
        }
    }

    fn hair_front(&self, out: &mut String) {
        const PULLED_BACK: &str = "<path d=\"M27 42C27 24 38 17 50 17C62 17 73 24 73 42C68 31 60 27 50 27C40 27 32 31 27 42Z\"/>";
        const BUZZ: &str =
            "M28 40C28 26 38 19 50 19C62 19 72 26 72 40C66 31 58 28 50 28C42 28 34 31 28 40Z";
        let hair = self.hair_colour;
        let front: &str = match self.hair_style {
            0 => {
                "<path d=\"M26 46C24 24 36 15 50 15C64 15 76 24 74 46C72 36 68 30 62 28C54 32 42 32 34 29C30 32 27 38 26 46Z\"/>"
            }
            1 => {
                let _ = write!(
                    out,
                    "<path d=\"{BUZZ}\" fill=\"{hair}\" fill-opacity=\".9\"/>"
                );
                return;
            }
            2 => {
                "<path d=\"M27 44L25 27L32 30L33 17L41 25L46 13L53 24L59 14L63 26L70 19L69 30L76 28L73 44C68 34 60 30 50 30C40 30 32 34 27 44Z\"/>"
            }
            3 => {
                "<path d=\"M26 48C22 24 34 14 52 15C70 16 79 28 74 46C72 36 68 30 64 27C56 36 42 38 28 36C27 40 26 44 26 48Z\"/>"
            }
            4 => {
                "<path d=\"M26 50C24 26 36 16 50 16C64 16 76 26 74 50C72 40 70 34 66 30C58 34 44 34 40 28C34 32 28 40 26 50Z\"/>"
            }
            5 => {
                "<path d=\"M26 52C24 26 36 15 50 15C66 15 76 26 74 52C72 38 66 28 56 26C50 32 38 36 30 36C28 40 27 46 26 52Z\"/>"
            }
            6 => PULLED_BACK,
            7 => {
                let _ = write!(
                    out,
                    "<g fill=\"{hair}\"><circle cx=\"50\" cy=\"14\" r=\"8\"/>{PULLED_BACK}</g>"
                );
                return;
            }
            8 => {
                "<circle cx=\"28\" cy=\"40\" r=\"6.5\"/><circle cx=\"30\" cy=\"31\" r=\"6.5\"/>\
                  <circle cx=\"36\" cy=\"24\" r=\"6.5\"/><circle cx=\"44\" cy=\"19\" r=\"6.5\"/>\
                  <circle cx=\"53\" cy=\"18\" r=\"6.5\"/><circle cx=\"62\" cy=\"21\" r=\"6.5\"/>\
                  <circle cx=\"68\" cy=\"27\" r=\"6.5\"/><circle cx=\"72\" cy=\"35\" r=\"6.5\"/>\
                  <circle cx=\"73\" cy=\"43\" r=\"6\"/><path d=\"M28 40C30 26 40 22 50 22C60 22 70 26 72 40Z\"/>"
            }
            9 => {
                let _ = write!(
                    out,
                    "<path d=\"{BUZZ}\" fill=\"{hair}\" fill-opacity=\".45\"/>\
                     <path d=\"M45 32C44 20 46 10 50 6C54 10 56 20 55 32Z\" fill=\"{hair}\"/>"
                );
                return;
            }
            10 => {
                "<path d=\"M27 40C30 28 40 24 50 24C60 24 70 28 73 40C68 34 60 31 50 31C40 31 32 34 27 40Z\"/>"
            }
            11 => {
                out.push_str(
                    "<ellipse cx=\"42\" cy=\"28\" rx=\"6\" ry=\"3\" fill=\"#fff\" fill-opacity=\".25\"/>",
                );
                return;
            }
            12 => {
                "<path d=\"M27 44C27 24 38 16 50 16C62 16 73 24 73 44C70 32 62 25 50 24C38 25 30 32 27 44Z\"/>"
            }
            _ => {
                "<path d=\"M26 54C24 26 36 15 50 15C64 15 76 26 74 54C72 36 62 24 50 22C38 24 28 36 26 54Z\"/>"
            }
        };
        let _ = write!(out, "<g fill=\"{hair}\">{front}</g>");
    }

    fn glasses(&self, out: &mut String) {
        let Some((style, frame)) = self.glasses else {
            return;
        };
        let _ = write!(
            out,
            "<g fill=\"none\" stroke=\"{frame}\" stroke-width=\"1.3\" stroke-linejoin=\"round\">"
        );
        match style {
            0 => out.push_str(
                "<circle cx=\"41\" cy=\"48\" r=\"5.5\"/><circle cx=\"59\" cy=\"48\" r=\"5.5\"/>\
                 <path d=\"M46.5 48Q50 46 53.5 48M35.5 47L28 45M64.5 47L72 45\"/>",
            ),
            1 => out.push_str(
                "<rect x=\"34.5\" y=\"43\" width=\"13\" height=\"10\" rx=\"2\"/>\
                 <rect x=\"52.5\" y=\"43\" width=\"13\" height=\"10\" rx=\"2\"/>\
                 <path d=\"M47.5 47H52.5M34.5 46L28 45M65.5 46L72 45\"/>",
            ),
            2 => {
                let _ = write!(
                    out,
                    "<path d=\"M35 44H47Q47 54 41 54Q35 54 35 44ZM53 44H65Q65 54 59 54Q53 54 53 44Z\" \
                     fill=\"{frame}\" fill-opacity=\".25\"/><path d=\"M47 45H53M35 45L28 45M65 45L72 45\"/>"
                );
            }
            3 => out.push_str(
                "<path d=\"M34 44H48V48Q48 53 41 53Q34 53 34 48ZM52 44H66V48Q66 53 59 53Q52 53 52 48Z\" \
                 fill=\"#1f1a17\" fill-opacity=\".9\"/><path d=\"M48 45H52M34 45L28 45M66 45L72 45\"/>",
            ),
            _ => out.push_str(
                "<path d=\"M35 46H47M53 46H65M47 46Q50 44.5 53 46M35 46L28 45M65 46L72 45\" \
                 stroke-width=\"1.8\"/><path d=\"M35 46Q35 53 41 53Q47 53 47 46M53 46Q53 53 59 53Q65 53 65 46\" \
                 stroke-width=\".6\"/>",
            ),
        }
        out.push_str("</g>");
    }
}

/// Writes a left-side fragment and its mirror image on the right.
fn mirrored(out: &mut String, left: &str) {
    out.push_str(left);
    out.push_str(MIRROR_OPEN);
    out.push_str(left);
    out.push_str("</g>");
}
