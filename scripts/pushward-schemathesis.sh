#!/usr/bin/env bash
# Holds a live `herald serve` to PushWard's OpenAPI document (scripts/pushward/openapi.yaml, a copy of PushWard's MIT-licensed document, or
# $PUSHWARD_OPENAPI) for the operations Herald implements of it (docs/activities.md): GET /health, GET /auth/me,
# GET/POST /activities, GET/PATCH/DELETE /activities/{slug}. schemathesis generates requests from PushWard's schemas
# with a valid integration key (a Herald API token with every scope) and checks every answer against them.
# Left out: /widgets and /emails (Herald has neither), and POST /notifications, whose answer is Herald's own
# notification (docs/api-tokens.md), not PushWard's, and is held to Herald's document by scripts/schemathesis.sh.
# POST /activities/{slug}/snooze is Herald's and not in PushWard's document.
# Builds nothing: it runs the herald binary that is there (default .build/debug/herald, or $HERALD) with a throwaway
# in-memory store on a free loopback port, and fails (never skips) when the binary, schemathesis, the document or the
# server is missing or broken.
#
#   swift build && scripts/pushward-schemathesis.sh
#   SCHEMATHESIS=/tmp/st/bin/schemathesis MAX_EXAMPLES=50 scripts/pushward-schemathesis.sh
set -euo pipefail
cd "$(dirname "$0")/.."

herald=${HERALD:-.build/debug/herald}
schemathesis=${SCHEMATHESIS:-schemathesis}
python=${PYTHON:-python3}
max_examples=${MAX_EXAMPLES:-100}
document=${PUSHWARD_OPENAPI:-scripts/pushward/openapi.yaml}

fail() { echo "pushward-schemathesis.sh: $*" >&2; exit 1; }
[ -x "$herald" ] || fail "no herald binary at $herald; build it first (swift build)."
[ -f "$document" ] || fail "no PushWard document at $document (set PUSHWARD_OPENAPI)."
"$schemathesis" --version >/dev/null 2>&1 || fail "schemathesis does not run ($schemathesis); pip install 'schemathesis>=4,<5'."
"$python" -c 'import urllib.request' 2>/dev/null || fail "$python does not run."
case $schemathesis in */*) schemathesis=$(realpath "$schemathesis") ;; esac
document=$(realpath "$document")

# The server under test (scripts/lib/throwaway-herald.sh: $work, $base, stop_server).
source scripts/lib/throwaway-herald.sh

# Waits for /readyz, then registers an APNs device with a push-to-start token (so that PATCH to ongoing starts an
# activity rather than answering 409) and creates an API token with every scope: the integration key of the run.
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
device = post("/api/push/register", {"platform": "apns", "token": "ab" * 32, "environment": "production",
                                     "live_activity_push_to_start_token": "cd" * 40})
basic = base64.b64encode(f"{device['user_id']}:{device['device_secret']}".encode()).decode()
token = post("/api/push/tokens", {"name": "pushward schemathesis",
                                  "scopes": ["activity:update", "activity:manage", "notifications"]},
             {"Authorization": "Basic " + basic})
print(f"export HERALD_API_TOKEN={token['token']}")
PYTHON
# shellcheck disable=SC1091
source "$work/credentials"

# PushWard's document contradicts itself once: UpdateActivityRequest's ended_ttl, stale_ttl and dismissal_ttl say
# "Tri-state: omit to keep, null to clear, number to set" with `type: integer`. Herald follows the description there
# (docs/activity-rules.md, "PushWard's schema"), so the run uses a copy whose three allow null; nothing else changes.
"$python" - "$document" "$work/pushward-openapi.json" <<'PYTHON' || fail "could not read $document."
import json, sys, yaml
document = yaml.safe_load(open(sys.argv[1]))
members = document["components"]["schemas"]["UpdateActivityRequest"]["properties"]
for name in ("ended_ttl", "stale_ttl", "dismissal_ttl"):
    assert members[name]["type"] == "integer" and "null to clear" in members[name]["description"], name
    members[name]["type"] = ["integer", "null"]
json.dump(document, open(sys.argv[2], "w"))
PYTHON

cat >"$work/config.toml" <<'TOML'
[auth.openapi.bearer]
bearer = "${HERALD_API_TOKEN}"
TOML
# Boundary values (scripts/lib/boundaries.py, as in scripts/schemathesis.sh): every integer without a format gets the
# 64-bit range for the coverage phase, and a fuzz dictionary mixes boundary numbers and strings into every member.
"$python" scripts/lib/boundaries.py document "$work/pushward-openapi.json" "$work/pushward-openapi.json" \
  || fail "could not widen the document's integers."
"$python" scripts/lib/boundaries.py config "$work/pushward-openapi.json" >>"$work/config.toml" \
  || fail "could not write the boundary values."

# Checks: every one but
# - positive_data_acceptance: a schema-valid request may be refused by a rule the schema cannot say (a slug that is
#   not there is 404, one already taken is 409, PATCH of an ended activity's content is 409, a template's rule the
#   schema does not carry is 422, …); every such answer is in PushWard's document, and status_code_conformance holds
#   the server to that.
# - ignored_auth is kept: every included operation but GET /health requires the key.
checks=(--checks all --exclude-checks positive_data_acceptance)
# The operations Herald implements; /widgets, /emails and /notifications are left out (above).
operations=(--include-operation-id getHealth --include-operation-id getMe --include-operation-id listActivities
  --include-operation-id createActivity --include-operation-id getActivity --include-operation-id updateActivity
  --include-operation-id deleteActivity)
# One worker (see scripts/schemathesis.sh); stateful phase off: PushWard's document declares no links.
common=(--url "$base" --max-examples "$max_examples" --seed 31 --workers 1 --request-timeout 10 --no-color
  --suppress-health-check all --continue-on-failure --generation-database none)

echo "== schemathesis, PushWard's document ($document)"
status=0
# From the scratch folder: schemathesis keeps a cache in its working directory.
if ! (cd "$work" && PYTHONDONTWRITEBYTECODE=1 "$schemathesis" --config-file "$work/config.toml" run "$work/pushward-openapi.json" \
  "${common[@]}" "${checks[@]}" "${operations[@]}"); then
  status=1
fi
kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; fail "herald serve died during the run."; }
stop_server
[ "$status" = 0 ] || fail "schemathesis found answers that do not match PushWard's document (above)."
echo "pushward-schemathesis.sh: every answer matched PushWard's document."
