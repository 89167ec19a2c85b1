#!/usr/bin/env bash
# Two builds of Plaza side by side on loopback, for changes that must not
# cost anything: the figures of the new binary against the previous one,
# measured in the same run. Both serve their own fresh SQLite
# database (same set-up, rate limits off) at the same time; each round runs
# wrk on every route against the base and then the new binary, rounds
# interleaved, and the medians are compared:
#   GET /api/version                (the middleware and routing alone)
#   GET /api/health                 (one database round trip)
#   GET /api/auth/session signed in (session lookup)
#   GET /api/posts                  (the cached public list)
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

# start NAME BINARY LOG_FILTER -> sets PORT_<NAME> and COOKIE_<NAME>
start() {
  local name=$1 binary=$2 port cookie
  port=$(free_port)
  export PLAZA_DATA_DIR="$WORK/$name" PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=$3
  "$binary" migrate >/dev/null 2>&1
  "$binary" user create --email bench@example.com --password bench-password >/dev/null 2>&1
  PLAZA_BIND="127.0.0.1:$port" "$binary" serve 2>"$WORK/$name.log" &
  PIDS+=($!)
  wait_http "http://127.0.0.1:$port/api/version"
  cookie=$(curl -s -i -H 'content-type: application/json' \
    -d '{"email":"bench@example.com","password":"bench-password"}' \
    "http://127.0.0.1:$port/api/auth/signin" | awk -F'[ ;]' 'tolower($1)=="set-cookie:" && $2 ~ /^plaza_session=/ {print $2}')
  [ -n "$cookie" ] || { echo "sign-in on $name failed" >&2; exit 1; }
  printf -v "PORT_$name" '%s' "$port"
  printf -v "COOKIE_$name" '%s' "$cookie"
}
start base "$BASE" "${BASE_RUST_LOG:-info}"
start new "$NEW" "${NEW_RUST_LOG:-info}"

ROUTES=(version health session posts)
path_of() {
  case $1 in
    version) echo /api/version ;;
    health) echo /api/health ;;
    session) echo /api/auth/session ;;
    posts) echo /api/posts ;;
  esac
}

# measure BUILD ROUTE -> appends req/s to $WORK/BUILD.ROUTE
measure() {
  local build=$1 route=$2 port_var="PORT_$1" cookie_var="COOKIE_$1" header=()
  [ "$route" = session ] && header=(-H "Cookie: ${!cookie_var}")
  wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" "${header[@]}" "http://127.0.0.1:${!port_var}$(path_of "$route")" |
    awk '/Requests\/sec/ {print $2}' >>"$WORK/$build.$route"
}

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
printf '  %-28s %12s %12s %8s   %s\n' route "base req/s" "new req/s" "new/base" "rounds (base | new)"
for route in "${ROUTES[@]}"; do
  b=$(median "$WORK/base.$route")
  n=$(median "$WORK/new.$route")
  printf '  %-28s %12.0f %12.0f %8.3f   %s | %s\n' "GET $(path_of "$route")" "$b" "$n" \
    "$(python3 -c "print($n / $b)")" "$(paste -sd' ' "$WORK/base.$route")" "$(paste -sd' ' "$WORK/new.$route")"
done
