#!/usr/bin/env bash
# The emoji list and usage tracking on loopback: serves a fresh
# database on each backend with the release binary (rate limits off; the
# catalog is loaded on start) and measures with wrk, 50 connections:
#   GET /api/emojis?per_page=100   as a Windows 10 browser (the target:
#                                  p99 < 5 ms; anonymous answers are
#                                  shared for 2 s per platform and query)
#   the same with Cache-Control: no-cache (every request reads the
#                                  database: the page, the total and the
#                                  category counts)
#   POST /api/emojis/usage         one UPDATE … usage_count + 1 each
# printing requests/s, p50 and p99 of each.
#
# Usage: bench/emoji.sh [seconds, default 10] [connections, default 50]
# Environment: PLAZA_BIN (a built binary instead of building one),
# PLAZA_BENCH_POSTGRES (server URL, default postgres://postgres@127.0.0.1:5432),
# PLAZA_BENCH_BACKENDS (default "sqlite postgres").
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${1:-10}"
CONNECTIONS="${2:-50}"
PG_SERVER="${PLAZA_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}"
BACKENDS="${PLAZA_BENCH_BACKENDS:-sqlite postgres}"
source bench/lib.sh
build_plaza
need wrk curl psql
PG_DB="plaza_bench_emoji_$$"
on_exit 'psql "$PG_SERVER/postgres" -qc "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null 2>&1 || true'

export PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=warn
WINDOWS_10='Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36'
cat >"$WORK/usage.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"emoji_id": "1f680", "emoji_type": "windows"}'
LUA

# measure LABEL ARGS...: a warm-up, then the run, printed on one line.
measure() {
  local label="$1"; shift
  wrk -t2 -c"$CONNECTIONS" -d2s "$@" >/dev/null
  local out rps p50 p99 errors
  out=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency "$@")
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p50=$(echo "$out" | awk '$1=="50%" {print $2}')
  p99=$(echo "$out" | awk '$1=="99%" {print $2}')
  errors=$(echo "$out" | awk '/Non-2xx/ {print $5}')
  printf '  %-44s %10s req/s   p50 %8s   p99 %8s%s\n' "$label" "$rps" "$p50" "$p99" "${errors:+   non-2xx: $errors}"
}

echo "emoji benchmark: wrk ${DURATION}s, $CONNECTIONS connections, 2 threads, loopback; $(nproc) cores"
for backend in $BACKENDS; do
  rm -rf "$WORK/data" && mkdir -p "$WORK/data"
  export PLAZA_DATA_DIR="$WORK/data"
  case "$backend" in
    sqlite) export PLAZA_DATABASE_URL="sqlite://$WORK/data/plaza.db" ;;
    postgres)
      psql "$PG_SERVER/postgres" -qc "CREATE DATABASE $PG_DB" >/dev/null
      export PLAZA_DATABASE_URL="$PG_SERVER/$PG_DB" ;;
    *) echo "unknown backend $backend" >&2; exit 1 ;;
  esac
  echo "$backend:"
  started=$(date +%s%N)
  start_server
  echo "  first start (migrations and the catalog load) to healthy: $(( ($(date +%s%N) - started) / 1000000 )) ms"
  url="http://127.0.0.1:$PORT/api/emojis?per_page=100"
  status=$(curl -s -o "$WORK/page.json" -w '%{http_code}' -A "$WINDOWS_10" "$url")
  [ "$status" = 200 ] || { echo "GET $url answered $status" >&2; tail -5 "$WORK/server.log" >&2; exit 1; }
  echo "  one page: $(wc -c <"$WORK/page.json") bytes"
  measure "GET /api/emojis?per_page=100" -H "User-Agent: $WINDOWS_10" "$url"
  measure "the same, Cache-Control: no-cache" -H "User-Agent: $WINDOWS_10" -H "Cache-Control: no-cache" "$url"
  measure "POST /api/emojis/usage" -s "$WORK/usage.lua" "http://127.0.0.1:$PORT/api/emojis/usage"
  stop_server
done
