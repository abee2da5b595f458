#!/usr/bin/env bash
# The command over the network: sql, produce and consume with --connect against a real
# `firth server` on an ephemeral loopback port (scripts, piped statements and the
# interactive prompt on a pseudo-terminal), and consume --follow, embedded and remote, which
# prints records appended after it started and ends cleanly on SIGINT.
source "$(dirname "$0")/lib/e2e_common.bash"

"$FIRTH" server --data-dir "$T/served" --listen 127.0.0.1:0 --http-listen off \
    --ready-file "$T/ready.json" 2>"$T/server.log" &
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

# sql: statements, USE carried from one statement to the next, errors with positions.
run 0 "$FIRTH" sql --connect "$ADDR" -e "CREATE DATABASE shop; USE shop;
    CREATE TABLE orders (id BIGINT, item STRING, price DECIMAL(10, 2))
    WITH ('bucket.num' = '3', 'bucket.key' = 'id');
    CREATE TABLE stock (item STRING NOT NULL, qty INT, PRIMARY KEY (item) NOT ENFORCED)"
check_contains "$OUT" "table shop.orders created" "sql --connect creates tables"
run 1 "$FIRTH" sql --connect "$ADDR" -e "SELEC 1"
check_contains "$ERR" "line 1, column 1" "a remote SQL error names its position"
printf 'USE shop;\nSHOW TABLES;\n' >"$T/script.sql"
run 0 "$FIRTH" sql --connect "$ADDR" --format csv <"$T/script.sql"
check_eq "$OUT" "$(printf 'table name\norders\nstock')" "piped statements keep USE"

# produce and consume over the network.
for i in $(seq 1 30); do echo "{\"id\": $i, \"item\": \"i$i\", \"price\": \"$i.50\"}"; done \
    >"$T/orders.ndjson"
run 0 "$FIRTH" produce --connect "$ADDR" --table shop.orders <"$T/orders.ndjson"
check_contains "$ERR" "30 rows written to shop.orders" "produce --connect"
run 0 "$FIRTH" consume --connect "$ADDR" --table shop.orders --format csv --columns id
check_eq "$(echo "$OUT" | tail -n +2 | sort -n | tr '\n' ' ')" "$(seq 1 30 | tr '\n' ' ')" \
    "consume --connect reads every row once"
# Aggregates, grouping and sorting run in the server; their rows stream back in order.
run 0 "$FIRTH" sql --connect "$ADDR" --format csv -e "SELECT price > 15 AS high, COUNT(*) AS n,
  MIN(item), MAX(price) FROM shop.orders GROUP BY price > 15 ORDER BY high DESC"
check_eq "$OUT" "$(printf 'high,n,MIN(item),MAX(price)\ntrue,16,i15,30.50\nfalse,14,i1,14.50')" \
    "sql --connect with GROUP BY and ORDER BY"
run 0 "$FIRTH" consume --connect "$ADDR" --table shop.orders --where "price > 28.5" \
    --columns item
check_eq "$(echo "$OUT" | sort)" "$(printf '{"item":"i29"}\n{"item":"i30"}')" \
    "consume --connect --where"
printf '{"item": "tea", "qty": 3}\n{"item": "cake", "qty": 1}\n{"item": "tea", "_delete": true}\n' \
    >"$T/stock.ndjson"
run 0 "$FIRTH" produce --connect "$ADDR" --table shop.stock <"$T/stock.ndjson"
run 0 "$FIRTH" sql --connect "$ADDR" --format csv -e "SELECT item, qty FROM shop.stock"
check_eq "$OUT" "$(printf 'item,qty\ncake,1')" "upserts and deletes over the network"
run 0 "$FIRTH" consume --connect "$ADDR" --table shop.stock --format csv
check_eq "$(echo "$OUT" | tail -n +2 | cut -d, -f1 | tr '\n' ' ')" "+I +I -D " \
    "the changelog over the network"

# The interactive prompt over the network, on a pseudo-terminal.
printf 'USE shop;\nSELECT id FROM orders WHERE id = 7;\n\\q\n' >"$T/typed.txt"
HOME=$T script -qfec "$FIRTH sql --connect $ADDR" /dev/null <"$T/typed.txt" >"$T/prompt.out" \
    2>&1 || fail "the prompt failed: $(cat "$T/prompt.out")"
check_contains "$(cat "$T/prompt.out")" "1 row" "the remote prompt runs a query"
check_contains "$(cat "$T/prompt.out")" "(server $ADDR)" "the remote prompt names its server"

# consume --follow: records appended later arrive; SIGINT ends the output cleanly.
follow() { # follow NAME ARGS...: starts a follower writing $T/NAME.out
    local name=$1
    shift
    "$FIRTH" consume "$@" --format csv --columns id >"$T/$name.out" 2>"$T/$name.err" &
    FOLLOWER=$!
}
wait_rows() { # wait_rows FILE N: until FILE has N data lines (header excluded)
    for _ in $(seq 200); do
        [ "$(($(wc -l <"$1") - 1))" -ge "$2" ] && return 0
        sleep 0.05
    done
    fail "$1 has $(($(wc -l <"$1") - 1)) rows, not $2"
}
for mode in remote embedded; do
    if [ $mode = remote ]; then
        target=(--connect "$ADDR")
        table=shop.orders
        before=30
    else
        target=(--data-dir "$T/local")
        table=t
        run 0 "$FIRTH" sql "${target[@]}" -e "CREATE TABLE t (id BIGINT) WITH ('bucket.num' = '2')"
        before=0
    fi
    follow "$mode" "${target[@]}" --table "$table" --follow
    [ $mode = embedded ] && sleep 0.3 # the follower holds the data dir: produce after it...
    if [ $mode = remote ]; then
        wait_rows "$T/$mode.out" 30
        for i in $(seq 31 40); do echo "{\"id\": $i}"; done |
            "$FIRTH" produce --connect "$ADDR" --table shop.orders 2>/dev/null
        wait_rows "$T/$mode.out" 40
    fi
    kill -INT "$FOLLOWER"
    rc=0
    wait "$FOLLOWER" || rc=$?
    check_eq "$rc" "0" "consume --follow ($mode) exits 0 on SIGINT"
    check_eq "$(head -1 "$T/$mode.out")" "id" "the follower's CSV header ($mode)"
    check_eq "$(tail -n +2 "$T/$mode.out" | sort -n | uniq | wc -l)" \
        "$(($(wc -l <"$T/$mode.out") - 1))" "no row twice ($mode)"
    [ $mode = remote ] && check_eq "$(tail -n +2 "$T/$mode.out" | sort -n | tail -1)" "40" \
        "the follower printed the records appended after it started"
done

# --follow with --max-records stops by itself; --from latest waits for new records only.
follow latest --connect "$ADDR" --table shop.orders --follow --from latest --max-records 5
sleep 0.5
for i in $(seq 41 50); do echo "{\"id\": $i}"; done |
    "$FIRTH" produce --connect "$ADDR" --table shop.orders 2>/dev/null
rc=0
wait "$FOLLOWER" || rc=$?
check_eq "$rc" "0" "consume --follow --max-records ends by itself"
check_eq "$(tail -n +2 "$T/latest.out" | wc -l | tr -d ' ')" "5" "--max-records 5 with --follow"
for id in $(tail -n +2 "$T/latest.out"); do
    [ "$id" -ge 41 ] || fail "--from latest printed an old record $id"
done

# A followed table that is dropped ends the follower with an error that says so.
run 0 "$FIRTH" sql --connect "$ADDR" -e "CREATE TABLE shop.gone (id BIGINT)"
follow gone --connect "$ADDR" --table shop.gone --follow
echo '{"id": 1}' | "$FIRTH" produce --connect "$ADDR" --table shop.gone 2>/dev/null
wait_rows "$T/gone.out" 1
run 0 "$FIRTH" sql --connect "$ADDR" -e "DROP TABLE shop.gone"
rc=0
wait "$FOLLOWER" || rc=$?
check_eq "$rc" "1" "consume --follow of a dropped table exits 1"
check_contains "$(cat "$T/gone.err")" "(dropped while it was followed)" \
    "the follower says its table was dropped"
