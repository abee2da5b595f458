#!/usr/bin/env bash
# The lake's SQL through a real `firth server` (SQL runs server side): CALL sys.tier, union
# reads of a log table and of a primary-key table with updates and deletes, t$lake,
# t$lake_snapshots and EXPLAIN over --connect, and the same data read embedded once the
# server has stopped.
source "$(dirname "$0")/lib/e2e_common.bash"

"$FIRTH" server --data-dir "$T/served" --listen 127.0.0.1:0 --http-listen off \
    --lake.tiering.threads 0 --ready-file "$T/ready.json" 2>"$T/server.log" &
SERVER=$!
stop_server() { kill -TERM "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null || true; }
trap 'rc=$?; stop_server; set +e; (exit $rc); e2e_cleanup; exit $rc' EXIT
for _ in $(seq 200); do
    [ -s "$T/ready.json" ] && break
    kill -0 "$SERVER" 2>/dev/null || fail "the server exited: $(cat "$T/server.log")"
    sleep 0.05
done
ADDR=$(sed -n 's/.*"native": *"\([^"]*\)".*/\1/p' "$T/ready.json")
[ -n "$ADDR" ] || fail "no native address in the ready file"

q() { # q SQL: csv rows without the header, sorted
    "$FIRTH" sql --connect "$ADDR" --format csv -e "$1" | tail -n +2 | sort
}

run 0 "$FIRTH" sql --connect "$ADDR" -e "CREATE DATABASE lk; USE lk;
    CREATE TABLE events (id INT NOT NULL, name STRING, at TIMESTAMP(3))
        WITH ('table.datalake.enabled' = 'true', 'bucket.num' = '2');
    CREATE TABLE users (id INT PRIMARY KEY NOT ENFORCED, name STRING)
        WITH ('table.datalake.enabled' = 'true', 'bucket.num' = '2');
    INSERT INTO events VALUES (1, 'a', TIMESTAMP '2026-11-30 10:00:00.5'), (2, 'b', NULL);
    INSERT INTO users VALUES (1, 'ann'), (2, 'bob'), (3, 'cy')"
run 0 "$FIRTH" sql --connect "$ADDR" --format csv -e "CALL sys.tier('lk.events')"
check_eq "$(printf '%s\n' "$OUT" | head -1)" "snapshot_id" "CALL over the network returns a row"
s1=$(printf '%s\n' "$OUT" | sed -n 2p)
[[ "$s1" =~ ^-?[0-9]+$ ]] || fail "a snapshot id, not [$s1]"
run 0 "$FIRTH" sql --connect "$ADDR" -e "USE lk; CALL sys.tier('users')"
run 0 "$FIRTH" sql --connect "$ADDR" -e "INSERT INTO lk.events VALUES (3, 'c', NULL);
    UPDATE lk.users SET name = 'bobby' WHERE id = 2; DELETE FROM lk.users WHERE id = 3"

check_eq "$(q "SELECT id, name, at FROM lk.events")" "1,a,2026-11-30 10:00:00.500
2,b,
3,c," "the union read of a log table over the network"
check_eq "$(q "SELECT id, name, at FROM lk.events\$lake")" "1,a,2026-11-30 10:00:00.500000
2,b," "\$lake over the network holds the tiered rows, in microseconds"
check_eq "$(q "SELECT * FROM lk.users")" "1,ann
2,bobby" "the union read of a primary-key table merges the log"
check_eq "$(q "SELECT id, name FROM lk.users\$lake")" "1,ann
2,bob
3,cy" "the lake of the primary-key table is as tiered"
check_eq "$(q "SELECT snapshot_id, parent_id, operation, total_records FROM lk.events\$lake_snapshots")" \
    "$s1,,append,2" "\$lake_snapshots over the network"

# The lake_snapshot api, spoken by a client written from docs/PROTOCOL.md alone
# (server_wire.mjs): the snapshot CALL committed, with the offsets t$lake_snapshots lists.
wire() { node "$E2E_SRC/tests/e2e/server_wire.mjs" "$@"; }
offs=$("$FIRTH" sql --connect "$ADDR" --format csv \
    -e "SELECT tiered_offsets FROM lk.events\$lake_snapshots" | tail -n +2 | tr -d '"')
[[ "$offs" =~ ^p-1/b[01]:[0-9]+ ]] || fail "tiered offsets, not [$offs]"
run 0 wire lake-snapshot "$ADDR" lk events
check_contains "$OUT" "snapshot_id=$s1 committed_at_ms=1" "lake_snapshot names CALL's snapshot"
check_contains "$OUT" "offsets=$offs" "lake_snapshot's offsets are \$lake_snapshots' tiered_offsets"
run 0 "$FIRTH" sql --connect "$ADDR" -e "CREATE TABLE lk.plain (id INT NOT NULL);
    CREATE TABLE lk.later (id INT NOT NULL) WITH ('table.datalake.enabled' = 'true')"
run 0 wire lake-snapshot "$ADDR" lk later
check_eq "$OUT" "snapshot_id=-1 committed_at_ms=0 offsets=" "lake_snapshot before any round"
run 1 wire lake-snapshot "$ADDR" lk plain
check_contains "$OUT" "code=1 message=table lk.plain has no lake: create it with 'table.datalake.enabled' = 'true'" \
    "lake_snapshot of a table without a lake is INVALID, saying how to make one"
run 1 wire lake-snapshot "$ADDR" lk nope
check_contains "$OUT" "code=6 message=" "lake_snapshot of an unknown table is NOT_FOUND"
run 0 "$FIRTH" sql --connect "$ADDR" --format csv -e "EXPLAIN SELECT name FROM lk.events WHERE id > 1"
check_contains "$OUT" "union read: the newest lake snapshot, then the log of every bucket" \
    "EXPLAIN over the network"
check_contains "$OUT" "lake snapshot: $s1" "EXPLAIN names the snapshot"
run 1 "$FIRTH" sql --connect "$ADDR" -e "CALL sys.tier('lk.nope')"
check_contains "$ERR" "line 1, column 15: table lk.nope does not exist" \
    "a remote CALL error names its position"

# Tier again, stop the server, read the same data embedded.
run 0 "$FIRTH" sql --connect "$ADDR" -e "CALL sys.tier('lk.events'); CALL sys.tier('lk.users')"
stop_server
check_eq "$("$FIRTH" sql --data-dir "$T/served" --format csv -e "SELECT id, name FROM lk.users\$lake" | tail -n +2 | sort)" \
    "1,ann
2,bobby" "embedded, after the server: the lake holds the merged state"
check_eq "$("$FIRTH" sql --data-dir "$T/served" --format csv -e "SELECT count_rows FROM lk.events" 2>&1 | head -1)" \
    "firth: error: line 1, column 8: unknown column 'count_rows'" "embedded errors as remote ones"
check_eq "$("$FIRTH" sql --data-dir "$T/served" --format csv -e "SELECT id FROM lk.events" | tail -n +2 | sort)" \
    "1
2
3" "embedded union read"
