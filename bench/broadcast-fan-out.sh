#!/usr/bin/env bash
# Broadcast fan-out over two instances on loopback: STREAMS open alert
# streams (`GET /api/alerts/stream`), five per user (the default cap), half
# on each instance; both instances serve one fresh PostgreSQL database with
# the default settings (the stream watch reads its change marker every
# `alert_stream_poll_ms`, 1,000 ms). An administrator then sends BROADCASTS
# broadcasts through the first instance, a random 0-1 s apart; for each,
# the time from sending the request to each stream's event is taken.
# Prints p50, p99 and the slowest over all deliveries, the deliveries that
# never came within 10 s, and the resident memory each open stream costs
# (both instances' growth from before the streams opened to after, over the
# number of streams).
# Usage: bench/broadcast-fan-out.sh [streams, default 1000] [broadcasts, default 5]
# Environment: PLAZA_BIN (a built binary instead of building one),
# PLAZA_BENCH_POSTGRES (default postgres://postgres@127.0.0.1:5432).
set -euo pipefail
cd "$(dirname "$0")/.."
STREAMS="${1:-1000}"
BROADCASTS="${2:-5}"
source bench/lib.sh
build_plaza
need curl python3
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

RUST_LOG=warn start_instances
export PLAZA_DATA_DIR="$WORK/data-a"
PASSWORD='fan out bench password'
"$PLAZA" user create --email admin@example.com --password "$PASSWORD" --role admin >/dev/null 2>&1
PORT=$PORT_a
ADMIN=$(session_cookie admin@example.com "$PASSWORD")
TOKEN=$(curl -s -H "Cookie: $ADMIN" -H 'content-type: application/json' \
  -d '{"permissions":["admin:write"]}' "http://127.0.0.1:$PORT_a/api/auth/token" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')

python3 - "$PORT_a" "$PORT_b" "$PID_a" "$PID_b" "$STREAMS" "$BROADCASTS" "$TOKEN" <<'EOF'
import asyncio, json, random, statistics, sys, time
port_a, port_b, pid_a, pid_b, streams, broadcasts = map(int, sys.argv[1:7])
token = sys.argv[7]
users = (streams + 4) // 5
password = "a stream reader password"

def resident_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

async def request(port, method, path, body=None, headers=()):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    data = json.dumps(body).encode() if body is not None else b""
    head = f"{method} {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\nconnection: close\r\ncontent-length: {len(data)}\r\n"
    head += "content-type: application/json\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    writer.write(head.encode() + b"\r\n" + data)
    response = await reader.read()
    writer.close()
    status = int(response.split(b" ", 2)[1])
    return status, response

async def member(n, gate):
    email = f"reader{n}@example.com"
    async with gate:
        # Sign up on one instance and sign in on the other, so both hash.
        status, answer = await request(port_a if n % 2 else port_b, "POST", "/api/users", {"email": email, "password": password, "name": f"Reader {n}"})
        assert status == 201, answer[:300]
        status, answer = await request(port_b if n % 2 else port_a, "POST", "/api/auth/signin", {"email": email, "password": password})
        assert status == 200, answer[:300]
    for line in answer.split(b"\r\n"):
        if line.lower().startswith(b"set-cookie: plaza_session="):
            return line.split(b": ", 1)[1].split(b";")[0].decode()
    raise SystemExit(f"no session cookie for {email}")

class Stream:
    def __init__(self, port, cookie):
        self.port, self.cookie, self.buffer, self.arrived = port, cookie, b"", {}

    async def open(self):
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writer.write(f"GET /api/alerts/stream HTTP/1.1\r\nhost: 127.0.0.1\r\ncookie: {self.cookie}\r\naccept: text/event-stream\r\n\r\n".encode())
        head = await self.reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head[:200]

    async def read(self, titles):
        while True:
            chunk = await self.reader.read(65536)
            if not chunk:
                return
            self.buffer += chunk
            for title in titles:
                if title not in self.arrived and title.encode() in self.buffer:
                    self.arrived[title] = time.monotonic()
            self.buffer = self.buffer[-4096:]

async def main():
    started = time.monotonic()
    gate = asyncio.Semaphore(8)
    cookies = await asyncio.gather(*(member(n, gate) for n in range(users)))
    print(f"{users} users signed up and in, in {time.monotonic() - started:.1f} s")
    before = resident_kib(pid_a) + resident_kib(pid_b)
    opened = []
    for n in range(streams):
        stream = Stream(port_a if n % 2 == 0 else port_b, cookies[n // 5])
        await stream.open()
        opened.append(stream)
    await asyncio.sleep(3)
    after = resident_kib(pid_a) + resident_kib(pid_b)
    print(f"{streams} streams open ({streams // 2 + streams % 2} on the first instance); resident memory of both "
          f"{before / 1024:.1f} MiB before, {after / 1024:.1f} MiB after: {(after - before) / streams:.1f} KiB per stream")
    titles = [f"fan-out-{n}-{random.randrange(10**9)}" for n in range(broadcasts)]
    readers = [asyncio.create_task(stream.read(titles)) for stream in opened]
    sent = {}
    for title in titles:
        await asyncio.sleep(random.random())
        sent[title] = time.monotonic()
        status, answer = await request(port_a, "POST", "/api/v1/admin/notifications/broadcast",
                                       {"title": title, "message": "fan-out benchmark"}, [("authorization", f"Bearer {token}")])
        assert status in (200, 201), answer[:300]
    deadline = max(sent.values()) + 10
    while time.monotonic() < deadline and any(len(stream.arrived) < len(titles) for stream in opened):
        await asyncio.sleep(0.05)
    latencies = sorted((stream.arrived[title] - sent[title]) * 1000 for stream in opened for title in titles if title in stream.arrived)
    missing = streams * len(titles) - len(latencies)
    quantile = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]
    print(f"{len(titles)} broadcasts to {streams} streams: {len(latencies)} deliveries, {missing} missing after 10 s; "
          f"p50 {quantile(0.5):.0f} ms, p99 {quantile(0.99):.0f} ms, slowest {latencies[-1]:.0f} ms")
    for task in readers:
        task.cancel()
    for stream in opened:
        stream.writer.close()

asyncio.run(main())
EOF
