#!/usr/bin/env bash
# Primary-key tables through `firth sql`, one table per merge engine: upserts, partial
# updates, UPDATE and DELETE, the state (SELECT) and the exact changelog (t$changelog) after
# each step, point and prefix lookups (EXPLAIN says which, the results are checked),
# DESCRIBE and SHOW CREATE TABLE, and the errors of bad writes. Every statement runs in a
# process of its own, so the state also survives reopening the data dir.
source "$(dirname "$0")/lib/e2e_common.bash"

d=$T/data
csv() { run 0 "$FIRTH" sql --data-dir "$d" --format csv -e "$*"; }
sql_fails() { # sql_fails SQL MESSAGE: the statement fails with exactly this message
    run 1 "$FIRTH" sql --data-dir "$d" -e "$1"
    check_eq "$ERR" "firth: error: $2" "error of: $1"
}

# ---- last_row (the default), Fluss's orders example --------------------------------------
firth_sql "$d" "CREATE TABLE orders (order_id INT NOT NULL, customer_name STRING,
        amount DECIMAL(10, 2), PRIMARY KEY (order_id) NOT ENFORCED) WITH ('bucket.num' = '1')"
check_eq "$OUT" "table default.orders created" "create a primary-key table"
firth_sql "$d" "INSERT INTO orders VALUES (1, 'Rhea', 100.00)"
check_eq "$OUT" "1 row upserted" "insert message"
firth_sql "$d" "INSERT INTO orders VALUES (1, 'Rhea', 150.00)"
firth_sql "$d" "DELETE FROM orders WHERE order_id = 1"
check_eq "$OUT" "1 row deleted" "delete message"
firth_sql "$d" "SELECT _change_type, _log_offset, order_id, customer_name, amount
    FROM orders\$changelog"
check_eq "$OUT" "+--------------+-------------+----------+---------------+--------+
| _change_type | _log_offset | order_id | customer_name | amount |
+--------------+-------------+----------+---------------+--------+
| +I           |           0 |        1 | Rhea          | 100.00 |
| -U           |           1 |        1 | Rhea          | 100.00 |
| +U           |           2 |        1 | Rhea          | 150.00 |
| -D           |           3 |        1 | Rhea          | 150.00 |
+--------------+-------------+----------+---------------+--------+
4 rows" "Fluss's changelog example"
csv "SELECT * FROM orders\$changelog LIMIT 1"
check_eq "$(printf '%s\n' "$OUT" | head -1)" \
    "_change_type,_log_offset,_commit_timestamp,order_id,customer_name,amount" \
    "the changelog's metadata columns come first"
case "$(printf '%s\n' "$OUT" | sed -n 2p)" in
+I,0,[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]\ [0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z,1,Rhea,100.00) ;;
*) fail "a changelog row with its commit time: $OUT" ;;
esac
firth_sql "$d" "SELECT * FROM orders"
check_eq "$OUT" "+----------+---------------+--------+
| order_id | customer_name | amount |
+----------+---------------+--------+
0 rows" "the state after the delete"

# Partial updates keep the columns they do not name; UPDATE changes what WHERE selects.
firth_sql "$d" "INSERT INTO orders VALUES (1, 'Rhea', 10), (2, 'Bo', 20), (3, 'Cy', 30);
    INSERT INTO orders (order_id, amount) VALUES (2, 21), (4, 40);
    UPDATE orders SET amount = amount + 1 WHERE customer_name IS NOT NULL AND amount > 15;
    UPDATE orders SET customer_name = 'Di' WHERE order_id = 4"
check_eq "$OUT" "3 rows upserted
2 rows upserted
2 rows updated
1 row updated" "partial insert and UPDATE messages"
csv "SELECT * FROM orders"
check_eq "$OUT" "order_id,customer_name,amount
1,Rhea,10.00
2,Bo,22.00
3,Cy,31.00
4,Di,40.00" "state after partial updates and UPDATE"
csv "SELECT _change_type, order_id, customer_name, amount FROM orders\$changelog
    WHERE _log_offset >= 4"
check_eq "$OUT" "_change_type,order_id,customer_name,amount
+I,1,Rhea,10.00
+I,2,Bo,20.00
+I,3,Cy,30.00
-U,2,Bo,20.00
+U,2,Bo,21.00
+I,4,,40.00
-U,2,Bo,21.00
+U,2,Bo,22.00
-U,3,Cy,30.00
+U,3,Cy,31.00
-U,4,,40.00
+U,4,Di,40.00" "changelog of the partial updates and UPDATEs"
firth_sql "$d" "DELETE FROM orders WHERE amount < 25; SELECT order_id FROM orders"
check_eq "$OUT" "2 rows deleted
+----------+
| order_id |
+----------+
|        3 |
|        4 |
+----------+
2 rows" "DELETE by any condition"

firth_sql "$d" "DESCRIBE orders"
check_eq "$OUT" "+---------------+----------------+-------+---------------+
| name          | type           | null  | key           |
+---------------+----------------+-------+---------------+
| order_id      | INT            | false | PRI(order_id) |
| customer_name | STRING         | true  | NULL          |
| amount        | DECIMAL(10, 2) | true  | NULL          |
+---------------+----------------+-------+---------------+
3 rows" "DESCRIBE shows the key"
csv "SHOW CREATE TABLE orders"
check_eq "$OUT" "create statement
\"CREATE TABLE default.orders (
  order_id INT NOT NULL,
  customer_name STRING,
  amount DECIMAL(10, 2),
  PRIMARY KEY (order_id) NOT ENFORCED
) WITH (
  'bucket.num' = '1'
)\"" "SHOW CREATE TABLE shows the key"

# ---- bad writes ----------------------------------------------------------------------------
sql_fails "INSERT INTO orders VALUES (NULL, 'x', 1)" \
    "line 1, column 28: NULL into NOT NULL column 'order_id'"
sql_fails "INSERT INTO orders (customer_name) VALUES ('x')" \
    "line 1, column 13: a partial update must name every primary key column: the insert columns are [customer_name], the primary key columns [order_id]"
sql_fails "UPDATE orders SET order_id = 9" \
    "line 1, column 19: UPDATE cannot change primary key column 'order_id': the key names the row (DELETE it and INSERT the row under its new key)"
sql_fails "UPDATE orders SET amount = 'lots' WHERE order_id = 3" \
    "line 1, column 19: value 'lots' cannot be converted to DECIMAL(10, 2) for column 'amount': 'lots' is not a valid DECIMAL(10, 2)"
sql_fails "DELETE FROM orders\$changelog" \
    "line 1, column 13: orders\$changelog is a virtual table: only SELECT reads it"
firth_sql "$d" "CREATE TABLE clicks (id INT, url STRING)"
sql_fails "DELETE FROM clicks WHERE id = 1" \
    "line 1, column 13: table default.clicks is a log table, which is append-only: DELETE needs a primary-key table"
csv "SELECT order_id, amount FROM orders"
check_eq "$OUT" "order_id,amount
3,31.00
4,40.00" "failed statements wrote nothing"

# ---- first_row ------------------------------------------------------------------------------
firth_sql "$d" "CREATE TABLE firsts (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED)
    WITH ('table.merge-engine' = 'first_row');
    INSERT INTO firsts VALUES (1, 'a'), (1, 'b'), (2, 'c');
    UPDATE firsts SET v = 'z';
    DELETE FROM firsts WHERE id = 2"
check_eq "$OUT" "table default.firsts created
3 rows upserted
0 rows updated (2 matched; a row the first_row merge engine leaves as it is changes nothing)
0 rows deleted (1 matched; the table ignores deletes: 'table.delete.behavior' is 'ignore' by default with this merge engine)" \
    "first_row keeps the first row and ignores deletes"
csv "SELECT _change_type, id, v FROM firsts\$changelog"
check_eq "$OUT" "_change_type,id,v
+I,1,a
+I,2,c" "first_row's changelog holds inserts only"
sql_fails "INSERT INTO firsts (id) VALUES (3)" \
    "line 1, column 13: table default.firsts uses the 'first_row' merge engine, which does not support partial updates: name every column in INSERT INTO"

# ---- versioned ------------------------------------------------------------------------------
firth_sql "$d" "CREATE TABLE versions (id INT, ver BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED)
    WITH ('table.merge-engine' = 'versioned',
          'table.merge-engine.versioned.ver-column' = 'ver');
    INSERT INTO versions VALUES (1, 5, 'a'), (1, 3, 'older'), (1, 5, 'same version');
    UPDATE versions SET ver = ver + 1, v = 'newer' WHERE id = 1"
csv "SELECT _change_type, ver, v FROM versions\$changelog; SELECT * FROM versions"
check_eq "$OUT" "_change_type,ver,v
+I,5,a
-U,5,a
+U,5,same version
-U,5,same version
+U,6,newer
id,ver,v
1,6,newer" "versioned keeps the greater or equal version"

# ---- aggregation ----------------------------------------------------------------------------
firth_sql "$d" "CREATE TABLE totals (id INT, n BIGINT, hi INT, tags STRING, last STRING,
        PRIMARY KEY (id) NOT ENFORCED)
    WITH ('table.merge-engine' = 'aggregation', 'fields.n.agg' = 'sum',
          'fields.hi.agg' = 'max', 'fields.tags.agg' = 'listagg',
          'fields.tags.listagg-delimiter' = ';');
    INSERT INTO totals VALUES (1, 10, 3, 'a', 'x'), (1, 5, 7, 'b', NULL), (2, 1, 1, 'c', 'y');
    INSERT INTO totals (id, n) VALUES (1, 100);
    UPDATE totals SET hi = 50 WHERE n > 50"
csv "SELECT * FROM totals"
check_eq "$OUT" "id,n,hi,tags,last
1,115,50,a;b,x
2,1,1,c,y" "aggregation: sum, max, listagg, last non-null value; partial writes aggregate too"
csv "SELECT _change_type, n, hi, tags FROM totals\$changelog WHERE id = 1"
check_eq "$OUT" "_change_type,n,hi,tags
+I,10,3,a
-U,10,3,a
+U,15,7,a;b
-U,15,7,a;b
+U,115,7,a;b
-U,115,7,a;b
+U,115,50,a;b" "aggregation changelog"

# ---- point and prefix lookups ---------------------------------------------------------------
firth_sql "$d" "CREATE TABLE visits (shop INT, day DATE, uid BIGINT, n INT,
        PRIMARY KEY (shop, day, uid) NOT ENFORCED)
    WITH ('bucket.num' = '4', 'bucket.key' = 'shop')"
awk 'BEGIN { for (s = 1; s <= 5; s++) for (d = 1; d <= 4; d++) for (u = 1; u <= 10; u++)
    printf "{\"shop\": %d, \"day\": \"2026-03-%02d\", \"uid\": %d, \"n\": %d}\n", s, d, u, s * 1000 + d * 100 + u }' \
    >"$T/visits.ndjson"
run 0 "$FIRTH" produce --data-dir "$d" --table visits <"$T/visits.ndjson"
check_eq "$ERR" "200 rows written to visits (200 keys changed)" "produce upserts"
csv "EXPLAIN SELECT n FROM visits WHERE shop = 3 AND day = '2026-03-02' AND uid IN (7, 4, 99)"
check_eq "$OUT" "plan
\"point lookup of 3 keys on (shop, day, uid): reads the KV store, scans nothing\"
\"then filter: ((shop = 3) AND ((day = DATE '2026-03-02') AND (uid IN (7, 4, 99))))\"" \
    "a point lookup when the key is fixed"
csv "SELECT n FROM visits WHERE shop = 3 AND day = '2026-03-02' AND uid IN (7, 4, 99)"
check_eq "$OUT" "n
3204
3207" "point lookup results in key order"
csv "EXPLAIN SELECT uid FROM visits WHERE shop = 2 AND n % 100 = 10"
check_eq "$OUT" "plan
\"prefix lookup of 1 prefix on (shop) of the key (shop, day, uid): one bucket each\"
then filter: ((shop = 2) AND ((n % 100) = 10))" "a prefix lookup when the bucket key is fixed"
csv "SELECT day, uid FROM visits WHERE shop = 2 AND n % 100 = 10"
check_eq "$OUT" "day,uid
2026-03-01,10
2026-03-02,10
2026-03-03,10
2026-03-04,10" "prefix lookup results"
csv "EXPLAIN SELECT n FROM visits WHERE day = '2026-03-02' AND uid = 1"
check_eq "$OUT" "plan
scan of the current state (the KV store of every bucket)
filter pushed down: ((day = DATE '2026-03-02') AND (uid = 1))" "a scan otherwise"
csv "SELECT n FROM visits WHERE day = '2026-03-02' AND uid = 1"
check_eq "$(printf '%s\n' "$OUT" | sed 1d | sort -n | tr '\n' ' ')" "1201 2201 3201 4201 5201 " \
    "the state scan's result"
firth_sql "$d" "DELETE FROM visits WHERE shop = 5; UPDATE visits SET n = 0 WHERE shop = 4 AND day = '2026-03-04' AND uid = 10"
check_eq "$OUT" "40 rows deleted
1 row updated" "DELETE and UPDATE through lookups"
csv "SELECT n FROM visits WHERE shop IN (4, 5) AND day = '2026-03-04' AND uid = 10"
check_eq "$OUT" "n
0" "the lookups see the writes"
