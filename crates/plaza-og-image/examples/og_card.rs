//! Writes one card as SVG and PNG, to look at a seed and quote by eye:
//! `cargo run --release -p plaza-og-image --example og_card -- SEED "QUOTE" "AUTHOR" OUT_PREFIX`
//! writes `OUT_PREFIX.svg` and `OUT_PREFIX.png`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [seed, quote, author, prefix] = args.as_slice() else {
        eprintln!("usage: og_card SEED QUOTE AUTHOR OUT_PREFIX");
        return ExitCode::FAILURE;
    };
    let svg = plaza_og_image::render_svg(seed, quote, author);
    let png = match plaza_og_image::render_png(&svg) {
        Ok(png) => png,
        Err(e) => {
            eprintln!("rendering failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    for (ext, bytes) in [("svg", svg.as_bytes()), ("png", png.as_slice())] {
        if let Err(e) = std::fs::write(format!("{prefix}.{ext}"), bytes) {
            eprintln!("cannot write {prefix}.{ext}: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
