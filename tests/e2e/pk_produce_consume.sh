#!/usr/bin/env bash
# `firth produce` into a primary-key table (upserts; "_change_type": "-D" or "_delete": true
# deletes; "-U" is skipped) from NDJSON and CSV, and `firth consume` of its changelog with
# the change type in front, in JSON, CSV and Arrow; a changelog consumed from one table and
# produced into another gives the same state; log tables are printed as before.
source "$(dirname "$0")/lib/e2e_common.bash"

d=$T/data
firth_sql "$d" "CREATE TABLE users (id INT, name STRING, age INT NOT NULL,
        PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket.num' = '2');
    CREATE TABLE copy (id INT, name STRING, age INT NOT NULL,
        PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket.num' = '3');
    CREATE TABLE events (id INT, what STRING)"

# feed CODE TABLE TEXT [OPTION...]: produce TEXT (printf escapes allowed) into TABLE.
feed() {
    local want=$1 table=$2 text=$3
    shift 3
    run "$want" "$FIRTH" produce --data-dir "$d" --table "$table" "$@" < <(printf "$text")
}

# ---- produce: upserts, deletes, skipped before-images --------------------------------------
cat >"$T/in.ndjson" <<'EOF'
{"id": 1, "name": "ann", "age": 30}
{"id": 2, "name": "bob", "age": 40}
{"id": 1, "name": "ann", "age": 31}
{"_change_type": "+I", "id": 3, "name": "cy", "age": 20}
{"_change_type": "-U", "id": 3, "name": "cy", "age": 20}
{"_change_type": "+U", "id": 3, "name": "cy", "age": 21}
{"_change_type": "-D", "id": 2}
{"_delete": true, "id": 9}
{"_delete": false, "id": 4, "name": null, "age": 50}
EOF
run 0 "$FIRTH" produce --data-dir "$d" --table users --batch-rows 4 --verbose <"$T/in.ndjson"
check_eq "$ERR" "acknowledged lines 1-4 (4 rows)
acknowledged lines 5-9 (4 rows)
8 rows written to users (6 keys changed)" "acknowledgements count the records applied"
run 0 "$FIRTH" sql --data-dir "$d" --format csv -e "SELECT * FROM users WHERE id IN (1, 2, 3, 4, 9)"
check_eq "$OUT" "id,name,age
1,ann,31
3,cy,21
4,,50" "state after upserts and deletes"

# ---- consume: the changelog with the change type in front ----------------------------------
run 0 "$FIRTH" consume --data-dir "$d" --table users --where "id = 1"
check_eq "$OUT" '{"_change_type":"+I","id":1,"name":"ann","age":30}
{"_change_type":"-U","id":1,"name":"ann","age":30}
{"_change_type":"+U","id":1,"name":"ann","age":31}' "JSON changelog of one key"
run 0 "$FIRTH" consume --data-dir "$d" --table users --format csv --columns age,id \
    --where "id >= 2"
check_eq "$(printf '%s\n' "$OUT" | head -1)" "_change_type,age,id" "CSV header"
check_eq "$(printf '%s\n' "$OUT" | sed 1d | sort)" "+I,20,3
+I,40,2
+I,50,4
+U,21,3
-D,40,2
-U,20,3" "CSV changelog rows (two buckets)"
run 0 "$FIRTH" consume --data-dir "$d" --table users --format csv --with-offsets --where "id = 3"
# The key's bucket comes from its hash: its records are consecutive offsets there.
b=$(printf '%s\n' "$OUT" | sed -n 2p | cut -d, -f2)
o=$(printf '%s\n' "$OUT" | sed -n 2p | cut -d, -f3)
check_eq "$OUT" "_change_type,_bucket,_offset,id,name,age
+I,$b,$o,3,cy,20
-U,$b,$((o + 1)),3,cy,20
+U,$b,$((o + 2)),3,cy,21" "change type, then bucket and offset"
run 0 "$FIRTH" consume --data-dir "$d" --table users --max-records 2 --where "id = 3"
check_eq "$(printf '%s\n' "$OUT" | wc -l)" "2" "--max-records"
run 0 "$FIRTH" consume --data-dir "$d" --table users --where "id = 99" --format csv
check_eq "$OUT" "_change_type,id,name,age" "no rows: the header still names _change_type"

# Arrow: _change_type is a STRING column in front; the stream reads back through produce
# into a primary-key table as upserts (produce takes no _change_type from Arrow input).
"$FIRTH" consume --data-dir "$d" --table users --format arrow --where "id = 4" >"$T/u.arrow"
run 0 "$FIRTH" sql --data-dir "$d" -e "CREATE TABLE arrowed (_change_type STRING, id INT,
    name STRING, age INT)"
run 0 "$FIRTH" produce --data-dir "$d" --table arrowed --format arrow <"$T/u.arrow"
run 0 "$FIRTH" sql --data-dir "$d" --format csv -e "SELECT * FROM arrowed"
check_eq "$OUT" "_change_type,id,name,age
+I,4,,50" "the Arrow stream's columns"

# ---- a changelog replayed into another table gives the same state --------------------------
"$FIRTH" consume --data-dir "$d" --table users >"$T/changes.ndjson"
run 0 "$FIRTH" produce --data-dir "$d" --table copy <"$T/changes.ndjson"
a=$("$FIRTH" sql --data-dir "$d" --format csv -e "SELECT * FROM users" | sort)
b=$("$FIRTH" sql --data-dir "$d" --format csv -e "SELECT * FROM copy" | sort)
check_eq "$b" "$a" "replayed changelog, same state"
# The before-images were skipped, and applying the after-images wrote them again.
run 0 "$FIRTH" consume --data-dir "$d" --table copy --format csv --columns id
b=$(printf '%s\n' "$OUT" | sort)
run 0 "$FIRTH" consume --data-dir "$d" --table users --format csv --columns id
check_eq "$b" "$(printf '%s\n' "$OUT" | sort)" "the replay's changelog has the same changes"

# CSV input with a _change_type column.
feed 0 copy '_change_type,id,name,age\n+I,7,gus,70\n-D,1,,\n+U,7,gus,71\n' --format csv
run 0 "$FIRTH" sql --data-dir "$d" --format csv -e "SELECT id, age FROM copy WHERE id IN (1, 7)"
check_eq "$OUT" "id,age
7,71" "CSV upserts and deletes"

# ---- bad input -----------------------------------------------------------------------------
feed 1 users '{"id": 5, "name": "x", "age": 1}\n{"_change_type": "+X", "id": 5}\n'
check_eq "$ERR" "firth: error: stdin line 2: _change_type must be \"+I\", \"+U\", \"-D\" or \"-U\", not '+X'
firth: nothing was written to users" "an unknown change type"
feed 1 users '{"_delete": "maybe", "id": 5}\n'
check_contains "$ERR" "stdin line 1: _delete must be true or false" "a bad _delete"
feed 1 users '{"_delete": true, "_change_type": "-D", "id": 5}\n'
check_contains "$ERR" "stdin line 1: a record gives _change_type or _delete, not both" "both"
feed 1 users '{"id": null, "name": "x", "age": 1}\n'
check_contains "$ERR" "stdin line 1:" "a NULL key"
check_contains "$ERR" "id" "a NULL key names the column"
feed 1 users '{"id": 6, "name": "x"}\n'
check_contains "$ERR" "age" "an upsert without a NOT NULL column"
feed 0 users '{"_delete": true, "id": 1}\n'
check_eq "$ERR" "1 row written to users (1 key changed)" \
    "a delete needs the key only, even with NOT NULL columns"

# ---- log tables: unchanged --------------------------------------------------------------------
feed 0 events '{"id": 1, "what": "click"}\n'
run 0 "$FIRTH" consume --data-dir "$d" --table events
check_eq "$OUT" '{"id":1,"what":"click"}' "a log table's rows have no change type"
feed 1 events '{"_change_type": "+I", "id": 2}\n'
check_contains "$ERR" "unknown column '_change_type'" "a log table takes no change type"
