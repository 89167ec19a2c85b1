#!/usr/bin/env bash
# Two builds of Plaza side by side on loopback, for changes that must not
# cost anything: the figures of the new binary against the previous one,
# measured in the same run. Both serve their own fresh database (SQLite,
# or PostgreSQL with SIDE_BY_SIDE_DATABASE=postgres; same set-up, rate
# limits off) at the same time; each round runs wrk on every route against
# the base and then the new binary, rounds interleaved, and the medians are
# compared (requests/s, and the median p50 and p99). SIDE_BY_SIDE_ROUTES picks the routes (default: the first four):
#   version   GET /api/version                (the middleware and routing alone)
#   health    GET /api/health                 (one database round trip)
#   session   GET /api/auth/session signed in (session lookup)
#   posts     GET /api/posts                  (the cached public list)
#   rendered  GET /api/posts?limit=20 with Cache-Control: no-cache (rendered
#             every time; 10,000 posts seeded)
#   flags     GET /api/feature-flags signed in, with 20 flags stored
#   admin     GET /api/admin/users?limit=20 signed in as an administrator,
#             1,000 users seeded (each read writes its audit entry)
#   feed      GET /api/feed?limit=20 signed in as a member (no staff role)
#             following 1,000 authors among SIDE_BY_SIDE_FEED_POSTS posts
#             (default 1,000,000) by 10,000 users, seeded into each database
# Both log as shipped (INFO, so an access line per request, into a file);
# BASE_RUST_LOG / NEW_RUST_LOG set another filter for one of them, e.g.
# NEW_RUST_LOG=info,plaza::access=warn to measure the access log itself.
# Usage: bench/side-by-side.sh BASE_BINARY NEW_BINARY [seconds per run, default 8]
#                              [connections, default 50] [rounds, default 3]
set -euo pipefail
cd "$(dirname "$0")/.."
BASE="${1:?the base binary}"
NEW="${2:?the new binary}"
DURATION="${3:-8}"
CONNECTIONS="${4:-50}"
ROUNDS="${5:-3}"
source bench/lib.sh
need wrk curl python3

# start NAME BINARY LOG_FILTER -> sets PORT_<NAME>, COOKIE_<NAME> (the
# administrator's) and, with the feed, READER_<NAME> (the member's)
start() {
  local name=$1 binary=$2 port cookie
  port=$(free_port)
  export PLAZA_DATA_DIR="$WORK/$name" PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=$3
  if [ "${SIDE_BY_SIDE_DATABASE:-sqlite}" = postgres ]; then
    local database="plaza_side_by_side_${name}_$$"
    psql "$POSTGRES_SERVER/postgres" -qc "CREATE DATABASE $database" >/dev/null
    DATABASES+=("$database")
    export PLAZA_DATABASE_URL="$POSTGRES_SERVER/$database"
  fi
  "$binary" migrate >/dev/null 2>&1
  "$binary" user create --email bench@example.com --password bench-password --role admin >/dev/null 2>&1
  if [[ " $ROUTE_LIST " == *" feed "* ]]; then
    "$binary" user create --email reader@example.com --password bench-password --role user >/dev/null 2>&1
    "$binary" dev seed --users 10000 --posts "${SIDE_BY_SIDE_FEED_POSTS:-1000000}" >/dev/null 2>&1
    follow_authors "$binary"
  elif [[ " $ROUTE_LIST " == *" admin "* || " $ROUTE_LIST " == *" rendered "* ]]; then
    "$binary" dev seed --users 1000 --posts 10000 >/dev/null 2>&1
  fi
  PLAZA_BIND="127.0.0.1:$port" "$binary" serve 2>"$WORK/$name.log" &
  PIDS+=($!)
  wait_http "http://127.0.0.1:$port/api/version"
  cookie=$(PORT=$port session_cookie bench@example.com bench-password)
  [ -n "$cookie" ] || { echo "sign-in on $name failed" >&2; exit 1; }
  printf -v "PORT_$name" '%s' "$port"
  printf -v "COOKIE_$name" '%s' "$cookie"
  if [[ " $ROUTE_LIST " == *" feed "* ]]; then
    cookie=$(PORT=$port session_cookie reader@example.com bench-password)
    [ -n "$cookie" ] || { echo "the reader's sign-in on $name failed" >&2; exit 1; }
    printf -v "READER_$name" '%s' "$cookie"
  fi
  if [[ " $ROUTE_LIST " == *" flags "* ]]; then
    local token flag
    token=$("$binary" token --email bench@example.com --permissions admin:read,admin:write)
    for flag in $(seq 1 20); do
      curl -sf -o /dev/null -X PUT -H "authorization: Bearer $token" -H 'content-type: application/json' \
        -d "{\"enabled\":true,\"rolloutPercentage\":$((flag * 5)),\"description\":\"flag $flag\"}" \
        "http://127.0.0.1:$port/api/v1/admin/feature-flags/bench-flag-$flag"
    done
  fi
}
# follow_authors BINARY: the reader follows the first 1,000 authors of
# the seed, in plain SQL both databases take; then statistics for the
# planner, as a database that has been running would have them.
follow_authors() {
  local statement="INSERT INTO follows (follower_id, followed_id, created_at)
    SELECT (SELECT id FROM users WHERE email = 'reader@example.com'), author_id, 0
    FROM (SELECT author_id FROM posts GROUP BY author_id ORDER BY author_id LIMIT 1000) AS followed;"
  if [ "${SIDE_BY_SIDE_DATABASE:-sqlite}" = postgres ]; then
    psql -q -v ON_ERROR_STOP=1 "$PLAZA_DATABASE_URL" -c "$statement" -c "VACUUM ANALYZE" >/dev/null
  else
    sqlite3 "$PLAZA_DATA_DIR/plaza.db" "$statement ANALYZE;"
  fi
}
POSTGRES_SERVER="${PLAZA_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}"
DATABASES=()
drop_databases() {
  for database in "${DATABASES[@]}"; do
    psql "$POSTGRES_SERVER/postgres" -qc "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null 2>&1 || true
  done
}
on_exit drop_databases
ROUTE_LIST="${SIDE_BY_SIDE_ROUTES:-version health session posts}"
read -r -a ROUTES <<<"$ROUTE_LIST"

path_of() {
  case $1 in
    version) echo /api/version ;;
    health) echo /api/health ;;
    session) echo /api/auth/session ;;
    posts) echo /api/posts ;;
    rendered) echo '/api/posts?limit=20' ;;
    flags) echo /api/feature-flags ;;
    admin) echo '/api/admin/users?limit=20' ;;
    feed) echo '/api/feed?limit=20' ;;
    *) echo "unknown route $1" >&2; exit 1 ;;
  esac
}
# headers_of ROUTE BUILD -> the request's extra wrk arguments, one a line.
headers_of() {
  local cookie_var="COOKIE_$2" reader_var="READER_$2"
  case $1 in
    session | flags | admin) printf '%s\n' -H "Cookie: ${!cookie_var}" ;;
    feed) printf '%s\n' -H "Cookie: ${!reader_var}" ;;
    rendered) printf '%s\n' -H 'Cache-Control: no-cache' ;;
  esac
}

# measure BUILD ROUTE -> appends req/s, p50 and p99 (ms) to
# $WORK/BUILD.ROUTE{,.p50,.p99}
measure() {
  local build=$1 route=$2 port_var="PORT_$1" header=() out
  mapfile -t header < <(headers_of "$route" "$build")
  out=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency "${header[@]}" "http://127.0.0.1:${!port_var}$(path_of "$route")")
  echo "$out" | awk '/Requests\/sec/ {print $2}' >>"$WORK/$build.$route"
  echo "$out" | awk '$1=="50%" {print ms($2)} function ms(v) { return v ~ /us$/ ? v / 1000 : v ~ /ms$/ ? v + 0 : v * 1000 }' >>"$WORK/$build.$route.p50"
  echo "$out" | awk '$1=="99%" {print ms($2)} function ms(v) { return v ~ /us$/ ? v / 1000 : v ~ /ms$/ ? v + 0 : v * 1000 }' >>"$WORK/$build.$route.p99"
}

start base "$BASE" "${BASE_RUST_LOG:-info}"
start new "$NEW" "${NEW_RUST_LOG:-info}"
echo "side by side: base $BASE, new $NEW; wrk ${DURATION}s, $CONNECTIONS connections, 2 threads, $ROUNDS rounds; $(nproc) cores"
for route in "${ROUTES[@]}"; do
  for build in base new; do
    port_var="PORT_$build"
    wrk -t2 -c"$CONNECTIONS" -d2s "http://127.0.0.1:${!port_var}$(path_of "$route")" >/dev/null
  done
done
for round in $(seq 1 "$ROUNDS"); do
  for route in "${ROUTES[@]}"; do
    measure base "$route"
    measure new "$route"
  done
  echo "  round $round done"
done
median() { sort -n "$1" | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
printf '  %-28s %12s %12s %8s  %-17s %-17s  %s\n' route "base req/s" "new req/s" "new/base" \
  "p50 ms base|new" "p99 ms base|new" "rounds (base | new)"
for route in "${ROUTES[@]}"; do
  b=$(median "$WORK/base.$route")
  n=$(median "$WORK/new.$route")
  printf '  %-28s %12.0f %12.0f %8.3f  %-17s %-17s  %s | %s\n' "GET $(path_of "$route")" "$b" "$n" \
    "$(python3 -c "print($n / $b)")" \
    "$(median "$WORK/base.$route.p50")|$(median "$WORK/new.$route.p50")" \
    "$(median "$WORK/base.$route.p99")|$(median "$WORK/new.$route.p99")" \
    "$(paste -sd' ' "$WORK/base.$route")" "$(paste -sd' ' "$WORK/new.$route")"
done
