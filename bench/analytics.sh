#!/usr/bin/env bash
# Analytics ingest benchmark on loopback: one signed-in user's clients post
# events to POST /api/analytics/collect with wrk, against a fresh SQLite and
# a fresh PostgreSQL database; then clients that buffer post 10 events per
# request to POST /api/analytics/collect/batch. With PLAZA_PEER_BIN set, the
# same runs follow against that binary (a previous build) in the same run,
# so the two are measured side by side. Prints acknowledged events/s, p50,
# p99, and checks that the database holds the acknowledged events.
#
# Usage: bench/analytics.sh [seconds per run, default 10] [connections, default 50]
# Environment: PLAZA_BENCH_POSTGRES (server URL without a database, default
# postgres://postgres@127.0.0.1:5432), PLAZA_BENCH_BACKENDS (default
# "sqlite postgres"), PLAZA_BIN (a built binary instead of building one),
# PLAZA_PEER_BIN (a binary to measure beside it).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${1:-10}"
CONNECTIONS="${2:-50}"
PG_SERVER="${PLAZA_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}"
BACKENDS="${PLAZA_BENCH_BACKENDS:-sqlite postgres}"
source bench/lib.sh
build_plaza
need wrk curl psql sqlite3 python3
PG_DB="plaza_bench_analytics_$$"
on_exit 'psql "$PG_SERVER/postgres" -qc "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null 2>&1 || true'

NOW=$(date -u +%Y-%m-%dT%H:%M:%SZ)
EVENT='{"event_type":"page_view","event_data":{"path":"/posts/42","session_id":"bench-session","referrer":"https://example.com/"},"timestamp":"'"$NOW"'"}'
BATCH_EVENTS=10
wrk_script() { # $1: the request body
  cat <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Cookie"] = os.getenv("PLAZA_BENCH_COOKIE")
wrk.headers["User-Agent"] = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"
wrk.body = '$1'
EOF
}
wrk_script "$EVENT" >"$WORK/collect.lua"
wrk_script "{\"events\":[$(printf "$EVENT,%.0s" $(seq 1 "$BATCH_EVENTS") | sed 's/,$//')]}" >"$WORK/batch.lua"

echo "analytics ingest: wrk ${DURATION}s, $CONNECTIONS connections, 2 threads, loopback; $(nproc) cores"
for binary in "$PLAZA" ${PLAZA_PEER_BIN:+"$PLAZA_PEER_BIN"}; do
for backend in $BACKENDS; do
  for mode in single batch; do
    script=$([ "$mode" = batch ] && echo batch || echo collect)
    route=$([ "$mode" = batch ] && echo collect/batch || echo collect)
    per_request=$([ "$mode" = batch ] && echo "$BATCH_EVENTS" || echo 1)
    run=$((${run:-0} + 1))
    export PLAZA_DATA_DIR="$WORK/run-$run" PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=warn
    mkdir -p "$PLAZA_DATA_DIR"
    case "$backend" in
      sqlite)
        export PLAZA_DATABASE_URL="sqlite://$PLAZA_DATA_DIR/plaza.db"
        count_events() { sqlite3 "$PLAZA_DATA_DIR/plaza.db" "SELECT count(*) FROM analytics_events"; }
        ;;
      postgres)
        psql "$PG_SERVER/postgres" -qc "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null
        psql "$PG_SERVER/postgres" -qc "CREATE DATABASE $PG_DB" >/dev/null
        export PLAZA_DATABASE_URL="$PG_SERVER/$PG_DB"
        count_events() { psql "$PLAZA_DATABASE_URL" -tAc "SELECT count(*) FROM analytics_events"; }
        ;;
      *) echo "unknown backend $backend" >&2; exit 1 ;;
    esac
    PORT=$(free_port)
    export PLAZA_BIND="127.0.0.1:$PORT" PLAZA_BASE_URL="http://127.0.0.1:$PORT"
    "$binary" migrate >/dev/null
    "$binary" user create --email bench@example.com --password "bench password 1" --role user >/dev/null 2>&1
    "$binary" serve >"$WORK/server.log" 2>&1 &
    SERVER_PID=$!
    wait_http "http://127.0.0.1:$PORT/api/health"
    PLAZA_BENCH_COOKIE=$(curl -s -D - -o /dev/null -H 'content-type: application/json' \
      -d '{"email":"bench@example.com","password":"bench password 1"}' \
      "http://127.0.0.1:$PORT/api/auth/signin" | tr -d '\r' | awk -F'[: ;]+' 'tolower($1)=="set-cookie" && $2 ~ /^plaza_session=/ {print $2; exit}')
    export PLAZA_BENCH_COOKIE
    [ -n "$PLAZA_BENCH_COOKIE" ] || { echo "sign-in failed" >&2; exit 1; }
    # Warm connections and the database, then measure.
    wrk -t2 -c"$CONNECTIONS" -d2s -s "$WORK/$script.lua" "http://127.0.0.1:$PORT/api/analytics/$route" >/dev/null
    before=$(count_events)
    out=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$WORK/$script.lua" "http://127.0.0.1:$PORT/api/analytics/$route")
    kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""
    after=$(count_events)
    requests=$(echo "$out" | awk '/requests in/ {print $1}')
    errors=$(echo "$out" | awk '/Non-2xx/ {print $5}')
    p50=$(echo "$out" | awk '$1=="50%" {print $2}')
    p99=$(echo "$out" | awk '$1=="99%" {print $2}')
    acknowledged=$(((requests - ${errors:-0}) * per_request))
    stored=$((after - before))
    case "$mode" in
      single) mode="one event a request" ;;
      batch) mode="batches of $BATCH_EVENTS" ;;
    esac
    [ "$binary" = "$PLAZA" ] && build=this || build=peer
    printf '  %-4s %-8s %-21s %8s events/s acknowledged   p50 %-9s p99 %-9s stored %s of %s acknowledged%s\n' \
      "$build" "$backend" "$mode" "$((acknowledged / DURATION))" "$p50" "$p99" "$stored" "$acknowledged" \
      "${errors:+   non-2xx: $errors}"
  done
done
done
