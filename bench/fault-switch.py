"""A TCP switch for bench/faults.sh: forwards connections on 127.0.0.1:PORT
to TARGET (host:port) and obeys lines written to the named pipe CONTROL:

  on    forward (and listen again after `off`)
  off   close every connection and stop listening: connections are refused
  hang  keep every connection open and move no byte either way; new
        connections are accepted and left waiting

Usage: python3 fault-switch.py PORT TARGET CONTROL
"""

import asyncio
import os
import sys
import threading

PORT = int(sys.argv[1])
TARGET_HOST, TARGET_PORT = sys.argv[2].rsplit(":", 1)
CONTROL = sys.argv[3]

state = {"mode": "on", "server": None}
connections = set()
flowing = asyncio.Event()


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            await flowing.wait()
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def handle(client_reader, client_writer):
    connections.add(client_writer)
    try:
        await flowing.wait()
        upstream_reader, upstream_writer = await asyncio.open_connection(TARGET_HOST, int(TARGET_PORT))
    except (ConnectionError, OSError):
        client_writer.close()
        connections.discard(client_writer)
        return
    connections.add(upstream_writer)
    try:
        await asyncio.gather(pipe(client_reader, upstream_writer), pipe(upstream_reader, client_writer))
    finally:
        connections.discard(client_writer)
        connections.discard(upstream_writer)


async def listen():
    state["server"] = await asyncio.start_server(handle, "127.0.0.1", PORT, reuse_address=True)


async def apply(mode):
    if mode == state["mode"]:
        return
    if mode == "off":
        flowing.clear()
        if state["server"] is not None:
            state["server"].close()
            state["server"] = None
        for writer in list(connections):
            writer.transport.abort()
        connections.clear()
    elif mode == "hang":
        flowing.clear()
        if state["server"] is None:
            await listen()
    elif mode == "on":
        if state["server"] is None:
            await listen()
        flowing.set()
    state["mode"] = mode
    print(f"switch {PORT}: {mode}", file=sys.stderr, flush=True)


def read_control(loop):
    while True:
        with open(CONTROL) as control:
            for line in control:
                mode = line.strip()
                if mode in ("on", "off", "hang"):
                    asyncio.run_coroutine_threadsafe(apply(mode), loop)


async def main():
    flowing.set()
    await listen()
    os.mkfifo(CONTROL)
    threading.Thread(target=read_control, args=(asyncio.get_running_loop(),), daemon=True).start()
    await asyncio.Event().wait()


asyncio.run(main())
