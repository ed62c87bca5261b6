#!/usr/bin/env bash
# Holds a live `herald serve` to its OpenAPI document: schemathesis generates requests for every operation from
# /openapi.yaml, once without credentials and once with valid ones, and checks every answer against the document.
# Builds nothing: it runs the herald binary that is there (default .build/debug/herald, or $HERALD) with a throwaway
# in-memory store on a free loopback port, and fails (never skips) when the binary, schemathesis or the server is
# missing or broken.
#
#   swift build && scripts/schemathesis.sh                        # schemathesis from $PATH
#   SCHEMATHESIS=/tmp/st/bin/schemathesis MAX_EXAMPLES=50 scripts/schemathesis.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

herald=${HERALD:-.build/debug/herald}
schemathesis=${SCHEMATHESIS:-schemathesis}
python=${PYTHON:-python3}
max_examples=${MAX_EXAMPLES:-200}

fail() { echo "schemathesis.sh: $*" >&2; exit 1; }
[ -x "$herald" ] || fail "no herald binary at $herald; build it first (swift build)."
"$schemathesis" --version >/dev/null 2>&1 || fail "schemathesis does not run ($schemathesis); pip install 'schemathesis>=4,<5'."
"$python" -c 'import urllib.request' 2>/dev/null || fail "$python does not run."
case $schemathesis in */*) schemathesis=$(realpath "$schemathesis") ;; esac

# The server under test (scripts/lib/throwaway-herald.sh: $work, $base, stop_server).
source scripts/lib/throwaway-herald.sh

# Waits for /readyz, then registers a device, creates an API token and sends one notification: the valid credentials
# (and a notification id) of the runs with credentials.
"$python" - "$base" >"$work/credentials" <<'PYTHON' || { cat "$work/server.log" >&2; fail "could not create credentials."; }
import base64, json, sys, time, urllib.request
base = sys.argv[1]
for _ in range(100):
    try:
        if urllib.request.urlopen(base + "/readyz", timeout=2).status == 200:
            break
    except OSError:
        pass
    time.sleep(0.1)
else:
    sys.exit("/readyz never answered 200")
def post(path, body, headers={}):
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **headers})
    return json.load(urllib.request.urlopen(request, timeout=10))
device = post("/api/push/register", {"platform": "websocket"})
basic = base64.b64encode(f"{device['user_id']}:{device['device_secret']}".encode()).decode()
token = post("/api/push/tokens", {"name": "schemathesis"}, {"Authorization": "Basic " + basic})
sent = post("/api/push/notify", {"user_id": device["user_id"], "title": "schemathesis", "body": "a notification to look up"})
topic = post("/api/push/topics", {"name": "schemathesis"}, {"Authorization": "Basic " + basic})
print(f"export HERALD_USER_ID={device['user_id']} HERALD_DEVICE_SECRET={device['device_secret']}"
      f" HERALD_API_TOKEN={token['token']} HERALD_NOTIFICATION_ID={sent['id']} HERALD_TOPIC_ID={topic['topic_id']}")
PYTHON
# shellcheck disable=SC1091
source "$work/credentials"

# Credentials per security scheme of the document (owner: Basic; sender: Bearer USER_ID; apiToken: Bearer hrd_…).
cat >"$work/with-credentials.toml" <<'TOML'
[auth.openapi.owner]
username = "${HERALD_USER_ID}"
password = "${HERALD_DEVICE_SECRET}"
[auth.openapi.sender]
bearer = "${HERALD_USER_ID}"
[auth.openapi.apiToken]
bearer = "${HERALD_API_TOKEN}"
TOML
: >"$work/without-credentials.toml"

# Boundary values (scripts/lib/boundaries.py): the document as schemathesis reads it gives every integer without a
# format the 64-bit range, so that the coverage phase tries its edges and one past them; and a fuzz dictionary mixes
# numbers no integer holds, "NaN", "Infinity", -0, a 4,000-digit number, a long combining sequence and "" into every
# parameter and body member. A 5xx or a dead server fails the run.
"$python" scripts/lib/boundaries.py document "$base/openapi.yaml" "$work/openapi.json" || fail "could not read $base/openapi.yaml."
for config in "$work/with-credentials.toml" "$work/without-credentials.toml"; do
  "$python" scripts/lib/boundaries.py config "$work/openapi.json" >>"$config" || fail "could not write the boundary values."
done

# Checks: every one but
# - positive_data_acceptance: a schema-valid request may be refused by a rule the schema cannot say (a USER_ID that
#   is well-formed but not registered is 404; an API token name already taken is 409, …); every such answer is
#   documented, and status_code_conformance holds the server to that;
# - ignored_auth: /api/push/notify and the Home Assistant endpoints take the USER_ID in the body as well as in a
#   header (the seed's contract), so a request without the header is not an "ignored" credential.
checks=(--checks all --exclude-checks positive_data_acceptance,ignored_auth)
# One worker: with several, Python 3.11's ast module can fail in Hypothesis' threads ("AST constructor recursion
# depth mismatch"), an error of the tool, not of the server.
common=(--url "$base" --max-examples "$max_examples" --seed 14 --workers 1 --request-timeout 10 --no-color
  --suppress-health-check all --continue-on-failure --generation-database none)

status=0
run() {
  local name=$1 config=$2 hooks=$3
  shift 3
  echo "== schemathesis, $name"
  # From the scratch folder: schemathesis keeps a cache in its working directory.
  if ! (cd "$work" && PYTHONPATH="$root/scripts" PYTHONDONTWRITEBYTECODE=1 SCHEMATHESIS_HOOKS=$hooks \
    "$schemathesis" --config-file "$config" run "$work/openapi.json" "${common[@]}" "${checks[@]}" "$@"); then
    status=1
  fi
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; fail "herald serve died during the run ($name)."; }
}
# With credentials first: the failed authentications of the run without them lock this address out for a minute
# (AuthFailureLimiter), and a locked-out address is refused even with valid credentials.
# DELETE /api/push/register with valid credentials removes the device the other operations authenticate as: it
# runs on its own, after them. The hooks (scripts/schemathesis_hooks.py) put the device's USER_ID into about half
# the generated bodies.
run "with valid credentials" "$work/with-credentials.toml" schemathesis_hooks --exclude-operation-id unregister
run "with valid credentials, removing the device" "$work/with-credentials.toml" schemathesis_hooks \
  --include-operation-id unregister
run "without credentials" "$work/without-credentials.toml" ""

stop_server
[ "$status" = 0 ] || fail "schemathesis found answers that do not match the document (above)."
echo "schemathesis.sh: every answer matched the document."
