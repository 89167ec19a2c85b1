#!/usr/bin/env bash
# What the rate limiter adds to a request in Plaza, in instructions counted
# by valgrind's callgrind: far steadier than requests per second or CPU
# time on a shared 2-core machine, where `bench/rate-limit.sh`'s rounds
# swing by a fifth. (It counts Plaza's instructions only: not the kernel's
# work, not Redis's CPU, not what Redis sharing the cores costs Plaza's
# caches; `bench/rate-limit.sh` measures those.)
#
# Sides, each an instance of its own over a fresh SQLite database under
# callgrind, one after another: limits off, in process, Redis
# (127.0.0.1:6379); with PLAZA_BASE_BIN, the same three of that build too.
# Each: 3 s of warm-up load, counters on, SECONDS of `wrk -t2 -c50` load
# on GET /api/posts (cached) with a new client address per request
# (bench/addresses.lua), counters dumped; the figure is the dump's total
# over the requests wrk counted (Redis batches checks as under real load,
# though batches are smaller under valgrind). With DIFF=1, the functions
# whose instructions per request changed most against limits off.
# Usage: bench/rate-limit-instructions.sh [seconds of load, default 10]
# Environment: PLAZA_BIN (a built binary instead of building one),
# PLAZA_BASE_BIN, DIFF=1.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${1:-10}"
source bench/lib.sh
build_plaza
need valgrind callgrind_control callgrind_annotate wrk curl python3 redis-cli
redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null || { echo "Redis is needed on 127.0.0.1:6379" >&2; exit 1; }
HIGH=1000000000/hour

# measure NAME BINARY SETTINGS...: prints "NAME instructions-per-request".
measure() {
  local name=$1 binary=$2 port out requests total
  shift 2
  port=$(free_port)
  out="$WORK/$name.callgrind"
  export PLAZA_DATA_DIR="$WORK/$name" RUST_LOG=warn PLAZA_TRUSTED_PROXIES='["127.0.0.1"]'
  "$binary" migrate >/dev/null 2>&1
  env PLAZA_BIND="127.0.0.1:$port" "$@" valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$out" "$binary" serve 2>"$WORK/$name.log" &
  SERVER_PID=$!
  for _ in $(seq 1 600); do curl -sf -o /dev/null "http://127.0.0.1:$port/api/version" && break; sleep 0.1; done
  wrk -t2 -c50 -d3s -s bench/addresses.lua "http://127.0.0.1:$port/api/posts" >/dev/null
  callgrind_control -i on "$SERVER_PID" >/dev/null 2>&1
  requests=$(wrk -t2 -c50 -d"${DURATION}s" -s bench/addresses.lua "http://127.0.0.1:$port/api/posts" \
    | awk '/requests in/ {print $1}')
  callgrind_control -d "$SERVER_PID" >/dev/null 2>&1
  kill "$SERVER_PID"
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
  total=$(awk '/^summary:/ {print $2}' "$out".1)
  echo "$requests" > "$WORK/$name.requests"
  echo "$name $((total / requests))"
}

SIDES=()
sides_of() { # PREFIX BINARY
  measure "${1}off" "$2" PLAZA_RATE_LIMITS_ENABLED=false
  measure "${1}local" "$2" PLAZA_RATE_LIMITS_ENABLED=true PLAZA_RATE_LIMIT_ANONYMOUS=$HIGH
  measure "${1}redis" "$2" PLAZA_RATE_LIMITS_ENABLED=true PLAZA_RATE_LIMIT_ANONYMOUS=$HIGH \
    PLAZA_REDIS_URL=redis://127.0.0.1:6379 PLAZA_REDIS_TIMEOUT_MS=2000
  SIDES+=("${1}off" "${1}local" "${1}redis")
}

echo "instructions per request (callgrind), GET /api/posts (cached), ${DURATION}s of wrk -t2 -c50, a new address per request"
sides_of "" "$PLAZA" > "$WORK/figures"
[ -z "${PLAZA_BASE_BIN:-}" ] || sides_of "base_" "$PLAZA_BASE_BIN" >> "$WORK/figures"
python3 - "$WORK/figures" <<'PY'
import sys
figures = dict(line.split() for line in open(sys.argv[1]))
for prefix, build in (("", "this build"), ("base_", "PLAZA_BASE_BIN")):
    if prefix + "off" not in figures:
        continue
    off = int(figures[prefix + "off"])
    print(f"  {build}: off {off:,}", end="")
    for side in ("local", "redis"):
        value = int(figures[prefix + side])
        print(f", {side} {value:,} (+{value - off:,}, +{(value / off - 1) * 100:.1f}%)", end="")
    print()
PY
[ "${DIFF:-0}" = 1 ] || exit 0
python3 - "$WORK" <<'PY'
import collections, re, subprocess, sys
work = sys.argv[1]
def per_request(name):
    text = subprocess.run(["callgrind_annotate", "--threshold=100", f"{work}/{name}.callgrind.1"],
                          capture_output=True, text=True).stdout
    requests = int(open(f"{work}/{name}.requests").read())
    counts = collections.Counter()
    for line in text.splitlines():
        match = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(.*)", line)
        if match and "PROGRAM TOTALS" not in match.group(2):
            function = re.sub(r"^[^:]*:", "", match.group(2)).rsplit(" [", 1)[0]
            counts[function[:110]] += int(match.group(1).replace(",", "")) / requests
    return counts
off = per_request("off")
for side in ("local", "redis"):
    counts = per_request(side)
    changes = {name: counts[name] - off[name] for name in set(counts) | set(off)}
    print(f"\n{side} against off, instructions per request, the 20 largest changes:")
    for name, change in sorted(changes.items(), key=lambda item: -abs(item[1]))[:20]:
        print(f"  {change:+8.0f}  {name}")
PY
