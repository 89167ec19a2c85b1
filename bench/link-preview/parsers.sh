#!/usr/bin/env bash
# Compares the HTML crates considered for plaza-link-preview (lol_html,
# html5ever's tokenizer, tl): compile cost (crates in the dependency tree,
# crates Plaza's lock file does not have yet, clean release build time of the
# crate with its dependencies) and speed and correctness of the token walk
# extraction needs over the fixture corpus (bench/link-preview/parsers).
#
# Usage: bench/link-preview/parsers.sh [seconds-per-candidate]   (default 3)
set -euo pipefail

SECS="${1:-3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
MANIFEST="$HERE/parsers/Cargo.toml"
FIXTURES="$ROOT/crates/plaza-link-preview/tests/fixtures/pages"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}/link-preview-parsers"
JOBS="${JOBS:-2}"

# Crates (name version) in a package's normal and build dependency tree.
tree() {
  cargo tree --quiet --manifest-path "$MANIFEST" -p "$1" -e normal,build --prefix none \
    | sed 's/ (.*//; s/ v/ /' | sort -u
}
plaza_crates="$(grep '^name = ' "$ROOT/Cargo.lock" | sed 's/name = "\(.*\)"/\1/' | sort -u)"

echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); cargo -j$JOBS"
echo "| crate | crates in tree | not yet in Plaza | clean release build |"
echo "|---|---|---|---|"
for krate in lol_html html5ever tl; do
  crates="$(tree "$krate")"
  count="$(wc -l <<<"$crates")"
  new="$(cut -d' ' -f1 <<<"$crates" | sort -u | comm -23 - <(echo "$plaza_crates") | wc -l)"
  rm -rf "$TARGET/build-$krate"
  start=$(date +%s.%N)
  CARGO_TARGET_DIR="$TARGET/build-$krate" cargo build --quiet --release -j"$JOBS" \
    --manifest-path "$MANIFEST" -p "$krate"
  end=$(date +%s.%N)
  rm -rf "$TARGET/build-$krate"
  printf '| %s %s | %d | %d | %.1f s |\n' "$krate" "$(grep "^$krate " <<<"$crates" | cut -d' ' -f2)" \
    "$count" "$new" "$(echo "$end - $start" | bc)"
done
echo

CARGO_TARGET_DIR="$TARGET/run" cargo build --quiet --release --manifest-path "$MANIFEST"
"$TARGET/run/release/link-preview-parsers" "$FIXTURES" "$SECS"
