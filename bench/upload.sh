#!/usr/bin/env bash
# Image upload on loopback: a photo-like 3000 × 2000 JPEG of
# about 2 MB (plaza-media's `photo` example) is uploaded with every variant
# made (thumbnail, medium, large, each also as WebP), first alone, then 4 at
# once, by a signed-in user against the release binary (SQLite, rate limits
# off). Prints each upload's time (curl's total) and the server's peak
# resident memory (VmHWM) in each phase.
#
# Usage: bench/upload.sh [rounds, default 5]
# Environment: PLAZA_BIN (a built binary instead of building one).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-5}"
source bench/lib.sh
build_plaza
need curl python3
cargo run --release -q -p plaza-media --example photo -- "$WORK/photo.jpg"

export PLAZA_DATA_DIR="$WORK/data" PLAZA_DATABASE_URL="sqlite://$WORK/data/plaza.db"
export PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=warn
mkdir -p "$WORK/data"
PASSWORD='bench uploader password'
"$PLAZA" user create --email uploader@example.com --password "$PASSWORD" --role user >/dev/null 2>&1
start_server
COOKIE=$(session_cookie uploader@example.com "$PASSWORD")
peak() { awk '/VmHWM/ {printf "%.1f MiB", $2/1024}' "/proc/$SERVER_PID/status"; }
resident() { awk '/VmRSS/ {printf "%.1f MiB", $2/1024}' "/proc/$SERVER_PID/status"; }
# Start-up has a transient peak of its own (about 80 MiB, freed again);
# writing 5 to clear_refs resets the peak so each phase is measured alone.
reset_peak() { echo 5 >"/proc/$SERVER_PID/clear_refs"; }
one() {
  curl -s -o "$WORK/answer.$1.json" -w '%{http_code} %{time_total}\n' -H "Cookie: $COOKIE" \
    -F "file=@$WORK/photo.jpg;type=image/jpeg" "http://127.0.0.1:$PORT/api/upload/image"
}
echo "upload benchmark: $(stat -c %s "$WORK/photo.jpg") byte 3000x2000 JPEG, $ROUNDS rounds, loopback, $(nproc) cores"
echo "  server after start: peak $(peak), resident $(resident)"
reset_peak
alone=()
for round in $(seq 1 "$ROUNDS"); do
  read -r code seconds < <(one "a$round")
  [ "$code" = 200 ] || { echo "upload answered $code: $(cat "$WORK/answer.a$round.json")" >&2; exit 1; }
  alone+=("$seconds")
done
echo "  one at a time (s): ${alone[*]}"
echo "  server peak during single uploads: $(peak)"
reset_peak
for round in $(seq 1 "$ROUNDS"); do
  clients=()
  for client in 1 2 3 4; do
    one "c$round.$client" >"$WORK/time.$round.$client" &
    clients+=("$!")
  done
  wait "${clients[@]}"
  times=()
  for client in 1 2 3 4; do
    read -r code seconds <"$WORK/time.$round.$client"
    [ "$code" = 200 ] || { echo "a concurrent upload answered $code" >&2; exit 1; }
    times+=("$seconds")
  done
  echo "  4 at once, round $round (s): ${times[*]}"
done
echo "  server peak during 4 concurrent uploads: $(peak)"
python3 -c '
import json, sys
answer = json.load(open(sys.argv[1]))
parts = []
for name, variant in sorted(answer["file"]["variants"].items()):
    parts.append("%s %dx%d %d B" % (name, variant["width"], variant["height"], variant["size"]))
print("  variants: " + ", ".join(parts))
' "$WORK/answer.a1.json"
