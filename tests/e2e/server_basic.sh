#!/usr/bin/env bash
# `firth server` as a real process on ephemeral loopback ports: the ready file and the log
# line of the bound addresses, api_versions and SQL through a client written from
# docs/PROTOCOL.md (server_wire.mjs), the worked example's bytes, bad frames, /health and
# /metrics, a second server refused on a held data dir and on a taken port, the config file
# and its errors, and graceful shutdown on SIGTERM (a parked fetch is answered, the
# connection closes, exit 0, the data dir opens again with every row) and on SIGINT.
source "$(dirname "$0")/lib/e2e_common.bash"

wire() { node "$E2E_SRC/tests/e2e/server_wire.mjs" "$@"; }

# start_server LOG DATA_DIR [ARGS...]: starts a server in the background on port 0 and
# waits for its ready file; sets SERVER_PID, NATIVE and HTTP.
start_server() {
    local log=$1 dir=$2
    shift 2
    rm -f "$T/ready"
    "$FIRTH" server --data-dir "$dir" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
        --ready-file "$T/ready" "$@" 2>"$log" &
    SERVER_PID=$!
    for _ in $(seq 1 200); do
        [ -s "$T/ready" ] && break
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.05
    done
    [ -s "$T/ready" ] || fail "the server did not start: $(cat "$log")"
    NATIVE=$(sed -n 's/.*"native": "\([^"]*\)".*/\1/p' "$T/ready")
    HTTP=$(sed -n 's/.*"http": "\([^"]*\)".*/\1/p' "$T/ready")
}

# stop_server SIGNAL: sends it and waits; leaves the exit code in STOP_RC.
stop_server() {
    kill -"$1" "$SERVER_PID"
    STOP_RC=0
    wait "$SERVER_PID" || STOP_RC=$?
}

d=$T/data
start_server "$T/s1.log" "$d"
check_contains "$NATIVE" "127.0.0.1:" "the ready file names the native address"
check_contains "$(cat "$T/s1.log")" "listening on $NATIVE (native), $HTTP (http)" \
    "the log says where the server listens"

run 0 wire versions "$NATIVE"
check_contains "$OUT" "server=firth 0.1.0 apis=18 frame_bytes_max=104857600 in_flight_max=64" \
    "api_versions"
check_contains "$OUT" "api key=14 name=list_offsets versions=0..0" "api_versions names each api"
check_contains "$OUT" "api key=17 name=lake_snapshot versions=0..0" "api_versions lists lake_snapshot"

run 0 wire sql "$NATIVE" "CREATE DATABASE shop; CREATE TABLE shop.orders (id BIGINT NOT NULL,
  item STRING) WITH ('bucket.num' = '1'); INSERT INTO shop.orders VALUES (1, 'tea'), (2, 'jam')"
check_contains "$OUT" "statement 2 done rows=0 message=2 rows inserted" "SQL over the wire"
run 0 wire sql "$NATIVE" "USE shop; SELECT * FROM orders"
check_contains "$OUT" "statement 1 done rows=2" "a query's rows come back as Arrow"
check_contains "$OUT" "database=shop" "the session database after USE"
run 1 wire sql "$NATIVE" "SELECT 1;
SELEC 2"
check_contains "$OUT" "code=11" "a syntax error is SYNTAX_ERROR"
check_contains "$OUT" "line=2 column=1 statement=1" "with its position and statement"

# The worked example of docs/PROTOCOL.md, byte for byte: list_tables of "sales" (id 7),
# then of "nope" (id 8), an error naming the database.
run 0 wire sql "$NATIVE" "CREATE DATABASE sales"
run 0 wire raw "$NATIVE" "0000000f00070000000000070a0573616c6573"
check_eq "$OUT" "result=0 id=7 " "the worked example's request 7"
run 0 wire raw "$NATIVE" "0000000e00070000000000080a046e6f7065"
check_contains "$OUT" "result=1 id=8 code=6 message=" "the worked example's request 8"

# Bad frames: an error frame with request id -1 (the connection closes), or an error for the
# request (it stays open); the server keeps serving.
run 0 wire raw "$NATIVE" "ffffffff0004000000000001"
check_contains "$OUT" "result=1 id=-1 code=5" "a negative length is CORRUPT"
run 0 wire raw "$NATIVE" "7fffffff0004000000000001"
check_contains "$OUT" "result=1 id=-1 code=9" "a length over the limit is LIMIT_EXCEEDED"
run 0 wire raw "$NATIVE" "00000008004d000000000009"
check_contains "$OUT" "result=1 id=9 code=100" "an unknown api is UNKNOWN_API"
run 0 wire raw "$NATIVE" "0000000b000700000000000affffff"
check_contains "$OUT" "result=1 id=10 code=5" "malformed protobuf is CORRUPT"
run 0 wire versions "$NATIVE"
check_contains "$(cat "$T/s1.log")" "WARN  connection from 127.0.0.1:" "bad frames are logged"

# HTTP.
run 0 wire http "$HTTP" /health
check_contains "$OUT" "status=200" "/health answers"
check_contains "$OUT" '"status": "ok"' "/health says ok"
run 0 wire http "$HTTP" /metrics
check_contains "$OUT" 'firth_requests_total{api="execute_sql"}' "/metrics counts requests per api"
check_contains "$OUT" 'firth_request_duration_seconds_bucket{api="execute_sql",le="+Inf"}' \
    "/metrics has latency histograms"
check_contains "$OUT" 'firth_log_end_offset{database="shop",table="orders",partition="",bucket="0"} 2' \
    "/metrics has the end offset of every bucket"
check_contains "$OUT" "firth_bad_frames_total 4" "/metrics counts bad frames"
check_contains "$OUT" "firth_kv_row_cache_bytes " "/metrics has the KV stores' shared memory"
run 0 wire http "$HTTP" /nope
check_contains "$OUT" "status=404" "other paths are 404"

# A second server on the same data dir, or on a taken port, cannot start.
run 1 "$FIRTH" server --data-dir "$d" --listen 127.0.0.1:0 --http-listen off
check_contains "$ERR" "firth: error: firth server:" "a held data dir is an error"
run 1 "$FIRTH" server --data-dir "$T/other" --listen "$NATIVE" --http-listen off
check_contains "$ERR" "cannot listen on $NATIVE" "a taken port is an error"

# SIGTERM with a fetch parked: it is answered, the connection closes, the server exits 0.
wire park-fetch "$NATIVE" shop orders 0 2 60000 >"$T/park.out" 2>&1 &
park=$!
for _ in $(seq 1 100); do
    grep -q sent "$T/park.out" 2>/dev/null && break
    sleep 0.05
done
sleep 0.2
stop_server TERM
check_eq "$STOP_RC" 0 "SIGTERM stops the server with exit 0"
wait "$park" || fail "the parked fetch's client failed: $(cat "$T/park.out")"
check_contains "$(cat "$T/park.out")" "answered bytes=0 next=2" "the parked fetch is answered"
check_contains "$(cat "$T/park.out")" "closed" "then the connection closes"
log=$(cat "$T/s1.log")
check_contains "$log" "received SIGTERM: shutting down" "the shutdown is logged"
check_contains "$log" "INFO  stopped" "the end is logged"

# The data dir is free and whole.
run 0 "$FIRTH" sql --data-dir "$d" --format csv -e "SELECT id, item FROM shop.orders"
check_eq "$OUT" $'id,item\n1,tea\n2,jam' "the rows are there after the shutdown"

# A config file (the command line wins), quieter logs, and SIGINT.
cat >"$T/firth.conf" <<EOF
# a test configuration
server.inflight.max: 7
log.level: warn
server.frame.bytes.max: 2mb
EOF
start_server "$T/s2.log" "$d" --config "$T/firth.conf" --server.inflight.max 9
run 0 wire versions "$NATIVE"
check_contains "$OUT" "frame_bytes_max=2097152 in_flight_max=9" "file and command line keys"
stop_server INT
check_eq "$STOP_RC" 0 "SIGINT stops the server with exit 0"
check_not_contains "$(cat "$T/s2.log")" "INFO" "log.level warn leaves out INFO lines"

# Bad configuration is a usage error, before anything opens.
echo "server.colour: blue" >"$T/bad.conf"
run 2 "$FIRTH" server --data-dir "$d" --config "$T/bad.conf"
check_contains "$ERR" "server.colour" "an unknown key in the file is named"
run 2 "$FIRTH" server --data-dir "$d" --config "$T/missing.conf"
check_contains "$ERR" "missing.conf" "a missing config file is named"
run 2 "$FIRTH" server --data-dir "$d" --listen nowhere
check_contains "$ERR" "server.listen" "a bad address names its key"

# Every key the help lists is documented in docs/CONFIGURATION.md.
run 0 "$FIRTH" server --help
keys=$(printf '%s\n' "$OUT" | grep -o '^  \(server\|log\|data\)\.[a-z.-]*' | sed 's/^  //')
[ -n "$keys" ] || fail "no keys found in the server's help"
for k in $keys data.dir server.listen server.http.listen log.flush log.flush.interval \
    log.segment.bytes log.retention.check-interval; do
    check_contains "$(cat "$E2E_SRC/docs/CONFIGURATION.md")" "\`$k\`" "CONFIGURATION.md documents $k"
done
