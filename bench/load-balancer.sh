#!/usr/bin/env bash
# Two instances behind nginx against one instance behind the same nginx,
# in one run, on loopback. Both instances serve one fresh PostgreSQL
# database with the same secrets (rate limits off, access log at INFO into
# a file); nginx runs the configuration `docs/operations.md` shows under
# "Behind nginx", read from that page, with two server blocks: one whose
# upstream holds both instances and one whose upstream holds the first
# only. Each round runs wrk through nginx on every route, one setup after
# the other, rounds interleaved:
#   GET /api/posts                  (20 published posts, rendered)
#   GET /api/auth/session signed in (a session made on the first instance)
# Prints each run, then per route and setup the median requests/s and the
# median p99 latency, and the ratio two/one with its range over the rounds.
# It also prints where the CPU went during the middle of one run of each
# setup (plaza, nginx, wrk, postgres), which says what limits scaling on
# this machine.
# Usage: bench/load-balancer.sh [seconds per run, default 10]
#                               [connections, default 64] [rounds, default 3]
# Environment: PLAZA_BIN (a built binary instead of building one),
# PLAZA_BENCH_POSTGRES (default postgres://postgres@127.0.0.1:5432).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${1:-10}"
CONNECTIONS="${2:-64}"
ROUNDS="${3:-3}"
source bench/lib.sh
build_plaza
need wrk curl python3 nginx

start_instances
export PLAZA_DATA_DIR="$WORK/data-a"
PASSWORD='load balancer bench password'
"$PLAZA" user create --email writer@example.com --password "$PASSWORD" >/dev/null 2>&1
PORT=$PORT_a
COOKIE=$(session_cookie writer@example.com "$PASSWORD")
[ -n "$COOKIE" ] || { echo "the sign-in failed" >&2; exit 1; }
python3 - "$PORT_a" "$COOKIE" <<'EOF'
import http.client, json, sys
port, cookie = int(sys.argv[1]), sys.argv[2]
connection = http.client.HTTPConnection("127.0.0.1", port)
for n in range(20):
    content = f"# Post {n}\n\nSome *emphasis*, a [link](https://example.org/{n}) and a list:\n\n- one\n- two\n\n" + "Words. " * 80
    connection.request("POST", "/api/posts", json.dumps({"title": f"Post {n}", "content": content, "published": True}),
                       {"cookie": cookie, "content-type": "application/json"})
    answer = connection.getresponse()
    body = answer.read()
    if answer.status not in (200, 201):
        sys.exit(f"creating a post answered {answer.status}: {body[:200]!r}")
EOF

LB_BOTH=$(free_port)
LB_ONE=$(free_port)
python3 - "$WORK" "$PORT_a" "$PORT_b" "$LB_BOTH" "$LB_ONE" >"$WORK/nginx.conf" <<'EOF'
import re, sys
work, a, b, both_port, one_port = sys.argv[1:]
block = re.search(r"```nginx\n(.*?)```", open("docs/operations.md").read(), re.S).group(1)
def replace(text, old, new):
    assert old in text, f"docs/operations.md's nginx block lacks {old!r}"
    return text.replace(old, new)
both = replace(replace(replace(block, "127.0.0.1:3001", f"127.0.0.1:{a}"), "127.0.0.1:3002", f"127.0.0.1:{b}"),
               "listen 80;", f"listen 127.0.0.1:{both_port};")
one = replace(replace(block, "    server 127.0.0.1:3002;\n", ""), "127.0.0.1:3001", f"127.0.0.1:{a}")
one = replace(replace(replace(one, "upstream plaza {", "upstream plaza_one {"), "http://plaza;", "http://plaza_one;"),
              "listen 80;", f"listen 127.0.0.1:{one_port};")
print(f"""worker_processes auto;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log;
daemon off;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {work}/nginx-body;
    proxy_temp_path {work}/nginx-proxy;
{both}
{one}
}}""")
EOF
nginx -p "$WORK" -c "$WORK/nginx.conf" &
PIDS+=($!)
wait_http "http://127.0.0.1:$LB_BOTH/api/health"
wait_http "http://127.0.0.1:$LB_ONE/api/health"

path_of() { case $1 in posts) echo /api/posts ;; session) echo /api/auth/session ;; esac; }
port_of() { case $1 in two) echo "$LB_BOTH" ;; one) echo "$LB_ONE" ;; esac; }

# measure ROUTE SETUP [cpu]: one wrk run; appends "req/s p99_ms" to
# $WORK/ROUTE.SETUP; with `cpu`, also prints where the CPU went.
measure() {
  local header=() output before after
  [ "$1" = session ] && header=(-H "Cookie: $COOKIE")
  wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency "${header[@]}" \
    "http://127.0.0.1:$(port_of "$2")$(path_of "$1")" >"$WORK/wrk.out" &
  local wrk_pid=$!
  if [ "${3:-}" = cpu ]; then
    sleep 2
    before=$(cpu_ticks)
    sleep $((DURATION - 4))
    after=$(cpu_ticks)
  fi
  wait "$wrk_pid"
  output=$(cat "$WORK/wrk.out")
  grep -q "Non-2xx" <<<"$output" && { echo "$1 through $2 answered errors:" >&2; echo "$output" >&2; exit 1; }
  python3 - "$output" >>"$WORK/$1.$2" <<'EOF'
import re, sys
text = sys.argv[1]
rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
value, unit = re.search(r"99%\s+([\d.]+)(us|ms|s)", text).groups()
print(rate, float(value) * {"us": 0.001, "ms": 1, "s": 1000}[unit])
EOF
  printf '  %-7s %-3s %10.0f req/s  p99 %7.2f ms\n' "$1" "$2" $(tail -1 "$WORK/$1.$2")
  if [ "${3:-}" = cpu ]; then
    python3 - "$before" "$after" "$((DURATION - 4))" <<'EOF'
import os, sys
before, after, seconds = sys.argv[1].split(), sys.argv[2].split(), int(sys.argv[3])
ticks = os.sysconf("SC_CLK_TCK") * seconds
shares = [(int(b) - int(a)) / ticks for a, b in zip(before, after)]
print("          CPU (cores busy): " + ", ".join(f"{name} {share:.2f}" for name, share in zip(["plaza", "nginx", "wrk", "postgres"], shares))
      + f"; of {os.cpu_count()} cores")
EOF
  fi
}

echo "load balancer benchmark: nginx $(nginx -v 2>&1 | sed 's/.*nginx\///'), wrk ${DURATION}s, $CONNECTIONS connections, 2 threads, $ROUNDS rounds, loopback; $(nproc) cores"
for round in $(seq 1 "$ROUNDS"); do
  echo " round $round"
  for route in posts session; do
    for setup in one two; do
      if [ "$round" = 1 ] && [ "$route" = posts ]; then measure "$route" "$setup" cpu; else measure "$route" "$setup"; fi
    done
  done
done

python3 - "$WORK" <<'EOF'
import statistics, sys
work = sys.argv[1]
def runs(route, setup):
    return [tuple(map(float, line.split())) for line in open(f"{work}/{route}.{setup}")]
print("medians (req/s, p99), two instances against one, ratio range over the rounds:")
for route in ("posts", "session"):
    one, two = runs(route, "one"), runs(route, "two")
    ratios = [t[0] / o[0] for o, t in zip(one, two)]
    print(f"  {route:<7} one {statistics.median(r for r, _ in one):8.0f} req/s p99 {statistics.median(p for _, p in one):6.2f} ms;"
          f" two {statistics.median(r for r, _ in two):8.0f} req/s p99 {statistics.median(p for _, p in two):6.2f} ms;"
          f" ratio {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
EOF
