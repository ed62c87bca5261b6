#!/usr/bin/env bash
# The release binary as the Dockerfile ships it (static Swift standard library), alone in an empty folder: it must
# start there, answer /readyz and /openapi.yaml, and stop on SIGTERM. Builds nothing (default binary:
# .build/release/herald, or $HERALD); fails, never skips.
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${HERALD:-.build/release/herald}
[ -x "$binary" ] || { echo "release-smoke.sh: no binary at $binary" >&2; exit 1; }

work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
cp "$binary" "$work/herald"
echo "release binary: $("$work/herald" --version), links: $(ldd "$work/herald" | awk '{print $1}' | tr '\n' ' ')"

(cd "$work" && exec env -i PATH="$PATH" HERALD_HOST=127.0.0.1 HERALD_PORT=0 ./herald serve > "$work/log" 2>&1) &
pid=$!
port=""
for _ in $(seq 1 100); do
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/log" | head -n 1)
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
[ -n "$port" ] || { cat "$work/log" >&2; echo "release-smoke.sh: herald did not start" >&2; exit 1; }

python3 - "$port" <<'PYTHON'
import sys, urllib.request
port = sys.argv[1]
for path, expected in [("/readyz", b'"ready"'), ("/openapi.yaml", b"openapi: 3.1.0")]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
        body = answer.read()
        assert answer.status == 200 and expected in body, (path, answer.status, body[:200])
print("release smoke: /readyz and /openapi.yaml answered")
PYTHON

kill -TERM "$pid"
for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then echo "release-smoke.sh: still running 15 s after SIGTERM" >&2; exit 1; fi
wait "$pid" || { cat "$work/log" >&2; echo "release-smoke.sh: herald exited with an error" >&2; exit 1; }
[ -f "$work/herald.sqlite" ] || { echo "release-smoke.sh: no herald.sqlite in the folder" >&2; exit 1; }
pid=""
echo "release smoke: passed"
