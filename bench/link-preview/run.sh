#!/usr/bin/env bash
# Side-by-side benchmark: Plaza's link-preview extractor vs open-graph-scraper
# (the peer a Node user would pick, through its `html` option: no network),
# over the fixture corpus in one run. Prints pages per second, the ratio and
# agreement on title/description/image. Exits non-zero when the two disagree
# on a page whose expected result is unambiguous (marked "compare").
#
# Usage: bench/link-preview/run.sh [seconds-per-side]   (default 5)
set -euo pipefail

SECS="${1:-5}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SCRATCH="$ROOT/bench/.scratch/link-preview"
FIXTURES="$ROOT/crates/plaza-link-preview/tests/fixtures/pages"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

mkdir -p "$SCRATCH"
if ! cmp -s "$HERE/package.json" "$SCRATCH/package.json" || [ ! -d "$SCRATCH/node_modules/open-graph-scraper" ]; then
  cp "$HERE/package.json" "$SCRATCH/package.json"
  (cd "$SCRATCH" && npm install --no-audit --no-fund --loglevel=error)
fi

cargo build --quiet --release -p plaza-link-preview --example corpus_bench --manifest-path "$ROOT/Cargo.toml"
BENCH="$TARGET/release/examples/corpus_bench"
PLAZA_LINE="$("$BENCH" "$FIXTURES" "$SECS" "$SCRATCH/plaza.json")"
PEER_LINE="$(node "$HERE/peer.mjs" "$SCRATCH" "$FIXTURES" "$SECS" "$SCRATCH/peer.json")"
# The same again on the pages up to 64 KiB, so the two 1 MB+ pages do not
# decide the ratio alone.
PLAZA_SMALL="$("$BENCH" "$FIXTURES" "$SECS" "$SCRATCH/plaza.json" 65536)"
PEER_SMALL="$(node "$HERE/peer.mjs" "$SCRATCH" "$FIXTURES" "$SECS" "$SCRATCH/peer.json" 65536)"

echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; node $(node --version); $SECS s per side"
node "$HERE/report.mjs" "$FIXTURES" "$SCRATCH/plaza.json" "$PLAZA_LINE" "$SCRATCH/peer.json" "$PEER_LINE" "$PLAZA_SMALL" "$PEER_SMALL"
