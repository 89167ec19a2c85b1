#!/usr/bin/env bash
# Webhook delivery and personal access tokens, on loopback, SQLite.
#
# 1. Delivery: EVENTS events (default 10,000) are written to the outbox of
#    one webhook (as `webhooks::enqueue` writes them, in one transaction,
#    while the server is stopped), then Plaza starts and delivers them to a
#    receiver on loopback (bench/webhooks.mjs, which logs each delivery id).
#    When a third has arrived the delivering instance is killed with
#    `kill -9` and started again. It prints the rate before the kill, after
#    the restart and over the whole run (the restart included), how many
#    distinct delivery ids arrived (none may be lost) and how many arrived
#    more than once (attempts in flight at the kill, sent again when their
#    claim's lease ends; a receiver deduplicates them by the id).
# 2. Tokens: GET /api/posts?limit=20, rendered for a signed-in caller, with
#    a session cookie and with a personal access token, in ROUNDS
#    interleaved wrk runs each; prints requests/s and p50 of each.
#
# Usage: bench/webhooks.sh [events, default 10000] [seconds per wrk run,
#          default 10] [connections, default 50]
# Environment: PLAZA_BIN (a built binary instead of building this tree),
# ROUNDS (default 3), WRK_THREADS (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
EVENTS="${1:-10000}"
DURATION="${2:-10}"
CONNECTIONS="${3:-50}"
ROUNDS="${ROUNDS:-3}"
THREADS="${WRK_THREADS:-1}"
source bench/lib.sh
need wrk curl sqlite3 node python3
build_plaza
PASSWORD="webhooks bench password"

export PLAZA_DATA_DIR="$WORK/data" PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=warn
export PLAZA_DATABASE_URL="sqlite://$PLAZA_DATA_DIR/plaza.db" PLAZA_WEBHOOKS_ALLOW_PRIVATE=true
mkdir -p "$PLAZA_DATA_DIR"
echo "webhooks: $EVENTS events; wrk ${DURATION}s, $CONNECTIONS connections, $ROUNDS rounds, loopback; $(nproc) cores"

RECEIVER_PORT=$(free_port)
OUT="$WORK/deliveries.txt"
: >"$OUT"
PORT="$RECEIVER_PORT" OUT="$OUT" node bench/webhooks.mjs &
PIDS+=($!)
wait_http "http://127.0.0.1:$RECEIVER_PORT/health"

"$PLAZA" dev seed --users 1000 --posts 20000 >/dev/null 2>&1
"$PLAZA" user create --email root@example.com --password "$PASSWORD" --role super_admin >/dev/null
"$PLAZA" user create --email reader@example.com --password "$PASSWORD" --role user >/dev/null
start_server
ADMIN=$("$PLAZA" token --email root@example.com --permissions admin:super)
curl -sf -H "authorization: Bearer $ADMIN" -H 'content-type: application/json' \
  -d "{\"url\":\"http://127.0.0.1:$RECEIVER_PORT/hook\",\"events\":[\"post.created\"]}" \
  "http://127.0.0.1:$PORT/api/v1/admin/webhooks" >/dev/null

# -- 2. tokens against sessions (while no delivery is due) --------------------
COOKIE=$(session_cookie reader@example.com "$PASSWORD")
TOKEN=$(curl -sf -H "cookie: $COOKIE" -H 'content-type: application/json' \
  -d '{"name":"bench","scopes":["read"]}' "http://127.0.0.1:$PORT/api/me/tokens" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
URL="http://127.0.0.1:$PORT/api/posts?limit=20"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "authorization: Bearer $TOKEN" "$URL")" = 200 ]
echo
echo "== GET /api/posts?limit=20, signed in, rendered"
for round in $(seq 1 "$ROUNDS"); do
  for who in session token; do
    if [ "$who" = session ]; then header="cookie: $COOKIE"; else header="authorization: Bearer $TOKEN"; fi
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -H "$header" "$URL")
    printf '  round %s %-8s %10s/s   p50 %s%s\n' "$round" "$who" \
      "$(echo "$out" | awk '/Requests\/sec/ {print $2}')" \
      "$(echo "$out" | awk '$1=="50%" {print $2}')" \
      "$(echo "$out" | awk '/Non-2xx/ {print "   non-2xx: " $5}')"
  done
done
stop_server

# -- 1. delivery across a kill -9 ----------------------------------------------
NOW=$(date +%s%3N)
sqlite3 "$PLAZA_DATA_DIR/plaza.db" <<SQL
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $EVENTS)
INSERT INTO webhook_events (type, data, created_at)
  SELECT 'post.created', json_object('post', json_object('id', CAST(i AS TEXT))), $NOW FROM n;
INSERT INTO webhook_deliveries (webhook_id, event_id, status, attempts, next_attempt_at, created_at)
  SELECT (SELECT id FROM webhooks), id, 'pending', 0, $NOW, $NOW FROM webhook_events;
COMMIT;
SQL
delivered() { awk '{print $2}' "$OUT" | sort -u | wc -l; }
arrived() { wc -l <"$OUT"; }
echo
echo "== $EVENTS deliveries, kill -9 after a third"
start_server
until [ "$(arrived)" -ge $((EVENTS / 3)) ]; do sleep 0.05; done
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=""
KILLED_AT=$(date +%s.%N)
start_server
DEADLINE=$(($(date +%s) + 300))
until [ "$(delivered)" -ge "$EVENTS" ]; do
  [ "$(date +%s)" -lt "$DEADLINE" ] || { echo "  only $(delivered) of $EVENTS arrived" >&2; break; }
  sleep 0.1
done
# Anything still in flight at the kill was sent again at its lease's end.
sleep 2
python3 - "$OUT" "$KILLED_AT" "$EVENTS" <<'PY'
import sys
path, killed_at, events = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
rows = sorted((float(t), i) for t, i in (line.split() for line in open(path)))
seen, first = set(), []
for t, i in rows:
    if i not in seen:
        seen.add(i)
        first.append(t)
before = [t for t in first if t <= killed_at]
after = [t for t in first if t > killed_at]
# The instance that restarted delivers at once; the attempts the killed one
# had claimed wait for their lease: the longest pause after the restart.
gaps = [(b - a, k) for k, (a, b) in enumerate(zip(after, after[1:]))]
gap, cut = max(gaps) if gaps else (0.0, len(after) - 1)
running, held = after[: cut + 1], after[cut + 1 :]
def rate(times):
    return len(times) / (times[-1] - times[0]) if len(times) > 1 else 0.0
print(f"  before the kill: {len(before)} delivered at {rate(before):,.0f}/s")
print(f"  after the restart: {len(running)} at {rate(running):,.0f}/s, then {len(held)} "
      f"held by the killed instance's claims, {gap:.1f} s later (the lease)")
print(f"  lost: {events - len(seen)}; arrived more than once: {len(rows) - len(seen)} "
      f"(deduplicated by delivery id)")
PY
