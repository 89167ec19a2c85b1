#!/usr/bin/env bash
# Fuzzes plaza-link-preview's HTML extractor with cargo-fuzz for N seconds
# (default 60), seeded with the fixture corpus. Installs cargo-fuzz when it
# is missing. cargo-fuzz needs nightly: the nightly toolchain is used when
# rustup has one, otherwise stable with RUSTC_BOOTSTRAP=1.
#
# Usage: bench/link-preview/fuzz.sh [seconds]
set -euo pipefail

SECS="${1:-60}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CRATE="$(cd "$HERE/../../crates/plaza-link-preview" && pwd)"

if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi

TOOLCHAIN=()
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  TOOLCHAIN=(+nightly)
else
  export RUSTC_BOOTSTRAP=1
fi

CORPUS="$CRATE/fuzz/corpus/extract"
mkdir -p "$CORPUS"
cp "$CRATE"/tests/fixtures/pages/*.html "$CORPUS"/

# The fuzz crate has its own workspace; keep its build out of the main
# target directory.
unset CARGO_TARGET_DIR
cd "$CRATE"
cargo "${TOOLCHAIN[@]}" fuzz run extract "$CORPUS" -- \
  -max_total_time="$SECS" -max_len=262144 -rss_limit_mb=2048 -print_final_stats=1
