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
