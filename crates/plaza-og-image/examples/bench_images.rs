//! Measures images per second of the two generators, for `bench/images/run.sh`:
//! 200 px avatar SVGs and 1200x630 Open Graph PNGs (SVG built and rendered
//! each time, as the server does), on one thread.
//!
//! `bench_images [AVATARS] [PNGS]` prints one JSON object per measurement,
//! with the wall time and, on Linux, the CPU time of this (single) thread, so
//! a run on a busy machine can still be compared by images per CPU-second.

use std::hint::black_box;
use std::time::Instant;

const QUOTE: &str = "Alone we can do so little; together we can do so much.";
const AUTHOR: &str = "Helen Keller";

/// CPU time of the calling thread in seconds (Linux `/proc`), or JSON null.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos: f64 = stat.split_whitespace().next()?.parse().ok()?;
    Some(nanos / 1e9)
}

/// `after - before` as JSON.
fn cpu_json(before: Option<f64>, after: Option<f64>) -> String {
    match (before, after) {
        (Some(b), Some(a)) => format!("{:.4}", a - b),
        _ => "null".to_string(),
    }
}

fn count(arg: Option<String>, default: u32) -> u32 {
    arg.and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let avatars = count(args.next(), 20_000);
    let pngs = count(args.next(), 100);
    plaza_og_image::preload();

    // Warm-up, so that one-time work (font parsing, allocations) is not timed.
    for i in 0..200 {
        black_box(plaza_avatar::render_svg(&format!("warm-{i}"), 200).ok());
    }
    for i in 0..3 {
        let svg = plaza_og_image::render_svg(&format!("warm-{i}"), QUOTE, AUTHOR);
        black_box(plaza_og_image::render_png(&svg).ok());
    }

    let cpu = cpu_seconds();
    let start = Instant::now();
    let mut bytes = 0usize;
    for i in 0..avatars {
        if let Ok(svg) = plaza_avatar::render_svg(&format!("user-{i}"), 200) {
            bytes += svg.len();
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{{\"name\":\"avatar_svg_200\",\"count\":{avatars},\"seconds\":{seconds:.4},\"per_second\":{:.1},\"avg_bytes\":{},\"cpu_seconds\":{}}}",
        f64::from(avatars) / seconds,
        bytes / usize::try_from(avatars.max(1)).unwrap_or(1),
        cpu_json(cpu, cpu_seconds())
    );

    let cpu = cpu_seconds();
    let start = Instant::now();
    let mut bytes = 0usize;
    let mut failures = 0u32;
    for i in 0..pngs {
        let svg = plaza_og_image::render_svg(&format!("user-{i}"), QUOTE, AUTHOR);
        match plaza_og_image::render_png(&svg) {
            Ok(png) => bytes += png.len(),
            Err(_) => failures += 1,
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{{\"name\":\"og_png_1200x630\",\"count\":{pngs},\"seconds\":{seconds:.4},\"per_second\":{:.2},\"avg_bytes\":{},\"failures\":{failures},\"cpu_seconds\":{}}}",
        f64::from(pngs) / seconds,
        bytes / usize::try_from(pngs.max(1)).unwrap_or(1),
        cpu_json(cpu, cpu_seconds())
    );
}
