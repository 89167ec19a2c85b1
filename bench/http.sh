#!/usr/bin/env bash
# HTTP benchmark on loopback, everything measured side by side in one run:
#   1. GET /api/version on Plaza against a bare axum server (bench/bare-hello)
#      answering the same body: the ratio is what Plaza's middleware costs.
#   2. GET /api/health (one database round trip per request).
#   3. GET /api/auth/session signed in against anonymous: what session
#      lookup adds to a request.
#   4. GET /api/link-preview of an article page served on loopback.
#   5. Start-up time to the first answer on an existing database, and idle
#      resident memory.
# Usage: bench/http.sh [seconds per run, default 10] [connections, default 50]
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${1:-10}"
CONNECTIONS="${2:-50}"
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }

[ "${SKIP_BUILD:-0}" = 1 ] || cargo build --release -q -p plaza-server -p bare-hello
PLAZA=target/release/plaza
BARE=target/release/bare-hello
WORK=$(mktemp -d)
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 1 200); do curl -sf -o /dev/null "$1" && return 0; sleep 0.05; done; echo "no answer from $1" >&2; exit 1; }

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
wait_http "http://127.0.0.1:$BARE_PORT/api/version"

COOKIE=$(curl -s -i -H 'content-type: application/json' \
  -d '{"email":"bench@example.com","password":"bench-password"}' \
  "http://127.0.0.1:$PLAZA_PORT/api/auth/signin" | awk -F'[ ;]' 'tolower($1)=="set-cookie:" && $2 ~ /^plaza_session=/ {print $2}')
[ -n "$COOKIE" ] || { echo "sign-in for the benchmark failed" >&2; exit 1; }

# run NAME URL [header] -> prints "NAME rps p50 p99"
run() {
  local name=$1 url=$2 header=${3:-}
  local out
  if [ -n "$header" ]; then
    out=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency -H "$header" "$url")
  else
    out=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency "$url")
  fi
  local rps p50 p99
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p50=$(echo "$out" | awk '$1=="50%" {print $2}')
  p99=$(echo "$out" | awk '$1=="99%" {print $2}')
  printf '%-28s %12s req/s   p50 %-9s p99 %-9s\n' "$name" "$rps" "$p50" "$p99"
  echo "$rps" > "$WORK/$name.rps"
}

echo "wrk: ${DURATION}s per run, $CONNECTIONS connections, 2 threads, loopback; $(nproc) cores"
# Interleaved so that drift in machine load hits both sides alike.
run bare-version "http://127.0.0.1:$BARE_PORT/api/version"
run plaza-version "http://127.0.0.1:$PLAZA_PORT/api/version"
run bare-version-2 "http://127.0.0.1:$BARE_PORT/api/version"
run plaza-version-2 "http://127.0.0.1:$PLAZA_PORT/api/version"
run plaza-health "http://127.0.0.1:$PLAZA_PORT/api/health"
run session-anonymous "http://127.0.0.1:$PLAZA_PORT/api/auth/session"
run session-signed-in "http://127.0.0.1:$PLAZA_PORT/api/auth/session" "Cookie: $COOKIE"
run link-preview "http://127.0.0.1:$PLAZA_PORT/api/link-preview?url=http%3A%2F%2F127.0.0.1%3A$BARE_PORT%2Fpage"
run avatar "http://127.0.0.1:$PLAZA_PORT/api/avatar-image?seed=bench&size=200"

ratio() { python3 -c "print(f'{(float(open(\"$WORK/$1.rps\").read())+float(open(\"$WORK/$2.rps\").read()))/(float(open(\"$WORK/$3.rps\").read())+float(open(\"$WORK/$4.rps\").read())):.2f}')"; }
echo
echo "version throughput, Plaza / bare axum: $(ratio plaza-version plaza-version-2 bare-version bare-version-2) (target >= 0.70)"
python3 - "$WORK" <<'PY'
import sys
work = sys.argv[1]
anon = float(open(f"{work}/session-anonymous.rps").read())
signed = float(open(f"{work}/session-signed-in.rps").read())
print(f"session lookup: signed-in / anonymous throughput {signed/anon:.2f}; "
      f"added per request at this concurrency ~{(1/signed - 1/anon)*1e6:.1f} us of server time")
PY
echo "link previews per second over HTTP: $(cat "$WORK/link-preview.rps") (target >= 2000)"
echo "avatars per second over HTTP: $(cat "$WORK/avatar.rps") (target >= 5000)"
echo "start-up to first answer on an existing database: ${startup_ms} ms (target < 1000)"
echo "idle resident memory after start: $((idle_rss_kb / 1024)) MB (target < 30)"
