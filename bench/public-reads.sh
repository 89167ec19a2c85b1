#!/usr/bin/env bash
# Public reads at memory speed, on loopback and PostgreSQL: seeds one
# database with `plaza dev seed`, copies it for each binary, and measures
# with wrk, one server at a time:
#   GET /api/posts?limit=20 cached, anonymous: the binary built from this
#     tree (checked in memory while its notifications are connected)
#     against a previous one (checked by a read of the content generation
#     per request), side by side in one run;
#   the same request with If-None-Match naming the current ETag (304s);
#   GET /api/version, the server's ceiling without a database.
# It prints requests/s, p50 and p99 of each, and how many reads of the
# content generation the new binary made during its cached run.
#
# Usage: bench/public-reads.sh [posts, default 100000] [users, default 10000]
#                              [seconds per run, default 10] [connections, default 50]
# Environment: PLAZA_BASE_BIN (the previous binary, needed; build it in a
# worktree of the revision with a target folder of its own, e.g.
#   git worktree add --detach /tmp/base REV && cp -a target /tmp/base-target &&
#   (cd /tmp/base && CARGO_TARGET_DIR=/tmp/base-target cargo build --release -p plaza-server)
# — two worktrees sharing one target folder can each take the other's
# build of a workspace crate for up to date), PLAZA_BIN (a built binary to
# use instead of building this tree), PLAZA_BENCH_POSTGRES (server URL
# without a database, default postgres://postgres@127.0.0.1:5432),
# WRK_THREADS (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
POSTS="${1:-100000}"
USERS="${2:-10000}"
DURATION="${3:-10}"
CONNECTIONS="${4:-50}"
PG_SERVER="${PLAZA_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}"
THREADS="${WRK_THREADS:-1}"
source bench/lib.sh
need wrk curl psql python3
BASE="${PLAZA_BASE_BIN:?set PLAZA_BASE_BIN to the previous binary (see the header)}"
build_plaza
echo "base: $("$BASE" --version 2>/dev/null || echo "$BASE"); new: $PLAZA"

DB="plaza_bench_reads_$$"
DROP_ALL="for d in ${DB} ${DB}_base ${DB}_new; do psql '$PG_SERVER/postgres' -qc \"DROP DATABASE IF EXISTS \$d WITH (FORCE)\" >/dev/null 2>&1; done"
on_exit "$DROP_ALL"
psql "$PG_SERVER/postgres" -qc "CREATE DATABASE $DB" >/dev/null
export PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=warn PLAZA_METRICS_PUBLIC=true
mkdir -p "$WORK/seed"
# Seeded at the base's schema, so each binary migrates its own copy.
PLAZA_DATA_DIR="$WORK/seed" PLAZA_DATABASE_URL="$PG_SERVER/$DB" \
  "$BASE" dev seed --users "$USERS" --posts "$POSTS" 2>/dev/null | sed 's/^/  /'
for copy in base new; do
  psql "$PG_SERVER/postgres" -qc "CREATE DATABASE ${DB}_$copy TEMPLATE $DB" >/dev/null
done

# run NAME URL [header] -> prints "NAME rps p50 p99", with any non-2xx/3xx
run() {
  local name=$1 url=$2 header=${3:-} out
  if [ -n "$header" ]; then
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -H "$header" "$url")
  else
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency "$url")
  fi
  local rps p50 p99 errors
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p50=$(echo "$out" | awk '$1=="50%" {print $2}')
  p99=$(echo "$out" | awk '$1=="99%" {print $2}')
  errors=$(echo "$out" | awk '/Non-2xx/ {print $5}')
  printf '  %-44s %10s req/s   p50 %-9s p99 %-9s%s\n' "$name" "$rps" "$p50" "$p99" \
    "${errors:+   non-2xx/3xx: $errors}"
}

# serve BIN COPY: starts BIN on database copy COPY and waits for it.
serve() {
  PORT=$(free_port)
  mkdir -p "$WORK/data-$2"
  PLAZA_DATA_DIR="$WORK/data-$2" PLAZA_DATABASE_URL="$PG_SERVER/${DB}_$2" \
    PLAZA_BIND="127.0.0.1:$PORT" "$1" serve 2>"$WORK/$2.log" &
  SERVER_PID=$!
  wait_http "http://127.0.0.1:$PORT/api/health"
  LIST="http://127.0.0.1:$PORT/api/posts?limit=20"
  METRICS="http://127.0.0.1:$PORT/api/metrics"
}

generation_reads() {
  curl -sf "$METRICS" | awk '$1=="plaza_content_generation_reads_total" {print $2}'
}

echo "public reads: $POSTS posts, $USERS users on PostgreSQL; wrk ${DURATION}s, $CONNECTIONS connections, $THREADS thread(s), loopback; $(nproc) cores"
for copy in base new; do
  if [ "$copy" = base ]; then bin="$BASE"; else bin="$PLAZA"; fi
  serve "$bin" "$copy"
  curl -sf "$LIST" | python3 -c 'import json,sys; b=json.load(sys.stdin); print("  list total:", b["pagination"]["total"], "posts; page of", len(b["posts"]))'
  wrk -t"$THREADS" -c"$CONNECTIONS" -d2s "$LIST" >/dev/null
  if [ "$copy" = new ]; then
    # Until the listener has connected, answers are checked by a read.
    for _ in $(seq 1 100); do
      curl -sf "$METRICS" | grep -q '^plaza_content_notifications_listening{channel="postgres"} 1' && break
      sleep 0.1
    done
    before=$(generation_reads)
  fi
  run "$copy: list, cached, anonymous" "$LIST"
  if [ "$copy" = new ]; then
    echo "  reads of the content generation during that run: $(( $(generation_reads) - before ))"
    TAG=$(curl -sfI "$LIST" | awk -F': ' 'tolower($1)=="etag" {print $2}' | tr -d '\r')
    code=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $TAG" "$LIST")
    [ "$code" = 304 ] || { echo "If-None-Match: $TAG answered $code" >&2; exit 1; }
    run "$copy: list, If-None-Match (304)" "$LIST" "If-None-Match: $TAG"
    run "$copy: GET /api/version (no database)" "http://127.0.0.1:$PORT/api/version"
  fi
  stop_server
done
