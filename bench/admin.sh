#!/usr/bin/env bash
# Versioned admin lists on loopback: seeds a fresh SQLite
# database with `plaza dev seed` (users, posts, and a share of reported
# posts), serves it with the release binary (rate limits off), mints an
# admin token, and measures with wrk at 20 connections:
#   GET /api/v1/admin/users?limit=50                  (the user list)
#   GET /api/v1/admin/posts?reported=true&limit=50    (the moderation queue)
# printing seeding time, requests/s, p50 and p99 of each.
#
# Usage: bench/admin.sh [posts, default 1000000] [users, default 100000]
#                             [seconds, default 10] [connections, default 20]
#                             [reported percent, default 2]
# Environment: PLAZA_BIN (a built binary to use instead of building one),
# PLAZA_BENCH_QUERY (another query string of /api/v1/admin/posts to measure
# instead of reported=true&limit=50).
set -euo pipefail
cd "$(dirname "$0")/.."
POSTS="${1:-1000000}"
USERS="${2:-100000}"
DURATION="${3:-10}"
CONNECTIONS="${4:-20}"
REPORTED="${5:-2}"
QUERY="${PLAZA_BENCH_QUERY:-reported=true&limit=50}"
source bench/lib.sh
build_plaza
need wrk curl python3 sqlite3

export PLAZA_DATA_DIR="$WORK" PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=warn
export PLAZA_DATABASE_URL="sqlite://$WORK/plaza.db"
export PLAZA_JWT_SECRET="admin-posts-benchmark-secret-0123456789"

echo "admin benchmark: $POSTS posts ($REPORTED% reported), $USERS users; wrk ${DURATION}s, $CONNECTIONS connections, 2 threads, loopback; $(nproc) cores"
started=$(date +%s)
"$PLAZA" dev seed --users "$USERS" --posts "$POSTS" --reported-percent "$REPORTED" 2>/dev/null | sed 's/^/  /'
echo "  seeding took $(( $(date +%s) - started ))s"
reported=$(sqlite3 "$WORK/plaza.db" "SELECT count(*) FROM posts WHERE report_count > 0")
echo "  reported posts: $reported"
"$PLAZA" user create --email bench-admin@example.com --password 'bench admin password' --role admin >/dev/null 2>&1
TOKEN=$("$PLAZA" token --email bench-admin@example.com --permissions admin:read --ttl 1h)

PORT=$(free_port)
PLAZA_BIND="127.0.0.1:$PORT" "$PLAZA" serve >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
wait_http "http://127.0.0.1:$PORT/api/health"

# measure PATH_AND_QUERY -> checks one page, then prints req/s, p50, p99
measure() {
  local url="http://127.0.0.1:$PORT$1" status out rps p50 p99 errors
  status=$(curl -s -o "$WORK/page.json" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$url")
  [ "$status" = 200 ] || { echo "GET $url answered $status: $(cat "$WORK/page.json")" >&2; exit 1; }
  python3 -c '
import json, sys
page = json.load(open(sys.argv[1]))
items = page["data"]
reports = sum(len(item.get("reports", [])) for item in items)
total = page["meta"]["pagination"]["total"]
print(f"  one page: {len(items)} items of {total}"
      + (f", {reports} reports inlined" if reports else ""))
' "$WORK/page.json"
  # Warm the page cache and connections, then measure.
  wrk -t2 -c"$CONNECTIONS" -d2s -H "Authorization: Bearer $TOKEN" "$url" >/dev/null
  out=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency -H "Authorization: Bearer $TOKEN" "$url")
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p50=$(echo "$out" | awk '$1=="50%" {print $2}')
  p99=$(echo "$out" | awk '$1=="99%" {print $2}')
  errors=$(echo "$out" | awk '/Non-2xx/ {print $5}')
  printf '  GET %s   %s req/s   p50 %s   p99 %s%s\n' "$1" "$rps" "$p50" "$p99" "${errors:+   non-2xx: $errors}"
}
measure "/api/v1/admin/users?limit=50"
measure "/api/v1/admin/posts?$QUERY"
