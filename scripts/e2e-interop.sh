#!/usr/bin/env bash
# pw1 end-to-end interoperability (scripts/e2e-interop.py, docs/e2e.md) against a throwaway `herald serve`. Builds
# nothing: it runs the herald binary that is there (default .build/debug/herald, or $HERALD) and $PYTHON (a Python
# with `cryptography`), and fails, never skips, when either is missing.
#
#   python3 -m venv /tmp/herald-e2e && /tmp/herald-e2e/bin/pip install cryptography
#   PYTHON=/tmp/herald-e2e/bin/python scripts/e2e-interop.sh
set -euo pipefail
cd "$(dirname "$0")/.."

herald=${HERALD:-.build/debug/herald}
python=${PYTHON:-python3}
fail() { echo "e2e-interop.sh: $*" >&2; exit 1; }
[ -x "$herald" ] || fail "no herald binary at $herald; build it first (swift build)."
"$python" -c 'import cryptography' 2>/dev/null || fail "$python has no cryptography; pip install cryptography."

source scripts/lib/throwaway-herald.sh
"$python" scripts/e2e-interop.py "$herald" "$base" || { cat "$work/server.log" >&2; fail "failed."; }
