#!/usr/bin/env bash
# Content benchmark on loopback: seeds a fresh SQLite and a fresh PostgreSQL
# database with `plaza dev seed`, serves each with the release binary (rate
# limits off), and measures with wrk:
#   GET /api/posts?limit=20                 (first page of the public list, with its total)
#   GET /api/search/posts?q=<common word>   (ranked full-text search with snippets)
# each as an anonymous reader gets it (from the answer cache, checked against
# the database's content generation) and with `Cache-Control: no-cache`
# (rendered from the database every time), printing seeding time,
# requests/s, p50 and p99 per database.
#
# Usage: bench/content.sh [posts, default 1000000] [users, default 100000]
#                         [seconds per run, default 10] [connections, default 50]
# Environment: PLAZA_BENCH_POSTGRES (server URL without a database, default
# postgres://postgres@127.0.0.1:5432), PLAZA_BENCH_WORD (default community),
# PLAZA_BENCH_BACKENDS (default "sqlite postgres"), PLAZA_BIN (a built
# binary to use instead of building one).
set -euo pipefail
cd "$(dirname "$0")/.."
POSTS="${1:-1000000}"
USERS="${2:-100000}"
DURATION="${3:-10}"
CONNECTIONS="${4:-50}"
PG_SERVER="${PLAZA_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}"
WORD="${PLAZA_BENCH_WORD:-community}"
BACKENDS="${PLAZA_BENCH_BACKENDS:-sqlite postgres}"
source bench/lib.sh
build_plaza
need wrk curl psql sqlite3 python3
PG_DB="plaza_bench_$$"
on_exit 'psql "$PG_SERVER/postgres" -qc "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null 2>&1 || true'

# run NAME URL [header] -> prints "NAME rps p50 p99"
run() {
  local name=$1 url=$2 header=${3:-} out
  if [ -n "$header" ]; then
    out=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency -H "$header" "$url")
  else
    out=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency "$url")
  fi
  local rps p50 p99 errors
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p50=$(echo "$out" | awk '$1=="50%" {print $2}')
  p99=$(echo "$out" | awk '$1=="99%" {print $2}')
  errors=$(echo "$out" | awk '/Non-2xx/ {print $5}')
  printf '  %-34s %10s req/s   p50 %-9s p99 %-9s%s\n' "$name" "$rps" "$p50" "$p99" \
    "${errors:+   non-2xx: $errors}"
}

echo "content benchmark: $POSTS posts, $USERS users; wrk ${DURATION}s, $CONNECTIONS connections, 2 threads, loopback; $(nproc) cores"
for backend in $BACKENDS; do
  export PLAZA_DATA_DIR="$WORK/$backend" PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=warn
  case "$backend" in
    sqlite)
      export PLAZA_DATABASE_URL="sqlite://$PLAZA_DATA_DIR/plaza.db"
      count_matches() { sqlite3 "$PLAZA_DATA_DIR/plaza.db" "SELECT count(*) FROM posts_fts WHERE posts_fts MATCH '\"$WORD\"'"; }
      ;;
    postgres)
      psql "$PG_SERVER/postgres" -qc "CREATE DATABASE $PG_DB" >/dev/null
      export PLAZA_DATABASE_URL="$PG_SERVER/$PG_DB"
      count_matches() { psql "$PLAZA_DATABASE_URL" -tAc "SELECT count(*) FROM posts WHERE search_vector @@ to_tsquery('simple', '''$WORD''')"; }
      ;;
    *) echo "unknown backend $backend" >&2; exit 1 ;;
  esac
  echo
  echo "== $backend"
  seed_start=$(date +%s%N)
  "$PLAZA" dev seed --users "$USERS" --posts "$POSTS" 2>/dev/null | sed 's/^/  /'
  echo "  seeding took $(( ($(date +%s%N) - seed_start) / 1000000 )) ms"
  [ "$backend" = sqlite ] && printf '  database file: %s MB\n' "$(( $(du -sk "$PLAZA_DATA_DIR" | cut -f1) / 1024 ))"
  echo "  posts matching \"$WORD\": $(count_matches)"

  PORT=$(free_port)
  PLAZA_BIND="127.0.0.1:$PORT" "$PLAZA" serve 2>"$WORK/$backend.log" &
  SERVER_PID=$!
  wait_http "http://127.0.0.1:$PORT/api/health"
  LIST="http://127.0.0.1:$PORT/api/posts?limit=20"
  SEARCH="http://127.0.0.1:$PORT/api/search/posts?q=$WORD"
  curl -sf "$LIST" | python3 -c 'import json,sys; b=json.load(sys.stdin); print("  list total:", b["pagination"]["total"], "posts; page of", len(b["posts"]))'
  curl -sf "$SEARCH" | python3 -c 'import json,sys; b=json.load(sys.stdin); print("  search page:", len(b["results"]), "results; first:", b["results"][0]["title"][:60] if b["results"] else None)'
  wrk -t2 -c"$CONNECTIONS" -d2s -H "Cache-Control: no-cache" "$LIST" >/dev/null
  wrk -t2 -c"$CONNECTIONS" -d2s -H "Cache-Control: no-cache" "$SEARCH" >/dev/null
  run "$backend list, cached" "$LIST"
  run "$backend list, no-cache" "$LIST" "Cache-Control: no-cache"
  run "$backend search \"$WORD\", cached" "$SEARCH"
  run "$backend search \"$WORD\", no-cache" "$SEARCH" "Cache-Control: no-cache"
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
done
