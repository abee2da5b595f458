#!/usr/bin/env bash
# Partitioned tables (log and primary-key) through `firth sql`, `firth produce` and
# `firth consume`: partitions created as rows arrive or only by ALTER TABLE ... ADD
# PARTITION, DROP PARTITION (data gone), SHOW PARTITIONS with and without a filter, values
# of STRING, INT and DATE keys, and pruning: a query whose condition rules a partition out
# returns the right rows and does not read that partition at all (its files are broken
# here, so reading it would fail), while a query that needs it does fail.
source "$(dirname "$0")/lib/e2e_common.bash"

d=$T/data
csv() { run 0 "$FIRTH" sql --data-dir "$d" --format csv -e "$*"; }
sql_fails() { # sql_fails SQL MESSAGE
    run 1 "$FIRTH" sql --data-dir "$d" -e "$1"
    check_eq "$(printf '%s\n' "$ERR" | grep 'firth: error')" "firth: error: $2" "error of: $1"
}

# ---- a partitioned log table: partitions as rows arrive ------------------------------------
firth_sql "$d" "CREATE TABLE logs (id INT, dt STRING, msg STRING) PARTITIONED BY (dt)
    WITH ('bucket.num' = '2')"
csv "SHOW PARTITIONS logs"
check_eq "$OUT" "partition name" "no partitions before the first row"
firth_sql "$d" "INSERT INTO logs VALUES (1, '2026-03-01', 'a'), (2, '2026-03-02', 'b'),
    (3, '2026-03-01', 'c'), (4, '2026-03-03', 'd')"
check_eq "$OUT" "4 rows inserted" "insert into three partitions"
csv "SHOW PARTITIONS logs"
check_eq "$OUT" "partition name
dt=2026-03-01
dt=2026-03-02
dt=2026-03-03" "partitions created as rows arrived"
csv "SHOW PARTITIONS logs PARTITION (dt = '2026-03-02')"
check_eq "$OUT" "partition name
dt=2026-03-02" "SHOW PARTITIONS with a partition filter"
printf '{"id": 5, "dt": "2026-03-04", "msg": "e"}\n' >"$T/one.ndjson"
run 0 "$FIRTH" produce --data-dir "$d" --table logs <"$T/one.ndjson"
csv "SELECT id, msg FROM logs WHERE dt = '2026-03-01'"
check_eq "$(printf '%s\n' "$OUT" | sort)" "1,a
3,c
id,msg" "SELECT by partition"
csv "SELECT id FROM logs WHERE dt >= '2026-03-03'"
check_eq "$(printf '%s\n' "$OUT" | sort)" "4
5
id" "SELECT by a range of partitions"

# ---- pruning, observed: break the files of one partition ------------------------------------
# The catalog gives each partition an id; its buckets live under log/<table>/p<id>/.
pdir=$(find "$d/log" -mindepth 2 -maxdepth 2 -name 'p*' | sort -V | head -1)
[ -n "$pdir" ] || fail "no partition directory under $d/log"
csv "SELECT id FROM logs WHERE dt = '2026-03-01'"
before=$OUT
for b in "$pdir"/b*; do
    mv "$b" "$b.moved"
    echo broken >"$b"
done
csv "SELECT id, dt FROM logs WHERE dt IN ('2026-03-02', '2026-03-04')"
check_eq "$(printf '%s\n' "$OUT" | sort)" "2,2026-03-02
5,2026-03-04
id,dt" "a pruned partition is not read"
run 0 "$FIRTH" consume --data-dir "$d" --table logs --where "dt = '2026-03-02'"
check_eq "$OUT" '{"id":2,"dt":"2026-03-02","msg":"b"}' "consume prunes partitions too"
run 1 "$FIRTH" sql --data-dir "$d" -e "SELECT id FROM logs"
check_contains "$ERR" "partition dt=2026-03-01" "reading the broken partition fails"
run 1 "$FIRTH" consume --data-dir "$d" --table logs
for b in "$pdir"/b*.moved; do
    rm -f "${b%.moved}"
    mv "$b" "${b%.moved}"
done
csv "SELECT id FROM logs WHERE dt = '2026-03-01'"
check_eq "$OUT" "$before" "the partition reads again once repaired"

firth_sql "$d" "ALTER TABLE logs DROP PARTITION (dt = '2026-03-01')"
check_eq "$OUT" "1 partition dropped from table default.logs" "DROP PARTITION"
csv "SELECT id FROM logs"
check_eq "$(printf '%s\n' "$OUT" | sort)" "2
4
5
id" "a dropped partition's rows are gone"
[ ! -e "$pdir" ] || fail "the dropped partition's files are still there: $pdir"

# ---- a partitioned primary-key table, partitions only by ALTER TABLE -----------------------
firth_sql "$d" "CREATE TABLE stock (day DATE, store INT, sku BIGINT, qty INT,
        PRIMARY KEY (day, store, sku) NOT ENFORCED) PARTITIONED BY (day, store)
    WITH ('table.partition.dynamic-creation' = 'false', 'bucket.num' = '2')"
run 1 "$FIRTH" sql --data-dir "$d" -e "INSERT INTO stock VALUES (DATE '2026-05-01', 1, 10, 5)"
check_contains "$ERR" "table default.stock has no partition day=2026-05-01/store=1" \
    "no partition created as rows arrive"
firth_sql "$d" "ALTER TABLE stock ADD PARTITION (day = '2026-05-01', store = 1)
        PARTITION (store = 2, day = DATE '2026-05-01'), PARTITION (day = '2026-05-02', store = 1);
    ALTER TABLE stock ADD IF NOT EXISTS PARTITION (day = '2026-05-01', store = 1)"
check_eq "$OUT" "3 partitions added to table default.stock
0 partitions added to table default.stock (1 already exists)" "ADD PARTITION messages"
csv "SHOW PARTITIONS stock; SHOW PARTITIONS stock PARTITION (store = 1)"
check_eq "$OUT" "partition name
day=2026-05-01/store=1
day=2026-05-01/store=2
day=2026-05-02/store=1
partition name
day=2026-05-01/store=1
day=2026-05-02/store=1" "SHOW PARTITIONS of two keys, whole and filtered"
firth_sql "$d" "INSERT INTO stock VALUES (DATE '2026-05-01', 1, 10, 5), (DATE '2026-05-01', 1, 11, 6),
    (DATE '2026-05-01', 2, 10, 7), (DATE '2026-05-02', 1, 10, 8);
    UPDATE stock SET qty = qty + 100 WHERE store = 1 AND sku = 10;
    DELETE FROM stock WHERE day = '2026-05-01' AND store = 2 AND sku = 10"
check_eq "$OUT" "4 rows upserted
2 rows updated
1 row deleted" "writes into partitions"
csv "SELECT * FROM stock"
check_eq "$OUT" "day,store,sku,qty
2026-05-01,1,10,105
2026-05-01,1,11,6
2026-05-02,1,10,108" "state across partitions"
csv "EXPLAIN SELECT qty FROM stock WHERE day = '2026-05-01' AND store = 1 AND sku = 11"
check_eq "$OUT" "plan
\"point lookup of 1 key on (day, store, sku): reads the KV store, scans nothing\"
then filter: ((day = DATE '2026-05-01') AND ((store = 1) AND (sku = 11)))" \
    "a point lookup names the partition"
csv "EXPLAIN SELECT qty FROM stock WHERE store = 1"
check_eq "$OUT" "plan
scan of the current state (the KV store of every partition and bucket)
filter pushed down: (store = 1)
partitions the filter rules out are skipped" "a state scan prunes partitions"

# Pruning of the KV state, observed: break the KV store of partition store=2.
kvdir=$(find "$d/kv" -mindepth 2 -maxdepth 2 -name 'p*' | sort -V | sed -n 2p)
[ -n "$kvdir" ] || fail "no partition directory under $d/kv"
for b in "$kvdir"/b*; do
    mv "$b" "$b.moved"
    echo broken >"$b"
done
csv "SELECT sku, qty FROM stock WHERE store = 1"
check_eq "$OUT" "sku,qty
10,105
11,6
10,108" "the state of the other partitions reads without the broken one"
csv "SELECT qty FROM stock WHERE day = '2026-05-01' AND store = 1 AND sku = 11"
check_eq "$OUT" "qty
6" "a point lookup in another partition"
run 1 "$FIRTH" sql --data-dir "$d" -e "SELECT * FROM stock"
check_contains "$ERR" "store=2" "reading the broken partition's state fails"
for b in "$kvdir"/b*.moved; do
    rm -f "${b%.moved}"
    mv "$b" "${b%.moved}"
done

csv "SELECT _change_type, day, store, sku, qty FROM stock\$changelog WHERE store = 2"
check_eq "$OUT" "_change_type,day,store,sku,qty
+I,2026-05-01,2,10,7
-D,2026-05-01,2,10,7" "the changelog of one partition"
firth_sql "$d" "ALTER TABLE stock DROP PARTITION (day = '2026-05-01', store = 1)"
csv "SELECT sku, qty FROM stock"
check_eq "$OUT" "sku,qty
10,108" "dropping a partition drops its state"

# ---- errors ----------------------------------------------------------------------------------
# The engine words these; the statement's position comes first.
run 1 "$FIRTH" sql --data-dir "$d" -e "ALTER TABLE stock ADD PARTITION (day = '2026-05-09')"
check_contains "$ERR" "firth: error: line 1, column 23: " "a partition needs every key: position"
check_contains "$ERR" "2 partition keys" "a partition needs every partition key"
run 1 "$FIRTH" sql --data-dir "$d" -e "ALTER TABLE stock ADD PARTITION (day = 'someday', store = 1)"
check_contains "$ERR" "firth: error: line 1, column 23: " "a bad value: position"
check_contains "$ERR" "someday" "a partition value that does not parse"
run 1 "$FIRTH" sql --data-dir "$d" -e "ALTER TABLE stock DROP PARTITION (day = '2030-01-01', store = 1)"
check_contains "$ERR" "firth: error: line 1, column 24: " "a missing partition: position"
check_contains "$ERR" "day=2030-01-01/store=1" "dropping a partition that does not exist"
sql_fails "ALTER TABLE stock ADD PARTITION (sku = 1)" \
    "line 1, column 34: 'sku' is not a partition key of table default.stock (its partition keys: day, store)"
firth_sql "$d" "ALTER TABLE stock DROP IF EXISTS PARTITION (day = '2030-01-01', store = 1)"
check_eq "$OUT" "0 partitions dropped from table default.stock (1 does not exist)" "IF EXISTS"
firth_sql "$d" "CREATE TABLE flat (a INT)"
sql_fails "SHOW PARTITIONS flat" \
    "line 1, column 17: table default.flat is not partitioned (it has no PARTITIONED BY)"

# ---- auto-partitioning: the coming partitions exist once the engine has run its pass ---------
firth_sql "$d" "CREATE TABLE daily (id INT, dt STRING) PARTITIONED BY (dt)
    WITH ('table.auto-partition.enabled' = 'true', 'table.auto-partition.time-unit' = 'DAY',
          'table.auto-partition.num-precreate' = '3')"
csv "SHOW PARTITIONS daily"
check_eq "$(printf '%s\n' "$OUT" | sed 1d | wc -l)" "3" "three days pre-created"
check_eq "$(printf '%s\n' "$OUT" | sed 1d | grep -c '^dt=[0-9]\{8\}$')" "3" \
    "auto partitions are named by day"
