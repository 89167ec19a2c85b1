#!/usr/bin/env bash
# Conversations on loopback, on SQLite and on PostgreSQL in one run: one
# post with a large thread (nested up to 20 levels) among many replies
# overall, seeded with `plaza dev seed --replies --thread-replies`, served
# by the release binary (rate limits off) and measured with wrk:
#   GET /api/posts/{id}/replies?limit=50   the thread's first page and a
#     page from its middle (after half the thread), anonymous (the answer
#     cache), signed in (the kept public page with the member's own part
#     read) and signed in with Cache-Control: no-cache (rendered), at
#     CONNECTIONS connections;
#   POST /api/posts/{id}/replies           a reply written by a signed-in
#     member, one connection (each write is a unit of work with its
#     mentions and counts; a thread's writes queue on its post);
#   on PostgreSQL also what the database does for the first page alone,
#     under `pgbench -M prepared -j 2` with CONNECTIONS clients: the page's
#     walk statement, every statement one anonymous rendered page ran (the
#     post, the walk, the replies' extras) and every statement one page
#     rendered for the member ran (their session's lookup too), each as
#     Plaza sent it (read back from PostgreSQL's log with its parameters);
#     the first page rendered for anonymous readers too (Cache-Control:
#     no-cache), to set beside theirs; and the Node peer (bench/node-peer:
#     node:http and postgres.js, path order) answering the same pages with
#     1 and 2 workers, its best configuration counting.
# It prints requests/s, p50 and p99 of each, then the ratios rendered /
# pgbench and Plaza / peer, anonymous, signed in and rendered.
#
# Usage: flock /tmp/bench.lock bench/conversations.sh [replies, default 1000000]
#          [thread replies, default 100000] [posts, default 100000]
#          [users, default 10000] [seconds per run, default 10] [connections, default 50]
# Environment: PLAZA_BIN (a built binary instead of building this tree),
# PLAZA_BENCH_POSTGRES (server URL without a database, default
# postgres://postgres@127.0.0.1:5432), PLAZA_BENCH_BACKENDS (default
# "sqlite postgres"), WRK_THREADS (default 1), PEER_WORKERS (default "1 2"),
# PLAZA_BENCH_POSTGRES_LOG (the server's log file, default Debian's).
set -euo pipefail
cd "$(dirname "$0")/.."
REPLIES="${1:-1000000}"
THREAD_REPLIES="${2:-100000}"
POSTS="${3:-100000}"
USERS="${4:-10000}"
DURATION="${5:-10}"
CONNECTIONS="${6:-50}"
PG_SERVER="${PLAZA_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}"
BACKENDS="${PLAZA_BENCH_BACKENDS:-sqlite postgres}"
THREADS="${WRK_THREADS:-1}"
PEER_WORKERS="${PEER_WORKERS:-1 2}"
source bench/lib.sh
need wrk curl psql pgbench node npm python3
# PostgreSQL's log, where the page's statement is read (Debian's layout).
PG_LOG="${PLAZA_BENCH_POSTGRES_LOG:-$(ls /var/log/postgresql/postgresql-*-main.log | tail -1)}"
build_plaza
PEER=bench/node-peer
if [ ! -d "$PEER/node_modules/postgres" ] || [ "$PEER/package-lock.json" -nt "$PEER/node_modules/.package-lock.json" ]; then
  echo "== installing the Node peer (npm ci)" >&2
  (cd "$PEER" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi
PG_DB="plaza_bench_conversations_$$"
on_exit "psql '$PG_SERVER/postgres' -qc 'DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)' >/dev/null 2>&1 || true"
PASSWORD="conversations bench password"

# record NAME RPS P50 P99 [NOTE]: prints a row and keeps the rate in $WORK.
record() {
  printf '  %-52s %10s/s   p50 %-9s p99 %-9s%s\n' "$1" "$2" "$3" "$4" "${5:-}"
  echo "$2" >"$WORK/rate: ${1//\//_}"
}

# run NAME URL CONNECTIONS [wrk arguments...]: one wrk run, recorded; any
# answers other than 2xx/3xx are named.
run() {
  local name=$1 url=$2 connections=$3 out errors
  shift 3
  out=$(wrk -t"$THREADS" -c"$connections" -d"${DURATION}s" --latency "$@" "$url")
  errors=$(echo "$out" | awk '/Non-2xx/ {print $5}')
  record "$name" "$(echo "$out" | awk '/Requests\/sec/ {print $2}')" \
    "$(echo "$out" | awk '$1=="50%" {print $2}')" "$(echo "$out" | awk '$1=="99%" {print $2}')" \
    "${errors:+   non-2xx/3xx: $errors}"
}

# The write: a short reply to the thread's post, as the signed-in member.
write_script() {
  cat >"$WORK/reply.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Cookie"] = "$1"
wrk.body = '{"content":"Agreed, and the second point matters most to me."}'
LUA
}

echo "conversations: $REPLIES replies, $THREAD_REPLIES in one thread, $POSTS posts, $USERS users; wrk ${DURATION}s, $CONNECTIONS connections unless named, $THREADS thread(s), loopback; $(nproc) cores; node $(node --version)"
for backend in $BACKENDS; do
  export PLAZA_DATA_DIR="$WORK/$backend" PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=warn
  case "$backend" in
    sqlite) export PLAZA_DATABASE_URL="sqlite://$PLAZA_DATA_DIR/plaza.db" ;;
    postgres)
      psql "$PG_SERVER/postgres" -qc "CREATE DATABASE $PG_DB" >/dev/null
      export PLAZA_DATABASE_URL="$PG_SERVER/$PG_DB"
      ;;
    *) echo "unknown backend $backend" >&2; exit 1 ;;
  esac
  mkdir -p "$PLAZA_DATA_DIR"
  echo
  echo "== $backend"
  seed_start=$(date +%s%N)
  "$PLAZA" dev seed --users "$USERS" --posts "$POSTS" --replies "$REPLIES" \
    --thread-replies "$THREAD_REPLIES" 2>/dev/null | tee "$WORK/seed.out" | sed 's/^/  /'
  echo "  seeding took $(( ($(date +%s%N) - seed_start) / 1000000 )) ms"
  POST_ID=$(sed -n 's/.*in the thread of post \([0-9]*\).*/\1/p' "$WORK/seed.out")
  [ -n "$POST_ID" ] || { echo "the seed named no thread" >&2; exit 1; }
  "$PLAZA" user create --email member@example.com --password "$PASSWORD" --role user >/dev/null 2>&1
  if [ "$backend" = postgres ]; then
    psql "$PLAZA_DATABASE_URL" -qc "VACUUM ANALYZE" >/dev/null
    # The statements of the first page rendered afresh, as the server
    # sends them, with their parameters, from PostgreSQL's log: for an
    # anonymous reader the walk alone into page.sql and all of them (each on
    # one line) into rendered.sql, for the signed-in member all of theirs
    # (their session's lookup among them) into member.sql. Each reader's
    # second request counts (the first fills what the server keeps), and
    # only what was logged while it ran; the server's own background work
    # in that window (the job runner and its clock, the feed's fan-out, the
    # content generation's heartbeat) is left out by the tables and
    # functions it reads.
    psql "$PG_SERVER/postgres" -qc "ALTER DATABASE $PG_DB SET log_min_duration_statement = 0" >/dev/null
    log_lines=$(wc -l <"$PG_LOG")
    start_server
    COOKIE=$(session_cookie member@example.com "$PASSWORD")
    windows=()
    for reader in anonymous member; do
      cookie=()
      [ "$reader" = member ] && cookie=(-H "Cookie: $COOKIE")
      curl -sf -o /dev/null "${cookie[@]}" -H "Cache-Control: no-cache" "http://127.0.0.1:$PORT/api/posts/$POST_ID/replies?limit=50"
      asked=$(date +%s%3N)
      curl -sf -o /dev/null "${cookie[@]}" -H "Cache-Control: no-cache" "http://127.0.0.1:$PORT/api/posts/$POST_ID/replies?limit=50"
      windows+=("$reader:$asked:$(date +%s%3N)")
    done
    stop_server
    psql "$PG_SERVER/postgres" -qc "ALTER DATABASE $PG_DB RESET log_min_duration_statement" >/dev/null
    tail -n +"$((log_lines + 1))" "$PG_LOG" | python3 -c '
import datetime, re, sys
work, database, windows = sys.argv[1], sys.argv[2], sys.argv[3:]
background = re.compile(r"\b(jobs?|job_runs|content_generation|site_settings|outgoing_mail|push_deliveries|feed_fanouts|clock_timestamp|notification_\w+|webhook_\w+|pg_\w+)\b|^(BEGIN|COMMIT|SET|LISTEN)")
lines = sys.stdin.read().splitlines()
def statements_between(asked, answered):
    statements = []
    for at, line in enumerate(lines):
        found = re.search(r"^(\S+ \S+) UTC .*@" + database + r" LOG:  duration: [0-9.]+ ms  execute [^:]*: (.*)$", line)
        # The lookup of the session reads the unread count of notifications,
        # and belongs to the request.
        if not found or (background.search(found.group(2)) and "FROM sessions s " not in found.group(2)):
            continue
        logged = datetime.datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
        if not int(asked) <= logged.timestamp() * 1000 <= int(answered):
            continue
        statement = found.group(2)
        detail = next((l for l in lines[at + 1:at + 3] if "DETAIL:  parameters:" in l), "")
        values = dict(re.findall(r"\$(\d+) = (\x27(?:[^\x27]|\x27\x27)*\x27|NULL)", detail))
        statements.append(re.sub(r"\$(\d+)\b", lambda m: values[m.group(1)], statement) + ";")
    return statements
for window in windows:
    reader, asked, answered = window.split(":")
    statements = statements_between(asked, answered)
    walks = [s for s in statements if "walk_key" in s]
    if not walks:
        sys.exit("the page statement of the " + reader + " reader is not in the log")
    if reader == "anonymous":
        open(work + "/page.sql", "w").write(walks[0] + "\n")
        open(work + "/rendered.sql", "w").write("\n".join(statements) + "\n")
    else:
        open(work + "/member.sql", "w").write("\n".join(statements) + "\n")
    print("  the first page rendered for the", reader, "reader ran", len(statements), "statements")' "$WORK" "$PG_DB" "${windows[@]}"
  fi
  start_server
  COOKIE=$(session_cookie member@example.com "$PASSWORD")
  [ -n "$COOKIE" ] || { echo "the member could not sign in" >&2; exit 1; }
  THREAD="http://127.0.0.1:$PORT/api/posts/$POST_ID/replies?limit=50"
  read -r total first_page first_depth < <(python3 -c '
import json, sys, urllib.request
b = json.load(urllib.request.urlopen(sys.argv[1]))
print(b["total"], len(b["replies"]), max(r["depth"] for r in b["replies"]))' "$THREAD")
  # The middle page continues after the reply halfway through the thread.
  case "$backend" in
    sqlite) middle_path=$(python3 -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(db.execute("SELECT path FROM replies WHERE post_id = ? ORDER BY path LIMIT 1 OFFSET ?", (int(sys.argv[2]), int(sys.argv[3]) // 2)).fetchone()[0])' "$PLAZA_DATA_DIR/plaza.db" "$POST_ID" "$THREAD_REPLIES") ;;
    postgres) middle_path=$(psql "$PLAZA_DATABASE_URL" -tAc "SELECT path FROM replies WHERE post_id = $POST_ID ORDER BY path LIMIT 1 OFFSET $((THREAD_REPLIES / 2))") ;;
  esac
  MIDDLE="$THREAD&cursor=$(printf 'o%s' "$middle_path" | base64 -w0 | tr '+/' '-_' | tr -d '=')"
  deepest=$(python3 -c '
import json, sys, urllib.request
b = json.load(urllib.request.urlopen(sys.argv[1]))
assert len(b["replies"]) == 50, len(b["replies"])
print(max(r["depth"] for r in b["replies"]))' "$MIDDLE")
  echo "  thread of post $POST_ID: total $total; first page $first_page replies; deepest on the pages: $first_depth, $deepest"
  wrk -t"$THREADS" -c"$CONNECTIONS" -d2s "$THREAD" >/dev/null
  run "$backend: thread page, first, anonymous" "$THREAD" "$CONNECTIONS"
  run "$backend: thread page, first, signed in" "$THREAD" "$CONNECTIONS" -H "Cookie: $COOKIE"
  run "$backend: thread page, first, rendered" "$THREAD" "$CONNECTIONS" -H "Cookie: $COOKIE" -H "Cache-Control: no-cache"
  run "$backend: thread page, first, rendered anonymous" "$THREAD" "$CONNECTIONS" -H "Cache-Control: no-cache"
  run "$backend: thread page, middle, anonymous" "$MIDDLE" "$CONNECTIONS"
  run "$backend: thread page, middle, signed in" "$MIDDLE" "$CONNECTIONS" -H "Cookie: $COOKIE"
  run "$backend: thread page, middle, rendered" "$MIDDLE" "$CONNECTIONS" -H "Cookie: $COOKIE" -H "Cache-Control: no-cache"
  write_script "$COOKIE"
  run "$backend: write a reply, 1 connection" "http://127.0.0.1:$PORT/api/posts/$POST_ID/replies" 1 -s "$WORK/reply.lua"
  stop_server
done

if [[ " $BACKENDS " == *" postgres "* ]]; then
  echo
  echo "  pgbench statement: $(tr -s ' \n' ' ' <"$WORK/page.sql" | cut -c1-160)…"
  tps=$(pgbench -n -M prepared -j 2 -c "$CONNECTIONS" -T "$DURATION" -f "$WORK/page.sql" "$PLAZA_DATABASE_URL" 2>/dev/null |
    awk '/^tps/ {printf "%.2f", $3; exit}')
  record "pgbench, first page's statement, $CONNECTIONS clients" "$tps" - -
  echo "  pgbench statements: $(wc -l <"$WORK/rendered.sql") ($(cut -c1-60 "$WORK/rendered.sql" | tr '\n' '|'))"
  tps=$(pgbench -n -M prepared -j 2 -c "$CONNECTIONS" -T "$DURATION" -f "$WORK/rendered.sql" "$PLAZA_DATABASE_URL" 2>/dev/null |
    awk '/^tps/ {printf "%.2f", $3; exit}')
  record "pgbench, first page's statements, $CONNECTIONS clients" "$tps" - -
  echo "  pgbench statements: $(wc -l <"$WORK/member.sql") ($(cut -c1-60 "$WORK/member.sql" | tr '\n' '|'))"
  tps=$(pgbench -n -M prepared -j 2 -c "$CONNECTIONS" -T "$DURATION" -f "$WORK/member.sql" "$PLAZA_DATABASE_URL" 2>/dev/null |
    awk '/^tps/ {printf "%.2f", $3; exit}')
  record "pgbench, member's first page's statements, $CONNECTIONS clients" "$tps" - -
  for workers in $PEER_WORKERS; do
    PEER_PORT=$(free_port)
    PORT=$PEER_PORT WORKERS=$workers DATABASE_URL="$PLAZA_DATABASE_URL" node "$PEER/server.mjs" 2>"$WORK/peer.log" &
    peer_pid=$!
    PIDS+=("$peer_pid")
    wait_http "http://127.0.0.1:$PEER_PORT/api/posts/$POST_ID/replies?limit=50"
    PEER_THREAD="http://127.0.0.1:$PEER_PORT/api/posts/$POST_ID/replies?limit=50"
    wrk -t"$THREADS" -c"$CONNECTIONS" -d2s "$PEER_THREAD" >/dev/null
    run "peer, $workers worker(s): thread page, first" "$PEER_THREAD" "$CONNECTIONS"
    run "peer, $workers worker(s): thread page, middle" "$PEER_THREAD&cursor=$middle_path" "$CONNECTIONS"
    kill "$peer_pid" && wait "$peer_pid" 2>/dev/null || true
  done
  python3 - "$WORK" "$CONNECTIONS" "$PEER_WORKERS" <<'PY'
import os, sys
work, connections, workers = sys.argv[1], sys.argv[2], sys.argv[3].split()
rate = lambda name: float(open(os.path.join(work, "rate: " + name.replace("/", "_"))).read())
print()
print(f"  {'first page rendered / pgbench of the walk':44} {rate('postgres: thread page, first, rendered') / rate(f'pgbench, first page' + chr(39) + f's statement, {connections} clients'):7.2f}x   goal >= 0.6")
print(f"  {'first page rendered / pgbench of its statements':44} {rate('postgres: thread page, first, rendered') / rate(f'pgbench, member' + chr(39) + f's first page' + chr(39) + f's statements, {connections} clients'):7.2f}x   goal >= 0.6")
print(f"  {'rendered anonymous / pgbench of its statements':44} {rate('postgres: thread page, first, rendered anonymous') / rate(f'pgbench, first page' + chr(39) + f's statements, {connections} clients'):7.2f}x   goal >= 0.6")
for page in ("first", "middle"):
    peer, best = max((rate(f"peer, {w} worker(s): thread page, {page}"), w) for w in workers)
    for reader in ("anonymous", "signed in", "rendered"):
        print(f"  {f'{page} page {reader} / peer ({best} w)':44} {rate(f'postgres: thread page, {page}, {reader}') / peer:7.2f}x   goal >= 2")
PY
fi
