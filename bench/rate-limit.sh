#!/usr/bin/env bash
# What the rate limiter costs, measured side by side in one run on loopback:
#   1. GET /api/posts (anonymous, answered from the list cache) on three
#      instances of the same binary, each on its own SQLite database: limits off, limits on
#      in process, limits on with Redis (127.0.0.1:6379). Limits are set
#      high enough that nothing is refused, and every request comes from a
#      different client address (X-Forwarded-For through a trusted proxy,
#      written by a wrk script), so the limiter tracks many keys, not one.
#      Rounds interleaved; each side's throughput is compared with limits off
#      in the same round, and the median of those ratios is the figure.
#   2. Resident memory of an in-process limiter after 1,000,000 distinct
#      client addresses (quota 1/90s, so every entry is still held when the
#      fill ends), then after their windows expire and the sweep job runs.
#   With PLAZA_BASE_BIN set (another build), a fourth instance runs that
#   binary with Redis in the same rounds, to compare two Redis backends.
#   Beside each run's throughput, the CPU time the server (and Redis) used
#   per request, read from /proc, with the server's time in user space
#   apart (the rest is the kernel's: the sockets and the wake-ups):
#   steadier than throughput on a shared 2-core machine, and it shows where
#   a cost lies.
# Usage: bench/rate-limit.sh [seconds per throughput run, default 5] [connections, default 50]
# Environment: PLAZA_BIN (a built binary instead of building one),
# PLAZA_BASE_BIN (see above), SKIP_MEMORY=1 (only the throughput runs),
# ROUNDS (default 30; odd rounds run the sides in order, even ones backwards).
# Single rounds on a shared 2-core machine swing by a fifth either way,
# so a run needs many of them to tell a cost from its target: the summary
# gives each cost's 90% interval, and one that straddles the target asks
# for more rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${1:-5}"
CONNECTIONS="${2:-50}"
ROUNDS="${ROUNDS:-30}"
source bench/lib.sh
build_plaza
need wrk curl python3 redis-cli
redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null || { echo "Redis is needed on 127.0.0.1:6379" >&2; exit 1; }
BASE=${PLAZA_BASE_BIN:-}
PIDS=()
on_exit 'for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done'
rss_mb() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }

ADDRESSES=bench/addresses.lua

export RUST_LOG=warn PLAZA_TRUSTED_PROXIES='["127.0.0.1"]'

start() { # NAME, then extra VAR=value settings; sets $NAME_PORT and $NAME_PID
  local name=$1; shift
  local port; port=$(free_port)
  local binary=$PLAZA
  [ "$name" = redis_base ] && binary=$BASE
  # One SQLite database per instance: a server refuses a database another serves.
  export PLAZA_DATA_DIR="$WORK/$name"
  "$binary" migrate >/dev/null 2>&1
  env PLAZA_BIND="127.0.0.1:$port" "$@" "$binary" serve 2>"$WORK/$name.log" &
  local pid=$!
  PIDS+=("$pid")
  wait_http "http://127.0.0.1:$port/api/version"
  printf -v "${name}_PORT" '%s' "$port"
  printf -v "${name}_PID" '%s' "$pid"
}

HIGH=1000000000/hour
start off PLAZA_RATE_LIMITS_ENABLED=false
start local PLAZA_RATE_LIMITS_ENABLED=true PLAZA_RATE_LIMIT_ANONYMOUS=$HIGH
start redis PLAZA_RATE_LIMITS_ENABLED=true PLAZA_RATE_LIMIT_ANONYMOUS=$HIGH PLAZA_REDIS_URL=redis://127.0.0.1:6379
SIDES="off local redis"
if [ -n "$BASE" ]; then
  start redis_base PLAZA_RATE_LIMITS_ENABLED=true PLAZA_RATE_LIMIT_ANONYMOUS=$HIGH PLAZA_REDIS_URL=redis://127.0.0.1:6379
  SIDES="$SIDES redis_base"
fi

# The limited instances must really be counting: one request shows the headers.
curl -sf -D - -o /dev/null "http://127.0.0.1:$local_PORT/api/posts" | grep -qi '^x-ratelimit-limit' \
  || { echo "the in-process limiter is not counting" >&2; exit 1; }
curl -sf -D - -o /dev/null "http://127.0.0.1:$redis_PORT/api/posts" | grep -qi '^x-ratelimit-limit' \
  || { echo "the Redis limiter is not counting" >&2; exit 1; }

# CPU time (user + system, clock ticks) a process has used so far, and its
# user part alone.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
user_ticks() { awk '{print $14}' "/proc/$1/stat"; }
REDIS_PID=$(redis-cli -h 127.0.0.1 -p 6379 info server | awk -F: '/^process_id/ {print $2+0}')
[ -r "/proc/$REDIS_PID/stat" ] || REDIS_PID=""
TICKS=$(getconf CLK_TCK)

run() { # NAME PORT PID -> req/s and CPU µs per request in $WORK/NAME.*
  local plaza_before plaza_user_before redis_before out
  plaza_before=$(cpu_ticks "$3")
  plaza_user_before=$(user_ticks "$3")
  redis_before=$([ -n "$REDIS_PID" ] && cpu_ticks "$REDIS_PID" || echo 0)
  out=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$ADDRESSES" "http://127.0.0.1:$2/api/posts")
  local plaza_ticks=$(( $(cpu_ticks "$3") - plaza_before ))
  local plaza_user_ticks=$(( $(user_ticks "$3") - plaza_user_before ))
  local redis_ticks=$(( $([ -n "$REDIS_PID" ] && cpu_ticks "$REDIS_PID" || echo 0) - redis_before ))
  local rps non2xx p99 requests
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p99=$(echo "$out" | awk '$1=="99%" {print $2}')
  non2xx=$(echo "$out" | awk '/Non-2xx/ {print $5}')
  requests=$(echo "$out" | awk '/requests in/ {print $1}')
  local plaza_us plaza_user_us redis_us
  plaza_us=$(python3 -c "print(round($plaza_ticks / $TICKS * 1e6 / $requests, 2))")
  plaza_user_us=$(python3 -c "print(round($plaza_user_ticks / $TICKS * 1e6 / $requests, 1))")
  redis_us=$(python3 -c "print(round($redis_ticks / $TICKS * 1e6 / $requests, 2))")
  printf '%-14s %12s req/s   p99 %-9s non-2xx %-4s CPU per request: Plaza %6s us (user %5s), Redis %5s us\n' \
    "$1" "$rps" "$p99" "${non2xx:-0}" "$plaza_us" "$plaza_user_us" "$redis_us"
  echo "$rps" > "$WORK/$1.rps"
  echo "$plaza_us $redis_us" > "$WORK/$1.cpu"
}

echo "wrk: ${DURATION}s per run, $CONNECTIONS connections, 2 threads, loopback; $(nproc) cores; $ROUNDS rounds"
for name in $SIDES; do
  port_var="${name}_PORT"
  wrk -t2 -c"$CONNECTIONS" -d2s -s "$ADDRESSES" "http://127.0.0.1:${!port_var}/api/posts" >/dev/null
done
# Odd rounds go through the sides in order, even rounds backwards, so no
# side always runs right after the same neighbour.
for round in $(seq 1 "$ROUNDS"); do
  order=$SIDES
  [ $((round % 2)) = 0 ] && order=$(echo "$SIDES" | tr ' ' '\n' | tac | tr '\n' ' ')
  for name in $order; do
    port_var="${name}_PORT"
    pid_var="${name}_PID"
    run "$name-$round" "${!port_var}" "${!pid_var}"
  done
done
python3 - "$WORK" "$SIDES" "$ROUNDS" <<'PY'
import random, statistics, sys
work, sides, rounds = sys.argv[1], sys.argv[2].split(), int(sys.argv[3])
read = lambda side, r, kind: [float(v) for v in open(f"{work}/{side}-{r}.{kind}").read().split()]
# Each round's ratio to limits off in the same round: the machine's speed
# drifts between rounds, far less within one.
def ratios(side, value):
    return [value(side, r) / value("off", r) for r in range(1, rounds + 1)]
throughput = lambda side, r: read(side, r, "rps")[0]
cpu = lambda side, r: sum(read(side, r, "cpu"))
targets = {"local": 5, "redis": 20, "redis_base": 20}
print(f"CPU per request with limits off (median of {rounds}): Plaza "
      f"{statistics.median(cpu('off', r) for r in range(1, rounds + 1)):.2f} us")
# How sure a run's median is: a bootstrap over the rounds (fixed seed, so
# a run's figures repeat), the 5th to 95th percentile of the medians of
# resampled rounds. A target outside that interval is met or missed by
# this run; one inside it is not settled by it.
def interval(values):
    draw = random.Random(14)
    medians = sorted(statistics.median(draw.choices(values, k=len(values))) for _ in range(2000))
    return medians[100], medians[1899]
for side in sides[1:]:
    kept = ratios(side, throughput)
    used = ratios(side, cpu)
    low, high = interval(kept)
    print(f"GET /api/posts (cached), limiter {side}: {statistics.median(kept):.3f} of the "
          f"throughput with limits off in the same round (median of {rounds}, range "
          f"{min(kept):.3f}-{max(kept):.3f}), {(1 - statistics.median(kept)) * 100:.1f}% cost "
          f"(90% interval {(1 - high) * 100:.1f} to {(1 - low) * 100:.1f}%; target < {targets[side]}%); "
          f"CPU per request (Plaza + Redis) {(statistics.median(used) - 1) * 100:+.1f}%")
PY
for name in $SIDES; do pid_var="${name}_PID"; kill "${!pid_var}"; done
[ "${SKIP_MEMORY:-0}" = 1 ] && exit 0

echo
echo "memory: 1,000,000 distinct client addresses, quota 1/90s, in process"
start memory PLAZA_RATE_LIMITS_ENABLED=true PLAZA_RATE_LIMIT_ANONYMOUS=1/90s RUST_LOG=warn,plaza_server::services::jobs=debug
before=$(rss_mb "$memory_PID")
fill_start=$SECONDS
# Two threads of 500,000 addresses each; the run ends once both are through.
out=$(CAP=500000 wrk -t2 -c"$CONNECTIONS" -d75s -s "$ADDRESSES" "http://127.0.0.1:$memory_PORT/api/posts")
sent=$(echo "$out" | awk '/requests in/ {print $1}')
filled=$(rss_mb "$memory_PID")
echo "requests sent: $sent in $((SECONDS - fill_start)) s (distinct addresses: min(sent, 1,000,000))"
echo "resident memory: ${before} MB before, ${filled} MB after the fill"
# Entries expire 90 s after their request; the sweep runs every 60 s.
logged=$(wc -l < "$WORK/memory.log")
for _ in $(seq 1 36); do
  sleep 5
  tail -n +"$((logged + 1))" "$WORK/memory.log" | grep -Eq '[^0-9]0 clients tracked' && break
done
echo "resident memory after the windows expired and the sweep ran: $(rss_mb "$memory_PID") MB"
grep -o '[0-9]* clients tracked' "$WORK/memory.log" | tail -3 | sed 's/^/sweep job: /'
