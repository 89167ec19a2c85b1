"""The load of bench/faults.sh: writers posting, readers reading the post
list and one member uploading a small PNG, through BASE, until WORK/stop
exists. Each answer is appended to WORK/answers.jsonl as {kind, status
(0 when no answer came), phase (WORK/phase at the time), title or url}.

Usage: python3 fault-load.py BASE PASSWORD WRITERS READERS WORK
"""

import http.client
import json
import os
import random
import struct
import sys
import threading
import time
import urllib.parse
import zlib

BASE, PASSWORD, WRITERS, READERS, WORK = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
ADDRESS = urllib.parse.urlparse(BASE)
lock = threading.Lock()
answers = open(f"{WORK}/answers.jsonl", "a")


def phase():
    with open(f"{WORK}/phase") as text:
        return text.read().strip()


def record(kind, status, **extra):
    line = json.dumps({"kind": kind, "status": status, "phase": phase(), **extra})
    with lock:
        answers.write(line + "\n")
        answers.flush()


def request(method, path, body=None, headers=None):
    """(status, body bytes, headers); status 0 when the exchange failed."""
    connection = http.client.HTTPConnection(ADDRESS.hostname, ADDRESS.port, timeout=30)
    try:
        connection.request(method, path, body, headers or {})
        response = connection.getresponse()
        return response.status, response.read(), response.getheaders()
    except (OSError, http.client.HTTPException):
        return 0, b"", []
    finally:
        connection.close()


def sign_in(email):
    status, body, headers = request("POST", "/api/auth/signin", json.dumps({"email": email, "password": PASSWORD}),
                                    {"content-type": "application/json"})
    for name, value in headers:
        if name.lower() == "set-cookie" and value.startswith("plaza_session="):
            return value.split(";")[0]
    sys.exit(f"{email} could not sign in: {status} {body[:200]!r}")


def png():
    width = height = 64
    noise = random.Random(7)
    rows = b"".join(b"\x00" + bytes(noise.randrange(256) for _ in range(width * 3)) for _ in range(height))
    chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def stopped():
    return os.path.exists(f"{WORK}/stop")


def writer(number, cookie):
    sequence = 0
    while not stopped():
        sequence += 1
        title = f"fault-{number}-{sequence}"
        body = json.dumps({"title": title, "content": "Written during the fault review.", "published": True})
        status, answer, _ = request("POST", "/api/posts", body, {"content-type": "application/json", "cookie": cookie})
        record("write", status, title=title, **({} if status < 300 else {"error": answer[:160].decode("utf-8", "replace")}))


def reader():
    while not stopped():
        status, _, _ = request("GET", "/api/posts?limit=20", None, {"cache-control": "no-cache"})
        record("read", status)


def uploader(cookie):
    image = png()
    boundary = "fault-review-boundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f.png\"\r\n"
            f"Content-Type: image/png\r\n\r\n").encode() + image + f"\r\n--{boundary}--\r\n".encode()
    while not stopped():
        status, answer, _ = request("POST", "/api/upload", body,
                                    {"content-type": f"multipart/form-data; boundary={boundary}", "cookie": cookie})
        if 200 <= status < 300:
            record("upload", status, url=json.loads(answer).get("url"))
        else:
            record("upload", status, error=answer[:160].decode("utf-8", "replace"))
        time.sleep(0.2)


cookies = [sign_in(f"writer{n}@example.com") for n in range(1, WRITERS + 1)]
upload_cookie = sign_in("writeruploader@example.com")
threads = [threading.Thread(target=writer, args=(n, cookie)) for n, cookie in enumerate(cookies, 1)]
threads += [threading.Thread(target=reader) for _ in range(READERS)]
threads.append(threading.Thread(target=uploader, args=(upload_cookie,)))
for thread in threads:
    thread.start()
open(f"{WORK}/load-ready", "w").close()
for thread in threads:
    thread.join()
