"""What scripts/apprise-senders.py and scripts/aiontfy-publish.py share: a check that prints and counts, and a JSON
call to Herald at the base URL given on the command line."""

import json
import sys
import urllib.request

BASE = sys.argv[1]
failures = []


def check(condition, message):
    print(("ok   " if condition else "FAIL ") + message)
    if not condition:
        failures.append(message)


def call(method, path, body=None, headers=None):
    request = urllib.request.Request(
        BASE + path, data=None if body is None else json.dumps(body).encode(), method=method,
        headers={"Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(request, timeout=15) as answer:
        return json.loads(answer.read() or b"{}")


def finish(what):
    if failures:
        print(f"{len(failures)} {what} check(s) failed", file=sys.stderr)
        sys.exit(1)
    print(f"All {what} checks passed.")
