# Shared by the benchmark scripts (source it after `cd` to the repository
# root): the tools check, the binary to measure (`build_plaza`), a scratch
# folder cleaned up on exit with the servers it started, free ports,
# readiness and a session cookie.

# need TOOL... : exits naming the first tool that is missing.
need() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "$tool is needed" >&2; exit 1; }
  done
}

# build_plaza: sets PLAZA to $PLAZA_BIN, or to a release build made now.
build_plaza() {
  if [ -n "${PLAZA_BIN:-}" ]; then
    PLAZA="$PLAZA_BIN"
  else
    cargo build --release -q -p plaza-server
    PLAZA="${CARGO_TARGET_DIR:-target}/release/plaza"
  fi
}

# WORK: a scratch folder; SERVER_PID and PIDS: the processes to stop on
# exit; a script adds its own clean-up with `on_exit COMMAND`.
WORK=$(mktemp -d)
SERVER_PID=""
PIDS=()
EXTRA_CLEANUP=""
on_exit() { EXTRA_CLEANUP="$1"; }
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -n "$EXTRA_CLEANUP" ] && eval "$EXTRA_CLEANUP"
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 1 600); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done; echo "no answer from $1" >&2; exit 1; }

# start_server: serves on a free loopback port (PORT) with the current
# environment, logging to $WORK/server.log, and waits until it answers.
start_server() {
  PORT=$(free_port)
  PLAZA_BIND="127.0.0.1:$PORT" "$PLAZA" serve >"$WORK/server.log" 2>&1 &
  SERVER_PID=$!
  wait_http "http://127.0.0.1:$PORT/api/health"
}

# stop_server: stops the server start_server started.
stop_server() {
  kill "$SERVER_PID" && wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}

# session_cookie EMAIL PASSWORD: the `plaza_session=…` pair of a sign-in.
session_cookie() {
  curl -s -D - -o /dev/null -H 'content-type: application/json' \
    -d "{\"email\":\"$1\",\"password\":\"$2\"}" \
    "http://127.0.0.1:$PORT/api/auth/signin" |
    awk -F'[ ;]' 'tolower($1)=="set-cookie:" && $2 ~ /^plaza_session=/ {print $2}'
}

# Two instances on one PostgreSQL database, for the scale-out benchmarks.
# start_instances: a fresh database (dropped on exit) and instances `a` and
# `b` on it with the same secrets, rate limits off, logging at INFO into
# $WORK/a.log and $WORK/b.log; sets PORT_a, PORT_b, PID_a and PID_b and
# waits until both answer. Extra settings come from the environment.
start_instances() {
  need psql
  local server="${PLAZA_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}"
  local database="plaza_bench_instances_$$"
  psql "$server/postgres" -qc "CREATE DATABASE $database" >/dev/null
  on_exit "psql '$server/postgres' -qc 'DROP DATABASE IF EXISTS $database WITH (FORCE)' >/dev/null 2>&1 || true"
  export PLAZA_DATABASE_URL="$server/$database" PLAZA_RATE_LIMITS_ENABLED=false
  export PLAZA_JWT_SECRET="scale-out-benchmark-jwt-secret-0123456789"
  export PLAZA_TOTP_KEY="scale-out-benchmark-totp-key-0123456789ab"
  export PLAZA_ANALYTICS_SALT="scale-out-benchmark-analytics-salt-012345"
  export PLAZA_TRUSTED_PROXIES='["127.0.0.1"]' RUST_LOG="${RUST_LOG:-info}"
  "$PLAZA" migrate >/dev/null 2>&1
  local name port
  for name in a b; do
    port=$(free_port)
    mkdir -p "$WORK/data-$name"
    PLAZA_DATA_DIR="$WORK/data-$name" PLAZA_BIND="127.0.0.1:$port" "$PLAZA" serve 2>"$WORK/$name.log" &
    PIDS+=($!)
    printf -v "PID_$name" '%s' "$!"
    printf -v "PORT_$name" '%s' "$port"
  done
  wait_http "http://127.0.0.1:$PORT_a/api/health"
  wait_http "http://127.0.0.1:$PORT_b/api/health"
}

# resident_mib PID: the process's resident memory in MiB.
resident_mib() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }

# cpu_ticks: CPU time (user + system, in clock ticks) used so far by all
# processes named plaza, nginx, wrk and postgres, as four numbers.
cpu_ticks() {
  python3 - <<'PY'
import glob
totals = {"plaza": 0, "nginx": 0, "wrk": 0, "postgres": 0}
for path in glob.glob("/proc/[0-9]*/stat"):
    try:
        text = open(path).read()
    except OSError:
        continue
    name = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    for group in totals:
        if name.startswith(group):
            totals[group] += int(fields[11]) + int(fields[12])
print(*totals.values())
PY
}
