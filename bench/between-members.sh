#!/usr/bin/env bash
# What blocks, mutes and keyword filters cost a reader, and the follow
# feed, on loopback, on SQLite and on PostgreSQL in one run. One database
# per backend, seeded with `plaza dev seed` (users, posts, and a thread of
# replies), and three members signed in:
#   plain: no blocks, mutes or filters;
#   heavy: 1,000 blocks, 1,000 mutes (of authors who wrote in the seed)
#     and 100 keyword filters (half hide, half warn);
#   follower: follows 1,000 authors.
# Measured with wrk at CONNECTIONS connections, rendered each time:
#   GET /api/posts?limit=20, GET /api/posts/{thread}/replies?limit=50 and
#     GET /api/search/posts?q=garden&limit=20, as plain and as heavy;
#   GET /api/posts?limit=20 anonymous from the answer cache;
#   GET /api/feed?limit=20 as follower.
# It prints requests/s, p50 and p99 of each, then heavy / plain per route
# (the time of a request, so plain rate / heavy rate).
#
# Usage: flock /tmp/bench.lock bench/between-members.sh [posts, default 1000000]
#          [users, default 10000] [thread replies, default 10000]
#          [seconds per run, default 10] [connections, default 50]
# Environment: PLAZA_BIN (a built binary instead of building this tree),
# PLAZA_BENCH_POSTGRES (server URL without a database, default
# postgres://postgres@127.0.0.1:5432), PLAZA_BENCH_BACKENDS (default
# "sqlite postgres"), WRK_THREADS (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
POSTS="${1:-1000000}"
USERS="${2:-10000}"
THREAD_REPLIES="${3:-10000}"
DURATION="${4:-10}"
CONNECTIONS="${5:-50}"
PG_SERVER="${PLAZA_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}"
BACKENDS="${PLAZA_BENCH_BACKENDS:-sqlite postgres}"
THREADS="${WRK_THREADS:-1}"
source bench/lib.sh
need wrk curl psql sqlite3 python3
build_plaza
PG_DB="plaza_bench_between_$$"
on_exit "psql '$PG_SERVER/postgres' -qc 'DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)' >/dev/null 2>&1 || true"
PASSWORD="between members bench password"
FRESH="Cache-Control: no-cache"

# record NAME RPS P50 P99 [NOTE]: prints a row and keeps the rate in $WORK.
record() {
  printf '  %-44s %10s/s   p50 %-9s p99 %-9s%s\n' "$1" "$2" "$3" "$4" "${5:-}"
  echo "$2" >"$WORK/rate: ${1//\//_}"
}

# run NAME URL [wrk arguments...]: one wrk run, recorded; any answers other
# than 2xx/3xx are named.
run() {
  local name=$1 url=$2 out errors
  shift 2
  out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency "$@" "$url")
  errors=$(echo "$out" | awk '/Non-2xx/ {print $5}')
  record "$name" "$(echo "$out" | awk '/Requests\/sec/ {print $2}')" \
    "$(echo "$out" | awk '$1=="50%" {print $2}')" "$(echo "$out" | awk '$1=="99%" {print $2}')" \
    "${errors:+   non-2xx/3xx: $errors}"
}

# The relations of heavy and follower, as plain SQL both databases take:
# blocks and mutes of the most prolific authors (so they hide posts the
# pages would show), filters of phrases that are not in the seed's words
# (each is still matched against every text read). The follows fill the
# follower's feed as follows through the API do (the schema's trigger).
relations_sql() {
  local heavy=$1 follower=$2 now
  now=$(date +%s%3N)
  echo "BEGIN;"
  echo "INSERT INTO member_relations (user_id, other_id, blocked_at)
    SELECT $heavy, author_id, $now FROM (SELECT author_id FROM posts GROUP BY author_id
      ORDER BY COUNT(*) DESC, author_id LIMIT 1000) AS prolific;"
  echo "INSERT INTO member_relations (user_id, other_id, muted_at)
    SELECT $heavy, author_id, $now FROM (SELECT author_id FROM posts GROUP BY author_id
      ORDER BY COUNT(*) DESC, author_id LIMIT 1000 OFFSET 1000) AS next_prolific;"
  for n in $(seq 1 100); do
    if [ $((n % 2)) = 0 ]; then action=hide; else action=warn; fi
    echo "INSERT INTO member_filters (user_id, phrase, whole_word, action, created_at)
      VALUES ($heavy, 'quokka$n lantern', TRUE, '$action', $now);"
  done
  echo "INSERT INTO follows (follower_id, followed_id, created_at)
    SELECT $follower, author_id, $now FROM (SELECT author_id FROM posts GROUP BY author_id
      ORDER BY author_id LIMIT 1000) AS followed;"
  echo "COMMIT;"
}

echo "between members: $POSTS posts, $USERS users, a thread of $THREAD_REPLIES replies; wrk ${DURATION}s, $CONNECTIONS connections, $THREADS thread(s), loopback; $(nproc) cores"
for backend in $BACKENDS; do
  export PLAZA_DATA_DIR="$WORK/$backend" PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=warn
  case "$backend" in
    sqlite)
      export PLAZA_DATABASE_URL="sqlite://$PLAZA_DATA_DIR/plaza.db"
      sql() { sqlite3 "$PLAZA_DATA_DIR/plaza.db"; }
      ;;
    postgres)
      psql "$PG_SERVER/postgres" -qc "CREATE DATABASE $PG_DB" >/dev/null
      export PLAZA_DATABASE_URL="$PG_SERVER/$PG_DB"
      sql() { psql -q -v ON_ERROR_STOP=1 "$PLAZA_DATABASE_URL" >/dev/null; }
      ;;
    *) echo "unknown backend $backend" >&2; exit 1 ;;
  esac
  mkdir -p "$PLAZA_DATA_DIR"
  echo
  echo "== $backend"
  "$PLAZA" dev seed --users "$USERS" --posts "$POSTS" --replies "$THREAD_REPLIES" \
    --thread-replies "$THREAD_REPLIES" 2>/dev/null | tee "$WORK/seed.out" | sed 's/^/  /'
  POST_ID=$(sed -n 's/.*in the thread of post \([0-9]*\).*/\1/p' "$WORK/seed.out")
  for who in plain heavy follower; do
    "$PLAZA" user create --email "$who@example.com" --password "$PASSWORD" --role user >/dev/null 2>&1
  done
  id_of() { echo "SELECT id FROM users WHERE email = '$1@example.com';" | case "$backend" in
    sqlite) sqlite3 "$PLAZA_DATA_DIR/plaza.db" ;;
    postgres) psql -tA "$PLAZA_DATABASE_URL" ;;
  esac; }
  relations_sql "$(id_of heavy)" "$(id_of follower)" | sql
  [ "$backend" = postgres ] && psql "$PLAZA_DATABASE_URL" -qc "VACUUM ANALYZE" >/dev/null
  start_server
  for who in plain heavy follower; do
    cookie=$(session_cookie "$who@example.com" "$PASSWORD")
    [ -n "$cookie" ] || { echo "$who could not sign in" >&2; exit 1; }
    printf -v "COOKIE_$who" '%s' "$cookie"
  done
  BASE="http://127.0.0.1:$PORT"
  python3 - "$BASE" "$COOKIE_heavy" "$POST_ID" <<'PY'
import json, sys, urllib.request
base, cookie, post = sys.argv[1:]
def get(path):
    request = urllib.request.Request(base + path, headers={"Cookie": cookie, "Cache-Control": "no-cache"})
    return json.load(urllib.request.urlopen(request))
blocks = get("/api/me/blocks?limit=100")
print("  heavy: blocks page of", len(blocks.get("users", blocks.get("blocks", []))), "; filters", len(get("/api/me/filters")["filters"]))
print("  heavy's list page:", len(get("/api/posts?limit=20")["posts"]), "posts; thread page:",
      sum(r["status"] in ("blocked", "muted") for r in get(f"/api/posts/{post}/replies?limit=50")["replies"]), "placeholders of 50")
PY
  for route in "list:/api/posts?limit=20" "thread:/api/posts/$POST_ID/replies?limit=50" "search:/api/search/posts?q=garden&limit=20"; do
    name=${route%%:*}
    url="$BASE${route#*:}"
    wrk -t"$THREADS" -c"$CONNECTIONS" -d2s -H "Cookie: $COOKIE_heavy" -H "$FRESH" "$url" >/dev/null
    run "$backend: $name, plain" "$url" -H "Cookie: $COOKIE_plain" -H "$FRESH"
    run "$backend: $name, heavy" "$url" -H "Cookie: $COOKIE_heavy" -H "$FRESH"
  done
  run "$backend: list, anonymous, cached" "$BASE/api/posts?limit=20"
  curl -sf -H "Cookie: $COOKIE_follower" "$BASE/api/feed?limit=20" | python3 -c 'import json,sys; b=json.load(sys.stdin); print("  feed page:", len(b["posts"]), "posts")'
  run "$backend: feed of 1,000 followed, follower" "$BASE/api/feed?limit=20" -H "Cookie: $COOKIE_follower"
  stop_server
done

python3 - "$WORK" "$BACKENDS" <<'PY'
import os, sys
work, backends = sys.argv[1], sys.argv[2].split()
rate = lambda name: float(open(os.path.join(work, "rate: " + name.replace("/", "_"))).read())
print()
for backend in backends:
    for route in ("list", "thread", "search"):
        ratio = rate(f"{backend}: {route}, plain") / rate(f"{backend}: {route}, heavy")
        print(f"  {backend + ': ' + route + ', heavy / plain (time)':44} {ratio:7.2f}x   goal <= 1.3")
PY
