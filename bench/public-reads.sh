#!/usr/bin/env bash
# Public reads at memory speed, on loopback and PostgreSQL, in one run on
# one database seeded with `plaza dev seed`, one server at a time:
#   Plaza (this tree's release build, or PLAZA_BIN), anonymous:
#     GET /api/posts?limit=20 cached (checked in memory while its
#       notifications are connected) and rendered (`Cache-Control:
#       no-cache`), rendered also at 16 connections;
#     GET /api/search/posts?q=garden&limit=20 cached and rendered;
#     the list with If-None-Match naming the current ETag (304s);
#     GET /api/version, the server's ceiling without a database;
#   the Node peer (bench/node-peer: node:http and postgres.js, a pool of
#     10 per worker, page and total each request) on the same database, the
#     list and the search with 1 and with 2 workers (PEER_WORKERS); its best
#     configuration counts;
#   the database's limit: the list's own statement, as Plaza sent it (read
#     back from pg_stat_activity), run by `pgbench -M prepared -j 2` with 16
#     and with 50 clients for the same seconds.
# It prints requests/s, p50 and p99 of each, then the ratios: rendered /
# pgbench at the same concurrency, rendered / peer and cached / peer. With
# PLAZA_BASE_BIN (a previous binary) it first measures that binary's cached
# and rendered list on a copy of the same data, for a side-by-side figure.
#
# Usage: flock /tmp/bench.lock bench/public-reads.sh [posts, default 100000]
#          [users, default 10000] [seconds per run, default 10] [connections, default 50]
# Environment: PLAZA_BIN (a built binary to use instead of building this
# tree), PLAZA_BASE_BIN (optional, see above; build it in a worktree of the
# revision with a target folder of its own, e.g.
#   git worktree add --detach /tmp/base REV && cp -a target /tmp/base-target &&
#   (cd /tmp/base && CARGO_TARGET_DIR=/tmp/base-target cargo build --release -p plaza-server)
# — two worktrees sharing one target folder can each take the other's
# build of a workspace crate for up to date), PLAZA_BENCH_POSTGRES (server
# URL without a database, default postgres://postgres@127.0.0.1:5432),
# WRK_THREADS (default 1), PEER_WORKERS (default "1 2"), SEARCH_QUERY
# (default garden).
set -euo pipefail
cd "$(dirname "$0")/.."
POSTS="${1:-100000}"
USERS="${2:-10000}"
DURATION="${3:-10}"
CONNECTIONS="${4:-50}"
PG_SERVER="${PLAZA_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}"
THREADS="${WRK_THREADS:-1}"
PEER_WORKERS="${PEER_WORKERS:-1 2}"
SEARCH_QUERY="${SEARCH_QUERY:-garden}"
source bench/lib.sh
need wrk curl psql pgbench node npm python3
build_plaza
BASE="${PLAZA_BASE_BIN:-}"
COPIES="new"
[ -n "$BASE" ] && COPIES="base new"
echo "new: $PLAZA${BASE:+; base: $BASE}"
PEER=bench/node-peer
if [ ! -d "$PEER/node_modules/postgres" ] || [ "$PEER/package-lock.json" -nt "$PEER/node_modules/.package-lock.json" ]; then
  echo "== installing the Node peer (npm ci)" >&2
  (cd "$PEER" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi

DB="plaza_bench_reads_$$"
DROP_ALL="for d in ${DB} ${DB}_base ${DB}_new; do psql '$PG_SERVER/postgres' -qc \"DROP DATABASE IF EXISTS \$d WITH (FORCE)\" >/dev/null 2>&1; done"
on_exit "$DROP_ALL"
psql "$PG_SERVER/postgres" -qc "CREATE DATABASE $DB" >/dev/null
export PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=warn PLAZA_METRICS_PUBLIC=true
mkdir -p "$WORK/seed"
# Seeded at the oldest schema measured, so each binary migrates its own copy.
PLAZA_DATA_DIR="$WORK/seed" PLAZA_DATABASE_URL="$PG_SERVER/$DB" \
  "${BASE:-$PLAZA}" dev seed --users "$USERS" --posts "$POSTS" 2>/dev/null | sed 's/^/  /'
for copy in $COPIES; do
  psql "$PG_SERVER/postgres" -qc "CREATE DATABASE ${DB}_$copy TEMPLATE $DB" >/dev/null
done

# record NAME RPS P50 P99 [NOTE]: prints a row and keeps the rate in $WORK/NAME.
record() {
  printf '  %-46s %10s/s   p50 %-9s p99 %-9s%s\n' "$1" "$2" "$3" "$4" "${5:-}"
  echo "$2" >"$WORK/rate: ${1//\//_}"
}

# run NAME URL [CONNECTIONS [header]]: one wrk run, recorded; any
# answers other than 2xx/3xx are named.
run() {
  local name=$1 url=$2 connections=${3:-$CONNECTIONS} header=${4:-} out
  local args=(-t"$THREADS" -c"$connections" -d"${DURATION}s" --latency)
  [ -n "$header" ] && args+=(-H "$header")
  out=$(wrk "${args[@]}" "$url")
  local errors
  errors=$(echo "$out" | awk '/Non-2xx/ {print $5}')
  record "$name" "$(echo "$out" | awk '/Requests\/sec/ {print $2}')" \
    "$(echo "$out" | awk '$1=="50%" {print $2}')" "$(echo "$out" | awk '$1=="99%" {print $2}')" \
    "${errors:+   non-2xx/3xx: $errors}"
}

# serve BIN COPY: starts BIN on database copy COPY (migrated and vacuumed
# first) and waits for it.
serve() {
  PORT=$(free_port)
  mkdir -p "$WORK/data-$2"
  PLAZA_DATA_DIR="$WORK/data-$2" PLAZA_DATABASE_URL="$PG_SERVER/${DB}_$2" "$1" migrate >/dev/null 2>&1
  psql "$PG_SERVER/${DB}_$2" -qc "VACUUM ANALYZE" >/dev/null
  PLAZA_DATA_DIR="$WORK/data-$2" PLAZA_DATABASE_URL="$PG_SERVER/${DB}_$2" \
    PLAZA_BIND="127.0.0.1:$PORT" "$1" serve 2>"$WORK/$2.log" &
  SERVER_PID=$!
  wait_http "http://127.0.0.1:$PORT/api/health"
}

LIST_PATH="/api/posts?limit=20"
SEARCH_PATH="/api/search/posts?q=$SEARCH_QUERY&limit=20"
FRESH="Cache-Control: no-cache"

echo "public reads: $POSTS posts, $USERS users on PostgreSQL; wrk ${DURATION}s, $CONNECTIONS connections unless named, $THREADS thread(s), loopback; $(nproc) cores; node $(node --version)"
for copy in $COPIES; do
  if [ "$copy" = base ]; then bin="$BASE"; else bin="$PLAZA"; fi
  serve "$bin" "$copy"
  LIST="http://127.0.0.1:$PORT$LIST_PATH"
  SEARCH="http://127.0.0.1:$PORT$SEARCH_PATH"
  METRICS="http://127.0.0.1:$PORT/api/metrics"
  curl -sf "$LIST" | python3 -c 'import json,sys; b=json.load(sys.stdin); print("  list total:", b["pagination"]["total"], "posts; page of", len(b["posts"]))'
  curl -sf "$SEARCH" | python3 -c 'import json,sys; b=json.load(sys.stdin); print("  search:", len(b["results"]), "results; hasMore", b["pagination"]["hasMore"])'
  wrk -t"$THREADS" -c"$CONNECTIONS" -d2s "$LIST" >/dev/null
  wrk -t"$THREADS" -c"$CONNECTIONS" -d2s -H "$FRESH" "$LIST" >/dev/null
  # Until the listener has connected, answers are checked by a read.
  for _ in $(seq 1 100); do
    curl -sf "$METRICS" | grep -q '^plaza_content_notifications_listening{channel="postgres"} 1' && break
    sleep 0.1
  done
  run "$copy: list, cached" "$LIST"
  run "$copy: list, rendered" "$LIST" "$CONNECTIONS" "$FRESH"
  if [ "$copy" = new ]; then
    run "$copy: list, rendered, 16 connections" "$LIST" 16 "$FRESH"
    # The statement as the server sent it: the last one of a connection
    # that rendered the list.
    STATEMENT=$(psql "$PG_SERVER/postgres" -tAc "SELECT query FROM pg_stat_activity
      WHERE datname = '${DB}_new' AND query LIKE '%json_agg%' AND query LIKE '% FROM posts p %' LIMIT 1")
    [[ "$STATEMENT" == *") AS page" ]] || { echo "the list's statement was not found whole: $STATEMENT" >&2; exit 1; }
    TAG=$(curl -sfI "$LIST" | awk -F': ' 'tolower($1)=="etag" {print $2}' | tr -d '\r')
    code=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $TAG" "$LIST")
    [ "$code" = 304 ] || { echo "If-None-Match: $TAG answered $code" >&2; exit 1; }
    run "$copy: list, If-None-Match (304)" "$LIST" "$CONNECTIONS" "If-None-Match: $TAG"
    wrk -t"$THREADS" -c"$CONNECTIONS" -d2s -H "$FRESH" "$SEARCH" >/dev/null
    run "$copy: search, cached" "$SEARCH"
    run "$copy: search, rendered" "$SEARCH" "$CONNECTIONS" "$FRESH"
    run "$copy: GET /api/version (no database)" "http://127.0.0.1:$PORT/api/version"
  fi
  stop_server
done

for workers in $PEER_WORKERS; do
  PEER_PORT=$(free_port)
  PORT=$PEER_PORT WORKERS=$workers DATABASE_URL="$PG_SERVER/${DB}_new" node "$PEER/server.mjs" 2>"$WORK/peer.log" &
  peer_pid=$!
  PIDS+=("$peer_pid")
  wait_http "http://127.0.0.1:$PEER_PORT$LIST_PATH"
  wrk -t"$THREADS" -c"$CONNECTIONS" -d2s "http://127.0.0.1:$PEER_PORT$LIST_PATH" >/dev/null
  run "peer, $workers worker(s): list" "http://127.0.0.1:$PEER_PORT$LIST_PATH"
  wrk -t"$THREADS" -c"$CONNECTIONS" -d2s "http://127.0.0.1:$PEER_PORT$SEARCH_PATH" >/dev/null
  run "peer, $workers worker(s): search" "http://127.0.0.1:$PEER_PORT$SEARCH_PATH"
  kill "$peer_pid" && wait "$peer_pid" 2>/dev/null || true
done

# The limit: the statement's $1 and $2 are the first page's limit and
# offset. pgbench would take the colon in a literal such as
# 'published:none' for a variable, so such a literal is written as the
# same constant with the colon escaped (U&'published\003Anone').
{
  echo '\set p1 20'
  echo '\set p2 0'
  python3 -c '
import re, sys
text = re.sub(r"\$(\d)", r":p\1", sys.argv[1])
escape = lambda m: "U&" + m.group(0).replace(":", "\\003A") if ":" in m.group(0) else m.group(0)
print(re.sub(r"\x27[^\x27]*\x27", escape, text) + ";")' "$STATEMENT"
} >"$WORK/list.sql"
echo "  pgbench statement: $(tr -s ' \n' ' ' <"$WORK/list.sql" | cut -c1-160)…"
for clients in 16 "$CONNECTIONS"; do
  tps=$(pgbench -n -M prepared -j 2 -c "$clients" -T "$DURATION" -f "$WORK/list.sql" "$PG_SERVER/${DB}_new" 2>/dev/null |
    awk '/^tps/ {printf "%.2f", $3; exit}')
  record "pgbench, list statement, $clients clients" "$tps" - -
done

python3 - "$WORK" "$CONNECTIONS" "$PEER_WORKERS" <<'PY'
import os, sys
work, connections, workers = sys.argv[1], sys.argv[2], sys.argv[3].split()
rate = lambda name: float(open(os.path.join(work, "rate: " + name.replace("/", "_"))).read())
def best(route):
    return max((rate(f"peer, {w} worker(s): {route}"), w) for w in workers)
peer_list, list_workers = best("list")
peer_search, search_workers = best("search")
rows = [
    (f"list rendered / pgbench, 16", rate("new: list, rendered, 16 connections") / rate("pgbench, list statement, 16 clients"), ">= 0.6 (aim 0.8)"),
    (f"list rendered / pgbench, {connections}", rate("new: list, rendered") / rate(f"pgbench, list statement, {connections} clients"), ">= 0.6 (aim 0.8)"),
    (f"list rendered / peer ({list_workers} w)", rate("new: list, rendered") / peer_list, ">= 2"),
    (f"list cached / peer ({list_workers} w)", rate("new: list, cached") / peer_list, ">= 10"),
    (f"search rendered / peer ({search_workers} w)", rate("new: search, rendered") / peer_search, ">= 2"),
    (f"search cached / peer ({search_workers} w)", rate("new: search, cached") / peer_search, ">= 10"),
]
print()
for name, ratio, goal in rows:
    print(f"  {name:40} {ratio:7.2f}x   goal {goal}")
if os.path.exists(os.path.join(work, "rate: base: list, rendered")):
    print(f"  {'list rendered, new / base':40} {rate('new: list, rendered') / rate('base: list, rendered'):7.2f}x")
    print(f"  {'list cached, new / base':40} {rate('new: list, cached') / rate('base: list, cached'):7.2f}x")
print(f"  {'304s':40} {rate('new: list, If-None-Match (304)'):7.0f}/s  goal >= 50000/s")
PY
