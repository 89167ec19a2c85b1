#!/usr/bin/env bash
# The unversioned admin user list on loopback: seeds a fresh
# database on each backend with `plaza dev seed` (users with linked provider
# accounts, roles, subscriptions and bans, which the list summarises),
# serves it with the release binary (rate limits off), signs an admin in and
# measures with wrk:
#   GET /api/admin/users?limit=100   (the target: p99 < 15 ms, 10 clients)
#   GET /api/admin/users?limit=10    (a small page: the time of a page
#                                     grows with what it holds, not with
#                                     one query per user)
# printing requests/s, p50 and p99 of each.
#
# Usage: bench/admin-users.sh [users, default 100000] [seconds, default 10]
#                             [connections, default 10]
# Environment: PLAZA_BIN (a built binary instead of building one),
# PLAZA_BENCH_POSTGRES (server URL, default postgres://postgres@127.0.0.1:5432),
# PLAZA_BENCH_BACKENDS (default "sqlite postgres").
set -euo pipefail
cd "$(dirname "$0")/.."
USERS="${1:-100000}"
DURATION="${2:-10}"
CONNECTIONS="${3:-10}"
PG_SERVER="${PLAZA_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}"
BACKENDS="${PLAZA_BENCH_BACKENDS:-sqlite postgres}"
source bench/lib.sh
build_plaza
need wrk curl python3 psql
PG_DB="plaza_bench_admin_users_$$"
on_exit 'psql "$PG_SERVER/postgres" -qc "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null 2>&1 || true'

export PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=warn
export PLAZA_JWT_SECRET="admin-users-benchmark-secret-0123456789"
PASSWORD='bench admin password'

echo "admin user list benchmark: $USERS users; wrk ${DURATION}s, $CONNECTIONS connections, 2 threads, loopback; $(nproc) cores"
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
  started=$(date +%s)
  "$PLAZA" dev seed --users "$USERS" --posts 0 >/dev/null 2>&1
  "$PLAZA" user create --email bench-admin@example.com --password "$PASSWORD" --role admin >/dev/null 2>&1
  echo "  seeding took $(( $(date +%s) - started ))s"
  start_server
  COOKIE=$(session_cookie bench-admin@example.com "$PASSWORD")
  [ -n "$COOKIE" ] || { echo "sign-in failed" >&2; exit 1; }
  for limit in 100 10; do
    url="http://127.0.0.1:$PORT/api/admin/users?limit=$limit"
    status=$(curl -s -o "$WORK/page.json" -w '%{http_code}' -H "Cookie: $COOKIE" "$url")
    [ "$status" = 200 ] || { echo "GET $url answered $status: $(cat "$WORK/page.json")" >&2; tail -5 "$WORK/server.log" >&2; exit 1; }
    python3 -c '
import json, sys
page = json.load(open(sys.argv[1]))
users = page["users"]
def count(field):
    return sum(1 for user in users if user[field])
total = page["pagination"]["total"]
providers, subscriptions = count("provider_name"), count("subscription_count")
bans, staff = count("timeout_count"), count("has_moderator")
print(f"  one page: {len(users)} users of {total}: {providers} with a provider, "
      f"{subscriptions} with subscriptions, {bans} with bans, {staff} moderators or admins")
' "$WORK/page.json"
    wrk -t2 -c"$CONNECTIONS" -d2s -H "Cookie: $COOKIE" "$url" >/dev/null
    out=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency -H "Cookie: $COOKIE" "$url")
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    p50=$(echo "$out" | awk '$1=="50%" {print $2}')
    p99=$(echo "$out" | awk '$1=="99%" {print $2}')
    errors=$(echo "$out" | awk '/Non-2xx/ {print $5}')
    printf '  GET /api/admin/users?limit=%s   %s req/s   p50 %s   p99 %s%s\n' "$limit" "$rps" "$p50" "$p99" "${errors:+   non-2xx: $errors}"
    [ -z "$errors" ] || tail -3 "$WORK/server.log" | cut -c1-400
  done
  stop_server
done
