//! Throughput of [`plaza_link_preview::extract`] over a fixture corpus, for
//! `bench/link-preview/run.sh` (which runs open-graph-scraper on the same
//! pages and compares).
//!
//! Usage: `corpus_bench <fixtures-dir> <seconds> <results.json> [max-bytes]`.
//! Prints one JSON line with pages per second; writes each page's result to
//! `results.json` for the agreement check. With `max-bytes`, only pages up
//! to that size are timed (the corpus has two pages over 1 MB that dominate
//! a whole-corpus figure). Pages are extracted as they
//! would be fetched: raw bytes plus the `Content-Type` from the page's
//! `.json`, decoding included in the timing.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use plaza_link_preview::{Metadata, extract};
use url::Url;

/// Origin the fixtures are pretended to come from (as in the corpus test).
const ORIGIN: &str = "https://fixtures.example";

struct Page {
    name: String,
    html: Vec<u8>,
    content_type: Option<String>,
    url: Url,
}

fn load(dir: &PathBuf) -> Result<Vec<Page>, Box<dyn std::error::Error>> {
    let mut pages = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "html"))
        .collect();
    paths.sort();
    for path in paths {
        let name = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let expected: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path.with_extension("json"))?)?;
        pages.push(Page {
            url: Url::parse(&format!("{ORIGIN}/pages/{name}.html"))?,
            name,
            html: std::fs::read(&path)?,
            content_type: expected["content_type"].as_str().map(str::to_owned),
        });
    }
    Ok(pages)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (dir, seconds, out, max_bytes) = match args.as_slice() {
        [_, dir, seconds, out] => (dir, seconds, out, usize::MAX),
        [_, dir, seconds, out, max] => (dir, seconds, out, max.parse()?),
        _ => {
            return Err(
                "usage: corpus_bench <fixtures-dir> <seconds> <results.json> [max-bytes]".into(),
            );
        }
    };
    let all = load(&PathBuf::from(dir))?;
    let budget = Duration::from_secs_f64(seconds.parse()?);
    let run = |page: &Page| extract(&page.html, page.content_type.as_deref(), &page.url);

    let results: BTreeMap<&str, Metadata> = all.iter().map(|p| (p.name.as_str(), run(p))).collect();
    std::fs::write(out, serde_json::to_vec_pretty(&results)?)?;
    let pages: Vec<&Page> = all.iter().filter(|p| p.html.len() <= max_bytes).collect();

    let bytes: usize = pages.iter().map(|p| p.html.len()).sum();
    let started = Instant::now();
    let mut extracted = 0u64;
    while started.elapsed() < budget {
        for page in &pages {
            std::hint::black_box(run(std::hint::black_box(*page)));
        }
        extracted += pages.len() as u64;
    }
    let secs = started.elapsed().as_secs_f64();
    let line = serde_json::json!({
        "pages": pages.len(),
        "corpus_bytes": bytes,
        "extracted": extracted,
        "seconds": secs,
        "pages_per_sec": extracted as f64 / secs,
    });
    println!("{line}");
    Ok(())
}
