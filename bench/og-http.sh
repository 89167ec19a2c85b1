#!/usr/bin/env bash
# Share images over HTTP, side by side in one run: Plaza's GET /api/og-image
# (release build, SQLite, rate limits off) against a Node peer
# (bench/og-peer: node:http with @vercel/og and DiceBear, one worker per
# core through node:cluster, rendering the same 1200x630 card afresh on
# every request, as a Next.js share-image route does).
#   1. repeated: one share link, the same parameters every request (a
#      crawler storm on one link): Plaza answers from its image cache.
#   2. cold: new parameters every request (bench/og-peer/cold.lua counts up
#      the seed): both sides render every card.
#   3. Plaza only: the repeated link with If-None-Match, answered 304.
# Each scenario runs ROUNDS times, the two sides interleaved; the table
# shows medians. Both sides are checked to answer a 1200x630 PNG first.
#
# Usage: flock /tmp/bench.lock bench/og-http.sh [seconds per run, default 10]
#   env: CONNECTIONS (16), ROUNDS (3), PEER_WORKERS (cores), PLAZA_BIN
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${1:-10}"
CONNECTIONS="${CONNECTIONS:-16}"
ROUNDS="${ROUNDS:-3}"
PEER_WORKERS="${PEER_WORKERS:-$(nproc)}"
source bench/lib.sh
need wrk curl node npm python3

build_plaza
PEER=bench/og-peer
if [ ! -d "$PEER/node_modules/@vercel/og" ] || [ "$PEER/package-lock.json" -nt "$PEER/node_modules/.package-lock.json" ]; then
  echo "== installing the Node peer (npm ci)" >&2
  (cd "$PEER" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi

export PLAZA_DATA_DIR="$WORK/data" PLAZA_RATE_LIMITS_ENABLED=false PLAZA_METRICS_PUBLIC=true RUST_LOG=warn
"$PLAZA" migrate >/dev/null 2>&1
start_server
PLAZA_PORT=$PORT
PEER_PORT=$(free_port)
PORT=$PEER_PORT WORKERS=$PEER_WORKERS node "$PEER/server.mjs" 2>"$WORK/peer.log" &
PIDS+=($!)
QUERY="seed=plaza-bench&quote=Alone%20we%20can%20do%20so%20little%3B%20together%20we%20can%20do%20so%20much.&author=Helen%20Keller"
wait_http "http://127.0.0.1:$PEER_PORT/api/og-image?$QUERY"

# check NAME URL: the answer is a 1200x630 PNG.
check() {
  curl -sf -o "$WORK/$1.png" "$2"
  python3 - "$WORK/$1.png" "$1" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[1:4] == b"PNG", f"{sys.argv[2]}: not a PNG"
width, height = struct.unpack(">II", data[16:24])
assert (width, height) == (1200, 630), f"{sys.argv[2]}: {width}x{height}"
print(f"{sys.argv[2]}: 1200x630 PNG, {len(data)} bytes")
PY
}
check plaza "http://127.0.0.1:$PLAZA_PORT/api/og-image?$QUERY"
check peer "http://127.0.0.1:$PEER_PORT/api/og-image?$QUERY"
ETAG=$(curl -s -D - -o /dev/null "http://127.0.0.1:$PLAZA_PORT/api/og-image?$QUERY" | awk -F': ' 'tolower($1)=="etag" {print $2}' | tr -d '\r')
[ -n "$ETAG" ] || { echo "Plaza answered the link without an ETag" >&2; exit 1; }

# run NAME URL [wrk options...]: one wrk run; keeps its rate, p99 and non-2xx count.
run() {
  local name=$1 url=$2
  shift 2
  local out
  out=$(wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency "$@" "$url")
  local rps p99 errors
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p99=$(echo "$out" | awk '$1=="99%" {print $2}')
  errors=$(echo "$out" | awk '/Non-2xx or 3xx/ {print $5}')
  printf '%-22s %10s req/s   p99 %-9s non-2xx/3xx %s\n' "$name" "$rps" "$p99" "${errors:-0}"
  echo "$rps" >> "$WORK/$name.rps"
  echo "$p99" >> "$WORK/$name.p99"
  echo "${errors:-0}" >> "$WORK/$name.errors"
}

echo "wrk: ${DURATION}s per run, $CONNECTIONS connections, 1 thread, loopback; $(nproc) cores; node $(node --version), peer workers $PEER_WORKERS"
# Warm-up: the first renders load fonts and wasm.
wrk -t1 -c2 -d2s "http://127.0.0.1:$PEER_PORT/api/og-image?$QUERY" >/dev/null
wrk -t1 -c2 -d2s "http://127.0.0.1:$PLAZA_PORT/api/og-image?$QUERY" >/dev/null
for round in $(seq 1 "$ROUNDS"); do
  run plaza-repeated "http://127.0.0.1:$PLAZA_PORT/api/og-image?$QUERY"
  run peer-repeated "http://127.0.0.1:$PEER_PORT/api/og-image?$QUERY"
  RUN="r$round-$$" run plaza-cold "http://127.0.0.1:$PLAZA_PORT" -s bench/og-peer/cold.lua
  RUN="r$round-$$" run peer-cold "http://127.0.0.1:$PEER_PORT" -s bench/og-peer/cold.lua
  run plaza-304 "http://127.0.0.1:$PLAZA_PORT/api/og-image?$QUERY" -H "If-None-Match: $ETAG"
done
echo
echo "Plaza's share cards rendered (misses) and answered from memory (hits):"
curl -s "http://127.0.0.1:$PLAZA_PORT/api/metrics" | grep -E '^plaza_image_cache_(misses|hits)_total\{image="og"\}' || true
echo "peer:"
cat "$WORK/peer.log"

echo
python3 - "$WORK" <<'PY'
import statistics, sys
work = sys.argv[1]
def median(name):
    return statistics.median(float(x) for x in open(f"{work}/{name}.rps").read().split())
def errors(name):
    return sum(int(x) for x in open(f"{work}/{name}.errors").read().split())
print(f"{'':10}{'Plaza':>12}{'Node peer':>12}{'ratio':>9}  target   (medians, req/s)")
for scenario, target in (("repeated", 20), ("cold", 3)):
    plaza, peer = median(f"plaza-{scenario}"), median(f"peer-{scenario}")
    ratio = plaza / peer
    verdict = "met" if ratio >= target else "NOT met"
    print(f"{scenario:10}{plaza:12.0f}{peer:12.1f}{ratio:8.1f}x  >= {target}x {verdict}")
print(f"{'304':10}{median('plaza-304'):12.0f}{'-':>12}")
bad = {name: errors(name) for name in ("plaza-repeated", "peer-repeated", "plaza-cold", "peer-cold", "plaza-304")}
if any(bad.values()):
    print(f"answers other than 2xx/3xx: {bad}")
PY
