#!/usr/bin/env bash
# The fault review: two instances behind the docs' nginx, on one
# PostgreSQL database, with Redis (rate limits shared) and an S3 store
# (moto), under a steady load of writes and reads, through seven faults
# one after the other:
#   1. kill -9 of instance a, restarted 3 s later;
#   2. a rolling restart: SIGTERM to a, restarted; then to b, restarted;
#   3. instance a cut off from PostgreSQL for 5 s (b keeps it);
#   4. PostgreSQL cut off from both for 5 s;
#   5. Redis stopped for 5 s, started again (empty);
#   6. the S3 store refusing connections for 5 s;
#   7. the S3 store accepting connections and never answering for 5 s.
# Every connection to PostgreSQL and to S3 goes through a TCP switch of
# this script (bench/fault-switch.py) that it turns off, on, or to hang.
# The load: WRITERS members writing posts through nginx, each write with a
# unique title, READERS reading the post list, and one member uploading an
# image every 200 ms. It prints, per fault, the answers by status, and at
# the end checks that every write acknowledged (2xx) is stored with its
# title and every acknowledged upload can be read back; it fails (exit 1)
# when one is missing or any answer was a 500.
#
# Usage: bench/faults.sh [seconds of steady load before and after each fault, default 4]
# Environment: PLAZA_BIN (a built binary instead of building this tree),
# PLAZA_BENCH_POSTGRES (default postgres://postgres@127.0.0.1:5432),
# WRITERS (default 8), READERS (default 4).
set -euo pipefail
cd "$(dirname "$0")/.."
SETTLE="${1:-4}"
WRITERS="${WRITERS:-8}"
READERS="${READERS:-4}"
PG_SERVER="${PLAZA_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}"
source bench/lib.sh
need curl psql python3 nginx redis-server redis-cli
python3 -c 'import moto.server' 2>/dev/null || { echo "moto[server] is needed (pip install 'moto[server]')" >&2; exit 1; }
build_plaza

DB="plaza_bench_faults_$$"
on_exit "psql '$PG_SERVER/postgres' -qc 'DROP DATABASE IF EXISTS $DB WITH (FORCE)' >/dev/null 2>&1 || true"
psql "$PG_SERVER/postgres" -qc "CREATE DATABASE $DB" >/dev/null
PG_HOST_PORT=$(python3 -c 'import sys, urllib.parse; u = urllib.parse.urlparse(sys.argv[1]); print(f"{u.hostname}:{u.port or 5432}")' "$PG_SERVER")
PG_USER=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.urlparse(sys.argv[1]).username or "postgres")' "$PG_SERVER")

# switch NAME TARGET: a TCP switch on a free port forwarding to TARGET,
# controlled through $WORK/NAME.control; sets SWITCH_PORT.
switch() {
  SWITCH_PORT=$(free_port)
  python3 bench/fault-switch.py "$SWITCH_PORT" "$2" "$WORK/$1.control" 2>"$WORK/$1.log" &
  PIDS+=($!)
  for _ in $(seq 1 100); do [ -p "$WORK/$1.control" ] && return; sleep 0.05; done
  echo "the switch $1 did not start" >&2; exit 1
}
# turn NAME on|off|hang
turn() { echo "$2" >"$WORK/$1.control"; }

switch db-a "$PG_HOST_PORT"; DB_A_PORT=$SWITCH_PORT
switch db-b "$PG_HOST_PORT"; DB_B_PORT=$SWITCH_PORT

REDIS_PORT=$(free_port)
start_redis() {
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize no >"$WORK/redis.log" 2>&1 &
  REDIS_PID=$!
  PIDS+=("$REDIS_PID")
  for _ in $(seq 1 100); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && return; sleep 0.05; done
}
start_redis

MOTO_PORT=$(free_port)
python3 -m moto.server -H 127.0.0.1 -p "$MOTO_PORT" >"$WORK/moto.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$MOTO_PORT/moto-api/"
python3 -c "import urllib.request as r; r.urlopen(r.Request('http://127.0.0.1:$MOTO_PORT/plaza-faults', method='PUT'))"
switch s3 "127.0.0.1:$MOTO_PORT"; S3_PORT=$SWITCH_PORT

export PLAZA_STORAGE_URL="s3://plaza-faults/uploads" AWS_ENDPOINT_URL="http://127.0.0.1:$S3_PORT"
export AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_ALLOW_HTTP=true
export PLAZA_REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
export PLAZA_JWT_SECRET="fault-review-jwt-secret-0123456789abcdef"
export PLAZA_TOTP_KEY="fault-review-totp-key-0123456789abcdef01"
export PLAZA_ANALYTICS_SALT="fault-review-analytics-salt-0123456789ab"
export PLAZA_TRUSTED_PROXIES='["127.0.0.1"]' RUST_LOG="${RUST_LOG:-warn}"
# Generous limits: the load is many requests from one address.
export PLAZA_RATE_LIMITS_ENABLED=true PLAZA_RATE_LIMIT_AUTHENTICATED="1000000/minute" PLAZA_RATE_LIMIT_ANONYMOUS="1000000/minute"
PLAZA_DATABASE_URL="postgres://$PG_USER@127.0.0.1:$DB_A_PORT/$DB" "$PLAZA" migrate >/dev/null 2>&1

# start NAME: starts instance NAME (a or b) on its port and its switch.
PORT_a=$(free_port)
PORT_b=$(free_port)
start() {
  local port_var="PORT_$1" db_var
  db_var=$(echo "DB_${1}_PORT" | tr a-b A-B)
  mkdir -p "$WORK/data-$1"
  PLAZA_DATA_DIR="$WORK/data-$1" PLAZA_BIND="127.0.0.1:${!port_var}" \
    PLAZA_DATABASE_URL="postgres://$PG_USER@127.0.0.1:${!db_var}/$DB" \
    "$PLAZA" serve 2>>"$WORK/$1.log" &
  printf -v "PID_$1" '%s' "$!"
  PIDS+=($!)
  wait_http "http://127.0.0.1:${!port_var}/api/health"
}
start a
start b

PASSWORD="fault review password"
for n in $(seq 1 "$WRITERS") uploader; do
  PLAZA_DATA_DIR="$WORK/data-a" PLAZA_DATABASE_URL="postgres://$PG_USER@127.0.0.1:$DB_A_PORT/$DB" \
    "$PLAZA" user create --email "writer$n@example.com" --password "$PASSWORD" >/dev/null 2>&1
done

LB=$(free_port)
python3 - "$WORK" "$PORT_a" "$PORT_b" "$LB" >"$WORK/nginx.conf" <<'EOF'
import re, sys
work, a, b, port = sys.argv[1:]
block = re.search(r"```nginx\n(.*?)```", open("docs/operations.md").read(), re.S).group(1)
for old, new in (("127.0.0.1:3001", f"127.0.0.1:{a}"), ("127.0.0.1:3002", f"127.0.0.1:{b}"), ("listen 80;", f"listen 127.0.0.1:{port};")):
    assert old in block, f"docs/operations.md's nginx block lacks {old!r}"
    block = block.replace(old, new)
print(f"""worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log;
daemon off;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {work}/nginx-body;
    client_body_buffer_size 8m;
    proxy_temp_path {work}/nginx-proxy;
{block}
}}""")
EOF
nginx -p "$WORK" -c "$WORK/nginx.conf" &
PIDS+=($!)
wait_http "http://127.0.0.1:$LB/api/health"

# The load runs until $WORK/stop exists; it marks each answer with the
# fault in $WORK/phase.
echo "steady" >"$WORK/phase"
python3 bench/fault-load.py "http://127.0.0.1:$LB" "$PASSWORD" "$WRITERS" "$READERS" "$WORK" &
LOAD_PID=$!
PIDS+=("$LOAD_PID")
for _ in $(seq 1 600); do [ -e "$WORK/load-ready" ] && break; sleep 0.1; done
[ -e "$WORK/load-ready" ] || { echo "the load did not start" >&2; exit 1; }

phase() { echo "$1" >"$WORK/phase.next"; mv "$WORK/phase.next" "$WORK/phase"; echo "  $(date +%T) $1"; }
# nginx takes an upstream that refused a connection out of rotation for
# fail_timeout (10 s by default); a rolling restart waits that long after
# an instance is back before stopping the next one.
FAIL_TIMEOUT=10
settle() { sleep "$SETTLE"; }

echo "fault review: nginx in front of two instances, PostgreSQL, Redis, S3 (moto); $WRITERS writers, $READERS readers, 1 uploader; $(nproc) cores"
phase steady; settle
phase "1 kill -9 a"; kill -9 "$PID_a"; wait "$PID_a" 2>/dev/null || true; sleep 3; start a; sleep "$FAIL_TIMEOUT"; settle
phase "2 rolling restart"; kill -TERM "$PID_a"; wait "$PID_a" 2>/dev/null || true; start a; sleep "$FAIL_TIMEOUT"
kill -TERM "$PID_b"; wait "$PID_b" 2>/dev/null || true; start b; sleep "$FAIL_TIMEOUT"; settle
phase "3 a cut off from PostgreSQL"; turn db-a off; sleep 5; turn db-a on; settle
phase "4 PostgreSQL down"; turn db-a off; turn db-b off; sleep 5; turn db-a on; turn db-b on; settle
phase "5 Redis down"; kill "$REDIS_PID"; wait "$REDIS_PID" 2>/dev/null || true; sleep 5; start_redis; settle
phase "6 S3 refusing"; turn s3 off; sleep 5; turn s3 on; settle
phase "7 S3 hanging"; turn s3 hang; sleep 5; turn s3 on; settle
phase "after"; settle
touch "$WORK/stop"
wait "$LOAD_PID"

PLAZA_DATABASE_URL="$PG_SERVER/$DB" python3 - "$WORK" "http://127.0.0.1:$LB" <<'EOF'
import collections, json, os, subprocess, sys, urllib.request
work, base = sys.argv[1], sys.argv[2]
answers = [json.loads(line) for line in open(f"{work}/answers.jsonl")]
by_phase = collections.OrderedDict()
for answer in answers:
    by_phase.setdefault(answer["phase"], collections.Counter())[f'{answer["kind"]} {answer["status"]}'] += 1
print()
for phase, counts in by_phase.items():
    print(f"  {phase:30} " + ", ".join(f"{key}: {count}" for key, count in sorted(counts.items())))
titles = {a["title"] for a in answers if a["kind"] == "write" and 200 <= a["status"] < 300}
stored = set(subprocess.run(["psql", "-tA", os.environ["PLAZA_DATABASE_URL"], "-c", "SELECT title FROM posts"],
                            capture_output=True, text=True, check=True).stdout.splitlines())
lost = titles - stored
uploads = [a["url"] for a in answers if a["kind"] == "upload" and 200 <= a["status"] < 300]
unreadable = []
for url in uploads:
    try:
        with urllib.request.urlopen(base + url if url.startswith("/") else url) as response:
            response.read()
    except Exception as error:
        unreadable.append((url, str(error)))
five_hundreds = [a for a in answers if a["status"] == 500]
other_5xx = collections.Counter(a["status"] for a in answers if a["status"] >= 500 and a["status"] not in (500, 503))
print(f"\n  acknowledged writes: {len(titles)}, stored: {len(titles & stored)}, lost: {len(lost)}")
print(f"  acknowledged uploads: {len(uploads)}, readable now: {len(uploads) - len(unreadable)}")
print(f"  answers: {len(answers)}; 500: {len(five_hundreds)}; other 5xx than 503: {dict(other_5xx)}; connection errors: {sum(a['status'] == 0 for a in answers)}")
for answer in five_hundreds[:5]:
    print("   500:", answer)
errors = collections.Counter((a["kind"], a["status"], a.get("error", "")[:100]) for a in answers if a["status"] >= 400)
for (kind, status, error), count in errors.most_common(12):
    print(f"   {count:6} x {kind} {status}: {error}")
for url, error in unreadable[:5]:
    print("   unreadable:", url, error)
sys.exit(1 if lost or five_hundreds or unreadable else 0)
EOF
