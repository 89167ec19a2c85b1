#!/usr/bin/env bash
# The operator console's busiest pages on a large community, against their
# API twins, on loopback: seeds a fresh SQLite database with
# `plaza dev seed` (USERS users, POSTS posts, 1% of them reported), serves
# it with the release binary (rate limits off), signs a super admin in and
# measures each page with wrk on one connection (the target: p99 < 50 ms):
#   GET /admin/users                         (the newest 25 users)
#   GET /admin/users?search=seed4242         (a search matching 11 users)
#   GET /admin/users?search=plaza.invalid    (a search matching every user)
#   GET /admin/moderation                    (the open-report queue)
#   GET /admin/moderation?state=all          (every post, newest first)
# and, as the peer in the same run, the JSON the admin API answers for the
# same data: /api/v1/admin/users?limit=25 (and with the same searches) and
# /api/v1/admin/posts?reported=true&limit=20. Prints requests/s, p50 and
# p99 of each.
#
# Usage: bench/console.sh [users, default 100000] [posts, default 1000000]
#                         [seconds, default 10]
# Environment: PLAZA_BIN (a built binary instead of building one).
set -euo pipefail
cd "$(dirname "$0")/.."
USERS="${1:-100000}"
POSTS="${2:-1000000}"
DURATION="${3:-10}"
source bench/lib.sh
build_plaza
need wrk curl python3

export PLAZA_DATA_DIR="$WORK/data" PLAZA_DATABASE_URL="sqlite://$WORK/data/plaza.db"
export PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=warn
mkdir -p "$WORK/data"
PASSWORD='console bench password'
started=$(date +%s)
"$PLAZA" dev seed --users "$USERS" --posts "$POSTS" --reported-percent 1 >/dev/null 2>&1
"$PLAZA" user create --email root@example.com --password "$PASSWORD" --role super_admin >/dev/null 2>&1
echo "console benchmark: $USERS users, $POSTS posts (seeding took $(( $(date +%s) - started ))s); wrk ${DURATION}s, 1 connection, loopback; $(nproc) cores"
start_server
COOKIE=$(session_cookie root@example.com "$PASSWORD")
[ -n "$COOKIE" ] || { echo "sign-in failed" >&2; exit 1; }
TOKEN=$(curl -s -H "Cookie: $COOKIE" -H 'content-type: application/json' \
  -d '{"permissions":["admin:read"]}' "http://127.0.0.1:$PORT/api/auth/token" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')

# measure PATH HEADER: one warm-up, then a measured wrk run.
measure() {
  local url="http://127.0.0.1:$PORT$1" out rps p50 p99 errors status
  status=$(curl -s -o /dev/null -w '%{http_code}' -H "$2" "$url")
  [ "$status" = 200 ] || { echo "GET $1 answered $status" >&2; exit 1; }
  wrk -t1 -c1 -d2s -H "$2" "$url" >/dev/null
  out=$(wrk -t1 -c1 -d"${DURATION}s" --latency -H "$2" "$url")
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p50=$(echo "$out" | awk '$1=="50%" {print $2}')
  p99=$(echo "$out" | awk '$1=="99%" {print $2}')
  errors=$(echo "$out" | awk '/Non-2xx/ {print $5}')
  printf '  %-46s %9s req/s   p50 %8s   p99 %8s%s\n' "$1" "$rps" "$p50" "$p99" "${errors:+   non-2xx: $errors}"
}
echo " console pages:"
measure "/admin/users" "Cookie: $COOKIE"
measure "/admin/users?search=seed4242" "Cookie: $COOKIE"
measure "/admin/users?search=plaza.invalid" "Cookie: $COOKIE"
measure "/admin/moderation" "Cookie: $COOKIE"
measure "/admin/moderation?state=all" "Cookie: $COOKIE"
echo " their API twins (peer):"
measure "/api/v1/admin/users?limit=25" "Authorization: Bearer $TOKEN"
measure "/api/v1/admin/users?limit=25&search=seed4242" "Authorization: Bearer $TOKEN"
measure "/api/v1/admin/users?limit=25&search=plaza.invalid" "Authorization: Bearer $TOKEN"
measure "/api/v1/admin/posts?reported=true&limit=20" "Authorization: Bearer $TOKEN"
