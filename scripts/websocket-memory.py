#!/usr/bin/env python3
"""Memory per idle subscribed WebSocket of a running Herald (docs/performance.md, "WebSocket memory").

Registers N WebSocket devices, opens and subscribes 500 sockets and closes them again (so that what every socket
needs once, such as the allocator's arenas, is there before the baseline), reads Herald's RSS, then opens N sockets,
subscribes each to its own device, waits and reads RSS again: (after - before) / N is the figure. With --rounds K
it then closes them and opens and closes them K - 1 times more, reading RSS after each close: flat when nothing leaks.

    herald serve &   # HERALD_DATABASE_URL=memory: is fine
    python3 scripts/websocket-memory.py --url http://127.0.0.1:8080 --pid $(pgrep -f 'herald serve') --sockets 5000

Needs `pip install websockets` and an open-file limit above N (ulimit -n) for this script and for Herald.
"""

import argparse
import asyncio
import json
import time
import urllib.request

import websockets


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def register(url, count):
    devices = []
    for _ in range(count):
        request = urllib.request.Request(
            f"{url}/api/push/register", data=b'{"platform": "websocket"}', headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request) as response:
            body = json.load(response)
        devices.append((body["user_id"], body["device_secret"]))
    return devices


async def subscribe(ws_url, device):
    socket = await websockets.connect(ws_url, max_queue=None, ping_interval=None)
    user_id, secret = device
    await socket.send(json.dumps({"id": 1, "type": "push_notification_channel", "user_id": user_id, "device_secret": secret}))
    answer = json.loads(await socket.recv())
    if not answer.get("success"):
        raise RuntimeError(f"subscription refused: {answer}")
    return socket


async def open_all(ws_url, devices, at_once=64):
    sockets = []
    for start in range(0, len(devices), at_once):
        sockets += await asyncio.gather(*(subscribe(ws_url, d) for d in devices[start : start + at_once]))
    return sockets


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--sockets", type=int, default=5000)
    parser.add_argument("--settle", type=float, default=8.0, help="seconds between the last subscription and reading RSS")
    parser.add_argument("--rounds", type=int, default=1, help="open and close the sockets this many times (a leak grows RSS)")
    arguments = parser.parse_args()
    ws_url = arguments.url.replace("http", "ws", 1) + "/api/push/websocket"

    devices = register(arguments.url, arguments.sockets)
    warm_up = await open_all(ws_url, devices[:500])
    await asyncio.gather(*(s.close() for s in warm_up))
    await asyncio.sleep(arguments.settle)
    before = rss_kib(arguments.pid)

    started = time.monotonic()
    sockets = await open_all(ws_url, devices)
    opened = time.monotonic() - started
    await asyncio.sleep(arguments.settle)
    after = rss_kib(arguments.pid)
    await asyncio.gather(*(s.close() for s in sockets))
    await asyncio.sleep(arguments.settle)
    after_rounds = [rss_kib(arguments.pid)]
    for _ in range(arguments.rounds - 1):
        sockets = await open_all(ws_url, devices)
        await asyncio.gather(*(s.close() for s in sockets))
        await asyncio.sleep(arguments.settle)
        after_rounds.append(rss_kib(arguments.pid))
    print(
        json.dumps(
            {
                "sockets": len(sockets),
                "rss_before_kib": before,
                "rss_after_kib": after,
                "kib_per_socket": round((after - before) / len(sockets), 2),
                "kb_per_socket": round((after - before) * 1.024 / len(sockets), 2),
                "seconds_to_open": round(opened, 1),
                "rss_after_each_round_closed_kib": after_rounds,
            }
        )
    )


asyncio.run(main())
