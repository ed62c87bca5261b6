#!/usr/bin/env python3
"""Memory per held answer long poll of a running Herald (issue 39; docs/performance.md, "Answer long polls").

Registers one device, makes it an API token, sends N / 100 answerable notifications (an action without a url), then
opens N connections, each holding `GET /notifications/answers/{id}?wait=25` on one of them (100 per notification), and
reads Herald's RSS and thread count before and while all N are held: (while - before) / N is the figure. A warm-up
round of 500 polls first, so that what every connection needs once is there before the baseline. Then the device
answers every notification and the script checks that every held poll was answered `answered` (no poll left behind).

    HERALD_DATABASE_URL=memory: HERALD_RATE_LIMIT_DAILY=100000 HERALD_MAX_CONNECTIONS=12000 \
      HERALD_MAX_CONNECTIONS_PER_ADDRESS=0 herald serve &   # N polls from one address, plus the answers
    python3 scripts/answer-poll-memory.py --url http://127.0.0.1:8080 --pid $(pgrep -f 'herald serve') --polls 10000

Standard library only; needs an open-file limit above N (ulimit -n) for this script and for Herald.
"""

import argparse
import asyncio
import base64
import json
import os
import time
import urllib.request


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def threads(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def call(url, path, body, headers):
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json", **headers})
    with urllib.request.urlopen(request, timeout=30) as response:
        data = response.read()
        return json.loads(data) if data else {}


async def hold(host, port, path, token, results):
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    results["sent"] += 1
    answer = await reader.read()
    writer.close()
    text = answer.decode(errors="replace")
    results["answered" if '"status":"answered"' in text.replace(" ", "") else "other"] += 1


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--polls", type=int, default=10_000)
    arguments = parser.parse_args()
    url = arguments.url.rstrip("/")
    host, port = url.removeprefix("http://").split(":")
    device = call(url, "/api/push/register", {"token": "ab" * 32, "environment": "production"}, {})
    basic = {"Authorization": "Basic " + base64.b64encode(f"{device['user_id']}:{device['device_secret']}".encode()).decode()}
    token = call(url, "/api/push/tokens", {"name": "polls"}, basic)["token"]
    body = {"title": "Leak", "body": "Basement", "actions": [{"id": "ack", "title": "On my way"}]}

    def notifications(count):
        return [call(url, "/notifications", body, {"Authorization": f"Bearer {token}"})["id"] for _ in range(count)]

    async def round_of(count):
        ids = notifications(max(1, count // 100))
        results = {"sent": 0, "answered": 0, "other": 0}
        tasks = []
        for index in range(count):
            path = f"/notifications/answers/{ids[index % len(ids)]}?wait=25"
            tasks.append(asyncio.create_task(hold(host, int(port), path, token, results)))
            if index % 200 == 199:
                await asyncio.sleep(0)  # let the connections go out in batches
        while results["sent"] < count:
            await asyncio.sleep(0.05)
        await asyncio.sleep(2)  # every request read and parked
        held_rss, held_threads = rss_kib(arguments.pid), threads(arguments.pid)
        started = time.monotonic()
        for notification_id in ids:
            call(url, f"/api/push/notifications/{notification_id}/answer", {"action_id": "ack"}, basic)
        await asyncio.gather(*tasks)
        return held_rss, held_threads, results, time.monotonic() - started

    await round_of(500)
    await asyncio.sleep(2)
    before_rss, before_threads = rss_kib(arguments.pid), threads(arguments.pid)
    held_rss, held_threads, results, woken = await round_of(arguments.polls)
    after_rss = rss_kib(arguments.pid)
    print(json.dumps({
        "polls": arguments.polls, "rss_before_kib": before_rss, "rss_held_kib": held_rss, "rss_after_kib": after_rss,
        "kib_per_poll": round((held_rss - before_rss) / arguments.polls, 2), "threads_before": before_threads,
        "threads_held": held_threads, "answered": results["answered"], "other": results["other"],
        "seconds_to_answer_all": round(woken, 2),
    }))
    if results["answered"] != arguments.polls:
        raise SystemExit(f"{results['other']} polls were not answered 'answered'")


asyncio.run(main())
