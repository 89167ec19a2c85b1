#!/usr/bin/env bash
# The cost of the IP blocks on the request path: two servers of one
# binary side by side on loopback, one holding no IP block and one
# holding 100,000 (50,000 IPv4 /32 and /24 ranges and 50,000 IPv6 /64s,
# none covering the client, so each request's check searches to the end),
# each on its own fresh SQLite database with rate limits off; each round
# runs wrk on GET /api/version (the request layer and routing alone, the
# route where the check is the largest share of the work) against one and
# then the other, rounds interleaved, and the medians are compared.
# Usage: bench/ip-blocks.sh [seconds per run, default 8] [connections,
#        default 50] [rounds, default 5] (PLAZA_BIN: the binary, else a
#        release build is made)
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${1:-8}"
CONNECTIONS="${2:-50}"
ROUNDS="${3:-5}"
BLOCKS=100000
source bench/lib.sh
need wrk curl python3
build_plaza

# start NAME BLOCKS -> sets PORT_<NAME>
start() {
  local name=$1 blocks=$2 port
  port=$(free_port)
  mkdir -p "$WORK/$name"
  export PLAZA_DATA_DIR="$WORK/$name" PLAZA_RATE_LIMITS_ENABLED=false RUST_LOG=info
  export PLAZA_DATABASE_URL="sqlite://$WORK/$name/plaza.db"
  "$PLAZA" migrate >/dev/null 2>&1
  python3 - "$WORK/$name/plaza.db" "$blocks" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
count = int(sys.argv[2])
rows = []
for n in range(count):
    if n % 2 == 0:
        a = 11 + (n // 2) % 100
        b, c = (n // 200) % 256, (n // 51200) % 256
        cidr = f"{a}.{b}.{c}.0/24" if n % 4 == 0 else f"{a}.{b}.{c}.{(n // 2) % 256}/32"
    else:
        cidr = f"2001:db8:{(n // 65536) % 65536:x}:{n % 65536:x}::/64"
    rows.append((cidr, "all" if n % 3 else "sign_up", "bench", 0))
db.executemany(
    "INSERT INTO ip_blocks (cidr, severity, reason, created_at) VALUES (?, ?, ?, ?)", rows)
db.execute("UPDATE site_settings SET version = version + 1")
db.commit()
PY
  PLAZA_BIND="127.0.0.1:$port" "$PLAZA" serve 2>"$WORK/$name.log" &
  PIDS+=($!)
  wait_http "http://127.0.0.1:$port/api/version"
  printf -v "PORT_$name" '%s' "$port"
}

# measure NAME -> appends req/s to $WORK/NAME.rates
measure() {
  local port_var="PORT_$1"
  wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" "http://127.0.0.1:${!port_var}/api/version" |
    awk '/Requests\/sec/ {print $2}' >>"$WORK/$1.rates"
}

start none 0
start blocked "$BLOCKS"
in_force=$(grep -o '[0-9]* IP blocks in force' "$WORK/blocked.log" | tail -1 || true)
echo "IP blocks side by side: $PLAZA; no blocks against $BLOCKS ($in_force); wrk ${DURATION}s, $CONNECTIONS connections, 2 threads, $ROUNDS rounds; $(nproc) cores"
for name in none blocked; do
  port_var="PORT_$name"
  wrk -t2 -c"$CONNECTIONS" -d2s "http://127.0.0.1:${!port_var}/api/version" >/dev/null
done
for round in $(seq 1 "$ROUNDS"); do
  measure none
  measure blocked
  echo "  round $round done"
done
median() { sort -n "$1" | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
n=$(median "$WORK/none.rates")
b=$(median "$WORK/blocked.rates")
printf '  %-22s %14s %14s %10s   %s\n' route "none req/s" "100k req/s" "100k/none" "rounds (none | 100k)"
printf '  %-22s %14.0f %14.0f %10.3f   %s | %s\n' "GET /api/version" "$n" "$b" \
  "$(python3 -c "print($b / $n)")" "$(paste -sd' ' "$WORK/none.rates")" "$(paste -sd' ' "$WORK/blocked.rates")"
