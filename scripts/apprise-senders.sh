#!/usr/bin/env bash
# Apprise (PyPI `apprise`), a client Herald did not write, against a throwaway `herald serve` (docs/senders.md):
# its ntfy://, gotify:// and bark:// URLs, the contrib/apprise/herald.py plugin (herald://) and curl lines of ntfy's
# documentation, then aiontfy (scripts/aiontfy-publish.py), each notification checked in what Herald stored for the
# phone (the owner's GET /api/push/notifications). Builds nothing: it runs the herald binary that is there (default .build/debug/herald, or
# $HERALD), $PYTHON (a Python with apprise and aiontfy) and curl, and fails, never skips, when one is missing.
#
#   python3 -m venv /tmp/herald-apprise && /tmp/herald-apprise/bin/pip install apprise aiohttp mashumaro orjson
#   /tmp/herald-apprise/bin/pip install --no-deps --ignore-requires-python aiontfy
#   PYTHON=/tmp/herald-apprise/bin/python scripts/apprise-senders.sh
set -euo pipefail
cd "$(dirname "$0")/.."

herald=${HERALD:-.build/debug/herald}
python=${PYTHON:-python3}
fail() { echo "apprise-senders.sh: $*" >&2; exit 1; }
[ -x "$herald" ] || fail "no herald binary at $herald; build it first (swift build)."
"$python" -c 'import apprise' 2>/dev/null || fail "$python has no apprise; pip install apprise."
command -v curl >/dev/null || fail "curl is missing (the ntfy documentation's curl lines need it)."

source scripts/lib/throwaway-herald.sh
"$python" scripts/apprise-senders.py "$base" || { cat "$work/server.log" >&2; fail "failed."; }
# aiontfy (PyPI), in the same virtual environment: publishing and reading ntfy's answers (scripts/aiontfy-publish.py).
"$python" -c 'import aiontfy' 2>/dev/null || fail "$python has no aiontfy; pip install --ignore-requires-python aiontfy."
"$python" scripts/aiontfy-publish.py "$base" || { cat "$work/server.log" >&2; fail "aiontfy failed."; }
