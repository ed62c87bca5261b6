# Sourced by scripts/schemathesis.sh, scripts/pushward-schemathesis.sh and scripts/e2e-interop.sh: starts `$herald serve` (the caller sets
# `herald` and a `fail` function) with a throwaway in-memory store on a free loopback port, and sets `work` (a scratch
# folder, removed at exit), `server_pid`, `stop_server` (SIGTERM, then SIGKILL after 10 s) and `base`
# (http://127.0.0.1:<port>). The server is stopped at exit, also when CI's timeout ends the script.

work=$(mktemp -d)
server_pid=""
stop_server() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
  server_pid=""
}
trap 'stop_server; rm -rf "$work"' EXIT
trap 'exit 143' TERM INT  # so that the EXIT trap stops the server when CI's timeout ends the script

# Port 0 lets the system pick a free port, which the server names in its start-up line. The daily limit is raised so
# that hundreds of generated sends are answered 201 rather than 429. No provider credentials: pushes wait in the
# outbox, which is all the answers need.
: >"$work/server.log"  # there before the background server opens it: the loop below reads it at once
HERALD_HOST=127.0.0.1 HERALD_PORT=0 HERALD_DATABASE_URL=memory: HERALD_RATE_LIMIT_DAILY=1000000 \
  HERALD_DELIVERY_WAIT_MS=0 HERALD_LOG_LEVEL=info "$herald" serve >"$work/server.log" 2>&1 &
server_pid=$!
port=""
for _ in $(seq 300); do
  port=$(sed -n 's/.*Server started and listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/server.log" | head -n 1)
  [ -n "$port" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; fail "herald serve exited at start-up."; }
  sleep 0.1
done
[ -n "$port" ] || { cat "$work/server.log" >&2; fail "herald serve did not say which port it listens on."; }
base="http://127.0.0.1:$port"
