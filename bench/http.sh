#!/usr/bin/env bash
# HTTP benchmark on loopback, everything measured side by side in one run:
#   1. GET /api/version on Plaza against a bare axum server (bench/bare-hello)
#      answering the same body: the ratio is what Plaza's middleware costs.
#      Three rounds, interleaved, compared by their medians; each run also
#      reports the server's CPU time per request (from /proc). With two or
#      more cores the servers are pinned to CPU 0 and wrk (one thread) to
#      CPU 1 for these runs: unpinned, the scheduler's placement of four busy
#      threads on two cores swung single runs of the same binary by 2x.
#   2. GET /api/health (one database round trip per request).
#   3. GET /api/auth/session signed in against anonymous: what session
#      lookup adds to a request, at 50 connections and at p50 over one
#      connection.
#   4. GET /api/link-preview of an article page served on loopback.
#   5. Start-up time to the first answer on an existing database, and idle
#      resident memory.
# Usage: bench/http.sh [seconds per run, default 10] [connections, default 50]
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${1:-10}"
CONNECTIONS="${2:-50}"
source bench/lib.sh
need wrk curl python3

[ "${SKIP_BUILD:-0}" = 1 ] || cargo build --release -q -p plaza-server -p bare-hello
PLAZA=target/release/plaza
BARE=target/release/bare-hello

export PLAZA_DATA_DIR="$WORK/data" PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=warn
"$PLAZA" migrate >/dev/null 2>&1
"$PLAZA" user create --email bench@example.com --password bench-password >/dev/null 2>&1

PLAZA_PORT=$(free_port)
BARE_PORT=$(free_port)
export PLAZA_LINK_PREVIEW_ALLOW_PRIVATE=true PLAZA_LINK_PREVIEW_ALLOWED_PORTS="[$BARE_PORT]"
start_ns=$(date +%s%N)
PLAZA_BIND="127.0.0.1:$PLAZA_PORT" "$PLAZA" serve 2>"$WORK/plaza.log" &
PIDS+=($!)
PLAZA_PID=$!
wait_http "http://127.0.0.1:$PLAZA_PORT/api/version"
startup_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
idle_rss_kb=$(awk '/VmRSS/ {print $2}' "/proc/$PLAZA_PID/status")

BARE_BIND="127.0.0.1:$BARE_PORT" "$BARE" &
PIDS+=($!)
BARE_PID=$!
wait_http "http://127.0.0.1:$BARE_PORT/api/version"

COOKIE=$(curl -s -i -H 'content-type: application/json' \
  -d '{"email":"bench@example.com","password":"bench-password"}' \
  "http://127.0.0.1:$PLAZA_PORT/api/auth/signin" | awk -F'[ ;]' 'tolower($1)=="set-cookie:" && $2 ~ /^plaza_session=/ {print $2}')
[ -n "$COOKIE" ] || { echo "sign-in for the benchmark failed" >&2; exit 1; }

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICKS_PER_SECOND=$(getconf CLK_TCK)

# run NAME PID URL [header] [connections] [wrk threads] -> prints "NAME rps p50 p99 cpu/request";
# keeps the rate in $WORK/NAME.rps and the p50 in microseconds in $WORK/NAME.p50
run() {
  local name=$1 pid=$2 url=$3 header=${4:-} connections=${5:-$CONNECTIONS} threads=${6:-2}
  local out before after
  [ "$connections" -lt 2 ] && threads=1
  before=$(cpu_ticks "$pid")
  if [ -n "$header" ]; then
    out=$("${PIN_LOAD[@]}" wrk -t"$threads" -c"$connections" -d"${DURATION}s" --latency -H "$header" "$url")
  else
    out=$("${PIN_LOAD[@]}" wrk -t"$threads" -c"$connections" -d"${DURATION}s" --latency "$url")
  fi
  after=$(cpu_ticks "$pid")
  local rps p50 p99 requests cpu
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p50=$(echo "$out" | awk '$1=="50%" {print $2}')
  p99=$(echo "$out" | awk '$1=="99%" {print $2}')
  requests=$(echo "$out" | awk '/requests in/ {print $1}')
  cpu=$(python3 -c "print(f'{($after - $before) / $TICKS_PER_SECOND * 1e6 / $requests:.2f}')")
  printf '%-28s %12s req/s   p50 %-9s p99 %-9s server CPU %6s us/request\n' "$name" "$rps" "$p50" "$p99" "$cpu"
  echo "$rps" > "$WORK/$name.rps"
  echo "$cpu" > "$WORK/$name.cpu"
  echo "$p50" | python3 -c "import sys; v=sys.stdin.read().strip(); u={'us':1,'ms':1e3,'s':1e6}; n=v.rstrip('mus'); print(float(n)*u[v[len(n):]])" > "$WORK/$name.p50"
}

echo "wrk: ${DURATION}s per run, $CONNECTIONS connections, 2 threads, loopback; $(nproc) cores"
PIN_LOAD=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  taskset -a -p -c 0 "$BARE_PID" >/dev/null
  taskset -a -p -c 0 "$PLAZA_PID" >/dev/null
  PIN_LOAD=(taskset -c 1)
  echo "version runs: servers on CPU 0, wrk (1 thread) on CPU 1"
fi
# A warm-up run each first: the first run after start was the slowest for
# both servers in every earlier measurement.
"${PIN_LOAD[@]}" wrk -t1 -c"$CONNECTIONS" -d2s "http://127.0.0.1:$BARE_PORT/api/version" >/dev/null
"${PIN_LOAD[@]}" wrk -t1 -c"$CONNECTIONS" -d2s "http://127.0.0.1:$PLAZA_PORT/api/version" >/dev/null
# Interleaved so that drift in machine load hits both sides alike.
for round in 1 2 3; do
  run "bare-version-$round" "$BARE_PID" "http://127.0.0.1:$BARE_PORT/api/version" "" "$CONNECTIONS" 1
  run "plaza-version-$round" "$PLAZA_PID" "http://127.0.0.1:$PLAZA_PORT/api/version" "" "$CONNECTIONS" 1
done
PIN_LOAD=()
taskset -a -p -c "0-$(( $(nproc) - 1 ))" "$PLAZA_PID" >/dev/null 2>&1 || true
run plaza-health "$PLAZA_PID" "http://127.0.0.1:$PLAZA_PORT/api/health"
run session-anonymous "$PLAZA_PID" "http://127.0.0.1:$PLAZA_PORT/api/auth/session"
run session-signed-in "$PLAZA_PID" "http://127.0.0.1:$PLAZA_PORT/api/auth/session" "Cookie: $COOKIE"
run session-anonymous-c1 "$PLAZA_PID" "http://127.0.0.1:$PLAZA_PORT/api/auth/session" "" 1
run session-signed-in-c1 "$PLAZA_PID" "http://127.0.0.1:$PLAZA_PORT/api/auth/session" "Cookie: $COOKIE" 1
run link-preview "$PLAZA_PID" "http://127.0.0.1:$PLAZA_PORT/api/link-preview?url=http%3A%2F%2F127.0.0.1%3A$BARE_PORT%2Fpage"
run avatar "$PLAZA_PID" "http://127.0.0.1:$PLAZA_PORT/api/avatar-image?seed=bench&size=200"

echo
python3 - "$WORK" "$CONNECTIONS" <<'PY'
import statistics, sys
work = sys.argv[1]
read = lambda name, kind: float(open(f"{work}/{name}.{kind}").read())
median = lambda side, kind: statistics.median(read(f"{side}-version-{r}", kind) for r in (1, 2, 3))
print(f"version throughput, Plaza / bare axum (medians of 3): "
      f"{median('plaza', 'rps') / median('bare', 'rps'):.2f} (target >= 0.70)")
print(f"version server CPU per request, bare axum / Plaza (medians of 3): "
      f"{median('bare', 'cpu') / median('plaza', 'cpu'):.2f}")
anon, signed = read("session-anonymous", "rps"), read("session-signed-in", "rps")
print(f"session lookup at {sys.argv[2] if len(sys.argv) > 2 else 50} connections: signed-in / anonymous throughput {signed/anon:.2f}; "
      f"server CPU per request {read('session-signed-in', 'cpu') - read('session-anonymous', 'cpu'):.1f} us more")
print(f"session lookup over one connection: p50 {read('session-signed-in-c1', 'p50') - read('session-anonymous-c1', 'p50'):.0f} us more "
      f"(target < 50)")
PY
echo "link previews per second over HTTP: $(cat "$WORK/link-preview.rps") (target >= 2000)"
echo "avatars per second over HTTP: $(cat "$WORK/avatar.rps") (target >= 5000)"
echo "start-up to first answer on an existing database: ${startup_ms} ms (target < 1000)"
echo "idle resident memory after start: $((idle_rss_kb / 1024)) MB (target < 30)"
