#!/usr/bin/env bash
# Starts `firth server` on a data directory (created when missing), prints where it listens
# and what to try next, and runs it in the foreground until Ctrl-C (SIGINT) or SIGTERM,
# which stop it gracefully.
#
# Usage: scripts/run-server.sh FIRTH_BINARY DATA_DIR      (`make run` calls it)
# Environment: FIRTH_LISTEN (default 127.0.0.1:9123), FIRTH_HTTP_LISTEN (127.0.0.1:9249).
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 FIRTH_BINARY DATA_DIR" >&2
    exit 2
fi
bin=$1
data=$2
listen=${FIRTH_LISTEN:-127.0.0.1:9123}
http=${FIRTH_HTTP_LISTEN:-127.0.0.1:9249}
if [ ! -x "$bin" ]; then
    echo "run-server: $bin is not an executable; build it first (make)" >&2
    exit 1
fi

ready=$(mktemp "${TMPDIR:-/tmp}/firth-ready.XXXXXX")
rm -f "$ready"
"$bin" server --data-dir "$data" --listen "$listen" --http-listen "$http" \
    --ready-file "$ready" &
pid=$!
cleanup() { rm -f "$ready"; }
trap cleanup EXIT
trap 'kill -TERM "$pid" 2>/dev/null || true' INT TERM

# The server writes the ready file once it accepts connections.
for _ in $(seq 1 300); do
    [ -s "$ready" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
if [ ! -s "$ready" ]; then
    wait "$pid" || true
    echo "run-server: firth server did not start (see its message above)" >&2
    exit 1
fi
native=$(sed -n 's/.*"native": "\([^"]*\)".*/\1/p' "$ready")
web=$(sed -n 's/.*"http": "\([^"]*\)".*/\1/p' "$ready")
cat <<MSG

firth server is running on data directory $data
  native protocol  $native
  HTTP             http://${web:-off}/health  http://${web:-off}/metrics

Try, in another terminal:
  $bin sql --connect $native -e "SHOW DATABASES"
  curl -s http://${web:-127.0.0.1:9249}/metrics | grep firth_requests_total

Ctrl-C stops the server gracefully (it finishes requests in flight and flushes).
MSG

status=0
while kill -0 "$pid" 2>/dev/null; do
    wait "$pid" && status=0 || status=$?
done
exit "$status"
