#!/usr/bin/env bash
# Peak resident memory of Plaza under concurrent sign-ups with the default
# Argon2id cost (64 MiB per hash): each of N concurrent `POST /api/users`
# hashes a password. Reports the answers by status, the wall time, and the
# server's peak resident memory (VmHWM) against its resident memory at start.
# Loopback only; the server stops when the script ends.
# Usage: bench/signup-memory.sh [concurrent sign-ups, default 40]
#   PLAZA_BIN=path/to/plaza measures another build (e.g. an older one).
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT="${1:-40}"
source bench/lib.sh
build_plaza
need curl python3

export PLAZA_DATA_DIR="$WORK/data" PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=warn
start_server
kib() { awk -v key="$1:" '$1 == key { print $2 }' "/proc/$SERVER_PID/status"; }
START_RSS=$(kib VmRSS)

python3 - "$PORT" "$COUNT" <<'EOF'
import collections, json, sys, threading, time, urllib.error, urllib.request
port, count = int(sys.argv[1]), int(sys.argv[2])
statuses = collections.Counter()
lock = threading.Lock()
def sign_up(n):
    body = json.dumps({"email": f"crowd{n}@example.com", "password": "a long enough password"}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/users", body, {"content-type": "application/json"})
    try:
        status = urllib.request.urlopen(request, timeout=120).status
    except urllib.error.HTTPError as error:
        status = error.code
    except Exception as error:
        status = type(error).__name__
    with lock:
        statuses[status] += 1
threads = [threading.Thread(target=sign_up, args=(n,)) for n in range(count)]
started = time.monotonic()
for thread in threads: thread.start()
for thread in threads: thread.join()
print(f"{count} concurrent sign-ups in {time.monotonic() - started:.2f} s: " + ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items(), key=str)))
EOF
echo "resident memory at start: $((START_RSS / 1024)) MiB; peak: $(( $(kib VmHWM) / 1024 )) MiB"
