#!/usr/bin/env bash
# A user's data export on loopback against the release binary (SQLite,
# rate limits off): one user with 1,000 posts and 200 uploads, another with
# 100 posts and 20 uploads, each upload a 400 × 400 PNG of noise (it does
# not compress, so the archive is about as large as the files). Each export
# is downloaded with curl and checked with Python's zipfile; prints its
# size, its time (curl's total) and the server's peak resident memory
# (VmHWM) during it, each export measured alone. The archive is written
# while it is sent, so the peak must not grow with the archive's size.
#
# Usage: bench/export.sh [rounds, default 3]
# Environment: PLAZA_BIN (a built binary instead of building one).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-3}"
source bench/lib.sh
build_plaza
need curl python3

export PLAZA_DATA_DIR="$WORK/data" PLAZA_DATABASE_URL="sqlite://$WORK/data/plaza.db"
export PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=warn
mkdir -p "$WORK/data"
PASSWORD='bench exporter password'
LARGE=$("$PLAZA" user create --email large@example.com --password "$PASSWORD" --role user 2>/dev/null)
SMALL=$("$PLAZA" user create --email small@example.com --password "$PASSWORD" --role user 2>/dev/null)
start_server
LARGE_COOKIE=$(session_cookie large@example.com "$PASSWORD")
SMALL_COOKIE=$(session_cookie small@example.com "$PASSWORD")

# seed COOKIE POSTS UPLOADS: writes the user's posts and uploads through the API.
seed() {
  python3 - "$PORT" "$1" "$2" "$3" <<'EOF'
import http.client, json, os, struct, sys, zlib
port, cookie, posts, uploads = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
connection = http.client.HTTPConnection("127.0.0.1", port)
def send(path, body, content_type):
    connection.request("POST", path, body, {"cookie": cookie, "content-type": content_type})
    answer = connection.getresponse()
    text = answer.read()
    if answer.status not in (200, 201):
        sys.exit(f"{path} answered {answer.status}: {text[:200]!r}")
for n in range(posts):
    post = {"title": f"Post {n}", "content": ("Words of post %d. " % n) * 60, "published": n % 10 != 0}
    send("/api/posts", json.dumps(post), "application/json")
def png(side):
    raw = b"".join(b"\x00" + os.urandom(side * 3) for _ in range(side))
    chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b""))
boundary = "bench-export-boundary"
for n in range(uploads):
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"noise{n}.png\"\r\n"
            f"Content-Type: image/png\r\n\r\n").encode() + png(400) + f"\r\n--{boundary}--\r\n".encode()
    send("/api/upload", body, f"multipart/form-data; boundary={boundary}")
EOF
}
seed "$LARGE_COOKIE" 1000 200
seed "$SMALL_COOKIE" 100 20

peak() { awk '/VmHWM/ {printf "%.1f", $2/1024}' "/proc/$SERVER_PID/status"; }
resident() { awk '/VmRSS/ {printf "%.1f", $2/1024}' "/proc/$SERVER_PID/status"; }
# Writing 5 to clear_refs resets the peak, so each export is measured alone.
reset_peak() { echo 5 >"/proc/$SERVER_PID/clear_refs"; }
# export ID COOKIE NAME: one export, checked; prints size, time and peak.
export_once() {
  reset_peak
  local before
  before=$(resident)
  read -r code seconds < <(curl -s -o "$WORK/$3.zip" -w '%{http_code} %{time_total}\n' \
    -H "Cookie: $2" "http://127.0.0.1:$PORT/api/users/$1/export")
  [ "$code" = 200 ] || { echo "the export answered $code" >&2; exit 1; }
  local entries
  entries=$(python3 -c '
import sys, zipfile
archive = zipfile.ZipFile(sys.argv[1])
assert archive.testzip() is None
names = archive.namelist()
print(len([n for n in names if n.startswith("uploads/")]), len(__import__("json").loads(archive.read("posts.json"))))
' "$WORK/$3.zip")
  printf '  %-5s %6.1f MB in %5.2f s (%s files, %s posts); server resident before %s MiB, peak during %s MiB\n' \
    "$3" "$(awk -v bytes="$(stat -c %s "$WORK/$3.zip")" 'BEGIN { print bytes / 1e6 }')" "$seconds" \
    ${entries% *} ${entries#* } "$before" "$(peak)"
}
echo "export benchmark: loopback, $(nproc) cores, $ROUNDS rounds"
for round in $(seq 1 "$ROUNDS"); do
  echo " round $round"
  export_once "$SMALL" "$SMALL_COOKIE" small
  export_once "$LARGE" "$LARGE_COOKIE" large
done
