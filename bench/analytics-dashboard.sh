#!/usr/bin/env bash
# Analytics dashboard benchmark: stores EVENTS analytics events spread over
# the last year (1,000 users, 200 paths, sessions of 20 events about a
# minute long, each session from one user, device, country and VPN flag, a
# tenth of the events clicks) in a fresh SQLite and a fresh PostgreSQL
# database, counts them into the rollups (`plaza analytics rebuild-rollups`,
# timed; then ANALYZE, and VACUUM on PostgreSQL), then times GET
# /api/admin/analytics (every section) and GET /api/v1/admin/analytics
# over 30 days and a year, five times each, and
# prints the fastest, median and slowest answer.
#
# Usage: bench/analytics-dashboard.sh [events, default 10000000]
# Environment: PLAZA_BENCH_POSTGRES (server URL without a database, default
# postgres://postgres@127.0.0.1:5432), PLAZA_BENCH_BACKENDS (default
# "sqlite postgres"), PLAZA_BIN (a built binary instead of building one).
set -euo pipefail
cd "$(dirname "$0")/.."
EVENTS="${1:-10000000}"
PG_SERVER="${PLAZA_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}"
BACKENDS="${PLAZA_BENCH_BACKENDS:-sqlite postgres}"
source bench/lib.sh
build_plaza
need curl psql sqlite3 python3
PG_DB="plaza_bench_dashboard_$$"
on_exit 'psql "$PG_SERVER/postgres" -qc "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null 2>&1 || true'

NOW_MS=$(($(date +%s) * 1000))
YEAR_MS=$((365 * 86400000))
# One row per i: the columns as expressions of i (SQL shared by both engines).
COLUMNS="event_id, user_id, event_type, event_data, path, session_key, duration_ms, click_x, click_y, client_hash, device_type, country, is_vpn, occurred_at, received_at"
row_sql() { # $1: the boolean literal pair for is_vpn
  echo "'seed-' || i, 1 + (i / 20) % 1000,
    CASE i % 10 WHEN 0 THEN 'button_click' WHEN 1 THEN 'session_end' ELSE 'page_view' END,
    '{}', '/p/' || (i % 200), 's-' || (i / 20),
    CASE WHEN i % 10 = 1 THEN 60000 + i % 600000 ELSE NULL END, i % 1200, i % 800, 'h',
    CASE (i / 20) % 3 WHEN 0 THEN 'desktop' WHEN 1 THEN 'mobile' ELSE 'tablet' END,
    CASE (i / 20) % 4 WHEN 0 THEN 'DE' WHEN 1 THEN 'US' WHEN 2 THEN 'FR' ELSE NULL END,
    $1, $NOW_MS - 60000 - (i * 3163) % $YEAR_MS, $NOW_MS"
}

echo "analytics dashboard: $EVENTS events over a year; loopback; $(nproc) cores"
for backend in $BACKENDS; do
  export PLAZA_DATA_DIR="$WORK/$backend" PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=warn
  mkdir -p "$PLAZA_DATA_DIR"
  case "$backend" in
    sqlite) export PLAZA_DATABASE_URL="sqlite://$PLAZA_DATA_DIR/plaza.db" ;;
    postgres)
      psql "$PG_SERVER/postgres" -qc "CREATE DATABASE $PG_DB" >/dev/null
      export PLAZA_DATABASE_URL="$PG_SERVER/$PG_DB" ;;
  esac
  PORT=$(free_port)
  export PLAZA_BIND="127.0.0.1:$PORT" PLAZA_BASE_URL="http://127.0.0.1:$PORT"
  "$PLAZA" migrate >/dev/null
  "$PLAZA" user create --email admin@example.com --password "bench password 1" --role admin >/dev/null
  started=$SECONDS
  case "$backend" in
    sqlite)
      sqlite3 "$PLAZA_DATA_DIR/plaza.db" "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < $EVENTS - 1)
        INSERT INTO analytics_events ($COLUMNS) SELECT $(row_sql "((i / 20) % 20 = 0)") FROM n; ANALYZE;" ;;
    postgres)
      psql "$PLAZA_DATABASE_URL" -qc "INSERT INTO analytics_events ($COLUMNS)
        SELECT $(row_sql "((i / 20) % 20 = 0)") FROM generate_series(0::bigint, $EVENTS - 1) AS i; ANALYZE analytics_events;" >/dev/null ;;
  esac
  echo "  $backend: stored $EVENTS events in $((SECONDS - started)) s"
  started=$SECONDS
  "$PLAZA" analytics rebuild-rollups >/dev/null
  echo "  $backend: counted them into the rollups in $((SECONDS - started)) s"
  # Statistics for the new rollup rows and, on PostgreSQL, the visibility
  # map that index-only scans need: what autovacuum leaves on a live
  # database after a bulk load.
  case "$backend" in
    sqlite) sqlite3 "$PLAZA_DATA_DIR/plaza.db" "ANALYZE" ;;
    postgres) psql "$PLAZA_DATABASE_URL" -qc "VACUUM ANALYZE" >/dev/null ;;
  esac
  "$PLAZA" serve >"$WORK/server.log" 2>&1 &
  SERVER_PID=$!
  wait_http "http://127.0.0.1:$PORT/api/health"
  TOKEN=$("$PLAZA" token --email admin@example.com --permissions admin:read)
  for path in "/api/admin/analytics?dateRange=30d" "/api/admin/analytics?dateRange=1y" \
              "/api/v1/admin/analytics?period=30d" "/api/v1/admin/analytics?period=1y"; do
    times=()
    for _ in 1 2 3 4 5; do
      out=$(curl -s -o "$WORK/answer.json" -w '%{http_code} %{time_total}' -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT$path")
      if [ "${out%% *}" != 200 ]; then
        printf '  %-8s GET %-40s answered %s after %s s: %s\n' "$backend" "$path" "${out%% *}" "${out#* }" "$(head -c 200 "$WORK/answer.json")"
        continue 2
      fi
      times+=("${out#* }")
    done
    printf '  %-8s GET %-40s %s\n' "$backend" "$path" "$(printf '%s\n' "${times[@]}" | sort -n | awk '{t[NR]=$1*1000} END {printf "min %.0f ms   median %.0f ms   max %.0f ms", t[1], t[3], t[5]}')"
  done
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""
done
