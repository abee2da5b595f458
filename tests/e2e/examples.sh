#!/usr/bin/env bash
# The example programs of examples/ (built beside the command, in build/examples/) run
# against an embedded data dir and against a real `firth server` on an ephemeral loopback
# port, twice each (a second run finds the tables of the first and starts them again).
source "$(dirname "$0")/lib/e2e_common.bash"

EXAMPLES=$(cd "$(dirname "$FIRTH")/../examples" && pwd)
for ex in produce_consume upsert_lookup sql_query; do
    [ -x "$EXAMPLES/$ex" ] || fail "example $ex is not built in $EXAMPLES"
done

run_examples() {
    local target=$1
    for round in 1 2; do
        run 0 "$EXAMPLES/produce_consume" "$target"
        check_contains "$OUT" "produced 1000 rows in 10 calls, 10 acknowledged" \
            "produce_consume on $target ($round)"
        check_contains "$OUT" "consumed 1000 rows, sum of scores 124875.00" \
            "produce_consume reads every row back on $target ($round)"
        run 0 "$EXAMPLES/upsert_lookup" "$target"
        check_contains "$OUT" "looked up 20 keys: 10 found, 10 by prefix" \
            "upsert_lookup on $target ($round)"
        check_contains "$OUT" "id 19: renamed-19" "upsert_lookup sees the update ($round)"
        run 0 "$EXAMPLES/sql_query" "$target"
        check_contains "$OUT" "2 rows, ids adding up to 4" "sql_query on $target ($round)"
        check_contains "$OUT" "6 rows inserted" "sql_query's messages on $target ($round)"
    done
    run 2 "$EXAMPLES/sql_query"
    check_contains "$ERR" "usage: sql_query" "an example without a target says how to run it"
}

# Embedded.
run_examples "file:$T/embedded"

# A server on ports the system picks; stopped (SIGTERM) at the end.
"$FIRTH" server --data-dir "$T/served" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
    --ready-file "$T/ready.json" 2>"$T/server.log" &
SERVER=$!
stop_server() { kill -TERM "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null || true; }
trap 'rc=$?; stop_server; set +e; (exit $rc); e2e_cleanup; exit $rc' EXIT
for _ in $(seq 200); do
    [ -s "$T/ready.json" ] && break
    kill -0 "$SERVER" 2>/dev/null || fail "the server exited: $(cat "$T/server.log")"
    sleep 0.05
done
[ -s "$T/ready.json" ] || fail "the server wrote no ready file"
ADDR=$(sed -n 's/.*"native": *"\([^"]*\)".*/\1/p' "$T/ready.json")
[ -n "$ADDR" ] || fail "no native address in $(cat "$T/ready.json")"
run_examples "firth://$ADDR"

# The server's data is what the examples left: the command reads it over the network.
run 0 "$FIRTH" sql --connect "$ADDR" --format csv -e "SELECT id FROM examples.events WHERE id > 990"
check_eq "$(echo "$OUT" | sort -n | tr '\n' ' ')" "id 991 992 993 994 995 996 997 998 999 " \
    "the served table holds the example's rows"
# An unreachable server is an error of the example, not a hang.
run 1 "$EXAMPLES/produce_consume" "firth://127.0.0.1:1"
check_contains "$ERR" "cannot connect to 127.0.0.1:1" "an example's connection error"
