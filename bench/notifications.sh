#!/usr/bin/env bash
# Notifications at scale, on loopback and PostgreSQL, in three parts:
#   1. fan-out: MEMBERS members, each subscribed for Web Push to a loopback
#      receiver (bench/notifications-receiver.mjs); ANSWERERS of them
#      answer one member's post as fast as they can. It prints how long
#      each notification came after its cause (the reply), when the last
#      push reached the receiver after the first reply was sent, and the
#      server's resident memory before and after;
#   2. the unread count: NOTIFICATIONS notifications stored over USERS
#      members (loaded with plain SQL, the unread counts computed once as
#      the triggers would), GET /api/notifications/unread-count of one
#      member with wrk at 50 connections;
#   3. the daily digest: every one of the USERS members verified and with
#      a notification waiting for the digest since yesterday, served with
#      the digest due; the time until every digest is taken (composed into
#      the mail outbox), and until the outbox has written them all (mail
#      as files).
# Parts 2 and 3 share one load; the digest is measured first, so that the
# unread count is measured with no digest or mail being written.
#
# Usage: flock /tmp/bench.lock bench/notifications.sh [members, default 10000]
#          [answerers, default 1000] [users, default 100000]
#          [notifications, default 10000000] [seconds per run, default 10]
# Environment: PLAZA_BIN (a built binary instead of building this tree),
# PLAZA_BENCH_POSTGRES (server URL without a database, default
# postgres://postgres@127.0.0.1:5432), PLAZA_BENCH_PARTS (default
# "fan-out unread digest"), PLAZA_BENCH_PEER (a second binary whose unread
# count is measured the same way on the same load, right after).
set -euo pipefail
cd "$(dirname "$0")/.."
MEMBERS="${1:-10000}"
ANSWERERS="${2:-1000}"
USERS="${3:-100000}"
NOTIFICATIONS="${4:-10000000}"
DURATION="${5:-10}"
PG_SERVER="${PLAZA_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}"
PARTS="${PLAZA_BENCH_PARTS:-fan-out unread digest}"
source bench/lib.sh
need wrk curl psql node python3
build_plaza
PG_DB="plaza_bench_notifications_$$"
on_exit "psql '$PG_SERVER/postgres' -qc 'DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)' >/dev/null 2>&1 || true"
PASSWORD="notifications bench password"
export PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=warn PLAZA_DATABASE_URL="$PG_SERVER/$PG_DB"
export PLAZA_DATA_DIR="$WORK/data"
mkdir -p "$PLAZA_DATA_DIR"

# fresh_database: an empty, migrated database.
fresh_database() {
  psql "$PG_SERVER/postgres" -qc "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null
  psql "$PG_SERVER/postgres" -qc "CREATE DATABASE $PG_DB" >/dev/null
  "$PLAZA" migrate >/dev/null 2>&1
}
q() { psql -tAq -v ON_ERROR_STOP=1 "$PLAZA_DATABASE_URL" -c "$1"; }

# with_password N: gives the first N seeded users (and the bench's own)
# the password of a user created now, whose id it prints.
with_password() {
  local id
  id=$("$PLAZA" user create --email bench@example.com --password "$PASSWORD" --role user 2>/dev/null | grep -o '[0-9]\+' | head -1)
  q "UPDATE users SET password_hash = (SELECT password_hash FROM users WHERE id = $id),
       email_verified_at = 1
     WHERE id IN (SELECT id FROM users WHERE status = 'active' AND id <> $id ORDER BY id LIMIT $1)" >/dev/null
  echo "$id"
}

echo "notifications: fan-out to $MEMBERS push-subscribed members from $ANSWERERS answers; unread count over $NOTIFICATIONS notifications of $USERS members; digest of $USERS members; loopback, $(nproc) cores"

if [[ " $PARTS " == *" fan-out "* ]]; then
  echo
  echo "== fan-out"
  fresh_database
  "$PLAZA" dev seed --users "$MEMBERS" --posts 100 2>/dev/null | sed 's/^/  /'
  AUTHOR=$(with_password "$ANSWERERS")
  RECEIVER_PORT=$(free_port)
  : >"$WORK/pushes.txt"
  PORT=$RECEIVER_PORT OUT="$WORK/pushes.txt" node bench/notifications-receiver.mjs 2>"$WORK/receiver.log" &
  PIDS+=($!)
  wait_http "http://127.0.0.1:$RECEIVER_PORT/health"
  # One browser key pair for every subscription: the receiver counts, it
  # does not decrypt.
  read -r P256DH AUTH < <(node -e '
const c = require("node:crypto");
const e = c.createECDH("prime256v1"); e.generateKeys();
console.log(e.getPublicKey().toString("base64url"), c.randomBytes(16).toString("base64url"))')
  q "INSERT INTO push_subscriptions (user_id, endpoint, p256dh, auth, created_at)
     SELECT id, 'http://127.0.0.1:$RECEIVER_PORT/push/' || id, '$P256DH', '$AUTH', 1 FROM users" >/dev/null
  echo "  push subscriptions: $(q 'SELECT COUNT(*) FROM push_subscriptions')"
  PLAZA_PUSH_ALLOW_INSECURE=true start_server
  COOKIE=$(session_cookie bench@example.com "$PASSWORD")
  POST_ID=$(curl -sf -H "Cookie: $COOKIE" -H 'content-type: application/json' \
    -d '{"title":"Ask me anything","content":"Answers welcome."}' "http://127.0.0.1:$PORT/api/posts" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  rss_before=$(resident_mib "$SERVER_PID")
  python3 - "http://127.0.0.1:$PORT" "$PASSWORD" "$POST_ID" "$AUTHOR" "$ANSWERERS" "$WORK" <<'PY'
import concurrent.futures, json, os, subprocess, sys, time, urllib.error, urllib.request
base, password, post, author, answerers, work = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]
def call(path, body, cookie=None):
    headers = {"content-type": "application/json"}
    if cookie:
        headers["cookie"] = cookie
    request = urllib.request.Request(base + path, json.dumps(body).encode(), headers)
    with urllib.request.urlopen(request) as answer:
        return answer
def sign_in(email):
    for _ in range(100):
        try:
            answer = call("/api/auth/signin", {"email": email, "password": password})
            break
        except urllib.error.HTTPError as error:
            if error.code != 503:
                sys.exit(f"{email} could not sign in: {error.code} {error.read()[:200]!r}")
            time.sleep(0.2)
    return next(v.split(";")[0] for k, v in answer.headers.items() if k.lower() == "set-cookie" and v.startswith("plaza_session="))
ids = subprocess.run(["psql", "-tA", os.environ["PLAZA_DATABASE_URL"], "-c",
    f"SELECT email FROM users WHERE email LIKE 'seed%' AND password_hash IS NOT NULL ORDER BY id LIMIT {answerers}"],
    capture_output=True, text=True, check=True).stdout.split()
with concurrent.futures.ThreadPoolExecutor(4) as pool:
    cookies = list(pool.map(sign_in, ids))
print(f"  {len(cookies)} answerers signed in")
def answer(cookie):
    call(f"/api/posts/{post}/replies", {"content": "Here is my answer."}, cookie)
started = time.time()
open(f"{work}/first-reply", "w").write(str(started))
with concurrent.futures.ThreadPoolExecutor(64) as pool:
    list(pool.map(answer, cookies))
print(f"  {len(cookies)} replies written in {time.time() - started:.2f} s")
PY
  first_reply=$(cat "$WORK/first-reply")
  for _ in $(seq 1 600); do
    [ "$(wc -l <"$WORK/pushes.txt" 2>/dev/null || echo 0)" -ge "$ANSWERERS" ] && break
    sleep 0.1
  done
  pushes=$(wc -l <"$WORK/pushes.txt")
  last_push=$(sort -n "$WORK/pushes.txt" | tail -1)
  rss_after=$(resident_mib "$SERVER_PID")
  q "SELECT 'notification after its reply: p50 ' ||
       percentile_cont(0.5) WITHIN GROUP (ORDER BY n.created_at - r.created_at) || ' ms, p99 ' ||
       percentile_cont(0.99) WITHIN GROUP (ORDER BY n.created_at - r.created_at) || ' ms, max ' ||
       MAX(n.created_at - r.created_at) || ' ms over ' || COUNT(*) || ' notifications'
     FROM notifications n JOIN replies r ON r.id = n.reply_id WHERE n.user_id = $AUTHOR" | sed 's/^/  /'
  python3 -c 'import sys; print(f"  pushes received: {sys.argv[1]} of {sys.argv[2]}; the last {float(sys.argv[3]) - float(sys.argv[4]):.2f} s after the first reply was sent")' \
    "$pushes" "$ANSWERERS" "$last_push" "$first_reply"
  echo "  resident memory: $rss_before MiB before, $rss_after MiB after"
  stop_server
fi

if [[ " $PARTS " == *" unread "* || " $PARTS " == *" digest "* ]]; then
  echo
  echo "== $NOTIFICATIONS notifications over $USERS members"
  fresh_database
  "$PLAZA" dev seed --users "$USERS" --posts 1000 2>/dev/null | sed 's/^/  /'
  MEMBER=$(with_password "$USERS")
  load_start=$(date +%s)
  # Loaded without the row triggers (the unread counts are computed once
  # below, as the triggers would keep them): every member gets the same
  # share, a tenth unread, the newest of each unread and waiting for the
  # digest; the secondary indexes are dropped for the load and built after.
  # The member count is read first, a constant, so that matching a row to
  # its member is a hash join. A checkpoint ends the load, so the
  # measurements do not share the disk with its write-back.
  psql -q -v ON_ERROR_STOP=1 "$PLAZA_DATABASE_URL" <<SQL
SET session_replication_role = replica;
SET maintenance_work_mem = '1GB';
CREATE TEMP TABLE bench_indexes AS
  SELECT indexname, indexdef FROM pg_indexes
  WHERE tablename = 'notifications' AND indexname <> 'notifications_pkey';
DO \$\$ DECLARE i record; BEGIN
  FOR i IN SELECT indexname FROM bench_indexes LOOP EXECUTE 'DROP INDEX ' || quote_ident(i.indexname); END LOOP;
END \$\$;
SELECT COUNT(*) AS members FROM users \\gset
INSERT INTO notifications (user_id, type, actor_id, post_id, text, created_at, updated_at, read_at, mail_state)
SELECT u.id, 'reply', u.id, NULL, 'Here is my answer.',
       $(($(date +%s) * 1000 - 2 * 86400000)) - (s.n / :members) * 1000,
       $(($(date +%s) * 1000 - 2 * 86400000)) - (s.n / :members) * 1000,
       CASE WHEN s.n % 10 = 0 OR s.n < :members THEN NULL ELSE 1 END,
       CASE WHEN s.n < :members THEN 'daily' END
FROM generate_series(0, $NOTIFICATIONS - 1) AS s(n)
JOIN (SELECT id, row_number() OVER (ORDER BY id) - 1 AS slot FROM users) u
  ON u.slot = s.n % :members;
INSERT INTO notification_counts (user_id, unread)
SELECT user_id, COUNT(*) FROM notifications WHERE read_at IS NULL GROUP BY user_id
ON CONFLICT (user_id) DO UPDATE SET unread = excluded.unread;
DO \$\$ DECLARE i record; BEGIN
  FOR i IN SELECT indexdef FROM bench_indexes LOOP EXECUTE i.indexdef; END LOOP;
END \$\$;
SET session_replication_role = DEFAULT;
VACUUM ANALYZE notifications;
VACUUM ANALYZE notification_counts;
CHECKPOINT;
SQL
  echo "  loaded $(q 'SELECT COUNT(*) FROM notifications') notifications in $(( $(date +%s) - load_start )) s; waiting for the digest: $(q "SELECT COUNT(*) FROM notifications WHERE mail_state = 'daily'")"
  if [[ " $PARTS " == *" digest "* ]]; then
    # The digest hour an hour ago: everything created before it is due.
    digest_start=$(date +%s%N)
    PLAZA_DIGEST_HOUR_UTC=$(( ($(date -u +%-H) + 23) % 24 )) start_server
    for _ in $(seq 1 3000); do
      [ "$(q "SELECT COUNT(*) FROM notifications WHERE mail_state = 'daily'")" = 0 ] && break
      sleep 0.1
    done
    taken=$(( ($(date +%s%N) - digest_start) / 1000000 ))
    left=$(q "SELECT COUNT(*) FROM notifications WHERE mail_state = 'daily'")
    for _ in $(seq 1 6000); do
      [ "$(q "SELECT COUNT(*) FROM outgoing_mail WHERE status = 'pending'")" = 0 ] && break
      sleep 0.1
    done
    written=$(( ($(date +%s%N) - digest_start) / 1000000 ))
    echo "  digest of $USERS members: all taken $taken ms after the start ($left left), the outbox written out after $written ms; $(q "SELECT COUNT(*) FROM outgoing_mail") mails, $(ls "$PLAZA_DATA_DIR/mail" | wc -l) files"
    stop_server
  fi
  if [[ " $PARTS " == *" unread "* ]]; then
    # Nothing waits for a digest (the digest part, when run, took it all)
    # or in the outbox: no job shares the machine with the measurement,
    # and a checkpoint writes the update out before it.
    q "UPDATE notifications SET mail_state = NULL WHERE mail_state = 'daily'" >/dev/null
    q "CHECKPOINT" >/dev/null
    for build in "$PLAZA" ${PLAZA_BENCH_PEER:+"$PLAZA_BENCH_PEER"}; do
      PLAZA="$build" PLAZA_DIGEST_HOUR_UTC=$(( ($(date -u +%-H) + 12) % 24 )) start_server
      COOKIE=$(session_cookie bench@example.com "$PASSWORD")
      echo "  $build"
      curl -sf -H "Cookie: $COOKIE" "http://127.0.0.1:$PORT/api/notifications/unread-count" | sed 's/^/  unread count: /'
      echo
      wrk -t2 -c50 -d2s -H "Cookie: $COOKIE" "http://127.0.0.1:$PORT/api/notifications/unread-count" >/dev/null
      wrk -t2 -c50 -d"${DURATION}s" --latency -H "Cookie: $COOKIE" "http://127.0.0.1:$PORT/api/notifications/unread-count" |
        awk '/Requests\/sec/ {rps=$2} $1=="50%" {p50=$2} $1=="99%" {p99=$2} /Non-2xx/ {bad=$5}
          END {printf "  GET /api/notifications/unread-count, 50 connections: %s/s, p50 %s, p99 %s%s\n", rps, p50, p99, bad ? "   non-2xx: " bad : ""}'
      stop_server
    done
  fi
fi
