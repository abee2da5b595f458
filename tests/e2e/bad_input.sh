#!/usr/bin/env bash
# Bad input of every kind gets a clear message and a non-zero exit, and loses nothing that
# was acknowledged: malformed SQL, wrong types and out-of-range values (SQL and produce),
# unknown tables and columns, malformed NDJSON and CSV (with the line number, and nothing of
# the batch holding that line written), foreign, unusable, corrupt and busy data dirs.
source "$(dirname "$0")/lib/e2e_common.bash"

d=$T/data
firth_sql "$d" "CREATE DATABASE shop;
    CREATE TABLE shop.items (id INT NOT NULL, qty TINYINT, price DECIMAL(10, 2), day DATE,
        code VARCHAR(4), raw BYTES)"

count() { # count TABLE: rows now in the table
    "$FIRTH" consume --data-dir "$d" --table "$1" --format csv --columns id | tail -n +2 | wc -l
}

# ---- SQL ---------------------------------------------------------------------------------
run 1 "$FIRTH" sql --data-dir "$d" -e "SELEC * FROM shop.items"
check_contains "$ERR" "firth: error: line 1, column 1: " "malformed SQL"
run 1 "$FIRTH" sql --data-dir "$d" -e "SELECT * FROM shop.items WHERE (id = 1"
check_contains "$ERR" "firth: error: line 1, column " "an unclosed parenthesis"
run 1 "$FIRTH" sql --data-dir "$d" -e "INSERT INTO shop.items VALUES ('abc', 1, 1, NULL, NULL, NULL)"
check_contains "$ERR" "firth: error: line 1, column 32: " "a wrong type names its position"
check_contains "$ERR" "'abc' is not a valid INT" "a wrong type says why"
run 1 "$FIRTH" sql --data-dir "$d" -e "INSERT INTO shop.items VALUES (1, 300, 1, NULL, NULL, NULL)"
check_contains "$ERR" "out of range for TINYINT column 'qty'" "an out-of-range TINYINT"
run 1 "$FIRTH" sql --data-dir "$d" -e "INSERT INTO shop.items VALUES (1, 1, 123456789012, NULL, NULL, NULL)"
check_contains "$ERR" "out of range for DECIMAL(10, 2) column 'price'" "an out-of-range DECIMAL"
run 1 "$FIRTH" sql --data-dir "$d" -e "INSERT INTO shop.items VALUES (NULL, 1, 1, NULL, NULL, NULL)"
check_contains "$ERR" "NOT NULL column 'id'" "NULL into NOT NULL"
run 1 "$FIRTH" sql --data-dir "$d" -e "INSERT INTO shop.items VALUES (1, 1, 1, DATE '2026-02-30', NULL, NULL)"
check_contains "$ERR" "2026-02-30" "an impossible date"
run 1 "$FIRTH" sql --data-dir "$d" -e "INSERT INTO shop.nope VALUES (1)"
check_contains "$ERR" "nope" "an unknown table"
run 1 "$FIRTH" sql --data-dir "$d" -e "INSERT INTO shop.items (id, nope) VALUES (1, 2)"
check_contains "$ERR" "unknown column 'nope'" "an unknown column"
run 1 "$FIRTH" sql --data-dir "$d" -e "CREATE TABLE shop.items (a INT)"
check_contains "$ERR" "exists" "a table that exists"
run 1 "$FIRTH" sql --data-dir "$d" -e "CREATE TABLE shop.bad (a INT) WITH ('bucket.num' = '0')"
check_contains "$ERR" "bucket.num" "a bad table option"
check_eq "$(count shop.items)" "0" "failed statements wrote nothing"

# ---- produce: NDJSON -----------------------------------------------------------------------
gen() { awk -v a="$1" -v b="$2" 'BEGIN { for (i = a; i <= b; i++)
    printf "{\"id\": %d, \"qty\": %d, \"price\": \"%d.25\"}\n", i, i % 100, i }'; }

# A bad line 17 with batches of 5: lines 1-15 are acknowledged, 16-20 are not written.
{ gen 1 16; echo '{"id": 17, "price": "abc"}'; gen 18 30; } >"$T/bad17.ndjson"
run 1 "$FIRTH" produce --data-dir "$d" --table shop.items --batch-rows 5 --verbose <"$T/bad17.ndjson"
check_eq "$ERR" "acknowledged lines 1-5 (5 rows)
acknowledged lines 6-10 (5 rows)
acknowledged lines 11-15 (5 rows)
firth: error: stdin line 17: column 'price': 'abc' is not a valid DECIMAL(10, 2)
firth: 15 rows (lines 1-15) were written to shop.items; nothing from line 16 on was written" \
    "a bad line stops produce and names its line"
run 0 "$FIRTH" consume --data-dir "$d" --table shop.items --columns id --format csv
check_eq "$(printf '%s\n' "$OUT" | tail -n +2 | sort -n)" "$(seq 1 15)" \
    "the acknowledged batches are there and nothing of the bad batch"

bad_line() { # bad_line JSON EXPECTED-MESSAGE: one bad record after a good one
    printf '{"id": 1000}\n%s\n' "$1" >"$T/bad.ndjson"
    run 1 "$FIRTH" produce --data-dir "$d" --table shop.items <"$T/bad.ndjson"
    check_contains "$ERR" "firth: error: stdin line 2: " "bad record: $1: the line"
    check_contains "$ERR" "$2" "bad record: $1: the message"
    check_contains "$ERR" "nothing was written to shop.items" "bad record writes nothing: $1"
}
bad_line '{"id": 2, "qty": 300}' "column 'qty': value '300' is out of range for TINYINT"
bad_line '{"id": 2, "qty": 1.5}' "column 'qty': '1.5' is not a valid TINYINT"
bad_line '{"id": 2, "price": 123456789012}' "column 'price': "
bad_line '{"id": 2, "day": "2026-02-30"}' "column 'day': '2026-02-30' is not a valid DATE"
bad_line '{"id": 2, "day": 20260101}' "column 'day': '20260101' is not a valid DATE: give it as a JSON string"
bad_line '{"id": 2, "code": "toolong"}' "column code: value 'toolong' is longer than VARCHAR(4)"
bad_line '{"id": 2, "raw": "not base64!"}' "column 'raw': 'not base64!' is not a valid BYTES"
bad_line '{"id": 2, "qty": true}' "column 'qty': 'true' is not a valid TINYINT"
bad_line '{"qty": 1}' "column id is NOT NULL but got a NULL value"
bad_line '{"id": null}' "column id is NOT NULL but got a NULL value"
bad_line '{"id": 2, "nope": 1}' "unknown column 'nope' (the columns of shop.items: id, qty, price, day, code, raw)"
bad_line '{"id": 2, "ID": 3}' "column 'id' is given twice"
bad_line '{"id": 2, "qty": {"a": 1}}' "invalid JSON at byte 18: nested objects and arrays are not supported"
bad_line '{"id": 2, "qty": [1]}' "nested objects and arrays are not supported"
bad_line '[1, 2]' "invalid JSON at byte 1: a record must be a JSON object"
bad_line '{"id": 2} x' "invalid JSON at byte 11: text after the end of the object"
bad_line '{"id": 2,}' "invalid JSON at byte 10: expected a key in double quotes"
bad_line '{"id" 2}' "invalid JSON at byte 7: expected ':' after the key"
bad_line '{"id": 2' "invalid JSON: the line ends too early"
bad_line '{"id": 02}' "invalid JSON at byte 9: expected ',' or '}'"
bad_line '{"id": tru}' "expected a string, a number, true, false or null"
bad_line '{"id": 2, "code": "a\qb"}' "an unknown escape in a string"
bad_line '{"id": 2, "code": "\ud800"}' "a high surrogate without its low surrogate"
bad_line $'{"id": 2, "code": "\xff"}' "invalid UTF-8"
bad_line $'{"id": 2, "code": "a\tb"}' "a control character inside a string"
bad_line 'not json' "a record must be a JSON object"

# A line longer than the limit (16 MiB) is refused without reading it all into a row.
{ printf '{"id": 1, "code": "'; head -c $((17 << 20)) /dev/zero | tr '\0' 'a'; printf '"}\n'; } >"$T/long.ndjson"
run 1 "$FIRTH" produce --data-dir "$d" --table shop.items <"$T/long.ndjson"
check_contains "$ERR" "stdin line 1: stdin line 1 is longer than the limit of 16777216 bytes" "an overlong line"

# ---- produce: CSV ----------------------------------------------------------------------------
bad_csv() { # bad_csv TEXT EXPECTED-MESSAGE
    printf '%b' "$1" >"$T/bad.csv"
    run 1 "$FIRTH" produce --data-dir "$d" --table shop.items --format csv <"$T/bad.csv"
    check_contains "$ERR" "firth: error: stdin line $2" "bad CSV: $1"
    check_contains "$ERR" "nothing was written to shop.items" "bad CSV writes nothing: $1"
}
bad_csv 'id,qty\n1,2\n3\n' "3: 1 fields where the header has 2"
bad_csv 'id,qty\n1,2,3\n' "2: 3 fields where the header has 2"
bad_csv 'id,nope\n1,2\n' "1: the header names an unknown column 'nope'"
bad_csv 'id,ID\n1,2\n' "1: the header names column 'id' twice"
bad_csv 'id,qty\n1,"2\n' "2: line 2: a quoted field is not closed before the end of the input"
bad_csv 'id,code\n1,ab"c\n' "2: line 2: a quote inside an unquoted field"
bad_csv 'id,code\n1,"ab"c\n' "2: line 2: text after a closing quote"
bad_csv 'id,qty\n1,x\n' "2: column 'qty': 'x' is not a valid TINYINT"
bad_csv 'id,raw\n1,\\xzz\n' "2: column 'raw': "
bad_csv 'id,qty\n,1\n' "2: column id is NOT NULL"
run 1 "$FIRTH" produce --data-dir "$d" --table shop.items --format csv </dev/null
check_contains "$ERR" "CSV input starts with a header line" "CSV without a header"

# ---- produce: Arrow ---------------------------------------------------------------------------
firth_sql "$d" "CREATE TABLE shop.src (id BIGINT, qty INT, price DECIMAL(10, 2), day DATE,
    code STRING, raw BYTES, extra INT)"
firth_sql "$d" "INSERT INTO shop.src VALUES (1, 5, 1.5, NULL, 'ab', NULL, 0), (2, 500, 2, NULL, 'cd', NULL, 0),
    (NULL, 1, 1, NULL, NULL, NULL, 0), (4, 1, 1, NULL, 'toolong', NULL, 0)"
bad_arrow() { # bad_arrow EXPECTED-MESSAGE CONSUME-ARGS...
    local want=$1
    shift
    "$FIRTH" consume --data-dir "$d" --table shop.src --format arrow "$@" >"$T/bad.arrows"
    run 1 "$FIRTH" produce --data-dir "$d" --table shop.items --format arrow <"$T/bad.arrows"
    check_contains "$ERR" "$want" "bad Arrow input: $*"
    check_contains "$ERR" "nothing was written to shop.items" "bad Arrow input writes nothing: $*"
}
six=id,qty,price,day,code,raw
bad_arrow "firth: error: stdin record 2: column qty: value 500 is out of range for TINYINT" --columns $six
bad_arrow "firth: error: stdin record 1: column id is NOT NULL" --columns $six --where "id IS NULL"
bad_arrow "firth: error: stdin record 1: column code: value 'toolong' is longer than VARCHAR(4)" \
    --columns $six --where "id = 4"
bad_arrow "firth: error: stdin record 1: the stream has no column 'raw'" --columns id,qty,price,day,code
bad_arrow "firth: error: stdin record 1: the stream's column 'extra' is not a column of shop.items"
# The same types but NULL in a NOT NULL column: the batch passes through unconverted, and
# is still checked.
firth_sql "$d" "CREATE TABLE shop.same (id INT, qty TINYINT, price DECIMAL(10, 2), day DATE,
    code VARCHAR(4), raw BYTES);
    INSERT INTO shop.same VALUES (7, 1, 1, NULL, NULL, NULL), (NULL, 1, 1, NULL, NULL, NULL)"
"$FIRTH" consume --data-dir "$d" --table shop.same --format arrow >"$T/same.arrows"
run 1 "$FIRTH" produce --data-dir "$d" --table shop.items --format arrow <"$T/same.arrows"
check_contains "$ERR" "firth: error: stdin record 2: column id is NOT NULL" "NULL into NOT NULL, same types"
check_contains "$ERR" "nothing was written to shop.items" "NULL into NOT NULL writes nothing"

"$FIRTH" consume --data-dir "$d" --table shop.src --format arrow --columns id,qty,price,day,code,raw --max-records 1 >"$T/one.arrows"
head -c $(( $(stat -c %s "$T/one.arrows") - 20 )) "$T/one.arrows" >"$T/cut.arrows"
run 1 "$FIRTH" produce --data-dir "$d" --table shop.items --format arrow <"$T/cut.arrows"
check_contains "$ERR" "firth: error: stdin record 1: " "a truncated Arrow stream"
check_contains "$ERR" "nothing was written to shop.items" "a truncated Arrow stream writes nothing"
printf '{"id": 1}\n' >"$T/not.arrows"
run 1 "$FIRTH" produce --data-dir "$d" --table shop.items --format arrow <"$T/not.arrows"
check_contains "$ERR" "firth: error: stdin record 1: " "JSON given as Arrow"
run 1 "$FIRTH" produce --data-dir "$d" --table shop.items --format arrow </dev/null
check_contains "$ERR" "stdin is empty" "an empty Arrow input"

check_eq "$(count shop.items)" "15" "no bad input lost or added a row"

# ---- unknown tables and columns in produce and consume -----------------------------------------
run 1 "$FIRTH" produce --data-dir "$d" --table shop.nope <<<'{"id": 1}'
check_eq "$ERR" "firth: error: table shop.nope does not exist" "produce to an unknown table"
run 1 "$FIRTH" consume --data-dir "$d" --table shop.nope
check_contains "$ERR" "firth: error: table shop.nope does not exist" "consume of an unknown table"
run 1 "$FIRTH" consume --data-dir "$d" --table nope.items
check_contains "$ERR" "firth: error: " "consume of an unknown database"
run 1 "$FIRTH" consume --data-dir "$d" --table shop.items --columns id,nope
check_eq "$ERR" "firth: error: table shop.items has no column 'nope' (its columns: id, qty, price, day, code, raw)" \
    "consume of an unknown column"
check_eq "$OUT" "" "nothing printed before the error"
run 1 "$FIRTH" consume --data-dir "$d" --table shop.items --columns id,id
check_contains "$ERR" "listed twice" "a column listed twice"
run 1 "$FIRTH" consume --data-dir "$d" --table shop.items --where "nope > 1"
check_eq "$ERR" "firth: error: --where: line 1, column 1: unknown column 'nope'" "--where on an unknown column"
run 1 "$FIRTH" consume --data-dir "$d" --table shop.items --where "id >"
check_contains "$ERR" "firth: error: --where: line 1, column 5: " "a malformed --where"
run 1 "$FIRTH" consume --data-dir "$d" --table shop.items --where "id + 1"
check_contains "$ERR" "is not a condition" "a --where that is not a condition"
run 1 "$FIRTH" consume --data-dir "$d" --table shop.items --where "code > 1"
check_contains "$ERR" "firth: error: " "a --where comparing a string with a number"

# ---- data dirs -------------------------------------------------------------------------------
mkdir -p "$T/foreign"
echo "my notes" >"$T/foreign/notes.txt"
run 1 "$FIRTH" sql --data-dir "$T/foreign" -e "SHOW DATABASES"
check_contains "$ERR" "firth: error: $T/foreign is not empty and is not a firth data dir" "a foreign dir"
check_eq "$(ls "$T/foreign")" "notes.txt" "a foreign dir is left alone"
echo x >"$T/a_file"
run 1 "$FIRTH" consume --data-dir "$T/a_file" --table a.b
check_contains "$ERR" "firth: error: " "a data dir that is a file"
check_contains "$ERR" "not a directory" "a data dir that is a file says so"
run 1 "$FIRTH" produce --data-dir "$T/a_file/sub" --table a.b </dev/null
check_contains "$ERR" "Not a directory" "a data dir under a file"
if [ "$(id -u)" -ne 0 ]; then
    mkdir -p "$T/locked" && chmod 000 "$T/locked"
    run 1 "$FIRTH" sql --data-dir "$T/locked" -e "SHOW DATABASES"
    check_contains "$ERR" "firth: error: " "an unreadable data dir"
    chmod 700 "$T/locked"
fi
cp -r "$d" "$T/corrupt"
echo '{"databases": [' >"$T/corrupt/meta/catalog.json"
run 1 "$FIRTH" sql --data-dir "$T/corrupt" -e "SHOW DATABASES"
check_contains "$ERR" "firth: error: $T/corrupt/meta/catalog.json does not parse" "a corrupt catalog"

# A data dir is used by one process at a time: the second one is told who holds it.
mkfifo "$T/fifo"
"$FIRTH" produce --data-dir "$d" --table shop.items <"$T/fifo" 2>"$T/holder.err" &
holder=$!
exec 3>"$T/fifo"
for _ in $(seq 50); do grep -qx "$holder" "$d/meta/LOCK" 2>/dev/null && break; sleep 0.1; done
run 1 "$FIRTH" consume --data-dir "$d" --table shop.items
check_contains "$ERR" "is in use by another firth process (pid $holder)" "a busy data dir"
echo '{"id": 99}' >&3
exec 3>&-
wait "$holder" || fail "the holding produce failed: $(cat "$T/holder.err")"
check_eq "$(count shop.items)" "16" "the holder's row was written after the other's failure"
