#!/usr/bin/env bash
# Instructions per request of two builds, counted by valgrind's callgrind:
# the same figure every run, whatever else the machine is doing, so a
# refactor that must not cost anything can be checked on a busy machine where wrk's requests per second swing by 20%.
#
# Each binary serves its own fresh SQLite database under callgrind (rate
# limits off). For each route: 20 warm-up requests, counters zeroed, then
# N requests on one keep-alive connection, counters dumped; the figure is
# the dump's total over N (it includes the background jobs' ticks in that
# time, a few thousand instructions a second, the same for both).
#   GET /api/version                (the middleware and routing alone)
#   GET /api/health                 (one database round trip)
#   GET /api/auth/session signed in (session lookup)
#   GET /api/posts                  (the cached public list)
# Usage: bench/instructions.sh BASE_BINARY NEW_BINARY [requests, default 500]
set -euo pipefail
cd "$(dirname "$0")/.."
BASE="${1:?the base binary}"
NEW="${2:?the new binary}"
REQUESTS="${3:-500}"
source bench/lib.sh
need valgrind callgrind_control curl python3

# requests PORT PATH COUNT [COOKIE]: COUNT GETs on one keep-alive connection.
requests() {
  python3 - "$@" <<'PY'
import http.client, sys
port, path, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
headers = {"Cookie": sys.argv[4]} if len(sys.argv) > 4 and sys.argv[4] else {}
connection = http.client.HTTPConnection("127.0.0.1", port)
for _ in range(count):
    connection.request("GET", path, headers=headers)
    answer = connection.getresponse()
    answer.read()
    if answer.status != 200:
        sys.exit(f"GET {path} answered {answer.status}")
PY
}

# measure NAME BINARY: prints one line per route.
measure() {
  local name=$1 binary=$2 port pid cookie out
  port=$(free_port)
  export PLAZA_DATA_DIR="$WORK/$name" PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=warn
  "$binary" migrate >/dev/null 2>&1
  "$binary" user create --email bench@example.com --password bench-password >/dev/null 2>&1
  out="$WORK/$name.callgrind"
  PLAZA_BIND="127.0.0.1:$port" valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$binary" serve 2>"$WORK/$name.log" &
  pid=$!
  PIDS+=("$pid")
  for _ in $(seq 1 600); do curl -sf -o /dev/null "http://127.0.0.1:$port/api/health" && break; sleep 0.1; done
  cookie=$(curl -s -i -H 'content-type: application/json' \
    -d '{"email":"bench@example.com","password":"bench-password"}' \
    "http://127.0.0.1:$port/api/auth/signin" | awk -F'[ ;]' 'tolower($1)=="set-cookie:" && $2 ~ /^plaza_session=/ {print $2}')
  [ -n "$cookie" ] || { echo "sign-in on $name failed" >&2; exit 1; }
  for route in /api/version /api/health /api/auth/session /api/posts; do
    requests "$port" "$route" 20 "$cookie"
    callgrind_control -z "$pid" >/dev/null 2>&1
    requests "$port" "$route" "$REQUESTS" "$cookie"
    rm -f "$out".*
    callgrind_control -d "$pid" >/dev/null 2>&1
    python3 - "$name" "$route" "$REQUESTS" "$out".* <<'PY'
import sys
name, route, count, dumps = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
total = 0
for dump in dumps:
    for line in open(dump, errors="replace"):
        if line.startswith(("totals:", "summary:")):
            total += int(line.split()[1])
            break
print(f"{name} {route} {total // count}")
PY
  done
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

echo "instructions per request (callgrind), $REQUESTS requests per route on one connection"
{
  measure base "$BASE"
  measure new "$NEW"
} | python3 -c "$(cat <<'PY'
import sys
rows = {}
for line in sys.stdin:
    name, route, figure = line.split()
    rows.setdefault(route, {})[name] = int(figure)
print(f"  {'route':22} {'base':>10} {'new':>10} {'new/base':>9}")
for route, figures in rows.items():
    base, new = figures["base"], figures["new"]
    print(f"  {route:22} {base:>10,} {new:>10,} {new / base:>9.3f}")
PY
)"
