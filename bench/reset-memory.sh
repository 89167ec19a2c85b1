#!/usr/bin/env bash
# Peak resident memory of Plaza under concurrent password resets with the
# default Argon2id cost (64 MiB per hash): N users (made with `plaza user
# create`, outside the server) each ask for a reset link, the links are
# read from the `.eml` files Plaza writes without SMTP, then the N resets
# (`POST /api/auth/password/reset`, each hashing the new password) are sent
# at once. Reports the answers by status, the wall time of the resets, and
# the server's peak resident memory (VmHWM) against its resident memory
# just before them. Loopback only; the server stops when the script ends.
# Usage: bench/reset-memory.sh [concurrent resets, default 40]
#   PLAZA_BIN=path/to/plaza measures another build (e.g. an older one).
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT="${1:-40}"
source bench/lib.sh
build_plaza
need curl python3

export PLAZA_DATA_DIR="$WORK/data" PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=warn
unset PLAZA_SMTP_URL
for n in $(seq 1 "$COUNT"); do
  "$PLAZA" user create --email "reset$n@example.com" --password "the first password" >/dev/null 2>&1
done
start_server
kib() { awk -v key="$1:" '$1 == key { print $2 }' "/proc/$SERVER_PID/status"; }

python3 - "$PORT" "$COUNT" "$PLAZA_DATA_DIR/mail" <<'EOF'
import email, email.policy, glob, json, re, sys, time, urllib.request
port, count, folder = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def post(path, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(), {"content-type": "application/json"})
    return urllib.request.urlopen(request, timeout=60).status
for n in range(1, count + 1):
    assert post("/api/auth/password/forgot", {"email": f"reset{n}@example.com"}) == 202
deadline = time.monotonic() + 60
while len(glob.glob(f"{folder}/*.eml")) < count:
    assert time.monotonic() < deadline, "the reset mails were not all written"
    time.sleep(0.1)
tokens = []
for path in glob.glob(f"{folder}/*.eml"):
    with open(path, "rb") as file:
        message = email.message_from_binary_file(file, policy=email.policy.default)
    text = message.get_body(preferencelist=("plain",)).get_content()
    tokens.append(re.search(r"/reset-password\?token=([A-Za-z0-9_-]+)", text).group(1))
with open(f"{folder}/../tokens.json", "w") as file:
    json.dump(tokens, file)
EOF

START_RSS=$(kib VmRSS)
python3 - "$PORT" "$PLAZA_DATA_DIR/tokens.json" <<'EOF'
import collections, json, sys, threading, time, urllib.error, urllib.request
port, tokens = int(sys.argv[1]), json.load(open(sys.argv[2]))
statuses = collections.Counter()
lock = threading.Lock()
start = threading.Barrier(len(tokens) + 1)
def reset(n, token):
    body = json.dumps({"token": token, "password": f"a new password number {n}"}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/auth/password/reset", body, {"content-type": "application/json"})
    start.wait()
    try:
        status = urllib.request.urlopen(request, timeout=120).status
    except urllib.error.HTTPError as error:
        status = error.code
    except Exception as error:
        status = type(error).__name__
    with lock:
        statuses[status] += 1
threads = [threading.Thread(target=reset, args=(n, token)) for n, token in enumerate(tokens)]
for thread in threads: thread.start()
start.wait()
started = time.monotonic()
for thread in threads: thread.join()
print(f"{len(tokens)} concurrent resets in {time.monotonic() - started:.2f} s: " + ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items(), key=str)))
EOF
echo "resident memory before the resets: $((START_RSS / 1024)) MiB; peak: $(( $(kib VmHWM) / 1024 )) MiB"
