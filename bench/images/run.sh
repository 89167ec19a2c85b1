#!/usr/bin/env bash
# Images per second, side by side in one run on this machine:
#   - 200 px avatar SVG: plaza_avatar::render_svg  vs  DiceBear (@dicebear/core
#     + @dicebear/collection, adventurer style)
#   - 1200x630 OG PNG: plaza_og_image::render_svg + render_png  vs  @vercel/og
#     0.11.1 (satori; rasterised by sharp when sharp imports, else resvg-wasm)
# Both sides make one image at a time on one thread of control, after a
# warm-up, and each side is measured ROUNDS times; the table shows the median.
#
# Usage: bench/images/run.sh   (env: ROUNDS, AVATARS, PNGS, PEER_AVATARS, PEER_PNGS)
# The Node peers are installed with npm into bench/.scratch/images (gitignored).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SCRATCH="$ROOT/bench/.scratch/images"
ROUNDS=${ROUNDS:-3}
AVATARS=${AVATARS:-20000}
PNGS=${PNGS:-100}
PEER_AVATARS=${PEER_AVATARS:-2000}
PEER_PNGS=${PEER_PNGS:-40}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

echo "== building Plaza's bench_images (release)" >&2
cargo build --release --quiet -p plaza-og-image --example bench_images --manifest-path "$ROOT/Cargo.toml"
PLAZA_BIN="$CARGO_TARGET_DIR/release/examples/bench_images"

echo "== installing the Node peers into $SCRATCH" >&2
mkdir -p "$SCRATCH"
cd "$SCRATCH"
[ -f package.json ] || echo '{"name":"plaza-images-peer","private":true,"type":"module"}' > package.json
if [ ! -d node_modules/@vercel/og ] || [ ! -d node_modules/@dicebear/collection ] || [ ! -d node_modules/sharp ]; then
  npm install --no-audit --no-fund \
    @dicebear/core@9.4.3 @dicebear/collection@9.4.3 @vercel/og@0.11.1 sharp@0.35.5 react@19.3.1 >&2
fi
cp "$ROOT/bench/images/peer.mjs" "$ROOT/bench/images/card.mjs" .

RESULTS="$SCRATCH/results.jsonl"
: > "$RESULTS"
for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round/$ROUNDS" >&2
  "$PLAZA_BIN" "$AVATARS" "$PNGS" | sed 's/^{/{"side":"plaza",/' >> "$RESULTS"
  node peer.mjs "$PEER_AVATARS" "$PEER_PNGS" | sed 's/^{/{"side":"peer",/' >> "$RESULTS"
done

CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
echo
echo "machine: $CPU, $(nproc) cores; $(rustc --version); node $(node --version)"
node - "$RESULTS" <<'JS'
const fs = require("node:fs");
const rows = fs.readFileSync(process.argv[2], "utf8").trim().split("\n").map((l) => JSON.parse(l));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const pick = (side, name) => rows.filter((r) => r.side === side && r.name === name);
const rate = (side, name) => median(pick(side, name).map((r) => r.per_second));
const cpuRate = (side, name) => {
  const xs = pick(side, name).filter((r) => r.cpu_seconds > 0).map((r) => r.count / r.cpu_seconds);
  return xs.length ? median(xs) : null;
};
const fmt = (x) => x.toFixed(x < 100 ? 2 : 0).padStart(12);
const peerOg = rows.find((r) => r.side === "peer" && r.name === "og_png_1200x630");
console.log(`@vercel/og rasteriser: ${peerOg.rasteriser}`);
console.log(`load average when done: ${fs.readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`);
console.log("");
console.log("images/s: wall-clock rate; per CPU-s: images per CPU-second (Plaza: its one thread; Node: all threads)");
console.log(`${"".padEnd(18)}${"Plaza".padStart(12)}${"Node peer".padStart(12)}${"ratio".padStart(9)}${"Plaza/CPU-s".padStart(14)}${"Node/CPU-s".padStart(13)}${"ratio".padStart(9)}  target`);
for (const [name, label, target] of [["avatar_svg_200", "avatar SVG 200px", 10], ["og_png_1200x630", "OG PNG 1200x630", 2]]) {
  const p = rate("plaza", name), n = rate("peer", name), ratio = p / n;
  const pc = cpuRate("plaza", name), nc = cpuRate("peer", name);
  const cpuRatio = pc && nc ? (pc / nc).toFixed(1) + "x" : "n/a";
  console.log(
    `${label.padEnd(18)}${fmt(p)}${fmt(n)}${(ratio.toFixed(1) + "x").padStart(9)}${(pc ? fmt(pc) : "n/a").padStart(14)}${(nc ? fmt(nc) : "n/a").padStart(13)}${cpuRatio.padStart(9)}  >= ${target}x ${ratio >= target ? "met" : "NOT met"}`,
  );
}
JS
